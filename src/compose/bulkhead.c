/* SPDX-License-Identifier: MIT */
/*
 * bulkhead.c - a concurrency limit per dependency.
 *
 * The in-flight count is one atomic word. Try-acquire is a CAS loop that
 * never blocks; release is a fetch-sub. The bounded wait is the slow path:
 * waiters sleep on a condition variable and a release signals one of them.
 *
 * No lost wake-up: a waiter registers (waiting++) and then re-tries the CAS,
 * both under the mutex, before it blocks; a release decrements in_flight and
 * then reads waiting. Both pairs are sequentially consistent, so either the
 * waiter's CAS sees the freed slot or the releaser sees the waiter and
 * signals it under the same mutex, which the waiter holds until it is
 * blocked in pthread_cond_timedwait().
 */
#define _GNU_SOURCE
#include "breaker/compose.h"
#include "common/message.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NS_PER_SEC          UINT64_C(1000000000)
#define DEFAULT_CONCURRENCY 10u
#define MAX_CONCURRENCY     1000000u

struct breaker_bulkhead {
    /* The hot words on their own cache line: every call writes in_flight. */
    _Alignas(64) _Atomic uint32_t in_flight;
    _Atomic uint32_t waiting;
    _Atomic uint32_t peak;
    uint32_t max_concurrent;
    _Alignas(64) _Atomic uint64_t acquired;
    _Atomic uint64_t refused;
    _Atomic uint64_t waited;
    pthread_mutex_t lock;
    pthread_cond_t freed;
};

void breaker_bulkhead_config_init(breaker_bulkhead_config *cfg) {
    memset(cfg, 0, sizeof(*cfg));
    cfg->max_concurrent = DEFAULT_CONCURRENCY;
}

int breaker_bulkhead_config_validate(const breaker_bulkhead_config *cfg, char *msg,
                                     size_t msg_len) {
    if (msg != NULL && msg_len > 0) msg[0] = '\0';
    if (cfg->max_concurrent > MAX_CONCURRENCY)
        return breaker__fail(BREAKER_EINVAL, msg, msg_len,
                             "max_concurrent: must be between 1 and %u slots (got %u)",
                             MAX_CONCURRENCY, cfg->max_concurrent);
    return BREAKER_OK;
}

int breaker_bulkhead_create(const breaker_bulkhead_config *cfg, breaker_bulkhead **out) {
    if (out == NULL) return BREAKER_EINVAL;
    *out = NULL;
    breaker_bulkhead_config c;
    if (cfg != NULL)
        c = *cfg;
    else
        breaker_bulkhead_config_init(&c);
    if (breaker_bulkhead_config_validate(&c, NULL, 0) != BREAKER_OK) return BREAKER_EINVAL;
    uint32_t max = c.max_concurrent != 0 ? c.max_concurrent : DEFAULT_CONCURRENCY;
    breaker_bulkhead *bh = aligned_alloc(64, (sizeof(*bh) + 63) / 64 * 64);
    if (bh == NULL) return BREAKER_ENOMEM;
    atomic_init(&bh->in_flight, 0);
    atomic_init(&bh->waiting, 0);
    atomic_init(&bh->peak, 0);
    atomic_init(&bh->acquired, 0);
    atomic_init(&bh->refused, 0);
    atomic_init(&bh->waited, 0);
    bh->max_concurrent = max;
    /* The wait is measured on CLOCK_MONOTONIC, like every default clock here,
     * so changing the wall clock cannot stretch or cut it. */
    pthread_condattr_t ca;
    int err = pthread_condattr_init(&ca);
    if (err == 0) err = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    if (err == 0) err = pthread_cond_init(&bh->freed, &ca);
    pthread_condattr_destroy(&ca);
    if (err == 0 && pthread_mutex_init(&bh->lock, NULL) != 0) {
        pthread_cond_destroy(&bh->freed);
        err = ENOMEM;
    }
    if (err != 0) {
        free(bh);
        return BREAKER_ENOMEM;
    }
    *out = bh;
    return BREAKER_OK;
}

void breaker_bulkhead_destroy(breaker_bulkhead *bh) {
    if (bh == NULL) return;
    pthread_cond_destroy(&bh->freed);
    pthread_mutex_destroy(&bh->lock);
    free(bh);
}

static void note_peak(breaker_bulkhead *bh, uint32_t now_in_flight) {
    uint32_t p = atomic_load_explicit(&bh->peak, memory_order_relaxed);
    while (p < now_in_flight &&
           !atomic_compare_exchange_weak_explicit(&bh->peak, &p, now_in_flight,
                                                  memory_order_relaxed, memory_order_relaxed)) {
    }
}

/* One slot if one is free. seq_cst: the load and CAS are half of the Dekker pair
 * described at the top (with the waiter count). Its acquire half also orders
 * the caller's call after the slot is taken; the release in
 * breaker_bulkhead_release() pairs with it. */
static bool take_slot(breaker_bulkhead *bh) {
    /* seq_cst here too: a relaxed load could return a stale "full" and skip
     * the CAS, so a waiter would miss the slot a release just freed. */
    uint32_t cur = atomic_load_explicit(&bh->in_flight, memory_order_seq_cst);
    while (cur < bh->max_concurrent) {
        if (atomic_compare_exchange_weak_explicit(&bh->in_flight, &cur, cur + 1,
                                                  memory_order_seq_cst, memory_order_seq_cst)) {
            note_peak(bh, cur + 1);
            atomic_fetch_add_explicit(&bh->acquired, 1, memory_order_relaxed);
            return true;
        }
    }
    return false;
}

int breaker_bulkhead_try_acquire(breaker_bulkhead *bh) {
    if (take_slot(bh)) return BREAKER_OK;
    atomic_fetch_add_explicit(&bh->refused, 1, memory_order_relaxed);
    return BREAKER_BULKHEAD_FULL;
}

static struct timespec monotonic_after(uint64_t ns) {
    uint64_t now = breaker_monotonic_ns(NULL);
    uint64_t until = (UINT64_MAX - now < ns) ? UINT64_MAX : now + ns;
    /* Far-future waits are capped at a year: time_t may be 32 bits. */
    uint64_t year = UINT64_C(365) * 86400 * NS_PER_SEC;
    if (until - now > year) until = now + year;
    struct timespec ts = {.tv_sec = (time_t)(until / NS_PER_SEC),
                          .tv_nsec = (long)(until % NS_PER_SEC)};
    return ts;
}

int breaker_bulkhead_acquire_wait(breaker_bulkhead *bh, uint64_t max_wait_ns) {
    if (take_slot(bh)) return BREAKER_OK;
    if (max_wait_ns == 0) {
        atomic_fetch_add_explicit(&bh->refused, 1, memory_order_relaxed);
        return BREAKER_BULKHEAD_FULL;
    }
    struct timespec until = monotonic_after(max_wait_ns);
    bool got = false;
    pthread_mutex_lock(&bh->lock);
    atomic_fetch_add_explicit(&bh->waiting, 1, memory_order_seq_cst);
    for (;;) {
        /* Try again after every wake-up, even a timed-out one: a slot freed
         * just as the time ran out is still taken, so no signal is wasted. */
        if (take_slot(bh)) {
            got = true;
            break;
        }
        int err = pthread_cond_timedwait(&bh->freed, &bh->lock, &until);
        if (err == ETIMEDOUT) {
            got = take_slot(bh);
            break;
        }
    }
    atomic_fetch_sub_explicit(&bh->waiting, 1, memory_order_relaxed);
    pthread_mutex_unlock(&bh->lock);
    atomic_fetch_add_explicit(got ? &bh->waited : &bh->refused, 1, memory_order_relaxed);
    return got ? BREAKER_OK : BREAKER_BULKHEAD_FULL;
}

int breaker_bulkhead_release(breaker_bulkhead *bh) {
    uint32_t cur = atomic_load_explicit(&bh->in_flight, memory_order_relaxed);
    do {
        if (cur == 0) return BREAKER_EINVAL; /* more releases than acquires */
    } while (!atomic_compare_exchange_weak_explicit(&bh->in_flight, &cur, cur - 1,
                                                    memory_order_seq_cst, memory_order_relaxed));
    /* seq_cst load: the other half of the Dekker pair with the waiter's
     * registration (see the top of the file). */
    if (atomic_load_explicit(&bh->waiting, memory_order_seq_cst) != 0) {
        pthread_mutex_lock(&bh->lock);
        pthread_cond_signal(&bh->freed);
        pthread_mutex_unlock(&bh->lock);
    }
    return BREAKER_OK;
}

int breaker_bulkhead_stats_get(breaker_bulkhead *bh, breaker_bulkhead_stats *out) {
    out->max_concurrent = bh->max_concurrent;
    out->in_flight = atomic_load_explicit(&bh->in_flight, memory_order_relaxed);
    out->waiting = atomic_load_explicit(&bh->waiting, memory_order_relaxed);
    out->peak = atomic_load_explicit(&bh->peak, memory_order_relaxed);
    out->acquired = atomic_load_explicit(&bh->acquired, memory_order_relaxed);
    out->refused = atomic_load_explicit(&bh->refused, memory_order_relaxed);
    out->waited = atomic_load_explicit(&bh->waited, memory_order_relaxed);
    return BREAKER_OK;
}
