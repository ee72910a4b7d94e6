/* SPDX-License-Identifier: MIT */
/*
 * net.h - the hiredis transport of the fleet client (private): the
 * transport table of breaker/redis_transport.h over hiredis. It moves what
 * the client decides and decides nothing itself. Each file calls only the
 * files listed below it:
 *  - transport.c: the table itself, made and destroyed, and
 *    breaker_redis_open();
 *  - probe.c: the probe path (its node, a redirection followed once);
 *  - cluster.c: a round's exchange over the nodes (pipelines, MOVED, ASK,
 *    NOSCRIPT, retries) and where it goes: one Redis, the master of the
 *    key's slot in a Redis Cluster (CLUSTER SLOTS), or Sentinel's master;
 *  - sentinel.c: where the master is, when Redis Sentinel says it;
 *  - route.c: the nodes known (the addresses parsed, nodes added and never
 *    removed) and the slot map's entries: which node serves a key;
 *  - net.c: connections and calls on one node (connect, AUTH and SELECT,
 *    SCRIPT LOAD, a command's arguments, the probe path's one bounded call);
 *  - tls.c: TLS on a connection (hiredis_ssl), when the handle asks for it;
 *  - io.c: the clock of every deadline, and I/O failures in words;
 *  - slots.c: a key's Cluster slot (CRC16 of its hash tag).
 * Every command carries a key of one name, and all of a name's keys share
 * its hash tag {name}: the command goes to the node that serves the tag's
 * slot. With one Redis, that node serves every slot.
 *
 * Threads: the client's round lock is held around exchange, reachable,
 * server_of and round_done: they connect nodes, learn the slot map and run
 * rounds. probe runs on callers' threads: it reads the slot map and the
 * node list lock-free and uses a node's probe connection under probe_mu,
 * which it only ever try-locks.
 */
#ifndef BREAKER_REDIS_NET_H
#define BREAKER_REDIS_NET_H

#include "store/redis/reply.h"

#include <hiredis/hiredis.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>

#define ROUTE_SLOTS     16384u /* Redis Cluster's hash slots */
#define ROUTE_MAX_NODES 256u   /* nodes (masters and replicas) one handle may learn */
#define ROUTE_NO_NODE   0xffffu
#define NET_SCRIPTS     8u /* scripts SCRIPT LOADed on every node (net_config.scripts) */
#define NET_MS          ((uint64_t)1000000)

/* CRC-16/XMODEM of `buf` (the Cluster's key hash). Pure. */
uint16_t breaker__redis_crc16(const char *buf, size_t len);
/* The Cluster slot of `key` (its hash tag's, when it has one). Pure. */
unsigned breaker__redis_key_slot(const char *key, size_t len);

/* One Redis node. host, port and unix_path are written before the node is
 * published (route.nodes, release) and never change. */
struct node {
    char host[256];
    int port;
    const char *unix_path; /* one Redis over a unix socket, else NULL */
    char addr[272];        /* "host:port" as reasons name it ("" for one Redis) */
    /* Under the round lock: the flush connection and the SHA1s SCRIPT LOAD
     * gave on it ("" = not loaded). */
    redisContext *ctx;
    char sha[NET_SCRIPTS][41];
    /* The last exchange that went to this node failed (reachable()). */
    int failed_last;
    redisContext *probe_ctx; /* under probe_mu: the probe path's connection */
    /* Under the round lock, one exchange's bookkeeping. */
    int had_ctx, used, broken, retryable, retried, noscript, ask_read;
    size_t cursor; /* the command whose reply comes next */
    char why[256];
};

/* Where a command of an exchange goes, and how. */
struct route_hop {
    uint16_t node; /* the node it is sent to */
    uint8_t ask;   /* after an ASK: ASKING first, the map unchanged */
    uint8_t eval;  /* after a NOSCRIPT: EVAL the script's text */
    uint8_t state; /* HOP_* (cluster.c) */
};

struct route {
    int cluster;                        /* cluster_nodes was set */
    struct node *node[ROUTE_MAX_NODES]; /* the first `seeds` are the configured ones */
    _Atomic uint32_t nodes;             /* published nodes: release by the round */
    uint32_t seeds;
    /* slot -> node index (ROUTE_NO_NODE: unknown). relaxed: each is a hint
     * read alone; a stale one costs a MOVED. */
    _Atomic uint16_t slot[ROUTE_SLOTS];
    uint16_t next[ROUTE_SLOTS]; /* round scratch: the map being read */
    /* A CLUSTER SLOTS is due before the next exchange (at start, after a
     * MOVED, after a node failed). relaxed: a flag; the probe path sets it
     * too. */
    _Atomic int refresh;
    int mapped; /* under the round lock: a slot map was read once */
};

struct net_tls;      /* tls.c: the TLS settings, their files read */
struct net_sentinel; /* sentinel.c: the Sentinels and the master's name */

/* What the transport is told at creation: the handle's connection fields
 * (copied) and the scripts it loads on every node. */
struct net_config {
    const char *host, *unix_path, *password, *username, *cluster_nodes;
    int port, db;
    struct net_tls *tls;              /* NULL: plain TCP; else the transport's from then on */
    struct net_sentinel *sentinel;    /* NULL: no Sentinel; else the transport's */
    uint64_t io_timeout_ns;           /* connect and reply timeout of a round */
    uint64_t probe_wait_ns;           /* the probe connection's socket timeout */
    const char *scripts[NET_SCRIPTS]; /* loaded on connect; NULL-terminated */
};

/* The transport (the `t` of its table). */
struct net {
    char *host, *unix_path, *password, *username, *cluster_nodes;
    int port, db;
    struct net_tls *tls;           /* NULL: plain TCP */
    struct net_sentinel *sentinel; /* NULL: the master is host:port (or a Cluster) */
    uint64_t io_timeout_ns, probe_wait_ns;
    const char *scripts[NET_SCRIPTS];
    unsigned nscripts;
    struct route route;
    /* The scripts' SHAs for the probe path (a SHA is a function of the
     * text: written once, never changed): ready[i] published with release
     * after sha[i]. */
    char probe_sha[NET_SCRIPTS][41];
    _Atomic int probe_sha_ready[NET_SCRIPTS];
    pthread_mutex_t probe_mu; /* try-locked only; guards every node's probe_ctx */
    /* Scratch of an exchange: the hops of its commands. */
    struct route_hop *hop;
    size_t hop_cap;
    _Atomic uint64_t redirects_moved, redirects_ask; /* relaxed: counters */
    _Atomic uint64_t master_switches;                /* relaxed: Sentinel's, a counter */
};

/* ---- io.c --------------------------------------------------------------------- */

/* The monotonic clock, in ns: every deadline of the transport is on it. */
uint64_t breaker__redis_net_now(void);
/* `ns` as hiredis takes a timeout (at least 1 µs). */
struct timeval breaker__redis_tv(uint64_t ns);
/* What failed on `c` during `what`, in words (a timeout names it). */
void breaker__redis_io_reason(const redisContext *c, const char *what, uint64_t timeout_ns,
                              char *why, size_t why_len);

/* ---- net.c -------------------------------------------------------------------- */

/* Connect to `n`, AUTH and SELECT, `timeout_ns` for each step; hiredis's
 * reader makes breaker_redis_reply trees. @return the context, or NULL with
 * `why`. */
redisContext *breaker__redis_connect(struct net *t, const struct node *n, uint64_t timeout_ns,
                                     char *why, size_t why_len);
/* A connection to `host`:`port` (TLS when the transport speaks it),
 * authenticated as `username` with `password` (NULL: none), `db` selected:
 * a Sentinel's, with its own AUTH. @return it, or NULL with `why`. */
redisContext *breaker__redis_connect_to(struct net *t, const char *host, int port,
                                        const char *username, const char *password, int db,
                                        uint64_t timeout_ns, char *why, size_t why_len);
/* SCRIPT LOAD the scripts on `n`'s flush connection. @return 1, or 0. */
int breaker__redis_load_scripts(struct net *t, struct node *n, char *why, size_t why_len);
/* Append `cmd` to `c` (a script as EVALSHA with `n`'s SHA once loaded, EVAL
 * before that or when `eval`). */
void breaker__redis_append(struct net *t, redisContext *c, const struct node *n,
                           const breaker_redis_command *cmd, int eval);
/* The probe path: `cmd` on `n`'s probe connection (the caller holds
 * probe_mu), ASKING first when `ask`, answered before `deadline`
 * (monotonic ns); NOSCRIPT answered by EVAL. @return the reply, or NULL
 * (the connection is then dropped). */
breaker_redis_reply *breaker__redis_probe_on(struct net *t, struct node *n,
                                             const breaker_redis_command *cmd, int ask,
                                             uint64_t deadline);

/* ---- tls.c -------------------------------------------------------------------- */

/* Check the TLS fields of `cfg`: one set without tls, a certificate without
 * its key, TLS on a unix socket, TLS in a build without it. @return
 * BREAKER_OK or BREAKER_EINVAL naming the field. */
int breaker__redis_tls_check(const breaker_redis_config *cfg, char *msg, size_t msg_len);
/* The TLS settings of `cfg` (tls set), the CAs, certificate and key read.
 * @return them, or NULL with `*rc` (BREAKER_EINVAL naming the field and
 * why; BREAKER_ENOMEM) and `msg`. */
struct net_tls *breaker__redis_tls_create(const breaker_redis_config *cfg, int *rc, char *msg,
                                          size_t msg_len);
void breaker__redis_tls_free(struct net_tls *tls);
/* The TLS handshake on the connected `c` (its socket timeout set) with the
 * server at `host`, whose certificate must carry tls_server_name or `host`.
 * @return 1 (the connection speaks TLS from now on), or 0 with `why`:
 * "TLS: ..." when the handshake was refused (a configuration error,
 * cause.c), "TLS handshake: ..." when it timed out or was cut. */
int breaker__redis_tls_start(const struct net_tls *tls, redisContext *c, const char *host,
                             uint64_t timeout_ns, char *why, size_t why_len);
/* After a TLS connection's first command (`what`) got no reply: when
 * OpenSSL holds an error (the server's alert: a certificate it asked of the
 * client and did not get, say), @return 1 with "TLS: ..." in `why`; else
 * 0. */
int breaker__redis_tls_refused(const char *what, char *why, size_t why_len);

/* ---- route.c ------------------------------------------------------------------ */

/* Check the connection fields of a handle's configuration (cluster_nodes,
 * unix_path with a Cluster, db). @return BREAKER_OK or BREAKER_EINVAL. */
int breaker__redis_net_check(const breaker_redis_config *cfg, char *msg, size_t msg_len);

/* Call `each` for every "host:port" (or "[v6]:port") of the comma-separated
 * `list`, at most `max`; a bad one is BREAKER_EINVAL naming `field`.
 * `each` NULL: only checked. @return BREAKER_OK, EINVAL or ENOMEM (`each`
 * returned 0). */
int breaker__redis_each_addr(const char *list, const char *field, unsigned max, char *msg,
                             size_t msg_len, int (*each)(void *ctx, const char *host, int port),
                             void *ctx);
/* The node at `host`:`port`, added when new (under the round lock, or at
 * open). @return its index, or ROUTE_NO_NODE (no room, or out of memory). */
uint16_t breaker__route_add_node(struct net *t, const char *host, int port);
/* The nodes of the configuration (one Redis, or cluster_nodes; none yet
 * under Sentinel), every slot to one Redis. @return BREAKER_OK or
 * BREAKER_ENOMEM. */
int breaker__route_open(struct net *t);
/* Every node freed, with its connections. */
void breaker__route_close(struct net *t);
/* The nodes published (acquire: each below the count fully written). */
uint32_t breaker__route_nodes(const struct net *t);
/* The node that serves `key`'s slot now, or NULL (not known yet). */
struct node *breaker__route_node_of(struct net *t, const char *key);
/* `n`'s flush connection closed, its scripts to be loaded again. */
void breaker__route_drop(struct node *n);
/* Under the round lock: what a MOVED or ASK error `r` from `from` says,
 * learned: its node added, and for a MOVED the slot remapped and a
 * CLUSTER SLOTS asked for. @return the node's index with `*ask`, or
 * ROUTE_NO_NODE (not a redirection, or no room for the node). */
uint16_t breaker__route_redirect(struct net *t, const breaker_redis_reply *r,
                                 const struct node *from, int *ask);
/* The probe path (lock-free): the node a MOVED or ASK error `r` from `from`
 * names, when the transport knows it already (NULL: not a redirection, or a
 * node only a round may learn); nothing is written. */
struct node *breaker__route_redirect_known(struct net *t, const breaker_redis_reply *r,
                                           const struct node *from, int *ask);

/* ---- sentinel.c ---------------------------------------------------------------- */

/* Check the Sentinel fields of `cfg`. @return BREAKER_OK or BREAKER_EINVAL
 * naming the field. */
int breaker__redis_sentinel_check(const breaker_redis_config *cfg, char *msg, size_t msg_len);
/* The Sentinels of `cfg` (sentinel_nodes set). @return them, or NULL with
 * `*rc` and `msg`. */
struct net_sentinel *breaker__redis_sentinel_create(const breaker_redis_config *cfg, int *rc,
                                                    char *msg, size_t msg_len);
void breaker__redis_sentinel_free(struct net_sentinel *s);
/* Under the round lock, before an exchange (and after a READONLY within
 * one): follow what the Sentinels announced, and ask them where the
 * master is when route.refresh says so or none is known yet; every slot
 * is routed to it. @return 1 when a master is known, or 0 with `why`
 * ("Sentinel: no master named ...": a configuration error; "Sentinel: no
 * Sentinel answered (...)": an outage). */
int breaker__redis_sentinel_master(struct net *t, char *why, size_t why_len);

/* ---- cluster.c ---------------------------------------------------------------- */

int breaker__redis_net_exchange(void *t, breaker_redis_command *cmds, size_t n,
                                breaker_redis_reply **r, char *why, size_t why_len);
uint32_t breaker__redis_net_server_of(void *t, const char *key);
int breaker__redis_net_reachable(void *t, const char *key);
void breaker__redis_net_round_done(void *t);
size_t breaker__redis_net_server_keys(void *t, char (*keys)[32], size_t max);

/* ---- probe.c ------------------------------------------------------------------ */

/* The table's probe entry (breaker/redis_transport.h): try-locks probe_mu,
 * never waits. */
int breaker__redis_net_probe(void *t, breaker_redis_command *cmd, uint64_t deadline,
                             breaker_redis_reply **out);

/* ---- transport.c -------------------------------------------------------------- */

/* The hiredis transport's table. */
extern const breaker_redis_transport_ops breaker__redis_net_ops;

/* A transport for `cfg`, or NULL with `msg` (BREAKER_EINVAL naming the
 * field, BREAKER_ENOMEM) in `*rc`. */
struct net *breaker__redis_net_create(const struct net_config *cfg, int *rc, char *msg,
                                      size_t msg_len);

#endif /* BREAKER_REDIS_NET_H */
