/* SPDX-License-Identifier: MIT */
/*
 * fleet_server.h - the server half of the fleet store, in process: what the
 * Lua scripts of src/store/redis/scripts.c decide (flush with its
 * server-directed wait, acquire_probe, release_probe, and the operator's
 * order), on an injected clock instead of Redis's TIME.
 *
 * A call is the client's own (struct breaker__fleet_call, made by
 * src/store/redis/protocol.c as the Redis client makes it) and the answer is the
 * scripts' (ANS_COUNT integers, read by protocol.c as the client reads a
 * reply), so a model of the fleet (fleet_model.c) built on this runs the
 * client's decisions unchanged, and tests/fleet/test_fleet_differential.c
 * compares this with a real redis-server, call for call.
 *
 * What Redis does and this does not: keys do not expire (key_ttl_ns: a
 * name no host flushes disappears after an hour; nothing here runs that
 * long without a call), and the scripts' reason field ("why") is not kept.
 * What this keeps and Redis does not: counts of half-opens, of leases
 * granted and of opens for a server-directed wait, for reports. What is not modelled: the shadow
 * and reconfig scripts (the fleet's shadow mode and live limits: their fields sh, sseq, cg, sw, sy,
 * cw, cy are never set here, so the answers carry no controls part, as Redis's do not until such a
 * change is made), and the checks of the stored order fields (fleet_server_corrupt() cannot put
 * them out of range).
 *
 * Not thread-safe: one thread drives a server.
 */
#ifndef BREAKER_TOOL_FLEET_SERVER_H
#define BREAKER_TOOL_FLEET_SERVER_H

#include "store/redis/protocol.h"

#include <breaker.h>

#include <stdbool.h>
#include <stdint.h>

struct fleet_server;

/* The server's view of one name, for reports and tests. */
struct fleet_name_stats {
    enum breaker_state state; /* CLOSED, OPEN or HALF_OPEN */
    uint64_t gen;
    uint32_t k;           /* failed recoveries */
    uint64_t trips;       /* CLOSED -> OPEN on the fleet's evidence */
    uint64_t transitions; /* every fleet transition */
    uint64_t half_opens;  /* OPEN -> HALF_OPEN: recovery rounds */
    uint32_t leases_out;
    uint64_t leases_granted;
    uint64_t directed_opens; /* opens for a host's server-directed wait (ARGV 12) */
    /* The rest of the state hash, as stored: successes in this half-open,
     * the open wait's end (µs), the generation the state was created with,
     * the CONSECUTIVE run. */
    uint64_t successes, until_us, born, run;
    uint64_t first_deadline_us; /* the earliest lease's deadline (µs), 0: no lease */
    uint32_t hosts;             /* fields of the sequences hash (HLEN breaker:v1:{name}:q) */
    /* The last operator order as stored (ok, fu, oseq; 0: none given). */
    int order;
    uint64_t order_until_us, order_seq;
    const char *order_who, *order_why; /* live until the next call on the server */
};

/* `clock` (required) is Redis's clock, in nanoseconds; the scripts count
 * its microseconds. @return 0, or -1 (out of memory). */
int fleet_server_create(breaker_clock_fn *clock, void *clock_ctx, struct fleet_server **out);
/* NULL is a no-op. */
void fleet_server_destroy(struct fleet_server *s);
/* The key TTL the calls send (ARGV 1; default an hour): the flush script
 * forgets a host silent this long (its entry in the sequences hash). */
void fleet_server_set_key_ttl(struct fleet_server *s, uint64_t ttl_ns);

/* EVAL of `call`'s script for `name`, with `limits` as ARGV 2 (stored when
 * the name is new, ignored otherwise). @return 0 with the script's answer
 * in `ans`, or -1 where Redis would answer a script error (the stored
 * limits are not limits: the scripts would compute on nil). */
int fleet_server_call(struct fleet_server *s, const char *name, const char *limits,
                      const struct breaker__fleet_call *call, int64_t ans[ANS_COUNT]);

/* An answer's order part (scripts.h, ANS_ORDER ..), which the scripts send
 * once an order was ever given (`present`): the kind (FLEET_ORDER_*; a
 * forced state whose time ran out is NONE), its time left in µs (0: none
 * or over), its sequence, who and why. */
struct fleet_answer_order {
    bool present;
    int kind;
    uint64_t left_us, seq;
    char who[BREAKER__FLEET_WHO_MAX + 1];
    char why[BREAKER__FLEET_WHY_MAX + 1];
};

/* fleet_server_call(), and the answer's order part in `order` (NULL: not
 * wanted). A flush's server-directed wait (ARGV 12,
 * breaker__fleet_call_directed()) opens the fleet until now + that wait,
 * capped at the stored open_max (a new generation, k unchanged, no trip
 * counted), unless the fleet is OPEN that long already or an order forces
 * a state; a forced state in force counts no deltas, and a forced open
 * refuses every lease. */
int fleet_server_call_order(struct fleet_server *s, const char *name, const char *limits,
                            const struct breaker__fleet_call *call, int64_t ans[ANS_COUNT],
                            struct fleet_answer_order *order);

/* The order script (breaker_redis_force(), _open_for(), _reset()): `kind`
 * FLEET_ORDER_OPEN, _CLOSED or _RESET, `dur_us` its time (0: until another
 * order; ignored for a reset), `who` and `why` at most
 * BREAKER__FLEET_WHO_MAX and _WHY_MAX bytes. Open: a new generation OPEN
 * (its wait the limits', cut to the order's end when that is sooner);
 * closed and reset: a new generation CLOSED with an empty window, k 0.
 * @return 0 with the answer (verdict VERDICT_APPLIED) and its order part,
 * or -1 for what Redis answers with an error (a kind, time or text out of
 * range: the prelude's writes stay, as Redis's do; a corrupt state:
 * rebuilt). */
int fleet_server_order(struct fleet_server *s, const char *name, const char *limits, int kind,
                       uint64_t dur_us, const char *who, const char *why, int64_t ans[ANS_COUNT],
                       struct fleet_answer_order *order);

/* HMGET breaker:v1:{name}:s with the fields of breaker__fleet_read_fields
 * (protocol.h): a healthy name's read of the fleet state, which changes
 * nothing (no due lease deadline is applied: the scripts do that). Each
 * field's text in `out`, `present[i]` false for an absent field (the name
 * has no state). */
#define FLEET_SERVER_READ_LEN BREAKER__FLEET_LIMITS_LEN /* the longest field: cfg */
void fleet_server_read(struct fleet_server *s, const char *name,
                       char out[BREAKER__FLEET_READ_FIELDS][FLEET_SERVER_READ_LEN],
                       bool present[BREAKER__FLEET_READ_FIELDS]);

/* The script calls run so far (every fleet_server_call()), as INFO
 * commandstats counts EVALSHA: what the fleet costs Redis. */
uint64_t fleet_server_script_calls(const struct fleet_server *s);

/* HGET breaker:v1:{name}:s cfg: the stored limits, or NULL (no state). The
 * text lives until the next call on `s`. */
const char *fleet_server_stored_limits(struct fleet_server *s, const char *name);

/* FLUSHALL: every name's keys gone (a Redis restarted empty). */
void fleet_server_flushall(struct fleet_server *s);
/* DEL breaker:v1:{name}:s: the name's state and limits gone, its window
 * and leases kept (what an operator does to change the limits). */
void fleet_server_delete_state(struct fleet_server *s, const char *name);

/* HSET breaker:v1:{name}:s <field> <value>, as an operator's mistake or a
 * corruption would: `field` one of cfg, st, gen, k, succ, until, born, ec,
 * ef, es; `value` a decimal integer (cfg: any text). `field` "q" stands for
 * a field of the sequences hash (breaker:v1:{name}:q) that the flush
 * script's checks refuse: the next flush that reads it (deltas to apply,
 * with a sequence) rebuilds the keys. The next call checks
 * the state as the scripts do: acquire_probe answers an error, flush and
 * release_probe rebuild the keys (a new, later generation, the caller's
 * limits) and answer an error. @return 0, or -1 (no state, a field or a
 * value this cannot hold). */
int fleet_server_corrupt(struct fleet_server *s, const char *name, const char *field,
                         const char *value);

/* @return 0 and the server's view of `name` as stored (no due lease
 * deadline applied: the next call does that), or -1 if it has no state
 * (`out` still counts the leases a deleted state left). */
int fleet_server_name_stats(struct fleet_server *s, const char *name, struct fleet_name_stats *out);

/* The `i`th entry of `name`'s sequences hash (host id, sequence, the time
 * in µs it was applied). @return 0, or -1 past the last. */
int fleet_server_host_seq(struct fleet_server *s, const char *name, size_t i, char host[17],
                          uint64_t *seq, uint64_t *time);

#endif /* BREAKER_TOOL_FLEET_SERVER_H */
