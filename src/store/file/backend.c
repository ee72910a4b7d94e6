/* SPDX-License-Identifier: MIT */
/*
 * backend.c - the store file as a backend (store.h, breaker/backend.h): the
 * table breaker_store_backend() hands out, over breaker__store_attach_owned().
 *
 * open attaches (a name another process created keeps its stored limits, and
 * says so with BREAKER_CONFIG_DIFFERS: the registry takes the breaker as it
 * is, which is the store's documented rule, rather than refusing a name that
 * works); close detaches this process's
 * handle and leaves the shared breaker in the file. The store itself is the
 * caller's: a registry neither opens nor closes it, so fini is NULL.
 */
#include "store/file/file_store.h"

static int file_open(void *ctx, const char *name, const breaker_config *cfg,
                     const breaker_owner *owner, breaker **out) {
    return breaker__store_attach_owned(ctx, name, cfg, owner, out, NULL, 0);
}

static void file_close(void *ctx, breaker *b) {
    (void)ctx;
    breaker_destroy(b); /* frees the handle; the block stays in the file */
}

const breaker_backend_ops breaker__file_backend_ops = {
    .name = "file",
    .open = file_open,
    .close = file_close,
    .fini = NULL,
};
