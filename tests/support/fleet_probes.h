/* SPDX-License-Identifier: MIT */
/*
 * fleet_probes.h - the probe-cap runs' limits and dependency, shared by the
 * fleet tests that count probes across processes (test_fleet_scope.c,
 * test_fleet_host.c): a dependency that is down (30 ms, then a failure)
 * until `healthy`, counting in shared memory the probes at it at once.
 */
#ifndef BREAKER_TEST_FLEET_PROBES_H
#define BREAKER_TEST_FLEET_PROBES_H

#include <breaker.h>

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

/* What the dependency counts (in a mapping the processes share). While
 * down: probes at it at once (max), probes in all, and probes that held no
 * fleet lease. */
struct fleet_probe_counts {
    _Atomic int healthy, in_flight, max_in_flight, probes, unleased;
};

/* Five failures in a 10 s window trip the fleet; one probe at a time, three
 * successes close it; a short open wait so that a two-second outage makes a
 * dozen recovery rounds. */
static inline void fleet_probe_cfg(breaker_config *c) {
    breaker_config_init(c);
    c->trip = BREAKER_TRIP_TIME_WINDOW;
    c->window_ns = 10000 * (uint64_t)1000000;
    c->min_calls = 5;
    c->failure_rate = 0.5;
    c->open_ns = c->open_max_ns = 150 * (uint64_t)1000000;
    c->open_backoff = 1;
    c->open_jitter = 0;
    c->half_open_max_probes = 1;
    c->half_open_successes = 3;
    c->probe_timeout_ns = 2000 * (uint64_t)1000000;
    c->seed = 7;
}

/* One call at the dependency: `is_probe`, holding a lease or not. */
static inline enum breaker_outcome fleet_probe_dependency(struct fleet_probe_counts *d,
                                                          int is_probe, int leased) {
    if (atomic_load(&d->healthy)) return BREAKER_SUCCESS;
    if (is_probe) {
        int now = atomic_fetch_add(&d->in_flight, 1) + 1;
        int max = atomic_load(&d->max_in_flight);
        while (now > max && !atomic_compare_exchange_weak(&d->max_in_flight, &max, now)) {
        }
        atomic_fetch_add(&d->probes, 1);
        if (!leased) atomic_fetch_add(&d->unleased, 1);
    }
    struct timespec ts = {.tv_sec = 0, .tv_nsec = 30 * 1000000L};
    nanosleep(&ts, NULL);
    if (is_probe) atomic_fetch_sub(&d->in_flight, 1);
    return BREAKER_FAILURE;
}

#endif
