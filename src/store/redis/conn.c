/* SPDX-License-Identifier: MIT */
/*
 * conn.c - the fleet client's connections and I/O (client.h): connect,
 * AUTH and SELECT; SCRIPT LOAD; the pipelined exchange of a flush round
 * (with NOSCRIPT answered by EVAL); the attach's round trip for the stored
 * limits; the probe path's one call, bounded by poll(). What is sent and
 * what the answers mean are protocol.c's: this file only moves them, as
 * hiredis's net.c moves what its read.c parses.
 */
#define _POSIX_C_SOURCE 200809L /* poll */

#include "store/redis/client.h"
#include "store/redis/scripts.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

/* EVALSHA, the SHA, numkeys, the keys, the TTL, the limits and a call's
 * own arguments (the flush's nine). */
#define MAX_ARGS 18
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
static void io_reason(const redisContext *c, const char *what, uint64_t timeout_ns, char *why,
                      size_t why_len) {
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
        io_reason(c, what, timeout_ns, why, why_len);
    else
        snprintf(why, why_len, "%s: %s", what, r->str ? r->str : "unexpected reply");
    if (r != NULL) freeReplyObject(r);
    return ok;
}

/* Connect, AUTH and SELECT with `timeout_ns` for each step. @return the
 * context, or NULL with `why` set. */
static redisContext *connect_redis(breaker_redis *f, uint64_t timeout_ns, char *why,
                                   size_t why_len) {
    struct timeval tv = breaker__redis_tv(timeout_ns);
    redisContext *c = f->unix_path != NULL ? redisConnectUnixWithTimeout(f->unix_path, tv)
                                           : redisConnectWithTimeout(f->host, f->cfg.port, tv);
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

/* SCRIPT LOAD the scripts on the flush connection (one round trip). */
static int load_scripts(breaker_redis *f, char *why, size_t why_len) {
    for (int i = 0; i < FLEET_SCRIPT_COUNT; i++)
        redisAppendCommand(f->flush_ctx, "SCRIPT LOAD %s", script_text(i));
    int ok = 1;
    for (int i = 0; i < FLEET_SCRIPT_COUNT; i++) {
        redisReply *r = NULL;
        if (redisGetReply(f->flush_ctx, (void **)&r) != REDIS_OK) {
            io_reason(f->flush_ctx, "SCRIPT LOAD", f->cfg.io_timeout_ns, why, why_len);
            return 0;
        }
        if (r->type == REDIS_REPLY_STRING && r->len == 40) {
            memcpy(f->sha[i], r->str, 40);
            f->sha[i][40] = '\0';
            if (i == FLEET_SCRIPT_ACQUIRE &&
                !atomic_load_explicit(&f->acquire_sha_ready, memory_order_relaxed)) {
                memcpy(f->acquire_sha, f->sha[i], sizeof f->acquire_sha);
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

void breaker__redis_drop_flush_ctx(breaker_redis *f) {
    if (f->flush_ctx != NULL) redisFree(f->flush_ctx);
    f->flush_ctx = NULL;
    for (int i = 0; i < FLEET_SCRIPT_COUNT; i++)
        f->sha[i][0] = '\0';
}

int breaker__redis_ensure_connected(breaker_redis *f, char *why, size_t why_len) {
    if (f->flush_ctx != NULL) return 1;
    f->flush_ctx = connect_redis(f, f->cfg.io_timeout_ns, why, why_len);
    if (f->flush_ctx == NULL) return 0;
    if (!load_scripts(f, why, why_len)) {
        breaker__redis_drop_flush_ctx(f);
        return 0;
    }
    return 1;
}

/* The connect runs without probe_mu, so that probes meanwhile are refused at
 * once rather than waiting; the flusher only ever installs a context,
 * callers only drop one. */
void breaker__redis_ensure_probe_ctx(breaker_redis *f) {
    pthread_mutex_lock(&f->probe_mu);
    int need = f->probe_ctx == NULL;
    pthread_mutex_unlock(&f->probe_mu);
    if (!need) return;
    char why[256];
    redisContext *c = connect_redis(f, f->cfg.io_timeout_ns, why, sizeof why);
    if (c == NULL) return; /* the next good round tries again */
    /* A write on the call path blocks no longer than a probe's longest
     * wait (the budget follows the round trip up to its cap). */
    uint64_t budget = f->cfg.probe_budget_max_ns;
    if (redisSetTimeout(c, breaker__redis_tv(budget - budget / 5)) != REDIS_OK) {
        redisFree(c);
        return;
    }
    pthread_mutex_lock(&f->probe_mu);
    if (f->probe_ctx == NULL) {
        f->probe_ctx = c;
        c = NULL;
    }
    pthread_mutex_unlock(&f->probe_mu);
    if (c != NULL) redisFree(c);
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

/* Append `call` on `e` to `c`: EVALSHA once the script is loaded, EVAL
 * before that or when `eval` (after a NOSCRIPT). */
static void append_call(breaker_redis *f, redisContext *c, const struct entry *e,
                        const struct breaker__fleet_call *call, int eval) {
    const char *argv[MAX_ARGS];
    size_t len[MAX_ARGS];
    const char *sha = f->sha[call->script];
    int n = call_argv(f, e, call, eval || sha[0] == '\0' ? NULL : sha, argv, len);
    redisAppendCommandArgv(c, n, argv, len);
}

static int is_noscript(const redisReply *r) {
    return r != NULL && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0;
}

int breaker__redis_read_answer(const redisReply *r, struct breaker__fleet_answer *out) {
    if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != ANS_COUNT) return 0;
    int64_t v[ANS_COUNT];
    for (size_t i = 0; i < ANS_COUNT; i++) {
        if (r->element[i]->type != REDIS_REPLY_INTEGER) return 0;
        v[i] = r->element[i]->integer;
    }
    return breaker__fleet_answer_read(v, out);
}

/* A Redis that lost its scripts (SCRIPT FLUSH, a restart) answers NOSCRIPT:
 * those calls go again as EVAL, which caches the script again. */
/* An answered exchange took `rtt` ns: the smoothed round trip, and the
 * probe budget that follows it. */
static void note_round_trip(breaker_redis *f, uint64_t rtt) {
    uint64_t srtt = atomic_load_explicit(&f->srtt_ns, memory_order_relaxed);
    srtt = breaker__redis_srtt_next(srtt, rtt);
    atomic_store_explicit(&f->srtt_ns, srtt, memory_order_relaxed);
    atomic_store_explicit(
        &f->lease_budget_ns,
        breaker__redis_budget(srtt, f->cfg.probe_budget_ns, f->cfg.probe_budget_max_ns),
        memory_order_relaxed);
}

int breaker__redis_exchange(breaker_redis *f, struct pending *p, size_t np, redisReply **r,
                            char *why, size_t why_len) {
    redisContext *c = f->flush_ctx;
    uint64_t start = breaker__redis_mono_ns();
    for (size_t i = 0; i < np; i++)
        append_call(f, c, p[i].e, &p[i].call, 0);
    size_t noscript = 0;
    for (size_t i = 0; i < np; i++) {
        if (redisGetReply(c, (void **)&r[i]) != REDIS_OK) goto broken;
        noscript += is_noscript(r[i]);
    }
    note_round_trip(f, breaker__redis_mono_ns() - start);
    if (noscript == 0) return 1;
    for (size_t i = 0; i < np; i++)
        if (is_noscript(r[i])) append_call(f, c, p[i].e, &p[i].call, 1);
    for (size_t i = 0; i < np; i++) {
        if (!is_noscript(r[i])) continue;
        freeReplyObject(r[i]);
        r[i] = NULL;
        if (redisGetReply(c, (void **)&r[i]) != REDIS_OK) goto broken;
    }
    (void)load_scripts(f, why, why_len); /* EVALSHA again from the next round */
    return 1;
broken:;
    /* errno first: the reason's own calls may change it. */
    int retry_errno = errno == ECONNRESET || errno == EPIPE;
    io_reason(c, "flush", f->cfg.io_timeout_ns, why, why_len);
    /* A connection the server closed (a restart) is worth one new try; a
     * timeout is not (a stalled server would cost the round twice). */
    int retry = c->err == REDIS_ERR_EOF || (c->err == REDIS_ERR_IO && retry_errno);
    for (size_t i = 0; i < np; i++) {
        if (r[i] != NULL) freeReplyObject(r[i]);
        r[i] = NULL;
    }
    breaker__redis_drop_flush_ctx(f);
    return retry ? 0 : -1;
}

/* The flush script with no deltas stores `e->limits` when the name has none
 * yet (so the first to attach wins, not the first to flush), then HGET reads
 * what is stored. Skipped when Redis is known to be down (the last round
 * failed); bounded by io_timeout_ns (the flush connection's timeout). */
int breaker__redis_read_limits(breaker_redis *f, const struct entry *e, char *stored,
                               size_t stored_len) {
    char why[256];
    struct breaker__fleet_call call;
    struct breaker__fleet_deltas none = {0};
    breaker__fleet_call_flush(&call, 0, &none);
    pthread_mutex_lock(&f->round_mu);
    int ok = f->announced != 1 && breaker__redis_ensure_connected(f, why, sizeof why);
    redisReply *r[2] = {NULL, NULL};
    if (ok) {
        append_call(f, f->flush_ctx, e, &call, 1); /* EVAL: no NOSCRIPT to handle */
        redisAppendCommand(f->flush_ctx, "HGET %s cfg", e->key[FLEET_KEY_STATE]);
        for (int i = 0; i < 2 && ok; i++)
            ok = redisGetReply(f->flush_ctx, (void **)&r[i]) == REDIS_OK;
        if (!ok) breaker__redis_drop_flush_ctx(f);
    }
    pthread_mutex_unlock(&f->round_mu);
    /* A text too long for the limits is not ours: no stored limits. */
    ok = ok && r[1] != NULL && r[1]->type == REDIS_REPLY_STRING && r[1]->len < stored_len;
    if (ok) memcpy(stored, r[1]->str, r[1]->len + 1);
    for (int i = 0; i < 2; i++)
        if (r[i] != NULL) freeReplyObject(r[i]);
    return ok;
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

redisReply *breaker__redis_acquire_call(breaker_redis *f, const struct entry *e,
                                        const struct breaker__fleet_call *call, uint64_t deadline) {
    /* EVALSHA once the flusher has loaded the script (acquire: pairs with
     * its release store), EVAL before that or after a NOSCRIPT. */
    int eval = !atomic_load_explicit(&f->acquire_sha_ready, memory_order_acquire);
    redisReply *r = NULL;
    for (int attempt = 0; attempt < 2; attempt++) {
        const char *argv[MAX_ARGS];
        size_t len[MAX_ARGS];
        int n = call_argv(f, e, call, eval ? NULL : f->acquire_sha, argv, len);
        r = command_by(f->probe_ctx, n, argv, len, deadline);
        if (r == NULL || !is_noscript(r)) break;
        freeReplyObject(r);
        r = NULL;
        eval = 1;
    }
    if (r == NULL) {
        redisFree(f->probe_ctx);
        f->probe_ctx = NULL;
    }
    return r;
}
