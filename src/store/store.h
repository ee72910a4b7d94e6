/* SPDX-License-Identifier: MIT */
/*
 * store.h - the store wing: where a breaker's state lives, and so how far its
 * limits reach. Private: the table itself is public and experimental,
 * breaker_backend_ops and breaker_backend in include/breaker/backend.h, which
 * documents every operation (open attaches and installs the owner, close
 * detaches and never deletes shared state, fini; on which threads, under
 * which lock). This header names the backends built into libbreaker.
 *
 * Each backend sits beside this header, as nng lays out its transports and
 * curl its TLS backends, and shows the rest of the library one table:
 *
 *   heap.c    the process heap (breaker_create_bound(), breaker_destroy())
 *   file/     a store file shared by the processes of a host (breaker/store.h;
 *             file_store.c maps it, backend.c is its table, handed out by
 *             breaker_store_backend())
 *
 * The fleet store on Redis (src/store/redis/, breaker_redis_backend()) is the third,
 * in a library of its own. A caller (the registry) uses only the table; no
 * backend includes a registry header.
 */
#ifndef BREAKER_STORE_STORE_H
#define BREAKER_STORE_STORE_H

#include "core/owner.h" /* breaker/backend.h, with its experimental part */

/* The process heap: open makes a plain breaker with breaker_create_bound()
 * (the owner, no probe gate), close destroys it: the state is private to the
 * handle, so detaching is freeing. Its ctx is NULL and it has no fini. A
 * registry's backend when its configuration names none. */
extern const breaker_backend breaker__backend_heap;

#endif /* BREAKER_STORE_STORE_H */
