/* SPDX-License-Identifier: MIT */
/*
 * lease.c - the probe gate of every breaker attached through a fleet handle
 * (breaker/backend.h, client.h): breaker_acquire() asks it when the local
 * breaker has just admitted a probe, on whatever path it was called
 * (directly, by a registry, by the executor, by `breaker exec`), and
 * breaker_complete() tells it how the probe settled. A probe goes ahead
 * with a fleet lease taken within the probe budget, or is refused. The
 * closed and open calls never come here.
 *
 * A lease lives in one of the entry's slots (client.h, struct lease) from
 * the request to its release, which the flusher sends (flush.c). What an
 * answer means (granted, refused and until when, lost) is protocol.c's
 * (breaker__fleet_lease_settle()); this file carries it out.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include "store/redis/client.h"

#include "common/splitmix.h"

#include <string.h>

/* A lease's token as the probe's permit carries it (the gate's token):
 * random bits above, the lease slot + 1 in the low bits, so settling finds
 * the slot without a search and a token is never 0. */
#define LEASE_SLOT_BITS 5u
_Static_assert(LEASE_SLOTS < (1u << LEASE_SLOT_BITS), "a lease slot + 1 fits the token's low bits");

static uint64_t lease_token(breaker_redis *f, unsigned slot) {
    uint64_t r =
        f->token_key ^
        breaker__splitmix64(atomic_fetch_add_explicit(&f->token_seq, 1, memory_order_relaxed));
    return (r & ~(uint64_t)((1u << LEASE_SLOT_BITS) - 1)) | (slot + 1);
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

/* Ask Redis for a lease for `e` with `token`, answered before `deadline`,
 * on the transport's probe connection (never connected inline: a connect
 * resolves the host name without a timeout, and AUTH and SELECT each wait
 * for Redis; the flusher keeps it after a good round, and until then the
 * lease is refused at once). @return FLEET_LEASE_*, with `a` when Redis
 * answered; *busy when another caller held the probe connection. */
static int ask_lease(breaker_redis *f, struct entry *e, uint64_t token, uint64_t deadline,
                     struct breaker__fleet_answer *a, bool *busy) {
    *busy = false;
    if (breaker__redis_now(f) >= deadline) return FLEET_LEASE_ERROR;
    struct breaker__fleet_call call;
    breaker__fleet_call_acquire(&call, token);
    /* The limits text as a whole snapshot: the apply phase may rewrite
     * e->limits meanwhile (a record's new limits), and this request is not
     * sent under round_mu. A copy on the stack, under limits_mu (held for
     * the copy alone, never across Redis). */
    char limits[BREAKER__FLEET_LIMITS_LEN];
    breaker__redis_limits_copy(f, e, limits);
    struct cmd_args args;
    breaker_redis_command cmd;
    breaker__redis_script_cmd(f, e, &call, limits, &args, &cmd);
    cmd.idempotent = 0;
    breaker_redis_reply *r = NULL;
    int sent = f->io->probe(f->io_ctx, &cmd, deadline, &r);
    if (sent == BREAKER_REDIS_PROBE_BUSY) *busy = true;
    if (sent == BREAKER_REDIS_PROBE_BUSY || sent == BREAKER_REDIS_PROBE_UNREADY)
        return FLEET_LEASE_ERROR;
    if (sent == BREAKER_REDIS_PROBE_LOST) return FLEET_LEASE_LOST;
    int ok = breaker__redis_read_answer(r, a);
    breaker_redis_reply_free(r);
    return breaker__fleet_lease_verdict(ok ? a : NULL);
}

/* Publish what a lease slot holds now: token and generation, then `state`
 * with a release store (the flusher's acquire load, or a settler's CAS from
 * HELD, sees the fields). */
static void publish_slot(struct lease *l, uint64_t token, uint64_t gen, uint64_t state) {
    atomic_store_explicit(&l->token, token, memory_order_relaxed);
    atomic_store_explicit(&l->gen, gen, memory_order_relaxed);
    atomic_store_explicit(&l->state, state, memory_order_release);
}

/* Lease failures are evidence about the store, not the dependency
 * (docs/fleet.md, "Probes", and "Failure modes": a slow Redis). A request
 * answered in time (granted, refused, "closed") resets the run of failures;
 * one that got no answer in time (LOST, or granted past the budget) or an
 * error extends it. From the LEASE_FAIL_LIMIT-th failure in a row, until a
 * request is answered in time again, the probe goes ahead instead of being
 * refused, as in degraded mode (each such probe still asks first, within
 * the budget, so that the first answer in time ends this):
 *  - a host that follows a fleet open keeps the request's token as its
 *    lease: Redis has most likely run the request (a slow server answers
 *    late, it does not drop), and a granted lease's result must count for
 *    the fleet to close. The release names no generation (any), so if
 *    Redis refused or never ran it, the release is stale and changes
 *    nothing; locally the probe settles as a leased one (a success waits
 *    for the fleet's close, a failure reopens);
 *  - a host that follows no fleet open (its breaker tripped on its own
 *    evidence, the fleet closed at the last round) probes as a local
 *    breaker: no token, the late answer released as an orphan as before;
 *  - an error while following (no probe connection, an error reply) is
 *    refused as before: the flusher reconnects within one interval, and
 *    error replies fail the flush rounds too (degraded mode follows).
 * `plan` is adjusted in place; @return 1 when the probe goes ahead locally. */
static int lease_local(breaker_redis *f, int verdict, uint64_t followed,
                       const struct breaker__fleet_lease_times *t,
                       struct breaker__fleet_lease_plan *plan) {
    /* plan->verdict: a grant past the budget is counted as an ERROR. */
    bool in_time = verdict == FLEET_LEASE_GRANTED || verdict == FLEET_LEASE_CLOSED ||
                   verdict == FLEET_LEASE_REFUSED;
    if (in_time) {
        atomic_store_explicit(&f->lease_fail_run, 0, memory_order_relaxed);
        return 0;
    }
    uint32_t run = atomic_fetch_add_explicit(&f->lease_fail_run, 1, memory_order_relaxed) + 1;
    if (run < LEASE_FAIL_LIMIT) return 0;
    bool late = plan->orphan || plan->give_back;
    if (followed != 0 && !late) return 0; /* an error while following: refused */
    plan->gate.change = false;            /* no gate of our own making: the next probe asks */
    plan->rc = BREAKER_OK;
    if (followed != 0) {
        /* The late request is the probe's lease: granted late (give_back,
         * with its generation) or not answered (orphan: any generation). */
        plan->hold = true;
        plan->lease_deadline_ns = t->now_ns + t->probe_timeout_ns;
        plan->give_back = false; /* `a` holds the late grant's generation, or 0 (none read) */
        plan->orphan = false;
    }
    return 1;
}

/* Carry out the protocol's plan for a lease request made with slot `l` and
 * `token`. @return the gate's answer. */
static int carry_out(breaker_redis *f, struct entry *e, struct lease *l, uint64_t token,
                     const struct breaker__fleet_answer *a,
                     const struct breaker__fleet_lease_plan *plan, bool local,
                     uint64_t *token_out) {
    if (local) breaker__redis_count(&f->n.lease_local);
    if (plan->give_back) {
        /* Granted, but too late to use: released by the next round. */
        publish_slot(l, token, a->gen, LEASE_DONE | ((uint64_t)FLEET_RESULT_NEITHER << 8));
        breaker__redis_wake_flusher(f);
    } else if (plan->hold) {
        /* relaxed: published by the state's release store. When the probe's
         * lease is surely over (a hung probe never settles it), the flusher
         * reclaims the slot (flush.c: reclaim_abandoned()). */
        atomic_store_explicit(&l->deadline_ns, plan->lease_deadline_ns, memory_order_relaxed);
        publish_slot(l, token, a->gen, LEASE_HELD | lease_state_token(token));
        *token_out = token;
        /* A late request held as the lease (lease_local()) was no grant. */
        breaker__redis_count(local ? &f->n.lease_errors : &f->n.leases_granted);
        return BREAKER_OK;
    } else if (plan->orphan) {
        /* relaxed: flusher-only once published by the state's release store. */
        atomic_store_explicit(&l->deadline_ns, plan->orphan_deadline_ns, memory_order_relaxed);
        atomic_store_explicit(&l->stale_answers, 0, memory_order_relaxed);
        publish_slot(l, token, 0, LEASE_ORPHAN);
        breaker__redis_wake_flusher(f);
    } else {
        /* relaxed: nothing was written under the claim. */
        atomic_store_explicit(&l->state, LEASE_FREE, memory_order_relaxed);
    }
    if (plan->verdict == FLEET_LEASE_REFUSED) breaker__redis_count(&f->n.leases_refused);
    if (plan->verdict == FLEET_LEASE_ERROR || plan->verdict == FLEET_LEASE_LOST)
        breaker__redis_count(&f->n.lease_errors);
    if (plan->gate.change)
        atomic_store_explicit(&e->gate_until_ns, plan->gate.until_ns, memory_order_relaxed);
    if (plan->flush_now) breaker__redis_wake_flusher(f); /* its round closes the breaker */
    return plan->rc;
}

int breaker__redis_gate_admit(void *ctx, breaker *b, uint64_t *token_out) {
    breaker_redis *f = ctx;
    int fail_closed = f->cfg.fail_mode == BREAKER_REDIS_FAIL_CLOSED;
    struct entry *e = breaker__redis_find_entry(f, b);
    if (e == NULL) /* detached meanwhile: a plain local probe */
        return fail_closed && breaker__redis_view_too_old(f) ? BREAKER_REJECTED_OPEN : BREAKER_OK;
    /* FAIL_CLOSED: no probe while the name's fleet view is too old (the
     * flusher has tripped its closed breaker meanwhile). */
    if (fail_closed && breaker__redis_entry_view_too_old(f, e)) return BREAKER_REJECTED_OPEN;
    /* Degraded (the name's node failed the last round): the local breaker
     * alone decides. relaxed: a flag read alone (a stale answer costs one
     * lease request, or one local probe). */
    if (atomic_load_explicit(&e->degraded, memory_order_relaxed)) return BREAKER_OK;
    uint64_t start = breaker__redis_now(f);
    if (start < atomic_load_explicit(&e->gate_until_ns, memory_order_relaxed)) {
        breaker__redis_count(&f->n.lease_gated);
        return BREAKER_REJECTED_HALF_OPEN;
    }
    struct lease *l = claim_slot(e);
    if (l == NULL) {
        breaker__redis_count(&f->n.lease_gated);
        return BREAKER_REJECTED_HALF_OPEN;
    }
    uint64_t token = lease_token(f, (unsigned)(l - e->leases));
    struct breaker__fleet_answer a;
    memset(&a, 0, sizeof a);
    /* The whole acquire returns within the budget: the wait for Redis ends
     * at 80% of it, leaving the rest for a late wake-up of this thread and
     * for the local release of a refused probe. */
    uint64_t budget = atomic_load_explicit(&f->lease_budget_ns, memory_order_relaxed);
    bool busy;
    int verdict = ask_lease(f, e, token, start + budget - budget / 5, &a, &busy);
    if (busy) {
        /* Another caller's request is on the probe connection: refused
         * without waiting for it. relaxed: nothing was written under the
         * claim. */
        atomic_store_explicit(&l->state, LEASE_FREE, memory_order_relaxed);
        breaker__redis_count(&f->n.lease_gated);
        return BREAKER_REJECTED_HALF_OPEN;
    }
    struct breaker__fleet_lease_times t = {.start_ns = start,
                                           .now_ns = breaker__redis_now(f),
                                           .budget_ns = budget,
                                           .interval_ns = f->cfg.flush_interval_ns};
    breaker_config c; /* the probe timeout: a lease's deadline, locally */
    breaker_get_config(b, &c);
    t.probe_timeout_ns = c.probe_timeout_ns;
    struct breaker__fleet_lease_plan plan;
    uint64_t followed = atomic_load_explicit(&e->followed_gen, memory_order_relaxed);
    bool answered = verdict != FLEET_LEASE_ERROR && verdict != FLEET_LEASE_LOST;
    breaker__fleet_lease_settle(verdict, answered ? &a : NULL, followed, &t, &plan);
    int local = lease_local(f, plan.verdict, followed, &t, &plan);
    return carry_out(f, e, l, token, &a, &plan, local, token_out);
}

/* A leased probe completed (its first completion, stale or not; `outcome`
 * is SUCCESS, FAILURE or IGNORED, a cancellation already mapped through
 * cancelled_as), after the local breaker recorded it (a success as IGNORED:
 * BREAKER_GATE_DECIDES_RECOVERY). Its result goes to the fleet, which
 * decides recovery: the flusher sends it at once, woken here. A second
 * settle of the same token (a copy of the permit) finds the slot no longer
 * HELD with that token and changes nothing. */
void breaker__redis_gate_settle(void *ctx, breaker *b, uint64_t token,
                                enum breaker_outcome outcome) {
    breaker_redis *f = ctx;
    struct entry *e = breaker__redis_find_entry(f, b);
    unsigned slot = (unsigned)(token & ((1u << LEASE_SLOT_BITS) - 1)) - 1;
    if (e == NULL || slot >= LEASE_SLOTS) return;
    struct lease *l = &e->leases[slot];
    uint64_t result = (uint64_t)breaker__fleet_release_result(outcome);
    uint64_t held = LEASE_HELD | lease_state_token(token);
    /* The token's bits in the state word: a slot reused by another lease
     * fails this CAS, so no other lease's result is ever written. */
    if (atomic_compare_exchange_strong_explicit(
            &l->state, &held, LEASE_DONE | (result << 8) | lease_state_token(token),
            memory_order_acq_rel, memory_order_relaxed))
        breaker__redis_wake_flusher(f);
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
