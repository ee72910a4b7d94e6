/* SPDX-License-Identifier: MIT */
/*
 * test_grpc_status.c - gRPC status codes follow the table of
 * include/breaker/grpc.h: every one of the 17 codes under the default, a
 * zeroed and each non-default policy; only OK is ever a success; a bad
 * policy reads as the default; and what a caller's requests decide
 * (INVALID_ARGUMENT, NOT_FOUND, PERMISSION_DENIED) never trips a breaker
 * while UNAVAILABLE does.
 */
#include "test_util.h"

#include <breaker/grpc.h>

#include <stdio.h>

#define S BREAKER_SUCCESS
#define F BREAKER_FAILURE
#define I BREAKER_IGNORED
#define C BREAKER_CANCELLED

/* The documented table, code by code (the header's comment, written out). */
static const enum breaker_outcome want_default[BREAKER_GRPC_CODE_COUNT] = {
    S, C, F, I, F, I, I, I, I, I, I, I, I, F, F, F, I,
};

static void expect_table(const breaker_grpc_policy *p, const enum breaker_outcome *want) {
    for (int code = 0; code < BREAKER_GRPC_CODE_COUNT; code++) {
        print_message("code %d %s\n", code, breaker_grpc_code_name(code));
        assert_int_equal(breaker_classify_grpc_with(p, code), want[code]);
    }
}

static void grpc_every_code_follows_the_documented_table(void **state) {
    (void)state;
    expect_table(NULL, want_default);
    for (int code = 0; code < BREAKER_GRPC_CODE_COUNT; code++)
        assert_int_equal(breaker_classify_grpc(code), want_default[code]);
    breaker_grpc_policy p, zeroed;
    breaker_grpc_policy_init(&p);
    expect_table(&p, want_default);
    memset(&zeroed, 0, sizeof(zeroed));
    expect_table(&zeroed, want_default);
    assert_string_equal(breaker_grpc_code_name(BREAKER_GRPC_UNAVAILABLE), "UNAVAILABLE");
    assert_string_equal(breaker_grpc_code_name(BREAKER_GRPC_UNAUTHENTICATED), "UNAUTHENTICATED");
    assert_string_equal(breaker_grpc_code_name(17), "INVALID_CODE");
}

static void grpc_policy_fields_move_only_their_codes(void **state) {
    (void)state;
    enum breaker_outcome want[BREAKER_GRPC_CODE_COUNT];
    breaker_grpc_policy p;

    breaker_grpc_policy_init(&p);
    p.resource_exhausted = F;
    memcpy(want, want_default, sizeof(want));
    want[BREAKER_GRPC_RESOURCE_EXHAUSTED] = F;
    expect_table(&p, want);

    breaker_grpc_policy_init(&p);
    p.internal = I;
    p.unknown = I;
    memcpy(want, want_default, sizeof(want));
    want[BREAKER_GRPC_INTERNAL] = I;
    want[BREAKER_GRPC_UNKNOWN] = I;
    expect_table(&p, want);

    breaker_grpc_policy_init(&p);
    p.unknown = I; /* INTERNAL stays a failure */
    memcpy(want, want_default, sizeof(want));
    want[BREAKER_GRPC_UNKNOWN] = I;
    expect_table(&p, want);

    breaker_grpc_policy_init(&p);
    p.auth_failures = F;
    memcpy(want, want_default, sizeof(want));
    want[BREAKER_GRPC_PERMISSION_DENIED] = F;
    want[BREAKER_GRPC_UNAUTHENTICATED] = F;
    expect_table(&p, want);
}

static void grpc_only_ok_is_a_success_and_unknown_values_fail(void **state) {
    (void)state;
    breaker_grpc_policy all_ignored, all_failed;
    breaker_grpc_policy_init(&all_ignored);
    all_ignored.resource_exhausted = all_ignored.internal = all_ignored.unknown =
        all_ignored.auth_failures = I;
    breaker_grpc_policy_init(&all_failed);
    all_failed.resource_exhausted = all_failed.internal = all_failed.unknown =
        all_failed.auth_failures = F;
    const breaker_grpc_policy *policies[] = {NULL, &all_ignored, &all_failed};
    for (int code = -5; code <= 100; code++)
        for (size_t i = 0; i < 3; i++) {
            enum breaker_outcome got = breaker_classify_grpc_with(policies[i], code);
            assert_int_equal(got == S, code == BREAKER_GRPC_OK);
            if (code < 0 || code >= BREAKER_GRPC_CODE_COUNT) assert_int_equal(got, F);
        }
}

static void grpc_bad_policy_fields_read_as_defaults_and_are_named(void **state) {
    (void)state;
    breaker_grpc_policy p;
    breaker_grpc_policy_init(&p);
    char msg[128];
    assert_int_equal(breaker_grpc_policy_validate(&p, msg, sizeof(msg)), BREAKER_OK);
    p.internal = BREAKER_CANCELLED;
    p.resource_exhausted = (enum breaker_outcome)42;
    assert_int_equal(breaker_grpc_policy_validate(&p, msg, sizeof(msg)), BREAKER_EINVAL);
    assert_non_null(strstr(msg, "resource_exhausted"));
    assert_int_equal(breaker_grpc_policy_validate(&p, NULL, 0), BREAKER_EINVAL);
    /* Read as the defaults: neither CANCELLED nor 42 comes out. */
    expect_table(&p, want_default);
}

/* A CONSECUTIVE breaker fed one code `n` times. */
static breaker_stats feed(int code, unsigned n) {
    struct fake_clock clock = {0};
    breaker_config cfg;
    test_config(&cfg, &clock, NULL);
    cfg.trip = BREAKER_TRIP_CONSECUTIVE, cfg.failure_threshold = 3; /* the run that trips */
    breaker *b = make_breaker(&cfg);
    breaker_permit permit;
    for (unsigned i = 0; i < n; i++)
        if (breaker_acquire(b, &permit) == BREAKER_OK)
            (void)breaker_complete(b, &permit, breaker_classify_grpc(code));
    breaker_stats st = stats_of(b);
    test_breaker_destroy(b);
    return st;
}

static void grpc_request_errors_never_trip_and_unavailable_does(void **state) {
    (void)state;
    const int callers[] = {BREAKER_GRPC_INVALID_ARGUMENT,   BREAKER_GRPC_NOT_FOUND,
                           BREAKER_GRPC_PERMISSION_DENIED,  BREAKER_GRPC_UNAUTHENTICATED,
                           BREAKER_GRPC_RESOURCE_EXHAUSTED, BREAKER_GRPC_ABORTED};
    for (size_t i = 0; i < sizeof(callers) / sizeof(callers[0]); i++) {
        breaker_stats st = feed(callers[i], 50);
        assert_int_equal(st.state, BREAKER_CLOSED);
        assert_int_equal(st.ignored, 50);
        assert_int_equal(st.failures, 0);
    }
    breaker_stats st = feed(BREAKER_GRPC_UNAVAILABLE, 10);
    assert_int_equal(st.state, BREAKER_OPEN);
    assert_int_equal(st.failures, 3);
    assert_int_equal(st.admitted, 3);
    assert_int_equal(st.rejected_open, 7);
    st = feed(BREAKER_GRPC_DEADLINE_EXCEEDED, 3);
    assert_int_equal(st.state, BREAKER_OPEN);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(grpc_every_code_follows_the_documented_table),
        cmocka_unit_test(grpc_policy_fields_move_only_their_codes),
        cmocka_unit_test(grpc_only_ok_is_a_success_and_unknown_values_fail),
        cmocka_unit_test(grpc_bad_policy_fields_read_as_defaults_and_are_named),
        cmocka_unit_test(grpc_request_errors_never_trip_and_unavailable_does),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
