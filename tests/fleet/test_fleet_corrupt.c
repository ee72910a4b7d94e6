/* SPDX-License-Identifier: MIT */
/*
 * test_fleet_corrupt.c - a corrupt fleet state is reported and rebuilt,
 * never followed (issue 21, item 2; docs/fleet.md "Failure modes").
 *
 * For each corruption (a field out of its range, not a number, a stored
 * limit outside the configuration's ranges, a control record's field out
 * of its range or not printable, a window field or a lease
 * score that cannot be, a key of the wrong type) applied to one name's keys
 * on a real redis-server:
 *  - acquire_probe answers an error naming the key and the field and writes
 *    nothing: the invalid state's TTL is not refreshed;
 *  - the next flush round fails with that reason (the handle degraded,
 *    on_degraded(1, why) once), and the keys are rebuilt: a CLOSED state
 *    at a later generation (born = gen), the caller's limits, a fresh TTL;
 *  - the round after rejoins (on_degraded(0)), and the local breaker admits
 *    calls to the healthy dependency: no refusal past one round.
 * Every case runs; the matrix is printed, then failures fail the test.
 */
#define _POSIX_C_SOURCE 200809L

#include "redis_server.h"
#include "store/redis/scripts.h"

#include <breaker.h>
#include <breaker/redis.h>
#include <hiredis/hiredis.h>

#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define MS ((uint64_t)1000000)

static struct test_redis server;
static redisContext *ctx;

struct degraded_log {
    int calls_on, calls_off;
    char why[512];
};

static void on_degraded(void *c, int on, const char *why) {
    struct degraded_log *d = c;
    if (on) {
        d->calls_on++;
        snprintf(d->why, sizeof d->why, "%s", why);
    } else {
        d->calls_off++;
    }
}

static redisReply *cmd(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(ctx, fmt, ap);
    va_end(ap);
    if (r == NULL) fail_msg("redis: %s", ctx->errstr);
    return r;
}

static long long cmd_int(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(ctx, fmt, ap);
    va_end(ap);
    if (r == NULL) fail_msg("redis: %s", ctx->errstr);
    long long v = r->type == REDIS_REPLY_INTEGER  ? r->integer
                  : r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10)
                                                  : -1;
    freeReplyObject(r);
    return v;
}

/* One corruption: Redis commands on the name's keys ({S}, {W}, {L}, {Q}
 * stand for them), the text the reason must hold, and whether acquire_probe
 * sees it (the window and the sequences are read by the flush only). */
struct corruption {
    const char *what;
    const char *commands[3];
    const char *reason; /* after the key's name */
    int key;            /* FLEET key index the reason names: 0 s, 1 w, 2 l, 3 q */
    int acquire_sees;
};

static const struct corruption cases[] = {
    {"st -1", {"HSET {S} st -1"}, "field st = -1, expected 0..2", 0, 1},
    {"st 7", {"HSET {S} st 7"}, "field st = 7", 0, 1},
    {"gen -5", {"HSET {S} gen -5"}, "field gen = -5", 0, 1},
    {"gen huge", {"HSET {S} gen 99999999999999999999"}, "field gen = 99999999999999999999", 0, 1},
    {"k nan", {"HSET {S} k nan"}, "field k = nan", 0, 1},
    {"until abc", {"HSET {S} until abc"}, "field until = abc", 0, 1},
    {"open for 10 years",
     {"HSET {S} st 1 until 2000000000000000"},
     "field until = 2000000000000000",
     0,
     1},
    {"succ negative", {"HSET {S} succ -3"}, "field succ = -3", 0, 1},
    {"limit zero", {"HSET {S} min_calls 0"}, "field min_calls = 0", 0, 1},
    {"limit negative rate", {"HSET {S} failure_rate -0.5"}, "field failure_rate = -0.5", 0, 1},
    {"limit open_max < open", {"HSET {S} open_max 100"}, "field open_max = 100", 0, 1},
    {"limit garbage", {"HSET {S} window garbage"}, "field window = garbage", 0, 1},
    {"limit missing", {"HDEL {S} probe_timeout"}, "field probe_timeout = (missing)", 0, 1},
    {"forced 3", {"HSET {S} cf 3"}, "field cf = 3", 0, 1},
    {"who a control byte", {"HSET {S} cw \"a\x1b[2J\""}, "field cw = a??2J", 0, 1},
    {"evidence ef > ec", {"HSET {S} ec 5 ef 9"}, "field ef = 9", 0, 1},
    {"born after gen", {"HSET {S} born 4000000000000000"}, "field born = 4000000000000000", 0, 1},
    {"trips not a number", {"HSET {S} trips x"}, "field trips = x", 0, 1},
    {"state a string", {"DEL {S}", "SET {S} x"}, "field type = string, expected hash", 0, 1},
    {"window negative", {"HSET {W} c1 -5"}, "field c1 = -5", 1, 0},
    {"window huge", {"HSET {W} c1 99999999999999999"}, "field c1 = 99999999999999999", 1, 0},
    {"window future bucket", {"HSET {W} c99999999999999 5"}, "field c99999999999999 = 5", 1, 0},
    {"window field name", {"HSET {W} xyz 1"}, "field xyz = 1", 1, 0},
    {"window a list", {"DEL {W}", "RPUSH {W} x"}, "field type = list, expected hash", 1, 1},
    {"lease score inf",
     {"HSET {S} st 2", "ZADD {L} inf 00000000000000aa"},
     "field score of 00000000000000aa = inf",
     2,
     1},
    {"leases over the limit", {"HSET {S} st 2", "ZADD {L} 1 a 2 b"}, "field leases = 2", 2, 1},
    {"leases a string", {"DEL {L}", "SET {L} x"}, "field type = string, expected zset", 2, 1},
    {"sequence not digits",
     {"HSET {Q} 00000000000000aa \"12 x\""},
     "field 00000000000000aa = 12 x, expected seq time",
     3,
     0},
    {"sequence huge",
     {"HSET {Q} 00000000000000aa \"99999999999999999 1\""},
     "field 00000000000000aa = 99999999999999999 1",
     3,
     0},
    {"sequence field name", {"HSET {Q} xyz \"1 2\""}, "field xyz = 1 2, expected a field", 3, 0},
    {"sequences a string", {"DEL {Q}", "SET {Q} x"}, "field type = string, expected hash", 3, 1},
};
#define CASES (sizeof cases / sizeof cases[0])

/* Run `c` with {S}, {W}, {L}, {Q} replaced by the keys. */
static void run_command(const char *c, char keys[4][128]) {
    const char *argv[16];
    char words[16][160];
    int argc = 0;
    const char *p = c;
    while (*p != '\0' && argc < 16) {
        while (*p == ' ')
            p++;
        if (*p == '\0') break;
        char *w = words[argc];
        size_t n = 0;
        if (*p == '"') {
            p++;
            while (*p != '\0' && *p != '"' && n + 1 < sizeof words[0])
                w[n++] = *p++;
            if (*p == '"') p++;
        } else {
            while (*p != '\0' && *p != ' ' && n + 1 < sizeof words[0])
                w[n++] = *p++;
        }
        w[n] = '\0';
        for (int k = 0; k < 4; k++) {
            static const char *const tag[4] = {"{S}", "{W}", "{L}", "{Q}"};
            if (strcmp(w, tag[k]) == 0) snprintf(w, sizeof words[0], "%.127s", keys[k]);
        }
        argv[argc] = w;
        argc++;
    }
    redisReply *r = redisCommandArgv(ctx, argc, argv, NULL);
    if (r == NULL || r->type == REDIS_REPLY_ERROR)
        fail_msg("%s: %s", c, r == NULL ? ctx->errstr : r->str);
    freeReplyObject(r);
}

static void cfg_of(breaker_config *c) {
    breaker_config_init(c);
    c->window_ns = 10000 * MS;
    c->window_buckets = 10;
    c->min_calls = 20;
    c->open_ns = c->open_max_ns = 200 * MS;
    c->open_jitter = 0;
    c->half_open_max_probes = 1;
    c->half_open_successes = 1;
    c->probe_timeout_ns = 5000 * MS;
}

/* acquire_probe on the keys, as a host's probe asks: the reply. (The
 * caller's limits are read only to make a state: acquire never does.) */
static redisReply *acquire_raw(char keys[4][128]) {
    const char *argv[] = {
        "EVAL", breaker__redis_lua_acquire, "4", keys[0], keys[1], keys[2], keys[3], "3600000",
        "",     "00000000000000ff"};
    return redisCommandArgv(ctx, 10, argv, NULL);
}

/* One case: @return 1 when every promise held, with `row` the matrix line. */
static int run_case(size_t i, char *row, size_t row_len) {
    const struct corruption *cs = &cases[i];
    char name[32];
    snprintf(name, sizeof name, "corrupt%zu", i);
    char keys[4][128];
    static const char *const suffix[4] = {"s", "w", "l", "q"};
    for (int k = 0; k < 4; k++)
        snprintf(keys[k], sizeof keys[k], "breaker:v2:{%s}:%s", name, suffix[k]);

    struct degraded_log log;
    memset(&log, 0, sizeof log);
    breaker_redis_config rc;
    breaker_redis_config_init(&rc);
    rc.port = server.port;
    rc.flush_interval_ns = 3600 * 1000 * MS; /* rounds only when asked */
    rc.io_timeout_ns = 2000 * MS;
    rc.probe_budget_ns = 1000 * MS;
    rc.on_degraded = on_degraded;
    rc.degraded_ctx = &log;
    breaker_redis *f = NULL;
    char msg[256] = "";
    if (breaker_redis_open(&rc, &f, msg, sizeof msg) != BREAKER_OK) fail_msg("open: %s", msg);
    breaker_config cfg;
    cfg_of(&cfg);
    breaker *b = NULL;
    if (breaker_redis_attach(f, name, &cfg, &b, msg, sizeof msg) != BREAKER_OK)
        fail_msg("attach: %s", msg);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    int calls_on_before = log.calls_on;
    long long gen0 = cmd_int("HGET %s gen", keys[0]);

    for (int c = 0; c < 3 && cs->commands[c] != NULL; c++)
        run_command(cs->commands[c], keys);
    /* A short TTL on the corrupt state: nothing may refresh it. */
    freeReplyObject(cmd("PEXPIRE %s 60000", keys[0]));

    int ok = 1;
    char why_acquire[300] = "-";
    int ttl_kept = 1;
    if (cs->acquire_sees) {
        redisReply *r = acquire_raw(keys);
        int err = r != NULL && r->type == REDIS_REPLY_ERROR;
        snprintf(why_acquire, sizeof why_acquire, "%s",
                 r == NULL ? "no reply"
                 : err     ? r->str
                           : "an answer");
        if (r != NULL) freeReplyObject(r);
        if (!err || strstr(why_acquire, cs->reason) == NULL) ok = 0;
        long long pttl = cmd_int("PTTL %s", keys[0]);
        ttl_kept = pttl <= 60000;
        if (!ttl_kept) ok = 0;
    }

    /* One success, so that the round carries deltas (the window is read by
     * a flush that counts them). */
    breaker_permit p;
    if (breaker_acquire(b, &p) == BREAKER_OK) breaker_complete(b, &p, BREAKER_SUCCESS);
    int rc1 = breaker_redis_flush(f);
    char expect[300];
    snprintf(expect, sizeof expect, "%s: %s", keys[cs->key], cs->reason);
    int reported =
        rc1 != BREAKER_OK && log.calls_on == calls_on_before + 1 && strstr(log.why, expect) != NULL;
    breaker_redis_stats st;
    breaker_redis_stats_get(f, &st);
    if (!reported || !st.degraded || st.state_rebuilds != 1) ok = 0;
    long long gen1 = cmd_int("HGET %s gen", keys[0]);
    long long born1 = cmd_int("HGET %s born", keys[0]);
    long long st1 = cmd_int("HGET %s st", keys[0]);
    long long pttl1 = cmd_int("PTTL %s", keys[0]);
    int rebuilt = gen1 > gen0 && born1 == gen1 && st1 == 0 && pttl1 > 60000;
    if (!rebuilt) ok = 0;
    int rc2 = breaker_redis_flush(f);
    breaker_redis_stats_get(f, &st);
    int rejoined = rc2 == BREAKER_OK && !st.degraded && log.calls_off >= 1;
    if (!rejoined) ok = 0;
    /* The dependency is healthy: its calls are admitted. */
    int admitted = 0;
    for (int n = 0; n < 5; n++) {
        if (breaker_acquire(b, &p) != BREAKER_OK) continue;
        breaker_complete(b, &p, BREAKER_SUCCESS);
        admitted++;
    }
    if (admitted != 5) ok = 0;
    snprintf(row, row_len,
             "%-24s reported %-3s rebuilt %-3s ttl kept %-3s rejoined %-3s admitted %d/5 | %s",
             cs->what, reported ? "yes" : "NO", rebuilt ? "yes" : "NO", ttl_kept ? "yes" : "NO",
             rejoined ? "yes" : "NO", admitted, log.why[0] ? log.why : why_acquire);
    breaker_redis_close(f);
    return ok;
}

static void every_corruption_is_reported_and_rebuilt_never_followed(void **state) {
    (void)state;
    size_t good = 0;
    char rows[CASES][700];
    int oks[CASES];
    for (size_t i = 0; i < CASES; i++) {
        oks[i] = run_case(i, rows[i], sizeof rows[i]);
        good += (size_t)oks[i];
    }
    printf("fleet corruption matrix: %zu of %zu cases reported, rebuilt and admitting\n", good,
           CASES);
    for (size_t i = 0; i < CASES; i++)
        printf("  %s %s\n", oks[i] ? "ok  " : "FAIL", rows[i]);
    assert_int_equal(good, CASES);
}

static int setup(void **state) {
    (void)state;
    if (test_redis_start(&server) != 0) return -1;
    struct timeval tv = {.tv_sec = 10, .tv_usec = 0};
    ctx = redisConnectWithTimeout("127.0.0.1", server.port, tv);
    return ctx == NULL || ctx->err ? -1 : 0;
}

static int teardown(void **state) {
    (void)state;
    if (ctx != NULL) redisFree(ctx);
    test_redis_stop(&server);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_corruption_is_reported_and_rebuilt_never_followed),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
