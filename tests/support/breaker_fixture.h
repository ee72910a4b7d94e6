/* SPDX-License-Identifier: MIT */
/*
 * breaker_fixture.h - the set-up most core and registry tests start from: one
 * breaker on a fake clock, with an event log listening.
 *
 *     struct breaker_fixture f;
 *     breaker_config *cfg = fixture_init(&f, 0);   // the clock at 0
 *     cfg->trip = BREAKER_TRIP_CONSECUTIVE;        // what the test needs
 *     breaker *b = fixture_create(&f);
 *     ...                                          // f.clock, f.log, f.b
 *     fixture_destroy(&f);
 *
 * The configuration is test_config()'s (exact waits, a fixed seed). A
 * fixture is large (its log keeps 64 events): one per test, on its stack.
 */
#ifndef BREAKER_TEST_BREAKER_FIXTURE_H
#define BREAKER_TEST_BREAKER_FIXTURE_H

#include "test_util.h"

struct breaker_fixture {
    struct fake_clock clock;
    struct event_log log;
    breaker_config cfg;
    breaker *b;
};

/* The clock at `now_ns`, an empty log, and the test configuration on that
 * clock with the log listening; no breaker yet. @return &f->cfg, to change
 * before fixture_create(). */
static inline breaker_config *fixture_init(struct breaker_fixture *f, uint64_t now_ns) {
    memset(f, 0, sizeof(*f));
    atomic_store(&f->clock.now, now_ns);
    test_config(&f->cfg, &f->clock, &f->log);
    return &f->cfg;
}

/* The breaker of f->cfg (asserts it is created). */
static inline breaker *fixture_create(struct breaker_fixture *f) {
    f->b = make_breaker(&f->cfg);
    return f->b;
}

/* fixture_init() for a breaker that `threshold` failures in a row open
 * (BREAKER_TRIP_CONSECUTIVE); the rest as test_config(). */
static inline breaker_config *fixture_init_consecutive(struct breaker_fixture *f, uint64_t now_ns,
                                                       uint32_t threshold) {
    breaker_config *cfg = fixture_init(f, now_ns);
    cfg->trip = BREAKER_TRIP_CONSECUTIVE;
    cfg->failure_threshold = threshold;
    return cfg;
}

/* fixture_init() for a breaker of window policy `trip` that judges its
 * window once it holds `min_calls` calls; the window's length is the
 * caller's (fixture_init_count_window(), fixture_init_time_window()). */
static inline breaker_config *fixture_init_window(struct breaker_fixture *f, uint64_t now_ns,
                                                  enum breaker_trip trip, uint32_t min_calls) {
    breaker_config *cfg = fixture_init(f, now_ns);
    cfg->trip = trip;
    cfg->min_calls = min_calls;
    return cfg;
}

/* fixture_init() for a breaker that judges its last `window_size` calls
 * (BREAKER_TRIP_COUNT_WINDOW) once it has `min_calls` of them; the rest as
 * test_config(). */
static inline breaker_config *fixture_init_count_window(struct breaker_fixture *f, uint64_t now_ns,
                                                        uint32_t window_size, uint32_t min_calls) {
    breaker_config *cfg = fixture_init_window(f, now_ns, BREAKER_TRIP_COUNT_WINDOW, min_calls);
    cfg->window_size = window_size;
    return cfg;
}

/* fixture_init() for a breaker that judges the calls of its last
 * `window_ns` (BREAKER_TRIP_TIME_WINDOW) once it has `min_calls` of them;
 * the rest as test_config(). */
static inline breaker_config *fixture_init_time_window(struct breaker_fixture *f, uint64_t now_ns,
                                                       uint64_t window_ns, uint32_t min_calls) {
    breaker_config *cfg = fixture_init_window(f, now_ns, BREAKER_TRIP_TIME_WINDOW, min_calls);
    cfg->window_ns = window_ns;
    return cfg;
}

/* fixture_init() for a breaker that one failure opens (consecutive,
 * threshold 1) for `open_ns`, then admits one probe at a time until
 * `successes` of them succeeded, each probe timing out after 10 s. */
static inline breaker_config *fixture_init_one_failure_opens(struct breaker_fixture *f,
                                                             uint64_t now_ns, uint64_t open_ns,
                                                             uint32_t successes) {
    breaker_config *cfg = fixture_init_consecutive(f, now_ns, 1);
    cfg->open_ns = open_ns;
    cfg->half_open_max_probes = 1;
    cfg->half_open_successes = successes;
    cfg->probe_timeout_ns = 10 * SEC;
    return cfg;
}

/* Trip f->b with one failure and move the clock to the end of its wait
 * (f->cfg.open_ns, no jitter): the next call is a probe. */
static inline void fixture_trip_to_half_open(struct breaker_fixture *f) {
    call_ok(f->b, BREAKER_FAILURE);
    fake_clock_advance(&f->clock, f->cfg.open_ns);
}

/* The number of events the log holds (at most MAX_RECORDED_EVENTS kept). */
static inline unsigned fixture_events(struct breaker_fixture *f) {
    return atomic_load(&f->log.count);
}

/* The newest event (asserts there is one). */
static inline const breaker_event *fixture_last_event(struct breaker_fixture *f) {
    unsigned n = fixture_events(f);
    assert_true(n > 0 && n <= MAX_RECORDED_EVENTS);
    return &f->log.events[n - 1];
}

static inline void fixture_destroy(struct breaker_fixture *f) {
    test_breaker_destroy(f->b);
    f->b = NULL;
}

#endif
