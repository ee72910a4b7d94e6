/*
 * test_executor.c - the executor: what each composition makes the breaker
 * count, deadlines, late answers, cancellation, idempotency, retryability
 * and the result kinds it reports.
 */
#include "compose_util.h"

/* A consecutive-failures breaker on the fake clock. */
static breaker *counting_breaker(struct fake_clock *clock, uint32_t threshold) {
    breaker_config cfg;
    test_config(&cfg, clock, NULL);
    cfg.trip = BREAKER_TRIP_CONSECUTIVE;
    cfg.failure_threshold = threshold;
    cfg.open_ns = 30 * SEC;
    return make_breaker(&cfg);
}

static void breaker_outside_retry_records_one_outcome_per_request(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    struct fake_sleep sl = {.clock = &clock};
    struct dependency dep = {.clock = &clock, .answer = BREAKER_FAILURE, .error = 503};
    breaker *b = counting_breaker(&clock, 1000);
    breaker_executor_config cfg;
    exec_config(&cfg, &clock, &sl);
    cfg.order = BREAKER_ORDER_BREAKER_OUTSIDE_RETRY;
    cfg.breaker = b;
    breaker_executor *ex = make_executor(&cfg);
    breaker_call call = idempotent_call(&dep);

    for (int i = 0; i < 4; i++) {
        breaker_result res = run_call(ex, &call);
        assert_int_equal(res.kind, BREAKER_RESULT_FAILED);
        assert_int_equal(res.error, 503);
        assert_int_equal(res.attempts, 3);
        assert_int_equal(res.breaker_records, 1);
        assert_int_equal(res.layer, BREAKER_LAYER_RETRY_POLICY);
    }
    breaker_stats st = stats_of(b);
    assert_int_equal(dep.calls, 12);
    assert_int_equal(st.admitted, 4);
    assert_int_equal(st.failures, 4);
    assert_int_equal(exec_stats(ex).breaker_records, 4);
    breaker_executor_destroy(ex);
    breaker_destroy(b);
}

static void retry_outside_breaker_records_one_outcome_per_attempt(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    struct fake_sleep sl = {.clock = &clock};
    struct dependency dep = {.clock = &clock, .answer = BREAKER_FAILURE, .error = 503};
    breaker *b = counting_breaker(&clock, 1000);
    breaker_executor_config cfg;
    exec_config(&cfg, &clock, &sl);
    cfg.order = BREAKER_ORDER_RETRY_OUTSIDE_BREAKER;
    cfg.breaker = b;
    breaker_executor *ex = make_executor(&cfg);
    breaker_call call = idempotent_call(&dep);

    for (int i = 0; i < 4; i++) {
        breaker_result res = run_call(ex, &call);
        assert_int_equal(res.kind, BREAKER_RESULT_FAILED);
        assert_int_equal(res.attempts, 3);
        assert_int_equal(res.breaker_records, 3);
    }
    breaker_stats st = stats_of(b);
    assert_int_equal(dep.calls, 12);
    assert_int_equal(st.admitted, 12);
    assert_int_equal(st.failures, 12);
    breaker_executor_destroy(ex);
    breaker_destroy(b);
}

static void breaker_outside_retry_records_success_after_failed_attempts(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    struct fake_sleep sl = {.clock = &clock};
    struct dependency dep = {
        .clock = &clock, .answer = BREAKER_FAILURE, .error = 503, .succeed_from = 3};
    breaker *b = counting_breaker(&clock, 1000);
    breaker_executor_config cfg;
    exec_config(&cfg, &clock, &sl);
    cfg.order = BREAKER_ORDER_BREAKER_OUTSIDE_RETRY;
    cfg.breaker = b;
    breaker_executor *ex = make_executor(&cfg);
    breaker_call call = idempotent_call(&dep);

    breaker_result res = run_call(ex, &call);
    assert_int_equal(res.kind, BREAKER_RESULT_SUCCEEDED);
    assert_int_equal(res.attempts, 3);
    assert_int_equal(res.error, 200);
    /* Two failed attempts are hidden from the breaker in this order. */
    breaker_stats st = stats_of(b);
    assert_int_equal(st.successes, 1);
    assert_int_equal(st.failures, 0);
    breaker_executor_destroy(ex);
    breaker_destroy(b);
}

static void breaker_opening_inside_retry_stops_attempts_and_sleeps(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    struct fake_sleep sl = {.clock = &clock};
    struct dependency dep = {.clock = &clock, .answer = BREAKER_FAILURE, .error = 503};
    breaker *b = counting_breaker(&clock, 2); /* opens on the 2nd failure */
    breaker_executor_config cfg;
    exec_config(&cfg, &clock, &sl);
    cfg.retry.max_attempts = 5;
    cfg.breaker = b;
    breaker_executor *ex = make_executor(&cfg);
    breaker_call call = idempotent_call(&dep);

    breaker_result res = run_call(ex, &call);
    /* Attempt 1 fails, one backoff, attempt 2 fails and opens the breaker:
     * no third attempt and no second backoff. */
    assert_int_equal(res.kind, BREAKER_RESULT_FAILED);
    assert_int_equal(res.error, 503);
    assert_int_equal(res.attempts, 2);
    assert_int_equal(dep.calls, 2);
    assert_int_equal(sl.count, 1);
    assert_int_equal(res.layer, BREAKER_LAYER_BREAKER);
    assert_int_equal(res.status, BREAKER_REJECTED_OPEN);
    assert_int_equal(res.retry_after_ns, 30 * SEC);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);

    /* The next request is refused locally: nothing reaches the dependency,
     * nothing sleeps, and it is not reported as a success. */
    res = run_call(ex, &call);
    assert_int_equal(res.kind, BREAKER_RESULT_REFUSED);
    assert_int_equal(res.layer, BREAKER_LAYER_BREAKER);
    assert_int_equal(res.status, BREAKER_REJECTED_OPEN);
    assert_int_equal(res.attempts, 0);
    assert_int_equal(res.breaker_records, 0);
    assert_int_equal(res.retry_after_ns, 30 * SEC);
    assert_int_equal(dep.calls, 2);
    assert_int_equal(sl.count, 1);
    breaker_executor_stats st = exec_stats(ex);
    assert_int_equal(st.refused_breaker, 1);
    assert_int_equal(st.stopped_breaker, 1);
    breaker_executor_destroy(ex);
    breaker_destroy(b);
}

static void breaker_outside_retry_refusal_is_one_local_refusal(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    struct fake_sleep sl = {.clock = &clock};
    struct dependency dep = {.clock = &clock, .answer = BREAKER_FAILURE, .error = 503};
    breaker *b = counting_breaker(&clock, 2);
    breaker_executor_config cfg;
    exec_config(&cfg, &clock, &sl);
    cfg.order = BREAKER_ORDER_BREAKER_OUTSIDE_RETRY;
    cfg.breaker = b;
    breaker_executor *ex = make_executor(&cfg);
    breaker_call call = idempotent_call(&dep);

    (void)run_call(ex, &call);
    (void)run_call(ex, &call); /* 2 recorded failures: open */
    assert_int_equal(dep.calls, 6);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    breaker_result res = run_call(ex, &call);
    assert_int_equal(res.kind, BREAKER_RESULT_REFUSED);
    assert_int_equal(res.layer, BREAKER_LAYER_BREAKER);
    assert_int_equal(dep.calls, 6);
    breaker_executor_destroy(ex);
    breaker_destroy(b);
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
                struct fake_clock clock = {.now = 5 * SEC};
                struct fake_sleep sl = {.clock = &clock};
                struct dependency dep = {.clock = &clock,
                                         .answer = BREAKER_FAILURE,
                                         .error = 503,
                                         .latency_ns = latencies[l]};
                breaker_executor_config cfg;
                exec_config(&cfg, &clock, &sl);
                cfg.retry.max_attempts = 20;
                cfg.retry.jitter = jitters[j];
                cfg.retry.base_ns = 50 * MS;
                cfg.seed = seed;
                breaker_executor *ex = make_executor(&cfg);
                breaker_call call = idempotent_call(&dep);
                call.deadline_ns = 5 * SEC + 1 * SEC;
                breaker_result res = run_call(ex, &call);
                for (unsigned i = 0; i < dep.calls && i < MAX_LOGGED; i++) {
                    assert_true(dep.start_ns[i] < call.deadline_ns);
                    assert_int_equal(dep.deadline_ns[i], call.deadline_ns);
                    assert_int_equal(dep.timeout_ns[i], call.deadline_ns - dep.start_ns[i]);
                }
                for (unsigned i = 0; i < sl.count && i < MAX_LOGGED; i++)
                    assert_true(sl.end_ns[i] < call.deadline_ns);
                assert_int_equal(res.kind, BREAKER_RESULT_FAILED);
                if (res.layer == BREAKER_LAYER_DEADLINE) {
                    stopped_by_deadline++;
                    assert_int_equal(res.status, BREAKER_DEADLINE_EXCEEDED);
                }
                breaker_executor_destroy(ex);
            }
        }
    }
    /* The deadline, not the attempt limit, ended nearly all of these. */
    assert_true(stopped_by_deadline > 250);
}

static void passed_deadline_refuses_without_calling(void **state) {
    (void)state;
    struct fake_clock clock = {.now = 10 * SEC};
    struct fake_sleep sl = {.clock = &clock};
    struct dependency dep = {.clock = &clock, .answer = BREAKER_SUCCESS};
    breaker *b = counting_breaker(&clock, 5);
    breaker_executor_config cfg;
    exec_config(&cfg, &clock, &sl);
    cfg.breaker = b;
    breaker_executor *ex = make_executor(&cfg);
    breaker_call call = idempotent_call(&dep);
    call.deadline_ns = 10 * SEC; /* "now" is already too late */
    breaker_result res = run_call(ex, &call);
    assert_int_equal(res.kind, BREAKER_RESULT_REFUSED);
    assert_int_equal(res.layer, BREAKER_LAYER_DEADLINE);
    assert_int_equal(res.status, BREAKER_DEADLINE_EXCEEDED);
    assert_int_equal(res.retry_after_ns, UINT64_MAX);
    assert_int_equal(dep.calls, 0);
    assert_int_equal(stats_of(b).admitted, 0);
    assert_int_equal(exec_stats(ex).refused_deadline, 1);
    breaker_executor_destroy(ex);
    breaker_destroy(b);
}

static void attempt_deadline_is_the_sooner_of_call_deadline_and_attempt_timeout(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    struct fake_sleep sl = {.clock = &clock};
    struct dependency dep = {.clock = &clock, .answer = BREAKER_FAILURE, .error = 503};
    breaker_executor_config cfg;
    exec_config(&cfg, &clock, &sl);
    cfg.retry.attempt_timeout_ns = 300 * MS;
    cfg.retry.base_ns = 400 * MS;
    breaker_executor *ex = make_executor(&cfg);
    breaker_call call = idempotent_call(&dep);
    call.deadline_ns = 1 * SEC;
    (void)run_call(ex, &call);
    /* Attempt 1 at 0: its own 300 ms limit. Attempt 2 at 400 ms: 700 ms.
     * A third would start at 1.2 s, past the deadline. */
    assert_int_equal(dep.calls, 2);
    assert_int_equal(dep.deadline_ns[0], 300 * MS);
    assert_int_equal(dep.timeout_ns[0], 300 * MS);
    assert_int_equal(dep.deadline_ns[1], 700 * MS);
    breaker_executor_destroy(ex);

    /* No deadline at all: the operation is told so. */
    struct dependency free_dep = {.clock = &clock, .answer = BREAKER_SUCCESS};
    cfg.retry.attempt_timeout_ns = 0;
    ex = make_executor(&cfg);
    call = idempotent_call(&free_dep);
    (void)run_call(ex, &call);
    assert_int_equal(free_dep.deadline_ns[0], BREAKER_NO_DEADLINE);
    assert_int_equal(free_dep.timeout_ns[0], UINT64_MAX);
    breaker_executor_destroy(ex);
}

static void late_success_is_recorded_as_timeout_failure(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    struct fake_sleep sl = {.clock = &clock};
    struct dependency dep = {.clock = &clock, .answer = BREAKER_SUCCESS, .latency_ns = 2 * SEC};
    breaker *b = counting_breaker(&clock, 1000);
    breaker_executor_config cfg;
    exec_config(&cfg, &clock, &sl);
    cfg.breaker = b;
    breaker_executor *ex = make_executor(&cfg);
    breaker_call call = idempotent_call(&dep);
    call.deadline_ns = 1 * SEC;
    breaker_result res = run_call(ex, &call);
    assert_int_equal(res.kind, BREAKER_RESULT_FAILED);
    assert_true(res.late);
    assert_int_equal(res.outcome, BREAKER_FAILURE);
    assert_int_equal(res.status, BREAKER_DEADLINE_EXCEEDED);
    assert_int_equal(res.attempts, 1);
    breaker_stats st = stats_of(b);
    assert_int_equal(st.failures, 1);
    assert_int_equal(st.successes, 0);
    assert_int_equal(exec_stats(ex).late, 1);
    breaker_executor_destroy(ex);
    breaker_destroy(b);
}

static void late_answer_keeps_its_outcome_when_configured(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    struct fake_sleep sl = {.clock = &clock};
    struct dependency dep = {.clock = &clock, .answer = BREAKER_SUCCESS, .latency_ns = 2 * SEC};
    breaker *b = counting_breaker(&clock, 1000);
    breaker_executor_config cfg;
    exec_config(&cfg, &clock, &sl);
    cfg.breaker = b;
    cfg.late_keeps_outcome = true;
    breaker_executor *ex = make_executor(&cfg);
    breaker_call call = idempotent_call(&dep);
    call.deadline_ns = 1 * SEC;
    breaker_result res = run_call(ex, &call);
    assert_int_equal(res.kind, BREAKER_RESULT_SUCCEEDED);
    assert_true(res.late);
    assert_int_equal(stats_of(b).successes, 1);
    assert_int_equal(stats_of(b).failures, 0);
    breaker_executor_destroy(ex);
    breaker_destroy(b);
}

static void late_attempt_within_call_deadline_is_retried(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    struct fake_sleep sl = {.clock = &clock};
    struct dependency dep = {.clock = &clock, .answer = BREAKER_SUCCESS, .latency_ns = 200 * MS};
    breaker_executor_config cfg;
    exec_config(&cfg, &clock, &sl);
    cfg.retry.attempt_timeout_ns = 100 * MS; /* every attempt overruns its slice */
    breaker_executor *ex = make_executor(&cfg);
    breaker_call call = idempotent_call(&dep);
    call.deadline_ns = 10 * SEC;
    breaker_result res = run_call(ex, &call);
    assert_int_equal(res.kind, BREAKER_RESULT_FAILED);
    assert_int_equal(res.attempts, 3);
    assert_int_equal(res.layer, BREAKER_LAYER_RETRY_POLICY);
    assert_true(res.late);
    breaker_executor_destroy(ex);
}

static void cancelled_operation_is_recorded_as_cancelled_and_not_retried(void **state) {
    (void)state;
    enum breaker_order orders[] = {BREAKER_ORDER_RETRY_OUTSIDE_BREAKER,
                                   BREAKER_ORDER_BREAKER_OUTSIDE_RETRY};
    for (unsigned o = 0; o < 2; o++) {
        struct fake_clock clock = {0};
        struct fake_sleep sl = {.clock = &clock};
        struct dependency dep = {.clock = &clock, .answer = BREAKER_CANCELLED, .latency_ns = SEC};
        breaker *b = counting_breaker(&clock, 1000);
        breaker_executor_config cfg;
        exec_config(&cfg, &clock, &sl);
        cfg.order = orders[o];
        cfg.breaker = b;
        breaker_executor *ex = make_executor(&cfg);
        breaker_call call = idempotent_call(&dep);
        call.deadline_ns = 500 * MS; /* even past its deadline: not a timeout */
        breaker_result res = run_call(ex, &call);
        assert_int_equal(res.kind, BREAKER_RESULT_CANCELLED);
        assert_int_equal(res.layer, BREAKER_LAYER_CALLER);
        assert_int_equal(res.status, BREAKER_ECANCELED);
        assert_false(res.late);
        assert_int_equal(res.attempts, 1);
        breaker_stats st = stats_of(b);
        assert_int_equal(st.cancelled, 1);
        assert_int_equal(st.failures, 0);
        breaker_executor_destroy(ex);
        breaker_destroy(b);
    }
}

static void cancellation_during_backoff_stops_the_request(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    struct fake_sleep sl = {.clock = &clock, .cancel_at = 1};
    struct dependency dep = {.clock = &clock, .answer = BREAKER_FAILURE, .error = 503};
    breaker *b = counting_breaker(&clock, 1000);
    breaker_executor_config cfg;
    exec_config(&cfg, &clock, &sl);
    cfg.order = BREAKER_ORDER_BREAKER_OUTSIDE_RETRY;
    cfg.breaker = b;
    breaker_executor *ex = make_executor(&cfg);
    breaker_call call = idempotent_call(&dep);
    breaker_result res = run_call(ex, &call);
    assert_int_equal(res.kind, BREAKER_RESULT_CANCELLED);
    assert_int_equal(res.attempts, 1);
    assert_int_equal(dep.calls, 1);
    /* The request's one permit is settled as the caller's cancellation. */
    assert_int_equal(stats_of(b).cancelled, 1);
    assert_int_equal(exec_stats(ex).cancelled, 1);
    breaker_executor_destroy(ex);
    breaker_destroy(b);
}

static void non_idempotent_call_is_not_retried(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    struct fake_sleep sl = {.clock = &clock};
    struct dependency dep = {.clock = &clock, .answer = BREAKER_FAILURE, .error = 503};
    breaker_executor_config cfg;
    exec_config(&cfg, &clock, &sl);
    breaker_executor *ex = make_executor(&cfg);
    breaker_call call = {.op = dependency_op, .op_ctx = &dep}; /* idempotent = false */
    breaker_result res = run_call(ex, &call);
    assert_int_equal(res.kind, BREAKER_RESULT_FAILED);
    assert_int_equal(res.attempts, 1);
    assert_int_equal(res.layer, BREAKER_LAYER_RETRY_POLICY);
    assert_int_equal(sl.count, 0);
    call.idempotent = true;
    res = run_call(ex, &call);
    assert_int_equal(res.attempts, 3);
    breaker_executor_destroy(ex);
}

static void only_retryable_outcomes_are_retried(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    struct fake_sleep sl = {.clock = &clock};
    breaker_executor_config cfg;
    exec_config(&cfg, &clock, &sl);
    breaker_executor *ex = make_executor(&cfg);

    /* IGNORED (a local error): not the dependency's fault, not retried. */
    struct dependency ignored = {.clock = &clock, .answer = BREAKER_IGNORED, .error = 22};
    breaker_call call = idempotent_call(&ignored);
    breaker_result res = run_call(ex, &call);
    assert_int_equal(res.kind, BREAKER_RESULT_FAILED);
    assert_int_equal(res.attempts, 1);
    assert_int_equal(res.error, 22);
    assert_int_equal(res.layer, BREAKER_LAYER_RETRY_POLICY);

    /* A failure the operation knows is permanent. */
    struct dependency permanent = {
        .clock = &clock, .answer = BREAKER_FAILURE, .error = 501, .hint = BREAKER_RETRY_NO};
    call = idempotent_call(&permanent);
    res = run_call(ex, &call);
    assert_int_equal(res.attempts, 1);

    /* An IGNORED outcome the operation says is worth another try. */
    struct dependency transient = {
        .clock = &clock, .answer = BREAKER_IGNORED, .error = 24, .hint = BREAKER_RETRY_YES};
    call = idempotent_call(&transient);
    res = run_call(ex, &call);
    assert_int_equal(res.attempts, 3);

    /* A success, of course, is not retried. */
    struct dependency ok = {.clock = &clock, .answer = BREAKER_SUCCESS};
    call = idempotent_call(&ok);
    res = run_call(ex, &call);
    assert_int_equal(res.kind, BREAKER_RESULT_SUCCEEDED);
    assert_int_equal(res.attempts, 1);
    assert_int_equal(sl.count, 2);
    breaker_executor_destroy(ex);
}

static void no_deadline_retries_sleep_the_policy_backoff(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    struct fake_sleep sl = {.clock = &clock};
    struct dependency dep = {.clock = &clock, .answer = BREAKER_FAILURE, .error = 503};
    breaker_executor_config cfg;
    exec_config(&cfg, &clock, &sl);
    cfg.retry.max_attempts = 4;
    breaker_executor *ex = make_executor(&cfg);
    breaker_call call = idempotent_call(&dep);
    breaker_result res = run_call(ex, &call);
    assert_int_equal(res.attempts, 4);
    assert_int_equal(sl.count, 3);
    assert_int_equal(res.slept_ns, (100 + 200 + 400) * MS);
    assert_int_equal(dep.start_ns[3], 700 * MS);
    assert_int_equal(res.elapsed_ns, 700 * MS);
    breaker_executor_destroy(ex);
}

static void bulkhead_refusal_is_distinct_from_breaker_refusal(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    struct fake_sleep sl = {.clock = &clock};
    struct dependency dep = {.clock = &clock, .answer = BREAKER_SUCCESS};
    breaker *b = counting_breaker(&clock, 5);
    breaker_bulkhead_config bc = {.max_concurrent = 1};
    breaker_bulkhead *bh = NULL;
    assert_int_equal(breaker_bulkhead_create(&bc, &bh), BREAKER_OK);
    breaker_executor_config cfg;
    exec_config(&cfg, &clock, &sl);
    cfg.breaker = b;
    cfg.bulkhead = bh;
    breaker_executor *ex = make_executor(&cfg);
    breaker_call call = idempotent_call(&dep);

    assert_int_equal(breaker_bulkhead_try_acquire(bh), BREAKER_OK); /* someone else's call */
    breaker_result res = run_call(ex, &call);
    assert_int_equal(res.kind, BREAKER_RESULT_REFUSED);
    assert_int_equal(res.layer, BREAKER_LAYER_BULKHEAD);
    assert_int_equal(res.status, BREAKER_BULKHEAD_FULL);
    assert_int_equal(res.retry_after_ns, 0);
    assert_int_equal(dep.calls, 0);
    breaker_stats st = stats_of(b);
    assert_int_equal(st.admitted, 0);
    assert_int_equal(st.rejected_open, 0);
    assert_int_equal(st.failures, 0);
    breaker_executor_stats es = exec_stats(ex);
    assert_int_equal(es.refused_bulkhead, 1);
    assert_int_equal(es.refused_breaker, 0);

    assert_int_equal(breaker_bulkhead_release(bh), BREAKER_OK);
    res = run_call(ex, &call);
    assert_int_equal(res.kind, BREAKER_RESULT_SUCCEEDED);
    breaker_bulkhead_stats bs;
    assert_int_equal(breaker_bulkhead_stats_get(bh, &bs), BREAKER_OK);
    assert_int_equal(bs.in_flight, 0); /* the executor gave its slot back */
    assert_int_equal(bs.refused, 1);
    breaker_executor_destroy(ex);
    breaker_bulkhead_destroy(bh);
    breaker_destroy(b);
}

static void half_open_probe_through_executor_closes_breaker(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    struct fake_sleep sl = {.clock = &clock};
    struct dependency dep = {.clock = &clock, .answer = BREAKER_FAILURE, .error = 503};
    breaker *b = counting_breaker(&clock, 1);
    breaker_executor_config cfg;
    exec_config(&cfg, &clock, &sl);
    cfg.breaker = b;
    breaker_executor *ex = make_executor(&cfg);
    breaker_call call = idempotent_call(&dep);
    (void)run_call(ex, &call);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    fake_clock_advance(&clock, 31 * SEC);
    dep.answer = BREAKER_SUCCESS;
    for (int i = 0; i < 3; i++)
        assert_int_equal(run_call(ex, &call).kind, BREAKER_RESULT_SUCCEEDED);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    breaker_executor_destroy(ex);
    breaker_destroy(b);
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(breaker_outside_retry_records_one_outcome_per_request),
        cmocka_unit_test(retry_outside_breaker_records_one_outcome_per_attempt),
        cmocka_unit_test(breaker_outside_retry_records_success_after_failed_attempts),
        cmocka_unit_test(breaker_opening_inside_retry_stops_attempts_and_sleeps),
        cmocka_unit_test(breaker_outside_retry_refusal_is_one_local_refusal),
        cmocka_unit_test(no_attempt_starts_and_no_sleep_ends_past_the_deadline),
        cmocka_unit_test(passed_deadline_refuses_without_calling),
        cmocka_unit_test(attempt_deadline_is_the_sooner_of_call_deadline_and_attempt_timeout),
        cmocka_unit_test(late_success_is_recorded_as_timeout_failure),
        cmocka_unit_test(late_answer_keeps_its_outcome_when_configured),
        cmocka_unit_test(late_attempt_within_call_deadline_is_retried),
        cmocka_unit_test(cancelled_operation_is_recorded_as_cancelled_and_not_retried),
        cmocka_unit_test(cancellation_during_backoff_stops_the_request),
        cmocka_unit_test(non_idempotent_call_is_not_retried),
        cmocka_unit_test(only_retryable_outcomes_are_retried),
        cmocka_unit_test(no_deadline_retries_sleep_the_policy_backoff),
        cmocka_unit_test(bulkhead_refusal_is_distinct_from_breaker_refusal),
        cmocka_unit_test(half_open_probe_through_executor_closes_breaker),
        cmocka_unit_test(invalid_arguments_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
