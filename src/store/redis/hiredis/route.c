/* SPDX-License-Identifier: MIT */
/*
 * route.c - the hiredis transport's route table (net.h): the nodes it
 * knows and which one serves a key. Nodes are parsed from the handle's
 * addresses (cluster_nodes; sentinel_nodes' own are Sentinel's), added and
 * never removed, and published to the probe path with release; the slot
 * map is read here and written by what learns it: a MOVED (here), CLUSTER
 * SLOTS (cluster.c) and the Sentinels' answer (sentinel.c). Both of those
 * build on this file; it opens no connection and only frees one.
 */
#include "store/redis/hiredis/net.h"

#include "common/message.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SEEDS 64u /* cluster_nodes entries */

/* ---- Configuration ------------------------------------------------------------- */

/* One "host:port" of cluster_nodes, `s` (`len` bytes; "[v6]:port" too).
 * @return 1 with `host` and `*port`, or 0 with `msg`. */
static int parse_seed(const char *s, size_t len, const char *field, char *host, size_t host_cap,
                      int *port, char *msg, size_t msg_len) {
    const char *colon = NULL;
    for (size_t i = 0; i < len; i++)
        if (s[i] == ':') colon = s + i;
    const char *h = s;
    size_t hl = colon != NULL ? (size_t)(colon - s) : 0;
    if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
        h++;
        hl -= 2;
    }
    long p = 0;
    size_t digits = 0;
    for (const char *c = colon != NULL ? colon + 1 : s + len; c < s + len; c++, digits++) {
        if (*c < '0' || *c > '9' || p > 65535) {
            p = -1;
            break;
        }
        p = p * 10 + (*c - '0');
    }
    if (colon == NULL || hl == 0 || hl >= host_cap || digits == 0 || p < 1 || p > 65535) {
        breaker__fail(BREAKER_EINVAL, msg, msg_len, "%s: \"%.*s\" is not host:port (port 1..65535)",
                      field, (int)len, s);
        return 0;
    }
    memcpy(host, h, hl);
    host[hl] = '\0';
    *port = (int)p;
    return 1;
}

int breaker__redis_each_addr(const char *list, const char *field, unsigned max, char *msg,
                             size_t msg_len, int (*each)(void *ctx, const char *host, int port),
                             void *ctx) {
    unsigned count = 0;
    for (const char *s = list;;) {
        const char *end = strchr(s, ',');
        size_t len = end != NULL ? (size_t)(end - s) : strlen(s);
        while (len > 0 && *s == ' ') {
            s++;
            len--;
        }
        while (len > 0 && s[len - 1] == ' ')
            len--;
        char host[256];
        int port = 0;
        if (!parse_seed(s, len, field, host, sizeof host, &port, msg, msg_len))
            return BREAKER_EINVAL;
        if (++count > max)
            return breaker__fail(BREAKER_EINVAL, msg, msg_len, "%s: at most %u addresses", field,
                                 max);
        if (each != NULL && !each(ctx, host, port))
            return breaker__fail(BREAKER_ENOMEM, msg, msg_len, "out of memory");
        if (end == NULL) return BREAKER_OK;
        s = end + 1;
    }
}

int breaker__redis_net_check(const breaker_redis_config *cfg, char *msg, size_t msg_len) {
    if (cfg->cluster_nodes == NULL) return BREAKER_OK;
    if (cfg->unix_path != NULL)
        return breaker__fail(BREAKER_EINVAL, msg, msg_len,
                             "cluster_nodes: a Redis Cluster is reached over TCP (unix_path must "
                             "be NULL)");
    if (cfg->db != 0)
        return breaker__fail(BREAKER_EINVAL, msg, msg_len,
                             "db: a Redis Cluster has only db 0 (got %d)", cfg->db);
    if (cfg->cluster_nodes[0] == '\0')
        return breaker__fail(BREAKER_EINVAL, msg, msg_len,
                             "cluster_nodes: empty (NULL for one Redis at host:port)");
    return breaker__redis_each_addr(cfg->cluster_nodes, "cluster_nodes", MAX_SEEDS, msg, msg_len,
                                    NULL, NULL);
}

/* ---- Nodes ------------------------------------------------------------------------ */

uint32_t breaker__route_nodes(const struct net *t) {
    /* acquire: pairs with add_node()'s release store; the nodes below the
     * count are fully written. */
    return atomic_load_explicit(&t->route.nodes, memory_order_acquire);
}

uint16_t breaker__route_add_node(struct net *t, const char *host, int port) {
    uint32_t n = breaker__route_nodes(t);
    for (uint32_t i = 0; i < n; i++)
        if (t->route.node[i]->port == port && strcmp(t->route.node[i]->host, host) == 0)
            return (uint16_t)i;
    if (n >= ROUTE_MAX_NODES || strlen(host) >= sizeof t->route.node[0]->host) return ROUTE_NO_NODE;
    struct node *nd = calloc(1, sizeof *nd);
    if (nd == NULL) return ROUTE_NO_NODE;
    snprintf(nd->host, sizeof nd->host, "%s", host);
    nd->port = port;
    /* Named in reasons where there may be more than one. */
    if (t->route.cluster || t->sentinel != NULL)
        snprintf(nd->addr, sizeof nd->addr, "%s:%d", host, port);
    t->route.node[n] = nd;
    /* release: publishes the node to the probe path (breaker__route_nodes()). */
    atomic_store_explicit(&t->route.nodes, n + 1, memory_order_release);
    return (uint16_t)n;
}

static int add_seed(void *ctx, const char *host, int port) {
    return breaker__route_add_node(ctx, host, port) != ROUTE_NO_NODE;
}

int breaker__route_open(struct net *t) {
    struct route *rt = &t->route;
    rt->cluster = t->cluster_nodes != NULL;
    for (unsigned s = 0; s < ROUTE_SLOTS; s++)
        atomic_init(&rt->slot[s], rt->cluster ? ROUTE_NO_NODE : 0);
    atomic_init(&rt->refresh, rt->cluster);
    if (t->sentinel != NULL) {
        /* The master is the Sentinels' to name: none until they do. */
        for (unsigned s = 0; s < ROUTE_SLOTS; s++)
            atomic_init(&rt->slot[s], ROUTE_NO_NODE);
        atomic_init(&rt->refresh, 1);
        return BREAKER_OK;
    }
    if (!rt->cluster) {
        /* One Redis: node 0 serves every slot. */
        if (breaker__route_add_node(t, t->unix_path != NULL ? "" : t->host, t->port) != 0)
            return BREAKER_ENOMEM;
        rt->node[0]->unix_path = t->unix_path;
        rt->seeds = 1;
        return BREAKER_OK;
    }
    int rc = breaker__redis_each_addr(t->cluster_nodes, "cluster_nodes", MAX_SEEDS, NULL, 0,
                                      add_seed, t);
    rt->seeds = breaker__route_nodes(t);
    return rc;
}

void breaker__route_drop(struct node *n) {
    if (n->ctx != NULL) redisFree(n->ctx);
    n->ctx = NULL;
    for (unsigned i = 0; i < NET_SCRIPTS; i++)
        n->sha[i][0] = '\0';
}

void breaker__route_close(struct net *t) {
    uint32_t n = breaker__route_nodes(t);
    for (uint32_t i = 0; i < n; i++) {
        struct node *nd = t->route.node[i];
        breaker__route_drop(nd);
        if (nd->probe_ctx != NULL) redisFree(nd->probe_ctx);
        free(nd);
        t->route.node[i] = NULL;
    }
}

struct node *breaker__route_node_of(struct net *t, const char *key) {
    unsigned slot = breaker__redis_key_slot(key, strlen(key));
    uint16_t i = atomic_load_explicit(&t->route.slot[slot], memory_order_relaxed);
    return i < breaker__route_nodes(t) ? t->route.node[i] : NULL;
}

/* ---- Redirections ---------------------------------------------------------------- */

/* A MOVED or ASK error `r` from `from`, read: the slot, the node's
 * address (an empty host: the node that answered, whose own address is
 * unknown to it) and which. @return 1, or 0 when `r` is no redirection. */
static int parse_redirect(const struct net *t, const breaker_redis_reply *r,
                          const struct node *from, unsigned long *slot, char *host, size_t host_len,
                          int *port, int *ask) {
    if (!t->route.cluster || r == NULL || r->type != BREAKER_REDIS_REPLY_ERROR) return 0;
    char addr[300];
    *ask = strncmp(r->str, "ASK ", 4) == 0;
    if (!*ask && strncmp(r->str, "MOVED ", 6) != 0) return 0;
    if (sscanf(r->str + (*ask ? 4 : 6), "%lu %299s", slot, addr) != 2 || *slot >= ROUTE_SLOTS)
        return 0;
    char *colon = strrchr(addr, ':');
    if (colon == NULL) return 0;
    *colon = '\0';
    *port = atoi(colon + 1);
    if (*port < 1 || *port > 65535) return 0;
    snprintf(host, host_len, "%s", addr[0] != '\0' ? addr : from->host);
    return 1;
}

uint16_t breaker__route_redirect(struct net *t, const breaker_redis_reply *r,
                                 const struct node *from, int *ask) {
    unsigned long slot;
    char host[300];
    int port, is_ask;
    if (!parse_redirect(t, r, from, &slot, host, sizeof host, &port, &is_ask)) return ROUTE_NO_NODE;
    uint16_t to = breaker__route_add_node(t, host, port);
    if (to == ROUTE_NO_NODE) return to;
    *ask = is_ask;
    if (!is_ask) {
        atomic_store_explicit(&t->route.slot[slot], to, memory_order_relaxed);
        atomic_store_explicit(&t->route.refresh, 1, memory_order_relaxed);
    }
    return to;
}

struct node *breaker__route_redirect_known(struct net *t, const breaker_redis_reply *r,
                                           const struct node *from, int *ask) {
    unsigned long slot;
    char host[300];
    int port;
    if (!parse_redirect(t, r, from, &slot, host, sizeof host, &port, ask)) return NULL;
    uint32_t n = breaker__route_nodes(t);
    for (uint32_t i = 0; i < n; i++)
        if (t->route.node[i]->port == port && strcmp(t->route.node[i]->host, host) == 0)
            return t->route.node[i];
    return NULL;
}
