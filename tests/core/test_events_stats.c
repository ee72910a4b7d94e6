/* SPDX-License-Identifier: MIT */
/*
 * test_events_stats.c - each transition is reported once,
 * after the state changed, with its reason and evidence; the statistics
 * snapshot counts everything and adds up.
 */
#include "breaker_fixture.h"

static void events_report_each_transition_once_after_the_state_changed(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker_config *cfg = fixture_init_time_window(&f, 0, 10 * SEC, 10);
    cfg->failure_rate = 0.6;
    cfg->open_ns = 5 * SEC;
    cfg->half_open_successes = 1;
    breaker *b = fixture_create(&f);
    for (int i = 0; i < 4; i++)
        call_ok(b, BREAKER_SUCCESS);
    for (int i = 0; i < 6; i++)
        call_ok(b, BREAKER_FAILURE);
    assert_int_equal(fixture_events(&f), 1);
    const breaker_event *trip = &f.log.events[0];
    assert_int_equal(trip->from, BREAKER_CLOSED);
    assert_int_equal(trip->to, BREAKER_OPEN);
    assert_int_equal(trip->reason, BREAKER_REASON_FAILURE_RATE);
    assert_int_equal(trip->generation, 2);
    assert_int_equal(trip->evidence.calls, 10);
    assert_int_equal(trip->evidence.failures, 6);
    assert_int_equal(trip->open_ns, 5 * SEC);
    assert_int_equal(f.log.state_seen[0], BREAKER_OPEN);

    fake_clock_advance(&f.clock, 5 * SEC);
    call_ok(b, BREAKER_SUCCESS);
    assert_int_equal(fixture_events(&f), 3);
    assert_int_equal(f.log.events[1].to, BREAKER_HALF_OPEN);
    assert_int_equal(f.log.state_seen[1], BREAKER_HALF_OPEN);
    assert_int_equal(f.log.events[1].time_ns, 5 * SEC);
    assert_int_equal(f.log.events[2].to, BREAKER_CLOSED);
    assert_int_equal(f.log.state_seen[2], BREAKER_CLOSED);
    assert_int_equal(f.log.events[2].generation, 4);
    breaker_config got;
    breaker_get_config(b, &got);
    assert_ptr_equal(got.on_event, event_log_record);
    assert_ptr_equal(got.event_ctx, &f.log);
    fixture_destroy(&f);
}

static void stats_count_every_kind_of_call(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker_config *cfg = fixture_init_consecutive(&f, 0, 3);
    cfg->slow_call_ns = 10 * MS;
    cfg->open_ns = SEC;
    cfg->half_open_successes = 2;
    breaker *b = fixture_create(&f);
    breaker_permit unsettled, stale, p;
    assert_int_equal(breaker_acquire(b, &unsettled), BREAKER_OK);
    assert_int_equal(breaker_acquire(b, &stale), BREAKER_OK);
    call_ok(b, BREAKER_SUCCESS);
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
    fake_clock_advance(&f.clock, 20 * MS);
    assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_OK); /* slow */
    call_ok(b, BREAKER_IGNORED);
    call_ok(b, BREAKER_CANCELLED);
    for (int i = 0; i < 3; i++)
        call_ok(b, BREAKER_FAILURE); /* trip */
    assert_int_equal(breaker_acquire(b, &p), BREAKER_REJECTED_OPEN);
    assert_int_equal(breaker_complete(b, &stale, BREAKER_SUCCESS), BREAKER_STALE);
    assert_int_equal(breaker_complete(b, &stale, BREAKER_SUCCESS), BREAKER_ALREADY_SETTLED);
    fake_clock_advance(&f.clock, SEC);
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK); /* probe */
    breaker_permit q;
    assert_int_equal(breaker_acquire(b, &q), BREAKER_REJECTED_HALF_OPEN);
    assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_OK);

    breaker_stats st = stats_of(b);
    assert_int_equal(st.state, BREAKER_HALF_OPEN);
    assert_int_equal(st.admitted, 10);
    assert_int_equal(st.successes, 3);
    assert_int_equal(st.failures, 3);
    assert_int_equal(st.ignored, 2);
    assert_int_equal(st.cancelled, 1);
    assert_int_equal(st.slow, 1);
    assert_int_equal(st.stale, 1);
    assert_int_equal(st.duplicates, 1);
    assert_int_equal(st.rejected_open, 1);
    assert_int_equal(st.rejected_half_open, 1);
    assert_int_equal(st.probes_admitted, 1);
    assert_int_equal(st.probes_succeeded, 1);
    assert_int_equal(st.transitions, 2);
    /* admitted == successes + failures + ignored + stale + unsettled (1) */
    assert_int_equal(st.admitted, st.successes + st.failures + st.ignored + st.stale + 1);
    (void)unsettled;
    fixture_destroy(&f);
}

static void stats_account_time_in_each_state(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker_config *cfg = fixture_init_consecutive(&f, 0, 1);
    cfg->open_ns = 7 * SEC;
    cfg->half_open_successes = 1;
    breaker *b = fixture_create(&f);
    fake_clock_advance(&f.clock, 3 * SEC);
    call_ok(b, BREAKER_FAILURE); /* closed 3 s */
    fake_clock_advance(&f.clock, 7 * SEC);
    breaker_permit p;
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK); /* open 7 s */
    fake_clock_advance(&f.clock, 2 * SEC);
    assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_OK); /* half-open 2 s */
    fake_clock_advance(&f.clock, 4 * SEC);
    breaker_stats st = stats_of(b);
    assert_int_equal(st.time_in_state_ns[BREAKER_CLOSED], 7 * SEC);
    assert_int_equal(st.time_in_state_ns[BREAKER_OPEN], 7 * SEC);
    assert_int_equal(st.time_in_state_ns[BREAKER_HALF_OPEN], 2 * SEC);
    assert_int_equal(st.state_since_ns, 12 * SEC);
    fixture_destroy(&f);
}

static void stats_show_the_open_deadline_and_the_window(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker_config *cfg = fixture_init_count_window(&f, 0, 8, 8);
    cfg->failure_rate = 0.75;
    cfg->open_ns = 9 * SEC;
    breaker *b = fixture_create(&f);
    for (int i = 0; i < 2; i++)
        call_ok(b, BREAKER_SUCCESS);
    for (int i = 0; i < 4; i++)
        call_ok(b, BREAKER_FAILURE);
    breaker_stats st = stats_of(b);
    assert_int_equal(st.window_calls, 6);
    assert_int_equal(st.window_failures, 4);
    assert_true(st.window_failure_rate > 0.66 && st.window_failure_rate < 0.67);
    for (int i = 0; i < 2; i++)
        call_ok(b, BREAKER_FAILURE);
    st = stats_of(b);
    assert_int_equal(st.state, BREAKER_OPEN);
    assert_int_equal(st.open_until_ns, 9 * SEC);
    fixture_destroy(&f);
}

/* The bucket of struct breaker_latency a duration falls in. */
static unsigned bucket_of(const breaker_probe_latency *h, uint64_t ns) {
    unsigned i = 0;
    while (ns > h->upper_ns[i])
        i++;
    return i;
}

/* Probe durations are kept for a breaker that does not time its calls
 * (slow_call_ns 0), by result, IGNORED and STALE probes included; closed
 * calls are not probes and add nothing. (Before, only timed breakers had
 * durations at all, and those of IGNORED probes were dropped.) */
static void probe_durations_by_result_without_slow_call_timing(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker_config *cfg = fixture_init_consecutive(&f, 0, 1);
    cfg->half_open_max_probes = 1;
    cfg->half_open_successes = 2;
    cfg->probe_timeout_ns = 1 * SEC;
    breaker *b = fixture_create(&f);
    call_ok(b, BREAKER_FAILURE); /* opens */
    fake_clock_advance(&f.clock, breaker_retry_after_ns(b));
    breaker_permit p;
    /* ignored after 3 ms, succeeded after 40 ms, failed after 200 ms */
    const struct {
        enum breaker_outcome outcome;
        uint64_t took;
    } probes[] = {
        {BREAKER_IGNORED, 3 * MS}, {BREAKER_SUCCESS, 40 * MS}, {BREAKER_FAILURE, 200 * MS}};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
        assert_true(breaker_permit_is_probe(&p));
        fake_clock_advance(&f.clock, probes[i].took);
        assert_int_equal(breaker_complete(b, &p, probes[i].outcome), BREAKER_OK);
    }
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    /* A probe past its timeout, completed 2 s after admission: stale. */
    fake_clock_advance(&f.clock, breaker_retry_after_ns(b));
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
    fake_clock_advance(&f.clock, 2 * SEC);
    assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_STALE);
    assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_ALREADY_SETTLED);

    breaker_probe_latency h;
    assert_int_equal(breaker_probe_latency_get(b, &h), BREAKER_OK);
    const uint64_t want_ns[BREAKER_PROBE_RESULT_COUNT] = {40 * MS, 200 * MS, 3 * MS, 2 * SEC};
    for (unsigned r = 0; r < BREAKER_PROBE_RESULT_COUNT; r++) {
        uint64_t total = 0;
        for (unsigned i = 0; i < BREAKER_LATENCY_BUCKETS; i++)
            total += h.count[r][i];
        if (total != 1 || h.count[r][bucket_of(&h, want_ns[r])] != 1 || h.sum_ns[r] != want_ns[r])
            fail_msg("%s: %llu probes, %llu ns in all", breaker_probe_result_name(r),
                     (unsigned long long)total, (unsigned long long)h.sum_ns[r]);
    }
    assert_string_equal(breaker_probe_result_name(BREAKER_PROBE_IGNORED), "ignored");
    assert_string_equal(breaker_probe_result_name(BREAKER_PROBE_STALE), "stale");
    fixture_destroy(&f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(events_report_each_transition_once_after_the_state_changed),
        cmocka_unit_test(stats_count_every_kind_of_call),
        cmocka_unit_test(stats_account_time_in_each_state),
        cmocka_unit_test(stats_show_the_open_deadline_and_the_window),
        cmocka_unit_test(probe_durations_by_result_without_slow_call_timing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
