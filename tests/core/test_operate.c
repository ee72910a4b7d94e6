/* SPDX-License-Identifier: MIT */
/*
 * test_operate.c - operators steering a running breaker on the process heap
 * (issue 25): timed opens (server-directed, capped at open_max_ns; an
 * operator's, exact), shadow mode (the machine runs, nothing is refused,
 * would-rejects counted, would-open and would-close reported) and live
 * reconfiguration (at once, whole, fenced, refused for what shapes the
 * block).
 */
#include "breaker_fixture.h"

#include <breaker/registry.h>

static breaker_config *operate_config(struct breaker_fixture *f, uint64_t now_ns) {
    breaker_config *cfg = fixture_init_consecutive(f, now_ns, 2);
    cfg->open_ns = 10 * SEC;
    cfg->open_max_ns = 60 * SEC;
    cfg->half_open_successes = 1;
    return cfg;
}

static void server_directed_open_refuses_for_the_wait_then_probes(void **state) {
    (void)state;
    struct breaker_fixture f;
    operate_config(&f, 0);
    breaker *b = fixture_create(&f);
    call_ok(b, BREAKER_SUCCESS);
    assert_int_equal(breaker_open_for(b, 7 * SEC, BREAKER_REASON_SERVER_DIRECTED), BREAKER_OK);
    const breaker_event *ev = fixture_last_event(&f);
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
    fake_clock_advance(&f.clock, 7 * SEC - 1000);
    assert_int_equal(breaker_acquire(b, &p), BREAKER_REJECTED_OPEN);
    fake_clock_advance(&f.clock, 1000);
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
    fixture_destroy(&f);
}

/* A hostile or broken answer ("Retry-After: 99999999") cannot park the
 * breaker for longer than the configuration's longest wait. */
static void server_directed_wait_is_capped_at_open_max(void **state) {
    (void)state;
    struct breaker_fixture f;
    operate_config(&f, 0);
    breaker *b = fixture_create(&f);
    assert_int_equal(breaker_open_for(b, 99999999 * SEC, BREAKER_REASON_SERVER_DIRECTED),
                     BREAKER_OK);
    assert_int_equal(fixture_last_event(&f)->open_ns, 60 * SEC);
    assert_int_equal(breaker_retry_after_ns(b), 60 * SEC);
    fake_clock_advance(&f.clock, 60 * SEC);
    breaker_permit p;
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
    assert_true(breaker_permit_is_probe(&p));
    assert_int_equal(breaker_complete(b, &p, BREAKER_IGNORED), BREAKER_OK);
    fixture_destroy(&f);
}

/* A longer wait under way stays; a longer directed wait replaces a shorter
 * one; an operator's forced state is an order the dependency cannot undo. */
static void server_directed_keeps_a_longer_wait_and_yields_to_forced(void **state) {
    (void)state;
    struct breaker_fixture f;
    operate_config(&f, 0);
    breaker *b = fixture_create(&f);
    call_ok(b, BREAKER_FAILURE);
    call_ok(b, BREAKER_FAILURE); /* OPEN for 10 s */
    unsigned n = fixture_events(&f);
    uint64_t gen = breaker_generation(b);
    assert_int_equal(breaker_open_for(b, 5 * SEC, BREAKER_REASON_SERVER_DIRECTED), BREAKER_OK);
    assert_int_equal(fixture_events(&f), n);
    assert_int_equal(breaker_generation(b), gen);
    assert_int_equal(breaker_retry_after_ns(b), 10 * SEC);
    assert_int_equal(breaker_open_for(b, 20 * SEC, BREAKER_REASON_SERVER_DIRECTED), BREAKER_OK);
    assert_int_equal(fixture_events(&f), n + 1);
    assert_int_equal(fixture_last_event(&f)->from, BREAKER_OPEN);
    assert_int_equal(breaker_retry_after_ns(b), 20 * SEC);
    assert_int_equal(breaker_force_open(b), BREAKER_OK);
    assert_int_equal(breaker_open_for(b, 20 * SEC, BREAKER_REASON_SERVER_DIRECTED), BREAKER_OK);
    assert_int_equal(breaker_get_state(b), BREAKER_FORCED_OPEN);
    assert_int_equal(breaker_force_closed(b), BREAKER_OK);
    assert_int_equal(breaker_open_for(b, 20 * SEC, BREAKER_REASON_SERVER_DIRECTED), BREAKER_OK);
    assert_int_equal(breaker_get_state(b), BREAKER_FORCED_CLOSED);
    assert_int_equal(stats_of(b).server_directed_opens, 1);
    fixture_destroy(&f);
}

/* An operator's wait is exact, from any state, forced ones included. */
static void operator_open_is_exact_from_any_state(void **state) {
    (void)state;
    struct breaker_fixture f;
    operate_config(&f, 0);
    breaker *b = fixture_create(&f);
    assert_int_equal(breaker_open_for(b, 3600 * SEC, BREAKER_REASON_OPERATOR), BREAKER_OK);
    assert_int_equal(fixture_last_event(&f)->open_ns, 3600 * SEC); /* not capped at open_max */
    assert_int_equal(breaker_open_for(b, 2 * SEC, BREAKER_REASON_OPERATOR), BREAKER_OK);
    assert_int_equal(breaker_retry_after_ns(b), 2 * SEC); /* replaced, shorter */
    assert_int_equal(breaker_force_open(b), BREAKER_OK);
    assert_int_equal(breaker_open_for(b, 5 * SEC, BREAKER_REASON_OPERATOR), BREAKER_OK);
    assert_int_equal(fixture_last_event(&f)->from, BREAKER_FORCED_OPEN);
    assert_int_equal(fixture_last_event(&f)->reason, BREAKER_REASON_OPERATOR);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    assert_int_equal(stats_of(b).operator_opens, 3);
    uint64_t gen = breaker_generation(b);
    /* What cannot be asked. */
    assert_int_equal(breaker_open_for(b, SEC, BREAKER_REASON_FORCED_OPEN), BREAKER_EINVAL);
    assert_int_equal(breaker_open_for(b, 366 * 24 * 3600 * SEC, BREAKER_REASON_OPERATOR),
                     BREAKER_EINVAL);
    assert_int_equal(breaker_open_for(b, 0, BREAKER_REASON_OPERATOR), BREAKER_OK); /* nothing */
    assert_int_equal(breaker_generation(b), gen);
    assert_int_equal(breaker_retry_after_ns(b), 5 * SEC);
    fixture_destroy(&f);
}

/* A directed wait is no failed recovery: the next failed probe backs off
 * from where the breaker was. */
static void timed_open_keeps_the_backoff_level(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker_config *cfg = operate_config(&f, 0);
    cfg->open_backoff = 2;
    breaker *b = fixture_create(&f);
    call_ok(b, BREAKER_FAILURE);
    call_ok(b, BREAKER_FAILURE); /* OPEN 10 s, k 0 */
    fake_clock_advance(&f.clock, 10 * SEC);
    call_ok(b, BREAKER_FAILURE); /* the probe fails: OPEN 20 s, k 1 */
    assert_int_equal(fixture_last_event(&f)->open_ns, 20 * SEC);
    assert_int_equal(breaker_open_for(b, 30 * SEC, BREAKER_REASON_SERVER_DIRECTED), BREAKER_OK);
    assert_int_equal(fixture_last_event(&f)->evidence.failed_recoveries, 1);
    fake_clock_advance(&f.clock, 30 * SEC);
    call_ok(b, BREAKER_FAILURE); /* k 2: 40 s */
    assert_int_equal(fixture_last_event(&f)->open_ns, 40 * SEC);
    fixture_destroy(&f);
}

/* ---- Shadow mode ------------------------------------------------------------ */

static void shadow_mode_runs_the_machine_and_refuses_nothing(void **state) {
    (void)state;
    struct breaker_fixture f;
    operate_config(&f, 0);
    breaker *b = fixture_create(&f);
    assert_int_equal(breaker_shadow(b), 0);
    assert_int_equal(breaker_set_shadow(b, 1), BREAKER_OK);
    assert_int_equal(breaker_shadow(b), 1);
    assert_int_equal(fixture_events(&f), 0); /* not a transition */
    call_ok(b, BREAKER_FAILURE);
    call_ok(b, BREAKER_FAILURE);
    /* Would open: the state is OPEN, reported as shadow. */
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    assert_int_equal(fixture_last_event(&f)->to, BREAKER_OPEN);
    assert_int_equal(fixture_last_event(&f)->shadow, 1);
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
    fake_clock_advance(&f.clock, 10 * SEC);
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
    assert_int_equal(fixture_last_event(&f)->reason, BREAKER_REASON_PROBES_SUCCEEDED);
    assert_int_equal(fixture_last_event(&f)->shadow, 1);
    st = stats_of(b);
    assert_int_equal(st.would_reject_half_open, 1);
    assert_int_equal(st.shadow_failures, 3);
    assert_int_equal(st.duplicates, 1);
    assert_int_equal(st.admitted, st.successes + st.failures + st.ignored + st.stale);
    fixture_destroy(&f);
}

/* A timed breaker's shadow permit: its completion leaves the call-duration
 * histogram alone too (the call would have been refused: no duration). */
static void a_shadow_permits_duration_is_not_recorded(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker_config *cfg = operate_config(&f, 0);
    cfg->slow_call_ns = SEC;
    breaker *b = fixture_create(&f);
    assert_int_equal(breaker_set_shadow(b, 1), BREAKER_OK);
    assert_int_equal(breaker_force_open(b), BREAKER_OK);
    breaker_permit p;
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK); /* would be refused */
    fake_clock_advance(&f.clock, 3 * SEC);
    assert_int_equal(breaker_complete(b, &p, BREAKER_FAILURE), BREAKER_OK);
    breaker_stats st = stats_of(b);
    assert_int_equal(st.shadow_failures, 1);
    breaker_latency lat;
    assert_int_equal(breaker_latency_get(b, &lat), BREAKER_OK);
    uint64_t counted = 0;
    for (int i = 0; i < BREAKER_LATENCY_BUCKETS; i++)
        counted += lat.success[i] + lat.failure[i];
    assert_int_equal(counted, 0);
    assert_int_equal(lat.failure_sum_ns, 0);
    fixture_destroy(&f);
}

/* operate_config's breaker, ramping back up over 10 s from 10% after a
 * recovery. */
static breaker *ramping_breaker(struct breaker_fixture *f) {
    breaker_config *cfg = operate_config(f, 0);
    cfg->ramp_ns = 10 * SEC;
    cfg->ramp_start = 0.1;
    return fixture_create(f);
}

static void shadow_mode_covers_forced_open_and_ramps(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker *b = ramping_breaker(&f);
    assert_int_equal(breaker_set_shadow(b, 1), BREAKER_OK);
    assert_int_equal(breaker_force_open(b), BREAKER_OK);
    call_ok(b, BREAKER_SUCCESS);
    assert_int_equal(stats_of(b).would_reject_forced, 1);
    assert_int_equal(breaker_reset(b), BREAKER_OK);
    call_ok(b, BREAKER_FAILURE);
    call_ok(b, BREAKER_FAILURE);
    fake_clock_advance(&f.clock, 10 * SEC);
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
    fixture_destroy(&f);
}

/* Off again, the breaker enforces from the state it is in. */
static void shadow_off_enforces_from_the_current_state(void **state) {
    (void)state;
    struct breaker_fixture f;
    operate_config(&f, 0);
    breaker *b = fixture_create(&f);
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
    fixture_destroy(&f);
}

/* breaker_permit_would_reject(): a permit says which refusal shadow mode
 * spared it, exactly as the would_reject_* counter it went to; every other
 * permit (a real admission, a probe, a refusal, anything with shadow mode
 * off, a permit object reused after a shadow one) says NONE. */
static void a_shadow_permit_says_which_refusal_it_was_spared(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker *b = ramping_breaker(&f);
    breaker_permit p, q;
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
    assert_int_equal(breaker_permit_would_reject(&p), BREAKER_REFUSAL_NONE);
    assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_OK);

    assert_int_equal(breaker_set_shadow(b, 1), BREAKER_OK);
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK); /* closed: a real admission */
    assert_int_equal(breaker_permit_would_reject(&p), BREAKER_REFUSAL_NONE);
    assert_int_equal(breaker_complete(b, &p, BREAKER_FAILURE), BREAKER_OK);
    call_ok(b, BREAKER_FAILURE); /* would open */
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
    assert_int_equal(breaker_permit_would_reject(&p), BREAKER_REFUSAL_OPEN);
    assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_OK);
    /* Settled, it still says what it was; a copy says the same. */
    breaker_permit copy = p;
    assert_int_equal(breaker_permit_would_reject(&p), BREAKER_REFUSAL_OPEN);
    assert_int_equal(breaker_permit_would_reject(&copy), BREAKER_REFUSAL_OPEN);

    fake_clock_advance(&f.clock, 10 * SEC);
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK); /* the probe: real */
    assert_true(breaker_permit_is_probe(&p));
    assert_int_equal(breaker_permit_would_reject(&p), BREAKER_REFUSAL_NONE);
    assert_int_equal(breaker_acquire(b, &q), BREAKER_OK); /* every slot taken */
    assert_int_equal(breaker_permit_would_reject(&q), BREAKER_REFUSAL_HALF_OPEN);
    assert_int_equal(breaker_complete(b, &q, BREAKER_FAILURE), BREAKER_OK);
    assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_OK);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED); /* and ramping at 10% */

    /* The ramp: each call is admitted for real (NONE) or spared a ramp
     * refusal (RAMP), and the permits agree with the counter. */
    uint64_t ramp_permits = 0, real = 0;
    for (int i = 0; i < 20; i++) {
        assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
        enum breaker_refusal r = breaker_permit_would_reject(&p);
        assert_true(r == BREAKER_REFUSAL_NONE || r == BREAKER_REFUSAL_RAMP);
        ramp_permits += r == BREAKER_REFUSAL_RAMP;
        real += r == BREAKER_REFUSAL_NONE;
        assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_OK);
    }
    breaker_stats st = stats_of(b);
    assert_true(ramp_permits >= 17);
    assert_int_equal(st.would_reject_ramp, ramp_permits);
    assert_int_equal(real + ramp_permits, 20);

    assert_int_equal(breaker_force_open(b), BREAKER_OK);
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
    assert_int_equal(breaker_permit_would_reject(&p), BREAKER_REFUSAL_FORCED);
    assert_int_equal(stats_of(b).would_reject_forced, 1);
    assert_int_equal(breaker_complete(b, &p, BREAKER_FAILURE), BREAKER_OK);

    /* Off: the same permit object, refused now, and then admitted. */
    assert_int_equal(breaker_set_shadow(b, 0), BREAKER_OK);
    assert_int_equal(breaker_acquire(b, &p), BREAKER_REJECTED_OPEN);
    assert_int_equal(breaker_permit_would_reject(&p), BREAKER_REFUSAL_NONE);
    assert_int_equal(breaker_reset(b), BREAKER_OK);
    assert_int_equal(breaker_acquire(b, &copy), BREAKER_OK);
    assert_int_equal(breaker_permit_would_reject(&copy), BREAKER_REFUSAL_NONE);
    assert_int_equal(breaker_complete(b, &copy, BREAKER_SUCCESS), BREAKER_OK);

    assert_string_equal(breaker_refusal_name(BREAKER_REFUSAL_NONE), "none");
    assert_string_equal(breaker_refusal_name(BREAKER_REFUSAL_OPEN), "open");
    assert_string_equal(breaker_refusal_name(BREAKER_REFUSAL_HALF_OPEN), "half_open");
    assert_string_equal(breaker_refusal_name(BREAKER_REFUSAL_FORCED), "forced_open");
    assert_string_equal(breaker_refusal_name(BREAKER_REFUSAL_RAMP), "ramp");
    assert_string_equal(breaker_refusal_name((enum breaker_refusal)BREAKER_REFUSAL_COUNT),
                        "unknown");
    fixture_destroy(&f);
}

/* ---- Live reconfiguration --------------------------------------------------- */

static void reconfigure_applies_at_once_and_reports_old_and_new(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker_config *cfg = operate_config(&f, 0);
    cfg->failure_threshold = 5;
    breaker *b = fixture_create(&f);
    assert_int_equal(breaker_config_generation(b), 1);
    for (int i = 0; i < 3; i++)
        call_ok(b, BREAKER_FAILURE);
    breaker_config now;
    breaker_get_config(b, &now);
    assert_int_equal(now.failure_threshold, 5);
    now.failure_threshold = 2;
    now.open_ns = 4 * SEC;
    char msg[256];
    assert_int_equal(breaker_reconfigure(b, &now, 1, msg, sizeof(msg)), BREAKER_OK);
    assert_int_equal(breaker_config_generation(b), 2);
    const breaker_event *ev = fixture_last_event(&f);
    assert_int_equal(ev->reason, BREAKER_REASON_RECONFIGURED);
    assert_int_equal(ev->from, BREAKER_CLOSED);
    assert_int_equal(ev->to, BREAKER_CLOSED);
    assert_int_equal(ev->generation, 1); /* no transition */
    assert_int_equal(ev->config_generation, 2);
    assert_string_equal(breaker_reason_name(BREAKER_REASON_RECONFIGURED), "reconfigured");
    /* The old and new configurations are valid during the callback only:
     * the log kept the pointers, so read what the breaker says now. */
    breaker_config after;
    breaker_get_config(b, &after);
    assert_int_equal(after.failure_threshold, 2);
    assert_int_equal(after.open_ns, 4 * SEC);
    assert_ptr_equal(after.on_event, cfg->on_event); /* the handle's own */
    assert_int_equal(breaker_generation(b), 1);
    assert_int_equal(stats_of(b).failures, 3); /* counters and window kept */
    /* The run of 3 is already past the new threshold: the next failure trips,
     * and the wait is the new one. */
    call_ok(b, BREAKER_FAILURE);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    assert_int_equal(fixture_last_event(&f)->open_ns, 4 * SEC);
    assert_int_equal(fixture_last_event(&f)->evidence.consecutive_failures, 4);
    fixture_destroy(&f);
}

struct config_seen {
    uint32_t old_threshold, new_threshold;
    uint64_t generation;
    int seen;
};
static void on_reconfigured(void *ctx, breaker *b, const breaker_event *ev) {
    (void)b;
    struct config_seen *c = ctx;
    if (ev->reason != BREAKER_REASON_RECONFIGURED) {
        assert_null(ev->old_config);
        return;
    }
    c->old_threshold = ev->old_config->failure_threshold;
    c->new_threshold = ev->new_config->failure_threshold;
    c->generation = ev->config_generation;
    c->seen++;
}

static void reconfigure_event_carries_both_configurations(void **state) {
    (void)state;
    struct breaker_fixture f;
    struct config_seen seen = {0};
    breaker_config *cfg = operate_config(&f, 0);
    cfg->on_event = on_reconfigured;
    cfg->event_ctx = &seen;
    breaker *b = fixture_create(&f);
    breaker_config c;
    breaker_get_config(b, &c);
    c.failure_threshold = 9;
    assert_int_equal(breaker_reconfigure(b, &c, 0, NULL, 0), BREAKER_OK);
    assert_int_equal(seen.seen, 1);
    assert_int_equal(seen.old_threshold, 2);
    assert_int_equal(seen.new_threshold, 9);
    assert_int_equal(seen.generation, 2);
    /* The same limits again: nothing to change, no event. */
    assert_int_equal(breaker_reconfigure(b, &c, 0, NULL, 0), BREAKER_OK);
    assert_int_equal(seen.seen, 1);
    assert_int_equal(breaker_config_generation(b), 2);
    call_ok(b, BREAKER_FAILURE); /* a transition's event has no configurations */
    fixture_destroy(&f);
}

/* A change another made since the caller read is not overwritten. */
static void reconfigure_is_fenced_by_the_configuration_generation(void **state) {
    (void)state;
    struct breaker_fixture f;
    operate_config(&f, 0);
    breaker *b = fixture_create(&f);
    breaker_config mine, theirs;
    breaker_get_config(b, &mine);
    theirs = mine;
    uint64_t read = breaker_config_generation(b);
    theirs.min_calls = 50;
    assert_int_equal(breaker_reconfigure(b, &theirs, read, NULL, 0), BREAKER_OK);
    mine.failure_threshold = 7;
    char msg[256];
    assert_int_equal(breaker_reconfigure(b, &mine, read, msg, sizeof(msg)), BREAKER_STALE);
    assert_non_null(strstr(msg, "configuration generation 2, not 1"));
    breaker_config now;
    breaker_get_config(b, &now);
    assert_int_equal(now.min_calls, 50);
    assert_int_equal(now.failure_threshold, 2);
    fixture_destroy(&f);
}

static void refused(breaker *b, const breaker_config *c, const char *field) {
    char msg[512];
    assert_int_equal(breaker_reconfigure(b, c, 0, msg, sizeof(msg)), BREAKER_EINVAL);
    print_message("%s\n", msg);
    assert_non_null(strstr(msg, field));
    assert_non_null(strstr(msg, "cannot change on a running breaker"));
    assert_int_equal(breaker_config_generation(b), 1);
}

/* What shapes the block is refused, naming the field, both values and why. */
static void reconfigure_refuses_what_shapes_the_block(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker_config *cfg = operate_config(&f, 0);
    cfg->trip = BREAKER_TRIP_COUNT_WINDOW;
    cfg->window_size = 50;
    cfg->min_calls = 10;
    cfg->ramp_ns = SEC;
    breaker *b = fixture_create(&f);
    breaker_config c;
    breaker_get_config(b, &c);
    c.trip = BREAKER_TRIP_CONSECUTIVE;
    refused(b, &c, "trip: count_window -> consecutive");
    breaker_get_config(b, &c);
    c.window_size = 60;
    refused(b, &c, "window_size: 50 -> 60");
    breaker_get_config(b, &c);
    c.half_open_max_probes = 2;
    refused(b, &c, "half_open_max_probes: 1 -> 2");
    breaker_get_config(b, &c);
    c.slow_call_ns = SEC;
    refused(b, &c, "slow_call_ns: 0 -> 1000000000");
    breaker_get_config(b, &c);
    c.ramp_ns = 0;
    refused(b, &c, "ramp_ns: 1000000000 -> 0");
    /* An invalid value is refused as validation says. */
    breaker_get_config(b, &c);
    c.min_calls = 51;
    char msg[256];
    assert_int_equal(breaker_reconfigure(b, &c, 0, msg, sizeof(msg)), BREAKER_EINVAL);
    assert_non_null(strstr(msg, "min_calls"));
    /* And what may change does. */
    breaker_get_config(b, &c);
    c.min_calls = 30;
    c.failure_rate = 0.25;
    c.ramp_ns = 2 * SEC;
    c.half_open_successes = 4;
    c.probe_timeout_ns = 5 * SEC;
    c.min_failing_sources = 1;
    assert_int_equal(breaker_reconfigure(b, &c, 0, NULL, 0), BREAKER_OK);
    breaker_config now;
    breaker_get_config(b, &now);
    assert_int_equal(now.min_calls, 30);
    assert_true(now.failure_rate == 0.25);
    assert_int_equal(now.half_open_successes, 4);
    assert_int_equal(now.min_failing_sources, 1);
    fixture_destroy(&f);
}

/* A wait under way keeps its end; the next open waits the new time. */
static void a_new_wait_applies_from_the_next_open(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker_config *cfg = operate_config(&f, 0);
    cfg->open_backoff = 1;
    breaker *b = fixture_create(&f);
    call_ok(b, BREAKER_FAILURE);
    call_ok(b, BREAKER_FAILURE); /* OPEN for 10 s */
    breaker_config c;
    breaker_get_config(b, &c);
    c.open_ns = 3 * SEC;
    assert_int_equal(breaker_reconfigure(b, &c, 0, NULL, 0), BREAKER_OK);
    assert_int_equal(breaker_retry_after_ns(b), 10 * SEC);
    fake_clock_advance(&f.clock, 10 * SEC);
    call_ok(b, BREAKER_FAILURE); /* the probe fails: the new wait */
    assert_int_equal(fixture_last_event(&f)->open_ns, 3 * SEC);
    fixture_destroy(&f);
}

static void count_reconfigured(void *ctx, const breaker_registry_event *ev) {
    if (ev->kind == BREAKER_REGISTRY_RECONFIGURED) {
        assert_int_equal(ev->transition.reason, BREAKER_REASON_RECONFIGURED);
        assert_non_null(ev->transition.new_config);
        (*(int *)ctx)++;
    }
}

static breaker *reg_get(breaker_registry *reg, const char *name) {
    breaker *b = NULL;
    assert_int_equal(breaker_registry_get(reg, name, &b), BREAKER_OK);
    return b;
}

/* A registry of consecutive breakers (threshold 5) on `clock`, its
 * template in `rc`. */
static breaker_registry *consecutive_registry(struct fake_clock *clock,
                                              breaker_registry_config *rc) {
    breaker_registry_config_init(rc);
    test_config(&rc->defaults, clock, NULL);
    rc->defaults.trip = BREAKER_TRIP_CONSECUTIVE;
    rc->defaults.failure_threshold = 5;
    breaker_registry *reg = NULL;
    assert_int_equal(breaker_registry_create(rc, &reg), BREAKER_OK);
    return reg;
}

/* set_config reaches the live breakers it governs (a documented change),
 * all or none. */
static void registry_set_config_applies_to_live_breakers(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker_registry_config rc;
    breaker_registry *reg = consecutive_registry(&clock, &rc);
    int heard = 0;
    assert_int_equal(breaker_registry_add_listener(reg, count_reconfigured, &heard), BREAKER_OK);
    breaker *ax = reg_get(reg, "a.x"), *by = reg_get(reg, "b.y");
    breaker_config c = rc.defaults;
    c.failure_threshold = 1;
    char msg[512];
    assert_int_equal(breaker_registry_set_config(reg, "a.*", &c, msg, sizeof(msg)), BREAKER_OK);
    assert_int_equal(heard, 1);
    breaker_config now;
    breaker_get_config(ax, &now);
    assert_int_equal(now.failure_threshold, 1);
    breaker_get_config(by, &now);
    assert_int_equal(now.failure_threshold, 5);
    call_ok(ax, BREAKER_FAILURE);
    assert_int_equal(breaker_get_state(ax), BREAKER_OPEN);
    /* A limit a live breaker cannot take: nothing registered, nothing changed. */
    c.trip = BREAKER_TRIP_COUNT_WINDOW;
    assert_int_equal(breaker_registry_set_config(reg, "a.*", &c, msg, sizeof(msg)), BREAKER_EINVAL);
    print_message("%s\n", msg);
    assert_non_null(strstr(msg, "a.*: live breaker a.x: trip: consecutive -> count_window"));
    breaker *az = reg_get(reg, "a.z"); /* made with the pattern as it was */
    breaker_get_config(az, &now);
    assert_int_equal(now.trip, BREAKER_TRIP_CONSECUTIVE);
    assert_int_equal(now.failure_threshold, 1);
    assert_int_equal(heard, 1);
    assert_int_equal(breaker_registry_release(reg, ax), BREAKER_OK);
    assert_int_equal(breaker_registry_release(reg, by), BREAKER_OK);
    assert_int_equal(breaker_registry_release(reg, az), BREAKER_OK);
    breaker_registry_destroy(reg);
}

/* A listener that, hearing the first live change, sets the pattern again
 * (threshold 7) from inside the set_config that told it. */
struct nested_set {
    breaker_registry *reg;
    int calls;
    int rc;
};

static void set_again(void *ctx, const breaker_registry_event *ev) {
    struct nested_set *n = ctx;
    if (ev->kind != BREAKER_REGISTRY_RECONFIGURED || n->calls++ != 0) return;
    breaker_config c;
    breaker_get_config(ev->b, &c);
    c.failure_threshold = 7;
    n->rc = breaker_registry_set_config(n->reg, "a.*", &c, NULL, 0);
}

/* set_config is applied one call at a time. registry.h forbids calling it
 * from a listener (a backend may hold a lock while it reports); on the heap
 * a listener that does, from inside the call that told it, neither
 * deadlocks on that serialization nor frees the override the outer call is
 * applying (it did: ASan), and the inner, later call wins. */
static void a_listener_may_set_the_config_from_inside_set_config(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker_registry_config rc;
    breaker_registry *reg = consecutive_registry(&clock, &rc);
    struct nested_set n = {.reg = reg, .rc = -1};
    assert_int_equal(breaker_registry_add_listener(reg, set_again, &n), BREAKER_OK);
    breaker *ax = reg_get(reg, "a.x"), *ay = reg_get(reg, "a.y");
    breaker_config c = rc.defaults;
    c.failure_threshold = 2;
    assert_int_equal(breaker_registry_set_config(reg, "a.*", &c, NULL, 0), BREAKER_OK);
    assert_int_equal(n.rc, BREAKER_OK);
    breaker_config now;
    breaker_get_config(ax, &now);
    assert_int_equal(now.failure_threshold, 7);
    breaker_get_config(ay, &now);
    assert_int_equal(now.failure_threshold, 7);
    breaker *az = reg_get(reg, "a.z");
    breaker_get_config(az, &now);
    assert_int_equal(now.failure_threshold, 7);
    assert_int_equal(breaker_registry_release(reg, ax), BREAKER_OK);
    assert_int_equal(breaker_registry_release(reg, ay), BREAKER_OK);
    assert_int_equal(breaker_registry_release(reg, az), BREAKER_OK);
    breaker_registry_destroy(reg);
}

/* A forced close given a time: admits and never trips for that long, then
 * is back to normal, as after a reset. */
static void a_forced_close_for_a_time_expires(void **state) {
    (void)state;
    struct breaker_fixture f;
    operate_config(&f, 0);
    breaker *b = fixture_create(&f);
    assert_int_equal(breaker_force_closed_for(b, 0), BREAKER_EINVAL);
    assert_int_equal(breaker_force_closed_for(b, 366 * 24 * 3600 * SEC), BREAKER_EINVAL);
    assert_int_equal(stats_of(b).forced_until_ns, 0);
    assert_int_equal(breaker_force_closed_for(b, 5 * SEC), BREAKER_OK);
    assert_int_equal(fixture_last_event(&f)->to, BREAKER_FORCED_CLOSED);
    assert_int_equal(stats_of(b).forced_until_ns, 5 * SEC); /* when it ends */
    for (int i = 0; i < 10; i++)
        call_ok(b, BREAKER_FAILURE); /* never trips */
    fake_clock_advance(&f.clock, 5 * SEC - 1);
    assert_int_equal(breaker_get_state(b), BREAKER_FORCED_CLOSED);
    fake_clock_advance(&f.clock, 1);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED); /* applied by a query too */
    const breaker_event *ev = fixture_last_event(&f);
    assert_int_equal(ev->from, BREAKER_FORCED_CLOSED);
    assert_int_equal(ev->reason, BREAKER_REASON_FORCE_EXPIRED);
    assert_int_equal(ev->time_ns, 5 * SEC);
    assert_string_equal(breaker_reason_name(BREAKER_REASON_FORCE_EXPIRED), "force_expired");
    assert_int_equal(stats_of(b).window_calls, 0); /* an empty window, as a reset */
    call_ok(b, BREAKER_FAILURE);
    call_ok(b, BREAKER_FAILURE);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    /* Renewed: the new expiry; a plain forced close has none. */
    assert_int_equal(breaker_force_closed_for(b, 2 * SEC), BREAKER_OK);
    assert_int_equal(breaker_force_closed_for(b, 8 * SEC), BREAKER_OK);
    assert_int_equal(stats_of(b).forced_until_ns, fake_clock_read(&f.clock) + 8 * SEC);
    fake_clock_advance(&f.clock, 3 * SEC);
    breaker_permit p;
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
    assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_OK);
    assert_int_equal(breaker_get_state(b), BREAKER_FORCED_CLOSED);
    fake_clock_advance(&f.clock, 5 * SEC);
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK); /* the call applies it */
    assert_int_equal(fixture_last_event(&f)->reason, BREAKER_REASON_FORCE_EXPIRED);
    assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_OK);
    assert_int_equal(breaker_force_closed(b), BREAKER_OK);
    assert_int_equal(stats_of(b).forced_until_ns, 0); /* none */
    fake_clock_advance(&f.clock, 3600 * SEC);
    assert_int_equal(breaker_get_state(b), BREAKER_FORCED_CLOSED);
    fixture_destroy(&f);
}

/* A clock that, on its `fire_at`-th read after being armed, forces the
 * breaker closed from inside the read: as if the operator's order had come
 * between a caller's look at the state and its transition (a preemption,
 * made deterministic). */
struct racing_clock {
    struct fake_clock clock;
    breaker *b;
    int fire_at; /* 0: disarmed */
    int reads;
    int (*order)(breaker *b); /* NULL: breaker_force_closed() */
};

static uint64_t racing_clock_read(void *ctx) {
    struct racing_clock *rc = ctx;
    if (rc->fire_at != 0 && ++rc->reads == rc->fire_at) {
        rc->fire_at = 0;
        assert_int_equal((rc->order != NULL ? rc->order : breaker_force_closed)(rc->b), BREAKER_OK);
    }
    return fake_clock_read(&rc->clock);
}

/* A plain forced close has no expiry, whatever a caller that lost the race
 * to it (an OPEN breaker's first probe, here) wrote for the generation the
 * forced close took. Tried with the order at each clock read of that
 * caller's acquire. */
static void a_plain_forced_close_never_expires_after_a_lost_race(void **state) {
    (void)state;
    int fire_at;
    for (fire_at = 1;; fire_at++) {
        struct racing_clock rc = {0};
        struct breaker_fixture f;
        breaker_config *cfg = operate_config(&f, 0);
        cfg->clock = racing_clock_read;
        cfg->clock_ctx = &rc;
        breaker *b = fixture_create(&f);
        rc.b = b;
        assert_int_equal(breaker_force_open(b), BREAKER_OK);
        assert_int_equal(breaker_open_for(b, SEC, BREAKER_REASON_OPERATOR), BREAKER_OK);
        fake_clock_advance(&rc.clock, SEC); /* the wait is over: the next call probes */
        rc.reads = 0;
        rc.fire_at = fire_at;
        breaker_permit p;
        int got = breaker_acquire(b, &p);
        if (rc.fire_at != 0) { /* past the acquire's last read: every read tried */
            fixture_destroy(&f);
            break;
        }
        if (got == BREAKER_OK) (void)breaker_complete(b, &p, BREAKER_SUCCESS);
        assert_int_equal(breaker_get_state(b), BREAKER_FORCED_CLOSED);
        fake_clock_advance(&rc.clock, 3600 * SEC); /* past any probe timeout or wait */
        if (breaker_get_state(b) != BREAKER_FORCED_CLOSED)
            fail_msg("order at clock read %d: the forced close expired by itself (state %s)",
                     fire_at, breaker_state_name(breaker_get_state(b)));
        fixture_destroy(&f);
    }
    assert_true(fire_at > 2); /* the order came between the look and the transition */
}

static int operator_open_1s(breaker *b) {
    return breaker_open_for(b, SEC, BREAKER_REASON_OPERATOR);
}

/* An operator's timed open is exact, also when it wins the race against an
 * OPEN breaker's first probe, which had already written its deadline (30 s
 * away) for the generation the open took. */
static void an_operators_wait_is_exact_after_a_lost_race(void **state) {
    (void)state;
    int fire_at;
    for (fire_at = 1;; fire_at++) {
        struct racing_clock rc = {.order = operator_open_1s};
        struct breaker_fixture f;
        breaker_config *cfg = operate_config(&f, 0);
        cfg->probe_timeout_ns = 30 * SEC;
        cfg->clock = racing_clock_read;
        cfg->clock_ctx = &rc;
        breaker *b = fixture_create(&f);
        rc.b = b;
        assert_int_equal(breaker_open_for(b, SEC, BREAKER_REASON_OPERATOR), BREAKER_OK);
        fake_clock_advance(&rc.clock, SEC); /* the wait is over: the next call probes */
        rc.fire_at = fire_at;
        breaker_permit p;
        int got = breaker_acquire(b, &p);
        if (got == BREAKER_OK) (void)breaker_complete(b, &p, BREAKER_IGNORED);
        if (rc.fire_at != 0) { /* past the acquire's last read: every read tried */
            fixture_destroy(&f);
            break;
        }
        assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
        if (breaker_retry_after_ns(b) != SEC)
            fail_msg("order at clock read %d: an open for 1 s waits %.3f s", fire_at,
                     (double)breaker_retry_after_ns(b) / 1e9);
        fixture_destroy(&f);
    }
    assert_true(fire_at > 2);
}

/* breaker_force_closed() after breaker_force_closed_for(): the new order
 * has no end, so the old expiry is gone ("another order ... ends it"). */
static void a_plain_forced_close_cancels_an_expiry(void **state) {
    (void)state;
    struct breaker_fixture f;
    operate_config(&f, 0);
    breaker *b = fixture_create(&f);
    assert_int_equal(breaker_force_closed_for(b, 5 * SEC), BREAKER_OK);
    assert_int_equal(breaker_force_closed(b), BREAKER_OK);
    fake_clock_advance(&f.clock, 3600 * SEC);
    assert_int_equal(breaker_get_state(b), BREAKER_FORCED_CLOSED);
    /* Already forced closed without an expiry: no transition. */
    unsigned n = fixture_events(&f);
    assert_int_equal(breaker_force_closed(b), BREAKER_OK);
    assert_int_equal(fixture_events(&f), n);
    fixture_destroy(&f);
}

/* The JSON report says shadow mode, what it would have refused and the
 * timed opens, by name. */
static void the_json_report_shows_shadow_mode_and_timed_opens(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker_registry_config rc;
    breaker_registry_config_init(&rc);
    test_config(&rc.defaults, &clock, NULL);
    rc.defaults.trip = BREAKER_TRIP_CONSECUTIVE;
    rc.defaults.failure_threshold = 1;
    breaker_registry *reg = NULL;
    assert_int_equal(breaker_registry_create(&rc, &reg), BREAKER_OK);
    breaker *b = reg_get(reg, "api");
    assert_int_equal(breaker_set_shadow(b, 1), BREAKER_OK);
    assert_int_equal(breaker_open_for(b, SEC, BREAKER_REASON_SERVER_DIRECTED), BREAKER_OK);
    call_ok(b, BREAKER_SUCCESS); /* would be refused: open */
    static char text[1 << 16];
    assert_int_equal(breaker_registry_export_json(reg, text, sizeof(text), NULL), BREAKER_OK);
    assert_non_null(strstr(text, "\"shadow\":true"));
    assert_non_null(strstr(text, "\"server_directed_opens\":1"));
    assert_non_null(strstr(text, "\"would_reject_open\":1"));
    assert_non_null(strstr(text, "\"shadow_successes\":1"));
    assert_int_equal(breaker_registry_release(reg, b), BREAKER_OK);
    breaker_registry_destroy(reg);
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
        cmocka_unit_test(a_shadow_permits_duration_is_not_recorded),
        cmocka_unit_test(shadow_off_enforces_from_the_current_state),
        cmocka_unit_test(a_shadow_permit_says_which_refusal_it_was_spared),
        cmocka_unit_test(reconfigure_applies_at_once_and_reports_old_and_new),
        cmocka_unit_test(reconfigure_event_carries_both_configurations),
        cmocka_unit_test(reconfigure_is_fenced_by_the_configuration_generation),
        cmocka_unit_test(reconfigure_refuses_what_shapes_the_block),
        cmocka_unit_test(a_new_wait_applies_from_the_next_open),
        cmocka_unit_test(registry_set_config_applies_to_live_breakers),
        cmocka_unit_test(a_listener_may_set_the_config_from_inside_set_config),
        cmocka_unit_test(a_forced_close_for_a_time_expires),
        cmocka_unit_test(a_plain_forced_close_never_expires_after_a_lost_race),
        cmocka_unit_test(a_plain_forced_close_cancels_an_expiry),
        cmocka_unit_test(an_operators_wait_is_exact_after_a_lost_race),
        cmocka_unit_test(the_json_report_shows_shadow_mode_and_timed_opens),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
