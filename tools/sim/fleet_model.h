/* SPDX-License-Identifier: MIT */
/*
 * fleet_model.h - an in-process model of the Redis fleet store
 * (include/breaker/redis.h, docs/fleet.md), on an injectable clock.
 *
 * `struct fleet_model` stands for the Redis server: the scripts' logic on
 * the model's clock (fleet_server.h). `struct fleet_client` stands for one
 * host's fleet handle: local breakers (real libbreaker breakers) whose
 * deltas it flushes when told to (fleet_client_flush(): the simulation
 * calls it every jittered interval, a test calls it as sync()), and whose
 * probes ask the model for a lease. Every decision of the client's is
 * src/store/redis/protocol.c's, the one the Redis client makes: the limits text
 * and the comparison at attach, the deltas, whether a round's call for a
 * name is the flush script or a read of its state (and what the read
 * means), what each answer means for the local breaker, the lease gate. What the model leaves out,
 * and why:
 *  - no network: a lease request is answered at once (no budget, no lost
 *    request, no degraded mode: the model's "Redis" never fails);
 *  - a leased probe's result makes its client flush at once (the Redis
 *    client wakes its flusher for it: the same, with a zero round trip);
 *  - attach reads the stored limits at once (Redis's attach does so in one
 *    bounded round trip, skipped while degraded).
 *
 * Not thread-safe: one thread drives a model and its clients (the
 * simulation, the contract test).
 */
#ifndef BREAKER_TOOL_FLEET_MODEL_H
#define BREAKER_TOOL_FLEET_MODEL_H

#include "fleet_server.h"

#include <breaker.h>

#include <stdbool.h>
#include <stdint.h>

struct fleet_model;
struct fleet_client;

/* The model trips and closes the local breakers through
 * breaker_trip_outside() and breaker_close_outside() (breaker/backend.h, the
 * entry points libbreaker exports for backends), as src/store/redis/ does. */
struct fleet_model_config {
    breaker_clock_fn *clock; /* the model's time ("Redis's clock"): required */
    void *clock_ctx;
    uint64_t flush_interval_ns; /* the clients' interval, for their gates: 0 = 250 ms */
    /* A healthy name's full flush every this many rounds, as
     * breaker_redis_config.full_flush_rounds (docs/fleet.md, "Cost"): the
     * other rounds read its state. 0 = the client's default; 1 = the script
     * every round. */
    uint32_t full_flush_rounds;
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
/* The model's server: for tests that restart it empty or delete a name's
 * state, as an operator would Redis's. */
struct fleet_server *fleet_model_server(struct fleet_model *m);
/* @return 0 and the fleet's view of `name` (fleet_server_name_stats()), or
 * -1 if no client attached it. */
int fleet_model_name_stats(struct fleet_model *m, const char *name, struct fleet_name_stats *out);

/* A host. @return 0 or -1 (out of memory). */
int fleet_client_create(struct fleet_model *m, struct fleet_client **out);
/* Destroys the breakers still attached. NULL is a no-op. */
void fleet_client_destroy(struct fleet_client *c);
/* A local breaker for `name` (breaker_name_validate()), backed by the
 * fleet. As breaker_redis_attach(): the first attacher's limits are stored;
 * a later attacher asked with other limits gets a local breaker made with
 * the stored ones over its own configuration (its clock, seed, callbacks,
 * ramp and other local fields stay its own) and BREAKER_CONFIG_DIFFERS.
 * @return BREAKER_OK, BREAKER_CONFIG_DIFFERS, or an error. */
int fleet_client_attach(struct fleet_client *c, const char *name, const breaker_config *cfg,
                        breaker **out);
/* Destroy `b` (the fleet keeps the name's state). Its deltas since the last
 * flush are not sent; its leased results not released yet still are. */
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
/* One flush round, as the Redis client's: every name's leased results and
 * deltas, the answers decided in order, then the transitions they decided
 * applied to the local breakers (breaker_trip_outside() and
 * breaker_close_outside()). */
void fleet_client_flush(struct fleet_client *c);
/* True if `p` holds a fleet lease. */
bool fleet_permit_is_leased(const struct fleet_permit *p);

#endif /* BREAKER_TOOL_FLEET_MODEL_H */
