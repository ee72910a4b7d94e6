/* SPDX-License-Identifier: MIT */
/*
 * test_fleet_sim.c - the fleet store simulated deterministically, in the
 * manner of FoundationDB's simulation: many hosts, each a real fleet handle
 * (breaker/redis.h) with its real rounds and probe gate, over the
 * in-process transport (src/store/redis/inproc/link.h) to an in-process
 * Redis running the fleet's real Lua scripts; virtual time; and a seeded
 * schedule of faults. After every step the invariants are checked; a
 * failure prints the seed and the one-line command that replays it.
 *
 * The world, per seed: HOSTS hosts call one dependency on NAMES names.
 * The dependency is healthy, then down (every call fails; some hang past
 * the probe timeout), then healthy again for good. Faults, only within the
 * fault window (before the final healthy stretch):
 *  - a command of a host dropped (never run), lost (run, its reply lost),
 *    deferred (run later, after its sender gave up) or resent (run twice:
 *    a connection the server cut after running it, and the transport
 *    sending it again, as the hiredis transport does for a round's calls);
 *  - a host partitioned from Redis for a while, or stopped (SIGSTOP: no
 *    round, call or completion until it resumes; what it sent still runs);
 *  - a host killed (its handle gone without a last word: its leases stay
 *    in Redis until their deadlines) and started again later;
 *  - Redis restarted empty, or FLUSHALLed;
 *  - Redis's clock stepped forward or back a little;
 *  - an operator's control: forced closed for a while, a timed open, a
 *    reset, shadow mode on or off, the open wait cut or given back.
 *
 * The invariants (docs/fleet.md, "Guarantees"):
 *  1. never more leased probes in flight than half_open_max_probes: a
 *     leased probe counts from its grant until its completion, its lease's
 *     deadline (probe_timeout after the grant) or a new fleet generation,
 *     whichever is first; and Redis never holds more leases than that;
 *  2. one trip per fleet generation: each trip is a new generation;
 *  3. every host's deltas counted at most once: the fleet window never
 *     holds more calls than the distinct flushes that reached Redis
 *     carried, and no host sends more closed-state calls than it completed;
 *     and exactly once when no fault touched them: after the fault-free
 *     warm-up, the fleet window holds exactly the calls the hosts completed;
 *  4. a fleet close is earned: when a half-open closes on its probes, at
 *     least half_open_successes leased probes of that half-open succeeded;
 *  5. the fleet trips on evidence of its period only: no trip while the
 *     dependency has answered every call of a whole window (a flush from an
 *     ended period must not count in the new one);
 *  6. the control record reaches every live host no fault touched within
 *     two rounds (forced state, shadow mode, the open wait), a reset once;
 *     and no host applies a reset twice;
 *  7. no stuck breaker: after the faults end and the dependency is healthy,
 *     every host admits calls within RECOVERY_BOUND;
 *  8. a fleet open reaches every live host no fault touched within two
 *     rounds, and no host waits out much more than the fleet has left (a
 *     cut of the fleet's wait reaches the hosts).
 *
 * Run: test_fleet_sim [--seeds N] [--seed S]. In `make check`
 * it runs seeds until at least MIN_ROUNDS simulated rounds (all hosts'),
 * well within its time. With BREAKER_SIM_SEEDS=N in the environment, N
 * seeds instead.
 */
#define _POSIX_C_SOURCE 200809L
#define BREAKER_BACKEND_EXPERIMENTAL
#define BREAKER_REDIS_TRANSPORT_EXPERIMENTAL

#include "common/splitmix.h"
#include "fleet_control.h"
#include "store/redis/inproc/link.h"
#include "store/redis/protocol.h"

#include <breaker.h>
#include <breaker/backend.h>
#include <breaker/redis.h>
#include <breaker/redis_transport.h>

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MS  UINT64_C(1000000)
#define SEC (1000 * MS)

#define HOSTS       5
#define NAMES       2
#define MAX_CALLS   32 /* in flight per host */
#define INTERVAL_NS (100 * MS)
#define MIN_ROUNDS  1000000u
#define REDIS_EPOCH (UINT64_C(1700000000) * SEC)
#define MAX_PROBES  2
#define SUCCESSES   2
#define OPEN_NS     (1 * SEC)
#define OPEN_MAX_NS (4 * SEC)
#define PROBE_NS    (500 * MS)
#define WINDOW_NS   (10 * SEC)
#define WARMUP_NS   (5 * SEC)
#define OUTAGE_NS   (20 * SEC)
#define FAULTS_NS   (40 * SEC) /* faults run until then */
#define END_NS      (60 * SEC)
/* After the faults end and the dependency is healthy: the longest open
 * wait with its jitter, a probe timeout, the rounds that carry the
 * successes and the close (each up to 1.2 intervals), with room. */
/* The operators' controls (invariant 6). The open wait's two settings: the
 * hosts' own, and a cut to a shorter one. */
enum { CTL_OPEN = 1, CTL_CLOSED, CTL_RESET, CTL_SHADOW, CTL_LIMITS };
#define CUT_OPEN_NS     (300 * MS)
#define CUT_OPEN_MAX_NS (1 * SEC)
#define RECOVERY_BOUND  (OPEN_MAX_NS + OPEN_MAX_NS / 5 + PROBE_NS + 6 * INTERVAL_NS + SEC)

/* ---- The world ------------------------------------------------------------------ */

struct call {
    bool used;
    int name;
    breaker_permit permit;
    uint64_t done_at;
    bool leased;
    /* A token the gate gave, answered or not; and whether Redis has been
     * seen holding it as a lease (a request whose reply was lost may have
     * been granted: its result then counts in Redis; 4 counts the successes
     * of the probes Redis granted). */
    bool token;
    bool granted;
    char token_text[17];
    uint64_t lease_gen;      /* the fleet generation the lease was granted in */
    uint64_t lease_deadline; /* grant + probe timeout */
};

struct host {
    struct world *w;
    int index;
    bool alive;
    uint64_t restart_at; /* dead: when it starts again */
    uint64_t partitioned_until;
    uint64_t stopped_until; /* SIGSTOPped: no round, no call, no completion */
    breaker_redis *fleet;
    struct breaker__inproc_link *link;
    breaker *b[NAMES];
    uint64_t next_round;
    uint64_t next_call; /* the next call's arrival */
    bool wake;
    struct call calls[MAX_CALLS];
    /* Invariant 3: this life's closed-state completions and the distinct
     * flushes it sent (by sequence), per name. */
    uint64_t completed[NAMES];
    uint64_t sent[NAMES];
    uint64_t last_seq[NAMES];
    bool touched; /* a fault touched this host in this life */
    /* The end of the last fault that touched it (a command's, when it ran;
     * a partition's end): invariants 6 and 8 look at hosts no fault
     * touched around what they check. */
    uint64_t last_touch;
    /* Invariant 6: reset events of its local breakers, this life; the
     * resets given before it started, and at the last control. */
    uint64_t reset_events[NAMES];
    uint64_t resets_at_start[NAMES];
    uint64_t resets_at_control[NAMES];
    /* Invariant 8: when its local breaker of each name last transitioned. */
    uint64_t changed_at[NAMES];
    /* The last lease request's fate was not DELIVER: a probe it admits
     * holds no lease Redis granted (the client's "store too slow" path). */
    bool probe_unanswered;
    uint64_t started_at;
};

struct world {
    uint64_t seed, rng;
    uint64_t now;
    int64_t redis_skew;
    struct breaker__redis_inproc *redis;
    struct host hosts[HOSTS];
    uint64_t rounds;
    bool faults;
    char names[NAMES][16];
    /* Per name, what the server's state was at the last check. */
    uint64_t gen[NAMES], trips[NAMES];
    int st[NAMES];
    /* Invariant 3, server side: the calls the flushes that reached Redis
     * carried since the window was last emptied (an upper bound). */
    uint64_t carried[NAMES];
    /* Of those, what flushes naming no generation (0: any) carried since
     * the last check: they count in a window made meanwhile too; and what
     * such flushes deferred to run later carried, until the last of them
     * runs (late_until): they count in a window made before they run. */
    uint64_t carried_any[NAMES];
    uint64_t late_any[NAMES], late_until[NAMES];
    /* Invariant 4: per name, leased successes of the current half-open. */
    uint64_t half_open_gen[NAMES];
    uint64_t half_open_successes[NAMES];
    /* Invariant 5: when the dependency last failed a call. */
    uint64_t last_failure_at;
    /* Invariant 6: the last control given, per name (CTL_*; 0: none, or
     * checked), and when; what the record asks of shadow mode and the open
     * wait; the resets given. */
    int order[NAMES];
    uint64_t order_at[NAMES];
    bool want_shadow[NAMES];
    uint64_t want_open_ns[NAMES];
    uint64_t resets_given[NAMES];
    uint64_t reset_at[NAMES][64]; /* when (the last 64) */
    int forced_kind[NAMES];       /* CTL_OPEN, CTL_CLOSED or 0 */
    /* Invariant 8: since when the fleet has been in its generation. */
    uint64_t gen_since[NAMES];
    /* 6: the record as Redis holds it, and since when (its state, version). */
    uint64_t record_cv[NAMES], record_born[NAMES], record_since[NAMES];
    /* Until when a control whose reply was lost may still run. */
    uint64_t uncertain_until[NAMES];
    uint64_t control_at[NAMES]; /* the last control given (order_at is cleared once checked) */
    uint64_t next_follow_check;
    /* The log of the last steps, printed on a failure. */
    char log[16][160];
    unsigned logged;
};

static int failures_seen;

static uint64_t world_now(void *ctx) { return ((struct world *)ctx)->now; }

static uint64_t redis_now(void *ctx) {
    struct world *w = ctx;
    return (uint64_t)((int64_t)(REDIS_EPOCH + w->now) + w->redis_skew);
}

static uint64_t draw(struct world *w) { return breaker__splitmix64_next(&w->rng); }

static double unit(struct world *w) { return (double)(draw(w) >> 11) * 0x1.0p-53; }

static bool chance(struct world *w, double p) { return unit(w) < p; }

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void
note(struct world *w, const char *fmt, ...) {
    char *line = w->log[w->logged++ % 16];
    int n = snprintf(line, 160, "%8.3fs ", (double)w->now / 1e9);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, (size_t)(160 - n), fmt, ap);
    va_end(ap);
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void
violated(struct world *w, const char *fmt, ...) {
    if (failures_seen++ > 0) return; /* the first says what went wrong */
    fprintf(stderr, "test_fleet_sim: invariant violated at %.3f s (seed %" PRIu64 "): ",
            (double)w->now / 1e9, w->seed);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nthe last steps:\n");
    unsigned first = w->logged > 16 ? w->logged - 16 : 0;
    for (unsigned i = first; i < w->logged; i++)
        fprintf(stderr, "  %s\n", w->log[i % 16]);
    fprintf(stderr, "replay: test_fleet_sim --seed %" PRIu64 "\n", w->seed);
}

/* A field of a name's state hash, as a number (0: absent). */
static uint64_t state_field(struct world *w, int name, const char *field) {
    char key[BREAKER__FLEET_KEY_LEN];
    breaker__fleet_key(w->names[name], FLEET_KEY_STATE, key, sizeof key);
    const char *v = breaker__redis_inproc_hget(w->redis, key, field, NULL);
    return v != NULL ? strtoull(v, NULL, 10) : 0;
}

struct window_sum {
    uint64_t calls;
};

static int add_calls(void *ctx, const char *field, size_t flen, const char *value, size_t vlen) {
    (void)vlen;
    if (flen > 1 && field[0] == 'c') ((struct window_sum *)ctx)->calls += strtoull(value, NULL, 10);
    return 0;
}

static uint64_t window_calls(struct world *w, int name) {
    char key[BREAKER__FLEET_KEY_LEN];
    breaker__fleet_key(w->names[name], FLEET_KEY_WINDOW, key, sizeof key);
    struct window_sum sum = {0};
    (void)breaker__redis_inproc_hash_each(w->redis, key, add_calls, &sum);
    return sum.calls;
}

static int count_member(void *ctx, const char *member, size_t len, double score) {
    (void)ctx;
    (void)member;
    (void)len;
    (void)score;
    return 0;
}

struct granted_scan {
    struct world *w;
    int name;
};

static int mark_member(void *ctx, const char *member, size_t len, double score) {
    (void)score;
    struct granted_scan *g = ctx;
    for (int i = 0; i < HOSTS; i++)
        for (int k = 0; k < MAX_CALLS; k++) {
            struct call *c = &g->w->hosts[i].calls[k];
            if (c->used && c->token && !c->granted && c->name == g->name && len == 16 &&
                memcmp(c->token_text, member, 16) == 0)
                c->granted = true;
        }
    return 0;
}

static void mark_granted(struct world *w, int name) {
    char key[BREAKER__FLEET_KEY_LEN];
    breaker__fleet_key(w->names[name], FLEET_KEY_LEASES, key, sizeof key);
    struct granted_scan g = {w, name};
    (void)breaker__redis_inproc_zset_each(w->redis, key, mark_member, &g);
}

static size_t leases_held(struct world *w, int name) {
    char key[BREAKER__FLEET_KEY_LEN];
    breaker__fleet_key(w->names[name], FLEET_KEY_LEASES, key, sizeof key);
    return breaker__redis_inproc_zset_each(w->redis, key, count_member, NULL);
}

/* ---- The dependency ----------------------------------------------------------- */

static bool dependency_down(uint64_t t) { return t >= WARMUP_NS && t < WARMUP_NS + OUTAGE_NS; }

/* ---- Faults on the links ------------------------------------------------------- */

static int name_of_key(struct world *w, const char *key) {
    for (int i = 0; i < NAMES; i++)
        if (strstr(key, w->names[i]) != NULL) return i;
    return -1;
}

/* A flush command (the flush script: numkeys, 4 keys, TTL, limits, then
 * known_gen, calls, failures, slow, run, host, seq ...) or a credit (the
 * credit script: numkeys, a state and a window key per name, TTL, then
 * known_gen, calls, µs since per name): what it carries. */
enum { NOT_COUNTED, FLUSH_SCRIPT, CREDIT_SCRIPT };
/* Which of them `script` is (its text says so; the answer is kept by the
 * text's address, which each script has one of). */
static int script_kind(const char *script) {
    static const char *seen[8];
    static int kind[8];
    for (int i = 0; i < 8 && seen[i] != NULL; i++)
        if (seen[i] == script) return kind[i];
    int is = strstr(script, "\n-- flush: ARGV 3") != NULL   ? FLUSH_SCRIPT
             : strstr(script, "\n-- credit.lua - ") != NULL ? CREDIT_SCRIPT
                                                            : NOT_COUNTED;
    for (int i = 0; i < 8; i++)
        if (seen[i] == NULL) {
            seen[i] = script;
            kind[i] = is;
            break;
        }
    return is;
}

/* A host's flush of `calls` on name `n`, naming generation `known`. */
static void note_calls(struct host *h, int n, uint64_t known, uint64_t calls, bool reaches,
                       uint64_t run_at) {
    h->sent[n] += calls;
    /* The script counts a flush only in the generation it names (0: any):
     * the window of the generation seen last. */
    if (reaches && (known == 0 || known == h->w->gen[n])) h->w->carried[n] += calls;
    if (reaches && known == 0) h->w->carried_any[n] += calls;
    if (reaches && known == 0 && run_at > h->w->now) {
        h->w->late_any[n] += calls;
        if (run_at > h->w->late_until[n]) h->w->late_until[n] = run_at;
    }
}

static void note_flush(struct host *h, const breaker_redis_command *cmd, bool reaches,
                       uint64_t run_at) {
    int kind = cmd->script != NULL ? script_kind(cmd->script) : NOT_COUNTED;
    if (kind == CREDIT_SCRIPT) { /* never sent twice: each counts */
        int keys = atoi(cmd->argv[0]);
        for (int i = 0; 2 * i < keys && 2 + keys + 3 * i + 1 < cmd->argc; i++) {
            int n = name_of_key(h->w, cmd->argv[1 + 2 * i]);
            if (n >= 0)
                note_calls(h, n, strtoull(cmd->argv[2 + keys + 3 * i], NULL, 10),
                           strtoull(cmd->argv[3 + keys + 3 * i], NULL, 10), reaches, run_at);
        }
        return;
    }
    if (kind != FLUSH_SCRIPT || cmd->argc < 14) return;
    int n = name_of_key(h->w, cmd->argv[1]);
    if (n < 0) return;
    uint64_t seq = strtoull(cmd->argv[13], NULL, 10);
    if (seq > h->last_seq[n]) {
        h->last_seq[n] = seq;
        note_calls(h, n, strtoull(cmd->argv[7], NULL, 10), strtoull(cmd->argv[8], NULL, 10),
                   reaches, run_at);
    }
}

/* A credit the server answered: a name's -1 (not counted: its host sends
 * those calls again with the flush script) carried nothing. */
static void note_credit_answer(struct host *h, const breaker_redis_command *cmd,
                               const breaker_redis_reply *r) {
    int keys = atoi(cmd->argv[0]);
    for (size_t i = 0; i < r->elements && 2 * (int)i < keys; i++) {
        int n = name_of_key(h->w, cmd->argv[1 + 2 * i]);
        if (n < 0 || r->element[i]->type != BREAKER_REDIS_REPLY_INTEGER ||
            r->element[i]->integer != -1)
            continue;
        uint64_t known = strtoull(cmd->argv[2 + keys + 3 * i], NULL, 10);
        uint64_t calls = strtoull(cmd->argv[3 + keys + 3 * i], NULL, 10);
        h->sent[n] -= calls;
        if (known == h->w->gen[n]) h->w->carried[n] -= calls;
    }
}

/* The link's table with its exchange watched (note_credit_answer()); the
 * handle's transport context is the host. */
static int watched_exchange(void *t, breaker_redis_command *cmds, size_t n, breaker_redis_reply **r,
                            char *why, size_t why_len) {
    struct host *h = t;
    int got = breaker__inproc_link_ops.exchange(h->link, cmds, n, r, why, why_len);
    for (size_t i = 0; i < n; i++)
        if (cmds[i].script != NULL && script_kind(cmds[i].script) == CREDIT_SCRIPT &&
            r[i] != NULL && r[i]->type == BREAKER_REDIS_REPLY_ARRAY)
            note_credit_answer(h, &cmds[i], r[i]);
    return got;
}
static int watched_probe(void *t, breaker_redis_command *cmd, uint64_t deadline_ns,
                         breaker_redis_reply **reply) {
    return breaker__inproc_link_ops.probe(((struct host *)t)->link, cmd, deadline_ns, reply);
}
static uint32_t watched_server_of(void *t, const char *key) {
    return breaker__inproc_link_ops.server_of(((struct host *)t)->link, key);
}
static int watched_reachable(void *t, const char *key) {
    return breaker__inproc_link_ops.reachable(((struct host *)t)->link, key);
}
static void watched_round_done(void *t) {
    breaker__inproc_link_ops.round_done(((struct host *)t)->link);
}
static uint64_t watched_now_ns(void *t) {
    return breaker__inproc_link_ops.now_ns(((struct host *)t)->link);
}
static void watched_wake(void *t) { breaker__inproc_link_ops.wake(((struct host *)t)->link); }
static void watched_destroy(void *t) { breaker__inproc_link_ops.destroy(((struct host *)t)->link); }
static const breaker_redis_transport_ops watched_ops = {
    .name = "inproc, watched",
    .exchange = watched_exchange,
    .probe = watched_probe,
    .server_of = watched_server_of,
    .reachable = watched_reachable,
    .round_done = watched_round_done,
    .now_ns = watched_now_ns,
    .wake = watched_wake,
    .destroy = watched_destroy,
};

/* A fault touched `h` until `until`. */
static void touch(struct host *h, uint64_t until) {
    if (until > h->last_touch) h->last_touch = until;
}

static int fate(void *ctx, const breaker_redis_command *cmd, int probe, uint64_t *run_at) {
    struct host *h = ctx;
    struct world *w = h->w;
    int f = BREAKER__INPROC_DELIVER;
    if (!h->alive || w->now < h->partitioned_until) {
        f = BREAKER__INPROC_DROP;
    } else if (w->faults && chance(w, probe ? 0.2 : 0.04)) {
        /* Lease requests more often: two in a row unanswered is the path
         * where a host keeps its token as a lease (lease.c, lease_local). */
        double u = unit(w);
        f = u < 0.25  ? BREAKER__INPROC_DROP
            : u < 0.5 ? BREAKER__INPROC_LOSE
            : u < 0.75
                ? BREAKER__INPROC_DEFER
                : (cmd->idempotent && !probe ? BREAKER__INPROC_RESEND : BREAKER__INPROC_LOSE);
        *run_at = w->now + draw(w) % (3 * INTERVAL_NS);
        h->touched = true;
        touch(h, *run_at);
    }
    note_flush(h, cmd, f != BREAKER__INPROC_DROP, f == BREAKER__INPROC_DEFER ? *run_at : 0);
    if (probe) h->probe_unanswered = f != BREAKER__INPROC_DELIVER;
    return f;
}

/* ---- Hosts ---------------------------------------------------------------------- */

static void on_wake(void *ctx) { ((struct host *)ctx)->wake = true; }

/* A local breaker's transition: its resets counted (invariant 6). */
static void on_event(void *ctx, breaker *b, const breaker_event *ev) {
    struct host *h = ctx;
    for (int n = 0; n < NAMES; n++) {
        if (h->b[n] != b) continue;
        /* The operators' resets (a forced state the record no longer holds
         * is reset too, saying so). */
        if (ev->reason == BREAKER_REASON_RESET && strcmp(ev->why, "reset") == 0)
            h->reset_events[n]++;
        h->changed_at[n] = h->w->now;
    }
}

static void host_start(struct host *h) {
    struct world *w = h->w;
    h->link = breaker__inproc_link_create(w->redis, world_now, w);
    if (h->link == NULL) abort();
    breaker__inproc_link_set_fate(h->link, fate, h);
    h->alive = true; /* its attaches go out */
    breaker__inproc_link_set_wake(h->link, on_wake, h);
    breaker_redis_config rc;
    breaker_redis_config_init(&rc);
    rc.flush_interval_ns = INTERVAL_NS;
    char msg[256];
    if (breaker_redis_open_transport(&rc, &watched_ops, h, BREAKER_REDIS_NO_FLUSHER, &h->fleet, msg,
                                     sizeof msg) != BREAKER_OK) {
        fprintf(stderr, "open: %s\n", msg);
        abort();
    }
    for (int n = 0; n < NAMES; n++) {
        breaker_config c;
        breaker_config_init(&c);
        c.trip = BREAKER_TRIP_TIME_WINDOW;
        c.window_ns = WINDOW_NS;
        c.window_buckets = 10;
        c.min_calls = 10;
        c.failure_rate = 0.5;
        c.open_ns = OPEN_NS;
        c.open_max_ns = OPEN_MAX_NS;
        c.half_open_max_probes = MAX_PROBES;
        c.half_open_successes = SUCCESSES;
        c.probe_timeout_ns = PROBE_NS;
        c.clock = world_now;
        c.clock_ctx = w;
        c.on_event = on_event;
        c.event_ctx = h;
        c.seed = w->seed * 31 + (uint64_t)h->index * 7 + (uint64_t)n + 1;
        int rc2 = breaker_redis_attach(h->fleet, w->names[n], &c, &h->b[n], msg, sizeof msg);
        if (rc2 != BREAKER_OK && rc2 != BREAKER_CONFIG_DIFFERS) {
            fprintf(stderr, "attach: %s\n", msg);
            abort();
        }
        h->completed[n] = h->sent[n] = h->last_seq[n] = 0;
        h->reset_events[n] = h->resets_at_control[n] = h->changed_at[n] = 0;
        /* The resets given before it started: those within the clocks'
         * difference of its start (Redis's clock steps up to 1.5 s) may be
         * taken as made before or after it by a breaker attached without
         * an answer (redis.h); the bound counts them as given after. */
        uint64_t before = 0;
        for (uint64_t k = 0; k < w->resets_given[n] && k < 64; k++)
            before += w->reset_at[n][k] + 2 * SEC < w->now;
        h->resets_at_start[n] = w->resets_given[n] > 64 ? w->resets_given[n] : before;
    }
    memset(h->calls, 0, sizeof h->calls);
    h->alive = true;
    h->stopped_until = 0;
    h->touched = w->now < h->partitioned_until; /* a partition outlives a restart */
    h->last_touch = h->touched ? h->partitioned_until : 0;
    h->started_at = w->now;
    h->next_round = w->now + draw(w) % INTERVAL_NS;
    h->next_call = w->now + draw(w) % (50 * MS);
}

/* Killed: no last round, its calls in flight never complete. */
static void host_kill(struct host *h) {
    h->alive = false; /* every command from now is dropped */
    breaker_redis_close(h->fleet);
    h->fleet = NULL;
    memset(h->b, 0, sizeof h->b);
    h->restart_at = h->w->now + SEC + draw(h->w) % (3 * SEC);
}

static void host_round(struct host *h) {
    struct world *w = h->w;
    h->wake = false;
    (void)breaker_redis_flush(h->fleet);
    w->rounds++;
    uint64_t iv = INTERVAL_NS;
    h->next_round = w->now + iv - iv / 5 + draw(w) % (2 * (iv / 5) + 1);
}

/* The fleet generation of `name` now (for a lease's bookkeeping). */
static uint64_t fleet_gen(struct world *w, int name) { return state_field(w, name, "gen"); }

/* @return true when the call asked Redis for a lease. */
static bool host_call(struct host *h) {
    struct world *w = h->w;
    /* About 40 calls a second per host, each to one name. */
    h->next_call = w->now + 1 + draw(w) % (50 * MS);
    int slot = -1;
    for (int i = 0; i < MAX_CALLS && slot < 0; i++)
        if (!h->calls[i].used) slot = i;
    if (slot < 0) return false;
    struct call *c = &h->calls[slot];
    c->name = (int)(draw(w) % NAMES);
    h->probe_unanswered = false;
    uint64_t probes_before = breaker__inproc_link_probes(h->link);
    int rc = breaker_acquire(h->b[c->name], &c->permit);
    bool asked = breaker__inproc_link_probes(h->link) != probes_before;
    if (rc != BREAKER_OK) return asked;
    c->used = true;
    /* A lease Redis granted (not a token kept for a request it never
     * answered). */
    c->token = breaker_permit_gate_token(&c->permit) != 0;
    c->leased = c->token && !h->probe_unanswered;
    c->granted = c->leased;
    if (c->token) breaker__fleet_token_text(breaker_permit_gate_token(&c->permit), c->token_text);
    bool down = dependency_down(w->now);
    /* Down: half the calls fail at once, half hang past the probe timeout. */
    uint64_t took = down && chance(w, 0.5) ? PROBE_NS + PROBE_NS / 2 : (1 + draw(w) % 50) * MS;
    c->done_at = w->now + took;
    if (c->token) c->lease_gen = fleet_gen(w, c->name);
    if (c->leased) {
        c->lease_deadline = w->now + PROBE_NS;
        note(w, "host %d name %d: leased probe (fleet gen %" PRIu64 ")", h->index, c->name,
             c->lease_gen);
    }
    return asked;
}

static void host_complete(struct host *h, struct call *c) {
    struct world *w = h->w;
    bool fail = dependency_down(c->done_at - 1);
    if (fail) w->last_failure_at = w->now;
    bool probe = breaker_permit_is_probe(&c->permit) != 0;
    int rc = breaker_complete(h->b[c->name], &c->permit, fail ? BREAKER_FAILURE : BREAKER_SUCCESS);
    if (rc == BREAKER_OK && !probe) h->completed[c->name]++;
    if (c->granted && !fail && c->lease_gen == w->half_open_gen[c->name])
        w->half_open_successes[c->name]++;
    c->used = false;
}

/* ---- World faults ---------------------------------------------------------------- */

static void world_fault(struct world *w) {
    double u = unit(w);
    struct host *h = &w->hosts[draw(w) % HOSTS];
    if (u < 0.15) {
        h->partitioned_until = w->now + draw(w) % (3 * SEC);
        h->touched = true;
        touch(h, h->partitioned_until);
        note(w, "host %d partitioned until %.3f s", h->index, (double)h->partitioned_until / 1e9);
    } else if (u < 0.25 && h->alive) {
        /* Its commands already sent still run (they are on the wire). */
        h->stopped_until = w->now + draw(w) % (3 * SEC);
        h->touched = true;
        touch(h, h->stopped_until);
        note(w, "host %d stopped until %.3f s", h->index, (double)h->stopped_until / 1e9);
    } else if (u < 0.4 && h->alive) {
        note(w, "host %d killed", h->index);
        host_kill(h);
    } else if (u < 0.5) {
        bool restart = chance(w, 0.5);
        note(w, restart ? "redis restarted empty" : "redis FLUSHALLed");
        if (restart) {
            breaker__redis_inproc_restart(w->redis);
        } else {
            const char *argv[] = {"FLUSHALL"};
            const size_t len[] = {8};
            breaker_redis_reply_free(breaker__redis_inproc_command(w->redis, 1, argv, len));
        }
        for (int n = 0; n < NAMES; n++)
            w->carried[n] = 0;
        for (int i = 0; i < HOSTS; i++) {
            w->hosts[i].touched = true;
            touch(&w->hosts[i], w->now);
        }
    } else if (u < 0.6) {
        int64_t step = (int64_t)(draw(w) % (2 * SEC)) - (int64_t)SEC / 2;
        w->redis_skew += step;
        for (int i = 0; i < HOSTS; i++) /* the fleet's waits, in Redis's time */
            touch(&w->hosts[i], w->now);
        note(w, "redis clock stepped %+.3f s", (double)step / 1e9);
    } else if (u < 0.8 && h->alive && w->now >= h->partitioned_until) {
        int n = (int)(draw(w) % NAMES);
        char msg[256];
        double v = unit(w);
        int rc;
        int kind;
        if (v < 0.2) {
            rc = fleet_reset(h->fleet, w->names[n], "sim", "reset", msg, sizeof msg);
            kind = CTL_RESET;
        } else if (v < 0.35) {
            rc = fleet_force(h->fleet, w->names[n], BREAKER_FORCED_CLOSED, 2 * SEC, "sim",
                             "forced closed", msg, sizeof msg);
            kind = CTL_CLOSED;
        } else if (v < 0.55) {
            rc = fleet_open_for(h->fleet, w->names[n], 2 * SEC, "sim", "timed open", msg,
                                sizeof msg);
            kind = CTL_OPEN;
        } else if (v < 0.75) {
            bool on = !w->want_shadow[n];
            rc = fleet_set_shadow(h->fleet, w->names[n], on, "sim", "shadow", msg, sizeof msg);
            if (rc == BREAKER_OK) w->want_shadow[n] = on;
            kind = CTL_SHADOW;
        } else {
            /* The open wait cut, or given back. */
            breaker_redis_control_state now;
            rc = breaker_redis_control_get(h->fleet, w->names[n], &now, msg, sizeof msg);
            bool cut = w->want_open_ns[n] != CUT_OPEN_NS;
            now.limits.open_ns = cut ? CUT_OPEN_NS : OPEN_NS;
            now.limits.open_max_ns = cut ? CUT_OPEN_MAX_NS : OPEN_MAX_NS;
            if (rc == BREAKER_OK)
                rc = fleet_reconfigure(h->fleet, w->names[n], &now.limits, 0, "sim", "open wait",
                                       msg, sizeof msg);
            if (rc == BREAKER_OK) w->want_open_ns[n] = now.limits.open_ns;
            kind = CTL_LIMITS;
        }
        w->order[n] = rc == BREAKER_OK ? kind : 0;
        /* Not answered: it may run later (deferred), up to three intervals. */
        if (rc != BREAKER_OK) w->uncertain_until[n] = w->now + 4 * INTERVAL_NS;
        /* Not answered, a reset may still have run (its reply lost): the
         * bound of "at most once" counts it. */
        if (kind == CTL_RESET) {
            if (w->resets_given[n] < 64) w->reset_at[n][w->resets_given[n]] = w->now;
            w->resets_given[n]++;
        }
        for (int i = 0; i < HOSTS; i++)
            w->hosts[i].resets_at_control[n] = w->hosts[i].reset_events[n];
        /* A forced state, or none, replaces the last (the control script
         * keeps one). */
        if (rc == BREAKER_OK && (kind == CTL_OPEN || kind == CTL_CLOSED)) w->forced_kind[n] = kind;
        if (rc == BREAKER_OK && kind == CTL_RESET) w->forced_kind[n] = 0;
        w->order_at[n] = w->now;
        w->control_at[n] = w->now;
        note(w, "host %d: order %d on name %d: %s", h->index, w->order[n], n,
             rc == BREAKER_OK ? "stored" : msg);
    }
}

/* ---- Invariants ------------------------------------------------------------------- */

/* The fleet's last transition was a recovery by probes. */
static bool closed_by_probes(struct world *w, int name) {
    char key[BREAKER__FLEET_KEY_LEN];
    breaker__fleet_key(w->names[name], FLEET_KEY_STATE, key, sizeof key);
    const char *why = breaker__redis_inproc_hget(w->redis, key, "why", NULL);
    return why != NULL && strcmp(why, "probes_succeeded") == 0;
}

static void check(struct world *w) {
    for (int n = 0; n < NAMES; n++) {
        uint64_t gen = fleet_gen(w, n), trips = state_field(w, n, "trips");
        int st = (int)state_field(w, n, "st");
        /* 2: each trip a new generation. */
        if (gen == w->gen[n] && trips > w->trips[n])
            violated(w, "name %d tripped %" PRIu64 " times within generation %" PRIu64, n,
                     trips - w->trips[n], gen);
        if (gen != w->gen[n] && trips > w->trips[n] + (gen - w->gen[n]))
            violated(w, "name %d: %" PRIu64 " trips in %" PRIu64 " generations", n,
                     trips - w->trips[n], gen - w->gen[n]);
        /* 5: a trip on evidence of its period only. */
        if (trips > w->trips[n] && w->gen[n] != 0 && w->now > WINDOW_NS + 2 * SEC &&
            w->now - w->last_failure_at > WINDOW_NS + 2 * SEC)
            violated(w, "name %d tripped with no failure for a whole window", n);
        /* 4: a close by probes is earned. */
        if (w->st[n] == BREAKER_HALF_OPEN && st == BREAKER_CLOSED && gen == w->gen[n] + 1 &&
            closed_by_probes(w, n) && w->half_open_successes[n] < SUCCESSES)
            violated(w, "name %d closed after %" PRIu64 " leased successes (needs %d)", n,
                     w->half_open_successes[n], SUCCESSES);
        if (st == BREAKER_HALF_OPEN && gen != w->half_open_gen[n]) {
            w->half_open_gen[n] = gen;
            w->half_open_successes[n] = 0;
        }
        if (gen != w->gen[n] && st == BREAKER_CLOSED)
            w->carried[n] = w->carried_any[n]; /* W anew */
        if (w->now > w->late_until[n]) w->late_any[n] = 0;
        w->carried_any[n] = w->late_any[n];
        /* The tokens of probes in flight that Redis holds as leases: granted,
         * whether their request was answered or not (4). */
        mark_granted(w, n);
        /* 1: the probe cap, in Redis and in flight. */
        if (leases_held(w, n) > MAX_PROBES)
            violated(w, "name %d: Redis holds %zu leases", n, leases_held(w, n));
        unsigned flying = 0;
        for (int i = 0; i < HOSTS; i++)
            for (int k = 0; k < MAX_CALLS; k++) {
                const struct call *c = &w->hosts[i].calls[k];
                if (c->used && c->leased && c->name == n && c->lease_gen == gen &&
                    w->now < c->lease_deadline)
                    flying++;
            }
        if (flying > MAX_PROBES)
            violated(w, "name %d: %u leased probes in flight (limit %d)", n, flying, MAX_PROBES);
        /* 3: at most once. */
        if (window_calls(w, n) > w->carried[n])
            violated(w, "name %d: the window holds %" PRIu64 " calls, flushes carried %" PRIu64, n,
                     window_calls(w, n), w->carried[n]);
        for (int i = 0; i < HOSTS; i++)
            if (w->hosts[i].alive && w->hosts[i].sent[n] > w->hosts[i].completed[n])
                violated(w, "host %d name %d sent %" PRIu64 " calls of %" PRIu64 " completed", i, n,
                         w->hosts[i].sent[n], w->hosts[i].completed[n]);
        if (gen != w->gen[n]) {
            w->gen_since[n] = w->now;
            char key[BREAKER__FLEET_KEY_LEN];
            breaker__fleet_key(w->names[n], FLEET_KEY_STATE, key, sizeof key);
            const char *why = breaker__redis_inproc_hget(w->redis, key, "why", NULL);
            note(w, "name %d: fleet %s, generation %" PRIu64 " (%s; %" PRIu64 " leased successes)",
                 n, breaker_state_name((enum breaker_state)st), gen, why != NULL ? why : "-",
                 w->half_open_successes[n]);
        }
        w->gen[n] = gen;
        w->trips[n] = trips;
        w->st[n] = st;
    }
}

/* Whether no fault touched host `h` from `since` (less a round) to now, and
 * it lived through it. */
static bool untouched_since(const struct world *w, const struct host *h, uint64_t since) {
    return h->alive && h->started_at + INTERVAL_NS < since && h->last_touch + INTERVAL_NS < since &&
           w->now >= h->partitioned_until;
}

/* 6: the control record reaches every live host no fault touched within
 * two rounds (1.2 intervals each, and one for the command's own round):
 * the forced state, shadow mode and the open wait it asks for, and a reset
 * once; and never a reset twice (a host's reset events are at most the
 * resets given while it lived). */
static void check_orders(struct world *w) {
    for (int n = 0; n < NAMES; n++) {
        for (int i = 0; i < HOSTS; i++) {
            const struct host *h = &w->hosts[i];
            if (h->alive && h->reset_events[n] > w->resets_given[n] - h->resets_at_start[n])
                violated(w, "host %d name %d: %" PRIu64 " resets applied, %" PRIu64 " given", i, n,
                         h->reset_events[n], w->resets_given[n] - h->resets_at_start[n]);
        }
        /* A reset, once, by every host no fault touched; not when another
         * control's reply was lost meanwhile (it may still run, later). */
        if (w->order[n] != CTL_RESET || w->now < w->order_at[n] + 3 * INTERVAL_NS) continue;
        w->order[n] = 0; /* checked once, at its bound */
        if (w->order_at[n] < w->uncertain_until[n]) continue;
        for (int i = 0; i < HOSTS; i++) {
            const struct host *h = &w->hosts[i];
            if (untouched_since(w, h, w->order_at[n]) &&
                h->reset_events[n] != h->resets_at_control[n] + 1)
                violated(w,
                         "host %d name %d: a reset not applied once after two rounds (%" PRIu64
                         " applied)",
                         i, n, h->reset_events[n] - h->resets_at_control[n]);
        }
    }
}

/* 6, the record: two rounds after the control record of a name last
 * changed (as Redis holds it: a control whose reply was lost may run
 * later), every live host no fault touched since is as it asks: forced
 * open, open until a timed open's end, forced closed, or none of these when
 * it forces nothing; shadow mode; the open wait. */
static void check_record(struct world *w) {
    for (int n = 0; n < NAMES; n++) {
        uint64_t cv = state_field(w, n, "cv"), born = state_field(w, n, "born");
        if (cv != w->record_cv[n] || born != w->record_born[n]) {
            w->record_cv[n] = cv;
            w->record_born[n] = born;
            w->record_since[n] = w->now;
            continue;
        }
        if (cv == 0 || w->now < w->record_since[n] + 3 * INTERVAL_NS) continue;
        uint64_t rnow = redis_now(w) / 1000, slack = 3 * INTERVAL_NS / 1000;
        uint64_t cf = state_field(w, n, "cf"), cu = state_field(w, n, "cu");
        bool ends_near = cu != 0 && cu + slack > rnow && cu < rnow + slack;
        bool in_force = cf != 0 && (cu == 0 || rnow < cu);
        bool shadow = state_field(w, n, "ch") != 0;
        uint64_t open_ns = state_field(w, n, "open") * 1000;
        for (int i = 0; i < HOSTS; i++) {
            const struct host *h = &w->hosts[i];
            if (!untouched_since(w, h, w->record_since[n])) continue;
            breaker *b = h->b[n];
            enum breaker_state s = breaker_state_peek(b);
            /* A timed forced close runs out by itself (not released). */
            breaker_stats bs;
            breaker_stats_peek(b, &bs);
            bool forced_state =
                s == BREAKER_FORCED_OPEN || (s == BREAKER_FORCED_CLOSED && bs.forced_until_ns == 0);
            const char *miss = NULL;
            if (!ends_near && in_force && cf == 1 && cu == 0 && s != BREAKER_FORCED_OPEN)
                miss = "a forced open";
            else if (!ends_near && in_force && cf == 1 && cu != 0 && s != BREAKER_OPEN &&
                     s != BREAKER_HALF_OPEN)
                miss = "a timed open";
            else if (!ends_near && in_force && cf == 2 && s != BREAKER_FORCED_CLOSED)
                miss = "a forced close";
            else if (!ends_near && !in_force && forced_state)
                miss = "no forced state";
            else if ((breaker_shadow(b) != 0) != shadow)
                miss = "shadow mode";
            if (miss == NULL) {
                breaker_config c;
                breaker_get_config(b, &c);
                if (c.open_ns != open_ns) miss = "the open wait";
            }
            if (miss != NULL) {
                breaker_redis_stats st;
                breaker_redis_stats_get(h->fleet, &st);
                violated(w,
                         "host %d name %d: %s not reached two rounds after the record's change "
                         "(state %s; rounds %" PRIu64 " answered, %" PRIu64 " failed)",
                         i, n, miss, breaker_state_name(s), st.flushes, st.flush_errors);
            }
        }
    }
}

/* 8: a fleet open reaches every live host no fault touched within two
 * rounds, and no host waits out much more than the fleet has left (a cut of
 * the fleet's wait is a cut of theirs: at most twice what the fleet has
 * left, and a round), two rounds after either changed (a host's own
 * reopening after its probe failed waits its own backoff until its next
 * round). Not in shadow mode (no host refuses), nor while a forced state
 * is in force. */
static void check_follow(struct world *w) {
    if (w->now < w->next_follow_check) return;
    w->next_follow_check = w->now + INTERVAL_NS;
    check_record(w);
    for (int n = 0; n < NAMES; n++) {
        if (state_field(w, n, "st") != 1 || w->want_shadow[n] ||
            w->now < w->gen_since[n] + 3 * INTERVAL_NS ||
            w->now < w->control_at[n] + 3 * INTERVAL_NS) /* the wait cut: 6 checks it */
            continue;
        uint64_t rnow = redis_now(w) / 1000;
        uint64_t cf = state_field(w, n, "cf"), cu = state_field(w, n, "cu");
        if (cf != 0 && (cu == 0 || rnow < cu)) continue;
        uint64_t until = state_field(w, n, "until");
        uint64_t left = until > rnow ? (until - rnow) * 1000 : 0;
        for (int i = 0; i < HOSTS; i++) {
            const struct host *h = &w->hosts[i];
            if (!untouched_since(w, h, w->gen_since[n]) ||
                w->now < h->changed_at[n] + 3 * INTERVAL_NS)
                continue;
            enum breaker_state s = breaker_state_peek(h->b[n]);
            uint64_t waits = s == BREAKER_OPEN ? breaker_retry_after_ns(h->b[n]) : 0;
            if (s == BREAKER_CLOSED)
                violated(w, "host %d name %d closed %.1f s into the fleet's open", i, n,
                         (double)(w->now - w->gen_since[n]) / 1e9);
            else if (waits > 2 * left + 3 * INTERVAL_NS)
                violated(w, "host %d name %d waits %.3f s, the fleet %.3f s", i, n,
                         (double)waits / 1e9, (double)left / 1e9);
        }
    }
}

/* 7: no stuck breaker. */
static void check_recovered(struct world *w) {
    for (int i = 0; i < HOSTS; i++) {
        struct host *h = &w->hosts[i];
        for (int n = 0; h->alive && n < NAMES; n++) {
            enum breaker_state s = breaker_get_state(h->b[n]);
            if (s != BREAKER_CLOSED)
                violated(w, "host %d name %d still %s %.1f s after the faults ended", i, n,
                         breaker_state_name(s), (double)(w->now - FAULTS_NS) / 1e9);
        }
    }
}

/* ---- One seed ---------------------------------------------------------------------- */

static uint64_t rounds_total;

/* The next time anything happens. */
static uint64_t next_time(struct world *w, uint64_t next_fault) {
    uint64_t t = UINT64_MAX;
    if (next_fault < t) t = next_fault;
    for (int i = 0; i < HOSTS; i++) {
        const struct host *h = &w->hosts[i];
        if (!h->alive) {
            if (h->restart_at < t) t = h->restart_at;
            continue;
        }
        uint64_t d = breaker__inproc_link_next_deferred(h->link);
        if (d < t) t = d;
        if (w->now < h->stopped_until) { /* nothing of its own until then */
            if (h->stopped_until < t) t = h->stopped_until;
            continue;
        }
        if (h->wake) return w->now;
        if (h->next_round < t) t = h->next_round;
        if (h->next_call < t) t = h->next_call;
        for (int k = 0; k < MAX_CALLS; k++)
            if (h->calls[k].used && h->calls[k].done_at < t) t = h->calls[k].done_at;
    }
    return t < w->now ? w->now : t;
}

/* Everything due at the world's now, for host `h`; the invariants after
 * each of its operations. */
static void host_step(struct world *w, struct host *h) {
    if (!h->alive) {
        if (w->now >= h->restart_at) host_start(h);
        return;
    }
    if (w->now < h->stopped_until) {
        if (breaker__inproc_link_run_deferred(h->link) > 0) check(w); /* on the wire */
        return;
    }
    /* The invariants after each operation that may change Redis: a
     * completion changes only the host (its result goes out in a round). */
    if (breaker__inproc_link_run_deferred(h->link) > 0) check(w);
    for (int k = 0; k < MAX_CALLS; k++)
        if (h->calls[k].used && w->now >= h->calls[k].done_at) host_complete(h, &h->calls[k]);
    if (w->now >= h->next_call && host_call(h)) check(w);
    if (h->wake || w->now >= h->next_round) {
        host_round(h);
        check(w);
    }
}

/* Every host closed (its last round sends every delta it held back), the
 * window compared with what they completed (3, exactly once), and every
 * host started again. */
static void warmup_end(struct world *w) {
    for (int i = 0; i < HOSTS; i++) {
        breaker_redis_close(w->hosts[i].fleet);
        w->hosts[i].fleet = NULL;
    }
    for (int n = 0; n < NAMES; n++) {
        uint64_t completed = 0;
        for (int i = 0; i < HOSTS; i++)
            completed += w->hosts[i].completed[n];
        if (window_calls(w, n) != completed)
            violated(w,
                     "after the warm-up, name %d's window holds %" PRIu64 " calls of %" PRIu64
                     " completed",
                     n, window_calls(w, n), completed);
    }
    for (int i = 0; i < HOSTS; i++)
        host_start(&w->hosts[i]);
    check(w);
}

static void run_seed(uint64_t seed) {
    struct world *w = calloc(1, sizeof *w);
    if (w == NULL) abort();
    w->seed = seed;
    w->rng = breaker__splitmix64(seed + 0x5eed);
    w->redis = breaker__redis_inproc_create(redis_now, w);
    if (w->redis == NULL) abort();
    for (int n = 0; n < NAMES; n++) {
        snprintf(w->names[n], sizeof w->names[n], "dep%d", n);
        w->want_open_ns[n] = OPEN_NS;
    }
    for (int i = 0; i < HOSTS; i++) {
        w->hosts[i].w = w;
        w->hosts[i].index = i;
        host_start(&w->hosts[i]);
    }
    check(w); /* the states the attaches made */
    bool warm = false, recovered = false;
    uint64_t next_fault = WARMUP_NS + draw(w) % SEC;
    while (w->now < END_NS && failures_seen == 0) {
        w->now = next_time(w, w->faults || w->now < FAULTS_NS ? next_fault : UINT64_MAX);
        if (!warm && w->now >= WARMUP_NS) {
            w->now = WARMUP_NS;
            warmup_end(w);
            warm = true;
        }
        w->faults = w->now >= WARMUP_NS && w->now < FAULTS_NS;
        if (w->faults && w->now >= next_fault) {
            world_fault(w);
            next_fault = w->now + draw(w) % (2 * SEC);
            check(w);
        }
        for (int i = 0; i < HOSTS; i++)
            host_step(w, &w->hosts[i]);
        check_orders(w);
        check_follow(w);
        if (!recovered && w->now >= FAULTS_NS + RECOVERY_BOUND) {
            check_recovered(w);
            recovered = true;
        }
    }
    rounds_total += w->rounds;
    for (int i = 0; i < HOSTS; i++)
        if (w->hosts[i].alive) breaker_redis_close(w->hosts[i].fleet);
    breaker__redis_inproc_destroy(w->redis);
    free(w);
}

int main(int argc, char **argv) {
    uint64_t one = 0, seeds = 0;
    bool have_one = false;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--seed") == 0) {
            one = strtoull(argv[i + 1], NULL, 10);
            have_one = true;
        } else if (strcmp(argv[i], "--seeds") == 0) {
            seeds = strtoull(argv[i + 1], NULL, 10);
        }
    }
    const char *env = getenv("BREAKER_SIM_SEEDS");
    if (env != NULL && seeds == 0) seeds = strtoull(env, NULL, 10);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint64_t ran = 0;
    for (uint64_t s = have_one ? one : 1; failures_seen == 0; s++) {
        run_seed(s);
        ran++;
        if (have_one) break;
        if (seeds != 0 ? ran >= seeds : rounds_total >= MIN_ROUNDS) break;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("test_fleet_sim: %" PRIu64 " seeds, %" PRIu64 " simulated rounds in %.1f s: %s\n", ran,
           rounds_total, secs, failures_seen ? "FAILED" : "every invariant held");
    return failures_seen ? 1 : 0;
}
