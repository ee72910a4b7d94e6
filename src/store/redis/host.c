/* SPDX-License-Identifier: MIT */
/*
 * host.c - one flusher per host (docs/fleet.md, "One flusher per host"):
 * with a store file (breaker_redis_config.store), every name is attached
 * through it, so the processes of the host share one breaker per name, and
 * for each name one process that attached it, the holder of the name's
 * lease in the file, flushes that breaker's deltas and applies the fleet's
 * answers to it for all of them. A lease per name, not per host: processes
 * that attach different names (registries open names on demand) each
 * flush the names only they have, and no name is left unflushed.
 *
 * What the file keeps per name (BREAKER_STORE_HOST_WORDS words, written
 * under the host lock, breaker_store_host_lock()): the lease (holder, its
 * process, expiry, term), the counters the holder last sent (the baseline
 * of the next deltas), the name's flush sequence, the fleet generation it
 * knew and the open it follows, and the lease gate of the fleet's open
 * wait. A new holder goes on from there: deltas neither counted twice nor
 * lost, but those of the round a holder was killed in (sent or not: at
 * most one interval's). A holder that stopped (SIGSTOP) and resumes finds
 * the lease taken at its next round and flushes the name no more; a round
 * it had collected before it stopped reaches Redis with an older sequence
 * than the new holder's, and its deltas are skipped if the new holder's
 * came first (lost, at most one interval's), counted once otherwise (the
 * baseline moved on under the lock, so no later round sends them again).
 *
 * Everything read from the file is input: words that are not what a
 * holder writes (a value out of range, a baseline above the counters, a
 * control word that is not the holder's mark) are not trusted: the name's
 * baseline restarts from its counters now (host_rebaselines), losing what
 * was counted since the last flush. Words never written are written by
 * the first attach of the name through the fleet: the baseline then is
 * the host breaker's counters at that attach, with the generation the
 * attach's answer carried as the one known (breaker__redis_host_armed()):
 * calls the host breaker counted before are not sent, and those counted
 * after it, before the first round, count only if the fleet is still in
 * that generation (a reset in between ends their period). Words still
 * never written at a round (that attach could not take the host lock)
 * start from the counters then.
 */
#define _POSIX_C_SOURCE 200809L

#include "store/redis/client.h"

#include <string.h>

/* The words of a name (breaker_store_host_words()). */
enum {
    W_CTRL, /* WORDS_CLEAN, or 0: never written */
    W_SEQ,  /* the name's last flush sequence */
    W_SUCC, /* the baseline: struct breaker__fleet_seen */
    W_FAIL,
    W_SLOW,
    W_PSUCC,
    W_PFAIL,
    W_CARRY,      /* success_carry, two's complement, -2^32..0 */
    W_KNOWN,      /* follow.known_gen */
    W_FOLLOWED,   /* follow.followed_gen while it follows, else 0 */
    W_GATE,       /* the lease gate (monotonic ns: the host's processes share the clock) */
    W_HOLDER,     /* the name's lease: the holder's id (0: none) */
    W_PROC,       /* its process (breaker_store_host_proc()) */
    W_EXPIRES,    /* CLOCK_MONOTONIC */
    W_TERM,       /* + 1 at every change of holder */
    W_VIEW,       /* the holder's view of the name: its last good round (monotonic ns)
                     | degraded << 63, for the probe gates of the other processes */
    W_ORDER,      /* follow.order_seq: the last fleet order applied to the host breaker */
    W_ORDER_BORN, /* follow.order_born: the state that numbered it */
    W_USED
};
_Static_assert(W_USED <= BREAKER_STORE_HOST_WORDS, "the words fit the file's");

#define WORDS_TAG     UINT64_C(0x686f737400000000) /* "host" */
#define WORDS_CLEAN   (WORDS_TAG | 1)
#define CARRY_MIN     (-(INT64_C(1) << 32))
#define VIEW_DEGRADED (UINT64_C(1) << 63)

/* The host's view (breaker_store_host_view()), published by the last
 * process that flushed names. */
enum { V_LAST_OK, V_DEGRADED };

static void count_rebaseline(breaker_redis *f) { breaker__redis_count(&f->n.host_rebaselines); }

/* Whether the words `w` of a name whose counters are `s` now can be taken
 * as the baseline: written whole by a holder, every value in its range, no
 * counter above the breaker's. */
static bool words_trusted(const uint64_t *w, const breaker_stats *s) {
    if (w[W_CTRL] == 0) { /* never written: all zero, a baseline of nothing sent */
        for (unsigned i = W_SEQ; i <= W_GATE; i++)
            if (w[i] != 0) return false;
        return true;
    }
    if (w[W_CTRL] != WORDS_CLEAN) return false;
    uint64_t pfail = s->probes_failed - s->probes_timed_out;
    int64_t carry = (int64_t)w[W_CARRY];
    uint64_t big = (uint64_t)BREAKER__FLEET_BIG;
    return w[W_SEQ] <= big && w[W_KNOWN] <= big && w[W_FOLLOWED] <= big && w[W_ORDER] <= big &&
           w[W_SUCC] <= s->successes && w[W_FAIL] <= s->failures && w[W_SLOW] <= s->slow &&
           w[W_PSUCC] <= s->probes_succeeded && w[W_PFAIL] <= pfail && carry <= 0 &&
           carry >= CARRY_MIN;
}

/* `e`'s state loaded from its words `w`, or restarted from its counters
 * now when they cannot be trusted (or were never written). */
static void load_entry(breaker_redis *f, struct entry *e, breaker *b, const uint64_t *w) {
    breaker_stats s;
    breaker_stats_peek(b, &s);
    bool trusted = words_trusted(w, &s);
    if (trusted && w[W_CTRL] == WORDS_CLEAN) {
        e->seen.successes = w[W_SUCC];
        e->seen.failures = w[W_FAIL];
        e->seen.slow = w[W_SLOW];
        e->seen.probes_succeeded = w[W_PSUCC];
        e->seen.probes_failed = w[W_PFAIL];
        e->seen.success_carry = (int64_t)w[W_CARRY];
        e->flush_seq = w[W_SEQ];
        e->follow.known_gen = w[W_KNOWN];
        e->follow.follows = w[W_FOLLOWED] != 0;
        e->follow.followed_gen = w[W_FOLLOWED];
        /* The orders the host breaker has had, whichever process applied
         * them: a new holder applies none of them again. */
        e->follow.order_seq = w[W_ORDER];
        e->follow.order_born = w[W_ORDER_BORN];
        return;
    }
    if (!trusted) count_rebaseline(f);
    /* From now: take_deltas() of the counters gives nothing this round. */
    struct breaker__fleet_deltas none;
    memset(&e->seen, 0, sizeof e->seen);
    breaker__fleet_take_deltas(&e->seen, &s, &none);
    /* The sequence goes on from the clock (breaker__fleet_next_seq()); the
     * follow state from the next answer. */
    e->follow.known_gen = 0;
    e->follow.follows = false;
    e->follow.followed_gen = 0;
}

/* The baseline `seen` as words. */
static void seen_words(const struct breaker__fleet_seen *seen, uint64_t *w) {
    w[W_SUCC] = seen->successes;
    w[W_FAIL] = seen->failures;
    w[W_SLOW] = seen->slow;
    w[W_PSUCC] = seen->probes_succeeded;
    w[W_PFAIL] = seen->probes_failed;
    w[W_CARRY] = (uint64_t)seen->success_carry;
}

/* `e`'s state, and the lease it holds, as words. A holder killed while it
 * writes them leaves each word old or new (each is written whole): an old
 * counter of the baseline resends deltas that round never sent (it died
 * before its exchange), a new one skips them; a success baseline and a
 * probe baseline of two rounds can only make the successes sent fewer. So
 * such words are trusted: they lose at most the round's deltas, and never
 * count one twice. */
static void entry_words(const breaker_redis *f, const struct entry *e, uint64_t *w) {
    memset(w, 0, BREAKER_STORE_HOST_WORDS * sizeof *w);
    w[W_CTRL] = WORDS_CLEAN;
    w[W_SEQ] = e->flush_seq;
    seen_words(&e->seen, w);
    w[W_KNOWN] = e->follow.known_gen;
    w[W_FOLLOWED] = e->follow.follows ? e->follow.followed_gen : 0;
    w[W_ORDER] = e->follow.order_seq;
    w[W_ORDER_BORN] = e->follow.order_born;
    /* relaxed: a hint read alone (as the probe gate reads it). */
    w[W_GATE] = atomic_load_explicit(&e->gate_until_ns, memory_order_relaxed);
    w[W_HOLDER] = f->holder_id;
    w[W_PROC] = f->host_proc;
    w[W_EXPIRES] = e->host_expires_ns;
    w[W_TERM] = e->host_term;
}

/* Whether the lease in `w` is this handle's, at `now`; or free to take (none,
 * expired, or its process gone: `alive` asks, with a one-entry cache). */
static bool lease_mine(const breaker_redis *f, const uint64_t *w) {
    return w[W_HOLDER] == f->holder_id && w[W_PROC] == f->host_proc;
}

struct alive_cache {
    uint64_t proc;
    int alive; /* -1: not asked */
};

static bool lease_free(breaker_redis *f, const uint64_t *w, uint64_t now, struct alive_cache *c) {
    /* An expiry further than any holder's lease (input: a damaged file)
     * would keep the name from every flusher: free. */
    if (w[W_HOLDER] == 0 || now >= w[W_EXPIRES] || w[W_EXPIRES] - now > HOST_LEASE_MAX_NS)
        return true;
    if (c->alive < 0 || c->proc != w[W_PROC]) {
        c->proc = w[W_PROC];
        c->alive = breaker_store_host_alive(f->store, w[W_PROC]);
    }
    return !c->alive;
}

/* Whether `e` is another live entry's name (a registry's new handle while
 * the one it evicted is still in use: one host breaker, flushed by the
 * first). */
static bool dup_entry(const breaker_redis *f, uint32_t i) {
    for (uint32_t j = 0; j < i; j++)
        if (breaker__redis_entry_b(f->entries[j]) != NULL &&
            strcmp(f->entries[j]->name, f->entries[i]->name) == 0)
            return true;
    return false;
}

/* Without the host lock: whether this round may hold any name (one is this
 * handle's, or free). When none, the round takes no lock at all. */
static bool may_hold(breaker_redis *f, uint32_t n, uint64_t now, struct alive_cache *c) {
    for (uint32_t i = 0; i < n; i++) {
        struct entry *e = f->entries[i];
        uint64_t w[BREAKER_STORE_HOST_WORDS];
        if (breaker__redis_entry_b(e) == NULL ||
            breaker_store_host_words_peek(f->store, e->name, w) != BREAKER_OK)
            continue;
        if (lease_mine(f, w) || lease_free(f, w, now, c)) return true;
    }
    return false;
}

uint32_t breaker__redis_host_begin(breaker_redis *f, uint32_t n) {
    f->host_held = 0;
    f->host_locked = 0;
    if (f->store == NULL) return 1;
    for (uint32_t i = 0; i < n; i++)
        f->entries[i]->host_skip = true;
    uint64_t now = breaker__redis_now(f);
    struct alive_cache c = {.proc = 0, .alive = -1};
    if (!may_hold(f, n, now, &c) || breaker_store_host_lock(f->store) != BREAKER_OK) {
        atomic_store_explicit(&f->host_flusher, 0, memory_order_relaxed);
        return 0; /* a lock busy for long: not this round (the leases stand) */
    }
    now = breaker__redis_now(f);
    for (uint32_t i = 0; i < n; i++) {
        struct entry *e = f->entries[i];
        breaker *b = breaker__redis_entry_b(e);
        uint64_t w[BREAKER_STORE_HOST_WORDS];
        if (b == NULL || dup_entry(f, i) ||
            breaker_store_host_words(f->store, e->name, w, 0) != BREAKER_OK)
            continue;
        bool mine = lease_mine(f, w);
        if (!mine && !lease_free(f, w, now, &c)) continue;
        if (!mine) breaker__redis_count(&f->n.host_takeovers);
        /* The lease's term counts changes of holder (input: a term that
         * cannot count on is restarted). */
        e->host_term = mine ? w[W_TERM] : (w[W_TERM] < UINT64_MAX ? w[W_TERM] + 1 : 1);
        e->host_expires_ns = now + f->host_ttl_ns;
        load_entry(f, e, b, w);
        e->host_skip = false;
        f->host_held++;
    }
    atomic_store_explicit(&f->host_flusher, f->host_held, memory_order_relaxed);
    if (f->host_held == 0) {
        breaker_store_host_unlock(f->store);
        return 0;
    }
    f->host_locked = 1;
    return f->host_held;
}

void breaker__redis_host_collected(breaker_redis *f, uint32_t n) {
    if (!f->host_locked) return;
    for (uint32_t i = 0; i < n; i++) {
        struct entry *e = f->entries[i];
        if (e->host_skip || breaker__redis_entry_b(e) == NULL) continue;
        uint64_t w[BREAKER_STORE_HOST_WORDS];
        entry_words(f, e, w);
        (void)breaker_store_host_words(f->store, e->name, w, 1);
    }
    breaker_store_host_unlock(f->store);
    f->host_locked = 0;
}

/* Names this process does not flush: what their holders follow, and their
 * gates, for this process's probe gate (lease.c reads them). */
static void mirror_entries(breaker_redis *f, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        struct entry *e = f->entries[i];
        uint64_t w[BREAKER_STORE_HOST_WORDS];
        if (!e->host_skip || breaker__redis_entry_b(e) == NULL ||
            breaker_store_host_words_peek(f->store, e->name, w) != BREAKER_OK ||
            w[W_CTRL] != WORDS_CLEAN || w[W_FOLLOWED] > (uint64_t)BREAKER__FLEET_BIG)
            continue;
        /* relaxed: hints read alone by the gate. A gate of this process's
         * own (a refusal it got) is kept when it is later. */
        atomic_store_explicit(&e->followed_gen, w[W_FOLLOWED], memory_order_relaxed);
        uint64_t gate = atomic_load_explicit(&e->gate_until_ns, memory_order_relaxed);
        uint64_t now = breaker__redis_now(f);
        /* A gate further than the longest open wait from now is no
         * holder's: ignored. */
        if (w[W_GATE] > gate && w[W_GATE] - now <= BREAKER__FLEET_MAX_DURATION_US * 1000)
            atomic_store_explicit(&e->gate_until_ns, w[W_GATE], memory_order_relaxed);
        /* The name's view is its holder's: degraded while the holder's last
         * round failed for it, its age for FAIL_CLOSED (a time not reached
         * yet is no holder's: ignored). */
        uint64_t ok = w[W_VIEW] & ~VIEW_DEGRADED;
        if (w[W_VIEW] == 0 || ok > now) continue;
        /* release: pairs with the gate's acquire load (FAIL_CLOSED). */
        atomic_store_explicit(&e->last_ok_ns, ok, memory_order_release);
        atomic_store_explicit(&e->degraded, (w[W_VIEW] & VIEW_DEGRADED) != 0, memory_order_relaxed);
    }
}

/* After the round decided: each name it flushed as the round left it (what
 * it follows now, its gate, and its baseline, which a read that showed
 * another generation moves on: its held-back deltas dropped), for the
 * other processes' gates and the next holder; under the lock again, and
 * only for names whose lease is still this handle's in the same term. */
static void store_follow(breaker_redis *f, uint32_t n) {
    if (breaker_store_host_lock(f->store) != BREAKER_OK) return;
    for (uint32_t i = 0; i < n; i++) {
        struct entry *e = f->entries[i];
        uint64_t w[BREAKER_STORE_HOST_WORDS];
        if (e->host_skip || breaker__redis_entry_b(e) == NULL ||
            breaker_store_host_words(f->store, e->name, w, 0) != BREAKER_OK || !lease_mine(f, w) ||
            w[W_TERM] != e->host_term)
            continue;
        entry_words(f, e, w);
        /* acquire: pairs with the round's release store. relaxed: a flag. */
        uint64_t ok = atomic_load_explicit(&e->last_ok_ns, memory_order_acquire);
        w[W_VIEW] = (ok & ~VIEW_DEGRADED) |
                    (atomic_load_explicit(&e->degraded, memory_order_relaxed) ? VIEW_DEGRADED : 0);
        (void)breaker_store_host_words(f->store, e->name, w, 1);
    }
    breaker_store_host_unlock(f->store);
}

int breaker__redis_host_after(breaker_redis *f, uint32_t n, int ok, int sent) {
    if (f->store == NULL) return 0;
    uint64_t view[4] = {0};
    if (f->host_held > 0) {
        store_follow(f, n);
        /* acquire: pairs with the round's release store. */
        view[V_LAST_OK] = atomic_load_explicit(&f->last_ok_ns, memory_order_acquire);
        view[V_DEGRADED] = !ok;
        breaker_store_host_view(f->store, view, 1);
    }
    mirror_entries(f, n);
    if (sent || f->host_held > 0) return !ok;
    breaker_store_host_view(f->store, view, 0);
    uint64_t now = breaker__redis_now(f);
    uint64_t last_ok = view[V_LAST_OK] <= now ? view[V_LAST_OK] : 0; /* input */
    /* release: pairs with the acquire load in the FAIL_CLOSED check. */
    if (last_ok != 0) atomic_store_explicit(&f->last_ok_ns, last_ok, memory_order_release);
    if (last_ok == 0 && view[V_DEGRADED] == 0) return -1; /* no flushing round yet */
    return last_ok == 0 || view[V_DEGRADED] != 0;
}

void breaker__redis_host_armed(breaker_redis *f, const char *name, breaker *b,
                               const struct breaker__fleet_answer *armed) {
    /* The host lock gives up after 10 ms (a stopped process under it): an
     * attach, which makes a round trip already, tries a few times. */
    int locked = BREAKER_EIO;
    for (int i = 0; i < 10 && locked != BREAKER_OK; i++)
        locked = breaker_store_host_lock(f->store);
    if (locked != BREAKER_OK) return; /* the first round starts from its counters */
    uint64_t w[BREAKER_STORE_HOST_WORDS];
    breaker_stats s;
    breaker_stats_peek(b, &s);
    if (breaker_store_host_words(f->store, name, w, 0) == BREAKER_OK && w[W_CTRL] == 0 &&
        words_trusted(w, &s)) {
        struct breaker__fleet_seen seen;
        struct breaker__fleet_deltas none;
        memset(&seen, 0, sizeof seen);
        breaker__fleet_take_deltas(&seen, &s, &none);
        /* No holder, no sequence, nothing followed yet: the first round of
         * any process takes the lease and goes on from here. */
        memset(w, 0, BREAKER_STORE_HOST_WORDS * sizeof *w);
        w[W_CTRL] = WORDS_CLEAN;
        seen_words(&seen, w);
        w[W_KNOWN] = armed != NULL ? armed->gen : 0;
        /* The orders given before the host breaker was made are history
         * for every process that holds the name later. */
        w[W_ORDER] = armed != NULL ? armed->order_seq : 0;
        w[W_ORDER_BORN] = armed != NULL ? armed->born : 0;
        (void)breaker_store_host_words(f->store, name, w, 1);
    }
    breaker_store_host_unlock(f->store);
}

void breaker__redis_host_release(breaker_redis *f, struct entry *e) {
    if (f->store == NULL || breaker_store_host_lock(f->store) != BREAKER_OK) return;
    uint64_t w[BREAKER_STORE_HOST_WORDS];
    if (breaker_store_host_words(f->store, e->name, w, 0) == BREAKER_OK && lease_mine(f, w)) {
        w[W_HOLDER] = 0;
        w[W_EXPIRES] = 0;
        (void)breaker_store_host_words(f->store, e->name, w, 1);
    }
    breaker_store_host_unlock(f->store);
}
