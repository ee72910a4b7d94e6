/* SPDX-License-Identifier: MIT */
/*
 * test_bulkhead.c - the concurrency limit: refusals at the limit, the
 * bounded wait, and never more than the limit in flight under many threads
 * (run under ThreadSanitizer by make check: label "concurrency").
 */
#include "compose_util.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>

static breaker_bulkhead *make_bulkhead(uint32_t max) {
    breaker_bulkhead_config cfg;
    breaker_bulkhead_config_init(&cfg);
    assert_int_equal(cfg.max_concurrent, 10);
    cfg.max_concurrent = max;
    breaker_bulkhead *bh = NULL;
    assert_int_equal(breaker_bulkhead_create(&cfg, &bh), BREAKER_OK);
    assert_non_null(bh);
    return bh;
}

static breaker_bulkhead_stats bh_stats(breaker_bulkhead *bh) {
    breaker_bulkhead_stats st;
    assert_int_equal(breaker_bulkhead_stats_get(bh, &st), BREAKER_OK);
    return st;
}

static void try_acquire_refuses_at_the_limit_and_counts(void **state) {
    (void)state;
    breaker_bulkhead *bh = make_bulkhead(3);
    for (int i = 0; i < 3; i++)
        assert_int_equal(breaker_bulkhead_try_acquire(bh), BREAKER_OK);
    assert_int_equal(breaker_bulkhead_try_acquire(bh), BREAKER_BULKHEAD_FULL);
    assert_int_equal(breaker_bulkhead_acquire_wait(bh, 0), BREAKER_BULKHEAD_FULL);
    breaker_bulkhead_stats st = bh_stats(bh);
    assert_int_equal(st.in_flight, 3);
    assert_int_equal(st.acquired, 3);
    assert_int_equal(st.refused, 2);
    assert_int_equal(st.peak, 3);
    assert_int_equal(breaker_bulkhead_release(bh), BREAKER_OK);
    assert_int_equal(breaker_bulkhead_try_acquire(bh), BREAKER_OK);
    for (int i = 0; i < 3; i++)
        assert_int_equal(breaker_bulkhead_release(bh), BREAKER_OK);
    assert_int_equal(bh_stats(bh).in_flight, 0);
    breaker_bulkhead_destroy(bh);
}

static void release_without_acquire_is_detected(void **state) {
    (void)state;
    breaker_bulkhead *bh = make_bulkhead(2);
    assert_int_equal(breaker_bulkhead_release(bh), BREAKER_EINVAL);
    assert_int_equal(bh_stats(bh).in_flight, 0);
    /* The limit is intact: still exactly two slots. */
    assert_int_equal(breaker_bulkhead_try_acquire(bh), BREAKER_OK);
    assert_int_equal(breaker_bulkhead_try_acquire(bh), BREAKER_OK);
    assert_int_equal(breaker_bulkhead_try_acquire(bh), BREAKER_BULKHEAD_FULL);
    breaker_bulkhead_destroy(bh);
    breaker_bulkhead_config cfg = {.max_concurrent = 2000000};
    assert_int_equal(breaker_bulkhead_create(&cfg, &bh), BREAKER_EINVAL);
    assert_null(bh);
}

static void null_config_takes_the_default_ten_slots(void **state) {
    (void)state;
    breaker_bulkhead *bh = NULL;
    assert_int_equal(breaker_bulkhead_create(NULL, &bh), BREAKER_OK);
    assert_non_null(bh);
    assert_int_equal(bh_stats(bh).max_concurrent, 10);
    for (int i = 0; i < 10; i++)
        assert_int_equal(breaker_bulkhead_try_acquire(bh), BREAKER_OK);
    assert_int_equal(breaker_bulkhead_try_acquire(bh), BREAKER_BULKHEAD_FULL);
    for (int i = 0; i < 10; i++)
        assert_int_equal(breaker_bulkhead_release(bh), BREAKER_OK);
    breaker_bulkhead_destroy(bh);
}

static void validation_names_the_field_and_its_range(void **state) {
    (void)state;
    breaker_bulkhead_config cfg;
    breaker_bulkhead_config_init(&cfg);
    assert_config_valid(breaker_bulkhead_config_validate, &cfg);
    cfg.max_concurrent = 1000001;
    assert_config_refused(breaker_bulkhead_config_validate, breaker_bulkhead_create,
                          breaker_bulkhead, &cfg,
                          "max_concurrent: must be between 1 and 1000000 slots (got 1000001)");
    cfg.max_concurrent = UINT32_MAX;
    assert_config_refused(breaker_bulkhead_config_validate, breaker_bulkhead_create,
                          breaker_bulkhead, &cfg,
                          "max_concurrent: must be between 1 and 1000000 slots (got 4294967295)");
    /* The limit itself is allowed, and 0 is the default. */
    cfg.max_concurrent = 1000000;
    assert_config_valid(breaker_bulkhead_config_validate, &cfg);
    cfg.max_concurrent = 0;
    assert_config_valid(breaker_bulkhead_config_validate, &cfg);
}

static void config_init_clears_the_whole_struct(void **state) {
    (void)state;
    assert_config_init_clears(breaker_bulkhead_config, breaker_bulkhead_config_init);
}

static void bounded_wait_gives_up_when_no_slot_frees(void **state) {
    (void)state;
    breaker_bulkhead *bh = make_bulkhead(1);
    assert_int_equal(breaker_bulkhead_try_acquire(bh), BREAKER_OK);
    uint64_t t0 = breaker_monotonic_ns(NULL);
    assert_int_equal(breaker_bulkhead_acquire_wait(bh, 20 * MS), BREAKER_BULKHEAD_FULL);
    uint64_t waited = breaker_monotonic_ns(NULL) - t0;
    assert_true(waited >= 20 * MS);
    assert_true(waited < 2 * SEC);
    breaker_bulkhead_stats st = bh_stats(bh);
    assert_int_equal(st.refused, 1);
    assert_int_equal(st.waiting, 0);
    breaker_bulkhead_destroy(bh);
}

struct waiter {
    breaker_bulkhead *bh;
    int rc;
};

static void *wait_for_slot(void *arg) {
    struct waiter *w = arg;
    w->rc = breaker_bulkhead_acquire_wait(w->bh, 60 * SEC);
    return NULL;
}

static void bounded_wait_takes_the_slot_another_thread_releases(void **state) {
    (void)state;
    breaker_bulkhead *bh = make_bulkhead(1);
    assert_int_equal(breaker_bulkhead_try_acquire(bh), BREAKER_OK);
    struct waiter w = {.bh = bh, .rc = -1};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, wait_for_slot, &w), 0);
    /* Release only once the waiter is registered, so the wake-up path (and
     * not a lucky first try) is what is tested. */
    while (bh_stats(bh).waiting == 0)
        sched_yield();
    assert_int_equal(breaker_bulkhead_release(bh), BREAKER_OK);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(w.rc, BREAKER_OK);
    breaker_bulkhead_stats st = bh_stats(bh);
    assert_int_equal(st.in_flight, 1);
    assert_int_equal(st.waited, 1);
    assert_int_equal(breaker_bulkhead_release(bh), BREAKER_OK);
    breaker_bulkhead_destroy(bh);
}

/* The executor's bounded wait for a slot ends at the caller's deadline,
 * however long bulkhead_max_wait_ns would allow. */
static void executor_bulkhead_wait_ends_at_the_deadline(void **state) {
    (void)state;
    breaker_bulkhead *bh = make_bulkhead(1);
    breaker_executor_config cfg;
    breaker_executor_config_init(&cfg);
    cfg.bulkhead = bh;
    cfg.bulkhead_max_wait_ns = 60 * SEC;
    breaker_executor *ex = make_executor(&cfg);
    struct fake_clock unused = {0};
    struct dependency dep = {.clock = &unused, .answer = BREAKER_SUCCESS};
    breaker_call call = idempotent_call(&dep);
    assert_int_equal(breaker_bulkhead_try_acquire(bh), BREAKER_OK);
    call.deadline_ns = breaker_deadline_after(NULL, NULL, 30 * MS);
    breaker_result res = run_call(ex, &call);
    assert_int_equal(res.kind, BREAKER_RESULT_REFUSED);
    assert_int_equal(res.layer, BREAKER_LAYER_BULKHEAD);
    assert_int_equal(res.status, BREAKER_BULKHEAD_FULL);
    assert_true(res.elapsed_ns >= 30 * MS);
    assert_true(res.elapsed_ns < 10 * SEC);
    assert_int_equal(dep.calls, 0);
    assert_int_equal(breaker_bulkhead_release(bh), BREAKER_OK);
    breaker_executor_destroy(ex);
    breaker_bulkhead_destroy(bh);
}

#define THREADS    8
#define ITERATIONS 3000
#define LIMIT      3

struct crowd {
    breaker_bulkhead *bh;
    _Atomic unsigned inside;
    _Atomic unsigned max_inside;
    _Atomic unsigned entered;
    _Atomic unsigned refused;
    _Atomic unsigned go;
};

static void enter(struct crowd *c) {
    unsigned now = atomic_fetch_add(&c->inside, 1) + 1;
    unsigned m = atomic_load(&c->max_inside);
    while (now > m && !atomic_compare_exchange_weak(&c->max_inside, &m, now)) {
    }
    atomic_fetch_add(&c->entered, 1);
    sched_yield(); /* hold the slot a moment, so threads pile up */
    atomic_fetch_sub(&c->inside, 1);
}

static void *crowd_thread(void *arg) {
    struct crowd *c = arg;
    while (!atomic_load(&c->go))
        sched_yield();
    for (int i = 0; i < ITERATIONS; i++) {
        /* Mix both ways in: refusals at once, and short waits. */
        int rc = (i % 4 == 0) ? breaker_bulkhead_acquire_wait(c->bh, 2 * MS)
                              : breaker_bulkhead_try_acquire(c->bh);
        if (rc != BREAKER_OK) {
            atomic_fetch_add(&c->refused, 1);
            continue;
        }
        enter(c);
        assert_int_equal(breaker_bulkhead_release(c->bh), BREAKER_OK);
    }
    return NULL;
}

static void never_more_than_the_limit_in_flight_under_many_threads(void **state) {
    (void)state;
    struct crowd c = {.bh = make_bulkhead(LIMIT)};
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, crowd_thread, &c), 0);
    atomic_store(&c.go, 1);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    breaker_bulkhead_stats st = bh_stats(c.bh);
    printf("# %u entered, %u refused, max inside %u (limit %d), peak %u\n", atomic_load(&c.entered),
           atomic_load(&c.refused), atomic_load(&c.max_inside), LIMIT, st.peak);
    assert_true(atomic_load(&c.max_inside) <= LIMIT);
    assert_true(st.peak <= LIMIT);
    assert_int_equal(st.in_flight, 0);
    assert_int_equal(st.waiting, 0);
    assert_int_equal(atomic_load(&c.entered) + atomic_load(&c.refused), THREADS * ITERATIONS);
    assert_int_equal(st.acquired, atomic_load(&c.entered));
    assert_int_equal(st.refused, atomic_load(&c.refused));
    breaker_bulkhead_destroy(c.bh);
}

/* The same through executors: many threads, one dependency's bulkhead. */
struct guarded {
    breaker_executor *ex;
    struct crowd *c;
    _Atomic unsigned bulkhead_refusals;
    _Atomic unsigned other;
};

static enum breaker_outcome crowded_op(void *ctx, breaker_attempt *a) {
    (void)a;
    enter(ctx);
    return BREAKER_SUCCESS;
}

static void *executor_thread(void *arg) {
    struct guarded *g = arg;
    while (!atomic_load(&g->c->go))
        sched_yield();
    breaker_call call = {.op = crowded_op, .op_ctx = g->c, .idempotent = true};
    for (int i = 0; i < ITERATIONS; i++) {
        breaker_result res;
        assert_int_equal(breaker_executor_run(g->ex, &call, &res), BREAKER_OK);
        if (res.kind == BREAKER_RESULT_REFUSED && res.layer == BREAKER_LAYER_BULKHEAD)
            atomic_fetch_add(&g->bulkhead_refusals, 1);
        else if (res.kind != BREAKER_RESULT_SUCCEEDED)
            atomic_fetch_add(&g->other, 1);
    }
    return NULL;
}

static void executors_sharing_a_bulkhead_never_exceed_its_limit(void **state) {
    (void)state;
    struct crowd c = {.bh = make_bulkhead(LIMIT)};
    breaker_config bcfg;
    breaker_config_init(&bcfg);
    breaker *b = make_breaker(&bcfg);
    breaker_executor_config cfg;
    breaker_executor_config_init(&cfg);
    cfg.b = b;
    cfg.bulkhead = c.bh;
    cfg.seed = 1;
    breaker_executor *ex = make_executor(&cfg);
    struct guarded g = {.ex = ex, .c = &c};
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, executor_thread, &g), 0);
    atomic_store(&c.go, 1);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    assert_true(atomic_load(&c.max_inside) <= LIMIT);
    assert_int_equal(atomic_load(&g.other), 0);
    breaker_executor_stats es = exec_stats(ex);
    assert_int_equal(es.requests, THREADS * ITERATIONS);
    assert_int_equal(es.refused_bulkhead, atomic_load(&g.bulkhead_refusals));
    assert_int_equal(es.succeeded + es.refused_bulkhead, THREADS * ITERATIONS);
    /* Bulkhead refusals never reach the breaker, as admissions or failures. */
    breaker_stats st = stats_of(b);
    assert_int_equal(st.admitted, es.succeeded);
    assert_int_equal(st.failures, 0);
    assert_int_equal(bh_stats(c.bh).in_flight, 0);
    breaker_executor_destroy(ex);
    test_breaker_destroy(b);
    breaker_bulkhead_destroy(c.bh);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(try_acquire_refuses_at_the_limit_and_counts),
        cmocka_unit_test(release_without_acquire_is_detected),
        cmocka_unit_test(null_config_takes_the_default_ten_slots),
        cmocka_unit_test(validation_names_the_field_and_its_range),
        cmocka_unit_test(config_init_clears_the_whole_struct),
        cmocka_unit_test(bounded_wait_gives_up_when_no_slot_frees),
        cmocka_unit_test(bounded_wait_takes_the_slot_another_thread_releases),
        cmocka_unit_test(executor_bulkhead_wait_ends_at_the_deadline),
        cmocka_unit_test(never_more_than_the_limit_in_flight_under_many_threads),
        cmocka_unit_test(executors_sharing_a_bulkhead_never_exceed_its_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
