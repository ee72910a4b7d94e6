/* SPDX-License-Identifier: MIT */
/*
 * test_fleet_host.c - one flusher per host (docs/fleet.md, "One flusher per
 * host"): processes that open the fleet with one store file
 * (breaker_redis_config.store) share one breaker per name, and one of them,
 * the holder of the host lease in the file, flushes for all, against a real
 * redis-server (redis_server.c) with the processes forked from the test.
 *
 *  - Redis sees one host: the sequences key of each name has one host
 *    field, and the Redis calls per second are those of one process (six
 *    processes without the file: six fields, six times the calls); the
 *    fleet's window holds exactly the calls the processes made;
 *  - the holder SIGKILLed: another process takes over well before the
 *    lease expires (its pid is gone), no call is lost or counted twice
 *    across the takeover, and a fleet trip made by another host still
 *    reaches every process;
 *  - the holder SIGSTOPped: its lease expires, another takes over, and the
 *    stopped one, resumed, finds it lost the lease and flushes no more;
 *  - two hosts (two files) of four processes: never more probes in flight
 *    than the fleet's one, every probe leased, every process closes.
 */
#define _GNU_SOURCE /* MAP_ANONYMOUS, mkdtemp, prctl */

#include <breaker.h>
#define BREAKER_BACKEND_EXPERIMENTAL /* breaker_permit_gate_token(): a probe's lease */
#include <breaker/backend.h>
#include <breaker/redis.h>
#include <breaker/store.h>

#include "fleet_probes.h"
#include "redis_server.h"

#include <hiredis/hiredis.h>

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#define MS       ((uint64_t)1000000)
#define MAXPROC  8
#define MAXNAMES 10

static void nap_ms(long ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* What the processes share (an anonymous shared mapping). */
struct proc_view {
    _Atomic int pid, flusher, state0, stopped;
    _Atomic uint64_t takeovers, flushes, rebaselines;
    _Atomic int calls[MAXNAMES]; /* completed calls, by name */
};

struct host_shared {
    _Atomic int ready, stop;
    _Atomic int burst;     /* each process makes `burst_calls` calls per name, then sets done */
    _Atomic int burst_seq; /* bumped by the parent for each burst */
    _Atomic int burst_done[MAXPROC];
    int burst_calls;
    /* The probe-cap run: the dependency's counts, and the processes'. */
    struct fleet_probe_counts dep;
    _Atomic int closed_procs, reopened, final_closed, degraded_procs;
    struct proc_view p[MAXPROC];
};

static struct host_shared *sh;

/* A run's setup, the same in every child. */
struct setup {
    const struct test_redis *r;
    int procs, names;
    int use_store;
    char store_path[2][512]; /* host h of process i: i % hosts */
    int hosts;
    uint64_t interval_ns, io_ns;
    int probe_run;              /* the probe-cap run (fleet_probes.h) */
    unsigned names_of[MAXPROC]; /* the names process i attaches (bit per name), 0: all */
};

static int wait_until(int (*cond)(void *), void *ctx, int timeout_ms) {
    for (int i = 0; i < timeout_ms; i++) {
        if (cond(ctx)) return 1;
        nap_ms(1);
    }
    return cond(ctx);
}

static void name_of(int i, char *out, size_t len) { snprintf(out, len, "host.svc%d", i); }

/* Window limits that never trip on successes and keep every bucket of a
 * test's run: the window's calls are the calls flushed. */
static void count_cfg(breaker_config *c) {
    breaker_config_init(c);
    c->trip = BREAKER_TRIP_TIME_WINDOW;
    c->window_ns = 60000 * MS;
    c->window_buckets = 60;
    c->min_calls = 20;
    c->failure_rate = 0.5;
    c->open_ns = c->open_max_ns = 60000 * MS;
    c->open_jitter = 0;
    c->seed = 3;
}

static void say_degraded(void *ctx, int degraded, const char *why) {
    (void)ctx;
    if (degraded) fprintf(stderr, "process %d: degraded: %s\n", (int)getpid(), why);
}

static _Atomic int seen_closed;

static void on_transition(void *ctx, breaker *b, const breaker_event *ev) {
    (void)ctx;
    (void)b;
    if (atomic_load(&seen_closed) && ev->to != BREAKER_CLOSED) atomic_fetch_add(&sh->reopened, 1);
}

static void publish(int me, breaker_redis *f, breaker **b) {
    breaker_redis_stats st;
    breaker_redis_stats_get(f, &st);
    struct proc_view *v = &sh->p[me];
    atomic_store(&v->flusher, st.host_flusher);
    atomic_store(&v->takeovers, st.host_takeovers);
    atomic_store(&v->flushes, st.flushes);
    atomic_store(&v->rebaselines, st.host_rebaselines);
    if (b[0] != NULL) atomic_store(&v->state0, (int)breaker_get_state(b[0]));
}

/* One process of the run. @return its exit status (0: fine). */
static int child(const struct setup *s, int me) {
    breaker_store *st = NULL;
    char msg[256] = "";
    if (s->use_store) {
        breaker_store_config sc;
        breaker_store_config_init(&sc);
        if (breaker_store_open(s->store_path[me % s->hosts], &sc, &st, msg, sizeof msg) !=
            BREAKER_OK) {
            fprintf(stderr, "store: %s\n", msg);
            return 2;
        }
    }
    breaker_redis_config rc;
    breaker_redis_config_init(&rc);
    rc.port = s->r->port;
    rc.flush_interval_ns = s->interval_ns;
    rc.io_timeout_ns = s->io_ns;
    rc.probe_budget_ns = 500 * MS;
    rc.on_degraded = say_degraded;
    rc.store = st;
    breaker_redis *f = NULL;
    if (breaker_redis_open(&rc, &f, msg, sizeof msg) != BREAKER_OK) {
        fprintf(stderr, "open: %s\n", msg);
        return 3;
    }
    breaker_config cfg;
    if (s->probe_run)
        fleet_probe_cfg(&cfg);
    else
        count_cfg(&cfg);
    cfg.on_event = s->probe_run ? on_transition : NULL;
    breaker *b[MAXNAMES] = {NULL};
    for (int i = 0; i < s->names; i++) {
        if (s->names_of[me] != 0 && !(s->names_of[me] & (1u << i))) continue;
        char name[64];
        name_of(i, name, sizeof name);
        int arc = breaker_redis_attach(f, name, &cfg, &b[i], msg, sizeof msg);
        if (arc != BREAKER_OK && arc != BREAKER_CONFIG_DIFFERS) {
            fprintf(stderr, "attach: %s\n", msg);
            return 4;
        }
    }
    atomic_store(&sh->p[me].pid, (int)getpid());
    publish(me, f, b);
    atomic_fetch_add(&sh->ready, 1);
    int bursts = 0, counted_closed = 0;
    while (!atomic_load(&sh->stop)) {
        if (s->probe_run) {
            breaker_permit p;
            if (breaker_acquire(b[0], &p) == BREAKER_OK) {
                int probe = breaker_permit_is_probe(&p);
                enum breaker_outcome out =
                    fleet_probe_dependency(&sh->dep, probe, breaker_permit_gate_token(&p) != 0);
                (void)breaker_complete(b[0], &p, out);
            }
            if (atomic_load(&sh->dep.healthy) && !counted_closed &&
                breaker_get_state(b[0]) == BREAKER_CLOSED) {
                counted_closed = 1;
                atomic_store(&seen_closed, 1);
                atomic_fetch_add(&sh->closed_procs, 1);
            }
            nap_ms(2);
        } else if (atomic_load(&sh->burst_seq) > bursts) {
            bursts = atomic_load(&sh->burst_seq);
            for (int k = 0; k < sh->burst_calls; k++)
                for (int i = 0; i < s->names; i++) {
                    breaker_permit p;
                    if (b[i] == NULL || breaker_acquire(b[i], &p) != BREAKER_OK) continue;
                    if (breaker_complete(b[i], &p, BREAKER_SUCCESS) == BREAKER_OK)
                        atomic_fetch_add(&sh->p[me].calls[i], 1);
                }
            atomic_store(&sh->burst_done[me], bursts);
        } else {
            nap_ms(1);
        }
        publish(me, f, b);
    }
    breaker_redis_stats rs;
    breaker_redis_stats_get(f, &rs);
    if (rs.degraded_entered > 0) atomic_fetch_add(&sh->degraded_procs, 1);
    if (s->probe_run && breaker_get_state(b[0]) == BREAKER_CLOSED)
        atomic_fetch_add(&sh->final_closed, 1);
    breaker_redis_close(f); /* the last flush: the holder's, or a takeover's */
    breaker_store_close(st);
    return 0;
}

/* ---- The parent's side -------------------------------------------------------- */

struct run {
    struct setup s;
    struct test_redis r;
    char dir[256];
    pid_t pids[MAXPROC];
};

static void run_start_with(struct run *run, int procs, int names, int use_store, int hosts,
                           uint64_t interval_ns, uint64_t io_ns, int probe_run,
                           const unsigned *names_of) {
    memset(run, 0, sizeof *run);
    assert_int_equal(test_redis_start(&run->r), 0);
    snprintf(run->dir, sizeof run->dir, "/tmp/breaker-host-XXXXXX");
    assert_non_null(mkdtemp(run->dir));
    struct setup *s = &run->s;
    s->r = &run->r;
    s->procs = procs;
    s->names = names;
    s->use_store = use_store;
    s->hosts = hosts;
    for (int h = 0; h < hosts; h++)
        snprintf(s->store_path[h], sizeof s->store_path[h], "%s/host%d.store", run->dir, h);
    s->interval_ns = interval_ns;
    s->io_ns = io_ns;
    s->probe_run = probe_run;
    for (int i = 0; i < procs && names_of != NULL; i++)
        s->names_of[i] = names_of[i];
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(sh != MAP_FAILED);
    memset(sh, 0, sizeof *sh);
    for (int i = 0; i < procs; i++) {
        run->pids[i] = fork();
        assert_true(run->pids[i] >= 0);
        if (run->pids[i] == 0) {
            /* A failed assertion leaves the parent's test early: the
             * children must not outlive the test binary. */
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            int rc = child(s, i);
            if (rc != 0) fprintf(stderr, "process %d: failed at step %d\n", i, rc);
            _exit(rc);
        }
    }
    for (int i = 0; i < 20000 && atomic_load(&sh->ready) < procs; i++)
        nap_ms(1);
    assert_int_equal(atomic_load(&sh->ready), procs);
}

static void run_start(struct run *run, int procs, int names, int use_store, int hosts,
                      uint64_t interval_ns, uint64_t io_ns, int probe_run) {
    run_start_with(run, procs, names, use_store, hosts, interval_ns, io_ns, probe_run, NULL);
}

/* Stop every process still running (`gone`: killed already) and reap. @return
 * the number that failed. */
static int run_stop(struct run *run, int gone) {
    atomic_store(&sh->stop, 1);
    int failed = 0;
    for (int i = 0; i < run->s.procs; i++) {
        int st = 0;
        while (waitpid(run->pids[i], &st, 0) < 0) {
        }
        if (i != gone && (!WIFEXITED(st) || WEXITSTATUS(st) != 0)) failed++;
    }
    return failed;
}

static void run_cleanup(struct run *run) {
    test_redis_stop(&run->r);
    for (int h = 0; h < run->s.hosts; h++)
        unlink(run->s.store_path[h]);
    rmdir(run->dir);
    munmap(sh, sizeof *sh);
}

/* One burst of `calls` calls per name in every live process (not `gone`). */
static int burst_done_all(void *ctx) {
    const int *gone_seq = ctx; /* {gone, seq, procs} */
    for (int i = 0; i < gone_seq[2]; i++)
        if (i != gone_seq[0] && atomic_load(&sh->burst_done[i]) < gone_seq[1]) return 0;
    return 1;
}

static void burst(struct run *run, int calls, int gone) {
    sh->burst_calls = calls;
    int seq = atomic_fetch_add(&sh->burst_seq, 1) + 1;
    int ctx[3] = {gone, seq, run->s.procs};
    assert_true(wait_until(burst_done_all, ctx, 20000));
}

static long long calls_made(const struct run *run, int name) {
    long long n = 0;
    for (int i = 0; i < run->s.procs; i++)
        n += atomic_load(&sh->p[i].calls[name]);
    return n;
}

/* The fleet window's calls of `name` (the c<bucket> fields), or -1. */
static long long window_calls(const struct run *run, int name) {
    redisContext *c = redisConnect("127.0.0.1", run->r.port);
    if (c == NULL || c->err) return -1;
    char n[64];
    name_of(name, n, sizeof n);
    redisReply *r = redisCommand(c, "HGETALL breaker:v1:{%s}:w", n);
    long long sum = -1;
    if (r != NULL && r->type == REDIS_REPLY_ARRAY) {
        sum = 0;
        for (size_t i = 0; i + 1 < r->elements; i += 2)
            if (r->element[i]->str[0] == 'c') sum += strtoll(r->element[i + 1]->str, NULL, 10);
    }
    if (r != NULL) freeReplyObject(r);
    redisFree(c);
    return sum;
}

static long long hosts_in_q(const struct run *run, int name) {
    char n[64];
    name_of(name, n, sizeof n);
    return test_redis_int(&run->r, "HLEN breaker:v1:{%s}:q", n);
}

/* What the flushers make Redis run: scripts, and the state reads of healthy
 * names (HMGET, with a TIME per round). */
static long long script_calls(const struct run *run) {
    return test_redis_cmdstat(&run->r, "evalsha") + test_redis_cmdstat(&run->r, "eval") +
           test_redis_cmdstat(&run->r, "hmget") + test_redis_cmdstat(&run->r, "time");
}

/* The process that flushes now, or -1 (none, or more than one). */
static int the_flusher(const struct run *run, int gone) {
    int who = -1;
    for (int i = 0; i < run->s.procs; i++) {
        if (i == gone || !atomic_load(&sh->p[i].flusher)) continue;
        if (who >= 0) return -1;
        who = i;
    }
    return who;
}

struct flusher_wait {
    const struct run *run;
    int gone, not ;
};

static int a_flusher_other_than(void *ctx) {
    const struct flusher_wait *w = ctx;
    int who = the_flusher(w->run, w->gone);
    return who >= 0 && who != w->not ;
}

/* ---- The tests ------------------------------------------------------------------ */

/* The processes that flush names for the host now (a lease per name: the
 * names may be spread over several). */
static int flushing_procs(const struct run *run) {
    int n = 0;
    for (int i = 0; i < run->s.procs; i++)
        n += atomic_load(&sh->p[i].flusher) > 0;
    return n;
}

/* Script calls per second over one second, the most processes that flushed
 * names meanwhile, and the sequences key's hosts, with `use_store` 1 (one
 * file) or 0 (each process its own flusher). */
static void measure(int use_store, long long *per_s, int *flushers, long long *q_hosts,
                    int *exact) {
    struct run run;
    enum { PROCS = 6, NAMES = 10 };
    run_start(&run, PROCS, NAMES, use_store, 1, 50 * MS, 1000 * MS, 0);
    burst(&run, 20, -1);
    nap_ms(300); /* every process has made its first rounds */
    long long before = script_calls(&run);
    int at_start = flushing_procs(&run);
    uint64_t t0 = now_ns();
    nap_ms(1000);
    long long after = script_calls(&run);
    int at_end = flushing_procs(&run);
    *flushers = at_start > at_end ? at_start : at_end;
    uint64_t dt = now_ns() - t0;
    *per_s = (long long)((double)(after - before) * 1e9 / (double)dt);
    burst(&run, 20, -1);
    assert_int_equal(run_stop(&run, -1), 0);
    *q_hosts = hosts_in_q(&run, 0);
    *exact = 1;
    for (int i = 0; i < NAMES; i++) {
        long long made = calls_made(&run, i), seen = window_calls(&run, i);
        if (made != seen) {
            fprintf(stderr, "name %d: %lld calls made, %lld in the fleet's window\n", i, made,
                    seen);
            *exact = 0;
        }
    }
    run_cleanup(&run);
}

static void one_host_of_six_processes_flushes_as_one(void **state) {
    (void)state;
    long long shared_per_s = 0, own_per_s = 0, shared_q = 0, own_q = 0;
    int shared_exact = 0, own_exact = 0, shared_flushers = 0, own_flushers = 0;
    measure(1, &shared_per_s, &shared_flushers, &shared_q, &shared_exact);
    measure(0, &own_per_s, &own_flushers, &own_q, &own_exact);
    printf("6 processes x 10 names, flush 50 ms: Redis calls/s (scripts and reads) %lld with one "
           "store file (names flushed by %d of the processes), "
           "%lld without; hosts in the sequences key %lld and %lld\n",
           shared_per_s, shared_flushers, own_per_s, shared_q, own_q);
    assert_int_equal(shared_q, 1);
    assert_int_equal(own_q, 6);
    assert_true(shared_exact);
    assert_true(own_exact);
    /* One flusher: about 10 names x 20 rounds/s; six flushers: six times. */
    assert_true(shared_per_s * 3 < own_per_s);
    /* At most one call per name and round, and a TIME per round of each
     * process that flushes names (a lease per name: the first rounds may
     * share them out; one process holding all is 11 calls a round). */
    assert_true(shared_flushers >= 1);
    assert_true(shared_per_s <= (10 + shared_flushers) * 1000 / 40 + 20);
}

/* Processes that attach different names (registries open names on demand):
 * every name is flushed, by a process that has it. */
static void every_name_is_flushed_whichever_processes_attach_it(void **state) {
    (void)state;
    struct run run;
    /* Process 2 has every name: the others' leases are held by two other
     * processes, whose liveness its round checks under the host lock. */
    static const unsigned names_of[] = {1u << 0, 1u << 1, 1u << 0 | 1u << 1 | 1u << 2};
    run_start_with(&run, 3, 3, 1, 1, 50 * MS, 1000 * MS, 0, names_of);
    burst(&run, 30, -1);
    nap_ms(200);
    burst(&run, 30, -1);
    assert_int_equal(run_stop(&run, -1), 0);
    long long made[3], seen[3], q[3];
    for (int i = 0; i < 3; i++) {
        made[i] = calls_made(&run, i);
        seen[i] = window_calls(&run, i);
        q[i] = hosts_in_q(&run, i);
    }
    printf("names attached by 2, 2 and 1 of 3 processes: calls made %lld %lld %lld, in the "
           "fleet's windows %lld %lld %lld, hosts in the sequences keys %lld %lld %lld\n",
           made[0], made[1], made[2], seen[0], seen[1], seen[2], q[0], q[1], q[2]);
    run_cleanup(&run);
    for (int i = 0; i < 3; i++) {
        assert_true(made[i] > 0);
        assert_int_equal(seen[i], made[i]);
        assert_int_equal(q[i], 1);
    }
}

/* A fleet handle in the test's own process (`st`: through that store
 * file, NULL: its own flusher) with name 0 attached in `*b`. */
static breaker_redis *parent_fleet(const struct run *run, breaker_store *st, uint64_t iv,
                                   uint64_t io, breaker **b) {
    breaker_redis_config rc;
    breaker_redis_config_init(&rc);
    rc.port = run->r.port;
    rc.flush_interval_ns = iv;
    rc.io_timeout_ns = io;
    rc.store = st;
    breaker_redis *f = NULL;
    assert_int_equal(breaker_redis_open(&rc, &f, NULL, 0), BREAKER_OK);
    breaker_config cfg;
    count_cfg(&cfg);
    char name[64];
    name_of(0, name, sizeof name);
    int arc = breaker_redis_attach(f, name, &cfg, b, NULL, 0);
    assert_true(arc == BREAKER_OK || arc == BREAKER_CONFIG_DIFFERS);
    return f;
}

/* The host words of a name, as src/store/redis/host.c lays them out (the
 * indices this test damages). */
enum { HW_SUCC = 2, HW_HOLDER = 11, HW_PROC = 12, HW_EXPIRES = 13 };

static void damage_words(breaker_store *st, const char *name, int index, uint64_t value) {
    uint64_t w[BREAKER_STORE_HOST_WORDS];
    assert_int_equal(breaker_store_host_lock(st), BREAKER_OK);
    assert_int_equal(breaker_store_host_words(st, name, w, 0), BREAKER_OK);
    w[index] = value;
    assert_int_equal(breaker_store_host_words(st, name, w, 1), BREAKER_OK);
    breaker_store_host_unlock(st);
}

static void calls(breaker *b, int n) {
    for (int i = 0; i < n; i++) {
        breaker_permit p;
        assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
        assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_OK);
    }
}

/* What a damaged file holds is input: a baseline above the counters is not
 * sent as a delta (it would be a huge negative one), and a lease that
 * would never expire held by nobody known is taken over. */
static void damaged_host_words_are_not_trusted(void **state) {
    (void)state;
    struct run run;
    memset(&run, 0, sizeof run);
    assert_int_equal(test_redis_start(&run.r), 0);
    snprintf(run.dir, sizeof run.dir, "/tmp/breaker-host-XXXXXX");
    assert_non_null(mkdtemp(run.dir));
    char path[512];
    snprintf(path, sizeof path, "%s/host.store", run.dir);
    breaker_store *st = NULL;
    assert_int_equal(breaker_store_open(path, NULL, &st, NULL, 0), BREAKER_OK);
    breaker *b = NULL;
    /* Rounds by breaker_redis_flush() only. */
    breaker_redis *f = parent_fleet(&run, st, 3600000 * MS, 1000 * MS, &b);
    char name[64];
    name_of(0, name, sizeof name);
    calls(b, 10);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    long long first = window_calls(&run, 0);
    /* A baseline of more successes than the breaker ever counted. */
    damage_words(st, name, HW_SUCC, UINT64_C(1) << 40);
    calls(b, 5);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    breaker_redis_stats rs;
    breaker_redis_stats_get(f, &rs);
    long long after_damage = window_calls(&run, 0);
    uint64_t rebaselines = rs.host_rebaselines;
    calls(b, 7);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    long long after_more = window_calls(&run, 0);
    /* Another holder, unknown (no process word), whose lease never ends. */
    damage_words(st, name, HW_PROC, 0);
    damage_words(st, name, HW_HOLDER, 12345);
    damage_words(st, name, HW_EXPIRES, UINT64_MAX);
    uint64_t takeovers = rs.host_takeovers;
    calls(b, 3);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    breaker_redis_stats_get(f, &rs);
    long long after_lease = window_calls(&run, 0);
    printf("damaged host words: window %lld after 10 calls, %lld after 5 more under a baseline "
           "above the counters (rebaselines %llu), %lld after 7 more, %lld after 3 more under a "
           "lease that never expires (takeovers %llu -> %llu)\n",
           first, after_damage, (unsigned long long)rebaselines, after_more, after_lease,
           (unsigned long long)takeovers, (unsigned long long)rs.host_takeovers);
    breaker_redis_close(f);
    breaker_store_close(st);
    unlink(path);
    rmdir(run.dir);
    test_redis_stop(&run.r);
    assert_int_equal(first, 10);
    assert_int_equal(rebaselines, 1);
    assert_int_equal(after_damage, 10); /* the 5 calls of the distrusted baseline: lost */
    assert_int_equal(after_more, 17);
    assert_int_equal(rs.host_takeovers, takeovers + 1);
    assert_int_equal(after_lease, 20);
}

static void a_killed_flusher_is_replaced_and_loses_no_counts(void **state) {
    (void)state;
    struct run run;
    enum { PROCS = 4, NAMES = 3 };
    uint64_t iv = 100 * MS, io = 500 * MS; /* the lease: 2 x (100 + 500) = 1.2 s */
    run_start(&run, PROCS, NAMES, 1, 1, iv, io, 0);
    burst(&run, 50, -1);
    struct flusher_wait w = {.run = &run, .gone = -1, .not = -1};
    assert_true(wait_until(a_flusher_other_than, &w, 5000));
    int holder = the_flusher(&run, -1);
    assert_true(holder >= 0);
    /* Everything flushed before the kill: the window holds every call. */
    for (int i = 0; i < 3000 && window_calls(&run, 1) != calls_made(&run, 1); i++)
        nap_ms(1);
    assert_int_equal(window_calls(&run, 1), calls_made(&run, 1));
    uint64_t t_kill = now_ns();
    kill(run.pids[holder], SIGKILL); /* not reaped yet: a zombie is dead too */
    /* Calls made before anyone took over: counted by the next holder. */
    burst(&run, 30, holder);
    w.gone = holder;
    w.not = holder;
    assert_true(wait_until(a_flusher_other_than, &w, 10000));
    uint64_t took_ms = (now_ns() - t_kill) / MS;
    int next = the_flusher(&run, holder);
    /* Another host (this process, its own flusher) trips the fleet. */
    breaker *b = NULL;
    breaker_redis *f = parent_fleet(&run, NULL, iv, io, &b);
    char name[64];
    name_of(0, name, sizeof name);
    for (int i = 0; i < 400; i++) { /* failures: 400 of the window's 400 + 290 calls */
        breaker_permit p;
        if (breaker_acquire(b, &p) == BREAKER_OK) (void)breaker_complete(b, &p, BREAKER_FAILURE);
        if (breaker_get_state(b) != BREAKER_CLOSED) breaker_reset(b); /* its own trips */
    }
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    long long trips = test_redis_int(&run.r, "HGET breaker:v1:{%s}:s trips", name);
    uint64_t t_trip = now_ns();
    int all_open = 0;
    for (int k = 0; k < 10000 && !all_open; k++) {
        all_open = 1;
        for (int i = 0; i < PROCS; i++)
            if (i != holder && atomic_load(&sh->p[i].state0) != BREAKER_OPEN) all_open = 0;
        if (!all_open) nap_ms(1);
    }
    uint64_t reach_ms = (now_ns() - t_trip) / MS;
    breaker_redis_close(f);
    assert_int_equal(run_stop(&run, holder), 0);
    long long made = calls_made(&run, 1), seen = window_calls(&run, 1);
    printf("holder SIGKILLed: process %d took over after %llu ms (flush 100 ms, lease 1.2 s); "
           "the fleet's trip (trips %lld) reached the %d others within %llu ms; name 1: %lld "
           "calls made, %lld in the fleet's window\n",
           next, (unsigned long long)took_ms, trips, PROCS - 1, (unsigned long long)reach_ms, made,
           seen);
    run_cleanup(&run);
    assert_true(took_ms < 1000); /* the pid, not the lease's expiry */
    assert_int_equal(trips, 1);
    assert_true(all_open);
    assert_int_equal(made, seen); /* none lost, none counted twice */
}

static void a_stopped_flusher_loses_its_lease_and_stops_flushing(void **state) {
    (void)state;
    struct run run;
    enum { PROCS = 3, NAMES = 2 };
    uint64_t iv = 50 * MS, io = 100 * MS; /* the lease: 300 ms */
    run_start(&run, PROCS, NAMES, 1, 1, iv, io, 0);
    burst(&run, 40, -1);
    struct flusher_wait w = {.run = &run, .gone = -1, .not = -1};
    assert_true(wait_until(a_flusher_other_than, &w, 5000));
    int holder = the_flusher(&run, -1);
    for (int i = 0; i < 3000 && window_calls(&run, 0) != calls_made(&run, 0); i++)
        nap_ms(1);
    uint64_t t_stop = now_ns();
    kill(run.pids[holder], SIGSTOP);
    w.gone = holder;
    w.not = holder;
    assert_true(wait_until(a_flusher_other_than, &w, 10000));
    uint64_t took_ms = (now_ns() - t_stop) / MS;
    int next = the_flusher(&run, holder);
    burst(&run, 40, holder); /* while it is stopped: counted by the next holder */
    kill(run.pids[holder], SIGCONT);
    /* Resumed: its next round finds the lease another's. */
    int noticed = 0;
    for (int i = 0; i < 5000 && !noticed; i++) {
        noticed = atomic_load(&sh->p[holder].flusher) == 0;
        if (!noticed) nap_ms(1);
    }
    nap_ms(200);
    long long before = script_calls(&run);
    uint64_t flushes_before = atomic_load(&sh->p[holder].flushes);
    nap_ms(1000);
    long long per_s = script_calls(&run) - before;
    uint64_t resumed_flushes = atomic_load(&sh->p[holder].flushes) - flushes_before;
    burst(&run, 40, -1);
    assert_int_equal(run_stop(&run, -1), 0);
    long long made = calls_made(&run, 0), seen = window_calls(&run, 0);
    printf("holder SIGSTOPped: process %d took over after %llu ms (lease 300 ms, flush 50 ms); "
           "resumed, it noticed: %d, flush rounds of its own in the next second %llu; Redis "
           "calls in that second %lld; name 0: %lld calls made, %lld in the window\n",
           next, (unsigned long long)took_ms, noticed, (unsigned long long)resumed_flushes, per_s,
           made, seen);
    run_cleanup(&run);
    assert_true(noticed);
    assert_int_equal(resumed_flushes, 0);
    assert_true(per_s <=
                3 * 1000 / 40 + 10); /* one flusher's: two names and a TIME, <= 25 rounds/s */
    assert_int_equal(made, seen);
}

static void two_hosts_of_four_processes_keep_the_fleets_probe_cap(void **state) {
    (void)state;
    struct run run;
    enum { PROCS = 8 };
    run_start(&run, PROCS, 1, 1, 2, 50 * MS, 2000 * MS, 1);
    nap_ms(2000); /* the outage: a dozen recovery rounds */
    atomic_store(&sh->dep.healthy, 1);
    for (int i = 0; i < 20000 && atomic_load(&sh->closed_procs) < PROCS; i++)
        nap_ms(1);
    int all_closed = atomic_load(&sh->closed_procs) == PROCS;
    nap_ms(1000);
    assert_int_equal(run_stop(&run, -1), 0);
    long long transitions = test_redis_int(&run.r, "HGET breaker:v1:{host.svc0}:s transitions");
    long long fleet_state = test_redis_int(&run.r, "HGET breaker:v1:{host.svc0}:s st");
    long long q = hosts_in_q(&run, 0);
    printf("2 hosts x 4 processes, half_open_max_probes 1: max probes in flight %d, probes %d "
           "(unleased %d), fleet transitions %lld, hosts in the sequences key %lld; after "
           "recovery: %d processes closed, %d reopenings, %d closed at the end\n",
           atomic_load(&sh->dep.max_in_flight), atomic_load(&sh->dep.probes),
           atomic_load(&sh->dep.unleased), transitions, q, atomic_load(&sh->closed_procs),
           atomic_load(&sh->reopened), atomic_load(&sh->final_closed));
    assert_int_equal(atomic_load(&sh->degraded_procs), 0);
    assert_int_equal(atomic_load(&sh->dep.max_in_flight), 1);
    assert_true(atomic_load(&sh->dep.probes) >= 2);
    assert_int_equal(atomic_load(&sh->dep.unleased), 0);
    assert_true(all_closed);
    assert_int_equal(atomic_load(&sh->reopened), 0);
    assert_int_equal(atomic_load(&sh->final_closed), PROCS);
    assert_int_equal(fleet_state, 0);
    assert_int_equal(q, 2);
    run_cleanup(&run);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_host_of_six_processes_flushes_as_one),
        cmocka_unit_test(every_name_is_flushed_whichever_processes_attach_it),
        cmocka_unit_test(damaged_host_words_are_not_trusted),
        cmocka_unit_test(a_killed_flusher_is_replaced_and_loses_no_counts),
        cmocka_unit_test(a_stopped_flusher_loses_its_lease_and_stops_flushing),
        cmocka_unit_test(two_hosts_of_four_processes_keep_the_fleets_probe_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
