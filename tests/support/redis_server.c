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
#define MAX_SERVERS 16
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

void test_redis_nap_ms(long ms) { nap_ms(ms); }

uint64_t test_redis_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

const char *test_redis_program(void) {
    const char *p = getenv("BREAKER_TEST_REDIS_SERVER");
    return p != NULL && p[0] != '\0' ? p : "redis-server";
}

/* The test's own connection to `r`: over TCP, or over the unix socket to a
 * server whose TCP port speaks TLS only. */
static redisContext *admin_connect(const struct test_redis *r, struct timeval tv) {
    return r->tls_cert != NULL ? redisConnectUnixWithTimeout(r->sock, tv)
                               : redisConnectWithTimeout("127.0.0.1", r->port, tv);
}

static int answers_ping(const struct test_redis *r) {
    struct timeval tv = {.tv_sec = 0, .tv_usec = 200000};
    redisContext *c = admin_connect(r, tv);
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

/* A Sentinel's configuration file, written once: a Sentinel rewrites it
 * with what it learned, which a restart keeps. @return 0 or -1. */
static int sentinel_conf(const struct test_redis *r) {
    char path[320];
    snprintf(path, sizeof path, "%s/sentinel.conf", r->dir);
    if (access(path, F_OK) == 0) return 0;
    FILE *f = fopen(path, "w");
    if (f == NULL) return -1;
    fprintf(f,
            "sentinel monitor %s 127.0.0.1 %d %d\n"
            "sentinel down-after-milliseconds %s %d\n"
            "sentinel failover-timeout %s 10000\n"
            "sentinel parallel-syncs %s 1\n",
            r->sentinel_of, r->sentinel_master_port, r->sentinel_quorum, r->sentinel_of,
            r->sentinel_down_ms, r->sentinel_of, r->sentinel_of);
    return fclose(f) == 0 ? 0 : -1;
}

static int spawn(struct test_redis *r) {
    if (r->sentinel_of != NULL && sentinel_conf(r) != 0) return -1;
    char port[16];
    snprintf(port, sizeof port, "%d", r->port);
    char log[320];
    snprintf(log, sizeof log, "%s/redis.log", r->dir);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        const char *argv[64];
        int n = 0;
        argv[n++] = test_redis_program();
        char conf[320];
        if (r->sentinel_of != NULL) {
            snprintf(conf, sizeof conf, "%s/sentinel.conf", r->dir);
            argv[n++] = conf;
            argv[n++] = "--sentinel";
        }
        if (r->tls_cert != NULL) {
            argv[n++] = "--port";
            argv[n++] = "0";
            argv[n++] = "--tls-port";
            argv[n++] = port;
            argv[n++] = "--tls-cert-file";
            argv[n++] = r->tls_cert;
            argv[n++] = "--tls-key-file";
            argv[n++] = r->tls_key;
            argv[n++] = "--tls-ca-cert-file";
            argv[n++] = r->tls_ca;
            argv[n++] = "--tls-auth-clients";
            argv[n++] = r->tls_auth_clients != NULL ? r->tls_auth_clients : "no";
        } else {
            argv[n++] = "--port";
            argv[n++] = port;
        }
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
        char timeout[16];
        if (r->cluster_timeout_ms > 0) {
            snprintf(timeout, sizeof timeout, "%d", r->cluster_timeout_ms);
            argv[n++] = "--cluster-enabled";
            argv[n++] = "yes";
            argv[n++] = "--cluster-config-file";
            argv[n++] = "nodes.conf"; /* in --dir */
            argv[n++] = "--cluster-node-timeout";
            argv[n++] = timeout;
            argv[n++] = "--cluster-require-full-coverage";
            argv[n++] = "no";
        }
        for (int i = 0; r->extra != NULL && r->extra[i] != NULL && i < 16; i++)
            argv[n++] = r->extra[i];
        argv[n] = NULL;
        /* execvp takes char *const[] for historical reasons; it writes nothing. */
        union {
            const char **c;
            char *const *m;
        } args = {.c = argv};
        /* A test that crashes (a sanitizer's abort) must not leave its
         * server running, holding the test's output pipe open. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        execvp(argv[0], args.m);
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
    for (int attempt = 0; attempt < 20; attempt++) {
        r->port = free_port();
        /* A Cluster node also listens on port + 10000 (its bus). */
        if (r->cluster_timeout_ms > 0 && r->port > 65535 - 10000) continue;
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
    snprintf(path, sizeof path, "%s/nodes.conf", r->dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/sentinel.conf", r->dir);
    unlink(path);
    unlink(r->sock);
    rmdir(r->dir);
}

static redisContext *connect_to(const struct test_redis *r) {
    struct timeval tv = {.tv_sec = 2, .tv_usec = 0};
    redisContext *c = admin_connect(r, tv);
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

int test_redis_ok(const struct test_redis *r, const char *fmt, ...) {
    redisContext *c = connect_to(r);
    if (c == NULL) {
        fprintf(stderr, "test_redis_ok: no connection to port %d\n", r->port);
        return -1;
    }
    va_list ap;
    va_start(ap, fmt);
    redisReply *rep = redisvCommand(c, fmt, ap);
    va_end(ap);
    int ok = rep != NULL && rep->type == REDIS_REPLY_STATUS;
    if (!ok)
        fprintf(stderr, "test_redis_ok: %s: %s\n", fmt,
                rep == NULL        ? c->errstr
                : rep->str != NULL ? rep->str
                                   : "not a status");
    if (rep != NULL) freeReplyObject(rep);
    redisFree(c);
    return ok ? 0 : -1;
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

/* ---- A Redis Cluster ------------------------------------------------------------- */

void *test_cluster_command(const struct test_cluster *c, int k, const char *fmt, ...) {
    if (c->node[k].pid <= 0) return NULL;
    redisContext *ctx = connect_to(&c->node[k]);
    if (ctx == NULL) return NULL;
    va_list ap;
    va_start(ap, fmt);
    redisReply *rep = redisvCommand(ctx, fmt, ap);
    va_end(ap);
    redisFree(ctx);
    return rep;
}

/* A status or string reply of node `k` contains `what`. */
static int node_says(const struct test_cluster *c, int k, const char *cmd, const char *what) {
    redisReply *rep = test_cluster_command(c, k, cmd);
    int yes = rep != NULL && (rep->type == REDIS_REPLY_STRING || rep->type == REDIS_REPLY_STATUS) &&
              strstr(rep->str, what) != NULL;
    if (rep != NULL) freeReplyObject(rep);
    return yes;
}

/* The master of `slot` in node `k`'s CLUSTER SLOTS, as a port, or -1. */
static int slot_port_by(const struct test_cluster *c, int k, unsigned slot) {
    redisReply *rep = test_cluster_command(c, k, "CLUSTER SLOTS");
    int port = -1;
    for (size_t i = 0; rep != NULL && rep->type == REDIS_REPLY_ARRAY && i < rep->elements; i++) {
        redisReply *range = rep->element[i];
        if (range->elements >= 3 && (unsigned long long)range->element[0]->integer <= slot &&
            slot <= (unsigned long long)range->element[1]->integer)
            port = (int)range->element[2]->element[1]->integer;
    }
    if (rep != NULL) freeReplyObject(rep);
    return port;
}

static int index_of_port(const struct test_cluster *c, int port) {
    for (int k = 0; k < c->count; k++)
        if (c->node[k].port == port) return k;
    return -1;
}

int test_cluster_master_of(const struct test_cluster *c, unsigned slot) {
    for (int k = 0; k < c->count; k++)
        if (c->node[k].pid > 0) return index_of_port(c, slot_port_by(c, k, slot));
    return -1;
}

/* Every live node says cluster_state:ok and names the same master for
 * the first slot of every master's range; `slot` (if < 16384) is `k`'s. */
static int cluster_settled(const struct test_cluster *c, unsigned slot, int k) {
    for (int j = 0; j < c->count; j++) {
        if (c->node[j].pid <= 0) continue;
        if (!node_says(c, j, "CLUSTER INFO", "cluster_state:ok")) return 0;
        if (slot < 16384 && slot_port_by(c, j, slot) != c->node[k].port) return 0;
        for (int m = 0; m < c->masters; m++) {
            unsigned first = (unsigned)(16384 * m / c->masters);
            if (slot_port_by(c, j, first) < 0) return 0;
        }
    }
    return 1;
}

int test_cluster_wait_slot(const struct test_cluster *c, unsigned slot, int k, int timeout_ms) {
    for (int waited = 0; waited <= timeout_ms; waited += 50) {
        if (cluster_settled(c, slot, k)) return 0;
        nap_ms(50);
    }
    return -1;
}

void test_cluster_stop(struct test_cluster *c) {
    for (int k = 0; k < c->count; k++)
        test_redis_stop(&c->node[k]);
    c->count = 0;
}

/* Node `k`'s CLUSTER NODES lists every node, none in handshake. */
static int knows_all(const struct test_cluster *c, int k) {
    redisReply *rep = test_cluster_command(c, k, "CLUSTER NODES");
    int lines = 0, handshake = 0;
    if (rep != NULL && rep->type == REDIS_REPLY_STRING) {
        for (const char *s = rep->str; (s = strchr(s, '\n')) != NULL; s++)
            lines++;
        handshake = strstr(rep->str, "handshake") != NULL || strstr(rep->str, "noaddr") != NULL;
    }
    if (rep != NULL) freeReplyObject(rep);
    return lines == c->count && !handshake;
}

/* CLUSTER ADDSLOTS from..to-1 on node `k` (one command: ADDSLOTSRANGE
 * needs Redis 7). */
static int add_slots(const struct test_cluster *c, int k, int from, int to) {
    redisContext *ctx = connect_to(&c->node[k]);
    if (ctx == NULL) return -1;
    int argc = 2 + (to - from);
    const char **argv = calloc((size_t)argc, sizeof *argv);
    char(*num)[12] = calloc((size_t)(to - from), sizeof *num);
    redisReply *rep = NULL;
    if (argv != NULL && num != NULL) {
        argv[0] = "CLUSTER";
        argv[1] = "ADDSLOTS";
        for (int s = from; s < to; s++) {
            snprintf(num[s - from], sizeof num[0], "%d", s);
            argv[2 + s - from] = num[s - from];
        }
        rep = redisCommandArgv(ctx, argc, argv, NULL);
    }
    int ok = rep != NULL && rep->type == REDIS_REPLY_STATUS;
    if (rep != NULL) freeReplyObject(rep);
    free(argv);
    free(num);
    redisFree(ctx);
    return ok ? 0 : -1;
}

static int form_cluster(struct test_cluster *c) {
    for (int k = 0; k < c->count; k++) {
        redisReply *rep = test_cluster_command(c, k, "CLUSTER MYID");
        if (rep == NULL || rep->type != REDIS_REPLY_STRING || rep->len != 40) {
            if (rep != NULL) freeReplyObject(rep);
            return -1;
        }
        memcpy(c->id[k], rep->str, 41);
        freeReplyObject(rep);
    }
    for (int m = 0; m < c->masters; m++)
        if (add_slots(c, m, 16384 * m / c->masters, 16384 * (m + 1) / c->masters) != 0) return -1;
    for (int k = 1; k < c->count; k++) {
        redisReply *rep = test_cluster_command(c, 0, "CLUSTER MEET 127.0.0.1 %d", c->node[k].port);
        if (rep != NULL) freeReplyObject(rep);
    }
    int known = 0;
    for (int waited = 0; waited < 10000 && !known; waited += 50) {
        known = 1;
        for (int k = 0; k < c->count && known; k++)
            known = knows_all(c, k);
        if (!known) nap_ms(50);
    }
    if (!known) return -1;
    for (int k = c->masters; k < c->count; k++) {
        redisReply *rep = test_cluster_command(c, k, "CLUSTER REPLICATE %s", c->id[k - c->masters]);
        int ok = rep != NULL && rep->type == REDIS_REPLY_STATUS;
        if (rep != NULL) freeReplyObject(rep);
        if (!ok) return -1;
    }
    for (int waited = 0; waited < 20000; waited += 50) {
        int up = cluster_settled(c, 16384, 0);
        for (int k = c->masters; k < c->count && up; k++)
            up = node_says(c, k, "INFO replication", "master_link_status:up");
        if (up) return 0;
        nap_ms(50);
    }
    return -1;
}

int test_cluster_start(struct test_cluster *c, int masters, int replicas, int node_timeout_ms) {
    return test_cluster_start_tls(c, masters, replicas, node_timeout_ms, NULL);
}

int test_cluster_start_tls(struct test_cluster *c, int masters, int replicas, int node_timeout_ms,
                           const struct test_redis *tls) {
    memset(c, 0, sizeof *c);
    if (masters < 1 || replicas < 0 || replicas > 1 || (1 + replicas) * masters > TEST_CLUSTER_MAX)
        return -1;
    c->masters = masters;
    size_t len = 0;
    static const char *const tls_cluster[] = {"--tls-cluster", "yes", "--tls-replication", "yes",
                                              NULL};
    for (int k = 0; k < (1 + replicas) * masters; k++) {
        c->node[k].cluster_timeout_ms = node_timeout_ms;
        if (tls != NULL) {
            c->node[k].tls_cert = tls->tls_cert;
            c->node[k].tls_key = tls->tls_key;
            c->node[k].tls_ca = tls->tls_ca;
            c->node[k].extra = tls_cluster;
        }
        if (test_redis_start(&c->node[k]) != 0) {
            test_cluster_stop(c);
            return -1;
        }
        c->count = k + 1;
        len += (size_t)snprintf(c->seeds + len, sizeof c->seeds - len, "%s127.0.0.1:%d",
                                k ? "," : "", c->node[k].port);
    }
    if (form_cluster(c) != 0) {
        fprintf(stderr, "the cluster did not form in time (logs in %s...)\n", c->node[0].dir);
        test_cluster_stop(c);
        return -1;
    }
    return 0;
}

/* ---- Redis Sentinel ---------------------------------------------------------------- */

/* The reply of node `r` to `cmd` (a string or status) has `what`. */
static int says(const struct test_redis *r, const char *cmd, const char *what) {
    redisContext *c = connect_to(r);
    if (c == NULL) return 0;
    redisReply *rep = redisCommand(c, cmd);
    int yes = rep != NULL && (rep->type == REDIS_REPLY_STRING || rep->type == REDIS_REPLY_STATUS) &&
              strstr(rep->str, what) != NULL;
    if (rep != NULL) freeReplyObject(rep);
    redisFree(c);
    return yes;
}

/* The port Sentinel `k` names master, or -1. */
static int named_master(const struct test_sentinels *s, int k) {
    redisContext *c = connect_to(&s->sentinel[k]);
    if (c == NULL) return -1;
    redisReply *rep = redisCommand(c, "SENTINEL get-master-addr-by-name %s", s->master_name);
    int port = -1;
    if (rep != NULL && rep->type == REDIS_REPLY_ARRAY && rep->elements == 2)
        port = atoi(rep->element[1]->str);
    if (rep != NULL) freeReplyObject(rep);
    redisFree(c);
    return port;
}

static int node_of_port(const struct test_sentinels *s, int port) {
    for (int k = 0; k < s->nodes; k++)
        if (s->node[k].port == port) return k;
    return -1;
}

/* Every replica's link is up, every Sentinel names node 0 and sees the
 * others (num-other-sentinels) and the replicas (num-slaves). */
static int sentinels_ready(const struct test_sentinels *s) {
    for (int k = 1; k < s->nodes; k++)
        if (!says(&s->node[k], "INFO replication", "master_link_status:up")) return 0;
    char others[64], slaves[64];
    snprintf(others, sizeof others, "sentinels=%d", s->sentinels);
    snprintf(slaves, sizeof slaves, "slaves=%d", s->nodes - 1);
    for (int k = 0; k < s->sentinels; k++) {
        if (named_master(s, k) != s->node[0].port) return 0;
        if (!says(&s->sentinel[k], "INFO sentinel", others)) return 0;
        if (!says(&s->sentinel[k], "INFO sentinel", slaves)) return 0;
    }
    return 1;
}

/* `r` speaks TLS only with the files of `tls` (NULL: plain). */
static void use_tls(struct test_redis *r, const struct test_redis *tls) {
    if (tls == NULL) return;
    r->tls_cert = tls->tls_cert;
    r->tls_key = tls->tls_key;
    r->tls_ca = tls->tls_ca;
}

int test_sentinels_start(struct test_sentinels *s, int replicas, int sentinels, int down_ms) {
    return test_sentinels_start_tls(s, replicas, sentinels, down_ms, NULL);
}

int test_sentinels_start_tls(struct test_sentinels *s, int replicas, int sentinels, int down_ms,
                             const struct test_redis *tls) {
    memset(s, 0, sizeof *s);
    if (replicas < 0 || replicas + 1 > TEST_SENTINEL_MAX || sentinels < 1 ||
        sentinels > TEST_SENTINEL_MAX)
        return -1;
    /* With TLS, replication and the Sentinels' own connections speak it. */
    static const char *const tls_replication[] = {"--tls-replication", "yes", NULL};
    s->master_name = "fleetmaster";
    for (int k = 0; k <= replicas; k++) {
        use_tls(&s->node[k], tls);
        int n = 0;
        if (k > 0) {
            snprintf(s->replicaof[k], sizeof s->replicaof[k], "%d", s->node[0].port);
            s->extra[k][n++] = "--replicaof";
            s->extra[k][n++] = "127.0.0.1";
            s->extra[k][n++] = s->replicaof[k];
        }
        if (tls != NULL) {
            s->extra[k][n++] = "--tls-replication";
            s->extra[k][n++] = "yes";
        }
        s->node[k].extra = n > 0 ? s->extra[k] : NULL;
        if (test_redis_start(&s->node[k]) != 0) {
            test_sentinels_stop(s);
            return -1;
        }
        s->nodes = k + 1;
    }
    size_t len = 0;
    for (int k = 0; k < sentinels; k++) {
        s->sentinel[k].sentinel_of = s->master_name;
        s->sentinel[k].sentinel_master_port = s->node[0].port;
        s->sentinel[k].sentinel_quorum = sentinels / 2 + 1;
        s->sentinel[k].sentinel_down_ms = down_ms;
        use_tls(&s->sentinel[k], tls);
        if (tls != NULL) s->sentinel[k].extra = tls_replication;
        if (test_redis_start(&s->sentinel[k]) != 0) {
            test_sentinels_stop(s);
            return -1;
        }
        s->sentinels = k + 1;
        len += (size_t)snprintf(s->addrs + len, sizeof s->addrs - len, "%s127.0.0.1:%d",
                                k ? "," : "", s->sentinel[k].port);
    }
    for (int waited = 0; waited <= 30000; waited += 100) {
        if (sentinels_ready(s)) return 0;
        nap_ms(100);
    }
    fprintf(stderr, "the Sentinels did not settle in 30 s (logs in %s, ...)\n", s->sentinel[0].dir);
    test_sentinels_stop(s);
    return -1;
}

int test_sentinels_master(const struct test_sentinels *s) {
    for (int k = 0; k < s->sentinels; k++)
        if (s->sentinel[k].pid > 0) return node_of_port(s, named_master(s, k));
    return -1;
}

int test_sentinels_wait_failover(const struct test_sentinels *s, int old, int timeout_ms) {
    for (int waited = 0; waited <= timeout_ms; waited += 50) {
        int agreed = -1, all = 1;
        for (int k = 0; k < s->sentinels && all; k++) {
            if (s->sentinel[k].pid <= 0) continue;
            int m = node_of_port(s, named_master(s, k));
            if (m < 0 || m == old || (agreed >= 0 && m != agreed)) all = 0;
            agreed = m;
        }
        if (all && agreed >= 0 && says(&s->node[agreed], "INFO replication", "role:master"))
            return agreed;
        nap_ms(50);
    }
    return -1;
}

void test_sentinels_stop(struct test_sentinels *s) {
    for (int k = 0; k < s->sentinels; k++)
        test_redis_stop(&s->sentinel[k]);
    for (int k = 0; k < s->nodes; k++)
        test_redis_stop(&s->node[k]);
    s->sentinels = s->nodes = 0;
}
