/* SPDX-License-Identifier: MIT */
/*
 * io.c - the ground the hiredis transport's files stand on: the monotonic
 * clock its deadlines are read on, a timeout as hiredis takes it, and what
 * failed on a connection, said exactly. It calls no other file of the
 * transport: the connections (net.c), TLS (tls.c), Sentinel and the
 * exchange (cluster.c) all word their I/O failures here.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include "store/redis/hiredis/net.h"

#include "common/time_ns.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

uint64_t breaker__redis_net_now(void) { return breaker__clock_ns(CLOCK_MONOTONIC); }

struct timeval breaker__redis_tv(uint64_t ns) {
    if (ns < 1000) ns = 1000;
    struct timeval tv = {.tv_sec = (time_t)(ns / 1000000000ull),
                         .tv_usec = (suseconds_t)((ns % 1000000000ull) / 1000)};
    return tv;
}

/* What failed on `c` during `what`, said exactly: a reply that did not come
 * within the socket's timeout is "reply timeout after N ms" (hiredis says
 * "Resource temporarily unavailable", the EAGAIN of a timed-out read), a
 * server that closed the connection "connection closed by the server". */
void breaker__redis_io_reason(const redisContext *c, const char *what, uint64_t timeout_ns,
                              char *why, size_t why_len) {
    int timed_out = c->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK ||
                                               strcmp(c->errstr, strerror(EAGAIN)) == 0);
    if (timed_out)
        snprintf(why, why_len, "%s: reply timeout after %llu ms", what,
                 (unsigned long long)((timeout_ns + NET_MS / 2) / NET_MS));
    else if (c->err == REDIS_ERR_EOF)
        snprintf(why, why_len, "%s: connection closed by the server", what);
    else
        snprintf(why, why_len, "%s: %s", what, c->errstr);
}
