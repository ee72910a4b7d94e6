/* SPDX-License-Identifier: MIT */
/*
 * protocol.c - the fleet client's decisions (protocol.h): plain data in,
 * plain data out; no socket, no lock, no clock, no breaker call. The I/O
 * around them is flush.c's, calls.c's and lease.c's (client.h), over a
 * transport (breaker/redis_transport.h); the server's half is the scripts
 * (lua/).
 */
#include "store/redis/protocol.h"

#include "common/splitmix.h"
#include "common/text.h"
#include "core/config_fields.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NS_PER_US 1000u

/* ---- The limits as text ------------------------------------------------------- */

void breaker__fleet_limits_of(const breaker_config *c, struct breaker__fleet_limits *out) {
    memset(out, 0, sizeof *out);
    out->min_calls = c->min_calls;
    out->failure_rate = c->failure_rate;
    out->slow_call_rate = c->slow_call_rate;
    out->window_us = c->window_ns / NS_PER_US;
    /* A COUNT_WINDOW policy's window_buckets may be 0 (unused locally); the
     * fleet keeps a time window for it all the same. */
    out->buckets = c->window_buckets ? c->window_buckets : 10;
    out->open_us = c->open_ns / NS_PER_US;
    out->open_backoff = c->open_backoff;
    out->open_max_us = c->open_max_ns / NS_PER_US;
    out->open_jitter = c->open_jitter;
    out->max_probes = c->half_open_max_probes;
    out->successes = c->half_open_successes;
    out->probe_timeout_us = c->probe_timeout_ns / NS_PER_US;
    out->failure_threshold = c->trip == BREAKER_TRIP_CONSECUTIVE ? c->failure_threshold : 0;
    out->min_failing_sources = c->min_failing_sources;
}

void breaker__fleet_limits_format(const struct breaker__fleet_limits *l, char *out, size_t len) {
    snprintf(out, len,
             "min_calls=%" PRIu32 " failure_rate=%.17g slow_call_rate=%.17g window=%" PRIu64
             " window_buckets=%" PRIu32 " open=%" PRIu64 " open_backoff=%.17g open_max=%" PRIu64
             " open_jitter=%.17g half_open_max_probes=%" PRIu32 " half_open_successes=%" PRIu32
             " probe_timeout=%" PRIu64 " failure_threshold=%" PRIu32
             " min_failing_sources=%" PRIu32,
             l->min_calls, l->failure_rate, l->slow_call_rate, l->window_us, l->buckets, l->open_us,
             l->open_backoff, l->open_max_us, l->open_jitter, l->max_probes, l->successes,
             l->probe_timeout_us, l->failure_threshold, l->min_failing_sources);
}

void breaker__fleet_limits_text(const breaker_config *cfg, char *out, size_t len) {
    struct breaker__fleet_limits l;
    breaker__fleet_limits_of(cfg, &l);
    breaker__fleet_limits_format(&l, out, len);
}

/* How one limit is read. */
enum field_kind { FIELD_U32, FIELD_U64_US, FIELD_RATE, FIELD_FACTOR };
struct field {
    const char *name; /* the configuration's key (breaker_config_set()) */
    enum field_kind kind;
    bool zero_is_default; /* breaker_config reads 0 as its default; the
                             scripts would use 0 itself */
    size_t offset;
};
#define FIELD(name, member, kind, zero) \
    { name, kind, zero, offsetof(struct breaker__fleet_limits, member) }
/* In the scripts' order (lua/prelude.lua: LIMITS, c[1] .. c[14]). */
static const struct field fields[BREAKER__FLEET_LIMIT_COUNT] = {
    FIELD("min_calls", min_calls, FIELD_U32, true),
    FIELD("failure_rate", failure_rate, FIELD_RATE, true),
    FIELD("slow_call_rate", slow_call_rate, FIELD_RATE, false), /* 0: off, for both */
    FIELD("window", window_us, FIELD_U64_US, true),
    FIELD("window_buckets", buckets, FIELD_U32, true),
    FIELD("open", open_us, FIELD_U64_US, true),
    FIELD("open_backoff", open_backoff, FIELD_FACTOR, true),
    FIELD("open_max", open_max_us, FIELD_U64_US, true),
    FIELD("open_jitter", open_jitter, FIELD_RATE, false), /* 0: none, for both */
    FIELD("half_open_max_probes", max_probes, FIELD_U32, true),
    FIELD("half_open_successes", successes, FIELD_U32, true),
    FIELD("probe_timeout", probe_timeout_us, FIELD_U64_US, true),
    FIELD("failure_threshold", failure_threshold, FIELD_U32, false),     /* 0: a window policy */
    FIELD("min_failing_sources", min_failing_sources, FIELD_U32, false), /* 0: 3 sources */
};
#undef FIELD

const char *const breaker__fleet_limit_names[BREAKER__FLEET_LIMIT_COUNT] = {
    "min_calls",           "failure_rate",
    "slow_call_rate",      "window",
    "window_buckets",      "open",
    "open_backoff",        "open_max",
    "open_jitter",         "half_open_max_probes",
    "half_open_successes", "probe_timeout",
    "failure_threshold",   "min_failing_sources"};

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 3, 4)))
#endif
static int
parse_fail(char *why, size_t why_len, const char *fmt, ...);
static int parse_fail(char *why, size_t why_len, const char *fmt, ...) {
    if (why != NULL && why_len > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, why_len, fmt, ap);
        va_end(ap);
    }
    return 0;
}

/* A decimal integer of digits only, at most `max`. */
static bool read_integer(const char *s, size_t n, uint64_t max, uint64_t *out) {
    uint64_t v = 0;
    if (n == 0) return false;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (max - d) / 10) return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

/* A finite, non-negative number as %.17g writes one (digits, a point, an
 * exponent): no sign, no "inf", "nan" or hexadecimal, which strtod would
 * take. */
static bool read_real(const char *s, size_t n, double *out) {
    char buf[64];
    if (n == 0 || n >= sizeof buf) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool exp_sign = (c == '-' || c == '+') && i > 0 && (s[i - 1] == 'e' || s[i - 1] == 'E');
        if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || exp_sign)) return false;
    }
    if (s[0] < '0' || s[0] > '9') return false; /* ".5" and "e5": not ours */
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *end = NULL;
    double v = strtod(buf, &end);
    if (end != buf + n || !isfinite(v) || v < 0) return false;
    *out = v;
    return true;
}

/* Read field `f` from the token s[0..n) into `l`. @return 1, or 0 with why. */
static int read_field(const struct field *f, const char *s, size_t n,
                      struct breaker__fleet_limits *l, char *why, size_t why_len) {
    char *at = (char *)l + f->offset;
    uint64_t u = 0;
    double d = 0;
    bool zero = false;
    switch (f->kind) {
    case FIELD_U32:
        if (!read_integer(s, n, UINT32_MAX, &u))
            return parse_fail(why, why_len, "%s: \"%.*s\" is not an integer in 0..%" PRIu32,
                              f->name, (int)n, s, UINT32_MAX);
        {
            uint32_t v = (uint32_t)u;
            memcpy(at, &v, sizeof v);
        }
        zero = u == 0;
        break;
    case FIELD_U64_US:
        /* The local breaker holds it in nanoseconds. */
        if (!read_integer(s, n, UINT64_MAX / NS_PER_US, &u))
            return parse_fail(why, why_len,
                              "%s: \"%.*s\" is not a whole number of microseconds in 0..%" PRIu64,
                              f->name, (int)n, s, UINT64_MAX / NS_PER_US);
        memcpy(at, &u, sizeof u);
        zero = u == 0;
        break;
    case FIELD_RATE:
    case FIELD_FACTOR:
        if (!read_real(s, n, &d))
            return parse_fail(why, why_len, "%s: \"%.*s\" is not a finite non-negative number",
                              f->name, (int)n, s);
        if (f->kind == FIELD_RATE && d > 1)
            return parse_fail(why, why_len, "%s: %.17g is not a rate in [0, 1]", f->name, d);
        memcpy(at, &d, sizeof d);
        zero = d == 0;
        break;
    }
    if (zero && f->zero_is_default)
        return parse_fail(why, why_len, "%s: 0 (the scripts would use 0 itself, not the default)",
                          f->name);
    return 1;
}

int breaker__fleet_limits_read(const char *const v[BREAKER__FLEET_LIMIT_COUNT],
                               struct breaker__fleet_limits *out, char *why, size_t why_len) {
    struct breaker__fleet_limits l;
    memset(&l, 0, sizeof l);
    for (size_t i = 0; i < BREAKER__FLEET_LIMIT_COUNT; i++) {
        if (v[i] == NULL) return parse_fail(why, why_len, "%s: missing", fields[i].name);
        if (!read_field(&fields[i], v[i], strlen(v[i]), &l, why, why_len)) return 0;
    }
    if (!breaker__fleet_limits_check(&l, why, why_len)) return 0;
    *out = l;
    return 1;
}

bool breaker__fleet_limits_same(const struct breaker__fleet_limits *a,
                                const struct breaker__fleet_limits *b, bool live) {
    bool same_live = a->min_calls == b->min_calls && a->failure_rate == b->failure_rate &&
                     a->slow_call_rate == b->slow_call_rate && a->open_us == b->open_us &&
                     a->open_backoff == b->open_backoff && a->open_max_us == b->open_max_us &&
                     a->open_jitter == b->open_jitter && a->successes == b->successes &&
                     a->probe_timeout_us == b->probe_timeout_us &&
                     a->min_failing_sources == b->min_failing_sources &&
                     a->failure_threshold == b->failure_threshold;
    if (live) return same_live;
    return same_live && a->window_us == b->window_us && a->buckets == b->buckets &&
           a->max_probes == b->max_probes;
}

/* One field of the limits against lo..hi (a rate: lo excluded when
 * `lo_open`). */
static int limit_in(const char *name, double v, double lo, double hi, bool lo_open, char *why,
                    size_t why_len) {
    if (v >= lo && v <= hi && !(lo_open && v == lo)) return 1;
    return parse_fail(why, why_len, "%s = %.17g, expected %s%.17g, %.17g]", name, v,
                      lo_open ? "(" : "[", lo, hi);
}

int breaker__fleet_limits_check(const struct breaker__fleet_limits *l, char *why, size_t why_len) {
    const double dur = (double)BREAKER__FLEET_MAX_DURATION_US;
    if (!limit_in("min_calls", l->min_calls, 1, BREAKER__MAX_MIN_CALLS, false, why, why_len) ||
        !limit_in("failure_rate", l->failure_rate, 0, 1, true, why, why_len) ||
        !limit_in("slow_call_rate", l->slow_call_rate, 0, 1, false, why, why_len) ||
        !limit_in("window", (double)l->window_us, 1, dur, false, why, why_len) ||
        !limit_in("window_buckets", l->buckets, 1, BREAKER__MAX_BUCKETS, false, why, why_len))
        return 0;
    if ((double)l->window_us / l->buckets < 1000)
        return parse_fail(why, why_len,
                          "window = %" PRIu64 " us, expected at least 1000 us "
                          "per bucket",
                          l->window_us);
    return limit_in("open", (double)l->open_us, 1, dur, false, why, why_len) &&
           limit_in("open_backoff", l->open_backoff, 1, BREAKER__MAX_OPEN_BACKOFF, false, why,
                    why_len) &&
           limit_in("open_max", (double)l->open_max_us, (double)l->open_us, dur, false, why,
                    why_len) &&
           limit_in("open_jitter", l->open_jitter, 0, 1, false, why, why_len) &&
           limit_in("half_open_max_probes", l->max_probes, 1, BREAKER__MAX_PROBES, false, why,
                    why_len) &&
           limit_in("half_open_successes", l->successes, 1, BREAKER__MAX_PROBES, false, why,
                    why_len) &&
           limit_in("probe_timeout", (double)l->probe_timeout_us, 1, dur, false, why, why_len) &&
           limit_in("failure_threshold", l->failure_threshold, 0, BREAKER__MAX_FAILURE_THRESHOLD,
                    false, why, why_len) &&
           limit_in("min_failing_sources", l->min_failing_sources, 0, 64, false, why, why_len);
}

void breaker__fleet_limits_apply_live(const struct breaker__fleet_limits *l, breaker_config *cfg) {
    cfg->min_calls = l->min_calls;
    cfg->failure_rate = l->failure_rate;
    cfg->slow_call_rate = l->slow_call_rate;
    cfg->open_ns = l->open_us * NS_PER_US;
    cfg->open_backoff = l->open_backoff;
    cfg->open_max_ns = l->open_max_us * NS_PER_US;
    cfg->open_jitter = l->open_jitter;
    cfg->half_open_successes = l->successes;
    cfg->probe_timeout_ns = l->probe_timeout_us * NS_PER_US;
    cfg->min_failing_sources = l->min_failing_sources;
    if (cfg->trip == BREAKER_TRIP_CONSECUTIVE && l->failure_threshold > 0)
        cfg->failure_threshold = l->failure_threshold;
}

void breaker__fleet_limits_apply(const struct breaker__fleet_limits *l, breaker_config *cfg) {
    breaker__fleet_limits_apply_live(l, cfg);
    cfg->window_ns = l->window_us * NS_PER_US;
    cfg->window_buckets = l->buckets;
    cfg->half_open_max_probes = l->max_probes;
    if (l->failure_threshold > 0) {
        cfg->trip = BREAKER_TRIP_CONSECUTIVE;
        cfg->failure_threshold = l->failure_threshold;
    } else if (cfg->trip == BREAKER_TRIP_CONSECUTIVE) {
        cfg->trip = BREAKER_TRIP_TIME_WINDOW; /* the fleet keeps a window */
    }
}

int breaker__fleet_limits_adopt(const struct breaker__fleet_limits *stored, breaker_config *cfg,
                                bool *differs, char *why, size_t why_len) {
    breaker_config theirs = *cfg;
    breaker__fleet_limits_apply(stored, &theirs);
    char msg[256];
    if (breaker_config_validate(&theirs, msg, sizeof msg) != BREAKER_OK)
        return parse_fail(why, why_len, "%s", msg);
    struct breaker__fleet_limits mine;
    breaker__fleet_limits_of(cfg, &mine);
    *differs = !breaker__fleet_limits_same(&mine, stored, false);
    *cfg = theirs;
    return 1;
}

/* ---- Keys and the scripts' arguments ------------------------------------------ */

void breaker__fleet_key(const char *name, int which, char *out, size_t len) {
    static const char *const suffix[FLEET_KEY_COUNT] = {"s", "w", "l", "q"};
    snprintf(out, len, "breaker:v2:{%s}:%s", name, suffix[which]);
}

void breaker__fleet_token_text(uint64_t token, char out[17]) {
    snprintf(out, 17, "%016" PRIx64, token);
}

void breaker__fleet_ttl_text(uint64_t ttl_ns, char out[24]) {
    snprintf(out, 24, "%" PRIu64, ttl_ns / 1000000u);
}

/* ---- A flush's deltas ------------------------------------------------------- */

void breaker__fleet_take_deltas(struct breaker__fleet_seen *seen, const breaker_stats *s,
                                struct breaker__fleet_deltas *out) {
    uint64_t pfail = s->probes_failed - s->probes_timed_out; /* completed as failures */
    /* Successes minus the probes' (a probe's success counts in both), plus
     * what the last round carried: may be negative for a moment (see
     * success_carry), and is then carried again instead of sent. */
    int64_t net = (int64_t)(s->successes - seen->successes) -
                  (int64_t)(s->probes_succeeded - seen->probes_succeeded) + seen->success_carry;
    uint64_t succ = net > 0 ? (uint64_t)net : 0;
    seen->success_carry = net < 0 ? net : 0;
    uint64_t fail = s->failures - seen->failures;
    uint64_t probe_fail = pfail - seen->probes_failed;
    fail = fail > probe_fail ? fail - probe_fail : 0;
    out->calls = succ + fail;
    out->failures = fail;
    out->slow = s->slow - seen->slow;
    out->run = s->consecutive_failures;
    out->sources = 0; /* the caller's: breaker_failing_sources_peek() */
    seen->successes = s->successes;
    seen->failures = s->failures;
    seen->slow = s->slow;
    seen->probes_succeeded = s->probes_succeeded;
    seen->probes_failed = pfail;
}

uint64_t breaker__fleet_next_seq(uint64_t last, uint64_t now_us) {
    uint64_t next = last + 1;
    if (now_us > next) next = now_us;
    /* The scripts hold a sequence below 2^52 (BIG); a monotonic clock in µs
     * reaches it after 142 years. */
    if (next > (uint64_t)BREAKER__FLEET_BIG) next = (uint64_t)BREAKER__FLEET_BIG;
    return next;
}

void breaker__fleet_host_id(uint64_t token_key, char out[17]) {
    /* Not the key itself: lease tokens are built from it. */
    breaker__fleet_token_text(breaker__splitmix64(token_key ^ UINT64_C(0x686f73742d696421)), out);
}

static void call_arg(struct breaker__fleet_call *c, uint64_t v) {
    snprintf(c->argv[c->argc], sizeof c->argv[c->argc], "%" PRIu64, v);
    c->argc++;
}

void breaker__fleet_call_flush(struct breaker__fleet_call *c, uint64_t known_gen,
                               const struct breaker__fleet_deltas *d) {
    c->script = FLEET_SCRIPT_FLUSH;
    c->argc = 0;
    call_arg(c, known_gen);
    call_arg(c, d->calls);
    call_arg(c, d->failures);
    call_arg(c, d->slow);
    call_arg(c, d->run);
}

void breaker__fleet_call_sequence(struct breaker__fleet_call *c, const char host[17],
                                  uint64_t seq) {
    snprintf(c->argv[c->argc], sizeof c->argv[c->argc], "%s", host);
    c->argc++;
    call_arg(c, seq);
}

void breaker__fleet_call_sources(struct breaker__fleet_call *c, uint64_t map) {
    call_arg(c, map & UINT32_MAX);
    call_arg(c, map >> 32);
}

void breaker__fleet_call_directed(struct breaker__fleet_call *c, uint64_t wait_us) {
    call_arg(c, wait_us);
}

void breaker__fleet_call_host_flush(struct breaker__fleet_call *c, uint64_t known_gen,
                                    const struct breaker__fleet_deltas *d, const char host[17],
                                    uint64_t seq, uint64_t directed_us) {
    breaker__fleet_call_flush(c, known_gen, d);
    breaker__fleet_call_sequence(c, host, seq);
    breaker__fleet_call_sources(c, d->sources);
    breaker__fleet_call_directed(c, directed_us);
}

void breaker__fleet_call_credit(struct breaker__fleet_call *c, uint64_t known_gen, uint64_t calls,
                                uint64_t since_us) {
    c->script = FLEET_SCRIPT_CREDIT;
    c->argc = 0;
    call_arg(c, known_gen);
    call_arg(c, calls);
    if (since_us > BREAKER__FLEET_MAX_DURATION_US) since_us = BREAKER__FLEET_MAX_DURATION_US;
    call_arg(c, since_us > 0 ? since_us : 1);
}

uint64_t breaker__fleet_directed_left_us(const breaker_stats *s, enum breaker_state local,
                                         uint64_t seen, uint64_t now_ns) {
    if (s->server_directed_opens == seen || local != BREAKER_OPEN) return 0;
    return s->open_until_ns > now_ns ? (s->open_until_ns - now_ns) / 1000 : 0;
}

void breaker__fleet_call_acquire(struct breaker__fleet_call *c, uint64_t token) {
    c->script = FLEET_SCRIPT_ACQUIRE;
    c->argc = 1;
    breaker__fleet_token_text(token, c->argv[0]);
}

void breaker__fleet_call_release(struct breaker__fleet_call *c, uint64_t gen, uint64_t token,
                                 int result) {
    c->script = FLEET_SCRIPT_RELEASE;
    c->argc = 0;
    call_arg(c, gen);
    breaker__fleet_token_text(token, c->argv[c->argc++]);
    call_arg(c, (uint64_t)result);
}

/* ---- Answers -------------------------------------------------------------------- */

/* The answer's names, for reasons. */
static const char *const answer_field[ANS_COUNT] = {"state",     "gen",     "wait_us", "k",
                                                    "successes", "verdict", "calls",   "failures",
                                                    "slow",      "born",    "cv"};

/* One field of an answer against lo..hi. */
static int answer_in(const int64_t v[ANS_COUNT], int i, int64_t lo, int64_t hi, char *why,
                     size_t why_len) {
    if (v[i] >= lo && v[i] <= hi) return 1;
    return parse_fail(why, why_len, "answer field %s = %" PRId64 ", expected %" PRId64 "..%" PRId64,
                      answer_field[i], v[i], lo, hi);
}

int breaker__fleet_answer_check(const int64_t v[ANS_COUNT], char *why, size_t why_len) {
    const int64_t big = BREAKER__FLEET_BIG;
    /* The longest wait the scripts compute: open_max_ns (365 days at most)
     * plus its jitter (at most as much again). */
    const int64_t wait_max = INT64_C(2) * 365 * 24 * 3600 * 1000000;
    return answer_in(v, ANS_STATE, FLEET_CLOSED, FLEET_HALF_OPEN, why, why_len) &&
           answer_in(v, ANS_VERDICT, VERDICT_NONE, VERDICT_APPLIED, why, why_len) &&
           answer_in(v, ANS_GEN, 0, big, why, why_len) &&
           /* negative: never sent, read as none */
           answer_in(v, ANS_WAIT_US, INT64_MIN, wait_max, why, why_len) &&
           answer_in(v, ANS_K, 0, UINT32_MAX, why, why_len) &&
           answer_in(v, ANS_SUCC, 0, UINT32_MAX, why, why_len) &&
           answer_in(v, ANS_CALLS, 0, big, why, why_len) &&
           answer_in(v, ANS_FAILURES, 0, v[ANS_CALLS], why, why_len) &&
           answer_in(v, ANS_SLOW, 0, v[ANS_CALLS], why, why_len) &&
           answer_in(v, ANS_BORN, 0, v[ANS_GEN], why, why_len) &&
           answer_in(v, ANS_CV, 0, big, why, why_len);
}

int breaker__fleet_answer_read(const int64_t v[ANS_COUNT], struct breaker__fleet_answer *out) {
    if (!breaker__fleet_answer_check(v, NULL, 0)) return 0;
    out->state = (int)v[ANS_STATE];
    out->gen = (uint64_t)v[ANS_GEN];
    out->wait_us = v[ANS_WAIT_US] > 0 ? (uint64_t)v[ANS_WAIT_US] : 0;
    out->k = (uint32_t)v[ANS_K];
    out->successes = (uint64_t)v[ANS_SUCC];
    out->verdict = (int)v[ANS_VERDICT];
    out->calls = (uint64_t)v[ANS_CALLS];
    out->failures = (uint64_t)v[ANS_FAILURES];
    out->slow = (uint64_t)v[ANS_SLOW];
    out->born = (uint64_t)v[ANS_BORN];
    out->cv = (uint64_t)v[ANS_CV];
    return 1;
}

/* Printable text of at most `max` bytes, as a control is given
 * (breaker__text_check()): a control byte written into Redis by hand never
 * reaches an event. */
static bool text_ok(const char *t, size_t len, size_t max) {
    if (len > max) return false;
    for (size_t i = 0; i < len; i++)
        if (!breaker__text_byte_ok((unsigned char)t[i])) return false;
    return true;
}

int breaker__fleet_record_read(uint64_t version, const int64_t num[5], const char *who,
                               size_t who_len, const char *why, size_t why_len, int64_t age_us,
                               const char *const limits[BREAKER__FLEET_LIMIT_COUNT],
                               struct breaker__fleet_record *out, char *why_not,
                               size_t why_not_len) {
    if (num[0] < FLEET_FORCED_NONE || num[0] > FLEET_FORCED_CLOSED || num[1] < 0 ||
        (uint64_t)num[1] > BREAKER__FLEET_MAX_DURATION_US || num[2] < 0 || num[2] > 1 ||
        num[3] < 0 || num[3] > BREAKER__FLEET_BIG || num[4] < 0 || num[4] > BREAKER__FLEET_BIG ||
        age_us < 0 || age_us > BREAKER__FLEET_BIG)
        return parse_fail(why_not, why_not_len,
                          "record: forced %" PRId64 ", left %" PRId64 " us, shadow %" PRId64
                          ", reset %" PRId64 " (%" PRId64 " us ago), age %" PRId64
                          " us: out of range",
                          num[0], num[1], num[2], num[3], num[4], age_us);
    if (!text_ok(who, who_len, BREAKER__FLEET_WHO_MAX) ||
        !text_ok(why, why_len, BREAKER__FLEET_WHY_MAX))
        return parse_fail(why_not, why_not_len, "record: who or why not printable text in bounds");
    struct breaker__fleet_record r;
    memset(&r, 0, sizeof r);
    if (!breaker__fleet_limits_read(limits, &r.limits, why_not, why_not_len)) return 0;
    r.version = version;
    r.forced = (int)num[0];
    r.left_us = (uint64_t)num[1];
    r.shadow = (int)num[2];
    r.reset_gen = (uint64_t)num[3];
    r.reset_age_us = (uint64_t)num[4];
    memcpy(r.who, who, who_len);
    memcpy(r.why, why, why_len);
    r.age_us = (uint64_t)age_us;
    *out = r;
    return 1;
}

/* ---- What an answer means for the local breaker ------------------------------- */

void breaker__fleet_follow_rearm(struct breaker__fleet_follow *f, uint64_t now_ns) {
    uint64_t known = f->known_gen;
    memset(f, 0, sizeof *f);
    f->known_gen = known;
    f->attached_ns = now_ns;
}

void breaker__fleet_follow_armed(struct breaker__fleet_follow *f,
                                 const struct breaker__fleet_answer *a) {
    if (a == NULL) return;
    f->known_gen = a->gen;
    f->reset_seen = a->gen; /* a reset before the breaker is history */
}

void breaker__fleet_note_degraded(struct breaker__fleet_follow *f,
                                  const struct breaker__fleet_local *local, bool answers_decided) {
    f->degraded_gen_set = !answers_decided && local != NULL;
    if (local != NULL) f->degraded_gen = local->gen;
}

void breaker__fleet_check_recovered(struct breaker__fleet_follow *f, bool was_degraded,
                                    const struct breaker__fleet_local *local) {
    f->recovered = was_degraded && f->degraded_gen_set && local != NULL &&
                   local->gen != f->degraded_gen && local->state == BREAKER_CLOSED;
}

bool breaker__fleet_view_stale(uint64_t last_ok_ns, uint64_t now_ns, uint64_t stale_after_ns) {
    return last_ok_ns == 0 || now_ns - last_ok_ns > stale_after_ns;
}

bool breaker__fleet_trip_stale(struct breaker__fleet_follow *f,
                               const struct breaker__fleet_local *local,
                               struct breaker__fleet_action *act) {
    if (local->state != BREAKER_CLOSED) return false;
    memset(act, 0, sizeof *act);
    act->kind = FLEET_ACT_TRIP;
    act->gen = local->gen;
    f->stale_tripped = true;
    return true;
}

void breaker__fleet_note_stale_trip(struct breaker__fleet_follow *f) { f->stale_tripped = true; }

static void set_gate(struct breaker__fleet_gate *g, uint64_t until_ns) {
    g->change = true;
    g->until_ns = until_ns;
}

static void trip_with_fleet_evidence(struct breaker__fleet_action *act,
                                     const struct breaker__fleet_answer *a, uint64_t local_gen) {
    breaker_evidence *ev = &act->evidence;
    memset(ev, 0, sizeof *ev);
    ev->calls = a->calls;
    ev->failures = a->failures;
    ev->slow_calls = a->slow;
    if (ev->calls > 0) {
        ev->failure_rate = (double)ev->failures / (double)ev->calls;
        ev->slow_call_rate = (double)ev->slow_calls / (double)ev->calls;
    }
    ev->failed_recoveries = a->k;
    act->kind = FLEET_ACT_TRIP;
    act->gen = local_gen;
    /* The fleet's wait, not the host's own (struct breaker__fleet_action). */
    uint64_t left = a->state == FLEET_OPEN ? a->wait_us * NS_PER_US : 0;
    act->wait_ns = left > 0 ? left : 1;
}

/* The fleet is CLOSED. */
static void decide_closed(struct breaker__fleet_follow *f, const struct breaker__fleet_answer *a,
                          const struct breaker__fleet_local *local,
                          struct breaker__fleet_action *act) {
    /* A close of the fleet this host followed: the state was born no later
     * than the open it followed (born 0: a state from before the field,
     * taken as the same). A state created from scratch since (Redis
     * restarted empty, keys expired or deleted) closed nothing: the host
     * keeps its local state, and its local breaker decides. */
    bool same_state = a->born <= f->followed_gen;
    bool local_open = local->state == BREAKER_OPEN || local->state == BREAKER_HALF_OPEN;
    if (f->follows && same_state && local_open) {
        /* The fleet recovered: so does this host, at once (its leased
         * successes were recorded as IGNORED: the fleet counted them), as a
         * recovery by probes (a ramp with ramp_ns set). */
        act->kind = FLEET_ACT_CLOSE;
        act->gen = local->gen;
    } else if (act->kind == FLEET_ACT_TRIP) {
        act->kind = FLEET_ACT_NONE; /* an earlier answer's trip: the fleet closed since */
    }                               /* else an earlier answer's close of this round stands */
    f->follows = false;
}

void breaker__fleet_controls_none(struct breaker__fleet_controls *c) {
    memset(c, 0, sizeof *c);
    c->shadow = -1;
}

void breaker__fleet_record_keep(struct breaker__fleet_follow *f,
                                const struct breaker__fleet_record *rec, uint64_t now_ns) {
    f->record = *rec;
    f->record_at_ns = now_ns;
    /* No answer at attach: the first record's reset is history if it was
     * made before the local breaker was (its age on Redis's clock, its
     * breaker's on ours: a reset within the round trip of the attach
     * counts as the breaker's own, which a fresh breaker takes as a
     * transition to CLOSED); made since, it is applied. */
    if (f->reset_seen == 0 && rec->reset_gen != 0) {
        uint64_t alive = now_ns > f->attached_ns ? now_ns - f->attached_ns : 0;
        f->reset_seen = rec->reset_age_us * NS_PER_US > alive ? rec->reset_gen : 1;
    }
}

/* Whether a local wait with `left` ns to run ends at `want` (within `tol`). */
static bool ends_at(uint64_t left, uint64_t want, uint64_t tol) {
    return left + tol >= want && left <= want + tol;
}

void breaker__fleet_converge(struct breaker__fleet_follow *f,
                             const struct breaker__fleet_local *local, uint64_t now_ns,
                             struct breaker__fleet_action *act,
                             struct breaker__fleet_controls *out) {
    const struct breaker__fleet_record *r = &f->record;
    if (r->version == 0) return;
    if (r->reset_gen > f->reset_seen) {
        f->reset_seen = r->reset_gen;
        out->reset = true;
        /* The reset leaves the breaker CLOSED: whatever the round decided
         * from the state before it is moot (the next round decides anew). */
        act->kind = FLEET_ACT_NONE;
    }
    /* The forced state in force now (its end is the record's read time
     * plus the time it had left then). */
    uint64_t end = r->left_us != 0 ? f->record_at_ns + r->left_us * NS_PER_US : 0;
    bool in_force = r->forced != FLEET_FORCED_NONE && (end == 0 || now_ns < end);
    uint64_t left = end > now_ns ? end - now_ns : 0;
    /* After a reset in this round, the breaker is CLOSED. */
    enum breaker_state state = out->reset ? BREAKER_CLOSED : local->state;
    int kind = FLEET_ACT_NONE;
    if (in_force && r->forced == FLEET_FORCED_OPEN && end == 0) {
        if (state != BREAKER_FORCED_OPEN) kind = FLEET_ACT_FORCE_OPEN;
    } else if (in_force && r->forced == FLEET_FORCED_OPEN) {
        uint64_t tol = f->interval_ns ? f->interval_ns : 1;
        bool open_until =
            state == BREAKER_OPEN && !out->reset && ends_at(local->open_left_ns, left, tol);
        if (!open_until) kind = FLEET_ACT_OPEN_FOR;
    } else if (in_force && r->forced == FLEET_FORCED_CLOSED) {
        /* Forced closed as the record asks: until its end (within an
         * interval), or with none; a forced close renewed or ended early
         * gives the breaker the new end, not a gap after the old one. */
        uint64_t tol = f->interval_ns ? f->interval_ns : 1;
        bool closed_until =
            state == BREAKER_FORCED_CLOSED && !out->reset &&
            (end == 0 ? local->forced_left_ns == 0 : ends_at(local->forced_left_ns, left, tol));
        if (!closed_until) kind = FLEET_ACT_FORCE_CLOSED;
    } else if (f->forced_gen != 0 && local->gen == f->forced_gen && !out->reset &&
               (state == BREAKER_FORCED_OPEN ||
                (state == BREAKER_FORCED_CLOSED && local->forced_left_ns == 0))) {
        /* Forced by the record, which forces nothing now (its state lost and
         * made anew): back to following the fleet. A timed forced close runs
         * out by itself; a state an operator forced on this host alone
         * (another generation) stays. */
        kind = FLEET_ACT_RESET;
    }
    if (kind != FLEET_ACT_NONE) {
        memset(act, 0, sizeof *act);
        act->kind = kind;
        act->gen = local->gen;
        act->wait_ns = kind == FLEET_ACT_FORCE_OPEN || kind == FLEET_ACT_RESET ? 0 : left;
        act->by_record = kind != FLEET_ACT_RESET;
        f->stale_tripped = false;
        f->follows = kind != FLEET_ACT_FORCE_CLOSED;
    }
    if (r->shadow != local->shadow) out->shadow = r->shadow;
    if (!breaker__fleet_limits_same(&r->limits, &local->limits, true) &&
        (f->refused_version != r->version || f->refused_born != r->born)) {
        out->reconfigure = true;
        out->limits = r->limits;
    }
}

void breaker__fleet_decide(struct breaker__fleet_follow *f, const struct breaker__fleet_answer *a,
                           const struct breaker__fleet_local *local, uint64_t now_ns,
                           struct breaker__fleet_action *act, struct breaker__fleet_gate *gate) {
    gate->change = false;
    f->known_gen = a->gen;
    f->known_state = a->state;
    f->last = *a;
    f->last_at_ns = now_ns;
    if (local == NULL) return; /* retired: only its lease results went */
    bool local_open = local->state == BREAKER_OPEN || local->state == BREAKER_HALF_OPEN;
    if (f->stale_tripped) {
        /* The first good answer since a FAIL_CLOSED trip: the trip was
         * this host's lack of a view, not the fleet's evidence. A fleet
         * that is CLOSED undoes it (fenced by the local generation, as
         * every action is); an open one is followed as after any trip
         * (below). */
        f->stale_tripped = false;
        if (a->state == FLEET_CLOSED && local_open) {
            set_gate(gate, 0);
            act->kind = FLEET_ACT_CLOSE;
            act->gen = local->gen;
            f->follows = false;
            return;
        }
    }
    if (a->state == FLEET_CLOSED) {
        set_gate(gate, 0);
        decide_closed(f, a, local, act);
        return;
    }
    f->follows = true;
    f->followed_gen = a->gen;
    if (a->state == FLEET_OPEN && a->wait_us > 0) set_gate(gate, now_ns + a->wait_us * NS_PER_US);
    if (local->state == BREAKER_CLOSED && a->state == FLEET_OPEN && a->wait_us == 0 &&
        (f->recovered || f->spared_gen == a->gen)) {
        /* Redis back after a partition: the local breaker recovered on its
         * own evidence (a successful local probe) while the host was
         * degraded, and the fleet's open wait is over (the fleet only waits
         * for a probe). Tripping a healthy dependency for a whole open wait
         * would gain nothing: this host stays CLOSED for this fleet
         * generation (a later trip, a new generation, is followed). */
        f->spared_gen = a->gen;
        if (act->kind == FLEET_ACT_TRIP) act->kind = FLEET_ACT_NONE;
        return;
    }
    if (local->state == BREAKER_CLOSED) {
        /* Fenced by the local generation: a breaker that moved on since
         * this read (another trip, a reset) is left alone (STALE), and the
         * next answer looks again. */
        trip_with_fleet_evidence(act, a, local->gen);
    } else if (local->state == BREAKER_OPEN && a->state == FLEET_OPEN &&
               local->open_left_ns > 2 * (a->wait_us * NS_PER_US) + f->interval_ns) {
        /* The fleet's wait was cut (new limits): so is this host's, or it
         * would not probe when the fleet leases again. */
        memset(act, 0, sizeof *act);
        act->kind = FLEET_ACT_OPEN_FOR;
        act->gen = local->gen;
        act->wait_ns = a->wait_us > 0 ? a->wait_us * NS_PER_US : 1;
    } else {
        act->kind = FLEET_ACT_NONE; /* the fleet is open again: no close */
    }
}

/* ---- The cadence -------------------------------------------------------------- */

const char *const breaker__fleet_version_fields[BREAKER__FLEET_VERSION_FIELDS] = {"gen", "cv",
                                                                                  "run"};

const char *const breaker__fleet_read_fields[BREAKER__FLEET_READ_FIELDS] = {
    "st", "gen", "until", "k", "succ", "ec", "ef", "es", "born", "run", "cv"};

uint32_t breaker__fleet_full_every(uint32_t rounds, uint64_t interval_ns, uint64_t window_us) {
    /* The longest round: the flusher jitters its interval by +-20%. */
    uint64_t interval_us = (interval_ns + interval_ns / 5) / NS_PER_US;
    if (interval_us == 0) interval_us = 1;
    uint64_t fit = window_us / BREAKER__FLEET_LAG_SHARE / interval_us;
    uint64_t every = rounds < fit ? rounds : fit;
    return every > 0 ? (uint32_t)every : 1u;
}

uint32_t breaker__fleet_ttl_rounds(uint32_t rounds, uint64_t interval_ns, uint64_t ttl_ns) {
    uint64_t longest = interval_ns + interval_ns / 5; /* the flusher's jitter: +-20% */
    uint64_t fit = longest > 0 ? ttl_ns / 2 / longest : rounds;
    uint64_t every = rounds < fit ? rounds : fit;
    return every > 0 ? (uint32_t)every : 1u;
}

int breaker__fleet_round_call(const struct breaker__fleet_follow *f,
                              const struct breaker__fleet_pending *p) {
    const struct breaker__fleet_deltas *d = p->deltas;
    if (p->last_round || !f->synced || d->failures > 0 || d->slow > 0 || p->probes_moved ||
        p->releases || p->directed || p->local == BREAKER_HALF_OPEN ||
        f->known_state == FLEET_HALF_OPEN || f->known_run > 0 || f->every <= 1 ||
        f->keep_every <= 1 || f->since_full + 1 >= f->keep_every)
        return FLEET_ROUND_FULL;
    /* The handle's rounds whose number is a multiple of the cadence: all
     * the names of a cadence send together (one round's pipeline keeps
     * Redis's script path warm for all but the first). */
    if (d->calls == 0 || p->round % f->every != 0) return FLEET_ROUND_READ;
    return f->consecutive || d->sources != 0 ? FLEET_ROUND_FULL : FLEET_ROUND_CREDIT;
}

void breaker__fleet_round_done(struct breaker__fleet_follow *f, bool full, uint32_t stagger) {
    if (!full) {
        f->since_full++;
        return;
    }
    /* The first full flush of a name starts its keys' cadence at a point of
     * its own, so that a host's names do not all refresh them in one round. */
    f->since_full = !f->synced && f->keep_every > 1 ? stagger % f->keep_every : 0;
    f->synced = true;
    f->known_run = 0; /* the script's answer carries no run: the next read tells */
}

void breaker__fleet_cadence_setup(struct breaker__fleet_follow *f,
                                  const struct breaker__fleet_limits *l, uint32_t rounds,
                                  uint64_t interval_ns, uint64_t ttl_ns) {
    f->interval_ns = interval_ns;
    if (f->every != 0) return;
    f->every = breaker__fleet_full_every(rounds, interval_ns, l->window_us);
    f->keep_every = breaker__fleet_ttl_rounds(UINT32_MAX, interval_ns, ttl_ns);
    f->consecutive = l->failure_threshold > 0;
}

/* A plain decimal number of at most 16 digits (below 2^53), as the scripts
 * take one. */
static bool plain_u64(const char *v, uint64_t *out) {
    return v != NULL && read_integer(v, strlen(v), (uint64_t)BREAKER__FLEET_BIG, out) &&
           strlen(v) <= 16;
}

/* f->last as of `now_ns`: no verdict, the open wait run down on the host's
 * clock from when it was answered. */
static void last_answer_now(const struct breaker__fleet_follow *f, uint64_t now_ns,
                            struct breaker__fleet_answer *out) {
    *out = f->last;
    out->verdict = VERDICT_NONE;
    uint64_t end = f->last_at_ns + f->last.wait_us * NS_PER_US;
    out->wait_us = f->last.state == FLEET_OPEN && end > now_ns ? (end - now_ns) / NS_PER_US : 0;
}

int breaker__fleet_version_read(const struct breaker__fleet_follow *f,
                                const char *const v[BREAKER__FLEET_VERSION_FIELDS], uint64_t now_ns,
                                struct breaker__fleet_answer *out, uint64_t *run) {
    uint64_t gen = 0, cv = 0, r = 0;
    /* run: written by the first transition or CONSECUTIVE flush. */
    if (!f->synced || !plain_u64(v[0], &gen) || !plain_u64(v[1], &cv) ||
        (v[2] != NULL && !plain_u64(v[2], &r)))
        return 0;
    if (gen != f->last.gen || cv != f->last.cv) return 0;
    last_answer_now(f, now_ns, out);
    *run = r;
    return 1;
}

int breaker__fleet_credit_answer(const struct breaker__fleet_follow *f, int64_t cv, uint64_t now_ns,
                                 struct breaker__fleet_answer *out) {
    if (cv < 1 || cv > BREAKER__FLEET_BIG || f->last.state != FLEET_CLOSED) return 0;
    last_answer_now(f, now_ns, out);
    out->cv = (uint64_t)cv;
    return 1;
}

int breaker__fleet_time_read(const char *sec, const char *usec, uint64_t *now_us) {
    uint64_t s = 0, u = 0;
    if (!plain_u64(sec, &s) || !plain_u64(usec, &u) || u >= 1000000 ||
        s > (uint64_t)BREAKER__FLEET_BIG / 1000000)
        return 0;
    *now_us = s * 1000000 + u;
    return 1;
}

int breaker__fleet_read_answer(const char *const v[BREAKER__FLEET_READ_FIELDS], uint64_t now_us,
                               uint64_t max_wait_us, struct breaker__fleet_answer *out,
                               uint64_t *run, char *why, size_t why_len) {
    /* The fields, in breaker__fleet_read_fields' order. */
    enum { R_ST, R_GEN, R_UNTIL, R_K, R_SUCC, R_EC, R_EF, R_ES, R_BORN, R_RUN, R_CV };
    _Static_assert(R_CV + 1 == BREAKER__FLEET_READ_FIELDS, "breaker__fleet_read_fields");
    uint64_t n[BREAKER__FLEET_READ_FIELDS] = {0};
    if (v[R_ST] == NULL) return parse_fail(why, why_len, "read: no state");
    for (int i = 0; i < BREAKER__FLEET_READ_FIELDS; i++) {
        /* run: written by the first transition or CONSECUTIVE flush; cv:
         * by the first control */
        if (v[i] == NULL && (i == R_RUN || i == R_CV)) continue;
        if (!plain_u64(v[i], &n[i]))
            return parse_fail(why, why_len, "read: field %s = %.40s, expected 0..%" PRId64,
                              breaker__fleet_read_fields[i], v[i] ? v[i] : "(missing)",
                              BREAKER__FLEET_BIG);
    }
    int64_t a[ANS_COUNT];
    a[ANS_STATE] = (int64_t)n[R_ST];
    a[ANS_GEN] = (int64_t)n[R_GEN];
    /* The open wait left, as the scripts' answer() computes it. */
    a[ANS_WAIT_US] =
        n[R_ST] == FLEET_OPEN && n[R_UNTIL] > now_us ? (int64_t)(n[R_UNTIL] - now_us) : 0;
    a[ANS_K] = (int64_t)n[R_K];
    a[ANS_SUCC] = (int64_t)n[R_SUCC];
    a[ANS_VERDICT] = VERDICT_NONE;
    a[ANS_CALLS] = (int64_t)n[R_EC];
    a[ANS_FAILURES] = (int64_t)n[R_EF];
    a[ANS_SLOW] = (int64_t)n[R_ES];
    a[ANS_BORN] = (int64_t)n[R_BORN];
    a[ANS_CV] = (int64_t)n[R_CV];
    /* The round's TIME may run before the read: a trip by another host in
     * between wrote an until up to the longest wait after a later clock. A
     * longer wait (new limits, an operator's timed open this host has not
     * read yet) is no answer: the name's next call is the script, which
     * checks it against the stored limits. */
    if (a[ANS_STATE] == FLEET_OPEN &&
        (uint64_t)a[ANS_WAIT_US] > max_wait_us + BREAKER__FLEET_READ_SKEW_US)
        return parse_fail(why, why_len,
                          "read: field until = %" PRIu64 ", expected at most %" PRIu64
                          " (now + the longest wait + 1 s)",
                          n[R_UNTIL], now_us + max_wait_us + BREAKER__FLEET_READ_SKEW_US);
    char what[160];
    if (!breaker__fleet_answer_check(a, what, sizeof what) || a[ANS_GEN] < 1)
        return parse_fail(why, why_len, "read: %s",
                          a[ANS_GEN] < 1 ? "answer field gen = 0, expected 1.." : what);
    *run = n[R_RUN];
    return breaker__fleet_answer_read(a, out);
}

/* ---- Leases ------------------------------------------------------------------- */

int breaker__fleet_lease_verdict(const struct breaker__fleet_answer *a) {
    if (a == NULL) return FLEET_LEASE_ERROR;
    if (a->verdict == VERDICT_GRANTED) return FLEET_LEASE_GRANTED;
    if (a->verdict == VERDICT_CLOSED) return FLEET_LEASE_CLOSED;
    return FLEET_LEASE_REFUSED;
}

void breaker__fleet_lease_settle(int verdict, const struct breaker__fleet_answer *a,
                                 uint64_t followed_gen, const struct breaker__fleet_lease_times *t,
                                 struct breaker__fleet_lease_plan *out) {
    memset(out, 0, sizeof *out);
    if (verdict == FLEET_LEASE_GRANTED && t->now_ns - t->start_ns > t->budget_ns) {
        out->give_back = true; /* granted, but too late to use */
        verdict = FLEET_LEASE_ERROR;
    }
    out->verdict = verdict;
    switch (verdict) {
    case FLEET_LEASE_GRANTED:
        out->hold = true;
        out->lease_deadline_ns = t->now_ns + t->probe_timeout_ns;
        out->rc = BREAKER_OK;
        return;
    case FLEET_LEASE_CLOSED:
        if (followed_gen != 0 && a->born <= followed_gen) {
            /* The fleet closed the open this host follows (the same state,
             * as decide_closed() judges it): the host closes at its next
             * round, asked for now; its probe would be one more in flight
             * than the fleet allows. */
            out->flush_now = true;
            set_gate(&out->gate, t->now_ns + t->interval_ns);
            out->rc = BREAKER_REJECTED_HALF_OPEN;
            return;
        }
        /* This host's own breaker is probing on its own evidence: no lease. */
        out->rc = BREAKER_OK;
        return;
    case FLEET_LEASE_REFUSED: {
        /* Ask again when the fleet may answer otherwise: at the end of its
         * open wait, at its earliest lease deadline, and at the latest after
         * one flush interval. */
        uint64_t wait = a->wait_us * NS_PER_US;
        if (wait == 0 || wait > t->interval_ns) wait = t->interval_ns;
        set_gate(&out->gate, t->now_ns + wait);
        out->rc = a->state == FLEET_OPEN ? BREAKER_REJECTED_OPEN : BREAKER_REJECTED_HALF_OPEN;
        return;
    }
    case FLEET_LEASE_LOST:
        /* Redis may still grant it (a stalled server runs the queued request
         * when it resumes): the token is released until the lease's
         * deadline has surely passed. */
        out->orphan = true;
        out->orphan_deadline_ns = t->now_ns + t->probe_timeout_ns;
        break;
    default:
        break;
    }
    /* An error: do not ask again inline before the flusher has looked. */
    set_gate(&out->gate, t->now_ns + t->interval_ns);
    out->rc = BREAKER_REJECTED_HALF_OPEN;
}

int breaker__fleet_release_result(enum breaker_outcome outcome) {
    return outcome == BREAKER_SUCCESS   ? FLEET_RESULT_SUCCESS
           : outcome == BREAKER_FAILURE ? FLEET_RESULT_FAILURE
                                        : FLEET_RESULT_NEITHER;
}

enum breaker_outcome breaker__fleet_local_outcome(enum breaker_outcome outcome) {
    return outcome == BREAKER_SUCCESS ? BREAKER_IGNORED : outcome;
}

bool breaker__fleet_release_settled(const struct breaker__fleet_answer *a, bool orphan,
                                    uint64_t now_ns, uint64_t deadline_ns,
                                    uint32_t *stale_answers) {
    if (a == NULL) return false; /* an error reply is no answer: send it again */
    if (!orphan) return true;
    if (a->verdict == VERDICT_APPLIED) return true; /* the phantom lease is gone */
    if (now_ns < deadline_ns) return false;
    /* Two answered rounds past the deadline: a request still queued in
     * Redis when it came back was run before the second. */
    return ++*stale_answers >= 2;
}
