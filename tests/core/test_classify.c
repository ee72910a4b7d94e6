/* SPDX-License-Identifier: MIT */
/*
 * test_classify.c - the classifiers follow their documented HTTP and errno
 * tables, and what a request decides (its content, its credentials, its
 * rate) can neither hold a breaker closed nor close it.
 */
#include "test_util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Each status is `want` by default, with or without Retry-After. */
static void expect_by_default(const int *statuses, size_t n, enum breaker_outcome want) {
    for (size_t i = 0; i < n; i++) {
        print_message("status %d\n", statuses[i]);
        assert_int_equal(breaker_classify_http(statuses[i]), want);
        assert_int_equal(breaker_classify_http_with(NULL, statuses[i], 1), want);
    }
}

static void http_server_errors_and_overload_are_failures(void **state) {
    (void)state;
    const int failures[] = {500, 502, 503, 504, 506, 507, 508, 511, 599, 408, 0, 99, 600, -1};
    expect_by_default(failures, COUNT(failures), BREAKER_FAILURE);
}

static void http_2xx_are_the_only_successes(void **state) {
    (void)state;
    breaker_http_policy lenient, strict;
    breaker_http_policy_init(&lenient);
    lenient.unavailable_with_retry_after = BREAKER_IGNORED;
    breaker_http_policy_init(&strict);
    strict.auth_failures = BREAKER_FAILURE;
    strict.too_many_requests = BREAKER_FAILURE;
    const breaker_http_policy *policies[] = {NULL, &lenient, &strict};
    for (int status = -1; status <= 1000; status++) {
        int want_success = status >= 200 && status <= 299;
        assert_int_equal(breaker_classify_http(status) == BREAKER_SUCCESS, want_success);
        for (size_t i = 0; i < COUNT(policies); i++)
            for (int retry_after = 0; retry_after <= 1; retry_after++)
                assert_int_equal(breaker_classify_http_with(policies[i], status, retry_after) ==
                                     BREAKER_SUCCESS,
                                 want_success);
    }
}

static void http_answers_the_request_decided_are_ignored(void **state) {
    (void)state;
    const int ignored[] = {100, 101, 103, 301, 302, 303, 304, 307, 308, 400, 401, 403, 404, 405,
                           407, 409, 410, 413, 414, 421, 422, 425, 429, 431, 451, 499, 501, 505};
    expect_by_default(ignored, COUNT(ignored), BREAKER_IGNORED);
}

static void http_defaults_are_the_null_policy_and_the_zeroed_policy(void **state) {
    (void)state;
    breaker_http_policy zeroed;
    memset(&zeroed, 0, sizeof(zeroed));
    assert_int_equal(breaker_http_policy_validate(&zeroed, NULL, 0), BREAKER_OK);
    for (int status = -1; status <= 1000; status++) {
        enum breaker_outcome want = breaker_classify_http(status);
        assert_int_equal(breaker_classify_http_with(NULL, status, 0), want);
        assert_int_equal(breaker_classify_http_with(&zeroed, status, 0), want);
        assert_int_equal(breaker_classify_http_with(&zeroed, status, 1),
                         breaker_classify_http_with(NULL, status, 1));
    }
}

/* One call whose answer is `status`, classified under `policy`.
 * @return what acquire said; an admitted call is completed. */
static int answer(breaker *b, const breaker_http_policy *policy, int status, int retry_after) {
    breaker_permit p;
    int rc = breaker_acquire(b, &p);
    if (rc == BREAKER_OK)
        assert_int_equal(
            breaker_complete(b, &p, breaker_classify_http_with(policy, status, retry_after)),
            BREAKER_OK);
    return rc;
}

static breaker_config probe_config(struct fake_clock *clock, struct event_log *log) {
    breaker_config cfg;
    test_config(&cfg, clock, log);
    cfg.trip = BREAKER_TRIP_CONSECUTIVE;
    cfg.failure_threshold = 1;
    cfg.open_ns = 10 * SEC;
    cfg.half_open_max_probes = 1;
    cfg.half_open_successes = 2;
    return cfg;
}

static void http_401_to_half_open_probes_does_not_close_the_breaker(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker_config cfg = probe_config(&clock, NULL);
    breaker *b = make_breaker(&cfg);
    assert_int_equal(answer(b, NULL, 503, 0), BREAKER_OK);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    fake_clock_advance(&clock, 10 * SEC);
    /* An expired credential: every probe is answered 401. Each frees its
     * slot (the next probe is admitted) and none counts as recovery. */
    for (int i = 0; i < 5; i++) {
        assert_int_equal(answer(b, NULL, 401, 0), BREAKER_OK);
        assert_int_equal(breaker_get_state(b), BREAKER_HALF_OPEN);
    }
    breaker_stats st = stats_of(b);
    assert_int_equal(st.probes_admitted, 5);
    assert_int_equal(st.probes_succeeded, 0);
    assert_int_equal(st.ignored, 5);
    /* Real answers still close it. */
    assert_int_equal(answer(b, NULL, 200, 0), BREAKER_OK);
    assert_int_equal(answer(b, NULL, 204, 0), BREAKER_OK);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    test_breaker_destroy(b);
}

static void http_auth_failures_policy_failure_reopens_on_a_401_probe(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    struct event_log log = {0};
    breaker_config cfg = probe_config(&clock, &log);
    breaker *b = make_breaker(&cfg);
    breaker_http_policy policy;
    breaker_http_policy_init(&policy);
    policy.auth_failures = BREAKER_FAILURE;
    const int auth[] = {401, 403, 407};
    for (size_t i = 0; i < COUNT(auth); i++)
        assert_int_equal(breaker_classify_http_with(&policy, auth[i], 0), BREAKER_FAILURE);
    assert_int_equal(answer(b, &policy, 503, 0), BREAKER_OK);
    fake_clock_advance(&clock, 10 * SEC);
    assert_int_equal(answer(b, &policy, 401, 0), BREAKER_OK);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    assert_int_equal(atomic_load(&log.count), 3);
    assert_int_equal(log.events[2].reason, BREAKER_REASON_PROBE_FAILED);
    /* The other 4xx stay ignored under this policy. */
    assert_int_equal(breaker_classify_http_with(&policy, 400, 0), BREAKER_IGNORED);
    assert_int_equal(breaker_classify_http_with(&policy, 404, 0), BREAKER_IGNORED);
    test_breaker_destroy(b);
}

/* During an outage every real call is answered 503; a client sending
 * malformed requests adds two 400s per 503. Counted as successes, the 400s
 * held the failure rate at 1/3, under the 0.5 threshold, for good. */
static void http_flood_of_400s_during_an_outage_does_not_hold_the_breaker_closed(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    struct event_log log = {0};
    breaker_config cfg;
    test_config(&cfg, &clock, &log); /* TIME_WINDOW 60 s, min_calls 20, rate 0.5 */
    breaker *b = make_breaker(&cfg);
    int calls = 0;
    for (; calls < 600 && breaker_get_state(b) == BREAKER_CLOSED; calls++) {
        assert_int_equal(answer(b, NULL, calls % 3 == 2 ? 503 : 400, 0), BREAKER_OK);
        fake_clock_advance(&clock, 10 * MS);
    }
    breaker_stats st = stats_of(b);
    print_message("after %d calls: state %s, window %" PRIu64 " calls, failure rate %.3f\n", calls,
                  breaker_state_name(st.state), st.window_calls, st.window_failure_rate);
    assert_int_equal(st.state, BREAKER_OPEN);
    assert_int_equal(calls, 60); /* the 20th 503 trips it */
    assert_int_equal(atomic_load(&log.count), 1);
    assert_int_equal(log.events[0].reason, BREAKER_REASON_FAILURE_RATE);
    assert_int_equal(log.events[0].evidence.calls, 20);
    assert_int_equal(log.events[0].evidence.failures, 20);
    assert_int_equal(st.ignored, 40);
    assert_int_equal(st.successes, 0);
    test_breaker_destroy(b);
}

/* A burst of 429s with Retry-After to a closed breaker that opens on five
 * failures in a row. @return the state it ends in. */
static enum breaker_state after_a_burst_of_429s(const breaker_http_policy *policy) {
    struct fake_clock clock = {0};
    breaker_config cfg;
    test_config(&cfg, &clock, NULL);
    cfg.trip = BREAKER_TRIP_CONSECUTIVE;
    cfg.failure_threshold = 5;
    breaker *b = make_breaker(&cfg);
    for (int n = 0; n < 10 && breaker_get_state(b) == BREAKER_CLOSED; n++)
        assert_int_equal(answer(b, policy, 429, 1), BREAKER_OK);
    enum breaker_state st = breaker_get_state(b);
    test_breaker_destroy(b);
    return st;
}

/* A probe answered 503 with Retry-After. @return the state it leaves. */
static enum breaker_state after_a_503_with_retry_after_probe(const breaker_http_policy *policy) {
    struct fake_clock clock = {0};
    breaker_config cfg = probe_config(&clock, NULL);
    breaker *b = make_breaker(&cfg);
    assert_int_equal(answer(b, policy, 503, 0), BREAKER_OK);
    fake_clock_advance(&clock, 10 * SEC);
    assert_int_equal(answer(b, policy, 503, 1), BREAKER_OK);
    enum breaker_state st = breaker_get_state(b);
    test_breaker_destroy(b);
    return st;
}

static void http_429_is_ignored_by_default_and_a_failure_on_request(void **state) {
    (void)state;
    assert_int_equal(breaker_classify_http(429), BREAKER_IGNORED);
    assert_int_equal(breaker_classify_http_with(NULL, 429, 1), BREAKER_IGNORED);
    breaker_http_policy shedding;
    breaker_http_policy_init(&shedding);
    shedding.too_many_requests = BREAKER_FAILURE;
    assert_int_equal(breaker_classify_http_with(&shedding, 429, 0), BREAKER_FAILURE);
    assert_int_equal(breaker_classify_http_with(&shedding, 429, 1), BREAKER_FAILURE);
    /* One client's burst answered 429: the shared breaker stays closed by
     * default, and opens when 429 is declared load shedding. */
    assert_int_equal(after_a_burst_of_429s(NULL), BREAKER_CLOSED);
    assert_int_equal(after_a_burst_of_429s(&shedding), BREAKER_OPEN);
}

static void http_503_with_retry_after_is_a_failure_by_default_and_ignored_on_request(void **state) {
    (void)state;
    assert_int_equal(breaker_classify_http_with(NULL, 503, 1), BREAKER_FAILURE);
    assert_int_equal(breaker_classify_http_with(NULL, 503, 0), BREAKER_FAILURE);
    breaker_http_policy throttle;
    breaker_http_policy_init(&throttle);
    throttle.unavailable_with_retry_after = BREAKER_IGNORED;
    assert_int_equal(breaker_classify_http_with(&throttle, 503, 1), BREAKER_IGNORED);
    assert_int_equal(breaker_classify_http_with(&throttle, 503, 42), BREAKER_IGNORED);
    /* Without Retry-After a 503 is an outage whatever the policy; other
     * 5xx do not read retry_after. */
    assert_int_equal(breaker_classify_http_with(&throttle, 503, 0), BREAKER_FAILURE);
    assert_int_equal(breaker_classify_http_with(&throttle, 500, 1), BREAKER_FAILURE);
    assert_int_equal(breaker_classify_http_with(&throttle, 502, 1), BREAKER_FAILURE);
    assert_int_equal(breaker_classify_http_with(&throttle, 504, 1), BREAKER_FAILURE);
    /* Behind a breaker: such a probe reopens it by default, and under the
     * throttle policy leaves it half-open, its slot free. */
    assert_int_equal(after_a_503_with_retry_after_probe(NULL), BREAKER_OPEN);
    assert_int_equal(after_a_503_with_retry_after_probe(&throttle), BREAKER_HALF_OPEN);
}

static void http_policy_init_clears_every_byte_and_sets_the_defaults(void **state) {
    (void)state;
    breaker_http_policy p, want;
    memset(&p, 0xff, sizeof(p));
    memset(&want, 0, sizeof(want));
    want.auth_failures = BREAKER_IGNORED;
    want.too_many_requests = BREAKER_IGNORED;
    want.unavailable_with_retry_after = BREAKER_FAILURE;
    breaker_http_policy_init(&p);
    assert_memory_equal(&p, &want, sizeof(p));
    assert_int_equal(breaker_http_policy_validate(&p, NULL, 0), BREAKER_OK);
}

static void http_policy_validate_names_the_field_and_its_values(void **state) {
    (void)state;
    static const char *const names[] = {"auth_failures", "too_many_requests",
                                        "unavailable_with_retry_after"};
    const int bad[] = {BREAKER_SUCCESS + 100, BREAKER_CANCELLED, -1};
    for (size_t f = 0; f < COUNT(names); f++) {
        for (size_t v = 0; v < COUNT(bad); v++) {
            breaker_http_policy p;
            breaker_http_policy_init(&p);
            enum breaker_outcome *field = f == 0   ? &p.auth_failures
                                          : f == 1 ? &p.too_many_requests
                                                   : &p.unavailable_with_retry_after;
            *field = (enum breaker_outcome)bad[v];
            char msg[160] = "";
            assert_int_equal(breaker_http_policy_validate(&p, msg, sizeof(msg)), BREAKER_EINVAL);
            print_message("%s\n", msg);
            assert_non_null(strstr(msg, names[f]));
            assert_non_null(strstr(msg, "BREAKER_IGNORED"));
            assert_non_null(strstr(msg, "BREAKER_FAILURE"));
            char got[32];
            snprintf(got, sizeof(got), "got %d", bad[v]);
            assert_non_null(strstr(msg, got));
            /* A short buffer is cut and stays terminated; no buffer is fine. */
            char small[8];
            memset(small, 'x', sizeof(small));
            assert_int_equal(breaker_http_policy_validate(&p, small, sizeof(small)),
                             BREAKER_EINVAL);
            assert_int_equal(small[sizeof(small) - 1], '\0');
            assert_int_equal(breaker_http_policy_validate(&p, NULL, 0), BREAKER_EINVAL);
            /* Used anyway, the bad field reads as its default. */
            for (int status = -1; status <= 1000; status++)
                for (int retry_after = 0; retry_after <= 1; retry_after++)
                    assert_int_equal(breaker_classify_http_with(&p, status, retry_after),
                                     breaker_classify_http_with(NULL, status, retry_after));
        }
        /* Each allowed value, and 0 for the default, passes. */
        const enum breaker_outcome good[] = {BREAKER_IGNORED, BREAKER_FAILURE, BREAKER_SUCCESS};
        for (size_t v = 0; v < COUNT(good); v++) {
            breaker_http_policy p;
            breaker_http_policy_init(&p);
            if (f == 0) p.auth_failures = good[v];
            if (f == 1) p.too_many_requests = good[v];
            if (f == 2) p.unavailable_with_retry_after = good[v];
            assert_int_equal(breaker_http_policy_validate(&p, NULL, 0), BREAKER_OK);
        }
    }
}

static void errno_table(void **state) {
    (void)state;
    const int failures[] = {ECONNREFUSED, ECONNRESET,  ECONNABORTED, ETIMEDOUT, EHOSTUNREACH,
                            ENETUNREACH,  EHOSTDOWN,   ENETDOWN,     ENETRESET, EPIPE,
                            EAGAIN,       EWOULDBLOCK, EINPROGRESS,  ENOTCONN,  EPROTO};
    for (size_t i = 0; i < COUNT(failures); i++)
        assert_int_equal(breaker_classify_errno(failures[i]), BREAKER_FAILURE);
    assert_int_equal(breaker_classify_errno(0), BREAKER_SUCCESS);
    assert_int_equal(breaker_classify_errno(ECANCELED), BREAKER_CANCELLED);
    assert_int_equal(breaker_classify_errno(EINVAL), BREAKER_IGNORED);
    assert_int_equal(breaker_classify_errno(ENOMEM), BREAKER_IGNORED);
    assert_int_equal(breaker_classify_errno(EMFILE), BREAKER_IGNORED);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(http_server_errors_and_overload_are_failures),
        cmocka_unit_test(http_2xx_are_the_only_successes),
        cmocka_unit_test(http_answers_the_request_decided_are_ignored),
        cmocka_unit_test(http_defaults_are_the_null_policy_and_the_zeroed_policy),
        cmocka_unit_test(http_401_to_half_open_probes_does_not_close_the_breaker),
        cmocka_unit_test(http_auth_failures_policy_failure_reopens_on_a_401_probe),
        cmocka_unit_test(http_flood_of_400s_during_an_outage_does_not_hold_the_breaker_closed),
        cmocka_unit_test(http_429_is_ignored_by_default_and_a_failure_on_request),
        cmocka_unit_test(http_503_with_retry_after_is_a_failure_by_default_and_ignored_on_request),
        cmocka_unit_test(http_policy_init_clears_every_byte_and_sets_the_defaults),
        cmocka_unit_test(http_policy_validate_names_the_field_and_its_values),
        cmocka_unit_test(errno_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
