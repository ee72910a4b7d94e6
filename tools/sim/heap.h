/* SPDX-License-Identifier: MIT */
/*
 * sim/heap.h - the event queues of the simulations (heap.c).
 */
#ifndef BREAKER_TOOL_SIM_HEAP_H
#define BREAKER_TOOL_SIM_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Every heap item starts with this: earliest `at` first, then lowest `tie`. */
struct tool_heap_key {
    uint64_t at;
    uint64_t tie;
};

struct tool_heap {
    unsigned char *data;
    size_t n, cap, size;
};

void tool_heap_init(struct tool_heap *h, size_t item_size);
void tool_heap_free(struct tool_heap *h);
/* @return 0, or -1 when out of memory. */
int tool_heap_push(struct tool_heap *h, const void *item);
/* The earliest item, or NULL when empty. */
const void *tool_heap_top(const struct tool_heap *h);
/* Remove the earliest item into `out`; the heap must not be empty. */
void tool_heap_pop(struct tool_heap *h, void *out);

#endif /* BREAKER_TOOL_SIM_HEAP_H */
