/* SPDX-License-Identifier: MIT */
/*
 * net.c - the hiredis transport's connections and calls on one node
 * (net.h): connect (TLS through tls.c), AUTH and SELECT, SCRIPT LOAD, a
 * command's arguments on a round's pipeline, and the probe path's call,
 * bounded by poll(). Which node a command goes to, and a round's exchange
 * over the nodes, are the files above (cluster.c, probe.c). What is sent
 * and what the replies mean are the client's: this file only moves them,
 * as hiredis's net.c moves what its read.c parses.
 */
#define _POSIX_C_SOURCE 200809L /* poll */

#include "store/redis/hiredis/net.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

/* EVALSHA, the SHA, then the command's own arguments (a script's numkeys,
 * keys and ARGV: at most the client's BREAKER_REDIS_COMMAND_ARGS_MAX). */
#define MAX_ARGS (BREAKER_REDIS_COMMAND_ARGS_MAX + 2)

/* ---- Replies ---------------------------------------------------------------------- */

/* hiredis's reader builds breaker_redis_reply trees directly (its
 * redisReplyObjectFunctions): each object is put in its parent array, as
 * hiredis's own constructors do. */
static void *in_parent(const redisReadTask *task, breaker_redis_reply *r) {
    if (r != NULL && task->parent != NULL) {
        breaker_redis_reply *parent = task->parent->obj;
        parent->element[task->idx] = r;
    }
    return r;
}

static void *make_string(const redisReadTask *task, char *str, size_t len) {
    return in_parent(task, breaker_redis_reply_string(task->type, str, len));
}

/* An array's length: an int before hiredis 1.0, a size_t since. */
#if HIREDIS_MAJOR >= 1
typedef size_t array_len;
#else
typedef int array_len;
#endif

static void *make_array(const redisReadTask *task, array_len elements) {
    return in_parent(task, breaker_redis_reply_array(elements > 0 ? (size_t)elements : 0));
}

static void *make_integer(const redisReadTask *task, long long value) {
    return in_parent(task, breaker_redis_reply_integer(value));
}

static void *make_nil(const redisReadTask *task) {
    return in_parent(task, breaker_redis_reply_nil());
}

static void free_object(void *r) { breaker_redis_reply_free(r); }

static redisReplyObjectFunctions reply_functions = {
    .createString = make_string,
    .createArray = make_array,
    .createInteger = make_integer,
    .createNil = make_nil,
    .freeObject = free_object,
};

/* ---- Connecting ------------------------------------------------------------------ */

/* The reply `r` to a setup command (AUTH, SELECT) on the new connection
 * `c`, freed. @return 1 for a status reply, or 0 with `why`. No reply at
 * all on a TLS connection may be the server's TLS alert (a client
 * certificate it wanted); on a plain one, a server that speaks only TLS
 * closes it at once: said, since the error alone names neither. */
static int setup_reply(const struct net *t, redisContext *c, breaker_redis_reply *r,
                       const char *what, uint64_t timeout_ns, char *why, size_t why_len) {
    int ok = r != NULL && r->type == BREAKER_REDIS_REPLY_STATUS;
    if (r != NULL) {
        snprintf(why, why_len, "%s: %s", what, r->str ? r->str : "unexpected reply");
    } else if (t->tls == NULL || !breaker__redis_tls_refused(what, why, why_len)) {
        int cut = c->err == REDIS_ERR_EOF || (c->err == REDIS_ERR_IO && errno == ECONNRESET);
        breaker__redis_io_reason(c, what, timeout_ns, why, why_len);
        if (cut && t->tls == NULL) {
            size_t len = strlen(why);
            snprintf(why + len, why_len - len,
                     " (a server that speaks only TLS closes a plain connection: is tls needed?)");
        }
    }
    breaker_redis_reply_free(r);
    return ok;
}

/* A connection to the unix socket `unix_path`, else to `host`:`port`
 * (TLS when the transport speaks it), authenticated as `username` with
 * `password` (NULL: none), database `db` selected. */
static redisContext *connect_as(struct net *t, const char *unix_path, const char *host, int port,
                                const char *username, const char *password, int db,
                                uint64_t timeout_ns, char *why, size_t why_len) {
    struct timeval tv = breaker__redis_tv(timeout_ns);
    redisContext *c = unix_path != NULL ? redisConnectUnixWithTimeout(unix_path, tv)
                                        : redisConnectWithTimeout(host, port, tv);
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
    /* Not inherited by a program the process runs (a fork that execs). */
    if (ok) (void)fcntl(c->fd, F_SETFD, FD_CLOEXEC);
    /* Within the socket timeout just set, as every later read. */
    if (ok && t->tls != NULL && unix_path == NULL)
        ok = breaker__redis_tls_start(t->tls, c, host, timeout_ns, why, why_len);
    if (ok) c->reader->fn = &reply_functions;
    if (ok && password != NULL)
        ok = setup_reply(t, c,
                         username != NULL ? redisCommand(c, "AUTH %s %s", username, password)
                                          : redisCommand(c, "AUTH %s", password),
                         "AUTH", timeout_ns, why, why_len);
    /* Without AUTH, a server that wants it answers NOAUTH to a small
     * command; to SCRIPT LOAD of the flush script (over 16 KB, Redis's
     * limit for an unauthenticated bulk) it only resets the connection. */
    if (ok && password == NULL)
        ok = setup_reply(t, c, redisCommand(c, "PING"), "PING", timeout_ns, why, why_len);
    if (ok && db != 0)
        ok =
            setup_reply(t, c, redisCommand(c, "SELECT %d", db), "SELECT", timeout_ns, why, why_len);
    if (!ok) {
        redisFree(c);
        return NULL;
    }
    return c;
}

redisContext *breaker__redis_connect(struct net *t, const struct node *n, uint64_t timeout_ns,
                                     char *why, size_t why_len) {
    return connect_as(t, n->unix_path, n->host, n->port, t->username, t->password, t->db,
                      timeout_ns, why, why_len);
}

redisContext *breaker__redis_connect_to(struct net *t, const char *host, int port,
                                        const char *username, const char *password, int db,
                                        uint64_t timeout_ns, char *why, size_t why_len) {
    return connect_as(t, NULL, host, port, username, password, db, timeout_ns, why, why_len);
}

/* The index of `script` in the transport's table, or -1 (sent by EVAL). */
static int script_index(const struct net *t, const char *script) {
    for (unsigned i = 0; i < t->nscripts; i++)
        if (t->scripts[i] == script) return (int)i;
    return -1;
}

int breaker__redis_load_scripts(struct net *t, struct node *n, char *why, size_t why_len) {
    for (unsigned i = 0; i < t->nscripts; i++)
        redisAppendCommand(n->ctx, "SCRIPT LOAD %s", t->scripts[i]);
    int ok = 1;
    for (unsigned i = 0; i < t->nscripts; i++) {
        breaker_redis_reply *r = NULL;
        if (redisGetReply(n->ctx, (void **)&r) != REDIS_OK) {
            breaker__redis_io_reason(n->ctx, "SCRIPT LOAD", t->io_timeout_ns, why, why_len);
            return 0;
        }
        if (r->type == BREAKER_REDIS_REPLY_STRING && r->len == 40) {
            memcpy(n->sha[i], r->str, 40);
            n->sha[i][40] = '\0';
            if (!atomic_load_explicit(&t->probe_sha_ready[i], memory_order_relaxed)) {
                memcpy(t->probe_sha[i], n->sha[i], sizeof t->probe_sha[i]);
                /* release: pairs with the probe path's acquire load. */
                atomic_store_explicit(&t->probe_sha_ready[i], 1, memory_order_release);
            }
        } else {
            snprintf(why, why_len, "SCRIPT LOAD: %s", r->str != NULL ? r->str : "unexpected reply");
            ok = 0;
        }
        breaker_redis_reply_free(r);
    }
    return ok;
}

/* ---- Commands ---------------------------------------------------------------------- */

/* `cmd` as a command's arguments: a script as EVALSHA `sha`, or EVAL of
 * its text when `sha` is NULL; else as it is. @return argc, or 0 when it
 * does not fit. */
static int command_argv(const breaker_redis_command *cmd, const char *sha,
                        const char *argv[MAX_ARGS], size_t len[MAX_ARGS]) {
    int n = 0;
    if (cmd->argc < 0 || cmd->argc > MAX_ARGS - 2) return 0;
    if (cmd->script != NULL) {
        argv[n] = sha != NULL ? "EVALSHA" : "EVAL";
        len[n] = strlen(argv[n]);
        n++;
        argv[n] = sha != NULL ? sha : cmd->script;
        len[n] = strlen(argv[n]);
        n++;
    }
    for (int i = 0; i < cmd->argc; i++, n++) {
        argv[n] = cmd->argv[i];
        len[n] = cmd->argvlen != NULL ? cmd->argvlen[i] : strlen(cmd->argv[i]);
    }
    return n;
}

void breaker__redis_append(struct net *t, redisContext *c, const struct node *n,
                           const breaker_redis_command *cmd, int eval) {
    const char *argv[MAX_ARGS];
    size_t len[MAX_ARGS];
    int i = cmd->script != NULL ? script_index(t, cmd->script) : -1;
    const char *sha = i >= 0 && !eval && n->sha[i][0] != '\0' ? n->sha[i] : NULL;
    int argc = command_argv(cmd, sha, argv, len);
    if (argc == 0) { /* cannot happen for the client's commands: answered as an error */
        redisAppendCommand(c, "ERR-breaker-command-too-long");
        return;
    }
    redisAppendCommandArgv(c, argc, argv, len);
}

/* ---- The probe path's calls --------------------------------------------------------- */

/* One command on `c`, waiting for its answer no later than `deadline`
 * (monotonic ns) by poll(), which is precise where a socket timeout is
 * rounded up to the kernel's tick. @return the reply, or NULL (error or
 * deadline). */
static breaker_redis_reply *command_by(redisContext *c, int argc, const char **argv,
                                       const size_t *len, uint64_t deadline) {
    if (redisAppendCommandArgv(c, argc, argv, len) != REDIS_OK) return NULL;
    int done = 0;
    while (!done)
        if (redisBufferWrite(c, &done) != REDIS_OK) return NULL;
    for (;;) {
        void *reply = NULL;
        if (redisGetReplyFromReader(c, &reply) != REDIS_OK) return NULL;
        if (reply != NULL) return reply;
        uint64_t now = breaker__redis_net_now();
        if (now >= deadline) return NULL;
        struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
        int ms = (int)((deadline - now) / NET_MS); /* rounded down; 0 polls once */
        int ready = poll(&pfd, 1, ms);
        if (ready < 0 && errno != EINTR) return NULL;
        if (ready > 0 && redisBufferRead(c) != REDIS_OK) return NULL;
    }
}

/* `cmd` on `n`'s probe connection, ASKING first when `ask`, answered before
 * `deadline`; NOSCRIPT answered by EVAL. @return the reply, or NULL (the
 * connection is then dropped). */
breaker_redis_reply *breaker__redis_probe_on(struct net *t, struct node *n,
                                             const breaker_redis_command *cmd, int ask,
                                             uint64_t deadline) {
    int i = cmd->script != NULL ? script_index(t, cmd->script) : -1;
    /* EVALSHA once a round has loaded the script (acquire: pairs with its
     * release store), EVAL before that or after a NOSCRIPT. */
    int eval = i < 0 || !atomic_load_explicit(&t->probe_sha_ready[i], memory_order_acquire);
    breaker_redis_reply *r = NULL;
    for (int attempt = 0; attempt < 2; attempt++) {
        const char *argv[MAX_ARGS];
        size_t len[MAX_ARGS];
        if (ask) {
            const char *asking = "ASKING";
            size_t asking_len = 6;
            r = command_by(n->probe_ctx, 1, &asking, &asking_len, deadline);
            if (r == NULL) break;
            breaker_redis_reply_free(r);
            r = NULL;
        }
        int argc = command_argv(cmd, eval ? NULL : t->probe_sha[i], argv, len);
        if (argc == 0) break;
        r = command_by(n->probe_ctx, argc, argv, len, deadline);
        if (r == NULL || !breaker__reply_is_error(r, "NOSCRIPT") || cmd->script == NULL) break;
        breaker_redis_reply_free(r);
        r = NULL;
        eval = 1;
    }
    if (r == NULL) {
        redisFree(n->probe_ctx);
        n->probe_ctx = NULL;
    }
    return r;
}
