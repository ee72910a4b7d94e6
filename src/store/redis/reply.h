/* SPDX-License-Identifier: MIT */
/*
 * reply.h - a Redis reply as the fleet client reads it, whatever carried it
 * (private). The client's round (flush.c), probe gate (lease.c) and handle
 * (fleet.c) read only this type; a transport makes it: the hiredis
 * transport by giving hiredis's reader these constructors (hiredis's
 * redisReplyObjectFunctions, so its parser builds this type directly and no
 * reply is copied), the in-process transport from what its embedded
 * scripts return. RESP2's kinds, numbered as hiredis numbers them.
 */
#ifndef BREAKER_REDIS_REPLY_H
#define BREAKER_REDIS_REPLY_H

#include <stddef.h>
#include <stdint.h>

enum breaker__reply_type {
    BREAKER__REPLY_STRING = 1, /* a bulk string: str, len */
    BREAKER__REPLY_ARRAY = 2,  /* element[0 .. elements - 1], each non-NULL */
    BREAKER__REPLY_INTEGER = 3,
    BREAKER__REPLY_NIL = 4,
    BREAKER__REPLY_STATUS = 5, /* +OK: str, len */
    BREAKER__REPLY_ERROR = 6   /* -ERR ...: str, len */
};

struct breaker__reply {
    int type;          /* enum breaker__reply_type */
    long long integer; /* INTEGER */
    size_t len;        /* STRING, STATUS, ERROR: bytes in str */
    char *str;         /* NUL-terminated after len bytes (may hold NULs) */
    size_t elements;   /* ARRAY */
    struct breaker__reply **element;
};

/* Constructors: each allocates (malloc) one reply, NULL when out of memory.
 * A string's bytes are copied and NUL-terminated. An array's elements are
 * set by the caller (all of them, before it is read or freed: a NULL
 * element is freed as nothing). */
struct breaker__reply *breaker__reply_string(int type, const char *str, size_t len);
struct breaker__reply *breaker__reply_integer(long long v);
struct breaker__reply *breaker__reply_nil(void);
struct breaker__reply *breaker__reply_array(size_t n);

/* Free `r` and its elements. NULL is a no-op. */
void breaker__reply_free(struct breaker__reply *r);

/* @return 1 when `r` is an error reply whose text begins with `prefix`
 * (e.g. "NOSCRIPT", "MOVED"). */
int breaker__reply_is_error(const struct breaker__reply *r, const char *prefix);

#endif /* BREAKER_REDIS_REPLY_H */
