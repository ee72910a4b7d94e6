/* SPDX-License-Identifier: MIT */
/*
 * fuzz_fleet_reply.c - the fleet client's reading of what Redis sends
 * (src/store/redis/protocol.c): a script's answer (ANS_COUNT integers) and
 * a control record's limits (named fields), then what the client decides
 * on them.
 *
 * Input: ANS_COUNT zigzag LEB128 integers (the answer; missing ones are
 * 0), one byte of the local breaker's state and one of flags, then the
 * rest as limits, "name=value ...". Checked: an answer read is within every
 * field's range (breaker__fleet_answer_check() agrees with _read()); limits
 * read are within the configuration's ranges, read back the same from
 * their own formatting, and adopt into a valid breaker_config; the decisions on a read answer
 * (decide, lease settle) give an action and a return code the client knows, with no sanitizer
 * report.
 */
#include "fuzz_util.h"
#include "store/redis/protocol.h"

#include <string.h>

static int64_t zigzag(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

/* The limits of a named text "name=value ..." (a record's fields). */
static int read_named(char *text, struct breaker__fleet_limits *l, char *why, size_t why_len) {
    const char *v[BREAKER__FLEET_LIMIT_COUNT] = {NULL};
    for (char *p = text; *p != '\0';) {
        while (*p == ' ')
            p++;
        char *tok = p;
        while (*p != '\0' && *p != ' ')
            p++;
        if (*p != '\0') *p++ = '\0';
        char *eq = strchr(tok, '=');
        if (eq == NULL) continue;
        *eq = '\0';
        for (int i = 0; i < BREAKER__FLEET_LIMIT_COUNT; i++)
            if (strcmp(tok, breaker__fleet_limit_names[i]) == 0) v[i] = eq + 1;
    }
    return breaker__fleet_limits_read(v, l, why, why_len);
}

static void limits_case(const uint8_t *data, size_t size) {
    char text[512];
    size_t n = size < sizeof text - 1 ? size : sizeof text - 1;
    memcpy(text, data, n);
    text[n] = '\0';
    struct breaker__fleet_limits l, again;
    char why[256] = "";
    if (!read_named(text, &l, why, sizeof why)) {
        FUZZ_CHECK(why[0] != '\0', "a refusal without a reason");
        return;
    }
    FUZZ_CHECK(breaker__fleet_limits_check(&l, why, sizeof why), "read but out of range: %s", why);
    char out[BREAKER__FLEET_LIMITS_LEN];
    breaker__fleet_limits_format(&l, out, sizeof out);
    FUZZ_CHECK(read_named(out, &again, why, sizeof why), "own text refused: %s", why);
    FUZZ_CHECK(breaker__fleet_limits_same(&l, &again, false),
               "the text does not read back the same: %s", out);
    breaker_config cfg;
    breaker_config_init(&cfg);
    bool differs = false;
    if (breaker__fleet_limits_adopt(&l, &cfg, &differs, why, sizeof why))
        FUZZ_CHECK(breaker_config_validate(&cfg, NULL, 0) == BREAKER_OK, "adopted invalid limits");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    struct fuzz_reader r = {data, size, 0};
    int64_t v[ANS_COUNT];
    for (int i = 0; i < ANS_COUNT; i++)
        v[i] = zigzag(fuzz_varint(&r));
    uint8_t local_state = fuzz_byte(&r), flags = fuzz_byte(&r);

    struct breaker__fleet_answer a;
    char why[160] = "";
    int checked = breaker__fleet_answer_check(v, why, sizeof why);
    int read = breaker__fleet_answer_read(v, &a);
    FUZZ_CHECK(checked == read, "check %d, read %d", checked, read);
    if (!checked) FUZZ_CHECK(strncmp(why, "answer field ", 13) == 0, "reason: %s", why);
    if (read) {
        FUZZ_CHECK(a.state >= FLEET_CLOSED && a.state <= FLEET_HALF_OPEN, "state %d", a.state);
        FUZZ_CHECK(a.born <= a.gen && a.failures <= a.calls && a.slow <= a.calls,
                   "an answer out of range was read");
        struct breaker__fleet_follow f;
        memset(&f, 0, sizeof f);
        f.follows = flags & 1;
        f.followed_gen = f.follows ? (uint64_t)(flags >> 1) : 0;
        f.stale_tripped = (flags & 0x80) != 0;
        f.recovered = (flags & 0x40) != 0;
        struct breaker__fleet_local local = {.gen = flags,
                                             .state = (enum breaker_state)(local_state % 3)};
        struct breaker__fleet_action act = {.kind = FLEET_ACT_NONE};
        struct breaker__fleet_gate gate;
        breaker__fleet_decide(&f, &a, &local, UINT64_C(1) << 40, &act, &gate);
        FUZZ_CHECK(act.kind == FLEET_ACT_NONE || act.kind == FLEET_ACT_TRIP ||
                       act.kind == FLEET_ACT_CLOSE || act.kind == FLEET_ACT_OPEN_FOR,
                   "action %d", act.kind);
        FUZZ_CHECK(act.kind == FLEET_ACT_NONE || act.gen == local.gen, "an unfenced action");
        FUZZ_CHECK(f.known_gen == a.gen, "the known generation did not move");
        struct breaker__fleet_lease_times t = {.start_ns = 1000,
                                               .now_ns = 1000 + (uint64_t)(flags & 0x3f) * 1000000,
                                               .budget_ns = 25000000,
                                               .interval_ns = 250000000,
                                               .probe_timeout_ns = 1000000000};
        struct breaker__fleet_lease_plan plan;
        breaker__fleet_lease_settle(breaker__fleet_lease_verdict(&a), &a, f.followed_gen, &t,
                                    &plan);
        FUZZ_CHECK(plan.rc == BREAKER_OK || plan.rc == BREAKER_REJECTED_OPEN ||
                       plan.rc == BREAKER_REJECTED_HALF_OPEN,
                   "rc %d", plan.rc);
    }
    limits_case(data + r.pos, size - r.pos);
    return 0;
}
