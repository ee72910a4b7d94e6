/* SPDX-License-Identifier: MIT */
/*
 * fleet_util.h - what the fleet store's tests share: a handle whose rounds
 * the test runs, and the dependency's breaker, which trips on 3 failures in
 * a row, waits `open_ns` (no backoff, no jitter) and closes on one
 * successful probe, one at a time.
 */
#ifndef BREAKER_TEST_FLEET_UTIL_H
#define BREAKER_TEST_FLEET_UTIL_H

#include <breaker.h>
#include <breaker/redis.h>

#include <stdint.h>

/* A fleet handle's configuration for a test that runs its rounds itself
 * (breaker_redis_flush(): the flusher's interval is an hour), patient
 * enough that a loaded machine neither degrades it (2 s replies) nor runs a
 * lease request past its budget (1 s). */
static inline void fleet_patient_cfg(breaker_redis_config *rc) {
    breaker_redis_config_init(rc);
    rc->flush_interval_ns = 3600 * UINT64_C(1000000000);
    rc->io_timeout_ns = 2 * UINT64_C(1000000000);
    rc->probe_budget_ns = UINT64_C(1000000000);
}

static inline void fleet_dep_cfg(breaker_config *c, uint64_t open_ns, uint64_t probe_timeout_ns) {
    breaker_config_init(c);
    c->trip = BREAKER_TRIP_CONSECUTIVE;
    c->failure_threshold = 3;
    c->open_ns = open_ns;
    c->open_max_ns = open_ns;
    c->open_backoff = 1;
    c->open_jitter = 0;
    c->half_open_max_probes = 1;
    c->half_open_successes = 1;
    c->probe_timeout_ns = probe_timeout_ns;
}

#endif
