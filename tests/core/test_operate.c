/* SPDX-License-Identifier: MIT */
/*
 * test_operate.c - operators steering a running breaker on the process heap
 * (issue 25): timed opens (server-directed, capped at open_max_ns; an
 * operator's, exact) and shadow mode (the machine runs, nothing is refused,
 * would-rejects counted, would-open and would-close reported).
 */
#include "test_util.h"

static breaker_config operate_config(struct fake_clock *clock, struct event_log *log) {
    breaker_config cfg;
    test_config(&cfg, clock, log);
    cfg.trip = BREAKER_TRIP_CONSECUTIVE;
    cfg.failure_threshold = 2;
    cfg.open_ns = 10 * SEC;
    cfg.open_max_ns = 60 * SEC;
    cfg.half_open_successes = 1;
    return cfg;
}

static const breaker_event *last_event(struct event_log *log) {
    unsigned n = atomic_load(&log->count);
    assert_true(n > 0);
    return &log->events[n - 1];
}

static void server_directed_open_refuses_for_the_wait_then_probes(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    struct event_log log = {0};
    breaker_config cfg = operate_config(&clock, &log);
    breaker *b = make_breaker(&cfg);
    call_ok(b, BREAKER_SUCCESS);
    assert_int_equal(breaker_open_for(b, 7 * SEC, BREAKER_REASON_SERVER_DIRECTED), BREAKER_OK);
    const breaker_event *ev = last_event(&log);
    assert_int_equal(ev->from, BREAKER_CLOSED);
    assert_int_equal(ev->to, BREAKER_OPEN);
    assert_int_equal(ev->reason, BREAKER_REASON_SERVER_DIRECTED);
    assert_int_equal(ev->open_ns, 7 * SEC);
    assert_int_equal(ev->shadow, 0);
    assert_string_equal(breaker_reason_name(BREAKER_REASON_SERVER_DIRECTED), "server_directed");
    assert_string_equal(breaker_reason_name(BREAKER_REASON_OPERATOR), "operator");
    breaker_permit p;
    assert_int_equal(breaker_acquire(b, &p), BREAKER_REJECTED_OPEN);
    assert_int_equal(breaker_retry_after_ns(b), 7 * SEC);
    fake_clock_advance(&clock, 7 * SEC - 1000);
    assert_int_equal(breaker_acquire(b, &p), BREAKER_REJECTED_OPEN);
    fake_clock_advance(&clock, 1000);
    /* The wait over: the normal bounded probing. */
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
    assert_true(breaker_permit_is_probe(&p));
    breaker_permit q;
    assert_int_equal(breaker_acquire(b, &q), BREAKER_REJECTED_HALF_OPEN);
    assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_OK);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    breaker_stats st = stats_of(b);
    assert_int_equal(st.server_directed_opens, 1);
    assert_int_equal(st.operator_opens, 0);
    assert_int_equal(st.rejected_open, 2);
    test_breaker_destroy(b);
}

/* A hostile or broken answer ("Retry-After: 99999999") cannot park the
 * breaker for longer than the configuration's longest wait. */
static void server_directed_wait_is_capped_at_open_max(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    struct event_log log = {0};
    breaker_config cfg = operate_config(&clock, &log);
    breaker *b = make_breaker(&cfg);
    assert_int_equal(breaker_open_for(b, 99999999 * SEC, BREAKER_REASON_SERVER_DIRECTED),
                     BREAKER_OK);
    assert_int_equal(last_event(&log)->open_ns, 60 * SEC);
    assert_int_equal(breaker_retry_after_ns(b), 60 * SEC);
    fake_clock_advance(&clock, 60 * SEC);
    breaker_permit p;
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
    assert_true(breaker_permit_is_probe(&p));
    assert_int_equal(breaker_complete(b, &p, BREAKER_IGNORED), BREAKER_OK);
    test_breaker_destroy(b);
}

/* A longer wait under way stays; a longer directed wait replaces a shorter
 * one; an operator's forced state is an order the dependency cannot undo. */
static void server_directed_keeps_a_longer_wait_and_yields_to_forced(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    struct event_log log = {0};
    breaker_config cfg = operate_config(&clock, &log);
    breaker *b = make_breaker(&cfg);
    call_ok(b, BREAKER_FAILURE);
    call_ok(b, BREAKER_FAILURE); /* OPEN for 10 s */
    unsigned n = atomic_load(&log.count);
    uint64_t gen = breaker_generation(b);
    assert_int_equal(breaker_open_for(b, 5 * SEC, BREAKER_REASON_SERVER_DIRECTED), BREAKER_OK);
    assert_int_equal(atomic_load(&log.count), n);
    assert_int_equal(breaker_generation(b), gen);
    assert_int_equal(breaker_retry_after_ns(b), 10 * SEC);
    assert_int_equal(breaker_open_for(b, 20 * SEC, BREAKER_REASON_SERVER_DIRECTED), BREAKER_OK);
    assert_int_equal(atomic_load(&log.count), n + 1);
    assert_int_equal(last_event(&log)->from, BREAKER_OPEN);
    assert_int_equal(breaker_retry_after_ns(b), 20 * SEC);
    assert_int_equal(breaker_force_open(b), BREAKER_OK);
    assert_int_equal(breaker_open_for(b, 20 * SEC, BREAKER_REASON_SERVER_DIRECTED), BREAKER_OK);
    assert_int_equal(breaker_get_state(b), BREAKER_FORCED_OPEN);
    assert_int_equal(breaker_force_closed(b), BREAKER_OK);
    assert_int_equal(breaker_open_for(b, 20 * SEC, BREAKER_REASON_SERVER_DIRECTED), BREAKER_OK);
    assert_int_equal(breaker_get_state(b), BREAKER_FORCED_CLOSED);
    assert_int_equal(stats_of(b).server_directed_opens, 1);
    test_breaker_destroy(b);
}

/* An operator's wait is exact, from any state, forced ones included. */
static void operator_open_is_exact_from_any_state(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    struct event_log log = {0};
    breaker_config cfg = operate_config(&clock, &log);
    breaker *b = make_breaker(&cfg);
    assert_int_equal(breaker_open_for(b, 3600 * SEC, BREAKER_REASON_OPERATOR), BREAKER_OK);
    assert_int_equal(last_event(&log)->open_ns, 3600 * SEC); /* not capped at open_max */
    assert_int_equal(breaker_open_for(b, 2 * SEC, BREAKER_REASON_OPERATOR), BREAKER_OK);
    assert_int_equal(breaker_retry_after_ns(b), 2 * SEC); /* replaced, shorter */
    assert_int_equal(breaker_force_open(b), BREAKER_OK);
    assert_int_equal(breaker_open_for(b, 5 * SEC, BREAKER_REASON_OPERATOR), BREAKER_OK);
    assert_int_equal(last_event(&log)->from, BREAKER_FORCED_OPEN);
    assert_int_equal(last_event(&log)->reason, BREAKER_REASON_OPERATOR);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    assert_int_equal(stats_of(b).operator_opens, 3);
    /* until: on the breaker's clock; a time not after now does nothing. */
    uint64_t gen = breaker_generation(b);
    assert_int_equal(breaker_open_until(b, breaker_now_ns(b), BREAKER_REASON_OPERATOR), BREAKER_OK);
    assert_int_equal(breaker_generation(b), gen);
    assert_int_equal(breaker_open_until(b, breaker_now_ns(b) + 9 * SEC, BREAKER_REASON_OPERATOR),
                     BREAKER_OK);
    assert_int_equal(breaker_retry_after_ns(b), 9 * SEC);
    /* What cannot be asked. */
    assert_int_equal(breaker_open_for(b, SEC, BREAKER_REASON_FORCED_OPEN), BREAKER_EINVAL);
    assert_int_equal(breaker_open_for(b, 366 * 24 * 3600 * SEC, BREAKER_REASON_OPERATOR),
                     BREAKER_EINVAL);
    assert_int_equal(breaker_open_for(b, 0, BREAKER_REASON_OPERATOR), BREAKER_OK);
    assert_int_equal(breaker_retry_after_ns(b), 9 * SEC);
    test_breaker_destroy(b);
}

/* A directed wait is no failed recovery: the next failed probe backs off
 * from where the breaker was. */
static void timed_open_keeps_the_backoff_level(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    struct event_log log = {0};
    breaker_config cfg = operate_config(&clock, &log);
    cfg.open_backoff = 2;
    breaker *b = make_breaker(&cfg);
    call_ok(b, BREAKER_FAILURE);
    call_ok(b, BREAKER_FAILURE); /* OPEN 10 s, k 0 */
    fake_clock_advance(&clock, 10 * SEC);
    call_ok(b, BREAKER_FAILURE); /* the probe fails: OPEN 20 s, k 1 */
    assert_int_equal(last_event(&log)->open_ns, 20 * SEC);
    assert_int_equal(breaker_open_for(b, 30 * SEC, BREAKER_REASON_SERVER_DIRECTED), BREAKER_OK);
    assert_int_equal(last_event(&log)->evidence.failed_recoveries, 1);
    fake_clock_advance(&clock, 30 * SEC);
    call_ok(b, BREAKER_FAILURE); /* k 2: 40 s */
    assert_int_equal(last_event(&log)->open_ns, 40 * SEC);
    test_breaker_destroy(b);
}

/* ---- Shadow mode ------------------------------------------------------------ */

static void shadow_mode_runs_the_machine_and_refuses_nothing(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    struct event_log log = {0};
    breaker_config cfg = operate_config(&clock, &log);
    breaker *b = make_breaker(&cfg);
    assert_int_equal(breaker_shadow(b), 0);
    assert_int_equal(breaker_set_shadow(b, 1), BREAKER_OK);
    assert_int_equal(breaker_shadow(b), 1);
    assert_int_equal(atomic_load(&log.count), 0); /* not a transition */
    call_ok(b, BREAKER_FAILURE);
    call_ok(b, BREAKER_FAILURE);
    /* Would open: the state is OPEN, reported as shadow. */
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    assert_int_equal(last_event(&log)->to, BREAKER_OPEN);
    assert_int_equal(last_event(&log)->shadow, 1);
    /* Every call admitted; the would-be refusals counted and their outcomes
     * kept apart. */
    for (int i = 0; i < 5; i++)
        call_ok(b, i < 3 ? BREAKER_SUCCESS : BREAKER_FAILURE);
    breaker_stats st = stats_of(b);
    assert_int_equal(st.shadow, 1);
    assert_int_equal(st.would_reject_open, 5);
    assert_int_equal(st.rejected_open, 0);
    assert_int_equal(st.shadow_successes, 3);
    assert_int_equal(st.shadow_failures, 2);
    assert_int_equal(st.admitted, 2);
    assert_int_equal(st.failures, 2);
    assert_int_equal(st.state, BREAKER_OPEN); /* their failures reopened nothing */
    /* The wait over: a real probe; a second call would be refused. */
    fake_clock_advance(&clock, 10 * SEC);
    breaker_permit probe, extra;
    assert_int_equal(breaker_acquire(b, &probe), BREAKER_OK);
    assert_true(breaker_permit_is_probe(&probe));
    assert_int_equal(breaker_acquire(b, &extra), BREAKER_OK);
    assert_false(breaker_permit_is_probe(&extra));
    assert_int_equal(breaker_complete(b, &extra, BREAKER_FAILURE), BREAKER_OK);
    assert_int_equal(breaker_complete(b, &extra, BREAKER_FAILURE), BREAKER_ALREADY_SETTLED);
    assert_int_equal(breaker_get_state(b), BREAKER_HALF_OPEN);
    assert_int_equal(breaker_complete(b, &probe, BREAKER_SUCCESS), BREAKER_OK);
    /* Would close. */
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    assert_int_equal(last_event(&log)->reason, BREAKER_REASON_PROBES_SUCCEEDED);
    assert_int_equal(last_event(&log)->shadow, 1);
    st = stats_of(b);
    assert_int_equal(st.would_reject_half_open, 1);
    assert_int_equal(st.shadow_failures, 3);
    assert_int_equal(st.duplicates, 1);
    assert_int_equal(st.admitted, st.successes + st.failures + st.ignored + st.stale);
    test_breaker_destroy(b);
}

static void shadow_mode_covers_forced_open_and_ramps(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker_config cfg = operate_config(&clock, NULL);
    cfg.ramp_ns = 10 * SEC;
    cfg.ramp_start = 0.1;
    breaker *b = make_breaker(&cfg);
    assert_int_equal(breaker_set_shadow(b, 1), BREAKER_OK);
    assert_int_equal(breaker_force_open(b), BREAKER_OK);
    call_ok(b, BREAKER_SUCCESS);
    assert_int_equal(stats_of(b).would_reject_forced, 1);
    assert_int_equal(breaker_reset(b), BREAKER_OK);
    call_ok(b, BREAKER_FAILURE);
    call_ok(b, BREAKER_FAILURE);
    fake_clock_advance(&clock, 10 * SEC);
    call_ok(b, BREAKER_SUCCESS); /* the probe closes: ramping at 10% */
    uint64_t admitted = stats_of(b).admitted;
    for (int i = 0; i < 10; i++)
        call_ok(b, BREAKER_SUCCESS);
    breaker_stats st = stats_of(b);
    /* A tenth of the calls would have been admitted (the credit is 32.32
     * fixed point: the tenth call's lands just short of 1). */
    assert_true(st.would_reject_ramp >= 9);
    assert_int_equal(st.would_reject_ramp + (st.admitted - admitted), 10);
    assert_int_equal(st.rejected_ramp, 0);
    assert_true(breaker_shadow(b)); /* kept through every transition */
    test_breaker_destroy(b);
}

/* Off again, the breaker enforces from the state it is in. */
static void shadow_off_enforces_from_the_current_state(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker_config cfg = operate_config(&clock, NULL);
    breaker *b = make_breaker(&cfg);
    assert_int_equal(breaker_set_shadow(b, 1), BREAKER_OK);
    assert_int_equal(breaker_set_shadow(b, 1), BREAKER_OK);
    call_ok(b, BREAKER_FAILURE);
    call_ok(b, BREAKER_FAILURE);
    breaker_permit shadowed;
    assert_int_equal(breaker_acquire(b, &shadowed), BREAKER_OK);
    uint64_t gen = breaker_generation(b);
    assert_int_equal(breaker_set_shadow(b, 0), BREAKER_OK);
    assert_int_equal(breaker_generation(b), gen);
    breaker_permit p;
    assert_int_equal(breaker_acquire(b, &p), BREAKER_REJECTED_OPEN);
    assert_int_equal(breaker_retry_after_ns(b), 10 * SEC);
    /* A permit shadow mode gave keeps its meaning. */
    assert_int_equal(breaker_complete(b, &shadowed, BREAKER_SUCCESS), BREAKER_OK);
    breaker_stats st = stats_of(b);
    assert_int_equal(st.shadow, 0);
    assert_int_equal(st.rejected_open, 1);
    assert_int_equal(st.shadow_successes, 1);
    test_breaker_destroy(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(server_directed_open_refuses_for_the_wait_then_probes),
        cmocka_unit_test(server_directed_wait_is_capped_at_open_max),
        cmocka_unit_test(server_directed_keeps_a_longer_wait_and_yields_to_forced),
        cmocka_unit_test(operator_open_is_exact_from_any_state),
        cmocka_unit_test(timed_open_keeps_the_backoff_level),
        cmocka_unit_test(shadow_mode_runs_the_machine_and_refuses_nothing),
        cmocka_unit_test(shadow_mode_covers_forced_open_and_ramps),
        cmocka_unit_test(shadow_off_enforces_from_the_current_state),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
