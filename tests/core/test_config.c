/* SPDX-License-Identifier: MIT */
/*
 * test_config.c - the configuration and the API's small print: defaults, zero
 * meaning default, validation naming the field and its range, strerror.
 */
#include "test_util.h"

#include <math.h>
#include <stdio.h>

static void config_init_sets_the_documented_defaults(void **state) {
    (void)state;
    breaker_config cfg;
    memset(&cfg, 0x5a, sizeof(cfg));
    breaker_config_init(&cfg);
    assert_int_equal(cfg.trip, BREAKER_TRIP_TIME_WINDOW);
    assert_int_equal(cfg.failure_threshold, 5);
    assert_int_equal(cfg.window_size, 100);
    assert_int_equal(cfg.window_ns, 60 * SEC);
    assert_int_equal(cfg.window_buckets, 10);
    assert_int_equal(cfg.min_calls, 20);
    assert_true(cfg.failure_rate == 0.5);
    assert_int_equal(cfg.slow_call_ns, 0);
    assert_true(cfg.slow_call_rate == 0.0);
    assert_int_equal(cfg.open_ns, 30 * SEC);
    assert_true(cfg.open_backoff == 2.0);
    assert_int_equal(cfg.open_max_ns, 300 * SEC);
    assert_true(cfg.open_jitter == 0.2); /* on by default: a fleet must not probe in lockstep */
    assert_int_equal(cfg.half_open_max_probes, 1);
    assert_int_equal(cfg.half_open_successes, 3);
    assert_int_equal(cfg.probe_timeout_ns, 30 * SEC);
    assert_int_equal(cfg.cancelled_as, BREAKER_IGNORED);
    assert_null(cfg.clock);
    assert_null(cfg.on_event);
    assert_int_equal(cfg.seed, 0);
}

static void zero_fields_mean_the_defaults(void **state) {
    (void)state;
    breaker_config zero;
    memset(&zero, 0, sizeof(zero));
    zero.trip = BREAKER_TRIP_TIME_WINDOW;
    breaker *b = make_breaker(&zero);
    breaker_config eff, def;
    breaker_get_config(b, &eff);
    breaker_config_init(&def);
    assert_int_equal(eff.window_ns, def.window_ns);
    assert_int_equal(eff.min_calls, def.min_calls);
    assert_int_equal(eff.open_max_ns, def.open_max_ns);
    assert_int_equal(eff.half_open_successes, def.half_open_successes);
    assert_true(eff.seed != 0); /* drawn at create */
    test_breaker_destroy(b);
    assert_int_equal(test_breaker_create(NULL, &b), BREAKER_OK);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    test_breaker_destroy(b);
}

/* breaker_config_effective() is what breaker_create() runs: a breaker
 * made from an all-zero configuration reports (breaker_get_config) exactly
 * the effective values, seed aside (drawn at create); a set field is kept,
 * open_max_ns follows a longer open_ns, `out` may be `cfg`. */
static void effective_config_is_what_create_runs(void **state) {
    (void)state;
    breaker_config zero, eff, got;
    memset(&zero, 0, sizeof(zero));
    zero.trip = BREAKER_TRIP_COUNT_WINDOW;
    breaker_config_effective(&zero, &eff);
    assert_int_equal(eff.seed, 0);
    breaker *b = make_breaker(&zero);
    breaker_get_config(b, &got);
    test_breaker_destroy(b);
    eff.seed = got.seed;
    assert_int_equal(eff.trip, got.trip);
    assert_int_equal(eff.failure_threshold, got.failure_threshold);
    assert_int_equal(eff.window_size, got.window_size);
    assert_int_equal(eff.window_ns, got.window_ns);
    assert_int_equal(eff.window_buckets, got.window_buckets);
    assert_int_equal(eff.min_calls, got.min_calls);
    assert_true(eff.failure_rate == got.failure_rate);
    assert_int_equal(eff.open_ns, got.open_ns);
    assert_true(eff.open_backoff == got.open_backoff);
    assert_int_equal(eff.open_max_ns, got.open_max_ns);
    assert_true(eff.open_jitter == got.open_jitter); /* 0: meaningful, kept */
    assert_int_equal(eff.half_open_max_probes, got.half_open_max_probes);
    assert_int_equal(eff.half_open_successes, got.half_open_successes);
    assert_int_equal(eff.probe_timeout_ns, got.probe_timeout_ns);
    assert_true(eff.ramp_start == got.ramp_start);
    assert_int_equal(eff.cancelled_as, BREAKER_IGNORED);
    assert_int_equal(eff.cancelled_as, got.cancelled_as);

    breaker_config cfg;
    breaker_config_init(&cfg);
    cfg.open_ns = 600 * SEC; /* longer than the default cap of 5 min */
    cfg.open_max_ns = 0;
    cfg.min_calls = 7;
    cfg.seed = 42;
    breaker_config_effective(&cfg, &cfg); /* in place */
    assert_int_equal(cfg.open_max_ns, 600 * SEC);
    assert_int_equal(cfg.min_calls, 7);
    assert_int_equal(cfg.seed, 42);
}

struct bad_case {
    const char *field; /* the message must start with it */
    void (*apply)(breaker_config *cfg);
};

static void bad_trip(breaker_config *c) { c->trip = (enum breaker_trip)7; }
static void bad_threshold(breaker_config *c) { c->failure_threshold = 2000000; }
static void bad_window_size(breaker_config *c) { c->window_size = 5000000; }
static void bad_buckets(breaker_config *c) { c->window_buckets = 601; }
static void bad_window_ns(breaker_config *c) { c->window_ns = 9999999; }
static void bad_min_calls(breaker_config *c) { c->min_calls = 2000000; }
static void bad_rate_high(breaker_config *c) { c->failure_rate = 1.5; }
static void bad_rate_negative(breaker_config *c) { c->failure_rate = -0.1; }
static void bad_rate_nan(breaker_config *c) { c->failure_rate = NAN; }
static void bad_slow_rate(breaker_config *c) {
    c->slow_call_rate = 2.0;
    c->slow_call_ns = 1;
}
static void slow_rate_without_threshold(breaker_config *c) { c->slow_call_rate = 0.5; }
static void slow_rate_with_consecutive(breaker_config *c) {
    c->trip = BREAKER_TRIP_CONSECUTIVE;
    c->slow_call_rate = 0.5;
    c->slow_call_ns = MS;
}
static void bad_backoff(breaker_config *c) { c->open_backoff = 0.5; }
static void bad_open_max(breaker_config *c) {
    c->open_ns = 10 * SEC;
    c->open_max_ns = SEC;
}
static void bad_jitter(breaker_config *c) { c->open_jitter = 1.5; }
static void bad_probes(breaker_config *c) { c->half_open_max_probes = 5000; }
static void bad_successes(breaker_config *c) { c->half_open_successes = 5000; }
static void bad_cancelled_as(breaker_config *c) { c->cancelled_as = BREAKER_CANCELLED; }
static void bad_clock_ctx(breaker_config *c) { c->clock_ctx = c; }

static void bad_configuration_is_refused_naming_the_field(void **state) {
    (void)state;
    const struct bad_case cases[] = {
        {"trip", bad_trip},
        {"failure_threshold", bad_threshold},
        {"window_size", bad_window_size},
        {"window_buckets", bad_buckets},
        {"window_ns", bad_window_ns},
        {"min_calls", bad_min_calls},
        {"failure_rate", bad_rate_high},
        {"failure_rate", bad_rate_negative},
        {"failure_rate", bad_rate_nan},
        {"slow_call_rate", bad_slow_rate},
        {"slow_call_rate", slow_rate_without_threshold},
        {"slow_call_rate", slow_rate_with_consecutive},
        {"open_backoff", bad_backoff},
        {"open_max_ns", bad_open_max},
        {"open_jitter", bad_jitter},
        {"half_open_max_probes", bad_probes},
        {"half_open_successes", bad_successes},
        {"cancelled_as", bad_cancelled_as},
        {"clock_ctx", bad_clock_ctx},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        breaker_config cfg;
        breaker_config_init(&cfg);
        cases[i].apply(&cfg);
        char msg[256];
        assert_int_equal(breaker_config_validate(&cfg, msg, sizeof(msg)), BREAKER_EINVAL);
        print_message("%s\n", msg);
        assert_int_equal(strncmp(msg, cases[i].field, strlen(cases[i].field)), 0);
        breaker *b = (breaker *)&cfg; /* must be reset to NULL */
        assert_int_equal(test_breaker_create(&cfg, &b), BREAKER_EINVAL);
        assert_null(b);
    }
}

static void validation_messages_state_the_range(void **state) {
    (void)state;
    breaker_config cfg;
    breaker_config_init(&cfg);
    cfg.window_buckets = 1000;
    char msg[256];
    assert_int_equal(breaker_config_validate(&cfg, msg, sizeof(msg)), BREAKER_EINVAL);
    assert_non_null(strstr(msg, "between 1 and 600"));
    assert_non_null(strstr(msg, "got 1000"));
    /* A short buffer is truncated, never overrun; NULL is allowed. */
    char tiny[8];
    assert_int_equal(breaker_config_validate(&cfg, tiny, sizeof(tiny)), BREAKER_EINVAL);
    assert_int_equal(strlen(tiny), 7);
    assert_int_equal(breaker_config_validate(&cfg, NULL, 0), BREAKER_EINVAL);
    breaker_config_init(&cfg);
    assert_int_equal(breaker_config_validate(&cfg, msg, sizeof(msg)), BREAKER_OK);
    assert_string_equal(msg, "");
    assert_int_equal(test_breaker_create(&cfg, NULL), BREAKER_EINVAL);
}

/* The manual's ranges (breaker.h, struct breaker_config) are what validation
 * and breaker_config_set() enforce: the largest documented value passes both,
 * one more fails both, naming the field. Written from the manual's numbers,
 * so a change to the limits that leaves the manual behind fails here. */
struct documented_max {
    const char *key;
    size_t offset;
    uint32_t max;
};

static void documented_maxima_hold_everywhere(void **state) {
    (void)state;
    const struct documented_max maxima[] = {
        {"failure_threshold", offsetof(breaker_config, failure_threshold), 1000000},
        {"window_size", offsetof(breaker_config, window_size), 1000000},
        {"window_buckets", offsetof(breaker_config, window_buckets), 600},
        {"min_calls", offsetof(breaker_config, min_calls), 1000000},
        {"half_open_max_probes", offsetof(breaker_config, half_open_max_probes), 4095},
        {"half_open_successes", offsetof(breaker_config, half_open_successes), 4095},
    };
    for (size_t i = 0; i < sizeof(maxima) / sizeof(maxima[0]); i++) {
        const struct documented_max *d = &maxima[i];
        for (uint32_t v = d->max; v <= d->max + 1; v++) {
            breaker_config c;
            breaker_config_init(&c);
            c.trip = BREAKER_TRIP_COUNT_WINDOW;
            c.window_size = 1000000;
            c.window_ns = 600 * SEC; /* 1 ms per bucket with 600 of them */
            memcpy((char *)&c + d->offset, &v, sizeof(v));
            char msg[256] = "";
            int want = v == d->max ? BREAKER_OK : BREAKER_EINVAL;
            assert_int_equal(breaker_config_validate(&c, msg, sizeof(msg)), want);
            if (want != BREAKER_OK) assert_non_null(strstr(msg, d->key));
            char text[16];
            snprintf(text, sizeof(text), "%u", v);
            breaker_config t;
            breaker_config_init(&t);
            assert_int_equal(breaker_config_set(&t, d->key, text, msg, sizeof(msg)), want);
            if (want != BREAKER_OK) {
                assert_non_null(strstr(msg, d->key));
                char range[32];
                snprintf(range, sizeof(range), "to %u", d->max); /* the message states it */
                assert_non_null(strstr(msg, range));
            }
        }
    }
    /* Durations: 365 days is the documented top; a nanosecond more is refused. */
    breaker_config t;
    breaker_config_init(&t);
    char msg[256] = "";
    assert_int_equal(breaker_config_set(&t, "probe_timeout", "365d", msg, sizeof(msg)), BREAKER_OK);
    assert_int_equal(breaker_config_validate(&t, msg, sizeof(msg)), BREAKER_OK);
    t.probe_timeout_ns += 1;
    assert_int_equal(breaker_config_validate(&t, msg, sizeof(msg)), BREAKER_EINVAL);
    assert_non_null(strstr(msg, "365 days"));
    assert_int_equal(breaker_config_set(&t, "probe_timeout", "365.000000001d", msg, sizeof(msg)),
                     BREAKER_EINVAL);
    assert_int_equal(breaker_config_set(&t, "open_backoff", "100", msg, sizeof(msg)), BREAKER_OK);
    assert_int_equal(breaker_config_set(&t, "open_backoff", "100.5", msg, sizeof(msg)),
                     BREAKER_EINVAL);
    t.open_backoff = 100.5;
    assert_int_equal(breaker_config_validate(&t, msg, sizeof(msg)), BREAKER_EINVAL);
    assert_non_null(strstr(msg, "between 1 and 100"));
}

/* A message names the field the caller set: an `open` past the limit with
 * `open_max` left at 0 (which then follows `open`) is open's fault. */
static void validation_blames_the_field_that_was_set(void **state) {
    (void)state;
    breaker_config c;
    breaker_config_init(&c);
    c.open_ns = 400ull * 24 * 3600 * SEC;
    c.open_max_ns = 0;
    char msg[256];
    assert_int_equal(breaker_config_validate(&c, msg, sizeof(msg)), BREAKER_EINVAL);
    if (strncmp(msg, "open_ns:", 8) != 0) fail_msg("blames another field: %s", msg);
    breaker_config_init(&c);
    c.slow_call_ns = 400ull * 24 * 3600 * SEC;
    assert_int_equal(breaker_config_validate(&c, msg, sizeof(msg)), BREAKER_EINVAL);
    if (strncmp(msg, "slow_call_ns:", 13) != 0) fail_msg("blames another field: %s", msg);
    breaker_config_init(&c);
    c.window_ns = 400ull * 24 * 3600 * SEC;
    assert_int_equal(breaker_config_validate(&c, msg, sizeof(msg)), BREAKER_EINVAL);
    if (strncmp(msg, "window_ns:", 10) != 0) fail_msg("blames another field: %s", msg);
}

static void every_status_has_a_message_and_a_name(void **state) {
    (void)state;
    for (int s = 0; s <= BREAKER_EFORMAT; s++) {
        assert_string_not_equal(breaker_strerror(s), "unknown status");
        assert_string_not_equal(breaker_status_name(s), "UNKNOWN");
    }
    assert_string_equal(breaker_strerror(-1), "unknown status");
    assert_string_equal(breaker_strerror(9999), "unknown status");
    assert_string_equal(breaker_status_name(BREAKER_STALE), "STALE");
    assert_string_equal(breaker_state_name(BREAKER_HALF_OPEN), "half_open");
    assert_string_equal(breaker_state_name((enum breaker_state)99), "unknown");
    assert_string_equal(breaker_reason_name(BREAKER_REASON_PROBE_SLOW), "probe_slow");
    assert_string_equal(breaker_reason_name(BREAKER_REASON_OUTSIDE_CLOSE), "outside_close");
    assert_string_equal(breaker_reason_name(BREAKER_REASON_COUNT), "unknown");
    assert_string_equal(breaker_outcome_name(BREAKER_CANCELLED), "cancelled");
    assert_string_equal(breaker_trip_name(BREAKER_TRIP_COUNT_WINDOW), "count_window");
    char expect[32];
    snprintf(expect, sizeof(expect), "%d.%d.%d", BREAKER_VERSION_MAJOR, BREAKER_VERSION_MINOR,
             BREAKER_VERSION_PATCH);
    assert_string_equal(breaker_version_string(), expect);
}

/* Compound durations add their terms, units from large to small. */
static void compound_durations_add_their_terms(void **state) {
    (void)state;
    uint64_t ns = 7;
    assert_int_equal(breaker_parse_duration("1m30s", 0, &ns), BREAKER_OK);
    assert_int_equal(ns, 90 * SEC);
    assert_int_equal(breaker_parse_duration("1h2m3.5s", 0, &ns), BREAKER_OK);
    assert_int_equal(ns, 3723 * SEC + 500 * MS);
    assert_int_equal(breaker_parse_duration("1s500ms", 0, &ns), BREAKER_OK);
    assert_int_equal(ns, 1500 * MS);
    assert_int_equal(breaker_parse_duration("2d12h", 0, &ns), BREAKER_OK);
    assert_int_equal(ns, 60 * 3600 * SEC);
    ns = 7;
    const char *const bad[] = {"30s1m", "1m1m", "1m30", "1m 30s", "m30s", "1ms5m", "1s.", ""};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (breaker_parse_duration(bad[i], 1, &ns) != BREAKER_EINVAL)
            fail_msg("'%s' accepted", bad[i]);
        assert_int_equal(ns, 7);
    }
    breaker_config cfg;
    breaker_config_init(&cfg);
    char msg[128];
    assert_int_equal(breaker_config_set(&cfg, "open", "1m30s", msg, sizeof(msg)), BREAKER_OK);
    assert_int_equal(cfg.open_ns, 90 * SEC);
}

static void durations_parse_exactly_with_units(void **state) {
    (void)state;
    uint64_t ns = 7;
    assert_int_equal(breaker_parse_duration("0.1s", 1, &ns), BREAKER_OK);
    assert_int_equal(ns, 100 * MS);
    assert_int_equal(breaker_parse_duration("250ms", 1, &ns), BREAKER_OK);
    assert_int_equal(ns, 250 * MS);
    assert_int_equal(breaker_parse_duration("1500us", 1, &ns), BREAKER_OK);
    assert_int_equal(ns, 1500000);
    assert_int_equal(breaker_parse_duration("2m", 1, &ns), BREAKER_OK);
    assert_int_equal(ns, 120 * SEC);
    assert_int_equal(breaker_parse_duration("1d", 1, &ns), BREAKER_OK);
    assert_int_equal(ns, 86400 * SEC);
    assert_int_equal(breaker_parse_duration("42", 1, &ns), BREAKER_OK);
    assert_int_equal(ns, 42);
    assert_int_equal(breaker_parse_duration("1.5", SEC, &ns), BREAKER_OK);
    assert_int_equal(ns, 1500 * MS);
    /* Large values in small units, and many fraction digits, stay exact. */
    assert_int_equal(breaker_parse_duration("30000000000", 1, &ns), BREAKER_OK);
    assert_int_equal(ns, 30 * SEC);
    assert_int_equal(breaker_parse_duration("18446744073709551615ns", 1, &ns), BREAKER_OK);
    assert_int_equal(ns, UINT64_MAX);
    assert_int_equal(breaker_parse_duration("0.0000000001d", 1, &ns), BREAKER_OK);
    assert_int_equal(ns, 8640);
    ns = 7;
    const char *bad[] = {"",
                         "s",
                         "1.5ns",
                         "10 s",
                         "-1s",
                         "1e3s",
                         "5y",
                         "1.0000000001s",
                         "18446744073709551616ns",
                         "600000d"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        print_message("'%s'\n", bad[i]);
        assert_int_equal(breaker_parse_duration(bad[i], 1, &ns), BREAKER_EINVAL);
    }
    assert_int_equal(breaker_parse_duration("42", 0, &ns), BREAKER_EINVAL); /* unit required */
    assert_int_equal(ns, 7);
    assert_int_equal(breaker_parse_duration(NULL, 1, &ns), BREAKER_EINVAL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(config_init_sets_the_documented_defaults),
        cmocka_unit_test(zero_fields_mean_the_defaults),
        cmocka_unit_test(effective_config_is_what_create_runs),
        cmocka_unit_test(bad_configuration_is_refused_naming_the_field),
        cmocka_unit_test(validation_messages_state_the_range),
        cmocka_unit_test(documented_maxima_hold_everywhere),
        cmocka_unit_test(validation_blames_the_field_that_was_set),
        cmocka_unit_test(every_status_has_a_message_and_a_name),
        cmocka_unit_test(durations_parse_exactly_with_units),
        cmocka_unit_test(compound_durations_add_their_terms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
