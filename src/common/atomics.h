/* SPDX-License-Identifier: MIT */
/*
 * atomics.h - the few typed atomic helpers the library uses.
 *
 * Everything goes through C11 <stdatomic.h> with explicit memory orders, so
 * each order is visible at the call site. Counters are relaxed: they order
 * nothing, they only count. The state word and the words published with it
 * use acquire/release; the comments at each call say what pairs with what.
 */
#ifndef BREAKER_ATOMICS_H
#define BREAKER_ATOMICS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#if ATOMIC_LLONG_LOCK_FREE != 2
#error "libbreaker needs lock-free 64-bit atomics (its shared block may live in shared memory)"
#endif

typedef _Atomic uint64_t breaker__atomic64;
typedef _Atomic uint8_t breaker__atomic8;

/* Counters: relaxed, because a counter is read only by statistics, which
 * promise per-field values, not a consistent cut. */
static inline void breaker__count(breaker__atomic64 *counter) {
    atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
}

static inline void breaker__count_n(breaker__atomic64 *counter, uint64_t n) {
    atomic_fetch_add_explicit(counter, n, memory_order_relaxed);
}

static inline uint64_t breaker__read(const breaker__atomic64 *word) {
    return atomic_load_explicit(word, memory_order_relaxed);
}

static inline void breaker__write(breaker__atomic64 *word, uint64_t value) {
    atomic_store_explicit(word, value, memory_order_relaxed);
}

/* The state word is read with acquire so that whatever a transition wrote
 * before publishing the state with its release CAS (the open deadline, the
 * emptied window) is visible to the reader. On x86 this costs nothing; on
 * ARM it is an ldar. */
static inline uint64_t breaker__load_acquire(const breaker__atomic64 *word) {
    return atomic_load_explicit(word, memory_order_acquire);
}

/* A transition: acq_rel on success so the winner both publishes its prior
 * writes (release) and sees the previous transition's (acquire); acquire on
 * failure because the caller re-examines the value it got back. */
static inline bool breaker__cas_acq_rel(breaker__atomic64 *word, uint64_t *expected,
                                        uint64_t desired) {
    return atomic_compare_exchange_strong_explicit(word, expected, desired, memory_order_acq_rel,
                                                   memory_order_acquire);
}

/* A CAS that orders nothing beyond its own word (claims of slots whose only
 * content is the word itself, "newer wins" bookkeeping words). */
static inline bool breaker__cas_relaxed(breaker__atomic64 *word, uint64_t *expected,
                                        uint64_t desired) {
    return atomic_compare_exchange_strong_explicit(word, expected, desired, memory_order_relaxed,
                                                   memory_order_relaxed);
}

#endif /* BREAKER_ATOMICS_H */
