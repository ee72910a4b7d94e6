/* SPDX-License-Identifier: MIT */
/*
 * client.h - what the files of the fleet store's client share (private;
 * include/breaker/redis.h is the API, docs/fleet.md the protocol).
 *
 * The client decides; a transport moves (breaker/redis_transport.h, as
 * hiredis puts its I/O behind redisContextFuncs). No file here includes
 * hiredis or touches a socket:
 *  - protocol.c: every decision, as plain data (protocol.h);
 *  - calls.c: the commands the client sends (a script on a name's keys, a
 *    read of its state, TIME) and how their replies are read; one command
 *    outside the rounds (an attach's read, an operator's control);
 *  - flush.c: the flusher and its rounds (counters out, answers decided,
 *    transitions applied after the round lock is released);
 *  - lease.c: the probe gate: a probe's lease request and its settling;
 *  - host.c: one flusher per host through a store file;
 *  - fleet.c: the handle's lifecycle, attach and detach, the backend a
 *    registry uses, statistics and their export;
 *  - status.c: the fleet as Redis holds it, read for an operator;
 *  - cause.c: whether a failed round is a configuration error.
 * The hiredis transport (hiredis/: connections, AUTH and SELECT, script
 * loading, pipelines, a Cluster's slot map, MOVED and ASK) is the default;
 * breaker_redis_open_transport() takes another.
 *
 * Threads and what they touch:
 *  - callers: breaker_acquire()/breaker_complete() on an attached breaker.
 *    In CLOSED and OPEN only the local breaker: the probe gate is asked
 *    only when the local breaker admits a probe. The gate reads the
 *    entry's gate time and published generation and the degraded flag,
 *    and asks the transport's probe call for a lease (which never waits
 *    for another caller). A leased probe's settling marks its lease slot
 *    and wakes the flusher through a pipe.
 *  - the flusher (or breaker_redis_flush(), serialised with it by
 *    apply_mu): under round_mu, reads each name's counters with the peeks
 *    (no transition, so no event, under the lock), sends deltas and lease
 *    results in one exchange and decides what the answers mean for each
 *    local breaker; then, with round_mu released, applies those
 *    transitions (breaker_trip_outside(), breaker_close_outside(), a due
 *    probe timeout). Their events (on_event, registry listeners) thus run
 *    without round_mu, so a listener may call the registry, which may
 *    attach or detach names here (both take round_mu).
 * Lock order: apply_mu, then round_mu; attach_mu, then round_mu. The
 * transport's exchange, server_of, reachable and round_done run under
 * round_mu.
 */
#ifndef BREAKER_REDIS_CLIENT_H
#define BREAKER_REDIS_CLIENT_H

/* The seam a backend drives its breakers through; public, so this library
 * links the one copy of the core (libbreaker) in every build. */
#ifndef BREAKER_BACKEND_EXPERIMENTAL
#define BREAKER_BACKEND_EXPERIMENTAL
#endif
#include "breaker/backend.h"
#include "breaker/redis.h"
#include "store/file/host.h"
#include "store/redis/config.h"
#include "store/redis/protocol.h"
#include "store/redis/reply.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define MS ((uint64_t)1000000)
/* A name's holder whose view is older than host_stale_ns is stopped, or
 * gone (host.c): never more than this. */
#define HOST_STALE_MAX_NS (UINT64_C(4) * 3600 * 1000000000)
#define LEASE_SLOTS       16u /* leased probes one name may hold at once in a process */

/* A lease slot's state word. */
enum { LEASE_FREE, LEASE_CLAIMED, LEASE_HELD, LEASE_DONE, LEASE_ORPHAN };

/* The bits of a lease's state word that name its token (struct lease). */
static inline uint64_t lease_state_token(uint64_t token) { return token & ~(uint64_t)0xffff; }

struct lease {
    /* LEASE_* in bits 0..7, the result (FLEET_RESULT_*) in bits 8..15, and
     * in bits 16..63 of HELD and a settled DONE the lease's token's (its
     * random part: lease_state_token()), so that a settle of one lease can
     * never CAS another lease of the same slot. A caller claims a FREE slot
     * (CAS), writes token and gen, then publishes HELD (release); the
     * settler CASes HELD|token to DONE|result|token (acq_rel); the flusher
     * reads DONE (acquire), releases the lease in Redis and stores FREE
     * (release). */
    _Atomic uint64_t state;
    _Atomic uint64_t token; /* relaxed: ordered by `state` */
    _Atomic uint64_t gen;   /* the fleet generation the lease was granted in */
    /* LEASE_ORPHAN: a lease request that got no answer (Redis may still
     * grant it): the flusher releases the token, for any generation, in
     * every round until breaker__fleet_release_settled() lets it go.
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
    char name[BREAKER_NAME_MAX + 1];
    char key[FLEET_KEY_COUNT][BREAKER__FLEET_KEY_LEN];
    /* The limits as the scripts take them (ARGV 2): written under round_mu
     * and limits_mu, read under either. */
    char limits[BREAKER__FLEET_LIMITS_LEN];
    struct breaker__fleet_limits lim; /* the same, as numbers */
    /* Flusher-only (under round_mu): the protocol's state of this name. */
    struct breaker__fleet_seen seen;
    struct breaker__fleet_follow follow;
    uint64_t flush_seq; /* the sequence of this name's last flush call */
    /* stats.server_directed_opens as the last flush call sent them: a
     * later one is a dependency's timed open to send the fleet */
    uint64_t directed_seen;
    /* host.c, under round_mu: this round, the entry is not flushed
     * (another process's host lock holds the name, or another live entry of
     * the name here flushes it); this handle's host lock holds the name;
     * `seen` and `follow` are still its attach's (the baseline of a name no
     * process held in the file yet); its slot in the lock's file + 1 (0:
     * not looked up); since when it is free (for a process that is not the
     * file's primary; 0: not seen free). */
    bool host_skip, host_held, host_fresh;
    uint32_t host_slot1;
    uint64_t host_free_since_ns;
    /* host.c, under round_mu: the host words say what was done to the host
     * breaker, never what was only decided. A reset the round decided
     * (follow.reset_seen moved to it) and the apply phase has not given
     * yet, and the reset the breaker had before it (the words' until it is
     * given); while the apply phase gives the record's reset or forced state
     * (APPLYING_*, 0: none under way), the breaker's generation before. */
    bool reset_due;
    uint64_t reset_before;
    unsigned applying;
    uint64_t applying_gen;
    /* Read by callers: relaxed, each is a hint read alone. */
    _Atomic uint64_t gate_until_ns; /* no lease request before this (monotonic) */
    _Atomic uint64_t followed_gen;  /* follow.followed_gen while it follows, else 0 */
    /* Degraded per name (per node in a Cluster): 1 while this name's calls
     * failed the last round (its node failed or answered an error), so its
     * probes are its local breaker's (lease.c); when its last round was
     * answered (FAIL_CLOSED's view age). Written by the flusher under
     * round_mu. degraded relaxed (a flag read alone); last_ok_ns release,
     * as the handle's. */
    _Atomic int degraded;
    _Atomic uint64_t last_ok_ns;
    /* Flusher-only (under round_mu): a call of this name failed this round,
     * an answer of it was decided this round, its last round failed. */
    bool round_failed, round_answered, failed_last;
    /* Flusher-only: an answer of this round showed another version of the
     * control record than the one kept (follow.record): it is read after
     * the answers, in the same round. A version read of this round showed
     * the state moved: it is read whole after the answers, in the same
     * round, and the counters the read held back to (dropped if the
     * generation moved). Its credit was not counted: its full flush goes
     * in the round's second exchange. */
    bool record_due, state_due, credit_refused;
    struct breaker__fleet_seen seen_after_read;
    struct lease leases[LEASE_SLOTS];
};

/* What a round decided for one entry's local breaker, applied after
 * round_mu is released (under apply_mu): the protocol's transition, or a
 * check that applies a due probe timeout (the round reads breakers with the
 * peeks, which apply none: their events would run under round_mu). */
struct action {
    breaker *b; /* the breaker it was decided for: skipped if detached since */
    struct breaker__fleet_action act;
    bool check_timeout;
    /* What the control record asks of b (breaker__fleet_converge()). */
    struct breaker__fleet_controls controls;
};

/* What a call of a round is: a script (flush, acquire, release, or the
 * control script's read), a version read of a healthy name's state (HMGET
 * of breaker__fleet_version_fields), or a healthy name's credit (the
 * credit script, alone or with other names' of its server). */
enum { PENDING_SCRIPT, PENDING_READ, PENDING_CREDIT };

/* The names one credit command carries at most: 2 keys and 3 arguments
 * each, after numkeys and the TTL, within a command's arguments. */
#define BREAKER__REDIS_CREDITS_MAX ((BREAKER_REDIS_COMMAND_ARGS_MAX - 2) / 5)

/* A command's arguments, kept with it for the exchange: a script's numkeys,
 * keys, TTL, limits and call arguments, or HMGET's key and fields. */
#define BREAKER__REDIS_CMD_ARGS 48 /* the control script's, the longest: 8 + 3 + 18 pairs */
_Static_assert(BREAKER__REDIS_CMD_ARGS <= BREAKER_REDIS_COMMAND_ARGS_MAX,
               "the control script's arguments fit a command");
struct cmd_args {
    int argc;
    const char *argv[BREAKER__REDIS_CMD_ARGS];
};

/* One call of a round. */
struct pending {
    struct entry *e;
    uint32_t idx;   /* e's index in entries (and actions) */
    int kind;       /* PENDING_* */
    int round_call; /* a name's flush or read: FLEET_ROUND_* (breaker__fleet_round_call()) */
    /* Its command in the round's (f->round_cmds), and its place in it (a
     * credit among its server's; 0 otherwise); whether a credit command
     * took it already (the round's commands being made). */
    size_t cmd, pos;
    bool batched;
    /* The control script's read (the round's second exchange). */
    bool record;
    /* PENDING_READ: the counters its held-back deltas ran to. A flush or a
     * credit: the baseline before it (a credit not counted goes back). */
    struct breaker__fleet_seen seen_after, seen_before;
    struct breaker__fleet_call call;
    /* A flush: what it carries. A retry after a cut connection sends the
     * call again unchanged: its sequence makes the deltas count once. */
    uint64_t known_gen;
    struct breaker__fleet_deltas deltas;
    /* A release: the slot to free after, and whether it is an orphan's. */
    struct lease *lease;
    bool orphan;
    /* Its command's arguments (the round's command i points into them). */
    struct cmd_args args;
};

struct breaker_redis {
    /* What breaker_redis_backend() hands out: a registry calls
     * backend.ops with backend.ctx (this handle). */
    struct breaker_backend backend;
    breaker_redis_config cfg;
    /* The transport (breaker/redis_transport.h): hiredis's, or the one
     * breaker_redis_open_transport() was given. */
    const breaker_redis_transport_ops *io;
    void *io_ctx;
    char ttl[24]; /* the key TTL argument of every script call */
    uint32_t max_names;
    /* Attached entries: slots written once under attach_mu, published by
     * the release store of `count`; readers load `count` with acquire. */
    struct entry **entries;
    _Atomic uint32_t count;
    pthread_mutex_t attach_mu;

    pthread_mutex_t apply_mu; /* one breaker_redis_flush() at a time, with
                                 the transitions it applies */
    struct action *actions;   /* under apply_mu: one per entry (max_names) */
    pthread_mutex_t round_mu; /* one flush round at a time; never on the call path */
    /* Every entry's limits text (e->limits): written under it and round_mu
     * (the apply phase, a re-arm), copied under it alone by the probe path,
     * which never waits for a round. Held for a copy of at most
     * BREAKER__FLEET_LIMITS_LEN bytes; taken after round_mu, never before. */
    pthread_mutex_t limits_mu;
    /* Under round_mu: the breaker whose transition the apply phase is
     * delivering now (NULL: none), on which thread; a detach of it from
     * another thread waits for applied_cv, one from that thread (its own
     * listener) leaves it to the apply phase to destroy (`doomed`). */
    breaker *applying;
    pthread_t applier;
    breaker *doomed;
    pthread_cond_t applied_cv;
    /* A round's calls, commands and replies, under round_mu: grown by
     * attach, so that a round allocates nothing of its own (the transport
     * allocates its replies). */
    struct pending *round_calls;
    breaker_redis_command *round_cmds;
    breaker_redis_reply **round_replies;
    size_t round_cap;
    /* The arguments of a round's credit commands (7 per name: room for
     * every name's credit, each command's numkeys and TTL). */
    const char **credit_argv;
    /* The inline budget follows the round trip (docs/fleet.md, "Probes"):
     * flush.c measures every answered exchange into srtt_ns and sets
     * lease_budget_ns (breaker__redis_budget()); the gate reads it. relaxed:
     * each is a value read alone. */
    _Atomic uint64_t srtt_ns;         /* smoothed flush round trip, 0 = none yet */
    _Atomic uint64_t lease_budget_ns; /* the probe budget now */
    /* Lease requests in a row that got no answer in time (or an error
     * reply); any answer in time resets it. At LEASE_FAIL_LIMIT the host
     * probes locally (lease.c). relaxed: a count read alone. */
    _Atomic uint32_t lease_fail_run;

    _Atomic int degraded; /* relaxed: a flag read alone */
    int announced;        /* under round_mu: the state on_degraded last
                             reported, -1 = none yet */
    /* Under round_mu: an on_degraded call the round decided, delivered by
     * breaker_redis_flush() after releasing round_mu (a callback may attach
     * a name, which takes round_mu). */
    int announce_pending, announce_on;
    uint64_t round_no; /* under round_mu: the rounds begun (the cadence's clock) */
    char announce_why[256];
    _Atomic uint64_t last_ok_ns; /* monotonic time of the last good flush, 0 = none */
    _Atomic uint64_t token_seq;  /* lease tokens */
    uint64_t token_key;
    char host_id[17];      /* the flush calls' host id (breaker__fleet_host_id(token_key)) */
    uint64_t jitter_state; /* flusher-only */

    int wake[2]; /* pipe: [0] polled by the flusher, [1] written to wake it */
    _Atomic int stop;
    bool threaded; /* a flusher thread runs (not BREAKER_REDIS_NO_FLUSHER) */
    pthread_t thread;

    /* One flusher per host (host.c): the store file the names are attached
     * through (NULL: none), the age past which a holder's view is stale;
     * under round_mu, this handle's host lock on the file (NULL: none yet)
     * and the names this round flushes. */
    breaker_store *store;
    uint64_t host_stale_ns;
    breaker__host_lock *host_lock;
    uint32_t host_held;
    _Atomic uint32_t host_flusher; /* relaxed: a count read alone (statistics) */

    struct {
        _Atomic uint64_t flushes, flush_errors, degraded_entered, leases_granted, leases_refused,
            lease_errors, lease_gated, outside_trips, fleet_closes, lease_local, state_rebuilds,
            host_takeovers, host_rebaselines, shadow_applied, reconfigs_applied, reconfigs_refused;
    } n;
};

/* Counters: relaxed, they order nothing. */
static inline void breaker__redis_count(_Atomic uint64_t *c) {
    atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

/* The transport's monotonic clock: every time of the client. */
static inline uint64_t breaker__redis_now(const breaker_redis *f) {
    return f->io->now_ns(f->io_ctx);
}

/* relaxed: every writer of e->b holds round_mu, and so does the flusher;
 * a caller only compares it with its own breaker (find_entry()). */
static inline breaker *breaker__redis_entry_b(const struct entry *e) {
    return atomic_load_explicit(&e->b, memory_order_relaxed);
}

/* The local breaker as the protocol takes it: its generation first, then
 * its state, read without applying a transition (a round holds round_mu),
 * and what is left of its open wait. With `full`, also its shadow mode and
 * limits (breaker__fleet_converge() compares them with the record). */
static inline struct breaker__fleet_local breaker__redis_local(breaker *b, bool full) {
    struct breaker__fleet_local l;
    memset(&l, 0, sizeof l);
    l.gen = breaker_generation(b);
    breaker_stats s;
    breaker_stats_peek(b, &s);
    l.state = s.state;
    uint64_t now = breaker_now_ns(b);
    l.open_left_ns = s.state == BREAKER_OPEN && s.open_until_ns > now ? s.open_until_ns - now : 0;
    l.forced_left_ns = s.forced_until_ns > now ? s.forced_until_ns - now : 0;
    if (full) {
        l.shadow = breaker_shadow(b);
        breaker_config c;
        breaker_get_config(b, &c);
        breaker__fleet_limits_of(&c, &l.limits);
    }
    return l;
}

/* FAIL_CLOSED: @return 1 when the fleet view is too old to admit calls. */
static inline int breaker__redis_view_too_old(breaker_redis *f) {
    /* acquire: pairs with the flusher's release store after a good round. */
    uint64_t ok = atomic_load_explicit(&f->last_ok_ns, memory_order_acquire);
    return breaker__fleet_view_stale(ok, breaker__redis_now(f), f->cfg.stale_after_ns);
}

/* FAIL_CLOSED: @return 1 when `e`'s own view (its last answered round) is
 * too old to admit calls: in a Cluster, a name on a healthy master keeps a
 * fresh view while another master is down. */
static inline int breaker__redis_entry_view_too_old(const breaker_redis *f, const struct entry *e) {
    /* acquire: pairs with the flusher's release store after the name's round. */
    uint64_t ok = atomic_load_explicit(&e->last_ok_ns, memory_order_acquire);
    return breaker__fleet_view_stale(ok, breaker__redis_now(f), f->cfg.stale_after_ns);
}

/* Lease requests in a row without an answer in time after which a host
 * probes locally (lease.c): one failure may be a blip; two, an interval
 * apart (an error gates the next request for one interval), are a store
 * too slow for the budget. */
#define LEASE_FAIL_LIMIT 2u

/* The smoothed round trip after a new `sample`: a larger sample is taken at
 * once (a Redis turning slow raises the budget by the next probe), a smaller
 * one lowers it by an eighth of the difference per round (a jittery Redis
 * keeps a budget for its slow rounds). Pure. */
static inline uint64_t breaker__redis_srtt_next(uint64_t srtt, uint64_t sample) {
    if (sample >= srtt) return sample;
    return srtt - (srtt - sample) / 8;
}

/* The probe budget for a smoothed round trip `srtt`: twice it (the wait for
 * Redis ends at 80% of the budget, so 1.6 round trips), never below the
 * configured `budget`, never above `cap`. Pure. */
static inline uint64_t breaker__redis_budget(uint64_t srtt, uint64_t budget, uint64_t cap) {
    uint64_t b = srtt > UINT64_MAX / 2 ? UINT64_MAX : 2 * srtt;
    if (b < budget) b = budget;
    if (b > cap) b = cap;
    return b;
}

/* fleet.c: the control record `rec` as breaker_redis_control_get() and
 * breaker_redis_status() report it, the stored limits over `base`. */
void breaker__redis_control_state_of(const struct breaker__fleet_record *rec,
                                     const breaker_config *base, breaker_redis_control_state *out);

/* The entry of `b`, or NULL. Lock-free: the gate (lease.c) and the handle
 * (fleet.c) both look entries up, so it lives here, below both. */
static inline struct entry *breaker__redis_find_entry(breaker_redis *f, const breaker *b) {
    /* A store file that moved forwarded the handle: the gate is asked with
     * the live one, the entry knows the one attached. */
    if (f->store != NULL) b = breaker__store_attached(b);
    uint32_t n = atomic_load_explicit(&f->count, memory_order_acquire); /* pairs with attach */
    for (uint32_t i = 0; i < n; i++)
        if (breaker__redis_entry_b(f->entries[i]) == b) return f->entries[i];
    return NULL;
}

/* ---- calls.c ------------------------------------------------------------------ */

/* `call` on `e`'s keys as a command: the script with the TTL, the limits
 * text `limits` (NULL: e->limits itself, for a command sent under
 * round_mu, which its writers hold) and the call's arguments (kept in
 * `args`). */
void breaker__redis_script_cmd(const breaker_redis *f, const struct entry *e,
                               const struct breaker__fleet_call *call, const char *limits,
                               struct cmd_args *args, breaker_redis_command *cmd);
/* `e`'s limits text copied whole into `out` (BREAKER__FLEET_LIMITS_LEN
 * bytes) under limits_mu: for a command sent without round_mu (a probe's
 * lease request). */
void breaker__redis_limits_copy(breaker_redis *f, const struct entry *e, char *out);
/* The round's call `p` as its command: a script, a version read of its
 * state, or a credit of its name alone. */
void breaker__redis_pending_cmd(const breaker_redis *f, struct pending *p,
                                breaker_redis_command *cmd);
/* One credit command for the credits `p[0 .. n)` (n >= 1, at most
 * BREAKER__REDIS_CREDITS_MAX; their names on one server), its arguments in
 * `argv` (room for 2 + 5 n; the numkeys text kept in p[0]->call). Never
 * sent twice (not idempotent). @return the arguments used. */
size_t breaker__redis_credit_cmd(const breaker_redis *f, struct pending *const *p, size_t n,
                                 const char **argv, breaker_redis_command *cmd);
/* @return 1 with `out` when `r` is a script's answer the protocol reads. */
int breaker__redis_read_answer(const breaker_redis_reply *r, struct breaker__fleet_answer *out);
/* An answered exchange took `rtt` ns: the smoothed round trip and the probe
 * budget that follows it. */
void breaker__redis_note_round_trip(breaker_redis *f, uint64_t rtt);
/* @return 1 with the answer and the record when `r` is the control
 * script's answer, or 0 with `why`. */
int breaker__redis_read_record(const breaker_redis_reply *r, struct breaker__fleet_answer *a,
                               struct breaker__fleet_record *rec, char *why, size_t why_len);
/* The round's follow-up call `p` (its entry's record changed): a read of
 * the control record. */
void breaker__redis_record_cmd(const breaker_redis *f, struct pending *p,
                               breaker_redis_command *cmd);
/* Attach: the control record of `e`'s name (keys and limits set), its
 * limits the stored ones, one round trip to its server under round_mu; the
 * answer of its flush without deltas in `*armed` (the generation the new
 * breaker's evidence starts in: the protocol's
 * breaker__fleet_follow_armed()), `*answered` saying whether there was one.
 * Skipped while the name's server is known to be down. @return 1 with
 * `stored`, or 0. */
int breaker__redis_read_limits(breaker_redis *f, const struct entry *e,
                               struct breaker__fleet_record *stored,
                               struct breaker__fleet_answer *armed, bool *answered);
/* One command outside the rounds (an operator's call) on the server of
 * `e`'s name, under round_mu; `idempotent` as breaker_redis_command's;
 * `what` names it in an I/O error's reason. @return the reply (the caller
 * frees it), or NULL with `why`. */
breaker_redis_reply *breaker__redis_command_once(breaker_redis *f, const struct entry *e, int argc,
                                                 const char **argv, int idempotent,
                                                 const char *what, char *why, size_t why_len);
/* `script` on `e`'s keys with the TTL, `e`'s limits and `args` (at most
 * 40), sent once. @return the reply, or NULL with `msg` saying the call did
 * not reach Redis (BREAKER_EIO). */
breaker_redis_reply *breaker__redis_control_call(breaker_redis *f, const struct entry *e,
                                                 const char *script, int argc,
                                                 const char *const *args, const char *what,
                                                 char *msg, size_t msg_len);
/* ---- cause.c ------------------------------------------------------------------ */

/* The cause of a failed round whose reason is `why`: BREAKER_REDIS_MISCONFIGURED
 * (a configuration error, which no wait heals) or BREAKER_REDIS_DEGRADED. */
int breaker__redis_cause_of(const char *why);

/* ---- flush.c ------------------------------------------------------------------ */

void *breaker__redis_flusher_main(void *arg);
void breaker__redis_wake_flusher(breaker_redis *f);

/* ---- host.c ------------------------------------------------------------------- */

/* breaker_redis_open() with a store file `st`: this handle's host lock on
 * it (store/file/host.h) and the host's id. @return BREAKER_OK (also when
 * the store's lock was busy: the first round opens it), or an error with
 * `msg`. */
int breaker__redis_host_open(breaker_redis *f, breaker_store *st, char *msg, size_t msg_len);
/* breaker_redis_close(), after the last round: every name is free. */
void breaker__redis_host_close(breaker_redis *f);
/* An entry attached now to `b`: its baseline is `b`'s counters (a store
 * file's host breaker may have counted calls before any process attached
 * it to the fleet: they are not sent), its generation the attach's
 * (follow). Under round_mu, or before the entry is published. */
void breaker__redis_host_attached(breaker_redis *f, struct entry *e, breaker *b);
/* Under round_mu, before the round's calls are collected: @return non-zero
 * when this round flushes names (no store: all of them; with one: those
 * whose lock this handle holds or takes now, their state loaded from the
 * file when taken; the others marked host_skip), 0 when it flushes none
 * (the round sends only lease results). */
uint32_t breaker__redis_host_begin(breaker_redis *f, uint32_t n);
/* Under round_mu, after the calls are collected, before they are sent: the
 * words of the names this round flushes written to the file (their
 * baselines and sequences). */
void breaker__redis_host_collected(breaker_redis *f, uint32_t n);
/* The record's controls on a host breaker, as the host words name them
 * while the apply phase gives them (breaker__redis_host_applying()). */
enum { APPLYING_RESET = 1, APPLYING_FORCED_OPEN = 2, APPLYING_FORCED_CLOSED = 4 };
/* Under round_mu, in the apply phase, before `what` (APPLYING_*, or-ed; 0:
 * nothing the words keep) is given to `e`'s breaker `b`: the intent, in the
 * words of a name this handle holds (its generation now and what). */
void breaker__redis_host_applying(breaker_redis *f, struct entry *e, breaker *b, unsigned what);
/* Under round_mu, in the apply phase, after it: the outcome (the reset
 * given, the forced state's generation, limits refused) in the words, the
 * intent cleared. */
void breaker__redis_host_applied(breaker_redis *f, struct entry *e);
/* Give up `e`'s name if this handle holds it (a detach), so that another
 * process takes it at its next round. Takes round_mu. */
void breaker__redis_host_release(breaker_redis *f, struct entry *e);
/* Under round_mu, after the answers were decided (`ok`: a good round;
 * `sent`: the round exchanged calls): the holder writes what each name
 * follows and its view for the host's other processes; they mirror it. For
 * a round that sent nothing (a process that holds no name): @return 1 when
 * a holder's view is degraded or stale, 0 when they are good, -1 when no
 * holder has made a round yet. */
int breaker__redis_host_after(breaker_redis *f, uint32_t n, int ok, int sent);

/* ---- lease.c ------------------------------------------------------------------ */

/* The probe gate (breaker/backend.h) of every attached breaker. */
int breaker__redis_gate_admit(void *ctx, breaker *b, uint64_t *token);
void breaker__redis_gate_settle(void *ctx, breaker *b, uint64_t token,
                                enum breaker_outcome outcome);

#endif /* BREAKER_REDIS_CLIENT_H */
