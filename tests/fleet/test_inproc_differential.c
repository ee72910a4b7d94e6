/* SPDX-License-Identifier: MIT */
/*
 * test_inproc_differential.c - the in-process Redis (src/store/redis/inproc/)
 * against a real redis-server on the fleet's real scripts: seeded random
 * sequences of what hosts and operators do (tests/support/fleet_workload.h:
 * flushes, state reads, lease requests and releases, orders, shadow mode,
 * limits changes, FLUSHALL, deleted and corrupted state, restarts, the clock
 * moving onto the scripts' edges) go to both, every reply must be the same
 * byte for byte, and after every step so must the keyspaces (every key, its
 * type, a hash's fields and values, a sorted set's members and scores, and
 * whether it has an expiry). Half the sequences list hashes in reverse on
 * the in-process side: the scripts must not depend on the order.
 *
 * Scripts go as the client sends them: EVALSHA, and EVAL after a NOSCRIPT
 * (both servers must agree on NOSCRIPT: after a restart or SCRIPT FLUSH).
 *
 * Time. The real server's clock cannot be set, and a comparison that
 * depended on how long a call took would flake on a loaded machine. So on
 * the real server the scripts run with their one TIME call replaced by a
 * read of the test's clock from a hash (with_test_clock(): the replacement
 * is the only change, on the same line, so error positions stay), and the
 * in-process server runs the scripts as they are, its clock the test's.
 * Both decide on the same microsecond. A script error names the script by
 * its SHA-1, which differs with the text: the real one's name is mapped to
 * the in-process one's before comparing.
 *
 * Keys expire on the real server's own clock (an hour: never within the
 * test) and on the test's clock in the in-process one; when the test's
 * clock passes a key's deadline, the key must be gone from the in-process
 * server (checked), and the test deletes it from the real one too.
 *
 * A failure prints the seed, the last steps and a line to replay it:
 * BREAKER_DIFF_SEED=s BREAKER_DIFF_ORDER=o BREAKER_DIFF_STEPS=n.
 */
#define _POSIX_C_SOURCE 200809L

#include "fleet_workload.h"
#include "real_side.h"
#include "redis_server.h"
#include "store/redis/inproc/engine.h"
#include "test_util.h"

#include "common/splitmix.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LOG_LINES   16
#define MAX_KEYS    64
#define MAX_RESTART 1 /* real restarts per sequence (each costs a server start) */

#define TIME_CALL       "redis.call('TIME')"
#define TEST_CLOCK_KEY  "breaker:test:clock"
#define TEST_CLOCK_CALL "redis.call('HMGET', '" TEST_CLOCK_KEY "', 's', 'u')"

static struct test_redis server;
static redisContext *conn;

/* Each script's text and name on each side: [0] the in-process server's
 * (as written), [1] the real server's (on the test's clock). */
static char *text[WL_SCRIPT_COUNT][2];
static char sha[WL_SCRIPT_COUNT][2][41];

/* `script` with its one TIME call replaced by the test's clock, or NULL
 * when it does not read TIME exactly once (then this test must change). */
static char *with_test_clock(const char *script) {
    const char *at = strstr(script, TIME_CALL);
    if (at == NULL || strstr(at + 1, TIME_CALL) != NULL) {
        fprintf(stderr, "the scripts no longer read TIME exactly once: update this test\n");
        return NULL;
    }
    size_t head = (size_t)(at - script), tail = strlen(at + strlen(TIME_CALL));
    char *s = malloc(head + strlen(TEST_CLOCK_CALL) + tail + 1);
    if (s == NULL) return NULL;
    memcpy(s, script, head);
    memcpy(s + head, TEST_CLOCK_CALL, strlen(TEST_CLOCK_CALL));
    memcpy(s + head + strlen(TEST_CLOCK_CALL), at + strlen(TIME_CALL), tail + 1);
    return s;
}

/* ---- A sequence -------------------------------------------------------------------- */

struct deadline {
    char key[160];
    int64_t at_ms; /* on the test's clock; -1 none */
};

struct run {
    uint64_t seed, step, steps;
    int order;
    struct fleet_workload *w;
    struct breaker__redis_inproc *inproc;
    uint64_t clock_ns;
    struct fleet_side real_side, inproc_side;
    struct deadline deadlines[MAX_KEYS];
    int ndeadlines;
    int restarts;
    char log[LOG_LINES][200];
};

static struct run *current;

/* What the sequences compared, in all (printed, and some asserted: each
 * kind of comparison must have happened). */
static struct {
    uint64_t sequences, steps, scripts, script_errors, noscript, commands, expired, restarts;
} total;

static void note(struct run *r, const char *what) {
    snprintf(r->log[r->step % LOG_LINES], sizeof r->log[0], "%s", what);
}

static void diverged(struct run *r, const char *fmt, ...) {
    char what[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    fprintf(stderr, "seed %" PRIu64 ", order %d, step %" PRIu64 ":\n", r->seed, r->order, r->step);
    uint64_t from = r->step + 1 > LOG_LINES ? r->step + 1 - LOG_LINES : 0;
    for (uint64_t i = from; i <= r->step; i++)
        fprintf(stderr, "  %6" PRIu64 " %s\n", i, r->log[i % LOG_LINES]);
    fprintf(stderr,
            "replay: BREAKER_DIFF_SEED=%" PRIu64
            " BREAKER_DIFF_ORDER=%d BREAKER_DIFF_STEPS=%" PRIu64 " ./test_inproc_differential\n",
            r->seed, r->order, r->step + 1);
    fail_msg("%s", what);
}

static uint64_t clock_read(void *ctx) { return ((struct run *)ctx)->clock_ns; }

static breaker_redis_reply *inproc_run(void *ctx, int argc, const char *const *argv,
                                       const size_t *argvlen) {
    return breaker__redis_inproc_command(ctx, argc, argv, argvlen);
}

static breaker_redis_reply *on_real(struct run *r, int argc, const char *const *argv) {
    size_t len[8];
    for (int i = 0; i < argc; i++)
        len[i] = strlen(argv[i]);
    return r->real_side.run(r->real_side.ctx, argc, argv, len);
}

/* The real script's name in an error becomes the in-process one's. */
static void map_names(breaker_redis_reply *rep) {
    if (rep->type == BREAKER_REDIS_REPLY_ARRAY) {
        for (size_t i = 0; i < rep->elements; i++)
            map_names(rep->element[i]);
        return;
    }
    if (rep->str == NULL) return;
    for (int s = 0; s < WL_SCRIPT_COUNT; s++)
        for (char *at = strstr(rep->str, sha[s][1]); at != NULL; at = strstr(at + 40, sha[s][1]))
            memcpy(at, sha[s][0], 40);
}

/* One script on one side as the client sends it: EVALSHA, then EVAL after
 * a NOSCRIPT. @return the reply; *noscript set when EVALSHA missed. */
static breaker_redis_reply *send_script(struct fleet_side *side, const struct fleet_op *op,
                                        int which, bool *noscript) {
    const char *argv[FLEET_OP_ARGS];
    size_t len[FLEET_OP_ARGS];
    memcpy(argv, op->argv, (size_t)op->argc * sizeof argv[0]);
    memcpy(len, op->argvlen, (size_t)op->argc * sizeof len[0]);
    argv[0] = "EVALSHA";
    len[0] = 7;
    argv[1] = sha[op->script][which];
    len[1] = 40;
    breaker_redis_reply *rep = side->run(side->ctx, op->argc, argv, len);
    *noscript = rep != NULL && breaker__reply_is_error(rep, "NOSCRIPT");
    if (!*noscript) return rep;
    breaker_redis_reply_free(rep);
    argv[0] = "EVAL";
    len[0] = 4;
    argv[1] = text[op->script][which];
    len[1] = strlen(argv[1]);
    return side->run(side->ctx, op->argc, argv, len);
}

static void compare(struct run *r, const char *what, breaker_redis_reply *real,
                    breaker_redis_reply *mine) {
    char why[600];
    if (real == NULL || mine == NULL) diverged(r, "%s: out of memory", what);
    if (!fleet_reply_equal(real, mine, why, sizeof why))
        diverged(r, "%s: redis and in-process differ: %s", what, why);
}

static void run_script(struct run *r, const struct fleet_op *op) {
    /* The real server's clock: the test's, in a hash its scripts read. */
    char sec[24], usec[24];
    snprintf(sec, sizeof sec, "%" PRIu64, r->clock_ns / 1000000000u);
    snprintf(usec, sizeof usec, "%" PRIu64, r->clock_ns / 1000u % 1000000u);
    const char *set[] = {"HSET", TEST_CLOCK_KEY, "s", sec, "u", usec};
    breaker_redis_reply_free(on_real(r, 6, set));
    bool real_missed, mine_missed;
    breaker_redis_reply *real = send_script(&r->real_side, op, 1, &real_missed);
    breaker_redis_reply *mine = send_script(&r->inproc_side, op, 0, &mine_missed);
    if (real_missed != mine_missed)
        diverged(r, "EVALSHA: NOSCRIPT from redis %d (%s), in-process %d (%s)", real_missed,
                 real->type == BREAKER_REDIS_REPLY_ERROR ? real->str : "an answer", mine_missed,
                 mine->type == BREAKER_REDIS_REPLY_ERROR ? mine->str : "an answer");
    map_names(real);
    compare(r, op->desc, real, mine);
    total.scripts++;
    total.noscript += mine_missed;
    total.script_errors += mine->type == BREAKER_REDIS_REPLY_ERROR;
    fleet_workload_answered(r->w, op, mine);
    breaker_redis_reply_free(real);
    breaker_redis_reply_free(mine);
}

static void run_command(struct run *r, const struct fleet_op *op) {
    breaker_redis_reply *real = r->real_side.run(r->real_side.ctx, op->argc, op->argv, op->argvlen);
    breaker_redis_reply *mine =
        r->inproc_side.run(r->inproc_side.ctx, op->argc, op->argv, op->argvlen);
    compare(r, op->desc, real, mine);
    total.commands++;
    fleet_workload_answered(r->w, op, mine);
    breaker_redis_reply_free(real);
    breaker_redis_reply_free(mine);
}

/* Both servers restarted empty: the real one for real (up to MAX_RESTART
 * times a sequence), else emptied and its scripts flushed, which is what
 * a client sees of a restart. */
static void restart(struct run *r) {
    if (r->restarts < MAX_RESTART) {
        redisFree(conn);
        if (test_redis_restart(&server) != 0) diverged(r, "redis-server did not start again");
        conn = real_side_connect(server.port);
        r->real_side.ctx = conn;
        r->restarts++;
        total.restarts++;
    } else {
        const char *flushall[] = {"FLUSHALL"};
        const char *flush[] = {"SCRIPT", "FLUSH"};
        breaker_redis_reply_free(on_real(r, 1, flushall));
        breaker_redis_reply_free(on_real(r, 2, flush));
    }
    breaker__redis_inproc_restart(r->inproc);
    breaker__redis_inproc_set_order(r->inproc, r->order);
    r->ndeadlines = 0;
}

/* ---- Expiry on the test's clock --------------------------------------------------- */

/* After the clock moved: every key whose deadline passed must be gone
 * from the in-process server (and is then deleted from the real one);
 * every other must still be there. */
static void expire_on_real(struct run *r) {
    int64_t now_ms = (int64_t)(r->clock_ns / 1000000u);
    for (int i = 0; i < r->ndeadlines; i++) {
        struct deadline *d = &r->deadlines[i];
        bool due = d->at_ms >= 0 && now_ms > d->at_ms;
        bool gone = breaker__redis_inproc_pttl(r->inproc, d->key) == -2;
        if (due != gone)
            diverged(r, "%s: deadline %" PRId64 " ms, clock %" PRId64 " ms, in-process: %s", d->key,
                     d->at_ms, now_ms, gone ? "gone" : "still there");
        if (due) {
            const char *del[] = {"DEL", d->key};
            breaker_redis_reply_free(on_real(r, 2, del));
            total.expired++;
        }
    }
}

/* Every key's deadline now (from the in-process server), for the next
 * clock move. */
static void note_deadlines(struct run *r) {
    const char *keys[] = {"KEYS", "*"};
    size_t len[] = {4, 1};
    breaker_redis_reply *k = breaker__redis_inproc_command(r->inproc, 2, keys, len);
    if (k == NULL) diverged(r, "out of memory");
    int64_t now_ms = (int64_t)(r->clock_ns / 1000000u);
    r->ndeadlines = 0;
    for (size_t i = 0; i < k->elements && r->ndeadlines < MAX_KEYS; i++) {
        struct deadline *d = &r->deadlines[r->ndeadlines++];
        snprintf(d->key, sizeof d->key, "%s", k->element[i]->str);
        long long pttl = breaker__redis_inproc_pttl(r->inproc, d->key);
        d->at_ms = pttl < 0 ? -1 : now_ms + pttl;
    }
    breaker_redis_reply_free(k);
}

/* ---- The sequences ------------------------------------------------------------------ */

static void free_run(void) {
    if (current == NULL) return;
    breaker__redis_inproc_destroy(current->inproc);
    fleet_workload_destroy(current->w);
    free(current);
    current = NULL;
}

static void run_sequence(uint64_t seed, int order, uint64_t steps) {
    struct run *r = current = calloc(1, sizeof *r);
    assert_non_null(r);
    r->seed = seed;
    r->order = order;
    r->w = fleet_workload_create(seed);
    assert_non_null(r->w);
    r->clock_ns = fleet_workload_clock_ns(r->w);
    r->inproc = breaker__redis_inproc_create(clock_read, r);
    assert_non_null(r->inproc);
    breaker__redis_inproc_set_order(r->inproc, order);
    r->real_side = (struct fleet_side){.name = "redis", .run = real_side_run, .ctx = conn};
    r->inproc_side = (struct fleet_side){.name = "in-process", .run = inproc_run, .ctx = r->inproc};
    /* The real server as the new in-process one: empty, no script known. */
    const char *flushall[] = {"FLUSHALL"}, *flush[] = {"SCRIPT", "FLUSH"};
    breaker_redis_reply_free(on_real(r, 1, flushall));
    breaker_redis_reply_free(on_real(r, 2, flush));
    for (r->step = 0; r->step < steps; r->step++) {
        struct fleet_op op;
        fleet_workload_next(r->w, &op);
        r->clock_ns = fleet_workload_clock_ns(r->w);
        note(r, op.desc);
        switch (op.kind) {
        case FLEET_OP_SCRIPT:
            run_script(r, &op);
            break;
        case FLEET_OP_COMMAND:
            run_command(r, &op);
            break;
        case FLEET_OP_CLOCK:
            expire_on_real(r);
            break;
        case FLEET_OP_RESTART:
            restart(r);
            break;
        default:
            break;
        }
        char why[600];
        if (!fleet_sides_equal(&r->real_side, &r->inproc_side, why, sizeof why))
            diverged(r, "the keyspaces differ: %s", why);
        note_deadlines(r);
        total.steps++;
    }
    total.sequences++;
    free_run();
}

static uint64_t env_u64(const char *name, uint64_t dflt) {
    const char *v = getenv(name);
    return v != NULL && *v != '\0' ? strtoull(v, NULL, 0) : dflt;
}

static void the_in_process_redis_runs_the_scripts_as_redis_does(void **state) {
    (void)state;
    uint64_t steps = env_u64("BREAKER_DIFF_STEPS", 400);
    uint64_t only = env_u64("BREAKER_DIFF_SEED", 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (only != 0) {
        run_sequence(only, (int)env_u64("BREAKER_DIFF_ORDER", 0), steps);
    } else {
        for (uint64_t s = 1; s <= 8; s++)
            run_sequence(breaker__splitmix64(0x1a5e + s), (int)(s % 2), steps);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("in-process against redis-server: %" PRIu64 " sequences, %" PRIu64 " steps, %" PRIu64
           " scripts (%" PRIu64 " errors, %" PRIu64 " after NOSCRIPT), %" PRIu64
           " other commands, %" PRIu64 " keys expired, %" PRIu64 " restarts, in %.1f s\n",
           total.sequences, total.steps, total.scripts, total.script_errors, total.noscript,
           total.commands, total.expired, total.restarts, took);
    /* Each kind of comparison happened (a test that cannot fail proves
     * nothing): script errors, NOSCRIPT and expiry included. */
    assert_true(total.scripts > total.steps / 3);
    assert_true(total.script_errors > 0);
    if (only == 0) {
        assert_true(total.noscript > 0);
        assert_true(total.expired > 0);
    }
}

static int setup(void **state) {
    (void)state;
    if (test_redis_start(&server) != 0) return -1;
    conn = real_side_connect(server.port);
    for (int s = 0; s < WL_SCRIPT_COUNT; s++) {
        text[s][0] = strdup(fleet_workload_script(s));
        text[s][1] = with_test_clock(fleet_workload_script(s));
        if (text[s][0] == NULL || text[s][1] == NULL) return -1;
        for (int k = 0; k < 2; k++)
            breaker__sha1_hex(text[s][k], strlen(text[s][k]), sha[s][k]);
    }
    return 0;
}

static int teardown(void **state) {
    (void)state;
    free_run();
    for (int s = 0; s < WL_SCRIPT_COUNT; s++)
        for (int k = 0; k < 2; k++)
            free(text[s][k]);
    if (conn != NULL) redisFree(conn);
    test_redis_stop(&server);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_in_process_redis_runs_the_scripts_as_redis_does),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
