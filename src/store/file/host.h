/* SPDX-License-Identifier: MIT */
/*
 * host.h - what a store file offers a backend that reports each of its
 * breakers elsewhere, one process of the host for all (the fleet store's
 * "one flusher per host", docs/fleet.md). NOT API: private to this
 * project's libraries. Exported from libbreaker.so, because libbreaker_redis
 * links the one copy of the core and uses it, but named breaker__* and
 * free to change in any release.
 *
 * The processes of a host that attach a name through one store file share
 * one breaker. For each name, one of them reports it: the one whose host
 * lock holds the name's byte of the file (its slot: an OFD lock,
 * fcntl(F_OFD_SETLK), on a file description of the lock's own). The
 * kernel keeps the lock for the holder's life and frees it when the holder
 * exits or is killed, or closes the lock (breaker__host_lock_close()), or
 * gives the name back; a stopped holder keeps it. OFD locks do not conflict
 * with the store's own flock() of the file (a local file system: on NFS,
 * flock() is emulated with byte-range locks and would conflict), and, held
 * by a file description rather than a process, they also exclude two
 * handles of one process.
 *
 * Each name's slot also keeps BREAKER__HOST_WORDS words that only the
 * backend reads: the holder's hand-over state (what it last reported, for
 * the next holder; what it follows, for the others). Only the holder writes
 * them, each word whole; anyone may read them, each word whole (a set read
 * may mix two writes). Everything read is input: another process of the
 * host, or a damaged file, may have written anything there.
 *
 * A host lock is on the file the store mapped when it was opened. After the
 * store moved to a new file at its path (breaker/store.h, "moves"),
 * breaker__host_lock_current() says 0: close it (which frees the old file's
 * names) and open another, on the new file. Close every host lock before
 * the store: the lock reads the store's mappings.
 *
 * fork(): a child does not inherit its parent's locks: the lock's file
 * description is closed in the child (an atfork handler), so a child that
 * outlives its parent never holds a name for it. Its file descriptor is
 * O_CLOEXEC.
 */
#ifndef BREAKER_STORE_FILE_HOST_H
#define BREAKER_STORE_FILE_HOST_H

#ifndef BREAKER_BACKEND_EXPERIMENTAL
#define BREAKER_BACKEND_EXPERIMENTAL
#endif
#include "breaker/backend.h"
#include "breaker/store.h"

#include <stdint.h>

/* The words a name's slot keeps for the backend (0 when the name is made). */
#define BREAKER__HOST_WORDS 20

/* breaker_store_attach() with an owner and a probe gate installed in this
 * process's handle (either may be NULL; both copied; the gate's ctx is this
 * process's). A handle the store forwards after a move keeps both.
 * @return as breaker_store_attach() (BREAKER_EINVAL also for `out` NULL). */
BREAKER_API int breaker__store_attach_bound(breaker_store *st, const char *name,
                                            const breaker_config *cfg, const breaker_owner *owner,
                                            const breaker_probe_gate *gate, breaker **out,
                                            char *msg, size_t msg_len);

/* The handle a user holds for `b`: `b` itself, or, for a handle a move
 * forwarded `b`'s to, the first of them (the one breaker_store_attach*()
 * returned). A probe gate is called with the live handle: this is how it
 * finds the breaker it knows. Lock-free. */
BREAKER_API const breaker *breaker__store_attached(const breaker *b);

typedef struct breaker__host_lock breaker__host_lock;

/* A host lock on the file `st` maps now: an open file description of its
 * own (the file opened again through /proc/self/fd), holding no name. Waits
 * for the store's lock 10 ms at most. @return BREAKER_OK with `*out`;
 * BREAKER_EBUSY (the store's lock stayed busy: try again), BREAKER_EIO (the
 * file could not be opened again: errno's reason in `msg`), BREAKER_ENOMEM. */
BREAKER_API int breaker__host_lock_open(breaker_store *st, breaker__host_lock **out, char *msg,
                                        size_t msg_len);

/* Close `l` (NULL: nothing): every name it holds is free from now. */
BREAKER_API void breaker__host_lock_close(breaker__host_lock *l);

/* 1 while the store maps the file `l` is on; 0 once it moved to another.
 * Lock-free. */
BREAKER_API int breaker__host_lock_current(const breaker__host_lock *l);

/* The id of the file `l` is on: random, the same for every process of the
 * host that opens it; another for the new file after a move. Never 0. */
BREAKER_API uint64_t breaker__host_lock_file_id(const breaker__host_lock *l);

/* Whether `l` is the file's primary (it holds the file's own byte, taken
 * here if free): the process the host's names go to first. 1 or 0. */
BREAKER_API int breaker__host_lock_primary(breaker__host_lock *l);

/* The slot of `name` in `l`'s file (a name, once made, keeps it for the
 * file's life). @return BREAKER_OK with `*slot`, or BREAKER_NOT_FOUND. */
BREAKER_API int breaker__host_lock_find(const breaker__host_lock *l, const char *name,
                                        uint32_t *slot);

/* Take the name in `slot` (never waits). @return 1: `l` holds it (now, or
 * already); 0: another host lock holds it (or the lock failed). */
BREAKER_API int breaker__host_lock_take(breaker__host_lock *l, uint32_t slot);

/* @return 1 when no other host lock holds the name in `slot` (a look: takes
 * nothing), 0 when one does (or the look failed). */
BREAKER_API int breaker__host_lock_free(breaker__host_lock *l, uint32_t slot);

/* Give the name in `slot` back (held or not). */
BREAKER_API void breaker__host_lock_give(breaker__host_lock *l, uint32_t slot);

/* Copy the name in `slot`'s BREAKER__HOST_WORDS words out (`write` 0) or in
 * (1: only its holder), each word whole, in index order. No lock taken. */
BREAKER_API void breaker__host_lock_words(const breaker__host_lock *l, uint32_t slot,
                                          uint64_t *words, int write);

#endif /* BREAKER_STORE_FILE_HOST_H */
