/* SPDX-License-Identifier: MIT */
/*
 * test_ramp.c - slow start after recovery: when probes close a breaker with
 * ramp_ns set, the share of calls admitted grows from ramp_start to all of
 * them; refusals are REJECTED_RAMP (not open refusals); a trip during the
 * ramp needs only the ramp's share of min_calls and is one more failed
 * recovery; the ramp's end completes the recovery.
 */
#include "breaker_fixture.h"

/* A count-window breaker that trips on one failure in a row of five calls,
 * waits 10 s, closes on one successful probe, and ramps over 10 s from 10%. */
static breaker *ramping_breaker(struct breaker_fixture *f) {
    breaker_config *cfg = fixture_init_count_window(f, 0, 100, 20);
    cfg->failure_rate = 0.5;
    cfg->open_ns = 10 * SEC;
    cfg->open_backoff = 2.0;
    cfg->open_max_ns = 600 * SEC;
    cfg->half_open_successes = 1;
    cfg->ramp_ns = 10 * SEC;
    cfg->ramp_start = 0.1;
    breaker *b = fixture_create(f);
    for (int i = 0; i < 20; i++)
        call_ok(b, BREAKER_FAILURE);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    fake_clock_advance(&f->clock, 10 * SEC);
    call_ok(b, BREAKER_SUCCESS); /* the probe: closes, and the ramp begins */
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    return b;
}

/* Of `n` calls made now, how many were admitted (each settled at once). */
static unsigned admitted_of(breaker *b, unsigned n, enum breaker_outcome outcome) {
    unsigned in = 0;
    for (unsigned i = 0; i < n; i++) {
        breaker_permit p;
        int rc = breaker_acquire(b, &p);
        if (rc == BREAKER_OK) {
            in++;
            assert_int_equal(breaker_complete(b, &p, outcome), BREAKER_OK);
        } else {
            assert_int_equal(rc, BREAKER_REJECTED_RAMP);
            assert_int_equal(breaker_complete(b, &p, outcome), BREAKER_EINVAL);
        }
    }
    return in;
}

static void the_admitted_share_grows_from_ramp_start_to_all(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker *b = ramping_breaker(&f);
    breaker_stats st = stats_of(b);
    assert_true(st.ramp_share > 0.099 && st.ramp_share < 0.101);
    assert_int_equal(st.ramp_until_ns, 20 * SEC);
    assert_int_equal(st.failed_recoveries, 0);
    unsigned first = admitted_of(b, 1000, BREAKER_SUCCESS);
    assert_true(first >= 99 && first <= 100); /* 10% of calls, up to the credit's rounding */
    fake_clock_advance(&f.clock, 5 * SEC);
    unsigned halfway = admitted_of(b, 1000, BREAKER_SUCCESS);
    assert_true(halfway >= 549 && halfway <= 551); /* 10% + 90% / 2 */
    st = stats_of(b);
    assert_int_equal(st.rejected_ramp, (1000 - first) + (1000 - halfway));
    assert_int_equal(st.rejected_open, 0); /* ramp refusals are their own */
    fake_clock_advance(&f.clock, 5 * SEC); /* the ramp is over */
    assert_int_equal(admitted_of(b, 1000, BREAKER_SUCCESS), 1000);
    st = stats_of(b);
    assert_int_equal(st.ramp_until_ns, 0);
    assert_true(st.ramp_share == 1.0);
    fixture_destroy(&f);
}

/* retry_after_ns() during a ramp: 0 exactly when this thread's next call
 * is in the admitted share. */
static void retry_after_says_which_call_gets_in(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker *b = ramping_breaker(&f);
    for (int i = 0; i < 500; i++) {
        uint64_t left = breaker_retry_after_ns(b);
        breaker_permit p;
        int rc = breaker_acquire(b, &p);
        assert_int_equal(rc == BREAKER_OK, left == 0);
        if (left != 0) assert_int_equal(left, 10 * SEC - (uint64_t)i * MS);
        if (rc == BREAKER_OK)
            assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_OK);
        fake_clock_advance(&f.clock, 1 * MS);
    }
    fixture_destroy(&f);
}

/* During the ramp a tenth of min_calls (2 calls, both failed) is evidence
 * enough, and the trip is a failed recovery: the next wait doubles. */
static void a_failure_rate_during_the_ramp_reopens_quickly(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker *b = ramping_breaker(&f);
    unsigned before = fixture_events(&f);
    unsigned failed = 0;
    while (breaker_get_state(b) == BREAKER_CLOSED && failed < 100) {
        breaker_permit p;
        if (breaker_acquire(b, &p) != BREAKER_OK) continue;
        assert_int_equal(breaker_complete(b, &p, BREAKER_FAILURE), BREAKER_OK);
        failed++;
    }
    assert_int_equal(failed, 2);
    assert_int_equal(fixture_events(&f), before + 1);
    const breaker_event *trip = &f.log.events[before];
    assert_int_equal(trip->reason, BREAKER_REASON_FAILURE_RATE);
    assert_int_equal(trip->evidence.failed_recoveries, 1);
    assert_int_equal(trip->open_ns, 20 * SEC);
    fixture_destroy(&f);
}

/* The same volume after the ramp is not enough: min_calls is back. */
static void after_the_ramp_min_calls_is_whole_again(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker *b = ramping_breaker(&f);
    fake_clock_advance(&f.clock, 10 * SEC);
    call_ok(b, BREAKER_SUCCESS); /* the first call after the end completes the recovery */
    assert_int_equal(stats_of(b).failed_recoveries, 0);
    for (int i = 0; i < 2; i++)
        call_ok(b, BREAKER_FAILURE);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    fixture_destroy(&f);
}

/* reset and force_closed end a ramp; force_open refuses as it always does. */
static void manual_control_ends_a_ramp(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker *b = ramping_breaker(&f);
    assert_int_equal(breaker_reset(b), BREAKER_OK);
    assert_int_equal(admitted_of(b, 100, BREAKER_SUCCESS), 100);
    assert_int_equal(stats_of(b).ramp_until_ns, 0);
    fixture_destroy(&f);
}

/* Without ramp_ns nothing changes: probes close straight into full traffic. */
static void no_ramp_by_default(void **state) {
    (void)state;
    breaker_config cfg;
    breaker_config_init(&cfg);
    assert_int_equal(cfg.ramp_ns, 0);
    assert_true(cfg.ramp_start == 0.1);
    char msg[128];
    cfg.ramp_start = 1.5;
    assert_int_equal(breaker_config_validate(&cfg, msg, sizeof(msg)), BREAKER_EINVAL);
    assert_non_null(strstr(msg, "ramp_start"));
    breaker_config_init(&cfg);
    assert_int_equal(breaker_config_set(&cfg, "ramp", "30s", msg, sizeof(msg)), BREAKER_OK);
    assert_int_equal(cfg.ramp_ns, 30 * SEC);
    assert_int_equal(breaker_config_set(&cfg, "ramp_start", "25%", msg, sizeof(msg)), BREAKER_OK);
    assert_true(cfg.ramp_start == 0.25);
    assert_string_equal(breaker_strerror(BREAKER_REJECTED_RAMP),
                        "call refused: traffic is ramping back up after a recovery");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_admitted_share_grows_from_ramp_start_to_all),
        cmocka_unit_test(retry_after_says_which_call_gets_in),
        cmocka_unit_test(a_failure_rate_during_the_ramp_reopens_quickly),
        cmocka_unit_test(after_the_ramp_min_calls_is_whole_again),
        cmocka_unit_test(manual_control_ends_a_ramp),
        cmocka_unit_test(no_ramp_by_default),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
