/* SPDX-License-Identifier: MIT */
/*
 * test_config_text.c - breaker_config_set(): every key, units, ranges, bad
 * values, and the error message naming the key and the accepted range.
 */
#include "test_util.h"

#include <stdio.h>

/* Set key=value on a fresh default configuration; assert success. */
static breaker_config set_ok(const char *key, const char *value) {
    breaker_config cfg;
    breaker_config_init(&cfg);
    char msg[256] = "untouched";
    int rc = breaker_config_set(&cfg, key, value, msg, sizeof(msg));
    if (rc != BREAKER_OK) fail_msg("%s=%s: rc %d: %s", key, value, rc, msg);
    assert_string_equal(msg, "");
    return cfg;
}

/* Set key=value; assert the status, that the message names the key and
 * contains `fragment`, and that the configuration did not change. */
static void set_bad(const char *key, const char *value, int want, const char *fragment) {
    breaker_config cfg, before;
    breaker_config_init(&cfg);
    cfg.seed = 7;
    before = cfg;
    char msg[512];
    int rc = breaker_config_set(&cfg, key, value, msg, sizeof(msg));
    if (rc != want) fail_msg("%s=%s: got rc %d (%s), want %d", key, value, rc, msg, want);
    if (strstr(msg, key) == NULL) fail_msg("message does not name '%s': %s", key, msg);
    if (strstr(msg, fragment) == NULL) fail_msg("message lacks '%s': %s", fragment, msg);
    assert_memory_equal(&cfg, &before, sizeof(cfg));
}

static void trip_accepts_the_three_policy_names(void **state) {
    (void)state;
    assert_int_equal(set_ok("trip", "consecutive").trip, BREAKER_TRIP_CONSECUTIVE);
    assert_int_equal(set_ok("trip", "count_window").trip, BREAKER_TRIP_COUNT_WINDOW);
    assert_int_equal(set_ok("trip", "time_window").trip, BREAKER_TRIP_TIME_WINDOW);
    assert_int_equal(set_ok("trip", "Consecutive").trip, BREAKER_TRIP_CONSECUTIVE);
    set_bad("trip", "window", BREAKER_EINVAL, "consecutive, count_window or time_window");
    set_bad("trip", "", BREAKER_EINVAL, "got ''");
}

static void counts_accept_whole_numbers_within_their_range(void **state) {
    (void)state;
    assert_int_equal(set_ok("failure_threshold", "7").failure_threshold, 7);
    assert_int_equal(set_ok("failure_threshold", "1000000").failure_threshold, 1000000);
    assert_int_equal(set_ok("failure_threshold", "0").failure_threshold, 0);
    assert_int_equal(set_ok("window_size", "250").window_size, 250);
    assert_int_equal(set_ok("window_buckets", "600").window_buckets, 600);
    assert_int_equal(set_ok("min_calls", "1").min_calls, 1);
    assert_int_equal(set_ok("half_open_max_probes", "4095").half_open_max_probes, 4095);
    assert_int_equal(set_ok("half_open_successes", "12").half_open_successes, 12);

    set_bad("failure_threshold", "1000001", BREAKER_EINVAL, "1 to 1000000");
    set_bad("failure_threshold", "-1", BREAKER_EINVAL, "got '-1'");
    set_bad("failure_threshold", "2.5", BREAKER_EINVAL, "whole number");
    set_bad("failure_threshold", "0x10", BREAKER_EINVAL, "whole number");
    set_bad("window_size", "1000001", BREAKER_EINVAL, "1 to 1000000");
    set_bad("window_buckets", "601", BREAKER_EINVAL, "1 to 600");
    set_bad("min_calls", "ten", BREAKER_EINVAL, "got 'ten'");
    set_bad("half_open_max_probes", "4096", BREAKER_EINVAL, "1 to 4095");
    set_bad("half_open_successes", "99999999999999999999999", BREAKER_EINVAL, "1 to 4095");
}

static void durations_accept_every_unit(void **state) {
    (void)state;
    assert_int_equal(set_ok("open", "20ns").open_ns, 20);
    assert_int_equal(set_ok("open_ns", "20").open_ns, 20); /* the key names the unit */
    assert_int_equal(set_ok("open", "1500us").open_ns, 1500 * 1000);
    assert_int_equal(set_ok("open", "250ms").open_ns, 250 * MS);
    assert_int_equal(set_ok("open", "5s").open_ns, 5 * SEC);
    assert_int_equal(set_ok("open", "1m").open_ns, 60 * SEC);
    assert_int_equal(set_ok("open", "2h").open_ns, 7200 * SEC);
    assert_int_equal(set_ok("open", "1d").open_ns, 86400 * SEC);
    assert_int_equal(set_ok("open", "0.1s").open_ns, 100 * MS); /* exact, not a double */
    assert_int_equal(set_ok("open", "1.5ms").open_ns, 1500 * 1000);
    assert_int_equal(set_ok("open", "365d").open_ns, 365 * 86400 * SEC);
    assert_int_equal(set_ok("open", "  3s  ").open_ns, 3 * SEC);
}

static void every_duration_key_works_with_and_without_ns(void **state) {
    (void)state;
    assert_int_equal(set_ok("window", "10s").window_ns, 10 * SEC);
    assert_int_equal(set_ok("window_ns", "10s").window_ns, 10 * SEC);
    assert_int_equal(set_ok("slow_call", "800ms").slow_call_ns, 800 * MS);
    assert_int_equal(set_ok("slow_call_ns", "800000000").slow_call_ns, 800 * MS);
    assert_int_equal(set_ok("open", "10s").open_ns, 10 * SEC);
    assert_int_equal(set_ok("open_ns", "10s").open_ns, 10 * SEC);
    assert_int_equal(set_ok("open_max", "2m").open_max_ns, 120 * SEC);
    assert_int_equal(set_ok("open_max_ns", "2m").open_max_ns, 120 * SEC);
    assert_int_equal(set_ok("probe_timeout", "3s").probe_timeout_ns, 3 * SEC);
    assert_int_equal(set_ok("probe_timeout_ns", "3s").probe_timeout_ns, 3 * SEC);
    /* "_ns" is only for durations. */
    set_bad("min_calls_ns", "3", BREAKER_NOT_FOUND, "unknown key");
}

static void bad_durations_are_refused_with_the_range(void **state) {
    (void)state;
    set_bad("open", "5 s", BREAKER_EINVAL, "duration");
    set_bad("open", "5sec", BREAKER_EINVAL, "got '5sec'");
    set_bad("open", "-5s", BREAKER_EINVAL, "got '-5s'");
    set_bad("open", "s", BREAKER_EINVAL, "got 's'");
    set_bad("open", ".s", BREAKER_EINVAL, "got '.s'");
    set_bad("open", "1.5ns", BREAKER_EINVAL, "duration");
    set_bad("open", "366d", BREAKER_EINVAL, "365d");
    set_bad("open", "99999999999999999999s", BREAKER_EINVAL, "365d");
    set_bad("open_max", "5 minutes", BREAKER_EINVAL, "5m");
    set_bad("probe_timeout", "1e3ms", BREAKER_EINVAL, "duration");
    set_bad("slow_call", "fast", BREAKER_EINVAL, "0 = off");
    set_bad("window", "500us", BREAKER_EINVAL, "from 1ms");
    assert_int_equal(set_ok("window", "1ms").window_ns, MS);
}

/* One rule for durations (docs/cli.md): the unit is in the value or in the
 * key's name; a bare number under the plain name is refused, naming the
 * units, since "open=5" would be 5 ns to the library and 5 s to a reader. */
static void bare_numbers_need_a_unit_or_the_ns_key(void **state) {
    (void)state;
    static const char *const keys[] = {"window",   "slow_call",     "open",
                                       "open_max", "probe_timeout", "ramp"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        set_bad(keys[i], "5", BREAKER_EINVAL, "'5' has no unit");
        set_bad(keys[i], "2.5", BREAKER_EINVAL, "one of ns, us, ms, s, m, h, d, such as 2.5s");
        set_bad(keys[i], "5000000", BREAKER_EINVAL, "_ns in nanoseconds");
    }
    /* Zero needs no unit, under either name. */
    assert_int_equal(set_ok("slow_call", "0").slow_call_ns, 0);
    assert_int_equal(set_ok("ramp", "0").ramp_ns, 0);
    assert_int_equal(set_ok("open", "00").open_ns, 0);
    assert_int_equal(set_ok("ramp_ns", "0").ramp_ns, 0);
    /* The _ns key takes nanoseconds, or any unit. */
    assert_int_equal(set_ok("open_ns", "5000000").open_ns, 5 * MS);
    assert_int_equal(set_ok("open_ns", "5s").open_ns, 5 * SEC);
    assert_int_equal(set_ok("window_ns", "1000000").window_ns, MS);
}

static void rates_accept_fractions_and_percentages(void **state) {
    (void)state;
    assert_true(set_ok("failure_rate", "0.25").failure_rate == 0.25);
    assert_true(set_ok("failure_rate", "50%").failure_rate == 0.5);
    assert_true(set_ok("failure_rate", "100%").failure_rate == 1.0);
    assert_true(set_ok("failure_rate", "1").failure_rate == 1.0);
    assert_true(set_ok("failure_rate", "12.5%").failure_rate == 0.125);
    assert_true(set_ok("slow_call_rate", "80%").slow_call_rate == 0.8);
    assert_true(set_ok("slow_call_rate", "0").slow_call_rate == 0.0);
    assert_true(set_ok("open_jitter", "0.2").open_jitter == 0.2);
    assert_true(set_ok("open_jitter", "0").open_jitter == 0.0);
    assert_true(set_ok("open_jitter", "100%").open_jitter == 1.0);

    set_bad("failure_rate", "1.5", BREAKER_EINVAL, "(0, 1]");
    set_bad("failure_rate", "150%", BREAKER_EINVAL, "50%");
    set_bad("failure_rate", "nan", BREAKER_EINVAL, "got 'nan'");
    set_bad("failure_rate", "-0.5", BREAKER_EINVAL, "got '-0.5'");
    set_bad("failure_rate", "0.5%%", BREAKER_EINVAL, "rate");
    set_bad("slow_call_rate", "2", BREAKER_EINVAL, "0 = off");
    set_bad("open_jitter", "1.01", BREAKER_EINVAL, "[0, 1]");
}

static void open_backoff_accepts_a_multiplier(void **state) {
    (void)state;
    assert_true(set_ok("open_backoff", "1.5").open_backoff == 1.5);
    assert_true(set_ok("open_backoff", "3x").open_backoff == 3.0);
    assert_true(set_ok("open_backoff", "100").open_backoff == 100.0);
    assert_true(set_ok("open_backoff", "1").open_backoff == 1.0);
    set_bad("open_backoff", "0.5", BREAKER_EINVAL, "1 to 100");
    set_bad("open_backoff", "101", BREAKER_EINVAL, "1 to 100");
    set_bad("open_backoff", "2y", BREAKER_EINVAL, "got '2y'");
    set_bad("open_backoff", "50%", BREAKER_EINVAL, "multiplier");
}

static void cancelled_as_accepts_ignored_or_failure(void **state) {
    (void)state;
    assert_int_equal(set_ok("cancelled_as", "failure").cancelled_as, BREAKER_FAILURE);
    assert_int_equal(set_ok("cancelled_as", "ignored").cancelled_as, BREAKER_IGNORED);
    set_bad("cancelled_as", "success", BREAKER_EINVAL, "ignored or failure");
}

static void seed_accepts_decimal_and_hex(void **state) {
    (void)state;
    assert_int_equal(set_ok("seed", "42").seed, 42);
    assert_int_equal(set_ok("seed", "0x2A").seed, 42);
    assert_true(set_ok("seed", "18446744073709551615").seed == UINT64_MAX);
    set_bad("seed", "18446744073709551616", BREAKER_EINVAL, "18446744073709551615");
    set_bad("seed", "0x", BREAKER_EINVAL, "hex");
    set_bad("seed", "12abc", BREAKER_EINVAL, "got '12abc'");
}

static void unknown_keys_are_not_found_and_list_the_keys(void **state) {
    (void)state;
    set_bad("failure_ratio", "0.5", BREAKER_NOT_FOUND, "failure_rate");
    set_bad("Trip", "consecutive", BREAKER_NOT_FOUND, "unknown key");
    set_bad("", "1", BREAKER_NOT_FOUND, "unknown key");
}

static void a_null_message_buffer_is_allowed(void **state) {
    (void)state;
    breaker_config cfg;
    breaker_config_init(&cfg);
    assert_int_equal(breaker_config_set(&cfg, "open", "bad", NULL, 0), BREAKER_EINVAL);
    assert_int_equal(breaker_config_set(&cfg, "nope", "1", NULL, 0), BREAKER_NOT_FOUND);
    assert_int_equal(breaker_config_set(&cfg, "open", "1s", NULL, 0), BREAKER_OK);
    assert_int_equal(cfg.open_ns, SEC);
}

static void a_short_message_buffer_is_truncated_and_terminated(void **state) {
    (void)state;
    breaker_config cfg;
    breaker_config_init(&cfg);
    char msg[8];
    memset(msg, 'x', sizeof(msg));
    assert_int_equal(breaker_config_set(&cfg, "open", "bad", msg, sizeof(msg)), BREAKER_EINVAL);
    assert_int_equal(strlen(msg), sizeof(msg) - 1);
    assert_string_equal(msg, "open: e");
}

static void a_very_long_value_is_refused_not_overrun(void **state) {
    (void)state;
    char big[300];
    memset(big, '1', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    set_bad("min_calls", big, BREAKER_EINVAL, "min_calls");
}

/* Length is no reason to refuse a valid value, and a refused one is quoted
 * with a visible cut. */
static void long_valid_values_are_accepted(void **state) {
    (void)state;
    char rate[120] = "0.5";
    memset(rate + 3, '0', sizeof(rate) - 4);
    rate[sizeof(rate) - 1] = '\0';
    assert_true(set_ok("failure_rate", rate).failure_rate == 0.5);
    char dur[120];
    memset(dur, '0', sizeof(dur));
    memcpy(dur + sizeof(dur) - 4, "15s", 4); /* 000...015s */
    assert_int_equal(set_ok("open", dur).open_ns, 15 * SEC);
    char big[300];
    memset(big, '9', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    set_bad("min_calls", big, BREAKER_EINVAL, "99...'"); /* 64 bytes then the cut */
}

/* A multiplier is at least 1: "0x" is not one (and reads like a hex prefix). */
static void a_zero_multiplier_is_refused(void **state) {
    (void)state;
    set_bad("open_backoff", "0x", BREAKER_EINVAL, "multiplier");
    set_bad("open_backoff", "0.5x", BREAKER_EINVAL, "multiplier");
    assert_true(set_ok("open_backoff", "1x").open_backoff == 1.0);
    assert_true(set_ok("open_backoff", "0").open_backoff == 0.0); /* the default */
}

/* Input reaches messages, and messages reach terminals: bytes that are not
 * printable ASCII are written as \xNN, never passed through. */
static void messages_escape_control_bytes(void **state) {
    (void)state;
    breaker_config cfg;
    breaker_config_init(&cfg);
    char msg[512];
    assert_int_equal(breaker_config_set(&cfg, "open", "5s\x1b[2J\x07", msg, sizeof(msg)),
                     BREAKER_EINVAL);
    assert_null(strchr(msg, 0x1b));
    assert_null(strchr(msg, 0x07));
    assert_non_null(strstr(msg, "5s\\x1b[2J\\x07"));
    assert_int_equal(breaker_config_set(&cfg, "op\x1bn", "5s", msg, sizeof(msg)),
                     BREAKER_NOT_FOUND);
    assert_null(strchr(msg, 0x1b));
    assert_non_null(strstr(msg, "op\\x1bn"));
}

static void a_configuration_built_from_text_passes_validation(void **state) {
    (void)state;
    static const char *const kv[][2] = {
        {"trip", "count_window"},
        {"window_size", "50"},
        {"min_calls", "10"},
        {"failure_rate", "40%"},
        {"slow_call", "800ms"},
        {"slow_call_rate", "0.9"},
        {"open", "5s"},
        {"open_backoff", "2"},
        {"open_max", "1m"},
        {"open_jitter", "10%"},
        {"half_open_max_probes", "2"},
        {"half_open_successes", "4"},
        {"probe_timeout", "2s"},
        {"cancelled_as", "failure"},
        {"seed", "9"},
        {"failure_threshold", "3"},
        {"window", "30s"},
        {"window_buckets", "30"},
    };
    breaker_config cfg;
    breaker_config_init(&cfg);
    for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++)
        assert_int_equal(breaker_config_set(&cfg, kv[i][0], kv[i][1], NULL, 0), BREAKER_OK);
    char msg[256];
    int rc = breaker_config_validate(&cfg, msg, sizeof(msg));
    if (rc != BREAKER_OK) fail_msg("validate: %s", msg);
    assert_int_equal(cfg.trip, BREAKER_TRIP_COUNT_WINDOW);
    assert_int_equal(cfg.window_size, 50);
    assert_true(cfg.failure_rate == 0.4);
    assert_int_equal(cfg.open_max_ns, 60 * SEC);
    assert_int_equal(cfg.half_open_successes, 4);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(trip_accepts_the_three_policy_names),
        cmocka_unit_test(counts_accept_whole_numbers_within_their_range),
        cmocka_unit_test(durations_accept_every_unit),
        cmocka_unit_test(every_duration_key_works_with_and_without_ns),
        cmocka_unit_test(bad_durations_are_refused_with_the_range),
        cmocka_unit_test(bare_numbers_need_a_unit_or_the_ns_key),
        cmocka_unit_test(rates_accept_fractions_and_percentages),
        cmocka_unit_test(open_backoff_accepts_a_multiplier),
        cmocka_unit_test(cancelled_as_accepts_ignored_or_failure),
        cmocka_unit_test(seed_accepts_decimal_and_hex),
        cmocka_unit_test(unknown_keys_are_not_found_and_list_the_keys),
        cmocka_unit_test(a_null_message_buffer_is_allowed),
        cmocka_unit_test(a_short_message_buffer_is_truncated_and_terminated),
        cmocka_unit_test(a_very_long_value_is_refused_not_overrun),
        cmocka_unit_test(long_valid_values_are_accepted),
        cmocka_unit_test(a_zero_multiplier_is_refused),
        cmocka_unit_test(messages_escape_control_bytes),
        cmocka_unit_test(a_configuration_built_from_text_passes_validation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
