/* SPDX-License-Identifier: MIT */
/*
 * machine.h - what the state machine (breaker.c, the call path) lends to its
 * controls and queries (control.c): a transition, the probe slots' scan, the
 * phase's deadline and the waits derived from it, and the event's delivery.
 * The inline helpers are the call path's own; control.c reads the state with
 * the same code, so a query answers exactly as the next call would decide.
 */
#ifndef BREAKER_CORE_MACHINE_H
#define BREAKER_CORE_MACHINE_H

#include "core/internal.h"
#include "common/time_ns.h"

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* Who and why of an operator's control (checked: breaker__text_check()),
 * and, out, the generation its transition started (0: it made none). */
struct breaker__control_text {
    const char *who;
    const char *why;
    uint64_t made_gen;
};

struct breaker__transition {
    uint64_t expected; /* the ctl value to replace */
    enum breaker_state to;
    enum breaker_reason reason;
    unsigned k;
    uint64_t now;
    breaker_evidence evidence;
    uint64_t slot0_claim; /* out, entering HALF_OPEN: the first probe's slot word */
    bool ramp;            /* entering CLOSED from recovery with ramp_ns set */
    uint64_t wait_ns;     /* entering OPEN: this wait instead of the policy's; 0 = the policy's.
                             Entering FORCED_CLOSED: its expiry (0 = none) */
    /* An operator's control (breaker_control_apply()): who and why, checked,
     * for this transition's event only; NULL for every other. On the
     * caller's stack, read (and made_gen written) by the thread whose CAS
     * wins: nothing shared. */
    struct breaker__control_text *text;
};

/* Make the transition `t` describes with one CAS of ctl from t->expected,
 * and report it (its event) when this thread's CAS wins. @return whether it
 * won; false also when a transition into CLOSED finds the window already
 * reset by a winner. */
bool breaker__transition(struct breaker *b, struct breaker__transition *t);

/* The probe slots of one generation as a scan found them (breaker.c, "Half-open:
 * probe slots"). */
struct breaker__slot_scan {
    int free_slot;       /* a claimable slot, or -1 */
    uint64_t free_value; /* its current word */
    int expired_slot;    /* a probe past its deadline, or -1 */
    uint64_t expired_value;
    uint64_t expired_at;    /* the earliest deadline among expired probes */
    uint64_t next_deadline; /* earliest deadline of a busy slot, UINT64_MAX if none */
};

/* HALF_OPEN `*ctl`: apply a due probe timeout (a failed probe, dated at its
 * deadline). @return true if the state moved on (by this call or another);
 * false with `*scan` describing the slots of `*ctl` (possibly reloaded). */
bool breaker__half_open_check_timeouts(struct breaker *b, uint64_t *ctl, uint64_t now,
                                       struct breaker__slot_scan *scan);

/* How long before the caller `source` may probe `ctl` (OPEN past its
 * wait, or HALF_OPEN) at `now`: 0 once its own point after the wait has
 * passed, for a caller that names nobody, or where failing sources do not
 * count (breaker.c, "Turns after the wait"). */
uint64_t breaker__turn_left_ns(const struct breaker *b, uint64_t ctl, uint64_t source,
                               uint64_t now);

/* FORCED_CLOSED `ctl` with an expiry that has run out: back to CLOSED
 * (reason FORCE_EXPIRED). @return true when it had run out (this call's
 * transition or another's): look at ctl again. */
bool breaker__forced_expired(struct breaker *b, uint64_t ctl);

/* phase_time for generation `gen` in ns, or 0 if absent (only after 65536
 * generations of tag wrap-around; 0 makes the phase end now, never wedge). */
static inline uint64_t breaker__phase_time_ns(const struct breaker__shared *s, uint64_t gen) {
    uint64_t w = breaker__read(&s->phase_time);
    if (breaker__tw_tag(w) != breaker__tag_of_gen(gen)) return 0;
    return breaker__ns_of_us(s, breaker__tw_us(w));
}

/* The deadline, in the block's microseconds, of a probe admitted at `now`. */
static inline uint64_t breaker__probe_deadline_us(const struct breaker__shared *s, uint64_t now) {
    return breaker__deadline_us(s, now, BREAKER__LIM(&s->lim, probe_timeout_ns));
}

/* The breaker's own callback first, then its owner's (a registry records
 * history and tells its listeners), as registry.h promises: a listener
 * hears a transition after the breaker's on_event did. */
static inline void breaker__emit(struct breaker *b, const breaker_event *ev) {
    /* An abandoned block's transitions (a permit given before its store
     * file moved, completing there) are no transition of the breaker the
     * user sees: not reported. Relaxed: it only decides whether to tell. */
    if (atomic_load_explicit(&b->forward, memory_order_relaxed) != NULL) return;
    /* A forward's events name the handle the user holds (its face). */
    struct breaker *face = b->face != NULL ? b->face : b;
    if (b->cfg.on_event != NULL) b->cfg.on_event(b->cfg.event_ctx, face, ev);
    if (b->owner.on_event != NULL) b->owner.on_event(b->owner.ctx, face, ev);
}

/* The wait before a probe after k failed recoveries, entering generation
 * `gen`. Jitter is a pure function of (seed, gen, salt): threads racing to
 * make the same transition compute the same wait, and a fixed seed
 * reproduces every wait. `salt` is the process id when the seed was drawn
 * (not fixed by the user), so that processes forked after the breaker was
 * created, each holding the same drawn seed, still wait differently: a fleet
 * must not probe in lockstep. */
static inline uint64_t breaker__open_wait_ns(const struct breaker__limits *lim, unsigned k,
                                             uint64_t gen, uint64_t salt) {
    double w = (double)lim->open_ns;
    double cap = (double)lim->open_max_ns;
    for (unsigned i = 0; i < k && w < cap; i++)
        w *= lim->open_backoff;
    if (w > cap) w = cap;
    if (lim->open_jitter > 0.0) {
        uint64_t mix = lim->seed ^ (gen * BREAKER__GOLDEN_GAMMA);
        if (salt != 0) mix ^= breaker__splitmix64(salt);
        double u = (double)(breaker__splitmix64(mix) >> 11) * (1.0 / 9007199254740992.0);
        w += w * lim->open_jitter * u;
    }
    return (uint64_t)w;
}

/* The least spread of a hint's points: a hint counts in whole seconds. */
#define BREAKER__SPREAD_MIN_NS UINT64_C(1000000000)

/* The spread of the named callers' turns after the wait of the OPEN of
 * generation `open_gen` (breaker.c, "Turns after the wait"): a quarter of
 * that wait before jitter, as its transition fixed it in the block, so
 * every process reads the same; 0 where the block holds another
 * generation's. Its hints spread over at least BREAKER__SPREAD_MIN_NS. */
uint64_t breaker__turns_spread_ns(const struct breaker__shared *s, uint64_t open_gen);

/* The point of the caller `source` (0: everybody's one point) in a spread
 * of `spread` ns after the end of the phase of generation `gen`: uniform in
 * [0, spread), drawn once per generation and caller. Keyed by the seed, as
 * the jitter of the waits: the same draw in every process of a store; with
 * the seed drawn at create (the default) unguessable outside them, and with
 * a seed the user fixed, repeated run after run, as the waits are. The retry hints tell it
 * (breaker_retry_after_hint_from()), and a named caller is admitted as a
 * probe no earlier than its point after the open wait. */
static inline uint64_t breaker__caller_point_ns(const struct breaker *b, uint64_t gen,
                                                uint64_t spread, uint64_t source) {
    uint64_t key =
        breaker__splitmix64(BREAKER__LIM(&b->shared->lim, seed) ^ gen * BREAKER__GOLDEN_GAMMA);
    if (source != 0) key ^= breaker__splitmix64(source ^ BREAKER__GOLDEN_GAMMA);
    double u = (double)(breaker__splitmix64(key) >> 11) * (1.0 / 9007199254740992.0);
    return (uint64_t)((double)spread * u);
}

/* The coarse clock read directly rather than through now_coarse: the short
 * paths then call clock_gettime itself, not a wrapper around it. Used only
 * when breaker__clock_setup chose the coarse clock (no injected clock). */
static inline uint64_t breaker__coarse_now(void) {
    return breaker__clock_ns(CLOCK_MONOTONIC_COARSE);
}

/* How long before breaker_acquire() admits a probe to an OPEN breaker whose
 * wait ends at `until`, `precise_now` being the precise clock: 0 once the
 * wait has elapsed by the precise clock and, where the short refusal path
 * reads the coarse clock, by the coarse clock plus its lag bound too (the
 * short path refuses on that alone). acquire and retry_after_ns() both decide
 * with this, so retry_after_ns() answers 0 exactly when acquire admits. */
static inline uint64_t breaker__open_wait_left(const struct breaker *b, uint64_t until,
                                               uint64_t precise_now) {
    uint64_t left = until > precise_now ? until - precise_now : 0;
    if (b->coarse_for_open) {
        uint64_t seen = breaker__coarse_now() + b->coarse_lag_ns;
        if (seen < until && until - seen > left) left = until - seen;
    }
    return left;
}

/* A ramp's share as a stripe's credit increment (breaker.c, "Ramp after
 * recovery"): 32.32 fixed point, at most 1.0. */
static inline uint64_t breaker__ramp_increment(double share) {
    return (uint64_t)(share * 4294967296.0);
}

#endif /* BREAKER_CORE_MACHINE_H */
