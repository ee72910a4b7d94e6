/* SPDX-License-Identifier: MIT */
/*
 * executor.c - runs one request through deadline, bulkhead, breaker and
 * retries in the order the caller chose, and says what happened.
 *
 * The two orders differ only in where the breaker permit is taken: once
 * around the whole retry loop, or once per attempt inside it. Everything
 * else (deadline first, one bulkhead slot per request, the retry rules, the
 * fallback last) is shared, so the counting difference between the orders
 * is exactly the one docs/composition.md describes.
 *
 * Who owns a timeout (docs/composition.md, "Who owns a timeout"). An attempt
 * has up to three deadlines: the caller's (the request deadline, which may
 * have come from far upstream), the dependency's own (start +
 * attempt_timeout_ns) and, for a half-open probe, the breaker's probe
 * deadline. The operation is given the earliest. When it answers after one
 * of them, the one it overran decides what the breaker is told: the probe's
 * is a failure (the breaker has already timed the probe out), the
 * dependency's is a failure (a timeout), and the caller's alone is the
 * caller giving up (CANCELLED): a short deadline is a property of the
 * caller, not evidence against the dependency.
 */
#include "breaker/compose.h"
#include "common/message.h"
#include "common/splitmix.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Counters: relaxed, they order nothing; each on the executor's own lines. */
struct exec_counters {
    _Atomic uint64_t requests, attempts, retries, succeeded, failed;
    _Atomic uint64_t refused_deadline, refused_bulkhead, refused_breaker;
    _Atomic uint64_t stopped_breaker, stopped_budget, stopped_deadline;
    _Atomic uint64_t late, fallbacks, cancelled, breaker_records, slept_ns;
};

struct breaker_executor {
    breaker_executor_config cfg; /* defaults applied */
    uint64_t seed;
    uint64_t probe_timeout_ns;              /* the breaker's, read once at create */
    _Alignas(64) _Atomic uint64_t sequence; /* requests started: seeds each one's jitter */
    _Alignas(64) struct exec_counters n;
};

/* One request in progress. */
struct run {
    breaker_executor *ex;
    const breaker_call *call;
    uint64_t deadline;      /* no attempt starts at or after it: the caller's
                               deadline, or a probe request's probe_last if
                               earlier (BREAKER_OUTSIDE_RETRY) */
    uint64_t call_deadline; /* the caller's deadline alone */
    bool probe;             /* BREAKER_OUTSIDE_RETRY: the request's permit is a
                               probe, whose answer counts until probe_last */
    uint64_t probe_last;
    uint64_t rng;
    breaker_retry_ticket retry; /* the retry withdrawn for the next attempt,
                                   until that attempt is made; zero if none */
};

static void count(_Atomic uint64_t *c, uint64_t v) {
    atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}

static uint64_t now_of(const breaker_executor *ex) { return ex->cfg.clock(ex->cfg.clock_ctx); }

static uint64_t earliest(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* The last time at which the breaker still takes the answer of a probe
 * admitted at `admitted` or later. It times a probe out once its clock
 * reaches admission + probe_timeout_ns rounded up to the microsecond
 * (breaker.h), so an answer strictly before admitted + probe_timeout_ns
 * always counts; `admitted` is read before breaker_acquire(), so this errs
 * early, never late. A sum past the end of the clock is no limit. */
static uint64_t probe_last_ns(const breaker_executor *ex, uint64_t admitted) {
    if (UINT64_MAX - admitted <= ex->probe_timeout_ns) return BREAKER_NO_DEADLINE;
    return admitted + ex->probe_timeout_ns - 1;
}

/* The request stops without making the retry it withdrew: give it back, so
 * the budget counts only retries that reached the operation. */
static void refund_retry(struct run *r) {
    if (r->retry.opaque != 0) (void)breaker_retry_budget_refund(r->ex->cfg.budget, &r->retry);
}

void breaker_executor_config_init(breaker_executor_config *cfg) {
    memset(cfg, 0, sizeof(*cfg));
    cfg->order = BREAKER_ORDER_RETRY_OUTSIDE_BREAKER;
    breaker_retry_policy_init(&cfg->retry);
}

int breaker_executor_config_validate(const breaker_executor_config *cfg, char *msg,
                                     size_t msg_len) {
    if (msg != NULL && msg_len > 0) msg[0] = '\0';
    if (cfg->order != BREAKER_ORDER_RETRY_OUTSIDE_BREAKER &&
        cfg->order != BREAKER_ORDER_BREAKER_OUTSIDE_RETRY)
        return breaker__fail(BREAKER_EINVAL, msg, msg_len,
                             "order: must be retry_outside_breaker or breaker_outside_retry "
                             "(got %d)",
                             (int)cfg->order);
    /* The policy names its own fields; say they are inside `retry`. */
    char why[160];
    if (breaker_retry_policy_validate(&cfg->retry, why, sizeof(why)) != BREAKER_OK)
        return breaker__fail(BREAKER_EINVAL, msg, msg_len, "retry.%s", why);
    return BREAKER_OK;
}

int breaker_executor_create(const breaker_executor_config *cfg, breaker_executor **out) {
    if (out == NULL) return BREAKER_EINVAL;
    *out = NULL;
    breaker_executor_config defaults;
    if (cfg == NULL) {
        breaker_executor_config_init(&defaults);
        cfg = &defaults;
    }
    if (breaker_executor_config_validate(cfg, NULL, 0) != BREAKER_OK) return BREAKER_EINVAL;
    breaker_executor *ex = aligned_alloc(64, (sizeof(*ex) + 63) / 64 * 64);
    if (ex == NULL) return BREAKER_ENOMEM;
    memset(ex, 0, sizeof(*ex));
    ex->cfg = *cfg;
    if (ex->cfg.retry.max_attempts == 0) ex->cfg.retry.max_attempts = 3;
    if (ex->cfg.clock == NULL) ex->cfg.clock = breaker_monotonic_ns;
    if (ex->cfg.sleep == NULL) ex->cfg.sleep = breaker_sleep_monotonic;
    if (ex->cfg.b != NULL) {
        /* A breaker's configuration does not change after its create. */
        breaker_config bc;
        breaker_get_config(ex->cfg.b, &bc);
        ex->probe_timeout_ns = bc.probe_timeout_ns;
    }
    ex->seed = cfg->seed;
    if (ex->seed == 0) {
        /* Different executors (and runs) should not retry in lockstep. */
        uint64_t s = breaker_monotonic_ns(NULL) ^ (uint64_t)(uintptr_t)ex;
        ex->seed = breaker__splitmix64_next(&s) | 1u;
    }
    *out = ex;
    return BREAKER_OK;
}

void breaker_executor_destroy(breaker_executor *ex) { free(ex); }

/* The request ends here without a (further) attempt: REFUSED if nothing
 * reached the operation, otherwise FAILED with the last attempt's error. */
static void stop(breaker_result *res, enum breaker_layer layer, int status, uint64_t retry_after) {
    res->kind = res->attempts == 0 ? BREAKER_RESULT_REFUSED : BREAKER_RESULT_FAILED;
    res->layer = layer;
    res->status = status;
    res->retry_after_ns = retry_after;
}

static void stop_by_breaker(breaker_result *res, breaker *b, int status) {
    uint64_t ra = breaker_retry_after_ns(b);
    if (status == BREAKER_OK) /* stopped before asking: say what it would answer */
        status = breaker_get_state(b) == BREAKER_HALF_OPEN ? BREAKER_REJECTED_HALF_OPEN
                                                           : BREAKER_REJECTED_OPEN;
    stop(res, BREAKER_LAYER_BREAKER, status, ra);
}

/* The deadlines of one attempt, each absolute or BREAKER_NO_DEADLINE. */
struct bounds {
    uint64_t caller;     /* the request's deadline */
    uint64_t dependency; /* start + attempt_timeout_ns */
    uint64_t probe;      /* a probe's last counted nanosecond (probe_last_ns) */
};

/* Which deadline an answer at `end` overran, the breaker's before the
 * dependency's before the caller's: an answer past the dependency's own
 * timeout is that timeout, even if the caller's deadline was sooner. */
enum overrun { OVERRAN_NONE, OVERRAN_CALLER, OVERRAN_DEPENDENCY, OVERRAN_PROBE };

static enum overrun overrun_of(const struct bounds *b, uint64_t end) {
    if (end > b->probe) return OVERRAN_PROBE;
    if (end > b->dependency) return OVERRAN_DEPENDENCY;
    if (end > b->caller) return OVERRAN_CALLER;
    return OVERRAN_NONE;
}

/* What the breaker is told of an answer `out` that overran `over`. */
static enum breaker_outcome recorded_outcome(const breaker_executor *ex, enum overrun over,
                                             enum breaker_outcome out) {
    switch (over) {
    case OVERRAN_NONE:
        return out;
    case OVERRAN_PROBE:
        /* The breaker fails a probe unsettled at its deadline whatever
         * comes back later, so late_keeps_outcome cannot apply. */
        return BREAKER_FAILURE;
    case OVERRAN_DEPENDENCY:
        return ex->cfg.late_keeps_outcome ? out : BREAKER_FAILURE;
    case OVERRAN_CALLER:
        return ex->cfg.late_keeps_outcome ? out : BREAKER_CANCELLED;
    }
    return out;
}

/* A probe's completion was STALE after its last counted nanosecond had
 * passed: the breaker may have timed it out (PROBE_TIMEOUT) between the
 * executor's reading of the end and its own. Say so rather than report an
 * answer the breaker did not take. */
static bool timed_out_meanwhile(const breaker_executor *ex, int complete_rc, uint64_t probe_last) {
    return complete_rc == BREAKER_STALE && now_of(ex) > probe_last;
}

/* Runs one attempt and records what it said. `is_probe` and `probe_last`
 * describe the permit the attempt runs under (its own, or the request's).
 * @return true if the outcome allows another attempt (the caller of this
 * function decides whether one is made). */
static bool attempt_once(struct run *r, uint32_t number, uint64_t now, bool is_probe,
                         uint64_t probe_last, breaker *per_attempt, breaker_permit *permit,
                         breaker_result *res) {
    breaker_executor *ex = r->ex;
    struct bounds bd = {.caller = r->call_deadline,
                        .dependency = BREAKER_NO_DEADLINE,
                        .probe = is_probe ? probe_last : BREAKER_NO_DEADLINE};
    uint64_t limit = ex->cfg.retry.attempt_timeout_ns;
    /* A limit that would run past the end of the clock is no limit: the sum
     * must not wrap round to a deadline already passed. */
    if (limit != 0 && UINT64_MAX - now > limit) bd.dependency = now + limit;
    breaker_attempt a = {.number = number,
                         .start_ns = now,
                         .deadline_ns = earliest(earliest(bd.caller, bd.dependency), bd.probe),
                         .retry = BREAKER_RETRY_AUTO,
                         .is_probe = is_probe};
    a.timeout_ns = breaker_deadline_remaining(a.deadline_ns, now);

    enum breaker_outcome out = r->call->op(r->call->op_ctx, &a);
    uint64_t end = now_of(ex);
    if (out != BREAKER_SUCCESS && out != BREAKER_FAILURE && out != BREAKER_IGNORED &&
        out != BREAKER_CANCELLED)
        out = BREAKER_FAILURE; /* an answer we cannot read is not a success */

    /* Late means an answer after a deadline. A cancellation is the caller's
     * doing, not lateness. */
    enum overrun over = out == BREAKER_CANCELLED ? OVERRAN_NONE : overrun_of(&bd, end);
    enum breaker_outcome rec = recorded_outcome(ex, over, out);

    res->attempts++;
    count(&ex->n.attempts, 1);
    if (number > 1) count(&ex->n.retries, 1);
    if (per_attempt != NULL) {
        int rc = breaker_complete_from(per_attempt, permit, rec, r->call->source);
        if (rc == BREAKER_OK) res->breaker_records++;
        if (is_probe && over != OVERRAN_PROBE && rec != BREAKER_CANCELLED &&
            timed_out_meanwhile(ex, rc, probe_last)) {
            over = OVERRAN_PROBE;
            rec = BREAKER_FAILURE;
        }
    }
    bool late = over != OVERRAN_NONE;
    if (late) count(&ex->n.late, 1);
    res->outcome = rec;
    res->error = a.error;
    res->late = late;
    res->status = late ? BREAKER_DEADLINE_EXCEEDED : BREAKER_OK;
    res->layer = BREAKER_LAYER_NONE;
    res->retry_after_ns = 0;
    if (rec == BREAKER_SUCCESS) {
        res->kind = BREAKER_RESULT_SUCCEEDED;
        return false;
    }
    if (over == OVERRAN_CALLER && rec == BREAKER_CANCELLED) {
        /* The caller's deadline cut the attempt short: the request failed
         * for the caller, and has no time left for another attempt. */
        res->kind = BREAKER_RESULT_FAILED;
        res->layer = BREAKER_LAYER_DEADLINE;
        count(&ex->n.stopped_deadline, 1);
        return false;
    }
    if (rec == BREAKER_CANCELLED) {
        res->kind = BREAKER_RESULT_CANCELLED;
        res->layer = BREAKER_LAYER_CALLER;
        res->status = BREAKER_ECANCELED;
        return false;
    }
    res->kind = BREAKER_RESULT_FAILED;
    /* Whether the request may go on is for the caller of this function;
     * note here only whether the outcome itself allows a retry. */
    bool retryable =
        a.retry == BREAKER_RETRY_YES || (a.retry == BREAKER_RETRY_AUTO && rec == BREAKER_FAILURE);
    if (!retryable) res->layer = BREAKER_LAYER_RETRY_POLICY;
    return true;
}

/* Decide whether a failed attempt `number` is retried, and sleep the
 * backoff if so. @return true to make another attempt. */
static bool retry_after_backoff(struct run *r, uint32_t number, uint64_t *prev_backoff,
                                breaker *per_attempt, breaker_result *res) {
    breaker_executor *ex = r->ex;
    if (res->layer == BREAKER_LAYER_RETRY_POLICY || number >= ex->cfg.retry.max_attempts ||
        !r->call->idempotent) {
        res->layer = BREAKER_LAYER_RETRY_POLICY;
        return false;
    }
    uint64_t backoff = breaker_retry_backoff_ns(&ex->cfg.retry, number, *prev_backoff,
                                                breaker__splitmix64_next(&r->rng));
    *prev_backoff = backoff;
    /* The next attempt would start at now + backoff: if that is at or past
     * the deadline, neither sleep nor attempt. */
    if (breaker_deadline_remaining(r->deadline, now_of(ex)) <= backoff) {
        stop(res, BREAKER_LAYER_DEADLINE, BREAKER_DEADLINE_EXCEEDED, UINT64_MAX);
        count(&ex->n.stopped_deadline, 1);
        return false;
    }
    /* A breaker that will still refuse when the backoff ends makes the sleep
     * pointless: stop now, and say when it may admit again. */
    if (per_attempt != NULL && breaker_retry_after_ns(per_attempt) > backoff) {
        stop_by_breaker(res, per_attempt, BREAKER_OK);
        count(&ex->n.stopped_breaker, 1);
        return false;
    }
    /* The budget last, so that a retry stopped by the checks above spends
     * nothing. It is withdrawn before the sleep, not after, so that a
     * refusal costs the caller no backoff and so that concurrent requests
     * see this retry while it sleeps; one not made is refunded. */
    if (ex->cfg.budget != NULL &&
        breaker_retry_budget_withdraw_refundable(ex->cfg.budget, &r->retry) != BREAKER_OK) {
        stop(res, BREAKER_LAYER_RETRY_BUDGET, BREAKER_RETRY_BUDGET_EXHAUSTED, 0);
        count(&ex->n.stopped_budget, 1);
        return false;
    }
    if (backoff > 0 && ex->cfg.sleep(ex->cfg.sleep_ctx, backoff) != 0) {
        refund_retry(r);
        res->kind = BREAKER_RESULT_CANCELLED;
        res->layer = BREAKER_LAYER_CALLER;
        res->status = BREAKER_ECANCELED;
        return false;
    }
    res->slept_ns += backoff;
    count(&ex->n.slept_ns, backoff);
    return true;
}

/* The retry loop. `per_attempt` is the breaker when each attempt takes its
 * own permit (RETRY_OUTSIDE_BREAKER), else NULL. */
static void attempts(struct run *r, breaker *per_attempt, breaker_result *res) {
    uint64_t prev_backoff = 0;
    for (uint32_t number = 1;; number++) {
        uint64_t now = now_of(r->ex);
        if (now >= r->deadline) {
            refund_retry(r);
            stop(res, BREAKER_LAYER_DEADLINE, BREAKER_DEADLINE_EXCEEDED, UINT64_MAX);
            if (res->attempts > 0) count(&r->ex->n.stopped_deadline, 1);
            return;
        }
        breaker_permit permit;
        bool is_probe = r->probe;
        uint64_t probe_last = r->probe_last;
        if (per_attempt != NULL) {
            int rc = breaker_acquire_from(per_attempt, &permit, r->call->source);
            if (rc != BREAKER_OK) {
                refund_retry(r);
                stop_by_breaker(res, per_attempt, rc);
                if (res->attempts > 0) count(&r->ex->n.stopped_breaker, 1);
                return;
            }
            /* `now` was read before the admission: the probe's deadline
             * computed from it is exact or early, never late. */
            is_probe = breaker_permit_is_probe(&permit) != 0;
            probe_last = is_probe ? probe_last_ns(r->ex, now) : BREAKER_NO_DEADLINE;
        }
        r->retry.opaque = 0; /* the retry is made now: its charge stands */
        if (!attempt_once(r, number, now, is_probe, probe_last, per_attempt, &permit, res)) return;
        if (!retry_after_backoff(r, number, &prev_backoff, per_attempt, res)) return;
    }
}

/* The breaker around the whole loop: one permit, one recorded outcome. A
 * probe permit bounds the whole request: every attempt is a probe, none
 * starts at or after the probe's deadline, and an answer after it is the
 * probe timing out. */
static void breaker_outside(struct run *r, breaker *b, breaker_result *res) {
    breaker_permit permit;
    uint64_t admitted = now_of(r->ex);
    int rc = breaker_acquire_from(b, &permit, r->call->source);
    if (rc != BREAKER_OK) {
        stop_by_breaker(res, b, rc);
        return;
    }
    if (breaker_permit_is_probe(&permit)) {
        r->probe = true;
        r->probe_last = probe_last_ns(r->ex, admitted);
        r->deadline = earliest(r->deadline, r->probe_last);
    }
    attempts(r, NULL, res);
    enum breaker_outcome rec = res->outcome;
    if (res->attempts == 0)
        rec = BREAKER_IGNORED; /* the dependency was not called: no evidence */
    else if (res->kind == BREAKER_RESULT_CANCELLED)
        rec = BREAKER_CANCELLED;
    rc = breaker_complete_from(b, &permit, rec, r->call->source);
    if (rc == BREAKER_OK) res->breaker_records++;
    if (!r->probe) return;
    if (res->kind == BREAKER_RESULT_SUCCEEDED && timed_out_meanwhile(r->ex, rc, r->probe_last)) {
        /* Not an answer the breaker took: it timed the probe out first. */
        if (!res->late) count(&r->ex->n.late, 1);
        res->kind = BREAKER_RESULT_FAILED;
        res->outcome = BREAKER_FAILURE;
        res->late = true;
        res->status = BREAKER_DEADLINE_EXCEEDED;
        res->layer = BREAKER_LAYER_DEADLINE;
    }
    /* Stopped by the probe's deadline rather than the caller's: a new
     * request may be admitted once the breaker's wait is over. */
    if (res->layer == BREAKER_LAYER_DEADLINE && r->deadline < r->call_deadline &&
        res->kind != BREAKER_RESULT_SUCCEEDED)
        res->retry_after_ns = breaker_retry_after_ns(b);
}

static void run_fallback(const breaker_call *call, breaker_result *res) {
    if (call->fallback == NULL) return;
    if (res->kind != BREAKER_RESULT_FAILED && res->kind != BREAKER_RESULT_REFUSED) return;
    uint64_t age = 0;
    int rc = call->fallback(call->fallback_ctx, res, &age);
    res->fallback_ran = true;
    res->fallback_status = rc;
    if (rc != BREAKER_OK) return;
    res->fallback_of = res->kind;
    res->fallback_age_ns = age;
    res->kind = BREAKER_RESULT_FALLBACK;
}

static void count_result(breaker_executor *ex, const breaker_result *res) {
    enum breaker_result_kind k =
        res->kind == BREAKER_RESULT_FALLBACK ? res->fallback_of : res->kind;
    switch (k) {
    case BREAKER_RESULT_SUCCEEDED:
        count(&ex->n.succeeded, 1);
        break;
    case BREAKER_RESULT_FAILED:
        count(&ex->n.failed, 1);
        break;
    case BREAKER_RESULT_REFUSED:
        if (res->layer == BREAKER_LAYER_DEADLINE) count(&ex->n.refused_deadline, 1);
        if (res->layer == BREAKER_LAYER_BULKHEAD) count(&ex->n.refused_bulkhead, 1);
        if (res->layer == BREAKER_LAYER_BREAKER) count(&ex->n.refused_breaker, 1);
        break;
    case BREAKER_RESULT_CANCELLED:
        count(&ex->n.cancelled, 1);
        break;
    case BREAKER_RESULT_FALLBACK:
        break;
    }
    if (res->kind == BREAKER_RESULT_FALLBACK) count(&ex->n.fallbacks, 1);
    count(&ex->n.breaker_records, res->breaker_records);
}

int breaker_executor_run(breaker_executor *ex, const breaker_call *call, breaker_result *res) {
    if (call->op == NULL) return BREAKER_EINVAL;
    memset(res, 0, sizeof(*res));
    res->outcome = BREAKER_IGNORED;
    count(&ex->n.requests, 1);
    uint64_t seq = atomic_fetch_add_explicit(&ex->sequence, 1, memory_order_relaxed);
    uint64_t deadline = call->deadline_ns == 0 ? BREAKER_NO_DEADLINE : call->deadline_ns;
    struct run r = {.ex = ex,
                    .call = call,
                    .deadline = deadline,
                    .call_deadline = deadline,
                    .probe_last = BREAKER_NO_DEADLINE,
                    .rng = ex->seed ^ (seq * UINT64_C(0xd1b54a32d192ed03))};
    uint64_t start = now_of(ex);

    if (start >= r.deadline) {
        stop(res, BREAKER_LAYER_DEADLINE, BREAKER_DEADLINE_EXCEEDED, UINT64_MAX);
        goto done;
    }
    breaker_bulkhead *bh = ex->cfg.bulkhead;
    if (bh != NULL) {
        uint64_t wait = breaker_deadline_remaining(r.deadline, start);
        if (wait > ex->cfg.bulkhead_max_wait_ns) wait = ex->cfg.bulkhead_max_wait_ns;
        int rc =
            wait == 0 ? breaker_bulkhead_try_acquire(bh) : breaker_bulkhead_acquire_wait(bh, wait);
        if (rc != BREAKER_OK) {
            /* 0: a slot may free at any moment; the caller may try again. */
            stop(res, BREAKER_LAYER_BULKHEAD, rc, 0);
            goto done;
        }
    }
    if (ex->cfg.budget != NULL) breaker_retry_budget_deposit(ex->cfg.budget);
    if (ex->cfg.b != NULL && ex->cfg.order == BREAKER_ORDER_BREAKER_OUTSIDE_RETRY)
        breaker_outside(&r, ex->cfg.b, res);
    else
        attempts(&r, ex->cfg.b, res);
    if (bh != NULL) (void)breaker_bulkhead_release(bh);
    /* A request that FAILED whatever stopped it (its attempts spent, say)
     * may have left the breaker refusing: a probe that failed or timed out
     * reopened it. A new request is no use before the breaker admits one,
     * so the result says so (a retry hint of 0 sent callers straight into
     * the refusal). UINT64_MAX (retrying will not help) stays. */
    if (res->kind == BREAKER_RESULT_FAILED && ex->cfg.b != NULL &&
        res->retry_after_ns != UINT64_MAX) {
        uint64_t ra = breaker_retry_after_ns(ex->cfg.b);
        if (ra > res->retry_after_ns) res->retry_after_ns = ra;
    }

done:
    res->elapsed_ns = now_of(ex) - start;
    run_fallback(call, res);
    count_result(ex, res);
    return BREAKER_OK;
}

int breaker_executor_stats_get(breaker_executor *ex, breaker_executor_stats *out) {
#define READ(f) out->f = atomic_load_explicit(&ex->n.f, memory_order_relaxed)
    READ(requests);
    READ(attempts);
    READ(retries);
    READ(succeeded);
    READ(failed);
    READ(refused_deadline);
    READ(refused_bulkhead);
    READ(refused_breaker);
    READ(stopped_breaker);
    READ(stopped_budget);
    READ(stopped_deadline);
    READ(late);
    READ(fallbacks);
    READ(cancelled);
    READ(breaker_records);
    READ(slept_ns);
#undef READ
    return BREAKER_OK;
}

const char *breaker_result_kind_name(enum breaker_result_kind kind) {
    switch (kind) {
    case BREAKER_RESULT_SUCCEEDED:
        return "succeeded";
    case BREAKER_RESULT_FAILED:
        return "failed";
    case BREAKER_RESULT_REFUSED:
        return "refused";
    case BREAKER_RESULT_FALLBACK:
        return "fallback";
    case BREAKER_RESULT_CANCELLED:
        return "cancelled";
    }
    return "unknown";
}

const char *breaker_layer_name(enum breaker_layer layer) {
    switch (layer) {
    case BREAKER_LAYER_NONE:
        return "none";
    case BREAKER_LAYER_DEADLINE:
        return "deadline";
    case BREAKER_LAYER_BULKHEAD:
        return "bulkhead";
    case BREAKER_LAYER_BREAKER:
        return "breaker";
    case BREAKER_LAYER_RETRY_BUDGET:
        return "retry_budget";
    case BREAKER_LAYER_RETRY_POLICY:
        return "retry_policy";
    case BREAKER_LAYER_CALLER:
        return "caller";
    }
    return "unknown";
}

const char *breaker_order_name(enum breaker_order order) {
    switch (order) {
    case BREAKER_ORDER_RETRY_OUTSIDE_BREAKER:
        return "retry_outside_breaker";
    case BREAKER_ORDER_BREAKER_OUTSIDE_RETRY:
        return "breaker_outside_retry";
    }
    return "unknown";
}

const char *breaker_jitter_name(enum breaker_jitter jitter) {
    switch (jitter) {
    case BREAKER_JITTER_FULL:
        return "full";
    case BREAKER_JITTER_DECORRELATED:
        return "decorrelated";
    case BREAKER_JITTER_NONE:
        return "none";
    }
    return "unknown";
}
