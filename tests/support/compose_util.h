/* SPDX-License-Identifier: MIT */
/*
 * compose_util.h - a fake sleep on the fake clock, a scripted dependency and
 * checks of the configuration conventions, shared by the composition tests
 * (test_executor, test_retry, test_bulkhead, test_fallback).
 */
#ifndef BREAKER_COMPOSE_UTIL_H
#define BREAKER_COMPOSE_UTIL_H

#include "test_util.h"

#include <breaker/compose.h>

#define MAX_LOGGED 64

/* Sleeping advances the fake clock, so no test really waits. Each sleep's
 * start and end are logged; cancel_at = n makes the n-th sleep report a
 * cancellation (0 = never). oversleep_ns makes every sleep wake that much
 * late, as a loaded machine may; `meanwhile` (if set) runs inside every sleep
 * that is not cancelled, standing for what other callers do during it. */
struct fake_sleep {
    struct fake_clock *clock;
    unsigned count;
    uint64_t total_ns;
    unsigned cancel_at;
    uint64_t oversleep_ns;
    void (*meanwhile)(void *ctx);
    void *meanwhile_ctx;
    uint64_t start_ns[MAX_LOGGED];
    uint64_t end_ns[MAX_LOGGED];
};

static inline int fake_sleep_fn(void *ctx, uint64_t ns) {
    struct fake_sleep *s = ctx;
    unsigned i = s->count++;
    if (s->cancel_at != 0 && s->count == s->cancel_at) return 1;
    if (i < MAX_LOGGED) s->start_ns[i] = fake_clock_read(s->clock);
    fake_clock_advance(s->clock, ns + s->oversleep_ns);
    if (s->meanwhile != NULL) s->meanwhile(s->meanwhile_ctx);
    if (i < MAX_LOGGED) s->end_ns[i] = fake_clock_read(s->clock);
    s->total_ns += ns;
    return 0;
}

/* A dependency that answers `answer` with `error` after `latency_ns` of fake
 * time, logging each call's start, the deadline it was given and whether it
 * was a probe. */
struct dependency {
    struct fake_clock *clock;
    enum breaker_outcome answer;
    int error;
    uint64_t latency_ns;
    enum breaker_retry_hint hint;
    unsigned succeed_from; /* calls numbered >= this succeed (0 = never) */
    unsigned calls;
    uint64_t start_ns[MAX_LOGGED];
    uint64_t deadline_ns[MAX_LOGGED];
    uint64_t timeout_ns[MAX_LOGGED];
    uint32_t number[MAX_LOGGED];
    bool is_probe[MAX_LOGGED];
};

static inline enum breaker_outcome dependency_op(void *ctx, breaker_attempt *a) {
    struct dependency *d = ctx;
    unsigned i = d->calls++;
    if (i < MAX_LOGGED) {
        d->start_ns[i] = fake_clock_read(d->clock);
        d->deadline_ns[i] = a->deadline_ns;
        d->timeout_ns[i] = a->timeout_ns;
        d->number[i] = a->number;
        d->is_probe[i] = a->is_probe;
    }
    fake_clock_advance(d->clock, d->latency_ns);
    a->retry = d->hint;
    if (d->succeed_from != 0 && d->calls >= d->succeed_from) {
        a->error = 200;
        return BREAKER_SUCCESS;
    }
    a->error = d->error;
    return d->answer;
}

/* An executor configuration on the fake clock and sleep, with a
 * deterministic backoff (no jitter, 100 ms doubling) unless a test changes it. */
static inline void exec_config(breaker_executor_config *cfg, struct fake_clock *clock,
                               struct fake_sleep *sleep) {
    breaker_executor_config_init(cfg);
    cfg->clock = fake_clock_read;
    cfg->clock_ctx = clock;
    cfg->sleep = fake_sleep_fn;
    cfg->sleep_ctx = sleep;
    cfg->seed = 7;
    cfg->retry.max_attempts = 3;
    cfg->retry.base_ns = 100 * MS;
    cfg->retry.max_backoff_ns = 10 * SEC;
    cfg->retry.jitter = BREAKER_JITTER_NONE;
}

static inline breaker_executor *make_executor(const breaker_executor_config *cfg) {
    breaker_executor *ex = NULL;
    assert_int_equal(breaker_executor_create(cfg, &ex), BREAKER_OK);
    assert_non_null(ex);
    return ex;
}

static inline breaker_call idempotent_call(struct dependency *d) {
    breaker_call c = {.op = dependency_op, .op_ctx = d, .idempotent = true};
    return c;
}

static inline breaker_result run_call(breaker_executor *ex, const breaker_call *call) {
    breaker_result res;
    assert_int_equal(breaker_executor_run(ex, call, &res), BREAKER_OK);
    return res;
}

static inline breaker_executor_stats exec_stats(breaker_executor *ex) {
    breaker_executor_stats st;
    assert_int_equal(breaker_executor_stats_get(ex, &st), BREAKER_OK);
    return st;
}

/* A retry budget on the fake clock, its window in 10 buckets. */
static inline breaker_retry_budget *make_budget(struct fake_clock *clock, double ratio,
                                                uint32_t min_retries, uint64_t window) {
    breaker_retry_budget_config cfg;
    breaker_retry_budget_config_init(&cfg);
    cfg.ratio = ratio;
    cfg.min_retries = min_retries;
    cfg.window_ns = window;
    cfg.buckets = 10;
    cfg.clock = fake_clock_read;
    cfg.clock_ctx = clock;
    breaker_retry_budget *b = NULL;
    assert_int_equal(breaker_retry_budget_create(&cfg, &b), BREAKER_OK);
    return b;
}

static inline breaker_retry_budget_stats budget_stats(breaker_retry_budget *b) {
    breaker_retry_budget_stats st;
    assert_int_equal(breaker_retry_budget_stats_get(b, &st), BREAKER_OK);
    return st;
}

/* `init` writes every byte of a `type`, padding included: the struct
 * initialised over zeroes and the one initialised over 0xff garbage come out
 * identical. */
#define assert_config_init_clears(type, init)                   \
    do {                                                        \
        type zeroed_, garbage_;                                 \
        memset(&zeroed_, 0x00, sizeof(zeroed_));                \
        memset(&garbage_, 0xff, sizeof(garbage_));              \
        init(&zeroed_);                                         \
        init(&garbage_);                                        \
        assert_memory_equal(&zeroed_, &garbage_, sizeof(type)); \
    } while (0)

/* `validate` refuses `*cfg` with exactly the message `want` (and without a
 * buffer too), and `create` refuses it with BREAKER_EINVAL, setting its
 * result to NULL. */
#define assert_config_refused(validate, create, handle_type, cfg, want)                        \
    do {                                                                                       \
        char msg_[256];                                                                        \
        assert_int_equal(validate(cfg, msg_, sizeof(msg_)), BREAKER_EINVAL);                   \
        assert_string_equal(msg_, want);                                                       \
        assert_int_equal(validate(cfg, NULL, 0), BREAKER_EINVAL);                              \
        handle_type *made_ = (handle_type *)(void *)msg_; /* not NULL: create must clear it */ \
        assert_int_equal(create(cfg, &made_), BREAKER_EINVAL);                                 \
        assert_null(made_);                                                                    \
    } while (0)

/* `validate` accepts `*cfg` and leaves an empty message. */
#define assert_config_valid(validate, cfg)                               \
    do {                                                                 \
        char msg_[256] = "unchanged";                                    \
        assert_int_equal(validate(cfg, msg_, sizeof(msg_)), BREAKER_OK); \
        assert_string_equal(msg_, "");                                   \
    } while (0)

#endif
