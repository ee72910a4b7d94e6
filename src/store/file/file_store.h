/* SPDX-License-Identifier: MIT */
/*
 * file_store.h - what the store file (file_store.c) shares with its backend
 * table (backend.c) beyond its public API: attaching with an owner, and the
 * table itself; and, for tests and diagnostics, a look at the owned-stripe
 * claims.
 */
#ifndef BREAKER_STORE_FILE_FILE_STORE_H
#define BREAKER_STORE_FILE_FILE_STORE_H

#include "breaker/store.h"
#include "store/store.h"

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

#endif /* BREAKER_STORE_FILE_FILE_STORE_H */
