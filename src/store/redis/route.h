/* SPDX-License-Identifier: MIT */
/*
 * route.h - where the fleet client's calls go (cluster.c, slots.c): one
 * Redis, or the masters of a Redis Cluster (breaker_redis_config
 * .cluster_nodes). Every call carries a key of one name, and all of a name's
 * keys share its hash tag {name}: the call goes to the node that serves the
 * tag's slot. With one Redis, that node serves every slot.
 *
 * Threads: the flusher (and attach, under round_mu) connects nodes, learns
 * the slot map (CLUSTER SLOTS, MOVED) and exchanges a round's calls; the
 * probe path reads the slot map and node list lock-free and uses a node's
 * probe connection under probe_mu.
 */
#ifndef BREAKER_REDIS_ROUTE_H
#define BREAKER_REDIS_ROUTE_H

#include "store/redis/protocol.h"

#include <hiredis/hiredis.h>

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define ROUTE_SLOTS     16384u /* Redis Cluster's hash slots */
#define ROUTE_MAX_NODES 256u   /* nodes (masters and replicas) one handle may learn */
#define ROUTE_NO_NODE   0xffffu

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
    /* Under round_mu: the flush connection and the SHA1s SCRIPT LOAD gave on
     * it ("" = not loaded). */
    redisContext *ctx;
    char sha[FLEET_SCRIPT_COUNT][41];
    redisContext *probe_ctx; /* under probe_mu: the probe path's connection */
    /* Under round_mu, one exchange's bookkeeping. */
    int had_ctx, used, broken, retryable, retried, noscript, ask_read;
    size_t cursor; /* the call whose reply comes next */
    char why[256];
};

/* Where a call of a round goes, and how (struct pending, client.h). */
struct route_hop {
    uint16_t node; /* the node it is sent to */
    uint8_t ask;   /* after an ASK: ASKING first, the map unchanged */
    uint8_t eval;  /* after a NOSCRIPT: EVAL the script's text */
    uint8_t state; /* HOP_* (cluster.c) */
};

struct route {
    int cluster;                        /* cluster_nodes was set */
    struct node *node[ROUTE_MAX_NODES]; /* the first `seeds` are the configured ones */
    _Atomic uint32_t nodes;             /* published nodes: release by the flusher */
    uint32_t seeds;
    /* slot -> node index (ROUTE_NO_NODE: unknown). relaxed: each is a hint
     * read alone; a stale one costs a MOVED. */
    _Atomic uint16_t slot[ROUTE_SLOTS];
    uint16_t next[ROUTE_SLOTS]; /* flusher scratch: the map being read */
    /* A CLUSTER SLOTS is due before the next round's calls (at start, after
     * a MOVED, after a node failed). relaxed: a flag; the probe path sets
     * it too. */
    _Atomic int refresh;
    int mapped; /* under round_mu: a slot map was read once */
};

#endif /* BREAKER_REDIS_ROUTE_H */
