/* SPDX-License-Identifier: MIT */
/*
 * test_export_json.c - the JSON reports, parsed back with a real JSON parser
 * (jansson), and the public health report, which must reveal no name and no
 * count.
 */
#include "test_util.h"

#include <breaker/registry.h>

#include "export/text_out.h" /* the string escaper, tested on every byte */

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

static char text[256 * 1024];

static json_t *parse(const char *s) {
    json_error_t err;
    /* Strict: the whole input must be one JSON text (no trailing garbage), no
     * duplicate keys. */
    json_t *root = json_loads(s, JSON_REJECT_DUPLICATES, &err);
    if (root == NULL)
        fail_msg("invalid JSON at %d:%d: %s\n---\n%s", err.line, err.column, err.text, s);
    return root;
}

static breaker *get(breaker_registry *reg, const char *name) {
    breaker *b = NULL;
    assert_int_equal(breaker_registry_get(reg, name, &b), BREAKER_OK);
    return b;
}

static breaker_registry *make_registry(struct fake_clock *clock) {
    breaker_registry_config rc;
    breaker_registry_config_init(&rc);
    test_config(&rc.defaults, clock, NULL);
    rc.defaults.trip = BREAKER_TRIP_CONSECUTIVE;
    rc.defaults.failure_threshold = 2;
    rc.defaults.open_ns = 5 * SEC;
    rc.clock = fake_clock_read;
    rc.clock_ctx = clock;
    breaker_registry *reg = NULL;
    assert_int_equal(breaker_registry_create(&rc, &reg), BREAKER_OK);
    return reg;
}

static json_t *find_breaker(json_t *root, const char *name) {
    json_t *list = json_object_get(root, "breakers");
    assert_true(json_is_array(list));
    size_t i;
    json_t *b;
    json_array_foreach(list, i, b) {
        if (strcmp(json_string_value(json_object_get(b, "name")), name) == 0) return b;
    }
    fail_msg("breaker %s not in report", name);
    return NULL;
}

static json_int_t int_at(json_t *obj, const char *k1, const char *k2) {
    json_t *v = json_object_get(obj, k1);
    if (k2 != NULL) v = json_object_get(v, k2);
    if (!json_is_integer(v)) fail_msg("%s.%s is not an integer", k1, k2 ? k2 : "");
    return json_integer_value(v);
}

static void the_operators_report_parses_back_with_states_counters_and_evidence(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker_registry *reg = make_registry(&clock);
    breaker *db = get(reg, "db.primary");
    breaker *cache = get(reg, "cache");
    call_ok(cache, BREAKER_SUCCESS);
    call_ok(db, BREAKER_FAILURE);
    call_ok(db, BREAKER_FAILURE); /* opens */
    fake_clock_advance(&clock, 1500 * MS);

    size_t len = 0;
    assert_int_equal(breaker_registry_export_json(reg, text, sizeof(text), &len), BREAKER_OK);
    assert_int_equal(len, strlen(text));
    json_t *root = parse(text);
    assert_true(json_is_true(json_object_get(root, "degraded")));
    assert_int_equal(int_at(root, "registry", "breakers"), 2);
    assert_int_equal(json_array_size(json_object_get(root, "breakers")), 2);
    /* Sorted by name. */
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(root, "breakers"), 0), "name")),
                        "cache");

    json_t *jdb = find_breaker(root, "db.primary");
    assert_string_equal(json_string_value(json_object_get(jdb, "state")), "open");
    assert_true(json_is_true(json_object_get(jdb, "degraded")));
    assert_true(json_is_false(json_object_get(jdb, "flapping")));
    assert_true(json_is_false(json_object_get(jdb, "awaiting_probe")));
    assert_true(json_real_value(json_object_get(jdb, "state_age_seconds")) == 1.5);
    assert_true(json_real_value(json_object_get(jdb, "retry_after_seconds")) == 3.5);
    assert_int_equal(int_at(jdb, "counters", "failures"), 2);
    assert_int_equal(int_at(jdb, "counters", "admitted"), 2);
    json_t *tr = json_object_get(jdb, "transitions");
    assert_int_equal(json_array_size(tr), 1);
    json_t *t0 = json_array_get(tr, 0);
    assert_string_equal(json_string_value(json_object_get(t0, "from")), "closed");
    assert_string_equal(json_string_value(json_object_get(t0, "to")), "open");
    assert_string_equal(json_string_value(json_object_get(t0, "reason")), "consecutive_failures");
    assert_true(json_real_value(json_object_get(t0, "seconds_ago")) == 1.5);
    /* Wall-clock times: the report's, less the age on the breaker's clock. */
    double now_unix = json_real_value(json_object_get(root, "unix_time"));
    assert_true(now_unix > 1.6e9);
    assert_true(json_real_value(json_object_get(t0, "unix_time")) ==
                json_real_value(json_object_get(jdb, "state_since_unix_time")));
    double age = now_unix - json_real_value(json_object_get(t0, "unix_time"));
    assert_true(age > 1.49 && age < 1.51);
    assert_true(json_real_value(json_object_get(t0, "open_seconds")) == 5.0);
    assert_int_equal(int_at(t0, "evidence", "consecutive_failures"), 2);
    assert_int_equal(int_at(t0, "generation", NULL), 2);

    json_t *jc = find_breaker(root, "cache");
    assert_string_equal(json_string_value(json_object_get(jc, "state")), "closed");
    assert_int_equal(int_at(jc, "counters", "successes"), 1);
    assert_int_equal(json_array_size(json_object_get(jc, "transitions")), 0);
    assert_true(json_is_object(json_object_get(jc, "window")));
    json_decref(root);

    /* Forced open has no retry time: null, not a made-up number. */
    assert_int_equal(breaker_force_open(cache), BREAKER_OK);
    assert_int_equal(breaker_registry_export_json(reg, text, sizeof(text), &len), BREAKER_OK);
    root = parse(text);
    assert_true(json_is_null(json_object_get(find_breaker(root, "cache"), "retry_after_seconds")));
    json_decref(root);

    breaker_registry_release(reg, db);
    breaker_registry_release(reg, cache);
    breaker_registry_destroy(reg);
}

static void a_truncated_report_is_never_returned(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker_registry *reg = make_registry(&clock);
    breaker *b = get(reg, "x");
    size_t need = 0;
    char small[32];
    assert_int_equal(breaker_registry_export_json(reg, small, sizeof(small), &need),
                     BREAKER_ENOSPC);
    assert_string_equal(small, "");
    char *buf = malloc(need);
    size_t len;
    assert_int_equal(breaker_registry_export_json(reg, buf, need, &len), BREAKER_OK);
    assert_int_equal(len + 1, need);
    json_decref(parse(buf));
    free(buf);
    breaker_registry_release(reg, b);
    breaker_registry_destroy(reg);
}

static double real_at(json_t *obj, const char *k1, const char *k2) {
    json_t *v = json_object_get(obj, k1);
    if (k2 != NULL) v = json_object_get(v, k2);
    if (!json_is_number(v)) fail_msg("%s.%s is not a number", k1, k2 ? k2 : "");
    return json_number_value(v);
}

static void set_override(breaker_registry *reg, const char *name, const breaker_config *cfg) {
    char msg[200] = "";
    if (breaker_registry_set_config(reg, name, cfg, msg, sizeof(msg)) != BREAKER_OK)
        fail_msg("override %s: %s", name, msg);
}

/* The newer statistics: refusals during a ramp and the share admitted, the
 * successes of a half-open in progress, and how many callers a trip's
 * failures came from. */
static void the_report_shows_ramps_probe_progress_and_failing_sources(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker_registry *reg = make_registry(&clock);
    breaker_config cfg;
    test_config(&cfg, &clock, NULL);
    cfg.trip = BREAKER_TRIP_CONSECUTIVE;
    cfg.failure_threshold = 2;
    cfg.open_ns = 5 * SEC;
    cfg.half_open_successes = 1;
    cfg.ramp_ns = 60 * SEC;
    set_override(reg, "orders.create", &cfg);
    cfg.ramp_ns = 0;
    cfg.min_failing_sources = 2;
    set_override(reg, "tenants.shared", &cfg);

    breaker *ramping = get(reg, "orders.create");
    call_ok(ramping, BREAKER_FAILURE);
    call_ok(ramping, BREAKER_FAILURE);
    fake_clock_advance(&clock, 5 * SEC);
    call_ok(ramping, BREAKER_SUCCESS); /* the probe closes it into the ramp */
    int refused = 0;
    for (int i = 0; i < 25; i++) {
        breaker_permit p;
        if (breaker_acquire(ramping, &p) == BREAKER_OK)
            assert_int_equal(breaker_complete(ramping, &p, BREAKER_SUCCESS), BREAKER_OK);
        else
            refused++;
    }

    breaker *recovering = get(reg, "db.primary"); /* the template: 3 successes to close */
    call_ok(recovering, BREAKER_FAILURE);
    call_ok(recovering, BREAKER_FAILURE);
    fake_clock_advance(&clock, 5 * SEC);
    call_ok(recovering, BREAKER_SUCCESS);

    breaker *shared = get(reg, "tenants.shared");
    breaker_permit p;
    for (uint64_t source = 1; source <= 2; source++) {
        assert_int_equal(breaker_acquire(shared, &p), BREAKER_OK);
        assert_int_equal(breaker_complete_from(shared, &p, BREAKER_FAILURE, source), BREAKER_OK);
    }
    assert_int_equal(breaker_get_state(shared), BREAKER_OPEN);

    size_t len = 0;
    assert_int_equal(breaker_registry_export_json(reg, text, sizeof(text), &len), BREAKER_OK);
    json_t *root = parse(text);
    json_t *jr = find_breaker(root, "orders.create");
    assert_int_equal(refused, 23);
    assert_int_equal(int_at(jr, "counters", "rejected_ramp"), refused);
    /* 5 s into a 60 s ramp from 10%: 0.1 + 0.9 * 5 / 60. */
    assert_true(real_at(jr, "ramp_share", NULL) == 0.175);
    json_t *jp = find_breaker(root, "db.primary");
    assert_string_equal(json_string_value(json_object_get(jp, "state")), "half_open");
    assert_int_equal(int_at(jp, "counters", "probe_successes"), 1);
    assert_true(real_at(jp, "ramp_share", NULL) == 0.0);
    json_t *js = find_breaker(root, "tenants.shared");
    json_t *trip = json_array_get(json_object_get(js, "transitions"), 0);
    assert_int_equal(int_at(trip, "evidence", "failing_sources"), 2);
    json_decref(root);

    breaker_registry_release(reg, ramping);
    breaker_registry_release(reg, recovering);
    breaker_registry_release(reg, shared);
    breaker_registry_destroy(reg);
}

/* Every byte value, and UTF-8 both well-formed and broken, through the
 * escaper: the result parses and means the same string (U+FFFD for bytes that
 * are not UTF-8). */
static void the_string_escaper_yields_valid_json_for_any_bytes(void **state) {
    (void)state;
    char in[300];
    size_t n = 0;
    for (int c = 1; c < 256; c++)
        in[n++] = (char)c;
    in[n] = '\0';
    /* Well-formed: 2-, 3- and 4-byte forms. Broken: a surrogate, an overlong. */
    strcat(in, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xed\xa0\x80 \xc0\xaf");

    char out[4096];
    struct breaker__out o;
    breaker__out_init(&o, out, sizeof(out));
    breaker__out_mem(&o, "[", 1);
    breaker__out_json_string(&o, in);
    breaker__out_mem(&o, ",", 1);
    breaker__out_json_string(&o, "caf\xc3\xa9 \"q\" \\ \t");
    breaker__out_mem(&o, "]", 1);
    assert_int_equal(breaker__out_finish(&o, NULL), BREAKER_OK);

    json_t *root = parse(out);
    const char *s = json_string_value(json_array_get(root, 0));
    assert_non_null(s);
    /* The ASCII part comes back byte for byte. */
    for (int c = 1; c < 128; c++)
        assert_int_equal((unsigned char)s[c - 1], c);
    assert_non_null(strstr(s, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 "));
    assert_string_equal(json_string_value(json_array_get(root, 1)), "caf\xc3\xa9 \"q\" \\ \t");
    json_decref(root);
}

static void the_public_report_says_only_ok_or_degraded_and_leaks_no_names(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker_registry *reg = make_registry(&clock);
    const char *names[] = {"payments-provider-acme", "db.primary", "secret_partner_api"};
    breaker *b[3];
    for (int i = 0; i < 3; i++) {
        b[i] = get(reg, names[i]);
        call_ok(b[i], BREAKER_SUCCESS);
    }
    size_t len;
    assert_int_equal(breaker_registry_export_health_json(reg, text, sizeof(text), &len),
                     BREAKER_OK);
    assert_string_equal(text, "{\"status\":\"ok\"}\n");
    assert_int_equal(breaker_registry_degraded(reg), 0);

    call_ok(b[2], BREAKER_FAILURE);
    call_ok(b[2], BREAKER_FAILURE);
    assert_int_equal(breaker_registry_export_health_json(reg, text, sizeof(text), &len),
                     BREAKER_OK);
    assert_string_equal(text, "{\"status\":\"degraded\"}\n");
    json_t *root = parse(text);
    assert_int_equal(json_object_size(root), 1);
    json_decref(root);
    for (int i = 0; i < 3; i++)
        assert_null(strstr(text, names[i]));
    for (const char *p = text; *p; p++)
        assert_false(*p >= '0' && *p <= '9'); /* no counts of any kind */
    /* The operators' report, by contrast, does name them. */
    assert_int_equal(breaker_registry_export_json(reg, text, sizeof(text), &len), BREAKER_OK);
    assert_non_null(strstr(text, "secret_partner_api"));

    char tiny[8];
    assert_int_equal(breaker_registry_export_health_json(reg, tiny, sizeof(tiny), &len),
                     BREAKER_ENOSPC);
    assert_int_equal(len, strlen("{\"status\":\"degraded\"}\n") + 1);
    for (int i = 0; i < 3; i++)
        breaker_registry_release(reg, b[i]);
    breaker_registry_destroy(reg);
}

/* The allocating variants: one call, no size to guess; the report carries
 * each breaker's configuration and whether its window holds enough calls to
 * judge. */
static void the_alloc_variants_return_whole_reports_with_config_and_window_readiness(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker_registry *reg = make_registry(&clock);
    breaker_config windowed;
    test_config(&windowed, &clock, NULL);
    windowed.trip = BREAKER_TRIP_COUNT_WINDOW;
    windowed.window_size = 10;
    windowed.min_calls = 4;
    set_override(reg, "search.index", &windowed);
    breaker *quiet = get(reg, "search.index");
    breaker *counted = get(reg, "payments.charge");
    for (int i = 0; i < 3; i++)
        call_ok(quiet, BREAKER_SUCCESS); /* 3 of the 4 calls it needs */

    char *out = NULL;
    size_t len = 1;
    assert_int_equal(breaker_registry_export_json_alloc(reg, &out, &len), BREAKER_OK);
    assert_non_null(out);
    assert_int_equal(strlen(out), len);
    json_t *root = parse(out);
    assert_string_equal(json_string_value(json_object_get(root, "library_version")),
                        breaker_version_string());
    json_t *q = find_breaker(root, "search.index");
    assert_int_equal(int_at(q, "window", "calls"), 3);
    assert_int_equal(int_at(q, "window", "min_calls"), 4);
    assert_true(json_is_false(json_object_get(json_object_get(q, "window"), "ready")));
    assert_string_equal(json_string_value(json_object_get(json_object_get(q, "config"), "trip")),
                        "count_window");
    assert_int_equal(int_at(q, "config", "window_size"), 10);
    assert_int_equal(int_at(q, "config", "min_calls"), 4);
    /* The consecutive policy has no window minimum: always ready. */
    json_t *c = find_breaker(root, "payments.charge");
    assert_int_equal(int_at(c, "window", "min_calls"), 0);
    assert_true(json_is_true(json_object_get(json_object_get(c, "window"), "ready")));
    assert_int_equal(int_at(c, "config", "failure_threshold"), 2);
    json_decref(root);
    free(out);

    call_ok(quiet, BREAKER_SUCCESS);
    assert_int_equal(breaker_registry_export_json_alloc(reg, &out, NULL), BREAKER_OK);
    root = parse(out);
    q = find_breaker(root, "search.index");
    assert_true(json_is_true(json_object_get(json_object_get(q, "window"), "ready")));
    json_decref(root);
    free(out);

    assert_int_equal(breaker_registry_export_health_json_alloc(reg, &out, &len), BREAKER_OK);
    assert_string_equal(out, "{\"status\":\"ok\"}\n");
    assert_int_equal(len, strlen(out));
    free(out);
    assert_int_equal(breaker_registry_release(reg, quiet), BREAKER_OK);
    assert_int_equal(breaker_registry_release(reg, counted), BREAKER_OK);
    breaker_registry_destroy(reg);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_operators_report_parses_back_with_states_counters_and_evidence),
        cmocka_unit_test(the_report_shows_ramps_probe_progress_and_failing_sources),
        cmocka_unit_test(a_truncated_report_is_never_returned),
        cmocka_unit_test(the_string_escaper_yields_valid_json_for_any_bytes),
        cmocka_unit_test(the_public_report_says_only_ok_or_degraded_and_leaks_no_names),
        cmocka_unit_test(the_alloc_variants_return_whole_reports_with_config_and_window_readiness),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
