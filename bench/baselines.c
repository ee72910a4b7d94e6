/* SPDX-License-Identifier: MIT */
/*
 * baselines.c - what the hardware and the C library charge for the pieces a
 * breaker call is made of, timed with the same loop shape as the cases.
 *
 * Each loop does exactly what the library does for the piece it measures: the
 * atomics use the same memory orders as src/common/atomics.h (a relaxed fetch_add
 * whose result is unused, an acquire load), and the clocks go through
 * clock_gettime() as src/core/clock.c does. The loops fold results into a sink so
 * that the compiler keeps them.
 */
#define _GNU_SOURCE
#include "cases.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

/* Each word on its own line, so the baselines measure an uncontended,
 * unshared line as the breaker's striped counters are meant to be. */
static _Alignas(64) _Atomic uint64_t counter;
static _Alignas(64) _Atomic uint64_t word = 1;
static _Alignas(64) pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;

__attribute__((noinline)) static void empty_function(void) { __asm__ volatile(""); }
/* volatile: the compiler must load the pointer and call through it. */
static void (*volatile empty_pointer)(void) = empty_function;

static uint64_t read_clock(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

#ifdef CLOCK_MONOTONIC_COARSE
#define COARSE_ID CLOCK_MONOTONIC_COARSE
#else
#define COARSE_ID CLOCK_MONOTONIC
#endif

uint64_t bench_coarse_resolution_ns(void) {
#ifdef CLOCK_MONOTONIC_COARSE
    struct timespec res;
    if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) != 0) return 0;
    return (uint64_t)res.tv_sec * UINT64_C(1000000000) + (uint64_t)res.tv_nsec;
#else
    return 0;
#endif
}

uint64_t base_indirect_call(void *ctx, uint64_t iters) {
    (void)ctx;
    for (uint64_t i = 0; i < iters; i++)
        empty_pointer();
    return iters;
}

uint64_t base_fetch_add(void *ctx, uint64_t iters) {
    (void)ctx;
    for (uint64_t i = 0; i < iters; i++)
        atomic_fetch_add_explicit(&counter, 1, memory_order_relaxed);
    return iters;
}

uint64_t base_atomic_load(void *ctx, uint64_t iters) {
    (void)ctx;
    uint64_t sum = 0;
    for (uint64_t i = 0; i < iters; i++)
        sum += atomic_load_explicit(&word, memory_order_acquire);
    bench_sink = sum;
    return iters;
}

uint64_t base_clock(void *ctx, uint64_t iters) {
    (void)ctx;
    uint64_t sum = 0;
    for (uint64_t i = 0; i < iters; i++)
        sum += read_clock(CLOCK_MONOTONIC);
    bench_sink = sum;
    return iters;
}

uint64_t base_clock_coarse(void *ctx, uint64_t iters) {
    (void)ctx;
    uint64_t sum = 0;
    for (uint64_t i = 0; i < iters; i++)
        sum += read_clock(COARSE_ID);
    bench_sink = sum;
    return iters;
}

uint64_t base_mutex(void *ctx, uint64_t iters) {
    (void)ctx;
    for (uint64_t i = 0; i < iters; i++) {
        pthread_mutex_lock(&mutex);
        pthread_mutex_unlock(&mutex);
    }
    return iters;
}

uint64_t base_coarse_fetch_add(void *ctx, uint64_t iters) {
    (void)ctx;
    uint64_t sum = 0;
    for (uint64_t i = 0; i < iters; i++) {
        sum += read_clock(COARSE_ID);
        atomic_fetch_add_explicit(&counter, 1, memory_order_relaxed);
    }
    bench_sink = sum;
    return iters;
}

uint64_t base_clock_fetch_add(void *ctx, uint64_t iters) {
    (void)ctx;
    uint64_t sum = 0;
    for (uint64_t i = 0; i < iters; i++) {
        sum += read_clock(CLOCK_MONOTONIC);
        atomic_fetch_add_explicit(&counter, 1, memory_order_relaxed);
    }
    bench_sink = sum;
    return iters;
}

uint64_t base_coarse_load(void *ctx, uint64_t iters) {
    (void)ctx;
    uint64_t sum = 0;
    for (uint64_t i = 0; i < iters; i++)
        sum += read_clock(COARSE_ID) + atomic_load_explicit(&word, memory_order_acquire);
    bench_sink = sum;
    return iters;
}

uint64_t base_clock_load(void *ctx, uint64_t iters) {
    (void)ctx;
    uint64_t sum = 0;
    for (uint64_t i = 0; i < iters; i++)
        sum += read_clock(CLOCK_MONOTONIC) + atomic_load_explicit(&word, memory_order_acquire);
    bench_sink = sum;
    return iters;
}
