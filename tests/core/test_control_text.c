/* SPDX-License-Identifier: MIT */
/*
 * test_control_text.c - who and why of an operator's control (issue 25):
 * breaker_control_apply() records its text in the event of the transition
 * it makes, and only there; a registry's history and snapshots keep it; the
 * JSON report prints it; bad text or arguments are refused with the field
 * named and nothing done.
 */
#include "breaker_control.h"
#include "breaker_fixture.h"

#include <breaker/registry.h>

#include <stdio.h>

static breaker_config *control_config(struct breaker_fixture *f, uint64_t now_ns) {
    breaker_config *cfg = fixture_init_consecutive(f, now_ns, 1);
    cfg->open_ns = 10 * SEC;
    cfg->half_open_successes = 1;
    return cfg;
}

static void apply_ok(breaker *b, enum breaker_control_action action, uint64_t for_ns,
                     const char *who, const char *why) {
    char msg[160] = "";
    assert_int_equal(control_apply(b, action, for_ns, who, why, msg, sizeof msg), BREAKER_OK);
}

/* Every byte of a text array after its NUL is zero: the event holds no
 * stale bytes (of an earlier, longer text) a copy would carry along. */
static void assert_text(const char *field, size_t size, const char *want) {
    assert_string_equal(field, want);
    for (size_t i = strlen(want); i < size; i++)
        assert_int_equal(field[i], 0);
}

static void each_control_records_its_text_in_its_event(void **state) {
    (void)state;
    struct breaker_fixture f;
    control_config(&f, 0);
    breaker *b = fixture_create(&f);

    apply_ok(b, BREAKER_CONTROL_FORCE_OPEN, 0, "alice@ops1", "db failover, ticket OPS-77");
    const breaker_event *ev = fixture_last_event(&f);
    assert_int_equal(ev->to, BREAKER_FORCED_OPEN);
    assert_int_equal(ev->reason, BREAKER_REASON_FORCED_OPEN);
    assert_text(ev->who, sizeof ev->who, "alice@ops1");
    assert_text(ev->why, sizeof ev->why, "db failover, ticket OPS-77");

    apply_ok(b, BREAKER_CONTROL_FORCE_CLOSED, 0, "bob", "hold closed");
    ev = fixture_last_event(&f);
    assert_int_equal(ev->to, BREAKER_FORCED_CLOSED);
    assert_text(ev->who, sizeof ev->who, "bob");
    assert_text(ev->why, sizeof ev->why, "hold closed");

    apply_ok(b, BREAKER_CONTROL_RESET, 0, "carol", NULL);
    ev = fixture_last_event(&f);
    assert_int_equal(ev->reason, BREAKER_REASON_RESET);
    assert_text(ev->who, sizeof ev->who, "carol");
    assert_text(ev->why, sizeof ev->why, "");

    apply_ok(b, BREAKER_CONTROL_OPEN_FOR, 5 * SEC, NULL, "maintenance window");
    ev = fixture_last_event(&f);
    assert_int_equal(ev->to, BREAKER_OPEN);
    assert_int_equal(ev->reason, BREAKER_REASON_OPERATOR);
    assert_int_equal(ev->open_ns, 5 * SEC);
    assert_text(ev->who, sizeof ev->who, "");
    assert_text(ev->why, sizeof ev->why, "maintenance window");
    assert_int_equal(stats_of(b).operator_opens, 1);

    /* A forced close with an end: its expiry is no control's (empty). */
    apply_ok(b, BREAKER_CONTROL_FORCE_CLOSED, 2 * SEC, "dave", "for two seconds");
    ev = fixture_last_event(&f);
    assert_int_equal(ev->to, BREAKER_FORCED_CLOSED);
    assert_text(ev->who, sizeof ev->who, "dave");
    fake_clock_advance(&f.clock, 3 * SEC);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    ev = fixture_last_event(&f);
    assert_int_equal(ev->reason, BREAKER_REASON_FORCE_EXPIRED);
    assert_text(ev->who, sizeof ev->who, "");
    assert_text(ev->why, sizeof ev->why, "");
    breaker_destroy(b);
}

static void other_transitions_carry_no_text(void **state) {
    (void)state;
    struct breaker_fixture f;
    control_config(&f, 0);
    breaker *b = fixture_create(&f);
    apply_ok(b, BREAKER_CONTROL_RESET, 0, "erin", "start clean");
    /* A trip, a probe, a recovery: the machine's own, no text. */
    call_ok(b, BREAKER_FAILURE);
    const breaker_event *ev = fixture_last_event(&f);
    assert_int_equal(ev->reason, BREAKER_REASON_CONSECUTIVE_FAILURES);
    assert_text(ev->who, sizeof ev->who, "");
    assert_text(ev->why, sizeof ev->why, "");
    fake_clock_advance(&f.clock, 11 * SEC);
    call_ok(b, BREAKER_SUCCESS);
    unsigned n = fixture_events(&f);
    assert_true(n >= 4);
    for (unsigned i = 1; i < n; i++) {
        assert_text(f.log.events[i].who, sizeof f.log.events[i].who, "");
        assert_text(f.log.events[i].why, sizeof f.log.events[i].why, "");
    }
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    /* The plain functions: no text either. */
    assert_int_equal(breaker_force_open(b), BREAKER_OK);
    assert_text(fixture_last_event(&f)->who, BREAKER_WHO_MAX + 1, "");
    assert_int_equal(breaker_reset(b), BREAKER_OK);
    assert_text(fixture_last_event(&f)->why, BREAKER_WHY_MAX + 1, "");
    breaker_destroy(b);
}

static void a_control_that_changes_nothing_records_nothing(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker_config *cfg = control_config(&f, 0);
    breaker *b = fixture_create(&f);
    apply_ok(b, BREAKER_CONTROL_FORCE_OPEN, 0, "frank", "first");
    unsigned n = fixture_events(&f);
    uint64_t gen = breaker_generation(b);
    apply_ok(b, BREAKER_CONTROL_FORCE_OPEN, 0, "grace", "second: already so");
    assert_int_equal(fixture_events(&f), n);
    assert_int_equal(breaker_generation(b), gen);
    assert_string_equal(fixture_last_event(&f)->who, "frank");
    /* A server-directed open leaves an operator's forced state alone. */
    breaker_control c;
    breaker_control_init(&c);
    c.action = BREAKER_CONTROL_OPEN_FOR;
    c.reason = BREAKER_REASON_SERVER_DIRECTED;
    c.for_ns = SEC;
    c.who = "api.example";
    assert_int_equal(breaker_control_apply(b, &c, NULL, 0), BREAKER_OK);
    assert_int_equal(fixture_events(&f), n);
    assert_int_equal(breaker_get_state(b), BREAKER_FORCED_OPEN);
    /* From CLOSED it opens, capped as breaker_open_for() is, with the text. */
    assert_int_equal(breaker_reset(b), BREAKER_OK);
    c.for_ns = 3600 * SEC;
    assert_int_equal(breaker_control_apply(b, &c, NULL, 0), BREAKER_OK);
    const breaker_event *ev = fixture_last_event(&f);
    assert_int_equal(ev->reason, BREAKER_REASON_SERVER_DIRECTED);
    assert_int_equal(ev->open_ns, cfg->open_max_ns);
    assert_string_equal(ev->who, "api.example");
    breaker_destroy(b);
}

static void refused(breaker *b, const breaker_control *c, const char *want) {
    char msg[200] = "";
    uint64_t gen = breaker_generation(b);
    assert_int_equal(breaker_control_apply(b, c, msg, sizeof msg), BREAKER_EINVAL);
    assert_non_null(strstr(msg, want));
    assert_int_equal(breaker_generation(b), gen); /* nothing done */
}

static void bad_controls_are_refused_naming_the_field(void **state) {
    (void)state;
    struct breaker_fixture f;
    control_config(&f, 0);
    breaker *b = fixture_create(&f);
    char who[BREAKER_WHO_MAX + 2], why[BREAKER_WHY_MAX + 2];
    memset(who, 'w', sizeof who - 1);
    who[sizeof who - 1] = '\0'; /* 65 bytes */
    memset(why, 'y', sizeof why - 1);
    why[sizeof why - 1] = '\0'; /* 201 bytes */
    breaker_control c;
    breaker_control_init(&c);
    c.who = who;
    refused(b, &c, "who: 65 bytes, at most 64");
    c.who = NULL;
    c.why = why;
    refused(b, &c, "why: 201 bytes, at most 200");
    c.why = "two\nlines";
    refused(b, &c, "why: a control character at byte 4");
    c.why = "tab\there";
    refused(b, &c, "why: a control character at byte 4");
    c.why = NULL;
    c.who = "del\x7f";
    refused(b, &c, "who: a control character at byte 4");
    c.who = NULL;
    c.for_ns = SEC;
    refused(b, &c, "for_ns: must be 0 for FORCE_OPEN");
    c.action = BREAKER_CONTROL_RESET;
    refused(b, &c, "for_ns: must be 0 for RESET");
    c.action = BREAKER_CONTROL_FORCE_CLOSED;
    c.for_ns = 366 * 24 * 3600 * SEC;
    refused(b, &c, "for_ns: 0 (until reset) or 1 ns .. 365 days");
    c.action = BREAKER_CONTROL_OPEN_FOR;
    refused(b, &c, "for_ns: at most 365 days");
    c.for_ns = SEC;
    c.reason = BREAKER_REASON_RESET;
    refused(b, &c, "reason: BREAKER_REASON_OPERATOR or _SERVER_DIRECTED");
    c.reason = BREAKER_REASON_OPERATOR;
    c.action = (enum breaker_control_action)7;
    refused(b, &c, "action: a BREAKER_CONTROL_* value");
    assert_int_equal(fixture_events(&f), 0);
    /* The longest texts are whole in the event; UTF-8 is kept as given. */
    who[BREAKER_WHO_MAX] = '\0';
    why[BREAKER_WHY_MAX] = '\0';
    apply_ok(b, BREAKER_CONTROL_FORCE_OPEN, 0, who, why);
    assert_text(fixture_last_event(&f)->who, BREAKER_WHO_MAX + 1, who);
    assert_text(fixture_last_event(&f)->why, BREAKER_WHY_MAX + 1, why);
    apply_ok(b, BREAKER_CONTROL_RESET, 0, "zo\xc3\xab", "caf\xc3\xa9");
    assert_text(fixture_last_event(&f)->who, BREAKER_WHO_MAX + 1, "zo\xc3\xab");
    fixture_destroy(&f);
}

static breaker_registry *text_registry(struct breaker_fixture *f, size_t history) {
    breaker_registry_config rc;
    breaker_registry_config_init(&rc);
    rc.defaults = *control_config(f, 0);
    rc.defaults.on_event = NULL; /* the registry listens */
    rc.defaults.event_ctx = NULL;
    rc.history_size = (uint32_t)history;
    breaker_registry *reg = NULL;
    assert_int_equal(breaker_registry_create(&rc, &reg), BREAKER_OK);
    return reg;
}

struct heard {
    unsigned n;
    char who[8][BREAKER_WHO_MAX + 1];
};

static void hear(void *ctx, const breaker_registry_event *ev) {
    struct heard *h = ctx;
    if (ev->kind == BREAKER_REGISTRY_TRANSITION && h->n < 8)
        memcpy(h->who[h->n++], ev->transition.who, sizeof h->who[0]);
}

static void the_history_and_snapshots_keep_the_text(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker_registry *reg = text_registry(&f, 8);
    struct heard heard = {0};
    assert_int_equal(breaker_registry_add_listener(reg, hear, &heard), BREAKER_OK);
    breaker *b = NULL;
    assert_int_equal(breaker_registry_get(reg, "payments.charge", &b), BREAKER_OK);
    apply_ok(b, BREAKER_CONTROL_FORCE_OPEN, 0, "alice", "card processor down");
    apply_ok(b, BREAKER_CONTROL_RESET, 0, "bob", "processor back");
    call_ok(b, BREAKER_FAILURE); /* a trip: no text */
    breaker_event hist[8];
    breaker_registry_info info;
    assert_int_equal(breaker_registry_info_get(reg, b, &info, hist, 8), BREAKER_OK);
    assert_int_equal(info.history_len, 3);
    assert_int_equal(hist[0].reason, BREAKER_REASON_FORCED_OPEN);
    assert_text(hist[0].who, sizeof hist[0].who, "alice");
    assert_text(hist[0].why, sizeof hist[0].why, "card processor down");
    assert_int_equal(hist[1].reason, BREAKER_REASON_RESET);
    assert_text(hist[1].who, sizeof hist[1].who, "bob");
    assert_text(hist[1].why, sizeof hist[1].why, "processor back");
    assert_int_equal(hist[2].reason, BREAKER_REASON_CONSECUTIVE_FAILURES);
    assert_text(hist[2].who, sizeof hist[2].who, "");
    /* The listeners heard it with the transition. */
    assert_int_equal(heard.n, 3);
    assert_string_equal(heard.who[0], "alice");
    assert_string_equal(heard.who[1], "bob");
    assert_string_equal(heard.who[2], "");
    /* The JSON report prints it, escaped. */
    apply_ok(b, BREAKER_CONTROL_FORCE_CLOSED, 0, "carol \"c\" \\ ops",
             "hold: r\xc3\xa9sum\xc3\xa9");
    static char text[1 << 16];
    assert_int_equal(breaker_registry_export_json(reg, text, sizeof(text), NULL), BREAKER_OK);
    assert_non_null(strstr(text, "\"reason\":\"forced_open\",\"open_seconds\":0.000000000,"
                                 "\"who\":\"alice\",\"why\":\"card processor down\""));
    assert_non_null(strstr(text, "\"who\":\"bob\",\"why\":\"processor back\""));
    assert_non_null(strstr(text, "\"reason\":\"consecutive_failures\""));
    assert_non_null(strstr(text, "\"who\":\"\",\"why\":\"\""));
    assert_non_null(strstr(text, "\"who\":\"carol \\\"c\\\" \\\\ ops\",\"why\":\"hold: "
                                 "r\xc3\xa9sum\xc3\xa9\""));
    assert_int_equal(breaker_registry_release(reg, b), BREAKER_OK);
    breaker_registry_destroy(reg);
}

/* A full ring (history_size 2, and more records held for flapping) and the
 * read's working copy beyond its stack buffer keep each record's own text. */
static void a_long_history_keeps_each_records_text(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker_registry *reg = text_registry(&f, 40);
    breaker *b = NULL;
    assert_int_equal(breaker_registry_get(reg, "db", &b), BREAKER_OK);
    char who[16];
    for (int i = 0; i < 50; i++) {
        snprintf(who, sizeof who, "op%d", i);
        apply_ok(b, i % 2 ? BREAKER_CONTROL_RESET : BREAKER_CONTROL_FORCE_OPEN, 0, who, "drill");
        fake_clock_advance(&f.clock, SEC);
    }
    breaker_event hist[40];
    breaker_registry_info info;
    assert_int_equal(breaker_registry_info_get(reg, b, &info, hist, 40), BREAKER_OK);
    assert_int_equal(info.history_len, 40);
    for (int i = 0; i < 40; i++) {
        snprintf(who, sizeof who, "op%d", i + 10);
        assert_text(hist[i].who, sizeof hist[i].who, who);
        assert_text(hist[i].why, sizeof hist[i].why, "drill");
    }
    assert_int_equal(breaker_registry_release(reg, b), BREAKER_OK);
    breaker_registry_destroy(reg);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(each_control_records_its_text_in_its_event),
        cmocka_unit_test(other_transitions_carry_no_text),
        cmocka_unit_test(a_control_that_changes_nothing_records_nothing),
        cmocka_unit_test(bad_controls_are_refused_naming_the_field),
        cmocka_unit_test(the_history_and_snapshots_keep_the_text),
        cmocka_unit_test(a_long_history_keeps_each_records_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
