/* SPDX-License-Identifier: MIT */
/*
 * probe.c - the hiredis transport's probe path (net.h): a probe's one
 * command, on a caller's thread, without a lock it would wait for. The
 * node is the slot map's (route.c, read lock-free), the connection the one
 * a round made for probes (cluster.c), the call net.c's; a redirection
 * is followed once, to a node already known, and a refresh of the map is
 * left to the next round.
 */
#include "store/redis/hiredis/net.h"

#include <pthread.h>

/* The probe path: the key's node's probe connection, under probe_mu
 * (try-locked: a caller never waits for another). A MOVED or ASK is
 * followed once, within the deadline, to a node the transport knows and
 * has a probe connection to; the map is a round's to update (a refresh is
 * asked for). Else the redirection is the reply. */
int breaker__redis_net_probe(void *ctx, breaker_redis_command *cmd, uint64_t deadline,
                             breaker_redis_reply **out) {
    struct net *t = ctx;
    *out = NULL;
    if (pthread_mutex_trylock(&t->probe_mu) != 0) return BREAKER_REDIS_PROBE_BUSY;
    struct node *n = breaker__route_node_of(t, cmd->key);
    if (n == NULL || n->probe_ctx == NULL) {
        pthread_mutex_unlock(&t->probe_mu);
        return BREAKER_REDIS_PROBE_UNREADY;
    }
    breaker_redis_reply *r = breaker__redis_probe_on(t, n, cmd, 0, deadline);
    int ask = 0;
    /* A demoted master (Sentinel): the next round asks where the new one is. */
    if (t->sentinel != NULL && breaker__reply_is_error(r, "READONLY"))
        atomic_store_explicit(&t->route.refresh, 1, memory_order_relaxed);
    struct node *to = breaker__route_redirect_known(t, r, n, &ask);
    if (to == NULL && (breaker__reply_is_error(r, "MOVED ") || breaker__reply_is_error(r, "ASK ")))
        atomic_store_explicit(&t->route.refresh, 1, memory_order_relaxed);
    if (to != NULL) {
        if (!ask) atomic_store_explicit(&t->route.refresh, 1, memory_order_relaxed);
        if (to->probe_ctx != NULL && to != n) {
            atomic_fetch_add_explicit(ask ? &t->redirects_ask : &t->redirects_moved, 1,
                                      memory_order_relaxed);
            breaker_redis_reply_free(r);
            r = breaker__redis_probe_on(t, to, cmd, ask, deadline);
        }
    }
    pthread_mutex_unlock(&t->probe_mu);
    *out = r;
    return r != NULL ? BREAKER_REDIS_PROBE_ANSWERED : BREAKER_REDIS_PROBE_LOST;
}
