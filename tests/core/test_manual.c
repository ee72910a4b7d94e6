/* SPDX-License-Identifier: MIT */
/*
 * test_manual.c - manual control: force open, force closed and reset.
 */
#include "test_util.h"

static breaker_config manual_config(struct fake_clock *clock, struct event_log *log) {
    breaker_config cfg;
    test_config(&cfg, clock, log);
    cfg.trip = BREAKER_TRIP_CONSECUTIVE;
    cfg.failure_threshold = 2;
    cfg.open_ns = SEC;
    return cfg;
}

static void forced_open_refuses_everything_whatever_the_clock(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    struct event_log log = {0};
    breaker_config cfg = manual_config(&clock, &log);
    breaker *b = make_breaker(&cfg);
    assert_int_equal(breaker_force_open(b), BREAKER_OK);
    assert_int_equal(breaker_force_open(b), BREAKER_OK); /* no second transition */
    assert_int_equal(atomic_load(&log.count), 1);
    assert_int_equal(log.events[0].reason, BREAKER_REASON_FORCED_OPEN);
    for (int i = 0; i < 10; i++) {
        breaker_permit p;
        assert_int_equal(breaker_acquire(b, &p), BREAKER_REJECTED_OPEN);
        assert_int_equal(breaker_retry_after_ns(b), UINT64_MAX);
        fake_clock_advance(&clock, 3600 * SEC);
    }
    breaker_stats st = stats_of(b);
    assert_int_equal(st.state, BREAKER_FORCED_OPEN);
    assert_int_equal(st.rejected_forced, 10);
    assert_int_equal(st.rejected_open, 0);
    assert_int_equal(breaker_reset(b), BREAKER_OK);
    call_ok(b, BREAKER_SUCCESS);
    test_breaker_destroy(b);
}

static void forced_closed_admits_and_records_but_never_trips(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker_config cfg = manual_config(&clock, NULL);
    cfg.trip = BREAKER_TRIP_COUNT_WINDOW;
    cfg.window_size = 10;
    cfg.min_calls = 2;
    breaker *b = make_breaker(&cfg);
    assert_int_equal(breaker_force_closed(b), BREAKER_OK);
    for (int i = 0; i < 100; i++)
        call_ok(b, BREAKER_FAILURE);
    breaker_stats st = stats_of(b);
    assert_int_equal(st.state, BREAKER_FORCED_CLOSED);
    assert_int_equal(st.failures, 100);
    assert_int_equal(st.window_failures, 10);
    assert_int_equal(st.transitions, 1);
    /* Reset returns to normal operation with an empty window. */
    assert_int_equal(breaker_reset(b), BREAKER_OK);
    assert_int_equal(stats_of(b).window_calls, 0);
    call_ok(b, BREAKER_FAILURE);
    call_ok(b, BREAKER_FAILURE);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    test_breaker_destroy(b);
}

static void force_open_from_half_open_makes_probes_stale(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker_config cfg = manual_config(&clock, NULL);
    breaker *b = make_breaker(&cfg);
    call_ok(b, BREAKER_FAILURE);
    call_ok(b, BREAKER_FAILURE);
    fake_clock_advance(&clock, SEC);
    breaker_permit probe;
    assert_int_equal(breaker_acquire(b, &probe), BREAKER_OK);
    assert_int_equal(breaker_force_open(b), BREAKER_OK);
    assert_int_equal(breaker_complete(b, &probe, BREAKER_SUCCESS), BREAKER_STALE);
    assert_int_equal(breaker_get_state(b), BREAKER_FORCED_OPEN);
    test_breaker_destroy(b);
}

static void reset_closes_empties_the_window_and_makes_permits_stale(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    struct event_log log = {0};
    breaker_config cfg = manual_config(&clock, &log);
    cfg.failure_threshold = 3;
    breaker *b = make_breaker(&cfg);
    breaker_permit before;
    assert_int_equal(breaker_acquire(b, &before), BREAKER_OK);
    call_ok(b, BREAKER_FAILURE);
    call_ok(b, BREAKER_FAILURE);
    assert_int_equal(breaker_reset(b), BREAKER_OK);
    breaker_stats st = stats_of(b);
    assert_int_equal(st.state, BREAKER_CLOSED);
    assert_int_equal(st.consecutive_failures, 0);
    assert_int_equal(st.generation, 2);
    assert_int_equal(log.events[0].reason, BREAKER_REASON_RESET);
    assert_int_equal(breaker_complete(b, &before, BREAKER_FAILURE), BREAKER_STALE);
    call_ok(b, BREAKER_FAILURE);
    call_ok(b, BREAKER_FAILURE);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED); /* 2 of 3 */
    /* Reset from open ends the wait and the backoff. */
    call_ok(b, BREAKER_FAILURE);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    assert_int_equal(breaker_reset(b), BREAKER_OK);
    assert_int_equal(breaker_retry_after_ns(b), 0);
    call_ok(b, BREAKER_SUCCESS);
    test_breaker_destroy(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(forced_open_refuses_everything_whatever_the_clock),
        cmocka_unit_test(forced_closed_admits_and_records_but_never_trips),
        cmocka_unit_test(force_open_from_half_open_makes_probes_stale),
        cmocka_unit_test(reset_closes_empties_the_window_and_makes_permits_stale),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
