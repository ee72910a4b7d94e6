/*
 * clock.c - the breaker's clocks and the thread's counter stripe.
 *
 * Default clocks. Slow-call timing and probe deadlines need a precise clock:
 * CLOCK_MONOTONIC. Time-window bucket selection and the open-state check only
 * need to know roughly where "now" is, so when the coarse clock's resolution is
 * far below the bucket width (or the open wait) we read CLOCK_MONOTONIC_COARSE
 * instead, which costs a few nanoseconds less per call. The coarse clock is the
 * same clock read at the last tick, so it lags by at most its resolution and is
 * never ahead: the open state may refuse a call for up to one tick longer than
 * the wait, never admit one early.
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

void breaker__clock_setup(struct breaker *b, const struct breaker__limits *lim) {
    (void)lim; /* read only where the coarse clock exists */
    b->coarse_for_window = false;
    b->coarse_for_open = false;
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
#endif
}
