/* SPDX-License-Identifier: MIT */
/*
 * test_window_recycle.c - a time-window bucket of a shared stripe left
 * "being emptied" (a process killed between marking it and publishing its
 * new stamp, in a store file that outlives it) must not drop that stripe's
 * calls from the window for good: the next recorder finishes the job.
 * White-box: the test marks the bucket itself, and records from a thread
 * that owns no stripe (eight parked threads hold the owned ones).
 */
#include "test_util.h"

#include "core/internal.h"

#include <pthread.h>

static struct fake_clock clock_;
static atomic_int parked, go_home;

static void *hold_an_owned_stripe(void *arg) {
    call_ok(arg, BREAKER_SUCCESS);
    atomic_fetch_add(&parked, 1);
    while (!atomic_load(&go_home))
        sched_yield();
    return NULL;
}

struct run {
    breaker *b;
    unsigned stripe;
};

/* A thread without an owned stripe: mark its bucket as stuck, then fail
 * calls until the breaker trips (or give up). */
static void *fail_from_a_shared_stripe(void *arg) {
    struct run *r = arg;
    breaker_permit p;
    if (breaker_acquire(r->b, &p) == BREAKER_OK) /* assigns this thread's stripe */
        (void)breaker_complete(r->b, &p, BREAKER_SUCCESS);
    struct breaker__stripe_ref ref = breaker__thread_stripe(r->b);
    r->stripe = ref.index;
    if (ref.owned) return NULL;
    struct breaker__shared *s = r->b->shared;
    uint64_t e = (atomic_load(&clock_.now) - s->epoch_ns) / s->lim.bucket_ns;
    struct breaker__bucket *bk = &breaker__buckets_of(s, ref.index)[e % s->lim.window_buckets];
    atomic_store(&bk->stamp, UINT64_MAX); /* "being emptied", by a dead recycler */
    for (int i = 0; i < 100 && breaker_get_state(r->b) == BREAKER_CLOSED; i++) {
        if (breaker_acquire(r->b, &p) == BREAKER_OK)
            (void)breaker_complete(r->b, &p, BREAKER_FAILURE);
    }
    return NULL;
}

static void a_stuck_recycling_bucket_is_finished_by_the_next_call(void **state) {
    (void)state;
    breaker_config cfg;
    test_config(&cfg, &clock_, NULL);
    cfg.trip = BREAKER_TRIP_TIME_WINDOW;
    cfg.window_ns = 10 * SEC;
    cfg.window_buckets = 10;
    cfg.min_calls = 10;
    cfg.failure_rate = 0.5;
    atomic_store(&clock_.now, 5 * SEC);
    breaker *b = make_breaker(&cfg);
    pthread_t owners[BREAKER__OWNED_STRIPES + 1];
    unsigned n = 0;
    /* Park threads until every owned stripe is taken (the test's own
     * thread may hold one already). */
    for (; n < BREAKER__OWNED_STRIPES; n++) {
        assert_int_equal(pthread_create(&owners[n], NULL, hold_an_owned_stripe, b), 0);
        while (atomic_load(&parked) < (int)n + 1)
            sched_yield();
    }
    struct run r = {b, 0};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, fail_from_a_shared_stripe, &r), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    atomic_store(&go_home, 1);
    for (unsigned i = 0; i < n; i++)
        assert_int_equal(pthread_join(owners[i], NULL), 0);
    assert_true(r.stripe >= BREAKER__OWNED_STRIPES); /* it was a shared stripe */
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    breaker_destroy(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_stuck_recycling_bucket_is_finished_by_the_next_call),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
