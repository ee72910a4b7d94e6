/* SPDX-License-Identifier: MIT */
/*
 * test_clock_promises.c - the manual's promises about time, held against the
 * real clocks (CLOCK_MONOTONIC and the coarse clock the library reads on its
 * short paths), where a fake clock could not see a one-tick violation:
 * - a transition's time_ns (and state_since_ns) is the clock at the
 *   transition: never before a CLOCK_MONOTONIC reading taken before the call
 *   that caused it;
 * - an open breaker's wait is never early;
 * - breaker_retry_after_ns() answers 0 exactly when breaker_acquire() admits.
 * These loops poll a real clock for at most a few hundred milliseconds each:
 * the promises are about the real clock, so no fake clock can stand in.
 */
#define _POSIX_C_SOURCE 200809L
#include "test_util.h"

#include <time.h>

static uint64_t monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct last_event {
    _Atomic unsigned count;
    breaker_event ev;
};

static void keep_last(void *ctx, breaker *b, const breaker_event *ev) {
    (void)b;
    struct last_event *l = ctx;
    l->ev = *ev;
    atomic_fetch_add(&l->count, 1);
}

/* The defaults' time window (six-second buckets: the library places calls
 * by the coarse clock), tripping on the first failure. */
static breaker *time_window_breaker(uint64_t open_ns, struct last_event *log) {
    breaker_config cfg;
    breaker_config_init(&cfg);
    cfg.trip = BREAKER_TRIP_TIME_WINDOW;
    cfg.min_calls = 1;
    cfg.open_ns = open_ns;
    cfg.half_open_successes = 1;
    cfg.on_event = keep_last;
    cfg.event_ctx = log;
    return make_breaker(&cfg);
}

/* Admit the probe as soon as acquire allows; return the clock read right
 * after the admitting call (the admission happened no later than that). */
static uint64_t poll_until_admitted(breaker *b, breaker_permit *p, uint64_t give_up_ns) {
    for (;;) {
        int rc = breaker_acquire(b, p);
        uint64_t after = monotonic_ns();
        if (rc == BREAKER_OK) return after;
        assert_int_equal(rc, BREAKER_REJECTED_OPEN);
        if (after > give_up_ns) fail_msg("no probe admitted before the test's deadline");
    }
}

static void time_window_trips_are_stamped_with_the_clock_and_never_admit_early(void **state) {
    (void)state;
    const uint64_t open_ns = 20 * MS;
    struct last_event log = {0};
    breaker *b = time_window_breaker(open_ns, &log);
    for (int round = 0; round < 40; round++) {
        assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
        uint64_t before = monotonic_ns();
        breaker_permit p;
        assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
        assert_int_equal(breaker_complete(b, &p, BREAKER_FAILURE), BREAKER_OK);
        assert_int_equal(log.ev.to, BREAKER_OPEN);
        if (log.ev.time_ns < before)
            fail_msg("round %d: trip stamped %llu ns before the failing call began", round,
                     (unsigned long long)(before - log.ev.time_ns));
        breaker_stats st = stats_of(b);
        assert_true(st.state_since_ns >= before);
        uint64_t admitted_by = poll_until_admitted(b, &p, before + open_ns + 1 * SEC);
        if (admitted_by < before + open_ns)
            fail_msg("round %d: probe admitted %llu ns early", round,
                     (unsigned long long)(before + open_ns - admitted_by));
        assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_OK);
    }
    test_breaker_destroy(b);
}

/* With an open wait long enough for the library to check it on the coarse
 * clock, poll retry_after_ns() and acquire alternately through the end of the
 * wait: whenever retry_after_ns() says 0, the very next acquire admits. */
static void retry_after_zero_means_acquire_admits(void **state) {
    (void)state;
    const uint64_t open_ns = 300 * MS; /* >= 64 coarse ticks of up to 4 ms */
    struct last_event log = {0};
    breaker *b = time_window_breaker(open_ns, &log);
    for (int round = 0; round < 4; round++) {
        breaker_permit p;
        assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
        assert_int_equal(breaker_complete(b, &p, BREAKER_FAILURE), BREAKER_OK);
        uint64_t opened = monotonic_ns();
        assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
        uint64_t polls = 0;
        for (;;) {
            uint64_t left = breaker_retry_after_ns(b);
            int rc = breaker_acquire(b, &p);
            polls++;
            if (left == 0 && rc != BREAKER_OK)
                fail_msg("round %d: retry_after_ns() said 0 but acquire answered %s", round,
                         breaker_strerror(rc));
            if (rc == BREAKER_OK) break;
            if (monotonic_ns() > opened + open_ns + 1 * SEC) fail_msg("never admitted");
        }
        assert_true(polls > 1);
        assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_OK);
        assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    }
    test_breaker_destroy(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(time_window_trips_are_stamped_with_the_clock_and_never_admit_early),
        cmocka_unit_test(retry_after_zero_means_acquire_admits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
