/* SPDX-License-Identifier: MIT */
/*
 * clock.c - which clocks a handle reads (breaker__clock_setup): the
 * injected one, or CLOCK_MONOTONIC and, where it is fine enough,
 * CLOCK_MONOTONIC_COARSE.
 *
 * Default clocks. Slow-call timing, probe deadlines and every transition's
 * time need a precise clock: CLOCK_MONOTONIC. Time-window bucket selection
 * only needs to know roughly where "now" is, so when the coarse clock's
 * resolution is at most 1/64 of the bucket width (and calls are not timed:
 * then the window reuses the precise reading taken for the call) we read
 * CLOCK_MONOTONIC_COARSE instead, which costs a few nanoseconds less per call (a call counted in
 * the neighbouring bucket changes no promise). The coarse clock is the same clock read at the last
 * tick: it is never ahead, and lags by up to a tick, which is not exactly its nominal resolution
 * (ticks are late under load; 4.9-5.1 ms were measured at a 4 ms resolution; coarse_lag_ns is twice
 * the larger of the resolution and the worst lag sampled once per process). The open-state check
 * therefore uses it (when its resolution is at most 1/64 of open_ns) only to refuse while the wait
 * is far from over (more than coarse_lag_ns away) and reads the precise clock in the last stretch:
 * a probe is admitted exactly when the wait has elapsed by CLOCK_MONOTONIC, and
 * breaker_retry_after_ns() applies the same rule.
 *
 * An injected clock (breaker_config.clock) replaces both, so tests, replay and
 * simulation are exact and deterministic.
 */
#define _GNU_SOURCE
#include "core/internal.h"
#include "common/time_ns.h"

#include <time.h>

/* The coarse clock is used only when its resolution is at most this fraction
 * of the interval it measures (1/64 of a bucket or of the open wait). */
#define COARSE_MAX_FRACTION 64u

static uint64_t monotonic_now(const struct breaker *b) {
    (void)b;
    return breaker__clock_ns(CLOCK_MONOTONIC);
}

#ifdef CLOCK_MONOTONIC_COARSE
static uint64_t monotonic_coarse_now(const struct breaker *b) {
    (void)b;
    return breaker__clock_ns(CLOCK_MONOTONIC_COARSE);
}
#endif

static uint64_t injected_now(const struct breaker *b) { return b->cfg.clock(b->cfg.clock_ctx); }

#ifdef CLOCK_MONOTONIC_COARSE
/* How far the coarse clock may lag the precise one: twice its resolution, or
 * twice the largest lag seen in a short sample if that is more (a kernel
 * whose ticks come late). Measured once per process. A lag beyond the bound
 * (a tick held up for longer) only makes the open check refuse that much
 * longer after the wait; it never admits early, and retry_after_ns() then
 * keeps saying "not yet" too. */
static uint64_t coarse_lag_bound(uint64_t res_ns) {
    static _Atomic uint64_t cached; /* 0 = not measured yet */
    uint64_t bound = atomic_load_explicit(&cached, memory_order_relaxed);
    if (bound != 0) return bound;
    uint64_t worst = 0;
    for (int i = 0; i < 256; i++) {
        uint64_t coarse = breaker__clock_ns(CLOCK_MONOTONIC_COARSE);
        uint64_t precise = breaker__clock_ns(CLOCK_MONOTONIC);
        if (precise > coarse && precise - coarse > worst) worst = precise - coarse;
    }
    bound = 2 * (worst > res_ns ? worst : res_ns);
    if (bound == 0) bound = 1;
    /* Relaxed: any thread's measurement is as good as another's. */
    atomic_store_explicit(&cached, bound, memory_order_relaxed);
    return bound;
}
#endif

void breaker__clock_setup(struct breaker *b, const struct breaker__limits *lim) {
    (void)lim; /* read only where the coarse clock exists */
    b->coarse_for_window = false;
    b->coarse_for_open = false;
    b->coarse_lag_ns = 0;
    if (b->cfg.clock != NULL) {
        b->now_precise = injected_now;
        b->now_coarse = injected_now;
        return;
    }
    b->now_precise = monotonic_now;
    b->now_coarse = monotonic_now;
#ifdef CLOCK_MONOTONIC_COARSE
    struct timespec res;
    if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) != 0) return;
    uint64_t res_ns = breaker__timespec_ns(&res);
    b->now_coarse = monotonic_coarse_now;
    /* Slow-call detection reads the precise clock at admission and completion;
     * when it is on, the window reuses that reading instead of a second one. */
    b->coarse_for_window = lim->slow_call_ns == 0 && res_ns * COARSE_MAX_FRACTION <= lim->bucket_ns;
    b->coarse_for_open = res_ns * COARSE_MAX_FRACTION <= lim->open_ns;
    b->coarse_lag_ns = coarse_lag_bound(res_ns);
#endif
}
