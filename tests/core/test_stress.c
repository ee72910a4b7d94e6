/* SPDX-License-Identifier: MIT */
/*
 * test_stress.c - several threads hammer one breaker through trips, waits,
 * probes and closes, on a fake clock that a driver thread moves forward; the
 * test checks the invariants that must hold whatever the interleaving.
 *
 * - Never more probes in flight than half_open_max_probes: each thread counts
 *   the permits it holds per generation (incremented after breaker_acquire()
 *   returns, decremented before breaker_complete() is called, so the count
 *   never exceeds what the breaker really holds); for every generation that
 *   was HALF_OPEN, the peak must not exceed the limit.
 * - Every admitted permit settles exactly once: a first completion returns OK
 *   or STALE, never ALREADY_SETTLED or EINVAL; a permit completed by two
 *   threads at once (through a shared mailbox) settles once and the other
 *   completion gets ALREADY_SETTLED.
 * - At quiescence the counters add up: admitted == successes + failures +
 *   ignored + stale (nothing unsettled), and each counter equals what the
 *   threads saw returned.
 * - Transitions, seen through on_event and ordered by generation, are
 *   consecutive (one event per generation), each starts where the previous
 *   one ended, and each (from, to, reason) is one the state machine allows.
 *
 * Each case runs for at least BREAKER_STRESS_MS milliseconds of wall time
 * (default 1000), longer (up to five times) until it has seen probes close,
 * fail and time out. The label "concurrency" makes `make check` run it under
 * TSan too.
 */
#define _POSIX_C_SOURCE 200809L
#include "reference_model.h" /* for its random numbers only */

#include <breaker.h>

#include "test_breaker.h"

#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#define US UINT64_C(1000)
#define MS UINT64_C(1000000)

#define WORKERS      3         /* threads calling the breaker, besides the driver */
#define MAX_WORKERS  16        /* an oversubscribed pool: more threads than owned stripes */
#define HELD_MAX     4         /* permits a worker holds at once */
#define PARK_MAX     4         /* hung calls a worker holds at once: every probe */
#define MAILBOX      8         /* permits handed between threads */
#define GEN_CAP      (1 << 20) /* generations tracked; the run stops before */
#define OPS_PER_TICK 48        /* worker operations per clock advance */

/* What the threads saw returned; summed at the end. */
struct tally {
    uint64_t admitted;
    uint64_t rejected_open; /* REJECTED_OPEN: OPEN or FORCED_OPEN */
    uint64_t rejected_half_open;
    uint64_t ok[4];    /* first completions returning OK, by outcome passed */
    uint64_t stale[4]; /* first completions returning STALE, by outcome passed */
    uint64_t duplicates;
    /* Broken invariants, each counted where it is seen. */
    uint64_t bad_acquire;    /* breaker_acquire returned something else */
    uint64_t bad_first;      /* a first completion not OK or STALE */
    uint64_t bad_second;     /* a second completion not ALREADY_SETTLED */
    uint64_t double_settled; /* two racing completions both settled a permit */
    uint64_t bad_snapshot;   /* stats_get failed or showed too many probes */
};

/* A permit shared by two threads: published by one, completed by another
 * and sometimes, at the same moment, by the publisher too. */
struct mailbox_slot {
    breaker_permit permit;
    int outcome[2];
    _Atomic int state;   /* 0 free, 1 being filled, 2 published, 3 published
                            and raced by the publisher, 4 taken */
    _Atomic int done;    /* completions finished */
    _Atomic int settled; /* completions that did not return ALREADY_SETTLED */
};

struct gen_info {
    _Atomic uint32_t events; /* transitions reported that started this gen */
    _Atomic uint8_t from, to, reason;
    _Atomic uint32_t inflight; /* permits of this gen the threads hold */
    _Atomic uint32_t peak;
};

struct stress {
    breaker *b;
    breaker_config cfg;
    _Atomic uint64_t now; /* the fake clock */
    _Atomic bool stop;
    _Atomic uint64_t ops;
    _Atomic uint64_t tick_ops; /* `ops` when the clock last moved */
    unsigned ticks;
    uint64_t elapsed_ms;
    unsigned driver_errors; /* manual control that did not return OK */
    _Atomic unsigned fail_percent;
    _Atomic bool hang_probes; /* probes hang for longer in this phase */
    struct gen_info *gens;
    _Atomic uint64_t max_gen_seen;
    _Atomic uint64_t reasons[BREAKER_REASON_COUNT]; /* transitions by reason */
    _Atomic uint64_t bad_generation;                /* an event outside 2..GEN_CAP-1 */
    _Atomic uint64_t bad_evidence; /* trips whose evidence is no window that can exist */
    struct mailbox_slot mailbox[MAILBOX];
    pthread_mutex_t tally_mu;
    struct tally total;
    uint64_t mailbox_races;
};

static uint64_t stress_clock(void *ctx) {
    struct stress *s = ctx;
    return atomic_load_explicit(&s->now, memory_order_relaxed);
}

static void stress_event(void *ctx, breaker *b, const breaker_event *ev) {
    struct stress *s = ctx;
    (void)b;
    if (ev->generation < 2 || ev->generation >= GEN_CAP) {
        atomic_store_explicit(&s->bad_generation, ev->generation, memory_order_relaxed);
        return;
    }
    /* A rate trip rests on a window that can exist: failures and slow calls
     * within calls, and a count window's calls within its size (a torn
     * read of the count window's shares once gave 11341 failures of 100). */
    if (ev->reason == BREAKER_REASON_FAILURE_RATE || ev->reason == BREAKER_REASON_SLOW_CALL_RATE) {
        const breaker_evidence *e = &ev->evidence;
        bool bad = e->failures > e->calls || e->slow_calls > e->calls ||
                   (s->cfg.trip == BREAKER_TRIP_COUNT_WINDOW && e->calls > s->cfg.window_size) ||
                   e->calls < s->cfg.min_calls;
        if (bad) atomic_fetch_add_explicit(&s->bad_evidence, 1, memory_order_relaxed);
    }
    struct gen_info *g = &s->gens[ev->generation];
    atomic_store_explicit(&g->from, (uint8_t)ev->from, memory_order_relaxed);
    atomic_store_explicit(&g->to, (uint8_t)ev->to, memory_order_relaxed);
    atomic_store_explicit(&g->reason, (uint8_t)ev->reason, memory_order_relaxed);
    atomic_fetch_add_explicit(&g->events, 1, memory_order_relaxed);
    if ((unsigned)ev->reason < BREAKER_REASON_COUNT)
        atomic_fetch_add_explicit(&s->reasons[ev->reason], 1, memory_order_relaxed);
    uint64_t seen = atomic_load_explicit(&s->max_gen_seen, memory_order_relaxed);
    while (seen < ev->generation &&
           !atomic_compare_exchange_weak_explicit(&s->max_gen_seen, &seen, ev->generation,
                                                  memory_order_relaxed, memory_order_relaxed)) {
    }
}

/* ---- Workers ------------------------------------------------------------------ */

struct held {
    breaker_permit permit;
    uint64_t gen; /* the generation it is counted in, 0 if unknown */
};

struct worker {
    struct stress *s;
    struct ref_rng rng;
    struct held held[HELD_MAX];
    unsigned nheld;
    struct held parked[PARK_MAX]; /* hung calls: held for many operations */
    uint64_t park_left[PARK_MAX]; /* 0: the place is free */
    struct tally t;
    uint64_t races;
};

static int random_outcome(struct worker *w) {
    uint64_t x = ref_rng_below(&w->rng, 100);
    if (x < 5) return BREAKER_IGNORED;
    if (x < 10) return BREAKER_CANCELLED;
    unsigned fail = atomic_load_explicit(&w->s->fail_percent, memory_order_relaxed);
    return ref_rng_below(&w->rng, 100) < fail ? BREAKER_FAILURE : BREAKER_SUCCESS;
}

static void count_first_completion(struct tally *t, int outcome, int rc) {
    if (rc == BREAKER_OK)
        t->ok[outcome]++;
    else if (rc == BREAKER_STALE)
        t->stale[outcome]++;
    else
        t->bad_first++;
}

static void tally_add(struct tally *to, const struct tally *from) {
    to->admitted += from->admitted;
    to->rejected_open += from->rejected_open;
    to->rejected_half_open += from->rejected_half_open;
    for (int i = 0; i < 4; i++) {
        to->ok[i] += from->ok[i];
        to->stale[i] += from->stale[i];
    }
    to->duplicates += from->duplicates;
    to->bad_acquire += from->bad_acquire;
    to->bad_first += from->bad_first;
    to->bad_second += from->bad_second;
    to->double_settled += from->double_settled;
    to->bad_snapshot += from->bad_snapshot;
}

static void note_peak(struct gen_info *g, uint32_t count) {
    uint32_t peak = atomic_load_explicit(&g->peak, memory_order_relaxed);
    while (peak < count &&
           !atomic_compare_exchange_weak_explicit(&g->peak, &peak, count, memory_order_relaxed,
                                                  memory_order_relaxed)) {
    }
}

static void worker_acquire(struct worker *w) {
    struct stress *s = w->s;
    struct held h;
    uint64_t g1 = breaker_generation(s->b);
    int rc = breaker_acquire(s->b, &h.permit);
    uint64_t g2 = breaker_generation(s->b);
    if (rc == BREAKER_REJECTED_OPEN) {
        w->t.rejected_open++;
        return;
    }
    if (rc == BREAKER_REJECTED_HALF_OPEN) {
        w->t.rejected_half_open++;
        return;
    }
    if (rc != BREAKER_OK) {
        w->t.bad_acquire++;
        return;
    }
    w->t.admitted++;
    /* The permit's generation lies in [g1, g2]. When g2 == g1 + 1 and g2 is a
     * HALF_OPEN generation, g1 was OPEN, which admits nothing: the permit is
     * g2's probe. Counting it in g2 in the other cases is harmless, since
     * peaks are checked only for HALF_OPEN generations. */
    h.gen = 0;
    if (g2 <= g1 + 1 && g2 < GEN_CAP) {
        h.gen = g2;
        uint32_t c = atomic_fetch_add_explicit(&s->gens[g2].inflight, 1, memory_order_relaxed) + 1;
        note_peak(&s->gens[g2], c);
    }
    /* Probes are the calls that hang (the state read is only a hint): for
     * up to a few probe timeouts, so that hung probes hold every slot and
     * their deadlines pass, or for less, so that they succeed or fail late. */
    unsigned p = 0;
    while (p < PARK_MAX && w->park_left[p] != 0)
        p++;
    if (p < PARK_MAX && breaker_get_state(s->b) == BREAKER_HALF_OPEN) {
        w->parked[p] = h;
        bool hang = atomic_load_explicit(&s->hang_probes, memory_order_relaxed);
        w->park_left[p] =
            hang ? 1000 + ref_rng_below(&w->rng, 4000) : 1 + ref_rng_below(&w->rng, 60);
    } else {
        w->held[w->nheld++] = h;
    }
}

/* Take the permit out of the worker's count of its generation: done before
 * the breaker can see it completed, so the count stays a lower bound. */
static void release_count(struct worker *w, const struct held *h) {
    if (h->gen != 0)
        atomic_fetch_sub_explicit(&w->s->gens[h->gen].inflight, 1, memory_order_relaxed);
}

static void settle(struct worker *w, struct held h) {
    release_count(w, &h);
    int outcome = random_outcome(w);
    int rc = breaker_complete(w->s->b, &h.permit, (enum breaker_outcome)outcome);
    count_first_completion(&w->t, outcome, rc);
    if (ref_rng_below(&w->rng, 8) == 0) {
        rc = breaker_complete(w->s->b, &h.permit, (enum breaker_outcome)random_outcome(w));
        if (rc == BREAKER_ALREADY_SETTLED)
            w->t.duplicates++;
        else
            w->t.bad_second++;
    }
}

static void worker_complete(struct worker *w, unsigned i) {
    struct held h = w->held[i];
    w->held[i] = w->held[--w->nheld];
    settle(w, h);
}

/* The hung call ends at last (typically after its probe deadline). */
static void worker_unpark(struct worker *w) {
    bool stop = atomic_load_explicit(&w->s->stop, memory_order_relaxed);
    uint64_t gen = breaker_generation(w->s->b);
    for (unsigned p = 0; p < PARK_MAX; p++) {
        /* A hung probe whose half-open is over has done its job: settle it
         * (STALE) so that the place is free for the next half-open's probes. */
        bool over = w->parked[p].gen != gen;
        if (w->park_left[p] != 0 && (stop || over || --w->park_left[p] == 0)) {
            w->park_left[p] = 0;
            settle(w, w->parked[p]);
        }
    }
}

/* One completion of a mailbox permit; the last of its completers checks that
 * exactly one of them settled it and frees the slot. */
static void mailbox_settle(struct worker *w, struct mailbox_slot *m, int who, int expected) {
    int outcome = m->outcome[who];
    int rc = breaker_complete(w->s->b, &m->permit, (enum breaker_outcome)outcome);
    if (rc == BREAKER_ALREADY_SETTLED) {
        w->t.duplicates++;
    } else {
        count_first_completion(&w->t, outcome, rc);
        atomic_fetch_add_explicit(&m->settled, 1, memory_order_relaxed);
    }
    /* acq_rel: the last completer must see the other's writes to the slot
     * before it reuses it. */
    if (atomic_fetch_add_explicit(&m->done, 1, memory_order_acq_rel) + 1 == expected) {
        if (atomic_load_explicit(&m->settled, memory_order_relaxed) != 1) w->t.double_settled++;
        atomic_store_explicit(&m->state, 0, memory_order_release);
    }
}

static void worker_publish(struct worker *w, unsigned i) {
    struct stress *s = w->s;
    struct mailbox_slot *m = &s->mailbox[ref_rng_below(&w->rng, MAILBOX)];
    int expect = 0;
    if (!atomic_compare_exchange_strong_explicit(&m->state, &expect, 1, memory_order_acquire,
                                                 memory_order_relaxed))
        return;
    struct held h = w->held[i];
    w->held[i] = w->held[--w->nheld];
    release_count(w, &h);
    m->permit = h.permit;
    m->outcome[0] = random_outcome(w);
    m->outcome[1] = random_outcome(w);
    atomic_store_explicit(&m->done, 0, memory_order_relaxed);
    atomic_store_explicit(&m->settled, 0, memory_order_relaxed);
    bool race = ref_rng_below(&w->rng, 2) == 0;
    /* release: the taker reads the permit written above. */
    atomic_store_explicit(&m->state, race ? 3 : 2, memory_order_release);
    if (race) {
        /* Wait a little for a taker, so that both completions run at the
         * same moment (bounded: the other threads may not be running). */
        for (int spin = 0; spin < 2000; spin++)
            if (atomic_load_explicit(&m->state, memory_order_relaxed) == 4) break;
        w->races++;
        mailbox_settle(w, m, 1, 2);
    }
}

static bool worker_take(struct worker *w, struct mailbox_slot *m) {
    int st = atomic_load_explicit(&m->state, memory_order_acquire);
    if (st != 2 && st != 3) return false;
    if (!atomic_compare_exchange_strong_explicit(&m->state, &st, 4, memory_order_acquire,
                                                 memory_order_relaxed))
        return false;
    mailbox_settle(w, m, 0, st == 3 ? 2 : 1);
    return true;
}

static void worker_read(struct worker *w) {
    breaker_stats st;
    switch (ref_rng_below(&w->rng, 3)) {
    case 0:
        (void)breaker_get_state(w->s->b);
        break;
    case 1:
        (void)breaker_retry_after_ns(w->s->b);
        break;
    default:
        if (breaker_stats_get(w->s->b, &st) != BREAKER_OK ||
            st.probes_in_flight > w->s->cfg.half_open_max_probes)
            w->t.bad_snapshot++;
        break;
    }
}

static void *worker_main(void *arg) {
    struct worker *w = arg;
    struct stress *s = w->s;
    while (!atomic_load_explicit(&s->stop, memory_order_relaxed)) {
        /* A worker that has run far ahead of the clock waits for the driver:
         * on two shared cores it would otherwise starve it. */
        uint64_t ops = atomic_fetch_add_explicit(&s->ops, 1, memory_order_relaxed);
        if (ops - atomic_load_explicit(&s->tick_ops, memory_order_relaxed) > 4 * OPS_PER_TICK) {
            sched_yield();
            continue;
        }
        worker_unpark(w);
        uint64_t x = ref_rng_below(&w->rng, 100);
        if (x < 45) {
            if (w->nheld < HELD_MAX)
                worker_acquire(w);
            else
                worker_complete(w, (unsigned)ref_rng_below(&w->rng, w->nheld));
        } else if (x < 85) {
            if (w->nheld > 0) worker_complete(w, (unsigned)ref_rng_below(&w->rng, w->nheld));
        } else if (x < 90) {
            if (w->nheld > 0) worker_publish(w, (unsigned)ref_rng_below(&w->rng, w->nheld));
        } else if (x < 96) {
            for (unsigned i = 0; i < MAILBOX; i++)
                if (worker_take(w, &s->mailbox[i])) break;
        } else {
            worker_read(w);
        }
    }
    while (w->nheld > 0)
        worker_complete(w, 0);
    worker_unpark(w);
    pthread_mutex_lock(&s->tally_mu);
    tally_add(&s->total, &w->t);
    s->mailbox_races += w->races;
    pthread_mutex_unlock(&s->tally_mu);
    return NULL;
}

/* ---- The driver: the clock, the dependency's health, manual control ----------- */

static uint64_t wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t reason_count(struct stress *s, enum breaker_reason r) {
    return atomic_load_explicit(&s->reasons[r], memory_order_relaxed);
}

/* Enough of every kind of transition to have proved something. */
static bool went_round(struct stress *s) {
    return reason_count(s, BREAKER_REASON_PROBES_SUCCEEDED) >= 3 &&
           reason_count(s, BREAKER_REASON_PROBE_FAILED) >= 5 &&
           reason_count(s, BREAKER_REASON_PROBE_TIMEOUT) >= 1;
}

/* Run for at least `min_ms`, and longer if the threads have not yet gone
 * round the state machine (a probe timed out, failed, succeeded): that is
 * what the run is for, and on a loaded machine it takes longer in wall time
 * (under CPU hogs on both cores, 5 times `min_ms` once saw no probe time
 * out). The cap, 20 times, only stops a run that cannot get there within
 * the test's timeout; its checks then say what was missing. */
static void drive(struct stress *s, uint64_t min_ms, uint64_t seed) {
    struct ref_rng rng = {seed};
    uint64_t start = wall_ms();
    uint64_t last_ops = 0;
    unsigned ticks = 0;
    for (;;) {
        uint64_t elapsed = wall_ms() - start;
        /* Until the run went round the state machine (the checks after it
         * require every kind of transition), for at least min_ms; 60 x
         * min_ms at most. Pinned to one core beside a CPU hog, 16 threads
         * made 644 clock ticks in 20 x min_ms and no probe had timed out. */
        if (elapsed >= 60 * min_ms || (elapsed >= min_ms && went_round(s))) break;
        /* Pace the clock by the work done, so each state lasts for many calls
         * however the scheduler shares the two cores. */
        uint64_t ops = atomic_load_explicit(&s->ops, memory_order_relaxed);
        if (ops - last_ops < OPS_PER_TICK) {
            sched_yield();
            continue;
        }
        last_ops = ops;
        atomic_store_explicit(&s->tick_ops, ops, memory_order_relaxed);
        atomic_fetch_add_explicit(&s->now, 1 + ref_rng_below(&rng, 100 * US), memory_order_relaxed);
        ticks++;
        if (ticks % 150 == 0) {
            /* The dependency gets sick or better. */
            static const unsigned phases[] = {0, 5, 40, 80, 100};
            atomic_store_explicit(&s->fail_percent, phases[ref_rng_below(&rng, 5)],
                                  memory_order_relaxed);
            atomic_store_explicit(&s->hang_probes, ref_rng_below(&rng, 2) == 0,
                                  memory_order_relaxed);
        }
        if (ticks % 1500 == 0) {
            uint64_t x = ref_rng_below(&rng, 3);
            int rc = x == 0   ? breaker_force_open(s->b)
                     : x == 1 ? breaker_force_closed(s->b)
                              : breaker_reset(s->b);
            if (rc != BREAKER_OK) s->driver_errors++;
        } else if (ticks % 1500 == 100) {
            if (breaker_reset(s->b) != BREAKER_OK) s->driver_errors++;
        }
        if (atomic_load_explicit(&s->max_gen_seen, memory_order_relaxed) > GEN_CAP - 100) break;
    }
    atomic_store_explicit(&s->stop, true, memory_order_relaxed);
    s->ticks = ticks;
    s->elapsed_ms = wall_ms() - start;
}

/* ---- Checks at quiescence ------------------------------------------------------- */

static bool legal_transition(int from, int to, int reason) {
    switch (reason) {
    case BREAKER_REASON_CONSECUTIVE_FAILURES:
    case BREAKER_REASON_FAILURE_RATE:
    case BREAKER_REASON_SLOW_CALL_RATE:
    case BREAKER_REASON_OUTSIDE_TRIP:
        return from == BREAKER_CLOSED && to == BREAKER_OPEN;
    case BREAKER_REASON_WAIT_ELAPSED:
        return from == BREAKER_OPEN && to == BREAKER_HALF_OPEN;
    case BREAKER_REASON_PROBE_FAILED:
    case BREAKER_REASON_PROBE_TIMEOUT:
    case BREAKER_REASON_PROBE_SLOW:
        return from == BREAKER_HALF_OPEN && to == BREAKER_OPEN;
    case BREAKER_REASON_PROBES_SUCCEEDED:
        return from == BREAKER_HALF_OPEN && to == BREAKER_CLOSED;
    case BREAKER_REASON_FORCED_OPEN:
        return from != BREAKER_FORCED_OPEN && to == BREAKER_FORCED_OPEN;
    case BREAKER_REASON_FORCED_CLOSED:
        return from != BREAKER_FORCED_CLOSED && to == BREAKER_FORCED_CLOSED;
    case BREAKER_REASON_RESET:
        return to == BREAKER_CLOSED;
    case BREAKER_REASON_OUTSIDE_CLOSE:
        return (from == BREAKER_OPEN || from == BREAKER_HALF_OPEN) && to == BREAKER_CLOSED;
    case BREAKER_REASON_SERVER_DIRECTED:
        return from != BREAKER_FORCED_OPEN && from != BREAKER_FORCED_CLOSED && to == BREAKER_OPEN;
    case BREAKER_REASON_OPERATOR:
        return to == BREAKER_OPEN;
    default:
        return false;
    }
}

static void check_transitions(struct stress *s, const breaker_stats *st, uint64_t *by_reason) {
    assert_int_equal(atomic_load(&s->bad_generation), 0);
    assert_int_equal(atomic_load(&s->bad_evidence), 0);
    uint64_t last = st->generation;
    assert_true(last < GEN_CAP);
    assert_int_equal(st->transitions, last - 1);
    int prev_to = BREAKER_CLOSED;
    for (uint64_t g = 2; g <= last; g++) {
        struct gen_info *gi = &s->gens[g];
        uint32_t n = atomic_load(&gi->events);
        if (n != 1) fail_msg("generation %" PRIu64 ": %u transitions reported, want 1", g, n);
        int from = atomic_load(&gi->from), to = atomic_load(&gi->to);
        int reason = atomic_load(&gi->reason);
        if (from != prev_to)
            fail_msg("generation %" PRIu64 ": from %s, but generation %" PRIu64 " ended in %s", g,
                     breaker_state_name((enum breaker_state)from), g - 1,
                     breaker_state_name((enum breaker_state)prev_to));
        if (!legal_transition(from, to, reason))
            fail_msg("generation %" PRIu64 ": illegal transition %s -> %s (%s)", g,
                     breaker_state_name((enum breaker_state)from),
                     breaker_state_name((enum breaker_state)to),
                     breaker_reason_name((enum breaker_reason)reason));
        uint32_t peak = atomic_load(&gi->peak);
        if (to == BREAKER_HALF_OPEN && peak > s->cfg.half_open_max_probes)
            fail_msg("generation %" PRIu64 " (half_open): %u probes in flight, limit %u", g, peak,
                     s->cfg.half_open_max_probes);
        by_reason[reason]++;
        prev_to = to;
    }
    assert_int_equal(prev_to, st->state);
    if (last + 1 < GEN_CAP) assert_int_equal(atomic_load(&s->gens[last + 1].events), 0);
}

static void check_counters(struct stress *s, const breaker_stats *st) {
    const struct tally *t = &s->total;
    int as = (int)s->cfg.cancelled_as;
    if (t->bad_acquire || t->bad_first || t->bad_second || t->double_settled || t->bad_snapshot)
        fail_msg("acquire gave another status %" PRIu64 " times; a first completion was not OK or "
                 "STALE %" PRIu64 " times; a second one not ALREADY_SETTLED %" PRIu64
                 " times; a permit completed by two threads at once settled twice %" PRIu64
                 " times; a snapshot failed or showed too many probes %" PRIu64 " times",
                 t->bad_acquire, t->bad_first, t->bad_second, t->double_settled, t->bad_snapshot);
    assert_int_equal(st->admitted, t->admitted);
    /* Nothing is unsettled now. */
    assert_int_equal(st->admitted, st->successes + st->failures + st->ignored + st->stale);
    assert_int_equal(st->successes, t->ok[BREAKER_SUCCESS] +
                                        (as == BREAKER_SUCCESS ? t->ok[BREAKER_CANCELLED] : 0));
    assert_int_equal(st->failures, t->ok[BREAKER_FAILURE] +
                                       (as == BREAKER_FAILURE ? t->ok[BREAKER_CANCELLED] : 0));
    assert_int_equal(st->ignored, t->ok[BREAKER_IGNORED] +
                                      (as == BREAKER_IGNORED ? t->ok[BREAKER_CANCELLED] : 0));
    uint64_t stale = 0;
    for (int i = 0; i < 4; i++)
        stale += t->stale[i];
    assert_int_equal(st->stale, stale);
    assert_int_equal(st->cancelled, t->ok[BREAKER_CANCELLED] + t->stale[BREAKER_CANCELLED]);
    assert_int_equal(st->duplicates, t->duplicates);
    assert_int_equal(st->rejected_open + st->rejected_forced, t->rejected_open);
    assert_int_equal(st->rejected_half_open, t->rejected_half_open);
    assert_int_equal(st->probes_in_flight, 0);
}

/* The run in progress, released by the teardown if an assertion fails.
 * Every assertion comes after the threads are joined. */
static struct stress *current;

static void free_stress(struct stress *s) {
    if (s == NULL) return;
    test_breaker_destroy(s->b);
    pthread_mutex_destroy(&s->tally_mu);
    free(s->gens);
    free(s);
}

static int teardown_stress(void **state) {
    (void)state;
    free_stress(current);
    current = NULL;
    return 0;
}

static void stress_run_with(const char *name, breaker_config *cfg, uint64_t seed, int workers) {
    const char *ms = getenv("BREAKER_STRESS_MS");
    uint64_t duration = ms != NULL && *ms != '\0' ? strtoull(ms, NULL, 10) : 1000;

    struct stress *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    current = s;
    s->gens = calloc(GEN_CAP, sizeof(*s->gens));
    assert_non_null(s->gens);
    pthread_mutex_init(&s->tally_mu, NULL);
    atomic_store(&s->now, UINT64_C(5000000000000));
    atomic_store(&s->fail_percent, 40);
    cfg->clock = stress_clock;
    cfg->clock_ctx = s;
    cfg->on_event = stress_event;
    cfg->event_ctx = s;
    s->cfg = *cfg;
    assert_int_equal(test_breaker_create(cfg, &s->b), BREAKER_OK);

    pthread_t th[MAX_WORKERS];
    struct worker w[MAX_WORKERS];
    memset(w, 0, sizeof(w));
    for (int i = 0; i < workers; i++) {
        w[i].s = s;
        w[i].rng.s = seed * 31 + (uint64_t)i + 1;
        assert_int_equal(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
    }
    drive(s, duration, seed);
    for (int i = 0; i < workers; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);

    /* Settle what is left in the mailbox, single-threaded now. */
    struct worker last = {.s = s, .rng = {seed}};
    for (int i = 0; i < MAILBOX; i++)
        worker_take(&last, &s->mailbox[i]);
    tally_add(&s->total, &last.t);

    breaker_stats st;
    assert_int_equal(breaker_stats_get(s->b, &st), BREAKER_OK);
    uint64_t by_reason[BREAKER_REASON_COUNT] = {0};
    assert_int_equal(s->driver_errors, 0);
    check_transitions(s, &st, by_reason);
    check_counters(s, &st);
    /* The count window holds window_size calls at most, whoever wrote them
     * (its shares are exact sums of what the ring holds). */
    if (cfg->trip == BREAKER_TRIP_COUNT_WINDOW) {
        assert_true(st.window_calls <= cfg->window_size);
        assert_true(st.window_failures <= st.window_calls);
        assert_true(st.window_slow <= st.window_calls);
    }

    print_message("%-22s %" PRIu64 " ms, %u clock ticks: %" PRIu64 " admitted, %" PRIu64
                  " refused, %" PRIu64 " stale, %" PRIu64 " duplicates (%" PRIu64
                  " two-thread races), %" PRIu64 " generations: trips %" PRIu64 ", probes %" PRIu64
                  " (failed %" PRIu64 ", timed out %" PRIu64 "), closed by probes %" PRIu64 "\n",
                  name, s->elapsed_ms, s->ticks, st.admitted,
                  st.rejected_open + st.rejected_forced + st.rejected_half_open, st.stale,
                  st.duplicates, s->mailbox_races, st.generation,
                  by_reason[BREAKER_REASON_CONSECUTIVE_FAILURES] +
                      by_reason[BREAKER_REASON_FAILURE_RATE] +
                      by_reason[BREAKER_REASON_SLOW_CALL_RATE],
                  st.probes_admitted, st.probes_failed, st.probes_timed_out,
                  by_reason[BREAKER_REASON_PROBES_SUCCEEDED]);
    /* The run must have gone round the state machine to prove anything. */
    assert_true(by_reason[BREAKER_REASON_WAIT_ELAPSED] > 0);
    assert_true(by_reason[BREAKER_REASON_PROBES_SUCCEEDED] > 0);
    assert_true(by_reason[BREAKER_REASON_PROBE_FAILED] > 0);
    assert_true(by_reason[BREAKER_REASON_PROBE_TIMEOUT] > 0);

    free_stress(s);
    current = NULL;
}

static void stress_run(const char *name, breaker_config *cfg, uint64_t seed) {
    stress_run_with(name, cfg, seed, WORKERS);
}

static void base_config(breaker_config *c) {
    breaker_config_init(c);
    c->open_ns = 1 * MS;
    c->open_max_ns = 4 * MS;
    c->probe_timeout_ns = 500 * US;
    c->half_open_successes = 3;
    c->seed = 7;
}

static void consecutive_policy_keeps_invariants_under_threads(void **state) {
    (void)state;
    breaker_config c;
    base_config(&c);
    c.trip = BREAKER_TRIP_CONSECUTIVE;
    c.failure_threshold = 4;
    c.half_open_max_probes = 2;
    stress_run("consecutive", &c, 1);
}

static void count_window_slow_calls_keep_invariants_under_threads(void **state) {
    (void)state;
    breaker_config c;
    base_config(&c);
    c.trip = BREAKER_TRIP_COUNT_WINDOW;
    c.window_size = 20;
    c.min_calls = 10;
    c.slow_call_ns = 60 * US;
    c.slow_call_rate = 0.3;
    c.half_open_max_probes = 3;
    c.cancelled_as = BREAKER_FAILURE;
    stress_run("count_window_slow", &c, 2);
}

static void time_window_jitter_keeps_invariants_under_threads(void **state) {
    (void)state;
    breaker_config c;
    base_config(&c);
    c.trip = BREAKER_TRIP_TIME_WINDOW;
    c.window_ns = 8 * MS;
    c.window_buckets = 4;
    c.min_calls = 10;
    c.open_jitter = 0.5;
    c.half_open_max_probes = 3;
    c.half_open_successes = 2;
    stress_run("time_window_jitter", &c, 3);
}

/* The count window's chunks under an oversubscribed pool: 16 threads, more
 * than the owned stripes, so shared stripes race for chunks too; the stats
 * identity and the transition rules must hold, and the window never holds
 * more calls than its size. */
static void count_window_sixteen_threads_keep_invariants(void **state) {
    (void)state;
    breaker_config c;
    base_config(&c);
    c.trip = BREAKER_TRIP_COUNT_WINDOW;
    c.window_size = 200;
    c.min_calls = 40;
    c.half_open_max_probes = 4;
    stress_run_with("count_window_16_threads", &c, 4, MAX_WORKERS);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(consecutive_policy_keeps_invariants_under_threads,
                                  teardown_stress),
        cmocka_unit_test_teardown(count_window_slow_calls_keep_invariants_under_threads,
                                  teardown_stress),
        cmocka_unit_test_teardown(time_window_jitter_keeps_invariants_under_threads,
                                  teardown_stress),
        cmocka_unit_test_teardown(count_window_sixteen_threads_keep_invariants, teardown_stress),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
