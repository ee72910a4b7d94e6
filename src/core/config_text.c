/* SPDX-License-Identifier: MIT */
/*
 * config_text.c - breaker_config_set(): one field of struct breaker_config
 * from text, for command lines and configuration files.
 *
 * Each key has a kind (duration, rate, count, ...) and a range, and every
 * error message names the key, quotes the value and states the range, so a
 * user reading it knows what to type instead. Values are parsed exactly:
 * "0.1s" is 100000000 ns, not the nearest double. Checks that involve two
 * fields (open_max >= open, slow_call_rate needs slow_call) are left to
 * breaker_config_validate(), so that keys may come in any order.
 */
#include "core/internal.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NS_PER_US  UINT64_C(1000)
#define NS_PER_MS  UINT64_C(1000000)
#define NS_PER_SEC UINT64_C(1000000000)
#define MAX_NS     ((uint64_t)BREAKER__MAX_DURATION_DAYS * 24u * 3600u * NS_PER_SEC)
#define ECHO_MAX   64u /* a message quotes at most this many bytes of input */

enum kind { K_TRIP, K_COUNT, K_DURATION, K_RATE, K_FACTOR, K_JITTER, K_CANCELLED, K_SEED };

struct key {
    const char *name; /* without "_ns" */
    enum kind kind;
    size_t offset;     /* of the field in struct breaker_config */
    uint32_t max;      /* K_COUNT: the largest accepted value */
    const char *range; /* how the error message states the range */
};

#define FIELD(f) offsetof(struct breaker_config, f)

/* The ranges and defaults spelled from config_fields.h, so the messages say
 * what validation enforces. */
#define S              BREAKER__STR
#define UP_TO_MAX_DAYS "up to " S(BREAKER__MAX_DURATION_DAYS) "d"

static const struct key keys[] = {
    {"trip", K_TRIP, FIELD(trip), 0, "consecutive, count_window or time_window"},
    {"failure_threshold", K_COUNT, FIELD(failure_threshold), BREAKER__MAX_FAILURE_THRESHOLD,
     "a whole number of failures from 1 to " S(BREAKER__MAX_FAILURE_THRESHOLD) " (0 = default " S(
         BREAKER__DEFAULT_FAILURE_THRESHOLD) ")"},
    {"window_size", K_COUNT, FIELD(window_size), BREAKER__MAX_WINDOW_SIZE,
     "a whole number of calls from 1 to " S(BREAKER__MAX_WINDOW_SIZE) " (0 = default " S(
         BREAKER__DEFAULT_WINDOW_SIZE) ")"},
    {"window", K_DURATION, FIELD(window_ns), 0,
     "a duration from " S(BREAKER__MIN_BUCKET_MS) "ms to " S(
         BREAKER__MAX_DURATION_DAYS) "d such as 10s (0 = default " S(BREAKER__DEFAULT_WINDOW_S) "s;"
                                                                                                " "
                                                                                                "ea"
                                                                                                "ch"
                                                                                                " b"
                                                                                                "uc"
                                                                                                "ke"
                                                                                                "t "
                                                                                                "at"
                                                                                                " l"
                                                                                                "ea"
                                                                                                "st"
                                                                                                " " S(
                                                                                                    BREAKER__MIN_BUCKET_MS) "ms)"},
    {"window_buckets", K_COUNT, FIELD(window_buckets), BREAKER__MAX_BUCKETS,
     "a whole number from 1 to " S(BREAKER__MAX_BUCKETS) " (0 = default " S(
         BREAKER__DEFAULT_WINDOW_BUCKETS) ")"},
    {"min_calls", K_COUNT, FIELD(min_calls), BREAKER__MAX_MIN_CALLS,
     "a whole number of calls from 1 to " S(BREAKER__MAX_MIN_CALLS) " (0 = default " S(
         BREAKER__DEFAULT_MIN_CALLS) ")"},
    {"failure_rate", K_RATE, FIELD(failure_rate), 0,
     "a rate in (0, 1] such as 0.5 or 50% (0 = default " S(BREAKER__DEFAULT_FAILURE_RATE) ")"},
    {"slow_call", K_DURATION, FIELD(slow_call_ns), 0,
     "a duration such as 800ms, " UP_TO_MAX_DAYS " (0 = off)"},
    {"slow_call_rate", K_RATE, FIELD(slow_call_rate), 0,
     "a rate in (0, 1] such as 0.8 or 80% (0 = off)"},
    {"open", K_DURATION, FIELD(open_ns), 0,
     "a duration such as 30s, " UP_TO_MAX_DAYS " (0 = default " S(BREAKER__DEFAULT_OPEN_S) "s)"},
    {"open_backoff", K_FACTOR, FIELD(open_backoff), 0,
     "a multiplier from 1 to " S(BREAKER__MAX_OPEN_BACKOFF) " such as 2 or 1.5x (0 = default " S(
         BREAKER__DEFAULT_OPEN_BACKOFF) ")"},
    {"open_max", K_DURATION, FIELD(open_max_ns), 0,
     "a duration such as 5m, " UP_TO_MAX_DAYS
     ", at least open (0 = default " S(BREAKER__DEFAULT_OPEN_MAX_MIN) "m)"},
    {"open_jitter", K_JITTER, FIELD(open_jitter), 0, "a fraction in [0, 1] such as 0.2 or 20%"},
    {"half_open_max_probes", K_COUNT, FIELD(half_open_max_probes), BREAKER__MAX_PROBES,
     "a whole number of probes from 1 to " S(BREAKER__MAX_PROBES) " (0 = default " S(
         BREAKER__DEFAULT_MAX_PROBES) ")"},
    {"half_open_successes", K_COUNT, FIELD(half_open_successes), BREAKER__MAX_PROBES,
     "a whole number of probes from 1 to " S(BREAKER__MAX_PROBES) " (0 = default " S(
         BREAKER__DEFAULT_PROBE_SUCCESSES) ")"},
    {"probe_timeout", K_DURATION, FIELD(probe_timeout_ns), 0,
     "a duration such as 10s, " UP_TO_MAX_DAYS
     " (0 = default " S(BREAKER__DEFAULT_PROBE_TIMEOUT_S) "s)"},
    {"min_failing_sources", K_COUNT, FIELD(min_failing_sources), BREAKER__MAX_FAILING_SOURCES,
     "a whole number of callers from 0 to " S(BREAKER__MAX_FAILING_SOURCES) " (0 = default " S(
         BREAKER__DEFAULT_FAILING_SOURCES) " where failures name sources, 1 = off)"},
    {"ramp", K_DURATION, FIELD(ramp_ns), 0, "a duration such as 30s, " UP_TO_MAX_DAYS " (0 = off)"},
    {"ramp_start", K_RATE, FIELD(ramp_start), 0,
     "a share in (0, 1] such as 0.1 or 10% (0 = default " S(BREAKER__DEFAULT_RAMP_START) ")"},
    {"cancelled_as", K_CANCELLED, FIELD(cancelled_as), 0, "ignored or failure"},
    {"seed", K_SEED, FIELD(seed), 0,
     "a whole number from 0 to 18446744073709551615, decimal or 0x hex (0 = random)"},
};

#undef S
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

/* Key lookup: the name as listed, or a duration's name with "_ns". */
static const struct key *find_key(const char *name) {
    size_t n = strlen(name);
    for (size_t i = 0; i < NKEYS; i++) {
        const struct key *k = &keys[i];
        size_t kn = strlen(k->name);
        if (n == kn && memcmp(name, k->name, n) == 0) return k;
        if (k->kind == K_DURATION && n == kn + 3 && memcmp(name, k->name, kn) == 0 &&
            strcmp(name + kn, "_ns") == 0)
            return k;
    }
    return NULL;
}

/* An exact decimal number: digits, optionally '.' and more digits, at least
 * one digit in all. Stores the value times 10^9 (nine fraction digits kept;
 * a tenth non-zero one is an error, as is overflow). @return a pointer past
 * the number, or NULL. */
static const char *parse_decimal_e9(const char *s, uint64_t *out) {
    uint64_t whole = 0, frac = 0;
    unsigned digits = 0, frac_digits = 0;
    for (; isdigit((unsigned char)*s); s++, digits++) {
        if (whole > (UINT64_MAX - 9) / 10) return NULL;
        whole = whole * 10 + (uint64_t)(*s - '0');
    }
    if (*s == '.') {
        s++;
        for (; isdigit((unsigned char)*s); s++, digits++) {
            if (frac_digits == 9) {
                if (*s != '0') return NULL; /* finer than 1e-9 */
                continue;
            }
            frac = frac * 10 + (uint64_t)(*s - '0');
            frac_digits++;
        }
    }
    if (digits == 0) return NULL;
    for (; frac_digits < 9; frac_digits++)
        frac *= 10;
    if (whole > (UINT64_MAX - frac) / NS_PER_SEC) return NULL;
    *out = whole * NS_PER_SEC + frac;
    return s;
}

/* 128-bit arithmetic (a GCC and clang extension on 64-bit targets) keeps
 * duration parsing exact for any value that fits in 64-bit nanoseconds,
 * whatever the unit and however many fraction digits. */
__extension__ typedef unsigned __int128 u128;

/* Units, two-letter ones first so that "ms" is not read as "m" then "s".
 * `rank` orders them: a compound duration names them from large to small. */
static const struct {
    const char *suffix;
    uint64_t ns;
    unsigned rank;
} duration_units[] = {{"ns", 1, 0},
                      {"us", NS_PER_US, 1},
                      {"ms", NS_PER_MS, 2},
                      {"s", NS_PER_SEC, 3},
                      {"m", 60 * NS_PER_SEC, 4},
                      {"h", 3600 * NS_PER_SEC, 5},
                      {"d", 86400 * NS_PER_SEC, 6}};

/* One "number[.fraction]unit" term at *p, exactly, in ns. `bare_unit_ns`
 * applies when the term ends the text without a unit (0: a unit is
 * required). Advances *p past the term. @return false if it is not one, is
 * finer than 1 ns, or exceeds UINT64_MAX ns; *rank is the unit's rank (7 for
 * a bare number). */
static bool parse_duration_term(const char **pp, uint64_t bare_unit_ns, u128 *ns, unsigned *rank) {
    /* whole.frac: the whole part must fit 64 bits; up to 19 fraction digits
     * are kept exactly, further ones must be 0. */
    const char *p = *pp;
    u128 whole = 0, frac = 0, scale = 1;
    unsigned digits = 0;
    for (; isdigit((unsigned char)*p); p++, digits++) {
        whole = whole * 10 + (unsigned)(*p - '0');
        if (whole > UINT64_MAX) return false;
    }
    if (*p == '.') {
        for (p++; isdigit((unsigned char)*p); p++, digits++) {
            if (scale == (u128)10000000000000000000u) {
                if (*p != '0') return false;
                continue;
            }
            frac = frac * 10 + (unsigned)(*p - '0');
            scale *= 10;
        }
    }
    if (digits == 0) return false;
    uint64_t unit = 0;
    if (*p == '\0') {
        unit = bare_unit_ns;
        *rank = 7;
    }
    for (size_t i = 0; unit == 0 && i < sizeof(duration_units) / sizeof(duration_units[0]); i++) {
        size_t n = strlen(duration_units[i].suffix);
        if (strncmp(p, duration_units[i].suffix, n) == 0 &&
            (p[n] == '\0' || isdigit((unsigned char)p[n]) || p[n] == '.')) {
            unit = duration_units[i].ns;
            *rank = duration_units[i].rank;
            p += n;
        }
    }
    if (unit == 0) return false;
    /* frac * unit < 10^19 * 8.64e13: fits 128 bits. A remainder means the
     * value is finer than 1 ns. */
    u128 frac_ns = frac * unit;
    if (frac_ns % scale != 0) return false;
    *ns = whole * unit + frac_ns / scale;
    if (*ns > UINT64_MAX) return false;
    *pp = p;
    return true;
}

int breaker_parse_duration(const char *text, uint64_t bare_unit_ns, uint64_t *out_ns) {
    if (text == NULL || out_ns == NULL) return BREAKER_EINVAL;
    /* A compound duration ("1m30s", "1h2m3.5s") is terms with units from
     * large to small, each unit once; a bare number stands alone. */
    const char *p = text;
    u128 total = 0;
    unsigned last_rank = 8;
    do {
        u128 ns;
        unsigned rank;
        if (!parse_duration_term(&p, bare_unit_ns, &ns, &rank)) return BREAKER_EINVAL;
        if (rank >= last_rank) return BREAKER_EINVAL; /* units out of order, or repeated */
        last_rank = rank;
        total += ns;
        if (total > UINT64_MAX) return BREAKER_EINVAL;
    } while (*p != '\0');
    *out_ns = (uint64_t)total;
    return BREAKER_OK;
}

/* Whether `s` is a number without a unit ("5", "0.5", ".5", "000"). */
static bool is_bare_number(const char *s) {
    static const char digits[] = "0123456789";
    size_t whole = strspn(s, digits), frac = 0;
    if (s[whole] == '.') frac = strspn(s + whole + 1, digits) + 1;
    return whole + frac > (frac > 0 ? 1u : 0u) && s[whole + frac] == '\0';
}

/* A configuration duration, at most MAX_NS. Its unit is in the value ("30s")
 * or in the key's name (open_ns = 30000000000, `named_ns`): a bare number
 * under the plain name is refused, since "open=5" reads as seconds to one
 * person and as the nanoseconds of the field to another. Zero needs no
 * unit. */
static bool parse_duration(const char *s, bool named_ns, uint64_t *out) {
    uint64_t ns;
    if (breaker_parse_duration(s, named_ns ? 1 : 0, &ns) != BREAKER_OK) {
        if (breaker_parse_duration(s, 1, &ns) != BREAKER_OK || ns != 0) return false;
    }
    if (ns > MAX_NS) return false;
    *out = ns;
    return true;
}

/* "0.5", "50%", "1": a non-negative number; percent divides by 100. */
static bool parse_fraction(const char *s, double *out, bool allow_x_suffix) {
    uint64_t v;
    const char *end = parse_decimal_e9(s, &v);
    if (end == NULL) return false;
    double d = (double)(v / NS_PER_SEC) + (double)(v % NS_PER_SEC) / 1e9;
    if (*end == '%') {
        d /= 100.0;
        end++;
    } else if (allow_x_suffix && *end == 'x') {
        if (v == 0) return false; /* "0x" is no multiplier (and reads like hex) */
        end++;
    }
    if (*end != '\0') return false;
    *out = d;
    return true;
}

static bool parse_u64(const char *s, uint64_t *out) {
    int base = 10;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s += 2;
    }
    if (*s == '\0') return false;
    uint64_t v = 0;
    for (; *s != '\0'; s++) {
        int d;
        if (isdigit((unsigned char)*s)) {
            d = *s - '0';
        } else if (base == 16 && isxdigit((unsigned char)*s)) {
            d = tolower((unsigned char)*s) - 'a' + 10;
        } else {
            return false;
        }
        if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base) return false;
        v = v * (uint64_t)base + (uint64_t)d;
    }
    *out = v;
    return true;
}

static bool equals_nocase(const char *a, const char *b) {
    for (; *a != '\0' && *b != '\0'; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return false;
    return *a == *b;
}

/* Parse `text` for key `k` (given with "_ns" when `named_ns`) into `cfg`.
 * @return false if the value is bad. */
static bool set_value(breaker_config *cfg, const struct key *k, bool named_ns, const char *text) {
    char *field = (char *)cfg + k->offset;
    switch (k->kind) {
    case K_TRIP: {
        static const char *const names[] = {"consecutive", "count_window", "time_window"};
        for (size_t i = 0; i < 3; i++) {
            if (equals_nocase(text, names[i])) {
                cfg->trip = (enum breaker_trip)i;
                return true;
            }
        }
        return false;
    }
    case K_CANCELLED:
        if (equals_nocase(text, "ignored")) {
            cfg->cancelled_as = BREAKER_IGNORED;
        } else if (equals_nocase(text, "failure")) {
            cfg->cancelled_as = BREAKER_FAILURE;
        } else {
            return false;
        }
        return true;
    case K_COUNT: {
        uint64_t v;
        if (text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) return false;
        if (!parse_u64(text, &v) || v > k->max) return false;
        uint32_t v32 = (uint32_t)v;
        memcpy(field, &v32, sizeof(v32));
        return true;
    }
    case K_SEED: {
        uint64_t v;
        if (!parse_u64(text, &v)) return false;
        memcpy(field, &v, sizeof(v));
        return true;
    }
    case K_DURATION: {
        uint64_t v;
        if (!parse_duration(text, named_ns, &v)) return false;
        if (k->offset == FIELD(window_ns) && v != 0 && v < NS_PER_MS) return false;
        memcpy(field, &v, sizeof(v));
        return true;
    }
    case K_RATE:
    case K_JITTER:
    case K_FACTOR: {
        double v;
        if (!parse_fraction(text, &v, k->kind == K_FACTOR)) return false;
        if (k->kind == K_FACTOR && v != 0.0 && (v < 1.0 || v > BREAKER__MAX_OPEN_BACKOFF))
            return false;
        if (k->kind != K_FACTOR && v > 1.0) return false;
        memcpy(field, &v, sizeof(v));
        return true;
    }
    }
    return false;
}

/* Input quoted in a message: at most ECHO_MAX bytes, every byte that is not
 * printable ASCII written as \xNN (a message may reach a terminal, and a
 * hostile configuration file must not send it escape sequences), and "..."
 * after the quote when the input was longer. `out` holds 4 * ECHO_MAX + 4. */
#define ECHO_CAP (4u * ECHO_MAX + 4u)

static const char *echo(const char *s, size_t n, char out[ECHO_CAP]) {
    size_t o = 0;
    for (size_t i = 0; i < n && i < ECHO_MAX; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f && c != '\\') {
            out[o++] = (char)c;
        } else {
            snprintf(out + o, 5, "\\x%02x", c);
            o += 4;
        }
    }
    if (n > ECHO_MAX) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
    return out;
}

int breaker_config_set(breaker_config *cfg, const char *key, const char *value, char *msg,
                       size_t msg_len) {
    if (msg != NULL && msg_len > 0) msg[0] = '\0';
    char quoted[ECHO_CAP];
    const struct key *k = find_key(key);
    if (k == NULL)
        return breaker__fail(
            BREAKER_NOT_FOUND, msg, msg_len,
            "unknown key '%s' (keys: trip, failure_threshold, window_size, window, "
            "window_buckets, min_calls, failure_rate, slow_call, slow_call_rate, open, "
            "open_backoff, open_max, open_jitter, half_open_max_probes, "
            "half_open_successes, probe_timeout, min_failing_sources, ramp, ramp_start, "
            "cancelled_as, seed)",
            echo(key, strlen(key), quoted));

    /* Surrounding blanks are noise from files and shells; inner ones are not. */
    while (isspace((unsigned char)*value))
        value++;
    size_t n = strlen(value);
    while (n > 0 && isspace((unsigned char)value[n - 1]))
        n--;
    if (n == 0)
        return breaker__fail(BREAKER_EINVAL, msg, msg_len, "%s: expected %s, got ''", k->name,
                             k->range);
    /* Any length: a valid value may be long ("0.500000...", leading zeros),
     * and a long invalid one is refused by the parser like a short one. */
    char *text = malloc(n + 1);
    if (text == NULL) return BREAKER_ENOMEM;
    memcpy(text, value, n);
    text[n] = '\0';

    /* Parse into a copy so that `cfg` is unchanged on error. */
    breaker_config tmp = *cfg;
    int rc = BREAKER_OK;
    bool named_ns = strcmp(key, k->name) != 0;
    if (!set_value(&tmp, k, named_ns, text)) {
        const char *q = echo(value, n, quoted);
        if (k->kind == K_DURATION && !named_ns && is_bare_number(text))
            rc = breaker__fail(BREAKER_EINVAL, msg, msg_len,
                               "%s: '%s' has no unit: write it with one of ns, us, ms, s, m, "
                               "h, d, such as %ss (or give %s_ns in nanoseconds)",
                               k->name, q, q, k->name);
        else
            rc = breaker__fail(BREAKER_EINVAL, msg, msg_len, "%s: expected %s, got '%s'", k->name,
                               k->range, q);
    } else {
        *cfg = tmp;
    }
    free(text);
    return rc;
}
