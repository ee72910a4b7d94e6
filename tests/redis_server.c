/* SPDX-License-Identifier: MIT */
/*
 * redis_server.c - start, pause, kill and stop a real redis-server for the
 * fleet store's tests (redis_server.h).
 */
#define _POSIX_C_SOURCE 200809L

#include "redis_server.h"

#include <hiredis/hiredis.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The servers this process started, killed at exit if a test left one. */
#define MAX_SERVERS 8
static pid_t started[MAX_SERVERS];
static pid_t owner_pid;

static void kill_leftovers(void) {
    if (getpid() != owner_pid) return; /* a forked child exiting normally */
    for (int i = 0; i < MAX_SERVERS; i++)
        if (started[i] > 0) {
            kill(started[i], SIGCONT);
            kill(started[i], SIGKILL);
            waitpid(started[i], NULL, 0);
            started[i] = 0;
        }
}

static void remember(pid_t pid, pid_t old) {
    if (owner_pid == 0) {
        owner_pid = getpid();
        atexit(kill_leftovers);
    }
    for (int i = 0; i < MAX_SERVERS; i++)
        if (started[i] == old) {
            started[i] = pid;
            return;
        }
}

static int free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof a;
    int port = -1;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

static void nap_ms(long ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int answers_ping(const struct test_redis *r) {
    struct timeval tv = {.tv_sec = 0, .tv_usec = 200000};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", r->port, tv);
    int ok = 0;
    if (c != NULL && !c->err) {
        redisReply *rep =
            r->password ? redisCommand(c, "AUTH %s", r->password) : redisCommand(c, "PING");
        if (rep != NULL && rep->type == REDIS_REPLY_STATUS) ok = 1;
        if (rep != NULL) freeReplyObject(rep);
    }
    if (c != NULL) redisFree(c);
    return ok;
}

static int spawn(struct test_redis *r) {
    char port[16];
    snprintf(port, sizeof port, "%d", r->port);
    char log[320];
    snprintf(log, sizeof log, "%s/redis.log", r->dir);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        const char *argv[32];
        int n = 0;
        argv[n++] = "redis-server";
        argv[n++] = "--port";
        argv[n++] = port;
        argv[n++] = "--bind";
        argv[n++] = "127.0.0.1";
        argv[n++] = "--unixsocket";
        argv[n++] = r->sock;
        argv[n++] = "--unixsocketperm";
        argv[n++] = "700";
        argv[n++] = "--save";
        argv[n++] = "";
        argv[n++] = "--appendonly";
        argv[n++] = "no";
        argv[n++] = "--dir";
        argv[n++] = r->dir;
        argv[n++] = "--logfile";
        argv[n++] = log;
        argv[n++] = "--daemonize";
        argv[n++] = "no";
        if (r->password != NULL) {
            argv[n++] = "--requirepass";
            argv[n++] = r->password;
        }
        argv[n] = NULL;
        /* execvp takes char *const[] for historical reasons; it writes nothing. */
        union {
            const char **c;
            char *const *m;
        } args = {.c = argv};
        /* A test that crashes (a sanitizer's abort) must not leave its
         * server running, holding the test's output pipe open. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        execvp("redis-server", args.m);
        _exit(127);
    }
    remember(pid, r->pid);
    r->pid = pid;
    /* Bounded: 5 s for the server to answer PING. */
    for (int i = 0; i < 250; i++) {
        if (answers_ping(r)) return 0;
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            remember(0, pid);
            r->pid = 0;
            return -1; /* exited: the port was taken meanwhile, or no redis-server */
        }
        nap_ms(20);
    }
    fprintf(stderr, "redis-server on port %d did not answer PING in 5 s\n", r->port);
    return -1;
}

int test_redis_start(struct test_redis *r) {
    r->pid = 0;
    snprintf(r->dir, sizeof r->dir, "/tmp/breaker-redis-XXXXXX");
    if (mkdtemp(r->dir) == NULL) {
        perror("mkdtemp");
        return -1;
    }
    snprintf(r->sock, sizeof r->sock, "%s/redis.sock", r->dir);
    for (int attempt = 0; attempt < 5; attempt++) {
        r->port = free_port();
        if (r->port > 0 && spawn(r) == 0) return 0;
    }
    fprintf(stderr, "could not start redis-server (see %s/redis.log)\n", r->dir);
    return -1;
}

int test_redis_restart(struct test_redis *r) {
    if (r->pid > 0) test_redis_kill(r);
    for (int attempt = 0; attempt < 50; attempt++) {
        if (spawn(r) == 0) return 0;
        nap_ms(20); /* the old socket may linger briefly */
    }
    return -1;
}

void test_redis_kill(struct test_redis *r) {
    if (r->pid <= 0) return;
    kill(r->pid, SIGKILL);
    waitpid(r->pid, NULL, 0);
    remember(0, r->pid);
    r->pid = 0;
}

void test_redis_pause(struct test_redis *r) {
    if (r->pid > 0) kill(r->pid, SIGSTOP);
}

void test_redis_resume(struct test_redis *r) {
    if (r->pid > 0) kill(r->pid, SIGCONT);
}

void test_redis_stop(struct test_redis *r) {
    if (r->pid > 0) {
        kill(r->pid, SIGCONT);
        kill(r->pid, SIGTERM);
        int done = 0;
        for (int i = 0; i < 100 && !done; i++) {
            if (waitpid(r->pid, NULL, WNOHANG) == r->pid)
                done = 1;
            else
                nap_ms(20);
        }
        if (!done) {
            kill(r->pid, SIGKILL);
            waitpid(r->pid, NULL, 0);
        }
        remember(0, r->pid);
        r->pid = 0;
    }
    char path[400];
    snprintf(path, sizeof path, "%s/redis.log", r->dir);
    unlink(path);
    unlink(r->sock);
    rmdir(r->dir);
}

static redisContext *connect_to(const struct test_redis *r) {
    struct timeval tv = {.tv_sec = 2, .tv_usec = 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", r->port, tv);
    if (c == NULL || c->err) {
        if (c) redisFree(c);
        return NULL;
    }
    if (r->password != NULL) {
        redisReply *rep = redisCommand(c, "AUTH %s", r->password);
        if (rep) freeReplyObject(rep);
    }
    return c;
}

long long test_redis_int(const struct test_redis *r, const char *fmt, ...) {
    redisContext *c = connect_to(r);
    if (c == NULL) return -1;
    va_list ap;
    va_start(ap, fmt);
    redisReply *rep = redisvCommand(c, fmt, ap);
    va_end(ap);
    long long v = -1;
    if (rep != NULL) {
        if (rep->type == REDIS_REPLY_INTEGER)
            v = rep->integer;
        else if (rep->type == REDIS_REPLY_STRING)
            v = strtoll(rep->str, NULL, 10);
        else if (rep->type == REDIS_REPLY_NIL)
            v = 0;
        freeReplyObject(rep);
    }
    redisFree(c);
    return v;
}

long long test_redis_cmdstat(const struct test_redis *r, const char *command) {
    redisContext *c = connect_to(r);
    if (c == NULL) return -1;
    redisReply *rep = redisCommand(c, "INFO commandstats");
    long long v = -1;
    if (rep != NULL && rep->type == REDIS_REPLY_STRING) {
        char key[64];
        snprintf(key, sizeof key, "cmdstat_%s:calls=", command);
        const char *at = strstr(rep->str, key);
        v = at ? strtoll(at + strlen(key), NULL, 10) : 0;
    }
    if (rep) freeReplyObject(rep);
    redisFree(c);
    return v;
}
