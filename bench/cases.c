/* SPDX-License-Identifier: MIT */
/*
 * cases.c - breaker calls in each state, on the real clock.
 *
 * Every breaker here uses the default clock (CLOCK_MONOTONIC, and
 * CLOCK_MONOTONIC_COARSE where src/core/clock.c chooses it), because the clock is
 * part of what a call costs. Waits that a case must not outlive (the open
 * wait, the probe timeout) are set to an hour so that a slow, interleaved run
 * never sees the state change under it; they do not change the code path.
 */
#define _GNU_SOURCE
#include "cases.h"

#include <stdlib.h>
#include <time.h>

#define HOUR (UINT64_C(3600) * UINT64_C(1000000000))

uint64_t case_closed(void *ctx, uint64_t iters) {
    struct breaker_case *c = ctx;
    breaker *b = c->b;
    uint64_t ok = 0;
    for (uint64_t i = 0; i < iters; i++) {
        breaker_permit p;
        if (breaker_acquire(b, &p) == BREAKER_OK)
            ok += breaker_complete(b, &p, BREAKER_SUCCESS) == BREAKER_OK;
    }
    return ok;
}

uint64_t case_closed_failures(void *ctx, uint64_t iters) {
    struct breaker_case *c = ctx;
    breaker *b = c->b;
    uint64_t ok = 0;
    unsigned countdown = c->fail_every;
    for (uint64_t i = 0; i < iters; i++) {
        breaker_permit p;
        enum breaker_outcome outcome = BREAKER_SUCCESS;
        if (--countdown == 0) {
            countdown = c->fail_every;
            outcome = BREAKER_FAILURE;
        }
        if (breaker_acquire(b, &p) == BREAKER_OK)
            ok += breaker_complete(b, &p, outcome) == BREAKER_OK;
    }
    return ok;
}

uint64_t case_refused(void *ctx, uint64_t iters) {
    struct breaker_case *c = ctx;
    breaker *b = c->b;
    int expect = c->expect;
    uint64_t ok = 0;
    for (uint64_t i = 0; i < iters; i++) {
        breaker_permit p;
        ok += breaker_acquire(b, &p) == expect;
    }
    return ok;
}

static struct breaker_case *new_case(const breaker_config *cfg, int expect) {
    struct breaker_case *c = calloc(1, sizeof(*c));
    if (c == NULL) bench_die("out of memory");
    int rc = breaker_create(cfg, &c->b);
    if (rc != BREAKER_OK) bench_die("breaker_create: %s", breaker_strerror(rc));
    c->expect = expect;
    return c;
}

void case_expect_state(const struct breaker_case *c, enum breaker_state want, const char *what) {
    enum breaker_state got = breaker_get_state(c->b);
    if (got != want)
        bench_die("%s: breaker is %s, wanted %s", what, breaker_state_name(got),
                  breaker_state_name(want));
}

void config_closed(breaker_config *cfg, enum breaker_trip trip, int slow_calls) {
    breaker_config_init(cfg);
    cfg->trip = trip;
    if (slow_calls) {
        /* Every call is timed (two precise clock reads); none is slow. */
        cfg->slow_call_ns = UINT64_C(1000000000);
        if (trip != BREAKER_TRIP_CONSECUTIVE) cfg->slow_call_rate = 0.5;
    }
}

struct breaker_case *make_closed(enum breaker_trip trip, int slow_calls) {
    breaker_config cfg;
    config_closed(&cfg, trip, slow_calls);
    struct breaker_case *c = new_case(&cfg, BREAKER_OK);
    case_expect_state(c, BREAKER_CLOSED, "closed case");
    return c;
}

/* The closed case with checked_permits: every closed call takes the
 * general paths and keeps the handle's record of admissions. */
struct breaker_case *make_closed_checked(enum breaker_trip trip) {
    breaker_config cfg;
    config_closed(&cfg, trip, 0);
    cfg.checked_permits = 1;
    struct breaker_case *c = new_case(&cfg, BREAKER_OK);
    case_expect_state(c, BREAKER_CLOSED, "closed case");
    return c;
}

struct breaker_case *make_closed_failures(enum breaker_trip trip, unsigned fail_every) {
    struct breaker_case *c = make_closed(trip, 0);
    c->fail_every = fail_every;
    return c;
}

/* Trip a default-configured breaker with min_calls failures. */
void case_trip(struct breaker_case *c) {
    breaker_config cfg;
    breaker_get_config(c->b, &cfg);
    unsigned n = cfg.trip == BREAKER_TRIP_CONSECUTIVE ? cfg.failure_threshold : cfg.min_calls;
    for (unsigned i = 0; i < n; i++) {
        breaker_permit p;
        int rc = breaker_acquire(c->b, &p);
        if (rc != BREAKER_OK) bench_die("trip: call %u refused: %s", i, breaker_strerror(rc));
        (void)breaker_complete(c->b, &p, BREAKER_FAILURE);
    }
    case_expect_state(c, BREAKER_OPEN, "trip");
}

void config_open(breaker_config *cfg) {
    breaker_config_init(cfg);
    cfg->open_ns = HOUR;
    cfg->open_max_ns = HOUR;
}

struct breaker_case *make_open(void) {
    breaker_config cfg;
    config_open(&cfg);
    struct breaker_case *c = new_case(&cfg, BREAKER_REJECTED_OPEN);
    case_trip(c);
    return c;
}

struct breaker_case *make_half_open(void) {
    breaker_config cfg;
    breaker_config_init(&cfg);
    cfg.open_ns = UINT64_C(1000000); /* 1 ms, then one probe that never settles */
    cfg.probe_timeout_ns = HOUR;
    cfg.half_open_max_probes = 1;
    struct breaker_case *c = new_case(&cfg, BREAKER_REJECTED_HALF_OPEN);
    case_trip(c);
    for (int tries = 0;; tries++) {
        if (tries > 5000) bench_die("half-open case: the breaker never admitted a probe");
        if (breaker_acquire(c->b, &c->probe) == BREAKER_OK) break;
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    case_expect_state(c, BREAKER_HALF_OPEN, "half-open case");
    return c;
}

struct breaker_case *make_forced_open(void) {
    struct breaker_case *c = new_case(NULL, BREAKER_REJECTED_OPEN);
    (void)breaker_force_open(c->b);
    case_expect_state(c, BREAKER_FORCED_OPEN, "forced-open case");
    return c;
}

void breaker_case_free(struct breaker_case *c) {
    if (c == NULL) return;
    breaker_destroy(c->b);
    free(c);
}
