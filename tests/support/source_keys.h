/* SPDX-License-Identifier: MIT */
/*
 * source_keys.h - source keys (breaker_complete_from) that the tests know
 * to land on distinct bits of a breaker's 64-bit map of failing sources, so
 * that n keys count as n sources exactly. Plain C, for the C++ tests too.
 */
#ifndef BREAKER_TEST_SOURCE_KEYS_H
#define BREAKER_TEST_SOURCE_KEYS_H

#include "../../src/common/splitmix.h" /* the map's bit for a key */

#include <stdint.h>

/* Fills `keys` with the first `n` keys from 1 up whose bits all differ
 * (n at most 64). */
static inline void keys_on_distinct_bits(uint64_t *keys, uint32_t n) {
    uint64_t used = 0;
    uint32_t got = 0;
    for (uint64_t k = 1; got < n; k++) {
        uint64_t bit = UINT64_C(1) << (breaker__splitmix64(k) & 63u);
        if (used & bit) continue;
        used |= bit;
        keys[got++] = k;
    }
}

#endif
