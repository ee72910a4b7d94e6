/* SPDX-License-Identifier: MIT */
/*
 * link.c - one host's link to an in-process Redis (link.h): the transport
 * table over breaker__redis_inproc_command(), with the simulator's faults.
 * A script goes as EVALSHA of the SHA its SCRIPT LOAD gave (loaded again
 * after a NOSCRIPT: a server restarted empty), as the hiredis transport
 * sends it.
 */
#include "store/redis/inproc/link.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LINK_SCRIPTS 8u
#define LINK_ARGS    ((unsigned)BREAKER_REDIS_COMMAND_ARGS_MAX) /* a command's, at most */

/* A command kept to run later (DEFER): its arguments copied. */
struct deferred {
    uint64_t at_ns;
    const char *script;
    int argc;
    char *argv[LINK_ARGS];
    size_t len[LINK_ARGS];
    struct deferred *next;
};

struct breaker__inproc_link {
    struct breaker__redis_inproc *server;
    breaker_clock_fn *clock;
    void *clock_ctx;
    breaker__inproc_fate_fn *fate;
    void *fate_ctx;
    void (*wake)(void *ctx);
    void *wake_ctx;
    /* The scripts this link has loaded: text (by address) -> SHA. */
    const char *script[LINK_SCRIPTS];
    char sha[LINK_SCRIPTS][41];
    unsigned scripts;
    int answered_last;      /* the last exchange was answered whole */
    struct deferred *queue; /* by time, then by arrival */
    struct breaker__inproc_link_stats n;
};

/* A NOSCRIPT error reply: the server lost its scripts. (Written here: a
 * transport sees only the public reply type.) */
static int is_noscript(const breaker_redis_reply *r) {
    return r != NULL && r->type == BREAKER_REDIS_REPLY_ERROR && r->len >= 8 &&
           memcmp(r->str, "NOSCRIPT", 8) == 0;
}

static uint64_t link_now(void *ctx) {
    struct breaker__inproc_link *l = ctx;
    return l->clock(l->clock_ctx);
}

/* `text` loaded on the server: its SHA in `l->sha[i]`. @return i, or -1. */
static int load_script(struct breaker__inproc_link *l, const char *text, int reload) {
    unsigned i = 0;
    while (i < l->scripts && l->script[i] != text)
        i++;
    if (i < l->scripts && !reload) return (int)i;
    if (i == l->scripts && l->scripts == LINK_SCRIPTS) return -1;
    const char *argv[] = {"SCRIPT", "LOAD", text};
    size_t len[] = {6, 4, strlen(text)};
    breaker_redis_reply *r = breaker__redis_inproc_command(l->server, 3, argv, len);
    int ok = r != NULL && r->type == BREAKER_REDIS_REPLY_STRING && r->len == 40;
    if (ok) {
        memcpy(l->sha[i], r->str, 41);
        l->script[i] = text;
        if (i == l->scripts) l->scripts++;
    }
    breaker_redis_reply_free(r);
    return ok ? (int)i : -1;
}

/* Run one command on the server. @return its reply (NULL: out of memory). */
static breaker_redis_reply *run(struct breaker__inproc_link *l, const char *script, int argc,
                                const char *const *argv, const size_t *argvlen) {
    const char *a[LINK_ARGS + 2] = {NULL};
    size_t n[LINK_ARGS + 2] = {0};
    int k = 0;
    if (argc < 0 || (unsigned)argc > LINK_ARGS)
        return breaker_redis_reply_string(BREAKER_REDIS_REPLY_ERROR,
                                          "ERR breaker: too many arguments", 31);
    int i = script != NULL ? load_script(l, script, 0) : -1;
    if (script != NULL) {
        a[k] = i >= 0 ? "EVALSHA" : "EVAL";
        n[k] = strlen(a[k]);
        k++;
        a[k] = i >= 0 ? l->sha[i] : script;
        n[k] = strlen(a[k]);
        k++;
    }
    for (int j = 0; j < argc; j++, k++) {
        a[k] = argv[j];
        n[k] = argvlen != NULL ? argvlen[j] : strlen(argv[j]);
    }
    breaker_redis_reply *r = breaker__redis_inproc_command(l->server, k, a, n);
    if (i >= 0 && is_noscript(r)) {
        /* The server lost its scripts (restarted empty): load again. */
        breaker_redis_reply_free(r);
        i = load_script(l, script, 1);
        a[0] = i >= 0 ? "EVALSHA" : "EVAL";
        n[0] = strlen(a[0]);
        a[1] = i >= 0 ? l->sha[i] : script;
        n[1] = strlen(a[1]);
        r = breaker__redis_inproc_command(l->server, k, a, n);
    }
    return r;
}

/* Keep `cmd` to run at `at_ns`. @return 1, or 0 (out of memory: dropped). */
static int defer(struct breaker__inproc_link *l, const breaker_redis_command *cmd, uint64_t at_ns) {
    if (cmd->argc < 0 || (unsigned)cmd->argc > LINK_ARGS) return 0;
    struct deferred *d = calloc(1, sizeof *d);
    if (d == NULL) return 0;
    d->at_ns = at_ns;
    d->script = cmd->script;
    d->argc = cmd->argc;
    for (int j = 0; j < cmd->argc; j++) {
        size_t len = cmd->argvlen != NULL ? cmd->argvlen[j] : strlen(cmd->argv[j]);
        d->argv[j] = malloc(len + 1);
        if (d->argv[j] == NULL) {
            for (int k = 0; k < j; k++)
                free(d->argv[k]);
            free(d);
            return 0;
        }
        memcpy(d->argv[j], cmd->argv[j], len);
        d->argv[j][len] = '\0';
        d->len[j] = len;
    }
    struct deferred **at = &l->queue;
    while (*at != NULL && (*at)->at_ns <= at_ns)
        at = &(*at)->next;
    d->next = *at;
    *at = d;
    return 1;
}

/* `cmd` under its fate. @return its reply, or NULL (not answered). */
static breaker_redis_reply *carry(struct breaker__inproc_link *l, const breaker_redis_command *cmd,
                                  int probe) {
    uint64_t at = 0;
    int fate = l->fate != NULL ? l->fate(l->fate_ctx, cmd, probe, &at) : BREAKER__INPROC_DELIVER;
    if (fate == BREAKER__INPROC_DROP) {
        l->n.dropped++;
        return NULL;
    }
    if (fate == BREAKER__INPROC_DEFER) {
        if (defer(l, cmd, at))
            l->n.deferred++;
        else
            l->n.dropped++;
        return NULL;
    }
    breaker_redis_reply *r = run(l, cmd->script, cmd->argc, cmd->argv, cmd->argvlen);
    if (fate == BREAKER__INPROC_RESEND && cmd->idempotent) {
        l->n.resent++;
        breaker_redis_reply_free(r);
        r = run(l, cmd->script, cmd->argc, cmd->argv, cmd->argvlen);
    }
    if (fate == BREAKER__INPROC_LOSE) {
        l->n.lost++;
        breaker_redis_reply_free(r);
        return NULL;
    }
    return r;
}

static int link_exchange(void *ctx, breaker_redis_command *cmds, size_t n,
                         breaker_redis_reply **replies, char *why, size_t why_len) {
    struct breaker__inproc_link *l = ctx;
    size_t answered = 0;
    l->n.exchanges++;
    for (size_t i = 0; i < n; i++) {
        l->n.commands++;
        cmds[i].server = 0;
        replies[i] = carry(l, &cmds[i], 0);
        if (replies[i] != NULL) answered++;
    }
    l->answered_last = answered == n;
    if (answered < n)
        snprintf(why, why_len, "flush: inproc: %zu of %zu not answered", n - answered, n);
    return answered == n ? 1 : answered == 0 ? -1 : 0;
}

static int link_probe(void *ctx, breaker_redis_command *cmd, uint64_t deadline_ns,
                      breaker_redis_reply **reply) {
    struct breaker__inproc_link *l = ctx;
    (void)deadline_ns; /* answered at once, or not at all */
    l->n.probes++;
    cmd->server = 0;
    *reply = carry(l, cmd, 1);
    return *reply != NULL ? BREAKER_REDIS_PROBE_ANSWERED : BREAKER_REDIS_PROBE_LOST;
}

static uint32_t link_server_of(void *ctx, const char *key) {
    (void)ctx;
    (void)key;
    return 0;
}

static int link_reachable(void *ctx, const char *key) {
    (void)key;
    return ((struct breaker__inproc_link *)ctx)->answered_last;
}

static void link_round_done(void *ctx) { (void)ctx; }

static void link_wake(void *ctx) {
    struct breaker__inproc_link *l = ctx;
    if (l->wake != NULL) l->wake(l->wake_ctx);
}

static void free_deferred(struct deferred *d) {
    for (int j = 0; j < d->argc; j++)
        free(d->argv[j]);
    free(d);
}

static void link_destroy(void *ctx) {
    struct breaker__inproc_link *l = ctx;
    if (l == NULL) return;
    while (l->queue != NULL) {
        struct deferred *d = l->queue;
        l->queue = d->next;
        free_deferred(d);
    }
    free(l);
}

const breaker_redis_transport_ops breaker__inproc_link_ops = {
    .name = "inproc",
    .exchange = link_exchange,
    .probe = link_probe,
    .server_of = link_server_of,
    .reachable = link_reachable,
    .round_done = link_round_done,
    .now_ns = link_now,
    .wake = link_wake,
    .stats = NULL,
    .destroy = link_destroy,
};

struct breaker__inproc_link *breaker__inproc_link_create(struct breaker__redis_inproc *server,
                                                         breaker_clock_fn *clock, void *clock_ctx) {
    struct breaker__inproc_link *l = calloc(1, sizeof *l);
    if (l == NULL) return NULL;
    l->server = server;
    l->clock = clock;
    l->clock_ctx = clock_ctx;
    l->answered_last = 1;
    return l;
}

void breaker__inproc_link_set_fate(struct breaker__inproc_link *l, breaker__inproc_fate_fn *fate,
                                   void *ctx) {
    l->fate = fate;
    l->fate_ctx = ctx;
}

void breaker__inproc_link_set_wake(struct breaker__inproc_link *l, void (*wake)(void *ctx),
                                   void *ctx) {
    l->wake = wake;
    l->wake_ctx = ctx;
}

size_t breaker__inproc_link_run_deferred(struct breaker__inproc_link *l) {
    uint64_t now = link_now(l);
    size_t ran = 0;
    while (l->queue != NULL && l->queue->at_ns <= now) {
        struct deferred *d = l->queue;
        l->queue = d->next;
        breaker_redis_reply_free(run(l, d->script, d->argc, (const char *const *)d->argv, d->len));
        free_deferred(d);
        ran++;
    }
    return ran;
}

uint64_t breaker__inproc_link_next_deferred(const struct breaker__inproc_link *l) {
    return l->queue != NULL ? l->queue->at_ns : UINT64_MAX;
}

void breaker__inproc_link_stats(const struct breaker__inproc_link *l,
                                struct breaker__inproc_link_stats *out) {
    *out = l->n;
}

uint64_t breaker__inproc_link_probes(const struct breaker__inproc_link *l) { return l->n.probes; }
