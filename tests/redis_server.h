/* SPDX-License-Identifier: MIT */
/*
 * redis_server.h - a real redis-server for the fleet store's tests, started
 * on 127.0.0.1 on a free port and on a unix socket in its own temporary
 * directory, without persistence (--save '' --appendonly no), and stopped
 * again, also when a test fails (an atexit handler kills what is left).
 */
#ifndef BREAKER_TEST_REDIS_SERVER_H
#define BREAKER_TEST_REDIS_SERVER_H

#include <sys/types.h>

struct test_redis {
    pid_t pid;            /* 0 when not running */
    int port;             /* TCP port on 127.0.0.1 */
    char dir[256];        /* temporary directory (removed by test_redis_stop) */
    char sock[300];       /* unix socket path in `dir` */
    const char *password; /* NULL, or --requirepass */
};

/* Start a server on a free port (and the socket). Waits until it answers
 * PING, at most 5 s. @return 0, or -1 with a message on stderr. */
int test_redis_start(struct test_redis *r);

/* Start it again on the same port and socket (after a kill: an empty
 * server, since nothing persists). @return 0 or -1. */
int test_redis_restart(struct test_redis *r);

/* SIGKILL the server and reap it (the directory stays, for a restart). */
void test_redis_kill(struct test_redis *r);

/* SIGSTOP / SIGCONT the server. */
void test_redis_pause(struct test_redis *r);
void test_redis_resume(struct test_redis *r);

/* Stop the server (SIGTERM, then SIGKILL after 2 s) and remove its directory. */
void test_redis_stop(struct test_redis *r);

/* Run one command (printf-style, as redisCommand) on a fresh connection and
 * return its integer answer, or -1. For checks such as "HGET key field". */
long long test_redis_int(const struct test_redis *r, const char *fmt, ...);

/* The number of calls of `command` (lower case: "evalsha") in INFO
 * commandstats, or -1. */
long long test_redis_cmdstat(const struct test_redis *r, const char *command);

#endif
