/* SPDX-License-Identifier: MIT */
/*
 * window.h - the failure windows (window.c): what a window holds, how an
 * outcome is recorded, read, confirmed and reset, and the trip condition.
 *
 * Changes when window.c's interface changes.
 */
#ifndef BREAKER_CORE_WINDOW_H
#define BREAKER_CORE_WINDOW_H

#include "common/atomics.h"
#include "breaker.h"
#include "core/layout.h"
#include "core/stripes.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a window holds right now. */
struct breaker__window_view {
    uint64_t calls;
    uint64_t failures;
    uint64_t slow;
    uint32_t consecutive;
    uint32_t source_bits; /* bits set in the failing-source map (window.c) */
};

size_t breaker__window_bytes(const struct breaker__limits *lim, size_t *buckets_stride);
/* A window view that is about to trip the breaker, read again: from the
 * evidence itself where the view came from a faster, approximate sum (the
 * count window's shares; O(window_size)), or a second time (the time window
 * of generation `gen` at `now`, whose read sums the stripes one by one);
 * calls, failures and slow calls are replaced, consecutive and source_bits
 * kept. Lock-free. Nothing to do for the consecutive policy. */
void breaker__window_confirm(const struct breaker__shared *s, uint64_t gen, uint64_t now,
                             struct breaker__window_view *view);
/* Empty the window for a transition into CLOSED that expects ctl to be
 * `expected_ctl`. It stops as soon as ctl differs (that transition has lost,
 * and the winner's period may be recording), leaving the window to the
 * winner. @return true if emptied, false if stopped: the transition must
 * then not be made. */
bool breaker__window_reset(struct breaker__shared *s, struct breaker__stripe_ref stripe,
                           uint64_t expected_ctl);
/* Reserve the next chunk of the count window's ring for a stripe whose chunk
 * is full, as ring_take_slot does (the failing-source period moves on when
 * it starts a pass). @return the stripe's chunk word with the chunk's first
 * slot taken: ((chunk + 1) << 32) | 1. */
uint64_t breaker__ring_reserve(struct breaker__shared *s);
/* Record one outcome of closed generation `gen` in the window, on `stripe`.
 * `held`: the per-CPU stripe `stripe` is, which the caller holds for the
 * record, or NULL; it is given back as soon as the record is written, before
 * the window is read (stripes.h, "Per-CPU stripes": nothing long is done
 * holding one). @return true when the trip condition must be evaluated, with
 * `view` holding the window then: only failures and slow calls do (a
 * success never opens the breaker). */
bool breaker__window_record(struct breaker__shared *s, struct breaker__stripe_ref stripe,
                            struct breaker__stripe *held, uint64_t gen, uint64_t now, bool failure,
                            bool slow, uint64_t source, struct breaker__window_view *view);
/* The number of distinct sources `bits` set bits of the 64-bit failing-source
 * map estimate (linear counting), and the bits that estimate at least `n`. */
uint32_t breaker__sources_estimate(uint32_t bits);
uint32_t breaker__sources_bits_needed(uint32_t n);
/* Whether a failing-source map with `bits` set meets min_failing_sources
 * (the default 0 asks it only of a map that holds a source). */
bool breaker__sources_enough(const struct breaker__limits *lim, uint32_t bits);
/* The window of closed generation `gen` at time `now`. */
void breaker__window_read(const struct breaker__shared *s, uint64_t gen, uint64_t now,
                          struct breaker__window_view *view);
/* The success path of the consecutive and time-window policies, inline for
 * breaker_complete()'s common case. */
static inline void breaker__consecutive_success(breaker__atomic64 *run) {
    /* Read before writing: in a healthy service the run is already 0 and
     * the line stays shared between cores instead of bouncing. */
    if (breaker__read(run) != 0) breaker__write(run, 0);
}

/* The share of calls a ramp admits with `left` ns of it to go: linear from
 * ramp_start to 1 (breaker.c, "Ramp after recovery"). */
static inline double breaker__ramp_share(const struct breaker__limits *lim, uint64_t left) {
    uint64_t ramp_ns = BREAKER__LIM(lim, ramp_ns); /* live: each read once */
    double start = BREAKER__LIM(lim, ramp_start);
    if (left > ramp_ns) left = ramp_ns; /* its end is rounded up to 1 us */
    return start + (1.0 - start) * ((double)(ramp_ns - left) / (double)ramp_ns);
}

/* Whether `view` meets the trip condition with a minimum volume of
 * `min_calls` (the limit's, or less during a ramp), and why. */
bool breaker__window_should_trip(const struct breaker__limits *lim, uint32_t min_calls,
                                 const struct breaker__window_view *view,
                                 enum breaker_reason *reason);
void breaker__evidence_from_view(const struct breaker__window_view *v, breaker_evidence *e);

#endif /* BREAKER_CORE_WINDOW_H */
