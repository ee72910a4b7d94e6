/* SPDX-License-Identifier: MIT */
/*
 * fleet_workload.h - seeded random sequences of what a fleet's hosts and
 * operators ask of Redis, for the tests that run the real scripts (the .lua
 * files of src/store/redis/lua/, embedded) on two servers and compare them:
 * test_inproc (the in-process Redis in two listing orders) and
 * test_inproc_differential (the in-process Redis against a real
 * redis-server).
 *
 * A step is a command both servers run (an EVAL of one of the scripts with
 * arguments built as the client builds them, protocol.h: flushes with random
 * deltas and known generations, flushes sent again unchanged or with an
 * older sequence, lease requests, releases for the lease's generation, for
 * any or a wrong one, releases nobody holds; a healthy host's state read;
 * operators' orders, shadow mode and limits changes, some refused; FLUSHALL,
 * a state deleted, a field corrupted), or a move of the clock (a little, a
 * lot, about the keys' TTL, or onto an edge the scripts compare against:
 * the end of an open wait, a lease deadline, an order's end, a window
 * bucket's start, each exactly or a microsecond either side), or a restart
 * of the servers (empty, scripts forgotten). The workload learns what it
 * needs (generations, leases, waits) from the first server's answers.
 *
 * Scripts are named, not written into the steps: a step's argv[1] is the
 * text fleet_workload_script() gives, which a test may replace (the real
 * server's scripts read the test's clock instead of TIME).
 */
#ifndef BREAKER_TEST_FLEET_WORKLOAD_H
#define BREAKER_TEST_FLEET_WORKLOAD_H

#include "store/redis/inproc/inproc.h"
#include "store/redis/reply.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { WL_FLUSH, WL_ACQUIRE, WL_RELEASE, WL_CONTROL, WL_SCRIPT_COUNT };

enum {
    FLEET_OP_NONE,    /* nothing to send (a lease holder killed) */
    FLEET_OP_SCRIPT,  /* EVAL of script `script`: argv[1] is its text */
    FLEET_OP_COMMAND, /* any other command */
    FLEET_OP_CLOCK,   /* the clock moved (fleet_workload_clock_ns()) */
    FLEET_OP_RESTART  /* both servers restart empty */
};

#define FLEET_OP_ARGS 64

struct fleet_op {
    int kind;
    int script; /* FLEET_OP_SCRIPT: WL_* */
    int argc;
    const char *argv[FLEET_OP_ARGS];
    size_t argvlen[FLEET_OP_ARGS];
    char desc[200]; /* what the step is, for a failure's log */
    char arena[4096];
};

struct fleet_workload;

/* A workload from `seed`: 3 names with different limits (a window with a
 * slow-call rate and jitter, CONSECUTIVE, a short window), 3 hosts, keys
 * with a TTL of an hour. NULL when out of memory. */
struct fleet_workload *fleet_workload_create(uint64_t seed);
void fleet_workload_destroy(struct fleet_workload *w);

/* The next step, in `op` (valid until the next call). */
void fleet_workload_next(struct fleet_workload *w, struct fleet_op *op);
/* The first server's reply to `op` (a FLEET_OP_SCRIPT or _COMMAND). */
void fleet_workload_answered(struct fleet_workload *w, const struct fleet_op *op,
                             const breaker_redis_reply *r);

/* The clock both servers read, ns since the epoch (microseconds exactly). */
uint64_t fleet_workload_clock_ns(const struct fleet_workload *w);
/* The text of script `which` (WL_*): the constants, the prelude, the script. */
const char *fleet_workload_script(int which);

/* Whether the two replies are the same, exactly (type, integers, bytes,
 * arrays element by element). @return true, or false with `why` saying
 * where they differ. */
bool fleet_reply_equal(const breaker_redis_reply *a, const breaker_redis_reply *b, char *why,
                       size_t why_len);

/* A server as the comparison reads it: run one command (NULL: out of
 * memory). */
struct fleet_side {
    const char *name;
    breaker_redis_reply *(*run)(void *ctx, int argc, const char *const *argv,
                                const size_t *argvlen);
    void *ctx;
};

/* The two keyspaces, compared through commands: the same keys (KEYS *,
 * without the test's own, breaker:test:*), and for each the same type, the
 * same fields and values of a hash (in any order: the order of a hash is
 * not specified), the same members and scores of a sorted set in order,
 * and an expiry on both or on neither. @return true, or false with `why`. */
bool fleet_sides_equal(struct fleet_side *a, struct fleet_side *b, char *why, size_t why_len);

/* fleet_sides_equal() for two in-process servers. */
bool fleet_keyspace_equal(struct fleet_workload *w, struct breaker__redis_inproc *a,
                          struct breaker__redis_inproc *b, char *why, size_t why_len);

#endif /* BREAKER_TEST_FLEET_WORKLOAD_H */
