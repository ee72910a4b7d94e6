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
    r->cfg.breaker = r->b;
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

/* A success that arrives 1 s after a deadline 1 s away. */
static void rig_late_success(struct rig *r, bool keeps_outcome) {
    rig_init(r, BREAKER_ORDER_RETRY_OUTSIDE_BREAKER, NEVER_OPEN);
    r->dep.answer = BREAKER_SUCCESS;
    r->dep.latency_ns = 2 * SEC;
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
