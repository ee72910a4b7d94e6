/* SPDX-License-Identifier: MIT */
/*
 * cluster.c - where the fleet client's calls go (route.h): one Redis, or the
 * masters of a Redis Cluster. With one Redis (host/port or unix_path) there
 * is one node and it serves every slot. With breaker_redis_config
 * .cluster_nodes, the slot map comes from CLUSTER SLOTS (at the first round,
 * after a MOVED, after a node failed), each call goes to the master of its
 * name's slot (the hash tag {name}), a round pipelines its calls per node
 * and writes to every node before it reads any, a MOVED updates the map and
 * an ASK is followed once with ASKING (the map unchanged), within the same
 * round while io_timeout_ns allows. The connections and the calls on one
 * node are conn.c's.
 */
#define _POSIX_C_SOURCE 200809L /* poll */

#include "store/redis/client.h"

#include "common/message.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SEEDS  64u /* cluster_nodes entries */
#define MAX_PASSES 4   /* a round's sends: the first, then redirections and retries */

enum { HOP_TODO, HOP_SENT, HOP_DONE, HOP_FAILED };

/* ---- Configuration ------------------------------------------------------------- */

/* One "host:port" of cluster_nodes, `s` (`len` bytes; "[v6]:port" too).
 * @return 1 with `host` and `*port`, or 0 with `msg`. */
static int parse_seed(const char *s, size_t len, char *host, size_t host_cap, int *port, char *msg,
                      size_t msg_len) {
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
        breaker__fail(BREAKER_EINVAL, msg, msg_len,
                      "cluster_nodes: \"%.*s\" is not host:port (port 1..65535)", (int)len, s);
        return 0;
    }
    memcpy(host, h, hl);
    host[hl] = '\0';
    *port = (int)p;
    return 1;
}

/* Call `each` for every seed of `list`. @return BREAKER_OK or EINVAL. */
static int each_seed(const char *list, char *msg, size_t msg_len,
                     int (*each)(void *ctx, const char *host, int port), void *ctx) {
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
        if (!parse_seed(s, len, host, sizeof host, &port, msg, msg_len)) return BREAKER_EINVAL;
        if (++count > MAX_SEEDS)
            return breaker__fail(BREAKER_EINVAL, msg, msg_len,
                                 "cluster_nodes: at most %u nodes (a few seeds are enough: the "
                                 "others are learned from CLUSTER SLOTS)",
                                 MAX_SEEDS);
        if (each != NULL && !each(ctx, host, port))
            return breaker__fail(BREAKER_ENOMEM, msg, msg_len, "out of memory");
        if (end == NULL) return BREAKER_OK;
        s = end + 1;
    }
}

int breaker__route_check(const breaker_redis_config *cfg, char *msg, size_t msg_len) {
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
    return each_seed(cfg->cluster_nodes, msg, msg_len, NULL, NULL);
}

/* ---- Nodes ------------------------------------------------------------------------ */

static uint32_t node_count(const breaker_redis *f) {
    /* acquire: pairs with add_node()'s release store; the nodes below the
     * count are fully written. */
    return atomic_load_explicit(&f->route.nodes, memory_order_acquire);
}

/* The node at `host`:`port`, added when new (under round_mu, or at open).
 * @return its index, or ROUTE_NO_NODE (no room, or out of memory). */
static uint16_t add_node(breaker_redis *f, const char *host, int port) {
    uint32_t n = node_count(f);
    for (uint32_t i = 0; i < n; i++)
        if (f->route.node[i]->port == port && strcmp(f->route.node[i]->host, host) == 0)
            return (uint16_t)i;
    if (n >= ROUTE_MAX_NODES || strlen(host) >= sizeof f->route.node[0]->host) return ROUTE_NO_NODE;
    struct node *nd = calloc(1, sizeof *nd);
    if (nd == NULL) return ROUTE_NO_NODE;
    snprintf(nd->host, sizeof nd->host, "%s", host);
    nd->port = port;
    if (f->route.cluster) snprintf(nd->addr, sizeof nd->addr, "%s:%d", host, port);
    f->route.node[n] = nd;
    /* release: publishes the node to the probe path (node_count()). */
    atomic_store_explicit(&f->route.nodes, n + 1, memory_order_release);
    return (uint16_t)n;
}

static int add_seed(void *ctx, const char *host, int port) {
    return add_node(ctx, host, port) != ROUTE_NO_NODE;
}

int breaker__route_open(breaker_redis *f) {
    struct route *rt = &f->route;
    rt->cluster = f->cfg.cluster_nodes != NULL;
    for (unsigned s = 0; s < ROUTE_SLOTS; s++)
        atomic_init(&rt->slot[s], rt->cluster ? ROUTE_NO_NODE : 0);
    atomic_init(&rt->refresh, rt->cluster);
    if (!rt->cluster) {
        /* One Redis: node 0 serves every slot. */
        if (add_node(f, f->cfg.unix_path != NULL ? "" : f->cfg.host, f->cfg.port) != 0)
            return BREAKER_ENOMEM;
        rt->node[0]->unix_path = f->cfg.unix_path;
        rt->seeds = 1;
        return BREAKER_OK;
    }
    int rc = each_seed(f->cfg.cluster_nodes, NULL, 0, add_seed, f);
    rt->seeds = node_count(f);
    return rc;
}

void breaker__route_drop(struct node *n) {
    if (n->ctx != NULL) redisFree(n->ctx);
    n->ctx = NULL;
    for (int i = 0; i < FLEET_SCRIPT_COUNT; i++)
        n->sha[i][0] = '\0';
}

void breaker__route_close(breaker_redis *f) {
    uint32_t n = node_count(f);
    for (uint32_t i = 0; i < n; i++) {
        struct node *nd = f->route.node[i];
        breaker__route_drop(nd);
        if (nd->probe_ctx != NULL) redisFree(nd->probe_ctx);
        free(nd);
        f->route.node[i] = NULL;
    }
}

struct node *breaker__route_node_of(breaker_redis *f, const char *key) {
    unsigned slot = breaker__redis_key_slot(key, strlen(key));
    uint16_t i = atomic_load_explicit(&f->route.slot[slot], memory_order_relaxed);
    return i < node_count(f) ? f->route.node[i] : NULL;
}

int breaker__route_node_ready(breaker_redis *f, struct node *n, char *why, size_t why_len) {
    if (n->ctx != NULL) return 1;
    n->ctx = breaker__redis_connect(f, n, f->cfg.io_timeout_ns, why, why_len);
    if (n->ctx == NULL) return 0;
    if (!breaker__redis_load_scripts(f, n, why, why_len)) {
        breaker__route_drop(n);
        return 0;
    }
    return 1;
}

/* ---- The slot map ------------------------------------------------------------------ */

/* A MOVED or ASK error `r` from `from`, read: the slot, the node's
 * address (an empty host: the node that answered, whose own address is
 * unknown to it) and which. @return 1, or 0 when `r` is no redirection. */
static int parse_redirect(const breaker_redis *f, const redisReply *r, const struct node *from,
                          unsigned long *slot, char *host, size_t host_len, int *port, int *ask) {
    if (!f->route.cluster || r == NULL || r->type != REDIS_REPLY_ERROR) return 0;
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

uint16_t breaker__route_redirect(breaker_redis *f, const redisReply *r, const struct node *from,
                                 int *ask) {
    unsigned long slot;
    char host[300];
    int port, is_ask;
    if (!parse_redirect(f, r, from, &slot, host, sizeof host, &port, &is_ask)) return ROUTE_NO_NODE;
    uint16_t to = add_node(f, host, port);
    if (to == ROUTE_NO_NODE) return to;
    *ask = is_ask;
    if (!is_ask) {
        atomic_store_explicit(&f->route.slot[slot], to, memory_order_relaxed);
        atomic_store_explicit(&f->route.refresh, 1, memory_order_relaxed);
    }
    return to;
}

struct node *breaker__route_redirect_known(breaker_redis *f, const redisReply *r,
                                           const struct node *from, int *ask) {
    unsigned long slot;
    char host[300];
    int port;
    if (!parse_redirect(f, r, from, &slot, host, sizeof host, &port, ask)) return NULL;
    uint32_t n = node_count(f);
    for (uint32_t i = 0; i < n; i++)
        if (f->route.node[i]->port == port && strcmp(f->route.node[i]->host, host) == 0)
            return f->route.node[i];
    return NULL;
}

/* One node entry of CLUSTER SLOTS ([ip, port, id, ...]) as a node index;
 * an empty or unknown ip is the address we asked. */
static uint16_t slots_node(breaker_redis *f, const redisReply *e, const struct node *asked) {
    if (e->type != REDIS_REPLY_ARRAY || e->elements < 2 ||
        e->element[1]->type != REDIS_REPLY_INTEGER)
        return ROUTE_NO_NODE;
    const redisReply *ip = e->element[0];
    const char *host = asked->host;
    if (ip->type == REDIS_REPLY_STRING && ip->len > 0 && strcmp(ip->str, "?") != 0) host = ip->str;
    long long port = e->element[1]->integer;
    if (port < 1 || port > 65535) return ROUTE_NO_NODE;
    return add_node(f, host, (int)port);
}

/* Apply a CLUSTER SLOTS answer `r` from `asked`. @return 1 if it was one. */
static int apply_slots(breaker_redis *f, const redisReply *r, const struct node *asked) {
    struct route *rt = &f->route;
    if (r->type != REDIS_REPLY_ARRAY || r->elements == 0) return 0;
    for (unsigned s = 0; s < ROUTE_SLOTS; s++)
        rt->next[s] = ROUTE_NO_NODE;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *range = r->element[i];
        if (range->type != REDIS_REPLY_ARRAY || range->elements < 3 ||
            range->element[0]->type != REDIS_REPLY_INTEGER ||
            range->element[1]->type != REDIS_REPLY_INTEGER)
            return 0;
        long long from = range->element[0]->integer, to = range->element[1]->integer;
        if (from < 0 || to >= ROUTE_SLOTS || from > to) return 0;
        uint16_t master = slots_node(f, range->element[2], asked);
        /* Replicas are learned too: they answer CLUSTER SLOTS when the
         * seeds are gone. */
        for (size_t j = 3; j < range->elements; j++)
            (void)slots_node(f, range->element[j], asked);
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
static int refresh_slots(breaker_redis *f, char *why, size_t why_len) {
    uint64_t end = breaker__redis_mono_ns() + f->cfg.io_timeout_ns;
    snprintf(why, why_len, "CLUSTER SLOTS: no node answered");
    for (int connected = 1; connected >= 0; connected--) {
        uint32_t n = node_count(f);
        for (uint32_t i = 0; i < n; i++) {
            struct node *nd = f->route.node[i];
            if ((nd->ctx != NULL) != connected) continue;
            if (!connected && i > 0 && breaker__redis_mono_ns() >= end) return 0;
            redisContext *c =
                connected ? nd->ctx
                          : breaker__redis_connect(f, nd, f->cfg.io_timeout_ns, why, why_len);
            if (c == NULL) continue;
            redisReply *r = redisCommand(c, "CLUSTER SLOTS");
            int ok = r != NULL && apply_slots(f, r, nd);
            if (r == NULL)
                breaker__redis_io_reason(c, "CLUSTER SLOTS", f->cfg.io_timeout_ns, why, why_len);
            else if (!ok)
                snprintf(why, why_len, "CLUSTER SLOTS from %s: %s", nd->addr,
                         r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
            if (r != NULL) freeReplyObject(r);
            if (connected && r == NULL) breaker__route_drop(nd);
            if (!connected) redisFree(c);
            if (ok) return 1;
        }
    }
    return 0;
}

int breaker__redis_ensure_connected(breaker_redis *f, char *why, size_t why_len) {
    if (!f->route.cluster) return breaker__route_node_ready(f, f->route.node[0], why, why_len);
    if (atomic_exchange_explicit(&f->route.refresh, 0, memory_order_relaxed) || !f->route.mapped) {
        if (!refresh_slots(f, why, why_len)) {
            atomic_store_explicit(&f->route.refresh, 1, memory_order_relaxed);
            /* The last map still routes: the nodes may answer. */
            return f->route.mapped;
        }
    }
    return 1;
}

/* The connect runs without probe_mu, so that probes meanwhile are refused at
 * once rather than waiting; the flusher only ever installs a context,
 * callers only drop one. */
static void ensure_probe_ctx(breaker_redis *f, struct node *n) {
    pthread_mutex_lock(&f->probe_mu);
    int need = n->probe_ctx == NULL;
    pthread_mutex_unlock(&f->probe_mu);
    if (!need) return;
    char why[256];
    redisContext *c = breaker__redis_connect(f, n, f->cfg.io_timeout_ns, why, sizeof why);
    if (c == NULL) return; /* the next good round tries again */
    /* A write on the call path blocks no longer than a probe's longest
     * wait (the budget follows the round trip up to its cap). */
    uint64_t budget = f->cfg.probe_budget_max_ns;
    if (redisSetTimeout(c, breaker__redis_tv(budget - budget / 5)) != REDIS_OK) {
        redisFree(c);
        return;
    }
    pthread_mutex_lock(&f->probe_mu);
    if (n->probe_ctx == NULL) {
        n->probe_ctx = c;
        c = NULL;
    }
    pthread_mutex_unlock(&f->probe_mu);
    if (c != NULL) redisFree(c);
}

void breaker__redis_ensure_probe_ctx(breaker_redis *f) {
    uint32_t n = node_count(f);
    for (uint32_t i = 0; i < n; i++)
        if (f->route.node[i]->ctx != NULL && !f->route.node[i]->broken)
            ensure_probe_ctx(f, f->route.node[i]);
}

/* ---- A round's exchange --------------------------------------------------------------- */

/* What a node's failure is called: "flush", or "flush <addr>" in a Cluster. */
static void node_what(const struct node *n, char *what, size_t len) {
    snprintf(what, len, n->addr[0] != '\0' ? "flush %s" : "flush", n->addr);
}

/* `n`'s connection failed (its errno and context say how), or its replies
 * did not come before the round's deadline (`timed_out`): the reason kept,
 * the connection dropped; one cut by the server is worth one new try. */
static void node_broken(breaker_redis *f, struct node *n, int timed_out) {
    int err = errno; /* first: the reason's own calls may change it */
    char what[300];
    node_what(n, what, sizeof what);
    if (timed_out) {
        n->retryable = 0;
        snprintf(n->why, sizeof n->why, "%.200s: reply timeout after %llu ms", what,
                 (unsigned long long)((f->cfg.io_timeout_ns + MS / 2) / MS));
    } else {
        n->retryable = n->ctx->err == REDIS_ERR_EOF ||
                       (n->ctx->err == REDIS_ERR_IO && (err == ECONNRESET || err == EPIPE));
        breaker__redis_io_reason(n->ctx, what, f->cfg.io_timeout_ns, n->why, sizeof n->why);
    }
    n->broken = 1;
    breaker__route_drop(n);
    if (f->route.cluster) atomic_store_explicit(&f->route.refresh, 1, memory_order_relaxed);
}

/* The next call at or after `from` sent to node `k` this pass, or np. */
static size_t next_sent(const struct pending *p, size_t np, size_t from, uint16_t k) {
    while (from < np && !(p[from].hop.state == HOP_SENT && p[from].hop.node == k))
        from++;
    return from;
}

/* Write every used node's pipeline. */
static void write_nodes(breaker_redis *f) {
    uint32_t nn = node_count(f);
    for (uint32_t k = 0; k < nn; k++) {
        struct node *n = f->route.node[k];
        if (!n->used || n->broken) continue;
        int done = 0;
        while (!done)
            if (redisBufferWrite(n->ctx, &done) != REDIS_OK) {
                node_broken(f, n, 0);
                break;
            }
    }
}

/* Read every used node's replies as they come (poll() over all of them)
 * until each has answered or `deadline`. */
static void read_replies(breaker_redis *f, struct pending *p, size_t np, redisReply **r,
                         uint64_t deadline) {
    uint32_t nn = node_count(f);
    for (uint32_t k = 0; k < nn; k++) {
        struct node *n = f->route.node[k];
        n->cursor = next_sent(p, np, 0, (uint16_t)k);
        n->ask_read = 0;
    }
    struct pollfd pfd[ROUTE_MAX_NODES];
    struct node *who[ROUTE_MAX_NODES];
    for (;;) {
        nfds_t waiting = 0;
        for (uint32_t k = 0; k < nn; k++) {
            struct node *n = f->route.node[k];
            if (!n->used || n->broken) continue;
            while (n->cursor < np) {
                void *reply = NULL;
                if (redisGetReplyFromReader(n->ctx, &reply) != REDIS_OK) {
                    node_broken(f, n, 0);
                    break;
                }
                if (reply == NULL) {
                    pfd[waiting].fd = n->ctx->fd;
                    pfd[waiting].events = POLLIN;
                    pfd[waiting].revents = 0;
                    who[waiting++] = n;
                    break;
                }
                if (p[n->cursor].hop.ask && !n->ask_read) { /* ASKING's +OK */
                    freeReplyObject(reply);
                    n->ask_read = 1;
                    continue;
                }
                r[n->cursor] = reply;
                n->ask_read = 0;
                n->cursor = next_sent(p, np, n->cursor + 1, (uint16_t)k);
            }
        }
        if (waiting == 0) return;
        uint64_t now = breaker__redis_mono_ns();
        if (now >= deadline) {
            for (nfds_t w = 0; w < waiting; w++)
                node_broken(f, who[w], 1);
            return;
        }
        int ms = (int)((deadline - now + MS - 1) / MS);
        int ready = poll(pfd, waiting, ms);
        if (ready < 0 && errno != EINTR) {
            for (nfds_t w = 0; w < waiting; w++)
                node_broken(f, who[w], 0);
            return;
        }
        for (nfds_t w = 0; ready > 0 && w < waiting; w++)
            if (pfd[w].revents != 0 && redisBufferRead(who[w]->ctx) != REDIS_OK)
                node_broken(f, who[w], 0);
    }
}

/* Append every call still to send to its node: with `connected`, those
 * whose node has a connection; then the others, connecting their nodes on
 * the way (a node that accepts and never answers costs its connect's
 * timeout, after the connected nodes' pipelines went out). A call whose
 * node is unknown or cannot be reached fails. @return how many were
 * appended. */
static size_t append_pass(breaker_redis *f, struct pending *p, size_t np, int connected, char *why,
                          size_t why_len) {
    uint32_t nn = node_count(f);
    size_t sent = 0;
    for (size_t i = 0; i < np; i++) {
        struct route_hop *h = &p[i].hop;
        if (h->state != HOP_TODO) continue;
        struct node *n = h->node < nn ? f->route.node[h->node] : NULL;
        if (connected && n != NULL && !n->broken && n->ctx == NULL) continue;
        if (n == NULL) {
            h->state = HOP_FAILED;
            if (why[0] == '\0')
                snprintf(why, why_len, "flush: slot %u: no node serves it (CLUSTER SLOTS)",
                         breaker__redis_key_slot(p[i].e->key[FLEET_KEY_STATE],
                                                 strlen(p[i].e->key[FLEET_KEY_STATE])));
            continue;
        }
        if (n->broken || !breaker__route_node_ready(f, n, n->why, sizeof n->why)) {
            if (!n->broken && f->route.cluster) {
                /* The reason names the node, as a broken one's does. */
                char inner[sizeof n->why];
                memcpy(inner, n->why, sizeof inner);
                snprintf(n->why, sizeof n->why, "%.60s: %.180s", n->addr, inner);
                atomic_store_explicit(&f->route.refresh, 1, memory_order_relaxed);
            }
            n->broken = 1;
            n->retryable = 0;
            h->state = HOP_FAILED;
            continue;
        }
        if (h->ask) redisAppendCommand(n->ctx, "ASKING");
        breaker__redis_append_pending(f, n->ctx, n, &p[i], h->eval);
        h->state = HOP_SENT;
        n->used = 1;
        sent++;
    }
    return sent;
}

/* After a pass: a redirection or NOSCRIPT is sent again, a call whose node
 * the server cut goes again on a new connection (once per round; the same
 * call: its sequence makes the deltas count once), the rest is done. */
static void classify_pass(breaker_redis *f, struct pending *p, size_t np, redisReply **r) {
    for (size_t i = 0; i < np; i++) {
        struct route_hop *h = &p[i].hop;
        if (h->state != HOP_SENT) continue;
        struct node *n = f->route.node[h->node];
        if (r[i] == NULL) {
            h->state =
                n->broken && n->retryable && n->had_ctx && !n->retried ? HOP_TODO : HOP_FAILED;
            continue;
        }
        int ask = 0;
        uint16_t to = breaker__route_redirect(f, r[i], n, &ask);
        int noscript = to == ROUTE_NO_NODE && !h->eval && breaker__redis_is_noscript(r[i]);
        if (to == ROUTE_NO_NODE && !noscript) {
            h->state = HOP_DONE;
            continue;
        }
        freeReplyObject(r[i]);
        r[i] = NULL;
        h->state = HOP_TODO;
        if (noscript) {
            h->eval = 1;
            n->noscript = 1;
        } else {
            h->node = to;
            h->ask = (uint8_t)ask;
            breaker__redis_count(ask ? &f->n.redirects_ask : &f->n.redirects_moved);
        }
    }
    uint32_t nn = node_count(f);
    for (uint32_t k = 0; k < nn; k++) {
        struct node *n = f->route.node[k];
        if (n->broken && n->retryable && n->had_ctx && !n->retried) {
            n->retried = 1; /* one new connection, in the next pass */
            n->broken = 0;
        }
    }
}

int breaker__redis_exchange(breaker_redis *f, struct pending *p, size_t np, redisReply **r,
                            char *why, size_t why_len) {
    uint64_t start = breaker__redis_mono_ns();
    uint32_t nn = node_count(f);
    for (uint32_t k = 0; k < nn; k++) {
        struct node *n = f->route.node[k];
        n->had_ctx = n->ctx != NULL;
        n->broken = n->retryable = n->retried = n->noscript = 0;
        n->why[0] = '\0';
    }
    /* The node index of each call, from the slot map. */
    for (size_t i = 0; i < np; i++) {
        r[i] = NULL;
        const char *key = p[i].e->key[FLEET_KEY_STATE];
        p[i].hop.node = atomic_load_explicit(
            &f->route.slot[breaker__redis_key_slot(key, strlen(key))], memory_order_relaxed);
        p[i].hop.ask = p[i].hop.eval = 0;
        p[i].hop.state = HOP_TODO;
    }
    why[0] = '\0';
    for (int pass = 0; pass < MAX_PASSES; pass++) {
        uint64_t now = breaker__redis_mono_ns();
        if (pass > 0 && now >= start + f->cfg.io_timeout_ns) break; /* no time to follow */
        for (uint32_t k = 0; k < node_count(f); k++) /* a redirection may add nodes */
            f->route.node[k]->used = 0;
        size_t sent = append_pass(f, p, np, 1, why, why_len);
        write_nodes(f);
        sent += append_pass(f, p, np, 0, why, why_len);
        write_nodes(f);
        if (sent == 0) break;
        read_replies(f, p, np, r, breaker__redis_mono_ns() + f->cfg.io_timeout_ns);
        classify_pass(f, p, np, r);
    }
    nn = node_count(f);
    size_t answered = 0;
    const struct node *failed = NULL;
    for (size_t i = 0; i < np; i++) {
        if (p[i].hop.state == HOP_DONE) {
            answered++;
            continue;
        }
        if (r[i] != NULL) freeReplyObject(r[i]);
        r[i] = NULL;
        if (failed == NULL && p[i].hop.node < nn) failed = f->route.node[p[i].hop.node];
        p[i].hop.state = HOP_FAILED;
    }
    if (why[0] == '\0' && failed != NULL)
        snprintf(why, why_len, "%s",
                 failed->why[0] != '\0' ? failed->why : "flush: redirected too often");
    for (uint32_t k = 0; k < nn; k++) {
        struct node *n = f->route.node[k];
        char ignored[256];
        /* EVALSHA again from the next round. */
        if (n->noscript && n->ctx != NULL) (void)breaker__redis_load_scripts(f, n, ignored, 256);
    }
    if (answered == np) breaker__redis_note_round_trip(f, breaker__redis_mono_ns() - start);
    return answered == np ? 1 : answered == 0 ? -1 : 0;
}
