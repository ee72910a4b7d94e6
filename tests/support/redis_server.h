/* SPDX-License-Identifier: MIT */
/*
 * redis_server.h - a real redis-server for the fleet store's tests, started
 * on 127.0.0.1 on a free port and on a unix socket in its own temporary
 * directory, without persistence (--save '' --appendonly no), and stopped
 * again, also when a test fails (an atexit handler kills what is left).
 */
#ifndef BREAKER_TEST_REDIS_SERVER_H
#define BREAKER_TEST_REDIS_SERVER_H

#include <stdint.h>
#include <sys/types.h>

struct test_redis {
    pid_t pid;              /* 0 when not running */
    int port;               /* TCP port on 127.0.0.1 */
    char dir[256];          /* temporary directory (removed by test_redis_stop) */
    char sock[300];         /* unix socket path in `dir` */
    const char *password;   /* NULL, or --requirepass */
    int cluster_timeout_ms; /* > 0: --cluster-enabled yes with this node timeout */
    /* NULL, or more arguments of redis-server (a NULL-terminated list, at
     * most 16: "--rename-command", "EVALSHA", "", ...). */
    const char *const *extra;
    /* TLS only over TCP (--tls-port on the port, --port 0), with this
     * server certificate, key and CA (PEM files; tls_ca also verifies the
     * clients' certificates when tls_auth_clients is "yes" or "optional",
     * NULL = "no"). The unix socket stays plain: the test's own commands
     * (test_redis_int(), ...) go through it. NULL tls_cert: no TLS. */
    const char *tls_cert, *tls_key, *tls_ca, *tls_auth_clients;
    /* A Sentinel instead of a data node (--sentinel, its configuration file
     * in `dir`): it watches the master named `sentinel_of` at
     * 127.0.0.1:`sentinel_master_port`, with quorum `sentinel_quorum`, and
     * calls it down after `sentinel_down_ms` without an answer. NULL: a
     * data node. */
    const char *sentinel_of;
    int sentinel_master_port, sentinel_quorum, sentinel_down_ms;
};

/* The server program: $BREAKER_TEST_REDIS_SERVER when set (a valkey-server,
 * a redis-server of another version), else "redis-server" on the PATH. */
const char *test_redis_program(void);

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

/* Run one command (printf-style) on a fresh connection. @return 0 when it
 * answered a status (+OK), else -1 with the reply or the error on stderr. */
int test_redis_ok(const struct test_redis *r, const char *fmt, ...);

/* The number of calls of `command` (lower case: "evalsha") in INFO
 * commandstats, or -1. */
long long test_redis_cmdstat(const struct test_redis *r, const char *command);

/* The monotonic clock in ns, and a sleep of `ms`. */
uint64_t test_redis_now_ns(void);
void test_redis_nap_ms(long ms);

/* A Redis Cluster of `masters` masters with `replicas` (0 or 1) replica
 * each (masters first in `node`, then the replica of node i at masters +
 * i), every node a
 * test_redis on a free loopback port with --cluster-node-timeout
 * `node_timeout_ms` and cluster-require-full-coverage no (a master's
 * failure leaves the other masters serving). Slots are split evenly over
 * the masters in order. Stopped by test_cluster_stop() (or the atexit
 * handler). */
#define TEST_CLUSTER_MAX 8
struct test_cluster {
    struct test_redis node[TEST_CLUSTER_MAX];
    int masters, count;
    char id[TEST_CLUSTER_MAX][41]; /* CLUSTER MYID of each node */
    char seeds[256];               /* "127.0.0.1:p,127.0.0.1:p,..." of every node */
};

/* Start and form the cluster, waiting (at most 30 s) until every node says
 * cluster_state:ok, agrees on the slot map and every replica's link is up.
 * @return 0, or -1 with a message on stderr (what is started is stopped). */
int test_cluster_start(struct test_cluster *c, int masters, int replicas, int node_timeout_ms);

/* test_cluster_start() with every node speaking TLS only, the certificate,
 * key and CA of `tls` (its tls_cert, tls_key, tls_ca), the bus and the
 * replication too (--tls-cluster, --tls-replication). */
int test_cluster_start_tls(struct test_cluster *c, int masters, int replicas, int node_timeout_ms,
                           const struct test_redis *tls);

/* Stop every node and remove their directories. */
void test_cluster_stop(struct test_cluster *c);

/* The node (index into c->node) that serves `slot` as master now, by the
 * first live node's CLUSTER SLOTS, or -1. */
int test_cluster_master_of(const struct test_cluster *c, unsigned slot);

/* Wait (at most `timeout_ms`) until every live node says cluster_state:ok
 * and names node `k` master of `slot`. @return 0 or -1. */
int test_cluster_wait_slot(const struct test_cluster *c, unsigned slot, int k, int timeout_ms);

/* Run one command on node `k` (printf-style) and return the reply (free
 * it with freeReplyObject), or NULL. */
void *test_cluster_command(const struct test_cluster *c, int k, const char *fmt, ...);

/* Redis Sentinel: a master with `replicas` replicas (node[0] first, then
 * the replicas, each --replicaof the master) and `sentinels` Sentinels
 * (quorum: a majority of them) watching it as "fleetmaster", which call a
 * master down after `down_ms`. Stopped by test_sentinels_stop() (or the
 * atexit handler). */
#define TEST_SENTINEL_MAX 5
struct test_sentinels {
    struct test_redis node[TEST_SENTINEL_MAX];     /* data nodes */
    struct test_redis sentinel[TEST_SENTINEL_MAX]; /* Sentinels */
    int nodes, sentinels;
    char addrs[256]; /* "127.0.0.1:p,..." of every Sentinel */
    const char *master_name;
    char replicaof[TEST_SENTINEL_MAX][16]; /* the master's port, as an argument */
    const char *extra[TEST_SENTINEL_MAX][6];
};

/* Start them and wait (at most 30 s) until every replica's link to the
 * master is up and every Sentinel names the master and knows the other
 * Sentinels and the replicas. @return 0, or -1 with a message on stderr
 * (what is started is stopped). */
int test_sentinels_start(struct test_sentinels *s, int replicas, int sentinels, int down_ms);

/* test_sentinels_start() with every node and Sentinel speaking TLS only,
 * the certificate, key and CA of `tls` (its tls_cert, tls_key, tls_ca),
 * replication and the Sentinels' connections too. */
int test_sentinels_start_tls(struct test_sentinels *s, int replicas, int sentinels, int down_ms,
                             const struct test_redis *tls);

/* The data node (index into s->node) that the first live Sentinel names
 * master now, or -1. */
int test_sentinels_master(const struct test_sentinels *s);

/* Wait (at most `timeout_ms`) until every live Sentinel names a master
 * other than node `old` and that node says it is a master (ROLE).
 * @return its index, or -1. */
int test_sentinels_wait_failover(const struct test_sentinels *s, int old, int timeout_ms);

void test_sentinels_stop(struct test_sentinels *s);

#endif
