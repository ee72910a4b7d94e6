/* SPDX-License-Identifier: MIT */
/*
 * test_fleet_differential.c - the simulator's server half of the fleet
 * store (tools/sim/fleet_server.c) against the real scripts (src/store/redis/
 * scripts.c) on a real redis-server, call for call.
 *
 * Random sequences (seeded; the seed, the step and the last operations are
 * printed on a failure) of what hosts do: flushes with random deltas and
 * known generations, reads of the fleet state (a healthy host's round:
 * the same fields on both, read into the same answer), lease requests, releases with results (for
 * the lease's generation, for any, for a wrong one), flushes sent again unchanged (a round retried
 * after a cut connection: its deltas count once) or with a sequence older than the host's last,
 * lease holders killed (never released: their deadline passes), releases of leases nobody holds,
 * Redis emptied (FLUSHALL, or a real restart), a name's state deleted, and the clock moved (a
 * little, a lot, or onto the edges the scripts compare against: the end of an open wait, a lease
 * deadline, a window bucket's start, an order's end). Operators' orders (open, closed, reset;
 * with a time or without, some expiring, some refused: a time or a text out of range) and flushes
 * that carry a host's server-directed wait (ARGV 12: within open_max, beyond it, refused) go to
 * both too. Every call goes to both; every answer (state, generation, wait, k, successes,
 * verdict, the trip's evidence, born, and the order part: kind, time left, sequence, who, why)
 * must be equal, and after every step so must every name's stored state, order, limits and
 * hosts' flush sequences.
 *
 * Where the model differs on purpose (tools/sim/fleet_server.h): it has no shadow or reconfig
 * script (nothing here calls them, so Redis's answers carry no controls part either), it keeps
 * no reason (`why`) field, and it cannot hold order fields out of range (no corruption of them
 * is compared).
 *
 * Time. The scripts read Redis's clock (TIME), which a test cannot set, and
 * a comparison that depended on how long a call took would flake on a
 * loaded machine. So the scripts run here with that one call replaced: the
 * test's clock, written into a hash before each call, is read in the same
 * shape ({seconds, microseconds}). with_test_clock() checks that the
 * replacement is the scripts' only change. Both sides then decide on the
 * same microsecond, and the comparison is exact: waits included.
 * Keys still expire on Redis's own clock: their TTL (an hour) outlasts the
 * test.
 */
#define _POSIX_C_SOURCE 200809L

#include "../../tools/sim/fleet_server.h"
#include "common/splitmix.h"
#include "store/redis/protocol.h"
#include "store/redis/scripts.h"
#include "redis_server.h"
#include "test_util.h"

#include <hiredis/hiredis.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HOSTS       3
#define NAMES       3
#define MAX_HELD    32
#define LOG_LINES   16
#define TTL_NS      (3600 * SEC)
#define MAX_RESTART 1 /* real restarts per sequence (each costs a server start) */

static const char *const answer_field[ANS_COUNT] = {
    "state", "gen", "wait_us", "k", "successes", "verdict", "calls", "failures", "slow", "born"};

/* ---- The scripts, on the test's clock ----------------------------------------- */

#define TIME_CALL       "redis.call('TIME')"
#define TEST_CLOCK_CALL "redis.call('HMGET', 'breaker:test:clock', 's', 'u')"

static char *scripts[FLEET_SCRIPT_COUNT];
static char *order_script;

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

/* ---- The world ---------------------------------------------------------------- */

static struct test_redis server;
static redisContext *ctx;
static uint64_t clock_us; /* the test's clock: Redis's and the model's */

static uint64_t model_clock(void *c) {
    (void)c;
    return clock_us * 1000;
}

struct name {
    const char *name;
    char key[FLEET_KEY_COUNT][BREAKER__FLEET_KEY_LEN];
    char limits[HOSTS][BREAKER__FLEET_LIMITS_LEN]; /* what each host sends */
    struct breaker__fleet_limits lim;              /* the first host's */
};

/* One host's view of one name: the client's protocol state, and a stand-in
 * for its local breaker that the decided transitions move. */
struct view {
    struct breaker__fleet_follow follow;
    struct breaker__fleet_local local;
    uint64_t gate_until_ns;
    uint64_t seq;                    /* the last flush call's sequence */
    struct breaker__fleet_call last; /* that call, to send again */
    bool has_last;
};

struct held {
    int host, name;
    uint64_t token, gen;
};

struct run {
    uint64_t seed, rng, step;
    struct fleet_server *model;
    struct name names[NAMES];
    struct view views[HOSTS][NAMES];
    char host_id[HOSTS][17];
    struct held held[MAX_HELD];
    int held_count;
    uint64_t tokens;
    int restarts;
    char log[LOG_LINES][160];
};

static uint64_t rnd(struct run *r, uint64_t n) {
    return n == 0 ? 0 : breaker__splitmix64_next(&r->rng) % n;
}

static void note(struct run *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->log[r->step % LOG_LINES], sizeof r->log[0], fmt, ap);
    va_end(ap);
}

/* Print the seed and the last operations, then fail. */
static void diverged(struct run *r, const char *fmt, ...) {
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    fprintf(stderr, "seed %" PRIu64 " (BREAKER_DIFF_SEED=%" PRIu64 "), step %" PRIu64 ":\n",
            r->seed, r->seed, r->step);
    uint64_t from = r->step + 1 > LOG_LINES ? r->step + 1 - LOG_LINES : 0;
    for (uint64_t i = from; i <= r->step; i++)
        fprintf(stderr, "  %6" PRIu64 " %s\n", i, r->log[i % LOG_LINES]);
    fail_msg("%s", what);
}

static void connect_ctx(void) {
    if (ctx != NULL) redisFree(ctx);
    struct timeval tv = {.tv_sec = 10, .tv_usec = 0}; /* generous: a loaded machine */
    ctx = redisConnectWithTimeout("127.0.0.1", server.port, tv);
    if (ctx == NULL || ctx->err) fail_msg("connect: %s", ctx ? ctx->errstr : "out of memory");
    assert_int_equal(redisSetTimeout(ctx, tv), REDIS_OK);
}

static redisReply *command(struct run *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *rep = redisvCommand(ctx, fmt, ap);
    va_end(ap);
    if (rep == NULL) diverged(r, "redis: %s", ctx->errstr);
    return rep;
}

/* `script` on Redis for `n`, at the test's clock, with `args` after the
 * TTL and the limits. @return 0 with the answer and its order part, or -1
 * for a script error. */
static int redis_eval(struct run *r, const struct name *n, const char *limits, const char *script,
                      const char *const *args, int nargs, int64_t ans[ANS_COUNT],
                      struct fleet_answer_order *order) {
    freeReplyObject(command(r, "HSET breaker:test:clock s %" PRIu64 " u %" PRIu64,
                            clock_us / 1000000, clock_us % 1000000));
    char ttl[24];
    breaker__fleet_ttl_text(TTL_NS, ttl);
    const char *argv[5 + FLEET_KEY_COUNT + BREAKER__FLEET_CALL_ARGS];
    int argc = 0;
    argv[argc++] = "EVAL";
    argv[argc++] = script;
    argv[argc++] = BREAKER__FLEET_KEY_COUNT_TEXT;
    for (int i = 0; i < FLEET_KEY_COUNT; i++)
        argv[argc++] = n->key[i];
    argv[argc++] = ttl;
    argv[argc++] = limits;
    for (int i = 0; i < nargs; i++)
        argv[argc++] = args[i];
    redisReply *rep = redisCommandArgv(ctx, argc, argv, NULL);
    if (rep == NULL) diverged(r, "redis: %s", ctx->errstr);
    int rc = 0;
    memset(order, 0, sizeof *order);
    if (rep->type == REDIS_REPLY_ERROR) {
        rc = -1;
    } else if (rep->type != REDIS_REPLY_ARRAY ||
               (rep->elements != ANS_COUNT && rep->elements != ANS_WITH_ORDER)) {
        diverged(r, "redis answered something else than an answer (type %d, %zu elements)",
                 rep->type, rep->type == REDIS_REPLY_ARRAY ? rep->elements : 0);
    } else {
        for (size_t i = 0; i < ANS_COUNT; i++) {
            if (rep->element[i]->type != REDIS_REPLY_INTEGER)
                diverged(r, "answer field %s is not an integer", answer_field[i]);
            ans[i] = rep->element[i]->integer;
        }
        if (rep->elements == ANS_WITH_ORDER) {
            redisReply *const *o = rep->element + ANS_ORDER;
            for (int i = 0; i < 3; i++)
                if (o[i]->type != REDIS_REPLY_INTEGER)
                    diverged(r, "answer's order field %d is not an integer", i);
            if (o[3]->type != REDIS_REPLY_STRING || o[4]->type != REDIS_REPLY_STRING ||
                o[3]->len > BREAKER__FLEET_WHO_MAX || o[4]->len > BREAKER__FLEET_WHY_MAX)
                diverged(r, "answer's who or why is not a string of its size");
            order->present = true;
            order->kind = (int)o[0]->integer;
            order->left_us = (uint64_t)o[1]->integer;
            order->seq = (uint64_t)o[2]->integer;
            memcpy(order->who, o[3]->str, o[3]->len);
            memcpy(order->why, o[4]->str, o[4]->len);
        }
    }
    freeReplyObject(rep);
    return rc;
}

static int redis_call(struct run *r, const struct name *n, const char *limits,
                      const struct breaker__fleet_call *call, int64_t ans[ANS_COUNT],
                      struct fleet_answer_order *order) {
    const char *args[BREAKER__FLEET_CALL_ARGS];
    for (int i = 0; i < call->argc; i++)
        args[i] = call->argv[i];
    return redis_eval(r, n, limits, scripts[call->script], args, call->argc, ans, order);
}

static uint64_t orders_answered; /* answers that carried an order, in all sequences */

/* The model's answer and Redis's, and their order parts, must be equal;
 * the answer read into `out` as the client reads it. */
static void same_answers(struct run *r, const int64_t m[ANS_COUNT], const int64_t x[ANS_COUNT],
                         const struct fleet_answer_order *mo, const struct fleet_answer_order *xo,
                         struct breaker__fleet_answer *out) {
    for (int i = 0; i < ANS_COUNT; i++)
        if (m[i] != x[i])
            diverged(r, "%s: model %" PRId64 ", redis %" PRId64, answer_field[i], m[i], x[i]);
    if (mo->present != xo->present || mo->kind != xo->kind || mo->left_us != xo->left_us ||
        mo->seq != xo->seq || strcmp(mo->who, xo->who) != 0 || strcmp(mo->why, xo->why) != 0)
        diverged(r,
                 "the order part: model %d kind %d left %" PRIu64 " seq %" PRIu64
                 " who '%s' why '%s', redis %d kind %d left %" PRIu64 " seq %" PRIu64
                 " who '%s' why '%s'",
                 mo->present, mo->kind, mo->left_us, mo->seq, mo->who, mo->why, xo->present,
                 xo->kind, xo->left_us, xo->seq, xo->who, xo->why);
    if (!breaker__fleet_answer_read(m, out)) diverged(r, "an answer the client refuses");
    if (mo->present) {
        orders_answered++;
        if (!breaker__fleet_answer_order(out, mo->kind, (int64_t)mo->left_us, (int64_t)mo->seq,
                                         mo->who, strlen(mo->who), mo->why, strlen(mo->why)))
            diverged(r, "an order part the client refuses");
    }
}

/* The call on both; the answers must be the same. @return 1 with the
 * answer read, or 0 (a script error on both). */
static int both(struct run *r, int host, int ni, const struct breaker__fleet_call *call,
                struct breaker__fleet_answer *out) {
    struct name *n = &r->names[ni];
    int64_t m[ANS_COUNT], x[ANS_COUNT];
    memset(m, 0, sizeof m);
    memset(x, 0, sizeof x);
    struct fleet_answer_order mo, xo;
    memset(&mo, 0, sizeof mo);
    int mrc = fleet_server_call_order(r->model, n->name, n->limits[host], call, m, &mo);
    int xrc = redis_call(r, n, n->limits[host], call, x, &xo);
    if (mrc != xrc) diverged(r, "script error: model %d, redis %d", mrc, xrc);
    if (mrc != 0) return 0;
    same_answers(r, m, x, &mo, &xo, out);
    return 1;
}

/* What the host's client makes of an answer of a round: decided, and the
 * transition applied to the stand-in breaker (fenced as the core fences). */
static void host_decides(struct run *r, int host, int ni, const struct breaker__fleet_answer *a) {
    struct view *v = &r->views[host][ni];
    struct breaker__fleet_action act = {.kind = FLEET_ACT_NONE};
    struct breaker__fleet_gate gate;
    breaker__fleet_decide(&v->follow, a, &v->local, clock_us * 1000, &act, &gate);
    if (gate.change) v->gate_until_ns = gate.until_ns;
    struct breaker__fleet_local *l = &v->local;
    if (act.kind == FLEET_ACT_TRIP && l->gen == act.gen && l->state == BREAKER_CLOSED) {
        l->state = BREAKER_OPEN;
        l->gen++;
    } else if (act.kind == FLEET_ACT_CLOSE && l->gen == act.gen && l->state != BREAKER_CLOSED) {
        l->state = BREAKER_CLOSED;
        l->gen++;
    } else if (act.kind == FLEET_ACT_FORCE_OPEN || act.kind == FLEET_ACT_OPEN_FOR) {
        l->state = BREAKER_OPEN; /* unfenced: the operator's intent wins */
        l->gen++;
    } else if (act.kind == FLEET_ACT_FORCE_CLOSED || act.kind == FLEET_ACT_RESET) {
        l->state = BREAKER_CLOSED;
        l->gen++;
    }
}

/* ---- Operations ------------------------------------------------------------------ */

static uint64_t directed_opens; /* flushes whose directed wait opened the fleet */

static void op_flush(struct run *r, int host, int ni) {
    struct view *v = &r->views[host][ni];
    if (v->has_last && rnd(r, 6) == 0) {
        /* The round tried again after a cut connection: the same call. */
        note(r, "host %d flush %s again (seq %s)", host, r->names[ni].name, v->last.argv[6]);
        struct breaker__fleet_answer a;
        if (both(r, host, ni, &v->last, &a)) host_decides(r, host, ni, &a);
        return;
    }
    struct breaker__fleet_deltas d = {0};
    if (rnd(r, 5) != 0) {
        d.calls = rnd(r, 13);
        /* Failures from a mostly healthy or a mostly failing dependency. */
        d.failures = rnd(r, 2) ? rnd(r, d.calls / 3 + 1) : d.calls - rnd(r, d.calls / 4 + 1);
        d.slow = rnd(r, 4) == 0 ? rnd(r, d.calls + 1) : 0;
        d.run = d.failures == d.calls ? (uint32_t)(d.failures + rnd(r, 4)) : (uint32_t)rnd(r, 3);
    }
    uint64_t known = v->follow.known_gen;
    uint64_t pick = rnd(r, 20);
    if (pick == 0) known = 0;                           /* a host that knew none */
    if (pick == 1 && known > 0) known -= 1 + rnd(r, 3); /* an older one */
    struct breaker__fleet_call call;
    breaker__fleet_call_flush(&call, known, &d);
    uint64_t seq = breaker__fleet_next_seq(v->seq, clock_us / 1000 + rnd(r, 2000));
    if (rnd(r, 25) == 0 && v->seq > 0) seq = v->seq - rnd(r, 2); /* not newer: a late call */
    if (seq > v->seq) v->seq = seq;
    breaker__fleet_call_sequence(&call, r->host_id[host], seq);
    /* The host's failing-source map: none, or a few of 6 callers' bits, in
     * either half (the script splits it in two 32-bit words). */
    uint64_t map = 0;
    if (d.failures > 0 && rnd(r, 2) == 0) {
        static const unsigned bit[6] = {0, 5, 31, 32, 47, 63};
        for (unsigned k = 0, m = (unsigned)rnd(r, 4) + 1; k < m; k++)
            map |= UINT64_C(1) << bit[rnd(r, 6)];
    }
    breaker__fleet_call_sources(&call, map);
    /* Now and then a host's server-directed wait (a 429's Retry-After):
     * short, about the limits' open_max, beyond it, or beyond what the
     * script takes (refused on both). */
    uint64_t directed = 0;
    uint64_t dpick = rnd(r, 12);
    uint64_t omax = r->names[ni].lim.open_max_us;
    if (dpick == 0) directed = 1 + rnd(r, 3000000);
    if (dpick == 1) directed = omax + (uint64_t)((int64_t)rnd(r, 3) - 1);
    if (dpick == 2) directed = omax + 1 + rnd(r, 100000000);
    if (dpick == 3 && rnd(r, 8) == 0) directed = BREAKER__FLEET_MAX_DURATION_US + 1;
    breaker__fleet_call_directed(&call, directed);
    note(r, "host %d flush %s gen %s calls %s fail %s slow %s run %s seq %s map %s:%s directed %s",
         host, r->names[ni].name, call.argv[0], call.argv[1], call.argv[2], call.argv[3],
         call.argv[4], call.argv[6], call.argv[7], call.argv[8], call.argv[9]);
    v->last = call;
    v->has_last = true;
    struct fleet_name_stats before;
    uint64_t gen_before =
        fleet_server_name_stats(r->model, r->names[ni].name, &before) == 0 ? before.gen : 0;
    struct breaker__fleet_answer a;
    if (!both(r, host, ni, &call, &a)) return;
    if (directed > 0 && a.state == FLEET_OPEN && a.gen != gen_before && a.verdict == VERDICT_NONE)
        directed_opens++;
    host_decides(r, host, ni, &a);
}

static uint64_t reads, read_answers; /* in all sequences, for the summary */
static uint64_t read_checks;         /* reads checked against the script's answer */

/* A read answers what the flush script would (docs/fleet.md, "Cost"): the
 * same state, generation, wait, evidence and born as a flush without
 * deltas run at once after it, unless that script made a transition (its
 * prelude reaps a lease past its deadline: a HALF_OPEN read, the script's
 * next generation OPEN). The script's answer is not decided (the host
 * decided on the read, as the client does). */
static void read_is_the_script(struct run *r, int host, int ni,
                               const struct breaker__fleet_answer *read) {
    struct breaker__fleet_deltas d = {0};
    struct breaker__fleet_call call;
    breaker__fleet_call_flush(&call, r->views[host][ni].follow.known_gen, &d);
    struct breaker__fleet_answer a;
    note(r, "host %d flush %s without deltas (the read's check)", host, r->names[ni].name);
    if (!both(r, host, ni, &call, &a)) diverged(r, "a state the read followed, the script refused");
    if (a.gen != read->gen) {
        if (read->state != FLEET_HALF_OPEN || a.state != FLEET_OPEN || a.gen != read->gen + 1)
            diverged(r,
                     "the read answered gen %" PRIu64 " state %d, the script gen %" PRIu64
                     " state %d",
                     read->gen, read->state, a.gen, a.state);
        return;
    }
    read_checks++;
    if (a.state != read->state || a.wait_us != read->wait_us || a.k != read->k ||
        a.successes != read->successes || a.calls != read->calls || a.failures != read->failures ||
        a.slow != read->slow || a.born != read->born || a.order != read->order ||
        a.order_left_us != read->order_left_us || a.order_seq != read->order_seq)
        diverged(r,
                 "read and script differ: state %d/%d wait %" PRIu64 "/%" PRIu64
                 " k %u/%u succ %" PRIu64 "/%" PRIu64 " evidence %" PRIu64 "/%" PRIu64
                 " born %" PRIu64 "/%" PRIu64,
                 read->state, a.state, read->wait_us, a.wait_us, read->k, a.k, read->successes,
                 a.successes, read->calls, a.calls, read->born, a.born);
}

/* A healthy host's read of the fleet state (HMGET of the state hash, with
 * Redis's clock: here the test's): the same fields on both, read into the
 * same answer (or refused on both), then decided as a script's answer. */
static void op_read(struct run *r, int host, int ni) {
    struct name *n = &r->names[ni];
    char model[BREAKER__FLEET_READ_FIELDS][FLEET_SERVER_READ_LEN];
    bool present[BREAKER__FLEET_READ_FIELDS];
    fleet_server_read(r->model, n->name, model, present);
    const char *mv[BREAKER__FLEET_READ_FIELDS];
    for (int i = 0; i < BREAKER__FLEET_READ_FIELDS; i++)
        mv[i] = present[i] ? model[i] : NULL;
    const char *argv[2 + BREAKER__FLEET_READ_FIELDS];
    argv[0] = "HMGET";
    argv[1] = n->key[FLEET_KEY_STATE];
    for (int i = 0; i < BREAKER__FLEET_READ_FIELDS; i++)
        argv[2 + i] = breaker__fleet_read_fields[i];
    redisReply *rep = redisCommandArgv(ctx, 2 + BREAKER__FLEET_READ_FIELDS, argv, NULL);
    if (rep == NULL || rep->type != REDIS_REPLY_ARRAY ||
        rep->elements != BREAKER__FLEET_READ_FIELDS)
        diverged(r, "HMGET: no array");
    const char *xv[BREAKER__FLEET_READ_FIELDS];
    for (int i = 0; i < BREAKER__FLEET_READ_FIELDS; i++)
        xv[i] = rep->element[i]->type == REDIS_REPLY_STRING ? rep->element[i]->str : NULL;
    struct breaker__fleet_follow cheap = {0};
    breaker__fleet_cheap_setup(&cheap, n->limits[0], 16, 250 * MS);
    struct breaker__fleet_answer ma, xa;
    char mwhy[160] = "", xwhy[160] = "";
    uint64_t mrun = 0, xrun = 0;
    int mrc =
        breaker__fleet_read_answer(mv, clock_us, cheap.max_wait_us, &ma, &mrun, mwhy, sizeof mwhy);
    int xrc =
        breaker__fleet_read_answer(xv, clock_us, cheap.max_wait_us, &xa, &xrun, xwhy, sizeof xwhy);
    note(r, "host %d read %s: %s", host, n->name, xrc ? "an answer" : xwhy);
    if (mrc != xrc) diverged(r, "read: model %d (%s), redis %d (%s)", mrc, mwhy, xrc, xwhy);
    if (mrc && (ma.state != xa.state || ma.gen != xa.gen || ma.wait_us != xa.wait_us ||
                ma.k != xa.k || ma.successes != xa.successes || ma.verdict != xa.verdict ||
                ma.calls != xa.calls || ma.failures != xa.failures || ma.slow != xa.slow ||
                ma.born != xa.born || mrun != xrun || ma.order != xa.order ||
                ma.order_left_us != xa.order_left_us || ma.order_seq != xa.order_seq ||
                strcmp(ma.order_who, xa.order_who) != 0 || strcmp(ma.order_why, xa.order_why) != 0))
        diverged(r,
                 "read: the answers differ (state %d/%d, gen %" PRIu64 "/%" PRIu64 ", wait %" PRIu64
                 "/%" PRIu64 ")",
                 ma.state, xa.state, ma.gen, xa.gen, ma.wait_us, xa.wait_us);
    freeReplyObject(rep);
    reads++;
    read_answers += (uint64_t)mrc;
    if (mrc) host_decides(r, host, ni, &xa);
    if (mrc && rnd(r, 2) == 0) read_is_the_script(r, host, ni, &xa);
}

static void op_acquire(struct run *r, int host, int ni) {
    struct view *v = &r->views[host][ni];
    uint64_t token = breaker__splitmix64(r->seed ^ ++r->tokens);
    struct breaker__fleet_call call;
    breaker__fleet_call_acquire(&call, token);
    note(r, "host %d acquire %s token %s", host, r->names[ni].name, call.argv[0]);
    struct breaker__fleet_answer a;
    if (!both(r, host, ni, &call, &a)) return;
    int verdict = breaker__fleet_lease_verdict(&a);
    struct breaker__fleet_lease_times t = {.start_ns = clock_us * 1000,
                                           .now_ns = clock_us * 1000,
                                           .budget_ns = 25 * MS,
                                           .interval_ns = 250 * MS,
                                           .probe_timeout_ns = 30 * SEC};
    struct breaker__fleet_lease_plan plan;
    breaker__fleet_lease_settle(verdict, &a, v->follow.follows ? v->follow.followed_gen : 0, &t,
                                &plan);
    if (plan.gate.change) v->gate_until_ns = plan.gate.until_ns;
    if (plan.hold && r->held_count < MAX_HELD)
        r->held[r->held_count++] =
            (struct held){.host = host, .name = ni, .token = token, .gen = a.gen};
}

static struct held take_held(struct run *r) {
    int i = (int)rnd(r, (uint64_t)r->held_count);
    struct held h = r->held[i];
    r->held[i] = r->held[--r->held_count];
    return h;
}

static void op_release(struct run *r) {
    if (r->held_count == 0) return;
    struct held h = take_held(r);
    int result = (int)rnd(r, 3);
    uint64_t gen = h.gen;
    uint64_t pick = rnd(r, 10);
    if (pick == 0) gen = 0;         /* a release for any generation */
    if (pick == 1) gen = h.gen + 1; /* a generation that is not the lease's */
    struct breaker__fleet_call call;
    breaker__fleet_call_release(&call, gen, h.token, result);
    note(r, "host %d release %s gen %s token %s result %s", h.host, r->names[h.name].name,
         call.argv[0], call.argv[1], call.argv[2]);
    struct breaker__fleet_answer a;
    if (both(r, h.host, h.name, &call, &a)) host_decides(r, h.host, h.name, &a);
}

/* A release of a lease nobody holds: an orphan's (any generation, neither),
 * for a token never granted, or one granted and given up. */
static void op_orphan_release(struct run *r, int host, int ni) {
    uint64_t token = rnd(r, 2) ? breaker__splitmix64(r->seed ^ (1 + rnd(r, r->tokens + 1)))
                               : breaker__splitmix64(~r->seed ^ r->step);
    struct breaker__fleet_call call;
    breaker__fleet_call_release(&call, 0, token, FLEET_RESULT_NEITHER);
    note(r, "host %d orphan release %s token %s", host, r->names[ni].name, call.argv[1]);
    struct breaker__fleet_answer a;
    if (both(r, host, ni, &call, &a)) host_decides(r, host, ni, &a);
}

static void op_kill(struct run *r) {
    if (r->held_count == 0) return;
    struct held h = take_held(r);
    note(r, "host %d killed holding %s's lease %016" PRIx64, h.host, r->names[h.name].name,
         h.token);
}

/* The clock moves: a little, a lot, or onto an edge the scripts compare
 * against (exactly, or a microsecond either side), where a host then calls
 * at once: an edge matters to the call that lands on it. */
static void op_advance(struct run *r) {
    uint64_t by = 0;
    const char *why = "";
    uint64_t kind = rnd(r, 10);
    int ni = (int)rnd(r, NAMES);
    struct fleet_name_stats st;
    int has = fleet_server_name_stats(r->model, r->names[ni].name, &st) == 0;
    int64_t nudge = (int64_t)rnd(r, 3) - 1;
    int edge = 0;
    if (kind <= 3) {
        by = rnd(r, 300000);
        why = "a little";
    } else if (kind <= 5) {
        by = rnd(r, 3000000);
        why = "some";
    } else if (kind == 6 && rnd(r, 5) == 0) {
        by = TTL_NS / 1000 + (uint64_t)nudge * 1000000;
        why = "about the key TTL: silent hosts' sequences are forgotten";
    } else if (kind == 6) {
        by = 5000000 + rnd(r, 60000000);
        why = "a lot";
    } else if (kind == 7 && has && st.state == BREAKER_OPEN && st.until_us > clock_us + 1) {
        by = st.until_us + (uint64_t)nudge - clock_us;
        why = "to the end of an open wait";
        edge = 1;
    } else if (kind == 9 && has && st.order_until_us > clock_us + 1 && rnd(r, 2) == 0) {
        by = st.order_until_us + (uint64_t)nudge - clock_us;
        why = "to an order's end";
        edge = rnd(r, 2) ? 1 : 2;
    } else if (kind == 8 && st.first_deadline_us > clock_us + 1) {
        by = st.first_deadline_us + (uint64_t)nudge - clock_us;
        why = "to a lease deadline";
        edge = 1;
    } else {
        uint64_t span = r->names[ni].lim.window_us / r->names[ni].lim.buckets;
        uint64_t next = (clock_us / span + 1) * span;
        by = next + (uint64_t)nudge - clock_us;
        why = "to a bucket's start";
        edge = 2;
    }
    clock_us += by;
    note(r, "clock +%" PRIu64 " us (%s, %s)", by, why, r->names[ni].name);
    int host = (int)rnd(r, HOSTS);
    if (edge == 1) {
        r->step++; /* its own line in the log */
        op_acquire(r, host, ni);
    } else if (edge == 2) {
        r->step++;
        op_flush(r, host, ni);
    }
}

static uint64_t orders_given, orders_refused; /* in all sequences */

/* An operator's order (the order script): open, closed or reset, with no
 * time, a short one, one longer than open_max, or one out of range
 * (refused on both, as is a who or why too long); who and why of random
 * lengths. Then the host that gave it decides its answer. */
static void op_order(struct run *r, int host, int ni) {
    struct name *n = &r->names[ni];
    int kind = 1 + (int)rnd(r, 3);
    uint64_t dur = 0;
    uint64_t pick = rnd(r, 10);
    if (pick >= 3 && pick < 6) dur = 1 + rnd(r, 2000000);
    if (pick == 6 || pick == 7) dur = n->lim.open_max_us + rnd(r, 30000000);
    if (pick == 8 && rnd(r, 4) == 0) dur = BREAKER__FLEET_MAX_DURATION_US + 1;
    char who[BREAKER__FLEET_WHO_MAX + 2], why[BREAKER__FLEET_WHY_MAX + 2];
    size_t wl = rnd(r, 20) == 0 ? BREAKER__FLEET_WHO_MAX + 1 : rnd(r, BREAKER__FLEET_WHO_MAX + 1);
    size_t yl = rnd(r, 20) == 0 ? BREAKER__FLEET_WHY_MAX + 1 : rnd(r, BREAKER__FLEET_WHY_MAX + 1);
    for (size_t i = 0; i < wl; i++)
        who[i] = (char)('a' + rnd(r, 26));
    for (size_t i = 0; i < yl; i++)
        why[i] = (char)(' ' + rnd(r, 95));
    who[wl] = why[yl] = '\0';
    char kind_text[12], dur_text[24];
    snprintf(kind_text, sizeof kind_text, "%d", kind);
    snprintf(dur_text, sizeof dur_text, "%" PRIu64, dur);
    note(r, "host %d order %s kind %d for %" PRIu64 " us (who %zu, why %zu bytes)", host, n->name,
         kind, dur, wl, yl);
    int64_t m[ANS_COUNT], x[ANS_COUNT];
    memset(m, 0, sizeof m);
    memset(x, 0, sizeof x);
    struct fleet_answer_order mo, xo;
    int mrc = fleet_server_order(r->model, n->name, n->limits[host], kind, dur, who, why, m, &mo);
    const char *args[] = {kind_text, dur_text, who, why};
    int xrc = redis_eval(r, n, n->limits[host], order_script, args, 4, x, &xo);
    if (mrc != xrc) diverged(r, "order: model %d, redis %d", mrc, xrc);
    if (mrc != 0) {
        orders_refused++;
        return;
    }
    orders_given++;
    struct breaker__fleet_answer a;
    same_answers(r, m, x, &mo, &xo, &a);
    if (a.verdict != VERDICT_APPLIED) diverged(r, "order: verdict %d", a.verdict);
    host_decides(r, host, ni, &a);
}

static void op_flushall(struct run *r) {
    note(r, "FLUSHALL");
    freeReplyObject(command(r, "FLUSHALL"));
    fleet_server_flushall(r->model);
}

static void op_restart(struct run *r) {
    note(r, "redis restarted empty");
    redisFree(ctx);
    ctx = NULL;
    if (test_redis_restart(&server) != 0) diverged(r, "redis-server did not start again");
    connect_ctx();
    fleet_server_flushall(r->model);
    r->restarts++;
}

static void op_delete_state(struct run *r, int ni) {
    note(r, "DEL %s", r->names[ni].key[FLEET_KEY_STATE]);
    freeReplyObject(command(r, "DEL %s", r->names[ni].key[FLEET_KEY_STATE]));
    fleet_server_delete_state(r->model, r->names[ni].name);
}

/* A field of a name's state corrupted on both (HSET, as an operator's
 * mistake would): the next acquire_probe is an error on both and writes
 * nothing, the next flush an error that rebuilt the keys on both (the
 * stored state compared after the step). */
static void op_corrupt(struct run *r, int host, int ni) {
    struct name *n = &r->names[ni];
    struct fleet_name_stats st;
    if (fleet_server_name_stats(r->model, n->name, &st) != 0) return;
    /* Each field with a value out of its range ("until" 10 years ahead:
     * invalid in OPEN only; "ef" 1: invalid unless the evidence has calls). */
    static const struct {
        const char *field, *value;
    } bad[] = {{"st", "7"},    {"st", "-1"},      {"gen", "-5"},
               {"k", "-1"},    {"succ", "99999"}, {"until", NULL},
               {"born", NULL}, {"ef", "1"},       {"cfg", "0 0 0 0 0 0 0 0 0 0 0 0 0"},
               {"q", "junk"}};
    uint64_t pick = rnd(r, sizeof bad / sizeof bad[0]);
    const char *field = bad[pick].field;
    char value[64];
    if (bad[pick].value != NULL)
        snprintf(value, sizeof value, "%s", bad[pick].value);
    else
        snprintf(value, sizeof value, "%" PRIu64,
                 strcmp(field, "until") == 0 ? clock_us + UINT64_C(315360000000000)
                                             : st.gen + 1000);
    /* "q": a field of the sequences hash that is no host's. */
    int q = strcmp(field, "q") == 0;
    const char *key = q ? n->key[FLEET_KEY_SEQ] : n->key[FLEET_KEY_STATE];
    const char *hf = q ? "zz" : field;
    note(r, "HSET %s %s %s", key, hf, value);
    freeReplyObject(command(r, "HSET %s %s %s", key, hf, value));
    assert_int_equal(fleet_server_corrupt(r->model, n->name, field, value), 0);
    r->step++;
    op_acquire(r, host, ni); /* an error on both when the state is invalid: nothing written */
    r->step++;
    op_flush(r, host, ni); /* rebuilt on both */
}

/* After every step: each name's stored state, leases and limits. */
static void compare_state(struct run *r) {
    for (int ni = 0; ni < NAMES; ni++) {
        struct name *n = &r->names[ni];
        struct fleet_name_stats st;
        int has = fleet_server_name_stats(r->model, n->name, &st) == 0;
        redisReply *h = command(
            r, "HMGET %s st gen k succ until trips transitions born run cfg ok fu oseq ow oy",
            n->key[FLEET_KEY_STATE]);
        if (h->type != REDIS_REPLY_ARRAY || h->elements != 15) diverged(r, "HMGET: no array");
        int redis_has = h->element[0]->type != REDIS_REPLY_NIL;
        if (has != redis_has)
            diverged(r, "%s: a state in the model %d, in redis %d", n->name, has, redis_has);
        if (has) {
            const int states[] = {BREAKER_CLOSED, BREAKER_OPEN, BREAKER_HALF_OPEN};
            uint64_t model[14] = {0,
                                  st.gen,
                                  st.k,
                                  st.successes,
                                  st.until_us,
                                  st.trips,
                                  st.transitions,
                                  st.born,
                                  st.run,
                                  0,
                                  (uint64_t)st.order,
                                  st.order_until_us,
                                  st.order_seq};
            static const char *const field[14] = {"st",    "gen",         "k",    "succ", "until",
                                                  "trips", "transitions", "born", "run",  "cfg",
                                                  "ok",    "fu",          "oseq"};
            for (int i = 0; i < 13; i++) {
                if (i == 9) continue; /* cfg: below */
                const redisReply *e = h->element[i];
                uint64_t v = e->type == REDIS_REPLY_STRING ? strtoull(e->str, NULL, 10) : 0;
                if (i == 0) {
                    if (v > 2 || states[v] != (int)st.state)
                        diverged(r, "%s: stored st %" PRIu64 ", model %d", n->name, v,
                                 (int)st.state);
                } else if (v != model[i]) {
                    diverged(r, "%s: stored %s %" PRIu64 ", model %" PRIu64, n->name, field[i], v,
                             model[i]);
                }
            }
            /* who and why: absent until an order is given. */
            for (int i = 13; i < 15; i++) {
                const redisReply *e = h->element[i];
                const char *want = st.order_seq == 0 ? NULL : i == 13 ? st.order_who : st.order_why;
                const char *got = e->type == REDIS_REPLY_STRING ? e->str : NULL;
                if ((want == NULL) != (got == NULL) || (want != NULL && strcmp(want, got) != 0))
                    diverged(r, "%s: stored %s '%s', model '%s'", n->name, i == 13 ? "ow" : "oy",
                             got ? got : "(none)", want ? want : "(none)");
            }
            const char *cfg = fleet_server_stored_limits(r->model, n->name);
            if (h->element[9]->type != REDIS_REPLY_STRING || cfg == NULL ||
                strcmp(h->element[9]->str, cfg) != 0)
                diverged(r, "%s: stored limits differ", n->name);
        }
        freeReplyObject(h);
        redisReply *z = command(r, "ZCARD %s", n->key[FLEET_KEY_LEASES]);
        if (z->type != REDIS_REPLY_INTEGER || (uint64_t)z->integer != st.leases_out)
            diverged(r, "%s: leases in redis %lld, model %u", n->name, z->integer, st.leases_out);
        freeReplyObject(z);
        z = command(r, "HLEN %s", n->key[FLEET_KEY_SEQ]);
        if (z->type != REDIS_REPLY_INTEGER || (uint64_t)z->integer != st.hosts)
            diverged(r, "%s: hosts' sequences in redis %lld, model %u", n->name, z->integer,
                     st.hosts);
        freeReplyObject(z);
        char host[17];
        uint64_t seq, at;
        for (size_t i = 0; fleet_server_host_seq(r->model, n->name, i, host, &seq, &at) == 0; i++) {
            char want[48];
            snprintf(want, sizeof want, "%" PRIu64 " %" PRIu64, seq, at);
            z = command(r, "HGET %s %s", n->key[FLEET_KEY_SEQ], host);
            if (z->type != REDIS_REPLY_STRING || strcmp(z->str, want) != 0)
                diverged(r, "%s: host %s's sequence in redis %s, model %s", n->name, host,
                         z->type == REDIS_REPLY_STRING ? z->str : "(none)", want);
            freeReplyObject(z);
        }
    }
}

static void step(struct run *r) {
    int host = (int)rnd(r, HOSTS), ni = (int)rnd(r, NAMES);
    uint64_t w = rnd(r, 200);
    if (w < 55) {
        op_flush(r, host, ni);
    } else if (w < 70) {
        op_read(r, host, ni);
    } else if (w < 110) {
        op_acquire(r, host, ni);
    } else if (w < 140) {
        op_release(r);
    } else if (w < 146) {
        op_kill(r);
    } else if (w < 152) {
        op_orphan_release(r, host, ni);
    } else if (w < 160) {
        op_order(r, host, ni);
    } else if (w < 192) {
        op_advance(r);
    } else if (w < 195) {
        op_flushall(r);
    } else if (w < 197) {
        op_delete_state(r, ni);
    } else if (w < 198) {
        op_corrupt(r, host, ni);
    } else if (r->restarts < MAX_RESTART) {
        op_restart(r);
    } else {
        op_flushall(r);
    }
    /* Now and then a host's local breaker moves on its own (its own trip,
     * its own probe's recovery), so the fences and the "recovered" rule
     * see generations the fleet did not make. */
    if (rnd(r, 8) == 0) {
        struct view *v = &r->views[host][ni];
        v->local.gen++;
        v->local.state = v->local.state == BREAKER_OPEN ? BREAKER_HALF_OPEN
                         : rnd(r, 2)                    ? BREAKER_CLOSED
                                                        : BREAKER_OPEN;
    }
    compare_state(r);
}

/* ---- The sequences ------------------------------------------------------------------ */

static void limits_of(const breaker_config *c, char *out, struct breaker__fleet_limits *l) {
    breaker_config eff = *c;
    breaker *b = NULL;
    assert_int_equal(test_breaker_create(c, &b), BREAKER_OK);
    breaker_get_config(b, &eff);
    test_breaker_destroy(b);
    breaker__fleet_limits_text(&eff, out, BREAKER__FLEET_LIMITS_LEN);
    if (l != NULL) breaker__fleet_limits_of(&eff, l);
}

static void setup_names(struct run *r) {
    static const char *const names[NAMES] = {"window", "consecutive", "short"};
    breaker_config c[NAMES];
    for (int i = 0; i < NAMES; i++)
        breaker_config_init(&c[i]);
    /* A time window with a slow-call rate, backoff and jitter, two probes. */
    c[0].window_ns = 10 * SEC;
    c[0].window_buckets = 10;
    c[0].min_calls = 10;
    c[0].failure_rate = 0.5;
    c[0].slow_call_ns = 100 * MS;
    c[0].slow_call_rate = 0.4;
    c[0].open_ns = 2 * SEC;
    c[0].open_backoff = 2;
    c[0].open_max_ns = 20 * SEC;
    c[0].open_jitter = 0.3;
    c[0].half_open_max_probes = 2;
    c[0].half_open_successes = 2;
    c[0].probe_timeout_ns = 1 * SEC;
    /* CONSECUTIVE: the fleet's run of failures. */
    c[1].trip = BREAKER_TRIP_CONSECUTIVE;
    c[1].failure_threshold = 5;
    c[1].open_ns = 1 * SEC;
    c[1].open_max_ns = 8 * SEC;
    c[1].probe_timeout_ns = 500 * MS;
    c[1].half_open_successes = 1;
    /* A short window of few buckets, no jitter, three probes. */
    c[2].window_ns = 3 * SEC;
    c[2].window_buckets = 3;
    c[2].min_calls = 3;
    c[2].failure_rate = 0.34;
    c[2].open_ns = 700 * MS;
    c[2].open_backoff = 1.5;
    c[2].open_max_ns = 4 * SEC;
    c[2].open_jitter = 0;
    c[2].half_open_max_probes = 3;
    c[2].half_open_successes = 3;
    c[2].probe_timeout_ns = 2 * SEC;
    /* The failing-source rule: 2 callers for "window" (even failures that
     * name none: they never trip it), the default (3 callers where failures
     * name one) for "consecutive" (the fleet's run and its map) and for
     * "short". */
    c[0].min_failing_sources = 2;
    c[1].min_failing_sources = 0;
    c[2].min_failing_sources = 0;
    for (int i = 0; i < NAMES; i++) {
        struct name *n = &r->names[i];
        n->name = names[i];
        for (int k = 0; k < FLEET_KEY_COUNT; k++)
            breaker__fleet_key(n->name, k, n->key[k], sizeof n->key[k]);
        for (int h = 0; h < HOSTS; h++)
            limits_of(&c[i], n->limits[h], h == 0 ? &n->lim : NULL);
    }
    /* One host asks for other limits for "window": they win only when it is
     * the first to call after the state is gone. */
    breaker_config other = c[0];
    other.min_calls = 4;
    other.open_jitter = 0.9;
    limits_of(&other, r->names[0].limits[2], NULL);
}

/* The sequence running: freed by teardown() too, when a divergence ended it. */
static struct run *current;
static int restarts; /* in all sequences, for the summary */

static void free_run(void) {
    if (current == NULL) return;
    fleet_server_destroy(current->model);
    free(current);
    current = NULL;
}

static void run_sequence(uint64_t seed, uint64_t steps) {
    struct run *r = current = calloc(1, sizeof *r);
    assert_non_null(r);
    r->seed = seed;
    r->rng = seed;
    assert_int_equal(fleet_server_create(model_clock, NULL, &r->model), 0);
    fleet_server_set_key_ttl(r->model, TTL_NS);
    setup_names(r);
    for (int h = 0; h < HOSTS; h++)
        breaker__fleet_host_id(breaker__splitmix64(seed + (uint64_t)h), r->host_id[h]);
    for (int h = 0; h < HOSTS; h++)
        for (int n = 0; n < NAMES; n++)
            r->views[h][n].local = (struct breaker__fleet_local){.gen = 1, .state = BREAKER_CLOSED};
    clock_us = UINT64_C(1700000000000000) + rnd(r, UINT64_C(1000000000000));
    freeReplyObject(command(r, "FLUSHALL"));
    for (r->step = 0; r->step < steps; r->step++)
        step(r);
    restarts += r->restarts;
    free_run();
}

static uint64_t env_u64(const char *name, uint64_t dflt) {
    const char *v = getenv(name);
    return v != NULL && *v != '\0' ? strtoull(v, NULL, 0) : dflt;
}

static void the_model_decides_every_call_as_the_scripts_on_redis_do(void **state) {
    (void)state;
    uint64_t steps = env_u64("BREAKER_DIFF_STEPS", 500);
    uint64_t only = env_u64("BREAKER_DIFF_SEED", 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint64_t seeds = 0;
    if (only != 0) {
        run_sequence(only, steps);
        seeds = 1;
    } else {
        for (uint64_t s = 1; s <= 12; s++, seeds++)
            run_sequence(breaker__splitmix64(0xf1ee7 + s), steps);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("fleet differential: %" PRIu64 " sequences of %" PRIu64
           " steps (%d restarts of redis-server) in %.2f s; %" PRIu64 " state reads, %" PRIu64
           " read as answers (%" PRIu64 " checked against the script's); %" PRIu64
           " orders (%" PRIu64 " refused), %" PRIu64 " answers with an order, %" PRIu64
           " server-directed opens\n",
           seeds, steps, restarts, took, reads, read_answers, read_checks, orders_given,
           orders_refused, orders_answered, directed_opens);
    assert_true(read_answers > 0 && read_answers < reads); /* both kinds were compared */
    /* Orders and directed waits were compared too. */
    assert_true(orders_given > 0 && orders_refused > 0 && orders_answered > orders_given);
    assert_true(directed_opens > 0);
}

/* A flush call sent twice (the round retried after a cut connection: the
 * first try may have run) counts its deltas once on both sides; the next
 * call, with a newer sequence, counts. "short" trips at 3 calls with 34%
 * failures: 2 failed calls counted twice would trip it. */
static void a_flush_call_sent_again_counts_once_on_both(void **state) {
    (void)state;
    struct run *r = current = calloc(1, sizeof *r);
    assert_non_null(r);
    assert_int_equal(fleet_server_create(model_clock, NULL, &r->model), 0);
    fleet_server_set_key_ttl(r->model, TTL_NS);
    setup_names(r);
    freeReplyObject(command(r, "FLUSHALL"));
    clock_us = UINT64_C(1700000000000000);
    char host[17];
    breaker__fleet_host_id(42, host);
    struct breaker__fleet_deltas d = {.calls = 2, .failures = 2, .slow = 0, .run = 2};
    struct breaker__fleet_call call;
    breaker__fleet_call_flush(&call, 0, &d);
    uint64_t seq = breaker__fleet_next_seq(0, 1000);
    breaker__fleet_call_sequence(&call, host, seq);
    struct breaker__fleet_answer a;
    for (int i = 0; i < 3; i++) { /* the call, and two retries of it */
        clock_us += 1000;
        assert_true(both(r, 0, 2, &call, &a));
        assert_int_equal(a.state, FLEET_CLOSED);
        compare_state(r);
    }
    redisReply *w = command(r, "HGETALL %s", r->names[2].key[FLEET_KEY_WINDOW]);
    long long calls = 0;
    for (size_t i = 0; i + 1 < w->elements; i += 2)
        if (w->element[i]->str[0] == 'c') calls += strtoll(w->element[i + 1]->str, NULL, 10);
    freeReplyObject(w);
    assert_int_equal(calls, 2); /* once */
    /* An older sequence is not counted either; a newer one is. */
    breaker__fleet_call_flush(&call, 0, &d);
    breaker__fleet_call_sequence(&call, host, seq - 1);
    assert_true(both(r, 0, 2, &call, &a));
    assert_int_equal(a.state, FLEET_CLOSED);
    breaker__fleet_call_flush(&call, 0, &d);
    breaker__fleet_call_sequence(&call, host, breaker__fleet_next_seq(seq, 0));
    assert_true(both(r, 0, 2, &call, &a));
    assert_int_equal(a.state, FLEET_OPEN); /* 4 calls, all failed */
    assert_int_equal(a.calls, 4);
    compare_state(r);
    free_run();
}

static int setup(void **state) {
    (void)state;
    if (test_redis_start(&server) != 0) return -1;
    for (int i = 0; i < FLEET_SCRIPT_COUNT; i++) {
        const char *text = i == FLEET_SCRIPT_FLUSH     ? breaker__redis_lua_flush
                           : i == FLEET_SCRIPT_ACQUIRE ? breaker__redis_lua_acquire
                                                       : breaker__redis_lua_release;
        scripts[i] = with_test_clock(text);
        if (scripts[i] == NULL) return -1;
    }
    order_script = with_test_clock(breaker__redis_lua_order);
    if (order_script == NULL) return -1;
    connect_ctx();
    return 0;
}

static int teardown(void **state) {
    (void)state;
    free_run();
    if (ctx != NULL) redisFree(ctx);
    ctx = NULL;
    for (int i = 0; i < FLEET_SCRIPT_COUNT; i++) {
        free(scripts[i]);
        scripts[i] = NULL;
    }
    free(order_script);
    order_script = NULL;
    test_redis_stop(&server);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_flush_call_sent_again_counts_once_on_both),
        cmocka_unit_test(the_model_decides_every_call_as_the_scripts_on_redis_do),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
