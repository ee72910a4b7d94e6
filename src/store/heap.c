/* SPDX-License-Identifier: MIT */
/*
 * heap.c - the default backend (store.h): each breaker is a plain object of
 * this process's heap, so detaching a handle frees it.
 */
#include "store/store.h"

static int heap_open(void *ctx, const char *name, const breaker_config *cfg,
                     const breaker_owner *owner, breaker **out) {
    (void)ctx;
    (void)name; /* private to the handle: nothing to attach to */
    return breaker_create_bound(cfg, owner, NULL, out);
}

static void heap_close(void *ctx, breaker *b) {
    (void)ctx;
    breaker_destroy(b);
}

static const breaker_backend_ops heap_ops = {
    .name = "heap",
    .open = heap_open,
    .close = heap_close,
    .fini = NULL,
};

const breaker_backend breaker__backend_heap = {.ops = &heap_ops, .ctx = NULL};
