/* SPDX-License-Identifier: MIT */
/*
 * inproc.h - an in-process Redis for the fleet client's simulations
 * (private): the real fleet scripts (the .lua files of ../lua) run in an
 * embedded Lua 5.1, the version Redis embeds, against a keyspace of hashes
 * and sorted sets whose time is an injected clock. No socket, no thread, no global
 * state: each server is one value, and two servers in one process know
 * nothing of each other. Given the same clock readings and the same
 * commands, a server gives the same answers, run after run.
 *
 * It is a transport's far end: the simulator and the deterministic
 * simulation test put it behind the fleet client's transport table, so the
 * real round and the real probe gate talk to it as they talk to Redis.
 *
 * What it is, measured against Debian 12's redis-server 7.0.15 (the tests
 * tests/fleet/test_inproc_redis.c and test_inproc_differential.c hold it
 * to that server, reply for reply):
 *  - the commands the scripts and the client send, with Redis's replies and
 *    error texts: PING ECHO SELECT AUTH TIME QUIT; DEL EXISTS TYPE KEYS
 *    DBSIZE EXPIRE PEXPIRE TTL PTTL PERSIST FLUSHALL FLUSHDB; HSET HMSET
 *    HSETNX HGET HMGET HDEL HLEN HEXISTS HINCRBY HGETALL HKEYS HVALS HSCAN;
 *    ZADD ZCARD ZSCORE ZREM ZRANGE (by index and BYSCORE, REV, LIMIT,
 *    WITHSCORES) ZRANGEBYSCORE; EVAL EVALSHA EVAL_RO EVALSHA_RO SCRIPT
 *    LOAD|EXISTS|FLUSH|KILL; CLUSTER (every subcommand of 7.0: "ERR This
 *    instance has cluster support disabled");
 *  - scripting as 7.0's (redis.io, "Scripting with Lua"): KEYS and ARGV,
 *    redis.call and pcall, error_reply, status_reply, sha1hex, log,
 *    setresp(2), set_repl, replicate_commands, acl_check_cmd, the LOG_ and
 *    REPL_ constants, REDIS_VERSION; the bit library (LuaBitOp); math.random
 *    on Redis's generator (lrand48 from a fresh Redis's state, kept across
 *    scripts, as 7.0's); read-only globals; the conversions of replies both
 *    ways and the error texts of 7.0.15.
 *
 * Where it differs from Redis on purpose (none of it is reachable from the
 * fleet's scripts or client; the details are in each file):
 *  - one logical connection: SELECT changes the database of every later
 *    command (the fleet client uses one database on all its connections);
 *    AUTH accepts any password (there are no users);
 *  - the only types are hashes and sorted sets (the fleet keeps nothing
 *    else): a command of another type is "ERR unknown command"; ZRANGE has
 *    no BYLEX, SCRIPT no HELP or DEBUG;
 *  - the order of a hash's fields (HGETALL, HKEYS, HVALS, HSCAN) and of KEYS
 *    is the insertion order, or its reverse (breaker__redis_inproc_set_order():
 *    the scripts must not depend on it, and a test runs both); Redis gives
 *    insertion order for small hashes and an unspecified one beyond. HSCAN
 *    answers a small hash whole with cursor 0 as Redis does (at most 128
 *    fields, none longer than 64 bytes); beyond, pages of COUNT fields
 *    whose cursor is an insertion sequence, so a field present for the
 *    whole scan is returned exactly once; a sorted set's score of -0 is 0
 *    (as Redis keeps a small one's);
 *  - scripts: no cjson, cmsgpack or struct library; no shebang ("#!lua
 *    flags=...": an error); RESP2 only (redis.setresp(3): an error); no
 *    debugger; a library table's existing field can be replaced (Redis's
 *    patched Lua makes the tables read-only, a stock Lua cannot: new
 *    globals and new fields are refused as in Redis);
 *  - time: one clock reading per command (scripts included), taken when
 *    the command starts; expiry is evaluated lazily against it (a key past
 *    its deadline is gone when next touched; nothing is reclaimed in the
 *    background, so DBSIZE counts such keys, as Redis's does until its
 *    background expiry finds them);
 *  - a script that runs more than its limit of Lua instructions
 *    (BREAKER__INPROC_SCRIPT_STEPS, breaker__redis_inproc_set_script_limit())
 *    is stopped with an error (Redis would turn BUSY until SCRIPT KILL): no
 *    run of a simulation waits without a bound.
 */
#ifndef BREAKER_REDIS_INPROC_H
#define BREAKER_REDIS_INPROC_H

#include "breaker.h"
#include "store/redis/reply.h"

#include <stddef.h>
#include <stdint.h>

struct breaker__redis_inproc;

/* A script is stopped after this many Lua instructions by default (about
 * a second of Lua on this machine; a fleet script runs a few thousand). */
#define BREAKER__INPROC_SCRIPT_STEPS 100000000

/* Create an empty server whose clock is `clock(clock_ctx)`: nanoseconds
 * since the Unix epoch (TIME answers it; keys expire on it). It is read
 * once at the start of each command, on the caller's thread. @return the
 * server, or NULL when out of memory. */
struct breaker__redis_inproc *breaker__redis_inproc_create(breaker_clock_fn *clock,
                                                           void *clock_ctx);

/* Free the server and everything it holds. NULL is a no-op. */
void breaker__redis_inproc_destroy(struct breaker__redis_inproc *s);

/* Run one command, as a client on one connection would send it: `argc`
 * arguments, argument i being `argvlen[i]` bytes at `argv[i]` (binary
 * safe). @return the reply (free it with breaker_redis_reply_free()), or NULL
 * only when out of memory (then the command may be half applied, where a
 * real Redis would have been killed). Not thread-safe: one caller at a
 * time per server (servers are independent). */
breaker_redis_reply *breaker__redis_inproc_command(struct breaker__redis_inproc *s, int argc,
                                                   const char *const *argv, const size_t *argvlen);

/* The name Redis gives the script of `len` bytes at `text` (EVALSHA,
 * SCRIPT LOAD): its SHA-1 as 40 lower-case hex digits and a NUL. A
 * transport that sends EVALSHA, and EVAL on NOSCRIPT, as the client's
 * hiredis transport does, names its scripts with it. */
void breaker__sha1_hex(const void *text, size_t len, char out[41]);

/* ---- Faults, for a simulator ------------------------------------------------- */

/* A Redis restarted empty: every key of every database gone, the script
 * cache empty (the next EVALSHA answers NOSCRIPT), database 0 selected,
 * refusals off. FLUSHALL (a command) empties the keys only. */
void breaker__redis_inproc_restart(struct breaker__redis_inproc *s);

/* What the server refuses, as a Redis in that condition would:
 *  - NONE: nothing (the default);
 *  - OOM: a Redis over its maxmemory: a command that may grow the data
 *    (HSET, HINCRBY, ZADD, ...) answers "OOM command not allowed when used
 *    memory > 'maxmemory'."; inside a script, only until the script's first
 *    write (Redis cannot stop a script half done);
 *  - READONLY: a read-only replica (after a failover): every write answers
 *    "READONLY You can't write against a read only replica.", inside a
 *    script too (there it is the script's error, raised by redis.call). */
enum {
    BREAKER__INPROC_REFUSE_NONE = 0,
    BREAKER__INPROC_REFUSE_OOM = 1,
    BREAKER__INPROC_REFUSE_READONLY = 2
};
void breaker__redis_inproc_refuse(struct breaker__redis_inproc *s, int mode);

/* The order in which a hash's fields and the keys are listed (see above):
 * insertion order (the default) or its reverse. */
enum { BREAKER__INPROC_ORDER_INSERTION = 0, BREAKER__INPROC_ORDER_REVERSED = 1 };
void breaker__redis_inproc_set_order(struct breaker__redis_inproc *s, int order);

/* The number of Lua instructions after which a script is stopped (rounded
 * up to 100000; 0: the default). */
void breaker__redis_inproc_set_script_limit(struct breaker__redis_inproc *s, uint64_t steps);

/* ---- Reads, for a simulator's invariant checks -------------------------------- */

/* These read database 0 as a command would at the clock's current reading
 * (a key past its deadline is absent) and change nothing: no expiry is
 * applied, no clock is counted, no statistic moves. Pointers they hand out
 * are valid until the next call that changes the server. */

/* The type of `key`: "none", "hash" or "zset". */
const char *breaker__redis_inproc_type(struct breaker__redis_inproc *s, const char *key);

/* Field `field` of hash `key`: @return its bytes (NUL-terminated, `*len`
 * set when `len` is not NULL), or NULL when the key or the field is absent
 * or the key is not a hash. */
const char *breaker__redis_inproc_hget(struct breaker__redis_inproc *s, const char *key,
                                       const char *field, size_t *len);

/* Each field of hash `key` (in the server's order), or each member of
 * sorted set `key` (by score), is given to `fn`; a non-zero return stops
 * the walk. @return the number visited (0: no such key of that type). */
size_t breaker__redis_inproc_hash_each(struct breaker__redis_inproc *s, const char *key,
                                       int (*fn)(void *ctx, const char *field, size_t field_len,
                                                 const char *value, size_t value_len),
                                       void *ctx);
size_t breaker__redis_inproc_zset_each(struct breaker__redis_inproc *s, const char *key,
                                       int (*fn)(void *ctx, const char *member, size_t len,
                                                 double score),
                                       void *ctx);

/* The key's time to live in ms: -2 absent, -1 no expiry, else >= 0. */
long long breaker__redis_inproc_pttl(struct breaker__redis_inproc *s, const char *key);

/* What the server did since it was created (restarts included). */
struct breaker__redis_inproc_stats {
    uint64_t commands;     /* top-level commands run */
    uint64_t scripts;      /* EVAL and EVALSHA (and _RO) that ran a script */
    uint64_t script_calls; /* redis.call and redis.pcall in scripts */
    uint64_t refused;      /* commands and script calls refused (OOM, READONLY) */
};
void breaker__redis_inproc_stats(const struct breaker__redis_inproc *s,
                                 struct breaker__redis_inproc_stats *out);

#endif /* BREAKER_REDIS_INPROC_H */
