/* SPDX-License-Identifier: MIT */
/*
 * reply.h - a Redis reply as the fleet client reads it, whatever carried it
 * (private helpers over breaker/redis_transport.h's breaker_redis_reply).
 * The client's round (flush.c), probe gate (lease.c) and handle (fleet.c)
 * read only that type; a transport makes it: the hiredis transport by giving
 * hiredis's reader the constructors (its redisReplyObjectFunctions, so its
 * parser builds this type directly and no reply is copied), the in-process
 * transport from what its embedded scripts return.
 */
#ifndef BREAKER_REDIS_REPLY_H
#define BREAKER_REDIS_REPLY_H

#ifndef BREAKER_REDIS_TRANSPORT_EXPERIMENTAL
#define BREAKER_REDIS_TRANSPORT_EXPERIMENTAL
#endif
#include "breaker/redis_transport.h"

/* @return 1 when `r` is an error reply whose text begins with `prefix`
 * (e.g. "NOSCRIPT", "MOVED "). */
int breaker__reply_is_error(const breaker_redis_reply *r, const char *prefix);

#endif /* BREAKER_REDIS_REPLY_H */
