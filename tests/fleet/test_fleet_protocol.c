/* SPDX-License-Identifier: MIT */
/*
 * test_fleet_protocol.c - the fleet client's decisions (src/store/redis/
 * protocol.c) without Redis: the limits text and what a stored one may be,
 * the flush deltas, what each answer means for the local breaker, how a
 * lease answer settles a probe, and when a lease slot is given up. Every
 * rule of protocol.h has a case here; so do the six places where the
 * simulator's model had drifted from the client (the success carry, `born`,
 * generation 0 in a release, `spared_gen`, and the limits comparison; the
 * sixth, a comment naming a function that did not exist, went with the
 * copy), so a change to any of them fails a test.
 */
#define _POSIX_C_SOURCE 200809L /* strtok_r */
#include "store/redis/protocol.h"

#include "test_util.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Helpers ---------------------------------------------------------------- */

static breaker_config effective(const breaker_config *cfg) {
    breaker *b = NULL;
    assert_int_equal(test_breaker_create(cfg, &b), BREAKER_OK);
    breaker_config eff;
    breaker_get_config(b, &eff);
    test_breaker_destroy(b);
    return eff;
}

static breaker_config defaults(void) {
    breaker_config c;
    breaker_config_init(&c);
    return effective(&c);
}

/* An answer as the scripts send it. */
static struct breaker__fleet_answer answer(int state, uint64_t gen, uint64_t wait_us,
                                           uint64_t born) {
    struct breaker__fleet_answer a;
    memset(&a, 0, sizeof a);
    a.state = state;
    a.gen = gen;
    a.wait_us = wait_us;
    a.born = born;
    a.calls = 40;
    a.failures = 30;
    a.slow = 4;
    a.k = 2;
    return a;
}

static struct breaker__fleet_local local(uint64_t gen, enum breaker_state st) {
    struct breaker__fleet_local l = {.gen = gen, .state = st};
    return l;
}

/* One answer decided alone (a round of one answer). */
static struct breaker__fleet_action decide1(struct breaker__fleet_follow *f,
                                            const struct breaker__fleet_answer *a,
                                            struct breaker__fleet_local l,
                                            struct breaker__fleet_gate *gate) {
    struct breaker__fleet_action act = {.kind = FLEET_ACT_NONE};
    struct breaker__fleet_gate g;
    breaker__fleet_decide(f, a, &l, 1000, &act, gate != NULL ? gate : &g);
    return act;
}

/* The values of a "name=value ..." text, in the order of
 * breaker__fleet_limit_names (NULL: absent), kept in `buf`. */
static void split_named(const char *text, char buf[BREAKER__FLEET_LIMITS_LEN],
                        const char *v[BREAKER__FLEET_LIMIT_COUNT]) {
    snprintf(buf, BREAKER__FLEET_LIMITS_LEN, "%s", text);
    for (int i = 0; i < BREAKER__FLEET_LIMIT_COUNT; i++)
        v[i] = NULL;
    char *save = NULL;
    for (char *tok = strtok_r(buf, " ", &save); tok != NULL; tok = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(tok, '=');
        if (eq == NULL) continue;
        *eq = '\0';
        for (int i = 0; i < BREAKER__FLEET_LIMIT_COUNT; i++)
            if (strcmp(tok, breaker__fleet_limit_names[i]) == 0) v[i] = eq + 1;
    }
}

/* The limits of a named text, as a record would carry them. */
static int read_named(const char *text, struct breaker__fleet_limits *l, char *why,
                      size_t why_len) {
    char buf[BREAKER__FLEET_LIMITS_LEN];
    const char *v[BREAKER__FLEET_LIMIT_COUNT];
    split_named(text, buf, v);
    return breaker__fleet_limits_read(v, l, why, why_len);
}

static struct breaker__fleet_limits named(const char *text) {
    struct breaker__fleet_limits l;
    char why[256] = "";
    if (!read_named(text, &l, why, sizeof why)) fail_msg("\"%s\" refused: %s", text, why);
    return l;
}

#define DEFAULT_TEXT                                                                           \
    "min_calls=20 failure_rate=0.5 slow_call_rate=0 window=60000000 window_buckets=10 "        \
    "open=30000000 open_backoff=2 open_max=300000000 open_jitter=0.20000000000000001 "         \
    "half_open_max_probes=1 half_open_successes=3 probe_timeout=30000000 failure_threshold=0 " \
    "min_failing_sources=0"

/* DEFAULT_TEXT with field `name` set to `value`. */
static void with_field(const char *name, const char *value, char *out, size_t len) {
    char buf[BREAKER__FLEET_LIMITS_LEN];
    const char *v[BREAKER__FLEET_LIMIT_COUNT];
    split_named(DEFAULT_TEXT, buf, v);
    size_t n = 0;
    out[0] = '\0';
    for (int i = 0; i < BREAKER__FLEET_LIMIT_COUNT; i++) {
        const char *x = strcmp(breaker__fleet_limit_names[i], name) == 0 ? value : v[i];
        if (x == NULL) continue;
        n += (size_t)snprintf(out + n, len - n, "%s%s=%s", n ? " " : "",
                              breaker__fleet_limit_names[i], x);
    }
}

static void assert_read_fails(const char *name, const char *value, const char *why_has) {
    char text[BREAKER__FLEET_LIMITS_LEN];
    with_field(name, value, text, sizeof text);
    struct breaker__fleet_limits l;
    char why[256] = "";
    if (read_named(text, &l, why, sizeof why)) fail_msg("%s=%s was taken as limits", name, value);
    if (strstr(why, why_has) == NULL)
        fail_msg("%s=%s: the reason \"%s\" does not name \"%s\"", name, value, why, why_has);
}

/* ---- The limits ----------------------------------------------------------------- */

static void limits_are_the_configurations_keys_by_name(void **state) {
    (void)state;
    breaker_config c = defaults();
    char text[BREAKER__FLEET_LIMITS_LEN];
    breaker__fleet_limits_text(&c, text, sizeof text);
    assert_string_equal(text, DEFAULT_TEXT);
    /* CONSECUTIVE: its threshold; a window policy sends 0. */
    c.trip = BREAKER_TRIP_CONSECUTIVE;
    c.failure_threshold = 7;
    breaker__fleet_limits_text(&c, text, sizeof text);
    assert_non_null(strstr(text, " failure_threshold=7 "));
    c.trip = BREAKER_TRIP_COUNT_WINDOW;
    breaker__fleet_limits_text(&c, text, sizeof text);
    assert_string_equal(text, DEFAULT_TEXT);
    /* Every name is a key breaker_config_set() takes (durations in µs). */
    for (int i = 0; i < BREAKER__FLEET_LIMIT_COUNT; i++) {
        breaker_config x = defaults();
        char msg[256];
        const char *name = breaker__fleet_limit_names[i];
        const char *value =
            strcmp(name, "failure_rate") == 0 || strcmp(name, "slow_call_rate") == 0 ||
                    strcmp(name, "open_jitter") == 0
                ? "0.5"
            : strcmp(name, "window") == 0 || strcmp(name, "open") == 0 ||
                    strcmp(name, "open_max") == 0 || strcmp(name, "probe_timeout") == 0
                ? "10s"
                : "2";
        if (breaker_config_set(&x, name, value, msg, sizeof msg) != BREAKER_OK)
            fail_msg("%s: not a configuration key: %s", name, msg);
    }
}

static void limits_round_trip_exactly(void **state) {
    (void)state;
    breaker_config cases[5];
    for (int i = 0; i < 5; i++)
        breaker_config_init(&cases[i]);
    cases[1].failure_rate = 1.0 / 3.0;
    cases[1].slow_call_rate = 0.1;
    cases[1].slow_call_ns = 200 * MS;
    cases[2].trip = BREAKER_TRIP_CONSECUTIVE;
    cases[2].failure_threshold = 1000000;
    cases[3].open_jitter = 0;
    cases[3].open_backoff = 1.5;
    cases[3].window_ns = 7 * SEC + 1000; /* whole microseconds */
    cases[3].window_buckets = 7;
    cases[4].half_open_max_probes = 4095;
    cases[4].half_open_successes = 4095;
    cases[4].open_ns = 1000;
    cases[4].open_max_ns = 365ull * 24 * 3600 * SEC;
    for (int i = 0; i < 5; i++) {
        breaker_config c = effective(&cases[i]);
        struct breaker__fleet_limits want, got;
        breaker__fleet_limits_of(&c, &want);
        char text[BREAKER__FLEET_LIMITS_LEN], again[BREAKER__FLEET_LIMITS_LEN];
        breaker__fleet_limits_format(&want, text, sizeof text);
        got = named(text);
        breaker__fleet_limits_format(&got, again, sizeof again);
        assert_string_equal(text, again);
        assert_true(breaker__fleet_limits_same(&want, &got, false));
        assert_true(memcmp(&want.failure_rate, &got.failure_rate, sizeof(double)) == 0);
        assert_true(memcmp(&want.open_jitter, &got.open_jitter, sizeof(double)) == 0);
        /* ... and through a configuration: the same limits come back. */
        breaker_config back = defaults();
        back.slow_call_ns = c.slow_call_ns; /* a local field a slow_call_rate needs */
        breaker__fleet_limits_apply(&got, &back);
        struct breaker__fleet_limits third;
        breaker__fleet_limits_of(&back, &third);
        breaker__fleet_limits_format(&third, again, sizeof again);
        assert_string_equal(text, again);
        assert_int_equal(back.window_ns, c.window_ns);
        assert_int_equal(back.open_ns, c.open_ns);
        assert_int_equal(back.trip == BREAKER_TRIP_CONSECUTIVE, c.trip == BREAKER_TRIP_CONSECUTIVE);
        char why[256];
        if (breaker_config_validate(&back, why, sizeof why) != BREAKER_OK)
            fail_msg("case %d: %s", i, why);
    }
}

static void stored_limits_are_input_and_are_refused_with_a_reason(void **state) {
    (void)state;
    /* Each field in turn made bad; the reason names the field. */
    assert_read_fails("min_calls", "abc", "min_calls");
    assert_read_fails("min_calls", "-20", "min_calls");
    assert_read_fails("min_calls", "+20", "min_calls");
    assert_read_fails("min_calls", "4294967296", "min_calls");
    assert_read_fails("min_calls", "20.5", "min_calls");
    assert_read_fails("min_calls", "0", "min_calls: 0");
    assert_read_fails("failure_rate", "-0.5", "failure_rate");
    assert_read_fails("failure_rate", "1.5", "failure_rate");
    assert_read_fails("failure_rate", "nan", "failure_rate");
    assert_read_fails("failure_rate", "inf", "failure_rate");
    assert_read_fails("failure_rate", "0x1p-1", "failure_rate");
    assert_read_fails("failure_rate", "0", "failure_rate: 0");
    assert_read_fails("slow_call_rate", "1e999", "slow_call_rate");
    assert_read_fails("window", "18446744073709552", "window");
    assert_read_fails("window_buckets", "0", "window_buckets: 0");
    assert_read_fails("open", "30000000x", "open");
    assert_read_fails("open_backoff", "0", "open_backoff: 0");
    assert_read_fails("open_max", "3000000", "open_max");
    assert_read_fails("open_jitter", "2", "open_jitter");
    assert_read_fails("half_open_max_probes", "0", "half_open_max_probes: 0");
    assert_read_fails("half_open_successes", "0", "half_open_successes: 0");
    assert_read_fails("probe_timeout", "0", "probe_timeout: 0");
    assert_read_fails("failure_threshold", "-1", "failure_threshold");
    assert_read_fails("min_failing_sources", "65", "min_failing_sources");
    struct breaker__fleet_limits l;
    char why[256] = "";
    assert_false(read_named("min_calls=20", &l, why, sizeof why));
    assert_non_null(strstr(why, "missing"));
}

static void adopt_takes_the_stored_limits_and_keeps_the_local_fields(void **state) {
    (void)state;
    breaker_config mine = defaults();
    mine.ramp_ns = 30 * SEC;
    mine.slow_call_ns = 100 * MS;
    mine.seed = 42;
    char why[256] = "";
    bool differs = true;
    /* The same stored limits: not "differs", whatever the local fields. */
    breaker_config c = mine;
    struct breaker__fleet_limits l = named(DEFAULT_TEXT);
    assert_true(breaker__fleet_limits_adopt(&l, &c, &differs, why, sizeof why));
    assert_false(differs);
    /* Other stored limits: taken, and the local choices kept. */
    c = mine;
    l = named("min_calls=5 failure_rate=0.25 slow_call_rate=0 window=10000000 window_buckets=10 "
              "open=2000000 open_backoff=2 open_max=60000000 open_jitter=0 "
              "half_open_max_probes=1 half_open_successes=2 probe_timeout=1000000 "
              "failure_threshold=0 min_failing_sources=7");
    assert_true(breaker__fleet_limits_adopt(&l, &c, &differs, why, sizeof why));
    assert_true(differs);
    assert_int_equal(c.min_calls, 5);
    assert_true(c.failure_rate == 0.25);
    assert_int_equal(c.window_ns, 10 * SEC);
    assert_int_equal(c.open_ns, 2 * SEC);
    assert_int_equal(c.half_open_successes, 2);
    assert_int_equal(c.probe_timeout_ns, 1 * SEC);
    assert_int_equal(c.min_failing_sources, 7);
    assert_int_equal(c.ramp_ns, 30 * SEC);
    assert_int_equal(c.slow_call_ns, 100 * MS);
    assert_int_equal(c.seed, 42);
    /* In range field by field but not a valid configuration (a bucket of
     * 0.1 ms is below the core's least): refused with
     * breaker_config_validate()'s reason, `cfg` unchanged. */
    c = mine;
    l.window_us = 1000;
    l.buckets = 1;
    l.window_us = 500;
    assert_false(breaker__fleet_limits_adopt(&l, &c, &differs, why, sizeof why));
    assert_non_null(strstr(why, "window"));
    assert_int_equal(c.min_calls, mine.min_calls);
}

/* Two hosts whose configurations differ only in what the fleet does not
 * store agree (the limits compare field by field, not as whole
 * configurations: padding and local fields left out). */
static void limits_compare_field_by_field_not_as_structs(void **state) {
    (void)state;
    breaker_config a, b;
    memset(&a, 0xa5, sizeof a); /* different padding */
    memset(&b, 0x5a, sizeof b);
    breaker_config_init(&a);
    breaker_config_init(&b);
    b.seed = 7;
    b.ramp_ns = SEC;
    b.cancelled_as = BREAKER_FAILURE;
    b.trip = BREAKER_TRIP_COUNT_WINDOW; /* the fleet keeps a time window for it too */
    a = effective(&a);
    b = effective(&b);
    struct breaker__fleet_limits la;
    breaker__fleet_limits_of(&a, &la);
    bool differs = true;
    assert_true(breaker__fleet_limits_adopt(&la, &b, &differs, NULL, 0));
    assert_false(differs);
    assert_int_equal(b.trip, BREAKER_TRIP_COUNT_WINDOW);
    assert_int_equal(b.seed, 7);
}

/* ---- Keys and arguments ------------------------------------------------------------ */

static void keys_and_arguments_are_the_scripts(void **state) {
    (void)state;
    char key[BREAKER__FLEET_KEY_LEN];
    breaker__fleet_key("payments-db", FLEET_KEY_STATE, key, sizeof key);
    assert_string_equal(key, "breaker:v2:{payments-db}:s");
    breaker__fleet_key("payments-db", FLEET_KEY_WINDOW, key, sizeof key);
    assert_string_equal(key, "breaker:v2:{payments-db}:w");
    breaker__fleet_key("payments-db", FLEET_KEY_LEASES, key, sizeof key);
    assert_string_equal(key, "breaker:v2:{payments-db}:l");
    breaker__fleet_key("payments-db", FLEET_KEY_SEQ, key, sizeof key);
    assert_string_equal(key, "breaker:v2:{payments-db}:q");
    assert_int_equal(FLEET_KEY_COUNT, atoi(BREAKER__FLEET_KEY_COUNT_TEXT));
    char ttl[24];
    breaker__fleet_ttl_text(3600 * SEC + 999999, ttl);
    assert_string_equal(ttl, "3600000");
    struct breaker__fleet_call c;
    struct breaker__fleet_deltas d = {.calls = 10, .failures = 4, .slow = 1, .run = 2};
    breaker__fleet_call_flush(&c, 1700000000000123, &d);
    assert_int_equal(c.script, FLEET_SCRIPT_FLUSH);
    assert_int_equal(c.argc, 5);
    assert_string_equal(c.argv[0], "1700000000000123");
    assert_string_equal(c.argv[1], "10");
    assert_string_equal(c.argv[2], "4");
    assert_string_equal(c.argv[3], "1");
    assert_string_equal(c.argv[4], "2");
    breaker__fleet_call_sequence(&c, "00000000000000ab", 1234567);
    assert_int_equal(c.argc, 7);
    assert_string_equal(c.argv[5], "00000000000000ab");
    assert_string_equal(c.argv[6], "1234567");
    breaker__fleet_call_acquire(&c, 0xabc);
    assert_int_equal(c.script, FLEET_SCRIPT_ACQUIRE);
    assert_int_equal(c.argc, 1);
    assert_string_equal(c.argv[0], "0000000000000abc");
    breaker__fleet_call_release(&c, 0, UINT64_MAX, FLEET_RESULT_NEITHER);
    assert_int_equal(c.script, FLEET_SCRIPT_RELEASE);
    assert_int_equal(c.argc, 3);
    assert_string_equal(c.argv[0], "0"); /* an orphan's: any generation */
    assert_string_equal(c.argv[1], "ffffffffffffffff");
    assert_string_equal(c.argv[2], "2");
}

/* ---- Deltas ---------------------------------------------------------------------- */

static breaker_stats stats(uint64_t succ, uint64_t fail, uint64_t slow, uint64_t psucc,
                           uint64_t pfail, uint64_t ptimed, uint32_t run) {
    breaker_stats s;
    memset(&s, 0, sizeof s);
    s.successes = succ;
    s.failures = fail;
    s.slow = slow;
    s.probes_succeeded = psucc;
    s.probes_failed = pfail;
    s.probes_timed_out = ptimed;
    s.consecutive_failures = run;
    return s;
}

static void deltas_are_closed_state_calls_since_the_last_flush(void **state) {
    (void)state;
    struct breaker__fleet_seen seen;
    memset(&seen, 0, sizeof seen);
    struct breaker__fleet_deltas d;
    breaker_stats s = stats(10, 5, 2, 0, 0, 0, 3);
    breaker__fleet_take_deltas(&seen, &s, &d);
    assert_int_equal(d.calls, 15);
    assert_int_equal(d.failures, 5);
    assert_int_equal(d.slow, 2);
    assert_int_equal(d.run, 3);
    /* Probes are the fleet's: 2 probe successes and 3 probe failures, one
     * of them a timeout (no completion: not among `failures`). */
    s = stats(10 + 4 + 2, 5 + 1 + 2, 2, 2, 3, 1, 0);
    breaker__fleet_take_deltas(&seen, &s, &d);
    assert_int_equal(d.calls, 4 + 1);
    assert_int_equal(d.failures, 1);
    assert_int_equal(d.slow, 0);
    assert_int_equal(d.run, 0);
    /* Nothing new: nothing sent. */
    breaker__fleet_take_deltas(&seen, &s, &d);
    assert_int_equal(d.calls, 0);
    assert_int_equal(d.failures, 0);
}

/* Drift: the model had no carry, so a snapshot taken between a probe
 * success's two counters sent a wrapped delta (UINT64_MAX calls). */
static void a_probe_success_seen_before_its_stripe_is_carried_not_wrapped(void **state) {
    (void)state;
    struct breaker__fleet_seen seen;
    memset(&seen, 0, sizeof seen);
    struct breaker__fleet_deltas d;
    breaker_stats s = stats(10, 0, 0, 0, 0, 0, 0);
    breaker__fleet_take_deltas(&seen, &s, &d);
    assert_int_equal(d.calls, 10);
    /* probes_succeeded moved; successes not yet. */
    s = stats(10, 0, 0, 1, 0, 0, 0);
    breaker__fleet_take_deltas(&seen, &s, &d);
    assert_int_equal(d.calls, 0);
    assert_int_equal(seen.success_carry, -1);
    /* The stripe's success arrives with 3 closed-state successes. */
    s = stats(14, 0, 0, 1, 0, 0, 0);
    breaker__fleet_take_deltas(&seen, &s, &d);
    assert_int_equal(d.calls, 3);
    assert_int_equal(seen.success_carry, 0);
}

/* A name's flush sequences only grow: at least the last + 1, at least the
 * monotonic clock in µs (a name attached again, a clock that did not move,
 * a clock behind the last), never past what the scripts hold (2^52). */
static void flush_sequences_only_grow(void **state) {
    (void)state;
    assert_int_equal(breaker__fleet_next_seq(0, 0), 1);
    assert_int_equal(breaker__fleet_next_seq(0, 5000), 5000);
    assert_int_equal(breaker__fleet_next_seq(5000, 5000), 5001); /* the same µs */
    assert_int_equal(breaker__fleet_next_seq(5001, 4000), 5002); /* behind the last */
    assert_int_equal(breaker__fleet_next_seq(5002, 9000000), 9000000);
    uint64_t last = 0;
    for (uint64_t i = 0; i < 300; i++) {
        uint64_t now = 100 + i / 3; /* a clock that moves every third call */
        uint64_t seq = breaker__fleet_next_seq(last, now);
        assert_true(seq > last);
        assert_true(seq >= now);
        last = seq;
    }
    assert_int_equal(breaker__fleet_next_seq(0, UINT64_MAX), BREAKER__FLEET_BIG);
    /* A host id: 16 hex digits, a function of the handle's key, not it. */
    char a[17], b[17], k[17];
    breaker__fleet_host_id(7, a);
    breaker__fleet_host_id(7, b);
    breaker__fleet_token_text(7, k);
    assert_int_equal(strlen(a), 16);
    assert_string_equal(a, b);
    assert_string_not_equal(a, k);
    breaker__fleet_host_id(8, b);
    assert_string_not_equal(a, b);
}

/* ---- Answers ---------------------------------------------------------------------- */

static void answers_are_read_and_malformed_ones_refused(void **state) {
    (void)state;
    int64_t v[ANS_COUNT] = {FLEET_OPEN, 100, 5000, 1, 0, VERDICT_TRIPPED, 20, 12, 0, 99};
    struct breaker__fleet_answer a;
    assert_true(breaker__fleet_answer_read(v, &a));
    assert_int_equal(a.state, FLEET_OPEN);
    assert_int_equal(a.gen, 100);
    assert_int_equal(a.wait_us, 5000);
    assert_int_equal(a.k, 1);
    assert_int_equal(a.verdict, VERDICT_TRIPPED);
    assert_int_equal(a.calls, 20);
    assert_int_equal(a.failures, 12);
    assert_int_equal(a.born, 99);
    v[ANS_WAIT_US] = -5; /* never sent: reads as none */
    assert_true(breaker__fleet_answer_read(v, &a));
    assert_int_equal(a.wait_us, 0);
    static const struct {
        int field;
        int64_t value;
    } bad[] = {{ANS_STATE, 3}, {ANS_STATE, -1},    {ANS_VERDICT, 5}, {ANS_GEN, -1},
               {ANS_K, -1},    {ANS_K, 1LL << 32}, {ANS_CALLS, -1},  {ANS_BORN, -1},
               {ANS_SUCC, -1}, {ANS_FAILURES, -3}, {ANS_SLOW, -1},   {ANS_VERDICT, -1}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t w[ANS_COUNT];
        memcpy(w, v, sizeof w);
        w[bad[i].field] = bad[i].value;
        if (breaker__fleet_answer_read(w, &a))
            fail_msg("field %d = %" PRId64 " was read as an answer", bad[i].field, bad[i].value);
    }
}

/* ---- Decisions -------------------------------------------------------------------- */

static void a_fleet_open_trips_a_closed_host_with_the_fleets_evidence(void **state) {
    (void)state;
    struct breaker__fleet_follow f;
    memset(&f, 0, sizeof f);
    struct breaker__fleet_answer a = answer(FLEET_OPEN, 500, 2000, 400);
    struct breaker__fleet_gate gate;
    struct breaker__fleet_action act = decide1(&f, &a, local(7, BREAKER_CLOSED), &gate);
    assert_int_equal(act.kind, FLEET_ACT_TRIP);
    assert_int_equal(act.gen, 7); /* fenced by the local generation */
    assert_int_equal(act.evidence.calls, 40);
    assert_int_equal(act.evidence.failures, 30);
    assert_int_equal(act.evidence.slow_calls, 4);
    assert_true(act.evidence.failure_rate == 0.75);
    assert_true(act.evidence.slow_call_rate == 0.1);
    assert_int_equal(act.evidence.failed_recoveries, 2);
    /* The host waits what is left of the fleet's wait, not its own. */
    assert_int_equal(act.wait_ns, 2000 * 1000);
    assert_true(f.follows);
    assert_int_equal(f.followed_gen, 500);
    assert_int_equal(f.known_gen, 500);
    /* The open wait gates lease requests. */
    assert_true(gate.change);
    assert_int_equal(gate.until_ns, 1000 + 2000 * 1000);
    /* A host already open needs nothing; the gate still follows the wait. */
    act = decide1(&f, &a, local(8, BREAKER_OPEN), &gate);
    assert_int_equal(act.kind, FLEET_ACT_NONE);
    assert_true(gate.change);
    /* HALF_OPEN trips a closed host too; no gate (probes decide). */
    memset(&f, 0, sizeof f);
    a = answer(FLEET_HALF_OPEN, 501, 0, 400);
    act = decide1(&f, &a, local(7, BREAKER_CLOSED), &gate);
    assert_int_equal(act.kind, FLEET_ACT_TRIP);
    assert_int_equal(act.wait_ns, 1); /* the fleet is probing: its lease decides at once */
    assert_false(gate.change);
    assert_true(f.follows);
    /* An open whose wait is over does not touch the gate. */
    a = answer(FLEET_OPEN, 502, 0, 400);
    act = decide1(&f, &a, local(7, BREAKER_CLOSED), &gate);
    assert_int_equal(act.kind, FLEET_ACT_TRIP);
    assert_int_equal(act.wait_ns, 1);
    assert_false(gate.change);
}

static void a_fleet_close_closes_a_host_that_followed_its_open(void **state) {
    (void)state;
    struct breaker__fleet_follow f;
    memset(&f, 0, sizeof f);
    struct breaker__fleet_answer open = answer(FLEET_OPEN, 500, 2000, 400);
    (void)decide1(&f, &open, local(7, BREAKER_CLOSED), NULL);
    struct breaker__fleet_answer closed = answer(FLEET_CLOSED, 503, 0, 400);
    struct breaker__fleet_gate gate;
    struct breaker__fleet_action act = decide1(&f, &closed, local(9, BREAKER_OPEN), &gate);
    assert_int_equal(act.kind, FLEET_ACT_CLOSE);
    assert_int_equal(act.gen, 9);
    assert_false(f.follows);
    assert_true(gate.change);
    assert_int_equal(gate.until_ns, 0); /* the gate opens */
    /* HALF_OPEN locally: closed the same way. */
    (void)decide1(&f, &open, local(9, BREAKER_OPEN), NULL);
    act = decide1(&f, &closed, local(10, BREAKER_HALF_OPEN), NULL);
    assert_int_equal(act.kind, FLEET_ACT_CLOSE);
    /* A host no longer following, or already closed, is left alone. */
    act = decide1(&f, &closed, local(10, BREAKER_OPEN), NULL);
    assert_int_equal(act.kind, FLEET_ACT_NONE);
    (void)decide1(&f, &open, local(11, BREAKER_OPEN), NULL);
    act = decide1(&f, &closed, local(12, BREAKER_CLOSED), NULL);
    assert_int_equal(act.kind, FLEET_ACT_NONE);
    assert_false(f.follows);
    /* born 0 (a state from before the field) counts as the same state. */
    (void)decide1(&f, &open, local(12, BREAKER_OPEN), NULL);
    closed.born = 0;
    act = decide1(&f, &closed, local(12, BREAKER_OPEN), NULL);
    assert_int_equal(act.kind, FLEET_ACT_CLOSE);
}

/* Drift: the model's close ignored `born`, so a Redis restarted empty (a
 * CLOSED state created from scratch) closed every host it followed. */
static void a_closed_state_born_after_the_followed_open_closes_nothing(void **state) {
    (void)state;
    struct breaker__fleet_follow f;
    memset(&f, 0, sizeof f);
    struct breaker__fleet_answer open = answer(FLEET_OPEN, 500, 2000, 400);
    (void)decide1(&f, &open, local(7, BREAKER_CLOSED), NULL);
    struct breaker__fleet_answer fresh = answer(FLEET_CLOSED, 900, 0, 900);
    struct breaker__fleet_gate gate;
    struct breaker__fleet_action act = decide1(&f, &fresh, local(8, BREAKER_OPEN), &gate);
    assert_int_equal(act.kind, FLEET_ACT_NONE);
    assert_false(f.follows); /* it stops following: its local breaker decides */
    assert_true(gate.change);
    assert_int_equal(gate.until_ns, 0);
    assert_int_equal(f.known_gen, 900);
}

static void a_later_answer_of_the_same_round_overrides_an_earlier_one(void **state) {
    (void)state;
    struct breaker__fleet_follow f;
    memset(&f, 0, sizeof f);
    struct breaker__fleet_gate gate;
    struct breaker__fleet_action act = {.kind = FLEET_ACT_NONE};
    struct breaker__fleet_answer open = answer(FLEET_OPEN, 500, 0, 400);
    struct breaker__fleet_answer closed = answer(FLEET_CLOSED, 501, 0, 400);
    struct breaker__fleet_local l = local(7, BREAKER_CLOSED);
    /* A trip, then the fleet closed: no trip. */
    breaker__fleet_decide(&f, &open, &l, 0, &act, &gate);
    assert_int_equal(act.kind, FLEET_ACT_TRIP);
    breaker__fleet_decide(&f, &closed, &l, 0, &act, &gate);
    assert_int_equal(act.kind, FLEET_ACT_NONE);
    /* A close, then another CLOSED answer (no longer following): the close stands. */
    memset(&f, 0, sizeof f);
    act.kind = FLEET_ACT_NONE;
    l = local(9, BREAKER_OPEN);
    breaker__fleet_decide(&f, &open, &l, 0, &act, &gate);
    assert_int_equal(act.kind, FLEET_ACT_NONE);
    breaker__fleet_decide(&f, &closed, &l, 0, &act, &gate);
    assert_int_equal(act.kind, FLEET_ACT_CLOSE);
    breaker__fleet_decide(&f, &closed, &l, 0, &act, &gate);
    assert_int_equal(act.kind, FLEET_ACT_CLOSE);
    assert_int_equal(act.gen, 9);
    /* A close, then the fleet open again: no close. */
    struct breaker__fleet_answer reopened = answer(FLEET_OPEN, 502, 0, 400);
    breaker__fleet_decide(&f, &reopened, &l, 0, &act, &gate);
    assert_int_equal(act.kind, FLEET_ACT_NONE);
}

/* Drift: the model had no `spared_gen`: a host that recovered while degraded
 * and declined an expired fleet open was tripped by the next answer of the
 * same generation. */
static void a_host_that_recovered_while_degraded_is_spared_for_that_generation(void **state) {
    (void)state;
    struct breaker__fleet_follow f;
    memset(&f, 0, sizeof f);
    /* Degraded with the local breaker OPEN in generation 7 ... */
    struct breaker__fleet_local before = local(7, BREAKER_OPEN);
    breaker__fleet_note_degraded(&f, &before, false);
    assert_true(f.degraded_gen_set);
    /* ... rejoining with it CLOSED in generation 9 (a local recovery). */
    struct breaker__fleet_local now = local(9, BREAKER_CLOSED);
    breaker__fleet_check_recovered(&f, true, &now);
    assert_true(f.recovered);
    struct breaker__fleet_answer expired = answer(FLEET_OPEN, 500, 0, 400);
    struct breaker__fleet_action act = decide1(&f, &expired, now, NULL);
    assert_int_equal(act.kind, FLEET_ACT_NONE);
    assert_int_equal(f.spared_gen, 500);
    assert_true(f.follows);
    /* The next round: no longer "recovered", but the same generation is
     * still spared. */
    breaker__fleet_check_recovered(&f, false, &now);
    assert_false(f.recovered);
    act = decide1(&f, &expired, now, NULL);
    assert_int_equal(act.kind, FLEET_ACT_NONE);
    /* An earlier trip of the same round is cancelled by it too. */
    struct breaker__fleet_action round = {.kind = FLEET_ACT_TRIP};
    struct breaker__fleet_gate gate;
    breaker__fleet_decide(&f, &expired, &now, 0, &round, &gate);
    assert_int_equal(round.kind, FLEET_ACT_NONE);
    /* A later trip (a new generation) is followed. */
    struct breaker__fleet_answer next = answer(FLEET_OPEN, 502, 0, 400);
    act = decide1(&f, &next, now, NULL);
    assert_int_equal(act.kind, FLEET_ACT_TRIP);
    /* So is an open whose wait still runs, recovered or not. */
    memset(&f, 0, sizeof f);
    f.recovered = true;
    struct breaker__fleet_answer waiting = answer(FLEET_OPEN, 503, 1000, 400);
    act = decide1(&f, &waiting, now, NULL);
    assert_int_equal(act.kind, FLEET_ACT_TRIP);
    /* And a HALF_OPEN fleet (its probes decide). */
    memset(&f, 0, sizeof f);
    f.recovered = true;
    struct breaker__fleet_answer half = answer(FLEET_HALF_OPEN, 504, 0, 400);
    act = decide1(&f, &half, now, NULL);
    assert_int_equal(act.kind, FLEET_ACT_TRIP);
}

static void recovery_while_degraded_needs_a_move_to_closed(void **state) {
    (void)state;
    struct breaker__fleet_follow f;
    memset(&f, 0, sizeof f);
    struct breaker__fleet_local open7 = local(7, BREAKER_OPEN);
    breaker__fleet_note_degraded(&f, &open7, false);
    /* Not moved, or moved but not closed, or not degraded: not recovered. */
    struct breaker__fleet_local closed7 = local(7, BREAKER_CLOSED);
    breaker__fleet_check_recovered(&f, true, &closed7);
    assert_false(f.recovered);
    struct breaker__fleet_local half8 = local(8, BREAKER_HALF_OPEN);
    breaker__fleet_check_recovered(&f, true, &half8);
    assert_false(f.recovered);
    struct breaker__fleet_local closed9 = local(9, BREAKER_CLOSED);
    breaker__fleet_check_recovered(&f, false, &closed9);
    assert_false(f.recovered);
    breaker__fleet_check_recovered(&f, true, NULL);
    assert_false(f.recovered);
    /* A failed round whose answers were decided on: nothing remembered
     * (their transitions still to come would look like a recovery). */
    breaker__fleet_note_degraded(&f, &open7, true);
    assert_false(f.degraded_gen_set);
    breaker__fleet_check_recovered(&f, true, &closed9);
    assert_false(f.recovered);
    /* A retired entry remembers nothing. */
    breaker__fleet_note_degraded(&f, NULL, false);
    assert_false(f.degraded_gen_set);
}

static void a_retired_entry_only_moves_its_known_generation(void **state) {
    (void)state;
    struct breaker__fleet_follow f;
    memset(&f, 0, sizeof f);
    struct breaker__fleet_answer open = answer(FLEET_OPEN, 500, 2000, 400);
    struct breaker__fleet_action act = {.kind = FLEET_ACT_NONE};
    struct breaker__fleet_gate gate = {.change = true};
    breaker__fleet_decide(&f, &open, NULL, 0, &act, &gate);
    assert_int_equal(f.known_gen, 500);
    assert_false(f.follows);
    assert_false(gate.change);
    assert_int_equal(act.kind, FLEET_ACT_NONE);
}

static void rearming_forgets_the_breaker_but_keeps_the_generation(void **state) {
    (void)state;
    struct breaker__fleet_follow f = {.known_gen = 500,
                                      .follows = true,
                                      .followed_gen = 400,
                                      .degraded_gen = 3,
                                      .degraded_gen_set = true,
                                      .recovered = true,
                                      .spared_gen = 400,
                                      .stale_tripped = true};
    breaker__fleet_follow_rearm(&f, 9000);
    assert_int_equal(f.attached_ns, 9000);
    assert_int_equal(f.known_gen, 500);
    assert_false(f.follows || f.degraded_gen_set || f.recovered || f.stale_tripped);
    assert_int_equal(f.followed_gen, 0);
    assert_int_equal(f.spared_gen, 0);
}

/* A record of version `version` asking for `forced` (FLEET_FORCED_*, with
 * `left_us` to run; 0: no end), shadow `shadow`, the default limits, and the
 * last reset's generation `reset_gen`. */
static struct breaker__fleet_record record(uint64_t version, int forced, uint64_t left_us,
                                           int shadow, uint64_t reset_gen) {
    struct breaker__fleet_record r;
    memset(&r, 0, sizeof r);
    r.version = version;
    r.forced = forced;
    r.left_us = left_us;
    r.shadow = shadow;
    r.reset_gen = reset_gen;
    snprintf(r.who, sizeof r.who, "alice");
    snprintf(r.why, sizeof r.why, "maintenance");
    breaker_config c = defaults();
    breaker__fleet_limits_of(&c, &r.limits);
    return r;
}

/* A local breaker in `st` with the defaults' limits, shadow off, `left_ns`
 * of an open wait. */
static struct breaker__fleet_local local_full(uint64_t gen, enum breaker_state st,
                                              uint64_t left_ns) {
    struct breaker__fleet_local l = local(gen, st);
    l.open_left_ns = left_ns;
    breaker_config c = defaults();
    breaker__fleet_limits_of(&c, &l.limits);
    return l;
}

/* What converging a host armed by `at_attach` (NULL: no answer) to `rec`
 * asks of a local breaker `l`: the action and the controls. */
static struct breaker__fleet_action converge1(struct breaker__fleet_follow *f,
                                              const struct breaker__fleet_record *rec,
                                              struct breaker__fleet_local l, uint64_t now,
                                              struct breaker__fleet_controls *c) {
    struct breaker__fleet_action act = {.kind = FLEET_ACT_NONE};
    breaker__fleet_controls_none(c);
    breaker__fleet_record_keep(f, rec, 0);
    breaker__fleet_converge(f, &l, now, &act, c);
    return act;
}

/* A breaker armed by its attach's answer: its first flush names that
 * generation (the script drops its deltas once the fleet moved on), and a
 * reset made before it (a generation at most the attach's) is history,
 * while one made later is applied, once. */
static void an_armed_breaker_knows_its_generation_and_which_resets_are_older(void **state) {
    (void)state;
    struct breaker__fleet_answer at_attach = answer(FLEET_CLOSED, 700, 0, 100);
    struct breaker__fleet_controls c;
    /* The reset that made generation 700, or an older one: history. */
    struct breaker__fleet_follow f;
    memset(&f, 0, sizeof f);
    breaker__fleet_follow_armed(&f, &at_attach);
    assert_int_equal(f.known_gen, 700);
    struct breaker__fleet_record rec = record(3, FLEET_FORCED_NONE, 0, 0, 700);
    converge1(&f, &rec, local_full(1, BREAKER_CLOSED, 0), 1000, &c);
    assert_false(c.reset);
    /* A reset after the attach, before the first round: this breaker's,
     * applied once however often the record is seen. */
    rec = record(4, FLEET_FORCED_NONE, 0, 0, 705);
    struct breaker__fleet_action act =
        converge1(&f, &rec, local_full(1, BREAKER_OPEN, 5), 1000, &c);
    assert_true(c.reset);
    assert_int_equal(act.kind, FLEET_ACT_NONE); /* the reset leaves it CLOSED */
    converge1(&f, &rec, local_full(2, BREAKER_CLOSED, 0), 2000, &c);
    assert_false(c.reset);
    /* No attach answer (Redis unreachable then): the first record's reset
     * is history when it was made before the breaker was ... */
    memset(&f, 0, sizeof f);
    breaker__fleet_follow_rearm(&f, 10 * SEC);
    breaker__fleet_follow_armed(&f, NULL);
    rec.reset_age_us = 3 * 1000000; /* 3 s before the read at 12 s: at 9 s */
    memset(&act, 0, sizeof act);
    breaker__fleet_controls_none(&c);
    breaker__fleet_record_keep(&f, &rec, 12 * SEC);
    struct breaker__fleet_local fresh = local_full(1, BREAKER_CLOSED, 0);
    breaker__fleet_converge(&f, &fresh, 12 * SEC, &act, &c);
    assert_false(c.reset);
    /* ... and applied, once, when it was made since. */
    memset(&f, 0, sizeof f);
    breaker__fleet_follow_rearm(&f, 10 * SEC);
    breaker__fleet_follow_armed(&f, NULL);
    rec.reset_age_us = 1 * 1000000; /* at 11 s */
    breaker__fleet_controls_none(&c);
    breaker__fleet_record_keep(&f, &rec, 12 * SEC);
    breaker__fleet_converge(&f, &fresh, 12 * SEC, &act, &c);
    assert_true(c.reset);
    breaker__fleet_controls_none(&c);
    breaker__fleet_record_keep(&f, &rec, 13 * SEC);
    fresh = local_full(2, BREAKER_CLOSED, 0);
    breaker__fleet_converge(&f, &fresh, 13 * SEC, &act, &c);
    assert_false(c.reset);
}

/* Converging is level-triggered: each round asks only what differs between
 * the record and the local breaker, so a record applied twice changes
 * nothing, and a host that took over the name, or attached late, reaches
 * the same state. */
static void a_record_is_converged_to_and_applying_it_twice_changes_nothing(void **state) {
    (void)state;
    struct breaker__fleet_follow f;
    memset(&f, 0, sizeof f);
    f.interval_ns = 250 * MS;
    f.reset_seen = 1;
    struct breaker__fleet_controls c;
    /* Forced open (no end): FORCE_OPEN with the record's who and why ... */
    struct breaker__fleet_record rec = record(1, FLEET_FORCED_OPEN, 0, 0, 0);
    struct breaker__fleet_action act =
        converge1(&f, &rec, local_full(5, BREAKER_CLOSED, 0), 1000, &c);
    assert_int_equal(act.kind, FLEET_ACT_FORCE_OPEN);
    assert_true(act.by_record);
    /* ... and nothing once the breaker is so. */
    act = converge1(&f, &rec, local_full(6, BREAKER_FORCED_OPEN, 0), 2000, &c);
    assert_int_equal(act.kind, FLEET_ACT_NONE);
    /* A timed open: OPEN_FOR what is left, then nothing while the local
     * wait ends with it (within an interval). */
    rec = record(2, FLEET_FORCED_OPEN, 10 * 1000000, 0, 0);
    memset(&act, 0, sizeof act);
    breaker__fleet_controls_none(&c);
    breaker__fleet_record_keep(&f, &rec, 1000);
    breaker__fleet_converge(&f, &(struct breaker__fleet_local){0}, 1000, &act, &c);
    struct breaker__fleet_local l = local_full(6, BREAKER_FORCED_OPEN, 0);
    act.kind = FLEET_ACT_NONE;
    breaker__fleet_converge(&f, &l, 1000, &act, &c);
    assert_int_equal(act.kind, FLEET_ACT_OPEN_FOR);
    assert_int_equal(act.wait_ns, 10 * SEC);
    l = local_full(7, BREAKER_OPEN, 9 * SEC);
    act.kind = FLEET_ACT_NONE;
    breaker__fleet_converge(&f, &l, 1000 + SEC, &act, &c);
    assert_int_equal(act.kind, FLEET_ACT_NONE);
    /* Its end past: nothing (the fleet probes as after any wait). */
    l = local_full(8, BREAKER_HALF_OPEN, 0);
    breaker__fleet_converge(&f, &l, 1000 + 11 * SEC, &act, &c);
    assert_int_equal(act.kind, FLEET_ACT_NONE);
    /* Forced closed with an end: FORCE_CLOSED for what is left, once. */
    rec = record(3, FLEET_FORCED_CLOSED, 2 * 1000000, 0, 0);
    act = converge1(&f, &rec, local_full(8, BREAKER_OPEN, SEC), 0, &c);
    assert_int_equal(act.kind, FLEET_ACT_FORCE_CLOSED);
    assert_int_equal(act.wait_ns, 2 * SEC);
    l = local_full(9, BREAKER_FORCED_CLOSED, 0);
    l.forced_left_ns = SEC; /* its end, the record's */
    act = converge1(&f, &rec, l, SEC, &c);
    assert_int_equal(act.kind, FLEET_ACT_NONE);
    /* Renewed in the record (2 s from 1 s): the new end, not a gap after
     * the old one; and a forced close with no end, none. */
    rec = record(4, FLEET_FORCED_CLOSED, 2 * 1000000, 0, 0);
    breaker__fleet_record_keep(&f, &rec, SEC);
    act.kind = FLEET_ACT_NONE;
    breaker__fleet_converge(&f, &l, SEC, &act, &c);
    assert_int_equal(act.kind, FLEET_ACT_FORCE_CLOSED);
    assert_int_equal(act.wait_ns, 2 * SEC);
    rec = record(5, FLEET_FORCED_CLOSED, 0, 0, 0);
    act = converge1(&f, &rec, l, SEC, &c);
    assert_int_equal(act.kind, FLEET_ACT_FORCE_CLOSED);
    assert_int_equal(act.wait_ns, 0);
    l.forced_left_ns = 0;
    act = converge1(&f, &rec, l, SEC, &c);
    assert_int_equal(act.kind, FLEET_ACT_NONE);
    /* Nothing forced in the record (a state made anew; this host's own
     * control): a forced breaker follows the fleet again, a reset without
     * the record's who; a timed forced close runs out by itself. */
    rec = record(1, FLEET_FORCED_NONE, 0, 0, 0);
    f.forced_gen = 10; /* the record forced generation 10 */
    act = converge1(&f, &rec, local_full(10, BREAKER_FORCED_OPEN, 0), SEC, &c);
    assert_int_equal(act.kind, FLEET_ACT_RESET);
    assert_false(act.by_record);
    /* Forced in another generation: this host's own operator's, kept. */
    act = converge1(&f, &rec, local_full(11, BREAKER_FORCED_OPEN, 0), SEC, &c);
    assert_int_equal(act.kind, FLEET_ACT_NONE);
    f.forced_gen = 9;
    act = converge1(&f, &rec, l, SEC, &c);
    assert_int_equal(act.kind, FLEET_ACT_RESET);
    l.forced_left_ns = SEC;
    act = converge1(&f, &rec, l, SEC, &c);
    assert_int_equal(act.kind, FLEET_ACT_NONE);
    /* Shadow and limits: asked while they differ, not after. */
    rec = record(4, FLEET_FORCED_NONE, 0, 1, 0);
    rec.limits.min_calls = 7;
    converge1(&f, &rec, local_full(9, BREAKER_CLOSED, 0), 0, &c);
    assert_int_equal(c.shadow, 1);
    assert_true(c.reconfigure);
    assert_int_equal(c.limits.min_calls, 7);
    l = local_full(9, BREAKER_CLOSED, 0);
    l.shadow = 1;
    l.limits.min_calls = 7;
    converge1(&f, &rec, l, 0, &c);
    assert_int_equal(c.shadow, -1);
    assert_false(c.reconfigure);
    /* Limits a breaker refused, for this version: not asked again. */
    f.refused_version = 4;
    converge1(&f, &rec, local_full(9, BREAKER_CLOSED, 0), 0, &c);
    assert_false(c.reconfigure);
}

/* A fleet whose open wait was cut (new limits) while a host waits out a
 * longer one: the host is opened again until the fleet's end; a jittered
 * difference is left alone. */
static void a_cut_fleet_wait_reaches_a_host_that_waits_longer(void **state) {
    (void)state;
    struct breaker__fleet_follow f;
    memset(&f, 0, sizeof f);
    f.interval_ns = 250 * MS;
    struct breaker__fleet_answer a = answer(FLEET_OPEN, 9, 996000, 1);
    struct breaker__fleet_action act = decide1(&f, &a, local_full(4, BREAKER_OPEN, 9 * SEC), NULL);
    assert_int_equal(act.kind, FLEET_ACT_OPEN_FOR);
    assert_int_equal(act.wait_ns, 996 * MS);
    assert_false(act.by_record);
    act = decide1(&f, &a, local_full(4, BREAKER_OPEN, 1200 * MS), NULL);
    assert_int_equal(act.kind, FLEET_ACT_NONE);
}

/* FAIL_CLOSED: the flusher trips a CLOSED local breaker while the view is
 * too old; the first good answer undoes that if the fleet is CLOSED (even a
 * state born later: the trip was no fleet's), else the host follows. */
static void a_stale_view_trips_closed_breakers_only(void **state) {
    (void)state;
    assert_true(breaker__fleet_view_stale(0, 5 * SEC, SEC)); /* no view yet */
    assert_false(breaker__fleet_view_stale(4 * SEC, 5 * SEC, SEC));
    assert_true(breaker__fleet_view_stale(4 * SEC - 1, 5 * SEC, SEC));
    struct breaker__fleet_follow f;
    memset(&f, 0, sizeof f);
    struct breaker__fleet_action act = {.kind = FLEET_ACT_CLOSE};
    struct breaker__fleet_local open = local(7, BREAKER_OPEN);
    assert_false(breaker__fleet_trip_stale(&f, &open, &act));
    assert_int_equal(act.kind, FLEET_ACT_CLOSE); /* untouched */
    assert_false(f.stale_tripped);
    struct breaker__fleet_local closed = local(7, BREAKER_CLOSED);
    assert_true(breaker__fleet_trip_stale(&f, &closed, &act));
    assert_int_equal(act.kind, FLEET_ACT_TRIP);
    assert_int_equal(act.gen, 7);
    assert_int_equal(act.evidence.calls, 0);
    assert_true(f.stale_tripped);
}

static void a_stale_view_trip_is_undone_by_a_closed_fleet_and_kept_by_an_open_one(void **state) {
    (void)state;
    struct breaker__fleet_follow f;
    memset(&f, 0, sizeof f);
    breaker__fleet_note_stale_trip(&f);
    struct breaker__fleet_answer closed = answer(FLEET_CLOSED, 900, 0, 900);
    struct breaker__fleet_gate gate;
    struct breaker__fleet_action act = decide1(&f, &closed, local(12, BREAKER_OPEN), &gate);
    assert_int_equal(act.kind, FLEET_ACT_CLOSE);
    assert_int_equal(act.gen, 12); /* fenced by the local generation */
    assert_false(f.stale_tripped);
    assert_true(gate.change);
    assert_int_equal(gate.until_ns, 0);
    /* Once: the next CLOSED answer does nothing (it follows nothing). */
    act = decide1(&f, &closed, local(12, BREAKER_OPEN), NULL);
    assert_int_equal(act.kind, FLEET_ACT_NONE);
    /* A local breaker already CLOSED again: nothing to undo, flag cleared. */
    breaker__fleet_note_stale_trip(&f);
    act = decide1(&f, &closed, local(14, BREAKER_CLOSED), NULL);
    assert_int_equal(act.kind, FLEET_ACT_NONE);
    assert_false(f.stale_tripped);
    /* HALF_OPEN meanwhile (its own wait ended): closed the same way. */
    breaker__fleet_note_stale_trip(&f);
    act = decide1(&f, &closed, local(13, BREAKER_HALF_OPEN), NULL);
    assert_int_equal(act.kind, FLEET_ACT_CLOSE);
    assert_int_equal(act.gen, 13);
    /* An open fleet: followed as after any trip, the flag cleared ... */
    memset(&f, 0, sizeof f);
    breaker__fleet_note_stale_trip(&f);
    struct breaker__fleet_answer open = answer(FLEET_OPEN, 500, 2000, 400);
    act = decide1(&f, &open, local(12, BREAKER_OPEN), &gate);
    assert_int_equal(act.kind, FLEET_ACT_NONE);
    assert_false(f.stale_tripped);
    assert_true(f.follows);
    assert_int_equal(f.followed_gen, 500);
    assert_true(gate.change);
    /* ... so the fleet's close of that open closes it. */
    struct breaker__fleet_answer recovered = answer(FLEET_CLOSED, 503, 0, 400);
    act = decide1(&f, &recovered, local(12, BREAKER_OPEN), NULL);
    assert_int_equal(act.kind, FLEET_ACT_CLOSE);
    assert_int_equal(act.gen, 12);
}

/* ---- Leases ---------------------------------------------------------------------- */

static struct breaker__fleet_lease_times lease_times(uint64_t took_ns) {
    struct breaker__fleet_lease_times t = {.start_ns = 10 * SEC,
                                           .now_ns = 10 * SEC + took_ns,
                                           .budget_ns = 25 * MS,
                                           .interval_ns = 250 * MS,
                                           .probe_timeout_ns = 30 * SEC};
    return t;
}

static void lease_answers_are_classified_by_verdict(void **state) {
    (void)state;
    struct breaker__fleet_answer a = answer(FLEET_HALF_OPEN, 5, 0, 1);
    a.verdict = VERDICT_GRANTED;
    assert_int_equal(breaker__fleet_lease_verdict(&a), FLEET_LEASE_GRANTED);
    a.verdict = VERDICT_CLOSED;
    assert_int_equal(breaker__fleet_lease_verdict(&a), FLEET_LEASE_CLOSED);
    a.verdict = VERDICT_NONE;
    assert_int_equal(breaker__fleet_lease_verdict(&a), FLEET_LEASE_REFUSED);
    assert_int_equal(breaker__fleet_lease_verdict(NULL), FLEET_LEASE_ERROR);
}

static void a_lease_settles_the_probe_and_sets_the_gate(void **state) {
    (void)state;
    struct breaker__fleet_lease_plan p;
    struct breaker__fleet_answer a = answer(FLEET_HALF_OPEN, 5, 30000000, 1);
    struct breaker__fleet_lease_times t = lease_times(2 * MS);
    /* Granted in time: held, no gate. */
    breaker__fleet_lease_settle(FLEET_LEASE_GRANTED, &a, 0, &t, &p);
    assert_true(p.hold);
    assert_int_equal(p.rc, BREAKER_OK);
    assert_int_equal(p.verdict, FLEET_LEASE_GRANTED);
    assert_false(p.gate.change || p.give_back || p.orphan);
    /* Granted past the budget: given straight back; an error. */
    t = lease_times(26 * MS);
    breaker__fleet_lease_settle(FLEET_LEASE_GRANTED, &a, 0, &t, &p);
    assert_false(p.hold);
    assert_true(p.give_back);
    assert_int_equal(p.verdict, FLEET_LEASE_ERROR);
    assert_int_equal(p.rc, BREAKER_REJECTED_HALF_OPEN);
    assert_true(p.gate.change);
    assert_int_equal(p.gate.until_ns, t.now_ns + 250 * MS);
    /* The fleet is closed: the local probe goes ahead, no lease (a local
     * breaker that tripped on its own evidence; or a host that followed
     * an open of an older state, which a restart replaced). */
    t = lease_times(1 * MS);
    a = answer(FLEET_CLOSED, 900, 0, 800);
    breaker__fleet_lease_settle(FLEET_LEASE_CLOSED, &a, 0, &t, &p);
    assert_int_equal(p.rc, BREAKER_OK);
    assert_false(p.hold || p.gate.change || p.flush_now);
    breaker__fleet_lease_settle(FLEET_LEASE_CLOSED, &a, 700, &t, &p);
    assert_int_equal(p.rc, BREAKER_OK);
    assert_false(p.flush_now);
    /* A host that follows an open of this very state: the fleet recovered
     * and the host closes at a round asked for now; no probe meanwhile. */
    breaker__fleet_lease_settle(FLEET_LEASE_CLOSED, &a, 850, &t, &p);
    assert_int_equal(p.rc, BREAKER_REJECTED_HALF_OPEN);
    assert_true(p.flush_now);
    assert_false(p.hold);
    assert_int_equal(p.gate.until_ns, t.now_ns + 250 * MS);
    /* Refused while OPEN: gated until the wait ends. */
    a = answer(FLEET_OPEN, 5, 5000, 1);
    breaker__fleet_lease_settle(FLEET_LEASE_REFUSED, &a, 0, &t, &p);
    assert_int_equal(p.rc, BREAKER_REJECTED_OPEN);
    assert_int_equal(p.gate.until_ns, t.now_ns + 5 * MS);
    /* ... at most one interval, and one interval when it said no time. */
    a.wait_us = 10 * 1000 * 1000;
    breaker__fleet_lease_settle(FLEET_LEASE_REFUSED, &a, 0, &t, &p);
    assert_int_equal(p.gate.until_ns, t.now_ns + 250 * MS);
    a = answer(FLEET_HALF_OPEN, 5, 0, 1);
    breaker__fleet_lease_settle(FLEET_LEASE_REFUSED, &a, 0, &t, &p);
    assert_int_equal(p.rc, BREAKER_REJECTED_HALF_OPEN);
    assert_int_equal(p.gate.until_ns, t.now_ns + 250 * MS);
    /* An error: one interval; not an orphan. */
    breaker__fleet_lease_settle(FLEET_LEASE_ERROR, NULL, 0, &t, &p);
    assert_int_equal(p.rc, BREAKER_REJECTED_HALF_OPEN);
    assert_int_equal(p.gate.until_ns, t.now_ns + 250 * MS);
    assert_false(p.orphan || p.hold);
    /* Lost: an orphan until the probe timeout has passed. */
    breaker__fleet_lease_settle(FLEET_LEASE_LOST, NULL, 0, &t, &p);
    assert_int_equal(p.rc, BREAKER_REJECTED_HALF_OPEN);
    assert_true(p.orphan);
    assert_int_equal(p.orphan_deadline_ns, t.now_ns + 30 * SEC);
    assert_int_equal(p.gate.until_ns, t.now_ns + 250 * MS);
}

static void a_leased_result_is_the_fleets(void **state) {
    (void)state;
    assert_int_equal(breaker__fleet_release_result(BREAKER_SUCCESS), FLEET_RESULT_SUCCESS);
    assert_int_equal(breaker__fleet_release_result(BREAKER_FAILURE), FLEET_RESULT_FAILURE);
    assert_int_equal(breaker__fleet_release_result(BREAKER_IGNORED), FLEET_RESULT_NEITHER);
    assert_int_equal(breaker__fleet_local_outcome(BREAKER_SUCCESS), BREAKER_IGNORED);
    assert_int_equal(breaker__fleet_local_outcome(BREAKER_FAILURE), BREAKER_FAILURE);
    assert_int_equal(breaker__fleet_local_outcome(BREAKER_CANCELLED), BREAKER_CANCELLED);
}

static void a_lease_slot_is_freed_once_redis_answered_its_release(void **state) {
    (void)state;
    struct breaker__fleet_answer applied = answer(FLEET_HALF_OPEN, 5, 0, 1);
    applied.verdict = VERDICT_APPLIED;
    struct breaker__fleet_answer stale = applied;
    stale.verdict = VERDICT_STALE;
    uint32_t n = 0;
    /* A completed lease: any answer frees it; an error reply does not. */
    assert_true(breaker__fleet_release_settled(&applied, false, 0, 0, &n));
    assert_true(breaker__fleet_release_settled(&stale, false, 0, 0, &n));
    assert_false(breaker__fleet_release_settled(NULL, false, 0, 0, &n));
    /* An orphan: freed when Redis applied its release ... */
    assert_true(breaker__fleet_release_settled(&applied, true, 5, 10, &n));
    /* ... kept while its deadline is ahead ... */
    assert_false(breaker__fleet_release_settled(&stale, true, 5, 10, &n));
    assert_int_equal(n, 0);
    /* ... and after it, freed by the second answered round that found no
     * such lease. */
    assert_false(breaker__fleet_release_settled(&stale, true, 10, 10, &n));
    assert_int_equal(n, 1);
    assert_false(breaker__fleet_release_settled(NULL, true, 11, 10, &n));
    assert_int_equal(n, 1);
    assert_true(breaker__fleet_release_settled(&stale, true, 12, 10, &n));
}

/* ---- The cadence ---------------------------------------------------------------- */

/* A healthy name, synced, its successes every 4 rounds and its full flush
 * every 1000, with nothing but successes. */
static struct breaker__fleet_follow healthy_follow(void) {
    struct breaker__fleet_follow f;
    memset(&f, 0, sizeof f);
    f.synced = true;
    f.known_state = FLEET_CLOSED;
    f.every = 4;
    f.keep_every = 1000;
    return f;
}

/* A round's view of a healthy name: its state, and `calls` successes
 * pending, its local breaker CLOSED. */
struct healthy {
    struct breaker__fleet_deltas d;
    struct breaker__fleet_pending p;
    struct breaker__fleet_follow f;
};

static void healthy_init(struct healthy *h, uint64_t calls) {
    memset(h, 0, sizeof *h);
    h->d.calls = calls;
    h->p.deltas = &h->d;
    h->p.local = BREAKER_CLOSED;
    h->f = healthy_follow();
}

/* Rounds of a healthy name: the calls each round sends, counted. */
static void run_rounds(struct breaker__fleet_follow *f, struct breaker__fleet_pending *p,
                       int rounds, int count[3]) {
    for (int i = 1; i <= rounds; i++) {
        p->round = (uint64_t)i;
        int call = breaker__fleet_round_call(f, p);
        count[call]++;
        breaker__fleet_round_done(f, call == FLEET_ROUND_FULL, 0);
    }
}

static void a_healthy_name_reads_and_sends_its_successes_every_k_rounds(void **state) {
    (void)state;
    struct healthy h;
    healthy_init(&h, 100);
    int count[3] = {0, 0, 0};
    run_rounds(&h.f, &h.p, 12, count);
    /* 12 rounds: a credit in 4 (the handle's rounds 4, 8 and 12), a
     * read in the others, no script's prelude at all. */
    assert_int_equal(count[FLEET_ROUND_CREDIT], 3);
    assert_int_equal(count[FLEET_ROUND_READ], 9);
    assert_int_equal(count[FLEET_ROUND_FULL], 0);
    /* K = 1: the full flush every round (full_flush_rounds 1, or a window
     * too short to hold successes back), even with nothing to send. */
    h.f.every = 1;
    assert_int_equal(breaker__fleet_round_call(&h.f, &h.p), FLEET_ROUND_FULL);
    h.d.calls = 0;
    assert_int_equal(breaker__fleet_round_call(&h.f, &h.p), FLEET_ROUND_FULL);
    /* Nothing to send in a round of the cadence: a read; successes that
     * come after wait for the next (at most 4 rounds). */
    healthy_init(&h, 0);
    h.p.round = 8;
    assert_int_equal(breaker__fleet_round_call(&h.f, &h.p), FLEET_ROUND_READ);
    h.d.calls = 1;
    for (h.p.round = 9; h.p.round < 12; h.p.round++)
        assert_int_equal(breaker__fleet_round_call(&h.f, &h.p), FLEET_ROUND_READ);
    assert_int_equal(breaker__fleet_round_call(&h.f, &h.p), FLEET_ROUND_CREDIT);
}

/* The keys' TTL is refreshed by full flushes alone: one every keep_every
 * rounds, whatever the reads and credits between. */
static void a_full_flush_comes_every_keep_every_rounds(void **state) {
    (void)state;
    struct healthy h;
    healthy_init(&h, 5);
    h.f.keep_every = 10;
    int count[3] = {0, 0, 0};
    run_rounds(&h.f, &h.p, 40, count);
    assert_int_equal(count[FLEET_ROUND_FULL], 4);
    /* The successes go in the rounds of their cadence (multiples of 4: 10
     * of 40), or sooner with a full flush (rounds 10, 20, 30 and 40). */
    assert_int_equal(count[FLEET_ROUND_CREDIT], 10 - 2);
    h.d.calls = 0; /* an idle name too */
    h.f.since_full = 9;
    assert_int_equal(breaker__fleet_round_call(&h.f, &h.p), FLEET_ROUND_FULL);
    h.f.keep_every = 1;
    h.f.since_full = 0;
    assert_int_equal(breaker__fleet_round_call(&h.f, &h.p), FLEET_ROUND_FULL);
}

/* A failed or slow call, a probe's result, a lease result or a server-
 * directed open goes at the next round, whatever the cadence: trips are
 * never delayed by it. So do the last round, a half-open fleet or local
 * breaker, a CONSECUTIVE fleet's run (a success held back would let it
 * run on) and a name not synced (attached, re-armed, or a round failed).
 * A follower of an open fleet reads it: a script would tell the same.
 * When the successes are due, a credit takes those of a window
 * policy alone: a CONSECUTIVE name's (they set the fleet's run) and a
 * failing-source map (OR-ed into the window) go with the full flush. */
static void trouble_makes_the_next_round_a_full_flush(void **state) {
    (void)state;
    static const struct {
        const char *what;
        uint64_t failures, slow, run, sources;
        bool probes_moved, releases, directed, last_round, unsynced, due, consecutive;
        enum breaker_state local;
        int fleet, want;
    } cases[] = {
        {"nothing", .local = BREAKER_CLOSED, .want = FLEET_ROUND_READ},
        {"a failure", .failures = 1, .want = FLEET_ROUND_FULL},
        {"a slow call", .slow = 1, .want = FLEET_ROUND_FULL},
        {"probes moved", .probes_moved = true, .want = FLEET_ROUND_FULL},
        {"a release", .releases = true, .want = FLEET_ROUND_FULL},
        {"a directed open", .directed = true, .want = FLEET_ROUND_FULL},
        {"a half-open breaker", .local = BREAKER_HALF_OPEN, .want = FLEET_ROUND_FULL},
        {"the last round", .last_round = true, .want = FLEET_ROUND_FULL},
        {"a half-open fleet", .fleet = FLEET_HALF_OPEN, .want = FLEET_ROUND_FULL},
        {"a fleet's run", .run = 2, .want = FLEET_ROUND_FULL},
        {"not synced", .unsynced = true, .want = FLEET_ROUND_FULL},
        {"an open fleet followed", .local = BREAKER_OPEN, .fleet = FLEET_OPEN,
         .want = FLEET_ROUND_READ},
        {"successes due", .due = true, .want = FLEET_ROUND_CREDIT},
        {"successes due, a source", .due = true, .sources = 4, .want = FLEET_ROUND_FULL},
        {"successes due, a run policy", .due = true, .consecutive = true, .want = FLEET_ROUND_FULL},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        struct healthy h;
        healthy_init(&h, 3);
        h.d.failures = cases[c].failures;
        h.d.slow = cases[c].slow;
        h.p.probes_moved = cases[c].probes_moved;
        h.p.releases = cases[c].releases;
        h.p.directed = cases[c].directed;
        h.p.last_round = cases[c].last_round;
        h.p.local = cases[c].local; /* BREAKER_CLOSED is 0 */
        h.f.known_state = cases[c].fleet;
        h.f.known_run = cases[c].run;
        h.f.synced = !cases[c].unsynced;
        h.p.round = cases[c].due ? 4 * h.f.every : 4 * h.f.every + 1;
        h.d.sources = cases[c].sources;
        h.f.consecutive = cases[c].consecutive;
        int got = breaker__fleet_round_call(&h.f, &h.p);
        if (got != cases[c].want)
            fail_msg("%s: call %d, expected %d", cases[c].what, got, cases[c].want);
    }
    struct healthy fresh; /* a new entry: its first flush is full */
    healthy_init(&fresh, 3);
    memset(&fresh.f, 0, sizeof fresh.f);
    assert_int_equal(breaker__fleet_round_call(&fresh.f, &fresh.p), FLEET_ROUND_FULL);
}

static void the_first_full_flush_staggers_the_names(void **state) {
    (void)state;
    struct breaker__fleet_follow f;
    memset(&f, 0, sizeof f);
    f.every = 4;
    f.keep_every = 100;
    breaker__fleet_round_done(&f, true, 6); /* the first: index 6 */
    assert_true(f.synced);
    assert_int_equal(f.since_full, 6); /* 6 % 100 */
    breaker__fleet_round_done(&f, false, 6);
    assert_int_equal(f.since_full, 7);
    breaker__fleet_round_done(&f, true, 6); /* later ones start at 0 */
    assert_int_equal(f.since_full, 0);
}

/* Only full flushes refresh the keys' TTL: the keepalive cadence keeps
 * its longest rounds (interval + 20%) within half of the TTL. */
static void the_cadence_keeps_the_keys_within_their_ttl(void **state) {
    (void)state;
    assert_int_equal(breaker__fleet_ttl_rounds(16, 250 * MS, 3600 * SEC), 16);
    assert_int_equal(breaker__fleet_ttl_rounds(UINT32_MAX, 250 * MS, 3600 * SEC), 6000);
    assert_int_equal(breaker__fleet_ttl_rounds(16, 200 * MS, 2 * SEC), 4); /* 4 x 240 ms */
    assert_int_equal(breaker__fleet_ttl_rounds(16, 250 * MS, 1 * SEC), 1); /* 300 > 500/2 */
    assert_int_equal(breaker__fleet_ttl_rounds(16, 3600 * SEC, 3600 * SEC), 1);
    assert_int_equal(breaker__fleet_ttl_rounds(1, 1 * MS, 3600 * SEC), 1);
}

static void the_cadence_holds_back_at_most_a_twentieth_of_the_window(void **state) {
    (void)state;
    /* The default window, 60 s, at 250 ms jittered up to 300 ms: 10 rounds
     * are at most 3 s, 1/20 (12, before, were 3.6 s: 6%). */
    assert_int_equal(breaker__fleet_full_every(16, 250 * MS, 60000000), 10);
    for (uint64_t w = 1000000; w <= 600000000; w += 1000000) {
        uint32_t k = breaker__fleet_full_every(1000, 250 * MS, w);
        if (k > 1 && k * 300000ull > w / 20) fail_msg("window %" PRIu64 " us: %u rounds", w, k);
    }
    assert_int_equal(breaker__fleet_full_every(8, 250 * MS, 60000000), 8);
    assert_int_equal(breaker__fleet_full_every(16, 250 * MS, 20000000), 3);
    assert_int_equal(breaker__fleet_full_every(16, 250 * MS, 10000000), 1); /* 1.67 rounds */
    assert_int_equal(breaker__fleet_full_every(16, 250 * MS, 1000000), 1);  /* too short: 1 */
    assert_int_equal(breaker__fleet_full_every(0, 250 * MS, 60000000), 1);
    struct breaker__fleet_follow f;
    memset(&f, 0, sizeof f);
    breaker_config c = defaults();
    struct breaker__fleet_limits l;
    breaker__fleet_limits_of(&c, &l);
    breaker__fleet_cadence_setup(&f, &l, 16, 250 * MS, 3600 * SEC);
    assert_int_equal(f.every, 10);
    assert_int_equal(f.keep_every, 6000); /* 30 min of 300 ms rounds */
    assert_int_equal(f.interval_ns, 250 * MS);
    assert_false(f.consecutive);
    c.trip = BREAKER_TRIP_CONSECUTIVE;
    c.failure_threshold = 5;
    breaker__fleet_limits_of(&c, &l);
    memset(&f, 0, sizeof f);
    breaker__fleet_cadence_setup(&f, &l, 16, 250 * MS, 3600 * SEC);
    assert_true(f.consecutive);
}

/* A healthy name that decided on the answer `v` at t = 1 s, its local
 * breaker CLOSED: @return its state, and the round's action in `act`. */
static struct breaker__fleet_follow decided(const int64_t v[ANS_COUNT],
                                            struct breaker__fleet_action *act) {
    struct breaker__fleet_follow f = healthy_follow();
    struct breaker__fleet_answer a;
    assert_true(breaker__fleet_answer_read(v, &a));
    struct breaker__fleet_local local = {.gen = 5, .state = BREAKER_CLOSED};
    struct breaker__fleet_gate gate;
    act->kind = FLEET_ACT_NONE;
    breaker__fleet_decide(&f, &a, &local, 1 * SEC, act, &gate);
    assert_int_equal(f.last.gen, a.gen);
    assert_int_equal(f.last_at_ns, 1 * SEC);
    return f;
}

/* The last answer decided on, as the version read and a credit
 * stand for it: an open fleet of generation 77, 2 s of its wait left at
 * t = 1 s, control version 3. */
static struct breaker__fleet_follow decided_open(void) {
    const int64_t v[ANS_COUNT] = {FLEET_OPEN, 77, 2000000, 2, 0, VERDICT_TRIPPED, 40, 30, 1, 70, 3};
    struct breaker__fleet_action act;
    struct breaker__fleet_follow f = decided(v, &act);
    assert_int_equal(act.kind, FLEET_ACT_TRIP);
    return f;
}

/* A version read that shows the generation and control version the host
 * last decided on stands for that answer, its wait run down on the host's
 * clock; one that moved, is absent or is not plain numbers in range sends
 * the round to read the whole state. */
static void a_version_read_stands_for_the_last_answer_until_it_moves(void **state) {
    (void)state;
    struct breaker__fleet_follow f = decided_open();
    struct breaker__fleet_answer a;
    uint64_t run = 9;
    const char *same[BREAKER__FLEET_VERSION_FIELDS] = {"77", "3", NULL};
    assert_int_equal(breaker__fleet_version_read(&f, same, 1500 * MS, &a, &run), 1);
    assert_int_equal(a.state, FLEET_OPEN);
    assert_int_equal(a.gen, 77);
    assert_int_equal(a.wait_us, 1500000); /* 2 s from t = 1 s, read at 1.5 s */
    assert_int_equal(a.verdict, VERDICT_NONE);
    assert_int_equal(a.calls, 40);
    assert_int_equal(a.born, 70);
    assert_int_equal(a.cv, 3);
    assert_int_equal(run, 0);
    assert_int_equal(breaker__fleet_version_read(&f, same, 4 * SEC, &a, &run), 1);
    assert_int_equal(a.wait_us, 0); /* the wait is over: a lease request turns it half-open */
    /* Decided again on it: the healthy host already follows; nothing new. */
    struct breaker__fleet_local local = {.gen = 6, .state = BREAKER_OPEN, .open_left_ns = 0};
    struct breaker__fleet_action act = {.kind = FLEET_ACT_NONE};
    struct breaker__fleet_gate gate;
    breaker__fleet_decide(&f, &a, &local, 4 * SEC, &act, &gate);
    assert_int_equal(act.kind, FLEET_ACT_NONE);
    const char *run3[BREAKER__FLEET_VERSION_FIELDS] = {"77", "3", "3"};
    assert_int_equal(breaker__fleet_version_read(&f, run3, 4 * SEC, &a, &run), 1);
    assert_int_equal(run, 3); /* a CONSECUTIVE fleet's run: the next round is full */
    static const char *const moved[][BREAKER__FLEET_VERSION_FIELDS] = {
        {"78", "3", NULL},  /* a transition: a new generation */
        {"77", "4", NULL},  /* a control change */
        {NULL, NULL, NULL}, /* the state is gone (expired, FLUSHALL, a restart) */
        {"77", NULL, NULL}, /* a state the scripts never write */
        {"x", "3", NULL},   {"77", "3", "-1"}, {"99999999999999999", "3", NULL},
        {"77", "3", "1e3"}};
    for (size_t i = 0; i < sizeof moved / sizeof moved[0]; i++)
        if (breaker__fleet_version_read(&f, moved[i], 4 * SEC, &a, &run) != 0)
            fail_msg("case %zu taken for the state last decided on", i);
    f.synced = false; /* no answer decided since the entry was armed */
    assert_int_equal(breaker__fleet_version_read(&f, same, 4 * SEC, &a, &run), 0);
}

/* A credit answers each name's control version when it counted its calls
 * (in the generation the host knows, the state CLOSED), -1 when not: the
 * last answer stands, with that version; anything else is no answer. */
static void a_counted_credit_is_the_last_answer_with_its_control_version(void **state) {
    (void)state;
    const int64_t v[ANS_COUNT] = {FLEET_CLOSED, 90, 0, 0, 0, VERDICT_NONE, 0, 0, 0, 85, 2};
    struct breaker__fleet_action act;
    struct breaker__fleet_follow f = decided(v, &act);
    assert_int_equal(act.kind, FLEET_ACT_NONE);
    struct breaker__fleet_answer c;
    assert_int_equal(breaker__fleet_credit_answer(&f, 2, 2 * SEC, &c), 1);
    assert_int_equal(c.state, FLEET_CLOSED);
    assert_int_equal(c.gen, 90);
    assert_int_equal(c.born, 85);
    assert_int_equal(c.cv, 2);
    assert_int_equal(breaker__fleet_credit_answer(&f, 5, 2 * SEC, &c), 1);
    assert_int_equal(c.cv, 5); /* a control change: the round reads the record */
    assert_int_equal(breaker__fleet_credit_answer(&f, -1, 2 * SEC, &c), 0); /* not counted */
    assert_int_equal(breaker__fleet_credit_answer(&f, 0, 2 * SEC, &c), 0);
    assert_int_equal(breaker__fleet_credit_answer(&f, INT64_MAX, 2 * SEC, &c), 0);
    f = decided_open(); /* never of an open fleet */
    assert_int_equal(breaker__fleet_credit_answer(&f, 3, 2 * SEC, &c), 0);
    /* Its call: the known generation, the calls, the time since the last
     * flush (at least 1 µs, at most 365 days). */
    struct breaker__fleet_call call;
    breaker__fleet_call_credit(&call, 90, 12, 0);
    assert_int_equal(call.script, FLEET_SCRIPT_CREDIT);
    assert_int_equal(call.argc, 3);
    assert_string_equal(call.argv[0], "90");
    assert_string_equal(call.argv[1], "12");
    assert_string_equal(call.argv[2], "1");
    breaker__fleet_call_credit(&call, 90, 12, UINT64_MAX);
    assert_string_equal(call.argv[2], "31536000000000");
}

/* The status read (status.c) reads the whole state: the answer a script
 * would give. */
static void a_read_is_the_answer_a_script_would_give(void **state) {
    (void)state;
    uint64_t now;
    assert_true(breaker__fleet_time_read("1700000000", "123456", &now));
    assert_int_equal(now, UINT64_C(1700000000123456));
    assert_false(breaker__fleet_time_read("17x", "1", &now));
    assert_false(breaker__fleet_time_read("1", "1000000", &now));
    /* st gen until k succ ec ef es born: an open fleet, 2 s of its wait left. */
    const char *open[BREAKER__FLEET_READ_FIELDS] = {
        "1", "77", "1700000002123456", "2", "0", "40", "30", "1", "70", "0"};
    uint64_t run = 9;
    struct breaker__fleet_answer a;
    char why[160] = "";
    assert_int_equal(breaker__fleet_read_answer(open, now, 60000000, &a, &run, why, sizeof why), 1);
    /* As the script's answer would be: {st, gen, wait, k, succ, verdict, ec, ef, es, born}. */
    const int64_t want[ANS_COUNT] = {FLEET_OPEN, 77, 2000000, 2, 0, VERDICT_NONE, 40, 30, 1, 70};
    struct breaker__fleet_answer w;
    assert_true(breaker__fleet_answer_read(want, &w));
    const uint64_t got_fields[] = {
        (uint64_t)a.state, a.gen,      a.wait_us, a.k,    a.successes, (uint64_t)a.verdict,
        a.calls,           a.failures, a.slow,    a.born, run};
    const uint64_t want_fields[] = {
        (uint64_t)w.state, w.gen,  w.wait_us, w.k, w.successes, (uint64_t)w.verdict, w.calls,
        w.failures,        w.slow, w.born,    0};
    for (size_t i = 0; i < sizeof got_fields / sizeof got_fields[0]; i++)
        if (got_fields[i] != want_fields[i])
            fail_msg("read field %zu: %" PRIu64 ", expected %" PRIu64, i, got_fields[i],
                     want_fields[i]);
    /* Decided as a script's answer: a healthy local breaker follows the trip. */
    struct breaker__fleet_follow f = healthy_follow();
    f.known_gen = 76;
    struct breaker__fleet_local local = {.gen = 5, .state = BREAKER_CLOSED};
    struct breaker__fleet_action act = {.kind = FLEET_ACT_NONE};
    struct breaker__fleet_gate gate;
    breaker__fleet_decide(&f, &a, &local, 1000, &act, &gate);
    assert_int_equal(act.kind, FLEET_ACT_TRIP);
    assert_int_equal(act.wait_ns, 2000000000);
    assert_int_equal(act.evidence.calls, 40);
    assert_int_equal(f.known_state, FLEET_OPEN);
    /* A CONSECUTIVE fleet's run (no control record yet: cv absent). */
    const char *old[BREAKER__FLEET_READ_FIELDS] = {"0", "5", "0", "0", "0",
                                                   "0", "0", "0", "0", "3"};
    assert_int_equal(breaker__fleet_read_answer(old, now, 60000000, &a, &run, why, sizeof why), 1);
    assert_int_equal(a.born, 0);
    assert_int_equal(a.wait_us, 0);
    assert_int_equal(run, 3);
}

/* The round's TIME runs before some of its reads: another host's trip in
 * between (open_jitter 0, the wait at its longest) wrote an until a little
 * past now + the longest wait. It is followed, not taken for a corrupt
 * state (before: no answer, the trip followed a round late); an until past
 * that by more than the skew is no answer. */
static void a_trip_written_after_the_rounds_time_is_followed(void **state) {
    (void)state;
    uint64_t now = UINT64_C(1700000000000000), longest = 60000000;
    char until[24];
    snprintf(until, sizeof until, "%" PRIu64, now + longest + 300);
    const char *v[BREAKER__FLEET_READ_FIELDS] = {"1",  "9",  until, "0", "0",
                                                 "20", "12", "0",   "3", "0"};
    struct breaker__fleet_answer a;
    uint64_t run;
    char why[160] = "";
    assert_int_equal(breaker__fleet_read_answer(v, now, longest, &a, &run, why, sizeof why), 1);
    assert_int_equal(a.state, FLEET_OPEN);
    assert_int_equal(a.wait_us, longest + 300);
    snprintf(until, sizeof until, "%" PRIu64, now + longest + 2000000);
    assert_int_equal(breaker__fleet_read_answer(v, now, longest, &a, &run, why, sizeof why), 0);
    assert_non_null(strstr(why, "field until"));
}

static void a_read_of_a_state_it_cannot_trust_is_no_answer(void **state) {
    (void)state;
    struct breaker__fleet_answer a;
    char why[160];
    uint64_t run;
    uint64_t now = UINT64_C(1700000000000000);
    const char *none[BREAKER__FLEET_READ_FIELDS] = {NULL};
    assert_int_equal(breaker__fleet_read_answer(none, now, 60000000, &a, &run, why, sizeof why), 0);
    assert_non_null(strstr(why, "no state"));
    static const struct {
        int field;
        const char *value, *reason;
    } bad[] = {{0, "7", "state = 7"},
               {0, "-1", "field st = -1"},
               {1, "0", "gen = 0"},
               {1, "99999999999999999", "field gen = 99999999999999999"},
               {3, "nan", "field k = nan"},
               {6, "50", "failures = 50"}, /* ef > ec */
               {8, "999", "born = 999"},   /* born > gen */
               {2, "1700001000000000", "field until = 1700001000000000"},
               {9, "x", "field run = x"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *v[BREAKER__FLEET_READ_FIELDS] = {
            "1", "77", "1700000002000000", "0", "0", "40", "30", "0", "70", "0"};
        v[bad[i].field] = bad[i].value;
        why[0] = '\0';
        if (breaker__fleet_read_answer(v, now, 60000000, &a, &run, why, sizeof why) != 0 ||
            strstr(why, bad[i].reason) == NULL)
            fail_msg("case %zu: '%s' not refused with '%s'", i, why, bad[i].reason);
    }
}

/* A read carries the control record's version; the record itself (the
 * control script's answer) is input like every answer: each part in its
 * range, the texts printable, the limits valid, or no record. */
static void the_control_record_is_read_whole_and_checked(void **state) {
    (void)state;
    uint64_t now = UINT64_C(1700000000000000), run;
    struct breaker__fleet_answer a;
    char why[200] = "";
    const char *v[BREAKER__FLEET_READ_FIELDS] = {"0", "5", "0", "0", "0", "0",
                                                 "0", "0", "5", "0", "3"};
    assert_int_equal(breaker__fleet_read_answer(v, now, 60000000, &a, &run, why, sizeof why), 1);
    assert_int_equal(a.cv, 3);
    v[10] = NULL; /* never set */
    assert_int_equal(breaker__fleet_read_answer(v, now, 60000000, &a, &run, why, sizeof why), 1);
    assert_int_equal(a.cv, 0);
    char buf[BREAKER__FLEET_LIMITS_LEN];
    const char *lv[BREAKER__FLEET_LIMIT_COUNT];
    split_named(DEFAULT_TEXT, buf, lv);
    struct breaker__fleet_record r;
    int64_t num[5] = {FLEET_FORCED_OPEN, 5000000, 1, 40, 2500};
    assert_true(breaker__fleet_record_read(7, num, "alice", 5, "maintenance", 11, 12, lv, &r, why,
                                           sizeof why));
    assert_int_equal(r.version, 7);
    assert_int_equal(r.forced, FLEET_FORCED_OPEN);
    assert_int_equal(r.left_us, 5000000);
    assert_int_equal(r.shadow, 1);
    assert_int_equal(r.reset_gen, 40);
    assert_int_equal(r.reset_age_us, 2500);
    assert_string_equal(r.who, "alice");
    assert_int_equal(r.limits.min_calls, 20);
    int64_t bad[][5] = {{3, 0, 0, 0, 0}, {1, -1, 0, 0, 0}, {1, 31536000000001, 0, 0, 0},
                        {0, 0, 2, 0, 0}, {0, 0, 0, 0, -1}, {0, 0, 0, 0, INT64_C(4503599627370497)}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(
            breaker__fleet_record_read(7, bad[i], "", 0, "", 0, 0, lv, &r, why, sizeof why));
    assert_false(
        breaker__fleet_record_read(7, num, "a\033[2J", 6, "", 0, 0, lv, &r, why, sizeof why));
    lv[0] = "0";
    assert_false(breaker__fleet_record_read(7, num, "", 0, "", 0, 0, lv, &r, why, sizeof why));
    assert_non_null(strstr(why, "min_calls"));
    /* The live fields only: the window, its buckets, the policy and the
     * probe slots stay the host's. */
    struct breaker__fleet_limits l = named(DEFAULT_TEXT);
    l.min_calls = 33;
    l.window_us = 1000000;
    l.max_probes = 7;
    breaker_config local;
    breaker_config_init(&local);
    local.trip = BREAKER_TRIP_TIME_WINDOW;
    breaker_config untouched = local;
    breaker__fleet_limits_apply_live(&l, &local);
    assert_int_equal(local.min_calls, 33);
    assert_int_equal(local.window_ns, untouched.window_ns);
    assert_int_equal(local.half_open_max_probes, untouched.half_open_max_probes);
    assert_int_equal(local.trip, BREAKER_TRIP_TIME_WINDOW);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_healthy_name_reads_and_sends_its_successes_every_k_rounds),
        cmocka_unit_test(a_full_flush_comes_every_keep_every_rounds),
        cmocka_unit_test(trouble_makes_the_next_round_a_full_flush),
        cmocka_unit_test(the_first_full_flush_staggers_the_names),
        cmocka_unit_test(a_version_read_stands_for_the_last_answer_until_it_moves),
        cmocka_unit_test(a_counted_credit_is_the_last_answer_with_its_control_version),
        cmocka_unit_test(the_cadence_holds_back_at_most_a_twentieth_of_the_window),
        cmocka_unit_test(the_cadence_keeps_the_keys_within_their_ttl),
        cmocka_unit_test(a_read_is_the_answer_a_script_would_give),
        cmocka_unit_test(a_read_of_a_state_it_cannot_trust_is_no_answer),
        cmocka_unit_test(a_trip_written_after_the_rounds_time_is_followed),
        cmocka_unit_test(the_control_record_is_read_whole_and_checked),
        cmocka_unit_test(a_record_is_converged_to_and_applying_it_twice_changes_nothing),
        cmocka_unit_test(a_cut_fleet_wait_reaches_a_host_that_waits_longer),
        cmocka_unit_test(limits_are_the_configurations_keys_by_name),
        cmocka_unit_test(limits_round_trip_exactly),
        cmocka_unit_test(stored_limits_are_input_and_are_refused_with_a_reason),
        cmocka_unit_test(adopt_takes_the_stored_limits_and_keeps_the_local_fields),
        cmocka_unit_test(limits_compare_field_by_field_not_as_structs),
        cmocka_unit_test(keys_and_arguments_are_the_scripts),
        cmocka_unit_test(deltas_are_closed_state_calls_since_the_last_flush),
        cmocka_unit_test(a_probe_success_seen_before_its_stripe_is_carried_not_wrapped),
        cmocka_unit_test(flush_sequences_only_grow),
        cmocka_unit_test(answers_are_read_and_malformed_ones_refused),
        cmocka_unit_test(a_fleet_open_trips_a_closed_host_with_the_fleets_evidence),
        cmocka_unit_test(a_fleet_close_closes_a_host_that_followed_its_open),
        cmocka_unit_test(a_closed_state_born_after_the_followed_open_closes_nothing),
        cmocka_unit_test(a_later_answer_of_the_same_round_overrides_an_earlier_one),
        cmocka_unit_test(a_host_that_recovered_while_degraded_is_spared_for_that_generation),
        cmocka_unit_test(recovery_while_degraded_needs_a_move_to_closed),
        cmocka_unit_test(a_retired_entry_only_moves_its_known_generation),
        cmocka_unit_test(an_armed_breaker_knows_its_generation_and_which_resets_are_older),
        cmocka_unit_test(rearming_forgets_the_breaker_but_keeps_the_generation),
        cmocka_unit_test(a_stale_view_trips_closed_breakers_only),
        cmocka_unit_test(a_stale_view_trip_is_undone_by_a_closed_fleet_and_kept_by_an_open_one),
        cmocka_unit_test(lease_answers_are_classified_by_verdict),
        cmocka_unit_test(a_lease_settles_the_probe_and_sets_the_gate),
        cmocka_unit_test(a_leased_result_is_the_fleets),
        cmocka_unit_test(a_lease_slot_is_freed_once_redis_answered_its_release),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
