/* SPDX-License-Identifier: MIT */
/*
 * fleet_util.h - what the fleet store's outage tests share: the
 * dependency's breaker, which trips on 3 failures in a row, waits `open_ns`
 * (no backoff, no jitter) and closes on one successful probe, one at a time.
 */
#ifndef BREAKER_TEST_FLEET_UTIL_H
#define BREAKER_TEST_FLEET_UTIL_H

#include <breaker.h>

#include <stdint.h>

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
