/* SPDX-License-Identifier: MIT */
/*
 * test_latency.c - the call-duration histogram of a timed breaker: buckets,
 * sums and outcomes as breaker_latency_get() reads them and as the
 * Prometheus export writes them (cumulative, _sum in seconds, _count).
 */
#define _POSIX_C_SOURCE 200809L
#include "breaker_fixture.h"

#include <breaker/registry.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void timed_call(breaker *b, struct fake_clock *clock, uint64_t took,
                       enum breaker_outcome o) {
    breaker_permit p;
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
    fake_clock_advance(clock, took);
    assert_int_equal(breaker_complete(b, &p, o), BREAKER_OK);
}

static void durations_land_in_their_buckets(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker_config *cfg = fixture_init_consecutive(&f, 1000 * SEC, 100);
    cfg->slow_call_ns = 30 * SEC; /* timed; nothing here is slow */
    breaker *b = fixture_create(&f);
    timed_call(b, &f.clock, 500 * 1000, BREAKER_SUCCESS); /* 0.5 ms: <= 1 ms */
    timed_call(b, &f.clock, 1 * MS, BREAKER_SUCCESS);     /* exactly on a bound: <= 1 ms */
    timed_call(b, &f.clock, 3 * MS, BREAKER_SUCCESS);     /* <= 5 ms */
    timed_call(b, &f.clock, 20 * MS, BREAKER_FAILURE);    /* <= 25 ms */
    timed_call(b, &f.clock, 2 * SEC, BREAKER_SUCCESS);    /* <= 2.5 s */
    timed_call(b, &f.clock, 20 * SEC, BREAKER_FAILURE);   /* +Inf */
    timed_call(b, &f.clock, 5 * MS, BREAKER_IGNORED);     /* not recorded */
    breaker_latency l;
    assert_int_equal(breaker_latency_get(b, &l), BREAKER_OK);
    assert_int_equal(l.upper_ns[0], 1 * MS);
    assert_int_equal(l.upper_ns[BREAKER_LATENCY_BUCKETS - 1], UINT64_MAX);
    assert_int_equal(l.success[0], 2);
    assert_int_equal(l.success[2], 1);
    assert_int_equal(l.success[10], 1);
    assert_int_equal(l.failure[4], 1);
    assert_int_equal(l.failure[13], 1);
    uint64_t total = 0;
    for (unsigned i = 0; i < BREAKER_LATENCY_BUCKETS; i++)
        total += l.success[i] + l.failure[i];
    assert_int_equal(total, 6);
    assert_int_equal(l.success_sum_ns, 500 * 1000 + 1 * MS + 3 * MS + 2 * SEC);
    assert_int_equal(l.failure_sum_ns, 20 * MS + 20 * SEC);
    fixture_destroy(&f);

    /* A breaker that does not time its calls has no histogram. */
    cfg->slow_call_ns = 0;
    b = fixture_create(&f);
    timed_call(b, &f.clock, 3 * MS, BREAKER_SUCCESS);
    assert_int_equal(breaker_latency_get(b, &l), BREAKER_NOT_FOUND);
    assert_int_equal(l.success[2], 0);
    fixture_destroy(&f);
}

static void the_export_writes_a_cumulative_histogram(void **state) {
    (void)state;
    struct fake_clock clock = {.now = 1000 * SEC};
    breaker_registry_config rc;
    breaker_registry_config_init(&rc);
    test_config(&rc.defaults, &clock, NULL);
    rc.defaults.slow_call_ns = 30 * SEC;
    rc.clock = fake_clock_read;
    rc.clock_ctx = &clock;
    breaker_registry *reg = NULL;
    assert_int_equal(breaker_registry_create(&rc, &reg), BREAKER_OK);
    breaker *b = NULL;
    assert_int_equal(breaker_registry_get(reg, "db", &b), BREAKER_OK);
    timed_call(b, &clock, 3 * MS, BREAKER_SUCCESS);
    timed_call(b, &clock, 2 * SEC, BREAKER_SUCCESS);
    timed_call(b, &clock, 20 * MS, BREAKER_FAILURE);
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(breaker_registry_export_prometheus_alloc(reg, &text, &len), BREAKER_OK);
    const char *want[] = {
        "# TYPE breaker_call_duration_seconds histogram\n",
        "breaker_call_duration_seconds_bucket{breaker=\"db\",outcome=\"success\",le=\"0.001\"} 0\n",
        "breaker_call_duration_seconds_bucket{breaker=\"db\",outcome=\"success\",le=\"0.005\"} 1\n",
        "breaker_call_duration_seconds_bucket{breaker=\"db\",outcome=\"success\",le=\"2.5\"} 2\n",
        "breaker_call_duration_seconds_bucket{breaker=\"db\",outcome=\"success\",le=\"+Inf\"} 2\n",
        "breaker_call_duration_seconds_sum{breaker=\"db\",outcome=\"success\"} 2.003000000\n",
        "breaker_call_duration_seconds_count{breaker=\"db\",outcome=\"success\"} 2\n",
        "breaker_call_duration_seconds_bucket{breaker=\"db\",outcome=\"failure\",le=\"0.01\"} 0\n",
        "breaker_call_duration_seconds_bucket{breaker=\"db\",outcome=\"failure\",le=\"0.025\"} 1\n",
        "breaker_call_duration_seconds_count{breaker=\"db\",outcome=\"failure\"} 1\n",
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        if (strstr(text, want[i]) == NULL) fail_msg("export lacks: %s", want[i]);
    /* A real consumer reads it, where one is installed (make check installs
     * promtool; the export tests require it). */
    if (access("/usr/bin/promtool", X_OK) == 0) {
        char path[] = "/tmp/breaker_latency_XXXXXX";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, len), (ssize_t)len);
        close(fd);
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "/usr/bin/promtool check metrics < %s", path);
        int status = system(cmd);
        unlink(path);
        assert_int_equal(status, 0);
    }
    free(text);
    assert_int_equal(breaker_registry_release(reg, b), BREAKER_OK);
    breaker_registry_destroy(reg);
}

static uint64_t durations_recorded(breaker *b) {
    breaker_latency l;
    assert_int_equal(breaker_latency_get(b, &l), BREAKER_OK);
    uint64_t n = 0;
    for (unsigned i = 0; i < BREAKER_LATENCY_BUCKETS; i++)
        n += l.success[i] + l.failure[i];
    return n;
}

/* A duplicate completion records no duration: a settled permit completed
 * again, or a copy of a probe's permit (its claim is in the breaker). */
static void duplicates_record_no_duration(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker_config *cfg = fixture_init_consecutive(&f, 1000 * SEC, 2);
    cfg->slow_call_ns = SEC;
    cfg->open_ns = MS;
    cfg->half_open_max_probes = 1;
    cfg->half_open_successes = 2;
    breaker *b = fixture_create(&f);
    breaker_permit p, copy;
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
    fake_clock_advance(&f.clock, 3 * MS);
    assert_int_equal(breaker_complete(b, &p, BREAKER_FAILURE), BREAKER_OK);
    /* A closed call's permit is settled in itself: completing it again. */
    assert_int_equal(breaker_complete(b, &p, BREAKER_FAILURE), BREAKER_ALREADY_SETTLED);
    assert_int_equal(durations_recorded(b), 1);
    timed_call(b, &f.clock, MS, BREAKER_FAILURE); /* opens */
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    fake_clock_advance(&f.clock, 2 * MS);
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
    assert_true(breaker_permit_is_probe(&p));
    copy = p;
    fake_clock_advance(&f.clock, 7 * MS);
    assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_OK);
    assert_int_equal(breaker_complete(b, &copy, BREAKER_SUCCESS), BREAKER_ALREADY_SETTLED);
    assert_int_equal(durations_recorded(b), 3);
    assert_int_equal(stats_of(b).duplicates, 2);
    fixture_destroy(&f);
}

/* An untimed breaker: NOT_FOUND, every count and sum zeroed, bounds given. */
static void an_untimed_breaker_has_no_histogram(void **state) {
    (void)state;
    struct breaker_fixture f;
    (void)fixture_init(&f, 1000 * SEC);
    breaker *b = fixture_create(&f);
    breaker_latency l;
    memset(&l, 0xab, sizeof(l));
    assert_int_equal(breaker_latency_get(b, &l), BREAKER_NOT_FOUND);
    for (unsigned i = 0; i < BREAKER_LATENCY_BUCKETS; i++) {
        assert_int_equal(l.success[i], 0);
        assert_int_equal(l.failure[i], 0);
        assert_true(l.upper_ns[i] > 0);
    }
    assert_int_equal(l.success_sum_ns, 0);
    assert_int_equal(l.failure_sum_ns, 0);
    fixture_destroy(&f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(durations_land_in_their_buckets),
        cmocka_unit_test(the_export_writes_a_cumulative_histogram),
        cmocka_unit_test(duplicates_record_no_duration),
        cmocka_unit_test(an_untimed_breaker_has_no_histogram),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
