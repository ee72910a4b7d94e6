/* SPDX-License-Identifier: MIT */
/*
 * fleet_load.c - what a fleet of hosts costs Redis (make bench, part
 * "fleetload"; issue 22). A real redis-server on loopback (tests/support/redis_server.c),
 * simulated hosts as forked processes, each running the fleet store as an
 * application would: breaker_redis_open() with the defaults (flush every
 * 250 ms), 50 names attached (the same names on every host: one fleet), and
 * calls on every name every 20 ms, all successes (a healthy fleet) or all
 * failures (an outage of every name). Redis's own CPU (INFO cpu:
 * used_cpu_user + used_cpu_sys, the server's getrusage) is read before and
 * after a measured period, the idle server's cost over the same time is
 * subtracted, and the rest is divided by hosts and seconds: Redis CPU per
 * host per second, and how many such hosts one Redis core serves. Figures
 * only, never a timed assertion: the machine is shared.
 *
 * The rows (main()): 1 and 8 processes per host, healthy and in an outage.
 * Hooks for the other parts of issue 22:
 *  - load_child_main() is one process of one host; a host whose processes
 *    share a store file (one flusher per host) attaches through it there
 *    (struct load_row.store_dir names the host's directory, NULL: none);
 *  - struct load_target is the Redis a row measures (the nodes whose CPU is
 *    summed, and what the clients connect to); run_row() measures one row on
 *    one target, so a Redis Cluster row is a target with its nodes and the
 *    client's cluster configuration (cluster_seed), measured by the same
 *    run_row() and printed by print_row().
 *
 * Usage: fleet_load [--seconds S] [--hosts H] [--only ROW-SUBSTRING]
 */
#define _GNU_SOURCE
#include "redis_server.h"

#include "store/redis/scripts.h"

#include <breaker.h>
#include <breaker/redis.h>
#include <breaker/store.h>

#include <hiredis/hiredis.h>

#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_NODES 8
#define MAX_PROCS 256

/* The Redis a row runs against: the nodes whose CPU counts, and the one
 * the clients are given. */
struct load_target {
    const char *label;
    int nodes;
    int port[MAX_NODES]; /* 127.0.0.1:port */
    pid_t pid[MAX_NODES];
    const char *cluster_seed; /* a Redis Cluster: breaker_redis_config.cluster_nodes */
};

/* One row: hosts x processes per host x names, healthy or failing. */
struct load_row {
    const char *label;
    int hosts, procs, names;
    int outage;            /* every call fails */
    const char *store_dir; /* one store file per host under it (NULL: none) */
};

/* What one row measured. */
struct load_result {
    double seconds;
    double cpu_us;      /* Redis CPU over the period, idle cost subtracted */
    double idle_us;     /* the idle cost subtracted */
    long long calls[4]; /* commands in the period: evalsha, eval, hmget, other */
    double evalsha_usec_per_call;
    double hmget_usec_per_call;
    double node_cpu_us[MAX_NODES]; /* each node's share of cpu_us (idle not subtracted) */
};

static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fleet_load: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void nap_ms(long ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* ---- Redis's side ------------------------------------------------------------ */

static redisContext *node_ctx(int port) {
    struct timeval tv = {.tv_sec = 5, .tv_usec = 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    if (c == NULL || c->err) die("connect to 127.0.0.1:%d: %s", port, c ? c->errstr : "oom");
    return c;
}

static void node_command(int port, const char *cmd) {
    redisContext *c = node_ctx(port);
    redisReply *r = redisCommand(c, cmd);
    if (r == NULL) die("%s: %s", cmd, c->errstr);
    freeReplyObject(r);
    redisFree(c);
}

/* A number after `key` in the text of INFO `section`. */
static double info_number(const char *text, const char *key) {
    const char *at = strstr(text, key);
    return at != NULL ? strtod(at + strlen(key), NULL) : 0;
}

/* Redis CPU used so far by every node of `t`, in µs (each node's in
 * `each`, when not NULL). */
static double target_cpu_us_each(const struct load_target *t, double *each) {
    double sum = 0;
    for (int i = 0; i < t->nodes; i++) {
        redisContext *c = node_ctx(t->port[i]);
        redisReply *r = redisCommand(c, "INFO cpu");
        if (r == NULL || r->type != REDIS_REPLY_STRING) die("INFO cpu: %s", c->errstr);
        double us =
            (info_number(r->str, "used_cpu_user:") + info_number(r->str, "used_cpu_sys:")) * 1e6;
        if (each != NULL) each[i] = us;
        sum += us;
        freeReplyObject(r);
        redisFree(c);
    }
    return sum;
}

static double target_cpu_us(const struct load_target *t) { return target_cpu_us_each(t, NULL); }

/* INFO commandstats of every node, summed: calls and usec of `cmd`. */
static void target_cmdstat(const struct load_target *t, const char *cmd, long long *calls,
                           double *usec) {
    *calls = 0;
    *usec = 0;
    char key[64];
    snprintf(key, sizeof key, "cmdstat_%s:calls=", cmd);
    for (int i = 0; i < t->nodes; i++) {
        redisContext *c = node_ctx(t->port[i]);
        redisReply *r = redisCommand(c, "INFO commandstats");
        if (r == NULL || r->type != REDIS_REPLY_STRING) die("INFO commandstats: %s", c->errstr);
        const char *at = strstr(r->str, key);
        if (at != NULL) {
            *calls += strtoll(at + strlen(key), NULL, 10);
            const char *u = strstr(at, ",usec=");
            if (u != NULL) *usec += strtod(u + 6, NULL);
        }
        freeReplyObject(r);
        redisFree(c);
    }
}

/* Every command's calls summed (cmdstat_*:calls=). */
static long long target_all_calls(const struct load_target *t) {
    long long sum = 0;
    for (int i = 0; i < t->nodes; i++) {
        redisContext *c = node_ctx(t->port[i]);
        redisReply *r = redisCommand(c, "INFO commandstats");
        if (r == NULL || r->type != REDIS_REPLY_STRING) die("INFO commandstats: %s", c->errstr);
        for (const char *at = strstr(r->str, ":calls="); at != NULL; at = strstr(at + 1, ":calls="))
            sum += strtoll(at + 7, NULL, 10);
        freeReplyObject(r);
        redisFree(c);
    }
    return sum;
}

/* ---- The flush script's own cost -------------------------------------------- */

/* INFO commandstats usec_per_call of `cmd` on `port`, after `n` calls of
 * the command `argv` sent in pipelines of 50. `seq_at`: the index of the
 * argument that takes a growing sequence (-1: none). */
static double usec_per_call_once(int port, const char *cmd, int argc, const char **argv, int seq_at,
                                 int n) {
    redisContext *c = node_ctx(port);
    node_command(port, "CONFIG RESETSTAT");
    char seq[24];
    static uint64_t next_seq = 1;
    for (int done = 0; done < n;) {
        int batch = n - done < 50 ? n - done : 50;
        for (int i = 0; i < batch; i++) {
            if (seq_at >= 0) {
                snprintf(seq, sizeof seq, "%" PRIu64, next_seq++);
                argv[seq_at] = seq;
            }
            redisAppendCommandArgv(c, argc, argv, NULL);
        }
        for (int i = 0; i < batch; i++) {
            redisReply *r = NULL;
            if (redisGetReply(c, (void **)&r) != REDIS_OK) die("%s: %s", cmd, c->errstr);
            if (r->type == REDIS_REPLY_ERROR) die("%s: %s", cmd, r->str);
            freeReplyObject(r);
        }
        done += batch;
    }
    redisFree(c);
    long long calls;
    double usec;
    struct load_target t = {.nodes = 1};
    t.port[0] = port;
    target_cmdstat(&t, cmd, &calls, &usec);
    return calls ? usec / (double)calls : 0;
}

static long long test_redis_hlen_check(int port, const char *key);

/* The least of 7 measurements of `n` calls: the machine is shared, and
 * what other processes do only ever adds. */
static double usec_per_call(int port, const char *cmd, int argc, const char **argv, int seq_at,
                            int n) {
    double best = 0;
    for (int i = 0; i < 7; i++) {
        double u = usec_per_call_once(port, cmd, argc, argv, seq_at, n);
        if (i == 0 || u < best) best = u;
    }
    return best;
}

/* The flush script on one name whose window holds 10 buckets and whose
 * sequences hash holds `hosts` hosts: a flush that carries deltas, one that
 * carries none (what an open fleet's flush costs), and the state read. */
static void script_cost(int port, const char *limits, int hosts) {
    const char *k[4] = {"breaker:v2:{cost}:s", "breaker:v2:{cost}:w", "breaker:v2:{cost}:l",
                        "breaker:v2:{cost}:q"};
    node_command(port, "FLUSHALL");
    redisContext *c = node_ctx(port);
    redisReply *r = redisCommand(c, "TIME");
    uint64_t now =
        strtoull(r->element[0]->str, NULL, 10) * 1000000 + strtoull(r->element[1]->str, NULL, 10);
    freeReplyObject(r);
    /* The state, as the first flush makes it. */
    const char *first[] = {"EVAL", breaker__redis_lua_flush,
                           "4",    k[0],
                           k[1],   k[2],
                           k[3],   "3600000",
                           limits, "0",
                           "0",    "0",
                           "0",    "0"};
    r = redisCommandArgv(c, 14, first, NULL);
    if (r == NULL || r->type == REDIS_REPLY_ERROR) die("flush: %s", r ? r->str : c->errstr);
    freeReplyObject(r);
    uint64_t span = 6000000; /* the default window: 60 s in 10 buckets */
    for (uint64_t b = now / span - 9; b <= now / span; b++) {
        r = redisCommand(c, "HSET %s c%" PRIu64 " 1000", k[1], b);
        freeReplyObject(r);
    }
    for (int h = 0; h < hosts; h++) {
        char field[17], value[48];
        snprintf(field, sizeof field, "%016x", 0x1000 + h);
        snprintf(value, sizeof value, "1 %" PRIu64, now);
        r = redisCommand(c, "HSET %s %s %s", k[3], field, value);
        freeReplyObject(r);
    }
    r = redisCommand(c, "SCRIPT LOAD %s", breaker__redis_lua_flush);
    char sha[41];
    snprintf(sha, sizeof sha, "%s", r->str);
    freeReplyObject(r);
    redisFree(c);
    const char *with[] = {"EVALSHA",          sha,    "4", k[0], k[1], k[2], k[3],
                          "3600000",          limits, "0", "50", "0",  "0",  "0",
                          "00000000000000aa", "1",    "0", "0"};
    double deltas = usec_per_call(port, "evalsha", 18, with, 15, 500);
    const char *none[] = {"EVALSHA",          sha,    "4", k[0], k[1], k[2], k[3],
                          "3600000",          limits, "0", "0",  "0",  "0",  "0",
                          "00000000000000aa", "1",    "0", "0"};
    double empty = usec_per_call(port, "evalsha", 18, none, 15, 500);
    const char *read[] = {"HMGET", k[0], "st", "gen", "until", "k",
                          "succ",  "ec", "ef", "es",  "born"};
    double hmget = usec_per_call(port, "hmget", 11, read, -1, 500);
    if (test_redis_hlen_check(port, k[3]) < hosts) die("the sequences hash lost hosts");
    printf("  %-34s %6d %12.2f %12.2f %12.2f\n", "flush script, 10 buckets", hosts, deltas, empty,
           hmget);
}

static long long test_redis_hlen_check(int port, const char *key) {
    redisContext *c = node_ctx(port);
    redisReply *r = redisCommand(c, "HLEN %s", key);
    long long n = r != NULL && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    if (r != NULL) freeReplyObject(r);
    redisFree(c);
    return n;
}

/* The stored limits of a name attached with the defaults. */
static void default_limits(int port, char *out, size_t len) {
    breaker_redis_config rc;
    breaker_redis_config_init(&rc);
    rc.port = port;
    rc.flush_interval_ns = 3600ull * 1000000000ull;
    char msg[256] = "";
    breaker_redis *f = NULL;
    breaker *b = NULL;
    breaker_config cfg;
    breaker_config_init(&cfg);
    cfg.trip = BREAKER_TRIP_TIME_WINDOW;
    if (breaker_redis_open(&rc, &f, msg, sizeof msg) != BREAKER_OK ||
        breaker_redis_attach(f, "limits", &cfg, &b, msg, sizeof msg) != BREAKER_OK)
        die("attach: %s", msg);
    breaker_redis_close(f);
    redisContext *c = node_ctx(port);
    redisReply *r = redisCommand(c, "HGET breaker:v2:{limits}:s cfg");
    if (r == NULL || r->type != REDIS_REPLY_STRING) die("no stored limits");
    snprintf(out, len, "%s", r->str);
    freeReplyObject(r);
    redisFree(c);
}

/* ---- One host's process ------------------------------------------------------- */

static volatile sig_atomic_t child_stop;
static void on_term(int sig) {
    (void)sig;
    child_stop = 1;
}

/* One process of host `host`: the fleet handle, `row->names` names, and a
 * call on every name every 20 ms until SIGTERM. */
static void load_child_main(const struct load_target *t, const struct load_row *row, int host,
                            int proc) {
    (void)proc;
    signal(SIGTERM, on_term);
    breaker_redis_config rc;
    breaker_redis_config_init(&rc); /* flush every 250 ms, as deployed */
    rc.port = t->port[0];
    rc.cluster_nodes = t->cluster_seed; /* NULL: one node */
    char msg[256] = "";
    if (row->store_dir != NULL) { /* one flusher per host: the host's store file */
        char path[512];
        snprintf(path, sizeof path, "%s/host%d.store", row->store_dir, host);
        breaker_store *st = NULL;
        if (breaker_store_open(path, NULL, &st, msg, sizeof msg) != BREAKER_OK)
            die("store: %s", msg);
        rc.store = st; /* never closed: the parent kills the process */
    }
    breaker_redis *f = NULL;
    if (breaker_redis_open(&rc, &f, msg, sizeof msg) != BREAKER_OK) die("open: %s", msg);
    breaker **b = calloc((size_t)row->names, sizeof *b);
    if (b == NULL) die("out of memory");
    for (int i = 0; i < row->names; i++) {
        char name[64];
        snprintf(name, sizeof name, "load.%d", i);
        breaker_config cfg;
        breaker_config_init(&cfg);
        cfg.trip = BREAKER_TRIP_TIME_WINDOW; /* the defaults: 60 s, 10 buckets, 20 calls, 50% */
        int rcode = breaker_redis_attach(f, name, &cfg, &b[i], msg, sizeof msg);
        if (rcode != BREAKER_OK && rcode != BREAKER_CONFIG_DIFFERS) die("attach %s: %s", name, msg);
    }
    enum breaker_outcome outcome = row->outage ? BREAKER_FAILURE : BREAKER_SUCCESS;
    while (!child_stop) {
        for (int i = 0; i < row->names; i++) {
            breaker_permit p;
            if (breaker_acquire(b[i], &p) == BREAKER_OK) (void)breaker_complete(b[i], &p, outcome);
        }
        nap_ms(20);
    }
    /* No close: the measured period is over; the parent kills what is left. */
    _exit(0);
}

/* ---- The parent --------------------------------------------------------------- */

static pid_t kids[MAX_PROCS];
static int nkids;

static void stop_kids(void) {
    for (int i = 0; i < nkids; i++)
        kill(kids[i], SIGKILL);
    for (int i = 0; i < nkids; i++)
        waitpid(kids[i], NULL, 0);
    nkids = 0;
}

static void measure_idle(const struct load_target *t, double seconds, double *us_per_s) {
    double c0 = target_cpu_us(t), t0 = mono_s();
    nap_ms((long)(seconds * 1000));
    double c1 = target_cpu_us(t), t1 = mono_s();
    *us_per_s = (c1 - c0) / (t1 - t0);
}

/* Measure `row` on `t`: start its processes, let them attach and settle
 * (`warm` s: the outage rows trip), measure `seconds`, stop them. */
static void run_row(const struct load_target *t, const struct load_row *row, double warm,
                    double seconds, double idle_us_per_s, struct load_result *out) {
    memset(out, 0, sizeof *out);
    for (int i = 0; i < t->nodes; i++) {
        node_command(t->port[i], "FLUSHALL");
        node_command(t->port[i], "SCRIPT FLUSH");
    }
    fflush(NULL);
    for (int h = 0; h < row->hosts; h++) {
        for (int p = 0; p < row->procs; p++) {
            if (nkids == MAX_PROCS) die("more than %d processes", MAX_PROCS);
            pid_t pid = fork();
            if (pid < 0) die("fork: %s", strerror(errno));
            if (pid == 0) load_child_main(t, row, h, p);
            kids[nkids++] = pid;
        }
    }
    nap_ms((long)(warm * 1000));
    for (int i = 0; i < t->nodes; i++)
        node_command(t->port[i], "CONFIG RESETSTAT");
    double each0[MAX_NODES], each1[MAX_NODES];
    double c0 = target_cpu_us_each(t, each0), t0 = mono_s();
    long long all0 = target_all_calls(t);
    nap_ms((long)(seconds * 1000));
    double c1 = target_cpu_us_each(t, each1), t1 = mono_s();
    for (int i = 0; i < t->nodes; i++)
        out->node_cpu_us[i] = each1[i] - each0[i];
    long long all1 = target_all_calls(t);
    double usec;
    target_cmdstat(t, "evalsha", &out->calls[0], &usec);
    out->evalsha_usec_per_call = out->calls[0] ? usec / (double)out->calls[0] : 0;
    target_cmdstat(t, "eval", &out->calls[1], &usec);
    target_cmdstat(t, "hmget", &out->calls[2], &usec);
    out->hmget_usec_per_call = out->calls[2] ? usec / (double)out->calls[2] : 0;
    /* The stat reads themselves are a few commands: negligible. */
    out->calls[3] = (all1 - all0) - out->calls[0] - out->calls[1] - out->calls[2];
    if (out->calls[3] < 0) out->calls[3] = 0;
    stop_kids();
    out->seconds = t1 - t0;
    out->idle_us = idle_us_per_s * out->seconds;
    out->cpu_us = (c1 - c0) - out->idle_us;
    if (out->cpu_us < 0) out->cpu_us = 0;
}

static void print_header(void) {
    printf("  %-34s %6s %12s %10s %9s %9s %8s %8s\n", "row", "hosts", "us/host/s", "hosts/core",
           "script/s", "other/s", "us/EVSH", "us/HMGET");
}

static void print_row(const struct load_row *row, const struct load_result *r) {
    double per_host = r->cpu_us / r->seconds / row->hosts; /* µs of Redis CPU per host per s */
    double hosts_per_core = per_host > 0 ? 1e6 / per_host : 0;
    double scripts = (double)(r->calls[0] + r->calls[1]) / r->seconds / row->hosts;
    double other = (double)(r->calls[2] + r->calls[3]) / r->seconds / row->hosts;
    printf("  %-34s %6d %12.1f %10.0f %9.1f %9.1f %8.2f %8.2f\n", row->label, row->hosts, per_host,
           hosts_per_core, scripts, other, r->evalsha_usec_per_call, r->hmget_usec_per_call);
    fflush(stdout);
}

/* A 3-master Redis Cluster against one node: the same hosts (1 process, 50
 * names), each handle routing its names to their masters (one pipeline per
 * master per round). Counted: the masters' CPU. Without replicas, the same
 * work as the one node; with a replica each, the masters also feed their
 * replicas (the replicas' own CPU is left out). What a Cluster serves is
 * bounded by its busiest master, each master being one core: 1 s / the
 * busiest master's CPU per host per second. */
static void cluster_rows(int replicas, int hosts, double warm, double seconds, const char *only,
                         const double one_node_hosts_per_core[2]) {
    const struct load_row rows[2][2] = {{{"3-master cluster, healthy", hosts, 1, 50, 0, NULL},
                                         {"3-master cluster, outage", hosts, 1, 50, 1, NULL}},
                                        {{"3 masters + replicas, healthy", hosts, 1, 50, 0, NULL},
                                         {"3 masters + replicas, outage", hosts, 1, 50, 1, NULL}}};
    const struct load_row *row = rows[replicas];
    if (only != NULL && strstr(row[0].label, only) == NULL && strstr(row[1].label, only) == NULL)
        return;
    struct test_cluster cl;
    if (test_cluster_start(&cl, 3, replicas, 2000) != 0) {
        printf("  %s: could not start a cluster, skipped\n", row[0].label);
        return;
    }
    struct load_target t = {.label = "3-master cluster", .nodes = 3, .cluster_seed = cl.seeds};
    for (int i = 0; i < 3; i++) {
        t.port[i] = cl.node[i].port;
        t.pid[i] = cl.node[i].pid;
    }
    double idle;
    measure_idle(&t, 2, &idle);
    for (int i = 0; i < 2; i++) {
        if (only != NULL && strstr(row[i].label, only) == NULL) continue;
        struct load_result r;
        run_row(&t, &row[i], warm, seconds, idle, &r);
        print_row(&row[i], &r);
        /* Each master's share (a third of the idle cost subtracted). */
        double busiest = 0;
        printf("    per master us/host/s:");
        for (int m = 0; m < 3; m++) {
            double us = (r.node_cpu_us[m] - r.idle_us / 3) / r.seconds / row[i].hosts;
            if (us > busiest) busiest = us;
            printf(" %.1f", us);
        }
        double served = busiest > 0 ? 1e6 / busiest : 0;
        printf("; busiest bounds it: %.0f hosts on 3 cores", served);
        if (one_node_hosts_per_core[i] > 0)
            printf(" = %.2fx one node", served / one_node_hosts_per_core[i]);
        printf("\n");
        fflush(stdout);
    }
    test_cluster_stop(&cl);
}

int main(int argc, char **argv) {
    double seconds = 4, warm = 2.5;
    int hosts1 = 16, hosts8 = 2;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
            seconds = strtod(argv[++i], NULL);
        else if (strcmp(argv[i], "--hosts") == 0 && i + 1 < argc)
            hosts1 = atoi(argv[++i]);
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = argv[++i];
        else
            die("usage: fleet_load [--seconds S] [--hosts H] [--only ROW-SUBSTRING]");
    }
    struct test_redis server;
    memset(&server, 0, sizeof server);
    if (test_redis_start(&server) != 0) {
        printf("fleet load: redis-server not available, skipped\n");
        return 0;
    }
    struct load_target one = {.label = "one node", .nodes = 1};
    one.port[0] = server.port;
    one.pid[0] = server.pid;
    double idle;
    measure_idle(&one, 2, &idle);
    printf("fleet load (issue 22): real redis-server on loopback, default flush interval "
           "(250 ms), 50 names per host,\n  a call on every name every 20 ms; Redis CPU (INFO cpu) "
           "less its idle cost (%.0f us/s), per host per second;\n  hosts/core = 1 s / that. "
           "script/s, other/s: commands per host per second. Figures, not targets.\n",
           idle);
    if (only == NULL || strstr("script cost", only) != NULL) {
        char limits[320];
        default_limits(server.port, limits, sizeof limits);
        printf("  %-34s %6s %12s %12s %12s\n", "Redis CPU per call (INFO commandstats)", "hosts",
               "us deltas", "us none", "us HMGET");
        script_cost(server.port, limits, 16);
        script_cost(server.port, limits, 1000);
        script_cost(server.port, limits, 8000);
    }
    print_header();
    /* The rows whose hosts share a store file (one flusher per host): a
     * directory of their files, removed at the end. */
    char store_dir[] = "/tmp/breaker-fleet-load-XXXXXX";
    if (mkdtemp(store_dir) == NULL) die("mkdtemp: %s", strerror(errno));
    const struct load_row rows[] = {
        {"1 process/host, healthy", hosts1, 1, 50, 0, NULL},
        {"1 process/host, outage of every name", hosts1, 1, 50, 1, NULL},
        {"8 processes/host, healthy", hosts8, 8, 50, 0, NULL},
        {"8 processes/host, outage of every name", hosts8, 8, 50, 1, NULL},
        {"8 processes/host, store file, healthy", hosts8, 8, 50, 0, store_dir},
        {"8 processes/host, store file, outage", hosts8, 8, 50, 1, store_dir},
    };
    double one_node[2] = {0, 0}; /* hosts per core: 1 process/host, healthy and outage */
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        if (only != NULL && strstr(rows[i].label, only) == NULL) continue;
        struct load_result r;
        run_row(&one, &rows[i], warm, seconds, idle, &r);
        print_row(&rows[i], &r);
        if (i < 2 && r.cpu_us > 0) one_node[i] = 1e6 / (r.cpu_us / r.seconds / rows[i].hosts);
    }
    test_redis_stop(&server);
    for (int h = 0; h < hosts8; h++) {
        char path[512];
        snprintf(path, sizeof path, "%s/host%d.store", store_dir, h);
        unlink(path);
    }
    rmdir(store_dir);
    for (int replicas = 0; replicas <= 1; replicas++)
        cluster_rows(replicas, hosts1, warm, seconds, only, one_node);
    return 0;
}
