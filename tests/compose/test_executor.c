/* SPDX-License-Identifier: MIT */
/*
 * test_executor.c - the executor: what each composition makes the breaker
 * count, deadlines, late answers, cancellation, idempotency, retryability
 * and the result kinds it reports.
 */
#include "compose_util.h"

#include <stdio.h>

/* Everything one test needs, on one fake clock: a dependency that fails with
 * 503 unless told otherwise, an optional consecutive-failures breaker (open
 * 30 s) and an executor. rig_init() fills it; the test may then change
 * r->cfg and r->dep before rig_build() creates the executor. */
struct rig {
    struct fake_clock clock;
    struct fake_sleep sl;
    struct dependency dep;
    breaker *b;
    breaker_executor_config cfg;
    breaker_executor *ex;
    breaker_call call;
};

static void rig_init(struct rig *r, enum breaker_order order, uint32_t threshold) {
    memset(r, 0, sizeof(*r));
    r->sl.clock = &r->clock;
    r->dep = (struct dependency){.clock = &r->clock, .answer = BREAKER_FAILURE, .error = 503};
    if (threshold != 0) {
        breaker_config bc;
        test_config(&bc, &r->clock, NULL);
        bc.trip = BREAKER_TRIP_CONSECUTIVE;
        bc.failure_threshold = threshold;
        bc.open_ns = 30 * SEC;
        r->b = make_breaker(&bc);
    }
    exec_config(&r->cfg, &r->clock, &r->sl);
    r->cfg.order = order;
    r->cfg.b = r->b;
    r->call = idempotent_call(&r->dep);
}

static void rig_build(struct rig *r) { r->ex = make_executor(&r->cfg); }

static void rig_fini(struct rig *r) {
    breaker_executor_destroy(r->ex);
    test_breaker_destroy(r->b);
}

static breaker_result rig_run(struct rig *r) { return run_call(r->ex, &r->call); }

#define NO_BREAKER 0
#define NEVER_OPEN 1000

static void breaker_outside_retry_records_one_outcome_per_request(void **state) {
    (void)state;
    struct rig r;
    rig_init(&r, BREAKER_ORDER_BREAKER_OUTSIDE_RETRY, NEVER_OPEN);
    rig_build(&r);
    for (int i = 0; i < 4; i++) {
        breaker_result res = rig_run(&r);
        assert_int_equal(res.kind, BREAKER_RESULT_FAILED);
        assert_int_equal(res.error, 503);
        assert_int_equal(res.attempts, 3);
        assert_int_equal(res.breaker_records, 1);
        assert_int_equal(res.layer, BREAKER_LAYER_RETRY_POLICY);
    }
    breaker_stats st = stats_of(r.b);
    assert_int_equal(r.dep.calls, 12);
    assert_int_equal(st.admitted, 4);
    assert_int_equal(st.failures, 4);
    assert_int_equal(exec_stats(r.ex).breaker_records, 4);
    rig_fini(&r);
}

static void retry_outside_breaker_records_one_outcome_per_attempt(void **state) {
    (void)state;
    struct rig r;
    rig_init(&r, BREAKER_ORDER_RETRY_OUTSIDE_BREAKER, NEVER_OPEN);
    rig_build(&r);
    for (int i = 0; i < 4; i++) {
        breaker_result res = rig_run(&r);
        assert_int_equal(res.kind, BREAKER_RESULT_FAILED);
        assert_int_equal(res.attempts, 3);
        assert_int_equal(res.breaker_records, 3);
    }
    breaker_stats st = stats_of(r.b);
    assert_int_equal(r.dep.calls, 12);
    assert_int_equal(st.admitted, 12);
    assert_int_equal(st.failures, 12);
    rig_fini(&r);
}

static void breaker_outside_retry_records_success_after_failed_attempts(void **state) {
    (void)state;
    struct rig r;
    rig_init(&r, BREAKER_ORDER_BREAKER_OUTSIDE_RETRY, NEVER_OPEN);
    r.dep.succeed_from = 3;
    rig_build(&r);
    breaker_result res = rig_run(&r);
    assert_int_equal(res.kind, BREAKER_RESULT_SUCCEEDED);
    assert_int_equal(res.attempts, 3);
    assert_int_equal(res.error, 200);
    /* Two failed attempts are hidden from the breaker in this order. */
    breaker_stats st = stats_of(r.b);
    assert_int_equal(st.successes, 1);
    assert_int_equal(st.failures, 0);
    rig_fini(&r);
}

static void breaker_opening_inside_retry_stops_attempts_and_sleeps(void **state) {
    (void)state;
    struct rig r;
    rig_init(&r, BREAKER_ORDER_RETRY_OUTSIDE_BREAKER, 2); /* opens on the 2nd failure */
    r.cfg.retry.max_attempts = 5;
    rig_build(&r);
    breaker_result res = rig_run(&r);
    /* Attempt 1 fails, one backoff, attempt 2 fails and opens the breaker:
     * no third attempt and no second backoff. */
    assert_int_equal(res.kind, BREAKER_RESULT_FAILED);
    assert_int_equal(res.error, 503);
    assert_int_equal(res.attempts, 2);
    assert_int_equal(r.dep.calls, 2);
    assert_int_equal(r.sl.count, 1);
    assert_int_equal(res.layer, BREAKER_LAYER_BREAKER);
    assert_int_equal(res.status, BREAKER_REJECTED_OPEN);
    assert_int_equal(res.retry_after_ns, 30 * SEC);
    assert_int_equal(breaker_get_state(r.b), BREAKER_OPEN);

    /* The next request is refused locally: nothing reaches the dependency,
     * nothing sleeps, and it is not reported as a success. */
    res = rig_run(&r);
    assert_int_equal(res.kind, BREAKER_RESULT_REFUSED);
    assert_int_equal(res.layer, BREAKER_LAYER_BREAKER);
    assert_int_equal(res.status, BREAKER_REJECTED_OPEN);
    assert_int_equal(res.attempts, 0);
    assert_int_equal(res.breaker_records, 0);
    assert_int_equal(res.retry_after_ns, 30 * SEC);
    assert_int_equal(r.dep.calls, 2);
    assert_int_equal(r.sl.count, 1);
    breaker_executor_stats st = exec_stats(r.ex);
    assert_int_equal(st.refused_breaker, 1);
    assert_int_equal(st.stopped_breaker, 1);
    rig_fini(&r);
}

static void breaker_outside_retry_refusal_is_one_local_refusal(void **state) {
    (void)state;
    struct rig r;
    rig_init(&r, BREAKER_ORDER_BREAKER_OUTSIDE_RETRY, 2);
    rig_build(&r);
    (void)rig_run(&r);
    (void)rig_run(&r); /* 2 recorded failures: open */
    assert_int_equal(r.dep.calls, 6);
    assert_int_equal(breaker_get_state(r.b), BREAKER_OPEN);
    breaker_result res = rig_run(&r);
    assert_int_equal(res.kind, BREAKER_RESULT_REFUSED);
    assert_int_equal(res.layer, BREAKER_LAYER_BREAKER);
    assert_int_equal(r.dep.calls, 6);
    rig_fini(&r);
}

/* The cost of each order against a dead dependency: how many calls reach it
 * before a 5-consecutive-failures breaker opens. */
static unsigned calls_until_open(enum breaker_order order) {
    struct rig r;
    rig_init(&r, order, 5);
    rig_build(&r);
    for (int i = 0; i < 20 && breaker_get_state(r.b) == BREAKER_CLOSED; i++)
        (void)rig_run(&r);
    assert_int_equal(breaker_get_state(r.b), BREAKER_OPEN);
    rig_fini(&r);
    return r.dep.calls;
}

static void retry_outside_breaker_stops_hitting_a_dead_dependency_sooner(void **state) {
    (void)state;
    assert_int_equal(calls_until_open(BREAKER_ORDER_BREAKER_OUTSIDE_RETRY), 15);
    assert_int_equal(calls_until_open(BREAKER_ORDER_RETRY_OUTSIDE_BREAKER), 5);
}

/* Whatever the jitter and the dependency's latency, every attempt starts
 * before the deadline and every backoff ends before it. */
static void no_attempt_starts_and_no_sleep_ends_past_the_deadline(void **state) {
    (void)state;
    enum breaker_jitter jitters[] = {BREAKER_JITTER_NONE, BREAKER_JITTER_FULL,
                                     BREAKER_JITTER_DECORRELATED};
    uint64_t latencies[] = {0, 1 * MS, 40 * MS, 250 * MS, 700 * MS};
    unsigned stopped_by_deadline = 0;
    for (unsigned j = 0; j < 3; j++) {
        for (unsigned l = 0; l < 5; l++) {
            for (uint64_t seed = 1; seed <= 20; seed++) {
                struct rig r;
                rig_init(&r, BREAKER_ORDER_RETRY_OUTSIDE_BREAKER, NO_BREAKER);
                atomic_store(&r.clock.now, 5 * SEC);
                r.dep.latency_ns = latencies[l];
                r.cfg.retry.max_attempts = 20;
                r.cfg.retry.jitter = jitters[j];
                r.cfg.retry.base_ns = 50 * MS;
                r.cfg.seed = seed;
                r.call.deadline_ns = 6 * SEC;
                rig_build(&r);
                breaker_result res = rig_run(&r);
                for (unsigned i = 0; i < r.dep.calls && i < MAX_LOGGED; i++) {
                    assert_true(r.dep.start_ns[i] < r.call.deadline_ns);
                    assert_int_equal(r.dep.deadline_ns[i], r.call.deadline_ns);
                    assert_int_equal(r.dep.timeout_ns[i], r.call.deadline_ns - r.dep.start_ns[i]);
                }
                for (unsigned i = 0; i < r.sl.count && i < MAX_LOGGED; i++)
                    assert_true(r.sl.end_ns[i] < r.call.deadline_ns);
                assert_int_equal(res.kind, BREAKER_RESULT_FAILED);
                if (res.layer == BREAKER_LAYER_DEADLINE) {
                    stopped_by_deadline++;
                    assert_int_equal(res.status, BREAKER_DEADLINE_EXCEEDED);
                }
                rig_fini(&r);
            }
        }
    }
    /* The deadline, not the attempt limit, ended nearly all of these. */
    assert_true(stopped_by_deadline > 250);
}

static void passed_deadline_refuses_without_calling(void **state) {
    (void)state;
    struct rig r;
    rig_init(&r, BREAKER_ORDER_RETRY_OUTSIDE_BREAKER, 5);
    atomic_store(&r.clock.now, 10 * SEC);
    r.call.deadline_ns = 10 * SEC; /* "now" is already too late */
    rig_build(&r);
    breaker_result res = rig_run(&r);
    assert_int_equal(res.kind, BREAKER_RESULT_REFUSED);
    assert_int_equal(res.layer, BREAKER_LAYER_DEADLINE);
    assert_int_equal(res.status, BREAKER_DEADLINE_EXCEEDED);
    assert_int_equal(res.retry_after_ns, UINT64_MAX);
    assert_int_equal(r.dep.calls, 0);
    assert_int_equal(stats_of(r.b).admitted, 0);
    assert_int_equal(exec_stats(r.ex).refused_deadline, 1);
    rig_fini(&r);
}

static void attempt_deadline_is_the_sooner_of_call_deadline_and_attempt_timeout(void **state) {
    (void)state;
    struct rig r;
    rig_init(&r, BREAKER_ORDER_RETRY_OUTSIDE_BREAKER, NO_BREAKER);
    r.cfg.retry.attempt_timeout_ns = 300 * MS;
    r.cfg.retry.base_ns = 400 * MS;
    r.call.deadline_ns = 1 * SEC;
    rig_build(&r);
    (void)rig_run(&r);
    /* Attempt 1 at 0: its own 300 ms limit. Attempt 2 at 400 ms: 700 ms.
     * A third would start at 1.2 s, past the deadline. */
    assert_int_equal(r.dep.calls, 2);
    assert_int_equal(r.dep.deadline_ns[0], 300 * MS);
    assert_int_equal(r.dep.timeout_ns[0], 300 * MS);
    assert_int_equal(r.dep.deadline_ns[1], 700 * MS);
    rig_fini(&r);

    /* No deadline at all: the operation is told so. */
    rig_init(&r, BREAKER_ORDER_RETRY_OUTSIDE_BREAKER, NO_BREAKER);
    r.dep.answer = BREAKER_SUCCESS;
    rig_build(&r);
    (void)rig_run(&r);
    assert_int_equal(r.dep.deadline_ns[0], BREAKER_NO_DEADLINE);
    assert_int_equal(r.dep.timeout_ns[0], UINT64_MAX);
    rig_fini(&r);
}

/* A success that arrives 1 s after a deadline 1 s away, which is the
 * dependency's own timeout (a caller's deadline alone is the caller's
 * business: caller_deadline_is_not_evidence_against_a_healthy_dependency). */
static void rig_late_success(struct rig *r, bool keeps_outcome) {
    rig_init(r, BREAKER_ORDER_RETRY_OUTSIDE_BREAKER, NEVER_OPEN);
    r->dep.answer = BREAKER_SUCCESS;
    r->dep.latency_ns = 2 * SEC;
    r->cfg.retry.attempt_timeout_ns = 1 * SEC;
    r->call.deadline_ns = 1 * SEC;
    r->cfg.late_keeps_outcome = keeps_outcome;
    rig_build(r);
}

static void late_success_is_recorded_as_timeout_failure(void **state) {
    (void)state;
    struct rig r;
    rig_late_success(&r, false);
    breaker_result res = rig_run(&r);
    assert_int_equal(res.kind, BREAKER_RESULT_FAILED);
    assert_true(res.late);
    assert_int_equal(res.outcome, BREAKER_FAILURE);
    assert_int_equal(res.status, BREAKER_DEADLINE_EXCEEDED);
    assert_int_equal(res.attempts, 1);
    breaker_stats st = stats_of(r.b);
    assert_int_equal(st.failures, 1);
    assert_int_equal(st.successes, 0);
    assert_int_equal(exec_stats(r.ex).late, 1);
    rig_fini(&r);
}

static void late_answer_keeps_its_outcome_when_configured(void **state) {
    (void)state;
    struct rig r;
    rig_late_success(&r, true);
    breaker_result res = rig_run(&r);
    assert_int_equal(res.kind, BREAKER_RESULT_SUCCEEDED);
    assert_true(res.late);
    assert_int_equal(stats_of(r.b).successes, 1);
    assert_int_equal(stats_of(r.b).failures, 0);
    rig_fini(&r);
}

static void late_attempt_within_call_deadline_is_retried(void **state) {
    (void)state;
    struct rig r;
    rig_init(&r, BREAKER_ORDER_RETRY_OUTSIDE_BREAKER, NO_BREAKER);
    r.dep.answer = BREAKER_SUCCESS;
    r.dep.latency_ns = 200 * MS;
    r.cfg.retry.attempt_timeout_ns = 100 * MS; /* every attempt overruns its slice */
    r.call.deadline_ns = 10 * SEC;
    rig_build(&r);
    breaker_result res = rig_run(&r);
    assert_int_equal(res.kind, BREAKER_RESULT_FAILED);
    assert_int_equal(res.attempts, 3);
    assert_int_equal(res.layer, BREAKER_LAYER_RETRY_POLICY);
    assert_true(res.late);
    rig_fini(&r);
}

static void cancelled_operation_is_recorded_as_cancelled_and_not_retried(void **state) {
    (void)state;
    enum breaker_order orders[] = {BREAKER_ORDER_RETRY_OUTSIDE_BREAKER,
                                   BREAKER_ORDER_BREAKER_OUTSIDE_RETRY};
    for (unsigned o = 0; o < 2; o++) {
        struct rig r;
        rig_init(&r, orders[o], NEVER_OPEN);
        r.dep.answer = BREAKER_CANCELLED;
        r.dep.latency_ns = SEC;
        r.call.deadline_ns = 500 * MS; /* even past its deadline: not a timeout */
        rig_build(&r);
        breaker_result res = rig_run(&r);
        assert_int_equal(res.kind, BREAKER_RESULT_CANCELLED);
        assert_int_equal(res.layer, BREAKER_LAYER_CALLER);
        assert_int_equal(res.status, BREAKER_ECANCELED);
        assert_false(res.late);
        assert_int_equal(res.attempts, 1);
        breaker_stats st = stats_of(r.b);
        assert_int_equal(st.cancelled, 1);
        assert_int_equal(st.failures, 0);
        rig_fini(&r);
    }
}

static void cancellation_during_backoff_stops_the_request(void **state) {
    (void)state;
    struct rig r;
    rig_init(&r, BREAKER_ORDER_BREAKER_OUTSIDE_RETRY, NEVER_OPEN);
    r.sl.cancel_at = 1;
    rig_build(&r);
    breaker_result res = rig_run(&r);
    assert_int_equal(res.kind, BREAKER_RESULT_CANCELLED);
    assert_int_equal(res.attempts, 1);
    assert_int_equal(r.dep.calls, 1);
    /* The request's one permit is settled as the caller's cancellation. */
    assert_int_equal(stats_of(r.b).cancelled, 1);
    assert_int_equal(exec_stats(r.ex).cancelled, 1);
    rig_fini(&r);
}

/* Another caller's failures, recorded while this request sleeps its
 * backoff: enough to open the rig's breaker. */
static void others_fail_meanwhile(void *ctx) {
    struct rig *r = ctx;
    while (breaker_get_state(r->b) == BREAKER_CLOSED)
        call_ok(r->b, BREAKER_FAILURE);
}

/* A retry is withdrawn before its backoff; when the request then gives up
 * without making it (the breaker opened, the deadline passed or the caller
 * cancelled during the backoff), the budget must not keep the charge. */
static void budget_is_charged_only_for_retries_made(void **state) {
    (void)state;
    struct rig r;
    rig_init(&r, BREAKER_ORDER_RETRY_OUTSIDE_BREAKER, 3);
    /* 100 free retries: the budget itself never refuses here. */
    breaker_retry_budget *budget = make_budget(&r.clock, 0, 100, 10 * SEC);
    r.cfg.budget = budget;
    rig_build(&r);

    /* The breaker opens during the first backoff: the retry is not made. */
    r.sl.meanwhile = others_fail_meanwhile;
    r.sl.meanwhile_ctx = &r;
    breaker_result res = rig_run(&r);
    assert_int_equal(res.kind, BREAKER_RESULT_FAILED);
    assert_int_equal(res.layer, BREAKER_LAYER_BREAKER);
    assert_int_equal(res.attempts, 1);
    assert_int_equal(r.sl.count, 1);
    r.sl.meanwhile = NULL;
    assert_int_equal(breaker_reset(r.b), BREAKER_OK);

    /* The deadline passes during the first backoff (the sleep wakes late). */
    r.sl.oversleep_ns = 1 * SEC;
    r.call.deadline_ns = fake_clock_read(&r.clock) + 1 * SEC;
    res = rig_run(&r);
    assert_int_equal(res.kind, BREAKER_RESULT_FAILED);
    assert_int_equal(res.layer, BREAKER_LAYER_DEADLINE);
    assert_int_equal(res.attempts, 1);
    r.sl.oversleep_ns = 0;
    r.call.deadline_ns = BREAKER_NO_DEADLINE;
    assert_int_equal(breaker_reset(r.b), BREAKER_OK);

    /* The caller cancels during the first backoff. */
    r.sl.cancel_at = r.sl.count + 1;
    res = rig_run(&r);
    assert_int_equal(res.kind, BREAKER_RESULT_CANCELLED);
    assert_int_equal(res.attempts, 1);
    r.sl.cancel_at = 0;
    assert_int_equal(breaker_reset(r.b), BREAKER_OK);

    /* And one request whose two retries are both made. */
    res = rig_run(&r);
    assert_int_equal(res.kind, BREAKER_RESULT_FAILED);
    assert_int_equal(res.layer, BREAKER_LAYER_RETRY_POLICY);
    assert_int_equal(res.attempts, 3);

    breaker_executor_stats st = exec_stats(r.ex);
    breaker_retry_budget_stats bs = budget_stats(budget);
    printf("# budget: %llu withdrawn, %llu refunded, %llu in the window; %llu retries made\n",
           (unsigned long long)bs.withdrawals, (unsigned long long)bs.refunded,
           (unsigned long long)bs.window_retries, (unsigned long long)st.retries);
    assert_int_equal(st.retries, 2);
    assert_int_equal(bs.deposits, 4);
    assert_int_equal(bs.withdrawals, 5);
    assert_int_equal(bs.refunded, 3);
    assert_int_equal(bs.withdrawals - bs.refunded, st.retries);
    assert_int_equal(bs.window_retries, st.retries);
    rig_fini(&r);
    breaker_retry_budget_destroy(budget);
}

static void non_idempotent_call_is_not_retried(void **state) {
    (void)state;
    struct rig r;
    rig_init(&r, BREAKER_ORDER_RETRY_OUTSIDE_BREAKER, NO_BREAKER);
    r.call.idempotent = false;
    rig_build(&r);
    breaker_result res = rig_run(&r);
    assert_int_equal(res.kind, BREAKER_RESULT_FAILED);
    assert_int_equal(res.attempts, 1);
    assert_int_equal(res.layer, BREAKER_LAYER_RETRY_POLICY);
    assert_int_equal(r.sl.count, 0);
    r.call.idempotent = true;
    res = rig_run(&r);
    assert_int_equal(res.attempts, 3);
    rig_fini(&r);
}

/* Attempts one request makes when the dependency answers `answer` with
 * `hint`, and the result kind. */
static uint32_t attempts_for(enum breaker_outcome answer, enum breaker_retry_hint hint,
                             enum breaker_result_kind *kind) {
    struct rig r;
    rig_init(&r, BREAKER_ORDER_RETRY_OUTSIDE_BREAKER, NO_BREAKER);
    r.dep.answer = answer;
    r.dep.error = 22;
    r.dep.hint = hint;
    rig_build(&r);
    breaker_result res = rig_run(&r);
    *kind = res.kind;
    assert_int_equal(r.sl.count, res.attempts - 1); /* one backoff per retry */
    rig_fini(&r);
    return res.attempts;
}

static void only_retryable_outcomes_are_retried(void **state) {
    (void)state;
    enum breaker_result_kind kind;
    /* A failure is retried. */
    assert_int_equal(attempts_for(BREAKER_FAILURE, BREAKER_RETRY_AUTO, &kind), 3);
    /* IGNORED (a local error): not the dependency's fault, not retried, and
     * not a success either. */
    assert_int_equal(attempts_for(BREAKER_IGNORED, BREAKER_RETRY_AUTO, &kind), 1);
    assert_int_equal(kind, BREAKER_RESULT_FAILED);
    /* A failure the operation knows is permanent. */
    assert_int_equal(attempts_for(BREAKER_FAILURE, BREAKER_RETRY_NO, &kind), 1);
    /* An IGNORED outcome the operation says is worth another try. */
    assert_int_equal(attempts_for(BREAKER_IGNORED, BREAKER_RETRY_YES, &kind), 3);
    /* A success, of course, is not retried. */
    assert_int_equal(attempts_for(BREAKER_SUCCESS, BREAKER_RETRY_YES, &kind), 1);
    assert_int_equal(kind, BREAKER_RESULT_SUCCEEDED);
}

static void no_deadline_retries_sleep_the_policy_backoff(void **state) {
    (void)state;
    struct rig r;
    rig_init(&r, BREAKER_ORDER_RETRY_OUTSIDE_BREAKER, NO_BREAKER);
    r.cfg.retry.max_attempts = 4;
    rig_build(&r);
    breaker_result res = rig_run(&r);
    assert_int_equal(res.attempts, 4);
    assert_int_equal(r.sl.count, 3);
    assert_int_equal(res.slept_ns, (100 + 200 + 400) * MS);
    assert_int_equal(r.dep.start_ns[3], 700 * MS);
    assert_int_equal(res.elapsed_ns, 700 * MS);
    rig_fini(&r);
}

static void bulkhead_refusal_is_distinct_from_breaker_refusal(void **state) {
    (void)state;
    struct rig r;
    rig_init(&r, BREAKER_ORDER_RETRY_OUTSIDE_BREAKER, 5);
    r.dep.answer = BREAKER_SUCCESS;
    breaker_bulkhead_config bc = {.max_concurrent = 1};
    breaker_bulkhead *bh = NULL;
    assert_int_equal(breaker_bulkhead_create(&bc, &bh), BREAKER_OK);
    r.cfg.bulkhead = bh;
    rig_build(&r);

    assert_int_equal(breaker_bulkhead_try_acquire(bh), BREAKER_OK); /* someone else's call */
    breaker_result res = rig_run(&r);
    assert_int_equal(res.kind, BREAKER_RESULT_REFUSED);
    assert_int_equal(res.layer, BREAKER_LAYER_BULKHEAD);
    assert_int_equal(res.status, BREAKER_BULKHEAD_FULL);
    assert_int_equal(res.retry_after_ns, 0);
    assert_int_equal(r.dep.calls, 0);
    breaker_stats st = stats_of(r.b);
    assert_int_equal(st.admitted, 0);
    assert_int_equal(st.rejected_open, 0);
    assert_int_equal(st.failures, 0);
    breaker_executor_stats es = exec_stats(r.ex);
    assert_int_equal(es.refused_bulkhead, 1);
    assert_int_equal(es.refused_breaker, 0);

    assert_int_equal(breaker_bulkhead_release(bh), BREAKER_OK);
    assert_int_equal(rig_run(&r).kind, BREAKER_RESULT_SUCCEEDED);
    breaker_bulkhead_stats bs;
    assert_int_equal(breaker_bulkhead_stats_get(bh, &bs), BREAKER_OK);
    assert_int_equal(bs.in_flight, 0); /* the executor gave its slot back */
    assert_int_equal(bs.refused, 1);
    rig_fini(&r);
    breaker_bulkhead_destroy(bh);
}

static void half_open_probe_through_executor_closes_breaker(void **state) {
    (void)state;
    struct rig r;
    rig_init(&r, BREAKER_ORDER_RETRY_OUTSIDE_BREAKER, 1);
    rig_build(&r);
    (void)rig_run(&r);
    assert_int_equal(breaker_get_state(r.b), BREAKER_OPEN);
    fake_clock_advance(&r.clock, 31 * SEC);
    r.dep.answer = BREAKER_SUCCESS;
    for (int i = 0; i < 3; i++)
        assert_int_equal(rig_run(&r).kind, BREAKER_RESULT_SUCCEEDED);
    assert_int_equal(breaker_get_state(r.b), BREAKER_CLOSED);
    rig_fini(&r);
}

static void invalid_arguments_are_refused(void **state) {
    (void)state;
    breaker_executor_config cfg;
    breaker_executor_config_init(&cfg);
    breaker_executor *ex = NULL;
    cfg.retry.max_attempts = 101;
    assert_int_equal(breaker_executor_create(&cfg, &ex), BREAKER_EINVAL);
    assert_null(ex);
    breaker_executor_config_init(&cfg);
    cfg.order = (enum breaker_order)7;
    assert_int_equal(breaker_executor_create(&cfg, &ex), BREAKER_EINVAL);
    breaker_executor_config_init(&cfg);
    ex = make_executor(&cfg);
    breaker_call call = {0};
    breaker_result res;
    assert_int_equal(breaker_executor_run(ex, &call, &res), BREAKER_EINVAL);
    assert_int_equal(exec_stats(ex).requests, 0);
    breaker_executor_destroy(ex);
    assert_string_equal(breaker_result_kind_name(BREAKER_RESULT_FALLBACK), "fallback");
    assert_string_equal(breaker_layer_name(BREAKER_LAYER_RETRY_BUDGET), "retry_budget");
    assert_string_equal(breaker_order_name(BREAKER_ORDER_BREAKER_OUTSIDE_RETRY),
                        "breaker_outside_retry");
    assert_string_equal(breaker_layer_name((enum breaker_layer)99), "unknown");
}

/* NULL is breaker_executor_config_init(): retries alone (3 attempts, real
 * backoffs of at most 100 + 200 ms), no breaker, bulkhead or budget. */
static void null_config_takes_the_defaults(void **state) {
    (void)state;
    breaker_executor *ex = NULL;
    assert_int_equal(breaker_executor_create(NULL, &ex), BREAKER_OK);
    assert_non_null(ex);
    struct fake_clock unused = {0};
    struct dependency dep = {.clock = &unused, .answer = BREAKER_FAILURE, .error = 503};
    breaker_call call = idempotent_call(&dep);
    breaker_result res = run_call(ex, &call);
    assert_int_equal(res.kind, BREAKER_RESULT_FAILED);
    assert_int_equal(res.layer, BREAKER_LAYER_RETRY_POLICY);
    assert_int_equal(res.attempts, 3);
    assert_int_equal(res.breaker_records, 0);
    assert_true(res.slept_ns <= 300 * MS);
    breaker_executor_stats st = exec_stats(ex);
    assert_int_equal(st.retries, 2);
    assert_int_equal(st.refused_bulkhead, 0);
    breaker_executor_destroy(ex);
}

#define assert_executor_refused(cfg, want)                                           \
    assert_config_refused(breaker_executor_config_validate, breaker_executor_create, \
                          breaker_executor, cfg, want)

static void validation_names_each_field_and_its_range(void **state) {
    (void)state;
    breaker_executor_config cfg;
    breaker_executor_config_init(&cfg);
    assert_config_valid(breaker_executor_config_validate, &cfg);
    cfg.order = (enum breaker_order)7;
    assert_executor_refused(
        &cfg, "order: must be retry_outside_breaker or breaker_outside_retry (got 7)");
    breaker_executor_config_init(&cfg);
    cfg.retry.max_attempts = 101;
    assert_executor_refused(&cfg, "retry.max_attempts: must be between 1 and 100 (got 101)");
    breaker_executor_config_init(&cfg);
    cfg.retry.base_ns = 2 * SEC;
    cfg.retry.max_backoff_ns = 1 * SEC;
    assert_executor_refused(
        &cfg, "retry.max_backoff_ns: must be >= base_ns (2000000000 ns), got 1000000000 ns");
    breaker_executor_config_init(&cfg);
    cfg.retry.jitter = (enum breaker_jitter)9;
    assert_executor_refused(&cfg, "retry.jitter: must be full, decorrelated or none (got 9)");
    /* A zeroed configuration is all defaults, and valid. */
    memset(&cfg, 0, sizeof(cfg));
    assert_config_valid(breaker_executor_config_validate, &cfg);
}

static void config_init_clears_the_whole_struct(void **state) {
    (void)state;
    assert_config_init_clears(breaker_executor_config, breaker_executor_config_init);
}

/* An attempt timeout so long that start + timeout passes the end of the
 * clock is no limit: the sum must not wrap round to a deadline already past,
 * which would make every attempt late. */
static void attempt_timeout_past_the_end_of_the_clock_is_no_limit(void **state) {
    (void)state;
    struct rig r;
    rig_init(&r, BREAKER_ORDER_RETRY_OUTSIDE_BREAKER, NO_BREAKER);
    atomic_store(&r.clock.now, 5 * SEC);
    r.dep.answer = BREAKER_SUCCESS;
    r.cfg.retry.attempt_timeout_ns = UINT64_MAX - 1;
    rig_build(&r);
    breaker_result res = rig_run(&r);
    assert_int_equal(res.kind, BREAKER_RESULT_SUCCEEDED);
    assert_false(res.late);
    assert_int_equal(r.dep.deadline_ns[0], BREAKER_NO_DEADLINE);
    assert_int_equal(r.dep.timeout_ns[0], UINT64_MAX);
    rig_fini(&r);
}

/* ---- Who owns a timeout ---------------------------------------------------- */

/* A healthy dependency answering in 5 ms, called by clients whose own
 * deadlines (propagated from upstream) leave it 1 ms: every attempt is cut
 * short by the caller, which says nothing about the dependency. Over 100
 * calls in either order, with or without a timeout of the dependency's own
 * (50 ms, which it always meets), the breaker records no failure and never
 * opens. Before the rule, the fifth call opened it and the other 95 were
 * refused. */
static void caller_deadline_is_not_evidence_against_a_healthy_dependency(void **state) {
    (void)state;
    enum breaker_order orders[] = {BREAKER_ORDER_RETRY_OUTSIDE_BREAKER,
                                   BREAKER_ORDER_BREAKER_OUTSIDE_RETRY};
    uint64_t own_timeouts[] = {0, 50 * MS};
    for (unsigned o = 0; o < 2; o++) {
        for (unsigned t = 0; t < 2; t++) {
            struct rig r;
            rig_init(&r, orders[o], 5);
            r.dep.answer = BREAKER_SUCCESS;
            r.dep.error = 200;
            r.dep.latency_ns = 5 * MS;
            r.cfg.retry.attempt_timeout_ns = own_timeouts[t];
            rig_build(&r);
            unsigned refused = 0;
            for (int i = 0; i < 100; i++) {
                r.call.deadline_ns = fake_clock_read(&r.clock) + 1 * MS;
                breaker_result res = rig_run(&r);
                if (res.kind == BREAKER_RESULT_REFUSED) {
                    refused++;
                    continue;
                }
                /* The caller's request did fail: its deadline passed. */
                assert_int_equal(res.kind, BREAKER_RESULT_FAILED);
                assert_int_equal(res.layer, BREAKER_LAYER_DEADLINE);
                assert_int_equal(res.status, BREAKER_DEADLINE_EXCEEDED);
                assert_true(res.late);
                assert_int_equal(res.outcome, BREAKER_CANCELLED);
                assert_int_equal(res.attempts, 1);
                assert_int_equal(res.breaker_records, 1);
            }
            breaker_stats st = stats_of(r.b);
            printf("# %s, own timeout %llu ms: 100 calls with 1 ms deadlines to a 5 ms "
                   "dependency: %llu failures, %llu cancelled, %u refused, %llu transitions\n",
                   breaker_order_name(orders[o]), (unsigned long long)(own_timeouts[t] / MS),
                   (unsigned long long)st.failures, (unsigned long long)st.cancelled, refused,
                   (unsigned long long)st.transitions);
            assert_int_equal(refused, 0);
            assert_int_equal(st.failures, 0);
            assert_int_equal(st.cancelled, 100);
            assert_int_equal(st.transitions, 0);
            assert_int_equal(breaker_get_state(r.b), BREAKER_CLOSED);
            assert_int_equal(exec_stats(r.ex).late, 100);
            rig_fini(&r);
        }
    }
}

/* The other side of the rule: an answer later than the dependency's own
 * timeout is a failure even when the caller's deadline was sooner still,
 * so a dependency that really is slow still opens the breaker. */
static void
answer_past_the_dependency_timeout_is_a_failure_whatever_the_caller_deadline(void **state) {
    (void)state;
    struct rig r;
    rig_init(&r, BREAKER_ORDER_RETRY_OUTSIDE_BREAKER, 5);
    r.dep.answer = BREAKER_SUCCESS;
    r.dep.latency_ns = 5 * MS;
    r.cfg.retry.attempt_timeout_ns = 2 * MS; /* the dependency should answer in 2 ms */
    r.call.idempotent = false;
    rig_build(&r);
    for (int i = 0; i < 5; i++) {
        r.call.deadline_ns = fake_clock_read(&r.clock) + (i % 2 == 0 ? 1 * MS : 1 * SEC);
        breaker_result res = rig_run(&r);
        assert_int_equal(res.kind, BREAKER_RESULT_FAILED);
        assert_true(res.late);
        assert_int_equal(res.outcome, BREAKER_FAILURE);
        assert_int_equal(res.status, BREAKER_DEADLINE_EXCEEDED);
    }
    breaker_stats st = stats_of(r.b);
    assert_int_equal(st.failures, 5);
    assert_int_equal(st.cancelled, 0);
    assert_int_equal(breaker_get_state(r.b), BREAKER_OPEN);
    rig_fini(&r);
}

/* late_keeps_outcome records what came back after the caller's deadline
 * too: a late success is a success. */
static void caller_deadline_overrun_keeps_its_outcome_when_configured(void **state) {
    (void)state;
    struct rig r;
    rig_init(&r, BREAKER_ORDER_RETRY_OUTSIDE_BREAKER, 5);
    r.dep.answer = BREAKER_SUCCESS;
    r.dep.latency_ns = 5 * MS;
    r.cfg.late_keeps_outcome = true;
    rig_build(&r);
    r.call.deadline_ns = 1 * MS;
    breaker_result res = rig_run(&r);
    assert_int_equal(res.kind, BREAKER_RESULT_SUCCEEDED);
    assert_true(res.late);
    assert_int_equal(stats_of(r.b).successes, 1);
    assert_int_equal(stats_of(r.b).cancelled, 0);
    rig_fini(&r);
}

/* ---- Probes through the executor ------------------------------------------ */

#define PROBE_TIMEOUT (5 * SEC)

/* A breaker on the rig's clock that opens on one failure for 30 s and
 * times a probe out after 5 s. */
static void probe_breaker_config(breaker_config *bc, struct rig *r, struct event_log *log) {
    test_config(bc, &r->clock, log);
    bc->trip = BREAKER_TRIP_CONSECUTIVE;
    bc->failure_threshold = 1;
    bc->open_ns = 30 * SEC;
    bc->probe_timeout_ns = PROBE_TIMEOUT;
}

/* A rig whose breaker (probe_breaker_config()) opened on the first
 * request and whose wait is over: the next admission is a half-open probe,
 * at 31 s. The dependency now answers SUCCESS after `latency_ns`; the
 * caller allows 60 s. */

static void rig_probe(struct rig *r, enum breaker_order order, struct event_log *log,
                      uint64_t latency_ns) {
    rig_init(r, order, NO_BREAKER);
    breaker_config bc;
    probe_breaker_config(&bc, r, log);
    r->b = make_breaker(&bc);
    r->cfg.b = r->b;
    rig_build(r);
    breaker_result res = rig_run(r);
    assert_int_equal(res.kind, BREAKER_RESULT_FAILED);
    assert_false(r->dep.is_probe[0]);
    assert_int_equal(breaker_get_state(r->b), BREAKER_OPEN);
    atomic_store(&r->clock.now, 31 * SEC);
    r->dep.answer = BREAKER_SUCCESS;
    r->dep.error = 200;
    r->dep.latency_ns = latency_ns;
    r->call.deadline_ns = fake_clock_read(&r->clock) + 60 * SEC;
}

/* The operation is told it is a probe, and its deadline is the probe's
 * (admission + probe_timeout_ns, exact or early), not the caller's 60 s. */
static void probe_attempt_is_told_so_and_bounded_by_the_probe_deadline(void **state) {
    (void)state;
    enum breaker_order orders[] = {BREAKER_ORDER_RETRY_OUTSIDE_BREAKER,
                                   BREAKER_ORDER_BREAKER_OUTSIDE_RETRY};
    for (unsigned o = 0; o < 2; o++) {
        struct rig r;
        rig_probe(&r, orders[o], NULL, 1 * SEC);
        unsigned first = r.dep.calls;
        uint64_t admission = fake_clock_read(&r.clock);
        breaker_result res = rig_run(&r);
        assert_int_equal(res.kind, BREAKER_RESULT_SUCCEEDED);
        assert_int_equal(res.breaker_records, 1);
        assert_true(r.dep.is_probe[first]);
        assert_true(r.dep.deadline_ns[first] <= admission + PROBE_TIMEOUT);
        /* Early by less than the breaker's microsecond, no more. */
        assert_true(r.dep.deadline_ns[first] + 1000 > admission + PROBE_TIMEOUT);
        assert_int_equal(r.dep.timeout_ns[first], r.dep.deadline_ns[first] - admission);
        assert_int_equal(stats_of(r.b).probes_succeeded, 1);
        rig_fini(&r);
    }
}

/* The earliest of the three wins: an attempt timeout shorter than the
 * probe's bounds the probe; with no breaker nothing is a probe. */
static void probe_deadline_is_the_earliest_of_the_three(void **state) {
    (void)state;
    struct rig r;
    rig_probe(&r, BREAKER_ORDER_RETRY_OUTSIDE_BREAKER, NULL, 0);
    breaker_executor_destroy(r.ex);
    r.cfg.retry.attempt_timeout_ns = 2 * SEC;
    rig_build(&r);
    unsigned first = r.dep.calls;
    uint64_t admission = fake_clock_read(&r.clock);
    (void)rig_run(&r);
    assert_true(r.dep.is_probe[first]);
    assert_int_equal(r.dep.deadline_ns[first], admission + 2 * SEC);
    rig_fini(&r);

    rig_init(&r, BREAKER_ORDER_RETRY_OUTSIDE_BREAKER, NO_BREAKER);
    r.dep.answer = BREAKER_SUCCESS;
    rig_build(&r);
    (void)rig_run(&r);
    assert_false(r.dep.is_probe[0]);
    rig_fini(&r);
}

/* The reason of the last transition the log holds. */
static enum breaker_reason last_reason(struct event_log *log) {
    unsigned n = atomic_load(&log->count);
    assert_true(n > 0 && n <= MAX_RECORDED_EVENTS);
    return log->events[n - 1].reason;
}

/* After a probe timed out, the request makes no further attempt and says
 * when a new one may be admitted: the breaker's doubled wait. Per attempt,
 * the reopened breaker stops the retries; around the retries, the probe's
 * deadline does. */
static void assert_stopped_after_probe_timeout(struct rig *r, enum breaker_order order,
                                               const breaker_result *res) {
    assert_int_equal(res->attempts, 1);
    if (order == BREAKER_ORDER_RETRY_OUTSIDE_BREAKER) {
        assert_int_equal(res->layer, BREAKER_LAYER_BREAKER);
        assert_int_equal(res->status, BREAKER_REJECTED_OPEN);
    } else {
        assert_int_equal(res->layer, BREAKER_LAYER_DEADLINE);
        assert_int_equal(res->status, BREAKER_DEADLINE_EXCEEDED);
    }
    assert_int_equal(res->retry_after_ns, breaker_retry_after_ns(r->b));
    assert_true(res->retry_after_ns > 30 * SEC);
}

/* A probe that answers SUCCESS after 10 s, 5 s past its deadline: the
 * breaker times it out (PROBE_TIMEOUT) and reopens with a doubled wait, so
 * the executor must not call it a success, even with late_keeps_outcome.
 * Before, the operation was given the caller's 60 s and the request was
 * SUCCEEDED. */
static void probe_overrunning_its_deadline_is_reported_as_the_breaker_records_it(void **state) {
    (void)state;
    enum breaker_order orders[] = {BREAKER_ORDER_RETRY_OUTSIDE_BREAKER,
                                   BREAKER_ORDER_BREAKER_OUTSIDE_RETRY};
    for (unsigned o = 0; o < 2; o++) {
        for (int keeps = 0; keeps < 2; keeps++) {
            struct rig r;
            struct event_log log;
            memset(&log, 0, sizeof(log));
            rig_probe(&r, orders[o], &log, 10 * SEC);
            r.cfg.late_keeps_outcome = keeps != 0;
            breaker_executor_destroy(r.ex);
            rig_build(&r);
            breaker_result res = rig_run(&r);
            breaker_stats st = stats_of(r.b);
            assert_int_equal(st.probes_timed_out, 1);
            assert_int_equal(last_reason(&log), BREAKER_REASON_PROBE_TIMEOUT);
            assert_int_equal(breaker_get_state(r.b), BREAKER_OPEN);
            assert_int_not_equal(res.kind, BREAKER_RESULT_SUCCEEDED);
            assert_int_equal(res.kind, BREAKER_RESULT_FAILED);
            assert_true(res.late);
            assert_int_equal(res.outcome, BREAKER_FAILURE);
            assert_int_equal(res.breaker_records, 0); /* the completion was stale */
            assert_stopped_after_probe_timeout(&r, orders[o], &res);
            rig_fini(&r);
        }
    }
}

/* With one attempt allowed, a probe that times out ends the request by the
 * retry policy, not the breaker: its retry hint is still the breaker's
 * reopened wait (it said 0, sending the caller straight into 60 s of
 * refusals), in both orders. */
static void a_failed_probe_with_one_attempt_says_when_the_breaker_admits_again(void **state) {
    (void)state;
    enum breaker_order orders[] = {BREAKER_ORDER_RETRY_OUTSIDE_BREAKER,
                                   BREAKER_ORDER_BREAKER_OUTSIDE_RETRY};
    for (unsigned o = 0; o < 2; o++) {
        struct rig r;
        struct event_log log;
        memset(&log, 0, sizeof(log));
        rig_probe(&r, orders[o], &log, 10 * SEC);
        r.cfg.retry.max_attempts = 1;
        breaker_executor_destroy(r.ex);
        rig_build(&r);
        breaker_result res = rig_run(&r);
        assert_int_equal(res.kind, BREAKER_RESULT_FAILED);
        assert_int_equal(breaker_get_state(r.b), BREAKER_OPEN);
        assert_int_equal(res.retry_after_ns, breaker_retry_after_ns(r.b));
        assert_true(res.retry_after_ns > 30 * SEC);
        rig_fini(&r);
    }
}

/* Probes for the next test: the breaker's clock lags a step behind the
 * operation's return, as a real clock does between the executor reading the
 * end of the attempt and breaker_complete() reading its own. */
struct lagging_clock {
    struct fake_clock *clock;
    _Atomic int armed;
};

static uint64_t lagging_read(void *ctx) {
    struct lagging_clock *c = ctx;
    if (atomic_exchange(&c->armed, 0)) fake_clock_advance(c->clock, 1000);
    return fake_clock_read(c->clock);
}

struct arming_dependency {
    struct dependency dep;
    struct lagging_clock *lag;
};

static enum breaker_outcome arming_op(void *ctx, breaker_attempt *a) {
    struct arming_dependency *d = ctx;
    enum breaker_outcome out = dependency_op(&d->dep, a);
    if (a->is_probe) atomic_store(&d->lag->armed, 1);
    return out;
}

/* A probe answers at the last nanosecond of its deadline, but 1 us passes
 * before breaker_complete() reads the clock, and the breaker has timed it
 * out by then. The executor sees the stale completion past the deadline and
 * reports the timeout the breaker recorded, not a success. */
static void probe_timed_out_before_its_completion_is_not_a_success(void **state) {
    (void)state;
    enum breaker_order orders[] = {BREAKER_ORDER_RETRY_OUTSIDE_BREAKER,
                                   BREAKER_ORDER_BREAKER_OUTSIDE_RETRY};
    for (unsigned o = 0; o < 2; o++) {
        struct rig r;
        rig_init(&r, orders[o], NO_BREAKER);
        struct lagging_clock lag = {.clock = &r.clock};
        struct event_log log;
        memset(&log, 0, sizeof(log));
        breaker_config bc;
        probe_breaker_config(&bc, &r, &log);
        bc.clock = lagging_read;
        bc.clock_ctx = &lag;
        r.b = make_breaker(&bc);
        r.cfg.b = r.b;
        struct arming_dependency ad = {.dep = r.dep, .lag = &lag};
        r.call.op = arming_op;
        r.call.op_ctx = &ad;
        rig_build(&r);
        (void)rig_run(&r);
        assert_int_equal(breaker_get_state(r.b), BREAKER_OPEN);
        atomic_store(&r.clock.now, 31 * SEC);
        ad.dep.answer = BREAKER_SUCCESS;
        ad.dep.latency_ns = PROBE_TIMEOUT - 1; /* on time by the executor's reading */
        r.call.deadline_ns = fake_clock_read(&r.clock) + 60 * SEC;
        unsigned first = ad.dep.calls;
        breaker_result res = rig_run(&r);
        assert_true(ad.dep.is_probe[first]);
        assert_int_equal(ad.dep.deadline_ns[first], 31 * SEC + PROBE_TIMEOUT - 1);
        assert_int_equal(stats_of(r.b).probes_timed_out, 1);
        assert_int_equal(last_reason(&log), BREAKER_REASON_PROBE_TIMEOUT);
        assert_int_equal(res.kind, BREAKER_RESULT_FAILED);
        assert_true(res.late);
        assert_int_equal(res.outcome, BREAKER_FAILURE);
        assert_stopped_after_probe_timeout(&r, orders[o], &res);
        rig_fini(&r);
    }
}

/* A request's source reaches the breaker with its outcome (breaker_call.
 * source): failures from one caller never trip a breaker with the default
 * rule (3 sources), from three they do, and without a source the rule
 * does not apply (as before the field existed). */
static unsigned requests_until_open(uint64_t (*source_of)(unsigned i)) {
    struct rig r;
    rig_init(&r, BREAKER_ORDER_BREAKER_OUTSIDE_RETRY, NO_BREAKER);
    breaker_config bc;
    test_config(&bc, &r.clock, NULL); /* a failure-rate window, min_calls 10 */
    r.b = make_breaker(&bc);
    r.cfg.b = r.b;
    rig_build(&r);
    unsigned i = 0;
    for (; i < 200 && breaker_get_state(r.b) == BREAKER_CLOSED; i++) {
        r.call.source = source_of(i);
        (void)rig_run(&r);
        fake_clock_advance(&r.clock, 10 * MS);
    }
    rig_fini(&r);
    return i;
}

static uint64_t one_source(unsigned i) { return (void)i, 0x9e3779b97f4a7c15u; }
static uint64_t three_sources(unsigned i) { return 0x1000u + i % 3; }
static uint64_t no_source(unsigned i) { return (void)i, 0; }

static void the_source_of_a_request_reaches_the_breaker(void **state) {
    (void)state;
    assert_int_equal(requests_until_open(one_source), 200); /* never opened */
    assert_true(requests_until_open(three_sources) < 200);
    assert_true(requests_until_open(no_source) < 200);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(breaker_outside_retry_records_one_outcome_per_request),
        cmocka_unit_test(retry_outside_breaker_records_one_outcome_per_attempt),
        cmocka_unit_test(breaker_outside_retry_records_success_after_failed_attempts),
        cmocka_unit_test(breaker_opening_inside_retry_stops_attempts_and_sleeps),
        cmocka_unit_test(breaker_outside_retry_refusal_is_one_local_refusal),
        cmocka_unit_test(retry_outside_breaker_stops_hitting_a_dead_dependency_sooner),
        cmocka_unit_test(no_attempt_starts_and_no_sleep_ends_past_the_deadline),
        cmocka_unit_test(passed_deadline_refuses_without_calling),
        cmocka_unit_test(attempt_deadline_is_the_sooner_of_call_deadline_and_attempt_timeout),
        cmocka_unit_test(late_success_is_recorded_as_timeout_failure),
        cmocka_unit_test(late_answer_keeps_its_outcome_when_configured),
        cmocka_unit_test(late_attempt_within_call_deadline_is_retried),
        cmocka_unit_test(cancelled_operation_is_recorded_as_cancelled_and_not_retried),
        cmocka_unit_test(cancellation_during_backoff_stops_the_request),
        cmocka_unit_test(budget_is_charged_only_for_retries_made),
        cmocka_unit_test(non_idempotent_call_is_not_retried),
        cmocka_unit_test(only_retryable_outcomes_are_retried),
        cmocka_unit_test(no_deadline_retries_sleep_the_policy_backoff),
        cmocka_unit_test(bulkhead_refusal_is_distinct_from_breaker_refusal),
        cmocka_unit_test(half_open_probe_through_executor_closes_breaker),
        cmocka_unit_test(invalid_arguments_are_refused),
        cmocka_unit_test(null_config_takes_the_defaults),
        cmocka_unit_test(validation_names_each_field_and_its_range),
        cmocka_unit_test(config_init_clears_the_whole_struct),
        cmocka_unit_test(attempt_timeout_past_the_end_of_the_clock_is_no_limit),
        cmocka_unit_test(caller_deadline_is_not_evidence_against_a_healthy_dependency),
        cmocka_unit_test(
            answer_past_the_dependency_timeout_is_a_failure_whatever_the_caller_deadline),
        cmocka_unit_test(caller_deadline_overrun_keeps_its_outcome_when_configured),
        cmocka_unit_test(probe_attempt_is_told_so_and_bounded_by_the_probe_deadline),
        cmocka_unit_test(probe_deadline_is_the_earliest_of_the_three),
        cmocka_unit_test(probe_overrunning_its_deadline_is_reported_as_the_breaker_records_it),
        cmocka_unit_test(a_failed_probe_with_one_attempt_says_when_the_breaker_admits_again),
        cmocka_unit_test(probe_timed_out_before_its_completion_is_not_a_success),
        cmocka_unit_test(the_source_of_a_request_reaches_the_breaker),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
