/* SPDX-License-Identifier: MIT */
/*
 * fleet.c - the fleet store's client: handles, attached names, the flusher
 * thread, inline probe leases and degraded mode (include/breaker/redis.h,
 * docs/fleet.md).
 *
 * Threads and what they touch:
 *  - callers: breaker_redis_acquire()/complete(). In CLOSED and OPEN only the
 *    local breaker (plus one clock read with FAIL_CLOSED). A probe reads the
 *    entry's gate and the degraded flag, and asks Redis for a lease on the
 *    probe connection, which it only ever try-locks: a caller never waits for
 *    another. A leased probe's completion marks its lease slot and wakes the
 *    flusher through a pipe.
 *  - the flusher (or breaker_redis_flush(), serialised with it by apply_mu):
 *    under round_mu, reads each name's counters, sends deltas and lease
 *    results in one pipelined round trip and decides what the answers mean
 *    for each local breaker; then, with round_mu released, applies those
 *    transitions through breaker_trip_outside() and
 *    breaker_close_outside(). Their events (on_event, registry listeners)
 *    thus run without round_mu, so a listener may call the registry, which
 *    may attach or detach names here (both take round_mu).
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, pipe, poll */

#include "breaker/redis.h"

/* The seam a backend drives its breakers through; public, so this library
 * links the one copy of the core (libbreaker) in every build. */
#define BREAKER_BACKEND_EXPERIMENTAL
#include "breaker/backend.h"
#include "breaker/registry.h" /* breaker_name_validate() */
#include "common/message.h"
#include "common/splitmix.h"
#include "common/time_ns.h"
#include "redis/scripts.h"

#include <hiredis/hiredis.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define MS                      ((uint64_t)1000000)
#define DEFAULT_FLUSH_NS        (250 * MS)
#define DEFAULT_PROBE_BUDGET_NS (25 * MS)
#define DEFAULT_TTL_NS          (3600ull * 1000 * MS)
#define DEFAULT_MAX_NAMES       256u
#define LEASE_SLOTS             16u /* leased probes one name may hold at once in a process */
#define NAME_MAX_LEN            255u

/* A lease slot's state word. */
enum { LEASE_FREE, LEASE_CLAIMED, LEASE_HELD, LEASE_DONE, LEASE_ORPHAN };
/* Results as release_probe takes them. */
enum { RESULT_SUCCESS = 0, RESULT_FAILURE = 1, RESULT_NEITHER = 2 };

struct lease {
    /* LEASE_* in bits 0..7, the result in bits 8..15. A caller claims a FREE
     * slot (CAS), writes token and gen, then publishes HELD (release); the
     * completer CASes HELD to DONE (acq_rel); the flusher reads DONE
     * (acquire), releases the lease in Redis and stores FREE (release). */
    _Atomic uint64_t state;
    _Atomic uint64_t token; /* relaxed: ordered by `state` */
    _Atomic uint64_t gen;   /* the fleet generation the lease was granted in */
    /* LEASE_ORPHAN: a lease request that got no answer (Redis may still
     * grant it): the flusher releases the token, for any generation, in
     * every round until Redis applied the release, or until its deadline
     * (monotonic ns) passed and two answered rounds found no such lease.
     * Written by the caller before its release store of ORPHAN; then
     * flusher-only. relaxed: ordered by `state`. */
    _Atomic uint64_t deadline_ns;
    _Atomic uint32_t stale_answers;
};

struct entry {
    /* The local breaker; NULL once a registry closed it (the entry is then
     * retired: kept for its pending lease results and reused by the next
     * open of its name). Written under round_mu (and attach_mu); the
     * flusher reads it under round_mu, callers relaxed in find_entry(). */
    _Atomic(breaker *) b;
    char name[NAME_MAX_LEN + 1];
    char key[3][NAME_MAX_LEN + 32];
    char limits[320]; /* the limits as the scripts take them (ARGV 2) */
    /* Flusher-only (under round_mu). */
    uint64_t last_succ, last_fail, last_slow, last_psucc, last_pfail;
    int64_t succ_carry;    /* probe successes seen before their stripe's count (take_deltas) */
    uint64_t known_gen;    /* the fleet generation of the last answer, 0 = none */
    uint64_t followed_gen; /* the generation of the fleet open it follows */
    int follows;           /* the local breaker follows the fleet open: reset it
                              when the fleet closes */
    /* Rejoining after a degraded period: the local breaker's generation
     * when the host became degraded (valid when degraded_gen_set), and the
     * fleet generation whose expired open this host declined to follow
     * because its local breaker had recovered meanwhile (0 = none). */
    uint64_t degraded_gen;
    int degraded_gen_set;
    int recovered; /* this round: the local breaker recovered while degraded */
    uint64_t spared_gen;
    /* FAIL_CLOSED: the flusher tripped the local breaker because the fleet
     * view was too old; the first good answer closes it again if the fleet
     * is closed (or leaves it following the fleet's open). */
    int stale_tripped;
    /* Read by callers: relaxed, each is a hint read alone. */
    _Atomic uint64_t gate_until_ns; /* no lease request before this (monotonic) */
    struct lease leases[LEASE_SLOTS];
};

/* A transition a round decided for one entry's local breaker, applied after
 * round_mu is released (under apply_mu). ACT_CHECK: no decision, but the
 * local breaker is HALF_OPEN, so a due probe timeout is applied (the round
 * reads breakers with the peeks, which apply none: their events would run
 * under round_mu). */
enum { ACT_NONE, ACT_TRIP, ACT_CLOSE, ACT_CHECK };
struct action {
    int kind;
    breaker *b;   /* the breaker it was decided for: skipped if detached since */
    uint64_t gen; /* its local generation then: the fence */
    breaker_evidence ev;
};

struct breaker_redis {
    /* What breaker_redis_backend() hands out: a registry calls
     * backend.ops with backend.ctx (this handle). */
    struct breaker_backend backend;
    breaker_redis_config cfg;
    char *host, *unix_path, *password;
    uint32_t max_names;
    /* Attached entries: slots written once under attach_mu, published by
     * the release store of `count`; readers load `count` with acquire. */
    struct entry **entries;
    _Atomic uint32_t count;
    pthread_mutex_t attach_mu;

    /* Lock order: apply_mu, then round_mu (attach_mu, then round_mu). */
    pthread_mutex_t apply_mu; /* one breaker_redis_flush() at a time, with
                                 the transitions it applies */
    struct action *actions;   /* under apply_mu: one per entry (max_names) */
    pthread_mutex_t round_mu; /* one flush round at a time; never on the call path */
    /* Under round_mu: the breaker whose transition the apply phase is
     * delivering now (NULL: none), on which thread; a detach of it from
     * another thread waits for applied_cv, one from that thread (its own
     * listener) leaves it to the apply phase to destroy (`doomed`). */
    breaker *applying;
    pthread_t applier;
    breaker *doomed;
    pthread_cond_t applied_cv;
    /* A round's calls and replies, under round_mu: grown by attach, so that
     * a round allocates nothing of its own (hiredis allocates its replies). */
    struct pending *round_calls;
    redisReply **round_replies;
    size_t round_cap;
    redisContext *flush_ctx;
    char sha[3][41]; /* SHA1s from SCRIPT LOAD on flush_ctx ("" = not loaded) */
    /* The acquire script's SHA for the probe path: a SHA is a function of
     * the script's text, so it is written once and never changes. */
    char acquire_sha[41];
    _Atomic int acquire_sha_ready;

    pthread_mutex_t probe_mu; /* try-locked only */
    redisContext *probe_ctx;

    _Atomic int degraded; /* relaxed: a flag read alone */
    int announced;        /* under round_mu: the state on_degraded last
                             reported, -1 = none yet */
    /* Under round_mu: an on_degraded call the round decided, delivered by
     * breaker_redis_flush() after releasing round_mu (a callback may attach
     * a name, which takes round_mu). */
    int announce_pending, announce_on;
    char announce_why[256];
    _Atomic uint64_t last_ok_ns; /* monotonic time of the last good flush, 0 = none */
    _Atomic uint64_t token_seq;  /* lease tokens */
    uint64_t token_key;
    uint64_t jitter_state; /* flusher-only */

    int wake[2]; /* pipe: [0] polled by the flusher, [1] written to wake it */
    _Atomic int stop;
    pthread_t thread;

    struct {
        _Atomic uint64_t flushes, flush_errors, degraded_entered, leases_granted, leases_refused,
            lease_errors, lease_gated, outside_trips, fleet_closes;
    } n;
};

static struct entry *find_entry(breaker_redis *f, const breaker *b);
static const breaker_backend_ops backend_ops;
static int gate_admit(void *ctx, breaker *b, uint64_t *token);
static enum breaker_outcome gate_settle(void *ctx, breaker *b, uint64_t token,
                                        enum breaker_outcome outcome);

/* Counters: relaxed, they order nothing. */
static void count(_Atomic uint64_t *c) { atomic_fetch_add_explicit(c, 1, memory_order_relaxed); }

static uint64_t mono_ns(void) { return breaker__clock_ns(CLOCK_MONOTONIC); }

/* relaxed: every writer of e->b holds round_mu, and so does the flusher;
 * a caller only compares it with its own breaker (find_entry()). */
static breaker *entry_b(const struct entry *e) {
    return atomic_load_explicit(&e->b, memory_order_relaxed);
}

static struct timeval tv_of(uint64_t ns) {
    if (ns < 1000) ns = 1000;
    struct timeval tv = {.tv_sec = (time_t)(ns / 1000000000ull),
                         .tv_usec = (suseconds_t)((ns % 1000000000ull) / 1000)};
    return tv;
}

static char *dup_or_null(const char *s) {
    if (s == NULL) return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d != NULL) memcpy(d, s, n);
    return d;
}

void breaker_redis_config_init(breaker_redis_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->port = 6379;
    cfg->flush_interval_ns = DEFAULT_FLUSH_NS;
    cfg->probe_budget_ns = DEFAULT_PROBE_BUDGET_NS;
    cfg->key_ttl_ns = DEFAULT_TTL_NS;
    cfg->max_names = DEFAULT_MAX_NAMES;
}

/* ---- Connections ------------------------------------------------------------*/

/* Connect, AUTH and SELECT with `timeout_ns` for each step. @return the
 * context, or NULL with `why` set. */
static redisContext *connect_redis(breaker_redis *f, uint64_t timeout_ns, char *why,
                                   size_t why_len) {
    struct timeval tv = tv_of(timeout_ns);
    redisContext *c = f->unix_path != NULL ? redisConnectUnixWithTimeout(f->unix_path, tv)
                                           : redisConnectWithTimeout(f->host, f->cfg.port, tv);
    if (c == NULL) {
        snprintf(why, why_len, "connect: out of memory");
        return NULL;
    }
    if (c->err) {
        snprintf(why, why_len, "connect: %s", c->errstr);
        redisFree(c);
        return NULL;
    }
    if (redisSetTimeout(c, tv) != REDIS_OK) {
        snprintf(why, why_len, "setting the socket timeout: %s", c->errstr);
        redisFree(c);
        return NULL;
    }
    if (f->password != NULL) {
        redisReply *r = redisCommand(c, "AUTH %s", f->password);
        int ok = r != NULL && r->type == REDIS_REPLY_STATUS;
        snprintf(why, why_len, "AUTH: %s", r == NULL ? c->errstr : r->str ? r->str : "?");
        if (r != NULL) freeReplyObject(r);
        if (!ok) {
            redisFree(c);
            return NULL;
        }
    }
    if (f->cfg.db != 0) {
        redisReply *r = redisCommand(c, "SELECT %d", f->cfg.db);
        int ok = r != NULL && r->type == REDIS_REPLY_STATUS;
        snprintf(why, why_len, "SELECT: %s", r == NULL ? c->errstr : r->str ? r->str : "?");
        if (r != NULL) freeReplyObject(r);
        if (!ok) {
            redisFree(c);
            return NULL;
        }
    }
    return c;
}

static const char *script_text(int which) {
    return which == 0   ? breaker__redis_lua_flush
           : which == 1 ? breaker__redis_lua_acquire
                        : breaker__redis_lua_release;
}

/* SCRIPT LOAD the three scripts on the flush connection (one round trip). */
static int load_scripts(breaker_redis *f, char *why, size_t why_len) {
    for (int i = 0; i < 3; i++)
        redisAppendCommand(f->flush_ctx, "SCRIPT LOAD %s", script_text(i));
    int ok = 1;
    for (int i = 0; i < 3; i++) {
        redisReply *r = NULL;
        if (redisGetReply(f->flush_ctx, (void **)&r) != REDIS_OK) {
            snprintf(why, why_len, "SCRIPT LOAD: %s", f->flush_ctx->errstr);
            return 0;
        }
        if (r->type == REDIS_REPLY_STRING && r->len == 40) {
            memcpy(f->sha[i], r->str, 40);
            f->sha[i][40] = '\0';
            if (i == 1 && !atomic_load_explicit(&f->acquire_sha_ready, memory_order_relaxed)) {
                memcpy(f->acquire_sha, f->sha[1], sizeof f->acquire_sha);
                /* release: pairs with the probe path's acquire load. */
                atomic_store_explicit(&f->acquire_sha_ready, 1, memory_order_release);
            }
        } else {
            snprintf(why, why_len, "SCRIPT LOAD: %s", r->str != NULL ? r->str : "unexpected reply");
            ok = 0;
        }
        freeReplyObject(r);
    }
    return ok;
}

/* ---- Script calls -------------------------------------------------------------*/

#define MAX_ARGS 14

struct call {
    int which; /* 0 flush, 1 acquire, 2 release */
    int argc;  /* the ARGV after the common two */
    char argv[5][24];
};

/* Append EVALSHA (or EVAL when `eval` or no SHA is known) of `call` on `e`. */
static void append_call(breaker_redis *f, redisContext *c, const struct entry *e,
                        const struct call *call, int eval, char ttl[24]) {
    const char *argv[MAX_ARGS];
    size_t len[MAX_ARGS];
    int n = 0;
    const char *sha = f->sha[call->which];
    if (eval || sha[0] == '\0') {
        argv[n++] = "EVAL";
        argv[n++] = script_text(call->which);
    } else {
        argv[n++] = "EVALSHA";
        argv[n++] = sha;
    }
    argv[n++] = "3";
    for (int i = 0; i < 3; i++)
        argv[n++] = e->key[i];
    argv[n++] = ttl;
    argv[n++] = e->limits;
    for (int i = 0; i < call->argc; i++)
        argv[n++] = call->argv[i];
    for (int i = 0; i < n; i++)
        len[i] = strlen(argv[i]);
    redisAppendCommandArgv(c, n, argv, len);
}

static int is_noscript(const redisReply *r) {
    return r != NULL && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0;
}

/* An answer as integers. @return 1 if `r` is one. */
static int parse_answer(const redisReply *r, int64_t out[ANS_COUNT]) {
    if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != ANS_COUNT) return 0;
    for (size_t i = 0; i < ANS_COUNT; i++) {
        if (r->element[i]->type != REDIS_REPLY_INTEGER) return 0;
        out[i] = r->element[i]->integer;
    }
    return 1;
}

/* ---- Applying the fleet state to a local breaker ------------------------------*/

/* Under round_mu: what answer `a` means for `e`'s local breaker, written to
 * `act` (a later answer of the same round overrides an earlier one: the
 * later is the newer fleet state). The transition itself is applied by
 * apply_actions(), without round_mu. */
static void decide(struct entry *e, struct action *act, const int64_t a[ANS_COUNT], uint64_t now) {
    e->known_gen = (uint64_t)a[ANS_GEN];
    breaker *b = entry_b(e);
    if (b == NULL) return; /* retired: only its lease results went */
    /* Read without applying a due probe timeout: its event would run under
     * round_mu (the apply phase applies it: ACT_CHECK). */
    uint64_t local_gen = breaker_generation(b);
    enum breaker_state local = breaker_state_peek(b);
    if (e->stale_tripped) {
        /* FAIL_CLOSED tripped it while the view was too old: a closed fleet
         * closes it again; an open one it follows as any trip. Fenced by
         * the local generation, as every action is. */
        e->stale_tripped = 0;
        if (a[ANS_STATE] == FLEET_CLOSED && (local == BREAKER_OPEN || local == BREAKER_HALF_OPEN)) {
            atomic_store_explicit(&e->gate_until_ns, 0, memory_order_relaxed);
            act->kind = ACT_CLOSE;
            act->b = b;
            act->gen = local_gen;
            e->follows = 0;
            return;
        }
    }
    if (a[ANS_STATE] == FLEET_CLOSED) {
        atomic_store_explicit(&e->gate_until_ns, 0, memory_order_relaxed);
        /* A close of the fleet this host followed: the state was born no
         * later than the open it followed (born 0: a state from before the
         * field, taken as the same). A state created from scratch since
         * (Redis restarted empty, keys expired or deleted) closed nothing:
         * the host keeps its local state, and its local breaker decides. */
        int closed = (uint64_t)a[ANS_BORN] <= e->followed_gen;
        if (e->follows && closed && (local == BREAKER_OPEN || local == BREAKER_HALF_OPEN)) {
            /* The fleet recovered: so does this host, at once (the local
             * probes' successes were recorded as IGNORED: the fleet counted
             * them), as a recovery by probes (a ramp with ramp_ns set).
             * Fenced by the local generation read before the state: a
             * breaker that moved on since (a local trip) is left alone. */
            act->kind = ACT_CLOSE;
            act->b = b;
            act->gen = local_gen;
        } else if (act->kind == ACT_TRIP) {
            act->kind = ACT_NONE; /* an earlier answer's trip: the fleet closed since */
        }                         /* else an earlier answer's close of this round stands */
        e->follows = 0;
        return;
    }
    e->follows = 1;
    e->followed_gen = (uint64_t)a[ANS_GEN];
    if (a[ANS_STATE] == FLEET_OPEN && a[ANS_WAIT_US] > 0) {
        atomic_store_explicit(&e->gate_until_ns, now + (uint64_t)a[ANS_WAIT_US] * 1000,
                              memory_order_relaxed);
    }
    if (local == BREAKER_CLOSED && a[ANS_STATE] == FLEET_OPEN && a[ANS_WAIT_US] <= 0 &&
        (e->recovered || e->spared_gen == (uint64_t)a[ANS_GEN])) {
        /* Redis back after a partition: the local breaker recovered on its
         * own evidence (a successful local probe) while the host was
         * degraded, and the fleet's open wait is over (the fleet only waits
         * for a probe). Tripping a healthy dependency for a whole open wait
         * would gain nothing: this host stays CLOSED for this fleet
         * generation (a later trip, a new generation, is followed). */
        e->spared_gen = (uint64_t)a[ANS_GEN];
        if (act->kind == ACT_TRIP) act->kind = ACT_NONE;
        return;
    }
    if (local == BREAKER_CLOSED) {
        breaker_evidence *ev = &act->ev;
        memset(ev, 0, sizeof *ev);
        ev->calls = (uint64_t)a[ANS_CALLS];
        ev->failures = (uint64_t)a[ANS_FAILURES];
        ev->slow_calls = (uint64_t)a[ANS_SLOW];
        if (ev->calls > 0) {
            ev->failure_rate = (double)ev->failures / (double)ev->calls;
            ev->slow_call_rate = (double)ev->slow_calls / (double)ev->calls;
        }
        ev->failed_recoveries = (uint32_t)a[ANS_K];
        /* Fenced by the local generation: a breaker that moved on since
         * this read (another trip, a reset) is left alone (STALE), and the
         * next answer looks again. */
        act->kind = ACT_TRIP;
        act->b = b;
        act->gen = local_gen;
    } else {
        act->kind = ACT_NONE; /* the fleet is open again: no close */
    }
}

/* Under apply_mu, without round_mu: apply the round's transitions. Each is
 * delivered with `applying` set, so that a detach of its breaker waits for
 * it (another thread) or leaves the destruction to us (a listener of it). */
static void apply_actions(breaker_redis *f, uint32_t n) {
    pthread_t self = pthread_self();
    for (uint32_t i = 0; i < n; i++) {
        struct action *act = &f->actions[i];
        if (act->kind == ACT_NONE) continue;
        int kind = act->kind;
        act->kind = ACT_NONE;
        pthread_mutex_lock(&f->round_mu);
        int live = entry_b(f->entries[i]) == act->b; /* not detached since */
        if (live) {
            f->applying = act->b;
            f->applier = self;
        }
        pthread_mutex_unlock(&f->round_mu);
        if (!live) continue;
        if (kind == ACT_TRIP) {
            if (breaker_trip_outside(act->b, act->gen, &act->ev) == BREAKER_OK)
                count(&f->n.outside_trips);
        } else if (kind == ACT_CLOSE) {
            if (breaker_close_outside(act->b, act->gen, NULL) == BREAKER_OK)
                count(&f->n.fleet_closes);
        } else {
            (void)breaker_get_state(act->b); /* ACT_CHECK: a due probe timeout */
        }
        pthread_mutex_lock(&f->round_mu);
        f->applying = NULL;
        breaker *doomed = f->doomed;
        f->doomed = NULL;
        pthread_cond_broadcast(&f->applied_cv);
        pthread_mutex_unlock(&f->round_mu);
        breaker_destroy(doomed); /* NULL: none */
    }
}

/* ---- One flush round -----------------------------------------------------------*/

/* FAIL_CLOSED: @return 1 when the fleet view is too old to admit calls. */
static int view_too_old(breaker_redis *f) {
    /* acquire: pairs with the flusher's release store after a good round. */
    uint64_t ok = atomic_load_explicit(&f->last_ok_ns, memory_order_acquire);
    return ok == 0 || mono_ns() - ok > f->cfg.stale_after_ns;
}

/* Under round_mu, FAIL_CLOSED, the view too old: trip every closed local
 * breaker, so that its calls are refused on the open short path (the call
 * path never looks at the view's age; the probe gate refuses probes while
 * it stays too old). */
static void trip_stale(breaker_redis *f, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        struct entry *e = f->entries[i];
        breaker *b = entry_b(e);
        if (b == NULL || breaker_state_peek(b) != BREAKER_CLOSED) continue;
        struct action *act = &f->actions[i];
        memset(&act->ev, 0, sizeof act->ev);
        act->kind = ACT_TRIP;
        act->b = b;
        act->gen = breaker_generation(b);
        e->stale_tripped = 1;
    }
}

/* Under round_mu: entries left without an action whose local breaker is
 * HALF_OPEN get ACT_CHECK, so that a hung probe's timeout is applied by the
 * round even without traffic, after round_mu is released. */
static void check_half_open(breaker_redis *f, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        struct action *act = &f->actions[i];
        breaker *b = entry_b(f->entries[i]);
        if (act->kind != ACT_NONE || b == NULL || breaker_state_peek(b) != BREAKER_HALF_OPEN)
            continue;
        act->kind = ACT_CHECK;
        act->b = b;
    }
}

/* The flusher, after a good round: (re)connect the probe connection the
 * call path uses (which never connects inline). The connect runs without
 * probe_mu, so that probes meanwhile are refused at once rather than
 * waiting; the flusher only ever installs a context, callers only drop one. */
static void ensure_probe_ctx(breaker_redis *f) {
    pthread_mutex_lock(&f->probe_mu);
    int need = f->probe_ctx == NULL;
    pthread_mutex_unlock(&f->probe_mu);
    if (!need) return;
    char why[256];
    redisContext *c = connect_redis(f, f->cfg.io_timeout_ns, why, sizeof why);
    if (c == NULL) return; /* the next good round tries again */
    /* A write on the call path blocks no longer than a probe's wait. */
    uint64_t budget = f->cfg.probe_budget_ns;
    if (redisSetTimeout(c, tv_of(budget - budget / 5)) != REDIS_OK) {
        redisFree(c);
        return;
    }
    pthread_mutex_lock(&f->probe_mu);
    if (f->probe_ctx == NULL) {
        f->probe_ctx = c;
        c = NULL;
    }
    pthread_mutex_unlock(&f->probe_mu);
    if (c != NULL) redisFree(c);
}

/* Called under round_mu. The first round's result is always announced:
 * the handle starts degraded, but nobody was told why. */
static void set_degraded(breaker_redis *f, int on, const char *why) {
    atomic_store_explicit(&f->degraded, on, memory_order_relaxed);
    if (f->announced == on) return;
    f->announced = on;
    if (on) count(&f->n.degraded_entered);
    /* Told after round_mu is released (breaker_redis_flush()). */
    f->announce_pending = f->cfg.on_degraded != NULL;
    f->announce_on = on;
    snprintf(f->announce_why, sizeof f->announce_why, "%s", on ? why : "");
}

static void drop_flush_ctx(breaker_redis *f) {
    if (f->flush_ctx != NULL) redisFree(f->flush_ctx);
    f->flush_ctx = NULL;
    for (int i = 0; i < 3; i++)
        f->sha[i][0] = '\0';
}

/* The deltas of `e` since the last round. Closed-state calls only: probes
 * are the fleet's through their leases. */
static void take_deltas(struct entry *e, struct call *call) {
    breaker_stats s;
    /* The peek applies no due probe timeout: a timeout's event would run
     * under round_mu, and a listener that attaches a name takes it. */
    breaker_stats_peek(entry_b(e), &s);
    uint64_t pfail = s.probes_failed - s.probes_timed_out; /* completed as failures */
    /* A probe's success reaches probes_succeeded before its stripe's
     * successes: a snapshot between the two sees one probe success more than
     * successes. Carry the difference to the next round instead of letting
     * the unsigned delta wrap (a wrapped delta made HINCRBY fail the round). */
    int64_t net = (int64_t)(s.successes - e->last_succ) -
                  (int64_t)(s.probes_succeeded - e->last_psucc) + e->succ_carry;
    uint64_t succ = net > 0 ? (uint64_t)net : 0;
    e->succ_carry = net < 0 ? net : 0;
    uint64_t fail = (s.failures - e->last_fail);
    uint64_t pf = pfail - e->last_pfail;
    fail = fail > pf ? fail - pf : 0;
    uint64_t slow = s.slow - e->last_slow;
    e->last_succ = s.successes;
    e->last_fail = s.failures;
    e->last_slow = s.slow;
    e->last_psucc = s.probes_succeeded;
    e->last_pfail = pfail;
    call->which = 0;
    call->argc = 5;
    snprintf(call->argv[0], sizeof call->argv[0], "%" PRIu64, e->known_gen);
    snprintf(call->argv[1], sizeof call->argv[1], "%" PRIu64, succ + fail);
    snprintf(call->argv[2], sizeof call->argv[2], "%" PRIu64, fail);
    snprintf(call->argv[3], sizeof call->argv[3], "%" PRIu64, slow);
    snprintf(call->argv[4], sizeof call->argv[4], "%" PRIu32, s.consecutive_failures);
}

struct pending {
    struct entry *e;
    uint32_t idx; /* e's index in entries (and actions) */
    struct call call;
    struct lease *lease; /* release calls: the slot to free after */
    int keep;            /* an orphan's release: keep the slot after the round */
    int answered;        /* Redis answered this call (not an error reply) */
};

/* Connect (when not connected) and load the scripts. @return 1 or 0. */
static int ensure_connected(breaker_redis *f, char *why, size_t why_len) {
    if (f->flush_ctx != NULL) return 1;
    f->flush_ctx = connect_redis(f, f->cfg.io_timeout_ns, why, why_len);
    if (f->flush_ctx == NULL) return 0;
    if (!load_scripts(f, why, why_len)) {
        drop_flush_ctx(f);
        return 0;
    }
    return 1;
}

/* Send every call of `p` in one pipeline and read the replies into `r`. A
 * Redis that lost its scripts (SCRIPT FLUSH) answers NOSCRIPT: those calls
 * go again as EVAL, which caches the script again. @return 1; 0 when the
 * server closed the connection, -1 when it failed otherwise (timeout): the
 * connection is then dropped. */
static int exchange(breaker_redis *f, struct pending *p, size_t np, redisReply **r, char *ttl,
                    char *why, size_t why_len) {
    redisContext *c = f->flush_ctx;
    for (size_t i = 0; i < np; i++)
        append_call(f, c, p[i].e, &p[i].call, 0, ttl);
    size_t noscript = 0;
    for (size_t i = 0; i < np; i++) {
        if (redisGetReply(c, (void **)&r[i]) != REDIS_OK) goto broken;
        noscript += is_noscript(r[i]);
    }
    if (noscript == 0) return 1;
    for (size_t i = 0; i < np; i++)
        if (is_noscript(r[i])) append_call(f, c, p[i].e, &p[i].call, 1, ttl);
    for (size_t i = 0; i < np; i++) {
        if (!is_noscript(r[i])) continue;
        freeReplyObject(r[i]);
        r[i] = NULL;
        if (redisGetReply(c, (void **)&r[i]) != REDIS_OK) goto broken;
    }
    (void)load_scripts(f, why, why_len); /* EVALSHA again from the next round */
    return 1;
broken:
    snprintf(why, why_len, "flush: %s", c->errstr);
    /* A connection the server closed (a restart) is worth one new try; a
     * timeout is not (a stalled server would cost the round twice). */
    int retry = c->err == REDIS_ERR_EOF ||
                (c->err == REDIS_ERR_IO && (errno == ECONNRESET || errno == EPIPE));
    for (size_t i = 0; i < np; i++) {
        if (r[i] != NULL) freeReplyObject(r[i]);
        r[i] = NULL;
    }
    drop_flush_ctx(f);
    return retry ? 0 : -1;
}

/* A retry after a dropped connection: the server may have run the first
 * pipeline before the connection went, so the deltas are not sent again
 * (they are lost, as a broken connection's cost; counting them twice would
 * be worse). Lease results go again: a release is idempotent (the script
 * checks the token and the generation). */
static void drop_deltas(struct pending *p, size_t np) {
    for (size_t i = 0; i < np; i++) {
        if (p[i].call.which != 0) continue;
        for (int j = 1; j <= 3; j++)
            snprintf(p[i].call.argv[j], sizeof p[i].call.argv[j], "0");
    }
}

/* One round, under round_mu; the transitions it decided are left in
 * f->actions for the first *n_out entries. */
static int round_locked(breaker_redis *f, uint32_t *n_out) {
    char why[256] = "";
    char ttl[24];
    snprintf(ttl, sizeof ttl, "%" PRIu64, f->cfg.key_ttl_ns / MS);
    uint32_t n = atomic_load_explicit(&f->count, memory_order_acquire); /* pairs with attach */
    struct pending *p = f->round_calls; /* room for n names: attach grew it */
    redisReply **r = f->round_replies;
    size_t np = 0;
    int ok = 0, got = 0;
    *n_out = n;
    for (uint32_t i = 0; i < n; i++) {
        struct entry *e = f->entries[i];
        for (unsigned j = 0; j < LEASE_SLOTS; j++) {
            struct lease *l = &e->leases[j];
            /* acquire: pairs with the completer's acq_rel CAS to DONE, so the
             * token, gen and result are this lease's. */
            uint64_t st = atomic_load_explicit(&l->state, memory_order_acquire);
            int orphan = (st & 0xff) == LEASE_ORPHAN;
            if ((st & 0xff) != LEASE_DONE && !orphan) continue;
            struct call *c = &p[np].call;
            c->which = 2;
            c->argc = 3;
            /* An orphan's release: generation 0 (any), result neither. */
            snprintf(c->argv[0], sizeof c->argv[0], "%" PRIu64,
                     orphan ? 0 : atomic_load_explicit(&l->gen, memory_order_relaxed));
            snprintf(c->argv[1], sizeof c->argv[1], "%016" PRIx64,
                     atomic_load_explicit(&l->token, memory_order_relaxed));
            snprintf(c->argv[2], sizeof c->argv[2], "%u",
                     orphan ? (unsigned)RESULT_NEITHER : (unsigned)((st >> 8) & 0xff));
            p[np].e = e;
            p[np].idx = i;
            p[np].lease = l;
            p[np].keep = orphan; /* until the answer says otherwise */
            np++;
        }
        if (entry_b(e) == NULL) continue; /* retired: lease results only */
        p[np].e = e;
        p[np].idx = i;
        take_deltas(e, &p[np].call);
        np++;
    }
    /* One round trip for every name. A connection that worked before may
     * have been cut meanwhile (a Redis restart): one new connection is tried
     * within the round before the fleet is called degraded. */
    int had_ctx = f->flush_ctx != NULL;
    if (!ensure_connected(f, why, sizeof why)) goto done;
    got = exchange(f, p, np, r, ttl, why, sizeof why);
    if (got == 0 && had_ctx && ensure_connected(f, why, sizeof why)) {
        drop_deltas(p, np);
        got = exchange(f, p, np, r, ttl, why, sizeof why);
    }
    if (got != 1) goto done;
    ok = 1;
    /* The first good round after a degraded period: which local breakers
     * moved since the host became degraded and are CLOSED again (they
     * recovered locally, decide()). */
    for (uint32_t i = 0; i < n; i++) {
        struct entry *e = f->entries[i];
        breaker *b = entry_b(e);
        e->recovered = f->announced == 1 && e->degraded_gen_set && b != NULL &&
                       breaker_generation(b) != e->degraded_gen &&
                       breaker_state_peek(b) == BREAKER_CLOSED;
    }
    uint64_t now = mono_ns();
    for (size_t i = 0; i < np; i++) {
        int64_t a[ANS_COUNT];
        if (parse_answer(r[i], a)) {
            p[i].answered = 1;
            decide(p[i].e, &f->actions[p[i].idx], a, now);
            struct lease *l = p[i].lease;
            if (p[i].keep && a[ANS_VERDICT] == VERDICT_APPLIED) {
                p[i].keep = 0; /* the phantom lease is gone */
            } else if (p[i].keep &&
                       now >= atomic_load_explicit(&l->deadline_ns, memory_order_relaxed)) {
                /* relaxed: flusher-only from here on. Two answered rounds
                 * past the deadline: a request still queued in Redis when
                 * it came back was run before the second. */
                uint32_t n_stale =
                    atomic_load_explicit(&l->stale_answers, memory_order_relaxed) + 1;
                atomic_store_explicit(&l->stale_answers, n_stale, memory_order_relaxed);
                p[i].keep = n_stale < 2;
            }
        } else {
            ok = 0;
            if (p[i].keep &&
                now >= atomic_load_explicit(&p[i].lease->deadline_ns, memory_order_relaxed))
                p[i].keep = 0; /* relaxed: flusher-only; no answer to wait for */
            snprintf(why, sizeof why, "flush: %s",
                     r[i] != NULL && r[i]->type == REDIS_REPLY_ERROR ? r[i]->str
                                                                     : "unexpected reply");
        }
    }
done:
    for (size_t i = 0; i < np; i++) {
        /* A lease result is kept until Redis answered its own release (a
         * release is idempotent: sending it again after a round that may
         * have reached Redis is harmless; an error reply, -OOM or -READONLY
         * after a failover, is not an answer). release: pairs with the
         * acquire CAS of a caller claiming a FREE slot. */
        if (p[i].lease != NULL && got == 1 && p[i].answered && !p[i].keep)
            atomic_store_explicit(&p[i].lease->state, LEASE_FREE, memory_order_release);
        if (r[i] != NULL) freeReplyObject(r[i]);
        r[i] = NULL;
        memset(&p[i], 0, sizeof p[i]);
    }
    if (!ok && f->cfg.fail_mode == BREAKER_REDIS_FAIL_CLOSED && view_too_old(f)) trip_stale(f, n);
    check_half_open(f, n);
    if (!ok) {
        count(&f->n.flush_errors);
        if (f->announced != 1) {
            /* Becoming degraded: remember where each local breaker stands,
             * to tell on rejoining whether it recovered on its own (not
             * after answers that may still apply fleet transitions). */
            for (uint32_t i = 0; i < n; i++) {
                struct entry *e = f->entries[i];
                breaker *b = entry_b(e);
                e->degraded_gen_set = got != 1 && b != NULL;
                if (b != NULL) e->degraded_gen = breaker_generation(b);
            }
        }
        set_degraded(f, 1, why);
        return BREAKER_EIO;
    }
    /* Before the host leaves degraded mode: its first probes find it. */
    ensure_probe_ctx(f);
    /* release: pairs with the acquire load in the FAIL_CLOSED check. */
    atomic_store_explicit(&f->last_ok_ns, mono_ns(), memory_order_release);
    count(&f->n.flushes);
    set_degraded(f, 0, "");
    return BREAKER_OK;
}

int breaker_redis_flush(breaker_redis *f) {
    uint32_t n = 0;
    pthread_mutex_lock(&f->apply_mu);
    pthread_mutex_lock(&f->round_mu);
    int rc = round_locked(f, &n);
    int announce = f->announce_pending, on = f->announce_on;
    char why[sizeof f->announce_why];
    memcpy(why, f->announce_why, sizeof why);
    f->announce_pending = 0;
    pthread_mutex_unlock(&f->round_mu);
    /* No lock but apply_mu from here: callbacks and events may attach names
     * (round_mu) or call the registry. */
    if (announce) f->cfg.on_degraded(f->cfg.degraded_ctx, on, why);
    apply_actions(f, n);
    pthread_mutex_unlock(&f->apply_mu);
    return rc;
}

static void *flusher_main(void *arg) {
    breaker_redis *f = arg;
    /* relaxed: `stop` is a flag; the pipe write that follows it wakes us. */
    while (!atomic_load_explicit(&f->stop, memory_order_relaxed)) {
        uint64_t iv = f->cfg.flush_interval_ns;
        /* +-20% jitter, so a fleet's flushes do not march in step. */
        uint64_t r = breaker__splitmix64_next(&f->jitter_state);
        uint64_t wait = iv - iv / 5 + (iv / 5 ? (r % (2 * (iv / 5) + 1)) : 0);
        struct pollfd pfd = {.fd = f->wake[0], .events = POLLIN};
        uint64_t ms = wait / MS;
        (void)poll(&pfd, 1, ms > INT32_MAX ? INT32_MAX : (int)(ms ? ms : 1));
        if (pfd.revents & POLLIN) {
            char buf[64];
            while (read(f->wake[0], buf, sizeof buf) > 0) {
            }
        }
        if (atomic_load_explicit(&f->stop, memory_order_relaxed)) break;
        (void)breaker_redis_flush(f);
    }
    return NULL;
}

static void wake_flusher(breaker_redis *f) {
    char one = 1;
    /* Non-blocking: a full pipe already holds a wake-up. */
    ssize_t w = write(f->wake[1], &one, 1);
    (void)w;
}

/* ---- Open, close, attach -------------------------------------------------------*/

int breaker_redis_open(const breaker_redis_config *cfg, breaker_redis **out, char *msg,
                       size_t msg_len) {
    *out = NULL;
    if (cfg->unix_path == NULL && (cfg->port < 0 || cfg->port > 65535))
        return breaker__fail(BREAKER_EINVAL, msg, msg_len, "port: must be 0..65535 (got %d)",
                             cfg->port);
    if (cfg->db < 0)
        return breaker__fail(BREAKER_EINVAL, msg, msg_len, "db: must be >= 0 (got %d)", cfg->db);
    if (cfg->fail_mode != BREAKER_REDIS_FAIL_LOCAL && cfg->fail_mode != BREAKER_REDIS_FAIL_CLOSED)
        return breaker__fail(BREAKER_EINVAL, msg, msg_len,
                             "fail_mode: must be BREAKER_REDIS_FAIL_LOCAL or _CLOSED (got %d)",
                             (int)cfg->fail_mode);
    if (cfg->key_ttl_ns != 0 && cfg->key_ttl_ns < 1000 * MS)
        return breaker__fail(BREAKER_EINVAL, msg, msg_len, "key_ttl_ns: must be 0 or >= 1 s");
    if (cfg->flush_interval_ns != 0 && cfg->flush_interval_ns < MS)
        return breaker__fail(BREAKER_EINVAL, msg, msg_len,
                             "flush_interval_ns: must be 0 or >= 1 ms");
    breaker_redis *f = calloc(1, sizeof *f);
    if (f == NULL) return breaker__fail(BREAKER_ENOMEM, msg, msg_len, "out of memory");
    f->cfg = *cfg;
    f->backend.ops = &backend_ops;
    f->backend.ctx = f;
    if (f->cfg.port == 0) f->cfg.port = 6379;
    if (f->cfg.flush_interval_ns == 0) f->cfg.flush_interval_ns = DEFAULT_FLUSH_NS;
    if (f->cfg.probe_budget_ns == 0) f->cfg.probe_budget_ns = DEFAULT_PROBE_BUDGET_NS;
    if (f->cfg.io_timeout_ns == 0) f->cfg.io_timeout_ns = f->cfg.flush_interval_ns / 2;
    if (f->cfg.key_ttl_ns == 0) f->cfg.key_ttl_ns = DEFAULT_TTL_NS;
    if (f->cfg.stale_after_ns == 0) f->cfg.stale_after_ns = 4 * f->cfg.flush_interval_ns;
    f->max_names = f->cfg.max_names ? f->cfg.max_names : DEFAULT_MAX_NAMES;
    f->host = dup_or_null(cfg->host != NULL ? cfg->host : "127.0.0.1");
    f->unix_path = dup_or_null(cfg->unix_path);
    f->password = dup_or_null(cfg->password);
    f->entries = calloc(f->max_names, sizeof *f->entries);
    f->actions = calloc(f->max_names, sizeof *f->actions);
    f->wake[0] = f->wake[1] = -1;
    if (f->host == NULL || (cfg->unix_path && !f->unix_path) || (cfg->password && !f->password) ||
        f->entries == NULL || f->actions == NULL) {
        breaker_redis_close(f);
        return breaker__fail(BREAKER_ENOMEM, msg, msg_len, "out of memory");
    }
    f->cfg.host = f->host;
    f->cfg.unix_path = f->unix_path;
    f->cfg.password = f->password;
    uint64_t seed = mono_ns() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)f;
    f->token_key = breaker__splitmix64_next(&seed);
    f->jitter_state = breaker__splitmix64_next(&seed);
    atomic_init(&f->degraded, 1); /* until the first good flush */
    f->announced = -1;
    pthread_mutex_init(&f->attach_mu, NULL);
    pthread_mutex_init(&f->apply_mu, NULL);
    pthread_mutex_init(&f->round_mu, NULL);
    pthread_cond_init(&f->applied_cv, NULL);
    pthread_mutex_init(&f->probe_mu, NULL);
    if (pipe(f->wake) != 0 || fcntl(f->wake[0], F_SETFL, O_NONBLOCK) != 0 ||
        fcntl(f->wake[1], F_SETFL, O_NONBLOCK) != 0 ||
        pthread_create(&f->thread, NULL, flusher_main, f) != 0) {
        int err = errno;
        if (f->wake[0] >= 0) close(f->wake[0]);
        if (f->wake[1] >= 0) close(f->wake[1]);
        f->wake[0] = f->wake[1] = -1;
        breaker_redis_close(f);
        return breaker__fail(BREAKER_EIO, msg, msg_len, "starting the flusher: %s", strerror(err));
    }
    *out = f;
    return BREAKER_OK;
}

void breaker_redis_close(breaker_redis *f) {
    if (f == NULL) return;
    if (f->wake[1] >= 0) {
        atomic_store_explicit(&f->stop, 1, memory_order_relaxed);
        wake_flusher(f);
        pthread_join(f->thread, NULL);
        /* A last round, so a short-lived process's evidence and probe
         * results reach the fleet (not while degraded: Redis did not answer
         * the last round, and exiting should not wait for it again). */
        if (!breaker_redis_degraded(f)) (void)breaker_redis_flush(f);
        close(f->wake[0]);
        close(f->wake[1]);
        pthread_mutex_destroy(&f->attach_mu);
        pthread_mutex_destroy(&f->apply_mu);
        pthread_mutex_destroy(&f->round_mu);
        pthread_cond_destroy(&f->applied_cv);
        pthread_mutex_destroy(&f->probe_mu);
    }
    uint32_t n = atomic_load_explicit(&f->count, memory_order_acquire);
    for (uint32_t i = 0; i < n; i++) {
        breaker_destroy(entry_b(f->entries[i])); /* NULL when retired */
        free(f->entries[i]);
    }
    drop_flush_ctx(f);
    if (f->probe_ctx != NULL) redisFree(f->probe_ctx);
    free(f->entries);
    free(f->actions);
    free(f->round_calls);
    free(f->round_replies);
    free(f->host);
    free(f->unix_path);
    free(f->password);
    free(f);
}

/* The limits as the scripts read them (scripts.c: c[1..13]); the 13th,
 * failure_threshold, only with a CONSECUTIVE policy (0 otherwise). */
static void format_limits(const breaker_config *c, char *out, size_t len) {
    uint64_t window_us = c->window_ns / 1000;
    uint32_t buckets = c->window_buckets ? c->window_buckets : 10;
    uint32_t threshold = c->trip == BREAKER_TRIP_CONSECUTIVE ? c->failure_threshold : 0;
    snprintf(out, len,
             "%" PRIu32 " %.17g %.17g %" PRIu64 " %" PRIu32 " %" PRIu64 " %.17g %" PRIu64
             " %.17g %" PRIu32 " %" PRIu32 " %" PRIu64 " %" PRIu32,
             c->min_calls, c->failure_rate, c->slow_call_rate, window_us, buckets,
             c->open_ns / 1000, c->open_backoff, c->open_max_ns / 1000, c->open_jitter,
             c->half_open_max_probes, c->half_open_successes, c->probe_timeout_ns / 1000,
             threshold);
}

/* Room in the round arrays for `names` names (their flushes and lease
 * results). Takes round_mu: a round in progress finishes first. */
static int grow_round(breaker_redis *f, uint32_t names) {
    size_t need = (size_t)names * (1 + LEASE_SLOTS);
    int ok = 1;
    pthread_mutex_lock(&f->round_mu);
    if (need > f->round_cap) {
        struct pending *p = realloc(f->round_calls, need * sizeof *p);
        if (p != NULL) f->round_calls = p;
        redisReply **r = realloc(f->round_replies, need * sizeof *r);
        if (r != NULL) f->round_replies = r;
        if (p != NULL && r != NULL) {
            memset(p + f->round_cap, 0, (need - f->round_cap) * sizeof *p);
            memset(r + f->round_cap, 0, (need - f->round_cap) * sizeof *r);
            f->round_cap = need;
        } else {
            ok = 0;
        }
    }
    pthread_mutex_unlock(&f->round_mu);
    return ok;
}

/* The stored limits of `e`'s name (the first attacher's), read at attach:
 * one round trip on the flush connection, under round_mu. The flush script
 * with no deltas stores `e->limits` when the name has none yet (so the
 * first to attach wins, not the first to flush), then HGET reads what is
 * stored. Skipped, and the caller's limits used, when Redis is known to be
 * down (the last round failed) or does not answer within io_timeout_ns.
 * @return 1 with `cfg` overlaid by the stored limits, or 0. */
static int read_stored_limits(breaker_redis *f, struct entry *e, breaker_config *cfg) {
    char why[256];
    char ttl[24];
    snprintf(ttl, sizeof ttl, "%" PRIu64, f->cfg.key_ttl_ns / MS);
    struct call c = {.which = 0, .argc = 5};
    for (int i = 0; i < 5; i++)
        snprintf(c.argv[i], sizeof c.argv[i], "0");
    pthread_mutex_lock(&f->round_mu);
    int ok = f->announced != 1 && ensure_connected(f, why, sizeof why);
    redisReply *r[2] = {NULL, NULL};
    if (ok) {
        append_call(f, f->flush_ctx, e, &c, 1, ttl); /* EVAL: no NOSCRIPT to handle */
        redisAppendCommand(f->flush_ctx, "HGET %s cfg", e->key[0]);
        for (int i = 0; i < 2 && ok; i++)
            ok = redisGetReply(f->flush_ctx, (void **)&r[i]) == REDIS_OK;
        if (!ok) drop_flush_ctx(f);
    }
    pthread_mutex_unlock(&f->round_mu);
    double v[13];
    int n = 0;
    if (ok && r[1] != NULL && r[1]->type == REDIS_REPLY_STRING) {
        const char *p = r[1]->str;
        char *end;
        for (; n < 13; n++, p = end) {
            v[n] = strtod(p, &end);
            if (end == p) break;
        }
    }
    for (int i = 0; i < 2; i++)
        if (r[i] != NULL) freeReplyObject(r[i]);
    if (n < 12) return 0;
    cfg->min_calls = (uint32_t)v[0];
    cfg->failure_rate = v[1];
    cfg->slow_call_rate = v[2];
    cfg->window_ns = (uint64_t)v[3] * 1000;
    cfg->window_buckets = (uint32_t)v[4];
    cfg->open_ns = (uint64_t)v[5] * 1000;
    cfg->open_backoff = v[6];
    cfg->open_max_ns = (uint64_t)v[7] * 1000;
    cfg->open_jitter = v[8];
    cfg->half_open_max_probes = (uint32_t)v[9];
    cfg->half_open_successes = (uint32_t)v[10];
    cfg->probe_timeout_ns = (uint64_t)v[11] * 1000;
    if (n == 13 && v[12] > 0) {
        cfg->trip = BREAKER_TRIP_CONSECUTIVE;
        cfg->failure_threshold = (uint32_t)v[12];
    } else if (cfg->trip == BREAKER_TRIP_CONSECUTIVE) {
        cfg->trip = BREAKER_TRIP_TIME_WINDOW; /* the fleet keeps a window */
    }
    return breaker_config_validate(cfg, NULL, 0) == BREAKER_OK;
}

/* FAIL_CLOSED: a breaker attached while the fleet view is too old (none
 * yet, or Redis gone) starts refused, as the flusher would leave it at its
 * next round (trip_stale()); the first good answer closes it again. Its
 * event runs here, on the attaching thread, with no lock held. */
static void fail_closed_at_attach(breaker_redis *f, struct entry *e, breaker *b) {
    if (f->cfg.fail_mode != BREAKER_REDIS_FAIL_CLOSED || !view_too_old(f)) return;
    if (breaker_trip_outside(b, breaker_generation(b), NULL) != BREAKER_OK) return;
    pthread_mutex_lock(&f->round_mu);
    if (entry_b(e) == b) e->stale_tripped = 1;
    pthread_mutex_unlock(&f->round_mu);
}

/* Attach `name` to `f` with a local breaker made from `cfg` (NULL: the
 * defaults) and `owner` (NULL: none). `shared`: another live entry of the
 * name is allowed (a registry may open a name again while a handle it
 * evicted is still in use: each handle flushes its own deltas); a retired
 * entry of the name is reused when there is one. */
static int attach_entry(breaker_redis *f, const char *name, const breaker_config *cfg,
                        const breaker_owner *owner, int shared, breaker **out, char *msg,
                        size_t msg_len) {
    *out = NULL;
    int rc = breaker_name_validate(name, msg, msg_len);
    if (rc != BREAKER_OK) return rc;
    /* The fleet's scope rides on the handle: its probes ask for leases. */
    const breaker_probe_gate gate = {.admit = gate_admit, .settle = gate_settle, .ctx = f};
    if (strlen(name) > NAME_MAX_LEN)
        return breaker__fail(BREAKER_EINVAL, msg, msg_len, "name: at most %u bytes", NAME_MAX_LEN);
    if (cfg != NULL && (rc = breaker_config_validate(cfg, msg, msg_len)) != BREAKER_OK) return rc;
    breaker *b = NULL;
    rc = breaker_create_bound(cfg, owner, &gate, &b);
    if (rc != BREAKER_OK)
        return breaker__fail(rc, msg, msg_len, "creating the local breaker: %s",
                             breaker_strerror(rc));
    breaker_config eff;
    breaker_get_config(b, &eff); /* defaults applied */
    char limits[sizeof((struct entry *)0)->limits];
    format_limits(&eff, limits, sizeof limits);
    /* The stored limits win, as in a store file: a local breaker asked with
     * others is made with the stored ones (BREAKER_CONFIG_DIFFERS). */
    int differs = 0;
    {
        struct entry *probe = calloc(1, sizeof *probe);
        if (probe == NULL) {
            breaker_destroy(b);
            return breaker__fail(BREAKER_ENOMEM, msg, msg_len, "out of memory");
        }
        static const char *const sfx[3] = {"s", "w", "l"};
        for (int i = 0; i < 3; i++)
            snprintf(probe->key[i], sizeof probe->key[i], "breaker:v1:{%s}:%s", name, sfx[i]);
        memcpy(probe->limits, limits, sizeof limits);
        breaker_config stored = eff;
        char theirs[sizeof limits];
        if (read_stored_limits(f, probe, &stored)) {
            format_limits(&stored, theirs, sizeof theirs);
            if (strcmp(theirs, limits) != 0) {
                breaker *again = NULL;
                if (breaker_create_bound(&stored, owner, &gate, &again) == BREAKER_OK) {
                    breaker_destroy(b);
                    b = again;
                    memcpy(limits, theirs, sizeof limits);
                    differs = 1;
                }
            }
        }
        free(probe);
    }

    pthread_mutex_lock(&f->attach_mu);
    uint32_t n = atomic_load_explicit(&f->count, memory_order_relaxed); /* under attach_mu */
    struct entry *reuse = NULL;
    rc = BREAKER_OK;
    for (uint32_t i = 0; i < n; i++) {
        struct entry *o = f->entries[i];
        if (strcmp(o->name, name) != 0) continue;
        if (entry_b(o) == NULL) {
            if (reuse == NULL) reuse = o;
        } else if (!shared) {
            rc = BREAKER_EINVAL;
        }
    }
    if (rc == BREAKER_OK && reuse != NULL) {
        /* A retired entry of this name: its keys are right and its lease
         * slots may still hold results to send. Re-armed under round_mu, as
         * the flusher reads these fields. */
        pthread_mutex_lock(&f->round_mu);
        memcpy(reuse->limits, limits, sizeof limits);
        reuse->last_succ = reuse->last_fail = reuse->last_slow = 0;
        reuse->last_psucc = reuse->last_pfail = 0;
        reuse->succ_carry = 0;
        reuse->follows = 0;
        reuse->followed_gen = 0;
        reuse->degraded_gen_set = 0;
        reuse->recovered = 0;
        reuse->spared_gen = 0;
        reuse->stale_tripped = 0;
        atomic_store_explicit(&reuse->gate_until_ns, 0, memory_order_relaxed);
        atomic_store_explicit(&reuse->b, b, memory_order_relaxed); /* under round_mu */
        pthread_mutex_unlock(&f->round_mu);
        pthread_mutex_unlock(&f->attach_mu);
        *out = b;
        fail_closed_at_attach(f, reuse, b);
        goto attached;
    }
    struct entry *e = NULL;
    if (rc == BREAKER_OK && n >= f->max_names) rc = BREAKER_REGISTRY_FULL;
    if (rc == BREAKER_OK && !grow_round(f, n + 1)) rc = BREAKER_ENOMEM;
    if (rc == BREAKER_OK && (e = calloc(1, sizeof *e)) == NULL) rc = BREAKER_ENOMEM;
    if (rc == BREAKER_OK) {
        atomic_init(&e->b, b);
        memcpy(e->limits, limits, sizeof limits);
        snprintf(e->name, sizeof e->name, "%s", name);
        static const char *const suffix[3] = {"s", "w", "l"};
        for (int i = 0; i < 3; i++)
            snprintf(e->key[i], sizeof e->key[i], "breaker:v1:{%s}:%s", name, suffix[i]);
        f->entries[n] = e;
        /* release: publishes the entry to the flusher and to lookups. */
        atomic_store_explicit(&f->count, n + 1, memory_order_release);
    }
    pthread_mutex_unlock(&f->attach_mu);
    if (rc != BREAKER_OK) {
        breaker_destroy(b);
        return breaker__fail(rc, msg, msg_len,
                             rc == BREAKER_EINVAL          ? "%s: attached already"
                             : rc == BREAKER_REGISTRY_FULL ? "%s: max_names reached"
                                                           : "%s: out of memory",
                             name);
    }
    *out = b;
    fail_closed_at_attach(f, e, b);
attached:
    if (differs)
        return breaker__fail(BREAKER_CONFIG_DIFFERS, msg, msg_len,
                             "%s: stored in Redis with other limits; they win "
                             "(breaker_get_config() shows them)",
                             name);
    return BREAKER_OK;
}

int breaker_redis_attach(breaker_redis *f, const char *name, const breaker_config *cfg,
                         breaker **out, char *msg, size_t msg_len) {
    return attach_entry(f, name, cfg, NULL, 0, out, msg, msg_len);
}

/* ---- The registry's view (registry/store.h) ----------------------------------------*/

static int registry_open(void *ctx, const char *name, const breaker_config *cfg,
                         const breaker_owner *owner, breaker **out) {
    int rc = attach_entry(ctx, name, cfg, owner, 1, out, NULL, 0);
    return rc == BREAKER_CONFIG_DIFFERS ? BREAKER_OK : rc; /* attached, to the stored limits */
}

/* Detach: retire the entry (the flusher stops reading the breaker; the
 * name's state in Redis stays, for the other hosts and the next open) and
 * free the local breaker. Its deltas since the last round are not sent. */
static void registry_close(void *ctx, breaker *b) {
    breaker_redis *f = ctx;
    struct entry *e = find_entry(f, b);
    if (e != NULL) {
        pthread_mutex_lock(&f->round_mu); /* the round is not reading b */
        /* A transition of b being delivered on another thread: wait for it
         * (its events reach the owner, which frees its record once we
         * return). On this thread (b's own listener detaches it): b is
         * still on the stack below us, so the apply phase destroys it. */
        while (f->applying == b && !pthread_equal(f->applier, pthread_self()))
            pthread_cond_wait(&f->applied_cv, &f->round_mu);
        atomic_store_explicit(&e->b, NULL, memory_order_relaxed); /* under round_mu */
        if (f->applying == b) {
            f->doomed = b;
            b = NULL;
        }
        pthread_mutex_unlock(&f->round_mu);
    }
    breaker_destroy(b); /* NULL: left to the apply phase */
}

int breaker_redis_detach(breaker_redis *f, breaker *b) {
    struct entry *e = find_entry(f, b);
    if (e == NULL || atomic_load_explicit(&e->b, memory_order_relaxed) == NULL)
        return BREAKER_EINVAL;
    registry_close(f, b);
    return BREAKER_OK;
}

static const breaker_backend_ops backend_ops = {
    .name = "redis",
    .open = registry_open,
    .close = registry_close,
    .fini = NULL, /* the fleet handle is the caller's */
};

breaker_backend *breaker_redis_backend(breaker_redis *f) { return &f->backend; }

/* ---- The call path ----------------------------------------------------------------*/

static struct entry *find_entry(breaker_redis *f, const breaker *b) {
    uint32_t n = atomic_load_explicit(&f->count, memory_order_acquire); /* pairs with attach */
    for (uint32_t i = 0; i < n; i++)
        if (entry_b(f->entries[i]) == b) return f->entries[i];
    return NULL;
}

/* LOST: the request was sent (at least in part) but got no answer in time:
 * Redis may still run it and grant the lease. */
enum lease_answer {
    LEASE_ANS_GRANTED,
    LEASE_ANS_CLOSED,
    LEASE_ANS_REFUSED,
    LEASE_ANS_ERROR,
    LEASE_ANS_LOST
};

/* One command on `c`, waiting for its answer no later than `deadline`
 * (monotonic ns) by poll(), which is precise where a socket timeout is
 * rounded up to the kernel's tick. @return the reply, or NULL (error or
 * deadline: the connection must then not be reused, since a late answer may
 * still arrive on it). */
static redisReply *command_by(redisContext *c, int argc, const char **argv, const size_t *len,
                              uint64_t deadline) {
    if (redisAppendCommandArgv(c, argc, argv, len) != REDIS_OK) return NULL;
    int done = 0;
    while (!done)
        if (redisBufferWrite(c, &done) != REDIS_OK) return NULL;
    for (;;) {
        void *reply = NULL;
        if (redisGetReplyFromReader(c, &reply) != REDIS_OK) return NULL;
        if (reply != NULL) return reply;
        uint64_t now = mono_ns();
        if (now >= deadline) return NULL;
        struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
        int ms = (int)((deadline - now) / MS); /* rounded down; 0 polls once */
        int ready = poll(&pfd, 1, ms);
        if (ready < 0 && errno != EINTR) return NULL;
        if (ready > 0 && redisBufferRead(c) != REDIS_OK) return NULL;
    }
}

/* Ask Redis for a lease for `e` with `token`, answered before `deadline`.
 * Called with probe_mu held. */
static enum lease_answer ask_lease(breaker_redis *f, struct entry *e, uint64_t token,
                                   uint64_t deadline, int64_t a[ANS_COUNT]) {
    uint64_t now = mono_ns();
    if (now >= deadline) return LEASE_ANS_ERROR;
    /* Never connected inline: a connect resolves the host name without a
     * timeout, and AUTH and SELECT each wait for Redis. The flusher
     * (re)connects the probe connection after a good round; until then
     * the lease is refused at once. */
    if (f->probe_ctx == NULL) return LEASE_ANS_ERROR;
    char ttl[24];
    snprintf(ttl, sizeof ttl, "%" PRIu64, f->cfg.key_ttl_ns / MS);
    char tok[24];
    snprintf(tok, sizeof tok, "%016" PRIx64, token);
    /* EVALSHA once the flusher has loaded the script (acquire: pairs with
     * its release store), EVAL before that or after a NOSCRIPT. */
    int eval = !atomic_load_explicit(&f->acquire_sha_ready, memory_order_acquire);
    redisReply *r = NULL;
    for (int attempt = 0; attempt < 2; attempt++) {
        const char *argv[MAX_ARGS];
        size_t len[MAX_ARGS];
        int n = 0;
        argv[n++] = eval ? "EVAL" : "EVALSHA";
        argv[n++] = eval ? breaker__redis_lua_acquire : f->acquire_sha;
        argv[n++] = "3";
        for (int i = 0; i < 3; i++)
            argv[n++] = e->key[i];
        argv[n++] = ttl;
        argv[n++] = e->limits;
        argv[n++] = tok;
        for (int i = 0; i < n; i++)
            len[i] = strlen(argv[i]);
        r = command_by(f->probe_ctx, n, argv, len, deadline);
        if (r == NULL || !is_noscript(r)) break;
        freeReplyObject(r);
        r = NULL;
        eval = 1;
    }
    if (r == NULL) {
        redisFree(f->probe_ctx);
        f->probe_ctx = NULL;
        return LEASE_ANS_LOST;
    }
    int ok = parse_answer(r, a);
    freeReplyObject(r);
    if (!ok) return LEASE_ANS_ERROR;
    if (a[ANS_VERDICT] == VERDICT_GRANTED) return LEASE_ANS_GRANTED;
    if (a[ANS_VERDICT] == VERDICT_CLOSED) return LEASE_ANS_CLOSED;
    return LEASE_ANS_REFUSED;
}

static struct lease *claim_slot(struct entry *e) {
    for (unsigned j = 0; j < LEASE_SLOTS; j++) {
        uint64_t expect = LEASE_FREE;
        /* acquire on success: pairs with the flusher's release store of
         * FREE (its reads of the old lease are done). */
        if (atomic_compare_exchange_strong_explicit(&e->leases[j].state, &expect, LEASE_CLAIMED,
                                                    memory_order_acquire, memory_order_relaxed))
            return &e->leases[j];
    }
    return NULL;
}

/* A lease's token as the probe's permit carries it (breaker/backend.h: the
 * gate's token): random bits above, the lease slot + 1 in the low bits, so
 * settling finds the slot without a search and a token is never 0. */
#define LEASE_SLOT_BITS 5u
_Static_assert(LEASE_SLOTS < (1u << LEASE_SLOT_BITS), "a lease slot + 1 fits the token's low bits");

static uint64_t lease_token(breaker_redis *f, unsigned slot) {
    uint64_t r =
        f->token_key ^
        breaker__splitmix64(atomic_fetch_add_explicit(&f->token_seq, 1, memory_order_relaxed));
    return (r & ~(uint64_t)((1u << LEASE_SLOT_BITS) - 1)) | (slot + 1);
}

/* The probe gate (breaker/backend.h) of every breaker attached through a
 * fleet handle: breaker_acquire() calls it when the local breaker has just
 * admitted a probe, on whatever path it was called (directly, by a
 * registry, by the executor, by `breaker exec`). The fleet's answer decides:
 * a lease within the probe budget, or a refusal. The closed and open calls
 * never come here. */
static int gate_admit(void *ctx, breaker *b, uint64_t *token_out) {
    breaker_redis *f = ctx;
    /* FAIL_CLOSED: no probe while the fleet view is too old (the flusher
     * has tripped the closed breakers meanwhile: flush_round()). */
    if (f->cfg.fail_mode == BREAKER_REDIS_FAIL_CLOSED && view_too_old(f))
        return BREAKER_REJECTED_OPEN;
    /* Degraded: the local breaker alone decides. relaxed: a flag read alone
     * (a stale answer costs one lease request, or one local probe). */
    if (atomic_load_explicit(&f->degraded, memory_order_relaxed)) return BREAKER_OK;
    struct entry *e = find_entry(f, b);
    if (e == NULL) return BREAKER_OK; /* detached meanwhile: a plain local probe */
    uint64_t start = mono_ns();
    if (start < atomic_load_explicit(&e->gate_until_ns, memory_order_relaxed)) {
        count(&f->n.lease_gated);
        return BREAKER_REJECTED_HALF_OPEN;
    }
    struct lease *l = claim_slot(e);
    if (l == NULL || pthread_mutex_trylock(&f->probe_mu) != 0) {
        /* relaxed (here and below): nothing was written under the claim. */
        if (l != NULL) atomic_store_explicit(&l->state, LEASE_FREE, memory_order_relaxed);
        count(&f->n.lease_gated);
        return BREAKER_REJECTED_HALF_OPEN;
    }
    uint64_t token = lease_token(f, (unsigned)(l - e->leases));
    int64_t a[ANS_COUNT];
    /* The whole acquire returns within the budget: the wait for Redis ends
     * at 80% of it, leaving the rest for a late wake-up of this thread and
     * for the local release of a refused probe. */
    uint64_t budget = f->cfg.probe_budget_ns;
    enum lease_answer ans = ask_lease(f, e, token, start + budget - budget / 5, a);
    pthread_mutex_unlock(&f->probe_mu);
    uint64_t now = mono_ns();
    if (ans == LEASE_ANS_GRANTED && now - start > budget) {
        /* Granted, but too late to use: give the lease straight back. */
        atomic_store_explicit(&l->token, token, memory_order_relaxed);
        atomic_store_explicit(&l->gen, (uint64_t)a[ANS_GEN], memory_order_relaxed);
        /* release: the flusher's acquire load sees token and gen. */
        atomic_store_explicit(&l->state, LEASE_DONE | (RESULT_NEITHER << 8), memory_order_release);
        wake_flusher(f);
        ans = LEASE_ANS_ERROR;
        l = NULL;
    }
    switch (ans) {
    case LEASE_ANS_GRANTED:
        atomic_store_explicit(&l->token, token, memory_order_relaxed);
        atomic_store_explicit(&l->gen, (uint64_t)a[ANS_GEN], memory_order_relaxed);
        /* release: a settler's CAS from HELD sees token and gen. */
        atomic_store_explicit(&l->state, LEASE_HELD, memory_order_release);
        *token_out = token;
        count(&f->n.leases_granted);
        return BREAKER_OK;
    case LEASE_ANS_CLOSED:
        /* The fleet is closed: this host's own breaker is probing on its
         * own evidence; no lease needed. */
        atomic_store_explicit(&l->state, LEASE_FREE, memory_order_relaxed);
        return BREAKER_OK;
    case LEASE_ANS_REFUSED:
        atomic_store_explicit(&l->state, LEASE_FREE, memory_order_relaxed);
        count(&f->n.leases_refused);
        {
            /* Ask again when the fleet may answer otherwise: at the end of
             * its open wait, at its earliest lease deadline, and at the
             * latest after one flush interval. */
            uint64_t wait = (uint64_t)(a[ANS_WAIT_US] > 0 ? a[ANS_WAIT_US] : 0) * 1000;
            if (wait == 0 || wait > f->cfg.flush_interval_ns) wait = f->cfg.flush_interval_ns;
            atomic_store_explicit(&e->gate_until_ns, now + wait, memory_order_relaxed);
        }
        return a[ANS_STATE] == FLEET_OPEN ? BREAKER_REJECTED_OPEN : BREAKER_REJECTED_HALF_OPEN;
    case LEASE_ANS_LOST:
    case LEASE_ANS_ERROR:
        if (l != NULL && ans == LEASE_ANS_LOST) {
            /* Redis may still grant it (a stalled server runs the queued
             * request when it resumes): the flusher releases the token
             * until the lease's deadline has surely passed. */
            breaker_config c;
            breaker_get_config(b, &c);
            atomic_store_explicit(&l->token, token, memory_order_relaxed);
            atomic_store_explicit(&l->gen, 0, memory_order_relaxed);
            atomic_store_explicit(&l->deadline_ns, now + c.probe_timeout_ns, memory_order_relaxed);
            atomic_store_explicit(&l->stale_answers, 0, memory_order_relaxed);
            /* release: the flusher's acquire load sees the fields above. */
            atomic_store_explicit(&l->state, LEASE_ORPHAN, memory_order_release);
            wake_flusher(f);
        } else if (l != NULL) {
            atomic_store_explicit(&l->state, LEASE_FREE, memory_order_relaxed);
        }
        count(&f->n.lease_errors);
        /* Do not try again inline before the flusher has looked. */
        atomic_store_explicit(&e->gate_until_ns, now + f->cfg.flush_interval_ns,
                              memory_order_relaxed);
        return BREAKER_REJECTED_HALF_OPEN;
    }
    return BREAKER_REJECTED_HALF_OPEN;
}

/* The gate's settle: a leased probe completed (once per admission, stale or
 * not; `outcome` is SUCCESS, FAILURE or IGNORED, a cancellation already
 * mapped through cancelled_as). Its result goes to the fleet, which decides
 * recovery: the flusher sends it at once, woken here. Locally a leased
 * success is IGNORED (the local breaker closes when the fleet does); a
 * failure reopens the local breaker as well. */
static enum breaker_outcome gate_settle(void *ctx, breaker *b, uint64_t token,
                                        enum breaker_outcome outcome) {
    breaker_redis *f = ctx;
    struct entry *e = find_entry(f, b);
    unsigned slot = (unsigned)(token & ((1u << LEASE_SLOT_BITS) - 1)) - 1;
    if (e != NULL && slot < LEASE_SLOTS) {
        struct lease *l = &e->leases[slot];
        uint64_t result = outcome == BREAKER_SUCCESS   ? RESULT_SUCCESS
                          : outcome == BREAKER_FAILURE ? RESULT_FAILURE
                                                       : RESULT_NEITHER;
        uint64_t held = LEASE_HELD;
        /* relaxed read of the token: the acquire half of the CAS below
         * orders nothing we need before it; a slot reused by another lease
         * has another token and is left alone. */
        if (atomic_load_explicit(&l->token, memory_order_relaxed) == token &&
            atomic_compare_exchange_strong_explicit(&l->state, &held, LEASE_DONE | (result << 8),
                                                    memory_order_acq_rel, memory_order_relaxed))
            wake_flusher(f);
    }
    return outcome == BREAKER_SUCCESS ? BREAKER_IGNORED : outcome;
}

/* The 0.x names of the call path: the breaker's own functions, which take
 * the fleet's leases themselves now. */
int breaker_redis_acquire(breaker_redis *f, breaker *b, breaker_redis_permit *p) {
    (void)f;
    memset(p->opaque_, 0, sizeof p->opaque_);
    return breaker_acquire(b, &p->permit);
}

int breaker_redis_complete(breaker_redis *f, breaker *b, breaker_redis_permit *p,
                           enum breaker_outcome outcome) {
    (void)f;
    return breaker_complete(b, &p->permit, outcome);
}

int breaker_redis_degraded(breaker_redis *f) {
    return atomic_load_explicit(&f->degraded, memory_order_relaxed);
}

void breaker_redis_stats_get(breaker_redis *f, breaker_redis_stats *out) {
    memset(out, 0, sizeof *out);
#define GET(x) out->x = atomic_load_explicit(&f->n.x, memory_order_relaxed)
    GET(flushes);
    GET(flush_errors);
    GET(degraded_entered);
    GET(leases_granted);
    GET(leases_refused);
    GET(lease_errors);
    GET(lease_gated);
    GET(outside_trips);
    GET(fleet_closes);
#undef GET
    uint64_t ok = atomic_load_explicit(&f->last_ok_ns, memory_order_acquire);
    out->staleness_ns = ok == 0 ? UINT64_MAX : mono_ns() - ok;
    out->degraded = breaker_redis_degraded(f);
}

/* ---- Prometheus -------------------------------------------------------------*/

/* A literal, so that the compiler checks the arguments against it. */
#define FLEET_PROMETHEUS_FORMAT                                                                 \
    "# HELP breaker_fleet_view_age_seconds Age of this host's view of the fleet (the last "     \
    "good flush); its decisions may be this stale.\n"                                           \
    "# TYPE breaker_fleet_view_age_seconds gauge\n"                                             \
    "breaker_fleet_view_age_seconds %s\n"                                                       \
    "# HELP breaker_fleet_degraded 1 while the host has fallen back to its local breakers.\n"   \
    "# TYPE breaker_fleet_degraded gauge\n"                                                     \
    "breaker_fleet_degraded %d\n"                                                               \
    "# HELP breaker_fleet_degraded_entered_total Times the host became degraded.\n"             \
    "# TYPE breaker_fleet_degraded_entered_total counter\n"                                     \
    "breaker_fleet_degraded_entered_total %llu\n"                                               \
    "# HELP breaker_fleet_flushes_total Flush rounds Redis answered.\n"                         \
    "# TYPE breaker_fleet_flushes_total counter\n"                                              \
    "breaker_fleet_flushes_total %llu\n"                                                        \
    "# HELP breaker_fleet_flush_errors_total Flush rounds that failed.\n"                       \
    "# TYPE breaker_fleet_flush_errors_total counter\n"                                         \
    "breaker_fleet_flush_errors_total %llu\n"                                                   \
    "# HELP breaker_fleet_leases_total Inline probe lease requests, by result (gated: refused " \
    "locally after a fleet refusal).\n"                                                         \
    "# TYPE breaker_fleet_leases_total counter\n"                                               \
    "breaker_fleet_leases_total{result=\"granted\"} %llu\n"                                     \
    "breaker_fleet_leases_total{result=\"refused\"} %llu\n"                                     \
    "breaker_fleet_leases_total{result=\"error\"} %llu\n"                                       \
    "breaker_fleet_leases_total{result=\"gated\"} %llu\n"                                       \
    "# HELP breaker_fleet_trips_applied_total Local breakers tripped because the fleet "        \
    "tripped.\n"                                                                                \
    "# TYPE breaker_fleet_trips_applied_total counter\n"                                        \
    "breaker_fleet_trips_applied_total %llu\n"                                                  \
    "# HELP breaker_fleet_closes_applied_total Local breakers closed because the fleet "        \
    "closed.\n"                                                                                 \
    "# TYPE breaker_fleet_closes_applied_total counter\n"                                       \
    "breaker_fleet_closes_applied_total %llu\n"

int breaker_redis_export_prometheus(breaker_redis *f, char *buf, size_t cap, size_t *len) {
    breaker_redis_stats st;
    breaker_redis_stats_get(f, &st);
    char age[32];
    if (st.staleness_ns == UINT64_MAX)
        snprintf(age, sizeof(age), "+Inf");
    else /* seconds with nanosecond digits, no locale-dependent formatting */
        snprintf(age, sizeof(age), "%llu.%09llu",
                 (unsigned long long)(st.staleness_ns / 1000000000u),
                 (unsigned long long)(st.staleness_ns % 1000000000u));
    /* cap 0: buf may be NULL, which snprintf() allows with a size of 0. */
    int n = snprintf(cap > 0 ? buf : NULL, cap, FLEET_PROMETHEUS_FORMAT, age, st.degraded,
                     (unsigned long long)st.degraded_entered, (unsigned long long)st.flushes,
                     (unsigned long long)st.flush_errors, (unsigned long long)st.leases_granted,
                     (unsigned long long)st.leases_refused, (unsigned long long)st.lease_errors,
                     (unsigned long long)st.lease_gated, (unsigned long long)st.outside_trips,
                     (unsigned long long)st.fleet_closes);
    if (n < 0) return BREAKER_EINVAL;
    if ((size_t)n >= cap) {
        if (cap > 0) buf[0] = '\0';
        if (len != NULL) *len = (size_t)n + 1;
        return BREAKER_ENOSPC;
    }
    if (len != NULL) *len = (size_t)n;
    return BREAKER_OK;
}
