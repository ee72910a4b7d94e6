/* SPDX-License-Identifier: MIT */
/*
 * test_retry.c - the retry policy's backoff and the retry budget, alone and
 * bounding the attempts of an executor under a sustained outage, and charged
 * only for the retries made by executors on many threads (run under
 * ThreadSanitizer by make check: label "concurrency").
 */
#include "compose_util.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

static void policy_defaults_and_validation_name_the_field(void **state) {
    (void)state;
    breaker_retry_policy p;
    breaker_retry_policy_init(&p);
    assert_int_equal(p.max_attempts, 3);
    assert_int_equal(p.base_ns, 100 * MS);
    assert_int_equal(p.max_backoff_ns, 10 * SEC);
    assert_int_equal(p.jitter, BREAKER_JITTER_FULL);
    char msg[128];
    assert_int_equal(breaker_retry_policy_validate(&p, msg, sizeof(msg)), BREAKER_OK);
    p.max_attempts = 101;
    assert_int_equal(breaker_retry_policy_validate(&p, msg, sizeof(msg)), BREAKER_EINVAL);
    assert_non_null(strstr(msg, "max_attempts"));
    breaker_retry_policy_init(&p);
    p.base_ns = 2 * SEC;
    p.max_backoff_ns = 1 * SEC;
    assert_int_equal(breaker_retry_policy_validate(&p, msg, sizeof(msg)), BREAKER_EINVAL);
    assert_non_null(strstr(msg, "max_backoff_ns"));
    breaker_retry_policy_init(&p);
    p.jitter = (enum breaker_jitter)9;
    assert_int_equal(breaker_retry_policy_validate(&p, NULL, 0), BREAKER_EINVAL);
}

static void policy_validation_names_each_field_and_its_range(void **state) {
    (void)state;
    char msg[160];
    breaker_retry_policy p;
    breaker_retry_policy_init(&p);
    assert_config_valid(breaker_retry_policy_validate, &p);
    p.max_attempts = 101;
    assert_int_equal(breaker_retry_policy_validate(&p, msg, sizeof(msg)), BREAKER_EINVAL);
    assert_string_equal(msg, "max_attempts: must be between 1 and 100 (got 101)");
    breaker_retry_policy_init(&p);
    p.base_ns = 2 * SEC;
    p.max_backoff_ns = 1 * SEC;
    assert_int_equal(breaker_retry_policy_validate(&p, msg, sizeof(msg)), BREAKER_EINVAL);
    assert_string_equal(msg,
                        "max_backoff_ns: must be >= base_ns (2000000000 ns), got 1000000000 ns");
    /* A zero cap is the default 10 s, and checked as such. */
    breaker_retry_policy_init(&p);
    p.base_ns = 20 * SEC;
    p.max_backoff_ns = 0;
    assert_int_equal(breaker_retry_policy_validate(&p, msg, sizeof(msg)), BREAKER_EINVAL);
    assert_string_equal(msg,
                        "max_backoff_ns: must be >= base_ns (20000000000 ns), got 10000000000 ns");
    breaker_retry_policy_init(&p);
    p.jitter = (enum breaker_jitter)9;
    assert_int_equal(breaker_retry_policy_validate(&p, msg, sizeof(msg)), BREAKER_EINVAL);
    assert_string_equal(msg, "jitter: must be full, decorrelated or none (got 9)");
    /* Zero fields are their defaults, and valid. */
    memset(&p, 0, sizeof(p));
    assert_config_valid(breaker_retry_policy_validate, &p);
}

static void policy_init_clears_the_whole_struct(void **state) {
    (void)state;
    assert_config_init_clears(breaker_retry_policy, breaker_retry_policy_init);
}

static void unjittered_backoff_doubles_up_to_the_cap(void **state) {
    (void)state;
    breaker_retry_policy p;
    breaker_retry_policy_init(&p);
    p.jitter = BREAKER_JITTER_NONE;
    p.base_ns = 100 * MS;
    p.max_backoff_ns = 1 * SEC;
    uint64_t want[] = {100 * MS, 200 * MS, 400 * MS, 800 * MS, 1 * SEC, 1 * SEC};
    for (uint32_t n = 1; n <= 6; n++)
        assert_int_equal(breaker_retry_backoff_ns(&p, n, 0, 12345), want[n - 1]);
    /* No overflow however far the retries go. */
    assert_int_equal(breaker_retry_backoff_ns(&p, 1000, 0, 1), 1 * SEC);
}

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static void full_jitter_spreads_over_the_whole_exponential_envelope(void **state) {
    (void)state;
    breaker_retry_policy p;
    breaker_retry_policy_init(&p);
    p.base_ns = 100 * MS;
    p.max_backoff_ns = 1 * SEC;
    uint64_t rng = 1;
    for (uint32_t n = 1; n <= 8; n++) {
        uint64_t envelope = n >= 5 ? 1 * SEC : (100 * MS) << (n - 1);
        uint64_t lo = UINT64_MAX, hi = 0, sum = 0;
        for (int i = 0; i < 2000; i++) {
            uint64_t d = breaker_retry_backoff_ns(&p, n, 0, splitmix(&rng));
            assert_true(d <= envelope);
            lo = d < lo ? d : lo;
            hi = d > hi ? d : hi;
            sum += d;
        }
        /* Uniform over [0, envelope]: reaches both ends, averages the middle. */
        assert_true(lo < envelope / 50);
        assert_true(hi > envelope - envelope / 50);
        uint64_t mean = sum / 2000;
        assert_true(mean > envelope * 45 / 100 && mean < envelope * 55 / 100);
    }
}

static void decorrelated_jitter_stays_between_base_and_three_times_previous(void **state) {
    (void)state;
    breaker_retry_policy p;
    breaker_retry_policy_init(&p);
    p.jitter = BREAKER_JITTER_DECORRELATED;
    p.base_ns = 10 * MS;
    p.max_backoff_ns = 2 * SEC;
    uint64_t rng = 3, prev = 0;
    bool reached_cap = false;
    for (uint32_t n = 1; n <= 400; n++) {
        uint64_t d = breaker_retry_backoff_ns(&p, n, prev, splitmix(&rng));
        uint64_t bound = (prev < p.base_ns ? p.base_ns : prev) * 3;
        if (bound > p.max_backoff_ns) bound = p.max_backoff_ns;
        assert_true(d >= p.base_ns);
        assert_true(d <= bound);
        if (d > p.max_backoff_ns * 9 / 10) reached_cap = true;
        prev = d;
    }
    assert_true(reached_cap);
}

static void budget_allows_min_retries_plus_ratio_of_requests(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker_retry_budget *b = make_budget(&clock, 0.5, 2, 10 * SEC);
    /* No requests yet: only the floor. */
    assert_int_equal(breaker_retry_budget_withdraw(b), BREAKER_OK);
    assert_int_equal(breaker_retry_budget_withdraw(b), BREAKER_OK);
    assert_int_equal(breaker_retry_budget_withdraw(b), BREAKER_RETRY_BUDGET_EXHAUSTED);
    /* 10 requests at ratio 0.5 buy 5 more retries, not 6. */
    for (int i = 0; i < 10; i++)
        breaker_retry_budget_deposit(b);
    for (int i = 0; i < 5; i++)
        assert_int_equal(breaker_retry_budget_withdraw(b), BREAKER_OK);
    assert_int_equal(breaker_retry_budget_withdraw(b), BREAKER_RETRY_BUDGET_EXHAUSTED);
    breaker_retry_budget_stats st;
    assert_int_equal(breaker_retry_budget_stats_get(b, &st), BREAKER_OK);
    assert_int_equal(st.deposits, 10);
    assert_int_equal(st.withdrawals, 7);
    assert_int_equal(st.refused, 2);
    assert_int_equal(st.window_requests, 10);
    assert_int_equal(st.window_retries, 7);
    breaker_retry_budget_destroy(b);
}

static void budget_window_slides_old_traffic_out(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker_retry_budget *b = make_budget(&clock, 1.0, 0, 10 * SEC);
    for (int i = 0; i < 4; i++)
        breaker_retry_budget_deposit(b);
    for (int i = 0; i < 4; i++)
        assert_int_equal(breaker_retry_budget_withdraw(b), BREAKER_OK);
    assert_int_equal(breaker_retry_budget_withdraw(b), BREAKER_RETRY_BUDGET_EXHAUSTED);
    /* Within the window the spent retries still count... */
    fake_clock_advance(&clock, 9 * SEC);
    breaker_retry_budget_deposit(b);
    assert_int_equal(breaker_retry_budget_withdraw(b), BREAKER_OK);
    assert_int_equal(breaker_retry_budget_withdraw(b), BREAKER_RETRY_BUDGET_EXHAUSTED);
    /* ...once they have left it, the one recent request buys one retry
     * (already spent), and nothing older helps. */
    fake_clock_advance(&clock, 2 * SEC);
    breaker_retry_budget_stats st;
    assert_int_equal(breaker_retry_budget_stats_get(b, &st), BREAKER_OK);
    assert_int_equal(st.window_requests, 1);
    assert_int_equal(st.window_retries, 1);
    assert_int_equal(breaker_retry_budget_withdraw(b), BREAKER_RETRY_BUDGET_EXHAUSTED);
    fake_clock_advance(&clock, 10 * SEC);
    breaker_retry_budget_deposit(b);
    assert_int_equal(breaker_retry_budget_withdraw(b), BREAKER_OK);
    breaker_retry_budget_destroy(b);
}

static void budget_configuration_is_validated(void **state) {
    (void)state;
    breaker_retry_budget_config cfg;
    breaker_retry_budget *b = NULL;
    breaker_retry_budget_config_init(&cfg);
    assert_true(cfg.ratio > 0.19 && cfg.ratio < 0.21);
    assert_int_equal(cfg.min_retries, 10);
    cfg.ratio = -1;
    assert_int_equal(breaker_retry_budget_create(&cfg, &b), BREAKER_EINVAL);
    assert_null(b);
    breaker_retry_budget_config_init(&cfg);
    cfg.buckets = 601;
    assert_int_equal(breaker_retry_budget_create(&cfg, &b), BREAKER_EINVAL);
    assert_int_equal(breaker_retry_budget_create(NULL, &b), BREAKER_OK);
    breaker_retry_budget_destroy(b);
}

static void budget_null_config_takes_the_defaults(void **state) {
    (void)state;
    breaker_retry_budget *b = NULL;
    assert_int_equal(breaker_retry_budget_create(NULL, &b), BREAKER_OK);
    assert_non_null(b);
    /* min_retries 10 with no requests; then ratio 0.2: 5 requests buy one
     * more. All of it well inside the default 10 s window. */
    for (int i = 0; i < 10; i++)
        assert_int_equal(breaker_retry_budget_withdraw(b), BREAKER_OK);
    assert_int_equal(breaker_retry_budget_withdraw(b), BREAKER_RETRY_BUDGET_EXHAUSTED);
    for (int i = 0; i < 5; i++)
        breaker_retry_budget_deposit(b);
    assert_int_equal(breaker_retry_budget_withdraw(b), BREAKER_OK);
    assert_int_equal(breaker_retry_budget_withdraw(b), BREAKER_RETRY_BUDGET_EXHAUSTED);
    breaker_retry_budget_destroy(b);
}

#define assert_budget_refused(cfg, want)                                                     \
    assert_config_refused(breaker_retry_budget_config_validate, breaker_retry_budget_create, \
                          breaker_retry_budget, cfg, want)

static void budget_validation_names_each_field_and_its_range(void **state) {
    (void)state;
    breaker_retry_budget_config cfg;
    breaker_retry_budget_config_init(&cfg);
    assert_config_valid(breaker_retry_budget_config_validate, &cfg);
    cfg.ratio = -1;
    assert_budget_refused(&cfg, "ratio: must be between 0 and 1000 (got -1)");
    cfg.ratio = 1000.5;
    assert_budget_refused(&cfg, "ratio: must be between 0 and 1000 (got 1000.5)");
    cfg.ratio = NAN;
    assert_budget_refused(&cfg, "ratio: must be between 0 and 1000 (got nan)");
    cfg.ratio = INFINITY;
    assert_budget_refused(&cfg, "ratio: must be between 0 and 1000 (got inf)");
    breaker_retry_budget_config_init(&cfg);
    cfg.min_retries = 1000001;
    assert_budget_refused(&cfg, "min_retries: must be between 0 and 1000000 (got 1000001)");
    breaker_retry_budget_config_init(&cfg);
    cfg.buckets = 601;
    assert_budget_refused(&cfg, "buckets: must be between 1 and 600 (got 601)");
    breaker_retry_budget_config_init(&cfg);
    cfg.window_ns = 5;
    assert_budget_refused(&cfg, "window_ns: each of the 10 buckets must span at least 1 ns "
                                "(window_ns >= 10 ns, got 5)");
    /* The limits themselves are allowed, and zero fields are defaults. */
    breaker_retry_budget_config_init(&cfg);
    cfg.ratio = 1000;
    cfg.min_retries = 1000000;
    cfg.buckets = 600;
    cfg.window_ns = 600;
    assert_config_valid(breaker_retry_budget_config_validate, &cfg);
    memset(&cfg, 0, sizeof(cfg));
    assert_config_valid(breaker_retry_budget_config_validate, &cfg);
}

static void budget_config_init_clears_the_whole_struct(void **state) {
    (void)state;
    assert_config_init_clears(breaker_retry_budget_config, breaker_retry_budget_config_init);
}

/* A dependency that fails every call for 60 s while 100 requests a second
 * arrive, each allowed 3 attempts. Without a budget that is 3 attempts per
 * request; with ratio 0.1 it must stay near 1.1. */
static void budget_bounds_attempts_under_sustained_outage(void **state) {
    (void)state;
    const double ratio = 0.1;
    const uint32_t min_retries = 5;
    const uint64_t window = 10 * SEC;
    const unsigned requests = 6000;
    for (int with_budget = 0; with_budget <= 1; with_budget++) {
        struct fake_clock clock = {0};
        struct fake_sleep sl = {.clock = &clock};
        struct dependency dep = {.clock = &clock, .answer = BREAKER_FAILURE, .error = 503};
        breaker_retry_budget *budget =
            with_budget ? make_budget(&clock, ratio, min_retries, window) : NULL;
        breaker_executor_config cfg;
        exec_config(&cfg, &clock, &sl);
        cfg.retry.base_ns = 1 * MS;
        cfg.budget = budget;
        breaker_executor *ex = make_executor(&cfg);
        breaker_call call = idempotent_call(&dep);
        uint64_t t = 0;
        for (unsigned i = 0; i < requests; i++) {
            t += 10 * MS; /* 100 requests/s of arrivals, whatever the retries took */
            if (fake_clock_read(&clock) < t) atomic_store(&clock.now, t);
            (void)run_call(ex, &call);
        }
        breaker_executor_stats st = exec_stats(ex);
        assert_int_equal(st.requests, requests);
        if (!with_budget) {
            assert_int_equal(dep.calls, 3 * requests);
        } else {
            uint64_t windows = fake_clock_read(&clock) / window + 1;
            double bound = requests * (1.0 + ratio) + (double)(min_retries * windows);
            printf("# outage: %u requests, %u attempts with budget (bound %.0f, %u without)\n",
                   requests, dep.calls, bound, 3 * requests);
            assert_true(dep.calls <= bound);
            assert_true(dep.calls > requests * (1.0 + ratio * 0.9)); /* it did allow retries */
            /* Most requests had their retries refused by the budget. */
            assert_true(st.stopped_budget > requests / 2);
            breaker_retry_budget_stats bs;
            assert_int_equal(breaker_retry_budget_stats_get(budget, &bs), BREAKER_OK);
            assert_int_equal(bs.deposits, requests);
            assert_int_equal(bs.withdrawals, st.retries);
        }
        breaker_executor_destroy(ex);
        breaker_retry_budget_destroy(budget);
    }
}

static void refund_gives_the_retry_back_once(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker_retry_budget *b = make_budget(&clock, 0, 2, 10 * SEC);
    breaker_retry_ticket t1, t2, t3;
    assert_int_equal(breaker_retry_budget_withdraw_refundable(b, &t1), BREAKER_OK);
    assert_int_equal(breaker_retry_budget_withdraw_refundable(b, &t2), BREAKER_OK);
    /* A refused withdrawal leaves nothing to refund. */
    assert_int_equal(breaker_retry_budget_withdraw_refundable(b, &t3),
                     BREAKER_RETRY_BUDGET_EXHAUSTED);
    assert_int_equal(breaker_retry_budget_refund(b, &t3), BREAKER_EINVAL);
    /* A refund makes room for exactly one more retry... */
    assert_int_equal(breaker_retry_budget_refund(b, &t1), BREAKER_OK);
    breaker_retry_budget_stats st = budget_stats(b);
    assert_int_equal(st.withdrawals, 2);
    assert_int_equal(st.refunded, 1);
    assert_int_equal(st.window_retries, 1);
    assert_int_equal(breaker_retry_budget_withdraw(b), BREAKER_OK);
    assert_int_equal(breaker_retry_budget_withdraw(b), BREAKER_RETRY_BUDGET_EXHAUSTED);
    /* ...and only once: the refund spends the ticket. */
    assert_int_equal(breaker_retry_budget_refund(b, &t1), BREAKER_EINVAL);
    assert_int_equal(breaker_retry_budget_refund(b, &t2), BREAKER_OK);
    assert_int_equal(breaker_retry_budget_refund(b, &t2), BREAKER_EINVAL);
    st = budget_stats(b);
    assert_int_equal(st.refunded, 2);
    assert_int_equal(st.window_retries, 1);
    /* A ticket naming a time this budget has not reached is not its own. */
    breaker_retry_ticket future = {.opaque = UINT64_MAX};
    assert_int_equal(breaker_retry_budget_refund(b, &future), BREAKER_EINVAL);
    assert_int_equal(budget_stats(b).refunded, 2);
    breaker_retry_budget_destroy(b);
}

/* A refund after its retry has slid out of the window must not uncount a
 * retry made since: it changes the lifetime count only. */
static void refund_after_the_window_slid_uncounts_nothing_newer(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker_retry_budget *b = make_budget(&clock, 0, 1, 10 * SEC);
    breaker_retry_ticket old, recent;
    assert_int_equal(breaker_retry_budget_withdraw_refundable(b, &old), BREAKER_OK);
    fake_clock_advance(&clock, 11 * SEC); /* `old` has left the window */
    assert_int_equal(breaker_retry_budget_withdraw_refundable(b, &recent), BREAKER_OK);
    assert_int_equal(breaker_retry_budget_refund(b, &old), BREAKER_OK);
    breaker_retry_budget_stats st = budget_stats(b);
    assert_int_equal(st.window_retries, 1);
    assert_int_equal(st.refunded, 1);
    assert_int_equal(breaker_retry_budget_withdraw(b), BREAKER_RETRY_BUDGET_EXHAUSTED);
    /* Still in its window, `recent` comes back out of the bucket it is in,
     * though newer buckets have been used since. */
    fake_clock_advance(&clock, 5 * SEC);
    breaker_retry_budget_deposit(b);
    assert_int_equal(breaker_retry_budget_refund(b, &recent), BREAKER_OK);
    st = budget_stats(b);
    assert_int_equal(st.window_retries, 0);
    assert_int_equal(st.window_requests, 1);
    assert_int_equal(st.refunded, 2);
    breaker_retry_budget_destroy(b);
}

/* Many threads, each with its own executor, breaker and fake clock, share
 * one budget (on a clock that stands still: one window). Every backoff
 * follows a withdrawal; the sleep script then aborts three retries in four
 * (cancelled, woken past the deadline, breaker forced open meanwhile) and
 * lets the fourth be made. */
#define SHARERS      8
#define REQUESTS     2000
#define SHARED_MIN   10u
#define SHARED_RATIO 0.1

struct sharer {
    struct fake_clock clock;
    breaker *b;
    breaker_executor *ex;
    struct dependency dep;
    const _Atomic int *go;
    unsigned sleeps, aborted;
};

static int scripted_sleep(void *ctx, uint64_t ns) {
    struct sharer *s = ctx;
    unsigned k = s->sleeps++;
    if (k % 4 != 3) s->aborted++;
    switch (k % 4) {
    case 0:
        return 1; /* the caller cancels */
    case 1:
        fake_clock_advance(&s->clock, ns + 10 * SEC); /* wakes past the deadline */
        return 0;
    case 2:
        (void)breaker_force_open(s->b); /* opens meanwhile */
        break;
    default:
        break;
    }
    fake_clock_advance(&s->clock, ns);
    return 0;
}

static void *sharer_thread(void *arg) {
    struct sharer *s = arg;
    while (!atomic_load(s->go))
        sched_yield();
    breaker_call call = idempotent_call(&s->dep);
    for (int i = 0; i < REQUESTS; i++) {
        call.deadline_ns = fake_clock_read(&s->clock) + 1 * SEC;
        breaker_result res;
        if (breaker_executor_run(s->ex, &call, &res) != BREAKER_OK) break;
        if (breaker_get_state(s->b) != BREAKER_CLOSED) (void)breaker_reset(s->b);
    }
    return NULL;
}

static void shared_budget_charges_only_retries_made_under_many_threads(void **state) {
    (void)state;
    struct fake_clock budget_clock = {0};
    breaker_retry_budget *budget = make_budget(&budget_clock, SHARED_RATIO, SHARED_MIN, 10 * SEC);
    static struct sharer s[SHARERS];
    _Atomic int go = 0;
    for (int i = 0; i < SHARERS; i++) {
        memset(&s[i], 0, sizeof(s[i]));
        s[i].go = &go;
        s[i].dep = (struct dependency){.clock = &s[i].clock, .answer = BREAKER_FAILURE};
        breaker_config bc;
        test_config(&bc, &s[i].clock, NULL);
        bc.trip = BREAKER_TRIP_CONSECUTIVE;
        bc.failure_threshold = 1000;
        s[i].b = make_breaker(&bc);
        breaker_executor_config cfg;
        exec_config(&cfg, &s[i].clock, NULL);
        cfg.sleep = scripted_sleep;
        cfg.sleep_ctx = &s[i];
        cfg.b = s[i].b;
        cfg.budget = budget;
        s[i].ex = make_executor(&cfg);
    }
    pthread_t t[SHARERS];
    for (int i = 0; i < SHARERS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, sharer_thread, &s[i]), 0);
    atomic_store(&go, 1);
    for (int i = 0; i < SHARERS; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);

    uint64_t requests = 0, made = 0, stopped_budget = 0, sleeps = 0, aborted = 0;
    for (int i = 0; i < SHARERS; i++) {
        breaker_executor_stats st = exec_stats(s[i].ex);
        requests += st.requests;
        made += st.retries;
        stopped_budget += st.stopped_budget;
        sleeps += s[i].sleeps;
        aborted += s[i].aborted;
        breaker_executor_destroy(s[i].ex);
        test_breaker_destroy(s[i].b);
    }
    breaker_retry_budget_stats bs = budget_stats(budget);
    uint64_t bound = SHARED_MIN + requests / 10; /* min_retries + 0.1 x requests */
    printf("# %d threads: %llu requests, %llu retries withdrawn, %llu refunded, %llu made "
           "(bound %llu), %llu refused by the budget\n",
           SHARERS, (unsigned long long)requests, (unsigned long long)bs.withdrawals,
           (unsigned long long)bs.refunded, (unsigned long long)made, (unsigned long long)bound,
           (unsigned long long)stopped_budget);
    assert_int_equal(requests, SHARERS * REQUESTS);
    assert_int_equal(bs.deposits, requests);
    /* Each withdrawal was followed by one backoff; each aborted one refunded. */
    assert_int_equal(bs.withdrawals, sleeps);
    assert_int_equal(bs.refunded, aborted);
    assert_int_equal(bs.withdrawals - bs.refunded, made);
    assert_int_equal(bs.window_retries, made);
    /* The bound holds for the retries made, and the refunds are what let
     * them come near it: charging the aborted ones would allow about a
     * quarter of it. */
    assert_true(made <= bound);
    assert_true(made > bound / 2);
    assert_true(stopped_budget > 0);
    breaker_retry_budget_destroy(budget);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(policy_defaults_and_validation_name_the_field),
        cmocka_unit_test(policy_validation_names_each_field_and_its_range),
        cmocka_unit_test(policy_init_clears_the_whole_struct),
        cmocka_unit_test(unjittered_backoff_doubles_up_to_the_cap),
        cmocka_unit_test(full_jitter_spreads_over_the_whole_exponential_envelope),
        cmocka_unit_test(decorrelated_jitter_stays_between_base_and_three_times_previous),
        cmocka_unit_test(budget_allows_min_retries_plus_ratio_of_requests),
        cmocka_unit_test(budget_window_slides_old_traffic_out),
        cmocka_unit_test(budget_configuration_is_validated),
        cmocka_unit_test(budget_null_config_takes_the_defaults),
        cmocka_unit_test(budget_validation_names_each_field_and_its_range),
        cmocka_unit_test(budget_config_init_clears_the_whole_struct),
        cmocka_unit_test(budget_bounds_attempts_under_sustained_outage),
        cmocka_unit_test(refund_gives_the_retry_back_once),
        cmocka_unit_test(refund_after_the_window_slid_uncounts_nothing_newer),
        cmocka_unit_test(shared_budget_charges_only_retries_made_under_many_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
