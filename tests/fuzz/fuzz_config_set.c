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
 *   the breaker's effective configuration validates too.
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

static void set_one(breaker_config *cfg, const char *key, const char *value, size_t msg_len) {
    char *msg = msg_alloc(msg_len);
    if (msg_len != 0 && msg == NULL) return;
    breaker_config before = *cfg;
    int rc = breaker_config_set(cfg, key, value, msg, msg_len);
    check_terminated(msg, msg_len, "breaker_config_set");
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
            set_one(&cfg, line, value, msg_len);
            check_config(&cfg, msg_len);
        }
        free(line);
    }
    if (breaker_config_validate(&cfg, NULL, 0) == BREAKER_OK) create_and_call(&cfg);
    return 0;
}
