/* SPDX-License-Identifier: MIT */
/*
 * conn.c - the fleet client's connections and calls on one node (client.h):
 * connect, AUTH and SELECT; SCRIPT LOAD; a call's command; the attach's
 * round trip for the stored limits; the probe path's one call, bounded by
 * poll(). Which node a call goes to, and a round's exchange over the nodes,
 * are cluster.c's. What is sent and what the answers mean are protocol.c's:
 * this file only moves them, as hiredis's net.c moves what its read.c
 * parses.
 */
#define _POSIX_C_SOURCE 200809L /* poll */

#include "store/redis/client.h"
#include "store/redis/scripts.h"

#include "common/message.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

/* EVALSHA, the SHA, numkeys, the keys, the TTL, the limits and a call's
 * own arguments (the flush's ten). */
#define MAX_ARGS 19
_Static_assert(MAX_ARGS == 3 + FLEET_KEY_COUNT + 2 + BREAKER__FLEET_CALL_ARGS,
               "MAX_ARGS fits the longest call");

struct timeval breaker__redis_tv(uint64_t ns) {
    if (ns < 1000) ns = 1000;
    struct timeval tv = {.tv_sec = (time_t)(ns / 1000000000ull),
                         .tv_usec = (suseconds_t)((ns % 1000000000ull) / 1000)};
    return tv;
}

/* ---- Reasons ---------------------------------------------------------------------- */

/* What failed on `c` during `what`, said exactly: a reply that did not come
 * within the socket's timeout is "reply timeout after N ms" (hiredis says
 * "Resource temporarily unavailable", the EAGAIN of a timed-out read), a
 * server that closed the connection "connection closed by the server". */
void breaker__redis_io_reason(const redisContext *c, const char *what, uint64_t timeout_ns,
                              char *why, size_t why_len) {
    int timed_out = c->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK ||
                                               strcmp(c->errstr, strerror(EAGAIN)) == 0);
    if (timed_out)
        snprintf(why, why_len, "%s: reply timeout after %llu ms", what,
                 (unsigned long long)((timeout_ns + MS / 2) / MS));
    else if (c->err == REDIS_ERR_EOF)
        snprintf(why, why_len, "%s: connection closed by the server", what);
    else
        snprintf(why, why_len, "%s: %s", what, c->errstr);
}

/* ---- Connecting ------------------------------------------------------------------ */

/* The reply `r` to a setup command (AUTH, SELECT) on the new connection
 * `c`, freed. @return 1 for a status reply, or 0 with `why`. */
static int setup_reply(redisContext *c, redisReply *r, const char *what, uint64_t timeout_ns,
                       char *why, size_t why_len) {
    int ok = r != NULL && r->type == REDIS_REPLY_STATUS;
    if (r == NULL)
        breaker__redis_io_reason(c, what, timeout_ns, why, why_len);
    else
        snprintf(why, why_len, "%s: %s", what, r->str ? r->str : "unexpected reply");
    if (r != NULL) freeReplyObject(r);
    return ok;
}

redisContext *breaker__redis_connect(breaker_redis *f, const struct node *n, uint64_t timeout_ns,
                                     char *why, size_t why_len) {
    struct timeval tv = breaker__redis_tv(timeout_ns);
    redisContext *c = n->unix_path != NULL ? redisConnectUnixWithTimeout(n->unix_path, tv)
                                           : redisConnectWithTimeout(n->host, n->port, tv);
    if (c == NULL) {
        snprintf(why, why_len, "connect: out of memory");
        return NULL;
    }
    int ok = 1;
    if (c->err) {
        snprintf(why, why_len, "connect: %s", c->errstr);
        ok = 0;
    } else if (redisSetTimeout(c, tv) != REDIS_OK) {
        snprintf(why, why_len, "setting the socket timeout: %s", c->errstr);
        ok = 0;
    }
    if (ok && f->password != NULL)
        ok = setup_reply(c,
                         f->username != NULL
                             ? redisCommand(c, "AUTH %s %s", f->username, f->password)
                             : redisCommand(c, "AUTH %s", f->password),
                         "AUTH", timeout_ns, why, why_len);
    /* Without AUTH, a server that wants it answers NOAUTH to a small
     * command; to SCRIPT LOAD of the flush script (over 16 KB, Redis's
     * limit for an unauthenticated bulk) it only resets the connection. */
    if (ok && f->password == NULL)
        ok = setup_reply(c, redisCommand(c, "PING"), "PING", timeout_ns, why, why_len);
    if (ok && f->cfg.db != 0)
        ok = setup_reply(c, redisCommand(c, "SELECT %d", f->cfg.db), "SELECT", timeout_ns, why,
                         why_len);
    if (!ok) {
        redisFree(c);
        return NULL;
    }
    return c;
}

static const char *script_text(int script) {
    return script == FLEET_SCRIPT_FLUSH     ? breaker__redis_lua_flush
           : script == FLEET_SCRIPT_ACQUIRE ? breaker__redis_lua_acquire
                                            : breaker__redis_lua_release;
}

int breaker__redis_load_scripts(breaker_redis *f, struct node *n, char *why, size_t why_len) {
    for (int i = 0; i < FLEET_SCRIPT_COUNT; i++)
        redisAppendCommand(n->ctx, "SCRIPT LOAD %s", script_text(i));
    int ok = 1;
    for (int i = 0; i < FLEET_SCRIPT_COUNT; i++) {
        redisReply *r = NULL;
        if (redisGetReply(n->ctx, (void **)&r) != REDIS_OK) {
            breaker__redis_io_reason(n->ctx, "SCRIPT LOAD", f->cfg.io_timeout_ns, why, why_len);
            return 0;
        }
        if (r->type == REDIS_REPLY_STRING && r->len == 40) {
            memcpy(n->sha[i], r->str, 40);
            n->sha[i][40] = '\0';
            if (i == FLEET_SCRIPT_ACQUIRE &&
                !atomic_load_explicit(&f->acquire_sha_ready, memory_order_relaxed)) {
                memcpy(f->acquire_sha, n->sha[i], sizeof f->acquire_sha);
                /* release: pairs with the probe path's acquire load. */
                atomic_store_explicit(&f->acquire_sha_ready, 1, memory_order_release);
            }
        } else {
            snprintf(why, why_len, "SCRIPT LOAD: %s", r->str != NULL ? r->str : "unexpected reply");
            ok = 0;
        }
        freeReplyObject(r);
    }
    return ok;
}

/* ---- Script calls ---------------------------------------------------------------- */

/* The command for `call` on `e`'s keys: EVALSHA `sha`, or EVAL of the
 * script's text when `sha` is NULL. @return argc. */
static int call_argv(const breaker_redis *f, const struct entry *e,
                     const struct breaker__fleet_call *call, const char *sha,
                     const char *argv[MAX_ARGS], size_t len[MAX_ARGS]) {
    int n = 0;
    argv[n++] = sha != NULL ? "EVALSHA" : "EVAL";
    argv[n++] = sha != NULL ? sha : script_text(call->script);
    argv[n++] = BREAKER__FLEET_KEY_COUNT_TEXT;
    for (int i = 0; i < FLEET_KEY_COUNT; i++)
        argv[n++] = e->key[i];
    argv[n++] = f->ttl;
    argv[n++] = e->limits;
    for (int i = 0; i < call->argc; i++)
        argv[n++] = call->argv[i];
    for (int i = 0; i < n; i++)
        len[i] = strlen(argv[i]);
    return n;
}

void breaker__redis_append_call(breaker_redis *f, redisContext *c, const struct node *n,
                                const struct entry *e, const struct breaker__fleet_call *call,
                                int eval) {
    const char *argv[MAX_ARGS];
    size_t len[MAX_ARGS];
    const char *sha = n->sha[call->script];
    int argc = call_argv(f, e, call, eval || sha[0] == '\0' ? NULL : sha, argv, len);
    redisAppendCommandArgv(c, argc, argv, len);
}

/* Append the round's call `p` on node `n` to `c`: a script call (EVALSHA,
 * or EVAL when `eval`), the read of a healthy name's state (HMGET of
 * breaker__fleet_read_fields), or TIME. */
void breaker__redis_append_pending(breaker_redis *f, redisContext *c, const struct node *n,
                                   const struct pending *p, int eval) {
    if (p->kind == PENDING_SCRIPT) {
        breaker__redis_append_call(f, c, n, p->e, &p->call, eval);
        return;
    }
    if (p->kind == PENDING_TIME) {
        redisAppendCommand(c, "TIME");
        return;
    }
    const char *argv[2 + BREAKER__FLEET_READ_FIELDS];
    size_t len[2 + BREAKER__FLEET_READ_FIELDS];
    argv[0] = "HMGET";
    argv[1] = p->e->key[FLEET_KEY_STATE];
    for (int i = 0; i < BREAKER__FLEET_READ_FIELDS; i++)
        argv[2 + i] = breaker__fleet_read_fields[i];
    for (int i = 0; i < 2 + BREAKER__FLEET_READ_FIELDS; i++)
        len[i] = strlen(argv[i]);
    redisAppendCommandArgv(c, 2 + BREAKER__FLEET_READ_FIELDS, argv, len);
}

int breaker__redis_is_noscript(const redisReply *r) {
    return r != NULL && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0;
}

int breaker__redis_read_answer(const redisReply *r, struct breaker__fleet_answer *out) {
    if (r == NULL || r->type != REDIS_REPLY_ARRAY ||
        (r->elements != ANS_COUNT && r->elements != ANS_WITH_ORDER &&
         r->elements != ANS_WITH_CONTROLS))
        return 0;
    int64_t v[ANS_COUNT];
    for (size_t i = 0; i < ANS_COUNT; i++) {
        if (r->element[i]->type != REDIS_REPLY_INTEGER) return 0;
        v[i] = r->element[i]->integer;
    }
    if (!breaker__fleet_answer_read(v, out)) return 0;
    if (r->elements == ANS_COUNT) return 1; /* no order was ever given */
    /* The order: three numbers, then who and why. */
    redisReply *const *o = r->element + ANS_ORDER;
    for (int i = 0; i < 3; i++)
        if (o[i]->type != REDIS_REPLY_INTEGER) return 0;
    if (o[3]->type != REDIS_REPLY_STRING || o[4]->type != REDIS_REPLY_STRING) return 0;
    if (!breaker__fleet_answer_order(out, o[0]->integer, o[1]->integer, o[2]->integer, o[3]->str,
                                     o[3]->len, o[4]->str, o[4]->len))
        return 0;
    if (r->elements == ANS_WITH_ORDER) return 1; /* no shadow or limits change was made */
    /* The controls: three numbers, then the limits text. */
    redisReply *const *c = r->element + ANS_SHADOW;
    for (int i = 0; i < 3; i++)
        if (c[i]->type != REDIS_REPLY_INTEGER) return 0;
    if (c[3]->type != REDIS_REPLY_STRING) return 0;
    return breaker__fleet_answer_controls(out, c[0]->integer, c[1]->integer, c[2]->integer,
                                          c[3]->str, c[3]->len);
}

void breaker__redis_note_round_trip(breaker_redis *f, uint64_t rtt) {
    uint64_t srtt = atomic_load_explicit(&f->srtt_ns, memory_order_relaxed);
    srtt = breaker__redis_srtt_next(srtt, rtt);
    atomic_store_explicit(&f->srtt_ns, srtt, memory_order_relaxed);
    atomic_store_explicit(
        &f->lease_budget_ns,
        breaker__redis_budget(srtt, f->cfg.probe_budget_ns, f->cfg.probe_budget_max_ns),
        memory_order_relaxed);
}

/* The flush script with no deltas stores `e->limits` when the name has none
 * yet (so the first to attach wins, not the first to flush), then HGET reads
 * what is stored. Skipped when Redis is known to be down (the last round
 * failed); bounded by io_timeout_ns (the flush connection's timeout). */
int breaker__redis_read_limits(breaker_redis *f, const struct entry *e, char *stored,
                               size_t stored_len, struct breaker__fleet_answer *armed,
                               bool *answered) {
    char why[256];
    *answered = false;
    struct breaker__fleet_call call;
    struct breaker__fleet_deltas none = {0};
    breaker__fleet_call_flush(&call, 0, &none);
    redisReply *r[2] = {NULL, NULL};
    pthread_mutex_lock(&f->round_mu);
    /* Skipped while the name's node is known to be down: the last round
     * failed and left it without a connection (with one Redis: the last
     * round failed to reach it). */
    struct node *n = breaker__route_node_of(f, e->key[FLEET_KEY_STATE]);
    int ok = f->announced != 1 || (n != NULL && n->ctx != NULL);
    ok = ok && breaker__redis_ensure_connected(f, why, sizeof why);
    n = ok ? breaker__route_node_of(f, e->key[FLEET_KEY_STATE]) : NULL;
    /* A Cluster's slot may have moved: one MOVED or ASK is followed. */
    for (int hop = 0, ask = 0; ok && hop < 2; hop++) {
        ok = n != NULL && breaker__route_node_ready(f, n, why, sizeof why);
        if (!ok) break;
        if (ask) redisAppendCommand(n->ctx, "ASKING");
        breaker__redis_append_call(f, n->ctx, n, e, &call, 1); /* EVAL: no NOSCRIPT to handle */
        redisAppendCommand(n->ctx, "HGET %s cfg", e->key[FLEET_KEY_STATE]);
        redisReply *asking = NULL;
        if (ask) ok = redisGetReply(n->ctx, (void **)&asking) == REDIS_OK;
        if (asking != NULL) freeReplyObject(asking);
        for (int i = 0; i < 2 && ok; i++)
            ok = redisGetReply(n->ctx, (void **)&r[i]) == REDIS_OK;
        if (!ok) {
            breaker__route_drop(n);
            break;
        }
        uint16_t to = breaker__route_redirect(f, r[0], n, &ask);
        if (to == ROUTE_NO_NODE) break;
        for (int i = 0; i < 2; i++) {
            freeReplyObject(r[i]);
            r[i] = NULL;
        }
        n = f->route.node[to];
    }
    pthread_mutex_unlock(&f->round_mu);
    /* The state the new breaker is made in (a redirection not followed to
     * its end, or an error reply, is none). */
    *answered = ok && breaker__redis_read_answer(r[0], armed);
    /* A text too long for the limits is not ours: no stored limits. */
    ok = ok && r[1] != NULL && r[1]->type == REDIS_REPLY_STRING && r[1]->len < stored_len;
    if (ok) memcpy(stored, r[1]->str, r[1]->len + 1);
    for (int i = 0; i < 2; i++)
        if (r[i] != NULL) freeReplyObject(r[i]);
    return ok;
}

redisReply *breaker__redis_command_once(breaker_redis *f, const struct entry *e, int argc,
                                        const char **argv, const char *what, char *why,
                                        size_t why_len) {
    size_t len[16];
    if (argc > 16) return NULL;
    for (int i = 0; i < argc; i++)
        len[i] = strlen(argv[i]);
    snprintf(why, why_len, "no connection");
    redisReply *r = NULL;
    pthread_mutex_lock(&f->round_mu);
    int ok = breaker__redis_ensure_connected(f, why, why_len);
    struct node *n = ok ? breaker__route_node_of(f, e->key[FLEET_KEY_STATE]) : NULL;
    /* A Cluster's slot may have moved: one MOVED or ASK is followed. */
    for (int hop = 0, ask = 0; ok && hop < 2; hop++) {
        ok = n != NULL && breaker__route_node_ready(f, n, why, why_len);
        if (!ok) break;
        if (ask) redisAppendCommand(n->ctx, "ASKING");
        redisAppendCommandArgv(n->ctx, argc, argv, len);
        redisReply *asking = NULL;
        if (ask) ok = redisGetReply(n->ctx, (void **)&asking) == REDIS_OK;
        if (asking != NULL) freeReplyObject(asking);
        ok = ok && redisGetReply(n->ctx, (void **)&r) == REDIS_OK;
        if (!ok) {
            breaker__redis_io_reason(n->ctx, what, f->cfg.io_timeout_ns, why, why_len);
            breaker__route_drop(n);
            break;
        }
        uint16_t to = breaker__route_redirect(f, r, n, &ask);
        if (to == ROUTE_NO_NODE) break;
        freeReplyObject(r);
        r = NULL;
        n = f->route.node[to];
    }
    pthread_mutex_unlock(&f->round_mu);
    if (!ok && r != NULL) {
        freeReplyObject(r);
        r = NULL;
    }
    return r;
}

redisReply *breaker__redis_control_call(breaker_redis *f, const struct entry *e, const char *script,
                                        int argc, const char *const *args, const char *what,
                                        char *msg, size_t msg_len) {
    const char *argv[16] = {"EVAL",    script,    BREAKER__FLEET_KEY_COUNT_TEXT,
                            e->key[0], e->key[1], e->key[2],
                            e->key[3], f->ttl,    e->limits};
    int n = 9;
    for (int i = 0; i < argc && n < 16; i++)
        argv[n++] = args[i];
    char why[256];
    redisReply *r = breaker__redis_command_once(f, e, n, argv, what, why, sizeof why);
    if (r == NULL)
        (void)breaker__fail(BREAKER_EIO, msg, msg_len, "%s: the %s did not reach Redis: %s",
                            e->name, what, why);
    return r;
}

int breaker__redis_order_call(breaker_redis *f, const struct entry *e, int kind, uint64_t dur_us,
                              const char *who, const char *why_text, char *msg, size_t msg_len) {
    char kind_text[4], dur_text[24];
    snprintf(kind_text, sizeof kind_text, "%d", kind);
    snprintf(dur_text, sizeof dur_text, "%llu", (unsigned long long)dur_us);
    const char *args[] = {kind_text, dur_text, who, why_text};
    redisReply *r =
        breaker__redis_control_call(f, e, breaker__redis_lua_order, 4, args, "order", msg, msg_len);
    struct breaker__fleet_answer a;
    int rc = BREAKER_OK;
    if (r == NULL)
        rc = BREAKER_EIO; /* msg says why */
    else if (r->type == REDIS_REPLY_ERROR)
        rc = breaker__fail(BREAKER_EIO, msg, msg_len, "%s: Redis refused the order: %s", e->name,
                           r->str);
    else if (!breaker__redis_read_answer(r, &a) || a.verdict != VERDICT_APPLIED)
        rc =
            breaker__fail(BREAKER_EIO, msg, msg_len, "%s: unexpected answer to the order", e->name);
    if (r != NULL) freeReplyObject(r);
    return rc;
}

/* ---- The probe path's call --------------------------------------------------------- */

/* One command on `c`, waiting for its answer no later than `deadline`
 * (monotonic ns) by poll(), which is precise where a socket timeout is
 * rounded up to the kernel's tick. @return the reply, or NULL (error or
 * deadline). */
static redisReply *command_by(redisContext *c, int argc, const char **argv, const size_t *len,
                              uint64_t deadline) {
    if (redisAppendCommandArgv(c, argc, argv, len) != REDIS_OK) return NULL;
    int done = 0;
    while (!done)
        if (redisBufferWrite(c, &done) != REDIS_OK) return NULL;
    for (;;) {
        void *reply = NULL;
        if (redisGetReplyFromReader(c, &reply) != REDIS_OK) return NULL;
        if (reply != NULL) return reply;
        uint64_t now = breaker__redis_mono_ns();
        if (now >= deadline) return NULL;
        struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
        int ms = (int)((deadline - now) / MS); /* rounded down; 0 polls once */
        int ready = poll(&pfd, 1, ms);
        if (ready < 0 && errno != EINTR) return NULL;
        if (ready > 0 && redisBufferRead(c) != REDIS_OK) return NULL;
    }
}

/* The node of `e` for the probe path: the slot map read lock-free. */
static struct node *probe_node(breaker_redis *f, const struct entry *e) {
    return breaker__route_node_of(f, e->key[FLEET_KEY_STATE]);
}

int breaker__redis_probe_ready(breaker_redis *f, const struct entry *e) {
    struct node *n = probe_node(f, e);
    return n != NULL && n->probe_ctx != NULL;
}

/* The probe path's call for `e` on `n`'s probe connection, ASKING first when
 * `ask`, answered before `deadline`; NOSCRIPT answered by EVAL. @return the
 * reply, or NULL (the connection is then dropped). */
static redisReply *acquire_on(breaker_redis *f, struct node *n, const struct entry *e,
                              const struct breaker__fleet_call *call, int ask, uint64_t deadline) {
    /* EVALSHA once the flusher has loaded the script (acquire: pairs with
     * its release store), EVAL before that or after a NOSCRIPT. */
    int eval = !atomic_load_explicit(&f->acquire_sha_ready, memory_order_acquire);
    redisReply *r = NULL;
    for (int attempt = 0; attempt < 2; attempt++) {
        const char *argv[MAX_ARGS];
        size_t len[MAX_ARGS];
        if (ask) {
            const char *asking = "ASKING";
            size_t asking_len = 6;
            r = command_by(n->probe_ctx, 1, &asking, &asking_len, deadline);
            if (r == NULL) break;
            freeReplyObject(r);
            r = NULL;
        }
        int argc = call_argv(f, e, call, eval ? NULL : f->acquire_sha, argv, len);
        r = command_by(n->probe_ctx, argc, argv, len, deadline);
        if (r == NULL || !breaker__redis_is_noscript(r)) break;
        freeReplyObject(r);
        r = NULL;
        eval = 1;
    }
    if (r == NULL) {
        redisFree(n->probe_ctx);
        n->probe_ctx = NULL;
    }
    return r;
}

redisReply *breaker__redis_acquire_call(breaker_redis *f, const struct entry *e,
                                        const struct breaker__fleet_call *call, uint64_t deadline) {
    struct node *n = probe_node(f, e);
    if (n == NULL || n->probe_ctx == NULL) return NULL;
    redisReply *r = acquire_on(f, n, e, call, 0, deadline);
    /* The slot moved (MOVED) or is moving (ASK): followed once, within the
     * budget, to a node the handle knows and has a probe connection to;
     * the map is the flusher's to update (woken: its round reads it
     * again). Else the redirection is an error reply, by the lease rules. */
    int ask = 0;
    struct node *to = breaker__route_redirect_known(f, r, n, &ask);
    if (to == NULL) {
        if (r != NULL && r->type == REDIS_REPLY_ERROR &&
            (strncmp(r->str, "MOVED ", 6) == 0 || strncmp(r->str, "ASK ", 4) == 0)) {
            atomic_store_explicit(&f->route.refresh, 1, memory_order_relaxed);
            breaker__redis_wake_flusher(f);
        }
        return r;
    }
    if (!ask) {
        atomic_store_explicit(&f->route.refresh, 1, memory_order_relaxed);
        breaker__redis_wake_flusher(f);
    }
    if (to->probe_ctx == NULL || to == n) return r;
    breaker__redis_count(ask ? &f->n.redirects_ask : &f->n.redirects_moved);
    freeReplyObject(r);
    return acquire_on(f, to, e, call, ask, deadline);
}
