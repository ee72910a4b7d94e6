/* SPDX-License-Identifier: MIT */
/*
 * retry.c - the retry policy: defaults, validation and backoff.
 *
 * The backoff is a pure function of (policy, retry number, previous backoff,
 * one random word), so the executor can draw the random word from its own
 * per-request generator and a test can pin it.
 */
#include "breaker/compose.h"
#include "common/message.h"

#include <string.h>

#define MS UINT64_C(1000000)

#define DEFAULT_MAX_ATTEMPTS 3u
#define MAX_MAX_ATTEMPTS     100u
#define DEFAULT_BASE_NS      (100 * MS)
#define DEFAULT_MAX_BACKOFF  (10000 * MS)

void breaker_retry_policy_init(breaker_retry_policy *p) {
    memset(p, 0, sizeof(*p));
    p->max_attempts = DEFAULT_MAX_ATTEMPTS;
    p->base_ns = DEFAULT_BASE_NS;
    p->max_backoff_ns = DEFAULT_MAX_BACKOFF;
    p->jitter = BREAKER_JITTER_FULL;
}

static uint64_t base_of(const breaker_retry_policy *p) {
    return p->base_ns != 0 ? p->base_ns : DEFAULT_BASE_NS;
}

static uint64_t cap_of(const breaker_retry_policy *p) {
    return p->max_backoff_ns != 0 ? p->max_backoff_ns : DEFAULT_MAX_BACKOFF;
}

int breaker_retry_policy_validate(const breaker_retry_policy *p, char *msg, size_t msg_len) {
    if (msg != NULL && msg_len > 0) msg[0] = '\0';
    if (p->max_attempts > MAX_MAX_ATTEMPTS)
        return breaker__fail(BREAKER_EINVAL, msg, msg_len,
                             "max_attempts: must be between 1 and %u (got %u)", MAX_MAX_ATTEMPTS,
                             p->max_attempts);
    if (cap_of(p) < base_of(p))
        return breaker__fail(BREAKER_EINVAL, msg, msg_len,
                             "max_backoff_ns: must be >= base_ns (%llu ns), got %llu ns",
                             (unsigned long long)base_of(p), (unsigned long long)cap_of(p));
    if (p->jitter != BREAKER_JITTER_FULL && p->jitter != BREAKER_JITTER_DECORRELATED &&
        p->jitter != BREAKER_JITTER_NONE)
        return breaker__fail(BREAKER_EINVAL, msg, msg_len,
                             "jitter: must be full, decorrelated or none (got %d)", (int)p->jitter);
    return BREAKER_OK;
}

/* min(cap, base * 2^(retry-1)) without overflow. */
static uint64_t exponential(uint64_t base, uint64_t cap, uint32_t retry) {
    uint64_t v = base;
    for (uint32_t i = 1; i < retry && v < cap; i++)
        v = (v > cap / 2) ? cap : v * 2;
    return v < cap ? v : cap;
}

/* A uniform value in [lo, hi] from one random word. The modulo bias is at
 * most (hi - lo) / 2^64: irrelevant for a sleep. */
static uint64_t uniform(uint64_t lo, uint64_t hi, uint64_t random) {
    if (hi <= lo) return lo;
    uint64_t span = hi - lo;
    if (span == UINT64_MAX) return random;
    return lo + random % (span + 1);
}

uint64_t breaker_retry_backoff_ns(const breaker_retry_policy *p, uint32_t retry, uint64_t prev_ns,
                                  uint64_t random) {
    uint64_t base = base_of(p), cap = cap_of(p);
    if (retry == 0) retry = 1;
    switch (p->jitter) {
    case BREAKER_JITTER_NONE:
        return exponential(base, cap, retry);
    case BREAKER_JITTER_DECORRELATED: {
        uint64_t prev = prev_ns < base ? base : prev_ns;
        uint64_t hi = prev > cap / 3 ? cap : prev * 3;
        return uniform(base < cap ? base : cap, hi, random);
    }
    case BREAKER_JITTER_FULL:
        break;
    }
    return uniform(0, exponential(base, cap, retry), random);
}
