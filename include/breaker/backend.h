/* SPDX-License-Identifier: MIT */
/*
 * breaker/backend.h - EXPERIMENTAL: what a backend needs from a breaker.
 *
 * A breaker's *scope* (one process, one host, one fleet) is chosen once, by
 * the backend it is made on: the process heap (breaker_create()), a store
 * file (breaker/store.h) or the fleet store (breaker/redis.h). The handle
 * remembers its backend, and every path that uses it (breaker_acquire() and
 * breaker_complete() called directly, by a registry, by the executor, by the
 * `breaker` command) gives that scope's guarantees. This header is the seam:
 * the entry points a backend library (such as breaker_redis, which links
 * libbreaker) uses to drive the breakers it makes, and the table a registry
 * makes its breakers through.
 *
 * Experimental, in the manner of zstd's ZSTD_STATIC_LINKING_ONLY section:
 * the declarations below are visible only when BREAKER_BACKEND_EXPERIMENTAL
 * is defined before this header is included, and any of them may change in
 * any 0.x minor release (docs/abi.md). They are exported by libbreaker.so,
 * so a backend library links the one copy of the core, in static and shared
 * builds alike. Nothing here is needed to *use* a breaker.
 *
 * What a backend must implement (docs/design.md, "Backends"):
 *  - a breaker_backend (ops + context) if registries should make their
 *    breakers through it: open a name, close (detach) a handle, fini;
 *  - optionally a breaker_probe_gate on each handle it makes, if the scope
 *    bounds probes beyond the local breaker (the fleet's leases). The closed
 *    and open short paths never consult it: a gated breaker's closed call
 *    and open refusal run exactly the instructions of an ungated one.
 *  - breaker_trip_outside()/breaker_close_outside() to apply decisions taken
 *    on evidence from outside this process, and breaker_stats_peek() /
 *    breaker_state_peek() to read a breaker without applying a transition
 *    (from a thread that holds a lock an event listener may need).
 */
#ifndef BREAKER_BACKEND_H
#define BREAKER_BACKEND_H

#include <breaker.h>

#include <stdint.h>

#endif /* BREAKER_BACKEND_H */

/* Its own guard, as zstd's static-linking-only section has: a first
 * inclusion without the macro does not hide the declarations from a later
 * one with it. */
#if defined(BREAKER_BACKEND_EXPERIMENTAL) && !defined(BREAKER_BACKEND_H_EXPERIMENTAL)
#define BREAKER_BACKEND_H_EXPERIMENTAL

#ifdef __cplusplus
extern "C" {
#endif

/* Who owns a breaker made on a user's behalf (a registry, a backend), so
 * that it can recognise it again from a bare `breaker *` and hear its
 * transitions. Copied into the handle at creation; never part of the
 * configuration (breaker_get_config() does not return it). */
typedef struct breaker_owner breaker_owner;
struct breaker_owner {
    /* The owning component: the address of one of its static objects, so
     * kinds cannot collide. NULL: not owned. */
    const void *kind;
    void *ctx; /* the owner's record for this breaker */
    /* Called for every transition, in the thread and process that made it,
     * after the configuration's own on_event; NULL for none. The same rules
     * as on_event (breaker.h): it must not complete or acquire on `b`. */
    void (*on_event)(void *ctx, breaker *b, const breaker_event *ev);
};

/* A probe gate: the backend's say on the half-open slow path. Copied into
 * the handle at creation. Both functions run on the calling thread, inside
 * breaker_acquire() / breaker_complete(); they must not call either on `b`,
 * and should take no lock a caller might hold (they run on request paths).
 *
 *  - admit(ctx, b, &token): `b` is about to admit a probe locally (its probe
 *    slot is claimed, within half_open_max_probes; nothing counted yet).
 *    @return BREAKER_OK to let the probe go, optionally with `*token` set to
 *    a non-zero word the backend wants back when the probe settles (its
 *    lease); or BREAKER_REJECTED_OPEN / BREAKER_REJECTED_HALF_OPEN to refuse
 *    it: the core then gives the slot back and breaker_acquire() returns that
 *    refusal with a refused permit, counted as a refusal (rejected_open or
 *    rejected_half_open), never as an admitted probe. Any other value is
 *    taken as BREAKER_REJECTED_HALF_OPEN. `*token` is 0 on entry. The time
 *    admit takes runs against the probe's deadline (probe_timeout_ns, from
 *    the claim): keep it well below.
 *  - settle(ctx, b, token, outcome), may be NULL: a probe admitted with a
 *    non-zero token was completed with `outcome` (CANCELLED already mapped
 *    through cancelled_as to FAILURE or IGNORED), and the local breaker has
 *    applied it (so nothing the backend does from here, such as closing the
 *    breaker, can make that completion STALE). Called for the admission's
 *    first completion, also when it was STALE (the backend still learns how
 *    its probe went); never for a permit that is not this breaker's (EINVAL)
 *    nor for a second completion within the probe's generation
 *    (ALREADY_SETTLED). A copy of the permit completed after the generation
 *    moved on is STALE and cannot be told from a late first completion, so
 *    it reaches settle again with the same token: settle must be idempotent
 *    per token (the fleet's frees a lease only from HELD, once).
 *  - flags: BREAKER_GATE_DECIDES_RECOVERY: the backend decides recovery, so
 *    a tokened probe's SUCCESS is recorded locally as IGNORED (the local
 *    breaker closes when the backend calls breaker_close_outside()); its
 *    FAILURE reopens the local breaker as any probe failure does. Without
 *    it the local breaker records the outcome as given. */
#define BREAKER_GATE_DECIDES_RECOVERY 1u
typedef struct breaker_probe_gate breaker_probe_gate;
struct breaker_probe_gate {
    int (*admit)(void *ctx, breaker *b, uint64_t *token);
    void (*settle)(void *ctx, breaker *b, uint64_t token, enum breaker_outcome outcome);
    void *ctx;
    unsigned flags; /* BREAKER_GATE_* */
};

/*! breaker_create_bound() :
 *  breaker_create() on the process heap, with an owner and a probe gate
 *  (either may be NULL; both are copied).
 *  @return as breaker_create() (BREAKER_EINVAL also for `out` NULL). */
BREAKER_API BREAKER_NODISCARD int breaker_create_bound(const breaker_config *cfg,
                                                       const breaker_owner *owner,
                                                       const breaker_probe_gate *gate,
                                                       breaker **out);

/*! breaker_permit_gate_token() : the token the probe gate gave the probe
 *  `permit` admitted (its fleet lease), or 0: not a probe, no gate, no
 *  token, or not admitted. Reads the caller's permit only. */
BREAKER_API uint64_t breaker_permit_gate_token(const breaker_permit *permit) BREAKER_NONNULL(1);

/*! breaker_owner_ctx() : the owner's ctx when `b` is owned by `kind`, else
 *  NULL (also for kind NULL). One compare: cheap enough for request paths. */
BREAKER_API void *breaker_owner_ctx(const breaker *b, const void *kind) BREAKER_NONNULL(1);

/*! breaker_trip_outside() :
 *  Open `b` from CLOSED because evidence from outside this process says so
 *  (the fleet's window), if it is still CLOSED in generation `gen`: one
 *  transition like a local trip (the normal first wait, one event with reason
 *  BREAKER_REASON_OUTSIDE_TRIP and `evidence`, may be NULL), on this thread.
 *  Thread-safe, lock-free.
 *  @return BREAKER_OK: this call opened it; BREAKER_STALE: it is no longer
 *  CLOSED in `gen` (another trip won, a reset, forced, a newer generation):
 *  nothing done. */
BREAKER_API int breaker_trip_outside(breaker *b, uint64_t gen, const breaker_evidence *evidence)
    BREAKER_NONNULL(1);

/*! breaker_trip_outside_for() :
 *  breaker_trip_outside() with the open wait given: `wait_ns` instead of the
 *  breaker's own first wait (0: its own, as breaker_trip_outside()). For a
 *  breaker that follows an outside open whose wait is already running (the
 *  fleet's remaining wait), so that it probes when the outside would admit a
 *  probe rather than a whole open_ns later. The event's open_ns is
 *  `wait_ns`. @return as breaker_trip_outside(). */
BREAKER_API int breaker_trip_outside_for(breaker *b, uint64_t gen, uint64_t wait_ns,
                                         const breaker_evidence *evidence) BREAKER_NONNULL(1);

/*! breaker_close_outside() :
 *  Close `b` (OPEN or HALF_OPEN in generation `gen`) because the outside
 *  recovered (the fleet's probes succeeded): the transition a recovery by
 *  probes takes (the window emptied, a ramp with ramp_ns set, one event with
 *  reason BREAKER_REASON_OUTSIDE_CLOSE and `evidence`, may be NULL). Local
 *  probes in flight complete STALE. Thread-safe, lock-free.
 *  @return BREAKER_OK: this call closed it; BREAKER_STALE: it is not OPEN or
 *  HALF_OPEN in `gen` any more: nothing done. */
BREAKER_API int breaker_close_outside(breaker *b, uint64_t gen, const breaker_evidence *evidence)
    BREAKER_NONNULL(1);

/*! breaker_stats_peek() :
 *  breaker_stats_get() without applying a due probe timeout: it never makes
 *  a transition, so it never runs an event callback, and may be called with
 *  a lock held that a listener takes. The counters are those of
 *  breaker_stats_get(); state, generation and state_since describe the state
 *  as it is stored (a hung probe's half-open still shows HALF_OPEN).
 *  Lock-free; thread-safe. */
BREAKER_API void breaker_stats_peek(breaker *b, breaker_stats *out) BREAKER_NONNULL(1, 2);

/*! breaker_state_peek() :
 *  The stored state, like breaker_get_state() but applying no due probe
 *  timeout (no transition, no event). Lock-free; thread-safe. */
BREAKER_API enum breaker_state breaker_state_peek(breaker *b) BREAKER_NONNULL(1);

/*! breaker_reset_generation_peek() :
 *  The generation the breaker's latest reset made (a transition with
 *  BREAKER_REASON_RESET, by any handle or process that shares the breaker),
 *  or 0 when it has had none. Stored right after the reset's transition,
 *  before its event and before a store records the control: a backend that
 *  took over from a process killed while resetting tells from it whether
 *  the reset was given, whatever moved the breaker since (the fleet's
 *  holders: docs/fleet.md, "Host words"). A reset under way in another
 *  live thread may not show yet. Applies nothing; lock-free; thread-safe. */
BREAKER_API uint64_t breaker_reset_generation_peek(breaker *b) BREAKER_NONNULL(1);

/*! breaker_failing_sources_peek() :
 *  The map the failing-source rule reads (breaker_complete_from()): one bit
 *  per source hash of the failures of the current and the previous period,
 *  OR-ed; 0 when no failure named a source or the rule is off. A backend
 *  that decides trips elsewhere (the fleet) sends it with the counts, so
 *  the rule holds there too. Applies nothing; lock-free. */
BREAKER_API uint64_t breaker_failing_sources_peek(breaker *b) BREAKER_NONNULL(1);

/* A backend that a registry makes its breakers through
 * (breaker_registry_config.backend). The registry keeps names, references,
 * listeners and history; the backend decides where a breaker's state lives.
 *
 *  - open(ctx, name, cfg, owner, &b): this process's handle on the breaker
 *    called `name` (already valid: breaker_name_validate()), with `owner`
 *    installed. A backend shared between processes ATTACHES to an existing
 *    breaker of that name: neither reset nor reconfigured. `cfg` is valid;
 *    copy what you keep. @return BREAKER_OK with `*out`, or an error status
 *    with nothing made (breaker_registry_get() passes it on), or
 *    BREAKER_CONFIG_DIFFERS with `*out` attached to other stored limits.
 *  - close(ctx, b): the registry's last word on a handle it opened (evicted,
 *    or the registry destroyed; its last reference gone). DETACHES: frees
 *    what this process holds for `b`, never shared state. Each handle is
 *    closed exactly once, after every use of it ended.
 *  - fini(ctx), may be NULL: the registry is being destroyed, after closing
 *    every handle it opened.
 *
 * Threads: open runs with the registry's lock held (one registry's opens are
 * serialised) and must not call back into that registry; close never runs
 * with it held (it may wait for work that calls the registry) and must be
 * safe while other threads open and close other breakers of the backend.
 * A backend must never deliver an event while it holds a lock its open or
 * close takes: a listener may ask the registry for a new name. */
typedef struct breaker_backend_ops breaker_backend_ops;
struct breaker_backend_ops {
    const char *name; /* for messages: "heap", "file", "redis" */
    int (*open)(void *ctx, const char *name, const breaker_config *cfg, const breaker_owner *owner,
                breaker **out);
    void (*close)(void *ctx, breaker *b);
    void (*fini)(void *ctx);
};

struct breaker_backend {
    const breaker_backend_ops *ops;
    void *ctx;
};

#ifdef __cplusplus
}
#endif

#endif /* BREAKER_BACKEND_EXPERIMENTAL */
