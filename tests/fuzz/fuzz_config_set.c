/* SPDX-License-Identifier: MIT */
/*
 * fuzz_config_set.c - breaker_config_set() on arbitrary text.
 *
 * Input: lines of "key=value" (split at the first '='; a line without one is
 * a key with an empty value), applied in order to one configuration that
 * starts from breaker_config_init(). A line "@msglen=N" sets the size of the
 * message buffer for the lines after it (0 passes NULL), so truncation is
 * exercised with buffers of exactly that size.
 *
 * What must hold:
 * - every answer is OK, NOT_FOUND or EINVAL; on error the configuration is
 *   unchanged and the message names the key (or says it is unknown); on
 *   success the message is empty;
 * - a value accepted once is accepted again with blanks around it, to the
 *   same configuration;
 * - every key is checked alone, so a configuration built only from accepted
 *   values either validates or fails one of the checks that involve two
 *   fields (bucket width, slow-call rate without a slow-call duration or
 *   under the consecutive policy, open_max below open);
 * - a configuration that validates creates a breaker that admits a call, and
 *   the breaker's effective configuration validates too;
 * - every value, read by breaker_parse_duration(), gives what the manual
 *   defines (checked against an independent exact reference), and a
 *   duration key accepts exactly the durations up to 365 days, stored
 *   exactly (a bare number only under the key's _ns name, or zero).
 */
#include "fuzz_util.h"

#include <breaker.h>

#include <stdbool.h>
#include <string.h>

#define MAX_LINES 64

static uint64_t fixed_clock(void *ctx) {
    (void)ctx;
    return UINT64_C(1000000000);
}

/* A message buffer of exactly `len` bytes (NULL when 0), pre-filled with a
 * byte that is not NUL so that a missing terminator shows. */
static char *msg_alloc(size_t len) {
    if (len == 0) return NULL;
    char *m = malloc(len);
    if (m != NULL) memset(m, 'x', len);
    return m;
}

static void check_terminated(const char *msg, size_t len, const char *what) {
    if (msg == NULL) return;
    FUZZ_CHECK(memchr(msg, '\0', len) != NULL, "%s: message not NUL-terminated in %zu bytes", what,
               len);
}

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* The key as error messages name it: duration keys lose "_ns". */
static size_t key_stem(const char *key) {
    size_t n = strlen(key);
    return ends_with(key, "_ns") ? n - 3 : n;
}

static int reference_duration(const char *text, uint64_t bare_unit, uint64_t *out);

/* The duration keys and their fields. */
static const struct {
    const char *key;
    size_t offset;
} duration_keys[] = {
    {"window", offsetof(breaker_config, window_ns)},
    {"slow_call", offsetof(breaker_config, slow_call_ns)},
    {"open", offsetof(breaker_config, open_ns)},
    {"open_max", offsetof(breaker_config, open_max_ns)},
    {"probe_timeout", offsetof(breaker_config, probe_timeout_ns)},
};

/* A duration key's value is accepted exactly when the manual's duration
 * (a bare number only under the _ns name, in nanoseconds, or a bare zero)
 * is at most 365 days (and, for the window, 0
 * or at least 1 ms), and then stored exactly. */
static void check_duration_key(const breaker_config *cfg, const char *key, const char *value,
                               int rc) {
    size_t stem = key_stem(key);
    for (size_t i = 0; i < sizeof(duration_keys) / sizeof(duration_keys[0]); i++) {
        const char *k = duration_keys[i].key;
        if (strlen(k) != stem || strncmp(key, k, stem) != 0) continue;
        if (stem != strlen(key) && strcmp(key + stem, "_ns") != 0) return;
        /* The library trims blanks around the value first. */
        size_t n = strlen(value), a = 0;
        while (a < n && strchr(" \t\n\v\f\r", value[a]) != NULL)
            a++;
        while (n > a && strchr(" \t\n\v\f\r", value[n - 1]) != NULL)
            n--;
        if (n - a > 64) return; /* refused for its length before parsing */
        char text[65];
        memcpy(text, value + a, n - a);
        text[n - a] = '\0';
        /* The unit is in the value, or in the key's name (_ns); a bare zero
         * needs none. */
        bool named_ns = stem != strlen(key);
        uint64_t want = 0;
        int ref = reference_duration(text, named_ns ? 1 : 0, &want);
        if (ref == 0 && !named_ns && reference_duration(text, 1, &want) == 1 && want == 0) ref = 1;
        if (ref < 0) return;
        bool ok = ref == 1 && want <= UINT64_C(365) * 24 * 3600 * 1000000000 &&
                  !(duration_keys[i].offset == offsetof(breaker_config, window_ns) && want != 0 &&
                    want < 1000000);
        FUZZ_CHECK((rc == BREAKER_OK) == ok, "%s='%s': %s, but the manual %s it", key, value,
                   breaker_status_name(rc), ok ? "allows" : "refuses");
        if (ok) {
            uint64_t got;
            memcpy(&got, (const char *)cfg + duration_keys[i].offset, sizeof(got));
            FUZZ_CHECK(got == want, "%s='%s' stored %llu ns, want %llu", key, value,
                       (unsigned long long)got, (unsigned long long)want);
        }
        return;
    }
}

static void set_one(breaker_config *cfg, const char *key, const char *value, size_t msg_len) {
    char *msg = msg_alloc(msg_len);
    if (msg_len != 0 && msg == NULL) return;
    breaker_config before = *cfg;
    int rc = breaker_config_set(cfg, key, value, msg, msg_len);
    check_terminated(msg, msg_len, "breaker_config_set");
    check_duration_key(cfg, key, value, rc);
    FUZZ_CHECK(rc == BREAKER_OK || rc == BREAKER_NOT_FOUND || rc == BREAKER_EINVAL,
               "key '%s' value '%s': status %d", key, value, rc);
    if (rc != BREAKER_OK) {
        FUZZ_CHECK(memcmp(&before, cfg, sizeof(before)) == 0,
                   "key '%s' value '%s': config changed on error %d", key, value, rc);
        if (msg != NULL && msg_len > 64) {
            if (rc == BREAKER_NOT_FOUND) {
                FUZZ_CHECK(strncmp(msg, "unknown key", 11) == 0, "key '%s': message '%s'", key,
                           msg);
            } else {
                size_t stem = key_stem(key);
                FUZZ_CHECK(strncmp(msg, key, stem) == 0 && msg[stem] == ':',
                           "key '%s' value '%s': message '%s' does not name the key", key, value,
                           msg);
            }
        }
        free(msg);
        return;
    }
    if (msg != NULL) FUZZ_CHECK(msg[0] == '\0', "key '%s': OK with message '%s'", key, msg);

    /* The same value with blanks around it gives the same configuration. */
    size_t n = strlen(value);
    char *padded = malloc(n + 5);
    if (padded != NULL) {
        memcpy(padded, " \t", 2);
        memcpy(padded + 2, value, n);
        memcpy(padded + 2 + n, "\t ", 3);
        breaker_config again = before;
        int rc2 = breaker_config_set(&again, key, padded, NULL, 0);
        FUZZ_CHECK(rc2 == BREAKER_OK, "key '%s': '%s' accepted, padded refused (%d)", key, value,
                   rc2);
        FUZZ_CHECK(memcmp(&again, cfg, sizeof(again)) == 0,
                   "key '%s': '%s' and its padded form differ", key, value);
        free(padded);
    }
    free(msg);
}

/* Only the checks that involve two fields may fail. */
static bool two_field_message(const char *msg) {
    static const char *const allowed[] = {
        "window_ns: each of the ",
        "slow_call_rate: needs slow_call_ns",
        "slow_call_rate: needs a window trip policy",
        "open_max_ns: must be >= open_ns",
        "min_calls: must be <= window_size",
    };
    for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
        if (strncmp(msg, allowed[i], strlen(allowed[i])) == 0) return true;
    return false;
}

static void check_config(const breaker_config *cfg, size_t msg_len) {
    char msg[512];
    int rc = breaker_config_validate(cfg, msg, sizeof(msg));
    FUZZ_CHECK(rc == BREAKER_OK || rc == BREAKER_EINVAL, "validate: status %d", rc);
    if (rc != BREAKER_OK) {
        FUZZ_CHECK(two_field_message(msg),
                   "values accepted one by one, but validation fails a one-field check: %s", msg);
    } else {
        FUZZ_CHECK(msg[0] == '\0', "validate OK with message '%s'", msg);
    }
    /* The same with a short buffer: truncated, terminated, same answer. */
    char *small = msg_alloc(msg_len);
    if (msg_len == 0 || small != NULL) {
        FUZZ_CHECK(breaker_config_validate(cfg, small, msg_len) == rc,
                   "validate answers differ by buffer size");
        check_terminated(small, msg_len, "breaker_config_validate");
        free(small);
    }
}

static void create_and_call(const breaker_config *cfg) {
    breaker *b = NULL;
    int rc = breaker_create(cfg, &b);
    if (rc == BREAKER_ENOMEM) return;
    FUZZ_CHECK(rc == BREAKER_OK && b != NULL, "valid config, breaker_create: %d", rc);
    breaker_config eff;
    breaker_get_config(b, &eff);
    char msg[256];
    FUZZ_CHECK(breaker_config_validate(&eff, msg, sizeof(msg)) == BREAKER_OK,
               "effective config does not validate: %s", msg);
    breaker_permit p;
    FUZZ_CHECK(breaker_acquire(b, &p) == BREAKER_OK, "a new breaker refused a call");
    FUZZ_CHECK(breaker_complete(b, &p, BREAKER_FAILURE) == BREAKER_OK, "completion refused");
    FUZZ_CHECK(breaker_get_state(b) <= BREAKER_FORCED_CLOSED, "state out of range");
    breaker_destroy(b);
}

/* breaker_parse_duration() as its manual defines it, by a different route:
 * all digits as one 128-bit integer N with f fraction digits, the value
 * N * unit / 10^f, which must be whole and fit 64 bits. @return 1 with *out
 * set, 0 if the text is not a valid duration, -1 if it is beyond this
 * reference's exact range (more than 24 fraction or 30 whole digits). */
/* One term of the manual's duration at *pp: digits, optionally '.' and
 * digits, then a unit (or, when `bare` and the text ends, none). @return 1
 * with *ns and *rank (0 ns .. 6 d, 7 bare), 0 when refused, -1 when beyond
 * what this reference computes exactly. */
static int reference_term(const char **pp, uint64_t bare_unit, unsigned __int128 *ns,
                          unsigned *rank) {
    static const struct {
        const char *suffix;
        uint64_t ns;
    } units[] = {{"ns", 1},
                 {"us", 1000},
                 {"ms", 1000000},
                 {"s", 1000000000},
                 {"m", UINT64_C(60000000000)},
                 {"h", UINT64_C(3600000000000)},
                 {"d", UINT64_C(86400000000000)}};
    unsigned __int128 n = 0, pow10 = 1;
    unsigned whole = 0, frac = 0, digits = 0;
    const char *p = *pp;
    for (; *p >= '0' && *p <= '9'; p++, digits++) {
        if (n == 0 && *p == '0') continue; /* leading zeros */
        if (++whole > 30) return -1;
        n = n * 10 + (unsigned)(*p - '0');
    }
    if (*p == '.') {
        /* Trailing zeros of the fraction do not change the value. */
        const char *q = ++p;
        const char *last = p;
        for (; *q >= '0' && *q <= '9'; q++)
            if (*q != '0') last = q + 1;
        for (; p < last; p++, digits++) {
            if (++frac > 24) return -1;
            n = n * 10 + (unsigned)(*p - '0');
            pow10 *= 10;
        }
        for (; *p >= '0' && *p <= '9'; p++)
            digits++;
    }
    if (digits == 0) return 0;
    uint64_t unit = 0;
    if (*p == '\0') {
        unit = bare_unit;
        *rank = 7;
    } else {
        /* The longest unit name that the text continues with. */
        size_t best = 0;
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
            size_t len = strlen(units[i].suffix);
            if (strncmp(p, units[i].suffix, len) == 0 && len > best &&
                (p[len] == '\0' || (p[len] >= '0' && p[len] <= '9') || p[len] == '.')) {
                best = len;
                unit = units[i].ns;
                *rank = (unsigned)i;
            }
        }
        p += best;
    }
    if (unit == 0) return 0;
    unsigned __int128 q = n / pow10, r = n % pow10;
    if ((r * unit) % pow10 != 0) return 0; /* finer than 1 ns */
    if (q > UINT64_MAX) return 0;
    *ns = q * unit + r * unit / pow10;
    if (*ns > UINT64_MAX) return 0;
    *pp = p;
    return 1;
}

/* The manual's duration: terms with units from large to small, each once; a
 * bare number alone. */
static int reference_duration(const char *text, uint64_t bare_unit, uint64_t *out) {
    const char *p = text;
    unsigned __int128 total = 0;
    unsigned last = 8;
    do {
        unsigned __int128 ns = 0;
        unsigned rank = 0;
        int rc = reference_term(&p, bare_unit, &ns, &rank);
        if (rc != 1) return rc;
        if (rank >= last) return 0;
        last = rank;
        total += ns;
        if (total > UINT64_MAX) return 0;
    } while (*p != '\0');
    *out = (uint64_t)total;
    return 1;
}

/* Every value is also a duration candidate: the parser against the
 * reference, with a bare number in nanoseconds, seconds, or not allowed. */
static void check_duration(const char *value) {
    static const uint64_t bare[] = {1, 1000000000, 0};
    for (size_t i = 0; i < sizeof(bare) / sizeof(bare[0]); i++) {
        uint64_t want = 0, got = UINT64_C(0x5eed);
        int ref = reference_duration(value, bare[i], &want);
        int rc = breaker_parse_duration(value, bare[i], &got);
        FUZZ_CHECK(rc == BREAKER_OK || rc == BREAKER_EINVAL, "parse_duration: status %d", rc);
        if (rc != BREAKER_OK)
            FUZZ_CHECK(got == UINT64_C(0x5eed), "'%s': output written on error", value);
        if (ref < 0) continue;
        FUZZ_CHECK((rc == BREAKER_OK) == (ref == 1), "'%s' (bare unit %llu): parser says %s, %s",
                   value, (unsigned long long)bare[i], breaker_status_name(rc),
                   ref ? "the manual allows it" : "the manual does not");
        if (rc == BREAKER_OK)
            FUZZ_CHECK(got == want, "'%s' (bare unit %llu): %llu ns, reference %llu ns", value,
                       (unsigned long long)bare[i], (unsigned long long)got,
                       (unsigned long long)want);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    breaker_config cfg;
    breaker_config_init(&cfg);
    cfg.clock = fixed_clock;
    cfg.seed = 1;
    size_t msg_len = 256;
    size_t pos = 0, lines = 0;
    while (pos < size && lines < MAX_LINES) {
        const uint8_t *nl = memchr(data + pos, '\n', size - pos);
        size_t len = nl != NULL ? (size_t)(nl - (data + pos)) : size - pos;
        char *line = malloc(len + 1);
        if (line == NULL) return 0;
        memcpy(line, data + pos, len);
        line[len] = '\0';
        pos += len + 1;
        lines++;
        char *eq = strchr(line, '=');
        const char *value = "";
        if (eq != NULL) {
            *eq = '\0';
            value = eq + 1;
        }
        if (strcmp(line, "@msglen") == 0) {
            msg_len = (size_t)strtoul(value, NULL, 10) % 1024;
        } else {
            check_duration(value);
            set_one(&cfg, line, value, msg_len);
            check_config(&cfg, msg_len);
        }
        free(line);
    }
    if (breaker_config_validate(&cfg, NULL, 0) == BREAKER_OK) create_and_call(&cfg);
    return 0;
}
