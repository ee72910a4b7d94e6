/* SPDX-License-Identifier: MIT */
/*
 * test_export_prometheus.c - the Prometheus exposition of a registry with a
 * breaker in every state, validated by promtool (the Prometheus project's
 * own checker, `promtool check metrics`: syntax and naming lint).
 */
#define _GNU_SOURCE /* mkstemp, fdopen */
#include "test_util.h"

#include <breaker/compose.h>
#include <breaker/registry.h>

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef BREAKER_PROMTOOL
#define BREAKER_PROMTOOL "promtool"
#endif

static char text[256 * 1024];

/* Run promtool on `body`; @return its exit status, its report in `report`. */
static int promtool_check(const char *body, char *report, size_t report_len) {
    char path[] = "/tmp/breaker-promtool-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fputs(body, f);
    fclose(f);
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "'%s' check metrics < '%s' 2>&1", BREAKER_PROMTOOL, path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(report, 1, report_len - 1, p);
    report[n] = '\0';
    int status = pclose(p);
    unlink(path);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

/* promtool finds nothing wrong in `body` (else the test fails with its
 * report and the body). */
static void promtool_accepts(const char *body) {
    char report[4096];
    int status = promtool_check(body, report, sizeof(report));
    if (status != 0) fail_msg("promtool exit %d:\n%s\n---\n%s", status, report, body);
}

static breaker *get(breaker_registry *reg, const char *name) {
    breaker *b = NULL;
    assert_int_equal(breaker_registry_get(reg, name, &b), BREAKER_OK);
    return b;
}

static void trip(breaker *b) {
    for (int i = 0; i < 3; i++)
        call_ok(b, BREAKER_FAILURE);
}

struct world {
    struct fake_clock clock;
    breaker_registry *reg;
    breaker *b[12];
    int n;
    breaker_permit probe;
    breaker_permit second_probe;
};

/* Register `name` with the registry's template changed by `tune`. */
static void override(breaker_registry *reg, const breaker_registry_config *rc, const char *name,
                     void (*tune)(breaker_config *)) {
    breaker_config cfg = rc->defaults;
    tune(&cfg);
    char msg[200] = "";
    if (breaker_registry_set_config(reg, name, &cfg, msg, sizeof(msg)) != BREAKER_OK)
        fail_msg("override %s: %s", name, msg);
}

static void ramp_60s(breaker_config *cfg) { cfg->ramp_ns = 60 * SEC; }
static void two_probes(breaker_config *cfg) {
    cfg->half_open_max_probes = 2;
    cfg->half_open_successes = 2;
}

/* closed (with traffic), open (waiting), open awaiting a probe, half_open
 * (a probe in flight), half_open with one of two probes succeeded, closed and
 * ramping up after a recovery, forced_open, forced_closed, and a flapping
 * one, in `w`, which is zeroed first. */
static void build_world(struct world *w) {
    memset(w, 0, sizeof(*w));
    breaker_registry_config rc;
    breaker_registry_config_init(&rc);
    test_config(&rc.defaults, &w->clock, NULL);
    rc.defaults.trip = BREAKER_TRIP_CONSECUTIVE;
    rc.defaults.failure_threshold = 3;
    rc.defaults.open_ns = 10 * SEC;
    rc.defaults.half_open_successes = 1;
    rc.defaults.slow_call_ns = 1 * SEC;
    rc.flap_threshold = 2;
    rc.clock = fake_clock_read;
    rc.clock_ctx = &w->clock;
    assert_int_equal(breaker_registry_create(&rc, &w->reg), BREAKER_OK);
    breaker_registry *reg = w->reg;
    override(reg, &rc, "orders.create", ramp_60s);
    override(reg, &rc, "ledger.post", two_probes);

    breaker *flapping = get(reg, "shipping.quote");
    trip(flapping);
    fake_clock_advance(&w->clock, 10 * SEC);
    call_ok(flapping, BREAKER_SUCCESS); /* 3 transitions > 2 */

    breaker *awaiting = get(reg, "inventory.lookup");
    trip(awaiting);
    breaker *half = get(reg, "payments.refund");
    trip(half);
    fake_clock_advance(&w->clock, 11 * SEC); /* both waits are over */
    assert_int_equal(breaker_acquire(half, &w->probe), BREAKER_OK);

    /* Recovered into a ramp at 10% of calls: of 25 calls at once, two are
     * admitted (the 11th and the 21st) and 23 refused. */
    breaker *ramping = get(reg, "orders.create");
    trip(ramping);
    fake_clock_advance(&w->clock, 10 * SEC);
    call_ok(ramping, BREAKER_SUCCESS); /* the probe closes it into the ramp */
    int ramp_admitted = 0;
    for (int i = 0; i < 25; i++) {
        breaker_permit p;
        int got = breaker_acquire(ramping, &p);
        if (got == BREAKER_OK) {
            ramp_admitted++;
            assert_int_equal(breaker_complete(ramping, &p, BREAKER_SUCCESS), BREAKER_OK);
        } else {
            assert_int_equal(got, BREAKER_REJECTED_RAMP);
        }
    }
    assert_int_equal(ramp_admitted, 2);

    /* Half-open with two probes: one succeeded, one still in flight. */
    breaker *two = get(reg, "ledger.post");
    trip(two);
    fake_clock_advance(&w->clock, 10 * SEC);
    breaker_permit first;
    assert_int_equal(breaker_acquire(two, &first), BREAKER_OK);
    assert_int_equal(breaker_acquire(two, &w->second_probe), BREAKER_OK);
    assert_int_equal(breaker_complete(two, &first, BREAKER_SUCCESS), BREAKER_OK);

    breaker *closed = get(reg, "payments.charge");
    breaker_permit p;
    call_ok(closed, BREAKER_SUCCESS);
    call_ok(closed, BREAKER_FAILURE);
    assert_int_equal(breaker_acquire(closed, &p), BREAKER_OK);
    fake_clock_advance(&w->clock, 2 * SEC);
    assert_int_equal(breaker_complete(closed, &p, BREAKER_SUCCESS), BREAKER_OK); /* slow */
    assert_int_equal(breaker_complete(closed, &p, BREAKER_SUCCESS), BREAKER_ALREADY_SETTLED);
    assert_int_equal(breaker_acquire(closed, &p), BREAKER_OK);
    assert_int_equal(breaker_complete(closed, &p, BREAKER_CANCELLED), BREAKER_OK);

    breaker *open = get(reg, "search.index");
    trip(open);
    breaker_permit refused;
    assert_int_equal(breaker_acquire(open, &refused), BREAKER_REJECTED_OPEN);

    breaker *forced_open = get(reg, "email.send");
    assert_int_equal(breaker_force_open(forced_open), BREAKER_OK);
    breaker *forced_closed = get(reg, "audit.log");
    assert_int_equal(breaker_force_closed(forced_closed), BREAKER_OK);

    breaker *all[] = {flapping, awaiting, half,        ramping,      two,
                      closed,   open,     forced_open, forced_closed};
    w->n = 9;
    memcpy(w->b, all, sizeof(all));
}

static void destroy_world(struct world *w) {
    for (int i = 0; i < w->n; i++)
        assert_int_equal(breaker_registry_release(w->reg, w->b[i]), BREAKER_OK);
    breaker_registry_destroy(w->reg);
}

static void expect_line(const char *line) {
    char needle[512];
    snprintf(needle, sizeof(needle), "\n%s\n", line);
    if (strstr(text, needle) == NULL) fail_msg("missing line: %s\n---\n%s", line, text);
}

static void promtool_accepts_a_registry_with_breakers_in_every_state(void **state) {
    (void)state;
    static struct world w;
    build_world(&w);
    size_t len = 0;
    assert_int_equal(breaker_registry_export_prometheus(w.reg, text, sizeof(text), &len),
                     BREAKER_OK);
    assert_int_equal(len, strlen(text));

    promtool_accepts(text);

    /* One state series per breaker, valued by enum breaker_state. */
    expect_line("breaker_state{breaker=\"payments.charge\"} 0");
    expect_line("breaker_state{breaker=\"search.index\"} 1");
    expect_line("breaker_state{breaker=\"payments.refund\"} 2");
    expect_line("breaker_state{breaker=\"email.send\"} 3");
    expect_line("breaker_state{breaker=\"audit.log\"} 4");
    assert_null(strstr(text, "breaker_state{breaker=\"payments.charge\",state="));
    expect_line("breaker_calls_total{breaker=\"payments.charge\",outcome=\"success\"} 2");
    expect_line("breaker_calls_total{breaker=\"payments.charge\",outcome=\"failure\"} 1");
    expect_line("breaker_calls_total{breaker=\"payments.charge\",outcome=\"ignored\"} 1");
    expect_line("breaker_cancelled_calls_total{breaker=\"payments.charge\"} 1");
    expect_line("breaker_slow_calls_total{breaker=\"payments.charge\"} 1");
    expect_line("breaker_duplicate_completions_total{breaker=\"payments.charge\"} 1");
    expect_line("breaker_rejected_calls_total{breaker=\"search.index\",reason=\"open\"} 1");
    expect_line(
        "breaker_transitions_total{breaker=\"search.index\",from=\"closed\",to=\"open\"} 1");
    expect_line(
        "breaker_transitions_total{breaker=\"search.index\",from=\"half_open\",to=\"closed\"} 0");
    expect_line("breaker_transitions_total{breaker=\"email.send\",from=\"closed\","
                "to=\"forced_open\"} 1");
    expect_line("breaker_probes_in_flight{breaker=\"payments.refund\"} 1");
    expect_line("breaker_probes_total{breaker=\"shipping.quote\",result=\"success\"} 1");
    expect_line("breaker_next_probe_seconds{breaker=\"search.index\"} 10.000000000");
    expect_line("breaker_next_probe_seconds{breaker=\"email.send\"} +Inf");
    expect_line("breaker_next_probe_seconds{breaker=\"inventory.lookup\"} 0.000000000");
    expect_line("breaker_open_awaiting_probe{breaker=\"inventory.lookup\"} 1");
    expect_line("breaker_open_awaiting_probe{breaker=\"search.index\"} 0");
    expect_line("breaker_flapping{breaker=\"shipping.quote\"} 1");
    expect_line("breaker_flapping{breaker=\"payments.charge\"} 0");
    expect_line("breaker_state_seconds_total{breaker=\"shipping.quote\",state=\"open\"} "
                "10.000000000");
    /* Forced states' seconds only for breakers an operator has forced. */
    expect_line("breaker_state_seconds_total{breaker=\"email.send\",state=\"forced_open\"} "
                "0.000000000");
    assert_null(strstr(text, "breaker_state_seconds_total{breaker=\"email.send\","
                             "state=\"forced_closed\"}"));
    assert_null(strstr(text, "breaker_state_seconds_total{breaker=\"payments.charge\","
                             "state=\"forced_open\"}"));
    /* The ramp: refusals by their own reason, the share admitted now (10% at
     * the close, 28% twelve seconds into a 60 s ramp), 1 when closed, 0 when
     * refusing. */
    breaker_stats st;
    assert_int_equal(breaker_stats_get(w.b[3], &st), BREAKER_OK);
    assert_int_equal(st.rejected_ramp, 23);
    expect_line("breaker_rejected_calls_total{breaker=\"orders.create\",reason=\"ramp\"} 23");
    expect_line("breaker_rejected_calls_total{breaker=\"payments.charge\",reason=\"ramp\"} 0");
    expect_line("breaker_ramp_share{breaker=\"orders.create\"} 0.280000");
    expect_line("breaker_ramp_share{breaker=\"payments.charge\"} 1.000000");
    expect_line("breaker_ramp_share{breaker=\"audit.log\"} 1.000000");
    expect_line("breaker_ramp_share{breaker=\"search.index\"} 0.000000");
    /* Progress of a recovery: one of the two successes needed. */
    expect_line("breaker_half_open_successes{breaker=\"ledger.post\"} 1");
    expect_line("breaker_probes_in_flight{breaker=\"ledger.post\"} 1");
    expect_line("breaker_half_open_successes{breaker=\"payments.refund\"} 0");
    /* The configuration next to the counters: the consecutive policy shows
     * its threshold and no window labels; a window's minimum is 0 there. */
    expect_line("breaker_config_info{breaker=\"payments.charge\",trip=\"consecutive\","
                "failure_threshold=\"3\",slow_call_seconds=\"1\",open_seconds=\"10\","
                "open_max_seconds=\"300\",half_open_max_probes=\"1\","
                "half_open_successes=\"1\",probe_timeout_seconds=\"30\","
                "ramp_seconds=\"0\"} 1");
    assert_non_null(strstr(text, "breaker_config_info{breaker=\"orders.create\","));
    assert_non_null(strstr(text, "ramp_seconds=\"60\"} 1\n"));
    expect_line("breaker_window_min_calls{breaker=\"payments.charge\"} 0");
    expect_line("breaker_failure_rate_threshold{breaker=\"payments.charge\"} 0.000000");
    expect_line("breaker_slow_call_rate_threshold{breaker=\"payments.charge\"} 0.000000");
    char build[128];
    snprintf(build, sizeof(build), "breaker_build_info{version=\"%s\"} 1",
             breaker_version_string());
    expect_line(build);
    expect_line("breaker_registry_breakers 9");
    expect_line("breaker_registry_created_total 9");
    /* Sorted by name: audit.log's series come first in each family. */
    assert_true(strstr(text, "breaker_state{breaker=\"audit.log\"") <
                strstr(text, "breaker_state{breaker=\"email.send\""));
    destroy_world(&w);
}

static void promtool_rejects_broken_exposition_so_the_check_can_fail(void **state) {
    (void)state;
    char report[4096];
    /* A counter without _total (a lint error) and a torn label set. */
    assert_int_not_equal(promtool_check("# HELP x_calls c\n# TYPE x_calls counter\nx_calls 1\n",
                                        report, sizeof(report)),
                         0);
    assert_int_not_equal(promtool_check("x{breaker=\"a} 1\n", report, sizeof(report)), 0);
}

static void a_small_buffer_gets_enospc_and_the_size_it_needs(void **state) {
    (void)state;
    static struct world w;
    build_world(&w);
    char small[64];
    size_t need = 0;
    assert_int_equal(breaker_registry_export_prometheus(w.reg, small, sizeof(small), &need),
                     BREAKER_ENOSPC);
    assert_string_equal(small, "");
    assert_true(need > sizeof(small));
    char *exact = malloc(need);
    size_t len = 0;
    assert_int_equal(breaker_registry_export_prometheus(w.reg, exact, need, &len), BREAKER_OK);
    assert_int_equal(len + 1, need);
    assert_int_equal(strlen(exact), len);
    assert_int_equal(breaker_registry_export_prometheus(w.reg, exact, need - 1, &len),
                     BREAKER_ENOSPC);
    free(exact);
    assert_int_equal(breaker_registry_export_prometheus(w.reg, NULL, 0, &len), BREAKER_ENOSPC);
    assert_int_equal(len, need);
    destroy_world(&w);
}

static void an_empty_registry_exports_only_its_own_valid_metrics(void **state) {
    (void)state;
    breaker_registry *reg = NULL;
    assert_int_equal(breaker_registry_create(NULL, &reg), BREAKER_OK);
    assert_int_equal(breaker_registry_export_prometheus(reg, text, sizeof(text), NULL), BREAKER_OK);
    promtool_accepts(text);
    assert_null(strstr(text, "breaker_state"));
    assert_non_null(strstr(text, "\nbreaker_registry_breakers 0\n"));
    breaker_registry_destroy(reg);
}

/* Export `reg` and count the sample lines (not HELP or TYPE) that carry
 * `label`; those that name no breaker (the registry's own, with or without
 * labels) in `*registry_wide`. */
static int series_of(breaker_registry *reg, const char *label, int *registry_wide) {
    assert_int_equal(breaker_registry_export_prometheus(reg, text, sizeof(text), NULL), BREAKER_OK);
    int per_breaker = 0;
    *registry_wide = 0;
    for (const char *line = text; *line != '\0';) {
        const char *end = strchr(line, '\n');
        size_t n = end != NULL ? (size_t)(end - line) : strlen(line);
        if (n > 0 && line[0] != '#') {
            const char *brace = memchr(line, '{', n);
            if (brace == NULL || strncmp(brace + 1, "breaker=", 8) != 0)
                (*registry_wide)++;
            else if (strncmp(brace + 1, label, strlen(label)) == 0)
                per_breaker++;
        }
        line += n + (end != NULL);
    }
    return per_breaker;
}

/* A registry on `clock` whose breakers open on 3 failures in a row and
 * close on one successful probe; `rc` its configuration. */
static breaker_registry *probing_registry(struct fake_clock *clock, breaker_registry_config *rc) {
    breaker_registry_config_init(rc);
    test_config(&rc->defaults, clock, NULL);
    rc->defaults.trip = BREAKER_TRIP_CONSECUTIVE;
    rc->defaults.failure_threshold = 3;
    rc->defaults.half_open_successes = 1;
    rc->clock = fake_clock_read;
    rc->clock_ctx = clock;
    breaker_registry *reg = NULL;
    assert_int_equal(breaker_registry_create(rc, &reg), BREAKER_OK);
    return reg;
}

/* The histograms on top of the 39 (docs/operating.md, section 6): a
 * breaker that has probed exports the probe durations' 64 more, and one
 * that times its calls (slow_call_ns set) the call durations' 32 more:
 * 103 for every breaker that ever recovered, 135 with both. */
static void a_breaker_that_probed_exports_103_series(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker_registry_config rc;
    breaker_registry *reg = probing_registry(&clock, &rc);
    breaker *b = get(reg, "payments.charge");
    const char *label = "breaker=\"payments.charge\"";
    int wide = 0;
    trip(b);
    assert_int_equal(series_of(reg, label, &wide), 39);
    fake_clock_advance(&clock, rc.defaults.open_ns);
    call_ok(b, BREAKER_SUCCESS); /* the probe closes it */
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    assert_int_equal(series_of(reg, label, &wide), 39 + 64);
    assert_int_equal(breaker_registry_release(reg, b), BREAKER_OK);

    breaker_config timed = rc.defaults;
    timed.slow_call_ns = SEC;
    char msg[200] = "";
    if (breaker_registry_set_config(reg, "timed", &timed, msg, sizeof(msg)) != BREAKER_OK)
        fail_msg("override: %s", msg);
    b = get(reg, "timed");
    label = "breaker=\"timed\"";
    call_ok(b, BREAKER_SUCCESS);
    assert_int_equal(series_of(reg, label, &wide), 39 + 32);
    trip(b);
    fake_clock_advance(&clock, rc.defaults.open_ns);
    call_ok(b, BREAKER_SUCCESS);
    assert_int_equal(series_of(reg, label, &wide), 39 + 32 + 64);
    assert_int_equal(breaker_registry_release(reg, b), BREAKER_OK);
    breaker_registry_destroy(reg);
}

/* The series budget docs/observability.md states: 39 per breaker and 6 for
 * the registry, whatever the breaker's state; an operator's force and reset
 * add their transition pairs and the forced state's seconds, a timed open
 * its 2 counts, shadow mode its 6 counters. A new series
 * changes these numbers on purpose, together with the documentation. (34
 * and 5 before the configuration info, the window minimum, the two
 * thresholds and the build info; 38 before breaker_shadow.) */
static void one_breaker_exports_39_series_and_the_registry_6(void **state) {
    (void)state;
    breaker_registry *reg = NULL;
    assert_int_equal(breaker_registry_create(NULL, &reg), BREAKER_OK);
    breaker *b = get(reg, "payments.charge");
    const char *label = "breaker=\"payments.charge\"";
    int wide = 0;
    assert_int_equal(series_of(reg, label, &wide), 39);
    assert_int_equal(wide, 6);
    for (int i = 0; i < 40 && breaker_get_state(b) == BREAKER_CLOSED; i++)
        call_ok(b, BREAKER_FAILURE); /* open: the same series */
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    assert_int_equal(series_of(reg, label, &wide), 39);

    assert_int_equal(breaker_force_open(b), BREAKER_OK);
    /* + open -> forced_open, and forced_open's seconds */
    assert_int_equal(series_of(reg, label, &wide), 39 + 2);
    assert_int_equal(breaker_reset(b), BREAKER_OK);
    assert_int_equal(series_of(reg, label, &wide), 39 + 3); /* + forced_open -> closed */
    assert_int_equal(wide, 6);
    /* + closed -> open... no: the pair closed -> open is always there; a
     * timed open adds its two counts (issue 25) */
    assert_int_equal(breaker_open_for(b, SEC, BREAKER_REASON_OPERATOR), BREAKER_OK);
    assert_int_equal(series_of(reg, label, &wide), 39 + 3 + 2);
    assert_non_null(strstr(text, "breaker_timed_opens_total{breaker=\"payments.charge\","
                                 "reason=\"operator\"} 1\n"));
    /* shadow mode: its four would-reject reasons and two outcomes */
    assert_int_equal(breaker_set_shadow(b, 1), BREAKER_OK);
    assert_int_equal(series_of(reg, label, &wide), 39 + 3 + 2 + 6);
    assert_non_null(strstr(text, "breaker_shadow{breaker=\"payments.charge\"} 1\n"));
    assert_int_equal(breaker_registry_release(reg, b), BREAKER_OK);
    breaker_registry_destroy(reg);
}

/* Probe durations are exported for a breaker that does not time its calls
 * (slow_call_ns 0), by result, IGNORED probes with a label of their own; the
 * JSON report carries the same counts. A breaker that never probed adds no
 * series. (Before: no probe durations at all, and none without slow_call_ns.) */
static void probe_durations_are_exported_by_result_without_slow_call_timing(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker_registry_config rc;
    breaker_registry *reg = probing_registry(&clock, &rc);
    breaker *b = get(reg, "search.query");
    breaker *quiet = get(reg, "audit.log");
    trip(b);
    fake_clock_advance(&clock, breaker_retry_after_ns(b));
    breaker_permit p;
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
    fake_clock_advance(&clock, 3 * MS);
    assert_int_equal(breaker_complete(b, &p, BREAKER_IGNORED), BREAKER_OK);
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
    fake_clock_advance(&clock, 400 * MS);
    assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_OK);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    assert_int_equal(breaker_registry_export_prometheus(reg, text, sizeof(text), NULL), BREAKER_OK);
    expect_line("# TYPE breaker_probe_duration_seconds histogram");
    expect_line("breaker_probe_duration_seconds_bucket{breaker=\"search.query\",result=\"ignored\","
                "le=\"0.0025\"} 0");
    expect_line("breaker_probe_duration_seconds_bucket{breaker=\"search.query\",result=\"ignored\","
                "le=\"0.005\"} 1");
    expect_line("breaker_probe_duration_seconds_bucket{breaker=\"search.query\",result=\"success\","
                "le=\"0.5\"} 1");
    expect_line("breaker_probe_duration_seconds_sum{breaker=\"search.query\",result=\"success\"} "
                "0.400000000");
    expect_line(
        "breaker_probe_duration_seconds_count{breaker=\"search.query\",result=\"failure\"} 0");
    expect_line(
        "breaker_probe_duration_seconds_count{breaker=\"search.query\",result=\"stale\"} 0");
    assert_null(strstr(text, "breaker_probe_duration_seconds_count{breaker=\"audit.log\""));
    assert_null(strstr(text, "breaker_call_duration_seconds"));
    promtool_accepts(text);
    char *json = NULL;
    assert_int_equal(breaker_registry_export_json_alloc(reg, &json, NULL), BREAKER_OK);
    assert_non_null(strstr(json, "\"probe_durations\":{\"success\":{\"buckets\":[0,0,0,0,0,0,0,0,1,"
                                 "0,0,0,0,0],\"count\":1,\"sum_seconds\":0.400000000}"));
    assert_non_null(
        strstr(json, "\"ignored\":{\"buckets\":[0,0,1,0,0,0,0,0,0,0,0,0,0,0],\"count\":1"));
    free(json);
    assert_int_equal(breaker_registry_release(reg, b), BREAKER_OK);
    assert_int_equal(breaker_registry_release(reg, quiet), BREAKER_OK);
    breaker_registry_destroy(reg);
}

/* The allocating variant writes, in one call and without a retry loop, the
 * text the buffer variant writes into a buffer of the right size. */
static void the_alloc_variant_writes_the_same_text_in_one_call(void **state) {
    (void)state;
    static struct world w;
    build_world(&w);
    size_t len = 0;
    assert_int_equal(breaker_registry_export_prometheus(w.reg, text, sizeof(text), &len),
                     BREAKER_OK);
    char *got = NULL;
    size_t got_len = 1;
    assert_int_equal(breaker_registry_export_prometheus_alloc(w.reg, &got, &got_len), BREAKER_OK);
    assert_non_null(got);
    assert_int_equal(got_len, len);
    assert_int_equal(strlen(got), got_len);
    assert_string_equal(got, text);
    free(got);
    /* `len` may be NULL, as in the buffer variant. */
    assert_int_equal(breaker_registry_export_prometheus_alloc(w.reg, &got, NULL), BREAKER_OK);
    assert_string_equal(got, text);
    free(got);
    destroy_world(&w);
}

static int noop_sleep(void *ctx, uint64_t ns) {
    fake_clock_advance(ctx, ns);
    return 0;
}

static enum breaker_outcome failing_op(void *ctx, breaker_attempt *a) {
    (void)ctx;
    (void)a;
    return BREAKER_FAILURE;
}

/* A bulkhead, a retry budget and an executor guarding one dependency, with
 * some traffic through them. */
struct kit {
    struct fake_clock clock;
    breaker *b;
    breaker_bulkhead *bh;
    breaker_retry_budget *rb;
    breaker_executor *ex;
};

static void build_kit(struct kit *k) {
    breaker_config cfg;
    test_config(&cfg, &k->clock, NULL);
    cfg.trip = BREAKER_TRIP_CONSECUTIVE;
    cfg.failure_threshold = 100;
    k->b = make_breaker(&cfg);
    breaker_bulkhead_config bc;
    breaker_bulkhead_config_init(&bc);
    bc.max_concurrent = 4;
    assert_int_equal(breaker_bulkhead_create(&bc, &k->bh), BREAKER_OK);
    breaker_retry_budget_config rc;
    breaker_retry_budget_config_init(&rc);
    rc.ratio = 0;
    rc.min_retries = 1; /* one retry per window, then refusals */
    rc.clock = fake_clock_read;
    rc.clock_ctx = &k->clock;
    assert_int_equal(breaker_retry_budget_create(&rc, &k->rb), BREAKER_OK);
    breaker_executor_config ec;
    breaker_executor_config_init(&ec);
    ec.b = k->b;
    ec.bulkhead = k->bh;
    ec.budget = k->rb;
    ec.retry.max_attempts = 2;
    ec.retry.jitter = BREAKER_JITTER_NONE;
    ec.clock = fake_clock_read;
    ec.clock_ctx = &k->clock;
    ec.sleep = noop_sleep;
    ec.sleep_ctx = &k->clock;
    assert_int_equal(breaker_executor_create(&ec, &k->ex), BREAKER_OK);
    /* Two failing idempotent requests: the first retries once (the budget's
     * one retry), the second's retry is refused by the budget. */
    breaker_call call = {.op = failing_op, .idempotent = true};
    breaker_result res;
    for (int i = 0; i < 2; i++)
        assert_int_equal(breaker_executor_run(k->ex, &call, &res), BREAKER_OK);
    /* One slot held now, by a caller outside the executor. */
    assert_int_equal(breaker_bulkhead_try_acquire(k->bh), BREAKER_OK);
}

static void destroy_kit(struct kit *k) {
    assert_int_equal(breaker_bulkhead_release(k->bh), BREAKER_OK);
    breaker_executor_destroy(k->ex);
    breaker_retry_budget_destroy(k->rb);
    breaker_bulkhead_destroy(k->bh);
    breaker_destroy(k->b);
}

/* Count the sample lines of `body` that start with `prefix`. */
static int samples_starting(const char *body, const char *prefix) {
    int count = 0;
    for (const char *line = body; *line != '\0';) {
        const char *end = strchr(line, '\n');
        size_t n = end != NULL ? (size_t)(end - line) : strlen(line);
        if (n > 0 && line[0] != '#' && strncmp(line, prefix, strlen(prefix)) == 0) count++;
        line += n + (end != NULL);
    }
    return count;
}

static void
compose_objects_export_valid_series_that_follow_the_registry_in_one_scrape(void **state) {
    (void)state;
    static struct kit k;
    memset(&k, 0, sizeof(k));
    build_kit(&k);
    breaker_registry *reg = NULL;
    assert_int_equal(breaker_registry_create(NULL, &reg), BREAKER_OK);
    breaker *rb = get(reg, "payments.charge");

    breaker_compose_metrics items[] = {
        {.name = "payments.charge", .bulkhead = k.bh, .budget = k.rb, .executor = k.ex},
        {.name = "search.index", .bulkhead = k.bh}, /* a shared bulkhead, named twice */
    };
    char *reg_text = NULL, *kit_text = NULL;
    size_t reg_len = 0, kit_len = 0;
    assert_int_equal(breaker_registry_export_prometheus_alloc(reg, &reg_text, &reg_len),
                     BREAKER_OK);
    assert_int_equal(breaker_compose_export_prometheus_alloc(items, 2, &kit_text, &kit_len),
                     BREAKER_OK);
    assert_int_equal(strlen(kit_text), kit_len);
    snprintf(text, sizeof(text), "%s%s", reg_text, kit_text);
    promtool_accepts(text);

    expect_line("breaker_bulkhead_max_concurrent{name=\"payments.charge\"} 4");
    expect_line("breaker_bulkhead_in_flight{name=\"payments.charge\"} 1");
    expect_line("breaker_bulkhead_in_flight{name=\"search.index\"} 1");
    expect_line("breaker_bulkhead_acquired_total{name=\"payments.charge\"} 3");
    expect_line("breaker_retry_budget_requests_total{name=\"payments.charge\"} 2");
    expect_line("breaker_retry_budget_retries_allowed_total{name=\"payments.charge\"} 1");
    expect_line("breaker_retry_budget_retries_refused_total{name=\"payments.charge\"} 1");
    expect_line("breaker_executor_requests_total{name=\"payments.charge\"} 2");
    expect_line("breaker_executor_attempts_total{name=\"payments.charge\"} 3");
    expect_line("breaker_executor_retries_total{name=\"payments.charge\"} 1");
    expect_line("breaker_executor_results_total{name=\"payments.charge\",result=\"failed\"} 2");
    expect_line("breaker_executor_retries_stopped_total{name=\"payments.charge\","
                "layer=\"retry_budget\"} 1");
    expect_line("breaker_executor_breaker_records_total{name=\"payments.charge\"} 3");
    /* The budget and the executor were named once: no series for the other. */
    assert_null(strstr(text, "breaker_executor_requests_total{name=\"search.index\"}"));
    /* Each family once: one HELP line although two entries have a bulkhead. */
    const char *help = "# HELP breaker_bulkhead_in_flight ";
    const char *first = strstr(text, help);
    assert_non_null(first);
    assert_null(strstr(first + 1, help));

    /* The series per object that docs/observability.md counts. */
    assert_int_equal(samples_starting(kit_text, "breaker_bulkhead_"), 7 * 2);
    assert_int_equal(samples_starting(kit_text, "breaker_retry_budget_"), 6);
    assert_int_equal(samples_starting(kit_text, "breaker_executor_"), 16);

    /* The buffer variant writes the same text, and ENOSPC says the size. */
    char small[16];
    size_t need = 0;
    assert_int_equal(breaker_compose_export_prometheus(items, 2, small, sizeof(small), &need),
                     BREAKER_ENOSPC);
    assert_int_equal(need, kit_len + 1);
    char *same = malloc(need);
    assert_non_null(same);
    assert_int_equal(breaker_compose_export_prometheus(items, 2, same, need, NULL), BREAKER_OK);
    assert_string_equal(same, kit_text);
    free(same);
    free(reg_text);
    free(kit_text);
    assert_int_equal(breaker_registry_release(reg, rb), BREAKER_OK);
    breaker_registry_destroy(reg);
    destroy_kit(&k);
}

static void compose_export_refuses_bad_names_and_series_named_twice(void **state) {
    (void)state;
    static struct kit k;
    memset(&k, 0, sizeof(k));
    build_kit(&k);
    char buf[64] = "x";
    char *out = (char *)1;
    breaker_compose_metrics bad_name[] = {{.name = "no spaces", .bulkhead = k.bh}};
    assert_int_equal(breaker_compose_export_prometheus(bad_name, 1, buf, sizeof(buf), NULL),
                     BREAKER_EINVAL);
    assert_string_equal(buf, "x"); /* nothing written */
    assert_int_equal(breaker_compose_export_prometheus_alloc(bad_name, 1, &out, NULL),
                     BREAKER_EINVAL);
    assert_null(out);
    breaker_compose_metrics no_name[] = {{.name = NULL, .executor = k.ex}};
    assert_int_equal(breaker_compose_export_prometheus(no_name, 1, buf, sizeof(buf), NULL),
                     BREAKER_EINVAL);
    /* One name twice is fine for different kinds, not for the same kind. */
    breaker_compose_metrics split[] = {{.name = "db", .bulkhead = k.bh},
                                       {.name = "db", .executor = k.ex}};
    assert_int_equal(breaker_compose_export_prometheus_alloc(split, 2, &out, NULL), BREAKER_OK);
    free(out);
    breaker_compose_metrics twice[] = {{.name = "db", .bulkhead = k.bh, .budget = k.rb},
                                       {.name = "db", .budget = k.rb}};
    assert_int_equal(breaker_compose_export_prometheus_alloc(twice, 2, &out, NULL), BREAKER_EINVAL);
    assert_int_equal(breaker_compose_export_prometheus(NULL, 1, buf, sizeof(buf), NULL),
                     BREAKER_EINVAL);
    /* An empty list is an empty text. */
    assert_int_equal(breaker_compose_export_prometheus(NULL, 0, buf, sizeof(buf), NULL),
                     BREAKER_OK);
    assert_string_equal(buf, "");
    destroy_kit(&k);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(promtool_accepts_a_registry_with_breakers_in_every_state),
        cmocka_unit_test(promtool_rejects_broken_exposition_so_the_check_can_fail),
        cmocka_unit_test(a_small_buffer_gets_enospc_and_the_size_it_needs),
        cmocka_unit_test(an_empty_registry_exports_only_its_own_valid_metrics),
        cmocka_unit_test(one_breaker_exports_39_series_and_the_registry_6),
        cmocka_unit_test(a_breaker_that_probed_exports_103_series),
        cmocka_unit_test(probe_durations_are_exported_by_result_without_slow_call_timing),
        cmocka_unit_test(the_alloc_variant_writes_the_same_text_in_one_call),
        cmocka_unit_test(
            compose_objects_export_valid_series_that_follow_the_registry_in_one_scrape),
        cmocka_unit_test(compose_export_refuses_bad_names_and_series_named_twice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
