/* SPDX-License-Identifier: MIT */
/*
 * test_breaker.h - the one way the tests create and destroy a breaker.
 *
 * Every test that makes a breaker goes through these two, so the whole suite
 * can be pointed at another home for the breaker's shared block (a store) by
 * changing them alone. Kept apart from test_util.h so that tests with their
 * own fake clock (the differential and stress tests) can use them too.
 */
#ifndef BREAKER_TEST_BREAKER_H
#define BREAKER_TEST_BREAKER_H

#include <breaker.h>

static inline int test_breaker_create(const breaker_config *cfg, breaker **out) {
    return breaker_create(cfg, out);
}

static inline void test_breaker_destroy(breaker *b) { breaker_destroy(b); }

#endif
