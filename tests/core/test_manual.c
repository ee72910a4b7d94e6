/* SPDX-License-Identifier: MIT */
/*
 * test_manual.c - manual control: force open, force closed and reset.
 */
#include "breaker_fixture.h"

static breaker_config *manual_config(struct breaker_fixture *f, uint64_t now_ns) {
    breaker_config *cfg = fixture_init_consecutive(f, now_ns, 2);
    cfg->open_ns = SEC;
    return cfg;
}

static void forced_open_refuses_everything_whatever_the_clock(void **state) {
    (void)state;
    struct breaker_fixture f;
    manual_config(&f, 0);
    breaker *b = fixture_create(&f);
    assert_int_equal(breaker_force_open(b), BREAKER_OK);
    assert_int_equal(breaker_force_open(b), BREAKER_OK); /* no second transition */
    assert_int_equal(fixture_events(&f), 1);
    assert_int_equal(f.log.events[0].reason, BREAKER_REASON_FORCED_OPEN);
    for (int i = 0; i < 10; i++) {
        breaker_permit p;
        assert_int_equal(breaker_acquire(b, &p), BREAKER_REJECTED_OPEN);
        assert_int_equal(breaker_retry_after_ns(b), UINT64_MAX);
        fake_clock_advance(&f.clock, 3600 * SEC);
    }
    breaker_stats st = stats_of(b);
    assert_int_equal(st.state, BREAKER_FORCED_OPEN);
    assert_int_equal(st.rejected_forced, 10);
    assert_int_equal(st.rejected_open, 0);
    assert_int_equal(breaker_reset(b), BREAKER_OK);
    call_ok(b, BREAKER_SUCCESS);
    fixture_destroy(&f);
}

static void forced_closed_admits_and_records_but_never_trips(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker_config *cfg = manual_config(&f, 0);
    cfg->trip = BREAKER_TRIP_COUNT_WINDOW;
    cfg->window_size = 10;
    cfg->min_calls = 2;
    breaker *b = fixture_create(&f);
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
    fixture_destroy(&f);
}

static void force_open_from_half_open_makes_probes_stale(void **state) {
    (void)state;
    struct breaker_fixture f;
    manual_config(&f, 0);
    breaker *b = fixture_create(&f);
    call_ok(b, BREAKER_FAILURE);
    call_ok(b, BREAKER_FAILURE);
    fake_clock_advance(&f.clock, SEC);
    breaker_permit probe;
    assert_int_equal(breaker_acquire(b, &probe), BREAKER_OK);
    assert_int_equal(breaker_force_open(b), BREAKER_OK);
    assert_int_equal(breaker_complete(b, &probe, BREAKER_SUCCESS), BREAKER_STALE);
    assert_int_equal(breaker_get_state(b), BREAKER_FORCED_OPEN);
    fixture_destroy(&f);
}

static void reset_closes_empties_the_window_and_makes_permits_stale(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker_config *cfg = manual_config(&f, 0);
    cfg->failure_threshold = 3;
    breaker *b = fixture_create(&f);
    breaker_permit before;
    assert_int_equal(breaker_acquire(b, &before), BREAKER_OK);
    call_ok(b, BREAKER_FAILURE);
    call_ok(b, BREAKER_FAILURE);
    assert_int_equal(breaker_reset(b), BREAKER_OK);
    breaker_stats st = stats_of(b);
    assert_int_equal(st.state, BREAKER_CLOSED);
    assert_int_equal(st.consecutive_failures, 0);
    assert_int_equal(st.generation, 2);
    assert_int_equal(f.log.events[0].reason, BREAKER_REASON_RESET);
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
    fixture_destroy(&f);
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
