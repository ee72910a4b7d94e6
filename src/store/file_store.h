/* SPDX-License-Identifier: MIT */
/*
 * file_store.h - what the rest of the library uses of the store file
 * (file_store.c) beyond its public API: attaching with an owner, so the
 * registry can keep its breakers in a store (registry/store_file.c), and a
 * look at the owned-stripe claims.
 */
#ifndef BREAKER_STORE_FILE_STORE_H
#define BREAKER_STORE_FILE_STORE_H

#include "breaker/store.h"
#include "core/owner.h"

/* breaker_store_attach() with `owner` installed in the handle (NULL: none),
 * for a `name` the caller has validated (breaker_name_validate()). Same
 * returns, including BREAKER_CONFIG_DIFFERS with `*out` attached. */
int breaker__store_attach_owned(breaker_store *st, const char *name, const breaker_config *cfg,
                                const struct breaker__owner *owner, breaker **out, char *msg,
                                size_t msg_len);

/* A copy of the file's owned-stripe claim table (core/stripes.c): each word
 * a claimant's pid << 32 | start time, or 0. For tests and diagnostics. */
void breaker__store_claims(const breaker_store *st, uint64_t out[8]);

#endif /* BREAKER_STORE_FILE_STORE_H */
