/* SPDX-License-Identifier: MIT */
/*
 * cause.c - why a round failed, as breaker_redis_degraded() tells it: a
 * configuration error (BREAKER_REDIS_MISCONFIGURED), which the server will
 * answer the same way to every retry until someone changes its
 * configuration or ours, or anything else (BREAKER_REDIS_DEGRADED), which
 * waiting may heal.
 *
 * Read from the reason the round gives (flush.c): the transport and the
 * round quote a server's error as the server sent it, and Redis made the
 * first word of an error its code for programs to read (WRONGPASS, NOPERM,
 * ...); a few configuration errors have only the words of an "ERR" reply,
 * which differ between Redis 7.0 and Valkey 8 (both listed: the fleet's
 * tests run against each, make check-valkey). The transport's
 * own configuration errors are said with "TLS: " (a handshake refused, a
 * certificate not trusted: hiredis/tls.c) and "Sentinel: no master"
 * (hiredis/sentinel.c). Anything not listed here is DEGRADED: a wrong guess
 * that way costs an operator an alert's delay, never an outage.
 */
#include "store/redis/client.h"

#include <string.h>

/* What no retry heals, each as a fragment of the reason. */
static const char *const misconfigured[] = {
    "WRONGPASS",                       /* AUTH: a wrong password or user, or a user disabled */
    "NOAUTH",                          /* the server wants AUTH and none was sent */
    "NOPERM",                          /* the ACL user lacks a command or a key */
    "can't run this command",          /* Redis 7.0: a script's inner call the ACL refuses */
    "can't access at least one",       /* ... a key of it */
    "ACL failure in script",           /* Valkey 8: the same */
    "without any password configured", /* AUTH to a server with no password */
    "but no password is set",          /* the same, Redis before 6 */
    "ERR unknown command",             /* EVALSHA, SCRIPT, CLUSTER disabled or renamed */
    "ERR unknown subcommand",
    "Unknown Redis command called from script",
    "Unknown command called from script", /* Valkey 8 */
    "ERR DB index is out of range",       /* db beyond the server's databases */
    "ERR SELECT is not allowed in cluster mode",
    "cluster support disabled", /* cluster_nodes naming a Redis that is not one */
    "TLS: ",                    /* the transport's: the handshake refused */
    "Sentinel: no master",      /* the transport's: no master of that name */
};

int breaker__redis_cause_of(const char *why) {
    if (why == NULL) return BREAKER_REDIS_DEGRADED;
    for (size_t i = 0; i < sizeof misconfigured / sizeof misconfigured[0]; i++)
        if (strstr(why, misconfigured[i]) != NULL) return BREAKER_REDIS_MISCONFIGURED;
    return BREAKER_REDIS_DEGRADED;
}
