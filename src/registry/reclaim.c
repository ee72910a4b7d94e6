/* SPDX-License-Identifier: MIT */
/*
 * reclaim.c - the writer side of read sections: grace periods (reclaim.h
 * describes the protocol and why it is safe).
 */
#include "registry/reclaim.h"

#include <sched.h>

void breaker__reclaim_init(struct breaker__reclaim *r) {
    atomic_init(&r->epoch, 0);
    for (unsigned e = 0; e < 2; e++)
        for (unsigned s = 0; s < BREAKER__RECLAIM_STRIPES; s++)
            atomic_init(&r->readers[e][s].n, 0);
}

void breaker__reclaim_synchronize(struct breaker__reclaim *r) {
    /* Relaxed: only writers store the epoch, and they are serialised. */
    unsigned e = atomic_load_explicit(&r->epoch, memory_order_relaxed);
    /* seq_cst pairs with the reader's increment and re-check (reclaim.h). */
    atomic_store_explicit(&r->epoch, e ^ 1u, memory_order_seq_cst);
    for (;;) {
        uint64_t sum = 0;
        for (unsigned s = 0; s < BREAKER__RECLAIM_STRIPES; s++)
            sum += atomic_load_explicit(&r->readers[e][s].n, memory_order_seq_cst);
        if (sum == 0) return;
        sched_yield();
    }
}
