/* SPDX-License-Identifier: MIT */
/*
 * heap.c - a binary min-heap of fixed-size items, earliest first.
 *
 * simulate.c's event queue and replay.c's pending completions both need
 * "the earliest time first, ties in the order they were added", which is
 * what makes both deterministic. Each item starts with a struct tool_heap_key.
 */
#include "sim/heap.h"

#include <stdlib.h>
#include <string.h>

static struct tool_heap_key key_at(const struct tool_heap *h, size_t i) {
    struct tool_heap_key k;
    memcpy(&k, h->data + i * h->size, sizeof(k));
    return k;
}

static bool before(const struct tool_heap *h, size_t a, size_t b) {
    struct tool_heap_key x = key_at(h, a), y = key_at(h, b);
    return x.at != y.at ? x.at < y.at : x.tie < y.tie;
}

/* The slot after the last one is scratch space for swaps. */
static void swap(struct tool_heap *h, size_t a, size_t b) {
    unsigned char *tmp = h->data + h->cap * h->size;
    memcpy(tmp, h->data + a * h->size, h->size);
    memcpy(h->data + a * h->size, h->data + b * h->size, h->size);
    memcpy(h->data + b * h->size, tmp, h->size);
}

void tool_heap_init(struct tool_heap *h, size_t item_size) {
    memset(h, 0, sizeof(*h));
    h->size = item_size;
}

void tool_heap_free(struct tool_heap *h) {
    free(h->data);
    h->data = NULL;
    h->n = h->cap = 0;
}

int tool_heap_push(struct tool_heap *h, const void *item) {
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 64;
        unsigned char *d = realloc(h->data, (cap + 1) * h->size);
        if (d == NULL) return -1;
        h->data = d;
        h->cap = cap;
    }
    size_t i = h->n++;
    memcpy(h->data + i * h->size, item, h->size);
    while (i > 0 && before(h, i, (i - 1) / 2)) {
        swap(h, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
    return 0;
}

const void *tool_heap_top(const struct tool_heap *h) { return h->n > 0 ? h->data : NULL; }

void tool_heap_pop(struct tool_heap *h, void *out) {
    memcpy(out, h->data, h->size);
    h->n--;
    memcpy(h->data, h->data + h->n * h->size, h->size);
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && before(h, l, m)) m = l;
        if (r < h->n && before(h, r, m)) m = r;
        if (m == i) break;
        swap(h, i, m);
        i = m;
    }
}
