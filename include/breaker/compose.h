/* SPDX-License-Identifier: MIT */
/*
 * breaker/compose.h - retries, retry budgets, bulkheads, deadlines, fallbacks
 * and an executor that runs a call through them together with a breaker.
 *
 * This header is part of the reference manual of libbreaker (see breaker.h;
 * anything not declared in breaker.h or include/breaker/\*.h is unsupported).
 * It adds no dependency to the library: everything here is C11 and POSIX
 * threads. docs/composition.md explains which composition to choose and what
 * each one makes the breaker count.
 *
 * The pieces, outermost first, as the executor applies them:
 *
 *   deadline      the caller's absolute deadline on the executor's clock;
 *                 every layer works with the time that remains
 *   bulkhead      a concurrency limit per dependency (one slot per request)
 *   breaker       admission (breaker.h), either once per request or once per
 *                 attempt, as the chosen order says
 *   retry         attempts with capped exponential backoff and jitter, only
 *                 for retryable outcomes, within a retry budget
 *   operation     the caller's function, which receives the attempt deadline
 *                 (the earliest of the caller's, the dependency's and, for
 *                 a probe, the breaker's) and whether it is a probe
 *   fallback      what to serve when the result is a failure or a refusal
 *
 * Time. Every object here reads time through a breaker_clock_fn (breaker.h:
 * monotonic nanoseconds, thread-safe) and the executor sleeps through a
 * breaker_sleep_fn, so tests and simulations inject both and never really
 * wait. Give the executor and its breaker the same clock: deadlines, the
 * breaker's open wait and retry_after hints are then all on one time line.
 *
 * Configuration, as in breaker.h. Each object has one configuration struct
 * with an _init() that clears the whole struct (padding and fields added
 * later are zero) and then sets the documented defaults; a _validate() that
 * names the first bad field and its allowed range ("max_concurrent: must be
 * between 1 and 1000000 slots (got 2000000)"); and a _create() that takes
 * NULL for "all defaults" and refuses what _validate() refuses with
 * BREAKER_EINVAL. A zero numeric field means its default where zero would be
 * meaningless. The retry policy, a plain value without a handle, has the
 * same _init() and _validate(); the executor's create checks it.
 *
 * Ownership. Every object is an opaque handle from its _create() and is freed
 * by the matching _destroy(); every create copies its configuration. The
 * executor keeps pointers to the breaker, bulkhead and retry budget named in
 * its configuration but does not own them: they must outlive the executor,
 * and may be shared by several executors (a bulkhead and a budget are per
 * dependency, not per call site).
 */
#ifndef BREAKER_COMPOSE_H
#define BREAKER_COMPOSE_H

#include <breaker.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Time and deadlines ----------------------------------------------------*/

/* A deadline that never passes. A deadline of 0 means the same (an absolute
 * time of 0 on a monotonic clock would be meaningless). */
#define BREAKER_NO_DEADLINE UINT64_MAX

/* Sleep for `ns` nanoseconds on the clock the caller uses. Called on the
 * thread running breaker_executor_run(), between attempts only.
 * @return 0 after sleeping; any other value means the caller cancelled the
 * request while it slept (the executor then stops, reporting CANCELLED).
 * May return early only to cancel. Must not call into the executor. */
typedef int breaker_sleep_fn(void *sleep_ctx, uint64_t ns);

/*! breaker_monotonic_ns() :
 *  The default clock of everything in this header: CLOCK_MONOTONIC in
 *  nanoseconds. A breaker_clock_fn; `ctx` is ignored. Thread-safe. */
BREAKER_API uint64_t breaker_monotonic_ns(void *ctx);

/*! breaker_sleep_monotonic() :
 *  The default sleep: clock_nanosleep() on CLOCK_MONOTONIC, resumed after
 *  signals. A breaker_sleep_fn; `ctx` is ignored. @return 0. */
BREAKER_API int breaker_sleep_monotonic(void *ctx, uint64_t ns);

/*! breaker_deadline_after() :
 *  @return the absolute deadline `timeout_ns` from now on `clock` (NULL =
 *  breaker_monotonic_ns), saturating at BREAKER_NO_DEADLINE; timeout_ns ==
 *  UINT64_MAX gives BREAKER_NO_DEADLINE. */
BREAKER_API uint64_t breaker_deadline_after(breaker_clock_fn *clock, void *clock_ctx,
                                            uint64_t timeout_ns);

/*! breaker_deadline_remaining() :
 *  @return the time left before `deadline_ns` at `now_ns`: 0 when it has
 *  passed, UINT64_MAX for BREAKER_NO_DEADLINE or 0 (no deadline). */
BREAKER_API uint64_t breaker_deadline_remaining(uint64_t deadline_ns, uint64_t now_ns);

/* ---- Retry policy ------------------------------------------------------------
 * A plain value: no handle, no state. The executor copies it. */

/* How a backoff is drawn. With b = base_ns, c = max_backoff_ns and n the
 * retry number (1 for the first retry):
 * - FULL: uniform in [0, min(c, b * 2^(n-1))] (AWS "full jitter"; spreads
 *   clients best, the default).
 * - DECORRELATED: uniform in [b, min(c, 3 * previous)], previous starting at
 *   b (AWS "decorrelated jitter"; grows like exponential, never below b).
 * - NONE: exactly min(c, b * 2^(n-1)); deterministic, for tests and for a
 *   single client. */
enum breaker_jitter { BREAKER_JITTER_FULL, BREAKER_JITTER_DECORRELATED, BREAKER_JITTER_NONE };

typedef struct breaker_retry_policy breaker_retry_policy;
struct breaker_retry_policy {
    uint32_t max_attempts;       /* attempts per request, first included: 1..100,
                                    0 = default 3; 1 = no retries */
    uint64_t base_ns;            /* first backoff scale: 0 = default 100 ms */
    uint64_t max_backoff_ns;     /* cap of one backoff: >= base_ns, 0 = default 10 s */
    enum breaker_jitter jitter;  /* default FULL */
    uint64_t attempt_timeout_ns; /* the dependency's own timeout: an answer
                                    later than start + this is a failure (a
                                    timeout), whatever the caller's deadline;
                                    the attempt deadline is at most start +
                                    this. 0 = none: the executor then knows
                                    no timeout of the dependency's and holds
                                    no deadline's expiry against it (see
                                    breaker_executor_run()) */
};

/*! breaker_retry_policy_init() :
 *  Clear all of `p`, then fill it with the defaults: 3 attempts, full jitter
 *  from 100 ms capped at 10 s, no per-attempt timeout. */
BREAKER_API void breaker_retry_policy_init(breaker_retry_policy *p) BREAKER_NONNULL(1);

/*! breaker_retry_policy_validate() :
 *  Check `p` as breaker_executor_create() does (zero fields as their
 *  defaults): max_attempts at most 100; max_backoff_ns >= base_ns; jitter
 *  one of the enum's values. Every other value is accepted.
 *  @return BREAKER_OK, or BREAKER_EINVAL with a message naming the first bad
 *  field and its allowed range in `msg` ("max_attempts: must be between 1 and
 *  100 (got 101)"; NUL-terminated, truncated to msg_len; `msg` may be NULL
 *  when msg_len is 0; "" on success). */
BREAKER_API int breaker_retry_policy_validate(const breaker_retry_policy *p, char *msg,
                                              size_t msg_len) BREAKER_NONNULL(1);

/*! breaker_retry_backoff_ns() :
 *  The backoff before retry number `retry` (1 = the first retry, after
 *  attempt 1), as documented on enum breaker_jitter. `prev_ns` is the
 *  previous backoff returned (DECORRELATED uses it; pass 0 for the first
 *  retry) and `random` any uniformly random 64-bit value: the function is
 *  pure, so a fixed `random` gives a reproducible backoff. Zero fields of
 *  `p` take their defaults. @return the backoff in nanoseconds. */
BREAKER_API uint64_t breaker_retry_backoff_ns(const breaker_retry_policy *p, uint32_t retry,
                                              uint64_t prev_ns, uint64_t random) BREAKER_NONNULL(1);

/* ---- Retry budget --------------------------------------------------------------
 * Bounds the extra load retries add over a sliding time window: a retry is
 * allowed while
 *     retries in window < min_retries + ratio * requests in window
 * where a request is a first attempt (breaker_retry_budget_deposit()) and a
 * retry is any later attempt (breaker_retry_budget_withdraw()). Under a
 * sustained outage, then, attempts stay within about (1 + ratio) times the
 * requests plus min_retries per window, instead of max_attempts times. Share
 * one budget between every caller of one dependency.
 *
 * A retry is withdrawn before its backoff, so that a refusal comes before the
 * caller sleeps; a retry that is then not made (the breaker opened, the
 * deadline passed, the caller cancelled) is given back with
 * breaker_retry_budget_refund(), so the budget counts only retries made. The
 * executor does both. */

typedef struct breaker_retry_budget breaker_retry_budget; /* opaque */
typedef struct breaker_retry_budget_config breaker_retry_budget_config;
typedef struct breaker_retry_budget_stats breaker_retry_budget_stats;
typedef struct breaker_retry_ticket breaker_retry_ticket;

struct breaker_retry_budget_config {
    double ratio;            /* retries per request over the window: [0, 1000];
                                0 keeps its meaning (only min_retries); default 0.2 */
    uint32_t min_retries;    /* retries always allowed per window, so that a
                                quiet client can still retry: 0..1000000; default 10 */
    uint64_t window_ns;      /* window span: at least 1 ns per bucket,
                                0 = default 10 s */
    uint32_t buckets;        /* window granularity: 1..600, 0 = default 10 */
    breaker_clock_fn *clock; /* NULL = breaker_monotonic_ns */
    void *clock_ctx;
};

struct breaker_retry_budget_stats {
    uint64_t deposits;        /* requests recorded since create */
    uint64_t withdrawals;     /* retries allowed since create, refunded or not */
    uint64_t refused;         /* retries refused since create */
    uint64_t window_requests; /* requests in the current window */
    uint64_t window_retries;  /* retries in the current window, refunds deducted */
    uint64_t refunded;        /* withdrawals given back since create (retries
                                 not made): withdrawals - refunded retries
                                 were charged */
};

/* What breaker_retry_budget_withdraw_refundable() gives for one allowed
 * retry, so that breaker_retry_budget_refund() can give it back to the window
 * it was counted in. A plain value kept with the request; its field is not an
 * interface, and zero means "nothing to refund". A refund clears the ticket
 * it is given, not copies made of it before: refunding a copy as well is a
 * caller error the budget cannot see (it would uncount a retry made). */
struct breaker_retry_ticket {
    uint64_t opaque;
};

/*! breaker_retry_budget_config_init() :
 *  Clear all of `cfg`, then fill it with the defaults: ratio 0.2, 10 retries
 *  per window always allowed, a 10 s window in 10 buckets, the monotonic
 *  clock. */
BREAKER_API void breaker_retry_budget_config_init(breaker_retry_budget_config *cfg)
    BREAKER_NONNULL(1);

/*! breaker_retry_budget_config_validate() :
 *  Check `cfg` as breaker_retry_budget_create() does (zero fields as their
 *  defaults): ratio in [0, 1000] and not NaN; min_retries at most 1000000;
 *  buckets at most 600; window_ns at least 1 ns per bucket.
 *  @return BREAKER_OK, or BREAKER_EINVAL with a message naming the first bad
 *  field and its allowed range in `msg` ("buckets: must be between 1 and 600
 *  (got 601)"; NUL-terminated, truncated to msg_len; `msg` may be NULL when
 *  msg_len is 0; "" on success). */
BREAKER_API int breaker_retry_budget_config_validate(const breaker_retry_budget_config *cfg,
                                                     char *msg, size_t msg_len) BREAKER_NONNULL(1);

/*! breaker_retry_budget_create() :
 *  Create a budget from `cfg` (NULL = all the defaults of
 *  breaker_retry_budget_config_init()); the configuration is copied.
 *  @return BREAKER_OK and `*out` set; BREAKER_EINVAL if the configuration is
 *  invalid (breaker_retry_budget_config_validate() says why) or `out` is
 *  NULL; BREAKER_ENOMEM. On error `*out` is left NULL. */
BREAKER_API BREAKER_NODISCARD int
breaker_retry_budget_create(const breaker_retry_budget_config *cfg, breaker_retry_budget **out);

/*! breaker_retry_budget_destroy() : release `b`; NULL is a no-op. Must not
 *  race with any other call on `b`. */
BREAKER_API void breaker_retry_budget_destroy(breaker_retry_budget *b);

/*! breaker_retry_budget_deposit() :
 *  Record one request (a first attempt). Thread-safe; takes a short mutex
 *  (the budget is consulted once per request and once per retry, around a
 *  network call, not on the breaker's lock-free path). */
BREAKER_API void breaker_retry_budget_deposit(breaker_retry_budget *b) BREAKER_NONNULL(1);

/*! breaker_retry_budget_withdraw() :
 *  Ask for one retry. Thread-safe, as deposit.
 *  @return BREAKER_OK: the retry is allowed and counted;
 *  BREAKER_RETRY_BUDGET_EXHAUSTED: not allowed now (counted as refused). */
BREAKER_API BREAKER_NODISCARD int breaker_retry_budget_withdraw(breaker_retry_budget *b)
    BREAKER_NONNULL(1);

/*! breaker_retry_budget_withdraw_refundable() :
 *  Ask for one retry that may yet not be made: allowed and counted exactly
 *  as by breaker_retry_budget_withdraw(), and on BREAKER_OK `*ticket` is set
 *  so that breaker_retry_budget_refund() can give the retry back. Until then
 *  it counts against the budget like any other retry, so threads sharing a
 *  budget can never be allowed more retries than the bound between them.
 *  Thread-safe, as deposit.
 *  @return BREAKER_OK: allowed and counted, `*ticket` set;
 *  BREAKER_RETRY_BUDGET_EXHAUSTED: not allowed now (counted as refused),
 *  `*ticket` cleared (refunding it is refused). */
BREAKER_API BREAKER_NODISCARD int
breaker_retry_budget_withdraw_refundable(breaker_retry_budget *b, breaker_retry_ticket *ticket)
    BREAKER_NONNULL(1, 2);

/*! breaker_retry_budget_refund() :
 *  Give back a retry allowed by breaker_retry_budget_withdraw_refundable() on
 *  this budget and then not made. It leaves the window it was counted in (if
 *  that has not already slid past) and is counted in `refunded`; `*ticket` is
 *  cleared, so a second refund through it is refused. Refund only
 *  retries that were not made: a retry that reached the dependency is load
 *  the budget must go on counting. Thread-safe, as deposit.
 *  @return BREAKER_OK; BREAKER_EINVAL if `*ticket` holds nothing to refund
 *  (cleared, already refunded, or from a refused withdrawal) or cannot be
 *  this budget's (it names a time the budget has not reached). */
BREAKER_API int breaker_retry_budget_refund(breaker_retry_budget *b, breaker_retry_ticket *ticket)
    BREAKER_NONNULL(1, 2);

/*! breaker_retry_budget_stats_get() : fill `out` with a consistent snapshot.
 *  @return BREAKER_OK. Thread-safe. */
BREAKER_API int breaker_retry_budget_stats_get(breaker_retry_budget *b,
                                               breaker_retry_budget_stats *out)
    BREAKER_NONNULL(1, 2);

/* ---- Bulkhead ------------------------------------------------------------------
 * A limit on calls in flight to one dependency. Its refusals are
 * BREAKER_BULKHEAD_FULL, counted here (and by an executor as refused by the
 * BULKHEAD layer), never as a breaker refusal or a dependency failure. */

typedef struct breaker_bulkhead breaker_bulkhead; /* opaque */
typedef struct breaker_bulkhead_config breaker_bulkhead_config;
typedef struct breaker_bulkhead_stats breaker_bulkhead_stats;

struct breaker_bulkhead_config {
    uint32_t max_concurrent; /* slots: 1..1000000, 0 = default 10 */
};

struct breaker_bulkhead_stats {
    uint32_t max_concurrent;
    uint32_t in_flight; /* slots held now */
    uint32_t waiting;   /* threads blocked in breaker_bulkhead_acquire_wait() */
    uint32_t peak;      /* highest in_flight seen since create */
    uint64_t acquired;  /* slots granted since create (either way) */
    uint64_t refused;   /* try-acquires refused and waits that timed out */
    uint64_t waited;    /* grants that had to wait */
};

/*! breaker_bulkhead_config_init() : clear all of `cfg`, then fill it with
 *  the default (10 slots). */
BREAKER_API void breaker_bulkhead_config_init(breaker_bulkhead_config *cfg) BREAKER_NONNULL(1);

/*! breaker_bulkhead_config_validate() :
 *  Check `cfg` as breaker_bulkhead_create() does: max_concurrent at most
 *  1000000 (0 = the default 10).
 *  @return BREAKER_OK, or BREAKER_EINVAL with a message naming the field and
 *  its allowed range in `msg` ("max_concurrent: must be between 1 and 1000000
 *  slots (got 2000000)"; NUL-terminated, truncated to msg_len; `msg` may be
 *  NULL when msg_len is 0; "" on success). */
BREAKER_API int breaker_bulkhead_config_validate(const breaker_bulkhead_config *cfg, char *msg,
                                                 size_t msg_len) BREAKER_NONNULL(1);

/*! breaker_bulkhead_create() :
 *  Create a bulkhead from `cfg` (NULL = the default of
 *  breaker_bulkhead_config_init()); the configuration is copied.
 *  @return BREAKER_OK and `*out` set; BREAKER_EINVAL if the configuration is
 *  invalid (breaker_bulkhead_config_validate() says why) or `out` is NULL;
 *  BREAKER_ENOMEM. On error `*out` is left NULL. */
BREAKER_API BREAKER_NODISCARD int breaker_bulkhead_create(const breaker_bulkhead_config *cfg,
                                                          breaker_bulkhead **out);

/*! breaker_bulkhead_destroy() : release `bh`; NULL is a no-op. No slot may
 *  be held and no other call on `bh` may run concurrently or follow. */
BREAKER_API void breaker_bulkhead_destroy(breaker_bulkhead *bh);

/*! breaker_bulkhead_try_acquire() :
 *  Take a slot if one is free, without waiting. Lock-free (one CAS loop on
 *  the in-flight count); thread-safe.
 *  @return BREAKER_OK: a slot is held, give it back with
 *  breaker_bulkhead_release(); BREAKER_BULKHEAD_FULL: every slot is taken. */
BREAKER_API BREAKER_NODISCARD int breaker_bulkhead_try_acquire(breaker_bulkhead *bh)
    BREAKER_NONNULL(1);

/*! breaker_bulkhead_acquire_wait() :
 *  Take a slot, waiting at most `max_wait_ns` of real (CLOCK_MONOTONIC) time
 *  for one to be released; 0 behaves as try-acquire. Waiters block on a
 *  mutex and condition variable; a release wakes one. Not FIFO: a
 *  try-acquire may take a released slot before a waiter wakes. Thread-safe.
 *  @return BREAKER_OK (slot held); BREAKER_BULKHEAD_FULL when the wait ended
 *  without a slot. */
BREAKER_API BREAKER_NODISCARD int breaker_bulkhead_acquire_wait(breaker_bulkhead *bh,
                                                                uint64_t max_wait_ns)
    BREAKER_NONNULL(1);

/*! breaker_bulkhead_release() :
 *  Give back a slot taken by an acquire (from any thread). Releasing more
 *  slots than were acquired is a caller error: it is detected, ignored and
 *  @return BREAKER_EINVAL; otherwise BREAKER_OK. Lock-free unless a thread
 *  is waiting. */
BREAKER_API int breaker_bulkhead_release(breaker_bulkhead *bh) BREAKER_NONNULL(1);

/*! breaker_bulkhead_stats_get() : fill `out` (fields read one by one, exact
 *  at quiescence). @return BREAKER_OK. Thread-safe. */
BREAKER_API int breaker_bulkhead_stats_get(breaker_bulkhead *bh, breaker_bulkhead_stats *out)
    BREAKER_NONNULL(1, 2);

/* ---- Cached last good value (a fallback helper) ----------------------------------
 * Keeps a copy of the last good answer and serves it, with its age, while it
 * is no older than max_stale_ns. Past that it refuses: serving a value of
 * unknown freshness forever would be a fabricated success. */

typedef struct breaker_cache breaker_cache; /* opaque */
typedef struct breaker_cache_config breaker_cache_config;

struct breaker_cache_config {
    size_t max_size;         /* largest value in bytes: 1..1 GiB, 0 = default 4096;
                                allocated once at create */
    uint64_t max_stale_ns;   /* oldest value served: 0 = default 60 s */
    breaker_clock_fn *clock; /* NULL = breaker_monotonic_ns */
    void *clock_ctx;
};

/*! breaker_cache_config_init() : clear all of `cfg`, then fill it with the
 *  defaults (4096 bytes, 60 s, the monotonic clock). */
BREAKER_API void breaker_cache_config_init(breaker_cache_config *cfg) BREAKER_NONNULL(1);

/*! breaker_cache_config_validate() :
 *  Check `cfg` as breaker_cache_create() does: max_size at most 1 GiB (0 =
 *  the default 4096). Every max_stale_ns is accepted.
 *  @return BREAKER_OK, or BREAKER_EINVAL with a message naming the field and
 *  its allowed range in `msg` ("max_size: must be between 1 and 1073741824
 *  bytes (got 2147483648)"; NUL-terminated, truncated to msg_len; `msg` may
 *  be NULL when msg_len is 0; "" on success). */
BREAKER_API int breaker_cache_config_validate(const breaker_cache_config *cfg, char *msg,
                                              size_t msg_len) BREAKER_NONNULL(1);

/*! breaker_cache_create() :
 *  Create an empty cache from `cfg` (NULL = the defaults of
 *  breaker_cache_config_init()); the configuration is copied and the value
 *  buffer (max_size bytes) allocated here.
 *  @return BREAKER_OK and `*out` set; BREAKER_EINVAL if the configuration is
 *  invalid (breaker_cache_config_validate() says why) or `out` is NULL;
 *  BREAKER_ENOMEM. On error `*out` is left NULL. */
BREAKER_API BREAKER_NODISCARD int breaker_cache_create(const breaker_cache_config *cfg,
                                                       breaker_cache **out);

/*! breaker_cache_destroy() : release `c`; NULL is a no-op. Must not race. */
BREAKER_API void breaker_cache_destroy(breaker_cache *c);

/*! breaker_cache_put() :
 *  Store a copy of `len` bytes at `data` (len may be 0) as the last good
 *  value, stamped now. Thread-safe (a mutex around the copy).
 *  @return BREAKER_OK; BREAKER_ENOSPC if len > max_size (the old value stays). */
BREAKER_API int breaker_cache_put(breaker_cache *c, const void *data, size_t len)
    BREAKER_NONNULL(1);

/*! breaker_cache_get() :
 *  Copy the last good value into `buf` (capacity `cap`; may be NULL when cap
 *  is 0) if it is fresh enough. Thread-safe.
 *  @return BREAKER_OK: `*len` bytes copied, `*age_ns` is their age;
 *  BREAKER_NOT_FOUND: nothing to serve: the cache is empty (`*age_ns` =
 *  UINT64_MAX) or the value is older than max_stale_ns (`*age_ns` = its age);
 *  BREAKER_ENOSPC: `cap` is too small, `*len` is the size needed.
 *  `len` and `age_ns` may each be NULL. */
BREAKER_API int breaker_cache_get(breaker_cache *c, void *buf, size_t cap, size_t *len,
                                  uint64_t *age_ns) BREAKER_NONNULL(1);

/* ---- Executor --------------------------------------------------------------------*/

typedef struct breaker_executor breaker_executor; /* opaque */
typedef struct breaker_executor_config breaker_executor_config;
typedef struct breaker_executor_stats breaker_executor_stats;
typedef struct breaker_attempt breaker_attempt;
typedef struct breaker_call breaker_call;
typedef struct breaker_result breaker_result;

/* Where the breaker sits relative to the retries. The bulkhead is always
 * outside both (one slot per request, held across backoffs), the deadline
 * outside everything. docs/composition.md has the full comparison.
 * - RETRY_OUTSIDE_BREAKER: each attempt asks the breaker for its own permit
 *   and records its own outcome: 3 failed attempts are 3 failures. Once the
 *   breaker opens, the next attempt is refused locally and the request stops
 *   at once: no further attempt and no backoff sleep. The default.
 * - BREAKER_OUTSIDE_RETRY: one permit per request, settled with the final
 *   outcome: 3 failed attempts are 1 failure, a failure then a success is 1
 *   success. Retries run even if the breaker opens meanwhile, and the
 *   breaker times (slow calls, probe timeout) the whole retry sequence. */
enum breaker_order { BREAKER_ORDER_RETRY_OUTSIDE_BREAKER, BREAKER_ORDER_BREAKER_OUTSIDE_RETRY };

/* The layer that refused a request or ended its retries. */
enum breaker_layer {
    BREAKER_LAYER_NONE,         /* nothing stopped it: it succeeded */
    BREAKER_LAYER_DEADLINE,     /* the deadline passed or left no room */
    BREAKER_LAYER_BULKHEAD,     /* no concurrency slot */
    BREAKER_LAYER_BREAKER,      /* the breaker refused (open or half-open) */
    BREAKER_LAYER_RETRY_BUDGET, /* the retry budget is spent */
    BREAKER_LAYER_RETRY_POLICY, /* attempts used up, outcome not retryable,
                                   or operation not idempotent */
    BREAKER_LAYER_CALLER        /* the caller cancelled */
};

/* What a request came to. Refusal is never reported as success, and a
 * fallback is reported as FALLBACK, never as SUCCEEDED.
 * - SUCCEEDED: an attempt's outcome was BREAKER_SUCCESS (the dependency
 *   answered as it should: with breaker_classify_http() a 404 is an answer)
 *   and the breaker, if the attempt was a probe, took it in time: a probe
 *   answered after the breaker timed it out is FAILED, never SUCCEEDED.
 * - FAILED: at least one attempt reached the operation, and the last one
 *   failed (FAILURE, or IGNORED: not the dependency's fault, but not a
 *   success either), or was cut short by the caller's deadline (`late`,
 *   `outcome` CANCELLED, layer DEADLINE); `error` holds the dependency's
 *   error.
 * - REFUSED: refused locally before any attempt reached the operation;
 *   `layer` says which layer, `retry_after_ns` when a retry makes sense.
 * - FALLBACK: would have been FAILED or REFUSED (see `fallback_of`), and the
 *   call's fallback served a value instead.
 * - CANCELLED: the operation returned BREAKER_CANCELLED or the sleep
 *   function reported a cancellation. */
enum breaker_result_kind {
    BREAKER_RESULT_SUCCEEDED,
    BREAKER_RESULT_FAILED,
    BREAKER_RESULT_REFUSED,
    BREAKER_RESULT_FALLBACK,
    BREAKER_RESULT_CANCELLED
};

/* What the operation may say about retrying, besides its outcome.
 * AUTO: retry iff the outcome is BREAKER_FAILURE (the default). NO: do not
 * retry this one (a failure known to be permanent). YES: retry even though
 * the outcome is not FAILURE (say, IGNORED for a local transient error). */
enum breaker_retry_hint { BREAKER_RETRY_AUTO, BREAKER_RETRY_NO, BREAKER_RETRY_YES };

/* What the operation receives (read-only fields) and reports (the two
 * under "Set by the operation"). */
struct breaker_attempt {
    uint32_t number;      /* 1 for the first attempt */
    uint64_t start_ns;    /* executor clock when the attempt started (read
                             before the breaker admitted it) */
    uint64_t deadline_ns; /* give up by then: the earliest of the call
                             deadline, start + attempt_timeout_ns and, if
                             is_probe, the probe's deadline (the last
                             nanosecond before admission + the breaker's
                             probe_timeout_ns, at which the breaker still
                             takes the answer); BREAKER_NO_DEADLINE if none */
    uint64_t timeout_ns;  /* deadline_ns - start_ns, UINT64_MAX if none; pass
                             it to the I/O (a socket or libcurl timeout) */
    /* Set by the operation: */
    int error;                     /* the dependency's error (an HTTP status,
                                      an errno...), 0 = none; reported in
                                      breaker_result.error */
    enum breaker_retry_hint retry; /* preset to AUTO */
    /* Read-only (after the two above, so that their places stay put): */
    bool is_probe; /* the attempt runs under a half-open probe permit
                      (breaker_permit_is_probe()): its outcome decides the
                      breaker's recovery, and deadline_ns already includes
                      the probe's deadline. With BREAKER_OUTSIDE_RETRY every
                      attempt of a probe request is a probe. false without
                      a breaker layer. */
};

/* The operation. Runs on the thread that called breaker_executor_run(),
 * once per attempt. Returns the outcome for the breaker, classified with
 * breaker_classify_http()/breaker_classify_errno() or by its own rule;
 * BREAKER_CANCELLED if the caller gave up. It may call other breakers and
 * executors, but must not re-enter this executor for the same dependency
 * (that would take a second bulkhead slot from inside the first). */
typedef enum breaker_outcome breaker_op_fn(void *op_ctx, breaker_attempt *attempt);

/* A fallback. Runs on the caller's thread after a request FAILED or was
 * REFUSED; `why` is that result. To serve a value, write it where `ctx`
 * says, set `*age_ns` to its age (0 for a value made now) and @return
 * BREAKER_OK. Any other return means "nothing to serve": the result stays
 * what it was and the status is kept in breaker_result.fallback_status.
 * Serving a made-up "success" is not a fallback: serve a real value (a
 * cached one, a documented default) or decline. */
typedef int breaker_fallback_fn(void *ctx, const breaker_result *why, uint64_t *age_ns);

/* One request. */
struct breaker_call {
    breaker_op_fn *op; /* required */
    void *op_ctx;
    uint64_t deadline_ns;          /* absolute, on the executor's clock; 0 or
                                      BREAKER_NO_DEADLINE = none */
    bool idempotent;               /* false (the default): never retried, whatever the
                                      policy says; set only if a repeat is safe */
    breaker_fallback_fn *fallback; /* NULL = none */
    void *fallback_ctx;
    uint64_t source; /* the caller behind this request (a tenant, a
                        client, a route: a hash of it), given to the
                        breaker at every admission and with every
                        outcome (breaker_acquire_from(),
                        breaker_complete_from()), so that
                        min_failing_sources applies and a probe keeps
                        its caller; 0 = none (the outcomes name no
                        source) */
};

struct breaker_result {
    enum breaker_result_kind kind;
    enum breaker_layer layer;             /* REFUSED: the refusing layer. FAILED: what
                                             ended the retries. CANCELLED: CALLER.
                                             SUCCEEDED: NONE. FALLBACK: as the result
                                             it replaced. */
    int status;                           /* a BREAKER_* code: OK (succeeded, or failed
                                             by the dependency); the refusing layer's code
                                             (REJECTED_OPEN, REJECTED_HALF_OPEN,
                                             BULKHEAD_FULL, DEADLINE_EXCEEDED,
                                             RETRY_BUDGET_EXHAUSTED) for REFUSED and for
                                             FAILED stopped by such a layer;
                                             DEADLINE_EXCEEDED when the last attempt
                                             returned after its deadline; ECANCELED. */
    enum breaker_outcome outcome;         /* the last attempt's outcome as recorded */
    int error;                            /* the last attempt's breaker_attempt.error */
    bool late;                            /* the last attempt returned after its deadline
                                             (`outcome` says whose: CANCELLED the
                                             caller's, FAILURE the dependency's or
                                             the probe's) */
    uint32_t attempts;                    /* attempts that reached the operation */
    uint32_t breaker_records;             /* outcomes recorded in the breaker for this
                                             request (completions that were not stale) */
    uint64_t retry_after_ns;              /* REFUSED or FAILED: 0 = a new request may
                                             be admitted now; otherwise wait this long
                                             (a FAILED request's is at least the
                                             breaker's breaker_retry_after_ns() when it
                                             ends: a failed or timed-out probe reopened
                                             it); UINT64_MAX = retrying will not help
                                             (deadline passed, breaker forced open) */
    uint64_t slept_ns;                    /* total backoff slept */
    uint64_t elapsed_ns;                  /* executor clock, start to end */
    enum breaker_result_kind fallback_of; /* FALLBACK: FAILED or REFUSED */
    uint64_t fallback_age_ns;             /* FALLBACK: the served value's age */
    int fallback_status;                  /* the fallback's return, BREAKER_OK if it served or
                                             none ran (see fallback_ran) */
    bool fallback_ran;
};

struct breaker_executor_config {
    enum breaker_order order;      /* default RETRY_OUTSIDE_BREAKER */
    breaker *b;                    /* the breaker; NULL = no breaker layer */
    breaker_bulkhead *bulkhead;    /* NULL = no concurrency limit */
    uint64_t bulkhead_max_wait_ns; /* 0 = try-acquire; else wait up to
                                      min(this, time to the deadline) */
    breaker_retry_budget *budget;  /* NULL = retries limited only by policy */
    breaker_retry_policy retry;    /* default: breaker_retry_policy_init() */
    bool late_keeps_outcome;       /* false (default): an attempt that returns
                                      after the dependency's deadline (start +
                                      retry.attempt_timeout_ns) is recorded as
                                      FAILURE (a timeout), and one that returns
                                      after the caller's deadline alone as
                                      CANCELLED; true: either as the outcome
                                      it returned. A probe answered after its
                                      probe deadline is FAILURE either way */
    breaker_clock_fn *clock;       /* NULL = breaker_monotonic_ns; use the
                                      breaker's clock */
    void *clock_ctx;
    breaker_sleep_fn *sleep; /* NULL = breaker_sleep_monotonic */
    void *sleep_ctx;
    uint64_t seed; /* backoff jitter seed; 0 = drawn at create */
};

/* Counters since create, read one by one (exact at quiescence). */
struct breaker_executor_stats {
    uint64_t requests;
    uint64_t attempts; /* attempts that reached the operation */
    uint64_t retries;  /* attempts after the first */
    uint64_t succeeded;
    uint64_t failed;
    uint64_t refused_deadline; /* REFUSED by layer, before any attempt */
    uint64_t refused_bulkhead;
    uint64_t refused_breaker;
    uint64_t stopped_breaker;  /* retries ended because the breaker opened */
    uint64_t stopped_budget;   /* retries refused by the budget */
    uint64_t stopped_deadline; /* retries ended by the deadline */
    uint64_t late;             /* attempts that returned after their deadline */
    uint64_t fallbacks;        /* results served by the fallback */
    uint64_t cancelled;
    uint64_t breaker_records; /* outcomes recorded in the breaker */
    uint64_t slept_ns;
};

/*! breaker_executor_config_init() :
 *  Clear all of `cfg`, then fill it: retry outside breaker, no breaker,
 *  bulkhead or budget, try-acquire, the default retry policy
 *  (breaker_retry_policy_init()), late attempts recorded by whose deadline
 *  they overran (see breaker_executor_run()), the monotonic clock and
 *  sleep, a random seed. */
BREAKER_API void breaker_executor_config_init(breaker_executor_config *cfg) BREAKER_NONNULL(1);

/*! breaker_executor_config_validate() :
 *  Check `cfg` as breaker_executor_create() does: order one of the enum's
 *  values, and `retry` as breaker_retry_policy_validate() checks it. The
 *  breaker, bulkhead, budget, clock, sleep and seed take any value (NULL =
 *  none or the default, as documented on the struct).
 *  @return BREAKER_OK, or BREAKER_EINVAL with a message naming the first bad
 *  field and its allowed range in `msg`; fields of the policy are named
 *  inside `retry` ("retry.max_attempts: must be between 1 and 100 (got
 *  101)"). NUL-terminated, truncated to msg_len; `msg` may be NULL when
 *  msg_len is 0; "" on success. */
BREAKER_API int breaker_executor_config_validate(const breaker_executor_config *cfg, char *msg,
                                                 size_t msg_len) BREAKER_NONNULL(1);

/*! breaker_executor_create() :
 *  Create an executor from `cfg` (NULL = the defaults of
 *  breaker_executor_config_init(): retries alone, with no breaker, bulkhead
 *  or budget); `cfg` is copied (not the objects it points to, which must
 *  outlive the executor). The breaker's probe_timeout_ns is read here, with
 *  breaker_get_config(), to bound probe attempts.
 *  @return BREAKER_OK and `*out`; BREAKER_EINVAL if the configuration is
 *  invalid (breaker_executor_config_validate() says why) or `out` is NULL;
 *  BREAKER_ENOMEM. On error `*out` is NULL. */
BREAKER_API BREAKER_NODISCARD int breaker_executor_create(const breaker_executor_config *cfg,
                                                          breaker_executor **out);

/*! breaker_executor_destroy() : release `ex`; NULL is a no-op. Must not race
 *  with breaker_executor_run(). Does not destroy the breaker, bulkhead or
 *  budget. */
BREAKER_API void breaker_executor_destroy(breaker_executor *ex);

/*! breaker_executor_run() :
 *  Run `call` through the layers (see enum breaker_order) and describe what
 *  happened in `*res`. The rules:
 *  - No attempt starts at or after the deadline; a backoff that would end at
 *    or after it is not slept, and the request stops (layer DEADLINE).
 *  - Only retryable outcomes are retried (enum breaker_retry_hint), only for
 *    idempotent calls, at most retry.max_attempts attempts in all, each
 *    retry withdrawn from the budget before its backoff, and refunded if the
 *    request then stops without making it (breaker refusal, deadline,
 *    cancellation during the backoff).
 *  - RETRY_OUTSIDE_BREAKER: after a failed attempt, if the breaker would
 *    still refuse when the backoff ends (breaker_retry_after_ns() longer
 *    than the backoff), the request stops now without sleeping.
 *  - Who owns a timeout. Each attempt's deadline is the earliest of the
 *    caller's (call->deadline_ns), the dependency's (start +
 *    retry.attempt_timeout_ns) and, for a half-open probe, the probe's
 *    (admission + the breaker's probe_timeout_ns, less 1 ns; exact or
 *    early, never late). An attempt that returns after one of them has late
 *    set and status DEADLINE_EXCEEDED, and is recorded by the one it
 *    overran, checked in this order:
 *    the probe's: FAILURE (the breaker has timed the probe out:
 *      PROBE_TIMEOUT; late_keeps_outcome does not apply);
 *    the dependency's: FAILURE, a timeout (its outcome if
 *      late_keeps_outcome);
 *    the caller's alone: CANCELLED (its outcome if late_keeps_outcome),
 *      which the breaker counts as its cancelled_as says (IGNORED by
 *      default): a deadline shorter than the dependency's timeout is the
 *      caller giving up, not evidence against the dependency. The request
 *      then ends FAILED, layer DEADLINE. Without attempt_timeout_ns no
 *      expiry of the caller's deadline counts against the dependency; set
 *      it to the time the dependency should answer within.
 *    A probe whose completion the breaker finds stale after its deadline
 *    has passed (it timed the probe out between the operation's return and
 *    the completion) is reported the same way as one answered late: FAILED,
 *    never SUCCEEDED. An operation's BREAKER_CANCELLED is recorded as
 *    CANCELLED, late or not.
 *  - BREAKER_OUTSIDE_RETRY settles its one permit with the final attempt's
 *    recorded outcome, CANCELLED if cancelled, IGNORED if no attempt ran.
 *    When that permit is a probe, its deadline bounds the request as the
 *    caller's does: no attempt starts, and no backoff is slept that would
 *    end, at or after it (the request stops, layer DEADLINE, with the
 *    breaker's retry_after_ns).
 *  - The fallback runs for FAILED and REFUSED results, never for SUCCEEDED
 *    or CANCELLED.
 *  Thread-safe: many threads may run calls on one executor at once.
 *  @return BREAKER_OK when `*res` describes the request (whatever its kind);
 *  BREAKER_EINVAL if `call->op` is NULL: a call has no default operation
 *  (nothing is run or counted, and `*res` is not written). */
BREAKER_API BREAKER_NODISCARD int
breaker_executor_run(breaker_executor *ex, const breaker_call *call, breaker_result *res)
    BREAKER_NONNULL(1, 2, 3);

/*! breaker_executor_stats_get() : fill `out`. @return BREAKER_OK. */
BREAKER_API int breaker_executor_stats_get(breaker_executor *ex, breaker_executor_stats *out)
    BREAKER_NONNULL(1, 2);

/*! breaker_cache_fallback() :
 *  A ready-made breaker_fallback_fn that serves a breaker_cache. `ctx` must
 *  point to a struct breaker_cache_target; the value is copied into its
 *  buffer and its `len` set. @return as breaker_cache_get(): BREAKER_OK
 *  (served, `*age_ns` set), BREAKER_NOT_FOUND (empty or too stale),
 *  BREAKER_ENOSPC; or BREAKER_EINVAL if `ctx` or its `cache` is NULL (there
 *  is no default cache to serve from), which the executor reports as
 *  breaker_result.fallback_status. */
typedef struct breaker_cache_target breaker_cache_target;
struct breaker_cache_target {
    breaker_cache *cache;
    void *buf;
    size_t cap;
    size_t len; /* out: bytes served */
};
BREAKER_API int breaker_cache_fallback(void *ctx, const breaker_result *why, uint64_t *age_ns);

/*! breaker_result_kind_name(), breaker_layer_name(), breaker_order_name(),
 *  breaker_jitter_name() :
 *  @return a static lower-case name ("refused", "bulkhead",
 *  "retry_outside_breaker", "decorrelated"), or "unknown". */
BREAKER_API const char *breaker_result_kind_name(enum breaker_result_kind kind);
BREAKER_API const char *breaker_layer_name(enum breaker_layer layer);
BREAKER_API const char *breaker_order_name(enum breaker_order order);
BREAKER_API const char *breaker_jitter_name(enum breaker_jitter jitter);

/* ---- Metrics -----------------------------------------------------------------------
 * Bulkheads, retry budgets and executors belong to no registry, so their
 * Prometheus series are exported from a list the caller keeps: one entry per
 * dependency, naming the objects that guard it. The text uses the same format
 * and contract as breaker_registry_export_prometheus() (registry.h), with
 * families of its own (breaker_bulkhead_*, breaker_retry_budget_*,
 * breaker_executor_*), so it may be sent right after the registry's text in
 * one scrape. Each series carries name="<entry's name>"; use the breaker's
 * name for the dependency and the two join on it (label_replace(..., "name",
 * "$1", "breaker", "(.*)")). docs/observability.md lists the families. */

typedef struct breaker_compose_metrics breaker_compose_metrics;
struct breaker_compose_metrics {
    const char *name;             /* label value: a valid breaker name
                                     (breaker_name_validate()), unique among
                                     the entries that name an object of the
                                     same kind */
    breaker_bulkhead *bulkhead;   /* NULL = none: 7 series */
    breaker_retry_budget *budget; /* NULL = none: 6 series */
    breaker_executor *executor;   /* NULL = none: 16 series */
};

/*! breaker_compose_export_prometheus() :
 *  Write the series of the `n` entries of `items` (read with each object's
 *  _stats_get(), one object after another) into `buf`, as
 *  breaker_registry_export_prometheus() does: BREAKER_OK with the length in
 *  `*len`, or BREAKER_ENOSPC with the size needed, or BREAKER_ENOMEM; also
 *  BREAKER_EINVAL, with nothing written, if `items` is NULL while n > 0, a
 *  name is NULL or invalid, or two entries of one name both set the same
 *  kind of object. Families without a series are left out. The list and the
 *  objects it names must stay valid during the call; the objects may be in
 *  use on other threads meanwhile. */
BREAKER_API int breaker_compose_export_prometheus(const breaker_compose_metrics *items, size_t n,
                                                  char *buf, size_t cap, size_t *len);

/*! breaker_compose_export_prometheus_alloc() :
 *  The same text in a buffer allocated to fit: BREAKER_OK with `*out` (the
 *  caller frees it with free()) and the length without the NUL in `*len`
 *  (may be NULL); BREAKER_EINVAL as above or BREAKER_ENOMEM, with `*out`
 *  NULL. Never BREAKER_ENOSPC. */
BREAKER_API BREAKER_NODISCARD int
breaker_compose_export_prometheus_alloc(const breaker_compose_metrics *items, size_t n, char **out,
                                        size_t *len) BREAKER_NONNULL(3);

#ifdef __cplusplus
}
#endif

#endif /* BREAKER_COMPOSE_H */
