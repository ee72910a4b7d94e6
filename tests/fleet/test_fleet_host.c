/* SPDX-License-Identifier: MIT */
/*
 * test_fleet_host.c - one flusher per host (docs/fleet.md, "One flusher per
 * host"): processes that open the fleet with one store file
 * (breaker_redis_config.store) share one breaker per name, and for each
 * name one of them, the holder of the name's kernel lock on the file,
 * flushes for all, against a real redis-server (redis_server.c) with the
 * processes forked from the test.
 *
 *  - Redis sees one host: the sequences key of each name has one host
 *    field, and the Redis calls per second are those of one process (six
 *    processes without the file: six fields, six times the calls); the
 *    fleet's window holds exactly the calls the processes made;
 *  - the holder SIGKILLed: the kernel frees its locks, another process
 *    takes the names at its next round, no call is lost or counted twice
 *    across the takeover, and a fleet trip made by another host still
 *    reaches every process;
 *  - the holder SIGSTOPped: it keeps its names; the others go degraded
 *    (their holder's view too old) until it resumes, and nothing counted
 *    meanwhile is lost;
 *  - a handle closed, a holder killed, a store file moved: the locks go
 *    with them, round by round (rounds run by the test);
 *  - two hosts (two files) of four processes: never more probes in flight
 *    than the fleet's one, every probe leased, every process closes; a
 *    host whose store file is unlinked too.
 */
#define _GNU_SOURCE /* MAP_ANONYMOUS, mkdtemp, prctl */

#include <breaker.h>
#define BREAKER_BACKEND_EXPERIMENTAL /* breaker_permit_gate_token(): a probe's lease */
#include <breaker/backend.h>
#include <breaker/redis.h>
#include <breaker/store.h>

#include "fleet_probes.h"
#include "redis_server.h"
#include "store/file/host.h" /* the words a damaged file holds; who holds a name */

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
    _Atomic int pid, flusher, state0, stopped, degraded;
    _Atomic uint64_t takeovers, flushes, rebaselines, outside_trips, store_moves;
    _Atomic int refused_healthy; /* calls refused while the dependency is healthy */
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
    uint64_t check_ns;          /* the store's check_ns (0: its default) */
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

static void publish(int me, breaker_redis *f, breaker_store *store, breaker **b) {
    breaker_redis_stats st;
    breaker_redis_stats_get(f, &st);
    struct proc_view *v = &sh->p[me];
    atomic_store(&v->flusher, st.host_flusher);
    atomic_store(&v->degraded, breaker_redis_degraded(f));
    atomic_store(&v->takeovers, st.host_takeovers);
    atomic_store(&v->flushes, st.flushes);
    atomic_store(&v->rebaselines, st.host_rebaselines);
    atomic_store(&v->outside_trips, st.outside_trips);
    if (store != NULL) {
        breaker_store_stats ss;
        breaker_store_stats_get(store, &ss);
        atomic_store(&v->store_moves, ss.moves);
    }
    if (b[0] != NULL) atomic_store(&v->state0, (int)breaker_get_state(b[0]));
}

/* One process of the run. @return its exit status (0: fine). */
static int child(const struct setup *s, int me) {
    breaker_store *st = NULL;
    char msg[256] = "";
    if (s->use_store) {
        breaker_store_config sc;
        breaker_store_config_init(&sc);
        if (s->check_ns != 0) sc.check_ns = s->check_ns;
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
    publish(me, f, st, b);
    atomic_fetch_add(&sh->ready, 1);
    int bursts = 0, counted_closed = 0;
    while (!atomic_load(&sh->stop)) {
        if (s->probe_run) {
            breaker_permit p;
            int healthy = atomic_load(&sh->dep.healthy);
            if (breaker_acquire(b[0], &p) != BREAKER_OK) {
                if (healthy) atomic_fetch_add(&sh->p[me].refused_healthy, 1);
            } else {
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
        publish(me, f, st, b);
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

/* The store's check_ns for the next run only (0: its default). */
static uint64_t next_check_ns;

static void run_start_with(struct run *run, int procs, int names, int use_store, int hosts,
                           uint64_t interval_ns, uint64_t io_ns, int probe_run,
                           const unsigned *names_of) {
    memset(run, 0, sizeof *run);
    run->s.check_ns = next_check_ns;
    next_check_ns = 0;
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
    redisReply *r = redisCommand(c, "HGETALL breaker:v2:{%s}:w", n);
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
    return test_redis_int(&run->r, "HLEN breaker:v2:{%s}:q", n);
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
enum { HW_CTRL = 0, HW_SUCC = 2 };

/* A host lock of the test's own on `st`'s file, and `name`'s slot there. */
static breaker__host_lock *test_lock(breaker_store *st, const char *name, uint32_t *slot) {
    breaker__host_lock *l = NULL;
    char msg[256] = "";
    if (breaker__host_lock_open(st, &l, msg, sizeof msg) != BREAKER_OK) fail_msg("lock: %s", msg);
    assert_int_equal(breaker__host_lock_find(l, name, slot), BREAKER_OK);
    return l;
}

/* Whether any host lock holds `name` in `st`'s file now. */
static int name_held(breaker_store *st, const char *name) {
    uint32_t slot = 0;
    breaker__host_lock *l = test_lock(st, name, &slot);
    int held = !breaker__host_lock_free(l, slot);
    breaker__host_lock_close(l);
    return held;
}

static void damage_words(breaker_store *st, const char *name, int index, uint64_t value) {
    uint32_t slot = 0;
    breaker__host_lock *l = test_lock(st, name, &slot);
    uint64_t w[BREAKER__HOST_WORDS];
    breaker__host_lock_words(l, slot, w, 0);
    w[index] = value;
    breaker__host_lock_words(l, slot, w, 1);
    breaker__host_lock_close(l);
}

static void calls(breaker *b, int n) {
    for (int i = 0; i < n; i++) {
        breaker_permit p;
        assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
        assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_OK);
    }
}

/* A redis-server and a store file in a new directory, for the tests whose
 * rounds the test runs itself (breaker_redis_flush()). */
struct quiet {
    struct test_redis r;
    char dir[256], path[512];
    breaker_store *st;
    char name[64]; /* name 0's */
};

static void quiet_start(struct quiet *q) {
    memset(q, 0, sizeof *q);
    assert_int_equal(test_redis_start(&q->r), 0);
    snprintf(q->dir, sizeof q->dir, "/tmp/breaker-host-XXXXXX");
    assert_non_null(mkdtemp(q->dir));
    snprintf(q->path, sizeof q->path, "%s/host.store", q->dir);
    breaker_store_config sc;
    breaker_store_config_init(&sc);
    sc.flags |= BREAKER_STORE_NO_WATCHER; /* moves when the test checks */
    assert_int_equal(breaker_store_open(q->path, &sc, &q->st, NULL, 0), BREAKER_OK);
    name_of(0, q->name, sizeof q->name);
}

static void quiet_stop(struct quiet *q) {
    breaker_store_close(q->st);
    unlink(q->path);
    rmdir(q->dir);
    test_redis_stop(&q->r);
}

/* A fleet handle through `q`'s store whose rounds run only when the test
 * asks, with name 0 attached in `*b`. */
static breaker_redis *quiet_fleet(struct quiet *q, breaker **b) {
    struct run run;
    memset(&run, 0, sizeof run);
    run.r = q->r;
    return parent_fleet(&run, q->st, 3600000 * MS, 1000 * MS, b);
}

/* quiet_fleet(), whose first round, after 10 calls, takes the name: the
 * file's primary when no other handle holds its first byte. */
static breaker_redis *quiet_holder(struct quiet *q, breaker **b) {
    breaker_redis *f = quiet_fleet(q, b);
    calls(*b, 10);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    return f;
}

static long long quiet_window(const struct quiet *q) {
    struct run run;
    memset(&run, 0, sizeof run);
    run.r = q->r;
    return window_calls(&run, 0);
}

static uint64_t flushed_names(breaker_redis *f) {
    breaker_redis_stats rs;
    breaker_redis_stats_get(f, &rs);
    return rs.host_flusher;
}

/* What a damaged file holds is input: a baseline above the counters is not
 * sent as a delta (it would be a huge negative one), and words without the
 * holder's mark are not a baseline; the name goes on from its counters. */
static void damaged_host_words_are_not_trusted(void **state) {
    (void)state;
    struct quiet q;
    quiet_start(&q);
    breaker *b = NULL;
    breaker_redis *f = quiet_holder(&q, &b);
    long long first = quiet_window(&q);
    breaker_redis_close(f); /* the name is free: the next holder reads its words */
    /* A baseline of more successes than the breaker ever counted. */
    damage_words(q.st, q.name, HW_SUCC, UINT64_C(1) << 40);
    f = quiet_fleet(&q, &b);
    calls(b, 5);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    breaker_redis_stats rs;
    breaker_redis_stats_get(f, &rs);
    long long after_damage = quiet_window(&q);
    uint64_t rebaselines = rs.host_rebaselines;
    calls(b, 7);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    long long after_more = quiet_window(&q);
    breaker_redis_close(f);
    /* Words that are not a holder's (another mark). */
    damage_words(q.st, q.name, HW_CTRL, 12345);
    f = quiet_fleet(&q, &b);
    calls(b, 3);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    breaker_redis_stats_get(f, &rs);
    uint64_t rebaselines_mark = rs.host_rebaselines;
    calls(b, 4);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    long long after_mark = quiet_window(&q);
    printf("damaged host words: window %lld after 10 calls, %lld after 5 more under a baseline "
           "above the counters (rebaselines %llu), %lld after 7 more; %lld after 3 + 4 more "
           "under words without the holder's mark (rebaselines %llu)\n",
           first, after_damage, (unsigned long long)rebaselines, after_more, after_mark,
           (unsigned long long)rebaselines_mark);
    breaker_redis_close(f);
    quiet_stop(&q);
    assert_int_equal(first, 10);
    assert_int_equal(rebaselines, 1);
    assert_int_equal(after_damage, 10); /* the 5 calls of the distrusted baseline: lost */
    assert_int_equal(after_more, 17);
    assert_int_equal(rebaselines_mark, 1);
    assert_int_equal(after_mark, 21); /* the 3: lost */
}

/* The lock goes with its holder's handle: closed while the store stays
 * open, the name is free, and the next round of another handle takes it
 * and goes on from the words (nothing lost, nothing twice). */
static void a_closed_handle_frees_its_names_at_once(void **state) {
    (void)state;
    struct quiet q;
    quiet_start(&q);
    breaker *b1 = NULL, *b2 = NULL;
    breaker_redis *f1 = quiet_holder(&q, &b1), *f2 = quiet_fleet(&q, &b2);
    assert_int_equal(breaker_redis_flush(f2), BREAKER_OK);
    uint64_t held1 = flushed_names(f1), held2 = flushed_names(f2);
    int held_open = name_held(q.st, q.name);
    calls(b2, 5);
    breaker_redis_close(f1);
    int held_closed = name_held(q.st, q.name);
    assert_int_equal(breaker_redis_flush(f2), BREAKER_OK);
    uint64_t held2_after = flushed_names(f2);
    long long window = quiet_window(&q);
    printf("a closed handle: names flushed %llu and %llu before, held %d; after the close held "
           "%d, the other's next round flushes %llu; window %lld of 15 calls\n",
           (unsigned long long)held1, (unsigned long long)held2, held_open, held_closed,
           (unsigned long long)held2_after, window);
    breaker_redis_close(f2);
    quiet_stop(&q);
    assert_int_equal(held1, 1);
    assert_int_equal(held2, 0);
    assert_true(held_open);
    assert_false(held_closed);
    assert_int_equal(held2_after, 1);
    assert_int_equal(window, 15);
}

/* A holder SIGKILLed: the kernel frees its locks with the process, and the
 * next round of another process takes its names, going on from its words. */
static void a_killed_holders_names_are_taken_at_the_next_round(void **state) {
    (void)state;
    struct quiet q;
    quiet_start(&q);
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        breaker *b = NULL;
        breaker_redis *f = quiet_holder(&q, &b);
        char one = flushed_names(f) == 1 ? 1 : 0;
        calls(b, 3); /* counted in the host breaker, never flushed by this process */
        (void)!write(ready[1], &one, 1);
        for (;;)
            pause();
    }
    char one = 0;
    assert_int_equal(read(ready[0], &one, 1), 1);
    breaker *b = NULL;
    breaker_redis *f = quiet_fleet(&q, &b);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    uint64_t held_alive = flushed_names(f);
    kill(pid, SIGKILL);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    uint64_t held_after = flushed_names(f);
    long long window = quiet_window(&q);
    printf("a killed holder: it flushed the name: %d; the other flushes %llu while it lives, %llu "
           "at its first round after the kill; window %lld of 13 calls\n",
           one, (unsigned long long)held_alive, (unsigned long long)held_after, window);
    breaker_redis_close(f);
    close(ready[0]);
    close(ready[1]);
    quiet_stop(&q);
    assert_int_equal(one, 1);
    assert_int_equal(held_alive, 0);
    assert_int_equal(held_after, 1);
    assert_int_equal(window, 13);
}

/* The store moves to a new file at its path (the old one unlinked): the
 * handle's next round closes its lock on the old file (its names free
 * there for the processes still on it) and takes them in the new file. */
static void a_moved_store_file_takes_the_lock_along(void **state) {
    (void)state;
    struct quiet q;
    quiet_start(&q);
    breaker *b = NULL;
    breaker_redis *f = quiet_holder(&q, &b);
    /* A store that stays on the old file, to look at it after the move. */
    breaker_store_config sc;
    breaker_store_config_init(&sc);
    sc.flags = BREAKER_STORE_NO_WATCHER;
    breaker_store *old = NULL;
    assert_int_equal(breaker_store_open(q.path, &sc, &old, NULL, 0), BREAKER_OK);
    int held_old_before = name_held(old, q.name);
    assert_int_equal(unlink(q.path), 0);
    char msg[256] = "";
    assert_int_equal(breaker_store_check(q.st, msg, sizeof msg), BREAKER_OK); /* moves */
    calls(b, 4); /* on the new file's breaker */
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    int held_old_after = name_held(old, q.name);
    int held_new = name_held(q.st, q.name);
    uint64_t held = flushed_names(f);
    calls(b, 6);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    long long window = quiet_window(&q);
    printf("a moved store file: the old file's name held %d before the move, %d after; the new "
           "file's %d (names flushed %llu); window %lld: 10 calls before the move, 6 of the 10 "
           "after it (the 4 of the round that found the move: counted from then)\n",
           held_old_before, held_old_after, held_new, (unsigned long long)held, window);
    breaker_redis_close(f);
    breaker_store_close(old);
    quiet_stop(&q);
    assert_true(held_old_before);
    assert_false(held_old_after);
    assert_true(held_new);
    assert_int_equal(held, 1);
    assert_int_equal(window, 16);
}

static void a_killed_flusher_is_replaced_and_loses_no_counts(void **state) {
    (void)state;
    struct run run;
    enum { PROCS = 4, NAMES = 3 };
    uint64_t iv = 100 * MS, io = 500 * MS;
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
    long long trips = test_redis_int(&run.r, "HGET breaker:v2:{%s}:s trips", name);
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
    printf("holder SIGKILLed: process %d took over after %llu ms (flush 100 ms); "
           "the fleet's trip (trips %lld) reached the %d others within %llu ms; name 1: %lld "
           "calls made, %lld in the fleet's window\n",
           next, (unsigned long long)took_ms, trips, PROCS - 1, (unsigned long long)reach_ms, made,
           seen);
    run_cleanup(&run);
    assert_true(took_ms < 1000); /* the kernel freed the lock: no expiry to wait for */
    assert_int_equal(trips, 1);
    assert_true(all_open);
    assert_int_equal(made, seen); /* none lost, none counted twice */
}

struct degraded_wait {
    const struct run *run;
    int gone, want;
};

/* Every process but `gone` says degraded `want`. */
static int all_degraded(void *ctx) {
    const struct degraded_wait *w = ctx;
    for (int i = 0; i < w->run->s.procs; i++)
        if (i != w->gone && atomic_load(&sh->p[i].degraded) != w->want) return 0;
    return 1;
}

/* A holder SIGSTOPped keeps its names (the kernel keeps its locks): nobody
 * flushes them meanwhile, and the host's other processes, whose holder's
 * view grows older than 2 x (flush_interval_ns + io_timeout_ns), go
 * degraded (their probes and trips their local breaker's) until it resumes.
 * Resumed, it flushes every call counted meanwhile: none is lost. */
static void a_stopped_flusher_keeps_its_names_and_the_host_degrades(void **state) {
    (void)state;
    struct run run;
    enum { PROCS = 3, NAMES = 2 };
    uint64_t iv = 50 * MS, io = 100 * MS; /* stale after 2 x (50 + 100) = 300 ms */
    run_start(&run, PROCS, NAMES, 1, 1, iv, io, 0);
    burst(&run, 40, -1);
    struct flusher_wait w = {.run = &run, .gone = -1, .not = -1};
    assert_true(wait_until(a_flusher_other_than, &w, 5000));
    int holder = the_flusher(&run, -1);
    assert_true(holder >= 0);
    struct degraded_wait dw = {.run = &run, .gone = -1, .want = 0};
    assert_true(wait_until(all_degraded, &dw, 5000));
    for (int i = 0; i < 3000 && window_calls(&run, 0) != calls_made(&run, 0); i++)
        nap_ms(1);
    uint64_t t_stop = now_ns();
    kill(run.pids[holder], SIGSTOP);
    dw.gone = holder;
    dw.want = 1;
    int degraded = wait_until(all_degraded, &dw, 10000);
    uint64_t degraded_ms = (now_ns() - t_stop) / MS;
    burst(&run, 40, holder); /* while it is stopped: the host breaker counts them */
    int others_flushed = the_flusher(&run, holder) >= 0;
    long long window_stopped = window_calls(&run, 0);
    uint64_t t_cont = now_ns();
    kill(run.pids[holder], SIGCONT);
    dw.gone = -1;
    dw.want = 0;
    int rejoined = wait_until(all_degraded, &dw, 10000);
    uint64_t rejoined_ms = (now_ns() - t_cont) / MS;
    nap_ms(200);
    long long before = script_calls(&run);
    nap_ms(1000);
    long long per_s = script_calls(&run) - before;
    int still = the_flusher(&run, -1);
    burst(&run, 40, -1);
    assert_int_equal(run_stop(&run, -1), 0);
    long long made = calls_made(&run, 0), seen = window_calls(&run, 0);
    printf("holder SIGSTOPped: the others degraded after %llu ms (stale after 300 ms, flush 50 "
           "ms), no other flusher meanwhile: %d, the window %lld while it was stopped; resumed, "
           "the others rejoined after %llu ms, the flusher is process %d (was %d); Redis calls "
           "in the next second %lld; name 0: %lld calls made, %lld in the window\n",
           (unsigned long long)degraded_ms, !others_flushed, window_stopped,
           (unsigned long long)rejoined_ms, still, holder, per_s, made, seen);
    run_cleanup(&run);
    assert_true(degraded);
    assert_false(others_flushed);
    assert_true(rejoined);
    assert_int_equal(still, holder);
    /* One flusher's: two names and a TIME, <= 25 rounds/s. */
    assert_true(per_s <= 3 * 1000 / 40 + 10);
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
    long long transitions = test_redis_int(&run.r, "HGET breaker:v2:{host.svc0}:s transitions");
    long long fleet_state = test_redis_int(&run.r, "HGET breaker:v2:{host.svc0}:s st");
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

static long long sum_views(const struct run *run, size_t offset) {
    long long n = 0;
    for (int i = 0; i < run->s.procs; i++) {
        const char *v = (const char *)&sh->p[i] + offset;
        n += (long long)atomic_load((const _Atomic uint64_t *)(const void *)v);
    }
    return n;
}

static int moved_all(void *ctx) {
    const struct run *run = ctx;
    for (int i = 0; i < run->s.procs; i++)
        if (atomic_load(&sh->p[i].store_moves) == 0) return 0;
    return 1;
}

/* The host's store file is unlinked during an outage: every process moves
 * to the new file at the path, and one of them flushes the name there.
 * Its probes still ask the fleet for leases (never more in flight than the
 * fleet's one, none unleased), and once the dependency is healthy the
 * fleet closes and the host with it, for good. Before: a forwarded
 * handle's probes were not found by the gate and went ahead unleased; the
 * host closed on its own, the fleet stayed open and re-tripped it every
 * round (29-32 outside trips, 139-149 refusals of a healthy dependency in
 * 3 s). */
static void a_moved_host_probes_with_leases_and_the_fleet_closes(void **state) {
    (void)state;
    struct run run;
    enum { PROCS = 3 };
    next_check_ns = 100 * MS; /* the processes move soon after the unlink */
    run_start_with(&run, PROCS, 1, 1, 1, 50 * MS, 2000 * MS, 1, NULL);
    nap_ms(800); /* the fleet trips and probes */
    assert_int_equal(unlink(run.s.store_path[0]), 0);
    assert_true(wait_until(moved_all, &run, 5000));
    int probes_before = atomic_load(&sh->dep.probes);
    nap_ms(1500); /* the outage goes on, on the new file */
    int probes_after_move = atomic_load(&sh->dep.probes) - probes_before;
    long long trips_at_recovery = sum_views(&run, offsetof(struct proc_view, outside_trips));
    atomic_store(&sh->dep.healthy, 1);
    for (int i = 0; i < 10000 && atomic_load(&sh->closed_procs) < PROCS; i++)
        nap_ms(1);
    int all_closed = atomic_load(&sh->closed_procs) == PROCS;
    long long refused_at_close = 0;
    for (int i = 0; i < PROCS; i++)
        refused_at_close += atomic_load(&sh->p[i].refused_healthy);
    long long trips_at_close = sum_views(&run, offsetof(struct proc_view, outside_trips));
    nap_ms(3000);
    long long trips_after = sum_views(&run, offsetof(struct proc_view, outside_trips));
    long long refused_after = 0;
    for (int i = 0; i < PROCS; i++)
        refused_after += atomic_load(&sh->p[i].refused_healthy);
    assert_int_equal(run_stop(&run, -1), 0);
    long long fleet_state = test_redis_int(&run.r, "HGET breaker:v2:{host.svc0}:s st");
    int unleased = atomic_load(&sh->dep.unleased), most = atomic_load(&sh->dep.max_in_flight);
    int closed = atomic_load(&sh->closed_procs), reopened = atomic_load(&sh->reopened);
    int final_closed = atomic_load(&sh->final_closed);
    printf("a moved host: probes after the move %d (unleased %d, most in flight %d); after "
           "recovery: %d of %d processes closed, outside trips %lld during the outage, %lld "
           "until closed, %lld in the 3 s after; refusals of the healthy dependency %lld until "
           "closed, %lld in the 3 s after; %d reopenings; fleet state %lld\n",
           probes_after_move, unleased, most, closed, PROCS, trips_at_recovery,
           trips_at_close - trips_at_recovery, trips_after - trips_at_close, refused_at_close,
           refused_after - refused_at_close, reopened, fleet_state);
    run_cleanup(&run);
    assert_true(probes_after_move >= 1);
    assert_int_equal(unleased, 0);
    assert_int_equal(most, 1);
    assert_true(all_closed);
    assert_int_equal(trips_after, trips_at_close);
    assert_int_equal(refused_after, refused_at_close);
    assert_int_equal(reopened, 0);
    assert_int_equal(final_closed, PROCS);
    assert_int_equal(fleet_state, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_host_of_six_processes_flushes_as_one),
        cmocka_unit_test(every_name_is_flushed_whichever_processes_attach_it),
        cmocka_unit_test(damaged_host_words_are_not_trusted),
        cmocka_unit_test(a_closed_handle_frees_its_names_at_once),
        cmocka_unit_test(a_killed_holders_names_are_taken_at_the_next_round),
        cmocka_unit_test(a_moved_store_file_takes_the_lock_along),
        cmocka_unit_test(a_killed_flusher_is_replaced_and_loses_no_counts),
        cmocka_unit_test(a_stopped_flusher_keeps_its_names_and_the_host_degrades),
        cmocka_unit_test(two_hosts_of_four_processes_keep_the_fleets_probe_cap),
        cmocka_unit_test(a_moved_host_probes_with_leases_and_the_fleet_closes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
