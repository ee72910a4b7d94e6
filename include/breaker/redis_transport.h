/* SPDX-License-Identifier: MIT */
/*
 * breaker/redis_transport.h - EXPERIMENTAL: the fleet client's I/O as a
 * table of functions, as hiredis puts its I/O behind redisContextFuncs.
 *
 * The fleet client (breaker/redis.h) decides everything a round and a probe
 * do, and speaks to Redis only through a transport: it hands the transport
 * commands (a script of the fleet protocol, a read, TIME), each routed by a
 * key, and reads the replies as breaker_redis_reply trees. The transport
 * moves them: breaker_redis_open() uses the hiredis transport (connections,
 * AUTH and SELECT, pipelines, script loading, a Redis Cluster's slot map,
 * MOVED and ASK); a test or a simulator may give another, such as the
 * in-process Redis that runs the fleet's real Lua scripts on a virtual
 * clock (src/store/redis/inproc/).
 *
 * Experimental, in the manner of breaker/backend.h: visible only when
 * BREAKER_REDIS_TRANSPORT_EXPERIMENTAL is defined before this header is
 * included, and any of it may change in any 0.x minor release.
 */
#ifndef BREAKER_REDIS_TRANSPORT_H
#define BREAKER_REDIS_TRANSPORT_H

#include <breaker/redis.h>

#include <stddef.h>
#include <stdint.h>

#endif /* BREAKER_REDIS_TRANSPORT_H */

#if defined(BREAKER_REDIS_TRANSPORT_EXPERIMENTAL) && \
    !defined(BREAKER_REDIS_TRANSPORT_H_EXPERIMENTAL)
#define BREAKER_REDIS_TRANSPORT_H_EXPERIMENTAL

#ifdef __cplusplus
extern "C" {
#endif

/* A reply, RESP2's kinds, numbered as hiredis numbers them. */
enum breaker_redis_reply_type {
    BREAKER_REDIS_REPLY_STRING = 1, /* a bulk string: str, len */
    BREAKER_REDIS_REPLY_ARRAY = 2,  /* element[0 .. elements - 1], each non-NULL */
    BREAKER_REDIS_REPLY_INTEGER = 3,
    BREAKER_REDIS_REPLY_NIL = 4,
    BREAKER_REDIS_REPLY_STATUS = 5, /* +OK: str, len */
    BREAKER_REDIS_REPLY_ERROR = 6   /* -ERR ...: str, len */
};

typedef struct breaker_redis_reply breaker_redis_reply;
struct breaker_redis_reply {
    int type;          /* enum breaker_redis_reply_type */
    long long integer; /* INTEGER */
    size_t len;        /* STRING, STATUS, ERROR: bytes in str */
    char *str;         /* NUL-terminated after len bytes (may hold NULs) */
    size_t elements;   /* ARRAY */
    breaker_redis_reply **element;
};

/* Constructors for a transport: each allocates one reply (malloc), NULL when
 * out of memory. A string's bytes are copied and NUL-terminated. An array's
 * elements are set by the caller, all of them, before it is read or freed
 * (a NULL element is freed as nothing). breaker_redis_reply_free() frees a
 * reply and its elements; NULL is a no-op. Thread-safe. */
BREAKER_API breaker_redis_reply *breaker_redis_reply_string(int type, const char *str, size_t len);
BREAKER_API breaker_redis_reply *breaker_redis_reply_integer(long long v);
BREAKER_API breaker_redis_reply *breaker_redis_reply_nil(void);
BREAKER_API breaker_redis_reply *breaker_redis_reply_array(size_t n);
BREAKER_API void breaker_redis_reply_free(breaker_redis_reply *r);

/* The most arguments the client puts in one command: argc is at most this
 * (a script's EVALSHA and SHA, which the transport adds, not counted), and
 * a transport must carry every command up to it. The client keeps within it
 * by sending a round's credits of one server in several commands when they
 * do not fit in one. */
#define BREAKER_REDIS_COMMAND_ARGS_MAX 62

/* One command, as the client hands it to a transport. */
typedef struct breaker_redis_command breaker_redis_command;
struct breaker_redis_command {
    /* The key whose hash slot routes the command: every key of one name
     * shares the hash tag {name}, so a name's commands go to one server. */
    const char *key;
    /* Non-NULL: run this Lua script (its text; the transport may send
     * EVALSHA of its SHA-1 and answer a NOSCRIPT by loading it), with
     * argv[0 .. argc) as EVAL's arguments after the script: numkeys, the
     * keys, the arguments. NULL: argv is the whole command. */
    const char *script;
    int argc;
    const char *const *argv;
    const size_t *argvlen; /* NULL: every argument is a C string */
    /* Nonzero: the command may be sent twice (a retry on a new connection
     * after the server cut the old one may run it again, harmlessly: a
     * read, or a flush whose sequence counts its deltas once). Zero: never
     * sent again within one exchange. */
    int idempotent;
    /* Set by the transport: which server answered (equal ids: the same
     * server), so that a read can be paired with that server's TIME. */
    uint32_t server;
};

/* What a probe call came to (breaker_redis_transport_ops.probe). */
enum breaker_redis_probe_result {
    BREAKER_REDIS_PROBE_ANSWERED = 0, /* *reply set */
    BREAKER_REDIS_PROBE_BUSY = 1,     /* another caller is using the probe connection: not sent */
    BREAKER_REDIS_PROBE_UNREADY = 2,  /* no probe connection: not sent */
    BREAKER_REDIS_PROBE_LOST = 3      /* sent, not answered in time: the server may still run it */
};

/* A transport: the client's I/O. `t` is the transport's own context. The
 * client calls exchange, reachable and round_done from one thread at a time
 * (its round lock held), probe from any caller's thread (concurrently with
 * the others), now_ns from any thread. */
typedef struct breaker_redis_transport_ops breaker_redis_transport_ops;
struct breaker_redis_transport_ops {
    const char *name; /* "hiredis", "inproc", ... */
    /* Send `cmds` (each to the server of its key's slot, pipelined per
     * server, every server written to before any is read), within the
     * transport's reply timeout, and put the reply to cmds[i] in
     * replies[i] (NULL: none came), each cmds[i].server set. The client
     * frees the replies (breaker_redis_reply_free()). @return 1 when every
     * command was answered, 0 when some were, -1 when none was; with `why`
     * saying the first failure (a server's address, a timeout, a refused
     * connection) when not all were. A server's refusal is quoted as the
     * server said it (WRONGPASS, NOPERM, ...), and a failure of the
     * transport's own that no retry heals begins "TLS: " or "Sentinel: no
     * master": the client tells configuration errors from outages by
     * these words (BREAKER_REDIS_MISCONFIGURED). */
    int (*exchange)(void *t, breaker_redis_command *cmds, size_t n, breaker_redis_reply **replies,
                    char *why, size_t why_len);
    /* The probe path: `cmd` sent on a connection kept for probes to its
     * key's server, its reply awaited until `deadline_ns` (now_ns()'s
     * clock). Never connects, never waits for another caller. */
    int (*probe)(void *t, breaker_redis_command *cmd, uint64_t deadline_ns,
                 breaker_redis_reply **reply);
    /* @return the id of the server `key` is routed to now (as
     * breaker_redis_command.server names it), so that the client can group
     * the names of one server in one command (multi_key). */
    uint32_t (*server_of)(void *t, const char *key);
    /* @return nonzero when `key`'s server answered the last exchange that
     * went to it, or has not been tried yet (an attach's read is skipped
     * for a server known to be down). */
    int (*reachable)(void *t, const char *key);
    /* After an exchange in which some server answered: keep (or make) the
     * probe connections of the servers that did. */
    void (*round_done)(void *t);
    /* The monotonic clock, in ns: the client's every time (view ages, lease
     * budgets, gates) is this clock's. */
    uint64_t (*now_ns)(void *t);
    /* With BREAKER_REDIS_NO_FLUSHER: the client wants a round now (a leased
     * probe settled, an operator's control was stored), which a flusher
     * thread would run at once; the caller of breaker_redis_flush() (a
     * simulator) should. May be NULL. */
    void (*wake)(void *t);
    /* Add the transport's counters to `out` (redirections followed). May be
     * NULL. */
    void (*stats)(void *t, breaker_redis_stats *out);
    /* Free the transport (breaker_redis_close() calls it last). May be NULL. */
    void (*destroy)(void *t);
    /* A key routed to each server the transport sends names to (each
     * master of a Cluster), for a command about a server rather than a
     * name (SCAN, for breaker_redis_status()): up to `max` keys, each a
     * NUL-terminated text of at most 31 bytes, into keys[i]. Called like
     * exchange (the round lock held), after an exchange (the servers are
     * known then). @return how many. May be NULL: one server, any key. */
    size_t (*server_keys)(void *t, char (*keys)[32], size_t max);
    /* @return nonzero when one command may name the keys of several names
     * routed to one server (server_of), whose hash slots differ: a single
     * Redis, not a Cluster (whose nodes refuse it, CROSSSLOT). The client
     * then sends the successes of a round's healthy names of a server in
     * one script call (lua/credit.lua). May be NULL: yes when server_keys
     * is NULL (one server, any key), else no. */
    int (*multi_key)(void *t);
};

/* Flags of breaker_redis_open_transport(). */
#define BREAKER_REDIS_NO_FLUSHER                          \
    1u /* no flusher thread: the caller runs every round, \
          with breaker_redis_flush() */

/*! breaker_redis_open_transport() :
 *  breaker_redis_open() over the transport `ops` with context `t` instead of
 *  hiredis: `cfg`'s connection fields (host, port, unix_path, password,
 *  username, db, cluster_nodes, tls and tls_*, sentinel_*) are the
 *  transport's business and ignored here; io_timeout_ns is the
 *  transport's reply timeout (the client's own bounds follow it). With
 *  BREAKER_REDIS_NO_FLUSHER no thread is started:
 *  rounds run only in breaker_redis_flush() (a simulator on a virtual
 *  clock). The handle owns `t` from here on, also on failure (ops->destroy).
 *  @return as breaker_redis_open(). */
BREAKER_API BREAKER_NODISCARD int breaker_redis_open_transport(
    const breaker_redis_config *cfg, const breaker_redis_transport_ops *ops, void *t,
    unsigned flags, breaker_redis **out, char *msg, size_t msg_len) BREAKER_NONNULL(1, 2, 5);

#ifdef __cplusplus
}
#endif

#endif /* BREAKER_REDIS_TRANSPORT_EXPERIMENTAL */
