/* SPDX-License-Identifier: MIT */
/*
 * test_inproc.c - the in-process Redis (src/store/redis/inproc/, inproc.h)
 * on its own: what its header promises that needs no real Redis to check
 * (the virtual clock, determinism, independence of two servers, the faults,
 * the reads, the order of listings, the bounds), and the fleet's real
 * scripts running on it. Its replies against a real redis-server are
 * tests/fleet/test_inproc_redis.c and test_inproc_differential.c.
 */
#include "fleet_workload.h"
#include "inproc_util.h"
#include "store/redis/inproc/engine.h"
#include "test_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EPOCH_NS (UINT64_C(1700000000) * SEC) /* a wall clock in Nov 2023 */

static uint64_t clock_read(void *ctx) { return *(uint64_t *)ctx; }

static struct breaker__redis_inproc *server(uint64_t *clock) {
    struct breaker__redis_inproc *s = breaker__redis_inproc_create(clock_read, clock);
    assert_non_null(s);
    return s;
}

/* ---- SHA-1 ----------------------------------------------------------------------------- */

static void sha1_matches_the_fips_examples_and_every_padding_boundary(void **state) {
    (void)state;
    static const struct {
        size_t len; /* of 'a's, or the text's */
        const char *text;
        const char *hex;
    } v[] = {
        {0, "", "da39a3ee5e6b4b0d3255bfef95601890afd80709"},
        {3, "abc", "a9993e364706816aba3e25717850c26c9cd0d89d"},
        {56, "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "84983e441c3bd26ebaae4aa1f95129e5e54670f1"},
        {55, NULL, "c1c8bbdc22796e28c0e15163d20899b65621d65a"},
        {56, NULL, "c2db330f6083854c99d4b5bfb6e8f29f201be699"},
        {63, NULL, "03f09f5b158a7a8cdad920bddc29b81c18a551f5"},
        {64, NULL, "0098ba824b5c16427bd7a1122a5a442a25ec644d"},
        {119, NULL, "ee971065aaa017e0632a8ca6c77bb3bf8b1dfc56"},
        {1000000, NULL, "34aa973cd4c4daa4f61eeb2bdbad27316534016f"},
    };
    char *as = malloc(1000000);
    assert_non_null(as);
    memset(as, 'a', 1000000);
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char hex[41];
        breaker__sha1_hex(v[i].text != NULL ? v[i].text : as, v[i].len, hex);
        assert_string_equal(hex, v[i].hex);
    }
    free(as);
}

/* ---- The clock --------------------------------------------------------------------------- */

static void time_is_the_injected_clock(void **state) {
    (void)state;
    uint64_t clock = EPOCH_NS + 123456789;
    struct breaker__redis_inproc *s = server(&clock);
    assert_true(inproc_expect(s, "TIME", "[1700000000, 123456]"));
    clock += 2 * SEC + 1000;
    assert_true(inproc_expect(s, "TIME", "[1700000002, 123457]"));
    /* In a script too, as strings ({seconds, microseconds}). */
    const char *argv[] = {"EVAL", "local t = redis.call('TIME') return {type(t[1]), t[1], t[2]}",
                          "0"};
    breaker_redis_reply *r = inproc_runv(s, 3, argv);
    char text[256];
    reply_text(r, text, sizeof text);
    assert_string_equal(text, "[string, 1700000002, 123457]");
    breaker_redis_reply_free(r);
    breaker__redis_inproc_destroy(s);
}

/* PEXPIRE's deadline is on the clock; a key is there until the clock is
 * past it (at the deadline's millisecond it is still there, as in Redis). */
static void keys_expire_on_the_injected_clock_and_only_there(void **state) {
    (void)state;
    uint64_t clock = EPOCH_NS;
    struct breaker__redis_inproc *s = server(&clock);
    assert_true(inproc_expect(s, "HSET k f v", "1"));
    assert_true(inproc_expect(s, "PEXPIRE k 1500", "1"));
    assert_true(inproc_expect(s, "PTTL k", "1500"));
    assert_true(inproc_expect(s, "TTL k", "2"));
    assert_int_equal(breaker__redis_inproc_pttl(s, "k"), 1500);
    clock += 1500 * MS;
    assert_true(inproc_expect(s, "PTTL k", "0"));
    assert_true(inproc_expect(s, "HGET k f", "v"));
    clock += 1 * MS;
    assert_int_equal(breaker__redis_inproc_pttl(s, "k"), -2);
    assert_true(inproc_expect(s, "HGET k f", "(nil)"));
    assert_true(inproc_expect(s, "EXISTS k", "0"));
    /* A deadline in the past deletes at once; PERSIST removes one. */
    assert_true(inproc_expect(s, "ZADD z 1 m", "1"));
    assert_true(inproc_expect(s, "PEXPIRE z 0", "1"));
    assert_true(inproc_expect(s, "TYPE z", "+none"));
    assert_true(inproc_expect(s, "ZADD z 1 m", "1"));
    assert_true(inproc_expect(s, "EXPIRE z 10", "1"));
    assert_true(inproc_expect(s, "PEXPIRE z 20000 GT", "1"));
    assert_true(inproc_expect(s, "PEXPIRE z 5000 GT", "0"));
    assert_true(inproc_expect(s, "PERSIST z", "1"));
    assert_true(inproc_expect(s, "PTTL z", "-1"));
    clock += 3600 * SEC;
    assert_true(inproc_expect(s, "ZCARD z", "1"));
    breaker__redis_inproc_destroy(s);
}

/* ---- Two servers, restarts, faults ------------------------------------------------------- */

static void two_servers_share_nothing(void **state) {
    (void)state;
    uint64_t c1 = EPOCH_NS, c2 = EPOCH_NS + 7 * SEC;
    struct breaker__redis_inproc *a = server(&c1), *b = server(&c2);
    assert_true(inproc_expect(a, "HSET k f a", "1"));
    assert_true(inproc_expect(b, "HSET k f b", "1"));
    assert_true(inproc_expect(a, "HGET k f", "a"));
    assert_true(inproc_expect(b, "HGET k f", "b"));
    assert_true(inproc_expect(a, "TIME", "[1700000000, 0]"));
    assert_true(inproc_expect(b, "TIME", "[1700000007, 0]"));
    /* math.random is each server's own: a's draws do not move b's. */
    const char *draw[] = {"EVAL", "return tostring(math.random())", "0"};
    breaker_redis_reply *ra = inproc_runv(a, 3, draw);
    breaker_redis_reply *skip = inproc_runv(a, 3, draw);
    breaker_redis_reply *rb = inproc_runv(b, 3, draw);
    assert_string_equal(ra->str, rb->str);
    /* Redis's generator from its start: lrand48 from 0x1234ABCD330E. */
    assert_string_equal(ra->str, "0.39646477363839");
    assert_string_equal(skip->str, "0.84048536971234");
    breaker_redis_reply_free(ra);
    breaker_redis_reply_free(rb);
    breaker_redis_reply_free(skip);
    /* A script known to one is not known to the other. */
    const char *load[] = {"SCRIPT", "LOAD", "return 1"};
    breaker_redis_reply *sha = inproc_runv(a, 3, load);
    const char *exists[] = {"SCRIPT", "EXISTS", sha->str};
    breaker_redis_reply *ea = inproc_runv(a, 3, exists), *eb = inproc_runv(b, 3, exists);
    assert_int_equal(ea->element[0]->integer, 1);
    assert_int_equal(eb->element[0]->integer, 0);
    breaker_redis_reply_free(ea);
    breaker_redis_reply_free(eb);
    breaker_redis_reply_free(sha);
    breaker__redis_inproc_destroy(a);
    breaker__redis_inproc_destroy(b);
}

/* A restart is an empty Redis: no key and no script (NOSCRIPT, which the
 * client answers with EVAL); FLUSHALL empties the keys only. */
static void a_restart_forgets_keys_and_scripts_flushall_only_keys(void **state) {
    (void)state;
    uint64_t clock = EPOCH_NS;
    struct breaker__redis_inproc *s = server(&clock);
    const char *load[] = {"SCRIPT", "LOAD", "return redis.call('HGET', KEYS[1], 'f')"};
    breaker_redis_reply *sha = inproc_runv(s, 3, load);
    assert_int_equal(sha->type, BREAKER_REDIS_REPLY_STRING);
    char evalsha[128];
    snprintf(evalsha, sizeof evalsha, "EVALSHA %s 1 k", sha->str);
    assert_true(inproc_expect(s, "HSET k f v", "1"));
    assert_true(inproc_expect(s, evalsha, "v"));
    assert_true(inproc_expect(s, "SELECT 3", "+OK"));
    assert_true(inproc_expect(s, "HSET k f three", "1"));
    assert_true(inproc_expect(s, "FLUSHALL", "+OK"));
    assert_true(inproc_expect(s, evalsha, "(nil)"));
    assert_true(inproc_expect(s, "HSET k f w", "1"));
    breaker__redis_inproc_restart(s);
    assert_true(inproc_expect(s, "DBSIZE", "0"));
    assert_true(inproc_expect(s, evalsha, "-NOSCRIPT No matching script. Please use EVAL."));
    breaker_redis_reply_free(sha);
    breaker__redis_inproc_destroy(s);
}

/* OOM: a command that may grow the data is refused, and so is a script's
 * first such call, but not a later one (Redis cannot stop a script half
 * done). READONLY: every write, in a script too. */
static void refusals_answer_as_a_full_redis_or_a_replica_does(void **state) {
    (void)state;
    uint64_t clock = EPOCH_NS;
    struct breaker__redis_inproc *s = server(&clock);
    assert_true(inproc_expect(s, "HSET k f v", "1"));
    breaker__redis_inproc_refuse(s, BREAKER__INPROC_REFUSE_OOM);
    assert_true(
        inproc_expect(s, "HSET k g v", "-OOM command not allowed when used memory > 'maxmemory'."));
    assert_true(inproc_expect(s, "HGET k f", "v"));
    assert_true(inproc_expect(s, "DEL k", "1")); /* a write that frees */
    const char *first[] = {"EVAL", "return redis.pcall('HSET', 'k', 'f', 'v')", "0"};
    const char *later[] = {"EVAL",
                           "redis.call('DEL', 'x') return redis.call('HSET', 'k', 'f', 'v')", "0"};
    breaker_redis_reply *r = inproc_runv(s, 3, first);
    assert_int_equal(r->type, BREAKER_REDIS_REPLY_ERROR);
    assert_string_equal(r->str, "OOM command not allowed when used memory > 'maxmemory'.");
    breaker_redis_reply_free(r);
    r = inproc_runv(s, 3, later);
    assert_int_equal(r->type, BREAKER_REDIS_REPLY_INTEGER);
    breaker_redis_reply_free(r);
    breaker__redis_inproc_refuse(s, BREAKER__INPROC_REFUSE_READONLY);
    assert_true(
        inproc_expect(s, "DEL k", "-READONLY You can't write against a read only replica."));
    assert_true(inproc_expect(s, "HGET k f", "v"));
    r = inproc_runv(s, 3, later);
    assert_int_equal(r->type, BREAKER_REDIS_REPLY_ERROR);
    assert_non_null(
        strstr(r->str, "READONLY You can't write against a read only replica. script: "));
    breaker_redis_reply_free(r);
    struct breaker__redis_inproc_stats st;
    breaker__redis_inproc_stats(s, &st);
    assert_int_equal(st.refused, 4);
    breaker__redis_inproc_refuse(s, BREAKER__INPROC_REFUSE_NONE);
    assert_true(inproc_expect(s, "DEL k", "1"));
    breaker__redis_inproc_destroy(s);
}

/* ---- Scripts --------------------------------------------------------------------------- */

static void globals_are_read_only_as_in_redis(void **state) {
    (void)state;
    uint64_t clock = EPOCH_NS;
    struct breaker__redis_inproc *s = server(&clock);
    static const struct {
        const char *script, *want_prefix;
    } cases[] = {
        {"x = 1", "ERR user_script:1: Attempt to modify a readonly table script: "},
        {"return y", "ERR user_script:1: Script attempted to access nonexistent global variable "
                     "'y' script: "},
        {"string.foo = 1", "ERR user_script:1: Attempt to modify a readonly table script: "},
        {"rawset(_G, 'x', 1)", "ERR Attempt to modify a readonly table script: "},
        {"setmetatable(_G, nil)", "ERR Attempt to modify a readonly table script: "},
        {"return print", "ERR user_script:1: Script attempted to access nonexistent global "
                         "variable 'print' script: "},
        {"loadstring('z = 2')()", "ERR [string \"z = 2\"]:1: Attempt to modify a readonly table "
                                  "script: "},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *argv[] = {"EVAL", cases[i].script, "0"};
        breaker_redis_reply *r = inproc_runv(s, 3, argv);
        assert_int_equal(r->type, BREAKER_REDIS_REPLY_ERROR);
        if (strncmp(r->str, cases[i].want_prefix, strlen(cases[i].want_prefix)) != 0)
            fail_msg("%s: %s", cases[i].script, r->str);
        breaker_redis_reply_free(r);
    }
    /* Locals and tables of the script's own are free. */
    const char *ok[] = {"EVAL", "local t = {} t.a = 1 KEYS[2] = 'x' return {t.a, KEYS[2]}", "0"};
    breaker_redis_reply *r = inproc_runv(s, 3, ok);
    char text[64];
    reply_text(r, text, sizeof text);
    assert_string_equal(text, "[1, x]");
    breaker_redis_reply_free(r);
    breaker__redis_inproc_destroy(s);
}

/* A script that never ends is stopped (no run waits without a bound), and
 * the server goes on. */
static void a_script_that_never_ends_is_stopped(void **state) {
    (void)state;
    uint64_t clock = EPOCH_NS;
    struct breaker__redis_inproc *s = server(&clock);
    breaker__redis_inproc_set_script_limit(s, 1000000);
    const char *spin[] = {"EVAL", "while true do pcall(function() end) end", "0"};
    breaker_redis_reply *r = inproc_runv(s, 3, spin);
    assert_int_equal(r->type, BREAKER_REDIS_REPLY_ERROR);
    assert_non_null(strstr(r->str, "stopped the script after"));
    breaker_redis_reply_free(r);
    assert_true(inproc_expect(s, "PING", "+PONG"));
    const char *one[] = {"EVAL", "return 1", "0"};
    r = inproc_runv(s, 3, one);
    assert_int_equal(r->integer, 1);
    breaker_redis_reply_free(r);
    breaker__redis_inproc_destroy(s);
}

/* ---- Listing order and HSCAN ------------------------------------------------------------- */

static void listings_follow_the_order_asked(void **state) {
    (void)state;
    uint64_t clock = EPOCH_NS;
    struct breaker__redis_inproc *s = server(&clock);
    assert_true(inproc_expect(s, "HSET h a 1 b 2 c 3", "3"));
    assert_true(inproc_expect(s, "HDEL h b", "1"));
    assert_true(inproc_expect(s, "HSET h b 4 a 5", "1"));
    assert_true(inproc_expect(s, "HGETALL h", "[a, 5, c, 3, b, 4]"));
    assert_true(inproc_expect(s, "HSCAN h 0", "[0, [a, 5, c, 3, b, 4]]"));
    breaker__redis_inproc_set_order(s, BREAKER__INPROC_ORDER_REVERSED);
    assert_true(inproc_expect(s, "HGETALL h", "[b, 4, c, 3, a, 5]"));
    assert_true(inproc_expect(s, "HKEYS h", "[b, c, a]"));
    breaker__redis_inproc_destroy(s);
}

/* A big hash (past 128 fields) is scanned in pages; a field there for the
 * whole scan comes exactly once, in either order, while fields are deleted
 * and added between pages. */
static void hscan_pages_return_every_lasting_field_once(void **state) {
    (void)state;
    for (int order = 0; order < 2; order++) {
        uint64_t clock = EPOCH_NS;
        struct breaker__redis_inproc *s = server(&clock);
        breaker__redis_inproc_set_order(s, order);
        char line[128];
        for (int i = 0; i < 300; i++) {
            snprintf(line, sizeof line, "HSET big f%03d %d", i, i);
            breaker_redis_reply_free(inproc_run(s, line));
        }
        int seen[300] = {0};
        char cursor[32] = "0";
        int pages = 0, added = 0;
        do {
            snprintf(line, sizeof line, "HSCAN big %s COUNT 16", cursor);
            breaker_redis_reply *r = inproc_run(s, line);
            assert_int_equal(r->type, BREAKER_REDIS_REPLY_ARRAY);
            snprintf(cursor, sizeof cursor, "%s", r->element[0]->str);
            const breaker_redis_reply *items = r->element[1];
            assert_true(items->elements <= 32);
            for (size_t i = 0; i < items->elements; i += 2) {
                if (items->element[i]->str[0] == 'f') seen[atoi(items->element[i]->str + 1)]++;
            }
            breaker_redis_reply_free(r);
            /* Between pages: odd fields >= 250 go, new ones come. */
            snprintf(line, sizeof line, "HDEL big f%03d", 251 + 2 * (pages % 24));
            breaker_redis_reply_free(inproc_run(s, line));
            snprintf(line, sizeof line, "HSET big n%d x", added++);
            breaker_redis_reply_free(inproc_run(s, line));
            pages++;
        } while (strcmp(cursor, "0") != 0 && pages < 1000);
        for (int f = 0; f < 250; f++)
            if (seen[f] != 1) fail_msg("order %d: field f%03d seen %d times", order, f, seen[f]);
        assert_true(pages >= 300 / 16);
        breaker__redis_inproc_destroy(s);
    }
}

/* ---- Reads for invariant checks ------------------------------------------------------- */

static int count_fields(void *ctx, const char *f, size_t fl, const char *v, size_t vl) {
    (void)f;
    (void)fl;
    (void)v;
    (void)vl;
    (*(int *)ctx)++;
    return 0;
}

static int sum_scores(void *ctx, const char *m, size_t len, double score) {
    (void)m;
    (void)len;
    *(double *)ctx += score;
    return 0;
}

static void reads_see_what_a_command_sees_and_change_nothing(void **state) {
    (void)state;
    uint64_t clock = EPOCH_NS;
    struct breaker__redis_inproc *s = server(&clock);
    assert_true(inproc_expect(s, "HSET h a 1 b 2", "2"));
    assert_true(inproc_expect(s, "ZADD z 1 x 2.5 y", "2"));
    assert_true(inproc_expect(s, "PEXPIRE h 100", "1"));
    struct breaker__redis_inproc_stats before, after;
    breaker__redis_inproc_stats(s, &before);
    size_t len = 0;
    assert_string_equal(breaker__redis_inproc_hget(s, "h", "b", &len), "2");
    assert_int_equal(len, 1);
    assert_null(breaker__redis_inproc_hget(s, "h", "c", NULL));
    assert_null(breaker__redis_inproc_hget(s, "z", "x", NULL));
    assert_string_equal(breaker__redis_inproc_type(s, "z"), "zset");
    int fields = 0;
    assert_int_equal(breaker__redis_inproc_hash_each(s, "h", count_fields, &fields), 2);
    assert_int_equal(fields, 2);
    double sum = 0;
    assert_int_equal(breaker__redis_inproc_zset_each(s, "z", sum_scores, &sum), 2);
    assert_true(sum == 3.5);
    clock += 101 * MS; /* h is past its deadline: absent to reads, not deleted by them */
    assert_string_equal(breaker__redis_inproc_type(s, "h"), "none");
    assert_null(breaker__redis_inproc_hget(s, "h", "a", NULL));
    breaker__redis_inproc_stats(s, &after);
    assert_memory_equal(&before, &after, sizeof before);
    assert_true(inproc_expect(s, "DBSIZE", "2")); /* not reclaimed yet, as in Redis */
    assert_true(inproc_expect(s, "EXISTS h", "0"));
    assert_true(inproc_expect(s, "DBSIZE", "1"));
    breaker__redis_inproc_destroy(s);
}

/* ---- The fleet's scripts ------------------------------------------------------------------ */

/* The same workload of the fleet's scripts (tests/support/fleet_workload.h)
 * on two servers, one listing in insertion order and one in reverse: the
 * scripts must not depend on the order, so every reply and the keyspace
 * after every step are the same. And a third server, in insertion order
 * again, replays the run exactly (the server is deterministic). */
static void the_fleet_scripts_answer_the_same_in_either_order(void **state) {
    (void)state;
    uint64_t steps = 1500, scripts = 0;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        struct fleet_workload *w = fleet_workload_create(seed);
        assert_non_null(w);
        uint64_t clock = fleet_workload_clock_ns(w);
        struct breaker__redis_inproc *srv[3] = {server(&clock), server(&clock), server(&clock)};
        breaker__redis_inproc_set_order(srv[1], BREAKER__INPROC_ORDER_REVERSED);
        for (uint64_t i = 0; i < steps; i++) {
            struct fleet_op op;
            fleet_workload_next(w, &op);
            clock = fleet_workload_clock_ns(w);
            if (op.kind == FLEET_OP_RESTART) {
                for (int k = 0; k < 3; k++)
                    breaker__redis_inproc_restart(srv[k]);
                continue;
            }
            if (op.argc == 0) continue;
            breaker_redis_reply *r[3];
            for (int k = 0; k < 3; k++) {
                r[k] = breaker__redis_inproc_command(srv[k], op.argc, op.argv, op.argvlen);
                assert_non_null(r[k]);
            }
            char why[512];
            for (int k = 1; k < 3; k++)
                if (!fleet_reply_equal(r[0], r[k], why, sizeof why))
                    fail_msg("seed %" PRIu64 " step %" PRIu64 " (%s), server %d: %s", seed, i,
                             op.desc, k, why);
            fleet_workload_answered(w, &op, r[0]);
            for (int k = 0; k < 3; k++)
                breaker_redis_reply_free(r[k]);
            for (int k = 1; k < 3; k++)
                if (!fleet_keyspace_equal(w, srv[0], srv[k], why, sizeof why))
                    fail_msg("seed %" PRIu64 " step %" PRIu64 " (%s), server %d: %s", seed, i,
                             op.desc, k, why);
        }
        struct breaker__redis_inproc_stats st;
        breaker__redis_inproc_stats(srv[0], &st);
        scripts += st.scripts;
        for (int k = 0; k < 3; k++)
            breaker__redis_inproc_destroy(srv[k]);
        fleet_workload_destroy(w);
    }
    printf("fleet scripts in both orders: %" PRIu64 " scripts run on each server\n", scripts);
    assert_true(scripts > 3 * steps / 2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sha1_matches_the_fips_examples_and_every_padding_boundary),
        cmocka_unit_test(time_is_the_injected_clock),
        cmocka_unit_test(keys_expire_on_the_injected_clock_and_only_there),
        cmocka_unit_test(two_servers_share_nothing),
        cmocka_unit_test(a_restart_forgets_keys_and_scripts_flushall_only_keys),
        cmocka_unit_test(refusals_answer_as_a_full_redis_or_a_replica_does),
        cmocka_unit_test(globals_are_read_only_as_in_redis),
        cmocka_unit_test(a_script_that_never_ends_is_stopped),
        cmocka_unit_test(listings_follow_the_order_asked),
        cmocka_unit_test(hscan_pages_return_every_lasting_field_once),
        cmocka_unit_test(reads_see_what_a_command_sees_and_change_nothing),
        cmocka_unit_test(the_fleet_scripts_answer_the_same_in_either_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
