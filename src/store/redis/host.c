/* SPDX-License-Identifier: MIT */
/*
 * host.c - one flusher per host (docs/fleet.md, "One flusher per host"):
 * with a store file (breaker_redis_config.store), every name is attached
 * through it, so the processes of the host share one breaker per name, and
 * for each name one process that attached it flushes that breaker's deltas
 * and applies the fleet's answers to it for all of them: the one whose host
 * lock (store/file/host.h) holds the name, a kernel lock on the name's byte
 * of the file, held for the flusher's life and freed by the kernel when it
 * dies. A lock per name, not per file: processes that attach different
 * names (registries open names on demand) each flush the names only they
 * have, and no name is left unflushed. The file's own byte names its
 * primary, the process a free name goes to first: the others take a free
 * name only once it stayed free for an interval and a half (the primary
 * takes every free name it has at each round), so the names of a host
 * whose processes attach the same names are flushed by one process (one
 * pipeline and one TIME per round, not one per process).
 *
 * What the file keeps per name (BREAKER__HOST_WORDS words, written by the
 * name's holder alone, each word whole): the counters it last sent (the
 * baseline of the next deltas), the name's flush sequence, the fleet
 * generation it knew and the open it follows, the last fleet order it
 * applied, its lease gate and its view (last good round, degraded). The
 * holder keeps its state in memory and writes it after collecting a round
 * (before sending: a holder killed then loses that round's deltas, never
 * counts one twice) and after deciding it (for the other processes' probe
 * gates); it reads the words once, when it takes the name, and goes on
 * from there: deltas neither counted twice nor lost, but those of the
 * round a holder was killed in (at most one interval's). A stopped holder
 * (SIGSTOP) keeps its names: the host's other processes see its view age
 * past host_stale_ns and go degraded for them (local probes, the local
 * breaker's trips) until it resumes and flushes everything counted
 * meanwhile.
 *
 * What the control record did to the host breaker (the last reset given,
 * the generation its forced state made, the record whose limits the breaker
 * refused) is written as done, never as decided: a reset a round decided is
 * not in the words until the apply phase gave it. Around the record's reset
 * or forced state the apply phase writes an intent (the breaker's generation
 * before, and what), gives it, then writes the outcome and clears the
 * intent, each at once, not at the next round: so a holder that gives the
 * name up right after (a detach, a registry's eviction) leaves words that
 * say what it did, and one killed anywhere in between leaves an intent the
 * next holder settles from the breaker itself (its generation, the
 * generation its latest reset made, and its state: settle_intent()). A
 * control is never lost, whichever holder dies where, and given once per
 * host but for one place of death (settle_intent()): a reset then given twice.
 *
 * Everything read from the file is input: words that are not what a holder
 * writes (a value out of range, a baseline above the counters, a control
 * word that is not the holder's mark) are not trusted: the name's baseline
 * restarts from its counters now (host_rebaselines), losing what was
 * counted since the last flush. Words never written (no process held the
 * name in this file yet) start from the taker's attach (the host breaker's
 * counters then, with the generation the attach's answer carried:
 * breaker__redis_host_attached()), so calls the host breaker counted before
 * any process attached it to the fleet are not sent, and those counted
 * after it, before the first round, count only if the fleet is still in
 * that generation (a reset in between ends their period); after a move, or
 * for an entry that held the name before, from the counters then.
 */
#define _POSIX_C_SOURCE 200809L

#include "store/redis/client.h"

#include <string.h>

/* The words of a name (breaker__host_lock_words()). */
enum {
    W_CTRL, /* WORDS_CLEAN, or 0: never written */
    W_SEQ,  /* the name's last flush sequence */
    W_SUCC, /* the baseline: struct breaker__fleet_seen */
    W_FAIL,
    W_SLOW,
    W_PSUCC,
    W_PFAIL,
    W_CARRY,          /* success_carry, two's complement, -2^32..0 */
    W_KNOWN,          /* follow.known_gen */
    W_FOLLOWED,       /* follow.followed_gen while it follows, else 0 */
    W_GATE,           /* the lease gate (monotonic ns: the host's processes share the clock) */
    W_VIEW,           /* the holder's view of the name: its last good round (monotonic ns)
                         | degraded << 63, for the probe gates of the other processes */
    W_RESET,          /* follow.reset_seen: the last fleet reset applied to the host breaker */
    W_REFUSED,        /* follow.refused_version: a control version whose limits it refused */
    W_FORCED,         /* follow.forced_gen: the generation the record's forced state made */
    W_REFUSED_BORN,   /* follow.refused_born: the state that version was of */
    W_APPLYING,       /* APPLYING_*: the record's controls being given now, 0: none */
    W_APPLYING_GEN,   /* the host breaker's generation before them */
    W_APPLYING_RESET, /* the reset being given (APPLYING_RESET), else 0 */
    W_USED
};
_Static_assert(W_USED <= BREAKER__HOST_WORDS, "the words fit the file's");

#define WORDS_TAG UINT64_C(0x686f737400000000) /* "host" */
/* A holder's mark: 2, the words of a name's lock holder (1 was a lease's,
 * whose words meant other things: not trusted). */
#define WORDS_CLEAN   (WORDS_TAG | 2)
#define CARRY_MIN     (-(INT64_C(1) << 32))
#define VIEW_DEGRADED (UINT64_C(1) << 63)

static void count_rebaseline(breaker_redis *f) { breaker__redis_count(&f->n.host_rebaselines); }

/* Whether the words `w` of a name whose counters are `s` now can be taken
 * as the baseline: written whole by a holder, every value in its range, no
 * counter above the breaker's. */
static bool words_trusted(const uint64_t *w, const breaker_stats *s, uint64_t gen) {
    if (w[W_CTRL] == 0) { /* never written: all zero, a baseline of nothing sent */
        for (unsigned i = W_SEQ; i < W_USED; i++)
            if (w[i] != 0) return false;
        return true;
    }
    if (w[W_CTRL] != WORDS_CLEAN) return false;
    uint64_t pfail = s->probes_failed - s->probes_timed_out;
    int64_t carry = (int64_t)w[W_CARRY];
    uint64_t big = (uint64_t)BREAKER__FLEET_BIG;
    unsigned all = APPLYING_RESET | APPLYING_FORCED_OPEN | APPLYING_FORCED_CLOSED;
    /* An intent names a generation the breaker had, and a reset only with
     * APPLYING_RESET. */
    bool intent = w[W_APPLYING] == 0
                      ? w[W_APPLYING_GEN] == 0 && w[W_APPLYING_RESET] == 0
                      : (w[W_APPLYING] & ~(uint64_t)all) == 0 && w[W_APPLYING_GEN] <= gen &&
                            ((w[W_APPLYING] & APPLYING_RESET) != 0) == (w[W_APPLYING_RESET] != 0) &&
                            w[W_APPLYING_RESET] <= big;
    return intent && w[W_SEQ] <= big && w[W_KNOWN] <= big && w[W_FOLLOWED] <= big &&
           w[W_RESET] <= big && w[W_REFUSED] <= big && w[W_REFUSED_BORN] <= big &&
           w[W_FORCED] <= big && w[W_SUCC] <= s->successes && w[W_FAIL] <= s->failures &&
           w[W_SLOW] <= s->slow && w[W_PSUCC] <= s->probes_succeeded && w[W_PFAIL] <= pfail &&
           carry <= 0 && carry >= CARRY_MIN;
}

/* The baseline of `b`'s counters now: take_deltas() of them gives nothing. */
static void baseline_now(struct breaker__fleet_seen *seen, breaker *b) {
    breaker_stats s;
    breaker_stats_peek(b, &s);
    struct breaker__fleet_deltas none;
    memset(seen, 0, sizeof *seen);
    breaker__fleet_take_deltas(seen, &s, &none);
}

/* A holder left the words with an intent (it died, or gave the name up,
 * while the apply phase gave the host breaker the record's reset or forced
 * state): what it did, as the host breaker tells. Still the generation the
 * intent names: nothing was done, and the words' reset and forced
 * generation (the ones before) stand, so this holder's rounds give the
 * record again. Moved on: the reset was given if a reset made a generation
 * after the intent's (breaker_reset_generation_peek(), marked right after
 * the reset's transition, before its event and its store record), whatever
 * moved the breaker since; if none did, the moves were other processes'
 * calls, and this holder's rounds give the reset. The forced state was
 * given if the breaker is in it now (this holder then releases it when the
 * record no longer holds it); if not, its rounds give it. Not the file's
 * last-control record: it is written after the control's event, and may be
 * skipped. What is left: a holder killed between the reset's transition
 * and its mark (the next instructions: no call, lock or listener between
 * them) leaves a reset given and unmarked, which the next holder gives a
 * second time (twice, never lost); and a reset another process of the host
 * made after the intent (an operator's, on the host breaker) counts as the
 * record's, which would only have repeated it. */
static void settle_intent(struct entry *e, breaker *b, const uint64_t *w) {
    uint64_t gen = breaker_generation(b);
    unsigned what = (unsigned)w[W_APPLYING];
    if (gen == w[W_APPLYING_GEN]) return;
    if ((what & APPLYING_RESET) && breaker_reset_generation_peek(b) > w[W_APPLYING_GEN])
        e->follow.reset_seen = w[W_APPLYING_RESET];
    enum breaker_state now = breaker_state_peek(b);
    if (((what & APPLYING_FORCED_OPEN) && now == BREAKER_FORCED_OPEN) ||
        ((what & APPLYING_FORCED_CLOSED) && now == BREAKER_FORCED_CLOSED))
        e->follow.forced_gen = gen;
}

/* `e`'s state, as its holder left it in the words `w`, when `e` takes the
 * name: see the file's comment. */
static void load_entry(breaker_redis *f, struct entry *e, breaker *b, const uint64_t *w) {
    breaker_stats s;
    breaker_stats_peek(b, &s);
    bool trusted = words_trusted(w, &s, breaker_generation(b));
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
        /* The resets the host breaker has had, whichever process applied
         * them: a new holder applies none of them again, nor retries limits
         * the breaker refused. */
        e->follow.reset_seen = w[W_RESET];
        e->follow.refused_version = w[W_REFUSED];
        e->follow.refused_born = w[W_REFUSED_BORN];
        e->follow.forced_gen = w[W_FORCED];
        if (w[W_APPLYING] != 0) settle_intent(e, b, w);
        return;
    }
    if (trusted && e->host_fresh) return; /* never written: its attach's baseline */
    if (!trusted) count_rebaseline(f);
    /* From now: take_deltas() of the counters gives nothing this round. The
     * sequence goes on from the clock (breaker__fleet_next_seq()); the
     * follow state from the next answer. */
    baseline_now(&e->seen, b);
    e->follow.known_gen = 0;
    e->follow.follows = false;
    e->follow.followed_gen = 0;
}

/* `e`'s state as words, with its view as the last round left it. A holder
 * killed while it writes them leaves each word old or new (each is written
 * whole): an old counter of the baseline resends deltas that round never
 * sent (it died before its exchange), a new one skips them; a success
 * baseline and a probe baseline of two rounds can only make the successes
 * sent fewer. So such words are trusted: they lose at most the round's
 * deltas, and never count one twice. */
static void entry_words(const struct entry *e, uint64_t *w) {
    memset(w, 0, BREAKER__HOST_WORDS * sizeof *w);
    w[W_CTRL] = WORDS_CLEAN;
    w[W_SEQ] = e->flush_seq;
    w[W_SUCC] = e->seen.successes;
    w[W_FAIL] = e->seen.failures;
    w[W_SLOW] = e->seen.slow;
    w[W_PSUCC] = e->seen.probes_succeeded;
    w[W_PFAIL] = e->seen.probes_failed;
    w[W_CARRY] = (uint64_t)e->seen.success_carry;
    w[W_KNOWN] = e->follow.known_gen;
    w[W_FOLLOWED] = e->follow.follows ? e->follow.followed_gen : 0;
    /* A reset decided, not given yet: the one before (see client.h). */
    w[W_RESET] = e->reset_due ? e->reset_before : e->follow.reset_seen;
    w[W_REFUSED] = e->follow.refused_version;
    w[W_REFUSED_BORN] = e->follow.refused_born;
    w[W_FORCED] = e->follow.forced_gen;
    w[W_APPLYING] = e->applying;
    w[W_APPLYING_GEN] = e->applying ? e->applying_gen : 0;
    w[W_APPLYING_RESET] = e->applying & APPLYING_RESET ? e->follow.reset_seen : 0;
    /* relaxed: a hint read alone (as the probe gate reads it). */
    w[W_GATE] = atomic_load_explicit(&e->gate_until_ns, memory_order_relaxed);
    /* acquire: pairs with the round's release store. relaxed: a flag.
     * None before the name's first good round: a new name is degraded
     * until then, which the others know without being told. */
    uint64_t ok = atomic_load_explicit(&e->last_ok_ns, memory_order_acquire);
    if (ok != 0)
        w[W_VIEW] = (ok & ~VIEW_DEGRADED) |
                    (atomic_load_explicit(&e->degraded, memory_order_relaxed) ? VIEW_DEGRADED : 0);
}

/* Whether another live entry of `e`'s name here flushes it (a registry's
 * new handle while the one it evicted is still in use: one host breaker,
 * flushed by one entry): the one that holds the name, or, when none does,
 * the first. */
static bool other_entry_flushes(const breaker_redis *f, uint32_t n, uint32_t i) {
    const struct entry *e = f->entries[i];
    if (e->host_held) return false;
    for (uint32_t j = 0; j < n; j++) {
        const struct entry *o = f->entries[j];
        if (j == i || breaker__redis_entry_b(o) == NULL || strcmp(o->name, e->name) != 0) continue;
        if (o->host_held || j < i) return true;
    }
    return false;
}

/* This handle's host lock on the file the store maps now. After a move the
 * old file's lock is closed (its names free for the processes still there)
 * and one is opened on the new file, whose names are taken anew. The host
 * id in the names' sequences keys is the file's: the flushes of every
 * holder in one file go on from each other's sequences. @return false: no
 * lock now (the store's lock busy, the file not opened again): the next
 * round tries again. */
static bool lock_current(breaker_redis *f, uint32_t n) {
    if (f->host_lock != NULL && breaker__host_lock_current(f->host_lock)) return true;
    if (f->host_lock != NULL) {
        breaker__host_lock_close(f->host_lock);
        f->host_lock = NULL;
        for (uint32_t i = 0; i < n; i++) {
            struct entry *e = f->entries[i];
            e->host_held = e->host_fresh = false;
            e->host_slot1 = 0;
            e->host_free_since_ns = 0;
        }
    }
    if (breaker__host_lock_open(f->store, &f->host_lock, NULL, 0) != BREAKER_OK) return false;
    breaker__fleet_host_id(breaker__host_lock_file_id(f->host_lock), f->host_id);
    return true;
}

/* `e`'s slot in the lock's file (false: its name is not there, as after a
 * move that could not attach it there yet). */
static bool slot_of(const breaker_redis *f, struct entry *e, uint32_t *slot) {
    if (e->host_slot1 == 0) {
        uint32_t s = 0;
        if (breaker__host_lock_find(f->host_lock, e->name, &s) != BREAKER_OK) return false;
        e->host_slot1 = s + 1;
    }
    *slot = e->host_slot1 - 1;
    return true;
}

/* Whether this handle holds `e`'s name now: held already, or taken now.
 * The primary takes a free name at once; another process only once the
 * name stayed free for an interval and a half, in which the primary, if it
 * has the name, had a round to take it. */
static bool hold(breaker_redis *f, struct entry *e, bool primary, uint64_t now) {
    uint32_t slot;
    if (e->host_held) return true;
    if (!slot_of(f, e, &slot)) return false;
    if (!primary) {
        if (!breaker__host_lock_free(f->host_lock, slot)) {
            e->host_free_since_ns = 0;
            return false;
        }
        if (e->host_free_since_ns == 0) e->host_free_since_ns = now;
        uint64_t iv = f->cfg.flush_interval_ns;
        if (now - e->host_free_since_ns < iv + iv / 2) return false;
    }
    if (!breaker__host_lock_take(f->host_lock, slot)) return false;
    e->host_held = true;
    e->host_free_since_ns = 0;
    breaker__redis_count(&f->n.host_takeovers);
    return true;
}

uint32_t breaker__redis_host_begin(breaker_redis *f, uint32_t n) {
    f->host_held = 0;
    if (f->store == NULL) return 1;
    bool locked = lock_current(f, n);
    bool primary = locked && breaker__host_lock_primary(f->host_lock);
    uint64_t now = breaker__redis_now(f);
    for (uint32_t i = 0; i < n; i++) {
        struct entry *e = f->entries[i];
        breaker *b = breaker__redis_entry_b(e);
        e->host_skip = true;
        if (b == NULL || !locked || other_entry_flushes(f, n, i)) continue;
        bool held_before = e->host_held;
        if (!hold(f, e, primary, now)) continue;
        if (!held_before) {
            uint64_t w[BREAKER__HOST_WORDS];
            breaker__host_lock_words(f->host_lock, e->host_slot1 - 1, w, 0);
            load_entry(f, e, b, w);
        }
        e->host_fresh = false;
        e->host_skip = false;
        f->host_held++;
    }
    atomic_store_explicit(&f->host_flusher, f->host_held, memory_order_relaxed);
    return f->host_held;
}

/* `e`'s words, as its state stands now, when this handle flushes its name. */
static void write_entry(breaker_redis *f, struct entry *e) {
    if (f->host_lock == NULL || !e->host_held || e->host_skip || breaker__redis_entry_b(e) == NULL)
        return;
    uint64_t w[BREAKER__HOST_WORDS];
    entry_words(e, w);
    breaker__host_lock_words(f->host_lock, e->host_slot1 - 1, w, 1);
}

/* The words of every name this round flushes. */
static void write_words(breaker_redis *f, uint32_t n) {
    for (uint32_t i = 0; i < n; i++)
        write_entry(f, f->entries[i]);
}

/* Intent, then the control, then its outcome (the file's comment): a holder
 * killed between the first two has done nothing, and the words say so; one
 * killed between the last two has done it, and the breaker says so
 * (settle_intent()). Neither "given once per host" nor "never lost" rests
 * on the holder surviving its apply phase. */
void breaker__redis_host_applying(breaker_redis *f, struct entry *e, breaker *b, unsigned what) {
    if (f->store == NULL || what == 0) return;
    e->applying = what;
    e->applying_gen = breaker_generation(b);
    write_entry(f, e);
}

void breaker__redis_host_applied(breaker_redis *f, struct entry *e) {
    if (f->store == NULL) return;
    e->applying = 0;
    e->applying_gen = 0;
    write_entry(f, e);
}

void breaker__redis_host_collected(breaker_redis *f, uint32_t n) {
    if (f->host_held > 0) write_words(f, n);
}

/* Names this process does not flush: what their holders follow, their
 * gates and their views, for this process's probe gate (lease.c reads
 * them). A holder's view older than host_stale_ns (it is stopped, or no
 * process holds the name) makes the name degraded here: its probes are
 * the local breaker's. @return -1: no such name has a holder's view yet;
 * 1: some holder is degraded, or stale; else 0; `*oldest`: the oldest
 * last good round among them. */
static int mirror_entries(breaker_redis *f, uint32_t n, uint64_t *oldest) {
    int view = -1;
    *oldest = 0;
    for (uint32_t i = 0; i < n; i++) {
        struct entry *e = f->entries[i];
        uint64_t w[BREAKER__HOST_WORDS];
        uint32_t slot;
        if (!e->host_skip || breaker__redis_entry_b(e) == NULL || f->host_lock == NULL ||
            !slot_of(f, e, &slot))
            continue;
        breaker__host_lock_words(f->host_lock, slot, w, 0);
        if (w[W_CTRL] != WORDS_CLEAN || w[W_FOLLOWED] > (uint64_t)BREAKER__FLEET_BIG) continue;
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
         * round failed for it or is too old, its age for FAIL_CLOSED (a
         * time not reached yet is no holder's: ignored). */
        uint64_t ok = w[W_VIEW] & ~VIEW_DEGRADED;
        if (w[W_VIEW] == 0 || ok > now) continue;
        bool degraded = (w[W_VIEW] & VIEW_DEGRADED) != 0 || now - ok > f->host_stale_ns;
        /* release: pairs with the gate's acquire load (FAIL_CLOSED). */
        atomic_store_explicit(&e->last_ok_ns, ok, memory_order_release);
        atomic_store_explicit(&e->degraded, degraded, memory_order_relaxed);
        if (*oldest == 0 || ok < *oldest) *oldest = ok;
        if (view < 1) view = degraded;
    }
    return view;
}

int breaker__redis_host_after(breaker_redis *f, uint32_t n, int ok, int sent) {
    if (f->store == NULL) return 0;
    if (f->host_held > 0) write_words(f, n); /* what the round decided, and its view */
    uint64_t oldest;
    int view = mirror_entries(f, n, &oldest);
    if (sent || f->host_held > 0) return !ok;
    /* A process that neither flushes nor sends: its view is its holders'.
     * release: pairs with the acquire load in the FAIL_CLOSED check. */
    if (oldest != 0) atomic_store_explicit(&f->last_ok_ns, oldest, memory_order_release);
    return view;
}

void breaker__redis_host_attached(breaker_redis *f, struct entry *e, breaker *b) {
    baseline_now(&e->seen, b);
    /* A retired entry whose release has not run yet: its name goes back
     * now, and the next round takes it as any free name. */
    if (e->host_held && f->host_lock != NULL)
        breaker__host_lock_give(f->host_lock, e->host_slot1 - 1);
    e->host_fresh = true;
    e->host_held = false;
    e->host_slot1 = 0;
    e->host_free_since_ns = 0;
    e->reset_due = false;
    e->applying = 0;
    e->applying_gen = 0;
}

void breaker__redis_host_release(breaker_redis *f, struct entry *e) {
    if (f->store == NULL) return;
    pthread_mutex_lock(&f->round_mu); /* the lock is the round's */
    if (e->host_held && f->host_lock != NULL)
        breaker__host_lock_give(f->host_lock, e->host_slot1 - 1);
    e->host_held = false;
    e->host_free_since_ns = 0;
    pthread_mutex_unlock(&f->round_mu);
}

int breaker__redis_host_open(breaker_redis *f, breaker_store *st, char *msg, size_t msg_len) {
    f->store = st;
    /* A holder's view older than this is a holder that stopped (or no
     * holder): twice the longest gap between two of its good rounds. */
    uint64_t gap = f->cfg.flush_interval_ns + f->cfg.io_timeout_ns;
    f->host_stale_ns = gap > HOST_STALE_MAX_NS / 2 ? HOST_STALE_MAX_NS : 2 * gap;
    int rc = breaker__host_lock_open(st, &f->host_lock, msg, msg_len);
    if (rc == BREAKER_EBUSY) return BREAKER_OK; /* the first round tries again */
    if (rc != BREAKER_OK) return rc;
    breaker__fleet_host_id(breaker__host_lock_file_id(f->host_lock), f->host_id);
    return BREAKER_OK;
}

void breaker__redis_host_close(breaker_redis *f) {
    breaker__host_lock_close(f->host_lock); /* every name it holds is free */
    f->host_lock = NULL;
}
