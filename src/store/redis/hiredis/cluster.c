/* SPDX-License-Identifier: MIT */
/*
 * cluster.c - where the fleet client's commands go (net.h): one Redis, or the
 * masters of a Redis Cluster. With one Redis (host/port or unix_path) there
 * is one node and it serves every slot. With breaker_redis_config
 * .cluster_nodes, the slot map comes from CLUSTER SLOTS (at the first round,
 * after a MOVED, after a node failed), each call goes to the master of its
 * name's slot (the hash tag {name}), a round pipelines its calls per node
 * and writes to every node before it reads any, a MOVED updates the map and
 * an ASK is followed once with ASKING (the map unchanged), within the same
 * round while io_timeout_ns allows. The nodes and the slot map's entries
 * are route.c's, the master of a Sentinel's sentinel.c's, the connections
 * and the commands on one node net.c's: all below this file.
 */
#define _POSIX_C_SOURCE 200809L /* poll */

#include "store/redis/hiredis/net.h"

#include "common/message.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PASSES 4 /* a round's sends: the first, then redirections and retries */

enum { HOP_TODO, HOP_SENT, HOP_DONE, HOP_FAILED };

/* ---- A node's flush connection ----------------------------------------------------- */

/* `n`'s flush connection: made, and the scripts loaded on it, when it has
 * none. @return 1, or 0 with `why`. */
static int node_ready(struct net *t, struct node *n, char *why, size_t why_len) {
    if (n->ctx != NULL) return 1;
    n->ctx = breaker__redis_connect(t, n, t->io_timeout_ns, why, why_len);
    if (n->ctx == NULL) return 0;
    if (!breaker__redis_load_scripts(t, n, why, why_len)) {
        breaker__route_drop(n);
        return 0;
    }
    return 1;
}

/* ---- The slot map ------------------------------------------------------------------ */

/* One node entry of CLUSTER SLOTS ([ip, port, id, ...]) as a node index;
 * an empty or unknown ip is the address we asked. */
static uint16_t slots_node(struct net *t, const breaker_redis_reply *e, const struct node *asked) {
    if (e->type != BREAKER_REDIS_REPLY_ARRAY || e->elements < 2 ||
        e->element[1]->type != BREAKER_REDIS_REPLY_INTEGER)
        return ROUTE_NO_NODE;
    const breaker_redis_reply *ip = e->element[0];
    const char *host = asked->host;
    if (ip->type == BREAKER_REDIS_REPLY_STRING && ip->len > 0 && strcmp(ip->str, "?") != 0)
        host = ip->str;
    long long port = e->element[1]->integer;
    if (port < 1 || port > 65535) return ROUTE_NO_NODE;
    return breaker__route_add_node(t, host, (int)port);
}

/* Apply a CLUSTER SLOTS answer `r` from `asked`. @return 1 if it was one. */
static int apply_slots(struct net *t, const breaker_redis_reply *r, const struct node *asked) {
    struct route *rt = &t->route;
    if (r->type != BREAKER_REDIS_REPLY_ARRAY || r->elements == 0) return 0;
    for (unsigned s = 0; s < ROUTE_SLOTS; s++)
        rt->next[s] = ROUTE_NO_NODE;
    for (size_t i = 0; i < r->elements; i++) {
        const breaker_redis_reply *range = r->element[i];
        if (range->type != BREAKER_REDIS_REPLY_ARRAY || range->elements < 3 ||
            range->element[0]->type != BREAKER_REDIS_REPLY_INTEGER ||
            range->element[1]->type != BREAKER_REDIS_REPLY_INTEGER)
            return 0;
        long long from = range->element[0]->integer, to = range->element[1]->integer;
        if (from < 0 || to >= ROUTE_SLOTS || from > to) return 0;
        uint16_t master = slots_node(t, range->element[2], asked);
        /* Replicas are learned too: they answer CLUSTER SLOTS when the
         * seeds are gone. */
        for (size_t j = 3; j < range->elements; j++)
            (void)slots_node(t, range->element[j], asked);
        for (long long s = from; s <= to; s++)
            rt->next[s] = master;
    }
    for (unsigned s = 0; s < ROUTE_SLOTS; s++)
        atomic_store_explicit(&rt->slot[s], rt->next[s], memory_order_relaxed);
    rt->mapped = 1;
    return 1;
}

/* CLUSTER SLOTS from the first node that answers: connected ones first
 * (on their flush connection), then every node known (on a connection of
 * its own), until one answers or io_timeout_ns has passed. @return 1, or 0
 * with `why`. */
static int refresh_slots(struct net *t, char *why, size_t why_len) {
    uint64_t end = breaker__redis_net_now() + t->io_timeout_ns;
    snprintf(why, why_len, "CLUSTER SLOTS: no node answered");
    for (int connected = 1; connected >= 0; connected--) {
        uint32_t n = breaker__route_nodes(t);
        for (uint32_t i = 0; i < n; i++) {
            struct node *nd = t->route.node[i];
            if ((nd->ctx != NULL) != connected) continue;
            if (!connected && i > 0 && breaker__redis_net_now() >= end) return 0;
            redisContext *c =
                connected ? nd->ctx : breaker__redis_connect(t, nd, t->io_timeout_ns, why, why_len);
            if (c == NULL) continue;
            breaker_redis_reply *r = redisCommand(c, "CLUSTER SLOTS");
            int ok = r != NULL && apply_slots(t, r, nd);
            if (r == NULL)
                breaker__redis_io_reason(c, "CLUSTER SLOTS", t->io_timeout_ns, why, why_len);
            else if (!ok)
                snprintf(why, why_len, "CLUSTER SLOTS from %s: %s", nd->addr,
                         r->type == BREAKER_REDIS_REPLY_ERROR ? r->str : "unexpected reply");
            if (r != NULL) breaker_redis_reply_free(r);
            if (connected && r == NULL) breaker__route_drop(nd);
            if (!connected) redisFree(c);
            if (ok) return 1;
        }
    }
    return 0;
}

static int ensure_connected(struct net *t, char *why, size_t why_len) {
    if (t->sentinel != NULL) {
        if (!breaker__redis_sentinel_master(t, why, why_len)) return 0;
        uint16_t k = atomic_load_explicit(&t->route.slot[0], memory_order_relaxed);
        return node_ready(t, t->route.node[k], why, why_len);
    }
    if (!t->route.cluster) return node_ready(t, t->route.node[0], why, why_len);
    if (atomic_exchange_explicit(&t->route.refresh, 0, memory_order_relaxed) || !t->route.mapped) {
        if (!refresh_slots(t, why, why_len)) {
            atomic_store_explicit(&t->route.refresh, 1, memory_order_relaxed);
            /* The last map still routes: the nodes may answer. */
            return t->route.mapped;
        }
    }
    return 1;
}

/* The connect runs without probe_mu, so that probes meanwhile are refused at
 * once rather than waiting; the flusher only ever installs a context,
 * callers only drop one. */
static void ensure_probe_ctx(struct net *t, struct node *n) {
    pthread_mutex_lock(&t->probe_mu);
    int need = n->probe_ctx == NULL;
    pthread_mutex_unlock(&t->probe_mu);
    if (!need) return;
    char why[256];
    redisContext *c = breaker__redis_connect(t, n, t->io_timeout_ns, why, sizeof why);
    if (c == NULL) return; /* the next good round tries again */
    /* A write on the call path blocks no longer than a probe's longest
     * wait (the budget follows the round trip up to its cap). */
    if (redisSetTimeout(c, breaker__redis_tv(t->probe_wait_ns)) != REDIS_OK) {
        redisFree(c);
        return;
    }
    pthread_mutex_lock(&t->probe_mu);
    if (n->probe_ctx == NULL) {
        n->probe_ctx = c;
        c = NULL;
    }
    pthread_mutex_unlock(&t->probe_mu);
    if (c != NULL) redisFree(c);
}

void breaker__redis_net_round_done(void *ctx) {
    struct net *t = ctx;
    uint32_t n = breaker__route_nodes(t);
    for (uint32_t i = 0; i < n; i++)
        if (t->route.node[i]->ctx != NULL && !t->route.node[i]->broken)
            ensure_probe_ctx(t, t->route.node[i]);
}

/* ---- A round's exchange --------------------------------------------------------------- */

/* What a node's failure is called: "flush", or "flush <addr>" in a Cluster. */
static void node_what(const struct node *n, char *what, size_t len) {
    snprintf(what, len, n->addr[0] != '\0' ? "flush %s" : "flush", n->addr);
}

/* `n`'s connection failed (its errno and context say how), or its replies
 * did not come before the exchange's deadline (`timed_out`): the reason
 * kept, the connection dropped; one cut by the server is worth one new try. */
static void node_broken(struct net *t, struct node *n, int timed_out) {
    int err = errno; /* first: the reason's own calls may change it */
    char what[300];
    node_what(n, what, sizeof what);
    if (timed_out) {
        n->retryable = 0;
        snprintf(n->why, sizeof n->why, "%.200s: reply timeout after %llu ms", what,
                 (unsigned long long)((t->io_timeout_ns + NET_MS / 2) / NET_MS));
    } else {
        n->retryable = n->ctx->err == REDIS_ERR_EOF ||
                       (n->ctx->err == REDIS_ERR_IO && (err == ECONNRESET || err == EPIPE));
        breaker__redis_io_reason(n->ctx, what, t->io_timeout_ns, n->why, sizeof n->why);
    }
    n->broken = 1;
    breaker__route_drop(n);
    if (t->route.cluster || t->sentinel != NULL)
        atomic_store_explicit(&t->route.refresh, 1, memory_order_relaxed);
}

/* The next command at or after `from` sent to node `k` this pass, or np. */
static size_t next_sent(const struct route_hop *hop, size_t np, size_t from, uint16_t k) {
    while (from < np && !(hop[from].state == HOP_SENT && hop[from].node == k))
        from++;
    return from;
}

/* Write every used node's pipeline. */
static void write_nodes(struct net *t) {
    uint32_t nn = breaker__route_nodes(t);
    for (uint32_t k = 0; k < nn; k++) {
        struct node *n = t->route.node[k];
        if (!n->used || n->broken) continue;
        int done = 0;
        while (!done)
            if (redisBufferWrite(n->ctx, &done) != REDIS_OK) {
                node_broken(t, n, 0);
                break;
            }
    }
}

/* Read every used node's replies as they come (poll() over all of them)
 * until each has answered or `deadline`. */
static void read_replies(struct net *t, size_t np, breaker_redis_reply **r, uint64_t deadline) {
    const struct route_hop *hop = t->hop;
    uint32_t nn = breaker__route_nodes(t);
    for (uint32_t k = 0; k < nn; k++) {
        struct node *n = t->route.node[k];
        n->cursor = next_sent(hop, np, 0, (uint16_t)k);
        n->ask_read = 0;
    }
    struct pollfd pfd[ROUTE_MAX_NODES];
    struct node *who[ROUTE_MAX_NODES];
    for (;;) {
        nfds_t waiting = 0;
        for (uint32_t k = 0; k < nn; k++) {
            struct node *n = t->route.node[k];
            if (!n->used || n->broken) continue;
            while (n->cursor < np) {
                void *reply = NULL;
                if (redisGetReplyFromReader(n->ctx, &reply) != REDIS_OK) {
                    node_broken(t, n, 0);
                    break;
                }
                if (reply == NULL) {
                    pfd[waiting].fd = n->ctx->fd;
                    pfd[waiting].events = POLLIN;
                    pfd[waiting].revents = 0;
                    who[waiting++] = n;
                    break;
                }
                if (hop[n->cursor].ask && !n->ask_read) { /* ASKING's +OK */
                    breaker_redis_reply_free(reply);
                    n->ask_read = 1;
                    continue;
                }
                r[n->cursor] = reply;
                n->ask_read = 0;
                n->cursor = next_sent(hop, np, n->cursor + 1, (uint16_t)k);
            }
        }
        if (waiting == 0) return;
        uint64_t now = breaker__redis_net_now();
        if (now >= deadline) {
            for (nfds_t w = 0; w < waiting; w++)
                node_broken(t, who[w], 1);
            return;
        }
        int ms = (int)((deadline - now + NET_MS - 1) / NET_MS);
        int ready = poll(pfd, waiting, ms);
        if (ready < 0 && errno != EINTR) {
            for (nfds_t w = 0; w < waiting; w++)
                node_broken(t, who[w], 0);
            return;
        }
        for (nfds_t w = 0; ready > 0 && w < waiting; w++)
            if (pfd[w].revents != 0 && redisBufferRead(who[w]->ctx) != REDIS_OK)
                node_broken(t, who[w], 0);
    }
}

/* Append every command still to send to its node: with `connected`, those
 * whose node has a connection; then the others, connecting their nodes on
 * the way (a node that accepts and never answers costs its connect's
 * timeout, after the connected nodes' pipelines went out). A command whose
 * node is unknown or cannot be reached fails. @return how many were
 * appended. */
static size_t append_pass(struct net *t, const breaker_redis_command *cmds, size_t np,
                          int connected, char *why, size_t why_len) {
    uint32_t nn = breaker__route_nodes(t);
    size_t sent = 0;
    for (size_t i = 0; i < np; i++) {
        struct route_hop *h = &t->hop[i];
        if (h->state != HOP_TODO) continue;
        struct node *n = h->node < nn ? t->route.node[h->node] : NULL;
        if (connected && n != NULL && !n->broken && n->ctx == NULL) continue;
        if (n == NULL) {
            h->state = HOP_FAILED;
            if (why[0] == '\0')
                snprintf(why, why_len, "flush: slot %u: no node serves it (CLUSTER SLOTS)",
                         breaker__redis_key_slot(cmds[i].key, strlen(cmds[i].key)));
            continue;
        }
        if (n->broken || !node_ready(t, n, n->why, sizeof n->why)) {
            if (!n->broken && (t->route.cluster || t->sentinel != NULL)) {
                /* The reason names the node, as a broken one's does. */
                char inner[sizeof n->why];
                memcpy(inner, n->why, sizeof inner);
                snprintf(n->why, sizeof n->why, "%.60s: %.180s", n->addr, inner);
                atomic_store_explicit(&t->route.refresh, 1, memory_order_relaxed);
            }
            n->broken = 1;
            n->retryable = 0;
            h->state = HOP_FAILED;
            continue;
        }
        if (h->ask) redisAppendCommand(n->ctx, "ASKING");
        breaker__redis_append(t, n->ctx, n, &cmds[i], h->eval);
        h->state = HOP_SENT;
        n->used = 1;
        sent++;
    }
    return sent;
}

/* After a pass: a redirection or NOSCRIPT is sent again, a command whose
 * node the server cut goes again on a new connection when it may be sent
 * twice (once per exchange; the same command: a flush's sequence makes its
 * deltas count once), the rest is done. */
static void classify_pass(struct net *t, const breaker_redis_command *cmds, size_t np,
                          breaker_redis_reply **r) {
    for (size_t i = 0; i < np; i++) {
        struct route_hop *h = &t->hop[i];
        if (h->state != HOP_SENT) continue;
        struct node *n = t->route.node[h->node];
        if (r[i] == NULL) {
            h->state = cmds[i].idempotent && n->broken && n->retryable && n->had_ctx && !n->retried
                           ? HOP_TODO
                           : HOP_FAILED;
            continue;
        }
        int ask = 0;
        uint16_t to = breaker__route_redirect(t, r[i], n, &ask);
        int noscript = to == ROUTE_NO_NODE && !h->eval && cmds[i].script != NULL &&
                       breaker__reply_is_error(r[i], "NOSCRIPT");
        if (to == ROUTE_NO_NODE && !noscript) {
            h->state = HOP_DONE;
            continue;
        }
        breaker_redis_reply_free(r[i]);
        r[i] = NULL;
        h->state = HOP_TODO;
        if (noscript) {
            h->eval = 1;
            n->noscript = 1;
        } else {
            h->node = to;
            h->ask = (uint8_t)ask;
            atomic_fetch_add_explicit(ask ? &t->redirects_ask : &t->redirects_moved, 1,
                                      memory_order_relaxed);
        }
    }
    uint32_t nn = breaker__route_nodes(t);
    for (uint32_t k = 0; k < nn; k++) {
        struct node *n = t->route.node[k];
        if (n->broken && n->retryable && n->had_ctx && !n->retried) {
            n->retried = 1; /* one new connection, in the next pass */
            n->broken = 0;
        }
    }
}

/* Sentinel: a command that a demoted master refused with READONLY (so it
 * wrote nothing) goes to the new master within the same exchange, once the
 * Sentinels name another one; while they still name it, the refusal is
 * the command's reply (and the next round asks them again). */
static void follow_readonly(struct net *t, size_t np, breaker_redis_reply **r) {
    if (t->sentinel == NULL) return;
    int refused = 0;
    for (size_t i = 0; i < np; i++)
        refused |= t->hop[i].state == HOP_DONE && breaker__reply_is_error(r[i], "READONLY");
    if (!refused) return;
    atomic_store_explicit(&t->route.refresh, 1, memory_order_relaxed);
    uint16_t was = atomic_load_explicit(&t->route.slot[0], memory_order_relaxed);
    char why[256];
    if (!breaker__redis_sentinel_master(t, why, sizeof why)) return;
    uint16_t master = atomic_load_explicit(&t->route.slot[0], memory_order_relaxed);
    if (master == was) return;
    for (size_t i = 0; i < np; i++) {
        struct route_hop *h = &t->hop[i];
        if (h->state != HOP_DONE || h->node != was || !breaker__reply_is_error(r[i], "READONLY"))
            continue;
        breaker_redis_reply_free(r[i]);
        r[i] = NULL;
        h->state = HOP_TODO;
        h->node = master;
        h->ask = h->eval = 0;
    }
}

/* Room for `np` hops. @return 1, or 0 (out of memory). */
static int grow_hops(struct net *t, size_t np) {
    if (np <= t->hop_cap) return 1;
    struct route_hop *h = realloc(t->hop, np * sizeof *h);
    if (h == NULL) return 0;
    t->hop = h;
    t->hop_cap = np;
    return 1;
}

/* Every node's state after an exchange: which failed (reachable()). */
static void note_failures(struct net *t, size_t np) {
    uint32_t nn = breaker__route_nodes(t);
    for (uint32_t k = 0; k < nn; k++)
        if (t->route.node[k]->used || t->route.node[k]->broken)
            t->route.node[k]->failed_last = t->route.node[k]->broken;
    for (size_t i = 0; i < np; i++)
        if (t->hop[i].state == HOP_FAILED && t->hop[i].node < nn)
            t->route.node[t->hop[i].node]->failed_last = 1;
}

int breaker__redis_net_exchange(void *ctx, breaker_redis_command *cmds, size_t np,
                                breaker_redis_reply **r, char *why, size_t why_len) {
    struct net *t = ctx;
    for (size_t i = 0; i < np; i++)
        r[i] = NULL;
    why[0] = '\0';
    if (!ensure_connected(t, why, why_len)) {
        struct node *one = breaker__route_node_of(t, ""); /* one Redis, or Sentinel's master */
        if (!t->route.cluster && one != NULL) one->failed_last = 1;
        return -1;
    }
    if (!grow_hops(t, np)) {
        snprintf(why, why_len, "flush: out of memory");
        return -1;
    }
    uint64_t start = breaker__redis_net_now();
    uint32_t nn = breaker__route_nodes(t);
    for (uint32_t k = 0; k < nn; k++) {
        struct node *n = t->route.node[k];
        n->had_ctx = n->ctx != NULL;
        n->broken = n->retryable = n->retried = n->noscript = n->used = 0;
        n->why[0] = '\0';
    }
    /* The node index of each command, from the slot map. */
    for (size_t i = 0; i < np; i++) {
        t->hop[i].node = atomic_load_explicit(
            &t->route.slot[breaker__redis_key_slot(cmds[i].key, strlen(cmds[i].key))],
            memory_order_relaxed);
        t->hop[i].ask = t->hop[i].eval = 0;
        t->hop[i].state = HOP_TODO;
    }
    for (int pass = 0; pass < MAX_PASSES; pass++) {
        uint64_t now = breaker__redis_net_now();
        if (pass > 0 && now >= start + t->io_timeout_ns) break; /* no time to follow */
        for (uint32_t k = 0; k < breaker__route_nodes(t); k++)  /* a redirection may add nodes */
            t->route.node[k]->used = 0;
        size_t sent = append_pass(t, cmds, np, 1, why, why_len);
        write_nodes(t);
        sent += append_pass(t, cmds, np, 0, why, why_len);
        write_nodes(t);
        if (sent == 0) break;
        read_replies(t, np, r, breaker__redis_net_now() + t->io_timeout_ns);
        classify_pass(t, cmds, np, r);
        follow_readonly(t, np, r);
    }
    note_failures(t, np);
    nn = breaker__route_nodes(t);
    size_t answered = 0;
    const struct node *failed = NULL;
    for (size_t i = 0; i < np; i++) {
        cmds[i].server = t->hop[i].node;
        if (t->hop[i].state == HOP_DONE) {
            answered++;
            continue;
        }
        breaker_redis_reply_free(r[i]);
        r[i] = NULL;
        if (failed == NULL && t->hop[i].node < nn) failed = t->route.node[t->hop[i].node];
        t->hop[i].state = HOP_FAILED;
    }
    if (why[0] == '\0' && failed != NULL)
        snprintf(why, why_len, "%s",
                 failed->why[0] != '\0' ? failed->why : "flush: redirected too often");
    for (uint32_t k = 0; k < nn; k++) {
        struct node *n = t->route.node[k];
        char ignored[256];
        /* EVALSHA again from the next exchange. */
        if (n->noscript && n->ctx != NULL) (void)breaker__redis_load_scripts(t, n, ignored, 256);
    }
    return answered == np ? 1 : answered == 0 ? -1 : 0;
}

uint32_t breaker__redis_net_server_of(void *ctx, const char *key) {
    struct net *t = ctx;
    return atomic_load_explicit(&t->route.slot[breaker__redis_key_slot(key, strlen(key))],
                                memory_order_relaxed);
}

int breaker__redis_net_reachable(void *ctx, const char *key) {
    struct net *t = ctx;
    struct node *n = breaker__route_node_of(t, key);
    return n == NULL || n->ctx != NULL || !n->failed_last;
}

size_t breaker__redis_net_server_keys(void *ctx, char (*keys)[32], size_t max) {
    struct net *t = ctx;
    if (max == 0) return 0;
    if (!t->route.cluster) { /* one Redis, or Sentinel's master: every slot */
        snprintf(keys[0], sizeof keys[0], "{0}");
        return 1;
    }
    /* A Cluster: the masters are the nodes the slot map names; for each, the
     * first tag {n} whose slot it serves. A few tries each, since every
     * master serves a share of the 16384 slots; bounded for a map with a
     * master of only a few slots. */
    uint32_t nn = breaker__route_nodes(t);
    uint8_t master[ROUTE_MAX_NODES] = {0}, found[ROUTE_MAX_NODES] = {0};
    size_t masters = 0, count = 0;
    for (unsigned s = 0; s < ROUTE_SLOTS; s++) {
        uint16_t k = atomic_load_explicit(&t->route.slot[s], memory_order_relaxed);
        if (k < nn && !master[k]) {
            master[k] = 1;
            masters++;
        }
    }
    for (unsigned n = 0; n < 16u * ROUTE_SLOTS && count < masters && count < max; n++) {
        char key[32];
        int len = snprintf(key, sizeof key, "{%u}", n);
        uint16_t k = atomic_load_explicit(&t->route.slot[breaker__redis_key_slot(key, (size_t)len)],
                                          memory_order_relaxed);
        if (k >= nn || found[k]) continue;
        found[k] = 1;
        memcpy(keys[count++], key, (size_t)len + 1);
    }
    return count;
}
