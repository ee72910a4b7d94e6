/* SPDX-License-Identifier: MIT */
/*
 * splitmix.h - the library's one mixing function, splitmix64.
 *
 * Used where the library needs a well-spread 64-bit value from a seed: the
 * open-state jitter (a pure function of seed and generation, so a seed
 * reproduces every wait), instance identifiers, and the retry jitter stream.
 * Not for secrets.
 */
#ifndef BREAKER_COMMON_SPLITMIX_H
#define BREAKER_COMMON_SPLITMIX_H

#include <stdint.h>

#define BREAKER__GOLDEN_GAMMA UINT64_C(0x9e3779b97f4a7c15)

/* The finaliser: a bijection of 64-bit values with good avalanche. */
static inline uint64_t breaker__splitmix64(uint64_t x) {
    x += BREAKER__GOLDEN_GAMMA;
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

/* The generator: advances `*state` and returns the next value of the stream
 * (the same sequence as the reference splitmix64 generator). */
static inline uint64_t breaker__splitmix64_next(uint64_t *state) {
    uint64_t x = *state;
    *state += BREAKER__GOLDEN_GAMMA;
    return breaker__splitmix64(x);
}

#endif /* BREAKER_COMMON_SPLITMIX_H */
