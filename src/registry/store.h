/* SPDX-License-Identifier: MIT */
/*
 * store.h - where a registry's breakers live: the store interface. Private:
 * nothing here is API; breaker_registry_config.store chooses between the
 * heap (NULL) and a store file.
 *
 * The registry creates, detaches and frees its breakers only through a store:
 * a table of operations and a context pointer, in the manner of nng's
 * transports or curl's TLS backends. The registry keeps the names, the
 * references, the listeners and the history; the store decides where a
 * breaker's state is kept. The default store is the process heap
 * (store_heap.c); a store file (store_file.c) is shared by the processes of
 * a host, which see the same breakers.
 *
 * The contract, for every store:
 *
 *  - open(store, name, cfg, owner, &b) makes this process's handle on the
 *    breaker called `name` (a valid name, breaker_name_validate()), with
 *    `owner` installed (core/owner.h: the registry recognises its breakers and
 *    hears their transitions through it). On a store shared between
 *    processes, opening a name that already exists there ATTACHES to the
 *    existing state: it is neither reset nor reconfigured. `cfg` has been
 *    validated; the store copies what it keeps. @return BREAKER_OK with `*out`
 *    set, or an error status with nothing created (the registry passes it on
 *    from breaker_registry_get()).
 *
 *  - close(store, b) is the registry's last word on a handle: the breaker was
 *    evicted (or the registry is being destroyed) and its last reference is
 *    gone. Eviction DETACHES, it never deletes shared state: close frees what
 *    this process holds for `b`; other processes may still use the breaker,
 *    and a later open of the name attaches to it again. (The heap store's
 *    state is private to the handle, so for it detaching is freeing.) Each
 *    handle is closed exactly once, after every use of it has finished.
 *
 *  - fini(store), may be NULL: the registry is being destroyed, after it
 *    closed every handle it opened. The store's context is the caller's
 *    again afterwards.
 *
 * Threads. open is called with the registry lock held, so one registry's
 * opens are serialised, and it must not call back into the registry. close
 * is called by whichever thread drops the breaker's last reference, never
 * with the registry lock held (an eviction drops the table's references
 * after unlocking), so a store's close may wait for work that calls the
 * registry. A store's close must be safe while other threads open and close
 * other breakers of the same store. fini runs alone, like
 * breaker_registry_destroy().
 */
#ifndef BREAKER_REGISTRY_STORE_H
#define BREAKER_REGISTRY_STORE_H

#include "breaker.h"
#include "core/owner.h"

struct breaker__store_ops {
    const char *name; /* for messages: "heap", ... */
    int (*open)(void *store, const char *name, const breaker_config *cfg,
                const struct breaker__owner *owner, breaker **out);
    /* Detach this process's handle; never deletes shared state. */
    void (*close)(void *store, breaker *b);
    void (*fini)(void *store);
};

/* What a `breaker_store *` given in breaker_registry_config.store points to:
 * every kind of store the registry can use begins with this view (the store
 * file's struct breaker_store, the fleet store's registry view in
 * breaker_redis). The registry calls view->ops with view->ctx. */
struct breaker__store_view {
    const struct breaker__store_ops *ops;
    void *ctx;
};

/* The process heap: open = breaker__create_owned(), close =
 * breaker_destroy(). Its context is NULL: the heap store has no state. */
extern const struct breaker__store_ops breaker__store_heap_ops;

/* A store file (breaker/store.h), shared by the processes of a host; its
 * context is the caller's breaker_store (breaker_registry_config.store). */
extern const struct breaker__store_ops breaker__store_file_ops;

#endif /* BREAKER_REGISTRY_STORE_H */
