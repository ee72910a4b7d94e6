/* SPDX-License-Identifier: MIT */
/*
 * file_store.h - what the store file (file_store.c) shares with its backend
 * table (backend.c) and its host locks (host_lock.c) beyond its public API:
 * attaching with an owner, the table itself, and the file a host lock is
 * on; and, for tests and diagnostics, a look at the owned-stripe claims.
 */
#ifndef BREAKER_STORE_FILE_FILE_STORE_H
#define BREAKER_STORE_FILE_FILE_STORE_H

#include "breaker/store.h"
#include "common/atomics.h"
#include "store/store.h"

#include <stddef.h>
#include <stdint.h>

/* breaker_store_attach() with `owner` installed in the handle (NULL: none),
 * for a `name` the caller has validated (breaker_name_validate()). Same
 * returns, including BREAKER_CONFIG_DIFFERS with `*out` attached. */
int breaker__store_attach_owned(breaker_store *st, const char *name, const breaker_config *cfg,
                                const breaker_owner *owner, breaker **out, char *msg,
                                size_t msg_len);

/* The store file's backend operations (backend.c); their ctx is the
 * breaker_store. breaker_store_backend() pairs them with a store. */
extern const breaker_backend_ops breaker__file_backend_ops;

/* A copy of the file's owned-stripe claim table (core/stripes.c): each word
 * a claimant's pid << 32 | start time, or 0. For tests and diagnostics. */
void breaker__store_claims(breaker_store *st, uint64_t out[8]);

/* One file a store maps (now, or before a move: a mapping stays until the
 * store is closed), as a host lock sees it. */
struct breaker__store_file {
    char *map;
    uint64_t entries_off;
    uint32_t capacity;
    uint64_t id; /* the file's id (the host domain's: header id, device, inode) */
    uint64_t dev, ino;
};

/* The file `st` maps now in `*out`, and `*fd` a new open file description
 * of it (O_RDWR | O_CLOEXEC, the caller's to close), the store's lock
 * waited for 10 ms at most. @return BREAKER_OK, BREAKER_EBUSY or
 * BREAKER_EIO (with `msg`). */
int breaker__store_file_now(breaker_store *st, struct breaker__store_file *out, int *fd, char *msg,
                            size_t len);

/* 1 while `st` maps `file`; 0 after it moved to another. Lock-free. */
int breaker__store_maps(const breaker_store *st, const struct breaker__store_file *file);

/* The slot of the READY entry `name` in `file`. @return BREAKER_OK or
 * BREAKER_NOT_FOUND. Takes no lock (entries, once READY, keep their name). */
int breaker__store_file_slot(const struct breaker__store_file *file, const char *name,
                             uint32_t *slot);

/* The byte offset of entry `slot` (below the file's capacity) in the file. */
uint64_t breaker__store_file_slot_offset(const struct breaker__store_file *file, uint32_t slot);

/* The BREAKER__HOST_WORDS words of entry `slot` (below the capacity). */
breaker__atomic64 *breaker__store_file_words(const struct breaker__store_file *file, uint32_t slot);

#endif /* BREAKER_STORE_FILE_FILE_STORE_H */
