/*
 * test_replay.c - `breaker replay`: hand-written traces with known
 * transition times, malformed lines, flapping, and byte-for-byte
 * deterministic reports.
 */
#define _GNU_SOURCE
#include "test_util.h"

#include "tool.h"

#include <stdio.h>
#include <stdlib.h>

#ifndef TEST_DATA_DIR
#error "TEST_DATA_DIR must name tests/data"
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

/* Read tests/data/FILE (no malformed lines) and replay it under SPEC. */
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
