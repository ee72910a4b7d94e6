/* SPDX-License-Identifier: MIT */
/*
 * test_replay.c - `breaker replay`: hand-written traces with known
 * transition times, malformed lines, flapping, and byte-for-byte
 * deterministic reports; headers with units, ISO-8601 times, RFC 4180
 * quoting, caller columns, the JSON summary.
 */
#define _GNU_SOURCE
#include "test_util.h"

#include "cli/cli.h"
#include "sim/replay.h"
#include "sim/report.h"
#include "sim/simulate.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef TEST_DATA_DIR
#error "TEST_DATA_DIR must name tests/tools/data"
#endif

static void read_trace_file(const char *name, struct tool_trace *tr, char **errors) {
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", TEST_DATA_DIR, name);
    FILE *in = fopen(path, "r");
    if (in == NULL) fail_msg("cannot open %s", path);
    size_t len = 0;
    FILE *err = open_memstream(errors, &len);
    char msg[TOOL_MSG_MAX];
    if (tool_trace_read(in, name, err, tr, msg, sizeof(msg)) != 0) fail_msg("%s", msg);
    fclose(err);
    fclose(in);
}

static void read_trace_text(const char *text, struct tool_trace *tr) {
    FILE *in = fmemopen((void *)(uintptr_t)text, strlen(text), "r");
    assert_non_null(in);
    char msg[TOOL_MSG_MAX];
    if (tool_trace_read(in, "text", stderr, tr, msg, sizeof(msg)) != 0) fail_msg("%s", msg);
    fclose(in);
}

/* Read `text` as the trace `name`; @return what was reported on the error
 * stream, for the caller to free. */
static char *read_trace_errors(const char *text, const char *name, struct tool_trace *tr) {
    FILE *in = fmemopen((void *)(uintptr_t)text, strlen(text), "r");
    assert_non_null(in);
    char *errors = NULL;
    size_t len = 0;
    FILE *err = open_memstream(&errors, &len);
    assert_non_null(err);
    char msg[TOOL_MSG_MAX];
    if (tool_trace_read(in, name, err, tr, msg, sizeof(msg)) != 0) fail_msg("%s", msg);
    fclose(err);
    fclose(in);
    return errors;
}

static struct tool_breaker make_breaker_spec(const char *spec) {
    struct tool_breakers list = {0};
    char msg[TOOL_MSG_MAX];
    if (tool_breakers_add_spec(&list, spec, "test", msg, sizeof(msg)) != 0) fail_msg("%s", msg);
    struct tool_breaker b = list.items[0];
    tool_breakers_free(&list);
    /* The tests pin exact transition times: no jitter (the library's
     * default adds up to 20% to each wait) unless the spec asks for it. */
    if (strstr(spec, "open_jitter") == NULL) b.cfg.open_jitter = 0;
    return b;
}

static void replay(const struct tool_trace *tr, const struct tool_breaker *b,
                   struct tool_replay_result *r) {
    char msg[TOOL_MSG_MAX];
    if (tool_replay(tr, b, r, msg, sizeof(msg)) != 0) fail_msg("replay: %s", msg);
}

/* The report as a string (caller frees). */
static char *report(const struct tool_trace *tr, const struct tool_breaker *b,
                    const struct tool_replay_result *r) {
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    tool_print_replay(out, tr, b, r);
    fclose(out);
    return buf;
}

/* Read tests/tools/data/FILE (no malformed lines) and replay it under SPEC. */
static void replay_file(const char *file, const char *spec, struct tool_trace *tr,
                        struct tool_breaker *b, struct tool_replay_result *r) {
    char *errors = NULL;
    read_trace_file(file, tr, &errors);
    if (errors[0] != '\0') fail_msg("%s", errors);
    free(errors);
    *b = make_breaker_spec(spec);
    replay(tr, b, r);
}

static void release(struct tool_trace *tr, struct tool_replay_result *r) {
    tool_replay_result_free(r);
    tool_trace_free(tr);
}

#define STRICT \
    "strict:trip=consecutive,failure_threshold=5,open=1s,open_backoff=1,half_open_successes=2"

static void assert_event(const struct tool_replay_result *r, size_t i, uint64_t at_ms,
                         enum breaker_state from, enum breaker_state to,
                         enum breaker_reason reason) {
    if (i >= r->timeline.event_count)
        fail_msg("event %zu missing (%zu events)", i, r->timeline.event_count);
    const breaker_event *ev = &r->timeline.events[i];
    uint64_t origin = UINT64_C(1700000000) * TOOL_SEC;
    if (ev->time_ns != origin + at_ms * TOOL_MS)
        fail_msg("event %zu at %.3f s, want %.3f s", i, (double)(ev->time_ns - origin) / 1e9,
                 (double)at_ms / 1e3);
    assert_int_equal(ev->from, from);
    assert_int_equal(ev->to, to);
    assert_int_equal(ev->reason, reason);
}

static void outage_trace_gives_transitions_at_known_times(void **state) {
    (void)state;
    struct tool_trace tr;
    struct tool_breaker b;
    struct tool_replay_result r;
    replay_file("outage.csv", STRICT, &tr, &b, &r);
    assert_int_equal(tr.count, 41);
    /* Five failures from 1.0 s, each 10 ms: the fifth completes at 1.41 s. */
    assert_int_equal(r.timeline.event_count, 5);
    assert_event(&r, 0, 1410, BREAKER_CLOSED, BREAKER_OPEN, BREAKER_REASON_CONSECUTIVE_FAILURES);
    assert_int_equal(r.timeline.events[0].evidence.consecutive_failures, 5);
    /* The first call after 1 s open is a probe; the trace still fails then. */
    assert_event(&r, 1, 2500, BREAKER_OPEN, BREAKER_HALF_OPEN, BREAKER_REASON_WAIT_ELAPSED);
    assert_event(&r, 2, 2510, BREAKER_HALF_OPEN, BREAKER_OPEN, BREAKER_REASON_PROBE_FAILED);
    /* From 3.0 s it answers again: two good probes close it. */
    assert_event(&r, 3, 3600, BREAKER_OPEN, BREAKER_HALF_OPEN, BREAKER_REASON_WAIT_ELAPSED);
    assert_event(&r, 4, 3710, BREAKER_HALF_OPEN, BREAKER_CLOSED, BREAKER_REASON_PROBES_SUCCEEDED);
    release(&tr, &r);
}

static void refusals_probes_and_time_open_are_counted(void **state) {
    (void)state;
    struct tool_trace tr;
    struct tool_breaker b;
    struct tool_replay_result r;
    replay_file("outage.csv", STRICT, &tr, &b, &r);
    assert_int_equal(r.calls, 41);
    assert_int_equal(r.refused, 20); /* 1.5..2.4 s and 2.6..3.5 s */
    assert_int_equal(r.stats.rejected_open, 20);
    assert_int_equal(r.stats.probes_admitted, 3);
    assert_int_equal(r.stats.probes_failed, 1);
    assert_int_equal(r.stats.probes_succeeded, 2);
    assert_int_equal(r.time_open_ns, 2180 * TOOL_MS);     /* 1.41-2.5 and 2.51-3.6 */
    assert_int_equal(r.time_half_open_ns, 120 * TOOL_MS); /* 2.5-2.51 and 3.6-3.71 */
    assert_int_equal(r.flaps, 0);
    release(&tr, &r);
}

static void the_report_shows_each_transition_with_its_evidence(void **state) {
    (void)state;
    struct tool_trace tr;
    struct tool_breaker b;
    struct tool_replay_result r;
    replay_file("outage.csv", STRICT, &tr, &b, &r);
    char *text = report(&tr, &b, &r);
    static const char *const want[] = {
        "== strict: trip=consecutive failure_threshold=5 open=1s",
        "1.410s       closed -> open         consecutive_failures 5 failures in a row; open for 1s",
        "2.510s       half_open -> open      probe_failed",
        "3.710s       half_open -> closed    probes_succeeded     2 probes succeeded",
        "calls 41: admitted 21, refused 20 (48.8%: 20 while open, 0 while half-open)",
        "probes 3: 2 succeeded, 1 failed (0 timed out)",
        "time open 2.18s, half-open 120ms",
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        if (strstr(text, want[i]) == NULL) fail_msg("report lacks '%s':\n%s", want[i], text);
    assert_null(strstr(text, "WARNING"));
    free(text);
    release(&tr, &r);
}

static void the_same_trace_gives_the_same_bytes(void **state) {
    (void)state;
    struct tool_trace tr;
    struct tool_breaker b;
    struct tool_replay_result r1, r2;
    /* Jitter on: the seed the tool fixes must make it repeat too. */
    replay_file("outage.csv", STRICT ",open_jitter=0.5", &tr, &b, &r1);
    replay(&tr, &b, &r2);
    char *a = report(&tr, &b, &r1), *c = report(&tr, &b, &r2);
    assert_string_equal(a, c);
    free(a);
    free(c);
    tool_replay_result_free(&r2);
    release(&tr, &r1);
}

static void lines_out_of_order_replay_in_time_order(void **state) {
    (void)state;
    struct tool_trace sorted, shuffled;
    read_trace_text("0.0,0.01,fail\n0.1,0.01,fail\n0.2,0.01,fail\n0.3,0.01,ok\n0.5,0.01,ok\n",
                    &sorted);
    read_trace_text("0.3,0.01,ok\n0.1,0.01,fail\n0.5,0.01,ok\n0.0,0.01,fail\n0.2,0.01,fail\n",
                    &shuffled);
    struct tool_breaker b = make_breaker_spec("trip=consecutive,failure_threshold=3,open=250ms");
    struct tool_replay_result a, c;
    replay(&sorted, &b, &a);
    replay(&shuffled, &b, &c);
    assert_int_equal(a.timeline.event_count, 2); /* open, then the probe at 0.5 s */
    assert_int_equal(a.timeline.events[0].time_ns, 210 * TOOL_MS);
    assert_int_equal(a.refused, 1); /* 0.3 s; at 0.5 s the wait is over */
    assert_int_equal(c.timeline.event_count, a.timeline.event_count);
    assert_int_equal(c.timeline.events[0].time_ns, a.timeline.events[0].time_ns);
    assert_int_equal(c.refused, a.refused);
    tool_replay_result_free(&a);
    tool_replay_result_free(&c);
    tool_trace_free(&sorted);
    tool_trace_free(&shuffled);
}

static void a_hung_probe_times_out_and_reopens(void **state) {
    (void)state;
    struct tool_trace tr;
    /* Opens at 0.21 s for 1 s; the probe at 1.5 s hangs for 10 s; the probe
     * timeout is 1 s, so the next call (3.0 s) finds it failed as of its
     * deadline, 2.5 s, and the doubled wait running from then. */
    read_trace_text("0.0,0.01,fail\n0.1,0.01,fail\n0.2,0.01,fail\n1.5,10,ok\n3.0,0.01,ok\n"
                    "6.0,0.01,ok\n",
                    &tr);
    struct tool_breaker b = make_breaker_spec(
        "trip=consecutive,failure_threshold=3,open=1s,probe_timeout=1s,half_open_successes=1");
    struct tool_replay_result r;
    replay(&tr, &b, &r);
    assert_int_equal(r.timeline.event_count, 5);
    assert_int_equal(r.timeline.events[2].reason, BREAKER_REASON_PROBE_TIMEOUT);
    assert_int_equal(r.timeline.events[2].time_ns, 2500 * TOOL_MS);
    assert_int_equal(r.timeline.events[4].to, BREAKER_CLOSED); /* the probe at 6.0 s */
    assert_int_equal(r.stats.probes_timed_out, 1);
    assert_int_equal(r.stats.stale, 1); /* the hung probe's late answer */
    tool_replay_result_free(&r);
    tool_trace_free(&tr);
}

static void malformed_lines_are_reported_with_their_numbers_and_the_rest_kept(void **state) {
    (void)state;
    struct tool_trace tr;
    char *errors = NULL;
    read_trace_file("malformed.csv", &tr, &errors);
    assert_int_equal(tr.bad_lines, 8);
    assert_int_equal(tr.count, 3); /* lines 2, 11 and 12 */
    assert_int_equal(tr.calls[0].line, 2);
    assert_int_equal(tr.calls[1].line, 11);
    assert_int_equal(tr.calls[2].line, 12);
    assert_int_equal(tr.calls[2].duration_ns, 25 * TOOL_MS);
    assert_int_equal(tr.calls[2].outcome, BREAKER_FAILURE); /* ETIMEDOUT */
    static const char *const want[] = {
        "malformed.csv:3: expected 3 fields",   "malformed.csv:4: bad duration 'abc'",
        "malformed.csv:5: bad outcome 'maybe'", "malformed.csv:6: bad timestamp 'zero'",
        "malformed.csv:7: bad outcome '700'",   "malformed.csv:8: expected 3 fields",
        "malformed.csv:9: bad duration ''",     "malformed.csv:10: bad outcome 'EBOGUS'",
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        if (strstr(errors, want[i]) == NULL) fail_msg("errors lack '%s':\n%s", want[i], errors);
    /* Exactly one line per bad line. */
    size_t lines = 0;
    for (const char *p = errors; *p; p++)
        lines += *p == '\n';
    assert_int_equal(lines, 8);
    tool_trace_free(&tr);
    free(errors);
}

static void a_breaker_that_closes_and_retrips_is_flagged_as_flapping(void **state) {
    (void)state;
    struct tool_trace tr;
    struct tool_breaker jumpy;
    struct tool_replay_result r;
    replay_file("flapping.csv",
                "jumpy:trip=consecutive,failure_threshold=3,open=1s,half_open_successes=1", &tr,
                &jumpy, &r);
    assert_int_equal(tr.count, 30);
    assert_int_equal(r.timeline.event_count, 15); /* open, half-open, closed: five times */
    assert_int_equal(r.flaps, 4);
    char *text = report(&tr, &jumpy, &r);
    if (strstr(text, "WARNING: flapping: 4 times") == NULL) fail_msg("no warning:\n%s", text);
    free(text);
    tool_replay_result_free(&r);

    /* Needing more evidence to trip, it rides the bursts out. */
    struct tool_breaker calm = make_breaker_spec("calm:trip=consecutive,failure_threshold=5");
    replay(&tr, &calm, &r);
    assert_int_equal(r.timeline.event_count, 0);
    assert_int_equal(r.flaps, 0);
    release(&tr, &r);
}

static void outcomes_accept_words_http_statuses_and_errno_names(void **state) {
    (void)state;
    static const struct {
        const char *text;
        enum breaker_outcome want;
    } cases[] = {
        {"ok", BREAKER_SUCCESS},           {"SUCCESS", BREAKER_SUCCESS},
        {"failure", BREAKER_FAILURE},      {"fail", BREAKER_FAILURE},
        {"error", BREAKER_FAILURE},        {"timeout", BREAKER_FAILURE},
        {"ignored", BREAKER_IGNORED},      {"cancelled", BREAKER_CANCELLED},
        {"canceled", BREAKER_CANCELLED},   {"200", BREAKER_SUCCESS},
        {"404", BREAKER_IGNORED},          {"429", BREAKER_IGNORED},
        {"501", BREAKER_IGNORED},          {"503", BREAKER_FAILURE},
        {"ECONNREFUSED", BREAKER_FAILURE}, {"ETIMEDOUT", BREAKER_FAILURE},
        {"ECANCELED", BREAKER_CANCELLED},  {"EINVAL", BREAKER_IGNORED},
        {"EMFILE", BREAKER_IGNORED},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        enum breaker_outcome got;
        if (!tool_parse_outcome(cases[i].text, &got)) fail_msg("'%s' refused", cases[i].text);
        if (got != cases[i].want)
            fail_msg("'%s': got %s, want %s", cases[i].text, breaker_outcome_name(got),
                     breaker_outcome_name(cases[i].want));
    }
    static const char *const bad[] = {"", "okay", "99", "600", "2000", "econnrefused", "E"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        enum breaker_outcome got;
        if (tool_parse_outcome(bad[i], &got)) fail_msg("'%s' accepted", bad[i]);
    }
}

static void an_empty_trace_replays_to_nothing(void **state) {
    (void)state;
    struct tool_trace tr;
    read_trace_text("# nothing but a comment\n\n", &tr);
    assert_int_equal(tr.count, 0);
    struct tool_breaker b = make_breaker_spec("open=1s");
    struct tool_replay_result r;
    replay(&tr, &b, &r);
    assert_int_equal(r.calls, 0);
    char *text = report(&tr, &b, &r);
    assert_non_null(strstr(text, "no transitions"));
    free(text);
    tool_replay_result_free(&r);
    tool_trace_free(&tr);
}

static void trace_times_parse_exactly_with_or_without_units(void **state) {
    (void)state;
    static const struct {
        const char *text;
        uint64_t want;
    } ok[] = {
        {"0.25", 250 * TOOL_MS},
        {"250ms", 250 * TOOL_MS},
        {"1700000000.123456789", UINT64_C(1700000000123456789)},
        {"1.5s", 1500 * TOOL_MS},
        {"2m", 120 * TOOL_SEC},
        {"1500us", 1500 * UINT64_C(1000)},
        {"7ns", 7},
        {"0", 0},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        uint64_t got = 0;
        if (!tool_parse_duration(ok[i].text, TOOL_SEC, &got) || got != ok[i].want)
            fail_msg("'%s': got %llu, want %llu", ok[i].text, (unsigned long long)got,
                     (unsigned long long)ok[i].want);
    }
    static const char *const bad[] = {
        "",  ".", "1.2.3", "-1", "1e3", "5 s", "1.5ns", "0.0000000001", "99999999999999999999",
        "1x"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        uint64_t got;
        if (tool_parse_duration(bad[i], TOOL_SEC, &got)) fail_msg("'%s' accepted", bad[i]);
    }
}

static void durations_print_in_the_largest_readable_unit(void **state) {
    (void)state;
    static const struct {
        uint64_t ns;
        const char *want;
    } cases[] = {
        {0, "0s"},
        {999, "999ns"},
        {1500, "1.5us"},
        {999600000, "1s"}, /* rounds up into the next unit, never "1e+03ms" */
        {120 * TOOL_MS, "120ms"},
        {2180 * TOOL_MS, "2.18s"},
        {90 * TOOL_SEC, "1m30s"},
        {600 * TOOL_SEC, "10m"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char buf[32];
        assert_string_equal(tool_format_duration(cases[i].ns, buf, sizeof(buf)), cases[i].want);
    }
}

static void quoted_fields_and_a_header_line_are_understood(void **state) {
    (void)state;
    struct tool_trace tr;
    read_trace_text("\"Timestamp\",\"duration\",\"outcome\"\n\"0.5\", \"10ms\" ,\"503\"\n", &tr);
    assert_int_equal(tr.bad_lines, 0);
    assert_int_equal(tr.count, 1);
    assert_int_equal(tr.calls[0].start_ns, 500 * TOOL_MS);
    assert_int_equal(tr.calls[0].duration_ns, 10 * TOOL_MS);
    assert_int_equal(tr.calls[0].outcome, BREAKER_FAILURE);
    tool_trace_free(&tr);
}

static void a_first_line_of_garbage_is_reported_not_taken_for_a_header(void **state) {
    (void)state;
    struct tool_trace tr;
    char *errors = read_trace_errors("abc,def\n0.0,0.01,ok\n", "g.csv", &tr);
    assert_int_equal(tr.bad_lines, 1);
    assert_int_equal(tr.count, 1);
    assert_non_null(strstr(errors, "g.csv:1: expected 3 fields"));
    free(errors);
    tool_trace_free(&tr);
}

static void control_bytes_in_a_bad_line_are_escaped(void **state) {
    (void)state;
    /* A hostile trace must not reach the terminal with escape sequences. */
    static const char text[] = "0.0,0.01,\033]0;owned\a\n1.0,0\x9b"
                               "2J,ok\n";
    struct tool_trace tr;
    char *errors = read_trace_errors(text, "e\033.csv", &tr);
    assert_int_equal(tr.bad_lines, 2);
    assert_non_null(strstr(errors, "e\\x1b.csv:1: bad outcome '\\x1b]0;owned\\x07'"));
    assert_non_null(strstr(errors, "e\\x1b.csv:2: bad duration '0\\x9b2J'"));
    for (const char *p = errors; *p != '\0'; p++) {
        unsigned char c = (unsigned char)*p;
        if ((c < 0x20 && c != '\n') || c == 0x7f || c >= 0x80)
            fail_msg("raw byte 0x%02x in '%s'", c, errors);
    }
    free(errors);
    tool_trace_free(&tr);
}

static void escaping_keeps_text_and_utf8_and_shows_the_rest_as_hex(void **state) {
    (void)state;
    static const struct {
        const char *in, *want;
    } cases[] = {
        {"plain text, 50%", "plain text, 50%"},
        {"tab\there", "tab\\x09here"},
        {"\033[31m", "\\x1b[31m"},
        {"del\x7f", "del\\x7f"},
        {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"},
        {"c1 \xc2\x9b", "c1 \\xc2\\x9b"},     /* U+009B, the 8-bit CSI */
        {"lone \xc3", "lone \\xc3"},          /* cut short */
        {"over \xc0\xaf", "over \\xc0\\xaf"}, /* overlong '/' */
        {"sur \xed\xa0\x80", "sur \\xed\\xa0\\x80"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[64];
        size_t n = tool_escape(out, sizeof(out), cases[i].in);
        assert_string_equal(out, cases[i].want);
        assert_int_equal(n, strlen(cases[i].want));
    }
    /* snprintf-like: the whole length, a cut but terminated copy. */
    char small[6];
    assert_int_equal(tool_escape(small, sizeof(small), "ab\033cd"), 8);
    assert_string_equal(small, "ab");
}

/* Read `text` that must be refused as a whole; @return the message. */
static void read_trace_refused(const char *text, const char *fragment) {
    FILE *in = fmemopen((void *)(uintptr_t)text, strlen(text), "r");
    assert_non_null(in);
    struct tool_trace tr;
    char msg[TOOL_MSG_MAX] = "";
    int rc = tool_trace_read(in, "h.csv", NULL, &tr, msg, sizeof(msg));
    fclose(in);
    if (rc == 0) {
        tool_trace_free(&tr);
        fail_msg("'%s' was read (%zu calls), expected a refusal with '%s'", text, tr.count,
                 fragment);
    }
    if (strstr(msg, fragment) == NULL) fail_msg("message '%s' lacks '%s'", msg, fragment);
}

static void header_units_are_honoured_not_guessed(void **state) {
    (void)state;
    struct tool_trace tr;
    /* The trace: 12 used to be taken as 12 seconds, exit 0. */
    read_trace_text("ts,latency_ms,status\n1700000000,12,200\n1700000001,15.5,503\n", &tr);
    assert_int_equal(tr.bad_lines, 0);
    assert_int_equal(tr.count, 2);
    assert_int_equal(tr.calls[0].start_ns, UINT64_C(1700000000) * TOOL_SEC);
    assert_int_equal(tr.calls[0].duration_ns, 12 * TOOL_MS);
    assert_int_equal(tr.calls[1].duration_ns, 15500 * UINT64_C(1000));
    assert_int_equal(tr.calls[1].outcome, BREAKER_FAILURE);
    tool_trace_free(&tr);
    /* Columns in any order, epoch milliseconds and microseconds, a value
     * with its own unit still meaning what it says. */
    read_trace_text("result,elapsed_us,time_ms\nok,250,1700000000125\nok,2ms,1700000000126\n", &tr);
    assert_int_equal(tr.bad_lines, 0);
    assert_int_equal(tr.calls[0].start_ns, UINT64_C(1700000000125) * TOOL_MS);
    assert_int_equal(tr.calls[0].duration_ns, 250 * UINT64_C(1000));
    assert_int_equal(tr.calls[1].duration_ns, 2 * TOOL_MS);
    tool_trace_free(&tr);
    read_trace_text("timestamp_us,duration_s,code\n1700000000000001,0.5,200\n", &tr);
    assert_int_equal(tr.calls[0].start_ns, UINT64_C(1700000000000001) * 1000);
    assert_int_equal(tr.calls[0].duration_ns, 500 * TOOL_MS);
    tool_trace_free(&tr);
    /* A bare name means seconds, as without a header. */
    read_trace_text("start,elapsed,outcome\n10,0.25,ok\n", &tr);
    assert_int_equal(tr.calls[0].start_ns, 10 * TOOL_SEC);
    assert_int_equal(tr.calls[0].duration_ns, 250 * TOOL_MS);
    tool_trace_free(&tr);
}

static void unknown_columns_and_units_are_refused_naming_the_column(void **state) {
    (void)state;
    read_trace_refused("ts,latency_minutes,status\n1,2,ok\n",
                       "h.csv:1: header: column 2 'latency_minutes': unknown unit '_minutes'");
    read_trace_refused("ts,dur,status\n1,2,ok\n", "column 2 'dur': unknown column name");
    read_trace_refused("ts,duration,outcome,path\n1,2,ok,/\n", "column 4 'path': unknown column");
    read_trace_refused("ts,duration,status,result\n1,2,ok,ok\n",
                       "column 4 'result': a second outcome column (column 3 is 'status')");
    read_trace_refused("ts,status\n1,ok\n", "the header has no duration column");
    read_trace_refused("# comment first\n\nts,duration,status_ms\n", "h.csv:3: header: column 3");
}

static void iso_timestamps_with_a_zone_are_read(void **state) {
    (void)state;
    struct tool_trace tr;
    char *errors = read_trace_errors("time,duration,outcome\n"
                                     "2026-11-30T12:00:00.123Z,0.1,ok\n"
                                     "2026-11-30T13:00:01+01:00,0.1,ok\n"
                                     "2026-11-30 06:30:02.5-0530,0.1,ok\n"
                                     "2026-11-30T12:00:03z,0.1,ok\n"
                                     "2026-11-30T12:00:00,0.1,ok\n"
                                     "2026-02-30T12:00:00Z,0.1,ok\n",
                                     "iso.csv", &tr);
    assert_int_equal(tr.count, 4);
    assert_int_equal(tr.bad_lines, 2);
    /* 2026-11-30T12:00:00Z is 1796040000 s after 1970. */
    uint64_t noon = UINT64_C(1796040000) * TOOL_SEC;
    assert_int_equal(tr.calls[0].start_ns, noon + 123 * TOOL_MS);
    assert_int_equal(tr.calls[1].start_ns, noon + 1 * TOOL_SEC);
    assert_int_equal(tr.calls[2].start_ns, noon + 2500 * TOOL_MS);
    assert_int_equal(tr.calls[3].start_ns, noon + 3 * TOOL_SEC);
    assert_non_null(strstr(errors, "iso.csv:6: bad timestamp '2026-11-30T12:00:00': expected "
                                   "ISO-8601 with a zone"));
    assert_non_null(strstr(errors, "iso.csv:7: bad timestamp '2026-02-30T12:00:00Z'"));
    free(errors);
    tool_trace_free(&tr);
}

static void epoch_milliseconds_in_a_column_of_seconds_are_refused_with_a_hint(void **state) {
    (void)state;
    struct tool_trace tr;
    char *errors = read_trace_errors("ts,duration,outcome\n1700000000123,0.1,ok\n", "ms.csv", &tr);
    assert_int_equal(tr.count, 0);
    assert_non_null(strstr(errors, "too large for seconds since 1970; for milliseconds or "
                                   "microseconds, name the column ts_ms or ts_us"));
    free(errors);
    tool_trace_free(&tr);
}

static void a_bom_crlf_and_rfc4180_quotes_are_read(void **state) {
    (void)state;
    struct tool_trace tr;
    read_trace_text("\xEF\xBB\xBFts,duration,outcome,client\r\n"
                    "1,0.1,ok,\"acme, inc.\"\r\n"
                    "2,0.1,503,\"say \"\"hi\"\"\"\r\n"
                    "3,0.1,\"ok\" , \r\n",
                    &tr);
    assert_int_equal(tr.bad_lines, 0);
    assert_int_equal(tr.count, 3);
    assert_true(tr.has_source);
    assert_int_not_equal(tr.calls[0].source, 0);
    assert_int_not_equal(tr.calls[1].source, 0);
    assert_int_not_equal(tr.calls[0].source, tr.calls[1].source);
    assert_int_equal(tr.calls[2].source, 0); /* an empty caller names none */
    tool_trace_free(&tr);
    char *errors = read_trace_errors("0,0.1,\"ok\n\"\n1,0.1,\"o\"k\n", "q.csv", &tr);
    assert_int_equal(tr.count, 0);
    assert_non_null(strstr(errors, "q.csv:1: field 3: a quoted field without its closing quote "
                                   "(a quoted field cannot hold a line break)"));
    assert_non_null(strstr(errors, "q.csv:3: field 3: text after the closing quote"));
    free(errors);
    tool_trace_free(&tr);
}

static void a_caller_column_lets_min_failing_sources_tell_one_caller_from_an_outage(void **state) {
    (void)state;
    struct tool_trace tr;
    struct tool_breaker b;
    struct tool_replay_result r;
    /* One tenant's requests all fail: without min_failing_sources (1, off)
     * the shared breaker opens on them; with it (3, or the default 0 now
     * that the trace names callers), it stays closed. */
    replay_file("abusive_tenant.csv",
                "trip=count_window,window_size=20,min_calls=10,min_failing_sources=1", &tr, &b, &r);
    assert_true(tr.has_source);
    assert_int_equal(tool_replay_trips(&r), 1);
    tool_replay_result_free(&r);
    b = make_breaker_spec("trip=count_window,window_size=20,min_calls=10,min_failing_sources=3");
    replay(&tr, &b, &r);
    assert_int_equal(r.timeline.event_count, 0);
    tool_replay_result_free(&r);
    b = make_breaker_spec("trip=count_window,window_size=20,min_calls=10");
    replay(&tr, &b, &r);
    assert_int_equal(r.timeline.event_count, 0);
    release(&tr, &r);
    /* An outage across five callers still trips it, naming them. */
    replay_file("access_log.csv", "trip=consecutive,failure_threshold=5,min_failing_sources=3", &tr,
                &b, &r);
    assert_int_equal(tr.count, 60);
    assert_int_equal(r.timeline.event_count, 1);
    assert_int_equal(r.timeline.events[0].evidence.failing_sources, 5);
    /* 13:00:02+01:00 plus the fifth failure's start and its 30 ms. */
    assert_int_equal(r.timeline.events[0].time_ns - tr.origin_ns, 2430 * TOOL_MS);
    release(&tr, &r);
}

/* ---- Shadow logs ---------------------------------------------------------------*/

#define SHADOW_SPEC                                                                        \
    "probe:trip=consecutive,failure_threshold=3,open=1s,half_open_max_probes=1,half_open_" \
    "successes=1"

/* A hand-made shadow log whose every line's fate under SHADOW_SPEC is
 * known: three failures trip it at 0.210s (open until 1.210s); the call
 * at 1.300s is its probe (until 1.800s, a success that closes it). */
static const char shadow_log[] = "ts,duration,outcome,would_reject\n"
                                 "0.000,0.010,503,none\n"     /* line 2: neither */
                                 "0.100,0.010,503,\n"         /* 3: neither */
                                 "0.200,0.010,503,-\n"        /* 4: neither; trips */
                                 "0.300,0.010,503,open\n"     /* 5: both */
                                 "0.400,0.010,ok,no\n"        /* 6: only the replay */
                                 "1.300,0.500,ok,none\n"      /* 7: neither (the probe) */
                                 "1.400,0.010,ok,half_open\n" /* 8: both */
                                 "1.500,0.010,ok,OPEN\n"      /* 9: both, another reason */
                                 "1.900,0.010,ok,open\n"      /* 10: only the shadow */
                                 "2.000,0.010,ok,yes\n";      /* 11: only the shadow */

static char *json_of(const struct tool_trace *tr, struct tool_breaker *b,
                     const struct tool_replay_result *r) {
    struct tool_breakers list = {.items = b, .count = 1, .cap = 1};
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    tool_print_replay_json(out, "log.csv", tr, &list, r, 1);
    fclose(out);
    return text;
}

static void a_shadow_log_is_compared_call_by_call(void **state) {
    (void)state;
    struct tool_trace tr;
    read_trace_text(shadow_log, &tr);
    assert_true(tr.has_shadow);
    assert_int_equal(tr.count, 10);
    assert_int_equal(tr.shadow_calls[BREAKER_REFUSAL_NONE], 5);
    assert_int_equal(tr.shadow_calls[BREAKER_REFUSAL_OPEN], 3);
    assert_int_equal(tr.shadow_calls[BREAKER_REFUSAL_HALF_OPEN], 1);
    assert_int_equal(tr.shadow_calls[TOOL_SHADOW_REFUSED], 1);
    struct tool_breaker b = make_breaker_spec(SHADOW_SPEC);
    struct tool_replay_result r;
    replay(&tr, &b, &r);
    assert_int_equal(r.refused, 4);
    assert_int_equal(r.shadow.both_refused, 3);
    assert_int_equal(r.shadow.neither_refused, 4);
    assert_int_equal(r.shadow.replay_only, 1);
    assert_int_equal(r.shadow.shadow_only, 2);
    assert_int_equal(r.shadow.first_line, 6);
    assert_int_equal(r.shadow.first_ns - tr.origin_ns, 400 * TOOL_MS);
    assert_true(r.shadow.first_replay_refused);

    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    tool_print_shadow_trace(out, &tr);
    tool_print_replay(out, &tr, &b, &r);
    fclose(out);
    static const char *const lines[] = {
        "Shadow log: the shadow breaker would have refused 5 of 10 calls (3 open, 1 half_open, "
        "1 unspecified); the dependency served 4 of them\n",
        "   shadow log: 7 of 10 calls agree (70.0%): 3 refused by both, 4 by neither\n",
        "   disagree: 1 refused only by this configuration, 2 only by the shadow breaker\n",
        "   first disagreement: line 6 at 0.400s, refused by this configuration\n",
    };
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
        if (strstr(text, lines[i]) == NULL) fail_msg("report lacks '%s':\n%s", lines[i], text);
    free(text);

    text = json_of(&tr, &b, &r);
    static const char *const keys[] = {
        "\"sources\": false, \"shadow_log\": true, \"would_reject\": {\"none\": 5, \"open\": 3, "
        "\"half_open\": 1, \"forced_open\": 0, \"ramp\": 0, \"unspecified\": 1}, "
        "\"would_reject_served\": 4}",
        "\"shadow\": {\"agree\": 7, \"both_refused\": 3, \"neither_refused\": 4, "
        "\"only_replay_refused\": 1, \"only_shadow_refused\": 2, \"first_disagreement\": "
        "{\"line\": 6, \"time_ns\": 400000000, \"refused_by\": \"replay\"}}",
    };
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (strstr(text, keys[i]) == NULL) fail_msg("JSON lacks '%s':\n%s", keys[i], text);
    free(text);
    release(&tr, &r);

    /* A trace that is no shadow log says nothing of one. */
    replay_file("outage.csv", STRICT, &tr, &b, &r);
    assert_false(tr.has_shadow);
    text = report(&tr, &b, &r);
    if (strstr(text, "shadow") != NULL)
        fail_msg("a plain trace's report speaks of a shadow:\n%s", text);
    free(text);
    text = json_of(&tr, &b, &r);
    if (strstr(text,
               "\"shadow_log\": false, \"would_reject\": null, \"would_reject_served\": null}") ==
            NULL ||
        strstr(text, "\"shadow\": null,") == NULL)
        fail_msg("a plain trace's JSON should say shadow false and null:\n%s", text);
    free(text);
    release(&tr, &r);
}

static void a_bad_would_reject_value_is_reported_with_its_line(void **state) {
    (void)state;
    struct tool_trace tr;
    char *errors = read_trace_errors("ts,duration,outcome,would_reject\n"
                                     "0.000,0.010,ok,maybe\n"
                                     "0.100,0.010,ok,forced_open\n"
                                     "0.200,0.010,ok,RAMP\n"
                                     "0.300,0.010,ok,Forced\n",
                                     "log.csv", &tr);
    if (strstr(errors, "breaker replay: log.csv:2: bad would_reject 'maybe': expected none") ==
        NULL)
        fail_msg("errors: %s", errors);
    free(errors);
    assert_int_equal(tr.bad_lines, 1);
    assert_int_equal(tr.count, 3);
    assert_int_equal(tr.shadow_calls[BREAKER_REFUSAL_FORCED], 2);
    assert_int_equal(tr.shadow_calls[BREAKER_REFUSAL_RAMP], 1);
    tool_trace_free(&tr);
    read_trace_refused("ts,duration,outcome,would_reject,Would_Reject\n0,0,ok,,\n",
                       "column 5 'Would_Reject': a second would_reject column (column 4 is "
                       "'would_reject')");
    /* Not an alias: a column of breaker_shadow() (1 while shadow mode is on)
     * would read as every call refused. */
    read_trace_refused("ts,duration,outcome,shadow\n0,0,ok,1\n",
                       "column 4 'shadow': unknown column name");
    /* A caller column of the service's own keys (numbers), not names. */
    errors = read_trace_errors("ts,duration,outcome,client_key\n0,0,ok,abc\n0.1,0,ok,\n"
                               "0.2,0,ok,18446744073709551615\n",
                               "keys.csv", &tr);
    if (strstr(errors, "keys.csv:2: bad client_key 'abc': expected the source key given to "
                       "breaker_complete_from()") == NULL)
        fail_msg("errors: %s", errors);
    free(errors);
    assert_int_equal(tr.count, 2);
    assert_true(tr.has_source);
    assert_int_equal(tr.calls[0].source, 0);
    assert_true(tr.calls[1].source == UINT64_MAX);
    tool_trace_free(&tr);
    read_trace_refused("ts,duration,outcome,client_name\n0,0,ok,a\n",
                       "a source column takes the suffix _id, or _key");
    read_trace_refused("ts,duration,outcome,would_reject_ms\n0,0,ok,\n",
                       "the would_reject column takes no suffix");
}

/* What the live library in shadow mode logs (breaker_permit_would_reject()
 * beside each call), replayed through the configuration that wrote it,
 * agrees on every call: the replay is the enforcing twin of a shadow
 * breaker. Calls overlap (up to 15 in flight), the dependency has two
 * outages, and the configurations trip on a run, a count window and a
 * time window with a ramp (so open, half_open and ramp refusals are
 * written; forced_open needs an operator, whom a log does not replay), one
 * with jittered waits from a fixed seed, and two that trip only on
 * failures from 3 callers, named (a client column, hashed as the replay
 * hashes it) or by the keys the service gave breaker_complete_from() (a
 * client_key column). The log is written as docs/cli.md asks: times in
 * nanoseconds, lines in acquire order. */
enum live_sources { LIVE_NO_SOURCE, LIVE_NAMED, LIVE_KEYED };
struct shadow_live {
    uint64_t now;
};

static uint64_t shadow_live_clock(void *ctx) { return ((struct shadow_live *)ctx)->now; }

struct live_call {
    uint64_t start, end;
    enum breaker_outcome outcome;
    uint64_t source; /* 0: none */
    breaker_permit permit;
};

static void write_live_shadow_log(const char *spec, enum live_sources sources, uint64_t seed,
                                  char **log) {
    struct tool_breaker tb = make_breaker_spec(spec);
    struct shadow_live clk = {.now = 1000 * TOOL_SEC};
    breaker_config c = tb.cfg;
    c.clock = shadow_live_clock;
    c.clock_ctx = &clk;
    if (c.seed == 0) c.seed = 1; /* as the replay seeds it */
    breaker *b = NULL;
    assert_int_equal(breaker_create(&c, &b), BREAKER_OK);
    assert_int_equal(breaker_set_shadow(b, 1), BREAKER_OK);
    size_t len = 0;
    FILE *out = open_memstream(log, &len);
    fputs(sources == LIVE_NAMED   ? "ts_ns,duration_ns,outcome,would_reject,client\n"
          : sources == LIVE_KEYED ? "ts_ns,duration_ns,outcome,would_reject,client_key\n"
                                  : "ts_ns,duration_ns,outcome,would_reject\n",
          out);
    static const uint64_t keys[] = {1, 2, 8}; /* a service's own keys: few bits apart */
    enum { CALLS = 3000, MAX_FLIGHT = 64 };
    struct live_call flight[MAX_FLIGHT];
    size_t n = 0;
    uint64_t x = seed;
    for (int i = 0; i < CALLS; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        uint64_t start = 1000 * TOOL_SEC + (uint64_t)i * 20 * TOOL_MS;
        /* Completions due by this start come first, in end order (then
         * start order), as the replay completes them. */
        for (;;) {
            size_t best = n;
            for (size_t k = 0; k < n; k++)
                if (flight[k].end <= start &&
                    (best == n || flight[k].end < flight[best].end ||
                     (flight[k].end == flight[best].end && flight[k].start < flight[best].start)))
                    best = k;
            if (best == n) break;
            clk.now = flight[best].end;
            (void)breaker_complete_from(b, &flight[best].permit, flight[best].outcome,
                                        flight[best].source);
            flight[best] = flight[--n];
        }
        clk.now = start;
        bool outage = (i >= 600 && i < 1400) || (i >= 2000 && i < 2300);
        unsigned roll = (unsigned)(x >> 33) % 100;
        enum breaker_outcome o = outage ? (roll < 90 ? BREAKER_FAILURE : BREAKER_SUCCESS)
                                        : (roll < 3 ? BREAKER_FAILURE : BREAKER_SUCCESS);
        uint64_t dur = (1 + (x >> 20) % 300) * TOOL_MS;
        assert_true(n < MAX_FLIGHT);
        struct live_call *lc = &flight[n++];
        lc->start = start;
        lc->end = start + dur;
        lc->outcome = o;
        char caller[32] = "";
        lc->source = 0;
        if (sources == LIVE_NAMED) {
            snprintf(caller, sizeof caller, ",tenant-%d", i % 5);
            lc->source = tool_source_key(caller + 1);
        } else if (sources == LIVE_KEYED) {
            lc->source = keys[i % 3];
            snprintf(caller, sizeof caller, ",%" PRIu64, lc->source);
        }
        /* Named at admission too, as the replay names them: shadow mode
         * never refuses. */
        assert_int_equal(breaker_acquire_from(b, &lc->permit, lc->source), BREAKER_OK);
        fprintf(out, "%" PRIu64 ",%" PRIu64 ",%s,%s%s\n", start, dur,
                o == BREAKER_FAILURE ? "failure" : "ok",
                breaker_refusal_name(breaker_permit_would_reject(&lc->permit)), caller);
    }
    while (n > 0) {
        size_t best = 0;
        for (size_t k = 1; k < n; k++)
            if (flight[k].end < flight[best].end ||
                (flight[k].end == flight[best].end && flight[k].start < flight[best].start))
                best = k;
        clk.now = flight[best].end;
        (void)breaker_complete_from(b, &flight[best].permit, flight[best].outcome,
                                    flight[best].source);
        flight[best] = flight[--n];
    }
    fclose(out);
    breaker_destroy(b);
}

static void the_configuration_that_wrote_a_shadow_log_agrees_with_it_on_every_call(void **state) {
    (void)state;
    static const char *const specs[] = {
        "run:trip=consecutive,failure_threshold=5,open=2s,half_open_max_probes=2,"
        "half_open_successes=3",
        "count:trip=count_window,window_size=50,min_calls=20,failure_rate=50%,open=3s,"
        "half_open_max_probes=1,half_open_successes=2,probe_timeout=100ms",
        "ramped:window=10s,min_calls=30,failure_rate=40%,open=5s,open_backoff=2,"
        "half_open_max_probes=3,ramp=20s",
        "jittered:window=5s,min_calls=20,failure_rate=50%,open=2s,open_backoff=2,"
        "open_jitter=0.5,seed=99,half_open_max_probes=2",
        "named:window=5s,min_calls=20,failure_rate=50%,open=2s,min_failing_sources=3",
        "keyed:window=5s,min_calls=20,failure_rate=50%,open=2s,min_failing_sources=3",
    };
    static const enum live_sources sources[] = {LIVE_NO_SOURCE, LIVE_NO_SOURCE, LIVE_NO_SOURCE,
                                                LIVE_NO_SOURCE, LIVE_NAMED,     LIVE_KEYED};
    for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
        char *log = NULL;
        write_live_shadow_log(specs[i], sources[i], 42 + i, &log);
        struct tool_trace tr;
        read_trace_text(log, &tr);
        free(log);
        assert_int_equal(tr.count, 3000);
        assert_int_equal(tr.bad_lines, 0);
        uint64_t refused = tr.count - tr.shadow_calls[BREAKER_REFUSAL_NONE];
        if (refused < 300)
            fail_msg("%s: the shadow would have refused only %" PRIu64, specs[i], refused);
        struct tool_breaker b = make_breaker_spec(specs[i]);
        struct tool_replay_result r;
        replay(&tr, &b, &r);
        if (r.shadow.shadow_only != 0 || r.shadow.replay_only != 0)
            fail_msg("%s: %" PRIu64 " refused only by the shadow, %" PRIu64
                     " only by the replay; the first at line %" PRIu32,
                     specs[i], r.shadow.shadow_only, r.shadow.replay_only, r.shadow.first_line);
        assert_int_equal(r.shadow.both_refused, refused);
        assert_int_equal(r.refused, refused);
        if (i == 2) assert_true(tr.shadow_calls[BREAKER_REFUSAL_RAMP] > 0);
        if (i == 1) assert_true(tr.shadow_calls[BREAKER_REFUSAL_HALF_OPEN] > 0);
        /* A stricter wait disagrees, and says where first. */
        struct tool_breaker longer = make_breaker_spec(specs[i]);
        longer.cfg.open_ns *= 4;
        tool_replay_result_free(&r);
        replay(&tr, &longer, &r);
        assert_true(r.shadow.replay_only > 0);
        assert_true(r.shadow.first_line > 0);
        release(&tr, &r);
    }
}

static void the_json_summary_has_its_documented_keys(void **state) {
    (void)state;
    struct tool_trace tr;
    struct tool_breaker b;
    struct tool_replay_result r;
    replay_file("outage.csv", STRICT, &tr, &b, &r);
    struct tool_breakers list = {.items = &b, .count = 1, .cap = 1};
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    tool_print_replay_json(out, "outage \"quoted\".csv", &tr, &list, &r, 1);
    fclose(out);
    static const char *const want[] = {
        "\"format\": \"breaker-replay/1\"",
        "\"trace\": {\"name\": \"outage \\\"quoted\\\".csv\", \"calls\": 41, \"malformed_lines\": "
        "0, \"span_ns\": 4000000000, \"sources\": false, \"shadow_log\": false, \"would_reject\": "
        "null, \"would_reject_served\": null}",
        "\"name\": \"strict\"",
        "\"keys\": \"trip=consecutive failure_threshold=5 open=1s open_backoff=1 "
        "half_open_successes=2\"",
        "\"calls\": 41, \"admitted\": 21, \"refused\": 20, \"refused_open\": 20, "
        "\"refused_half_open\": 0, \"refused_ramp\": 0",
        "\"probes\": 3, \"probes_succeeded\": 2, \"probes_failed\": 1, \"probes_timed_out\": 0",
        "\"transitions\": 5, \"trips\": 1, \"flaps\": 0, \"flapping\": false",
        "\"time_open_ns\": 2180000000, \"time_half_open_ns\": 120000000",
        "\"shadow\": null,",
        "{\"time_ns\": 1410000000, \"from\": \"closed\", \"to\": \"open\", \"reason\": "
        "\"consecutive_failures\", \"evidence\": \"5 failures in a row; open for 1s\"}",
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        if (strstr(text, want[i]) == NULL) fail_msg("JSON lacks '%s':\n%s", want[i], text);
    free(text);
    release(&tr, &r);
}

static void json_strings_are_escaped_and_valid_utf8(void **state) {
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    tool_json_string(out, "a\"b\\c\n\033caf\xc3\xa9\xff");
    fclose(out);
    assert_string_equal(text, "\"a\\\"b\\\\c\\u000a\\u001bcaf\xc3\xa9\\ufffd\"");
    free(text);
}

static void trips_count_closed_to_open_only(void **state) {
    (void)state;
    struct tool_trace tr;
    struct tool_breaker b;
    struct tool_replay_result r;
    replay_file("outage.csv", STRICT, &tr, &b, &r);
    assert_int_equal(tool_replay_trips(&r), 1); /* the failed probe's reopening is no trip */
    assert_false(tool_replay_flapping(&r));
    release(&tr, &r);
    replay_file("flapping.csv",
                "jumpy:trip=consecutive,failure_threshold=3,open=1s,half_open_successes=1", &tr, &b,
                &r);
    assert_int_equal(tool_replay_trips(&r), 5);
    assert_true(tool_replay_flapping(&r));
    release(&tr, &r);
}

static void library_messages_show_durations_for_people(void **state) {
    (void)state;
    static const struct {
        const char *in, *want;
    } cases[] = {
        /* The fields as the command line names its keys, too. */
        {"open_max_ns: must be >= open_ns (10000000000 ns), got 5000000000 ns",
         "open_max: must be >= open (10s), got 5s"},
        {"window_ns >= 10000000 ns, got 1000000", "window >= 10ms, got 1000000"},
        {"open_nsx, x_ns2, _ns and a_ns.", "open_nsx, x_ns2, _ns and a."},
        {"at most 365 days (got 31622400000000000 ns)", "at most 365 days (got 366d)"},
        {"1234567891 ns and 90000000000 ns", "1.234567891s and 1m30s"},
        {"5400000000000 ns", "1h30m"},
        {"x5 ns 7 nsec", "x5 ns 7 nsec"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char msg[TOOL_MSG_MAX];
        snprintf(msg, sizeof(msg), "%s", cases[i].in);
        tool_humanize_ns(msg, sizeof(msg));
        assert_string_equal(msg, cases[i].want);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(outage_trace_gives_transitions_at_known_times),
        cmocka_unit_test(refusals_probes_and_time_open_are_counted),
        cmocka_unit_test(the_report_shows_each_transition_with_its_evidence),
        cmocka_unit_test(the_same_trace_gives_the_same_bytes),
        cmocka_unit_test(lines_out_of_order_replay_in_time_order),
        cmocka_unit_test(a_hung_probe_times_out_and_reopens),
        cmocka_unit_test(malformed_lines_are_reported_with_their_numbers_and_the_rest_kept),
        cmocka_unit_test(a_breaker_that_closes_and_retrips_is_flagged_as_flapping),
        cmocka_unit_test(outcomes_accept_words_http_statuses_and_errno_names),
        cmocka_unit_test(an_empty_trace_replays_to_nothing),
        cmocka_unit_test(trace_times_parse_exactly_with_or_without_units),
        cmocka_unit_test(durations_print_in_the_largest_readable_unit),
        cmocka_unit_test(quoted_fields_and_a_header_line_are_understood),
        cmocka_unit_test(a_first_line_of_garbage_is_reported_not_taken_for_a_header),
        cmocka_unit_test(control_bytes_in_a_bad_line_are_escaped),
        cmocka_unit_test(escaping_keeps_text_and_utf8_and_shows_the_rest_as_hex),
        cmocka_unit_test(header_units_are_honoured_not_guessed),
        cmocka_unit_test(unknown_columns_and_units_are_refused_naming_the_column),
        cmocka_unit_test(iso_timestamps_with_a_zone_are_read),
        cmocka_unit_test(epoch_milliseconds_in_a_column_of_seconds_are_refused_with_a_hint),
        cmocka_unit_test(a_bom_crlf_and_rfc4180_quotes_are_read),
        cmocka_unit_test(a_caller_column_lets_min_failing_sources_tell_one_caller_from_an_outage),
        cmocka_unit_test(a_shadow_log_is_compared_call_by_call),
        cmocka_unit_test(a_bad_would_reject_value_is_reported_with_its_line),
        cmocka_unit_test(the_configuration_that_wrote_a_shadow_log_agrees_with_it_on_every_call),
        cmocka_unit_test(the_json_summary_has_its_documented_keys),
        cmocka_unit_test(json_strings_are_escaped_and_valid_utf8),
        cmocka_unit_test(trips_count_closed_to_open_only),
        cmocka_unit_test(library_messages_show_durations_for_people),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
