/* SPDX-License-Identifier: MIT */
/*
 * control.c - everything that reads or steers a breaker from outside its
 * calls: the state queries, live reconfiguration and its event, manual and
 * timed control (breaker_control_apply() and the convenience forms around
 * it), evidence from outside the call path (breaker/backend.h), shadow mode
 * and the retry hint. None of it is on the call path (breaker.c): each
 * change of state is one breaker__transition() (machine.h), and each query
 * reads the state with the call path's own helpers, so it answers as the
 * next call would decide.
 */
#define _GNU_SOURCE
#include "core/block.h"
#include "core/internal.h"
#include "core/machine.h"
#include "common/text.h"

#include <string.h>

#define NS_PER_SEC_HINT UINT64_C(1000000000)
/* The longest timed open or forced close an operator may ask: 365 days. */
#define TIMED_OPEN_MAX_NS (UINT64_C(365) * 24 * 3600 * UINT64_C(1000000000))

/* ---- State queries -----------------------------------------------------------*/

enum breaker_state breaker_state_peek(breaker *b) {
    b = breaker__live(b);
    return (enum breaker_state)breaker__ctl_state(breaker__load_acquire(b->ctl));
}

uint64_t breaker_reset_generation_peek(breaker *b) {
    /* relaxed: see note_reset() (breaker.c). */
    return breaker__read(&breaker__live(b)->shared->reset_gen);
}

enum breaker_state breaker_get_state(breaker *b) {
    b = breaker__live(b);
    struct breaker__shared *s = b->shared;
    uint64_t ctl = breaker__load_acquire(&s->ctl);
    struct breaker__slot_scan scan;
    if (breaker__ctl_state(ctl) == BREAKER_HALF_OPEN &&
        breaker__half_open_check_timeouts(b, &ctl, b->now_precise(b), &scan))
        ctl = breaker__load_acquire(&s->ctl);
    if (breaker__ctl_state(ctl) == BREAKER_FORCED_CLOSED && breaker__forced_expired(b, ctl))
        ctl = breaker__load_acquire(&s->ctl);
    return (enum breaker_state)breaker__ctl_state(ctl);
}

uint64_t breaker_retry_after_ns(breaker *b) {
    b = breaker__live(b);
    struct breaker__shared *s = b->shared;
    for (;;) {
        uint64_t ctl = breaker__load_acquire(&s->ctl);
        uint64_t now = b->now_precise(b);
        switch ((enum breaker_state)breaker__ctl_state(ctl)) {
        case BREAKER_CLOSED:
            if (breaker__ctl_ramping(ctl)) {
                /* Whether this thread's next call gets in: the same credit
                 * test as ramp_admits, without adding (the share only grows
                 * with time, so "in now" stays true). If not, a hint: the
                 * ramp's end, by which every call gets in. */
                uint64_t until = breaker__phase_time_ns(s, breaker__ctl_gen(ctl));
                if (now >= until) return 0;
                struct breaker__stripe_ref stripe = breaker__thread_stripe(b);
                uint64_t inc = breaker__ramp_increment(breaker__ramp_share(&s->lim, until - now));
                uint64_t credit = breaker__read(&stripe.stripe->ramp_credit);
                return ((credit + inc) >> 32) != (credit >> 32) ? 0 : until - now;
            }
            return 0;
        case BREAKER_FORCED_CLOSED:
            return 0;
        case BREAKER_FORCED_OPEN:
            return UINT64_MAX;
        case BREAKER_OPEN:
            return breaker__open_wait_left(b, breaker__phase_time_ns(s, breaker__ctl_gen(ctl)),
                                           now);
        case BREAKER_HALF_OPEN: {
            struct breaker__slot_scan scan;
            if (breaker__half_open_check_timeouts(b, &ctl, now, &scan)) continue;
            if (scan.free_slot >= 0 &&
                breaker__ctl_succ(ctl) < BREAKER__LIM(&s->lim, half_open_successes)) {
                /* As half_open_acquire decides: a claim stepped too far past
                 * its deadline waits until the clock has caught up. */
                uint64_t due = breaker__probe_deadline_us(s, now);
                uint64_t step = breaker__slot_us(breaker__slot_claim_word(ctl >> BREAKER__GEN_SHIFT,
                                                                          due, scan.free_value)) -
                                due;
                return step <= BREAKER__SLOT_STEP_MAX_US
                           ? 0
                           : (step - BREAKER__SLOT_STEP_MAX_US) * UINT64_C(1000);
            }
            return scan.next_deadline > now ? scan.next_deadline - now : 0;
        }
        }
        return 0;
    }
}

uint64_t breaker__open_left_ns(breaker *b) {
    uint64_t ctl = breaker__load_acquire(b->ctl);
    if (breaker__ctl_state(ctl) != BREAKER_OPEN) return 0;
    uint64_t left = breaker__open_wait_left(
        b, breaker__phase_time_ns(b->shared, breaker__ctl_gen(ctl)), b->now_precise(b));
    return left != 0 ? left : 1;
}

uint64_t breaker__forced_left_ns(breaker *b) {
    uint64_t ctl = breaker__load_acquire(b->ctl);
    if (!breaker__ctl_forced_timed(ctl)) return 0;
    uint64_t until = breaker__phase_time_ns(b->shared, breaker__ctl_gen(ctl)),
             now = b->now_precise(b);
    return until > now ? until - now : 1;
}

uint64_t breaker_generation(breaker *b) {
    b = breaker__live(b);
    return breaker__ctl_gen(breaker__load_acquire(&b->shared->ctl));
}

uint64_t breaker_now_ns(breaker *b) { return b->now_precise(b); }

void *breaker_owner_ctx(const breaker *b, const void *kind) {
    return kind != NULL && b->owner.kind == kind ? b->owner.ctx : NULL;
}

size_t breaker_shared_size(breaker *b) { return breaker__live(b)->shared_size; }

void breaker_get_config(breaker *b, breaker_config *out) {
    b = breaker__live(b);
    /* The limits as they are now (a live change may have moved them since
     * the handle was made: reconfig.c), with the handle's own callbacks,
     * clock and checked_permits. */
    breaker__block_config(b->shared, out);
    out->clock = b->cfg.clock;
    out->clock_ctx = b->cfg.clock_ctx;
    out->on_event = b->cfg.on_event;
    out->event_ctx = b->cfg.event_ctx;
    out->checked_permits = b->cfg.checked_permits;
}

/* ---- Live reconfiguration (the limits' mechanics: reconfig.c) ---------------*/

/* Report a change from `before` to `after` (configuration generation
 * `generation`) as an event (reason RECONFIGURED) to `b`'s callbacks. */
static void emit_reconfigured(breaker *b, const struct breaker__limits *before,
                              const struct breaker__limits *after, uint64_t generation) {
    breaker_config old_cfg, new_cfg;
    breaker__config_of_limits(before, &old_cfg);
    breaker__config_of_limits(after, &new_cfg);
    uint64_t ctl = breaker__load_acquire(b->ctl);
    breaker_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.from = ev.to = (enum breaker_state)breaker__ctl_state(ctl);
    ev.reason = BREAKER_REASON_RECONFIGURED;
    ev.generation = breaker__ctl_gen(ctl);
    ev.time_ns = b->now_precise(b);
    ev.evidence.failed_recoveries = breaker__ctl_k(ctl);
    ev.shadow = breaker__ctl_shadow(ctl);
    ev.old_config = &old_cfg;
    ev.new_config = &new_cfg;
    ev.config_generation = generation;
    breaker__emit(b, &ev);
}

int breaker_reconfigure(breaker *b, const breaker_config *cfg, uint64_t expect_generation,
                        char *msg, size_t msg_len) {
    if (msg != NULL && msg_len > 0) msg[0] = '\0';
    b = breaker__live(b);
    struct breaker__limits before, after;
    bool changed = false;
    uint64_t generation = 0;
    /* A store file's block: under the file lock, which a writer in another
     * process holds too, and dies with (home_lock); a lock not taken in its
     * bound says why (BREAKER_EBUSY, the holder), and nothing changes. */
    bool locked = false;
    if (b->home_lock != NULL) {
        int lrc = b->home_lock(b->home_ctx, true, msg, msg_len);
        if (lrc != BREAKER_OK) return lrc;
        locked = true;
    }
    int rc = breaker__limits_change(b->shared, cfg, expect_generation, locked, &changed, &before,
                                    &after, &generation, msg, msg_len);
    if (locked) (void)b->home_lock(b->home_ctx, false, NULL, 0);
    /* The event after the lock: a listener may attach a name. */
    if (rc == BREAKER_OK && changed) emit_reconfigured(b, &before, &after, generation);
    return rc;
}

uint64_t breaker_config_generation(breaker *b) {
    return breaker__limits_version(breaker__live(b)->shared);
}

/* ---- Manual control ----------------------------------------------------------*/

static int manual(breaker *b, enum breaker_state to, enum breaker_reason reason,
                  struct breaker__control_text *text) {
    b = breaker__live(b);
    struct breaker__shared *s = b->shared;
    for (;;) {
        uint64_t ctl = breaker__load_acquire(&s->ctl);
        /* Already so: nothing to do, but for a forced close with an
         * expiry, which this order without one replaces. */
        if (to != BREAKER_CLOSED && breaker__ctl_state(ctl) == (unsigned)to &&
            !breaker__ctl_forced_timed(ctl))
            return BREAKER_OK;
        struct breaker__transition t = {.expected = ctl,
                                        .to = to,
                                        .reason = reason,
                                        .k = 0,
                                        .now = b->now_precise(b),
                                        .text = text};
        struct breaker__window_view view;
        breaker__window_read(s, breaker__ctl_gen(ctl), t.now, &view);
        breaker__evidence_from_view(&view, &t.evidence);
        if (breaker__transition(b, &t)) return BREAKER_OK;
    }
}

/* FORCE_CLOSED for `wait_ns` (1 ns .. 365 days: checked by control_apply()). */
static int force_closed_for(breaker *b, uint64_t wait_ns, struct breaker__control_text *text) {
    b = breaker__live(b);
    struct breaker__shared *s = b->shared;
    for (;;) {
        /* Always a transition, forced closed already or not: the new
         * expiry is the new generation's. */
        uint64_t ctl = breaker__load_acquire(&s->ctl);
        struct breaker__transition t = {.expected = ctl,
                                        .to = BREAKER_FORCED_CLOSED,
                                        .reason = BREAKER_REASON_FORCED_CLOSED,
                                        .now = b->now_precise(b),
                                        .wait_ns = wait_ns,
                                        .text = text};
        struct breaker__window_view view;
        breaker__window_read(s, breaker__ctl_gen(ctl), t.now, &view);
        breaker__evidence_from_view(&view, &t.evidence);
        if (breaker__transition(b, &t)) return BREAKER_OK;
    }
}

/* ---- Timed opens ------------------------------------------------------------------
 * OPEN_FOR: one transition to OPEN with the wait given rather than the
 * policy's (breaker__transition()'s wait_ns), keeping k. A dependency's own
 * answer is capped at open_max_ns and yields to a longer wait under way and
 * to an operator's forced state; an operator's wait is exact. */

static int open_for(breaker *b, uint64_t wait_ns, enum breaker_reason reason,
                    struct breaker__control_text *text) {
    bool server = reason == BREAKER_REASON_SERVER_DIRECTED; /* else OPERATOR (checked) */
    if (wait_ns == 0) return BREAKER_OK;
    b = breaker__live(b);
    struct breaker__shared *s = b->shared;
    uint64_t cap = BREAKER__LIM(&s->lim, open_max_ns);
    if (server && wait_ns > cap) wait_ns = cap;
    for (;;) {
        uint64_t ctl = breaker__load_acquire(&s->ctl);
        unsigned state = breaker__ctl_state(ctl);
        uint64_t now = b->now_precise(b);
        if (server && (state == BREAKER_FORCED_OPEN || state == BREAKER_FORCED_CLOSED))
            return BREAKER_OK;
        if (server && state == BREAKER_OPEN &&
            breaker__phase_time_ns(s, breaker__ctl_gen(ctl)) >=
                (now > UINT64_MAX - wait_ns ? UINT64_MAX : now + wait_ns))
            return BREAKER_OK;
        /* Forced states keep no backoff level (k is 0 there). */
        struct breaker__transition t = {.expected = ctl,
                                        .to = BREAKER_OPEN,
                                        .reason = reason,
                                        .k = breaker__ctl_k(ctl),
                                        .now = now,
                                        .wait_ns = wait_ns,
                                        .text = text};
        struct breaker__window_view view;
        breaker__window_read(s, breaker__ctl_gen(ctl), now, &view);
        breaker__evidence_from_view(&view, &t.evidence);
        if (breaker__transition(b, &t)) {
            breaker__count(
                &s->timed_opens[server ? BREAKER__TIMED_SERVER : BREAKER__TIMED_OPERATOR]);
            return BREAKER_OK;
        }
    }
}

/* ---- Steering: breaker_control_apply() --------------------------------------------
 * Every control comes through control_apply(), which checks it and makes
 * its transition with the text (struct breaker__transition's text);
 * breaker_control_apply() checks the text first and records the control
 * in the breaker's home, the convenience forms give none and record
 * nothing. */

void breaker_control_init(breaker_control *c) {
    memset(c, 0, sizeof(*c));
    c->action = BREAKER_CONTROL_FORCE_OPEN;
    c->reason = BREAKER_REASON_OPERATOR;
}

static int control_apply(breaker *b, const breaker_control *c, struct breaker__control_text *text,
                         char *msg, size_t msg_len) {
    switch (c->action) {
    case BREAKER_CONTROL_FORCE_OPEN:
    case BREAKER_CONTROL_RESET:
        if (c->for_ns != 0)
            return breaker__fail(BREAKER_EINVAL, msg, msg_len,
                                 "for_ns: must be 0 for %s (got %llu ns; a timed open is "
                                 "BREAKER_CONTROL_OPEN_FOR)",
                                 c->action == BREAKER_CONTROL_RESET ? "RESET" : "FORCE_OPEN",
                                 (unsigned long long)c->for_ns);
        return c->action == BREAKER_CONTROL_RESET
                   ? manual(b, BREAKER_CLOSED, BREAKER_REASON_RESET, text)
                   : manual(b, BREAKER_FORCED_OPEN, BREAKER_REASON_FORCED_OPEN, text);
    case BREAKER_CONTROL_FORCE_CLOSED:
        if (c->for_ns == 0)
            return manual(b, BREAKER_FORCED_CLOSED, BREAKER_REASON_FORCED_CLOSED, text);
        if (c->for_ns > TIMED_OPEN_MAX_NS)
            return breaker__fail(BREAKER_EINVAL, msg, msg_len,
                                 "for_ns: 0 (until reset) or 1 ns .. 365 days (got %llu ns)",
                                 (unsigned long long)c->for_ns);
        return force_closed_for(b, c->for_ns, text);
    case BREAKER_CONTROL_OPEN_FOR:
        if (c->reason != BREAKER_REASON_OPERATOR && c->reason != BREAKER_REASON_SERVER_DIRECTED)
            return breaker__fail(BREAKER_EINVAL, msg, msg_len,
                                 "reason: BREAKER_REASON_OPERATOR or _SERVER_DIRECTED (got %d)",
                                 (int)c->reason);
        if (c->reason == BREAKER_REASON_OPERATOR && c->for_ns > TIMED_OPEN_MAX_NS)
            return breaker__fail(BREAKER_EINVAL, msg, msg_len,
                                 "for_ns: at most 365 days for an operator's open (got %llu ns)",
                                 (unsigned long long)c->for_ns);
        return open_for(b, c->for_ns, c->reason, text);
    }
    return breaker__fail(BREAKER_EINVAL, msg, msg_len,
                         "action: a BREAKER_CONTROL_* value, 0..3 (got %d)", (int)c->action);
}

/* A control that made its transition is told to the breaker's home (a store
 * file records it: handle.h, home_control), outside the transition, after
 * its event: an operator's path, never the call path. A server-directed
 * wait is no operator's control: not recorded. */
int breaker_control_apply(breaker *b, const breaker_control *c, char *msg, size_t msg_len) {
    int rc = breaker__text_check("who", c->who, BREAKER_WHO_MAX, msg, msg_len);
    if (rc == BREAKER_OK) rc = breaker__text_check("why", c->why, BREAKER_WHY_MAX, msg, msg_len);
    if (rc != BREAKER_OK) return rc;
    struct breaker__control_text text = {.who = c->who, .why = c->why, .made_gen = 0};
    breaker *live = breaker__live(b);
    rc = control_apply(b, c, &text, msg, msg_len);
    /* A move of the store file meanwhile (the live handle changed): the
     * generation is the old file's, which nobody reads; not recorded. */
    if (rc != BREAKER_OK || text.made_gen == 0 || breaker__live(b) != live ||
        live->home_control == NULL ||
        (c->action == BREAKER_CONTROL_OPEN_FOR && c->reason != BREAKER_REASON_OPERATOR))
        return rc;
    const struct breaker__control_made made = {.action = c->action,
                                               .for_ns = c->for_ns,
                                               .who = c->who,
                                               .why = c->why,
                                               .generation = text.made_gen};
    live->home_control(live->home_ctx, live, &made);
    return rc;
}

/* ---- Convenience forms (breaker.h) ---------------------------------------------- */

static int apply_plain(breaker *b, enum breaker_control_action action, uint64_t for_ns,
                       enum breaker_reason reason) {
    breaker_control c;
    breaker_control_init(&c);
    c.action = action;
    c.for_ns = for_ns;
    c.reason = reason;
    struct breaker__control_text none = {.who = NULL, .why = NULL, .made_gen = 0};
    return control_apply(b, &c, &none, NULL, 0);
}

int breaker_force_open(breaker *b) {
    return apply_plain(b, BREAKER_CONTROL_FORCE_OPEN, 0, BREAKER_REASON_OPERATOR);
}

int breaker_force_closed(breaker *b) {
    return apply_plain(b, BREAKER_CONTROL_FORCE_CLOSED, 0, BREAKER_REASON_OPERATOR);
}

/* A wait of 0 would be the untimed forced close: refused, as documented. */
int breaker_force_closed_for(breaker *b, uint64_t wait_ns) {
    if (wait_ns == 0) return BREAKER_EINVAL;
    return apply_plain(b, BREAKER_CONTROL_FORCE_CLOSED, wait_ns, BREAKER_REASON_OPERATOR);
}

int breaker_reset(breaker *b) {
    return apply_plain(b, BREAKER_CONTROL_RESET, 0, BREAKER_REASON_OPERATOR);
}

int breaker_open_for(breaker *b, uint64_t wait_ns, enum breaker_reason reason) {
    return apply_plain(b, BREAKER_CONTROL_OPEN_FOR, wait_ns, reason);
}

/* ---- Evidence from outside the call path (breaker/backend.h) -------------------*/

int breaker_trip_outside(breaker *b, uint64_t gen, const breaker_evidence *evidence) {
    return breaker_trip_outside_for(b, gen, 0, evidence);
}

int breaker_trip_outside_for(breaker *b, uint64_t gen, uint64_t wait_ns,
                             const breaker_evidence *evidence) {
    return breaker__trip_outside_k(b, gen, wait_ns, 0, evidence);
}

unsigned breaker__backoff_level(breaker *b) {
    return breaker__ctl_k(breaker__load_acquire(breaker__live(b)->ctl));
}

int breaker__trip_outside_k(breaker *b, uint64_t gen, uint64_t wait_ns, unsigned k,
                            const breaker_evidence *evidence) {
    b = breaker__live(b);
    struct breaker__shared *s = b->shared;
    uint64_t ctl = breaker__load_acquire(&s->ctl);
    if (breaker__ctl_gen(ctl) != gen || breaker__ctl_state(ctl) != BREAKER_CLOSED)
        return BREAKER_STALE;
    struct breaker__transition t = {.expected = ctl,
                                    .to = BREAKER_OPEN,
                                    .reason = BREAKER_REASON_OUTSIDE_TRIP,
                                    .k = k,
                                    .now = b->now_precise(b),
                                    .wait_ns = wait_ns};
    if (evidence != NULL) t.evidence = *evidence;
    /* CLOSED keeps k and the probe count at 0, so in CLOSED only a new
     * generation changes ctl: a lost CAS means the fence failed. */
    return breaker__transition(b, &t) ? BREAKER_OK : BREAKER_STALE;
}

int breaker_close_outside(breaker *b, uint64_t gen, const breaker_evidence *evidence) {
    b = breaker__live(b);
    struct breaker__shared *s = b->shared;
    for (;;) {
        uint64_t ctl = breaker__load_acquire(&s->ctl);
        unsigned st = breaker__ctl_state(ctl);
        if (breaker__ctl_gen(ctl) != gen || (st != BREAKER_OPEN && st != BREAKER_HALF_OPEN))
            return BREAKER_STALE;
        /* As a recovery by probes: with ramp_ns set, CLOSED starts with a
         * ramp and keeps k until it completes. */
        bool ramp = BREAKER__LIM(&s->lim, ramp_ns) != 0;
        struct breaker__transition t = {.expected = ctl,
                                        .to = BREAKER_CLOSED,
                                        .reason = BREAKER_REASON_OUTSIDE_CLOSE,
                                        .k = ramp ? breaker__ctl_k(ctl) : 0,
                                        .now = b->now_precise(b),
                                        .ramp = ramp};
        if (evidence != NULL) t.evidence = *evidence;
        if (breaker__transition(b, &t)) return BREAKER_OK;
        /* Lost the CAS. In HALF_OPEN the probe count changes ctl within a
         * generation: look again; the fence above ends the loop once the
         * generation or the state has moved on. */
    }
}

/* ---- Shadow mode -------------------------------------------------------------------
 * The SHADOW bit of ctl, set or cleared within the generation (no
 * transition). acq_rel like every change of ctl; a transition racing it
 * fails its CAS and decides again on the new word, keeping the bit. */
int breaker_set_shadow(breaker *b, int on) {
    b = breaker__live(b);
    breaker__atomic64 *ctl = &b->shared->ctl;
    uint64_t cur = breaker__load_acquire(ctl);
    for (;;) {
        uint64_t want = on ? cur | BREAKER__CTL_SHADOW : cur & ~BREAKER__CTL_SHADOW;
        if (want == cur || breaker__cas_acq_rel(ctl, &cur, want)) return BREAKER_OK;
    }
}

int breaker_shadow(breaker *b) {
    return breaker__ctl_shadow(breaker__load_acquire(breaker__live(b)->ctl));
}

/* ---- A retry hint for clients --------------------------------------------------
 * breaker_retry_after_hint_s(): the exact answer moved to a point drawn once
 * per generation up to a quarter of the phase later (breaker.h). Only the
 * phase's length and a keyed draw decide the point, both fixed for the
 * generation, so asking at any instant gives the same point, counted down. */

/* The spread of the hints of the phase `ctl` is in: a quarter of the
 * phase, at least 1 s. OPEN's quarter is the one its transition fixed for
 * the named callers' turns (machine.h); HALF_OPEN's probe_timeout_ns's, a
 * ramp's ramp_ns's. */
static uint64_t hint_spread_ns(const breaker *b, uint64_t ctl) {
    uint64_t quarter;
    switch ((enum breaker_state)breaker__ctl_state(ctl)) {
    case BREAKER_OPEN:
        quarter = breaker__turns_spread_ns(b->shared, breaker__ctl_gen(ctl));
        break;
    case BREAKER_HALF_OPEN:
        quarter = BREAKER__LIM(&b->shared->lim, probe_timeout_ns) / 4;
        break;
    case BREAKER_CLOSED:
    case BREAKER_FORCED_CLOSED:
    case BREAKER_FORCED_OPEN:
    default:
        quarter = BREAKER__LIM(&b->shared->lim, ramp_ns) / 4;
        break;
    }
    return quarter < BREAKER__SPREAD_MIN_NS ? BREAKER__SPREAD_MIN_NS : quarter;
}

int breaker_set_open_wait(breaker *b, breaker_open_wait_fn *fn, void *ctx) {
    b->open_wait_fn = fn;
    b->open_wait_ctx = ctx;
    return BREAKER_OK;
}

uint64_t breaker_retry_after_hint_s(breaker *b) { return breaker_retry_after_hint_from(b, 0); }

uint64_t breaker_retry_after_hint_from(breaker *b, uint64_t source) {
    b = breaker__live(b); /* a moved store file's handle answers for its forward */
    uint64_t exact = breaker_retry_after_ns(b);
    if (exact == UINT64_MAX) return exact;
    uint64_t ctl = breaker__load_acquire(b->ctl);
    /* A named caller's turn may not have come (breaker.c, "Turns after the
     * wait"), whether a probe is eligible now or not (a busy half-open):
     * the hint is never before it. */
    uint64_t turn = source != 0 ? breaker__turn_left_ns(b, ctl, source, b->now_precise(b)) : 0;
    uint64_t total = turn;
    if (exact != 0) {
        /* Each caller its own point (one per generation too): refused
         * callers come back spread over the window, and asking again shows
         * a caller nothing new. */
        uint64_t later =
            breaker__caller_point_ns(b, breaker__ctl_gen(ctl), hint_spread_ns(b, ctl), source);
        uint64_t busy = exact > UINT64_MAX - later ? UINT64_MAX - NS_PER_SEC_HINT : exact + later;
        if (busy > total) total = busy;
    }
    return total / NS_PER_SEC_HINT + (total % NS_PER_SEC_HINT != 0);
}
