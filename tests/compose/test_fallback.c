/* SPDX-License-Identifier: MIT */
/*
 * test_fallback.c - the cached last good value (served with its age,
 * refused past its maximum staleness) and fallbacks run by the executor.
 */
#include "compose_util.h"

#include <stdio.h>

static breaker_cache *make_cache(struct fake_clock *clock, size_t max_size, uint64_t max_stale) {
    breaker_cache_config cfg;
    breaker_cache_config_init(&cfg);
    cfg.max_size = max_size;
    cfg.max_stale_ns = max_stale;
    cfg.clock = fake_clock_read;
    cfg.clock_ctx = clock;
    breaker_cache *c = NULL;
    assert_int_equal(breaker_cache_create(&cfg, &c), BREAKER_OK);
    assert_non_null(c);
    return c;
}

static void empty_cache_serves_nothing(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker_cache *c = make_cache(&clock, 64, 10 * SEC);
    char buf[64];
    size_t len = 99;
    uint64_t age = 0;
    assert_int_equal(breaker_cache_get(c, buf, sizeof(buf), &len, &age), BREAKER_NOT_FOUND);
    assert_int_equal(len, 0);
    assert_int_equal(age, UINT64_MAX);
    breaker_cache_destroy(c);
}

static void stale_value_is_served_with_its_age(void **state) {
    (void)state;
    struct fake_clock clock = {.now = 100 * SEC};
    breaker_cache *c = make_cache(&clock, 64, 10 * SEC);
    assert_int_equal(breaker_cache_put(c, "v1", 2), BREAKER_OK);
    fake_clock_advance(&clock, 3 * SEC);
    char buf[64] = {0};
    size_t len = 0;
    uint64_t age = 0;
    assert_int_equal(breaker_cache_get(c, buf, sizeof(buf), &len, &age), BREAKER_OK);
    assert_int_equal(len, 2);
    assert_memory_equal(buf, "v1", 2);
    assert_int_equal(age, 3 * SEC);
    /* A newer value replaces it and its age restarts. */
    assert_int_equal(breaker_cache_put(c, "value2", 6), BREAKER_OK);
    fake_clock_advance(&clock, 1 * SEC);
    assert_int_equal(breaker_cache_get(c, buf, sizeof(buf), &len, &age), BREAKER_OK);
    assert_int_equal(len, 6);
    assert_memory_equal(buf, "value2", 6);
    assert_int_equal(age, 1 * SEC);
    breaker_cache_destroy(c);
}

static void value_past_max_staleness_is_refused(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker_cache *c = make_cache(&clock, 64, 10 * SEC);
    assert_int_equal(breaker_cache_put(c, "v", 1), BREAKER_OK);
    fake_clock_advance(&clock, 10 * SEC);
    char buf[8];
    size_t len = 0;
    uint64_t age = 0;
    assert_int_equal(breaker_cache_get(c, buf, sizeof(buf), &len, &age), BREAKER_OK);
    assert_int_equal(age, 10 * SEC); /* exactly the maximum is still served */
    fake_clock_advance(&clock, 1);
    assert_int_equal(breaker_cache_get(c, buf, sizeof(buf), &len, &age), BREAKER_NOT_FOUND);
    assert_int_equal(len, 0);
    assert_int_equal(age, 10 * SEC + 1); /* says how old it is */
    breaker_cache_destroy(c);
}

static void sizes_are_checked(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker_cache *c = make_cache(&clock, 4, 10 * SEC);
    assert_int_equal(breaker_cache_put(c, "abcd", 4), BREAKER_OK);
    assert_int_equal(breaker_cache_put(c, "abcde", 5), BREAKER_ENOSPC);
    char buf[2];
    size_t len = 0;
    assert_int_equal(breaker_cache_get(c, buf, sizeof(buf), &len, NULL), BREAKER_ENOSPC);
    assert_int_equal(len, 4); /* the size needed; the old value survived */
    char big[4];
    assert_int_equal(breaker_cache_get(c, big, sizeof(big), &len, NULL), BREAKER_OK);
    assert_memory_equal(big, "abcd", 4);
    breaker_cache_destroy(c);
    breaker_cache_config cfg;
    breaker_cache_config_init(&cfg);
    cfg.max_size = (size_t)1 << 31;
    assert_int_equal(breaker_cache_create(&cfg, &c), BREAKER_EINVAL);
    assert_null(c);
}

static void cache_null_config_takes_the_defaults(void **state) {
    (void)state;
    breaker_cache *c = NULL;
    assert_int_equal(breaker_cache_create(NULL, &c), BREAKER_OK);
    assert_non_null(c);
    /* 4096 bytes fit and 4097 do not; a value just put is served, on the
     * monotonic clock, well inside the default 60 s. */
    static unsigned char value[4097];
    assert_int_equal(breaker_cache_put(c, value, 4097), BREAKER_ENOSPC);
    assert_int_equal(breaker_cache_put(c, value, 4096), BREAKER_OK);
    static unsigned char out[4096];
    size_t len = 0;
    uint64_t age = UINT64_MAX;
    assert_int_equal(breaker_cache_get(c, out, sizeof(out), &len, &age), BREAKER_OK);
    assert_int_equal(len, 4096);
    assert_true(age < 60 * SEC);
    breaker_cache_destroy(c);
}

static void cache_validation_names_the_field_and_its_range(void **state) {
    (void)state;
    breaker_cache_config cfg;
    breaker_cache_config_init(&cfg);
    assert_config_valid(breaker_cache_config_validate, &cfg);
    cfg.max_size = ((size_t)1 << 30) + 1;
    assert_config_refused(breaker_cache_config_validate, breaker_cache_create, breaker_cache, &cfg,
                          "max_size: must be between 1 and 1073741824 bytes (got 1073741825)");
    cfg.max_size = SIZE_MAX;
    char want[128];
    snprintf(want, sizeof(want), "max_size: must be between 1 and 1073741824 bytes (got %zu)",
             (size_t)SIZE_MAX);
    assert_config_refused(breaker_cache_config_validate, breaker_cache_create, breaker_cache, &cfg,
                          want);
    /* Zero fields are defaults; any staleness is allowed. */
    memset(&cfg, 0, sizeof(cfg));
    cfg.max_stale_ns = UINT64_MAX;
    assert_config_valid(breaker_cache_config_validate, &cfg);
}

static void cache_config_init_clears_the_whole_struct(void **state) {
    (void)state;
    assert_config_init_clears(breaker_cache_config, breaker_cache_config_init);
}

/* A service whose answers go into the cache when they are good. */
struct service {
    struct dependency dep;
    breaker_cache *cache;
};

static enum breaker_outcome cached_op(void *ctx, breaker_attempt *a) {
    struct service *s = ctx;
    enum breaker_outcome out = dependency_op(&s->dep, a);
    if (out == BREAKER_SUCCESS)
        assert_int_equal(breaker_cache_put(s->cache, "good", 4), BREAKER_OK);
    return out;
}

struct fixture {
    struct fake_clock clock;
    struct fake_sleep sl;
    struct service svc;
    breaker *b;
    breaker_executor *ex;
    char buf[16];
    breaker_cache_target target;
    breaker_call call;
};

static void fixture_init(struct fixture *f, enum breaker_order order) {
    memset(f, 0, sizeof(*f));
    f->sl.clock = &f->clock;
    f->svc.dep.clock = &f->clock;
    f->svc.dep.answer = BREAKER_SUCCESS;
    f->svc.cache = make_cache(&f->clock, sizeof(f->buf), 30 * SEC);
    breaker_config bc;
    test_config(&bc, &f->clock, NULL);
    bc.trip = BREAKER_TRIP_CONSECUTIVE;
    bc.failure_threshold = 3;
    bc.open_ns = 60 * SEC;
    f->b = make_breaker(&bc);
    breaker_executor_config cfg;
    exec_config(&cfg, &f->clock, &f->sl);
    cfg.order = order;
    cfg.b = f->b;
    cfg.retry.max_attempts = 1;
    f->ex = make_executor(&cfg);
    f->target = (breaker_cache_target){.cache = f->svc.cache, .buf = f->buf, .cap = sizeof(f->buf)};
    f->call = (breaker_call){.op = cached_op,
                             .op_ctx = &f->svc,
                             .idempotent = true,
                             .fallback = breaker_cache_fallback,
                             .fallback_ctx = &f->target};
}

static void fixture_fini(struct fixture *f) {
    breaker_executor_destroy(f->ex);
    test_breaker_destroy(f->b);
    breaker_cache_destroy(f->svc.cache);
}

static void executor_serves_cached_value_when_refused_and_reports_it(void **state) {
    (void)state;
    struct fixture f;
    fixture_init(&f, BREAKER_ORDER_RETRY_OUTSIDE_BREAKER);
    breaker_result res = run_call(f.ex, &f.call);
    assert_int_equal(res.kind, BREAKER_RESULT_SUCCEEDED);
    assert_false(res.fallback_ran);

    /* The dependency fails: served from the cache, reported as a fallback
     * of a failure, with the dependency's error kept. */
    f.svc.dep.answer = BREAKER_FAILURE;
    f.svc.dep.error = 503;
    fake_clock_advance(&f.clock, 2 * SEC);
    res = run_call(f.ex, &f.call);
    assert_int_equal(res.kind, BREAKER_RESULT_FALLBACK);
    assert_int_equal(res.fallback_of, BREAKER_RESULT_FAILED);
    assert_int_equal(res.error, 503);
    assert_int_equal(res.fallback_age_ns, 2 * SEC);
    assert_int_equal(f.target.len, 4);
    assert_memory_equal(f.buf, "good", 4);
    (void)run_call(f.ex, &f.call);
    (void)run_call(f.ex, &f.call);
    assert_int_equal(breaker_get_state(f.b), BREAKER_OPEN);

    /* Open: refused locally, the cache answers, and the result says so. */
    fake_clock_advance(&f.clock, 5 * SEC);
    unsigned calls = f.svc.dep.calls;
    res = run_call(f.ex, &f.call);
    assert_int_equal(res.kind, BREAKER_RESULT_FALLBACK);
    assert_int_equal(res.fallback_of, BREAKER_RESULT_REFUSED);
    assert_int_equal(res.layer, BREAKER_LAYER_BREAKER);
    assert_int_equal(res.status, BREAKER_REJECTED_OPEN);
    assert_int_equal(res.fallback_age_ns, 7 * SEC);
    assert_int_equal(f.svc.dep.calls, calls);
    breaker_executor_stats st = exec_stats(f.ex);
    assert_int_equal(st.fallbacks, 4);
    assert_int_equal(st.refused_breaker, 1);
    assert_int_equal(st.succeeded, 1);
    fixture_fini(&f);
}

static void executor_reports_refusal_when_cached_value_is_too_stale(void **state) {
    (void)state;
    struct fixture f;
    fixture_init(&f, BREAKER_ORDER_BREAKER_OUTSIDE_RETRY);
    (void)run_call(f.ex, &f.call); /* caches "good" */
    assert_int_equal(breaker_force_open(f.b), BREAKER_OK);
    fake_clock_advance(&f.clock, 31 * SEC);
    breaker_result res = run_call(f.ex, &f.call);
    assert_int_equal(res.kind, BREAKER_RESULT_REFUSED);
    assert_int_equal(res.layer, BREAKER_LAYER_BREAKER);
    assert_int_equal(res.retry_after_ns, UINT64_MAX); /* forced open: retry will not help */
    assert_true(res.fallback_ran);
    assert_int_equal(res.fallback_status, BREAKER_NOT_FOUND);
    assert_int_equal(exec_stats(f.ex).fallbacks, 0);
    fixture_fini(&f);
}

static int counting_fallback(void *ctx, const breaker_result *why, uint64_t *age_ns) {
    (void)why;
    (void)age_ns;
    (*(unsigned *)ctx)++;
    return BREAKER_OK;
}

static void fallback_never_replaces_success_or_cancellation(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    struct fake_sleep sl = {.clock = &clock};
    struct dependency dep = {.clock = &clock, .answer = BREAKER_SUCCESS};
    breaker_executor_config cfg;
    exec_config(&cfg, &clock, &sl);
    breaker_executor *ex = make_executor(&cfg);
    unsigned ran = 0;
    breaker_call call = idempotent_call(&dep);
    call.fallback = counting_fallback;
    call.fallback_ctx = &ran;
    assert_int_equal(run_call(ex, &call).kind, BREAKER_RESULT_SUCCEEDED);
    dep.answer = BREAKER_CANCELLED;
    assert_int_equal(run_call(ex, &call).kind, BREAKER_RESULT_CANCELLED);
    assert_int_equal(ran, 0);
    dep.answer = BREAKER_FAILURE;
    breaker_result res = run_call(ex, &call);
    assert_int_equal(res.kind, BREAKER_RESULT_FALLBACK);
    assert_int_equal(res.fallback_of, BREAKER_RESULT_FAILED);
    assert_int_equal(res.fallback_age_ns, 0);
    assert_int_equal(ran, 1);
    breaker_executor_destroy(ex);
}

/* The ready-made cache fallback has no default cache: without one it
 * declines with EINVAL, and the executor keeps the failure and says why. */
static void cache_fallback_without_a_cache_declines_with_einval(void **state) {
    (void)state;
    breaker_result why = {.kind = BREAKER_RESULT_FAILED};
    uint64_t age = 0;
    assert_int_equal(breaker_cache_fallback(NULL, &why, &age), BREAKER_EINVAL);
    breaker_cache_target no_cache = {0};
    assert_int_equal(breaker_cache_fallback(&no_cache, &why, &age), BREAKER_EINVAL);

    struct fake_clock clock = {0};
    struct fake_sleep sl = {.clock = &clock};
    struct dependency dep = {.clock = &clock, .answer = BREAKER_FAILURE, .error = 503};
    breaker_executor_config cfg;
    exec_config(&cfg, &clock, &sl);
    cfg.retry.max_attempts = 1;
    breaker_executor *ex = make_executor(&cfg);
    breaker_call call = idempotent_call(&dep);
    call.fallback = breaker_cache_fallback;
    call.fallback_ctx = &no_cache;
    breaker_result res = run_call(ex, &call);
    assert_int_equal(res.kind, BREAKER_RESULT_FAILED);
    assert_true(res.fallback_ran);
    assert_int_equal(res.fallback_status, BREAKER_EINVAL);
    breaker_executor_destroy(ex);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(empty_cache_serves_nothing),
        cmocka_unit_test(stale_value_is_served_with_its_age),
        cmocka_unit_test(value_past_max_staleness_is_refused),
        cmocka_unit_test(sizes_are_checked),
        cmocka_unit_test(cache_null_config_takes_the_defaults),
        cmocka_unit_test(cache_validation_names_the_field_and_its_range),
        cmocka_unit_test(cache_config_init_clears_the_whole_struct),
        cmocka_unit_test(executor_serves_cached_value_when_refused_and_reports_it),
        cmocka_unit_test(executor_reports_refusal_when_cached_value_is_too_stale),
        cmocka_unit_test(fallback_never_replaces_success_or_cancellation),
        cmocka_unit_test(cache_fallback_without_a_cache_declines_with_einval),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
