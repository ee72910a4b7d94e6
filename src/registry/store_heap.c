/* SPDX-License-Identifier: MIT */
/*
 * store_heap.c - the default store (store.h): each breaker is a plain
 * breaker_create()d object of this process, so detaching a handle frees it.
 */
#include "registry/store.h"

static int heap_open(void *store, const char *name, const breaker_config *cfg,
                     const struct breaker__owner *owner, breaker **out) {
    (void)store;
    (void)name; /* private to the handle: nothing to attach to */
    return breaker__create_owned(cfg, owner, out);
}

static void heap_close(void *store, breaker *b) {
    (void)store;
    breaker_destroy(b);
}

const struct breaker__store_ops breaker__store_heap_ops = {
    .name = "heap",
    .open = heap_open,
    .close = heap_close,
    .fini = NULL,
};
