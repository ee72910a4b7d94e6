/* SPDX-License-Identifier: MIT */
/*
 * reclaim.h - safe memory reclamation for lock-free readers: read sections
 * and grace periods, in the manner of sleepable RCU. Private: nothing here is
 * API.
 *
 * A reader that follows shared pointers without holding a reference wraps the
 * loads and every use of what it loaded in a read section:
 *
 *     _Atomic uint64_t *rs = breaker__reclaim_enter(&r);
 *     struct obj *o = atomic_load_explicit(&shared, memory_order_acquire);
 *     ... use o, or take a reference on it ...
 *     breaker__reclaim_leave(rs);
 *
 * A writer unlinks an object (no new reader can load it), then calls
 * breaker__reclaim_synchronize(), after which no reader can still hold a
 * pointer it loaded before the unlink, and the object may be freed or reused.
 *
 * How. Readers announce themselves in a counter of one of two epochs, striped
 * per thread so that readers on different threads do not share a cache line.
 * synchronize() flips the epoch and waits for the old epoch's counters to
 * drain. A reader re-checks the epoch after its increment, so it is either
 * counted by the writer or sees the flip, and with it the unlink. Read
 * sections are a few instructions long and never block; synchronize() spins
 * (with sched_yield) and must be serialised by the caller (the registry calls
 * it under its lock, which no reader takes). Readers may not nest sections
 * across a synchronize() of the same thread: it would wait for itself.
 *
 * The read side is inline: it sits on the registry's lookup path, which must
 * cost no call beyond the probe itself.
 */
#ifndef BREAKER_REGISTRY_RECLAIM_H
#define BREAKER_REGISTRY_RECLAIM_H

#include <stdatomic.h>
#include <stdint.h>

#define BREAKER__RECLAIM_STRIPES 8u

struct breaker__reclaim_count {
    _Alignas(64) _Atomic uint64_t n;
};

struct breaker__reclaim {
    _Atomic unsigned epoch; /* 0 or 1: the epoch new readers join */
    struct breaker__reclaim_count readers[2][BREAKER__RECLAIM_STRIPES];
};

/* Initialise `r` (no reader, epoch 0). */
void breaker__reclaim_init(struct breaker__reclaim *r);

/* Wait until no reader can hold a pointer it loaded before the call. Callers
 * serialise their calls (one writer at a time). */
void breaker__reclaim_synchronize(struct breaker__reclaim *r);

/* The calling thread's reader stripe, from the address of a thread-local:
 * distinct per thread, stable for its life, and no shared counter to hand
 * them out (thread-local blocks are far apart, so mix the bits). Each file
 * that includes this has its own anchor; that only changes which stripe a
 * thread uses there, never the correctness. */
static inline unsigned breaker__reclaim_stripe(void) {
    static _Thread_local char anchor;
    uint64_t a = (uint64_t)(uintptr_t)&anchor;
    return (unsigned)(((a >> 6) * UINT64_C(0x9e3779b97f4a7c15)) >> 61) % BREAKER__RECLAIM_STRIPES;
}

/* Enter a read section; pass the result to breaker__reclaim_leave().
 * seq_cst on the epoch and the counter: the argument needs the reader's
 * increment and its re-check of the epoch, and the writer's flip and its
 * reads of the counters, in one total order (a store-load pattern that
 * acquire/release does not order). */
static inline _Atomic uint64_t *breaker__reclaim_enter(struct breaker__reclaim *r) {
    unsigned s = breaker__reclaim_stripe();
    for (;;) {
        unsigned e = atomic_load_explicit(&r->epoch, memory_order_seq_cst);
        _Atomic uint64_t *c = &r->readers[e][s].n;
        atomic_fetch_add_explicit(c, 1, memory_order_seq_cst);
        if (atomic_load_explicit(&r->epoch, memory_order_seq_cst) == e) return c;
        atomic_fetch_sub_explicit(c, 1, memory_order_release);
    }
}

/* Leave a read section. Release: everything the reader loaded happens before
 * the writer that sees the counter drop (its seq_cst loads acquire) frees it. */
static inline void breaker__reclaim_leave(_Atomic uint64_t *section) {
    atomic_fetch_sub_explicit(section, 1, memory_order_release);
}

#endif /* BREAKER_REGISTRY_RECLAIM_H */
