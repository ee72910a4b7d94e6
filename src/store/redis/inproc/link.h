/* SPDX-License-Identifier: MIT */
/*
 * link.h - one host's link to an in-process Redis (inproc.h): the fleet
 * client's transport table (breaker/redis_transport.h) over it, on a
 * simulator's clock, with the faults the simulator chooses for each
 * command (private).
 *
 * A fleet handle opened with breaker_redis_open_transport(cfg,
 * &breaker__inproc_link_ops, link, BREAKER_REDIS_NO_FLUSHER, ...) runs the
 * real client (its rounds, its probe gate, its controls) against the real
 * Lua scripts: the handle's every time is the link's clock, its rounds run
 * when the simulator calls breaker_redis_flush(), and its wake-ups (a
 * settled probe, a stored control) reach the simulator through the wake
 * callback instead of a flusher thread.
 *
 * Faults (breaker__inproc_fate_fn): a command is delivered (run, answered),
 * dropped (never run: a request lost on the way, or a server down), lost
 * (run, its reply lost: a connection cut after the server ran it),
 * deferred (run later, when the simulator says, its reply lost: a request
 * that waited in a queue past the client's timeout) or resent (run, its
 * reply lost, then run again and answered: a connection the server cut
 * after running it, and the hiredis transport sending a command that may
 * go twice again on a new one). Within one exchange
 * the commands run in order, as a connection delivers a pipeline: a fault
 * reorders commands only across exchanges and links, as separate
 * connections do.
 *
 * Not thread-safe: one thread drives a simulation.
 */
#ifndef BREAKER_REDIS_INPROC_LINK_H
#define BREAKER_REDIS_INPROC_LINK_H

#include "store/redis/inproc/inproc.h"
#include "store/redis/reply.h"

#include <stddef.h>
#include <stdint.h>

struct breaker__inproc_link;

/* The table a handle is opened with; its context is a link. */
extern const breaker_redis_transport_ops breaker__inproc_link_ops;

/* A command's fate (breaker__inproc_fate_fn). */
enum {
    BREAKER__INPROC_DELIVER = 0,
    BREAKER__INPROC_DROP = 1,
    BREAKER__INPROC_LOSE = 2,
    BREAKER__INPROC_DEFER = 3,
    BREAKER__INPROC_RESEND = 4 /* only for a command with `idempotent` set */
};

/* Decides the fate of `cmd` (`probe`: on the probe path, else a round's or
 * an operator's); for DEFER, sets `*run_at_ns` (the clock's) when it runs. */
typedef int breaker__inproc_fate_fn(void *ctx, const breaker_redis_command *cmd, int probe,
                                    uint64_t *run_at_ns);

/* A link to `server` whose clock is `clock(clock_ctx)` (ns; the server's
 * should be the same). @return it, or NULL when out of memory. The handle
 * opened on it owns it (breaker_redis_close() frees it). */
struct breaker__inproc_link *breaker__inproc_link_create(struct breaker__redis_inproc *server,
                                                         breaker_clock_fn *clock, void *clock_ctx);

/* The simulator's say over every command from now (NULL: all delivered). */
void breaker__inproc_link_set_fate(struct breaker__inproc_link *l, breaker__inproc_fate_fn *fate,
                                   void *ctx);

/* Called when the client wants a round now (NULL: none). */
void breaker__inproc_link_set_wake(struct breaker__inproc_link *l, void (*wake)(void *ctx),
                                   void *ctx);

/* Run the deferred commands due at or before the clock's now, in the order
 * they were sent. @return how many ran. */
size_t breaker__inproc_link_run_deferred(struct breaker__inproc_link *l);

/* The earliest deferred command's time, or UINT64_MAX (none). */
uint64_t breaker__inproc_link_next_deferred(const struct breaker__inproc_link *l);

/* The probe calls the link has carried so far (answered or not). */
uint64_t breaker__inproc_link_probes(const struct breaker__inproc_link *l);

/* What the link has carried. */
struct breaker__inproc_link_stats {
    uint64_t exchanges, commands, probes;
    uint64_t dropped, lost, deferred, resent;
};
void breaker__inproc_link_stats(const struct breaker__inproc_link *l,
                                struct breaker__inproc_link_stats *out);

#endif /* BREAKER_REDIS_INPROC_LINK_H */
