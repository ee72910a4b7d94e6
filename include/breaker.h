/* SPDX-License-Identifier: MIT */
/*
 * breaker.h - a thread-safe circuit breaker for C11.
 *
 * This header is the reference manual of libbreaker. Everything declared here
 * (and in include/breaker/\*.h) is the supported API; anything else, including
 * every symbol that starts with `breaker__`, is private and may change.
 *
 * The model in one paragraph. A breaker guards one dependency. Before each call
 * the caller asks breaker_acquire() for a permit; after the call it reports the
 * outcome with breaker_complete(). CLOSED admits every call and records
 * outcomes; when the evidence (consecutive failures, or a failure or slow-call
 * rate over a window with a minimum volume) says the dependency is unwell, the
 * breaker OPENs and refuses calls locally. After a wait it turns HALF_OPEN and
 * admits a bounded number of probes; once enough have succeeded it admits no
 * more and closes when the probes still in flight have settled, while one
 * failed (or hung) probe reopens it with a longer wait. Every transition starts
 * a new generation; completions of permits from an earlier generation are
 * "stale" and change nothing.
 *
 * Thread-safety: every function taking a `breaker *` may be called from any
 * thread at any time, except breaker_destroy(), which must not race with any
 * other call on the same breaker. breaker_acquire() and breaker_complete() in
 * the CLOSED and OPEN states take no lock, allocate nothing and make no system
 * call other than reading the clock.
 */
#ifndef BREAKER_H
#define BREAKER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Version -------------------------------------------------------------
 * CMake reads these three lines to set the project version: keep the form. */
#define BREAKER_VERSION_MAJOR 0
#define BREAKER_VERSION_MINOR 1
#define BREAKER_VERSION_PATCH 0
#define BREAKER_VERSION_NUMBER \
    ((BREAKER_VERSION_MAJOR * 10000) + (BREAKER_VERSION_MINOR * 100) + BREAKER_VERSION_PATCH)

/* ---- Export and compiler annotations -------------------------------------- */
#if defined(_WIN32) && defined(BREAKER_SHARED_BUILD)
#define BREAKER_API __declspec(dllexport)
#elif defined(__GNUC__) || defined(__clang__)
#define BREAKER_API __attribute__((visibility("default")))
#else
#define BREAKER_API
#endif

#if defined(__GNUC__) || defined(__clang__)
#define BREAKER_NODISCARD    __attribute__((warn_unused_result))
#define BREAKER_NONNULL(...) __attribute__((nonnull(__VA_ARGS__)))
#else
#define BREAKER_NODISCARD
#define BREAKER_NONNULL(...)
#endif

/* ---- Status codes ----------------------------------------------------------
 * One list for the whole library (core and optional parts). Values are
 * explicit and append-only: a value is never renumbered or reused.
 * breaker_strerror() is generated from this list. */
#define BREAKER_STATUS_LIST(X)                                                               \
    X(OK, 0, "success")                                                                      \
    X(REJECTED_OPEN, 1, "call refused: the breaker is open")                                 \
    X(REJECTED_HALF_OPEN, 2,                                                                 \
      "call refused: the breaker is half-open and every probe slot is taken")                \
    X(STALE, 3, "completion ignored: the permit belongs to an earlier generation")           \
    X(ALREADY_SETTLED, 4, "completion ignored: the permit was already settled")              \
    X(EINVAL, 5, "invalid argument or configuration")                                        \
    X(ENOMEM, 6, "out of memory")                                                            \
    X(REGISTRY_FULL, 7, "registry is at its configured maximum of breakers")                 \
    X(NOT_FOUND, 8, "no such entry")                                                         \
    X(BULKHEAD_FULL, 9, "call refused: the bulkhead's concurrency limit is reached")         \
    X(DEADLINE_EXCEEDED, 10, "the caller's deadline has passed")                             \
    X(ENOSPC, 11, "the output buffer is too small")                                          \
    X(EIO, 12, "input/output error")                                                         \
    X(RETRY_BUDGET_EXHAUSTED, 13, "retry refused: the retry budget is spent")                \
    X(ECANCELED, 14, "the operation was cancelled by the caller")                            \
    X(EFORMAT, 15, "malformed input")                                                        \
    X(EINCOMPATIBLE, 16, "shared state written by an incompatible layout, version or build") \
    X(REJECTED_RAMP, 17, "call refused: traffic is ramping back up after a recovery")        \
    X(CONFIG_DIFFERS, 18, "attached, but the stored breaker has other limits: they win")     \
    X(EBUSY, 19, "busy: another process held a shared store's lock past the wait's bound")

enum breaker_status {
#define BREAKER__STATUS_ENUM(name, value, text) BREAKER_##name = value,
    BREAKER_STATUS_LIST(BREAKER__STATUS_ENUM)
#undef BREAKER__STATUS_ENUM
};

/*! breaker_strerror() :
 *  @return a static, NUL-terminated English description of `status` (one of
 *  enum breaker_status). Unknown values give "unknown status". The string
 *  lives for the life of the program. Thread-safe. */
BREAKER_API const char *breaker_strerror(int status);

/*! breaker_status_name() :
 *  @return the enum name without prefix ("REJECTED_OPEN"), or "UNKNOWN". */
BREAKER_API const char *breaker_status_name(int status);

/*! breaker_version_string() : @return "MAJOR.MINOR.PATCH", static. */
BREAKER_API const char *breaker_version_string(void);

/* ---- Enumerations -------------------------------------------------------- */

/* The state a breaker is in. FORCED_* are set only by an operator (see
 * breaker_force_open() and breaker_force_closed()) and left only by
 * breaker_reset(). */
enum breaker_state {
    BREAKER_CLOSED,
    BREAKER_OPEN,
    BREAKER_HALF_OPEN,
    BREAKER_FORCED_OPEN,
    BREAKER_FORCED_CLOSED
};
/* The number of states: arrays indexed by enum breaker_state have this size. */
#define BREAKER_STATE_COUNT 5

/* What the caller reports about one admitted call.
 * - SUCCESS: the dependency answered as it should.
 * - FAILURE: the dependency is at fault (5xx, timeout, connection refused...).
 * - IGNORED: the call says nothing about the dependency's health (a 404, a
 *   validation error): not recorded in any window or count, frees a probe slot.
 * - CANCELLED: the caller gave up (its own deadline, a client disconnect);
 *   counted as configured by breaker_config.cancelled_as. */
enum breaker_outcome { BREAKER_SUCCESS, BREAKER_FAILURE, BREAKER_IGNORED, BREAKER_CANCELLED };

/* How a closed breaker decides to open.
 * - CONSECUTIVE: `failure_threshold` failures in a row (a success resets).
 * - COUNT_WINDOW: failure/slow rate over the last `window_size` recorded calls.
 * - TIME_WINDOW: failure/slow rate over the last `window_ns` of time, kept in
 *   `window_buckets` buckets.
 * Window policies never trip on fewer than `min_calls` recorded calls. */
enum breaker_trip { BREAKER_TRIP_CONSECUTIVE, BREAKER_TRIP_COUNT_WINDOW, BREAKER_TRIP_TIME_WINDOW };

/* Why a transition happened. Append-only. */
enum breaker_reason {
    BREAKER_REASON_CONSECUTIVE_FAILURES, /* CLOSED -> OPEN */
    BREAKER_REASON_FAILURE_RATE,         /* CLOSED -> OPEN */
    BREAKER_REASON_SLOW_CALL_RATE,       /* CLOSED -> OPEN */
    BREAKER_REASON_WAIT_ELAPSED,         /* OPEN -> HALF_OPEN (first probe) */
    BREAKER_REASON_PROBE_FAILED,         /* HALF_OPEN -> OPEN */
    BREAKER_REASON_PROBE_TIMEOUT,        /* HALF_OPEN -> OPEN (hung probe) */
    BREAKER_REASON_PROBES_SUCCEEDED,     /* HALF_OPEN -> CLOSED */
    BREAKER_REASON_FORCED_OPEN,          /* any -> FORCED_OPEN */
    BREAKER_REASON_FORCED_CLOSED,        /* any -> FORCED_CLOSED */
    BREAKER_REASON_RESET,                /* any -> CLOSED */
    BREAKER_REASON_PROBE_SLOW,           /* HALF_OPEN -> OPEN (slow probe, with
                                            slow_call_rate set) */
    BREAKER_REASON_OUTSIDE_TRIP,         /* CLOSED -> OPEN on evidence gathered
                                            outside this process's calls (a
                                            shared store's aggregate); the
                                            evidence fields are that aggregate */
    BREAKER_REASON_OUTSIDE_CLOSE,        /* OPEN or HALF_OPEN -> CLOSED because a
                                            shared store recovered (a fleet's
                                            leased probes succeeded) */
    BREAKER_REASON_SERVER_DIRECTED,      /* any but forced -> OPEN for the time the
                                            dependency asked (breaker_open_for:
                                            a 429 or 503 with Retry-After) */
    BREAKER_REASON_OPERATOR,             /* any -> OPEN for a time an operator
                                            chose (breaker_open_for) */
    BREAKER_REASON_RECONFIGURED,         /* no transition: from == to, the same
                                            generation; the limits changed
                                            (breaker_reconfigure) */
    BREAKER_REASON_FORCE_EXPIRED         /* FORCED_CLOSED -> CLOSED: the time a
                                            forced close was given ran out
                                            (breaker_force_closed_for) */
};
/* The number of reasons (new reasons are appended: their values never change). */
#define BREAKER_REASON_COUNT (BREAKER_REASON_FORCE_EXPIRED + 1)

/*! breaker_state_name(), breaker_outcome_name(), breaker_trip_name(),
 *  breaker_reason_name() :
 *  @return a static lower-case name ("half_open", "probe_timeout", ...), or
 *  "unknown" for a value outside the enumeration. Suitable as a metric label. */
BREAKER_API const char *breaker_state_name(enum breaker_state state);
BREAKER_API const char *breaker_outcome_name(enum breaker_outcome outcome);
BREAKER_API const char *breaker_trip_name(enum breaker_trip trip);
BREAKER_API const char *breaker_reason_name(enum breaker_reason reason);

/* ---- Types ----------------------------------------------------------------*/

typedef struct breaker breaker; /* opaque handle */
typedef struct breaker_config breaker_config;
typedef struct breaker_permit breaker_permit;
typedef struct breaker_event breaker_event;
typedef struct breaker_evidence breaker_evidence;
typedef struct breaker_stats breaker_stats;
/* Where breakers live and how far their limits reach (the process heap, a
 * store file, the fleet store): chosen once, when a breaker is made, and
 * kept by the handle. Opaque here; breaker/backend.h (experimental) says what
 * one is made of. breaker_store_backend() and breaker_redis_backend() hand
 * them out, for breaker_registry_config.backend. */
typedef struct breaker_backend breaker_backend;

/* A monotonic clock in nanoseconds. Called on the thread that calls into the
 * breaker, possibly concurrently from several threads; must be thread-safe,
 * must never go backwards, and must not call into the breaker. */
typedef uint64_t breaker_clock_fn(void *clock_ctx);

/* The evidence behind a transition: what the deciding thread saw. For a trip
 * from CLOSED these are the window (or the consecutive run) at that moment;
 * for a half-open transition, the probe counts. */
struct breaker_evidence {
    uint64_t calls;                /* recorded calls in the window */
    uint64_t failures;             /* failed calls among them */
    uint64_t slow_calls;           /* slow calls among them */
    double failure_rate;           /* failures / calls, 0 when calls == 0 */
    double slow_call_rate;         /* slow_calls / calls, 0 when calls == 0 */
    uint32_t consecutive_failures; /* current run of failures (CONSECUTIVE) */
    uint32_t probe_successes;      /* successful probes in this half-open */
    uint32_t failed_recoveries;    /* k after the transition: consecutive failed
                                      recoveries (0 after a close or reset) */
    uint32_t failing_sources;      /* with min_failing_sources: the estimated
                                      number of distinct callers the failures
                                      came from (see breaker_complete_from) */
};

/* Longest who and why text of an operator's control, in bytes (not counting
 * the NUL): breaker_event.who and .why, breaker_control_apply(), and the
 * fleet's orders (breaker/redis.h: BREAKER_REDIS_WHO_MAX and _WHY_MAX are
 * these). */
#define BREAKER_WHO_MAX 64
#define BREAKER_WHY_MAX 200

/* One transition, as given to breaker_config.on_event. */
struct breaker_event {
    enum breaker_state from;
    enum breaker_state to;
    enum breaker_reason reason;
    uint64_t generation; /* the generation that `to` starts */
    uint64_t time_ns;    /* breaker clock at the transition */
    uint64_t open_ns;    /* to == OPEN: the wait chosen (jitter included) */
    breaker_evidence evidence;
    uint32_t shadow; /* 1: the breaker is in shadow mode (breaker_set_shadow): a
                        would-be transition; its state changed, but it refuses
                        nothing (to == OPEN: "would open"). 0 otherwise */
    /* reason RECONFIGURED (a live change of the limits, not a transition:
     * from == to, generation unchanged): the configuration before and after
     * (limits only: callbacks, contexts and clock NULL), valid during the
     * callback only, and the configuration generation the change started
     * (breaker_config_generation()). NULL and 0 for every transition. */
    const breaker_config *old_config;
    const breaker_config *new_config;
    uint64_t config_generation;
    /* Who gave the operator's control that made this transition, and why
     * (breaker_control_apply(); a fleet order applied by the flusher of
     * breaker/redis.h carries the order's): NUL-terminated printable text
     * (no byte below 0x20 nor 0x7f; other bytes as given, UTF-8 by
     * convention), at most BREAKER_WHO_MAX and BREAKER_WHY_MAX bytes, the
     * bytes after the NUL zero. Values, not pointers: valid as long as the
     * event (a registry's history and snapshots copy them). Empty ("") for
     * every other transition: a trip, a recovery, an expiry (FORCE_EXPIRED),
     * a control called without text or through the plain functions, and a
     * transition another thread made meanwhile. */
    char who[BREAKER_WHO_MAX + 1];
    char why[BREAKER_WHY_MAX + 1];
};

/* Transition callback. Runs on the thread whose call caused the transition,
 * after the new state is visible and outside any critical section, exactly
 * once per transition, in the process that made it: when several processes
 * share a breaker's state (a shared store), each transition calls back in
 * one process only, the one whose call or store update won it. It may call
 * read-only functions on the breaker
 * (breaker_get_state, breaker_stats_get, ...) and may acquire/complete on
 * *other* breakers; it must not call breaker_acquire/complete/force/reset on
 * the same breaker (that could recurse) nor destroy it. `ev` is valid only
 * during the call. Keep it short: it runs on a caller's request path. */
typedef void breaker_event_fn(void *event_ctx, breaker *b, const breaker_event *ev);

/* Configuration. Fill with breaker_config_init(), then change what you need.
 * Durations are nanoseconds on the breaker's clock. A zero numeric field
 * means "the default" where zero would be meaningless (noted "0 = default");
 * where zero is meaningful it keeps its meaning ("0 = off"). */
struct breaker_config {
    enum breaker_trip trip;            /* default TIME_WINDOW */
    uint32_t failure_threshold;        /* CONSECUTIVE: 1..1000000, 0 = default 5 */
    uint32_t window_size;              /* COUNT_WINDOW calls: 1..1000000, 0 = default 100 */
    uint64_t window_ns;                /* TIME_WINDOW span: 0 = default 60 s; each
                                          bucket (window_ns / window_buckets) must
                                          span at least 1 ms */
    uint32_t window_buckets;           /* TIME_WINDOW buckets: 1..600, 0 = default 10 */
    uint32_t min_calls;                /* windows: 1..1000000, 0 = default 20 */
    double failure_rate;               /* windows: (0,1], 0 = default 0.5 */
    uint64_t slow_call_ns;             /* a call longer than this is slow; 0 = off */
    double slow_call_rate;             /* windows: (0,1] trips on slow rate; 0 = off */
    uint64_t open_ns;                  /* first wait in OPEN: 0 = default 30 s */
    double open_backoff;               /* wait multiplier per failed recovery,
                                          [1,100], 0 = default 2 */
    uint64_t open_max_ns;              /* cap of the wait: >= open_ns, 0 = default 5 min */
    double open_jitter;                /* [0,1]: add U[0,jitter] * wait; 0 = none;
                                          breaker_config_init() sets 0.2 (see there) */
    uint32_t half_open_max_probes;     /* probes in flight: 1..4095, 0 = default 1 */
    uint32_t half_open_successes;      /* probe successes to close (once the probes in
                                          flight settled): 1..4095, 0 = default 3 */
    uint64_t probe_timeout_ns;         /* unsettled probe fails after: 0 = default 30 s */
    uint64_t ramp_ns;                  /* slow start after a recovery: 0 = off (default).
                                          When probes close the breaker, the share of
                                          calls admitted grows from ramp_start to all
                                          of them over this time (see below) */
    double ramp_start;                 /* (0,1]: the share admitted as the ramp
                                          begins, 0 = default 0.1 */
    uint32_t min_failing_sources;      /* 0..64: trip (and reopen a half-open)
                                          only on failures from at least this
                                          many distinct callers (see
                                          breaker_complete_from); 1 = off;
                                          0 = default: 3 for the failures that
                                          name sources, off while none does */
    enum breaker_outcome cancelled_as; /* IGNORED (default; the zero value
                                          SUCCESS also means it) or FAILURE */
    breaker_clock_fn *clock;           /* NULL = CLOCK_MONOTONIC (see below) */
    void *clock_ctx;
    uint64_t seed;              /* jitter seed, and the retry hints' and
                                   named callers' turns' (breaker_acquire_from);
                                   0 = drawn at create, and then
                                   mixed with the process id at each wait, so
                                   processes forked after create (a pre-fork
                                   server's workers) wait differently. Fix a
                                   seed only where waits must repeat:
                                   simulation, replay, tests. */
    breaker_event_fn *on_event; /* NULL = no callback */
    void *event_ctx;
    uint32_t checked_permits; /* 0 = off (default); 1: a copy of a closed-state
                                 permit completed after its original is
                                 detected (see breaker_complete), for the
                                 cost of the general paths; per handle */
};

/* A permit: the proof that a call was admitted, and what breaker_complete()
 * needs to settle it. Caller-owned plain value: the breaker keeps no pointer
 * to it, so it may be copied into request state, moved, or completed from
 * another thread. Settle each admitted permit exactly once; a permit may be
 * completed by one thread while another reads nothing else from it. Keep one
 * copy: by default two copies of a closed-state permit, both completed,
 * count twice (1 call, 2 failures), since the closed paths keep no record of
 * admissions; breaker_config.checked_permits detects it, at 3 to 5 times
 * the closed call's cost (docs/performance.md). A probe's copies are always
 * told apart. Its fields are private. */
struct breaker_permit {
    uint64_t opaque_[6];
};

/* A snapshot of one breaker's counters since create (breaker_reset() clears
 * the window, not the counters). Counters are read one by one without
 * stopping other threads, so under traffic a snapshot may be a few calls out
 * of step between fields; at quiescence it is exact and adds up:
 *   admitted == successes + failures + ignored + cancelled(as ignored) ...
 * precisely: admitted == successes + failures + ignored + stale + unsettled,
 * where a CANCELLED completion is counted in `cancelled` (even when stale)
 * and also in `failures` or `ignored` as cancelled_as says, and unsettled
 * permits are the ones not completed yet. Duplicate completions are counted
 * only in `duplicates`. `slow` counts every recorded call slower than
 * slow_call_ns, probes included, whether or not slow_call_rate is set. */
struct breaker_stats {
    enum breaker_state state;
    uint64_t generation;
    uint64_t state_since_ns;     /* breaker clock when the state began */
    uint64_t admitted;           /* permits granted (probes included) */
    uint64_t rejected_open;      /* refused in OPEN */
    uint64_t rejected_half_open; /* refused in HALF_OPEN (slots taken) */
    uint64_t rejected_forced;    /* refused in FORCED_OPEN */
    uint64_t rejected_ramp;      /* refused in CLOSED by a ramp after recovery */
    uint64_t successes;          /* completions recorded as success */
    uint64_t failures;           /* completions recorded as failure */
    uint64_t ignored;            /* IGNORED completions (cancelled_as IGNORED too) */
    uint64_t cancelled;          /* CANCELLED completions, however counted */
    uint64_t slow;               /* recorded calls slower than slow_call_ns */
    uint64_t stale;              /* completions of earlier-generation permits */
    uint64_t duplicates;         /* completions of already-settled permits */
    uint64_t probes_admitted;
    uint64_t probes_succeeded;
    uint64_t probes_failed; /* includes timed out */
    uint64_t probes_timed_out;
    uint64_t transitions;
    uint64_t time_in_state_ns[BREAKER_STATE_COUNT]; /* indexed by enum breaker_state, up to now */
    uint32_t failed_recoveries;                     /* current k of the backoff */
    uint32_t probes_in_flight;                      /* HALF_OPEN: probes not yet settled; else 0 */
    uint32_t probe_successes; /* HALF_OPEN: successful probes so far; else 0 */
    uint32_t consecutive_failures;
    uint64_t open_until_ns;   /* OPEN: when the next probe is eligible; else 0 */
    uint64_t forced_until_ns; /* FORCED_CLOSED with an expiry (BREAKER_CONTROL_FORCE_CLOSED's
                                 for_ns): when it ends; else 0 */
    uint64_t ramp_until_ns;   /* CLOSED and ramping: when the ramp ends; else 0 */
    double ramp_share;        /* CLOSED and ramping: the share of calls admitted
                                 now, in (0, 1); else 1 (0 when not admitting) */
    /* The window of the current closed period (in OPEN, HALF_OPEN and
     * FORCED_OPEN: of the one that ended, i.e. the evidence of the trip,
     * ageing with time). Window policies only: with CONSECUTIVE these are 0
     * and consecutive_failures holds the run. */
    uint64_t window_calls;
    uint64_t window_failures;
    uint64_t window_slow;
    double window_failure_rate;
    double window_slow_rate;
    /* Operator controls. Opens for a given time (breaker_open_for), by
     * reason; they are also in `transitions`. */
    uint64_t server_directed_opens; /* reason SERVER_DIRECTED */
    uint64_t operator_opens;        /* reason OPERATOR */
    /* Shadow mode (breaker_set_shadow): 1 while on. Calls it admitted where
     * the breaker would have refused them, by the refusal they were spared
     * (the rejected_* of an enforcing breaker; not in `admitted`), and how
     * those calls went (their completions change no window, count, state or
     * probe: the state machine runs as if they had been refused). */
    uint32_t shadow;
    uint64_t would_reject_open;      /* OPEN */
    uint64_t would_reject_half_open; /* HALF_OPEN, every probe slot taken */
    uint64_t would_reject_forced;    /* FORCED_OPEN */
    uint64_t would_reject_ramp;      /* CLOSED, ramping after a recovery */
    uint64_t shadow_successes;       /* of those, completed SUCCESS */
    uint64_t shadow_failures;        /* completed FAILURE (cancelled_as included) */
};

/* ---- Names -----------------------------------------------------------------*/

/* Longest valid breaker name, in bytes (not counting the NUL). */
#define BREAKER_NAME_MAX 128

/*! breaker_name_validate() :
 *  Check that `name` may name a breaker (in a registry, a store file, the
 *  fleet store). A valid name is 1..BREAKER_NAME_MAX bytes of ASCII letters,
 *  digits, '_', '-' and '.', starting with a letter, a digit or '_': safe as
 *  a Prometheus label value, a JSON string and a file name without any
 *  escaping ("payments.charge", "db-main_read"). Pure; thread-safe.
 *  @return BREAKER_OK, or BREAKER_EINVAL with the reason (which byte, which
 *  rule) in `msg` (NUL-terminated, truncated to msg_len; may be NULL when
 *  msg_len is 0). */
BREAKER_API int breaker_name_validate(const char *name, char *msg, size_t msg_len);

/* ---- Configuration ---------------------------------------------------------*/

/* Slow start after recovery (ramp_ns > 0). A dependency that just recovered
 * may be knocked down again by the full load arriving at once. When probes
 * close the breaker, CLOSED first ramps: the share of calls admitted grows
 * linearly from ramp_start to 1 over ramp_ns; the others are refused with
 * BREAKER_REJECTED_RAMP (counted in rejected_ramp, distinct from open
 * refusals). The share is exact per thread (each thread's calls carry a
 * credit: a call is admitted each time the credit crosses a whole number).
 * During the ramp the window trips on the ramp's share of min_calls (the
 * traffic is that much thinner), and a trip counts as one more failed
 * recovery (k + 1, a longer wait). Calls admitted during the ramp stay in the
 * same generation; breaker_reset() and breaker_force_closed() end a ramp. */

/*! breaker_config_init() :
 *  Fill `cfg` with the defaults documented on struct breaker_config:
 *  TIME_WINDOW over 60 s in 10 buckets, min_calls 20, failure_rate 0.5,
 *  slow calls off, open 30 s doubling up to 5 min plus up to 20% jitter, 1
 *  probe at a time, 3 successful probes to close, probe timeout 30 s, no
 *  ramp, min_failing_sources 0 (3 distinct callers behind the failures
 *  that name sources: see breaker_complete_from), cancellations ignored,
 *  no checked permits, the monotonic clock, a
 *  random seed, no callback. Why jitter by default: instances of a service
 *  that all saw one dependency fail open within moments of each other; with
 *  equal waits their first probes arrive together, a fleet-wide burst at the
 *  moment the dependency is least able to take it. 20% spreads them over a
 *  fifth of the wait (6 s of the default 30 s) while lengthening no wait by
 *  more than that. Set 0 where waits must be exact (tests, replays). */
BREAKER_API void breaker_config_init(breaker_config *cfg) BREAKER_NONNULL(1);

/*! breaker_config_validate() :
 *  Check `cfg` as breaker_create() would.
 *  @return BREAKER_OK, or BREAKER_EINVAL with a message naming the field and
 *  the allowed range written to `msg` (NUL-terminated, truncated to `msg_len`;
 *  `msg` may be NULL when msg_len is 0). */
BREAKER_API int breaker_config_validate(const breaker_config *cfg, char *msg, size_t msg_len)
    BREAKER_NONNULL(1);

/*! breaker_config_effective() :
 *  The configuration breaker_create() would run `cfg` with: every field
 *  that is 0 where 0 means "the default" (see struct breaker_config)
 *  replaced by that default; open_max_ns 0 becomes the larger of open_ns
 *  and 5 min; cancelled_as BREAKER_SUCCESS becomes BREAKER_IGNORED. seed 0
 *  stays 0 (it is drawn at create); callbacks, clock and every other field
 *  are copied. Validates nothing (breaker_config_validate() does). Two
 *  configurations with the same effective values make the same breaker.
 *  `out` may be `cfg`. Pure; thread-safe. */
BREAKER_API void breaker_config_effective(const breaker_config *cfg, breaker_config *out)
    BREAKER_NONNULL(1, 2);

/*! breaker_config_set() :
 *  Set one field from text, the way command lines and configuration files do.
 *  Keys are the field names of struct breaker_config (trip, failure_threshold,
 *  window_size, window, window_buckets, min_calls, failure_rate, slow_call,
 *  slow_call_rate, open, open_backoff, open_max, open_jitter,
 *  half_open_max_probes, half_open_successes, probe_timeout,
 *  min_failing_sources, ramp, ramp_start, cancelled_as, seed); durations accept the field name
 *  with or without "_ns" and values such as "250ms", "5s", "1m", "1500us", "20ns": under the
 *  plain name a bare number other than 0 is refused (BREAKER_EINVAL, the message naming the
 *  units), under the "_ns" name it is nanoseconds; rates accept "0.5" or "50%"; trip accepts
 *  "consecutive", "count_window", "time_window"; cancelled_as "ignored" or "failure".
 *  Values of any length are accepted (surrounding blanks are ignored).
 *  @return BREAKER_OK; BREAKER_NOT_FOUND for an unknown key; BREAKER_EINVAL for
 *  a bad value; BREAKER_ENOMEM. On error `msg` (may be NULL if msg_len is 0)
 *  says which key, what was wrong and the accepted range, quoting at most 64
 *  bytes of the input ("..." marks the rest) with every byte that is not
 *  printable ASCII written as \xNN; `cfg` is unchanged. */
BREAKER_API BREAKER_NODISCARD int breaker_config_set(breaker_config *cfg, const char *key,
                                                     const char *value, char *msg, size_t msg_len)
    BREAKER_NONNULL(1, 2, 3);

/*! breaker_parse_duration() :
 *  Parse a duration written for people ("250ms", "1.5s", "2m", "1500us",
 *  "20ns", "1h", "1d"; units ns, us, ms, s, m, h, d) into nanoseconds, exactly:
 *  "0.1s" is 100000000. Compound forms add their terms: "1m30s", "1h2m3.5s"
 *  (units from large to small, each at most once, no blanks). A bare number
 *  stands alone and is in units of `bare_unit_ns` (1 for nanoseconds,
 *  1000000000 for seconds; 0 requires a unit).
 *  @return BREAKER_OK with `*out_ns` set; BREAKER_EINVAL if `text` is not
 *  such a duration, is finer than 1 ns, or exceeds UINT64_MAX ns (`*out_ns`
 *  is then unchanged). Thread-safe, allocates nothing. */
BREAKER_API BREAKER_NODISCARD int breaker_parse_duration(const char *text, uint64_t bare_unit_ns,
                                                         uint64_t *out_ns);

/* ---- Lifecycle -------------------------------------------------------------*/

/*! breaker_create() :
 *  Create a breaker from `cfg` (NULL = all defaults). The configuration is
 *  copied; `cfg` may be freed afterwards. All memory the breaker will ever
 *  use is allocated here. Waits and probe deadlines are kept in microseconds
 *  since creation (rounded up, never early) and stay exact for 8.9 years of
 *  the breaker's clock after it; past that they saturate.
 *  @return BREAKER_OK and `*out` set; BREAKER_EINVAL if the configuration is
 *  invalid (breaker_config_validate() says why) or `out` is NULL;
 *  BREAKER_ENOMEM. On error `*out` is left NULL. */
BREAKER_API BREAKER_NODISCARD int breaker_create(const breaker_config *cfg, breaker **out);

/*! breaker_destroy() :
 *  Release a breaker. NULL is a no-op. No other call on `b` may run
 *  concurrently or follow; outstanding permits are simply forgotten. */
BREAKER_API void breaker_destroy(breaker *b);

/* ---- The call path ---------------------------------------------------------*/

/*! breaker_acquire() :
 *  Ask to make one call. Always writes `permit`.
 *  @return BREAKER_OK: admitted; make the call, then breaker_complete() the
 *          permit exactly once, whatever happens (use BREAKER_IGNORED or
 *          BREAKER_CANCELLED if the call was not made after all).
 *          BREAKER_REJECTED_OPEN: the breaker is OPEN (or FORCED_OPEN); do not
 *          call the dependency; breaker_retry_after_ns() says for how long.
 *          BREAKER_REJECTED_HALF_OPEN: probes are under way; do not call.
 *  A rejected permit must not be completed (doing so returns BREAKER_EINVAL).
 *  In HALF_OPEN the call is a probe. Lock-free; thread-safe.
 *  The breaker's backend decides how far its limits reach, on every path:
 *  a breaker attached through the fleet store (breaker/redis.h) admits a
 *  probe only with a fleet lease (at most the fleet's half_open_max_probes
 *  across hosts), asked within the fleet's probe budget; that request is
 *  the only work beyond the local breaker, and only a probe makes it. A
 *  closed call and an open refusal are the same instructions whatever the
 *  backend. */
BREAKER_API BREAKER_NODISCARD int breaker_acquire(breaker *b, breaker_permit *permit)
    BREAKER_NONNULL(1, 2);

/*! breaker_acquire_from() :
 *  breaker_acquire() for the caller `source` (the key breaker_complete_from()
 *  takes; 0 = nobody: breaker_acquire() itself). A closed call is admitted
 *  exactly as by breaker_acquire() (the same short path: the source is not
 *  kept). A probe keeps its caller: a probe that times out is that caller's
 *  failure, and so is one completed without a source. Where failing
 *  sources count (min_failing_sources 0 or 2..64): a caller is admitted as
 *  a probe (to begin the half-open, or in it) only from its own point
 *  after the open wait, drawn once per generation and caller, uniform over
 *  a quarter of the wait it follows before jitter (the policy's, or the
 *  one chosen: breaker_open_for(), a Retry-After, breaker_set_open_wait()),
 *  which breaker_retry_after_hint_from() tells it (rounded up to the
 *  second): before that it is refused, although
 *  breaker_retry_after_ns() may say 0; and a caller whose probe failed in
 *  the half-open before this one is not admitted as a probe for this one's
 *  first probe_timeout_ns (from the end of the open wait). Either refusal
 *  is BREAKER_REJECTED_OPEN while the breaker waits for another caller to
 *  begin the half-open, BREAKER_REJECTED_HALF_OPEN after, while the other
 *  callers' probes decide. See breaker_complete_from() for the rules and
 *  what they protect against.
 *  Same returns as breaker_acquire(); lock-free; thread-safe. */
BREAKER_API BREAKER_NODISCARD int breaker_acquire_from(breaker *b, breaker_permit *permit,
                                                       uint64_t source) BREAKER_NONNULL(1, 2);

/*! breaker_complete() :
 *  Report the outcome of an admitted call. May run on any thread.
 *  @return BREAKER_OK: recorded (this may have changed the state);
 *          BREAKER_ALREADY_SETTLED: this permit was completed before; nothing
 *          counted again (this answer wins over STALE);
 *          BREAKER_STALE: the permit was admitted in an earlier generation
 *          (the state moved on meanwhile); nothing recorded except the stale
 *          counter; BREAKER_EINVAL: not a permit admitted by this breaker, or
 *          `outcome` out of range (the permit is then left unsettled).
 *  Completing the same permit object twice, even from two threads at once,
 *  is detected. Completing two *copies* of one permit is a caller error: for
 *  a probe the second copy always answers ALREADY_SETTLED while the
 *  half-open lasts (each probe admission holds a claim no other admission
 *  shares, so a copy can neither free a newer probe's slot nor count twice
 *  towards recovery), and STALE after it. For a closed-state permit, by
 *  default it is not detected: the second copy counts again (the short
 *  paths keep no record of admissions; that is what keeps them a few
 *  nanoseconds). With breaker_config.checked_permits set, every closed-state
 *  admission also takes a number on its thread's stripe and marks a word of
 *  the handle's record, and a copy's completion answers ALREADY_SETTLED
 *  (counted in `duplicates`, nothing else), even racing the original on
 *  another thread, as long as fewer than 1024 later admissions went through
 *  the same stripe of the handle before the copy completed; past that the
 *  record has moved on and the copy counts, as by default (a late
 *  completion is never refused: a slow call's outcome is not lost). Checked
 *  permits take the general paths (no short acquire or success; see
 *  docs/performance.md for the cost) and are per handle: a permit must be
 *  completed through the handle that admitted it.
 *  A probe's deadline is probe_timeout_ns after its admission, rounded up to
 *  the microsecond; a probe admitted into a slot in the same microsecond as
 *  that slot's previous probe is due 1 us after it instead (never earlier).
 *  A probe (HALF_OPEN permit): a failure reopens at once with a longer wait,
 *  whoever's it is (see breaker_complete_from for what its caller then
 *  waits out); a success counts towards half_open_successes; with slow_call_rate set, a
 *  slow successful probe fails it (reason PROBE_SLOW). Recovery uses all its
 *  evidence: after the half_open_successes-th success no more probes are
 *  admitted (REJECTED_HALF_OPEN), and the breaker closes when the last probe
 *  in flight settles without failing (an IGNORED answer frees its slot and
 *  counts for neither side); a failure or timeout of any of them reopens it,
 *  so no probe's failure is lost as STALE to an early close. A probe completed
 *  after its deadline has already failed (PROBE_TIMEOUT) and is STALE. */
BREAKER_API int breaker_complete(breaker *b, breaker_permit *permit, enum breaker_outcome outcome)
    BREAKER_NONNULL(1, 2);

/*! breaker_complete_from() :
 *  breaker_complete() with the source of the call: an opaque, non-zero 64-bit
 *  key the caller chooses for whoever the request came from (a tenant, a
 *  client, a route: a hash of it). With min_failing_sources = N (2..64), a
 *  trip also needs its failures to come from at least N distinct sources:
 *  their keys must set N distinct bits of a 64-bit map over the current and
 *  previous window (the consecutive policy: over the current run). So
 *  failures from fewer than N sources never trip, exactly, for every N from
 *  2 to 64; N sources whose keys collide on a bit do not trip on their own,
 *  more do (M sources set about 64 (1 - e^(-M/64)) bits: some 1.4 N sources
 *  for N = 32, and every bit, about 300 sources, for N = 64).
 *  The default, min_failing_sources 0, protects wherever sources are given:
 *  N = 3 for a window whose failures name at least one source, and no
 *  condition for a window none of whose failures named one (a breaker never
 *  given a source trips as it always did). Three, because one caller, or
 *  two, whose own requests fail is the case to stop, and three failing
 *  callers rarely share a key's bit (5% of triples do, and a fourth source
 *  then trips). A breaker that only ever has one or two callers naming
 *  sources never trips on their failures: set 1 (off) or 2 there.
 *  min_failing_sources 1 turns all of this off.
 *  Recovery is decided by all its evidence: every failed (or slow, or
 *  timed out) probe reopens, whoever's it is, so a dependency that still
 *  fails part of every caller's calls closes no more often than if no
 *  caller were named. What a caller cannot do is own recovery, by sending a
 *  request that fails (or hangs) the moment each probe is due, or by
 *  calling so often that it takes whichever probe is free: where sources
 *  count, a caller named at admission (breaker_acquire_from()) probes only
 *  from its own point after the wait (a quarter of the wait at most after
 *  it), so the instant the wait ends admits no named caller and each gets
 *  a probe about as often as any other, however often it calls. And each
 *  half-open notes the callers of its failed probes
 *  (this function's source, else the caller the probe was admitted for
 *  with breaker_acquire_from(), which is also a timeout's), and the next
 *  half-open, for its first probe_timeout_ns (counted from the end of the
 *  open wait), admits none of them as a probe (breaker_acquire_from()
 *  refuses them) while the other callers' probes decide. Past that they
 *  may probe again, so a breaker with no other caller still recovers. A
 *  caller whose failing probe is admitted costs that one half-open and its
 *  longer wait, not the recovery. A hanging one costs less: the first probe
 *  timeout of a trip (from the trip until the breaker closes) whose probes
 *  all named their caller reopens at the backoff level it had (the next wait
 *  is no longer than the last); every later timeout, and every failure,
 *  raises it, so a dependency that hangs for everyone backs off from its
 *  second timeout on. Probes admitted with
 *  breaker_acquire() name nobody, are admitted at the instant the wait
 *  ends and are never refused this way. A caller is a bit of a
 *  48-bit map (splitmix64 of the key, mod 48): a caller whose bit is a
 *  refused one's is refused too, for that stretch.
 *  stats.failing_sources estimates the sources (linear counting).
 *  What it protects
 *  against: one caller (or a few) whose own requests make a healthy
 *  dependency fail, opening a breaker every caller shares, or holding it
 *  open. What it does not:
 *  a fault that hits only a few callers' requests (they still fail, the
 *  breaker stays closed: give those callers their own breakers), a caller
 *  that forges many keys (each new key's first failing probe reopens once),
 *  a request that makes a probe admitted with breaker_acquire() hang (that
 *  timeout names nobody), and failures completed without a source (0, or
 *  plain breaker_complete(): a probe's then names the caller it was
 *  admitted for, a closed call's nobody), which set no bit. The source
 *  costs nothing on
 *  a success; on a failure, one atomic OR. Same return values as
 *  breaker_complete(). */
BREAKER_API int breaker_complete_from(breaker *b, breaker_permit *permit,
                                      enum breaker_outcome outcome, uint64_t source)
    BREAKER_NONNULL(1, 2);

/*! breaker_permit_is_probe() :
 *  @return 1 if `permit` was admitted as a half-open probe (its outcome
 *  decides recovery: an operation may, say, use a shorter timeout), else 0
 *  (closed-state and refused permits). Reads only the permit; thread-safe. */
BREAKER_API int breaker_permit_is_probe(const breaker_permit *permit) BREAKER_NONNULL(1);

/*! breaker_get_state() :
 *  @return the current state. Also applies due time-based transitions of
 *  hung probes: a probe past its deadline reopens the breaker as of that
 *  deadline, however much later it is noticed (the event's time_ns is the
 *  deadline and the next wait runs from it; breaker_stats_get() applies it
 *  too). An OPEN breaker whose wait has ended reports OPEN until a call
 *  arrives to probe. */
BREAKER_API enum breaker_state breaker_get_state(breaker *b) BREAKER_NONNULL(1);

/*! breaker_retry_after_ns() :
 *  @return 0 when breaker_acquire() would admit a call now (both decide by the
 *  same clock readings; a caller named with breaker_acquire_from() may still
 *  wait for its own point after the wait, which
 *  breaker_retry_after_hint_from() tells it: an OPEN breaker's wait is over once it has elapsed by
 *  the breaker's clock, CLOCK_MONOTONIC by default, never earlier, and 0 is
 *  never answered while acquire would still refuse; another caller may of
 *  course take the probe first); in OPEN, the time left before
 *  a probe is eligible; in HALF_OPEN with every slot taken (or enough
 *  successes in), the time until the earliest probe deadline (a hint: the
 *  state may change sooner); in CLOSED during a ramp, 0 if the calling
 *  thread's next call is in the admitted share, else the time to the ramp's
 *  end (a bound: a ramp admits by share of calls, so the next request may
 *  well get in sooner); in FORCED_OPEN, UINT64_MAX. */
BREAKER_API uint64_t breaker_retry_after_ns(breaker *b) BREAKER_NONNULL(1);

/*! breaker_retry_after_hint_s() :
 *  A retry hint to give clients (an HTTP Retry-After, a gRPC retry delay):
 *  whole seconds, never less than breaker_retry_after_ns() rounded up, and
 *  not the instant a probe becomes eligible. @return 0 when
 *  breaker_retry_after_ns() is 0, UINT64_MAX in FORCED_OPEN, else the
 *  seconds from now to a point drawn once per generation in [T, T + s],
 *  rounded up: T the instant breaker_retry_after_ns() names, s a quarter of
 *  the phase's own length (OPEN: its wait before jitter, as chosen;
 *  HALF_OPEN: probe_timeout_ns; a ramp: ramp_ns), at least 1 s. The draw
 *  is keyed by the breaker's seed (drawn at random at create unless the
 *  configuration fixes one: then the points repeat run after run, as the
 *  waits do), so every caller
 *  of one generation (every process sharing a store file's breaker) is told
 *  the same point, and asking again, however often, reveals no more than
 *  that point: T stays hidden somewhere in the s before it. Why it matters:
 *  the exact value tells anyone who can provoke a refusal when to send a
 *  request to be the probe (see breaker_complete_from for what a failing
 *  probe then can and cannot do). Every client told this one point comes
 *  back at it: name the caller (breaker_retry_after_hint_from()) to spread
 *  them. Publish a hint, never the exact breaker_retry_after_ns()
 *  (docs/operating.md, section 1). Lock-free, thread-safe, allocates
 *  nothing; costs about one breaker_retry_after_ns(). */
BREAKER_API uint64_t breaker_retry_after_hint_s(breaker *b) BREAKER_NONNULL(1);

/*! breaker_retry_after_hint_from() :
 *  breaker_retry_after_hint_s() for the caller `source` (the key of
 *  breaker_complete_from(); 0: breaker_retry_after_hint_s() itself): each
 *  caller gets its own point in [T, T + s], drawn once per generation from
 *  the caller's key, so refused callers come back spread over the window
 *  instead of at one instant, and none before T. In OPEN, where failing
 *  sources count, the point is also the caller's turn: breaker_acquire_from()
 *  admits that caller as a probe from it on, never before (s is then a
 *  quarter of the wait before jitter, and the hint at least 1 s); past T,
 *  while its turn has not come, the hint is never before it (a busy
 *  half-open's hint is the later of the two). Spread: the point is
 *  uniform over the s seconds, and a client returns within the second
 *  after its point, so each second of [T, T + s + 1) gets about 1/(s + 1)
 *  of the callers told during one wait; the documented bound for 1,000
 *  distinct callers is 1.5/s of them in any one second (a 30 s wait: s is
 *  7.5 s, 200 of the 1,000; test_recovery measures it). A caller asking
 *  again is told its same point; a caller that sends many keys learns as
 *  many points, and so where T is more closely. Lock-free, thread-safe,
 *  allocates nothing. */
BREAKER_API uint64_t breaker_retry_after_hint_from(breaker *b, uint64_t source) BREAKER_NONNULL(1);

/*! breaker_generation() : @return the current generation (starts at 1,
 *  +1 on every transition). */
BREAKER_API uint64_t breaker_generation(breaker *b) BREAKER_NONNULL(1);

/* ---- Steering a breaker: breaker_control_apply() ------------------------------
 * An operator (or a dependency that said how long to stay away) steers a
 * breaker with one call, breaker_control_apply(), whatever the control.
 * Every control that changes the state is one transition: a new generation
 * (outstanding permits become stale), an event, counted in stats. A control
 * that finds the breaker already as it asks (a forced state given again;
 * a server-directed wait shorter than one under way) does nothing and
 * returns BREAKER_OK. Controls do not first apply a due probe timeout: the
 * operator's intent wins over the clock. A store file's breaker changes
 * for every process of the host at once. */

/* What a control does. */
enum breaker_control_action {
    /* Refuse every call until RESET, whatever the clock says. */
    BREAKER_CONTROL_FORCE_OPEN,
    /* Admit every call and record outcomes, but never trip, until RESET;
     * with for_ns (1 ns .. 365 days) only that long: then back to CLOSED
     * with an empty window, as a reset (reason BREAKER_REASON_FORCE_EXPIRED,
     * dated at the expiry, applied by the first call, breaker_get_state()
     * or breaker_stats_get() after it). A timed forced close is always a
     * transition (one already under way gets the new expiry). */
    BREAKER_CONTROL_FORCE_CLOSED,
    /* Back to CLOSED with an empty window and failed recoveries 0. */
    BREAKER_CONTROL_RESET,
    /* Open for for_ns from now, then probe as after any wait (the first call
     * after it is a probe, bounded as always), keeping the failed
     * recoveries k (the next failed probe backs off from where the breaker
     * was); event open_ns is the wait, counted in
     * stats.server_directed_opens or operator_opens. `reason`:
     * BREAKER_REASON_SERVER_DIRECTED, a dependency's own answer (an HTTP 429
     * or 503 with Retry-After, a ban-until; breaker/curl.h does it with
     * retry_after_opens): the wait is capped at open_max_ns, so that a
     * broken or hostile answer cannot park the breaker; an OPEN breaker
     * whose wait already ends at or after now + for_ns, and FORCED_OPEN and
     * FORCED_CLOSED (an operator's orders), are left as they are.
     * BREAKER_REASON_OPERATOR: from any state, forced ones included, the
     * wait exactly (at most 365 days), replacing any wait under way. A wait
     * of 0 does nothing. */
    BREAKER_CONTROL_OPEN_FOR
};

/* One control and its text. Fill with breaker_control_init(). */
typedef struct breaker_control breaker_control;
struct breaker_control {
    enum breaker_control_action action;
    uint64_t for_ns;            /* OPEN_FOR: the wait; FORCE_CLOSED: 0 (until
                                   reset) or its expiry (1 ns .. 365 days);
                                   FORCE_OPEN, RESET: 0 */
    enum breaker_reason reason; /* OPEN_FOR: BREAKER_REASON_OPERATOR (the
                                   init's) or _SERVER_DIRECTED; else unread */
    const char *who;            /* NULL or "": none; at most BREAKER_WHO_MAX
                                   bytes of printable text (see breaker_event) */
    const char *why;            /* the same, at most BREAKER_WHY_MAX bytes */
};

/*! breaker_control_init() : clear `c` (every byte) and set action
 *  FORCE_OPEN, reason BREAKER_REASON_OPERATOR, no time and no text. */
BREAKER_API void breaker_control_init(breaker_control *c) BREAKER_NONNULL(1);

/*! breaker_control_apply() :
 *  Do `c->action` to `b` (enum breaker_control_action), with `who` and
 *  `why` copied into the event of the transition this call makes, and so
 *  into the registry's history of it. The text goes with this call's own
 *  transition only: a transition another thread makes meanwhile (a trip, a
 *  recovery, another control) carries its own text or none, and a control
 *  that makes no transition records nothing. A store file's breaker
 *  reports the event, text included, in the process that made it only; the
 *  file keeps the last control of each breaker given this way (action,
 *  who, why, when, its end, the generation it started; not a
 *  server-directed wait), for any process to read with
 *  breaker_store_last_control() (breaker/store.h).
 *  @return BREAKER_OK; BREAKER_EINVAL with `msg` naming the field (an
 *  unknown action or reason, for_ns out of its range or given to a control
 *  that takes none, who or why too long or with a control character), and
 *  nothing done. `msg` may be NULL when msg_len is 0. Lock-free, but on a
 *  store file's handle, whose control that made a transition then takes
 *  the store's lock and the file's for the record (an operator's path,
 *  never the call path's); thread-safe; the text is read during the call
 *  only. */
BREAKER_API int breaker_control_apply(breaker *b, const breaker_control *c, char *msg,
                                      size_t msg_len) BREAKER_NONNULL(1, 2);

/* ---- Convenience forms of breaker_control_apply() ----------------------------
 * Each is breaker_control_apply() with one action and no text, and returns
 * what it returns; unlike it, they leave no record in a store file. */

/*! breaker_force_open() : action FORCE_OPEN. @return BREAKER_OK. */
BREAKER_API int breaker_force_open(breaker *b) BREAKER_NONNULL(1);

/*! breaker_force_closed() : action FORCE_CLOSED, for_ns 0 (until reset).
 *  @return BREAKER_OK. */
BREAKER_API int breaker_force_closed(breaker *b) BREAKER_NONNULL(1);

/*! breaker_force_closed_for() : action FORCE_CLOSED with for_ns `wait_ns`.
 *  @return BREAKER_OK; BREAKER_EINVAL for a wait of 0 (that is
 *  breaker_force_closed()) or over 365 days. */
BREAKER_API int breaker_force_closed_for(breaker *b, uint64_t wait_ns) BREAKER_NONNULL(1);

/*! breaker_reset() : action RESET. @return BREAKER_OK. */
BREAKER_API int breaker_reset(breaker *b) BREAKER_NONNULL(1);

/*! breaker_open_for() : action OPEN_FOR with for_ns `wait_ns` and `reason`
 *  (BREAKER_REASON_SERVER_DIRECTED or _OPERATOR). @return BREAKER_OK;
 *  BREAKER_EINVAL for another reason or an operator's wait over 365 days. */
BREAKER_API int breaker_open_for(breaker *b, uint64_t wait_ns, enum breaker_reason reason)
    BREAKER_NONNULL(1);

/* ---- Live reconfiguration ----------------------------------------------------
 * A running breaker's limits can change without a restart and without
 * losing its state, its counters or the calls in flight. */

/*! breaker_reconfigure() :
 *  Change `b`'s limits to those of `cfg` (a full configuration: start from
 *  breaker_get_config(), change what you need; its callbacks, contexts and
 *  clock are ignored, the handle keeps its own; seed 0 keeps the breaker's).
 *  What may change: failure_threshold, min_calls, failure_rate,
 *  slow_call_rate, slow_call_ns (while it stays non-zero), open_ns,
 *  open_backoff, open_max_ns, open_jitter, half_open_successes,
 *  probe_timeout_ns, ramp_ns (from 0, or between non-zero values),
 *  ramp_start, min_failing_sources, cancelled_as, seed. What may not, since
 *  it shapes the breaker's shared block or its call path: trip,
 *  window_size (count window), window_ns and window_buckets (time window),
 *  half_open_max_probes, slow_call_ns to or from 0, ramp_ns to 0: refused
 *  with BREAKER_EINVAL and a message naming the field, both values and why
 *  (create the breaker again, or use a new name, for those).
 *  Applied at once and whole: one new version of the stored limits (the
 *  configuration generation, +1), every caller's next call reads it (a
 *  store file's: every process of the host, the same instant); each
 *  transition, and the wait it starts, is decided on one version, never two
 *  mixed; the state, generation, window and counters stay (a window that
 *  now meets the new trip condition trips on its next recorded failure).
 *  Reported once, to the callbacks of the handle that made the change, as
 *  an event with reason BREAKER_REASON_RECONFIGURED and the old and new
 *  configurations (breaker_event). A change to the same limits does
 *  nothing (no event). `expect_generation`: 0, or the configuration
 *  generation the caller read: if another change came since, nothing is
 *  done (an operator's change never silently overwrites another's).
 *  @return BREAKER_OK; BREAKER_EINVAL (invalid, or not changeable live: `msg`
 *  says which); BREAKER_STALE (expect_generation is not the current one);
 *  BREAKER_EBUSY (a store file's lock stayed held by another process for
 *  the store's lock_wait_ns: breaker/store.h; `msg` names it), BREAKER_EIO
 *  (that lock could not be taken otherwise). Thread-safe; takes
 *  no lock on a heap breaker (a store file's takes the file lock, never the
 *  call path's); must not be called from an event callback of `b`. */
BREAKER_API BREAKER_NODISCARD int breaker_reconfigure(breaker *b, const breaker_config *cfg,
                                                      uint64_t expect_generation, char *msg,
                                                      size_t msg_len) BREAKER_NONNULL(1, 2);

/*! breaker_config_generation() : @return the configuration generation of
 *  `b`'s limits: 1 as created, +1 per change (breaker_reconfigure()). */
BREAKER_API uint64_t breaker_config_generation(breaker *b) BREAKER_NONNULL(1);

/* ---- Shadow mode -------------------------------------------------------------
 * A breaker in shadow mode runs its whole state machine on the real traffic
 * (it trips, waits, probes, recovers, with events and counts as usual) but
 * refuses nothing: where it would refuse a call (OPEN, HALF_OPEN with every
 * slot taken, FORCED_OPEN, a ramp's share), breaker_acquire() admits it
 * anyway with BREAKER_OK and counts a would-reject (stats.would_reject_*);
 * such a call's completion (complete it as usual) is counted in
 * shadow_successes / shadow_failures and changes nothing else, so the
 * machine behaves exactly as if the call had been refused. Its transitions
 * are reported with event.shadow = 1: would-open, would-close. The way to
 * see what a configuration would do before enforcing it; turn it off and the
 * breaker enforces from its current state. With shadow mode off, no call
 * path runs an instruction more than without it. */

/*! breaker_set_shadow() :
 *  Turn shadow mode on (`on` nonzero) or off, at once for every caller (and
 *  every process of a store file's breaker). Not a transition: the state and
 *  generation stay; permits already given keep their meaning. Lock-free;
 *  thread-safe. @return BREAKER_OK. */
BREAKER_API int breaker_set_shadow(breaker *b, int on) BREAKER_NONNULL(1);

/*! breaker_shadow() : @return 1 when `b` is in shadow mode, else 0. */
BREAKER_API int breaker_shadow(breaker *b) BREAKER_NONNULL(1);

/* What would have refused a call that shadow mode admitted: the four
 * refusals of stats.would_reject_* (and of stats.rejected_* when enforcing),
 * plus NONE. Not a status: breaker_acquire() answers BREAKER_REJECTED_OPEN
 * for both OPEN and FORCED_OPEN, and a shadow log should say which.
 * Append-only. */
enum breaker_refusal {
    BREAKER_REFUSAL_NONE,      /* admitted for real (or not a shadow permit) */
    BREAKER_REFUSAL_OPEN,      /* OPEN, waiting: would_reject_open */
    BREAKER_REFUSAL_HALF_OPEN, /* HALF_OPEN, every probe slot taken (or enough
                                  successes in): would_reject_half_open */
    BREAKER_REFUSAL_FORCED,    /* FORCED_OPEN: would_reject_forced */
    BREAKER_REFUSAL_RAMP       /* CLOSED, ramping, outside the admitted share:
                                  would_reject_ramp */
};
/* The number of refusal values, NONE included. */
#define BREAKER_REFUSAL_COUNT (BREAKER_REFUSAL_RAMP + 1)

/*! breaker_permit_would_reject() :
 *  For a permit breaker_acquire() granted only because the breaker is in
 *  shadow mode, the refusal it was spared: what a service logs beside
 *  each call's outcome to see, call by call, what an enforcing breaker
 *  would have refused (`breaker replay` compares such a log, with
 *  breaker_refusal_name() in a would_reject column, with any enforcing
 *  configuration: docs/cli.md, "Comparing with a shadow log";
 *  examples/shadow_log.c writes one). Reads only the permit (one relaxed
 *  load: no lock, no clock, no system call), so it may be called from any
 *  thread the permit reached, before or after its completion.
 *  @return BREAKER_REFUSAL_OPEN, _HALF_OPEN, _FORCED or _RAMP for a
 *  shadow permit (counted in the matching stats.would_reject_*);
 *  BREAKER_REFUSAL_NONE (0) for every other permit: admitted for real (a
 *  closed call, a probe, also while in shadow mode), refused, or given with
 *  shadow mode off. Thread-safe. */
BREAKER_API enum breaker_refusal breaker_permit_would_reject(const breaker_permit *permit)
    BREAKER_NONNULL(1);

/*! breaker_refusal_name() :
 *  @return a static lower-case name: "none", "open", "half_open",
 *  "forced_open", "ramp" (the reason label of
 *  breaker_would_reject_calls_total), or "unknown" for a value outside the
 *  enumeration. */
BREAKER_API const char *breaker_refusal_name(enum breaker_refusal refusal);

/* ---- Introspection ---------------------------------------------------------*/

/* Call durations of a timed breaker (slow_call_ns > 0: the only breakers that
 * read the clock at admission), by outcome, in fixed buckets whose upper
 * bounds are 1, 2.5, 5, 10, 25, 50, 100, 250, 500 ms, 1, 2.5, 5, 10 s and
 * +Inf (upper_ns[13] = UINT64_MAX). Counts are per bucket, not cumulative.
 * A duration is recorded for every completion of a timed call whose outcome
 * (after cancelled_as) is SUCCESS or FAILURE, probes and stale completions
 * included (the call happened); duplicates are not. */
#define BREAKER_LATENCY_BUCKETS 14
typedef struct breaker_latency breaker_latency;
struct breaker_latency {
    uint64_t upper_ns[BREAKER_LATENCY_BUCKETS];
    uint64_t success[BREAKER_LATENCY_BUCKETS];
    uint64_t failure[BREAKER_LATENCY_BUCKETS];
    uint64_t success_sum_ns; /* total duration of the successes */
    uint64_t failure_sum_ns;
};

/* Probe durations, for every breaker (a probe is always timed, with or
 * without slow_call_ns): admission to completion by the breaker's clock, in
 * the buckets of struct breaker_latency, by result:
 * - SUCCEEDED, FAILED, IGNORED: the outcome the caller reported (after
 *   cancelled_as), for a completion in the probe's half-open; a failed probe
 *   that did not reopen (breaker_complete_from) counts as FAILED;
 * - STALE: completed after its half-open ended (a probe past its timeout,
 *   or one still out when another's failure reopened the breaker).
 * Duplicates are not counted. Counts per bucket, not cumulative. */
enum breaker_probe_result {
    BREAKER_PROBE_SUCCEEDED,
    BREAKER_PROBE_FAILED,
    BREAKER_PROBE_IGNORED,
    BREAKER_PROBE_STALE
};
#define BREAKER_PROBE_RESULT_COUNT 4
typedef struct breaker_probe_latency breaker_probe_latency;
struct breaker_probe_latency {
    uint64_t upper_ns[BREAKER_LATENCY_BUCKETS];
    uint64_t count[BREAKER_PROBE_RESULT_COUNT][BREAKER_LATENCY_BUCKETS];
    uint64_t sum_ns[BREAKER_PROBE_RESULT_COUNT]; /* total duration per result */
};

/*! breaker_probe_result_name() :
 *  @return "success", "failure", "ignored", "stale" (a metric label, the
 *  words of breaker_probes_total's), or "unknown". Static. */
BREAKER_API const char *breaker_probe_result_name(enum breaker_probe_result result);

/*! breaker_probe_latency_get() :
 *  Fill `out` with the probe-duration histogram (see struct
 *  breaker_probe_latency). Lock-free; for exporters. @return BREAKER_OK. */
BREAKER_API int breaker_probe_latency_get(breaker *b, breaker_probe_latency *out)
    BREAKER_NONNULL(1, 2);

/*! breaker_latency_get() :
 *  Fill `out` with the call-duration histogram (see struct breaker_latency).
 *  Lock-free, reads every stripe; for exporters. @return BREAKER_OK;
 *  BREAKER_NOT_FOUND when the breaker does not time its calls (slow_call_ns
 *  0), with every count and sum zeroed (upper_ns is filled either way). */
BREAKER_API int breaker_latency_get(breaker *b, breaker_latency *out) BREAKER_NONNULL(1, 2);

/*! breaker_stats_get() :
 *  Fill `out` with a snapshot (see struct breaker_stats). Lock-free; reads
 *  every counter stripe, so it costs far more than a call: meant for
 *  exporters, not for the request path. @return BREAKER_OK. */
BREAKER_API int breaker_stats_get(breaker *b, breaker_stats *out) BREAKER_NONNULL(1, 2);

/*! breaker_get_config() : copy the breaker's effective configuration (defaults
 *  applied; its limits as they are now, after any breaker_reconfigure(), by
 *  whichever process) into `out`: the callbacks and contexts are the ones the creator
 *  passed (for a registry's breaker, the registry configuration's own
 *  on_event, never the registry's internal hook), so a breaker created from
 *  the copy is an independent breaker with the same limits. */
BREAKER_API void breaker_get_config(breaker *b, breaker_config *out) BREAKER_NONNULL(1, 2);

/*! breaker_now_ns() : @return the breaker's clock now (its injected clock, or
 *  CLOCK_MONOTONIC). */
BREAKER_API uint64_t breaker_now_ns(breaker *b) BREAKER_NONNULL(1);

/*! breaker_shared_size() : @return the size in bytes of the block that holds
 *  all of this breaker's shared state (counters, window, probe slots). */
BREAKER_API size_t breaker_shared_size(breaker *b) BREAKER_NONNULL(1);

/* ---- Classification helpers -----------------------------------------------
 * The common call boundaries, so every caller counts the same things. Only
 * an answer that shows the dependency working is a SUCCESS, and only one
 * that shows it at fault is a FAILURE; an answer that the request itself
 * decided (its path, its body, its credentials, its rate) is IGNORED, so
 * that no caller can hold a breaker closed, or trip one every caller shares,
 * by what it sends. docs/classification.md gives the reasons in full.
 *
 * HTTP status (breaker_classify_http, and breaker_classify_http_with with
 * the default policy):
 *   2xx -> SUCCESS
 *   1xx, 3xx -> IGNORED        (not a final answer, or one a front end or
 *                               cache can give without the dependency: a
 *                               redirect to a maintenance page is no sign
 *                               of health)
 *   400, 404, 409, 422 and every other 4xx not listed below -> IGNORED
 *                              (the request was refused for what it is;
 *                               says nothing either way)
 *   401, 403, 407 -> IGNORED   (policy auth_failures: the caller's
 *                               credentials are wrong; FAILURE on request)
 *   408 Request Timeout -> FAILURE (the request did not reach the
 *                               dependency in time, as with ETIMEDOUT)
 *   429 Too Many Requests -> IGNORED (policy too_many_requests: a limit on
 *                               this client, not ill health; FAILURE on
 *                               request)
 *   501 Not Implemented, 505 HTTP Version Not Supported -> IGNORED
 *                              (a permanent answer to this request)
 *   503 with Retry-After -> FAILURE (policy unavailable_with_retry_after;
 *                               IGNORED on request)
 *   500, 502, 503, 504, 506..599 -> FAILURE (the server is unwell)
 *   anything else (< 100, > 599) -> FAILURE (a broken answer)
 *
 * errno (breaker_classify_errno), for the FINAL errno of a call, the one
 * it gave up with (a blocking call, one with a socket timeout, or a
 * non-blocking call the caller has stopped waiting for), never an
 * intermediate EAGAIN of a non-blocking socket that the caller will poll:
 *   0 -> SUCCESS
 *   ECONNREFUSED, ECONNRESET, ECONNABORTED, ETIMEDOUT, EHOSTUNREACH,
 *   ENETUNREACH, EHOSTDOWN, ENETDOWN, ENETRESET, EPIPE -> FAILURE
 *   EAGAIN / EWOULDBLOCK (a read or write past SO_RCVTIMEO / SO_SNDTIMEO),
 *   EINPROGRESS (a connect past SO_SNDTIMEO) -> FAILURE (the dependency did
 *                not answer in time: the commonest outage of all)
 *   ENOTCONN, EPROTO -> FAILURE (the connection is gone, or the peer broke
 *                the protocol)
 *   ECANCELED -> CANCELLED
 *   any other -> IGNORED (a local error says nothing about the dependency:
 *                EINVAL, ENOMEM, EMFILE, ...)
 */

/* The choices the HTTP table leaves to the caller. Fill with
 * breaker_http_policy_init(), then change what you need. Each field is
 * BREAKER_IGNORED or BREAKER_FAILURE; 0 (BREAKER_SUCCESS, never allowed:
 * none of these answers shows the dependency working) means the default,
 * so a zeroed struct is the default policy. */
typedef struct breaker_http_policy breaker_http_policy;
struct breaker_http_policy {
    /* 401, 403, 407: IGNORED (default), or FAILURE for a dependency whose
     * own failing auth backend answers 401 or 403. */
    enum breaker_outcome auth_failures;
    /* 429: IGNORED (default), or FAILURE for a dependency that answers 429
     * to shed load for every client. */
    enum breaker_outcome too_many_requests;
    /* 503 with Retry-After: FAILURE (default), or IGNORED for a dependency
     * that answers it to throttle one client. A 503 without Retry-After is
     * always FAILURE. */
    enum breaker_outcome unavailable_with_retry_after;
};

/*! breaker_http_policy_init() :
 *  Clear `p` (every byte, fields added later included) and set the defaults:
 *  auth_failures IGNORED, too_many_requests IGNORED,
 *  unavailable_with_retry_after FAILURE. */
BREAKER_API void breaker_http_policy_init(breaker_http_policy *p) BREAKER_NONNULL(1);

/*! breaker_http_policy_validate() :
 *  @return BREAKER_OK, or BREAKER_EINVAL with a message naming the first bad
 *  field and its allowed values written to `msg` (NUL-terminated, truncated
 *  to `msg_len`; `msg` may be NULL when msg_len is 0). */
BREAKER_API int breaker_http_policy_validate(const breaker_http_policy *p, char *msg,
                                             size_t msg_len) BREAKER_NONNULL(1);

/*! breaker_classify_http() :
 *  @return the outcome of an answer with HTTP `status`, by the table above
 *  with the default policy: breaker_classify_http_with(NULL, status, 0).
 *  A 503 is FAILURE whether or not it carried Retry-After. Thread-safe. */
BREAKER_API enum breaker_outcome breaker_classify_http(int status);

/*! breaker_classify_http_with() :
 *  @return the outcome of an answer with HTTP `status` by the table above
 *  under `p` (NULL = the defaults). `retry_after` is nonzero when the answer
 *  carried a Retry-After header; only a 503 reads it. Never SUCCESS but for
 *  a 2xx. A field of `p` that breaker_http_policy_validate() would refuse is
 *  read as its default (the answer is then what breaker_classify_http()
 *  says), so a bad policy can neither crash nor turn an answer into
 *  evidence of health. Reads `p` only; thread-safe. */
BREAKER_API enum breaker_outcome breaker_classify_http_with(const breaker_http_policy *p,
                                                            int status, int retry_after);

/*! breaker_classify_errno() :
 *  @return the outcome of a call that ended with `err` (0 = no error; the
 *  final errno of the call, see the table above), by the errno table above.
 *  Thread-safe. */
BREAKER_API enum breaker_outcome breaker_classify_errno(int err);

#ifdef __cplusplus
}
#endif

#endif /* BREAKER_H */

/* ---- Experimental -----------------------------------------------------------
 * Declared only where BREAKER_EXPERIMENTAL is defined before this header is
 * included (its own guard: a first inclusion without the macro does not hide
 * them from a later one with it). Exported like the rest, but may change in
 * any 0.x minor release, with a line in CHANGELOG.md (docs/abi.md, "The
 * experimental parts"). */
#if defined(BREAKER_EXPERIMENTAL) && !defined(BREAKER_H_EXPERIMENTAL)
#define BREAKER_H_EXPERIMENTAL

#ifdef __cplusplus
extern "C" {
#endif

/* The open wait chosen from the evidence: given the evidence of the trip
 * (a window's or run's, or a half-open's probe counts), the backoff level k
 * the wait is for (failed recoveries after this opening: 0 for a trip from
 * CLOSED) and the wait the policy chose (open_ns, the backoff and the
 * jitter), return the wait in ns: 0 keeps the policy's; anything above
 * open_max_ns is cut to it. Called when the breaker opens by its own rules
 * (a trip, a failed or timed-out probe), never for a timed open or an
 * outside trip, which carry their own wait; on the thread making the
 * transition, before it is published, so it must be quick, must not call
 * into this breaker, and should be a pure function of its arguments:
 * threads racing to make one transition may each call it, and the
 * winner's answer stands. In a store file, each process's handle has its
 * own (the process that trips decides). */
typedef uint64_t breaker_open_wait_fn(void *ctx, const breaker_evidence *evidence, unsigned k,
                                      uint64_t policy_wait_ns);

/*! breaker_set_open_wait() :
 *  Choose the open waits of `b` with `fn(ctx, ...)` (NULL: the policy's,
 *  as by default). Call it before other threads use `b` (it is not
 *  synchronised with the call path's readers). @return BREAKER_OK. */
BREAKER_API int breaker_set_open_wait(breaker *b, breaker_open_wait_fn *fn, void *ctx)
    BREAKER_NONNULL(1);

#ifdef __cplusplus
}
#endif

#endif /* BREAKER_EXPERIMENTAL */
