/* SPDX-License-Identifier: MIT */
/*
 * breaker/registry.h - named breakers and their observability: a bounded
 * registry, transition listeners and history, flapping detection, and
 * Prometheus, JSON and public-health exports.
 *
 * Part of the supported API of libbreaker (see breaker.h); built into the same
 * library, with no dependency beyond libc and pthreads.
 *
 * The model. A registry owns breakers by name ("payments.charge"; valid names:
 * breaker_name_validate() in breaker.h). Callers ask for a breaker where they
 * make the call, with breaker_registry_get(); the
 * first request creates it from the registry's template (or from an override
 * registered for that name or its prefix), later requests find it without
 * taking a lock. The registry watches every transition of its breakers: it
 * keeps a short history per breaker, tells listeners, flags breakers that
 * flap, and exports the lot for operators.
 *
 * Ownership: reference counting. breaker_registry_get() and
 * breaker_registry_find() return a new reference; give each one back with
 * breaker_registry_release(). A referenced breaker is never freed: if the
 * registry evicts it meanwhile (idle eviction, below), the handle keeps
 * working as a detached breaker, no longer listed or exported, and it is
 * freed when its last reference goes; asking for the name again creates a
 * fresh breaker (with a store, attaches again to the stored one). A caller that keeps a handle for
 * the life of the process should therefore leave idle eviction off, or get and release around each
 * unit of work (a lookup is a hash probe and two atomic increments).
 *
 * Thread-safety: every function may be called from any thread at any time,
 * except breaker_registry_destroy(), which must not race with any other call
 * and must come after every reference has been released.
 */
#ifndef BREAKER_REGISTRY_H
#define BREAKER_REGISTRY_H

#include <breaker.h>

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Listeners a registry can hold. */
#define BREAKER_REGISTRY_MAX_LISTENERS 8
/* Upper bounds of the registry configuration. */
#define BREAKER_REGISTRY_MAX_BREAKERS 65536u
#define BREAKER_REGISTRY_MAX_HISTORY  1024u

typedef struct breaker_registry breaker_registry; /* opaque handle */
typedef struct breaker_registry_config breaker_registry_config;
typedef struct breaker_registry_event breaker_registry_event;
typedef struct breaker_registry_info breaker_registry_info;
typedef struct breaker_registry_stats breaker_registry_stats;

/* Registry configuration. Fill with breaker_registry_config_init(). A zero
 * numeric field means the default. */
struct breaker_registry_config {
    uint32_t max_breakers;   /* hard bound on live breakers: 1..65536, 0 = default 1024 */
    uint64_t idle_evict_ns;  /* evict breakers idle this long (see
                                breaker_registry_evict_idle()); 0 = never */
    uint32_t history_size;   /* transitions kept per breaker: 1..1024, 0 = default 16 */
    uint32_t flap_threshold; /* flapping when MORE than this many transitions
                                happen within flap_window_ns: 1..1024, 0 = default 6 */
    uint64_t flap_window_ns; /* 0 = default 10 min */
    /* The template every breaker is created from unless an override matches.
     * Its on_event, if set, is still called for every transition (before
     * the registry's listeners). Validated by breaker_config_validate(). */
    breaker_config defaults;
    /* The registry's own clock, used only to measure idleness (breakers'
     * histories and flapping use each breaker's clock). NULL = CLOCK_MONOTONIC. */
    breaker_clock_fn *clock;
    void *clock_ctx;
    /* The short form of .backend = breaker_store_backend(store) (below), for
     * a store file from breaker_store_open() (and only a store file). Setting
     * both `store` and `backend` is BREAKER_EINVAL. Not owned. */
    struct breaker_store *store;
    /* Where the breakers live: the backend each name is opened on
     * (breaker/backend.h; copied, its context is not owned). NULL (the
     * default): this process's heap, one breaker per name per process.
     * breaker_store_backend(st) (breaker/store.h): the registry ATTACHES each
     * name to that store file's breaker, shared with every process of the
     * host that opens the file: one trip, one probe budget, one set of
     * counters. A name that exists there keeps its stored limits (the first
     * creator's; they win over `defaults` and overrides). Eviction detaches
     * this process's handle; the shared breaker stays in the file.
     * breaker_redis_backend(fleet) (breaker/redis.h): each name is a local
     * breaker attached through the fleet handle, which shares its trip, open
     * wait and probe budget with the fleet. Listeners, history and flapping
     * hear the transitions made in THIS process; lookups stay lock-free
     * whatever the backend. Destroy the registry before the store or fleet
     * handle that the backend belongs to. */
    const breaker_backend *backend;
};

/*! breaker_registry_config_init() :
 *  Fill `cfg` with the defaults above and `defaults` with breaker_config_init(). */
BREAKER_API void breaker_registry_config_init(breaker_registry_config *cfg) BREAKER_NONNULL(1);

/*! breaker_registry_config_validate() :
 *  @return BREAKER_OK, or BREAKER_EINVAL with a message naming the field and
 *  its allowed range written to `msg` (NUL-terminated, truncated to msg_len;
 *  `msg` may be NULL when msg_len is 0); also for `store` and `backend` both
 *  set, and for a backend without ops, ops->open or ops->close. */
BREAKER_API int breaker_registry_config_validate(const breaker_registry_config *cfg, char *msg,
                                                 size_t msg_len) BREAKER_NONNULL(1);

/*! breaker_registry_create() :
 *  Create a registry from `cfg` (NULL = all defaults; copied). Allocates the
 *  lookup table for max_breakers here; each breaker is allocated when first
 *  asked for. Starts no thread.
 *  @return BREAKER_OK and `*out` set; BREAKER_EINVAL (invalid configuration,
 *  see breaker_registry_config_validate(), or `out` NULL); BREAKER_ENOMEM. */
BREAKER_API BREAKER_NODISCARD int breaker_registry_create(const breaker_registry_config *cfg,
                                                          breaker_registry **out);

/*! breaker_registry_destroy() :
 *  Destroy the registry and every breaker it lists. NULL is a no-op. Every
 *  reference must have been released first (a reference still held to an
 *  evicted breaker dangles afterwards); no other call may race with it. */
BREAKER_API void breaker_registry_destroy(breaker_registry *reg);

/*! breaker_registry_set_config() :
 *  Register the configuration for the breakers under `pattern`: either an
 *  exact name ("payments.charge") or a prefix ending in '*'
 *  ("payments.*" matches "payments.charge"; "*" matches everything). An exact
 *  match wins over any prefix, a longer prefix over a shorter one, and the
 *  registry template applies when nothing matches. Registering a pattern again
 *  replaces it. Breakers created later get it; breakers that already exist
 *  and that it now governs (it is the best match for their name) take its
 *  limits at once, as breaker_reconfigure() changes them (one event with
 *  reason RECONFIGURED each; with a store file, for every process of the
 *  host). (Changed in 0.2: before, existing breakers kept their
 *  configuration.) If one of those cannot take it (a limit that shapes its
 *  block: breaker_reconfigure() lists them), nothing is registered and
 *  nothing changes. `cfg` is copied; its on_event is kept for breakers
 *  created later (a live breaker keeps its callbacks).
 *  @return BREAKER_OK; BREAKER_EINVAL (bad pattern, a configuration that
 *  breaker_config_validate() refuses, or a live breaker it governs cannot
 *  take: `msg` says which and why); BREAKER_ENOMEM. Calls are made one at a
 *  time (one racing another waits for it, so the later one wins on every
 *  breaker). Must not be called from a listener of the registry or an event
 *  callback of its breakers (a backend may report a transition holding a
 *  lock that the change takes). */
BREAKER_API BREAKER_NODISCARD int
breaker_registry_set_config(breaker_registry *reg, const char *pattern, const breaker_config *cfg,
                            char *msg, size_t msg_len) BREAKER_NONNULL(1, 2, 3);

/*! breaker_registry_get() :
 *  Get the breaker called `name`, creating it if there is none. Two threads
 *  asking for the same new name at once get the same breaker. Finding an
 *  existing name takes no lock; creating one takes the registry's lock.
 *  @return BREAKER_OK and `*out` holding a new reference (release it with
 *  breaker_registry_release()); BREAKER_EINVAL for an invalid name
 *  (breaker_name_validate() says why); BREAKER_REGISTRY_FULL when the name is
 *  new and max_breakers breakers exist (after trying idle eviction, when it
 *  is on), counted in breaker_registry_stats.rejected_full: the registry
 *  never grows past its bound; BREAKER_ENOMEM. With a store file (config
 *  .backend or .store), also its attach errors (breaker_store_attach(): BREAKER_ENOSPC when the
 *  file is full, BREAKER_EINCOMPATIBLE, BREAKER_EIO); a name stored with
 *  other limits is not an error: it is attached to them. On error `*out` is
 *  NULL. */
BREAKER_API BREAKER_NODISCARD int breaker_registry_get(breaker_registry *reg, const char *name,
                                                       breaker **out) BREAKER_NONNULL(1, 2, 3);

/*! breaker_registry_find() :
 *  Like breaker_registry_get() but never creates: @return BREAKER_OK and a
 *  new reference, or BREAKER_NOT_FOUND (also for an invalid name). Lock-free. */
BREAKER_API BREAKER_NODISCARD int breaker_registry_find(breaker_registry *reg, const char *name,
                                                        breaker **out) BREAKER_NONNULL(1, 2, 3);

/*! breaker_registry_release() :
 *  Give back one reference obtained from this registry. The breaker is freed
 *  when it has been evicted and this was its last reference.
 *  @return BREAKER_OK, or BREAKER_EINVAL if `b` does not come from `reg`. */
BREAKER_API int breaker_registry_release(breaker_registry *reg, breaker *b) BREAKER_NONNULL(1, 2);

/*! breaker_registry_name() :
 *  @return the name of a breaker obtained from `reg`, valid as long as the
 *  caller holds its reference; NULL if `b` does not come from `reg`. */
BREAKER_API const char *breaker_registry_name(breaker_registry *reg, breaker *b)
    BREAKER_NONNULL(1, 2);

/*! breaker_registry_evict_idle() :
 *  Remove every breaker that is CLOSED, has no call in flight, and has been
 *  idle (no call admitted or refused, no get or find) for at least
 *  idle_evict_ns on the registry clock. Idleness is measured by sampling
 *  counters, so a breaker becomes evictable idle_evict_ns after the first
 *  call of this function (or lookup) that saw it quiet. Held references stay
 *  valid (see the ownership rule at the top). Nothing happens when
 *  idle_evict_ns is 0. Call it periodically from a maintenance thread of
 *  yours, or rely on breaker_registry_get() calling it when the registry is
 *  full. Takes the registry lock and waits for concurrent lookups to leave
 *  the entries it removes (they are short).
 *  @return BREAKER_OK, and the number removed in `*evicted` (may be NULL). */
BREAKER_API int breaker_registry_evict_idle(breaker_registry *reg, size_t *evicted)
    BREAKER_NONNULL(1);

/* ---- Events -------------------------------------------------------------- */

enum breaker_registry_event_kind {
    BREAKER_REGISTRY_TRANSITION,       /* a breaker changed state */
    BREAKER_REGISTRY_FLAPPING_STARTED, /* more than flap_threshold transitions
                                          within flap_window_ns */
    BREAKER_REGISTRY_FLAPPING_STOPPED, /* the count in the window fell to
                                          flap_threshold / 2 or less */
    BREAKER_REGISTRY_RECONFIGURED      /* a breaker's limits changed live
                                          (breaker_reconfigure(), or
                                          breaker_registry_set_config()):
                                          `transition` is the event, reason
                                          RECONFIGURED, with the old and new
                                          configurations; not in the history,
                                          not counted as a transition */
};

/* What a listener receives. */
struct breaker_registry_event {
    enum breaker_registry_event_kind kind;
    const char *name; /* the breaker's name */
    breaker *b;       /* the breaker (borrowed: valid during the call) */
    /* TRANSITION: the transition, with its reason and evidence.
     * FLAPPING_*: the breaker's latest transition. */
    breaker_event transition;
    uint32_t recent_transitions; /* transitions within flap_window_ns */
};

/* Listener. A TRANSITION event runs on the thread that made the transition,
 * once per transition, after the breaker's own on_event; FLAPPING_STARTED
 * follows the transition that caused it on the same thread;
 * FLAPPING_STOPPED runs on the thread that noticed the breaker settled (a
 * later transition, an export, breaker_registry_info_get()). Listeners of one
 * breaker may run concurrently on different threads when transitions follow
 * each other closely. The rules of breaker_event_fn apply to `ev->b`:
 * read-only calls only (no acquire, complete, force or reset on it). A
 * listener may call any registry function except breaker_registry_destroy()
 * (none of them runs listeners while holding the registry lock). Keep it
 * short: it runs on a caller's request path. `ev` is valid during the call. */
typedef void breaker_registry_listener_fn(void *ctx, const breaker_registry_event *ev);

/*! breaker_registry_add_listener() :
 *  Add a listener for every breaker of the registry, for the registry's life.
 *  Add listeners before traffic starts: transitions that happen while a
 *  listener is being added may miss it.
 *  @return BREAKER_OK; BREAKER_ENOSPC when BREAKER_REGISTRY_MAX_LISTENERS are
 *  registered. */
BREAKER_API int breaker_registry_add_listener(breaker_registry *reg,
                                              breaker_registry_listener_fn *fn, void *ctx)
    BREAKER_NONNULL(1, 2);

/* ---- Introspection --------------------------------------------------------*/

/* Everything the registry knows about one breaker at one moment. */
struct breaker_registry_info {
    const char *name; /* valid during the call (foreach) or while `b` is held */
    breaker *b;
    breaker_stats stats;     /* breaker_stats_get() */
    uint64_t now_ns;         /* the breaker's clock when the snapshot was taken */
    uint64_t retry_after_ns; /* breaker_retry_after_ns(); UINT64_MAX when FORCED_OPEN */
    /* OPEN, its wait is over, and no call has arrived since to probe: the
     * dependency is not known to be failing, the traffic is too low to tell.
     * Distinct from failing probes (see stats.probes_failed and history). */
    int awaiting_probe;
    int flapping;                /* see BREAKER_REGISTRY_FLAPPING_STARTED */
    uint32_t recent_transitions; /* transitions within flap_window_ns */
    uint64_t
        transitions_by[BREAKER_STATE_COUNT]
                      [BREAKER_STATE_COUNT]; /* [from][to] (enum breaker_state), since create */
    const breaker_event *history;            /* the last transitions, oldest first; valid
                                                like `name` (info_get: in the caller's buffer) */
    size_t history_len;
};

/*! breaker_registry_foreach() :
 *  Call `fn` once for each breaker listed in the registry, with a snapshot of
 *  it. Safe while other threads create, use or evict breakers: a breaker
 *  created meanwhile may or may not be visited, none is visited twice, and
 *  each visited breaker is held (not freed) during its call. `fn` may call
 *  any function of the registry except destroy. Visits in no particular order.
 *  @return BREAKER_OK, the first non-zero value `fn` returned (the walk stops
 *  there), or BREAKER_ENOMEM (the history buffer could not be allocated). */
BREAKER_API int breaker_registry_foreach(breaker_registry *reg,
                                         int (*fn)(void *ctx, const breaker_registry_info *info),
                                         void *ctx) BREAKER_NONNULL(1, 2);

/*! breaker_registry_info_get() :
 *  Snapshot one breaker obtained from `reg`; its history (up to `history_cap`
 *  transitions, the newest ones) is copied into `history`, which may be NULL
 *  when history_cap is 0. @return BREAKER_OK, or BREAKER_EINVAL if `b` does
 *  not come from `reg`. */
BREAKER_API int breaker_registry_info_get(breaker_registry *reg, breaker *b,
                                          breaker_registry_info *out, breaker_event *history,
                                          size_t history_cap) BREAKER_NONNULL(1, 2, 3);

/* Registry-wide counters. */
struct breaker_registry_stats {
    uint64_t breakers;      /* listed now */
    uint64_t max_breakers;  /* the configured bound */
    uint64_t created;       /* since create */
    uint64_t evicted;       /* since create */
    uint64_t rejected_full; /* get() refused with BREAKER_REGISTRY_FULL */
    uint64_t invalid_names; /* get() refused with BREAKER_EINVAL */
};

/*! breaker_registry_stats_get() : fill `out`. Lock-free. @return BREAKER_OK. */
BREAKER_API int breaker_registry_stats_get(breaker_registry *reg, breaker_registry_stats *out)
    BREAKER_NONNULL(1, 2);

/*! breaker_registry_degraded() :
 *  @return 1 when any listed breaker is OPEN, HALF_OPEN or FORCED_OPEN, or is
 *  flapping; 0 otherwise. */
BREAKER_API int breaker_registry_degraded(breaker_registry *reg) BREAKER_NONNULL(1);

/* ---- Exports ----------------------------------------------------------------
 * Each export comes in two forms.
 *
 * The buffer form, breaker_registry_export_xxx(reg, buf, cap, len), writes a
 * NUL-terminated text into `buf` (`cap` bytes) and returns BREAKER_OK with
 * the length (without the NUL) in `*len`; or BREAKER_ENOSPC with the size
 * needed at that moment (NUL included) in `*len` and `buf` holding an empty
 * string (when cap > 0); or BREAKER_ENOMEM. `len` may be NULL. A text never
 * comes back truncated. Breakers created between two calls can make the size
 * reported by ENOSPC too small for the next one: to avoid that loop, use:
 *
 * The allocating form, breaker_registry_export_xxx_alloc(reg, &text, &len),
 * writes the whole text in one pass into a buffer it allocates to fit, and
 * returns BREAKER_OK with `*out` pointing to it (NUL-terminated; the caller
 * owns it and releases it with free()) and its length without the NUL in
 * `*len` (`len` may be NULL); or BREAKER_ENOMEM with `*out` NULL (and `*len`
 * 0), having freed whatever it had allocated. It never returns ENOSPC.
 *
 * Both allocate a working copy of the snapshots while they run, call
 * breaker_get_state() on each breaker (so a hung probe's timeout is applied),
 * and are thread-safe; independent of the C locale. */

/*! breaker_registry_export_prometheus() :
 *  The Prometheus text exposition format (version 0.0.4) for every breaker,
 *  label `breaker="<name>"`, sorted by name, and the registry's own counters.
 *  Families: breaker_state (one series, the state's number: 0 closed,
 *  1 open, 2 half_open, 3 forced_open, 4 forced_closed), breaker_calls_total
 *  {outcome=success|failure|ignored}, breaker_admitted_calls_total,
 *  breaker_cancelled_calls_total, breaker_slow_calls_total,
 *  breaker_rejected_calls_total{reason=open|half_open|forced_open|ramp},
 *  breaker_ramp_share, breaker_half_open_successes,
 *  breaker_transitions_total{from,to}, breaker_state_seconds_total{state}
 *  (the forced states only once an operator has used them),
 *  breaker_probes_admitted_total, breaker_probes_total{result=success|failure|
 *  timeout}, breaker_probes_in_flight, breaker_stale_completions_total,
 *  breaker_duplicate_completions_total, breaker_window_calls,
 *  breaker_window_failure_ratio, breaker_window_slow_call_ratio,
 *  breaker_next_probe_seconds (0 unless OPEN; +Inf when FORCED_OPEN),
 *  breaker_open_awaiting_probe, breaker_flapping, breaker_failed_recoveries,
 *  breaker_config_info (always 1; labels trip, failure_threshold or
 *  window_size/window_seconds, min_calls, failure_rate, slow_call_rate,
 *  slow_call_seconds, open_seconds, open_max_seconds, half_open_max_probes,
 *  half_open_successes, probe_timeout_seconds, ramp_seconds),
 *  breaker_window_min_calls, breaker_failure_rate_threshold,
 *  breaker_slow_call_rate_threshold (0 where the trip policy has no window);
 *  and registry-wide breaker_build_info{version} (always 1),
 *  breaker_registry_breakers, breaker_registry_max_breakers,
 *  breaker_registry_created_total, breaker_registry_evicted_total,
 *  breaker_registry_rejected_full_total. docs/observability.md counts the
 *  series. Bulkheads, retry budgets and executors are exported by
 *  breaker_compose_export_prometheus() (compose.h), whose text may follow
 *  this one in the same scrape. */
BREAKER_API int breaker_registry_export_prometheus(breaker_registry *reg, char *buf, size_t cap,
                                                   size_t *len) BREAKER_NONNULL(1);
BREAKER_API BREAKER_NODISCARD int breaker_registry_export_prometheus_alloc(breaker_registry *reg,
                                                                           char **out, size_t *len)
    BREAKER_NONNULL(1, 2);

/*! breaker_store_export_prometheus() :
 *  The breakers of a store file (breaker/store.h), or with `name` not NULL
 *  that one, in the same format, families, labels and order as
 *  breaker_registry_export_prometheus(), so that the same dashboards and
 *  rules read both; what `breaker status --prometheus` prints. The families
 *  whose values a store does not keep (they would be this process's alone:
 *  0 for a command that has just started, wrong rather than unknown) are
 *  left out: breaker_transitions_total{from,to} (instead,
 *  breaker_store_transitions_total, the store's count, made by any process),
 *  breaker_flapping and the breaker_registry_* series; breaker_build_info is
 *  kept. Each breaker is attached with its stored limits while it is read.
 *  The two forms and their returns are those above, and also
 *  BREAKER_NOT_FOUND when the store has no breaker `name`, or the error of
 *  an attach (a damaged entry). */
BREAKER_API int breaker_store_export_prometheus(struct breaker_store *st, const char *name,
                                                char *buf, size_t cap, size_t *len)
    BREAKER_NONNULL(1);
BREAKER_API BREAKER_NODISCARD int breaker_store_export_prometheus_alloc(struct breaker_store *st,
                                                                        const char *name,
                                                                        char **out, size_t *len)
    BREAKER_NONNULL(1, 3);

/*! breaker_registry_export_json() :
 *  A JSON report for operators: {"version":1,"unix_time","degraded":bool,
 *  "registry":{...},"breakers":[{"name","state","generation",
 *  "state_age_seconds","state_since_unix_time","degraded","flapping",
 *  "recent_transitions","awaiting_probe","retry_after_seconds" (null when
 *  FORCED_OPEN),"failed_recoveries","counters":{},"window":{},
 *  "seconds_in_state":{},"transitions":[{"seconds_ago","unix_time",
 *  "generation","from","to","reason","open_seconds","evidence":{}}]}]}.
 *  Breakers sorted by name, transitions oldest first. Ages are measured on
 *  each breaker's clock; the unix times are the wall clock at the report
 *  minus those ages. It names every dependency: serve it to operators only. */
BREAKER_API int breaker_registry_export_json(breaker_registry *reg, char *buf, size_t cap,
                                             size_t *len) BREAKER_NONNULL(1);
BREAKER_API BREAKER_NODISCARD int breaker_registry_export_json_alloc(breaker_registry *reg,
                                                                     char **out, size_t *len)
    BREAKER_NONNULL(1, 2);

/*! breaker_registry_export_health_json() :
 *  The public variant: exactly {"status":"ok"} or {"status":"degraded"}
 *  (see breaker_registry_degraded()) and a newline, naming no breaker or
 *  dependency and counting nothing. What it still tells anyone who can read
 *  it: that some dependency of this service is failing, and, read often,
 *  when (a breaker opening, the time its recovery takes), which is the
 *  moment a request can best be made to be the probe (breaker_complete_from
 *  says what a failing probe can and cannot do). Serve it where that is
 *  acceptable (a load balancer's check), or serve a liveness answer that
 *  does not depend on the breakers to the public. */
BREAKER_API int breaker_registry_export_health_json(breaker_registry *reg, char *buf, size_t cap,
                                                    size_t *len) BREAKER_NONNULL(1);
BREAKER_API BREAKER_NODISCARD int breaker_registry_export_health_json_alloc(breaker_registry *reg,
                                                                            char **out, size_t *len)
    BREAKER_NONNULL(1, 2);

#ifdef __cplusplus
}
#endif

#endif /* BREAKER_REGISTRY_H */
