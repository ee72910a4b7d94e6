/* SPDX-License-Identifier: MIT */
/*
 * doc_fleet_example.h - docs/fleet.md's example, as tests/docs/docs.cmake
 * compiles it: the functions and handles the page's block defines, and the
 * two placeholders it leaves to the reader (the dependency's call, which
 * fails while doc_fleet_failing is set, and the fallback).
 */
#ifndef BREAKER_TEST_DOC_FLEET_EXAMPLE_H
#define BREAKER_TEST_DOC_FLEET_EXAMPLE_H

#include <breaker.h>
#include <breaker/redis.h>

extern breaker_redis *fleet;
extern breaker *payments;
int fleet_start(const char *redis_host, int redis_port);
int pay(int amount);
void fleet_stop(void);

/* Nonzero: the dependency fails (defined by the test). */
extern int doc_fleet_failing;

static inline int serve_fallback(void) { return -1; }

static inline int call_payments_db(int amount) {
    (void)amount;
    return doc_fleet_failing ? 5 : 0;
}

#endif /* BREAKER_TEST_DOC_FLEET_EXAMPLE_H */
