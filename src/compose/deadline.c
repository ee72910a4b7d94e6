/* SPDX-License-Identifier: MIT */
/*
 * deadline.c - the default clock and sleep of the composition layer, and
 * deadline arithmetic.
 *
 * Every object in breaker/compose.h takes its clock (and the executor its
 * sleep) as a callback, so tests run on a fake clock and never really wait;
 * these are the defaults when none is injected.
 */
#define _GNU_SOURCE
#include "breaker/compose.h"
#include "common/platform.h"
#include "common/time_ns.h"

#include <errno.h>
#include <time.h>

#define NS_PER_SEC UINT64_C(1000000000)

uint64_t breaker_monotonic_ns(void *ctx) {
    (void)ctx;
    return breaker__clock_ns(CLOCK_MONOTONIC);
}

int breaker_sleep_monotonic(void *ctx, uint64_t ns) {
    (void)ctx;
    uint64_t until = breaker_monotonic_ns(NULL);
    until = (UINT64_MAX - until < ns) ? UINT64_MAX : until + ns;
    struct timespec ts = {.tv_sec = (time_t)(until / NS_PER_SEC),
                          .tv_nsec = (long)(until % NS_PER_SEC)};
    breaker__sleep_until(&ts);
    return 0;
}

uint64_t breaker_deadline_after(breaker_clock_fn *clock, void *clock_ctx, uint64_t timeout_ns) {
    if (timeout_ns == UINT64_MAX) return BREAKER_NO_DEADLINE;
    uint64_t now = clock != NULL ? clock(clock_ctx) : breaker_monotonic_ns(NULL);
    if (UINT64_MAX - now <= timeout_ns) return BREAKER_NO_DEADLINE;
    return now + timeout_ns;
}

uint64_t breaker_deadline_remaining(uint64_t deadline_ns, uint64_t now_ns) {
    if (deadline_ns == 0 || deadline_ns == BREAKER_NO_DEADLINE) return UINT64_MAX;
    return deadline_ns > now_ns ? deadline_ns - now_ns : 0;
}
