/* SPDX-License-Identifier: MIT */
/*
 * time_ns.h - clocks as nanosecond counts.
 *
 * The one conversion from struct timespec to a uint64_t count of
 * nanoseconds, used by every clock reading in the library. A uint64_t of
 * nanoseconds lasts 584 years from the clock's origin, so no reading wraps.
 */
#ifndef BREAKER_COMMON_TIME_NS_H
#define BREAKER_COMMON_TIME_NS_H

#include <stdint.h>
#include <time.h>

#define BREAKER__NS_PER_SEC UINT64_C(1000000000)

static inline uint64_t breaker__timespec_ns(const struct timespec *ts) {
    return (uint64_t)ts->tv_sec * BREAKER__NS_PER_SEC + (uint64_t)ts->tv_nsec;
}

/* clock_gettime(id) in ns. The clocks the library reads (CLOCK_MONOTONIC,
 * its coarse variant, CLOCK_REALTIME) cannot fail with a valid id. */
static inline uint64_t breaker__clock_ns(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return breaker__timespec_ns(&ts);
}

#endif /* BREAKER_COMMON_TIME_NS_H */
