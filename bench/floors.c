/* SPDX-License-Identifier: MIT */
/*
 * floors.c - the least work any implementation of the public contract must
 * do for a call, timed in the same run as the library.
 *
 * The performance targets (the ratio ceilings in main.c's rows, explained in
 * docs/performance.md) are ratios to hardware baselines. Whether a target
 * is reachable at all depends on what the API obliges every call to do, so
 * these loops do exactly that and nothing else, with the same atomics and
 * memory orders as a lock-free breaker would need:
 *
 * - acquire and complete are separate, non-inlined calls (they are library
 *   entry points; the caller's compiler cannot merge them);
 * - acquire loads the state word (acquire order: it publishes the open
 *   deadline and the emptied window), writes the permit's head and counts
 *   the admission on the thread's own counter line with a plain load and
 *   store (a single-writer stripe: the cheapest counter that stays exact);
 * - complete checks the permit and settles it with an atomic OR: the manual
 *   promises that completing one permit object twice, even from two threads
 *   at once, is detected, and only a read-modify-write can decide which of
 *   two racing threads was first. That is one locked instruction per call;
 * - complete re-loads the state word to tell a stale permit, counts the
 *   outcome on the thread's line, and records it in the window: for the
 *   consecutive policy a read of the shared run (written only on failures);
 *   for the time window a read of the clock, a check that the thread's
 *   cached bucket still covers "now" and belongs to this generation, and a
 *   plain increment of the bucket's count;
 * - an open refusal loads the state word, reads the clock, loads the open
 *   deadline, counts the refusal on the thread's line and writes the
 *   permit's head.
 *
 * What is left out, and would make any real implementation slower: the
 * configuration checks (policy, slow-call timing), the breaker handle's
 * indirections, the slow paths' branches, the thread's first-call setup.
 * So a target that the floor itself misses cannot be met without changing
 * the contract; the ratio of the library to its floor is the overhead left
 * to remove.
 */
#define _GNU_SOURCE
#include "cases.h"

#include <stdatomic.h>
#include <time.h>

#ifdef CLOCK_MONOTONIC_COARSE
#define COARSE_ID CLOCK_MONOTONIC_COARSE
#else
#define COARSE_ID CLOCK_MONOTONIC
#endif

enum { ADMITTED = 1, SETTLED = 4 };
#define GEN_SHIFT 28
#define TAG       UINT64_C(0xb7c400)

/* A breaker reduced to the words a call touches, each where a real layout
 * would put it: the state word and the deadline read by everyone, the run
 * on its own line, the thread's counters and its bucket on its own lines. */
struct floor_breaker {
    _Alignas(64) _Atomic uint64_t ctl;
    _Atomic uint64_t phase_time;
    uint64_t epoch_ns;
    uint64_t bucket_ns;
    _Alignas(64) _Atomic uint64_t consecutive;
    _Alignas(64) _Atomic uint64_t admitted;
    _Atomic uint64_t successes;
    _Atomic uint64_t rejected_open;
    _Atomic uint64_t hint_start; /* first ns of the cached bucket, + 1 */
    _Atomic uint64_t hint_slot;
    _Alignas(64) _Atomic uint64_t bucket_calls[10];
    _Atomic uint64_t bucket_stamp[10];
};

static struct floor_breaker fb;

static uint64_t clock_coarse(void) {
    struct timespec ts;
    clock_gettime(COARSE_ID, &ts);
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

/* A single-writer counter: no locked instruction, no lost update. */
static inline void owned_inc(_Atomic uint64_t *c) {
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

__attribute__((noinline)) static int floor_acquire(struct floor_breaker *b, _Atomic uint64_t *p) {
    uint64_t ctl = atomic_load_explicit(&b->ctl, memory_order_acquire);
    if (__builtin_expect((ctl >> 24 & 0xf) != 0, 0)) return 1;
    atomic_store_explicit(p, (ctl >> GEN_SHIFT << GEN_SHIFT) | TAG | ADMITTED,
                          memory_order_relaxed);
    owned_inc(&b->admitted);
    return 0;
}

/* The part of complete common to both policies. @return 0 to go on. */
static inline int floor_settle(struct floor_breaker *b, _Atomic uint64_t *p, uint64_t *head) {
    uint64_t h = atomic_load_explicit(p, memory_order_relaxed);
    if (__builtin_expect((h & (0xfffff00u | ADMITTED)) != (TAG | ADMITTED), 0)) return 5;
    if (atomic_fetch_or_explicit(p, SETTLED, memory_order_relaxed) & SETTLED) return 4;
    uint64_t ctl = atomic_load_explicit(&b->ctl, memory_order_acquire);
    if (__builtin_expect((ctl ^ h) >> GEN_SHIFT != 0, 0)) return 3;
    owned_inc(&b->successes);
    *head = h;
    return 0;
}

__attribute__((noinline)) static int floor_complete_consecutive(struct floor_breaker *b,
                                                                _Atomic uint64_t *p) {
    uint64_t head;
    int rc = floor_settle(b, p, &head);
    if (rc != 0) return rc;
    if (atomic_load_explicit(&b->consecutive, memory_order_relaxed) != 0)
        atomic_store_explicit(&b->consecutive, 0, memory_order_relaxed);
    return 0;
}

__attribute__((noinline)) static int floor_complete_time(struct floor_breaker *b,
                                                         _Atomic uint64_t *p) {
    uint64_t head;
    int rc = floor_settle(b, p, &head);
    if (rc != 0) return rc;
    uint64_t rel = clock_coarse() - b->epoch_ns;
    uint64_t start = atomic_load_explicit(&b->hint_start, memory_order_relaxed);
    if (__builtin_expect(start == 0 || rel - (start - 1) >= b->bucket_ns, 0)) {
        uint64_t epoch = rel / b->bucket_ns;
        atomic_store_explicit(&b->hint_start, epoch * b->bucket_ns + 1, memory_order_relaxed);
        atomic_store_explicit(&b->hint_slot, epoch % 10, memory_order_relaxed);
        atomic_store_explicit(&b->bucket_stamp[epoch % 10], head >> GEN_SHIFT,
                              memory_order_relaxed);
    }
    uint64_t slot = atomic_load_explicit(&b->hint_slot, memory_order_relaxed);
    if (__builtin_expect(atomic_load_explicit(&b->bucket_stamp[slot], memory_order_relaxed) !=
                             head >> GEN_SHIFT,
                         0))
        return 6;
    owned_inc(&b->bucket_calls[slot]);
    return 0;
}

__attribute__((noinline)) static int floor_refuse_open(struct floor_breaker *b,
                                                       _Atomic uint64_t *p) {
    uint64_t ctl = atomic_load_explicit(&b->ctl, memory_order_acquire);
    (void)ctl;
    uint64_t now = clock_coarse();
    if (__builtin_expect(now >= atomic_load_explicit(&b->phase_time, memory_order_relaxed), 0))
        return 0; /* would go on to probe */
    owned_inc(&b->rejected_open);
    atomic_store_explicit(p, TAG, memory_order_relaxed);
    return 2;
}

static void floor_init(void) {
    atomic_store(&fb.ctl, UINT64_C(1) << GEN_SHIFT); /* generation 1, CLOSED */
    atomic_store(&fb.phase_time, UINT64_MAX);        /* open "for ever" */
    fb.epoch_ns = clock_coarse();
    fb.bucket_ns = UINT64_C(6000000000);
}

uint64_t floor_closed_consecutive(void *ctx, uint64_t iters) {
    (void)ctx;
    if (fb.bucket_ns == 0) floor_init();
    uint64_t ok = 0;
    for (uint64_t i = 0; i < iters; i++) {
        _Atomic uint64_t permit;
        if (floor_acquire(&fb, &permit) == 0) ok += floor_complete_consecutive(&fb, &permit) == 0;
    }
    return ok;
}

uint64_t floor_closed_time(void *ctx, uint64_t iters) {
    (void)ctx;
    if (fb.bucket_ns == 0) floor_init();
    uint64_t ok = 0;
    for (uint64_t i = 0; i < iters; i++) {
        _Atomic uint64_t permit;
        if (floor_acquire(&fb, &permit) == 0) ok += floor_complete_time(&fb, &permit) == 0;
    }
    return ok;
}

uint64_t floor_open(void *ctx, uint64_t iters) {
    (void)ctx;
    if (fb.bucket_ns == 0) floor_init();
    uint64_t ok = 0;
    for (uint64_t i = 0; i < iters; i++) {
        _Atomic uint64_t permit;
        ok += floor_refuse_open(&fb, &permit) == 2;
    }
    return ok;
}
