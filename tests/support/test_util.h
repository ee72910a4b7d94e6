/* SPDX-License-Identifier: MIT */
/*
 * test_util.h - a fake clock and an event recorder shared by the tests.
 */
#ifndef BREAKER_TEST_UTIL_H
#define BREAKER_TEST_UTIL_H

#include <breaker.h>

#include "test_breaker.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#define MS  UINT64_C(1000000)
#define SEC (1000 * MS)

/* A clock the test moves by hand; atomic so threads may read it. */
struct fake_clock {
    _Atomic uint64_t now;
};

static inline uint64_t fake_clock_read(void *ctx) {
    return atomic_load_explicit(&((struct fake_clock *)ctx)->now, memory_order_relaxed);
}

static inline void fake_clock_advance(struct fake_clock *c, uint64_t ns) {
    atomic_fetch_add_explicit(&c->now, ns, memory_order_relaxed);
}

#define MAX_RECORDED_EVENTS 64

/* Records every transition event, and the state the breaker reported from
 * inside the callback (which must already be the new one). */
struct event_log {
    _Atomic unsigned count;
    breaker_event events[MAX_RECORDED_EVENTS];
    enum breaker_state state_seen[MAX_RECORDED_EVENTS];
};

static inline void event_log_record(void *ctx, breaker *b, const breaker_event *ev) {
    struct event_log *log = ctx;
    unsigned i = atomic_fetch_add(&log->count, 1);
    if (i < MAX_RECORDED_EVENTS) {
        log->events[i] = *ev;
        log->state_seen[i] = breaker_get_state(b);
    }
}

/* A configuration on the fake clock with an event log. */
static inline void test_config(breaker_config *cfg, struct fake_clock *clock,
                               struct event_log *log) {
    breaker_config_init(cfg);
    cfg->clock = fake_clock_read;
    cfg->clock_ctx = clock;
    cfg->seed = 1;
    cfg->open_jitter = 0; /* exact waits: tests that want jitter set it */
    if (log != NULL) {
        cfg->on_event = event_log_record;
        cfg->event_ctx = log;
    }
}

static inline breaker *make_breaker(const breaker_config *cfg) {
    breaker *b = NULL;
    assert_int_equal(test_breaker_create(cfg, &b), BREAKER_OK);
    assert_non_null(b);
    return b;
}

/* One call with the given outcome; asserts it was admitted. */
static inline void call_ok(breaker *b, enum breaker_outcome outcome) {
    breaker_permit p;
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
    assert_int_equal(breaker_complete(b, &p, outcome), BREAKER_OK);
}

static inline breaker_stats stats_of(breaker *b) {
    breaker_stats st;
    assert_int_equal(breaker_stats_get(b, &st), BREAKER_OK);
    return st;
}

#endif
