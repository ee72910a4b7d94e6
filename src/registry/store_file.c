/* SPDX-License-Identifier: MIT */
/*
 * store_file.c - a registry whose breakers live in a store file
 * (breaker/store.h), shared by the processes of a host: the store interface
 * of store.h over breaker__store_attach_owned().
 *
 * open attaches (a name another process created keeps its stored limits: the
 * registry takes the breaker as it is, which is the store's documented rule,
 * rather than refusing a name that works); close detaches this process's
 * handle and leaves the shared breaker in the file. The store itself is the
 * caller's: the registry neither opens nor closes it, so fini is NULL.
 */
#include "registry/store.h"
#include "store/file_store.h"

static int file_open(void *store, const char *name, const breaker_config *cfg,
                     const struct breaker__owner *owner, breaker **out) {
    int rc = breaker__store_attach_owned(store, name, cfg, owner, out, NULL, 0);
    if (rc == BREAKER_CONFIG_DIFFERS) return BREAKER_OK; /* attached, to the stored limits */
    return rc;
}

static void file_close(void *store, breaker *b) {
    (void)store;
    breaker_destroy(b); /* frees the handle; the block stays in the file */
}

const struct breaker__store_ops breaker__store_file_ops = {
    .name = "file",
    .open = file_open,
    .close = file_close,
    .fini = NULL,
};
