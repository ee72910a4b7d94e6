/* SPDX-License-Identifier: MIT */
/*
 * transport.c - the hiredis transport as the fleet client holds it
 * (net.h, breaker/redis_transport.h): its table of entries, made and
 * destroyed, and breaker_redis_open(), which checks a handle's connection
 * fields, makes the transport for them and opens the client over it. Each
 * entry is a file's below: a round's exchange and the servers (cluster.c),
 * the probe path (probe.c), the nodes (route.c), TLS (tls.c), Sentinel
 * (sentinel.c), the clock (io.c).
 */
#include "store/redis/hiredis/net.h"
#include "store/redis/config.h"
#include "store/redis/scripts.h"

#include "common/message.h"

#include <stdlib.h>
#include <string.h>

/* ---- The table ---------------------------------------------------------------------- */

static uint64_t net_now(void *ctx) {
    (void)ctx;
    return breaker__redis_net_now();
}

static void net_stats(void *ctx, breaker_redis_stats *out) {
    struct net *t = ctx;
    out->redirects_moved += atomic_load_explicit(&t->redirects_moved, memory_order_relaxed);
    out->redirects_ask += atomic_load_explicit(&t->redirects_ask, memory_order_relaxed);
    out->master_switches += atomic_load_explicit(&t->master_switches, memory_order_relaxed);
}

static void net_destroy(void *ctx) {
    struct net *t = ctx;
    if (t == NULL) return;
    breaker__route_close(t);
    breaker__redis_tls_free(t->tls);
    breaker__redis_sentinel_free(t->sentinel);
    pthread_mutex_destroy(&t->probe_mu);
    free(t->hop);
    free(t->host);
    free(t->unix_path);
    free(t->password);
    free(t->username);
    free(t->cluster_nodes);
    free(t);
}

/* A single Redis (or Sentinel's master) takes several names' keys in one
 * command; a Cluster's nodes do not (CROSSSLOT). */
static int net_multi_key(void *ctx) { return !((const struct net *)ctx)->route.cluster; }

const breaker_redis_transport_ops breaker__redis_net_ops = {
    .name = "hiredis",
    .exchange = breaker__redis_net_exchange,
    .probe = breaker__redis_net_probe,
    .server_of = breaker__redis_net_server_of,
    .reachable = breaker__redis_net_reachable,
    .round_done = breaker__redis_net_round_done,
    .now_ns = net_now,
    .stats = net_stats,
    .destroy = net_destroy,
    .server_keys = breaker__redis_net_server_keys,
    .multi_key = net_multi_key,
};

static char *dup_or_null(const char *s, int *ok) {
    if (s == NULL) return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d == NULL)
        *ok = 0;
    else
        memcpy(d, s, n);
    return d;
}

struct net *breaker__redis_net_create(const struct net_config *cfg, int *rc, char *msg,
                                      size_t msg_len) {
    struct net *t = calloc(1, sizeof *t);
    int ok = t != NULL;
    if (!ok) { /* ours from here on */
        breaker__redis_tls_free(cfg->tls);
        breaker__redis_sentinel_free(cfg->sentinel);
    }
    if (ok) {
        t->host = dup_or_null(cfg->host != NULL ? cfg->host : "127.0.0.1", &ok);
        t->unix_path = dup_or_null(cfg->unix_path, &ok);
        t->password = dup_or_null(cfg->password, &ok);
        t->username = dup_or_null(cfg->username, &ok);
        t->cluster_nodes = dup_or_null(cfg->cluster_nodes, &ok);
        t->port = cfg->port;
        t->db = cfg->db;
        t->tls = cfg->tls;
        t->sentinel = cfg->sentinel;
        t->io_timeout_ns = cfg->io_timeout_ns;
        t->probe_wait_ns = cfg->probe_wait_ns;
        for (t->nscripts = 0; t->nscripts < NET_SCRIPTS && cfg->scripts[t->nscripts] != NULL;
             t->nscripts++)
            t->scripts[t->nscripts] = cfg->scripts[t->nscripts];
        pthread_mutex_init(&t->probe_mu, NULL);
    }
    if (!ok || breaker__route_open(t) != BREAKER_OK) {
        net_destroy(t);
        *rc = breaker__fail(BREAKER_ENOMEM, msg, msg_len, "out of memory");
        return NULL;
    }
    *rc = BREAKER_OK;
    return t;
}

/* ---- The default transport: breaker_redis_open() --------------------------------- */

/* The hiredis transport for `f`'s configuration (its defaults applied):
 * the scripts every round and probe run, loaded on each node. */
static struct net *hiredis_transport(const breaker_redis_config *c, int *rc, char *msg,
                                     size_t msg_len) {
    struct net_tls *tls = NULL;
    struct net_sentinel *sentinel = NULL;
    if (c->tls && (tls = breaker__redis_tls_create(c, rc, msg, msg_len)) == NULL) return NULL;
    if (c->sentinel_nodes != NULL &&
        (sentinel = breaker__redis_sentinel_create(c, rc, msg, msg_len)) == NULL) {
        breaker__redis_tls_free(tls);
        return NULL;
    }
    struct net_config nc = {
        .tls = tls,
        .sentinel = sentinel,
        .host = c->host,
        .unix_path = c->unix_path,
        .password = c->password,
        .username = c->username,
        .cluster_nodes = c->cluster_nodes,
        .port = c->port,
        .db = c->db,
        .io_timeout_ns = c->io_timeout_ns,
        /* A write on the call path blocks no longer than a probe's longest
         * wait (the budget follows the round trip up to its cap; the wait
         * for Redis ends at 80% of it). */
        .probe_wait_ns = c->probe_budget_max_ns - c->probe_budget_max_ns / 5,
        .scripts = {breaker__redis_lua_flush, breaker__redis_lua_acquire,
                    breaker__redis_lua_release, breaker__redis_lua_credit, NULL},
    };
    return breaker__redis_net_create(&nc, rc, msg, msg_len);
}

int breaker_redis_open(const breaker_redis_config *cfg, breaker_redis **out, char *msg,
                       size_t msg_len) {
    *out = NULL;
    int rc = breaker__redis_check_config(cfg, msg, msg_len);
    if (rc == BREAKER_OK) rc = breaker__redis_net_check(cfg, msg, msg_len);
    if (rc == BREAKER_OK) rc = breaker__redis_tls_check(cfg, msg, msg_len);
    if (rc == BREAKER_OK) rc = breaker__redis_sentinel_check(cfg, msg, msg_len);
    if (rc != BREAKER_OK) return rc;
    breaker_redis_config c = *cfg;
    breaker__redis_apply_defaults(&c);
    struct net *t = hiredis_transport(&c, &rc, msg, msg_len);
    if (t == NULL) return rc;
    return breaker_redis_open_transport(cfg, &breaker__redis_net_ops, t, 0, out, msg, msg_len);
}
