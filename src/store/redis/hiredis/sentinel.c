/* SPDX-License-Identifier: MIT */
/*
 * sentinel.c - Redis Sentinel for the hiredis transport (net.h,
 * breaker_redis_config.sentinel_nodes and .sentinel_master): where the
 * master is. The Sentinels are asked in turn, the last one that answered
 * first, for the master's address (SENTINEL get-master-addr-by-name), all
 * within io_timeout_ns; the master becomes a node like a Cluster's
 * (cluster.c: nodes are only ever added), and every slot is routed to it.
 * A connection to the Sentinel that answered stays subscribed to
 * +switch-master; each round reads what it announced (without waiting), so
 * that a failover moves the handle to the new master at its next round,
 * even when the old master still answers. Asked again: when a round or the
 * probe path asks for it (route.refresh: the master failed, timed out or
 * answered READONLY), and until a master is known.
 *
 * Everything here runs under the client's round lock, but for the slot
 * map's stores, which the probe path reads lock-free (relaxed: each slot
 * is a hint read alone; a stale one costs a READONLY or a lost probe
 * connection, and a refresh).
 */
#define _POSIX_C_SOURCE 200809L /* poll, strdup */

#include "store/redis/hiredis/net.h"

#include "common/message.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SENTINELS 64u

struct net_sentinel {
    char *master;              /* the master's name at the Sentinels */
    char *username, *password; /* the Sentinels' AUTH (NULL: none) */
    struct {
        char host[256];
        int port;
    } at[MAX_SENTINELS];
    uint32_t count;
    uint32_t first;    /* the one that answered last: asked first */
    redisContext *sub; /* subscribed to +switch-master at Sentinel sub_at, or NULL */
    uint32_t sub_at;
};

/* ---- Configuration --------------------------------------------------------------- */

int breaker__redis_sentinel_check(const breaker_redis_config *cfg, char *msg, size_t msg_len) {
    if (cfg->sentinel_nodes == NULL && cfg->sentinel_master == NULL) {
        if (cfg->sentinel_username != NULL || cfg->sentinel_password != NULL)
            return breaker__fail(
                BREAKER_EINVAL, msg, msg_len, "%s: set, but sentinel_nodes is NULL",
                cfg->sentinel_username != NULL ? "sentinel_username" : "sentinel_password");
        return BREAKER_OK;
    }
    if (cfg->sentinel_nodes == NULL || cfg->sentinel_master == NULL)
        return breaker__fail(BREAKER_EINVAL, msg, msg_len, "%s: set without %s",
                             cfg->sentinel_nodes != NULL ? "sentinel_nodes" : "sentinel_master",
                             cfg->sentinel_nodes != NULL ? "sentinel_master" : "sentinel_nodes");
    if (cfg->cluster_nodes != NULL)
        return breaker__fail(BREAKER_EINVAL, msg, msg_len,
                             "sentinel_nodes: a Redis Cluster has no Sentinels (cluster_nodes "
                             "must be NULL)");
    if (cfg->unix_path != NULL)
        return breaker__fail(BREAKER_EINVAL, msg, msg_len,
                             "sentinel_nodes: the master is found over TCP (unix_path must be "
                             "NULL)");
    size_t len = strlen(cfg->sentinel_master);
    if (len == 0 || len > 200)
        return breaker__fail(BREAKER_EINVAL, msg, msg_len, "sentinel_master: 1 to 200 bytes");
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)cfg->sentinel_master[i] <= ' ' || cfg->sentinel_master[i] == 0x7f)
            return breaker__fail(BREAKER_EINVAL, msg, msg_len,
                                 "sentinel_master: no blanks or control characters");
    if (cfg->sentinel_username != NULL && cfg->sentinel_password == NULL)
        return breaker__fail(BREAKER_EINVAL, msg, msg_len,
                             "sentinel_username: a Sentinel's ACL user needs sentinel_password");
    if (cfg->sentinel_nodes[0] == '\0')
        return breaker__fail(BREAKER_EINVAL, msg, msg_len, "sentinel_nodes: empty");
    return breaker__redis_each_addr(cfg->sentinel_nodes, "sentinel_nodes", MAX_SENTINELS, msg,
                                    msg_len, NULL, NULL);
}

static int add_sentinel(void *ctx, const char *host, int port) {
    struct net_sentinel *s = ctx;
    snprintf(s->at[s->count].host, sizeof s->at[0].host, "%s", host);
    s->at[s->count].port = port;
    s->count++;
    return 1;
}

struct net_sentinel *breaker__redis_sentinel_create(const breaker_redis_config *cfg, int *rc,
                                                    char *msg, size_t msg_len) {
    struct net_sentinel *s = calloc(1, sizeof *s);
    int ok = s != NULL && (s->master = strdup(cfg->sentinel_master)) != NULL;
    if (ok && cfg->sentinel_username != NULL)
        ok = (s->username = strdup(cfg->sentinel_username)) != NULL;
    if (ok && cfg->sentinel_password != NULL)
        ok = (s->password = strdup(cfg->sentinel_password)) != NULL;
    if (!ok) {
        breaker__redis_sentinel_free(s);
        *rc = breaker__fail(BREAKER_ENOMEM, msg, msg_len, "out of memory");
        return NULL;
    }
    *rc = breaker__redis_each_addr(cfg->sentinel_nodes, "sentinel_nodes", MAX_SENTINELS, msg,
                                   msg_len, add_sentinel, s);
    if (*rc != BREAKER_OK) {
        breaker__redis_sentinel_free(s);
        return NULL;
    }
    return s;
}

void breaker__redis_sentinel_free(struct net_sentinel *s) {
    if (s == NULL) return;
    if (s->sub != NULL) redisFree(s->sub);
    free(s->master);
    free(s->username);
    free(s->password);
    free(s);
}

/* ---- The master -------------------------------------------------------------------- */

/* Route every slot to the master at `host`:`port`. @return 1, or 0 (no
 * room for one more node). */
static int route_to(struct net *t, const char *host, int port) {
    uint16_t k = breaker__route_add_node(t, host, port);
    if (k == ROUTE_NO_NODE) return 0;
    uint16_t was = atomic_load_explicit(&t->route.slot[0], memory_order_relaxed);
    if (was != k && was != ROUTE_NO_NODE)
        atomic_fetch_add_explicit(&t->master_switches, 1, memory_order_relaxed);
    if (was != k) {
        for (unsigned slot = 0; slot < ROUTE_SLOTS; slot++)
            atomic_store_explicit(&t->route.slot[slot], k, memory_order_relaxed);
        /* The old master's flush connection goes; its probe connection is
         * the probe path's, unused once no slot routes to it. */
        if (was < breaker__route_nodes(t)) breaker__route_drop(t->route.node[was]);
    }
    t->route.mapped = 1;
    return 1;
}

/* A connection to Sentinel `i`, authenticated. @return it, or NULL with
 * `why`. */
static redisContext *sentinel_connect(struct net *t, uint32_t i, uint64_t timeout_ns, char *why,
                                      size_t why_len) {
    const struct net_sentinel *s = t->sentinel;
    char inner[256];
    redisContext *c = breaker__redis_connect_to(t, s->at[i].host, s->at[i].port, s->username,
                                                s->password, 0, timeout_ns, inner, sizeof inner);
    if (c == NULL)
        snprintf(why, why_len, "Sentinel %.100s:%d: %.120s", s->at[i].host, s->at[i].port, inner);
    return c;
}

/* Keep a connection to Sentinel `i` subscribed to +switch-master (none
 * yet, or one to another Sentinel that failed since). Best effort: without
 * it, a failover is still found by the master's failure or READONLY. */
static void subscribe(struct net *t, uint32_t i) {
    struct net_sentinel *s = t->sentinel;
    if (s->sub != NULL) return;
    char why[256];
    redisContext *c = sentinel_connect(t, i, t->io_timeout_ns, why, sizeof why);
    if (c == NULL) return;
    breaker_redis_reply *r = redisCommand(c, "SUBSCRIBE +switch-master");
    int ok = r != NULL && r->type == BREAKER_REDIS_REPLY_ARRAY;
    breaker_redis_reply_free(r);
    if (!ok) {
        redisFree(c);
        return;
    }
    s->sub = c;
    s->sub_at = i;
}

/* What the subscription announced since the last round, read without
 * waiting: a +switch-master of this master routes to its new address at
 * once. A subscription that failed is dropped. */
static void read_switches(struct net *t) {
    struct net_sentinel *s = t->sentinel;
    if (s->sub == NULL) return;
    for (;;) {
        void *reply = NULL;
        if (redisGetReplyFromReader(s->sub, &reply) != REDIS_OK) break;
        if (reply == NULL) {
            struct pollfd pfd = {.fd = s->sub->fd, .events = POLLIN};
            if (poll(&pfd, 1, 0) <= 0) return; /* nothing more now */
            if (redisBufferRead(s->sub) != REDIS_OK) break;
            continue;
        }
        breaker_redis_reply *m = reply;
        /* ["message", "+switch-master", "NAME OLDIP OLDPORT NEWIP NEWPORT"] */
        char name[256], old_ip[256], new_ip[256];
        int old_port, new_port;
        if (m->type == BREAKER_REDIS_REPLY_ARRAY && m->elements == 3 &&
            m->element[2]->type == BREAKER_REDIS_REPLY_STRING &&
            sscanf(m->element[2]->str, "%255s %255s %d %255s %d", name, old_ip, &old_port, new_ip,
                   &new_port) == 5 &&
            strcmp(name, s->master) == 0 && new_port >= 1 && new_port <= 65535)
            (void)route_to(t, new_ip, new_port); /* no room: asked at the master's failure */
        breaker_redis_reply_free(m);
    }
    redisFree(s->sub);
    s->sub = NULL;
}

/* Ask the Sentinels for the master, within io_timeout_ns. @return 1 with
 * the slots routed to it, or 0 with `why`. */
static int ask(struct net *t, char *why, size_t why_len) {
    struct net_sentinel *s = t->sentinel;
    uint64_t end = breaker__redis_net_now() + t->io_timeout_ns;
    int unknown = 0; /* a Sentinel answered: no such master */
    char first_why[256] = "";
    for (uint32_t k = 0; k < s->count; k++) {
        uint32_t i = (s->first + k) % s->count;
        uint64_t now = breaker__redis_net_now();
        if (k > 0 && now >= end) break;
        char one[256] = "";
        redisContext *c = sentinel_connect(t, i, end > now ? end - now : 1, one, sizeof one);
        breaker_redis_reply *r =
            c != NULL ? redisCommand(c, "SENTINEL get-master-addr-by-name %s", s->master) : NULL;
        if (c != NULL && r == NULL)
            breaker__redis_io_reason(c, "SENTINEL get-master-addr-by-name", t->io_timeout_ns, one,
                                     sizeof one);
        int found = 0;
        if (r != NULL && r->type == BREAKER_REDIS_REPLY_ARRAY && r->elements == 2 &&
            r->element[0]->type == BREAKER_REDIS_REPLY_STRING &&
            r->element[1]->type == BREAKER_REDIS_REPLY_STRING) {
            int port = atoi(r->element[1]->str);
            found = port >= 1 && port <= 65535 && route_to(t, r->element[0]->str, port);
        } else if (r != NULL && r->type == BREAKER_REDIS_REPLY_NIL) {
            unknown = 1;
        } else if (r != NULL) {
            snprintf(one, sizeof one, "Sentinel %.100s:%d: %.120s", s->at[i].host, s->at[i].port,
                     r->type == BREAKER_REDIS_REPLY_ERROR ? r->str : "unexpected reply");
        }
        breaker_redis_reply_free(r);
        if (c != NULL) redisFree(c);
        if (found) {
            s->first = i;
            if (s->sub != NULL && s->sub_at != i) { /* follow the one that answers */
                redisFree(s->sub);
                s->sub = NULL;
            }
            subscribe(t, i);
            return 1;
        }
        if (first_why[0] == '\0') snprintf(first_why, sizeof first_why, "%s", one);
    }
    if (unknown)
        snprintf(why, why_len,
                 "Sentinel: no master named '%.200s' (SENTINEL get-master-addr-by-name answered "
                 "nil)",
                 s->master);
    else
        snprintf(why, why_len, "Sentinel: no Sentinel answered (%.200s)",
                 first_why[0] != '\0' ? first_why : "none asked in time");
    return 0;
}

int breaker__redis_sentinel_master(struct net *t, char *why, size_t why_len) {
    read_switches(t);
    if (atomic_exchange_explicit(&t->route.refresh, 0, memory_order_relaxed) || !t->route.mapped) {
        if (!ask(t, why, why_len)) {
            atomic_store_explicit(&t->route.refresh, 1, memory_order_relaxed);
            /* The Sentinels' silence is no master's failure: the last
             * master known may still answer (asked again next round). */
            return t->route.mapped;
        }
    }
    return 1;
}
