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

#ifdef __cplusplus
}
#endif

#endif /* BREAKER_REDIS_TRANSPORT_EXPERIMENTAL */
