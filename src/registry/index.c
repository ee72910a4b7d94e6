/* SPDX-License-Identifier: MIT */
/*
 * index.c - the registry's name index: an open-addressing hash table (linear
 * probing) of atomic entry pointers, at least twice max_breakers cells, that
 * lookups probe without a lock (the probe itself is inline, in
 * registry_internal.h).
 *
 * Removal leaves a tombstone. When tombstones pile up, or no never-used cell
 * is left, the index is rebuilt into the spare array, published with one
 * pointer store, and the old array becomes the spare once a grace period has
 * passed (no reader can still be in it). Nothing is allocated after init. A
 * lookup never misses an entry that stayed listed while it ran: in one array
 * a cell only goes NULL -> entry -> TOMBSTONE -> entry, so a probe chain
 * never gets a NULL in the middle, and a rebuild fills the spare array and
 * leaves the one readers may still be in untouched.
 *
 * Everything here but init and fini runs under the registry lock.
 */
#include "registry/registry_internal.h"

#include <stdlib.h>

static size_t index_size_for(uint32_t max) {
    size_t n = 16;
    while (n < (size_t)max * 2)
        n <<= 1;
    return n;
}

int breaker__index_init(struct breaker__index *ix, uint32_t max_breakers) {
    size_t cells = index_size_for(max_breakers);
    ix->arrays[0].cells = calloc(cells, sizeof(*ix->arrays[0].cells));
    ix->arrays[1].cells = calloc(cells, sizeof(*ix->arrays[1].cells));
    if (ix->arrays[0].cells == NULL || ix->arrays[1].cells == NULL) {
        breaker__index_fini(ix);
        return BREAKER_ENOMEM;
    }
    ix->arrays[0].mask = ix->arrays[1].mask = cells - 1;
    for (size_t i = 0; i < cells; i++) {
        atomic_init(&ix->arrays[0].cells[i], NULL);
        atomic_init(&ix->arrays[1].cells[i], NULL);
    }
    atomic_init(&ix->cur, &ix->arrays[0]);
    ix->tombstones = 0;
    return BREAKER_OK;
}

void breaker__index_fini(struct breaker__index *ix) {
    free(ix->arrays[0].cells);
    free(ix->arrays[1].cells);
    ix->arrays[0].cells = ix->arrays[1].cells = NULL;
}

static void index_rebuild(struct breaker__index *ix, _Atomic(struct breaker__entry *) *slots,
                          size_t n_slots, struct breaker__reclaim *rc) {
    struct breaker__index_array *old = atomic_load_explicit(&ix->cur, memory_order_relaxed);
    struct breaker__index_array *fresh = old == &ix->arrays[0] ? &ix->arrays[1] : &ix->arrays[0];
    /* `fresh` has been unused since the grace period that followed its last
     * replacement, so plain clearing is safe. */
    for (size_t i = 0; i <= fresh->mask; i++)
        atomic_store_explicit(&fresh->cells[i], NULL, memory_order_relaxed);
    for (size_t s = 0; s < n_slots; s++) {
        struct breaker__entry *e = atomic_load_explicit(&slots[s], memory_order_relaxed);
        if (e == NULL) continue;
        for (size_t i = 0;; i++) {
            _Atomic(struct breaker__entry *) *cell = &fresh->cells[(e->hash + i) & fresh->mask];
            if (atomic_load_explicit(cell, memory_order_relaxed) == NULL) {
                atomic_store_explicit(cell, e, memory_order_relaxed);
                break;
            }
        }
    }
    /* Release: readers that load the new array pointer see its cells. */
    atomic_store_explicit(&ix->cur, fresh, memory_order_release);
    ix->tombstones = 0;
    breaker__reclaim_synchronize(rc); /* nobody is left in `old`: it may be reused next time */
}

_Atomic(struct breaker__entry *) *
breaker__index_insert_cell(struct breaker__index *ix, const char *name, uint32_t h,
                           _Atomic(struct breaker__entry *) *slots, size_t n_slots,
                           struct breaker__reclaim *rc) {
    struct breaker__index_array *a = atomic_load_explicit(&ix->cur, memory_order_relaxed);
    _Atomic(struct breaker__entry *) *cell;
    breaker__index_probe(a, name, h, &cell);
    if (cell == NULL || ix->tombstones > (a->mask + 1) / 4) {
        /* Too few never-used cells left for short probes. */
        index_rebuild(ix, slots, n_slots, rc);
        a = atomic_load_explicit(&ix->cur, memory_order_relaxed);
        breaker__index_probe(a, name, h, &cell);
    }
    return cell;
}

void breaker__index_insert(struct breaker__index *ix, _Atomic(struct breaker__entry *) *cell,
                           struct breaker__entry *e) {
    bool reuse_tomb = atomic_load_explicit(cell, memory_order_relaxed) == BREAKER__TOMBSTONE;
    /* Release: a reader that loads the pointer sees the entry initialised. */
    atomic_store_explicit(cell, e, memory_order_release);
    if (reuse_tomb) ix->tombstones--;
}

void breaker__index_remove(struct breaker__index *ix, struct breaker__entry *e) {
    struct breaker__index_array *a = atomic_load_explicit(&ix->cur, memory_order_relaxed);
    for (size_t i = 0; i <= a->mask; i++) {
        _Atomic(struct breaker__entry *) *cell = &a->cells[(e->hash + i) & a->mask];
        struct breaker__entry *x = atomic_load_explicit(cell, memory_order_relaxed);
        if (x == NULL) break;
        if (x == e) {
            atomic_store_explicit(cell, BREAKER__TOMBSTONE, memory_order_release);
            ix->tombstones++;
            break;
        }
    }
}
