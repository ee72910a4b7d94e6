/* SPDX-License-Identifier: MIT */
/*
 * flaky_dependency.c - a breaker in front of a dependency that goes down and
 * comes back, on a virtual clock, printing a timeline of what the breaker did
 * and why.
 *
 * The dependency is healthy for 20 s, fails every call for the next 40 s,
 * then recovers. The service sends it 50 calls a second. Copy the shape of
 * `call_dependency()` for your own code: acquire, call only if admitted,
 * classify, complete.
 *
 *   ./flaky_dependency            (make demo runs it)
 */
#include <breaker.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#define MS  UINT64_C(1000000)
#define SEC (1000 * MS)

struct world {
    uint64_t now;          /* the virtual clock, ns */
    uint64_t reached;      /* calls that reached the dependency */
    uint64_t refused;      /* calls refused locally by the breaker */
    uint64_t failed;       /* calls that reached it and failed */
    uint64_t reached_down; /* calls that reached it while it was down */
};

static uint64_t virtual_clock(void *ctx) { return ((struct world *)ctx)->now; }

/* The dependency: an HTTP service that answers 503 between 20 s and 60 s. */
static int dependency_http_status(const struct world *w) {
    return (w->now >= 20 * SEC && w->now < 60 * SEC) ? 503 : 200;
}

static void print_event(void *ctx, breaker *b, const breaker_event *ev) {
    (void)ctx;
    (void)b;
    printf("%7.3fs  %-9s -> %-9s  %-20s", (double)ev->time_ns / (double)SEC,
           breaker_state_name(ev->from), breaker_state_name(ev->to),
           breaker_reason_name(ev->reason));
    switch (ev->reason) {
    case BREAKER_REASON_FAILURE_RATE:
    case BREAKER_REASON_SLOW_CALL_RATE:
    case BREAKER_REASON_OUTSIDE_TRIP: /* a shared store's aggregate */
        printf("  window: %" PRIu64 " calls, %" PRIu64 " failed (%.0f%%)", ev->evidence.calls,
               ev->evidence.failures, 100.0 * ev->evidence.failure_rate);
        break;
    case BREAKER_REASON_CONSECUTIVE_FAILURES:
        printf("  %u failures in a row", ev->evidence.consecutive_failures);
        break;
    case BREAKER_REASON_PROBES_SUCCEEDED:
        printf("  %u probes succeeded", ev->evidence.probe_successes);
        break;
    case BREAKER_REASON_WAIT_ELAPSED:
    case BREAKER_REASON_PROBE_FAILED:
    case BREAKER_REASON_PROBE_TIMEOUT:
    case BREAKER_REASON_PROBE_SLOW:
    case BREAKER_REASON_FORCED_OPEN:
    case BREAKER_REASON_FORCED_CLOSED:
    case BREAKER_REASON_RESET:
    case BREAKER_REASON_OUTSIDE_CLOSE:   /* a shared store recovered */
    case BREAKER_REASON_SERVER_DIRECTED: /* the dependency asked for a wait */
    case BREAKER_REASON_OPERATOR:        /* an operator's timed open */
    case BREAKER_REASON_RECONFIGURED:    /* the limits changed (no transition) */
    case BREAKER_REASON_FORCE_EXPIRED:   /* a forced close ran out */
        printf("  after %u failed recoveries", ev->evidence.failed_recoveries);
        break;
    }
    if (ev->to == BREAKER_OPEN) printf(", next probe in %.1fs", (double)ev->open_ns / (double)SEC);
    printf("\n");
}

/* One call through the breaker. */
static void call_dependency(breaker *b, struct world *w) {
    breaker_permit permit;
    if (breaker_acquire(b, &permit) != BREAKER_OK) {
        w->refused++; /* fail fast: serve a fallback here */
        return;
    }
    int status = dependency_http_status(w);
    w->reached++;
    if (status >= 500) {
        w->failed++;
        if (w->now >= 20 * SEC && w->now < 60 * SEC) w->reached_down++;
    }
    /* Classification decides what is evidence: 503 is, a 404 would not be. */
    (void)breaker_complete(b, &permit, breaker_classify_http(status));
}

int main(void) {
    struct world w = {0};
    breaker_config cfg;
    breaker_config_init(&cfg);
    cfg.trip = BREAKER_TRIP_TIME_WINDOW;
    cfg.window_ns = 4 * SEC;
    cfg.window_buckets = 8;
    cfg.min_calls = 20;
    cfg.failure_rate = 0.5;
    cfg.open_ns = 5 * SEC;
    cfg.open_backoff = 2.0;
    cfg.open_max_ns = 20 * SEC;
    cfg.half_open_max_probes = 1;
    cfg.half_open_successes = 3;
    cfg.seed = 42;
    cfg.clock = virtual_clock;
    cfg.clock_ctx = &w;
    cfg.on_event = print_event;

    breaker *b;
    int rc = breaker_create(&cfg, &b);
    if (rc != BREAKER_OK) {
        fprintf(stderr, "breaker_create: %s\n", breaker_strerror(rc));
        return 1;
    }

    printf("A dependency that answers 503 from 20s to 60s; 50 calls/s for 90s.\n");
    printf("Breaker: time window 4s, trips at >=50%% failures over >=20 calls,\n");
    printf("waits 5s doubling to 20s, then 3 probes one at a time must succeed.\n\n");
    printf("   time  from         to         reason                evidence\n");
    for (w.now = 0; w.now < 90 * SEC; w.now += 20 * MS)
        call_dependency(b, &w);

    breaker_stats st;
    (void)breaker_stats_get(b, &st);
    uint64_t total = w.reached + w.refused;
    printf("\n%" PRIu64 " calls: %" PRIu64 " reached the dependency, %" PRIu64
           " were refused locally in nanoseconds.\n",
           total, w.reached, w.refused);
    printf("While it was down (40s, 2000 calls) only %" PRIu64
           " calls reached it; without a breaker all 2000 would have.\n",
           w.reached_down);
    printf("Probes: %" PRIu64 " admitted, %" PRIu64 " succeeded, %" PRIu64
           " failed. Final state: %s.\n",
           st.probes_admitted, st.probes_succeeded, st.probes_failed, breaker_state_name(st.state));
    breaker_destroy(b);
    return 0;
}
