/* SPDX-License-Identifier: MIT */
/*
 * fleet_util.h - what the fleet store's tests share: a handle whose rounds
 * the test runs, and the dependency's breaker, which trips on 3 failures in
 * a row, waits `open_ns` (no backoff, no jitter) and closes on one
 * successful probe, one at a time.
 */
#ifndef BREAKER_TEST_FLEET_UTIL_H
#define BREAKER_TEST_FLEET_UTIL_H

#include <breaker.h>
#ifndef BREAKER_BACKEND_EXPERIMENTAL
#define BREAKER_BACKEND_EXPERIMENTAL /* breaker_permit_gate_token() */
#endif
#include <breaker/backend.h>
#include <breaker/redis.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

/* The fleet handle of `rc`; a handle that does not open ends the test,
 * with breaker_redis_open()'s message. */
static inline breaker_redis *fleet_open_or_fail(const breaker_redis_config *rc) {
    breaker_redis *f = NULL;
    char msg[256] = "";
    if (breaker_redis_open(rc, &f, msg, sizeof msg) != BREAKER_OK) fail_msg("open: %s", msg);
    return f;
}

/* The breaker of `name` on `f`, attached with `cfg`; an attach that does
 * not return BREAKER_OK ends the test. */
static inline breaker *fleet_attach_or_fail(breaker_redis *f, const char *name,
                                            const breaker_config *cfg) {
    breaker *b = NULL;
    assert_int_equal(breaker_redis_attach(f, name, cfg, &b, NULL, 0), BREAKER_OK);
    return b;
}

/* A fleet handle's configuration for a test that runs its rounds itself
 * (breaker_redis_flush(): the flusher's interval is an hour), patient
 * enough that a loaded machine neither degrades it (2 s replies) nor runs a
 * lease request past its budget (1 s). */
static inline void fleet_patient_cfg(breaker_redis_config *rc) {
    breaker_redis_config_init(rc);
    rc->flush_interval_ns = 3600 * UINT64_C(1000000000);
    rc->io_timeout_ns = 2 * UINT64_C(1000000000);
    rc->probe_budget_ns = UINT64_C(1000000000);
}

/* The dependency's breaker of the multi-host fleet tests: a 2 s time window
 * of 10 buckets that trips when half of at least 10 calls failed, opens for
 * 200 ms (400 ms at most) and closes on one successful probe, which has 1 s
 * to answer. */
static inline void fleet_window_cfg(breaker_config *c) {
    breaker_config_init(c);
    c->trip = BREAKER_TRIP_TIME_WINDOW;
    c->window_ns = 2 * UINT64_C(1000000000);
    c->window_buckets = 10;
    c->min_calls = 10;
    c->failure_rate = 0.5;
    c->open_ns = 200 * UINT64_C(1000000);
    c->open_max_ns = 400 * UINT64_C(1000000);
    c->half_open_max_probes = 1;
    c->half_open_successes = 1;
    c->probe_timeout_ns = UINT64_C(1000000000);
}

static inline void fleet_dep_cfg(breaker_config *c, uint64_t open_ns, uint64_t probe_timeout_ns) {
    breaker_config_init(c);
    c->trip = BREAKER_TRIP_CONSECUTIVE;
    c->failure_threshold = 3;
    c->open_ns = open_ns;
    c->open_max_ns = open_ns;
    c->open_backoff = 1;
    c->open_jitter = 0;
    c->half_open_max_probes = 1;
    c->half_open_successes = 1;
    c->probe_timeout_ns = probe_timeout_ns;
}

/* Host A's `failures` failures (its breaker's threshold) trip the fleet at
 * A's round; host B follows at its round. Rounds run here. @return 1 when
 * both rounds were answered and B is then OPEN, else 0. */
static inline int fleet_trip_followed(breaker_redis *fa, breaker *a, breaker_redis *fb, breaker *b,
                                      int failures) {
    for (int i = 0; i < failures; i++) {
        breaker_permit p;
        if (breaker_acquire(a, &p) != BREAKER_OK) return 0;
        (void)breaker_complete(a, &p, BREAKER_FAILURE);
    }
    return breaker_redis_flush(fa) == BREAKER_OK && breaker_redis_flush(fb) == BREAKER_OK &&
           breaker_get_state(b) == BREAKER_OPEN;
}

/* Once the fleet's wait is over: host A's probe holds a fleet lease and
 * succeeds, which closes the fleet at A's round; host B follows at its
 * round. @return 1 when it all went so and both are CLOSED, else 0. */
static inline int fleet_probe_closes(breaker_redis *fa, breaker *a, breaker_redis *fb, breaker *b) {
    breaker_permit p;
    if (breaker_acquire(a, &p) != BREAKER_OK) return 0;
    int leased = breaker_permit_gate_token(&p) != 0;
    (void)breaker_complete(a, &p, BREAKER_SUCCESS);
    return leased && breaker_redis_flush(fa) == BREAKER_OK &&
           breaker_redis_flush(fb) == BREAKER_OK && breaker_get_state(a) == BREAKER_CLOSED &&
           breaker_get_state(b) == BREAKER_CLOSED;
}

/* What on_degraded said last (fleet_round_fails()). */
struct fleet_heard {
    int cause;
    char why[512];
};

static inline void fleet_hear(void *ctx, int degraded, const char *why) {
    struct fleet_heard *h = (struct fleet_heard *)ctx;
    h->cause = degraded;
    snprintf(h->why, sizeof h->why, "%s", why);
}

/* One round of a fresh handle of `rc` (its on_degraded the test's), with a
 * name attached. @return 1 when the round failed with `cause`
 * (breaker_redis_degraded() and on_degraded agreeing) and a reason that has
 * `words` (printed, for the log), else 0. */
static inline int fleet_round_fails(const breaker_redis_config *rc, int cause, const char *words) {
    breaker_redis_config c = *rc;
    struct fleet_heard heard = {0, ""};
    c.on_degraded = fleet_hear;
    c.degraded_ctx = &heard;
    breaker_redis *f = NULL;
    if (breaker_redis_open(&c, &f, NULL, 0) != BREAKER_OK) return 0;
    breaker *b = NULL;
    int ok = breaker_redis_attach(f, "round.fails", NULL, &b, NULL, 0) == BREAKER_OK &&
             breaker_redis_flush(f) == BREAKER_EIO && breaker_redis_degraded(f) == cause &&
             heard.cause == cause && strstr(heard.why, words) != NULL;
    printf("  %s\n", heard.why);
    breaker_redis_close(f);
    return ok;
}

#endif
