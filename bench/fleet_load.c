/* SPDX-License-Identifier: MIT */
/*
 * fleet_load.c - what a fleet of hosts costs Redis (make bench, part
 * "fleetload"; issues 22 and 34). A real redis-server on loopback
 * (tests/support/redis_server.c), simulated hosts as processes running
 * bench/fleet_host (a fleet handle with the defaults, 50 names, a call on
 * every name every 20 ms: all successes, a healthy fleet, or all failures,
 * an outage of every name). Redis's own CPU (INFO cpu: used_cpu_user +
 * used_cpu_sys, the server's getrusage) is read before and after a measured
 * period, the idle server's cost over the same time is subtracted, and the
 * rest is divided by hosts and seconds: Redis CPU per host per second, and
 * how many such hosts one Redis core serves. Figures only, never a timed
 * assertion: the machine is shared.
 *
 * With --baseline PATH (scripts/bench.sh: the same fleet_host program built
 * against the library of a pinned commit), every row runs with both host
 * programs in turn, against the same server, and prints both figures and
 * their ratio: on a shared machine the ratio of two runs side by side is
 * the figure to read, not either alone.
 *
 * The rows (main()): 1 and 8 processes per host, without and with a store
 * file (one flusher per host), healthy and in an outage; then a 3-master
 * Redis Cluster without and with replicas (struct load_target: the nodes
 * whose CPU is summed, and the seeds the hosts are given).
 *
 * Usage: fleet_load [--seconds S] [--warm S] [--hosts H] [--only ROW-SUBSTRING]
 *                   [--host PATH] [--baseline PATH]
 */
#define _GNU_SOURCE
#include "redis_server.h"

#include "store/redis/protocol.h"
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

/* The host programs a row runs: bench/fleet_host as built here, and the
 * same program built against the baseline's library (NULL: none). */
struct load_hosts {
    const char *now, *baseline;
};

/* What one row measured. */
struct load_result {
    double seconds;
    double cpu_us;      /* Redis CPU over the period, idle cost subtracted */
    double idle_us;     /* the idle cost subtracted */
    long long calls[4]; /* commands in the period: evalsha, eval, hmget, other (a
                           script's inner calls count as their commands) */
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

/* The scripts on one name whose window holds 10 buckets and whose
 * sequences hash holds `hosts` hosts: a flush that carries deltas, one that
 * carries none (what an open fleet's flush costs), a credit of one name
 * (a healthy name's successes), and the version read of a healthy round. */
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
    if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements < 2)
        die("flush: %s", r ? r->str : c->errstr);
    char gen[24];
    snprintf(gen, sizeof gen, "%lld", r->element[1]->integer);
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
    char sha[2][41];
    const char *text[2] = {breaker__redis_lua_flush, breaker__redis_lua_credit};
    for (int i = 0; i < 2; i++) {
        r = redisCommand(c, "SCRIPT LOAD %s", text[i]);
        snprintf(sha[i], sizeof sha[i], "%s", r->str);
        freeReplyObject(r);
    }
    redisFree(c);
    /* ARGV: known gen, calls, failures, slow, run, host, seq, sources (2),
     * directed wait. */
    const char *with[] = {"EVALSHA",          sha[0], "4", k[0], k[1], k[2], k[3],
                          "3600000",          limits, gen, "50", "0",  "0",  "0",
                          "00000000000000aa", "1",    "0", "0",  "0"};
    double deltas = usec_per_call(port, "evalsha", 19, with, 15, 500);
    const char *none[] = {"EVALSHA",          sha[0], "4", k[0], k[1], k[2], k[3],
                          "3600000",          limits, gen, "0",  "0",  "0",  "0",
                          "00000000000000aa", "1",    "0", "0",  "0"};
    double empty = usec_per_call(port, "evalsha", 19, none, 15, 500);
    /* A credit: the keys S and W, the TTL, then known gen, calls, µs since. */
    const char *credit[] = {"EVALSHA", sha[1], "2", k[0], k[1], "3600000", gen, "50", "250000"};
    double quick = usec_per_call(port, "evalsha", 9, credit, -1, 500);
    const char *read[] = {"HMGET", k[0], "gen", "cv", "run"};
    double hmget = usec_per_call(port, "hmget", 5, read, -1, 500);
    if (test_redis_hlen_check(port, k[3]) < hosts) die("the sequences hash lost hosts");
    printf("  %-34s %6d %10.2f %10.2f %10.2f %10.2f\n", "flush script, 10 buckets", hosts, deltas,
           empty, quick, hmget);
}

static long long test_redis_hlen_check(int port, const char *key) {
    redisContext *c = node_ctx(port);
    redisReply *r = redisCommand(c, "HLEN %s", key);
    long long n = r != NULL && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    if (r != NULL) freeReplyObject(r);
    redisFree(c);
    return n;
}

/* The limits text a host sends for a name attached with the defaults (the
 * scripts' ARGV 2), as the library formats it. */
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
    breaker_get_config(b, &cfg);
    breaker__fleet_limits_text(&cfg, out, len);
    breaker_redis_close(f);
}

/* ---- The hosts --------------------------------------------------------------- */

static pid_t kids[MAX_PROCS];
static int nkids;

static void stop_kids(void) {
    for (int i = 0; i < nkids; i++)
        kill(kids[i], SIGKILL);
    for (int i = 0; i < nkids; i++)
        waitpid(kids[i], NULL, 0);
    nkids = 0;
}

/* Start process `proc` of host `host` of `row` on `t`: `program`, as
 * fleet_host.c's usage says. */
static void start_host(const char *program, const struct load_target *t, const struct load_row *row,
                       int host) {
    if (nkids == MAX_PROCS) die("more than %d processes", MAX_PROCS);
    char port[16], names[16], store[512] = "-";
    snprintf(port, sizeof port, "%d", t->port[0]);
    snprintf(names, sizeof names, "%d", row->names);
    if (row->store_dir != NULL)
        snprintf(store, sizeof store, "%s/host%d.store", row->store_dir, host);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) die("fork: %s", strerror(errno));
    if (pid == 0) { /* copies: execv() takes char *const[] */
        char *argv[] = {strdup(program),
                        strdup(port),
                        strdup(names),
                        strdup(row->outage ? "outage" : "healthy"),
                        strdup(store),
                        strdup(t->cluster_seed != NULL ? t->cluster_seed : "-"),
                        NULL};
        execv(program, argv);
        fprintf(stderr, "fleet_load: %s: %s\n", program, strerror(errno));
        _exit(127);
    }
    kids[nkids++] = pid;
}

/* Whether a host process has gone (it could not open or attach: its
 * stderr says why). */
static int a_host_died(void) {
    for (int i = 0; i < nkids; i++)
        if (waitpid(kids[i], NULL, WNOHANG) == kids[i]) {
            kids[i] = kids[--nkids];
            return 1;
        }
    return 0;
}

/* ---- Measuring ---------------------------------------------------------------- */

static void measure_idle(const struct load_target *t, double seconds, double *us_per_s) {
    double c0 = target_cpu_us(t), t0 = mono_s();
    nap_ms((long)(seconds * 1000));
    double c1 = target_cpu_us(t), t1 = mono_s();
    *us_per_s = (c1 - c0) / (t1 - t0);
}

/* Measure `row` on `t` with the host program `program`: start its
 * processes, let them attach and settle (`warm` s: the outage rows trip,
 * and a healthy name's cadence reaches its steady state), measure
 * `seconds`, stop them. */
static void run_row(const struct load_target *t, const struct load_row *row, const char *program,
                    double warm, double seconds, double idle_us_per_s, struct load_result *out) {
    memset(out, 0, sizeof *out);
    for (int i = 0; i < t->nodes; i++) {
        node_command(t->port[i], "FLUSHALL");
        node_command(t->port[i], "SCRIPT FLUSH");
    }
    for (int h = 0; h < row->hosts; h++)
        for (int p = 0; p < row->procs; p++)
            start_host(program, t, row, h);
    nap_ms((long)(warm * 1000));
    for (int i = 0; i < t->nodes; i++)
        node_command(t->port[i], "CONFIG RESETSTAT");
    double each0[MAX_NODES], each1[MAX_NODES];
    double c0 = target_cpu_us_each(t, each0), t0 = mono_s();
    long long all0 = target_all_calls(t);
    nap_ms((long)(seconds * 1000));
    double c1 = target_cpu_us_each(t, each1), t1 = mono_s();
    if (a_host_died()) die("%s: a host process of %s exited", row->label, program);
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

static double hosts_per_core(const struct load_row *row, const struct load_result *r) {
    double per_host = r->cpu_us / r->seconds / row->hosts; /* µs of Redis CPU per host per s */
    return per_host > 0 ? 1e6 / per_host : 0;
}

/* `row` with each host program in turn (the baseline first in even rows,
 * second in odd ones, so that a drift of the machine's load favours
 * neither): the results, now's in r[0], the baseline's in r[1]. */
static void run_both(const struct load_target *t, const struct load_row *row,
                     const struct load_hosts *hosts, int order, double warm, double seconds,
                     double idle, struct load_result r[2]) {
    memset(&r[1], 0, sizeof r[1]);
    if (hosts->baseline != NULL && order % 2 == 0)
        run_row(t, row, hosts->baseline, warm, seconds, idle, &r[1]);
    run_row(t, row, hosts->now, warm, seconds, idle, &r[0]);
    if (hosts->baseline != NULL && order % 2 == 1)
        run_row(t, row, hosts->baseline, warm, seconds, idle, &r[1]);
}

static void print_header(void) {
    printf("  %-40s %5s %10s %10s %7s %10s %8s %8s %8s %8s\n", "row", "hosts", "base h/c",
           "hosts/core", "ratio", "us/host/s", "script/s", "hmget/s", "us/EVSH", "us/HMGET");
}

/* A row: hosts per core of now and of the baseline (r[1].seconds 0: none)
 * and their ratio; then now's detail. */
static void print_row(const struct load_row *row, const struct load_result r[2]) {
    const struct load_result *n = &r[0];
    double now = hosts_per_core(row, n);
    char base[16] = "-", ratio[16] = "-";
    if (r[1].seconds > 0) {
        double b = hosts_per_core(row, &r[1]);
        snprintf(base, sizeof base, "%.0f", b);
        if (b > 0) snprintf(ratio, sizeof ratio, "%.2fx", now / b);
    }
    double scripts = (double)(n->calls[0] + n->calls[1]) / n->seconds / row->hosts;
    double hmget = (double)n->calls[2] / n->seconds / row->hosts;
    printf("  %-40s %5d %10s %10.0f %7s %10.1f %8.1f %8.1f %8.2f %8.2f\n", row->label, row->hosts,
           base, now, ratio, n->cpu_us / n->seconds / row->hosts, scripts, hmget,
           n->evalsha_usec_per_call, n->hmget_usec_per_call);
    fflush(stdout);
}

/* A 3-master Redis Cluster against one node: the same hosts (1 process, 50
 * names), each handle routing its names to their masters (one pipeline per
 * master per round). Counted: the masters' CPU. Without replicas, the same
 * work as the one node; with a replica each, the masters also feed their
 * replicas (the replicas' own CPU is left out). What a Cluster serves is
 * bounded by its busiest master, each master being one core: 1 s / the
 * busiest master's CPU per host per second. */
static void cluster_rows(int replicas, int hosts, const struct load_hosts *programs, double warm,
                         double seconds, const char *only,
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
        struct load_result r[2];
        run_both(&t, &row[i], programs, i, warm, seconds, idle, r);
        print_row(&row[i], r);
        /* Each master's share (a third of the idle cost subtracted). */
        double busiest = 0;
        printf("    per master us/host/s:");
        for (int m = 0; m < 3; m++) {
            double us = (r[0].node_cpu_us[m] - r[0].idle_us / 3) / r[0].seconds / row[i].hosts;
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

/* The host program built next to this one: bench/fleet_host. */
static void host_next_to_me(char *out, size_t len) {
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) die("readlink /proc/self/exe: %s", strerror(errno));
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash != NULL) *slash = '\0';
    if ((size_t)snprintf(out, len, "%s/fleet_host", self) >= len) die("%s: too long", self);
}

int main(int argc, char **argv) {
    double seconds = 4, warm = 6;
    int hosts1 = 16, hosts8 = 2;
    const char *only = NULL;
    char here[4096 + 16];
    host_next_to_me(here, sizeof here);
    struct load_hosts programs = {.now = here, .baseline = NULL};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
            seconds = strtod(argv[++i], NULL);
        else if (strcmp(argv[i], "--warm") == 0 && i + 1 < argc)
            warm = strtod(argv[++i], NULL);
        else if (strcmp(argv[i], "--hosts") == 0 && i + 1 < argc)
            hosts1 = atoi(argv[++i]);
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = argv[++i];
        else if (strcmp(argv[i], "--host") == 0 && i + 1 < argc)
            programs.now = argv[++i];
        else if (strcmp(argv[i], "--baseline") == 0 && i + 1 < argc)
            programs.baseline = argv[++i];
        else
            die("usage: fleet_load [--seconds S] [--warm S] [--hosts H] [--only ROW-SUBSTRING] "
                "[--host PATH] [--baseline PATH]");
    }
    if (access(programs.now, X_OK) != 0) die("%s: %s", programs.now, strerror(errno));
    if (programs.baseline != NULL && access(programs.baseline, X_OK) != 0)
        die("%s: %s", programs.baseline, strerror(errno));
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
    printf("fleet load (issues 22, 34): real redis-server on loopback, default flush interval "
           "(250 ms), 50 names per host,\n  a call on every name every 20 ms; Redis CPU (INFO cpu) "
           "less its idle cost (%.0f us/s), per host per second;\n  hosts/core = 1 s / that; "
           "%.0f s measured after %.0f s. script/s, hmget/s: per host (a script's inner\n  calls "
           "included). Figures, not targets; the ratio of the two side by side is what to read.\n",
           idle, seconds, warm);
    if (programs.baseline != NULL)
        printf("  base h/c: the same hosts on the baseline's library (%s), measured alternately\n",
               programs.baseline);
    if (only == NULL || strstr("script cost", only) != NULL) {
        char limits[BREAKER__FLEET_LIMITS_LEN];
        default_limits(server.port, limits, sizeof limits);
        printf("  %-34s %6s %10s %10s %10s %10s\n", "Redis CPU per call (INFO commandstats)",
               "hosts", "us deltas", "us none", "us credit", "us read");
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
        {"8 processes/host, store file, healthy", hosts8, 8, 50, 0, store_dir},
        {"8 processes/host, store file, outage", hosts8, 8, 50, 1, store_dir},
        {"8 processes/host, healthy", hosts8, 8, 50, 0, NULL},
        {"8 processes/host, outage of every name", hosts8, 8, 50, 1, NULL},
    };
    double one_node[2] = {0, 0}; /* hosts per core: 1 process/host, healthy and outage */
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        if (only != NULL && strstr(rows[i].label, only) == NULL) continue;
        struct load_result r[2];
        run_both(&one, &rows[i], &programs, (int)i, warm, seconds, idle, r);
        print_row(&rows[i], r);
        if (i < 2) one_node[i] = hosts_per_core(&rows[i], &r[0]);
        for (int h = 0; h < hosts8; h++) { /* the next row's hosts start anew */
            char path[512];
            snprintf(path, sizeof path, "%s/host%d.store", store_dir, h);
            unlink(path);
        }
    }
    test_redis_stop(&server);
    rmdir(store_dir);
    for (int replicas = 0; replicas <= 1; replicas++)
        cluster_rows(replicas, hosts1, &programs, warm, seconds, only, one_node);
    return 0;
}
