/* SPDX-License-Identifier: MIT */
/*
 * fleet_model.h - an in-process model of the Redis fleet store
 * (include/breaker/redis.h, docs/fleet.md), on an injectable clock.
 *
 * `struct fleet_model` stands for the Redis server: per name, the fleet
 * state, its window, its probe leases, decided exactly as the three Lua
 * scripts of src/redis/scripts.c decide (flush, acquire_probe,
 * release_probe), on the model's clock instead of Redis's TIME.
 * `struct fleet_client` stands for one host's fleet handle: local breakers
 * (real libbreaker breakers) whose deltas it flushes when told to
 * (fleet_client_flush(): the simulation calls it every jittered interval, a
 * test calls it as sync()), and whose probes ask the model for a lease, as
 * src/redis/fleet.c does. What differs from Redis, and why:
 *  - no network: a lease request is answered at once (no budget, no
 *    degraded mode: the model's "Redis" never fails);
 *  - a leased probe's result is released at once, followed by a flush of its
 *    client (the Redis client wakes its flusher for it: the same, with a
 *    zero round trip);
 *  - attach reads the stored limits at once (Redis's attach does so in one
 *    bounded round trip, skipped while degraded): a later attacher's local
 *    breaker is made with the first one's limits (its own clock, seed and
 *    callbacks), and is told so with BREAKER_CONFIG_DIFFERS.
 *
 * The fleet trips and closes its local breakers through functions given in
 * the configuration: breaker__trip_outside() and breaker__close_outside()
 * (src/core/outside.h), which only a static build of libbreaker lets a
 * program call. The fleet's trip is on its window (min_calls calls at
 * failure_rate or slow_call_rate) or, with a CONSECUTIVE policy, on its run
 * of failures (failure_threshold), as the Redis flush script decides.
 *
 * Not thread-safe: one thread drives a model and its clients (the
 * simulation, the contract test).
 */
#ifndef BREAKER_TOOL_FLEET_MODEL_H
#define BREAKER_TOOL_FLEET_MODEL_H

#include <breaker.h>

#include <stdbool.h>
#include <stdint.h>

struct fleet_model;
struct fleet_client;

/* Open `b` (CLOSED in generation `gen`) on outside evidence, or close it
 * (OPEN or HALF_OPEN in `gen`) because the fleet recovered; BREAKER_OK or
 * BREAKER_STALE, as breaker__trip_outside() and breaker__close_outside(). */
typedef int fleet_trip_fn(breaker *b, uint64_t gen, const breaker_evidence *evidence);

struct fleet_model_config {
    breaker_clock_fn *clock; /* the model's time ("Redis's clock"): required */
    void *clock_ctx;
    fleet_trip_fn *trip;        /* required: breaker__trip_outside */
    fleet_trip_fn *close;       /* required: breaker__close_outside */
    uint64_t flush_interval_ns; /* the clients' interval, for their gates: 0 = 250 ms */
};

/* The fleet's view of one name, for reports and tests. */
struct fleet_name_stats {
    enum breaker_state state; /* CLOSED, OPEN or HALF_OPEN */
    uint64_t gen;
    uint32_t k;           /* failed recoveries */
    uint64_t trips;       /* CLOSED -> OPEN on the fleet window */
    uint64_t transitions; /* every fleet transition */
    uint64_t half_opens;  /* OPEN -> HALF_OPEN: recovery rounds */
    uint32_t leases_out;
    uint64_t leases_granted;
};

/* A permit of a fleet client: the local permit and, for a probe, its lease. */
struct fleet_permit {
    breaker_permit permit;
    uint64_t token; /* 0: no lease */
    uint64_t gen;   /* the fleet generation the lease was granted in */
};

/* @return 0, or -1 (bad configuration, out of memory). */
int fleet_model_create(const struct fleet_model_config *cfg, struct fleet_model **out);
/* Every client must have been destroyed first. NULL is a no-op. */
void fleet_model_destroy(struct fleet_model *m);
/* @return 0 and the fleet's view of `name`, or -1 if no client attached it. */
int fleet_model_name_stats(struct fleet_model *m, const char *name, struct fleet_name_stats *out);

/* A host. @return 0 or -1 (out of memory). */
int fleet_client_create(struct fleet_model *m, struct fleet_client **out);
/* Destroys the breakers still attached. NULL is a no-op. */
void fleet_client_destroy(struct fleet_client *c);
/* A local breaker for `name`, backed by the fleet (see the header comment
 * for the limits). @return BREAKER_OK, BREAKER_CONFIG_DIFFERS, or an error. */
int fleet_client_attach(struct fleet_client *c, const char *name, const breaker_config *cfg,
                        breaker **out);
/* Destroy `b` (the fleet keeps the name's state). */
void fleet_client_detach(struct fleet_client *c, breaker *b);
/* The client that attached `b`, or NULL. */
struct fleet_client *fleet_model_client_of(struct fleet_model *m, const breaker *b);

/* breaker_redis_acquire(): the local breaker's answer, and for a probe a
 * lease from the fleet (not granted: the local probe is given back IGNORED
 * and the call refused). @return as breaker_acquire(). */
int fleet_client_acquire(struct fleet_client *c, breaker *b, struct fleet_permit *p);
/* breaker_redis_complete(): a leased probe's result goes to the fleet (a
 * success is IGNORED locally: the fleet decides recovery), then the client
 * flushes. @return as breaker_complete(). */
int fleet_client_complete(struct fleet_client *c, breaker *b, struct fleet_permit *p,
                          enum breaker_outcome outcome, uint64_t source);
/* One flush round: every name's deltas, then the fleet's answers applied to
 * the local breakers (tripped through the trip function, closed through the
 * close function when the fleet closes). */
void fleet_client_flush(struct fleet_client *c);
/* True if `p` holds a fleet lease. */
bool fleet_permit_is_leased(const struct fleet_permit *p);

#endif /* BREAKER_TOOL_FLEET_MODEL_H */
