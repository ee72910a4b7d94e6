/* SPDX-License-Identifier: MIT */
/*
 * test_differential.c - the real breaker against the reference model
 * (reference_model.c), step by step, on long seeded random sequences.
 *
 * One thread, one fake clock read by both. Each step is one operation
 * (acquire, complete with an outcome, a clock advance, force_open,
 * force_closed, reset, get_state, retry_after, a bad completion); after every
 * step the return value, the generation, every field of breaker_stats and the
 * transitions reported through on_event must be identical. Admitted permits
 * wait in a pool and are completed in random order, late (after the clock
 * moved and the generation changed), and some twice.
 *
 * Reproduce or extend (see docs/correctness.md):
 *   BREAKER_DIFF_STEPS=N    steps per variant (default 100000)
 *   BREAKER_DIFF_SEED=S     first seed (default: a fixed seed per variant)
 *   BREAKER_DIFF_SEEDS=N    how many consecutive seeds to run (default 1)
 *   BREAKER_DIFF_ONLY=name  run only the variants whose name contains `name`
 *   BREAKER_DIFF_TRACE=N    steps of history printed on a failure (default 40)
 */
#include "reference_model.h"

#include <breaker.h>

#include "test_breaker.h"

#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define US UINT64_C(1000)
#define MS UINT64_C(1000000)

#define POOL_MAX    48 /* outstanding admitted permits */
#define SETTLED_MAX 16 /* settled permits kept to complete a second time */
#define TRACE_MAX   256
#define EVENTS_MAX  64

/* ---- Deterministic randomness --------------------------------------------- */

static bool rng_chance(struct ref_rng *r, unsigned percent) {
    return ref_rng_below(r, 100) < percent;
}

/* ---- The fake clock and the event log --------------------------------------- */

struct fake_clock {
    uint64_t now;
};

static uint64_t fake_now(void *ctx) { return ((const struct fake_clock *)ctx)->now; }

struct event_log {
    breaker_event ev[EVENTS_MAX];
    size_t n;
    size_t lost;
};

static void log_event(void *ctx, breaker *b, const breaker_event *ev) {
    struct event_log *log = ctx;
    (void)b;
    if (log->n < EVENTS_MAX)
        log->ev[log->n++] = *ev;
    else
        log->lost++;
}

/* ---- One run: a breaker, its model, the permits in flight --------------------- */

/* An admitted permit: the real one and the model's, completed together. */
struct slot {
    breaker_permit real;
    struct ref_permit model;
};

struct coverage {
    uint64_t reasons[BREAKER_REASON_COUNT];
    uint64_t ramp_trips; /* trips from CLOSED during a ramp (a failed recovery) */
    uint64_t statuses[BREAKER_REJECTED_RAMP + 1];
};

struct run {
    const char *variant;
    uint64_t seed;
    unsigned long step;
    unsigned long steps;
    struct ref_rng rng;
    struct fake_clock clock;
    breaker_config cfg;
    breaker *b;
    breaker *other; /* a second breaker, for permits this one never admitted */
    struct ref_model m;
    struct event_log events;

    struct slot pool[POOL_MAX];
    size_t npool;
    struct slot settled[SETTLED_MAX];
    size_t nsettled;
    struct slot rejected; /* the last refused permit */
    bool have_rejected;
    unsigned fail_percent; /* the dependency's health in this phase */
    bool outage;           /* the dependency never recovers; no manual control */
    uint32_t max_k;        /* the most failed recoveries seen */

    char trace[TRACE_MAX][160];
    unsigned long ntrace;
    unsigned trace_keep;
    struct coverage cov;
};

static void trace(struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void trace(struct run *r, const char *fmt, ...) {
    char *line = r->trace[r->ntrace++ % TRACE_MAX];
    int n = snprintf(line, 160, "step %lu now=%" PRIu64 " gen=%" PRIu64 " %s: ", r->step,
                     r->clock.now, r->m.generation, breaker_state_name(r->m.state));
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && n < 160) vsnprintf(line + n, (size_t)(160 - n), fmt, ap);
    va_end(ap);
}

static void report_failure(const struct run *r) {
    unsigned long first = r->ntrace > r->trace_keep ? r->ntrace - r->trace_keep : 0;
    fprintf(stderr, "---- last %lu operations ----\n", r->ntrace - first);
    for (unsigned long i = first; i < r->ntrace; i++)
        fprintf(stderr, "  %s\n", r->trace[i % TRACE_MAX]);
    fprintf(stderr,
            "DIFFERENTIAL MISMATCH: variant %s, seed 0x%016" PRIx64 ", step %lu\n"
            "reproduce: BREAKER_DIFF_ONLY=%s BREAKER_DIFF_SEED=0x%016" PRIx64
            " BREAKER_DIFF_STEPS=%lu ./test_differential\n",
            r->variant, r->seed, r->step, r->variant, r->seed, r->step + 1);
}

/* Compare one value of the model (`want`) with the breaker's (`got`). */
#define EXPECT_U64(r, what, want, got)                                                             \
    do {                                                                                           \
        uint64_t want_ = (uint64_t)(want), got_ = (uint64_t)(got);                                 \
        if (want_ != got_) {                                                                       \
            report_failure(r);                                                                     \
            fail_msg("%s: model %" PRIu64 " (0x%" PRIx64 "), breaker %" PRIu64 " (0x%" PRIx64 ")", \
                     what, want_, want_, got_, got_);                                              \
        }                                                                                          \
    } while (0)

#define EXPECT_STATUS(r, what, want, got)                                          \
    do {                                                                           \
        int want_ = (want), got_ = (got);                                          \
        if (want_ != got_) {                                                       \
            report_failure(r);                                                     \
            fail_msg("%s: model %s, breaker %s", what, breaker_status_name(want_), \
                     breaker_status_name(got_));                                   \
        }                                                                          \
    } while (0)

#define EXPECT_F64(r, what, want, got)                                     \
    do {                                                                   \
        double want_ = (want), got_ = (got);                               \
        if (want_ != got_) {                                               \
            report_failure(r);                                             \
            fail_msg("%s: model %.17g, breaker %.17g", what, want_, got_); \
        }                                                                  \
    } while (0)

static void compare_stats(struct run *r) {
    breaker_stats want, got;
    ref_model_stats(&r->m, r->clock.now, &want);
    assert_int_equal(breaker_stats_get(r->b, &got), BREAKER_OK);
    EXPECT_U64(r, "stats.state", want.state, got.state);
    EXPECT_U64(r, "stats.generation", want.generation, got.generation);
    EXPECT_U64(r, "stats.state_since_ns", want.state_since_ns, got.state_since_ns);
    EXPECT_U64(r, "stats.admitted", want.admitted, got.admitted);
    EXPECT_U64(r, "stats.rejected_open", want.rejected_open, got.rejected_open);
    EXPECT_U64(r, "stats.rejected_half_open", want.rejected_half_open, got.rejected_half_open);
    EXPECT_U64(r, "stats.rejected_forced", want.rejected_forced, got.rejected_forced);
    EXPECT_U64(r, "stats.rejected_ramp", want.rejected_ramp, got.rejected_ramp);
    EXPECT_U64(r, "stats.successes", want.successes, got.successes);
    EXPECT_U64(r, "stats.failures", want.failures, got.failures);
    EXPECT_U64(r, "stats.ignored", want.ignored, got.ignored);
    EXPECT_U64(r, "stats.cancelled", want.cancelled, got.cancelled);
    EXPECT_U64(r, "stats.slow", want.slow, got.slow);
    EXPECT_U64(r, "stats.stale", want.stale, got.stale);
    EXPECT_U64(r, "stats.duplicates", want.duplicates, got.duplicates);
    EXPECT_U64(r, "stats.probes_admitted", want.probes_admitted, got.probes_admitted);
    EXPECT_U64(r, "stats.probes_succeeded", want.probes_succeeded, got.probes_succeeded);
    EXPECT_U64(r, "stats.probes_failed", want.probes_failed, got.probes_failed);
    EXPECT_U64(r, "stats.probes_timed_out", want.probes_timed_out, got.probes_timed_out);
    EXPECT_U64(r, "stats.transitions", want.transitions, got.transitions);
    static const char *const tis[5] = {
        "stats.time_in_state_ns[closed]", "stats.time_in_state_ns[open]",
        "stats.time_in_state_ns[half_open]", "stats.time_in_state_ns[forced_open]",
        "stats.time_in_state_ns[forced_closed]"};
    for (int i = 0; i < 5; i++)
        EXPECT_U64(r, tis[i], want.time_in_state_ns[i], got.time_in_state_ns[i]);
    EXPECT_U64(r, "stats.failed_recoveries", want.failed_recoveries, got.failed_recoveries);
    EXPECT_U64(r, "stats.probes_in_flight", want.probes_in_flight, got.probes_in_flight);
    EXPECT_U64(r, "stats.probe_successes", want.probe_successes, got.probe_successes);
    EXPECT_U64(r, "stats.consecutive_failures", want.consecutive_failures,
               got.consecutive_failures);
    EXPECT_U64(r, "stats.open_until_ns", want.open_until_ns, got.open_until_ns);
    EXPECT_U64(r, "stats.ramp_until_ns", want.ramp_until_ns, got.ramp_until_ns);
    EXPECT_F64(r, "stats.ramp_share", want.ramp_share, got.ramp_share);
    EXPECT_U64(r, "stats.window_calls", want.window_calls, got.window_calls);
    EXPECT_U64(r, "stats.window_failures", want.window_failures, got.window_failures);
    EXPECT_U64(r, "stats.window_slow", want.window_slow, got.window_slow);
    EXPECT_F64(r, "stats.window_failure_rate", want.window_failure_rate, got.window_failure_rate);
    EXPECT_F64(r, "stats.window_slow_rate", want.window_slow_rate, got.window_slow_rate);
    /* The identity the manual promises, on the breaker's own numbers. */
    EXPECT_U64(r, "admitted == successes + failures + ignored + stale + unsettled", got.admitted,
               got.successes + got.failures + got.ignored + got.stale + r->npool);
}

static void compare_event(struct run *r, const breaker_event *want, const breaker_event *got) {
    EXPECT_U64(r, "event.from", want->from, got->from);
    EXPECT_U64(r, "event.to", want->to, got->to);
    EXPECT_U64(r, "event.reason", want->reason, got->reason);
    EXPECT_U64(r, "event.generation", want->generation, got->generation);
    EXPECT_U64(r, "event.evidence.failed_recoveries", want->evidence.failed_recoveries,
               got->evidence.failed_recoveries);
    EXPECT_U64(r, "event.evidence.failing_sources", want->evidence.failing_sources,
               got->evidence.failing_sources);
    EXPECT_U64(r, "event.time_ns", want->time_ns, got->time_ns);
    if (want->to == BREAKER_OPEN) EXPECT_U64(r, "event.open_ns", want->open_ns, got->open_ns);
    switch (want->reason) {
    case BREAKER_REASON_CONSECUTIVE_FAILURES:
        EXPECT_U64(r, "event.evidence.consecutive_failures", want->evidence.consecutive_failures,
                   got->evidence.consecutive_failures);
        break;
    case BREAKER_REASON_FAILURE_RATE:
    case BREAKER_REASON_SLOW_CALL_RATE:
    case BREAKER_REASON_OUTSIDE_TRIP:
        EXPECT_U64(r, "event.evidence.calls", want->evidence.calls, got->evidence.calls);
        EXPECT_U64(r, "event.evidence.failures", want->evidence.failures, got->evidence.failures);
        EXPECT_U64(r, "event.evidence.slow_calls", want->evidence.slow_calls,
                   got->evidence.slow_calls);
        EXPECT_F64(r, "event.evidence.failure_rate",
                   want->evidence.calls
                       ? (double)want->evidence.failures / (double)want->evidence.calls
                       : 0.0,
                   got->evidence.failure_rate);
        EXPECT_F64(r, "event.evidence.slow_call_rate",
                   want->evidence.calls
                       ? (double)want->evidence.slow_calls / (double)want->evidence.calls
                       : 0.0,
                   got->evidence.slow_call_rate);
        break;
    case BREAKER_REASON_PROBES_SUCCEEDED:
        EXPECT_U64(r, "event.evidence.probe_successes", want->evidence.probe_successes,
                   got->evidence.probe_successes);
        break;
    case BREAKER_REASON_WAIT_ELAPSED:
    case BREAKER_REASON_PROBE_FAILED:
    case BREAKER_REASON_PROBE_TIMEOUT:
    case BREAKER_REASON_FORCED_OPEN:
    case BREAKER_REASON_FORCED_CLOSED:
    case BREAKER_REASON_RESET:
    case BREAKER_REASON_PROBE_SLOW:
    case BREAKER_REASON_OUTSIDE_CLOSE:
    case BREAKER_REASON_SERVER_DIRECTED:
    case BREAKER_REASON_OPERATOR:
    case BREAKER_REASON_RECONFIGURED:
    case BREAKER_REASON_FORCE_EXPIRED:
        break;
    }
}

static void compare_events(struct run *r) {
    breaker_event want[EVENTS_MAX];
    size_t n = ref_model_take_events(&r->m, want, EVENTS_MAX);
    EXPECT_U64(r, "events lost by the test's log", 0, r->events.lost);
    EXPECT_U64(r, "transitions reported through on_event in this step", n, r->events.n);
    for (size_t i = 0; i < n; i++) {
        compare_event(r, &want[i], &r->events.ev[i]);
        r->cov.reasons[want[i].reason]++;
        if (want[i].from == BREAKER_CLOSED && want[i].to == BREAKER_OPEN &&
            want[i].evidence.failed_recoveries > 0)
            r->cov.ramp_trips++;
        trace(r, "  event %s -> %s (%s) gen %" PRIu64, breaker_state_name(want[i].from),
              breaker_state_name(want[i].to), breaker_reason_name(want[i].reason),
              want[i].generation);
    }
    r->events.n = 0;
}

static void count_status(struct run *r, int rc) {
    if (rc >= 0 && rc <= BREAKER_REJECTED_RAMP) r->cov.statuses[rc]++;
}

/* ---- Operations ------------------------------------------------------------------ */

static int random_outcome(struct run *r) {
    uint64_t x = ref_rng_below(&r->rng, 100);
    if (x < 5) return BREAKER_IGNORED;
    if (x < 10) return BREAKER_CANCELLED;
    return ref_rng_below(&r->rng, 100) < r->fail_percent ? BREAKER_FAILURE : BREAKER_SUCCESS;
}

static const char *outcome_name(int outcome) {
    return breaker_outcome_name((enum breaker_outcome)outcome);
}

/* With failing sources on, calls name one of a few callers (or none): an
 * abusive one most of the time, so that diversity decides. */
static bool sources_on(const struct run *r) {
    return r->cfg.min_failing_sources > 1 || strstr(r->variant, "sources") != NULL;
}

static uint64_t random_source(struct run *r) {
    uint64_t pick = ref_rng_below(&r->rng, 10);
    return pick < 6 ? 1 : pick - 5; /* 0 (none) to 4 */
}

static void op_acquire(struct run *r) {
    struct slot s;
    memset(&s, 0, sizeof(s));
    /* The caller named at admission too (breaker_acquire_from()), when
     * sources are on: a probe keeps it, for its timeout and its refusal. */
    uint64_t source = sources_on(r) ? random_source(r) : 0;
    int want = ref_model_acquire_from(&r->m, r->clock.now, &s.model, source);
    int got = breaker_acquire_from(r->b, &s.real, source);
    trace(r, "acquire(source %" PRIu64 ") -> %s", source, breaker_status_name(want));
    EXPECT_STATUS(r, "breaker_acquire_from", want, got);
    count_status(r, got);
    if (got == BREAKER_OK) {
        r->pool[r->npool++] = s;
    } else {
        r->rejected = s;
        r->have_rejected = true;
    }
}

static void keep_settled(struct run *r, const struct slot *s) {
    if (r->nsettled < SETTLED_MAX)
        r->settled[r->nsettled++] = *s;
    else
        r->settled[ref_rng_below(&r->rng, SETTLED_MAX)] = *s;
}

static void op_complete(struct run *r) {
    size_t i = (size_t)ref_rng_below(&r->rng, r->npool);
    struct slot *s = &r->pool[i];
    int outcome = random_outcome(r);
    /* With failing sources on, the completion names the admission's caller
     * half of the time, and otherwise one at random (0: the permit's). */
    uint64_t source = 0;
    if (sources_on(r)) source = rng_chance(&r->rng, 50) ? s->model.source : random_source(r);
    int want = ref_model_complete_from(&r->m, r->clock.now, &s->model, outcome, source);
    int got = breaker_complete_from(r->b, &s->real, (enum breaker_outcome)outcome, source);
    trace(r, "complete(permit #%" PRIu64 " gen %" PRIu64 "%s, %s, source %" PRIu64 ") -> %s",
          s->model.id, s->model.generation, s->model.probe ? " probe" : "", outcome_name(outcome),
          source, breaker_status_name(want));
    EXPECT_STATUS(r, "breaker_complete", want, got);
    count_status(r, got);
    if (rng_chance(&r->rng, 25)) keep_settled(r, s);
    r->pool[i] = r->pool[--r->npool];
}

/* A second completion of a permit settled earlier: always ALREADY_SETTLED. */
static void op_complete_again(struct run *r) {
    struct slot *s = &r->settled[ref_rng_below(&r->rng, r->nsettled)];
    int outcome = random_outcome(r);
    int want = ref_model_complete(&r->m, r->clock.now, &s->model, outcome);
    int got = breaker_complete(r->b, &s->real, (enum breaker_outcome)outcome);
    trace(r, "complete again(permit #%" PRIu64 ", %s) -> %s", s->model.id, outcome_name(outcome),
          breaker_status_name(want));
    EXPECT_STATUS(r, "breaker_complete (second time)", want, got);
    count_status(r, got);
}

/* An outcome outside the enumeration: EINVAL, and the permit stays unsettled. */
static void op_complete_bad_outcome(struct run *r) {
    struct slot *s = &r->pool[ref_rng_below(&r->rng, r->npool)];
    int outcome = rng_chance(&r->rng, 50) ? BREAKER_CANCELLED + 1 : -1;
    int want = ref_model_complete(&r->m, r->clock.now, &s->model, outcome);
    int got = breaker_complete(r->b, &s->real, (enum breaker_outcome)outcome);
    trace(r, "complete(permit #%" PRIu64 ", outcome %d) -> %s", s->model.id, outcome,
          breaker_status_name(want));
    EXPECT_STATUS(r, "breaker_complete (bad outcome)", want, got);
    count_status(r, got);
}

/* Permits this breaker never admitted: a refused one, a zeroed one, one
 * admitted by another breaker. All EINVAL. */
static void op_complete_foreign(struct run *r) {
    struct slot s;
    memset(&s, 0, sizeof(s));
    const char *what;
    uint64_t kind = ref_rng_below(&r->rng, 3);
    if (kind == 0 && r->have_rejected) {
        s = r->rejected;
        what = "refused";
    } else if (kind == 1) {
        assert_int_equal(breaker_acquire(r->other, &s.real), BREAKER_OK);
        what = "other breaker's";
    } else {
        what = "zeroed";
    }
    int outcome = random_outcome(r);
    int want = ref_model_complete(&r->m, r->clock.now, &s.model, outcome);
    int got = breaker_complete(r->b, &s.real, (enum breaker_outcome)outcome);
    trace(r, "complete(%s permit, %s) -> %s", what, outcome_name(outcome),
          breaker_status_name(want));
    EXPECT_STATUS(r, "breaker_complete (permit not admitted here)", want, got);
    count_status(r, got);
    if (kind == 1) {
        /* Keep the other breaker tidy: it must accept its own permit. */
        assert_int_equal(breaker_complete(r->other, &s.real, BREAKER_SUCCESS), BREAKER_OK);
    }
}

/* A probe deadline, open_until, the instant a call becomes slow, or the next
 * bucket boundary: the instants where an off-by-one shows. 0 if none is
 * ahead. */
static uint64_t interesting_instant(struct run *r) {
    const struct ref_model *m = &r->m;
    uint64_t now = r->clock.now;
    switch (ref_rng_below(&r->rng, 4)) {
    case 0:
        if (m->state == BREAKER_OPEN && m->open_until > now) return m->open_until;
        break;
    case 1:
        if (m->state == BREAKER_HALF_OPEN && m->nprobes > 0) {
            uint64_t d = m->probes[ref_rng_below(&r->rng, m->nprobes)].deadline;
            if (d > now) return d;
        }
        break;
    case 2:
        /* The instant an outstanding call becomes slow. */
        if (r->cfg.slow_call_ns != 0 && r->npool > 0) {
            uint64_t t =
                r->pool[ref_rng_below(&r->rng, r->npool)].model.admitted_at + r->cfg.slow_call_ns;
            if (t > now) return t;
        }
        break;
    default:
        if (m->bucket_ns > 0)
            return m->epoch + ((now - m->epoch) / m->bucket_ns + 1) * m->bucket_ns;
        break;
    }
    return 0;
}

static void op_advance(struct run *r) {
    const breaker_config *c = &r->cfg;
    uint64_t d;
    uint64_t x = ref_rng_below(&r->rng, 100);
    if (x < 10) {
        d = 0;
    } else if (x < 30) {
        d = 1 + ref_rng_below(&r->rng, 999);
    } else if (x < 55) {
        uint64_t span = c->slow_call_ns ? 2 * c->slow_call_ns : 200 * US;
        d = 1 + ref_rng_below(&r->rng, span);
    } else if (x < 70) {
        d = 1 + ref_rng_below(&r->rng, r->m.bucket_ns);
    } else if (x < 80) {
        d = 1 + ref_rng_below(&r->rng, c->open_ns);
    } else if (x < 85) {
        d = 1 + ref_rng_below(&r->rng, c->probe_timeout_ns);
    } else if (x < 98) {
        uint64_t t = interesting_instant(r);
        d = t > r->clock.now ? t - r->clock.now : 0;
        /* Land one nanosecond before, on, or after the instant. */
        uint64_t nudge = ref_rng_below(&r->rng, 3);
        if (nudge == 0 && d > 0) d--;
        if (nudge == 2) d++;
    } else {
        d = c->window_ns + ref_rng_below(&r->rng, c->open_max_ns);
    }
    r->clock.now += d;
    trace(r, "advance clock by %" PRIu64, d);
}

static void op_force_open(struct run *r) {
    int want = ref_model_force_open(&r->m, r->clock.now);
    trace(r, "force_open");
    EXPECT_STATUS(r, "breaker_force_open", want, breaker_force_open(r->b));
}

static void op_force_closed(struct run *r) {
    int want = ref_model_force_closed(&r->m, r->clock.now);
    trace(r, "force_closed");
    EXPECT_STATUS(r, "breaker_force_closed", want, breaker_force_closed(r->b));
}

static void op_reset(struct run *r) {
    int want = ref_model_reset(&r->m, r->clock.now);
    trace(r, "reset");
    EXPECT_STATUS(r, "breaker_reset", want, breaker_reset(r->b));
}

static void op_get_state(struct run *r) {
    enum breaker_state want = ref_model_get_state(&r->m, r->clock.now);
    trace(r, "get_state -> %s", breaker_state_name(want));
    EXPECT_U64(r, "breaker_get_state", want, breaker_get_state(r->b));
}

static void op_retry_after(struct run *r) {
    uint64_t want = ref_model_retry_after(&r->m, r->clock.now);
    trace(r, "retry_after -> %" PRIu64, want);
    EXPECT_U64(r, "breaker_retry_after_ns", want, breaker_retry_after_ns(r->b));
}

/* An outage that never ends: every recovery fails, so the failed-recovery
 * count climbs to its ceiling (4095) and the wait stays at its cap. The clock
 * mostly jumps to the next instant that matters. */
static void outage_step(struct run *r) {
    uint64_t x = ref_rng_below(&r->rng, 100);
    if (x < 35) {
        if (r->npool < POOL_MAX) op_acquire(r);
    } else if (x < 65) {
        if (r->npool > 0) op_complete(r);
    } else if (x < 95) {
        uint64_t t = r->m.state == BREAKER_OPEN ? r->m.open_until : 0;
        if (r->m.state == BREAKER_HALF_OPEN && r->m.nprobes > 0) t = r->m.probes[0].deadline;
        if (t > r->clock.now) {
            r->clock.now = t + ref_rng_below(&r->rng, 2);
            trace(r, "advance clock to %" PRIu64, r->clock.now);
        }
    } else if (x < 97) {
        op_get_state(r);
    } else {
        op_retry_after(r);
    }
}

/* One step: pick an operation by weight. Manual control is rare so that the
 * automatic transitions get most of the time. */
static void step(struct run *r) {
    if (r->outage) {
        outage_step(r);
        goto check;
    }
    uint64_t x = ref_rng_below(&r->rng, 1000);
    if (x < 360) {
        if (r->npool < POOL_MAX)
            op_acquire(r);
        else
            op_complete(r);
    } else if (x < 640) {
        if (r->npool > 0)
            op_complete(r);
        else
            op_acquire(r);
    } else if (x < 850) {
        op_advance(r);
    } else if (x < 890) {
        op_get_state(r);
    } else if (x < 930) {
        op_retry_after(r);
    } else if (x < 950) {
        if (r->nsettled > 0) op_complete_again(r);
    } else if (x < 960) {
        if (r->npool > 0) op_complete_bad_outcome(r);
    } else if (x < 970) {
        op_complete_foreign(r);
    } else if (x < 974) {
        op_force_open(r);
    } else if (x < 978) {
        op_force_closed(r);
    } else if (x < 984) {
        op_reset(r);
    } else {
        /* A change of phase: the dependency gets better or worse. */
        static const unsigned phases[] = {0, 2, 10, 30, 50, 70, 100};
        r->fail_percent = phases[ref_rng_below(&r->rng, sizeof(phases) / sizeof(phases[0]))];
        trace(r, "dependency now fails %u%% of calls", r->fail_percent);
    }
check:
    if (r->m.k > r->max_k) r->max_k = r->m.k;
    EXPECT_U64(r, "breaker_generation", ref_model_generation(&r->m), breaker_generation(r->b));
    compare_events(r);
    compare_stats(r);
}

/* ---- Variants ---------------------------------------------------------------------- */

static unsigned long env_ulong(const char *name, unsigned long dflt) {
    const char *v = getenv(name);
    if (v == NULL || *v == '\0') return dflt;
    return strtoul(v, NULL, 0);
}

static uint64_t env_u64(const char *name, uint64_t dflt) {
    const char *v = getenv(name);
    if (v == NULL || *v == '\0') return dflt;
    return strtoull(v, NULL, 0);
}

/* Every field explicit: the model applies no defaults. Durations are
 * deliberately not multiples of a microsecond, to exercise the rounding. */
static void base_config(breaker_config *c) {
    breaker_config_init(c);
    c->trip = BREAKER_TRIP_CONSECUTIVE;
    c->failure_threshold = 3;
    c->window_size = 10;
    c->window_ns = 10 * MS;
    c->window_buckets = 5;
    c->min_calls = 5;
    c->failure_rate = 0.5;
    c->slow_call_ns = 0;
    c->slow_call_rate = 0;
    c->open_ns = 1 * MS + 123;
    c->open_backoff = 2.0;
    c->open_max_ns = 8 * MS;
    c->open_jitter = 0;
    c->half_open_max_probes = 1;
    c->half_open_successes = 2;
    c->probe_timeout_ns = 2500 * US + 500;
    c->ramp_ns = 0;
    c->ramp_start = 0.1;
    c->min_failing_sources = 0;
    c->cancelled_as = BREAKER_IGNORED;
    c->seed = UINT64_C(0x5eed);
}

/* The run in progress, so that the teardown can release it when a failed
 * assertion leaves the test early. */
static struct run *current_run;

static void free_run(struct run *r) {
    if (r == NULL) return;
    if (r->m.probes != NULL) ref_model_fini(&r->m);
    test_breaker_destroy(r->other);
    test_breaker_destroy(r->b);
    free(r);
}

static int teardown_run(void **state) {
    (void)state;
    free_run(current_run);
    current_run = NULL;
    return 0;
}

static void run_one(const char *variant, const breaker_config *cfg, uint64_t seed,
                    unsigned long steps, bool outage) {
    struct run *r = calloc(1, sizeof(*r));
    assert_non_null(r);
    current_run = r;
    r->outage = outage;
    r->variant = variant;
    r->seed = seed;
    r->steps = steps;
    r->rng.s = seed;
    r->trace_keep = (unsigned)env_ulong("BREAKER_DIFF_TRACE", 40);
    if (r->trace_keep > TRACE_MAX) r->trace_keep = TRACE_MAX;
    /* An epoch that is not on a microsecond, so rounding is visible. */
    r->clock.now = UINT64_C(1000000000000) + ref_rng_below(&r->rng, UINT64_C(1000000000));
    r->fail_percent = outage ? 100 : 10;
    r->cfg = *cfg;
    r->cfg.clock = fake_now;
    r->cfg.clock_ctx = &r->clock;
    r->cfg.on_event = log_event;
    r->cfg.event_ctx = &r->events;
    assert_int_equal(test_breaker_create(&r->cfg, &r->b), BREAKER_OK);
    breaker_config other_cfg = r->cfg;
    other_cfg.on_event = NULL;
    other_cfg.trip = BREAKER_TRIP_CONSECUTIVE;
    other_cfg.failure_threshold = 1000000;
    other_cfg.slow_call_rate = 0;
    assert_int_equal(test_breaker_create(&other_cfg, &r->other), BREAKER_OK);
    assert_int_equal(ref_model_init(&r->m, &r->cfg, r->clock.now), 0);

    compare_stats(r);
    for (r->step = 0; r->step < steps; r->step++)
        step(r);

    /* Settle everything: afterwards the counters add up with no unsettled term. */
    while (r->npool > 0) {
        op_complete(r);
        compare_events(r);
        compare_stats(r);
    }

    print_message(
        "%-40s seed 0x%016" PRIx64 " %lu steps: gen %" PRIu64 "; trips %" PRIu64 "+%" PRIu64
        "+%" PRIu64 ", wait_elapsed %" PRIu64 ", probe failed %" PRIu64 " timeout %" PRIu64
        " slow %" PRIu64 ", closed by probes %" PRIu64 "; stale %" PRIu64 ", settled twice %" PRIu64
        ", rejected %" PRIu64 "+%" PRIu64 "\n",
        variant, seed, steps, r->m.generation, r->cov.reasons[BREAKER_REASON_CONSECUTIVE_FAILURES],
        r->cov.reasons[BREAKER_REASON_FAILURE_RATE], r->cov.reasons[BREAKER_REASON_SLOW_CALL_RATE],
        r->cov.reasons[BREAKER_REASON_WAIT_ELAPSED], r->cov.reasons[BREAKER_REASON_PROBE_FAILED],
        r->cov.reasons[BREAKER_REASON_PROBE_TIMEOUT], r->cov.reasons[BREAKER_REASON_PROBE_SLOW],
        r->cov.reasons[BREAKER_REASON_PROBES_SUCCEEDED], r->cov.statuses[BREAKER_STALE],
        r->cov.statuses[BREAKER_ALREADY_SETTLED], r->cov.statuses[BREAKER_REJECTED_OPEN],
        r->cov.statuses[BREAKER_REJECTED_HALF_OPEN]);

    /* A run that never left CLOSED would prove little: at the CI length every
     * variant must have been through every automatic transition. */
    if (steps >= 100000 && outage) {
        assert_int_equal(r->max_k, 4095);
        assert_true(r->cov.reasons[BREAKER_REASON_PROBE_FAILED] > 0);
        assert_true(r->cov.reasons[BREAKER_REASON_PROBE_TIMEOUT] > 0);
    }
    if (steps >= 100000 && !outage) {
        const breaker_config *c = &r->cfg;
        uint64_t trips = r->cov.reasons[BREAKER_REASON_CONSECUTIVE_FAILURES] +
                         r->cov.reasons[BREAKER_REASON_FAILURE_RATE] +
                         r->cov.reasons[BREAKER_REASON_SLOW_CALL_RATE];
        assert_true(trips > 0);
        assert_true(r->cov.reasons[BREAKER_REASON_WAIT_ELAPSED] > 0);
        assert_true(r->cov.reasons[BREAKER_REASON_PROBE_FAILED] > 0);
        assert_true(r->cov.reasons[BREAKER_REASON_PROBE_TIMEOUT] > 0);
        assert_true(r->cov.reasons[BREAKER_REASON_PROBES_SUCCEEDED] > 0);
        assert_true(r->cov.statuses[BREAKER_STALE] > 0);
        assert_true(r->cov.statuses[BREAKER_ALREADY_SETTLED] > 0);
        assert_true(r->cov.statuses[BREAKER_REJECTED_OPEN] > 0);
        if (c->half_open_max_probes > 1 || c->half_open_successes > 1)
            assert_true(r->cov.statuses[BREAKER_REJECTED_HALF_OPEN] > 0);
        if (c->slow_call_rate > 0) assert_true(r->cov.reasons[BREAKER_REASON_PROBE_SLOW] > 0);
        if (c->slow_call_rate > 0 && c->trip != BREAKER_TRIP_CONSECUTIVE)
            assert_true(r->cov.reasons[BREAKER_REASON_SLOW_CALL_RATE] > 0);
        if (c->ramp_ns > 0) {
            print_message("%-40s ramp: %" PRIu64 " refused, %" PRIu64 " trips during a ramp\n",
                          variant, r->cov.statuses[BREAKER_REJECTED_RAMP], r->cov.ramp_trips);
            assert_true(r->cov.statuses[BREAKER_REJECTED_RAMP] > 0);
            assert_true(r->cov.ramp_trips > 0);
        }
    }

    free_run(r);
    current_run = NULL;
}

static void run_variant_mode(const char *variant, const breaker_config *cfg, uint64_t default_seed,
                             bool outage) {
    const char *only = getenv("BREAKER_DIFF_ONLY");
    if (only != NULL && *only != '\0' && strstr(variant, only) == NULL) skip();
    unsigned long steps = env_ulong("BREAKER_DIFF_STEPS", 100000);
    uint64_t seed = env_u64("BREAKER_DIFF_SEED", default_seed);
    unsigned long seeds = env_ulong("BREAKER_DIFF_SEEDS", 1);
    for (unsigned long i = 0; i < seeds; i++)
        run_one(variant, cfg, seed + i, steps, outage);
}

static void run_variant(const char *variant, const breaker_config *cfg, uint64_t default_seed) {
    run_variant_mode(variant, cfg, default_seed, false);
}

static void consecutive_matches_model(void **state) {
    (void)state;
    breaker_config c;
    base_config(&c);
    run_variant("consecutive", &c, UINT64_C(0xc0de0001));
}

static void consecutive_threshold_one_slow_calls_cancelled_as_failure_matches_model(void **state) {
    (void)state;
    breaker_config c;
    base_config(&c);
    c.failure_threshold = 1;
    c.slow_call_ns = 150 * US + 7;
    c.cancelled_as = BREAKER_FAILURE;
    c.half_open_max_probes = 2;
    c.half_open_successes = 3;
    run_variant("consecutive_slow_cancelled_failure", &c, UINT64_C(0xc0de0002));
}

static void count_window_matches_model(void **state) {
    (void)state;
    breaker_config c;
    base_config(&c);
    c.trip = BREAKER_TRIP_COUNT_WINDOW;
    run_variant("count_window", &c, UINT64_C(0xc0de0003));
}

static void count_window_slow_rate_three_probes_matches_model(void **state) {
    (void)state;
    breaker_config c;
    base_config(&c);
    c.trip = BREAKER_TRIP_COUNT_WINDOW;
    c.window_size = 20;
    c.min_calls = 8;
    c.failure_rate = 0.6;
    c.slow_call_ns = 150 * US;
    c.slow_call_rate = 0.4;
    c.half_open_max_probes = 3;
    c.half_open_successes = 3;
    run_variant("count_window_slow_probes", &c, UINT64_C(0xc0de0004));
}

static void time_window_matches_model(void **state) {
    (void)state;
    breaker_config c;
    base_config(&c);
    c.trip = BREAKER_TRIP_TIME_WINDOW;
    run_variant("time_window", &c, UINT64_C(0xc0de0005));
}

static void time_window_slow_jitter_cancelled_as_failure_matches_model(void **state) {
    (void)state;
    breaker_config c;
    base_config(&c);
    c.trip = BREAKER_TRIP_TIME_WINDOW;
    c.window_ns = 10 * MS + 3; /* not a multiple of the bucket count */
    c.window_buckets = 7;
    c.min_calls = 4;
    c.slow_call_ns = 150 * US + 1;
    c.slow_call_rate = 0.5;
    c.open_jitter = 0.5;
    c.half_open_max_probes = 4;
    c.half_open_successes = 2;
    c.cancelled_as = BREAKER_FAILURE;
    run_variant("time_window_slow_jitter", &c, UINT64_C(0xc0de0006));
}

static void time_window_one_bucket_slow_counted_not_tripping_matches_model(void **state) {
    (void)state;
    breaker_config c;
    base_config(&c);
    c.trip = BREAKER_TRIP_TIME_WINDOW;
    c.window_ns = 3 * MS;
    c.window_buckets = 1;
    c.min_calls = 3;
    c.failure_rate = 0.25;
    c.slow_call_ns = 100 * US; /* slow calls counted, slow_call_rate off */
    c.half_open_max_probes = 2;
    c.half_open_successes = 1;
    run_variant("time_window_one_bucket_slow_counted", &c, UINT64_C(0xc0de0007));
}

static void many_probes_short_timeout_full_jitter_matches_model(void **state) {
    (void)state;
    breaker_config c;
    base_config(&c);
    c.trip = BREAKER_TRIP_COUNT_WINDOW;
    c.window_size = 6;
    c.min_calls = 3;
    c.half_open_max_probes = 8;
    c.half_open_successes = 6;
    c.probe_timeout_ns = 300 * US + 1;
    c.open_backoff = 3.0;
    c.open_max_ns = 50 * MS;
    c.open_jitter = 1.0;
    run_variant("many_probes_short_timeout_jitter", &c, UINT64_C(0xc0de0008));
}

static void endless_outage_saturates_failed_recoveries_matches_model(void **state) {
    (void)state;
    breaker_config c;
    base_config(&c);
    c.trip = BREAKER_TRIP_COUNT_WINDOW;
    c.min_calls = 2;
    c.half_open_max_probes = 2;
    c.open_backoff = 1.5;
    c.open_max_ns = 3 * MS + 17;
    c.open_jitter = 0.25;
    c.probe_timeout_ns = 400 * US + 3;
    run_variant_mode("endless_outage", &c, UINT64_C(0xc0de0009), true);
}

/* Slow start after recovery: the ramp's share, its refusals, the thinner
 * minimum volume and the failed recovery of a trip during it. */
static void count_window_ramp_matches_model(void **state) {
    (void)state;
    breaker_config c;
    base_config(&c);
    c.trip = BREAKER_TRIP_COUNT_WINDOW;
    c.window_size = 12;
    c.min_calls = 6;
    c.half_open_max_probes = 2;
    c.half_open_successes = 2;
    c.ramp_ns = 30 * MS + 11;
    c.ramp_start = 0.2;
    run_variant("count_window_ramp", &c, UINT64_C(0xc0de000a));
}

static void consecutive_ramp_jitter_matches_model(void **state) {
    (void)state;
    breaker_config c;
    base_config(&c);
    c.failure_threshold = 2;
    c.open_jitter = 0.3;
    c.half_open_successes = 1;
    c.ramp_ns = 20 * MS + 500;
    c.ramp_start = 0.05;
    run_variant("consecutive_ramp_jitter", &c, UINT64_C(0xc0de000b));
}

/* Failing sources: trips need failures from enough distinct callers. */
static void count_window_failing_sources_matches_model(void **state) {
    (void)state;
    breaker_config c;
    base_config(&c);
    c.trip = BREAKER_TRIP_COUNT_WINDOW;
    c.min_failing_sources = 3;
    c.half_open_max_probes = 2;
    run_variant("count_window_failing_sources", &c, UINT64_C(0xc0de000c));
}

static void consecutive_failing_sources_matches_model(void **state) {
    (void)state;
    breaker_config c;
    base_config(&c);
    c.failure_threshold = 4;
    c.min_failing_sources = 2;
    run_variant("consecutive_failing_sources", &c, UINT64_C(0xc0de000d));
}

static void time_window_failing_sources_matches_model(void **state) {
    (void)state;
    breaker_config c;
    base_config(&c);
    c.trip = BREAKER_TRIP_TIME_WINDOW;
    c.min_failing_sources = 4;
    c.min_calls = 3;
    run_variant("time_window_failing_sources", &c, UINT64_C(0xc0de000e));
}

/* The default (min_failing_sources 0) given sources: 3 of them for the
 * failures that name one, nothing for a window whose failures named none. */
static void count_window_default_sources_matches_model(void **state) {
    (void)state;
    breaker_config c;
    base_config(&c);
    c.trip = BREAKER_TRIP_COUNT_WINDOW;
    c.min_failing_sources = 0;
    c.half_open_max_probes = 2;
    run_variant("count_window_default_sources", &c, UINT64_C(0xc0de000f));
}

static void consecutive_default_sources_matches_model(void **state) {
    (void)state;
    breaker_config c;
    base_config(&c);
    c.failure_threshold = 3;
    c.min_failing_sources = 0;
    run_variant("consecutive_default_sources", &c, UINT64_C(0xc0de0010));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(count_window_default_sources_matches_model, teardown_run),
        cmocka_unit_test_teardown(consecutive_default_sources_matches_model, teardown_run),
        cmocka_unit_test_teardown(count_window_failing_sources_matches_model, teardown_run),
        cmocka_unit_test_teardown(consecutive_failing_sources_matches_model, teardown_run),
        cmocka_unit_test_teardown(time_window_failing_sources_matches_model, teardown_run),
        cmocka_unit_test_teardown(count_window_ramp_matches_model, teardown_run),
        cmocka_unit_test_teardown(consecutive_ramp_jitter_matches_model, teardown_run),
        cmocka_unit_test_teardown(consecutive_matches_model, teardown_run),
        cmocka_unit_test_teardown(
            consecutive_threshold_one_slow_calls_cancelled_as_failure_matches_model, teardown_run),
        cmocka_unit_test_teardown(count_window_matches_model, teardown_run),
        cmocka_unit_test_teardown(count_window_slow_rate_three_probes_matches_model, teardown_run),
        cmocka_unit_test_teardown(time_window_matches_model, teardown_run),
        cmocka_unit_test_teardown(time_window_slow_jitter_cancelled_as_failure_matches_model,
                                  teardown_run),
        cmocka_unit_test_teardown(time_window_one_bucket_slow_counted_not_tripping_matches_model,
                                  teardown_run),
        cmocka_unit_test_teardown(many_probes_short_timeout_full_jitter_matches_model,
                                  teardown_run),
        cmocka_unit_test_teardown(endless_outage_saturates_failed_recoveries_matches_model,
                                  teardown_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
