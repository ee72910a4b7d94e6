/* SPDX-License-Identifier: MIT */
/*
 * flush.c - the flusher and its rounds (client.h, docs/fleet.md "The
 * client"). A round, under round_mu: every name's lease results and flush
 * (its deltas since the last round, the generation it knew) go out in one
 * exchange of the transport; each answer is decided in order by the
 * protocol (protocol.c), which leaves one transition per name; lease slots
 * whose release Redis answered are freed. Then, with round_mu released,
 * breaker_redis_flush() tells on_degraded and applies the transitions, so
 * that their events run with no lock an attach or a detach takes.
 */
#define _POSIX_C_SOURCE 200809L /* poll, pipe */

#include "store/redis/client.h"

#include "common/splitmix.h"

#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void breaker__redis_wake_flusher(breaker_redis *f) {
    if (!f->threaded) {
        if (f->io->wake != NULL) f->io->wake(f->io_ctx);
        return;
    }
    char one = 1;
    /* Non-blocking: a full pipe already holds a wake-up. */
    ssize_t w = write(f->wake[1], &one, 1);
    (void)w;
}

/* Called under round_mu. The first round's result is always announced:
 * the handle starts degraded, but nobody was told why. `degraded` is the
 * cause's (breaker__redis_cause_of()): a change of cause is told too. */
static void set_degraded(breaker_redis *f, int on, const char *why) {
    int cause = on ? breaker__redis_cause_of(why) : BREAKER_REDIS_JOINED;
    atomic_store_explicit(&f->degraded, cause, memory_order_relaxed);
    if (f->announced == cause) return;
    if (cause && f->announced <= 0) breaker__redis_count(&f->n.degraded_entered);
    f->announced = cause;
    /* Told after round_mu is released (breaker_redis_flush()). */
    f->announce_pending = f->cfg.on_degraded != NULL;
    f->announce_on = cause;
    snprintf(f->announce_why, sizeof f->announce_why, "%s", on ? why : "");
}

/* ---- The round's calls ------------------------------------------------------------ */

/* A lease HELD past its deadline by a probe that was never completed (it
 * hung for ever, or its caller lost the permit): Redis has let the lease go
 * and the local breaker has timed the probe out, but the slot would stay
 * HELD for good, and after LEASE_SLOTS such probes the name could never take
 * a lease again. Past its deadline and one more interval, it is settled here
 * as "neither" (a CAS from HELD with its token: a settle that comes after
 * finds nothing to do), and released like any settled lease. */
static void reclaim_abandoned(breaker_redis *f, struct lease *l, uint64_t st, uint64_t now) {
    if ((st & 0xff) != LEASE_HELD) return;
    /* relaxed: written before the release store of HELD, which the acquire
     * load of `st` saw. */
    uint64_t due = atomic_load_explicit(&l->deadline_ns, memory_order_relaxed);
    if (due == 0 || now < due + f->cfg.flush_interval_ns) return;
    uint64_t done = (st & ~(uint64_t)0xffff) | LEASE_DONE | ((uint64_t)FLEET_RESULT_NEITHER << 8);
    (void)atomic_compare_exchange_strong_explicit(&l->state, &st, done, memory_order_acq_rel,
                                                  memory_order_relaxed);
}

/* The releases of `e`'s completed leases and orphans, appended to `p`. */
static size_t collect_releases(breaker_redis *f, struct entry *e, uint32_t idx, struct pending *p,
                               uint64_t now) {
    size_t np = 0;
    for (unsigned j = 0; j < LEASE_SLOTS; j++) {
        struct lease *l = &e->leases[j];
        /* acquire: pairs with the settler's acq_rel CAS to DONE (or the
         * caller's release store of ORPHAN), so token, gen and result are
         * this lease's. */
        uint64_t st = atomic_load_explicit(&l->state, memory_order_acquire);
        reclaim_abandoned(f, l, st, now);
        st = atomic_load_explicit(&l->state, memory_order_acquire);
        bool orphan = (st & 0xff) == LEASE_ORPHAN;
        if ((st & 0xff) != LEASE_DONE && !orphan) continue;
        /* An orphan's release: generation 0 (any), result neither. */
        uint64_t gen = orphan ? 0 : atomic_load_explicit(&l->gen, memory_order_relaxed);
        int result = orphan ? FLEET_RESULT_NEITHER : (int)((st >> 8) & 0xff);
        breaker__fleet_call_release(&p[np].call, gen,
                                    atomic_load_explicit(&l->token, memory_order_relaxed), result);
        p[np].e = e;
        p[np].idx = idx;
        p[np].lease = l;
        p[np].orphan = orphan;
        np++;
    }
    return np;
}

/* `e`'s call of the round (breaker__fleet_round_call(); FLEET_ROUND_FULL
 * when `full`, whatever it says): a flush, a credit, or the version read of
 * its state. Its counters are read with the peek (no due probe timeout is
 * applied: a timeout's event would run under round_mu, and a listener that
 * attaches a name takes it). A read leaves the deltas pending: the next
 * flush or credit carries them all. */
static void collect_flush(const breaker_redis *f, struct entry *e, uint32_t idx, bool releases,
                          bool full, struct pending *p) {
    breaker *b = breaker__redis_entry_b(e);
    breaker_stats s;
    breaker_stats_peek(b, &s);
    p->e = e;
    p->idx = idx;
    p->known_gen = e->follow.known_gen;
    struct breaker__fleet_seen next = e->seen;
    breaker__fleet_take_deltas(&next, &s, &p->deltas);
    /* The host's failing-source map: a snapshot, not a delta (OR-ed in
     * Redis, so a retried round sends it again harmlessly). */
    p->deltas.sources = breaker_failing_sources_peek(b);
    breaker__fleet_cadence_setup(&e->follow, &e->lim, f->cfg.full_flush_rounds,
                                 f->cfg.flush_interval_ns, f->cfg.key_ttl_ns);
    /* A server-directed open since the last flush (a 429 with Retry-After):
     * the fleet's too, for what is left of it. */
    enum breaker_state local = breaker_state_peek(b);
    uint64_t directed_us =
        breaker__fleet_directed_left_us(&s, local, e->directed_seen, breaker_now_ns(b));
    struct breaker__fleet_pending pend = {
        .deltas = &p->deltas,
        .probes_moved = next.probes_succeeded != e->seen.probes_succeeded ||
                        next.probes_failed != e->seen.probes_failed,
        .releases = releases,
        .local = local,
        .directed = directed_us > 0,
        .round = f->round_no,
        /* relaxed: a flag; breaker_redis_close() sets it before joining the
         * flusher and running the last round on its own thread. */
        .last_round = atomic_load_explicit(&f->stop, memory_order_relaxed) != 0,
    };
    p->round_call = full ? FLEET_ROUND_FULL : breaker__fleet_round_call(&e->follow, &pend);
    if (p->round_call == FLEET_ROUND_READ) {
        p->kind = PENDING_READ;
        p->seen_after = next;
        return;
    }
    /* Sent: the baseline moves now (a call whose reply is lost loses its
     * deltas, never counts them twice). A credit not counted gives it back
     * (decide_answers()). */
    p->seen_before = e->seen;
    e->seen = next;
    uint64_t now = breaker__redis_now(f);
    uint64_t last = e->follow.flushed_at_ns;
    e->follow.flushed_at_ns = now;
    if (p->round_call == FLEET_ROUND_CREDIT) {
        p->kind = PENDING_CREDIT;
        breaker__fleet_call_credit(&p->call, p->known_gen, p->deltas.calls,
                                   last != 0 && last < now ? (now - last) / 1000
                                                           : BREAKER__FLEET_MAX_DURATION_US);
        return;
    }
    p->kind = PENDING_SCRIPT;
    e->flush_seq = breaker__fleet_next_seq(e->flush_seq, now / 1000);
    breaker__fleet_call_host_flush(&p->call, p->known_gen, &p->deltas, f->host_id, e->flush_seq,
                                   directed_us);
    e->directed_seen = s.server_directed_opens;
}

/* Every name's calls, in the round's arrays (attach made room): their
 * lease results, and their flushes, credits or reads when `flushes`
 * (host.c: not the names another process of the host flushes). @return
 * how many. */
static size_t collect_calls(breaker_redis *f, uint32_t n, uint32_t flushes) {
    struct pending *p = f->round_calls;
    size_t np = 0;
    uint64_t now = breaker__redis_now(f);
    for (uint32_t i = 0; i < n; i++) {
        struct entry *e = f->entries[i];
        size_t releases = collect_releases(f, e, i, p + np, now);
        np += releases;
        if (breaker__redis_entry_b(e) == NULL || !flushes || e->host_skip)
            continue; /* lease results only */
        collect_flush(f, e, i, releases > 0, false, &p[np++]);
    }
    return np;
}

/* The commands of the calls f->round_calls[from .. from + np), into
 * f->round_cmds from `at`: one per call, but the credits of one server in
 * one command where the transport lets one command name several names'
 * keys (multi_key: not a Cluster). Each call learns its command (cmd) and
 * its place in it (pos). @return how many commands. */
static size_t build_cmds(breaker_redis *f, size_t from, size_t np, size_t at) {
    const breaker_redis_transport_ops *io = f->io;
    bool multi = io->multi_key != NULL ? io->multi_key(f->io_ctx) != 0 : io->server_keys == NULL;
    struct pending *p = f->round_calls + from;
    size_t nc = 0, argv_used = 0;
    for (size_t i = 0; i < np; i++)
        p[i].batched = false;
    for (size_t i = 0; i < np; i++) {
        if (p[i].batched) continue;
        p[i].cmd = at + nc;
        p[i].pos = 0;
        if (p[i].kind != PENDING_CREDIT || !multi) {
            breaker__redis_pending_cmd(f, &p[i], &f->round_cmds[at + nc++]);
            continue;
        }
        /* This credit and every later one of its server, in one command. */
        uint32_t server = io->server_of(f->io_ctx, p[i].e->key[FLEET_KEY_STATE]);
        struct pending *batch[BREAKER__REDIS_CREDITS_MAX];
        size_t m = 0;
        for (size_t j = i; j < np && m < BREAKER__REDIS_CREDITS_MAX; j++) {
            if (p[j].kind != PENDING_CREDIT || p[j].batched ||
                (j > i && io->server_of(f->io_ctx, p[j].e->key[FLEET_KEY_STATE]) != server))
                continue;
            p[j].batched = true;
            p[j].cmd = at + nc;
            p[j].pos = m;
            batch[m++] = &p[j];
        }
        argv_used += breaker__redis_credit_cmd(f, batch, m, f->credit_argv + argv_used,
                                               &f->round_cmds[at + nc++]);
    }
    return nc;
}

/* One exchange for every name's server (the transport's: with hiredis, one
 * Redis, or each master of a Cluster, written to before any is read). A
 * connection that worked before may have been cut meanwhile (a Redis
 * restart): the transport tries one new connection within the exchange
 * before the fleet is called degraded. The server may have run the first
 * pipeline before the connection went: the retry sends the same calls, and
 * they count once (a flush's deltas carry the host's sequence, which the
 * script applies once; a release checks its token and generation; a
 * credit is not sent again). An exchange answered whole is a round-trip
 * sample for the probe budget. @return as the transport's exchange, with
 * `*nc` the commands sent. */
static int send_calls(breaker_redis *f, size_t np, size_t *nc, char *why, size_t why_len) {
    *nc = build_cmds(f, 0, np, 0);
    uint64_t start = breaker__redis_now(f);
    int got = f->io->exchange(f->io_ctx, f->round_cmds, *nc, f->round_replies, why, why_len);
    if (got == 1) breaker__redis_note_round_trip(f, breaker__redis_now(f) - start);
    return got;
}

/* The reply to call `p`: its command's, or, for a credit, its number in
 * it (NULL: none, or not a number where one was due: an error). */
static const breaker_redis_reply *reply_of(const breaker_redis *f, const struct pending *p) {
    const breaker_redis_reply *r = f->round_replies[p->cmd];
    if (p->kind != PENDING_CREDIT || r == NULL || r->type == BREAKER_REDIS_REPLY_ERROR) return r;
    if (r->type != BREAKER_REDIS_REPLY_ARRAY || p->pos >= r->elements ||
        r->element[p->pos]->type != BREAKER_REDIS_REPLY_INTEGER)
        return NULL;
    return r->element[p->pos];
}

/* ---- Deciding ----------------------------------------------------------------------- */

/* What answer `a` to call `p` means for its entry's local breaker (the
 * entry's action of this round, decided in order with its other answers). */
static void decide_one(breaker_redis *f, const struct pending *p,
                       const struct breaker__fleet_answer *a, uint64_t now) {
    struct entry *e = p->e;
    struct action *act = &f->actions[p->idx];
    breaker *b = breaker__redis_entry_b(e);
    struct breaker__fleet_local local;
    if (b != NULL) local = breaker__redis_local(b, false);
    struct breaker__fleet_gate gate;
    breaker__fleet_decide(&e->follow, a, b != NULL ? &local : NULL, now, &act->act, &gate);
    if (act->act.kind != FLEET_ACT_NONE) act->b = b;
    /* The control record moved (another version, or a state made anew):
     * read after the answers, this round. */
    if (b != NULL && (a->cv != e->follow.record.version || a->born != e->follow.record.born))
        e->record_due = true;
    if (gate.change) atomic_store_explicit(&e->gate_until_ns, gate.until_ns, memory_order_relaxed);
    /* For the probe gate: a follower that hears "closed" on its lease
     * request closes rather than probing (breaker__fleet_lease_settle()). */
    atomic_store_explicit(&e->followed_gen, e->follow.follows ? e->follow.followed_gen : 0,
                          memory_order_relaxed);
}

/* Whether `p`'s lease slot is freed after the round (its release was
 * answered), by the protocol's rule for completed leases and orphans. */
static bool release_settled(const struct pending *p, const struct breaker__fleet_answer *a,
                            uint64_t now) {
    struct lease *l = p->lease;
    /* relaxed: flusher-only once published as an orphan. */
    uint64_t deadline = atomic_load_explicit(&l->deadline_ns, memory_order_relaxed);
    uint32_t stale = atomic_load_explicit(&l->stale_answers, memory_order_relaxed);
    bool done = breaker__fleet_release_settled(a, p->orphan, now, deadline, &stale);
    atomic_store_explicit(&l->stale_answers, stale, memory_order_relaxed);
    return done;
}

/* Why reply `r` to a call on `e` is no answer the protocol reads: Redis's
 * error (a CORRUPT state names its key and field: the script rebuilt it),
 * or the field of the answer out of its range, with the key. */
static void why_not_an_answer(const struct entry *e, const breaker_redis_reply *r, char *why,
                              size_t why_len) {
    if (r != NULL && r->type == BREAKER_REDIS_REPLY_ERROR) {
        snprintf(why, why_len, "flush: %s", r->str);
        return;
    }
    char what[160] = "unexpected reply";
    if (r != NULL && r->type == BREAKER_REDIS_REPLY_ARRAY && r->elements == ANS_COUNT) {
        int64_t v[ANS_COUNT];
        size_t i = 0;
        for (; i < ANS_COUNT && r->element[i]->type == BREAKER_REDIS_REPLY_INTEGER; i++)
            v[i] = r->element[i]->integer;
        if (i == ANS_COUNT) (void)breaker__fleet_answer_check(v, what, sizeof what);
    }
    snprintf(why, why_len, "flush: %s: %s", e->key[FLEET_KEY_STATE], what);
}

/* Reply `r` to the version read `p` (breaker__fleet_version_read()).
 * @return 1 with `a` and `*run` when it shows the state the host last
 * decided on, or 0 (it moved, or is no plain answer: read the state). */
static int read_version(const struct pending *p, const breaker_redis_reply *r, uint64_t now,
                        struct breaker__fleet_answer *a, uint64_t *run) {
    if (r == NULL || r->type != BREAKER_REDIS_REPLY_ARRAY ||
        r->elements != BREAKER__FLEET_VERSION_FIELDS)
        return 0;
    const char *v[BREAKER__FLEET_VERSION_FIELDS];
    for (size_t i = 0; i < BREAKER__FLEET_VERSION_FIELDS; i++) {
        const breaker_redis_reply *x = r->element[i];
        if (x->type != BREAKER_REDIS_REPLY_STRING && x->type != BREAKER_REDIS_REPLY_NIL) return 0;
        v[i] = x->type == BREAKER_REDIS_REPLY_STRING ? x->str : NULL;
    }
    return breaker__fleet_version_read(&p->e->follow, v, now, a, run);
}

/* Which names had a call fail this round (no reply: its node failed; or a
 * reply that is no answer: an error) and which had an answer decided (a
 * credit counted or not: both are answers). */
static void mark_entries(breaker_redis *f, uint32_t n, size_t np) {
    for (uint32_t i = 0; i < n; i++)
        f->entries[i]->round_failed = f->entries[i]->round_answered = false;
    for (size_t i = 0; i < np; i++) {
        const struct pending *p = &f->round_calls[i];
        const breaker_redis_reply *r = reply_of(f, p);
        struct breaker__fleet_answer a;
        bool answered;
        if (p->kind == PENDING_SCRIPT)
            answered = breaker__redis_read_answer(r, &a);
        else /* a version, moved or not; a credit's number */
            answered = r != NULL && r->type != BREAKER_REDIS_REPLY_ERROR;
        if (answered)
            p->e->round_answered = true;
        else
            p->e->round_failed = true;
    }
}

/* A read's or a credit's reply `r` that is no answer (no reply: its node
 * failed, and the exchange says why; an error: NOPERM, LOADING...): as for
 * a script's call. */
static void not_answered(const struct pending *p, const breaker_redis_reply *r, char *why,
                         size_t why_len) {
    if (r != NULL && why[0] == '\0')
        snprintf(why, why_len, "flush: %s: %s", p->e->key[FLEET_KEY_STATE],
                 r->type == BREAKER_REDIS_REPLY_ERROR ? r->str : "unexpected reply");
}

/* After an exchange: every answer decided in order, and the lease slots
 * whose release Redis answered freed. A lease result is kept until Redis
 * answered its own release (a release is idempotent: sending it again
 * after a round that may have reached Redis is harmless; an error reply,
 * -OOM or -READONLY after a failover, is not an answer, nor is no reply).
 * A version that moved, or that is no plain answer (no state, a field out
 * of range), is no error of the round: the state is read whole in its
 * second exchange (second_exchange()); nor is a credit not counted: the
 * full flush carries its calls there. @return 1 if every reply was an
 * answer, else 0 with `why` (the first failure's; the exchange's when it
 * had one). */
static int decide_answers(breaker_redis *f, uint32_t n, size_t np, char *why, size_t why_len) {
    mark_entries(f, n, np);
    /* A name's first answered round after its degraded period: which local
     * breakers moved since it became degraded and are CLOSED again (they
     * recovered locally: the protocol spares them an expired open). */
    for (uint32_t i = 0; i < n; i++) {
        struct entry *e = f->entries[i];
        if (e->round_failed) continue;
        breaker *b = breaker__redis_entry_b(e);
        struct breaker__fleet_local local;
        if (b != NULL) local = breaker__redis_local(b, false);
        breaker__fleet_check_recovered(&e->follow, e->failed_last, b != NULL ? &local : NULL);
    }
    uint64_t now = breaker__redis_now(f);
    int ok = 1;
    for (size_t i = 0; i < np; i++) {
        const struct pending *p = &f->round_calls[i];
        struct entry *e = p->e;
        const breaker_redis_reply *r = reply_of(f, p);
        struct breaker__fleet_answer a;
        if (p->kind != PENDING_SCRIPT && (r == NULL || r->type == BREAKER_REDIS_REPLY_ERROR)) {
            ok = 0;
            not_answered(p, r, why, why_len);
            continue;
        }
        if (p->kind == PENDING_READ) {
            uint64_t run = 0;
            breaker__fleet_round_done(&e->follow, false, p->idx);
            if (read_version(p, r, now, &a, &run)) {
                e->follow.known_run = run;
                decide_one(f, p, &a, now);
            } else {
                e->state_due = true;
                e->seen_after_read = p->seen_after;
            }
            continue;
        }
        if (p->kind == PENDING_CREDIT) {
            if (breaker__fleet_credit_answer(&e->follow, r->integer, now, &a)) {
                breaker__fleet_round_done(&e->follow, false, p->idx);
                decide_one(f, p, &a, now);
            } else {
                e->seen = p->seen_before; /* not counted: the full flush's to carry */
                e->credit_refused = true;
            }
            continue;
        }
        int good = breaker__redis_read_answer(r, &a);
        if (good && p->lease == NULL) breaker__fleet_round_done(&e->follow, true, p->idx);
        if (good) {
            decide_one(f, p, &a, now);
        } else {
            ok = 0;
            if (r != NULL && why[0] == '\0') why_not_an_answer(e, r, why, why_len);
            /* The script refused a state it could not trust and rebuilt it
             * (lua/prelude.lua): counted apart from other errors. */
            if (r != NULL && r->type == BREAKER_REDIS_REPLY_ERROR &&
                strncmp(r->str, "CORRUPT ", 8) == 0)
                breaker__redis_count(&f->n.state_rebuilds);
        }
        /* release: pairs with the acquire CAS of a caller claiming a FREE
         * slot. */
        if (p->lease != NULL && release_settled(p, good ? &a : NULL, now))
            atomic_store_explicit(&p->lease->state, LEASE_FREE, memory_order_release);
    }
    return ok;
}

/* The round's second exchange, only for the names that need it:
 *  - those whose version read showed their state moved (or could not be
 *    read as one): the state read whole with its control record (the
 *    control script's read, lua/control.lua), decided on as a flush's
 *    answer, so that a trip or a control change reaches a host that only
 *    reads at its next round; the record is kept for converge_entries().
 *    The deltas the read held back belong to the period that ended if the
 *    generation moved (the script would not count them, its known
 *    generation being the old one): dropped;
 *  - those whose credit was not counted: their full flush, carrying it.
 * A name whose call fails here had its round fail: its view is not this
 * round's. The calls go after the round's first `from` ones, the commands
 * after its first `at`, whose replies are still held. @return 1, or 0 with
 * `why` when some failed. */
static int second_exchange(breaker_redis *f, uint32_t n, size_t from, size_t at, char *why,
                           size_t why_len) {
    struct pending *p = f->round_calls + from;
    size_t np = 0;
    for (uint32_t i = 0; i < n; i++) {
        struct entry *e = f->entries[i];
        if (e->state_due) {
            memset(&p[np], 0, sizeof p[np]);
            p[np].e = e;
            p[np].idx = i;
            p[np].kind = PENDING_SCRIPT;
            p[np++].record = true;
        } else if (e->credit_refused) {
            memset(&p[np], 0, sizeof p[np]);
            collect_flush(f, e, i, false, true, &p[np++]);
        }
    }
    if (np == 0) return 1;
    for (size_t k = 0; k < np; k++) {
        p[k].cmd = at + k;
        if (p[k].record)
            breaker__redis_record_cmd(f, &p[k], &f->round_cmds[at + k]);
        else
            breaker__redis_pending_cmd(f, &p[k], &f->round_cmds[at + k]);
    }
    char inner[256] = "";
    (void)f->io->exchange(f->io_ctx, f->round_cmds + at, np, f->round_replies + at, inner,
                          sizeof inner);
    uint64_t now = breaker__redis_now(f);
    int ok = 1;
    for (size_t k = 0; k < np; k++) {
        struct entry *e = p[k].e;
        breaker_redis_reply **r = &f->round_replies[at + k];
        struct breaker__fleet_answer a;
        struct breaker__fleet_record rec;
        char what[256] = "";
        int good;
        if (p[k].record) {
            good = *r != NULL && breaker__redis_read_record(*r, &a, &rec, what, sizeof what);
            if (good && a.gen != e->follow.known_gen) e->seen = e->seen_after_read;
        } else {
            good = breaker__redis_read_answer(*r, &a);
            if (*r != NULL && !good) why_not_an_answer(e, *r, what, sizeof what);
            if (good) breaker__fleet_round_done(&e->follow, true, p[k].idx);
        }
        if (good) {
            decide_one(f, &p[k], &a, now);
            if (p[k].record) {
                breaker__fleet_record_keep(&e->follow, &rec, now);
                e->record_due = false;
            }
        } else {
            e->round_failed = true;
            e->follow.synced = false; /* its next call is the flush script */
            if (ok && why[0] == '\0')
                snprintf(why, why_len, "flush: %s: %s: %s", e->key[FLEET_KEY_STATE],
                         p[k].record ? "its state moved, and was not read" : "not credited",
                         *r == NULL ? (inner[0] ? inner : "no reply") : what);
            ok = 0;
        }
        e->state_due = e->credit_refused = false;
        breaker_redis_reply_free(*r);
        *r = NULL;
        memset(&p[k], 0, sizeof p[k]);
    }
    return ok;
}

/* FAIL_CLOSED, entry `i`'s view too old: its closed local breaker is
 * tripped, so that its calls are refused on the open short path. */
static void trip_stale(breaker_redis *f, uint32_t i) {
    struct entry *e = f->entries[i];
    breaker *b = breaker__redis_entry_b(e);
    if (b == NULL) return;
    struct breaker__fleet_local local = breaker__redis_local(b, false);
    if (breaker__fleet_trip_stale(&e->follow, &local, &f->actions[i].act)) f->actions[i].b = b;
}

/* Degraded per name (per node in a Cluster): a name whose calls were all
 * answered is in the fleet; one whose call failed is its local breaker
 * alone from now until a round answers it (lease.c reads `degraded`), and
 * when it becomes so, where its local breaker stands is noted (to tell on
 * rejoining whether it recovered on its own; `round_answered`: some of its
 * answers were decided on, their transitions still to come). FAIL_CLOSED
 * trips it once its own view is too old. @return whether some name's
 * calls were all answered. */
static bool settle_entries(breaker_redis *f, uint32_t n) {
    uint64_t now = breaker__redis_now(f);
    bool some = false;
    for (uint32_t i = 0; i < n; i++) {
        struct entry *e = f->entries[i];
        if (!e->round_failed) {
            some = true;
            /* release: pairs with the gate's acquire load (FAIL_CLOSED). */
            atomic_store_explicit(&e->last_ok_ns, now, memory_order_release);
            atomic_store_explicit(&e->degraded, 0, memory_order_relaxed);
            e->failed_last = false;
            continue;
        }
        /* Its next answered round is its full flush: what was held back,
         * and the state's checks, at once. */
        e->follow.synced = false;
        if (!e->failed_last) {
            breaker *b = breaker__redis_entry_b(e);
            struct breaker__fleet_local local;
            if (b != NULL) local = breaker__redis_local(b, false);
            breaker__fleet_note_degraded(&e->follow, b != NULL ? &local : NULL, e->round_answered);
        }
        e->failed_last = true;
        atomic_store_explicit(&e->degraded, 1, memory_order_relaxed);
        if (f->cfg.fail_mode == BREAKER_REDIS_FAIL_CLOSED &&
            breaker__redis_entry_view_too_old(f, e))
            trip_stale(f, i);
    }
    return some;
}

/* Entries left without an action whose local breaker is HALF_OPEN get a
 * check, so that a hung probe's timeout is applied by the round even
 * without traffic, after round_mu is released. */
static void check_half_open(breaker_redis *f, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        struct action *act = &f->actions[i];
        breaker *b = breaker__redis_entry_b(f->entries[i]);
        if (act->act.kind != FLEET_ACT_NONE || b == NULL ||
            breaker_state_peek(b) != BREAKER_HALF_OPEN)
            continue;
        act->check_timeout = true;
        act->b = b;
    }
}

/* A round in which some call failed: the handle is degraded (some of its
 * names are: settle_entries() said which); the nodes that answered get
 * their probe connections, for the names that stay in the fleet. */
static void round_failed(breaker_redis *f, uint32_t n, bool some_answered, const char *why) {
    check_half_open(f, n);
    breaker__redis_count(&f->n.flush_errors);
    if (some_answered) f->io->round_done(f->io_ctx);
    set_degraded(f, 1, why);
}

/* The control records that moved this round, read in one more exchange
 * (only when one moved: a change is rare), then every answered name's local
 * breaker converged to its record (level-triggered: what differs only). */
static void converge_entries(breaker_redis *f, uint32_t n) {
    size_t np = 0;
    for (uint32_t i = 0; i < n; i++) {
        struct entry *e = f->entries[i];
        if (!e->record_due || !e->round_answered || breaker__redis_entry_b(e) == NULL) continue;
        struct pending *p = &f->round_calls[np];
        memset(p, 0, sizeof *p);
        p->e = e;
        p->idx = i;
        p->kind = PENDING_SCRIPT;
        breaker__redis_record_cmd(f, p, &f->round_cmds[np]);
        np++;
    }
    if (np > 0) {
        char why[256];
        (void)f->io->exchange(f->io_ctx, f->round_cmds, np, f->round_replies, why, sizeof why);
        uint64_t now = breaker__redis_now(f);
        for (size_t k = 0; k < np; k++) {
            struct entry *e = f->round_calls[k].e;
            struct breaker__fleet_answer a;
            struct breaker__fleet_record rec;
            /* Not read: the next round reads it again. */
            if (breaker__redis_read_record(f->round_replies[k], &a, &rec, why, sizeof why)) {
                breaker__fleet_record_keep(&e->follow, &rec, now);
                e->record_due = false;
            }
            breaker_redis_reply_free(f->round_replies[k]);
            f->round_replies[k] = NULL;
            memset(&f->round_calls[k], 0, sizeof f->round_calls[k]);
        }
    }
    uint64_t now = breaker__redis_now(f);
    for (uint32_t i = 0; i < n; i++) {
        struct entry *e = f->entries[i];
        breaker *b = breaker__redis_entry_b(e);
        if (b == NULL || !e->round_answered || e->follow.record.version == 0) continue;
        struct action *act = &f->actions[i];
        struct breaker__fleet_local local = breaker__redis_local(b, true);
        int before = act->act.kind;
        uint64_t reset_before = e->follow.reset_seen;
        breaker__fleet_converge(&e->follow, &local, now, &act->act, &act->controls);
        if (act->controls.reset) {
            /* Decided, not given: the host words keep the reset before it
             * until the apply phase gave this one (host.c). */
            if (!e->reset_due) e->reset_before = reset_before;
            e->reset_due = true;
            /* The calls this host made before the reset belong to the
             * period it ended (its next flush names the new generation,
             * which would count them): the baseline moves to now. */
            breaker_stats s;
            breaker_stats_peek(b, &s);
            struct breaker__fleet_deltas dropped;
            breaker__fleet_take_deltas(&e->seen, &s, &dropped);
        }
        const struct breaker__fleet_controls *c = &act->controls;
        if (act->act.kind != before || c->reset || c->shadow >= 0 || c->reconfigure) act->b = b;
    }
}

/* One round, under round_mu; the transitions it decided are left in
 * f->actions for the first *n_out entries. */
static int round_locked(breaker_redis *f, uint32_t *n_out) {
    char why[256] = "";
    uint32_t n = atomic_load_explicit(&f->count, memory_order_acquire); /* pairs with attach */
    *n_out = n;
    f->round_no++;
    uint32_t flushes = breaker__redis_host_begin(f, n);
    size_t np = collect_calls(f, n, flushes);
    breaker__redis_host_collected(f, n);
    if (np == 0 && !flushes) { /* the host's flusher is another process: its view */
        check_half_open(f, n);
        int degraded = breaker__redis_host_after(f, n, 1, 0);
        if (degraded == 0) f->io->round_done(f->io_ctx);
        if (degraded >= 0) set_degraded(f, degraded, "the host's flusher is degraded, or stopped");
        return degraded == 0 ? BREAKER_OK : BREAKER_EIO;
    }
    size_t nc = 0;
    int got = send_calls(f, np, &nc, why, sizeof why);
    int ok = decide_answers(f, n, np, why, sizeof why) && got == 1;
    ok = second_exchange(f, n, np, nc, why, sizeof why) && ok;
    bool some_answered = settle_entries(f, n);
    for (size_t i = 0; i < nc; i++) {
        breaker_redis_reply_free(f->round_replies[i]);
        f->round_replies[i] = NULL;
    }
    for (size_t i = 0; i < np; i++)
        memset(&f->round_calls[i], 0, sizeof f->round_calls[i]);
    converge_entries(f, n);
    if (!ok) {
        round_failed(f, n, some_answered && got != -1, why);
        (void)breaker__redis_host_after(f, n, 0, 1);
        return BREAKER_EIO;
    }
    check_half_open(f, n);
    /* Before the host leaves degraded mode: its first probes find it. */
    f->io->round_done(f->io_ctx);
    /* release: pairs with the acquire load in the FAIL_CLOSED check. */
    atomic_store_explicit(&f->last_ok_ns, breaker__redis_now(f), memory_order_release);
    breaker__redis_count(&f->n.flushes);
    set_degraded(f, 0, "");
    (void)breaker__redis_host_after(f, n, 1, 1);
    return BREAKER_OK;
}

/* ---- Applying -------------------------------------------------------------------- */

/* The fleet's limits on the local breaker `b`: its configuration with the
 * stored fields replaced (breaker__fleet_limits_apply_live()), so that it
 * reports its usual RECONFIGURED event with the old and new limits.
 * Limits it already runs change nothing.
 *
 * A read, a change and a write: fenced by the configuration generation read
 * before the configuration, so that a change someone else makes meanwhile
 * (an operator's `breaker config` over the host's store file, another
 * thread's breaker_reconfigure() of a field the fleet does not store) is
 * never written over with the limits read before it: STALE, read again.
 * @return 1 when done (applied, or nothing to do); 0 when it could not be
 * done now (the store file's lock, or changes racing it
 * RECONFIGURE_ATTEMPTS times): the next round converges again; -1 when the
 * local breaker refused them (breaker_reconfigure()'s rules, counted: the
 * host goes on with its own). */
/* Reads again after a STALE before leaving it to the next round: each is a
 * few microseconds, and only a local writer changing the breaker without
 * pause (no operator does) could win them all. */
#define RECONFIGURE_ATTEMPTS 64

static int reconfigure_local(breaker_redis *f, breaker *b, const struct breaker__fleet_limits *l) {
    for (int attempt = 0; attempt < RECONFIGURE_ATTEMPTS; attempt++) {
        uint64_t generation = breaker_config_generation(b); /* first: see above */
        breaker_config cfg;
        breaker_get_config(b, &cfg);
        struct breaker__fleet_limits before, after;
        breaker__fleet_limits_of(&cfg, &before);
        breaker__fleet_limits_apply_live(l, &cfg);
        breaker__fleet_limits_of(&cfg, &after);
        if (breaker__fleet_limits_same(&before, &after, false)) return 1;
        char msg[256];
        int rc = breaker_reconfigure(b, &cfg, generation, msg, sizeof msg);
        if (rc == BREAKER_OK) {
            breaker__redis_count(&f->n.reconfigs_applied);
            return 1;
        }
        if (rc == BREAKER_EIO) return 0;
        if (rc != BREAKER_STALE) {
            breaker__redis_count(&f->n.reconfigs_refused);
            return -1;
        }
    }
    return 0;
}

/* A control to the local breaker, with `who` and `why` in its event
 * (breaker_control_apply()). Checked as text when read from Redis
 * (breaker__fleet_record_read()); should the core still refuse it, the
 * control is applied without it, never dropped. */
static void apply_control(breaker *b, enum breaker_control_action action, uint64_t for_ns,
                          const char *who, const char *why) {
    breaker_control c;
    breaker_control_init(&c);
    c.action = action;
    c.for_ns = for_ns;
    c.who = who;
    c.why = why;
    if (breaker_control_apply(b, &c, NULL, 0) == BREAKER_EINVAL) {
        c.who = c.why = NULL;
        (void)breaker_control_apply(b, &c, NULL, 0);
    }
}

/* The round's action `todo` on `b`. */
static void apply_action(breaker_redis *f, breaker *b, const struct breaker__fleet_action *todo,
                         const char *who, const char *why) {
    switch (todo->kind) {
    case FLEET_ACT_TRIP:
        if (breaker_trip_outside_for(b, todo->gen, todo->wait_ns, &todo->evidence) == BREAKER_OK)
            breaker__redis_count(&f->n.outside_trips);
        break;
    case FLEET_ACT_CLOSE:
        if (breaker_close_outside(b, todo->gen, NULL) == BREAKER_OK)
            breaker__redis_count(&f->n.fleet_closes);
        break;
    case FLEET_ACT_FORCE_OPEN:
        apply_control(b, BREAKER_CONTROL_FORCE_OPEN, 0, who, why);
        break;
    case FLEET_ACT_OPEN_FOR:
        /* A time left of 0 (the end passed since): nothing to open. */
        if (todo->wait_ns > 0) apply_control(b, BREAKER_CONTROL_OPEN_FOR, todo->wait_ns, who, why);
        break;
    case FLEET_ACT_FORCE_CLOSED:
        apply_control(b, BREAKER_CONTROL_FORCE_CLOSED, todo->wait_ns, who, why);
        break;
    case FLEET_ACT_RESET:
        apply_control(b, BREAKER_CONTROL_RESET, 0, who,
                      why != NULL ? why : "the fleet's control record forces nothing");
        break;
    default:
        break;
    }
}

/* Under apply_mu, without round_mu: apply the round's transitions. Each is
 * delivered with `applying` set, so that a detach of its breaker waits for
 * it (another thread) or leaves the destruction to us (a listener of it). */
static void apply_actions(breaker_redis *f, uint32_t n) {
    pthread_t self = pthread_self();
    for (uint32_t i = 0; i < n; i++) {
        struct action *act = &f->actions[i];
        const struct breaker__fleet_controls *c = &act->controls;
        bool controls = c->shadow >= 0 || c->reconfigure || c->reset;
        if (act->act.kind == FLEET_ACT_NONE && !act->check_timeout && !controls) continue;
        struct breaker__fleet_action todo = act->act;
        struct breaker__fleet_controls ctl = act->controls;
        bool check = act->check_timeout;
        act->act.kind = FLEET_ACT_NONE;
        act->check_timeout = false;
        breaker__fleet_controls_none(&act->controls);
        /* The record's who and why, as this round read it (no round runs
         * before we are done: apply_mu), for its transitions' events. */
        char who[BREAKER_WHO_MAX + 1] = "", why[BREAKER_WHY_MAX + 1] = "";
        uint64_t version = 0, born = 0;
        bool forced = todo.kind == FLEET_ACT_FORCE_OPEN || todo.kind == FLEET_ACT_FORCE_CLOSED;
        pthread_mutex_lock(&f->round_mu);
        int live = breaker__redis_entry_b(f->entries[i]) == act->b; /* not detached since */
        if (live) {
            f->applying = act->b;
            f->applier = self;
            const struct breaker__fleet_record *r = &f->entries[i]->follow.record;
            memcpy(who, r->who, sizeof who);
            memcpy(why, r->why, sizeof why);
            version = r->version;
            born = r->born;
            /* The intent, in the host words before the control is given. */
            unsigned what = (ctl.reset ? APPLYING_RESET : 0) |
                            (todo.kind == FLEET_ACT_FORCE_OPEN     ? APPLYING_FORCED_OPEN
                             : todo.kind == FLEET_ACT_FORCE_CLOSED ? APPLYING_FORCED_CLOSED
                                                                   : 0);
            breaker__redis_host_applying(f, f->entries[i], act->b, what);
        }
        pthread_mutex_unlock(&f->round_mu);
        if (!live) continue;
        /* The mode first: a transition heard with it (a trip, a close, a
         * forced state) is in the mode the fleet is now in, and so is its
         * event (event.shadow: a would-open while shadowed) and every call
         * after it; never an enforcing trip that refuses until the mode
         * follows. */
        if (ctl.shadow >= 0 && breaker_shadow(act->b) != ctl.shadow) {
            (void)breaker_set_shadow(act->b, ctl.shadow);
            breaker__redis_count(&f->n.shadow_applied);
        }
        if (ctl.reset) apply_control(act->b, BREAKER_CONTROL_RESET, 0, who, why);
        if (todo.kind != FLEET_ACT_NONE)
            apply_action(f, act->b, &todo, todo.by_record ? who : NULL,
                         todo.by_record ? why : NULL);
        else if (check)
            (void)breaker_get_state(act->b); /* the check: a due probe timeout */
        /* The limits after the transition: the fleet decided it (and its
         * wait) on the new ones already. */
        int done = ctl.reconfigure ? reconfigure_local(f, act->b, &ctl.limits) : 1;
        /* The generation the record's forced state made, to release it by
         * when the record no longer forces it. */
        uint64_t forced_gen = 0;
        if (forced) {
            enum breaker_state now_in = breaker_state_peek(act->b);
            if (now_in == BREAKER_FORCED_OPEN || now_in == BREAKER_FORCED_CLOSED)
                forced_gen = breaker_generation(act->b);
        }
        pthread_mutex_lock(&f->round_mu);
        struct entry *e = f->entries[i];
        if (breaker__redis_entry_b(e) == act->b) {
            if (forced || todo.kind == FLEET_ACT_RESET || ctl.reset)
                e->follow.forced_gen = forced_gen;
            if (ctl.reset) e->reset_due = false; /* given */
            if (done < 0) {
                e->follow.refused_version = version;
                e->follow.refused_born = born;
            }
            if (done > 0 && ctl.reconfigure) {
                /* The name's limits are the fleet's now: the cadence and a
                 * state made anew follow them. The text under limits_mu:
                 * the probe path copies it without round_mu (lease.c). */
                e->lim = ctl.limits;
                pthread_mutex_lock(&f->limits_mu);
                breaker__fleet_limits_format(&e->lim, e->limits, sizeof e->limits);
                pthread_mutex_unlock(&f->limits_mu);
                e->follow.every = 0;
                breaker__fleet_cadence_setup(&e->follow, &e->lim, f->cfg.full_flush_rounds,
                                             f->cfg.flush_interval_ns, f->cfg.key_ttl_ns);
            }
            /* The outcome, in the host words at once: the next holder (a
             * detach may follow before our next round) knows what was done. */
            breaker__redis_host_applied(f, e);
        }
        f->applying = NULL;
        breaker *doomed = f->doomed;
        f->doomed = NULL;
        pthread_cond_broadcast(&f->applied_cv);
        pthread_mutex_unlock(&f->round_mu);
        breaker_destroy(doomed); /* NULL: none */
    }
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

void *breaker__redis_flusher_main(void *arg) {
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
