/* SPDX-License-Identifier: MIT */
/*
 * real_side.h - a real redis-server as a fleet_side (fleet_workload.h): a
 * command sent through hiredis, its reply copied into the client's own
 * type (store/redis/reply.h, which numbers RESP2's kinds as hiredis does),
 * so that the in-process Redis's replies and a real one's compare as one
 * type. For the tests that hold the in-process Redis to a real one.
 */
#ifndef BREAKER_TEST_REAL_SIDE_H
#define BREAKER_TEST_REAL_SIDE_H

#include "fleet_workload.h"
#include "store/redis/reply.h"

#include <hiredis/hiredis.h>

#include <stdio.h>
#include <stdlib.h>

/* A copy of `r` (NULL when out of memory). */
static inline breaker_redis_reply *real_reply_copy(const redisReply *r) {
    switch (r->type) {
    case REDIS_REPLY_INTEGER:
        return breaker_redis_reply_integer(r->integer);
    case REDIS_REPLY_NIL:
        return breaker_redis_reply_nil();
    case REDIS_REPLY_STRING:
        return breaker_redis_reply_string(BREAKER_REDIS_REPLY_STRING, r->str, r->len);
    case REDIS_REPLY_STATUS:
        return breaker_redis_reply_string(BREAKER_REDIS_REPLY_STATUS, r->str, r->len);
    case REDIS_REPLY_ERROR:
        return breaker_redis_reply_string(BREAKER_REDIS_REPLY_ERROR, r->str, r->len);
    case REDIS_REPLY_ARRAY: {
        breaker_redis_reply *a = breaker_redis_reply_array(r->elements);
        for (size_t i = 0; a != NULL && i < r->elements; i++)
            if ((a->element[i] = real_reply_copy(r->element[i])) == NULL) {
                breaker_redis_reply_free(a);
                a = NULL;
            }
        return a;
    }
    default:
        fprintf(stderr, "real_side: a RESP3 reply (type %d)\n", r->type);
        abort();
    }
}

/* fleet_side.run for a redisContext: a lost connection aborts the test
 * program (its atexit handler stops the servers). */
static inline breaker_redis_reply *real_side_run(void *ctx, int argc, const char *const *argv,
                                                   const size_t *argvlen) {
    redisContext *c = ctx;
    const char *args[64]; /* hiredis takes argv without the second const */
    if (argc > 64) abort();
    for (int i = 0; i < argc; i++)
        args[i] = argv[i];
    redisReply *r = redisCommandArgv(c, argc, args, argvlen);
    if (r == NULL) {
        fprintf(stderr, "real_side: %s\n", c->errstr);
        abort();
    }
    breaker_redis_reply *copy = real_reply_copy(r);
    freeReplyObject(r);
    return copy;
}

/* A connection to 127.0.0.1:`port` with a generous timeout (a loaded
 * machine), or an abort. */
static inline redisContext *real_side_connect(int port) {
    struct timeval tv = {.tv_sec = 10, .tv_usec = 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    if (c == NULL || c->err || redisSetTimeout(c, tv) != REDIS_OK) {
        fprintf(stderr, "real_side: connect: %s\n", c != NULL ? c->errstr : "out of memory");
        abort();
    }
    return c;
}

#endif /* BREAKER_TEST_REAL_SIDE_H */
