/* SPDX-License-Identifier: MIT */
/*
 * test_windows.c - window policies trip on a failure or slow-call
 * rate over a window holding at least min_calls recorded calls; the time
 * window forgets old buckets however long the breaker idles; every window
 * starts empty when the breaker closes.
 */
#include "breaker_fixture.h"

static breaker *count_window(struct breaker_fixture *f, uint32_t size, uint32_t min_calls,
                             double rate) {
    breaker_config *cfg = fixture_init_count_window(f, 0, size, min_calls);
    cfg->failure_rate = rate;
    return fixture_create(f);
}

static breaker *time_window(struct breaker_fixture *f, uint64_t span, uint32_t buckets,
                            uint32_t min_calls, double rate) {
    breaker_config *cfg = fixture_init_time_window(f, 0, span, min_calls);
    cfg->window_buckets = buckets;
    cfg->failure_rate = rate;
    return fixture_create(f);
}

static void count_window_trips_when_rate_reached_with_min_calls(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker *b = count_window(&f, 10, 10, 0.5);
    for (int i = 0; i < 5; i++)
        call_ok(b, BREAKER_SUCCESS);
    for (int i = 0; i < 4; i++)
        call_ok(b, BREAKER_FAILURE);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED); /* 9 calls < min_calls */
    call_ok(b, BREAKER_FAILURE);                            /* 10 calls, 5 failed: 50% */
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    assert_int_equal(fixture_events(&f), 1);
    assert_int_equal(f.log.events[0].reason, BREAKER_REASON_FAILURE_RATE);
    assert_int_equal(f.log.events[0].evidence.calls, 10);
    assert_int_equal(f.log.events[0].evidence.failures, 5);
    assert_true(f.log.events[0].evidence.failure_rate > 0.499 &&
                f.log.events[0].evidence.failure_rate < 0.501);
    fixture_destroy(&f);
}

static void count_window_below_rate_never_trips(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker *b = count_window(&f, 20, 10, 0.5);
    /* 40% failures forever (S S S F F: no prefix exceeds 40% either). */
    for (int i = 0; i < 1000; i++)
        call_ok(b, i % 5 >= 3 ? BREAKER_FAILURE : BREAKER_SUCCESS);
    breaker_stats st = stats_of(b);
    assert_int_equal(st.state, BREAKER_CLOSED);
    assert_int_equal(st.window_calls, 20);
    assert_int_equal(st.window_failures, 8);
    fixture_destroy(&f);
}

static void count_window_forgets_calls_older_than_its_size(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker *b = count_window(&f, 10, 5, 0.5);
    for (int i = 0; i < 4; i++)
        call_ok(b, BREAKER_FAILURE);
    for (int i = 0; i < 10; i++)
        call_ok(b, BREAKER_SUCCESS); /* pushes the failures out */
    breaker_stats st = stats_of(b);
    assert_int_equal(st.window_calls, 10);
    assert_int_equal(st.window_failures, 0);
    for (int i = 0; i < 4; i++)
        call_ok(b, BREAKER_FAILURE);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED); /* 4 of 10 */
    call_ok(b, BREAKER_FAILURE);                            /* 5 of 10 */
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    fixture_destroy(&f);
}

static void low_traffic_never_reaching_min_calls_never_trips(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker *b = time_window(&f, 10 * SEC, 10, 5, 0.5);
    /* Every call fails, but only 4 arrive per 10 s window. */
    for (int i = 0; i < 400; i++) {
        call_ok(b, BREAKER_FAILURE);
        fake_clock_advance(&f.clock, 2600 * MS);
    }
    breaker_stats st = stats_of(b);
    assert_int_equal(st.state, BREAKER_CLOSED);
    assert_int_equal(st.failures, 400);
    assert_true(st.window_calls <= 4);
    fixture_destroy(&f);
}

static void time_window_forgets_failures_after_an_idle_gap(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker *b = time_window(&f, 10 * SEC, 10, 5, 0.5);
    for (int i = 0; i < 4; i++)
        call_ok(b, BREAKER_FAILURE);
    fake_clock_advance(&f.clock, 11 * SEC); /* longer than the window */
    call_ok(b, BREAKER_FAILURE);
    breaker_stats st = stats_of(b);
    assert_int_equal(st.state, BREAKER_CLOSED);
    assert_int_equal(st.window_calls, 1);
    /* The same calls within the window do trip. */
    for (int i = 0; i < 4; i++)
        call_ok(b, BREAKER_FAILURE);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    fixture_destroy(&f);
}

static void time_window_forgets_after_idle_of_many_windows(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker *b = time_window(&f, 10 * SEC, 10, 5, 0.5);
    for (int i = 0; i < 4; i++)
        call_ok(b, BREAKER_FAILURE);
    /* An idle gap that is an exact multiple of the window lands every bucket
     * index on the same slot again: the stamps must still tell them apart. */
    fake_clock_advance(&f.clock, 100 * SEC);
    call_ok(b, BREAKER_FAILURE);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    assert_int_equal(stats_of(b).window_calls, 1);
    fixture_destroy(&f);
}

static void time_window_slides_bucket_by_bucket(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker *b = time_window(&f, 10 * SEC, 10, 1, 1.0);
    for (int s = 0; s < 10; s++) {
        call_ok(b, BREAKER_SUCCESS);
        fake_clock_advance(&f.clock, SEC);
    }
    /* Now at t=10s: the bucket of t=0 has just left the window. */
    assert_int_equal(stats_of(b).window_calls, 9);
    fake_clock_advance(&f.clock, 5 * SEC);
    assert_int_equal(stats_of(b).window_calls, 4);
    fixture_destroy(&f);
}

static void slow_call_rate_trips_a_window(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker_config *cfg = fixture_init_count_window(&f, 0, 10, 10);
    cfg->slow_call_ns = 100 * MS;
    cfg->slow_call_rate = 0.3;
    breaker *b = fixture_create(&f);
    for (int i = 0; i < 10; i++) {
        breaker_permit p;
        assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
        /* Exactly slow_call_ns is not slow; one ns more is. */
        fake_clock_advance(&f.clock, i < 7 ? 100 * MS : 100 * MS + 1);
        assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_OK);
    }
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    assert_int_equal(f.log.events[0].reason, BREAKER_REASON_SLOW_CALL_RATE);
    assert_int_equal(f.log.events[0].evidence.slow_calls, 3);
    assert_int_equal(f.log.events[0].evidence.failures, 0);
    assert_int_equal(stats_of(b).slow, 3);
    fixture_destroy(&f);
}

static void slow_calls_below_rate_do_not_trip(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker_config *cfg = fixture_init_time_window(&f, 0, 10 * SEC, 10);
    cfg->slow_call_ns = 50 * MS;
    cfg->slow_call_rate = 0.5;
    breaker *b = fixture_create(&f);
    for (int i = 0; i < 100; i++) {
        breaker_permit p;
        assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
        fake_clock_advance(&f.clock, i % 3 == 0 ? 60 * MS : 10 * MS);
        assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_OK);
    }
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    assert_int_equal(stats_of(b).slow, 34);
    fixture_destroy(&f);
}

/* Trip, recover, and check the window starts empty. */
static void window_starts_empty_after_close(enum breaker_trip trip) {
    struct breaker_fixture f;
    breaker_config *cfg = fixture_init(&f, 0);
    cfg->trip = trip;
    cfg->failure_threshold = 3;
    cfg->window_size = 10;
    cfg->window_ns = 60 * SEC;
    cfg->min_calls = 3;
    cfg->failure_rate = 0.5;
    cfg->open_ns = SEC;
    cfg->half_open_successes = 1;
    breaker *b = fixture_create(&f);
    for (int i = 0; i < 3; i++)
        call_ok(b, BREAKER_FAILURE);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    fake_clock_advance(&f.clock, SEC);
    call_ok(b, BREAKER_SUCCESS); /* the probe closes it */
    breaker_stats st = stats_of(b);
    assert_int_equal(st.state, BREAKER_CLOSED);
    assert_int_equal(st.window_calls, 0);
    assert_int_equal(st.window_failures, 0);
    assert_int_equal(st.consecutive_failures, 0);
    /* Two failures are not enough on their own. */
    call_ok(b, BREAKER_FAILURE);
    call_ok(b, BREAKER_FAILURE);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    fixture_destroy(&f);
}

static void every_window_starts_empty_when_the_breaker_closes(void **state) {
    (void)state;
    window_starts_empty_after_close(BREAKER_TRIP_CONSECUTIVE);
    window_starts_empty_after_close(BREAKER_TRIP_COUNT_WINDOW);
    window_starts_empty_after_close(BREAKER_TRIP_TIME_WINDOW);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(count_window_trips_when_rate_reached_with_min_calls),
        cmocka_unit_test(count_window_below_rate_never_trips),
        cmocka_unit_test(count_window_forgets_calls_older_than_its_size),
        cmocka_unit_test(low_traffic_never_reaching_min_calls_never_trips),
        cmocka_unit_test(time_window_forgets_failures_after_an_idle_gap),
        cmocka_unit_test(time_window_forgets_after_idle_of_many_windows),
        cmocka_unit_test(time_window_slides_bucket_by_bucket),
        cmocka_unit_test(slow_call_rate_trips_a_window),
        cmocka_unit_test(slow_calls_below_rate_do_not_trip),
        cmocka_unit_test(every_window_starts_empty_when_the_breaker_closes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
