/* SPDX-License-Identifier: MIT */
/*
 * test_redis_fleet.c - the fleet store against a real redis-server
 * (redis_server.c starts one per test on a free loopback port and a unix
 * socket). Processes are real processes (fork) where the behaviour is about
 * processes. Fleet decisions are driven by explicit breaker_redis_flush()
 * calls where possible (the background flusher then runs on a long
 * interval); where Redis's own clock decides (lease deadlines, open waits),
 * bounded polling loops wait for it.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#define _POSIX_C_SOURCE 200809L

#include <breaker.h>
#define BREAKER_BACKEND_EXPERIMENTAL /* breaker_permit_gate_token(): a probe's lease */
#include <breaker/backend.h>
#include <breaker/redis.h>
#include <breaker/registry.h>
#include <breaker/store.h>

#include "fleet_util.h"
#include "redis_server.h"
#include "test_breaker.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <pthread.h>
#include <poll.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#define MS    ((uint64_t)1000000)
#define NPROC 10

static uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The time this thread has spent runnable but not running (waiting for a
 * CPU), from /proc/thread-self/schedstat's second field; 0 when the kernel
 * does not say. A bound on how long the library waits is a bound on the
 * time the call was given, not on a loaded machine's run queue: the timed
 * call's wall time minus this time's growth over it. */
static uint64_t queued_ns(void) {
    FILE *fp = fopen("/proc/thread-self/schedstat", "r");
    if (fp == NULL) return 0;
    unsigned long long run = 0, wait = 0;
    int got = fscanf(fp, "%llu %llu", &run, &wait);
    fclose(fp);
    return got == 2 ? (uint64_t)wait : 0;
}

/* The wall time of a call begun at `t0` with queued_ns() at `q0`, less the
 * time the thread waited for a CPU meanwhile. */
static uint64_t own_time_since(uint64_t t0, uint64_t q0) {
    uint64_t wall = mono_ns() - t0, queued = queued_ns() - q0;
    return queued < wall ? wall - queued : 0;
}

static void nap_ms(long ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int setup_server(void **state) {
    struct test_redis *r = calloc(1, sizeof *r);
    if (r == NULL || test_redis_start(r) != 0) {
        free(r);
        return -1;
    }
    *state = r;
    return 0;
}

static int teardown_server(void **state) {
    struct test_redis *r = *state;
    test_redis_stop(r);
    free(r);
    return 0;
}

/* A fleet handle on `r` whose flusher waits `interval_ms` between rounds. */
static breaker_redis *open_fleet(const struct test_redis *r, uint64_t interval_ms, int unix_sock) {
    breaker_redis_config rc;
    breaker_redis_config_init(&rc);
    if (unix_sock)
        rc.unix_path = r->sock;
    else
        rc.port = r->port;
    rc.flush_interval_ns = interval_ms * MS;
    /* Patient, so that a loaded machine (a CI running the other tests
     * beside this one, under ASan) neither degrades a host nor runs a lease
     * request past its budget: at 100 ms and the default 25 ms both
     * happened (8 probes in flight through degraded hosts; a lost lease
     * closing the gate for the hour-long test interval). A stopped Redis
     * still fails a round, 500 ms later. */
    rc.io_timeout_ns = 500 * MS;
    rc.probe_budget_ns = 250 * MS;
    breaker_redis *f = NULL;
    char msg[256] = "";
    int rc_open = breaker_redis_open(&rc, &f, msg, sizeof msg);
    if (rc_open != BREAKER_OK) fprintf(stderr, "open: %s\n", msg);
    return f;
}

/* The fleet tests' limits: a rate over 10 s, min_calls 20, 50%. */
static void fleet_cfg(breaker_config *c) {
    breaker_config_init(c);
    c->trip = BREAKER_TRIP_TIME_WINDOW;
    c->window_ns = 10000 * MS;
    c->min_calls = 20;
    c->failure_rate = 0.5;
    c->open_jitter = 0;
    c->seed = 7;
}

static long long hget(const struct test_redis *r, const char *name, const char *field) {
    return test_redis_int(r, "HGET breaker:v2:{%s}:s %s", name, field);
}

/* Five failures on `b` through `f`, then a flush: with the tests' limits the
 * local breaker opens and the fleet trips. */
static void trip_and_flush(breaker_redis *f, breaker *b) {
    for (int i = 0; i < 5; i++) {
        breaker_redis_permit p;
        assert_int_equal(breaker_redis_acquire(f, b, &p), BREAKER_OK);
        (void)breaker_redis_complete(f, b, &p, BREAKER_FAILURE);
    }
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
}

/* Poll until `b`'s acquire through `f` holds a fleet lease (a probe the
 * fleet granted), within 2 s; local, unleased probes are given back. */
static void lease_a_probe(breaker_redis *f, breaker *b, breaker_redis_permit *probe) {
    int leased = 0;
    for (int i = 0; i < 2000 && !leased; i++) {
        if (breaker_redis_acquire(f, b, probe) == BREAKER_OK) {
            leased = breaker_permit_gate_token(&probe->permit) != 0;
            if (!leased) (void)breaker_redis_complete(f, b, probe, BREAKER_IGNORED);
        }
        if (!leased) nap_ms(1);
    }
    assert_true(leased);
}

/* Ten calls, six failures (three in a row at most): below min_calls 20 for
 * one process. */
static void ten_calls_sixty_percent(breaker_redis *f, breaker *b) {
    for (int i = 0; i < 10; i++) {
        breaker_redis_permit p;
        assert_int_equal(breaker_redis_acquire(f, b, &p), BREAKER_OK);
        enum breaker_outcome o = i % 5 < 3 ? BREAKER_FAILURE : BREAKER_SUCCESS;
        assert_int_equal(breaker_redis_complete(f, b, &p, o), BREAKER_OK);
    }
}

/* A barrier between processes in shared memory: bounded polling. */
static int wait_count(_Atomic int *c, int want, int timeout_ms) {
    for (int i = 0; i < timeout_ms; i++) {
        if (atomic_load(c) >= want) return 1;
        nap_ms(1);
    }
    return 0;
}

static void *shared_map(size_t n) {
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(p != MAP_FAILED);
    memset(p, 0, n);
    return p;
}

static void reap_all(pid_t *pids, int n, int *exit_codes) {
    for (int i = 0; i < n; i++) {
        int st = 0;
        assert_int_equal(waitpid(pids[i], &st, 0), pids[i]);
        exit_codes[i] =
            WIFEXITED(st) ? WEXITSTATUS(st) : 100 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    }
}

/* ---- Fleet trip ---------------------------------------------------------------*/

struct trip_shared {
    _Atomic int flushed;
};

static int child_events;

static void count_event(void *ctx, breaker *b, const breaker_event *ev) {
    (void)ctx;
    (void)b;
    if (ev->reason == BREAKER_REASON_OUTSIDE_TRIP && ev->evidence.calls >= 20)
        child_events++;
    else
        child_events += 100; /* any other transition fails the test */
}

static int trip_child(const struct test_redis *r, struct trip_shared *sh, int local_only) {
    breaker_config cfg;
    fleet_cfg(&cfg);
    cfg.on_event = count_event;
    if (local_only) {
        breaker *b;
        if (test_breaker_create(&cfg, &b) != BREAKER_OK) return 2;
        for (int i = 0; i < 10; i++) {
            breaker_permit p;
            if (breaker_acquire(b, &p) != BREAKER_OK) return 3;
            (void)breaker_complete(b, &p, i < 6 ? BREAKER_FAILURE : BREAKER_SUCCESS);
        }
        atomic_fetch_add(&sh->flushed, 1);
        if (!wait_count(&sh->flushed, NPROC, 10000)) return 4;
        int open = breaker_get_state(b) != BREAKER_CLOSED;
        test_breaker_destroy(b);
        return open ? 1 : 0;
    }
    breaker_redis *f = open_fleet(r, 3600 * 1000, 0);
    if (f == NULL) return 2;
    breaker *b;
    if (breaker_redis_attach(f, "trip", &cfg, &b, NULL, 0) != BREAKER_OK) return 2;
    for (int i = 0; i < 10; i++) {
        breaker_redis_permit p;
        if (breaker_redis_acquire(f, b, &p) != BREAKER_OK) return 3;
        (void)breaker_redis_complete(f, b, &p, i < 6 ? BREAKER_FAILURE : BREAKER_SUCCESS);
    }
    int locally_open = breaker_get_state(b) != BREAKER_CLOSED; /* must be 0 */
    if (breaker_redis_flush(f) != BREAKER_OK) return 5;
    atomic_fetch_add(&sh->flushed, 1);
    if (!wait_count(&sh->flushed, NPROC, 10000)) return 4;
    /* Every host has flushed: the fleet tripped on one of them; the next
     * answer tells the others. */
    if (breaker_redis_flush(f) != BREAKER_OK) return 5;
    /* One event per host: the fleet's trip, with the fleet's evidence. */
    int open = breaker_get_state(b) == BREAKER_OPEN && !locally_open && child_events == 1;
    breaker_redis_close(f);
    return open ? 1 : 0;
}

static void run_trip(const struct test_redis *r, int local_only, int *opened) {
    struct trip_shared *sh = shared_map(sizeof *sh);
    pid_t pids[NPROC];
    for (int i = 0; i < NPROC; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) _exit(trip_child(r, sh, local_only));
    }
    int codes[NPROC];
    reap_all(pids, NPROC, codes);
    *opened = 0;
    for (int i = 0; i < NPROC; i++) {
        if (codes[i] > 1) fail_msg("child %d exited %d", i, codes[i]);
        *opened += codes[i];
    }
    munmap(sh, sizeof *sh);
}

static void fleet_trips_once_when_hosts_together_pass_min_calls(void **state) {
    struct test_redis *r = *state;
    int opened_local = -1, opened_fleet = -1;
    run_trip(r, 1, &opened_local);
    run_trip(r, 0, &opened_fleet);
    long long trips = hget(r, "trip", "trips");
    long long transitions = hget(r, "trip", "transitions");
    printf("fleet trip: 10 processes x 10 calls at 60%% failures, min_calls 20:\n"
           "  local breakers opened: %d of 10; fleet-backed opened: %d of 10; fleet trips %lld, "
           "transitions %lld, evidence %lld calls %lld failures\n",
           opened_local, opened_fleet, trips, transitions, hget(r, "trip", "ec"),
           hget(r, "trip", "ef"));
    assert_int_equal(opened_local, 0);
    assert_int_equal(opened_fleet, NPROC);
    assert_int_equal(trips, 1);
    assert_int_equal(transitions, 1);
    assert_int_equal(hget(r, "trip", "st"), 1);
    assert_true(hget(r, "trip", "ec") >= 20);
}

/* ---- The failing-source rule, fleet-wide ----------------------------------------*/

/* Failures with `source` on `b` (admitted: the local window is below its
 * min_calls). */
static void fail_from(breaker *b, uint64_t source, int n) {
    for (int i = 0; i < n; i++) {
        breaker_permit p;
        assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
        assert_int_equal(breaker_complete_from(b, &p, BREAKER_FAILURE, source), BREAKER_OK);
    }
}

/* Two hosts whose failures all come from one caller (source 42): together
 * they pass the fleet's min_calls at a 100% failure rate (or its run of
 * failures, with the consecutive policy), and the fleet must not trip on
 * one caller (the default rule: 3 distinct sources, as a local breaker's).
 * Two more callers' failures trip it. With the rule off
 * (min_failing_sources 1) the one caller trips it, as before the rule
 * reached the fleet (where it tripped in every case). */
static void the_fleet_trips_only_on_failures_from_enough_sources(void **state) {
    struct test_redis *r = *state;
    breaker_config cfg;
    breaker_config_init(&cfg);
    cfg.trip = BREAKER_TRIP_TIME_WINDOW;
    cfg.min_calls = 8; /* locally: each host sees 4 or 5, never enough */
    cfg.failure_rate = 0.5;
    for (int mode = 0; mode <= 2; mode++) {
        /* 0: a time window, the default rule; 1: the rule off; 2: the
         * consecutive policy's fleet run, the default rule. */
        int off = mode == 1;
        const char *name = mode == 0 ? "sources" : mode == 1 ? "sources-off" : "sources-run";
        cfg.min_failing_sources = off ? 1 : 0;
        if (mode == 2) {
            cfg.trip = BREAKER_TRIP_CONSECUTIVE;
            cfg.failure_threshold = 6; /* locally each host sees 4 or 5 */
        }
        breaker_redis *fa = open_fleet(r, 3600 * 1000, 0), *fb = open_fleet(r, 3600 * 1000, 0);
        breaker *a, *b;
        assert_int_equal(breaker_redis_attach(fa, name, &cfg, &a, NULL, 0), BREAKER_OK);
        int rc = breaker_redis_attach(fb, name, &cfg, &b, NULL, 0);
        assert_true(rc == BREAKER_OK || rc == BREAKER_CONFIG_DIFFERS);
        fail_from(a, 42, 4);
        fail_from(b, 42, 4);
        assert_int_equal(breaker_redis_flush(fa), BREAKER_OK);
        assert_int_equal(breaker_redis_flush(fb), BREAKER_OK);
        printf("%s: 8 failures from one caller on two hosts: fleet state %lld\n", name,
               hget(r, name, "st"));
        if (off) {
            assert_int_equal(hget(r, name, "st"), 1); /* the rule off: one caller trips it */
        } else {
            assert_int_equal(hget(r, name, "st"), 0); /* one caller never trips the fleet */
            /* Two other callers, on bits of their own: three sources. */
            uint64_t s1 = 1001, s2 = 2002;
            while (__builtin_popcountll(breaker_failing_sources_peek(a)) < 2)
                fail_from(a, ++s1, 1);
            uint64_t before = breaker_failing_sources_peek(a);
            do
                fail_from(b, ++s2, 1);
            while (__builtin_popcountll(before | breaker_failing_sources_peek(b)) < 3);
            assert_int_equal(breaker_redis_flush(fa), BREAKER_OK);
            assert_int_equal(breaker_redis_flush(fb), BREAKER_OK);
            printf("%s: then failures from three callers: fleet state %lld, reason %lld\n", name,
                   hget(r, name, "st"), hget(r, name, "trips"));
            assert_int_equal(hget(r, name, "st"), 1);
            assert_int_equal(hget(r, name, "trips"), 1);
        }
        breaker_redis_close(fa);
        breaker_redis_close(fb);
    }
}

/* ---- Unix socket, db, limits stored once ----------------------------------------*/

static void unix_socket_and_db_select_work_and_the_first_limits_win(void **state) {
    struct test_redis *r = *state;
    breaker_redis_config rc;
    breaker_redis_config_init(&rc);
    rc.unix_path = r->sock;
    rc.db = 3;
    rc.flush_interval_ns = 3600 * 1000 * MS;
    breaker_redis *f;
    assert_int_equal(breaker_redis_open(&rc, &f, NULL, 0), BREAKER_OK);
    assert_int_equal(breaker_redis_degraded(f), 1); /* no flush yet */
    breaker_config cfg;
    fleet_cfg(&cfg);
    breaker *b = fleet_attach_or_fail(f, "sock", &cfg);
    breaker *again;
    assert_int_equal(breaker_redis_attach(f, "sock", &cfg, &again, NULL, 0), BREAKER_EINVAL);
    ten_calls_sixty_percent(f, b);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    assert_int_equal(breaker_redis_degraded(f), 0);
    assert_int_equal(test_redis_int(r, "EXISTS breaker:v2:{sock}:s"), 0); /* db 0 */
    assert_int_equal(test_redis_int(r, "SELECT 3"), -1);                  /* status, not int */
    breaker_redis_close(f);

    /* A second host with other limits: the stored ones stay. */
    rc.unix_path = NULL;
    rc.port = r->port;
    assert_int_equal(breaker_redis_open(&rc, &f, NULL, 0), BREAKER_OK);
    cfg.failure_rate = 0.9; /* would not trip at 60% */
    assert_int_equal(breaker_redis_attach(f, "sock", &cfg, &b, NULL, 0), BREAKER_CONFIG_DIFFERS);
    breaker_config got;
    breaker_get_config(b, &got); /* the local breaker has the stored limits too */
    assert_true(got.failure_rate == 0.5);
    assert_int_equal(got.min_calls, 20);
    ten_calls_sixty_percent(f, b); /* 20 calls in the fleet window now */
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN); /* 60% >= 50%: the first limits */
    breaker_redis_stats st;
    breaker_redis_stats_get(f, &st);
    assert_int_equal(st.outside_trips, 1);
    breaker_redis_close(f);
}

/* ---- AUTH ------------------------------------------------------------------------*/

static int setup_server_with_password(void **state) {
    struct test_redis *r = calloc(1, sizeof *r);
    if (r == NULL) return -1;
    r->password = "s3cret-fleet";
    if (test_redis_start(r) != 0) {
        free(r);
        return -1;
    }
    *state = r;
    return 0;
}

static char last_why[256];

static void remember_why(void *ctx, int degraded, const char *why) {
    (void)ctx;
    if (degraded) snprintf(last_why, sizeof last_why, "%s", why);
}

static void password_is_sent_and_a_wrong_one_degrades_with_the_reason(void **state) {
    struct test_redis *r = *state;
    breaker_redis_config rc;
    breaker_redis_config_init(&rc);
    rc.port = r->port;
    rc.flush_interval_ns = 3600ull * 1000 * MS;
    rc.password = "wrong";
    rc.on_degraded = remember_why;
    breaker_redis *f;
    assert_int_equal(breaker_redis_open(&rc, &f, NULL, 0), BREAKER_OK);
    breaker *b = fleet_attach_or_fail(f, "auth", NULL);
    last_why[0] = '\0';
    assert_int_equal(breaker_redis_flush(f), BREAKER_EIO);
    assert_int_equal(breaker_redis_degraded(f), BREAKER_REDIS_MISCONFIGURED);
    printf("wrong password: degraded, why: %s\n", last_why);
    assert_non_null(strstr(last_why, "AUTH"));
    breaker_redis_close(f);
    rc.password = r->password;
    assert_int_equal(breaker_redis_open(&rc, &f, NULL, 0), BREAKER_OK);
    assert_int_equal(breaker_redis_attach(f, "auth", NULL, &b, NULL, 0), BREAKER_OK);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    assert_int_equal(hget(r, "auth", "st"), 0);
    breaker_redis_close(f);
}

/* An ACL user (AUTH username password): the right password and keys work;
 * a wrong password, or an ACL that does not cover the fleet's keys, is
 * degraded with Redis's reason (WRONGPASS, NOPERM); a user without a
 * password is refused at open. */
static void an_acl_user_authenticates_and_its_refusals_are_reported(void **state) {
    struct test_redis *r = *state;
    (void)test_redis_int(r, "ACL SETUSER fleet on >fleet-pass ~breaker:* +@all");
    (void)test_redis_int(r, "ACL SETUSER narrow on >narrow-pass ~other:* +@all");
    breaker_redis_config rc;
    breaker_redis_config_init(&rc);
    rc.port = r->port;
    rc.flush_interval_ns = 3600ull * 1000 * MS;
    rc.on_degraded = remember_why;
    rc.username = "fleet";
    breaker_redis *f;
    char msg[256];
    assert_int_equal(breaker_redis_open(&rc, &f, msg, sizeof msg), BREAKER_EINVAL);
    assert_non_null(strstr(msg, "username: an ACL user needs a password"));
    rc.password = "fleet-pass";
    assert_int_equal(breaker_redis_open(&rc, &f, NULL, 0), BREAKER_OK);
    breaker *b = fleet_attach_or_fail(f, "acl", NULL);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    assert_int_equal(breaker_redis_degraded(f), 0);
    assert_int_equal(hget(r, "acl", "st"), 0); /* the user's flush wrote the state */
    breaker_redis_close(f);
    /* The default user's password is not this user's. */
    rc.password = r->password;
    assert_int_equal(breaker_redis_open(&rc, &f, NULL, 0), BREAKER_OK);
    assert_int_equal(breaker_redis_attach(f, "acl", NULL, &b, NULL, 0), BREAKER_OK);
    last_why[0] = '\0';
    assert_int_equal(breaker_redis_flush(f), BREAKER_EIO);
    printf("acl user, wrong password: why: %s\n", last_why);
    assert_non_null(strstr(last_why, "AUTH: WRONGPASS"));
    breaker_redis_close(f);
    /* A user whose keys are not the fleet's. */
    rc.username = "narrow";
    rc.password = "narrow-pass";
    assert_int_equal(breaker_redis_open(&rc, &f, NULL, 0), BREAKER_OK);
    assert_int_equal(breaker_redis_attach(f, "acl", NULL, &b, NULL, 0), BREAKER_OK);
    last_why[0] = '\0';
    assert_int_not_equal(breaker_redis_flush(f), BREAKER_OK);
    assert_int_equal(breaker_redis_degraded(f), BREAKER_REDIS_MISCONFIGURED);
    printf("acl user without the keys: why: %s\n", last_why);
    assert_non_null(strstr(last_why, "NOPERM"));
    breaker_redis_close(f);
}

/* ---- Probe cap -------------------------------------------------------------------*/

struct cap_shared {
    _Atomic int ready;
    _Atomic int go;
    _Atomic int in_flight;
    _Atomic int max_in_flight;
    _Atomic int probes;
    _Atomic int stop;
};

static void cap_cfg(breaker_config *c) {
    fleet_cfg(c);
    c->min_calls = 5;
    c->open_ns = 150 * MS;
    c->open_backoff = 1;
    c->open_max_ns = 150 * MS;
    c->half_open_max_probes = 1;
    c->half_open_successes = 3;
    c->probe_timeout_ns = 2000 * MS;
}

/* A dependency that is down: every call takes 30 ms and fails. It counts the
 * calls in flight across the processes. */
static void dependency_call(struct cap_shared *sh) {
    int now = atomic_fetch_add(&sh->in_flight, 1) + 1;
    int max = atomic_load(&sh->max_in_flight);
    while (now > max && !atomic_compare_exchange_weak(&sh->max_in_flight, &max, now)) {
    }
    atomic_fetch_add(&sh->probes, 1);
    nap_ms(30);
    atomic_fetch_sub(&sh->in_flight, 1);
}

static int cap_child(const struct test_redis *r, struct cap_shared *sh, int fleet) {
    breaker_config cfg;
    cap_cfg(&cfg);
    breaker_redis *f = NULL;
    breaker *b;
    if (fleet) {
        f = open_fleet(r, 50, 0);
        if (f == NULL || breaker_redis_attach(f, "cap", &cfg, &b, NULL, 0) != BREAKER_OK) return 2;
        if (breaker_redis_flush(f) != BREAKER_OK) return 5;
    } else if (test_breaker_create(&cfg, &b) != BREAKER_OK) {
        return 2;
    }
    /* Open every local breaker at once: five failures each. */
    atomic_fetch_add(&sh->ready, 1);
    while (!atomic_load(&sh->go))
        nap_ms(1);
    for (int i = 0; i < 5; i++) {
        breaker_redis_permit p;
        int rc = fleet ? breaker_redis_acquire(f, b, &p) : breaker_acquire(b, &p.permit);
        if (rc != BREAKER_OK) break;
        if (fleet)
            (void)breaker_redis_complete(f, b, &p, BREAKER_FAILURE);
        else
            (void)breaker_complete(b, &p.permit, BREAKER_FAILURE);
    }
    while (!atomic_load(&sh->stop)) {
        breaker_redis_permit p;
        int rc = fleet ? breaker_redis_acquire(f, b, &p) : breaker_acquire(b, &p.permit);
        if (rc == BREAKER_OK) {
            if (breaker_permit_is_probe(&p.permit)) dependency_call(sh);
            if (fleet)
                (void)breaker_redis_complete(f, b, &p, BREAKER_FAILURE);
            else
                (void)breaker_complete(b, &p.permit, BREAKER_FAILURE);
        }
        nap_ms(2); /* the request rate of one host: 500/s */
    }
    if (fleet)
        breaker_redis_close(f);
    else
        breaker_destroy(b);
    return 0;
}

static void run_cap(const struct test_redis *r, int fleet, int *max, int *probes) {
    struct cap_shared *sh = shared_map(sizeof *sh);
    pid_t pids[NPROC];
    for (int i = 0; i < NPROC; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) _exit(cap_child(r, sh, fleet));
    }
    assert_true(wait_count(&sh->ready, NPROC, 10000));
    atomic_store(&sh->go, 1);
    /* Two seconds of outage: about a dozen recovery rounds of 150 ms. */
    nap_ms(2000);
    atomic_store(&sh->stop, 1);
    int codes[NPROC];
    reap_all(pids, NPROC, codes);
    for (int i = 0; i < NPROC; i++)
        if (codes[i] != 0) fail_msg("child %d exited %d", i, codes[i]);
    *max = atomic_load(&sh->max_in_flight);
    *probes = atomic_load(&sh->probes);
    munmap(sh, sizeof *sh);
}

static void fleet_caps_probes_in_flight_across_processes(void **state) {
    struct test_redis *r = *state;
    int lmax, lprobes, fmax, fprobes;
    run_cap(r, 0, &lmax, &lprobes);
    run_cap(r, 1, &fmax, &fprobes);
    long long rounds = hget(r, "cap", "transitions");
    printf("probe cap, 10 processes, half_open_max_probes 1, dependency down for 2 s:\n"
           "                      max probes in flight   probes sent\n"
           "  local breakers      %20d   %11d\n"
           "  fleet (Redis)       %20d   %11d   (fleet transitions %lld)\n",
           lmax, lprobes, fmax, fprobes, rounds);
    assert_int_equal(fmax, 1);
    assert_true(fprobes >= 2); /* it did recover-and-fail several rounds */
    assert_true(lmax > 1);
    /* One probe per fleet recovery round: the trip, then an open->half-open
     * and a half-open->open transition per round, so at most transitions/2
     * half-open rounds. (Not "fewer than the local breakers sent": under a
     * CPU hog the ten local processes managed only one probe each in the
     * two seconds, 10 against the fleet's 10 in 21 transitions.) */
    if (fprobes > rounds / 2)
        fail_msg("%d fleet probes in %lld fleet transitions: more than one per recovery round",
                 fprobes, rounds);
}

/* ---- Abandoned leases -------------------------------------------------------------*/

/* Probes that take a lease and are never completed (hung for ever, or the
 * caller lost the permit): each one's slot is reclaimed once its lease is
 * surely over, so that more than LEASE_SLOTS (16) of them never leave the
 * name unable to take a lease again (before: after 16, no lease for good). */
static void leases_of_probes_never_completed_are_reclaimed(void **state) {
    struct test_redis *r = *state;
    breaker_redis *f = open_fleet(r, 50, 0);
    assert_non_null(f);
    breaker_config cfg;
    cap_cfg(&cfg);
    cfg.open_ns = cfg.open_max_ns = 30 * MS;
    cfg.probe_timeout_ns = 150 * MS;
    breaker *b = fleet_attach_or_fail(f, "abandon", &cfg);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    trip_and_flush(f, b);
    for (int i = 0; i < 20; i++) {
        breaker_redis_permit probe;
        lease_a_probe(f, b, &probe); /* 2 s each at most; never completed */
    }
    breaker_redis_stats st;
    breaker_redis_stats_get(f, &st);
    printf("abandoned leases: %llu granted, %llu gated, %llu errors\n",
           (unsigned long long)st.leases_granted, (unsigned long long)st.lease_gated,
           (unsigned long long)st.lease_errors);
    assert_true(st.leases_granted >= 20);
    breaker_redis_close(f);
}

/* ---- A lease holder killed ---------------------------------------------------------*/

struct kill_shared {
    _Atomic int tripped;
    _Atomic int got_lease;
};

static void lease_of_a_killed_holder_is_reclaimed_at_its_deadline(void **state) {
    struct test_redis *r = *state;
    breaker_config cfg;
    cap_cfg(&cfg);
    cfg.probe_timeout_ns = 500 * MS;
    /* The holder is forked first, while this process has no thread. */
    struct kill_shared *sh = shared_map(sizeof *sh);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (!wait_count(&sh->tripped, 1, 10000)) _exit(4);
        breaker_redis *cf = open_fleet(r, 3600 * 1000, 0);
        breaker *cb;
        if (cf == NULL || breaker_redis_attach(cf, "kill", &cfg, &cb, NULL, 0) != BREAKER_OK)
            _exit(2);
        if (breaker_redis_flush(cf) != BREAKER_OK) _exit(5);
        /* Ask until the fleet's open wait ends (bounded: 3 s). */
        for (int i = 0; i < 3000; i++) {
            breaker_redis_permit p;
            if (breaker_redis_acquire(cf, cb, &p) == BREAKER_OK &&
                breaker_permit_gate_token(&p.permit) != 0) {
                atomic_store(&sh->got_lease, 1);
                for (;;)
                    pause(); /* a hung probe, killed below */
            }
            nap_ms(1);
        }
        _exit(3);
    }
    /* Trip the fleet from this process. */
    breaker_redis *f = open_fleet(r, 3600 * 1000, 0);
    assert_non_null(f);
    breaker *b = fleet_attach_or_fail(f, "kill", &cfg);
    trip_and_flush(f, b);
    assert_int_equal(hget(r, "kill", "st"), 1);
    atomic_store(&sh->tripped, 1);
    assert_true(wait_count(&sh->got_lease, 1, 5000));
    uint64_t t0 = mono_ns();
    assert_int_equal(test_redis_int(r, "ZCARD breaker:v2:{kill}:l"), 1);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    assert_int_equal(hget(r, "kill", "st"), 2);
    long long gen = hget(r, "kill", "gen");
    /* Any script run prunes: flush until the lease is gone (bounded: 3 s). */
    int reclaimed = 0;
    for (int i = 0; i < 300 && !reclaimed; i++) {
        assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
        reclaimed = test_redis_int(r, "ZCARD breaker:v2:{kill}:l") == 0;
        if (!reclaimed) nap_ms(10);
    }
    uint64_t waited = mono_ns() - t0;
    printf("killed lease holder: lease reclaimed %.0f ms after the kill (probe_timeout 500 ms "
           "from the grant)\n",
           (double)waited / 1e6);
    assert_true(reclaimed);
    assert_true(waited >= 400 * MS); /* not before its deadline (less the time to kill) */
    assert_int_equal(hget(r, "kill", "st"), 1); /* a hung probe fails: reopened */
    assert_int_equal(hget(r, "kill", "gen"), gen + 1);
    assert_int_equal(hget(r, "kill", "k"), 1);
    munmap(sh, sizeof *sh);
    breaker_redis_close(f);
}

/* ---- Redis killed, stopped, restarted ---------------------------------------------*/

static _Atomic int degraded_events, rejoin_events;

static void on_degraded(void *ctx, int degraded, const char *why) {
    (void)ctx;
    (void)why;
    if (degraded)
        atomic_fetch_add(&degraded_events, 1);
    else
        atomic_fetch_add(&rejoin_events, 1);
}

/* Calls for `ms` from this thread, failing every other one (so the local
 * breaker trips, waits, probes): @return the longest acquire in ns. */
static uint64_t calls_for(breaker_redis *f, breaker *b, int ms, uint64_t *n_calls) {
    uint64_t end = mono_ns() + (uint64_t)ms * MS, worst = 0;
    uint64_t n = 0;
    while (mono_ns() < end) {
        breaker_redis_permit p;
        uint64_t q = queued_ns(), t = mono_ns();
        int rc = breaker_redis_acquire(f, b, &p);
        uint64_t took = own_time_since(t, q);
        if (took > worst) worst = took;
        if (rc == BREAKER_OK)
            (void)breaker_redis_complete(f, b, &p, n % 2 ? BREAKER_FAILURE : BREAKER_SUCCESS);
        n++;
        nap_ms(1);
    }
    *n_calls = n;
    return worst;
}

static int poll_degraded(breaker_redis *f, int want, int timeout_ms) {
    for (int i = 0; i < timeout_ms / 5; i++) {
        if (breaker_redis_degraded(f) == want) return 1;
        nap_ms(5);
    }
    return 0;
}

static breaker_redis *open_watched(const struct test_redis *r, uint64_t interval_ms,
                                   uint64_t budget_ms) {
    breaker_redis_config rc;
    breaker_redis_config_init(&rc);
    rc.port = r->port;
    rc.flush_interval_ns = interval_ms * MS;
    rc.io_timeout_ns = 100 * MS;
    rc.probe_budget_ns = budget_ms * MS;
    rc.on_degraded = on_degraded;
    breaker_redis *f = NULL;
    assert_int_equal(breaker_redis_open(&rc, &f, NULL, 0), BREAKER_OK);
    return f;
}

static void redis_killed_calls_flow_locally_and_degraded_clears_on_restart(void **state) {
    struct test_redis *r = *state;
    atomic_store(&degraded_events, 0);
    atomic_store(&rejoin_events, 0);
    breaker_redis *f = open_watched(r, 50, 25);
    breaker_config cfg;
    cap_cfg(&cfg);
    cfg.min_calls = 10;
    breaker *b = fleet_attach_or_fail(f, "killed", &cfg);
    assert_true(poll_degraded(f, 0, 2000));
    atomic_store(&rejoin_events, 0); /* the first round's announcement */
    test_redis_kill(r);
    uint64_t n = 0;
    uint64_t worst = calls_for(f, b, 1000, &n);
    breaker_stats s;
    (void)breaker_stats_get(b, &s);
    printf("redis killed: %llu acquires in 1 s, max acquire %.3f ms, local trips %llu, local "
           "probes %llu, degraded %d\n",
           (unsigned long long)n, (double)worst / 1e6, (unsigned long long)s.transitions,
           (unsigned long long)s.probes_admitted, breaker_redis_degraded(f));
    assert_true(worst < 25 * MS);
    assert_int_equal(breaker_redis_degraded(f), 1);
    assert_true(atomic_load(&degraded_events) >= 1);
    assert_true(s.transitions >= 2); /* the local breaker protects alone: trips, probes */
    assert_int_equal(test_redis_restart(r), 0);
    assert_true(poll_degraded(f, 0, 3000));
    assert_int_equal(atomic_load(&rejoin_events), 1);
    breaker_redis_close(f);
}

static void redis_stopped_inline_probe_respects_its_budget(void **state) {
    struct test_redis *r = *state;
    /* A long flush interval: the flusher does not notice the stop before
     * the inline probe runs into it. */
    /* 100 ms: a budget well above a loaded machine's scheduling delays, so
     * that the bounds below test the budget, not the scheduler. */
    breaker_redis *f = open_watched(r, 3600 * 1000, 100);
    breaker_config cfg;
    cap_cfg(&cfg);
    cfg.open_ns = 50 * MS;
    cfg.open_max_ns = 50 * MS;
    breaker *b = fleet_attach_or_fail(f, "stopped", &cfg);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    trip_and_flush(f, b);
    test_redis_pause(r);
    /* Call until the local breaker admits a probe and asks Redis (bounded). */
    uint64_t worst = 0, probe_took = 0;
    breaker_redis_stats st;
    for (int i = 0; i < 2000; i++) {
        breaker_redis_permit p;
        uint64_t q = queued_ns(), t = mono_ns();
        int rc = breaker_redis_acquire(f, b, &p);
        uint64_t took = own_time_since(t, q); /* less any wait for a CPU */
        if (took > worst) worst = took;
        if (rc == BREAKER_OK) (void)breaker_redis_complete(f, b, &p, BREAKER_FAILURE);
        breaker_redis_stats_get(f, &st);
        if (st.lease_errors > 0) {
            probe_took = took;
            break;
        }
        nap_ms(1);
    }
    assert_int_equal(st.lease_errors, 1);
    /* The flusher's round also times out: degraded. */
    uint64_t t = mono_ns();
    assert_int_equal(breaker_redis_flush(f), BREAKER_EIO);
    uint64_t flush_took = mono_ns() - t;
    assert_int_equal(breaker_redis_degraded(f), 1);
    /* Degraded: probes are local, no inline I/O at all. */
    uint64_t n = 0;
    uint64_t worst_degraded = calls_for(f, b, 300, &n);
    printf("redis stopped (SIGSTOP): inline probe refused after %.3f ms of its own (budget 100 "
           "ms), max "
           "acquire %.3f ms; flush timed out after %.0f ms; then max acquire %.3f ms over %llu "
           "degraded calls\n",
           (double)probe_took / 1e6, (double)worst / 1e6, (double)flush_took / 1e6,
           (double)worst_degraded / 1e6, (unsigned long long)n);
    assert_true(probe_took >= 60 * MS); /* it waited for Redis: 80% of the budget */
    assert_true(worst < 100 * MS);
    assert_true(worst_degraded < 100 * MS);
    test_redis_resume(r);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    assert_int_equal(breaker_redis_degraded(f), 0);
    breaker_redis_close(f);
}

static void redis_restarted_empty_state_is_rebuilt_by_the_next_flushes(void **state) {
    struct test_redis *r = *state;
    breaker_redis *f = open_fleet(r, 3600 * 1000, 0);
    breaker_config cfg;
    fleet_cfg(&cfg);
    breaker *b = fleet_attach_or_fail(f, "restart", &cfg);
    for (int i = 0; i < 10; i++) {
        breaker_redis_permit p;
        assert_int_equal(breaker_redis_acquire(f, b, &p), BREAKER_OK);
        assert_int_equal(breaker_redis_complete(f, b, &p, BREAKER_SUCCESS), BREAKER_OK);
    }
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    long long gen1 = hget(r, "restart", "gen");
    assert_true(gen1 > 0);
    assert_int_equal(test_redis_restart(r), 0); /* empty: no keys, no scripts */
    assert_int_equal(test_redis_int(r, "EXISTS breaker:v2:{restart}:s"), 0);
    /* The first flush meets NOSCRIPT, falls back to EVAL and recreates the
     * state with a later generation (Redis's clock); its deltas are fenced
     * (they were counted under the old generation). */
    ten_calls_sixty_percent(f, b);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK); /* reconnects within the round */
    assert_int_equal(breaker_redis_degraded(f), 0);
    long long gen2 = hget(r, "restart", "gen");
    assert_true(gen2 > gen1);
    assert_int_equal(hget(r, "restart", "st"), 0);
    /* Evidence builds up again; the fleet trips on it (locally 45%, 40
     * calls: no local trip). */
    ten_calls_sixty_percent(f, b);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    assert_int_equal(hget(r, "restart", "st"), 0);
    ten_calls_sixty_percent(f, b);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    assert_int_equal(hget(r, "restart", "st"), 1);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    /* Scripts flushed from the server's cache: NOSCRIPT, then EVAL. */
    assert_int_equal(test_redis_int(r, "SCRIPT FLUSH"), -1); /* an OK status */
    long long evals = test_redis_cmdstat(r, "eval");
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    assert_int_equal(test_redis_cmdstat(r, "eval"), evals + 1);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK); /* EVALSHA again */
    assert_int_equal(test_redis_cmdstat(r, "eval"), evals + 1);
    assert_true(test_redis_int(r, "PTTL breaker:v2:{restart}:s") > 0);
    breaker_redis_close(f);
}

/* ---- Call-path I/O ---------------------------------------------------------------------*/

static void commands_follow_the_flush_rate_not_the_call_rate(void **state) {
    struct test_redis *r = *state;
    breaker_redis *f = open_fleet(r, 50, 0);
    breaker_config cfg;
    fleet_cfg(&cfg);
    cfg.window_ns = 1000 * MS;
    cfg.open_ns = 3600ull * 1000 * MS; /* stays open for the second million */
    cfg.open_max_ns = cfg.open_ns;
    breaker *b = fleet_attach_or_fail(f, "io", &cfg);
    assert_true(poll_degraded(f, 0, 2000));
    assert_true(test_redis_int(r, "CONFIG RESETSTAT") == -1); /* an OK status */
    breaker_redis_stats s0, s1, s2;
    breaker_redis_stats_get(f, &s0);
    uint64_t t0 = mono_ns();
    /* In ten slices with a pause between them, so that flushes happen while
     * the calls do. */
    for (int slice = 0; slice < 10; slice++) {
        for (int i = 0; i < 100000; i++) {
            breaker_redis_permit p;
            assert_int_equal(breaker_redis_acquire(f, b, &p), BREAKER_OK);
            (void)breaker_redis_complete(f, b, &p, BREAKER_SUCCESS);
        }
        nap_ms(30);
    }
    uint64_t closed_ns = mono_ns() - t0;
    breaker_redis_stats_get(f, &s1);
    long long closed_cmds = test_redis_cmdstat(r, "evalsha") + test_redis_cmdstat(r, "eval");
    /* Failures until the fleet trips, once the million successes have left
     * its 1 s window (bounded: 5 s). */
    for (int round = 0; round < 500 && breaker_get_state(b) != BREAKER_OPEN; round++) {
        for (int i = 0; i < 100; i++) {
            breaker_redis_permit p;
            if (breaker_redis_acquire(f, b, &p) == BREAKER_OK)
                (void)breaker_redis_complete(f, b, &p, BREAKER_FAILURE);
        }
        assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
        if (breaker_get_state(b) != BREAKER_OPEN) nap_ms(10);
    }
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    t0 = mono_ns();
    for (int slice = 0; slice < 10; slice++) {
        for (int i = 0; i < 100000; i++) {
            breaker_redis_permit p;
            assert_int_equal(breaker_redis_acquire(f, b, &p), BREAKER_REJECTED_OPEN);
        }
        nap_ms(30);
    }
    uint64_t open_ns = mono_ns() - t0;
    breaker_redis_stats_get(f, &s2);
    long long all_cmds = test_redis_cmdstat(r, "evalsha") + test_redis_cmdstat(r, "eval");
    long long other = test_redis_cmdstat(r, "script");
    printf("call-path I/O: 1M closed calls in %.0f ms (with 300 ms of pauses), %llu flushes, %lld "
           "script calls; 1M open "
           "calls in %.0f ms (the same), %llu flushes in all, %lld script calls in all (SCRIPT: "
           "%lld)\n",
           (double)closed_ns / 1e6, (unsigned long long)(s1.flushes - s0.flushes), closed_cmds,
           (double)open_ns / 1e6, (unsigned long long)(s2.flushes - s0.flushes), all_cmds, other);
    /* One script call per name per flush (+1 for the flush that raced the
     * reset of the statistics). */
    assert_true(closed_cmds <= (long long)(s1.flushes - s0.flushes) + 2);
    assert_true(all_cmds <= (long long)(s2.flushes - s0.flushes) + 2);
    assert_true(all_cmds < 1000);
    breaker_redis_close(f);
}

/* ---- Call-path cost ----------------------------------------------------------------------*/

/* ns per closed call (acquire + complete) or open call (acquire), best of 5. */
static double per_call_ns(breaker_redis *f, breaker *b, int open) {
    double best = 1e18;
    for (int rep = 0; rep < 5; rep++) {
        uint64_t t0 = mono_ns();
        for (int i = 0; i < 200000; i++) {
            breaker_redis_permit p;
            int rc = f ? breaker_redis_acquire(f, b, &p) : breaker_acquire(b, &p.permit);
            if (rc != (open ? BREAKER_REJECTED_OPEN : BREAKER_OK)) fail_msg("rc %d", rc);
            if (!open) {
                if (f)
                    (void)breaker_redis_complete(f, b, &p, BREAKER_SUCCESS);
                else
                    (void)breaker_complete(b, &p.permit, BREAKER_SUCCESS);
            }
        }
        double ns = (double)(mono_ns() - t0) / 200000.0;
        if (ns < best) best = ns;
    }
    return best;
}

static void fleet_backed_calls_are_timed_beside_local_calls(void **state) {
    struct test_redis *r = *state;
    breaker_redis *f = open_fleet(r, 250, 0);
    breaker_config cfg;
    fleet_cfg(&cfg);
    cfg.open_ns = cfg.open_max_ns = 3600ull * 1000 * MS;
    breaker *fb, *lb;
    assert_int_equal(breaker_redis_attach(f, "cost", &cfg, &fb, NULL, 0), BREAKER_OK);
    assert_int_equal(test_breaker_create(&cfg, &lb), BREAKER_OK);
    double lc = per_call_ns(NULL, lb, 0), fc = per_call_ns(f, fb, 0);
    assert_int_equal(breaker_force_open(lb), BREAKER_OK);
    assert_int_equal(breaker_force_open(fb), BREAKER_OK);
    double lo = per_call_ns(NULL, lb, 1), fo = per_call_ns(f, fb, 1);
    printf("call cost (ns, best of 5 x 200k, flusher running every 250 ms): closed local %.1f, "
           "fleet %.1f (%.2fx); open local %.1f, fleet %.1f (%.2fx)\n",
           lc, fc, fc / lc, lo, fo, fo / lo);
    /* Printed only: a timed bound fails on a loaded machine (seen at 2x
     * with the other core busy). What is promised, the same instructions as
     * the local breaker, is checked by make bench under callgrind
     * (scripts/bench.sh, the fleet_* rows). */
    assert_true(fc > 0 && fo > 0);
    test_breaker_destroy(lb);
    breaker_redis_close(f);
}

/* ---- FAIL_CLOSED ------------------------------------------------------------------------*/

/* A FAIL_CLOSED handle on `r` whose view turns stale `stale_ms` after its
 * last good round; the rounds are the test's own (an hour's interval). */
static breaker_redis *open_fail_closed(const struct test_redis *r, uint64_t stale_ms) {
    breaker_redis_config rc;
    breaker_redis_config_init(&rc);
    rc.port = r->port;
    rc.flush_interval_ns = 3600ull * 1000 * MS;
    rc.fail_mode = BREAKER_REDIS_FAIL_CLOSED;
    rc.stale_after_ns = stale_ms * MS;
    rc.io_timeout_ns = 100 * MS;
    breaker_redis *f = NULL;
    assert_int_equal(breaker_redis_open(&rc, &f, NULL, 0), BREAKER_OK);
    return f;
}

/* FAIL_CLOSED: once the view is older than
 * stale_after_ns, the first round that finds it so trips the closed breaker
 * (every call refused on the open short path: the call path never reads the
 * view's age) and no probe is admitted while it stays so; a good round
 * after Redis returns closes it again. The rounds are made here with
 * breaker_redis_flush(), as the flusher makes one every interval. */
static void fail_closed_refuses_while_the_view_is_stale(void **state) {
    struct test_redis *r = *state;
    breaker_redis *f = open_fail_closed(r, 200);
    breaker *b;
    breaker_config cfg;
    fleet_cfg(&cfg);
    cfg.open_ns = cfg.open_max_ns = 50 * MS; /* probes come soon: the gate refuses them */
    assert_int_equal(breaker_redis_attach(f, "fc", &cfg, &b, NULL, 0), BREAKER_OK);
    breaker_permit p;
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
    assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_OK);
    uint64_t last_good = mono_ns();
    test_redis_kill(r);
    /* Rounds fail; the first one that finds the view older than 200 ms
     * trips the breaker, and none before it does. */
    for (int i = 0; i < 100 && breaker_get_state(b) == BREAKER_CLOSED; i++) {
        uint64_t before = mono_ns();
        assert_int_equal(breaker_redis_flush(f), BREAKER_EIO);
        if (breaker_get_state(b) != BREAKER_CLOSED)
            assert_true(mono_ns() - last_good > 200 * MS);
        else
            assert_true(before - last_good <= 200 * MS + 50 * MS); /* no later than due */
        nap_ms(20);
    }
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    assert_int_equal(breaker_acquire(b, &p), BREAKER_REJECTED_OPEN);
    /* Past the open wait the local breaker would probe: the gate refuses. */
    nap_ms(80);
    for (int i = 0; i < 10; i++)
        assert_int_equal(breaker_acquire(b, &p), BREAKER_REJECTED_OPEN);
    /* A name attached now (a round has failed) starts refused. */
    breaker *late = fleet_attach_or_fail(f, "fc.late", &cfg);
    assert_int_equal(breaker_acquire(late, &p), BREAKER_REJECTED_OPEN);
    assert_int_equal(test_redis_restart(r), 0);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED); /* the fleet is closed */
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
    (void)breaker_complete(b, &p, BREAKER_SUCCESS);
    breaker_redis_close(f);
}

/* ---- Fleet recovery ----------------------------------------------------------------------*/

static _Atomic int last_reason = -1;

static void record_reason(void *ctx, breaker *b, const breaker_event *ev) {
    (void)ctx;
    (void)b;
    atomic_store(&last_reason, (int)ev->reason);
}

static void fleet_closes_after_successful_leased_probes_and_hosts_follow(void **state) {
    struct test_redis *r = *state;
    breaker_redis *f1 = open_fleet(r, 3600 * 1000, 0), *f2 = open_fleet(r, 3600 * 1000, 0);
    breaker_config cfg;
    cap_cfg(&cfg);
    cfg.open_ns = cfg.open_max_ns = 100 * MS;
    cfg.half_open_successes = 2;
    cfg.on_event = record_reason;
    breaker *b1, *b2;
    assert_int_equal(breaker_redis_attach(f1, "recover", &cfg, &b1, NULL, 0), BREAKER_OK);
    assert_int_equal(breaker_redis_attach(f2, "recover", &cfg, &b2, NULL, 0), BREAKER_OK);
    assert_int_equal(breaker_redis_flush(f2), BREAKER_OK);
    trip_and_flush(f1, b1);
    assert_int_equal(breaker_redis_flush(f2), BREAKER_OK);
    assert_int_equal(breaker_get_state(b2), BREAKER_OPEN); /* followed the fleet */
    /* Two leased successes from host 1 (bounded polling for the waits). */
    int successes = 0;
    for (int i = 0; i < 3000 && successes < 2; i++) {
        breaker_redis_permit p;
        if (breaker_redis_acquire(f1, b1, &p) == BREAKER_OK) {
            int leased = breaker_permit_gate_token(&p.permit) != 0;
            assert_int_equal(breaker_redis_complete(f1, b1, &p, BREAKER_SUCCESS), BREAKER_OK);
            assert_int_equal(breaker_redis_flush(f1), BREAKER_OK); /* sends the result */
            successes += leased;
        }
        nap_ms(1);
    }
    assert_int_equal(successes, 2);
    assert_int_equal(hget(r, "recover", "st"), 0);
    assert_int_equal(breaker_get_state(b1), BREAKER_CLOSED);
    atomic_store(&last_reason, -1);
    assert_int_equal(breaker_redis_flush(f2), BREAKER_OK);
    assert_int_equal(breaker_get_state(b2), BREAKER_CLOSED);
    /* A fenced close, not a reset. */
    assert_int_equal(atomic_load(&last_reason), BREAKER_REASON_OUTSIDE_CLOSE);
    /* open, half-open, closed: three fleet transitions, one per generation */
    assert_int_equal(hget(r, "recover", "transitions"), 3);
    breaker_redis_close(f1);
    breaker_redis_close(f2);
}

/* ---- A registry backed by the fleet ------------------------------------------------------*/

struct reg_shared {
    _Atomic int flushed;
    _Atomic int seen;
};

static _Atomic int reg_outside_trips, reg_other_events;

static void reg_listener(void *ctx, const breaker_registry_event *ev) {
    (void)ctx;
    if (ev->kind != BREAKER_REGISTRY_TRANSITION) return;
    if (ev->transition.reason == BREAKER_REASON_OUTSIDE_TRIP && strcmp(ev->name, "reg.svc") == 0)
        atomic_fetch_add(&reg_outside_trips, 1);
    else
        atomic_fetch_add(&reg_other_events, 1);
}

/* One process of two: a registry on the fleet view; 10 calls at 60% (below
 * min_calls alone), flushed. Process 0 goes first, then its breaker is
 * evicted (detached: the fleet's window stays in Redis) and asked for again,
 * a new local breaker; then process 1 calls and flushes, which trips the
 * fleet; process 0's next flush brings the trip to its registry breaker and
 * listeners. Exit 1 when all held. */
static int registry_child(const struct test_redis *r, struct reg_shared *sh, int idx) {
    breaker_redis *f = open_fleet(r, 3600 * 1000, 0);
    if (f == NULL) return 2;
    breaker_registry_config rc;
    breaker_registry_config_init(&rc);
    fleet_cfg(&rc.defaults);
    rc.idle_evict_ns = 1 * MS;
    rc.backend = breaker_redis_backend(f);
    breaker_registry *reg;
    if (breaker_registry_create(&rc, &reg) != BREAKER_OK) return 3;
    if (breaker_registry_add_listener(reg, reg_listener, NULL) != BREAKER_OK) return 3;
    breaker *b;
    if (breaker_registry_get(reg, "reg.svc", &b) != BREAKER_OK) return 4;
    if (idx == 1 && !wait_count(&sh->flushed, 1, 10000)) return 8;
    for (int i = 0; i < 10; i++) {
        breaker_redis_permit p;
        if (breaker_redis_acquire(f, b, &p) != BREAKER_OK) return 5;
        (void)breaker_redis_complete(f, b, &p, i % 5 < 3 ? BREAKER_FAILURE : BREAKER_SUCCESS);
    }
    if (breaker_get_state(b) != BREAKER_CLOSED) return 6; /* not on its own */
    if (breaker_redis_flush(f) != BREAKER_OK) return 7;
    if (idx == 0) {
        if (breaker_get_state(b) != BREAKER_CLOSED) return 6; /* 10 calls: no trip yet */
        /* Evicted (the first pass samples its activity) and attached again. */
        (void)breaker_registry_release(reg, b);
        size_t evicted = 0;
        for (int i = 0; i < 100 && evicted == 0; i++) {
            nap_ms(2);
            (void)breaker_registry_evict_idle(reg, &evicted);
        }
        if (evicted != 1) return 11;
        if (breaker_registry_get(reg, "reg.svc", &b) != BREAKER_OK) return 12;
        breaker_stats bs;
        (void)breaker_stats_get(b, &bs);
        if (bs.admitted != 0) return 13; /* a new local breaker */
    }
    atomic_fetch_add(&sh->flushed, 1);
    if (!wait_count(&sh->flushed, 2, 10000)) return 8;
    /* Process 1's flush tripped the fleet: the next answer tells process 0
     * (and process 1 again, which changes nothing). */
    if (breaker_redis_flush(f) != BREAKER_OK) return 7;
    if (breaker_get_state(b) != BREAKER_OPEN) return 9;
    if (atomic_load(&reg_outside_trips) != 1 || atomic_load(&reg_other_events) != 0) return 10;
    breaker_redis_stats st;
    breaker_redis_stats_get(f, &st);
    if (st.outside_trips != 1) return 16;
    (void)breaker_registry_release(reg, b);
    breaker_registry_destroy(reg); /* before the fleet handle */
    breaker_redis_close(f);
    return 1;
}

static void registry_backed_by_the_fleet_shares_its_state_across_processes(void **state) {
    struct test_redis *r = *state;
    struct reg_shared *sh = shared_map(sizeof *sh);
    pid_t pids[2];
    for (int i = 0; i < 2; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) _exit(registry_child(r, sh, i));
    }
    int codes[2];
    reap_all(pids, 2, codes);
    for (int i = 0; i < 2; i++)
        if (codes[i] != 1) fail_msg("registry process %d exited %d", i, codes[i]);
    assert_int_equal(hget(r, "reg.svc", "trips"), 1); /* one fleet trip for both */
    assert_int_equal(hget(r, "reg.svc", "ec"), 20);
    munmap(sh, sizeof *sh);
}

/* A fleet handle is one backend (its own type: nothing else takes it for a
 * store file), named for messages, and lives as long as the handle. */
static void the_fleet_backend_is_one_per_handle(void **state) {
    struct test_redis *r = *state;
    breaker_redis *f = open_fleet(r, 3600 * 1000, 0);
    assert_non_null(f);
    breaker_backend *be = breaker_redis_backend(f);
    assert_ptr_equal(be, breaker_redis_backend(f));
    assert_string_equal(be->ops->name, "redis");
    assert_ptr_equal(be->ctx, f);
    (void)fleet_attach_or_fail(f, "x", NULL);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    breaker_redis_close(f);
}

/* The handle's counters for a scrape: valid Prometheus text (promtool when
 * the build found it), the view's age finite after a good flush, and the
 * buffer form's ENOSPC contract. */
static void the_fleet_view_and_its_counters_export_to_prometheus(void **state) {
    struct test_redis *r = *state;
    breaker_redis *f = open_fleet(r, 3600 * 1000, 0);
    assert_non_null(f);
    (void)fleet_attach_or_fail(f, "scraped", NULL);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    char text[4096];
    size_t len = 0;
    assert_int_equal(breaker_redis_export_prometheus(f, text, sizeof text, &len), BREAKER_OK);
    assert_int_equal(len, strlen(text));
    assert_non_null(strstr(text, "breaker_fleet_degraded 0\n"));
    assert_non_null(strstr(text, "breaker_fleet_view_age_seconds "));
    assert_null(strstr(text, "+Inf")); /* a good flush happened */
    assert_non_null(strstr(text, "breaker_fleet_leases_total{result=\"granted\"} 0\n"));
    char small[16];
    size_t need = 0;
    assert_int_equal(breaker_redis_export_prometheus(f, small, sizeof small, &need),
                     BREAKER_ENOSPC);
    assert_string_equal(small, "");
    assert_true(need >= len + 1);
#ifdef BREAKER_PROMTOOL
    char path[] = "/tmp/breaker-fleet-prom-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, len), (ssize_t)len);
    close(fd);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "'%s' check metrics < '%s' >/dev/null 2>&1", BREAKER_PROMTOOL, path);
    int rc = system(cmd);
    unlink(path);
    assert_int_equal(rc, 0);
#endif
    breaker_redis_close(f);
}

/* ---- Review fixes: event delivery, fresh states, lost rounds -----------------------------*/

/* A call that may hang, made on another thread: `job` begins with this. */
struct hang_job {
    int (*call)(struct hang_job *j); /* returns the call's status */
    _Atomic int done;
    int rc;
};

static void *hang_thread(void *arg) {
    struct hang_job *j = arg;
    j->rc = j->call(j);
    atomic_store(&j->done, 1);
    return NULL;
}

/* Run `j` on another thread and wait at most `ms`: @return 1 when it
 * returned (its status in *rc, `j` freed), 0 when it hangs (the thread is
 * left behind, detached, with `j`, which it still uses: leaked). `j` was
 * allocated with calloc(). */
static int returns_within(struct hang_job *j, int ms, int *rc) {
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, hang_thread, j), 0);
    for (int i = 0; i < ms && !atomic_load(&j->done); i++)
        nap_ms(1);
    if (!atomic_load(&j->done)) {
        pthread_detach(t);
        return 0;
    }
    pthread_join(t, NULL);
    *rc = j->rc;
    free(j);
    return 1;
}

struct flush_job {
    struct hang_job job; /* first */
    breaker_redis *f;
};

static int flush_call(struct hang_job *j) {
    return breaker_redis_flush(((struct flush_job *)(void *)j)->f);
}

/* breaker_redis_flush() on another thread, waited for at most `ms`. */
static int flush_within(breaker_redis *f, int ms, int *rc) {
    struct flush_job *j = calloc(1, sizeof *j);
    assert_non_null(j);
    j->job.call = flush_call;
    j->f = f;
    return returns_within(&j->job, ms, rc);
}

struct get_in_listener {
    breaker_registry *reg;
    _Atomic int calls;
    _Atomic int rc;
};

/* A registry get of `name` (made, or attached, if new) and its release: what
 * the listeners below and the hang tests ask of the registry. @return the
 * get's status. */
static int get_and_release(breaker_registry *reg, const char *name) {
    breaker *b = NULL;
    int rc = breaker_registry_get(reg, name, &b);
    if (b != NULL) (void)breaker_registry_release(reg, b);
    return rc;
}

/* On the fleet's trip of "dl.svc": ask the registry for another name (a new
 * breaker, so the registry opens it through the fleet view). */
static void get_other_on_trip(void *ctx, const breaker_registry_event *ev) {
    struct get_in_listener *g = ctx;
    if (ev->kind != BREAKER_REGISTRY_TRANSITION ||
        ev->transition.reason != BREAKER_REASON_OUTSIDE_TRIP || strcmp(ev->name, "dl.svc") != 0)
        return;
    atomic_store(&g->rc, get_and_release(g->reg, "dl.other"));
    atomic_fetch_add(&g->calls, 1);
}

/* registry.h lets a listener call the registry: a listener that opens a
 * name through the fleet view from inside a fleet trip must not deadlock the
 * round that delivered the trip. */
static void a_listener_may_call_the_registry_during_a_fleet_transition(void **state) {
    struct test_redis *r = *state;
    breaker_redis *f = open_fleet(r, 3600 * 1000, 0), *f2 = open_fleet(r, 3600 * 1000, 0);
    assert_non_null(f);
    assert_non_null(f2);
    breaker_registry_config rc;
    breaker_registry_config_init(&rc);
    cap_cfg(&rc.defaults);
    rc.backend = breaker_redis_backend(f);
    breaker_registry *reg;
    assert_int_equal(breaker_registry_create(&rc, &reg), BREAKER_OK);
    struct get_in_listener g = {.reg = reg};
    atomic_init(&g.calls, 0);
    atomic_init(&g.rc, -1);
    assert_int_equal(breaker_registry_add_listener(reg, get_other_on_trip, &g), BREAKER_OK);
    breaker *b, *b2;
    assert_int_equal(breaker_registry_get(reg, "dl.svc", &b), BREAKER_OK);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    /* Another host trips the fleet. */
    assert_int_equal(breaker_redis_attach(f2, "dl.svc", &rc.defaults, &b2, NULL, 0), BREAKER_OK);
    trip_and_flush(f2, b2);
    assert_int_equal(hget(r, "dl.svc", "st"), 1);
    int frc = -1;
    if (!flush_within(f, 5000, &frc))
        fail_msg("the flush that delivered the fleet trip hangs (a listener called the registry)");
    assert_int_equal(frc, BREAKER_OK);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    assert_int_equal(atomic_load(&g.calls), 1);
    assert_int_equal(atomic_load(&g.rc), BREAKER_OK);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK); /* the new name flushes too */
    (void)breaker_registry_release(reg, b);
    breaker_registry_destroy(reg);
    breaker_redis_close(f);
    breaker_redis_close(f2);
}

/* ---- No lock held across a transition -----------------------------------------------------*/

/* The breaker's clock: real time plus a skew a test advances, so that Redis's
 * waits run on real time while a local probe's deadline can be jumped. */
static _Atomic uint64_t skew_ns;

static uint64_t skewed_clock(void *ctx) {
    (void)ctx;
    return mono_ns() + atomic_load(&skew_ns);
}

/* A local probe leased and left hanging on `b`, past its local deadline: the
 * next flush round finds a due probe timeout (the transition the round used
 * to apply while holding its lock, by reading the counters). */
static void hang_a_probe_past_its_deadline(breaker_redis *f, breaker *b) {
    trip_and_flush(f, b);
    breaker_redis_permit probe;
    lease_a_probe(f, b, &probe);            /* never completed */
    atomic_fetch_add(&skew_ns, 10000 * MS); /* cap_cfg's probe_timeout is 2 s */
}

struct attach_in_event {
    breaker_redis *f;
    _Atomic int calls;
    _Atomic int rc;
};

/* On a probe timeout: attach another name to the same fleet handle (a round
 * trip under the handle's round lock). */
static void attach_on_probe_timeout(void *ctx, breaker *b, const breaker_event *ev) {
    (void)b;
    struct attach_in_event *a = ctx;
    if (ev->reason != BREAKER_REASON_PROBE_TIMEOUT || atomic_load(&a->calls) > 0) return;
    breaker *other = NULL;
    atomic_store(&a->rc, breaker_redis_attach(a->f, "dl.attached", NULL, &other, NULL, 0));
    atomic_fetch_add(&a->calls, 1);
}

/* An event delivered by a flush round (here a probe timeout the round
 * applies) runs without the round's lock, so its callback may attach a name
 * to the same handle. Before, the round read the counters with
 * breaker_stats_get(), which applied the timeout under the lock, and the
 * callback's attach waited for that lock for ever. */
static void an_event_delivered_by_a_flush_may_attach_a_name(void **state) {
    struct test_redis *r = *state;
    breaker_redis *f = open_fleet(r, 3600 * 1000, 0);
    assert_non_null(f);
    struct attach_in_event a = {.f = f};
    atomic_init(&a.calls, 0);
    atomic_init(&a.rc, -1);
    breaker_config cfg;
    cap_cfg(&cfg);
    cfg.clock = skewed_clock;
    cfg.on_event = attach_on_probe_timeout;
    cfg.event_ctx = &a;
    breaker *b = fleet_attach_or_fail(f, "dl.hung", &cfg);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    hang_a_probe_past_its_deadline(f, b);
    int frc = -1;
    if (!flush_within(f, 10000, &frc))
        fail_msg("the flush that applied a probe timeout hangs (its callback attached a name)");
    assert_int_equal(frc, BREAKER_OK);
    assert_int_equal(atomic_load(&a.calls), 1);
    assert_int_equal(atomic_load(&a.rc), BREAKER_OK);
    assert_int_equal(breaker_state_peek(b), BREAKER_OPEN); /* the timeout reopened it */
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    breaker_redis_close(f);
}

/* On the probe timeout of "dl.hung": ask the fleet-backed registry for a
 * new name (the registry opens it through the fleet backend). */
static void get_other_on_probe_timeout(void *ctx, const breaker_registry_event *ev) {
    struct get_in_listener *g = ctx;
    if (ev->kind != BREAKER_REGISTRY_TRANSITION ||
        ev->transition.reason != BREAKER_REASON_PROBE_TIMEOUT || strcmp(ev->name, "dl.hung") != 0 ||
        atomic_load(&g->calls) > 0)
        return;
    atomic_store(&g->rc, get_and_release(g->reg, "dl.new"));
    atomic_fetch_add(&g->calls, 1);
}

/* The same through a registry on the fleet backend: a listener that asks it
 * for a new name, from inside an event a flush round delivered. */
static void an_event_delivered_by_a_flush_may_ask_a_fleet_registry_for_a_new_name(void **state) {
    struct test_redis *r = *state;
    breaker_redis *f = open_fleet(r, 3600 * 1000, 0);
    assert_non_null(f);
    breaker_registry_config rc;
    breaker_registry_config_init(&rc);
    cap_cfg(&rc.defaults);
    rc.defaults.clock = skewed_clock;
    rc.backend = breaker_redis_backend(f);
    breaker_registry *reg;
    assert_int_equal(breaker_registry_create(&rc, &reg), BREAKER_OK);
    struct get_in_listener g = {.reg = reg};
    atomic_init(&g.calls, 0);
    atomic_init(&g.rc, -1);
    assert_int_equal(breaker_registry_add_listener(reg, get_other_on_probe_timeout, &g),
                     BREAKER_OK);
    breaker *b;
    assert_int_equal(breaker_registry_get(reg, "dl.hung", &b), BREAKER_OK);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    hang_a_probe_past_its_deadline(f, b);
    int frc = -1;
    if (!flush_within(f, 10000, &frc))
        fail_msg("the flush that applied a probe timeout hangs (a listener asked the registry "
                 "for a new name)");
    assert_int_equal(frc, BREAKER_OK);
    assert_int_equal(atomic_load(&g.calls), 1);
    assert_int_equal(atomic_load(&g.rc), BREAKER_OK);
    (void)breaker_registry_release(reg, b);
    breaker_registry_destroy(reg);
    breaker_redis_close(f);
}

struct get_job {
    struct hang_job job; /* first */
    breaker_registry *reg;
    const char *name;
};

static int get_call(struct hang_job *hj) {
    struct get_job *j = (struct get_job *)(void *)hj;
    return get_and_release(j->reg, j->name);
}

/* breaker_registry_get() on another thread, waited for at most `ms`. */
static int get_within(breaker_registry *reg, const char *name, int ms, int *rc) {
    struct get_job *j = calloc(1, sizeof *j);
    assert_non_null(j);
    j->job.call = get_call;
    j->reg = reg;
    j->name = name;
    return returns_within(&j->job, ms, rc);
}

/* Any transition: ask the registry for another name (once). */
static void get_other_on_any(void *ctx, const breaker_registry_event *ev) {
    struct get_in_listener *g = ctx;
    if (ev->kind != BREAKER_REGISTRY_TRANSITION || atomic_fetch_add(&g->calls, 1) > 0) return;
    atomic_store(&g->rc, get_and_release(g->reg, "fcr.other"));
}

/* FAIL_CLOSED under a registry: a name opened while the view is stale is
 * not tripped inside the registry's open (an event there would run under the
 * registry's lock, and a listener that calls the registry would wait for it
 * for ever); the flusher's round trips it, and the listener may call the
 * registry from that event. */
static void fail_closed_under_a_registry_trips_outside_the_registry_lock(void **state) {
    struct test_redis *r = *state;
    breaker_redis *f = open_fail_closed(r, 100);
    (void)fleet_attach_or_fail(f, "fcr.direct", NULL);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    test_redis_kill(r);
    nap_ms(120);
    assert_int_equal(breaker_redis_flush(f), BREAKER_EIO); /* a failed round: the view is stale */
    breaker_registry_config regc;
    breaker_registry_config_init(&regc);
    fleet_cfg(&regc.defaults);
    regc.backend = breaker_redis_backend(f);
    breaker_registry *reg;
    assert_int_equal(breaker_registry_create(&regc, &reg), BREAKER_OK);
    struct get_in_listener g = {.reg = reg};
    atomic_init(&g.calls, 0);
    atomic_init(&g.rc, -1);
    assert_int_equal(breaker_registry_add_listener(reg, get_other_on_any, &g), BREAKER_OK);
    int grc = -1;
    if (!get_within(reg, "fcr.svc", 10000, &grc))
        fail_msg("breaker_registry_get() hangs: an event ran under the registry's lock");
    assert_int_equal(grc, BREAKER_OK);
    /* The round (the flusher's, woken by the open, or this one) trips it. */
    (void)breaker_redis_flush(f);
    breaker *b;
    assert_int_equal(breaker_registry_get(reg, "fcr.svc", &b), BREAKER_OK);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    breaker_permit p;
    assert_int_equal(breaker_acquire(b, &p), BREAKER_REJECTED_OPEN);
    assert_true(atomic_load(&g.calls) >= 1);
    assert_int_equal(atomic_load(&g.rc), BREAKER_OK); /* the listener's get */
    (void)breaker_registry_release(reg, b);
    breaker_registry_destroy(reg);
    breaker_redis_close(f);
    assert_int_equal(test_redis_restart(r), 0);
}

/* A following host (local OPEN because the fleet opened) meets a fleet state
 * created from scratch (Redis restarted empty): that is no fleet close, the
 * host stays OPEN and its local breaker decides. */
static void a_fresh_fleet_state_does_not_close_a_following_host(void **state) {
    struct test_redis *r = *state;
    breaker_redis *f1 = open_fleet(r, 3600 * 1000, 0), *f2 = open_fleet(r, 3600 * 1000, 0);
    breaker_config cfg;
    cap_cfg(&cfg);
    cfg.open_ns = cfg.open_max_ns = 60000 * MS; /* a long open wait */
    breaker *b1, *b2;
    assert_int_equal(breaker_redis_attach(f1, "fresh", &cfg, &b1, NULL, 0), BREAKER_OK);
    assert_int_equal(breaker_redis_attach(f2, "fresh", &cfg, &b2, NULL, 0), BREAKER_OK);
    assert_int_equal(breaker_redis_flush(f2), BREAKER_OK);
    trip_and_flush(f1, b1);
    assert_int_equal(breaker_redis_flush(f2), BREAKER_OK);
    assert_int_equal(breaker_get_state(b2), BREAKER_OPEN); /* follows the fleet */
    test_redis_kill(r);
    assert_int_equal(test_redis_restart(r), 0); /* empty */
    assert_int_equal(breaker_redis_flush(f2), BREAKER_OK);
    assert_int_equal(hget(r, "fresh", "st"), 0); /* a state from scratch */
    assert_int_equal(breaker_get_state(b2), BREAKER_OPEN);
    assert_int_equal(breaker_redis_flush(f2), BREAKER_OK); /* and on the next answer too */
    assert_int_equal(breaker_get_state(b2), BREAKER_OPEN);
    breaker_redis_stats st;
    breaker_redis_stats_get(f2, &st);
    assert_int_equal(st.fleet_closes, 0);
    /* The host that tripped it (and followed since) stays OPEN too. */
    assert_int_equal(breaker_redis_flush(f1), BREAKER_OK);
    assert_int_equal(breaker_get_state(b1), BREAKER_OPEN);
    breaker_redis_close(f1);
    breaker_redis_close(f2);
}

/* A leased probe's result outlives a round that failed before it was sent:
 * it goes with the next good round (here it closes the fleet). */
static void a_lease_result_survives_a_failed_round(void **state) {
    struct test_redis *r = *state;
    breaker_redis *f = open_fleet(r, 3600 * 1000, 0);
    breaker_config cfg;
    cap_cfg(&cfg);
    cfg.open_ns = cfg.open_max_ns = 50 * MS;
    cfg.half_open_successes = 1;
    cfg.probe_timeout_ns = 20000 * MS; /* the lease outlives the test */
    breaker *b = fleet_attach_or_fail(f, "kept", &cfg);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    trip_and_flush(f, b);
    assert_int_equal(hget(r, "kept", "st"), 1);
    breaker_redis_permit probe;
    lease_a_probe(f, b, &probe);
    assert_int_equal(hget(r, "kept", "st"), 2);
    /* Redis stops: a round fails and drops its connection; the probe
     * succeeds; the next round fails before it sends anything (the new
     * connection's SCRIPT LOAD times out). */
    test_redis_pause(r);
    assert_int_equal(breaker_redis_flush(f), BREAKER_EIO);
    assert_int_equal(breaker_redis_complete(f, b, &probe, BREAKER_SUCCESS), BREAKER_OK);
    assert_int_equal(breaker_redis_flush(f), BREAKER_EIO);
    test_redis_resume(r);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    assert_int_equal(hget(r, "kept", "st"), 0); /* the success closed the fleet */
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    breaker_redis_close(f);
}

/* A loopback TCP proxy in front of the test's redis-server, on its own
 * thread. Armed, it cuts the next connection that sends an EVALSHA: the
 * server gets (and runs) the pipeline, the client gets no answer but a
 * reset, about 30 ms later (inside the client's 100 ms I/O timeout). With
 * `swallow` set, the server never gets that pipeline either (the cut comes
 * before Redis ran it). */
struct cut_proxy {
    int listen_fd;
    int port;
    int upstream_port;
    _Atomic int armed;
    _Atomic int swallow;
    _Atomic int cuts;
    _Atomic int stop;
    pthread_t thread;
};

static void reset_close(int fd) {
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    (void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    close(fd);
}

static int has_evalsha(const char *buf, size_t n) {
    for (size_t i = 0; i + 7 <= n; i++)
        if (memcmp(buf + i, "EVALSHA", 7) == 0) return 1;
    return 0;
}

static void *proxy_main(void *arg) {
    struct cut_proxy *px = arg;
    enum { PAIRS = 8 };
    int down[PAIRS], up[PAIRS];
    uint64_t cut_at[PAIRS];
    int swallowing[PAIRS];
    for (int i = 0; i < PAIRS; i++) {
        down[i] = up[i] = -1;
        swallowing[i] = 0;
    }
    while (!atomic_load(&px->stop)) {
        struct pollfd pfd[1 + 2 * PAIRS];
        int np = 0;
        pfd[np++] = (struct pollfd){.fd = px->listen_fd, .events = POLLIN};
        for (int i = 0; i < PAIRS; i++) {
            pfd[np++] = (struct pollfd){.fd = down[i], .events = POLLIN};
            pfd[np++] = (struct pollfd){.fd = up[i], .events = POLLIN};
        }
        (void)poll(pfd, (nfds_t)np, 5);
        if (pfd[0].revents & POLLIN) {
            int c = accept(px->listen_fd, NULL, NULL);
            int slot = -1;
            for (int i = 0; i < PAIRS && c >= 0; i++)
                if (down[i] < 0) {
                    slot = i;
                    break;
                }
            int u = c >= 0 ? socket(AF_INET, SOCK_STREAM, 0) : -1;
            struct sockaddr_in a = {.sin_family = AF_INET,
                                    .sin_port = htons((uint16_t)px->upstream_port),
                                    .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
            if (slot >= 0 && u >= 0 && connect(u, (struct sockaddr *)&a, sizeof a) == 0) {
                down[slot] = c;
                up[slot] = u;
                cut_at[slot] = 0;
                swallowing[slot] = 0;
            } else {
                if (c >= 0) close(c);
                if (u >= 0) close(u);
            }
        }
        for (int i = 0; i < PAIRS; i++) {
            if (down[i] < 0) continue;
            char buf[65536];
            int dead = 0;
            if (pfd[1 + 2 * i].revents & (POLLIN | POLLHUP | POLLERR)) {
                ssize_t n = read(down[i], buf, sizeof buf);
                if (n <= 0) {
                    dead = 1;
                } else {
                    if (atomic_load(&px->armed) && cut_at[i] == 0 && has_evalsha(buf, (size_t)n)) {
                        atomic_store(&px->armed, 0);
                        cut_at[i] = mono_ns() + 30 * MS;
                        swallowing[i] = atomic_load(&px->swallow);
                    }
                    if (!swallowing[i] && write(up[i], buf, (size_t)n) != n) dead = 1;
                }
            }
            if (!dead && (pfd[2 + 2 * i].revents & (POLLIN | POLLHUP | POLLERR))) {
                ssize_t n = read(up[i], buf, sizeof buf);
                if (n <= 0)
                    dead = 1;
                else if (cut_at[i] == 0 && write(down[i], buf, (size_t)n) != n)
                    dead = 1; /* a connection being cut gets nothing */
            }
            if (!dead && cut_at[i] != 0 && mono_ns() >= cut_at[i]) {
                atomic_fetch_add(&px->cuts, 1);
                dead = 1;
            }
            if (dead) {
                reset_close(down[i]);
                close(up[i]);
                down[i] = up[i] = -1;
            }
        }
    }
    for (int i = 0; i < PAIRS; i++)
        if (down[i] >= 0) {
            close(down[i]);
            close(up[i]);
        }
    return NULL;
}

static void proxy_start(struct cut_proxy *px, int upstream_port) {
    memset(px, 0, sizeof *px);
    px->upstream_port = upstream_port;
    px->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(px->listen_fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(px->listen_fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(px->listen_fd, 8), 0);
    socklen_t len = sizeof a;
    assert_int_equal(getsockname(px->listen_fd, (struct sockaddr *)&a, &len), 0);
    px->port = ntohs(a.sin_port);
    assert_int_equal(pthread_create(&px->thread, NULL, proxy_main, px), 0);
}

static void proxy_stop(struct cut_proxy *px) {
    atomic_store(&px->stop, 1);
    pthread_join(px->thread, NULL);
    close(px->listen_fd);
}

/* The calls in the fleet window of `name` (every bucket). */
static long long window_calls(const struct test_redis *r, const char *name) {
    return test_redis_int(r, "EVAL %s 1 breaker:v2:{%s}:w",
                          "local s = 0\n"
                          "local a = redis.call('HGETALL', KEYS[1])\n"
                          "for i = 1, #a, 2 do\n"
                          "  if string.sub(a[i], 1, 1) == 'c' then s = s + tonumber(a[i + 1]) end\n"
                          "end\n"
                          "return s\n",
                          name);
}

/* Through a cut proxy (`swallow`: the cut comes before Redis ran the
 * round): `name` attached, ten calls at 60% failures, then a round that is
 * cut and tried again. Each of the ten reaches the fleet window once.
 * @return the handle, `*b` the breaker. */
static breaker_redis *ten_calls_through_a_cut(const struct test_redis *r, struct cut_proxy *px,
                                              const char *name, int swallow, breaker **b) {
    proxy_start(px, r->port);
    struct test_redis via = *r;
    via.port = px->port;
    breaker_redis *f = open_fleet(&via, 3600 * 1000, 0);
    assert_non_null(f);
    breaker_config cfg;
    fleet_cfg(&cfg);
    assert_int_equal(breaker_redis_attach(f, name, &cfg, b, NULL, 0), BREAKER_OK);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    ten_calls_sixty_percent(f, *b);
    atomic_store(&px->swallow, swallow);
    atomic_store(&px->armed, 1);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK); /* cut, then tried again */
    assert_int_equal(atomic_load(&px->cuts), 1);
    assert_int_equal(window_calls(r, name), 10);
    assert_int_equal(hget(r, name, "st"), 0); /* 10 calls at 60%: below min_calls 20 */
    return f;
}

/* A connection cut after Redis ran the round (the server's answer lost):
 * the round is tried again on a new connection with the same calls, and
 * the flush script, which applied the first try's deltas, does not count
 * them again (the call's sequence is not newer than its host's). */
static void the_retry_after_a_cut_connection_does_not_count_deltas_twice(void **state) {
    struct test_redis *r = *state;
    struct cut_proxy px;
    breaker *b;
    breaker_redis *f = ten_calls_through_a_cut(r, &px, "twice", 0, &b);
    ten_calls_sixty_percent(f, b);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    assert_int_equal(window_calls(r, "twice"), 20);
    breaker_redis_close(f);
    proxy_stop(&px);
}

/* A connection cut before Redis ran the round (the request lost): the
 * retry's deltas are the only ones Redis sees, and they count, once (the
 * old client sent the retry without its deltas: they were lost). */
static void the_retry_after_a_cut_connection_does_not_lose_deltas(void **state) {
    struct test_redis *r = *state;
    struct cut_proxy px;
    breaker *b;
    breaker_redis *f = ten_calls_through_a_cut(r, &px, "lost", 1, &b);
    /* The next ten reach the window too, and trip it: 20 calls at 60%. */
    ten_calls_sixty_percent(f, b);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    assert_int_equal(hget(r, "lost", "st"), 1);
    assert_int_equal(hget(r, "lost", "ec"), 20);
    breaker_redis_close(f);
    proxy_stop(&px);
}

/* A lease request that timed out while Redis was stopped is run when Redis
 * resumes and grants a lease nobody holds: the next round releases it (the
 * token, for any generation), so the fleet's probe slot is free again long
 * before the lease's deadline. */
static void a_lease_granted_after_its_request_timed_out_is_released(void **state) {
    struct test_redis *r = *state;
    /* A budget that leaves room to connect and send (also under ASan). */
    breaker_redis *f = open_watched(r, 3600 * 1000, 100);
    breaker_config cfg;
    cap_cfg(&cfg);
    cfg.open_ns = 50 * MS;
    cfg.open_max_ns = 50 * MS;
    cfg.probe_timeout_ns = 20000 * MS; /* a phantom would hold the slot for 20 s */
    breaker *b = fleet_attach_or_fail(f, "phantom", &cfg);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    trip_and_flush(f, b);
    assert_int_equal(hget(r, "phantom", "st"), 1);
    nap_ms(60); /* the fleet's open wait ends: the next request is granted */
    test_redis_pause(r);
    breaker_redis_stats st;
    for (int i = 0; i < 2000; i++) {
        breaker_redis_permit p;
        if (breaker_redis_acquire(f, b, &p) == BREAKER_OK)
            (void)breaker_redis_complete(f, b, &p, BREAKER_FAILURE);
        breaker_redis_stats_get(f, &st);
        if (st.lease_errors > 0) break;
        nap_ms(1);
    }
    assert_int_equal(st.lease_errors, 1);
    test_redis_resume(r);
    /* Redis runs the queued request: the fleet turns HALF_OPEN with a lease
     * nobody holds (unless the flusher's round queued behind it, woken by
     * the lost request, has released it already). */
    for (int i = 0; i < 200 && hget(r, "phantom", "st") != 2; i++)
        nap_ms(5);
    assert_int_equal(hget(r, "phantom", "st"), 2);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    assert_int_equal(test_redis_int(r, "ZCARD breaker:v2:{phantom}:l"), 0);
    assert_int_equal(hget(r, "phantom", "st"), 2); /* released as neither: still probing */
    assert_int_equal(hget(r, "phantom", "transitions"), 2);
    breaker_redis_close(f);
}

/* ---- Rejoining after a partition -------------------------------------------------*/

static _Atomic int rejoin_outside_trips;

static void count_outside_trip(void *ctx, breaker *b, const breaker_event *ev) {
    (void)ctx;
    (void)b;
    if (ev->reason == BREAKER_REASON_OUTSIDE_TRIP) atomic_fetch_add(&rejoin_outside_trips, 1);
}

/* The fleet is OPEN; the host loses Redis and its local breaker recovers on
 * its own (a successful local probe). When Redis answers again the fleet is
 * still OPEN, its open wait long over: the healthy host is not tripped. */
static void a_host_that_recovered_while_degraded_is_not_tripped_on_rejoining(void **state) {
    struct test_redis *r = *state;
    atomic_store(&rejoin_outside_trips, 0);
    breaker_redis *f = open_fleet(r, 3600 * 1000, 0);
    breaker_config cfg;
    cap_cfg(&cfg);
    cfg.open_ns = cfg.open_max_ns = 50 * MS;
    cfg.half_open_successes = 1;
    cfg.on_event = count_outside_trip;
    breaker *b = fleet_attach_or_fail(f, "rejoin", &cfg);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    trip_and_flush(f, b);
    assert_int_equal(hget(r, "rejoin", "st"), 1);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    test_redis_pause(r);
    assert_int_equal(breaker_redis_flush(f), BREAKER_EIO);
    assert_int_equal(breaker_redis_degraded(f), 1);
    /* Degraded: the local breaker probes alone, succeeds and closes. */
    int closed = 0;
    for (int i = 0; i < 2000 && !closed; i++) {
        breaker_redis_permit p;
        if (breaker_redis_acquire(f, b, &p) == BREAKER_OK) {
            assert_int_equal(breaker_permit_gate_token(&p.permit), 0); /* no lease */
            (void)breaker_redis_complete(f, b, &p, BREAKER_SUCCESS);
        }
        closed = breaker_get_state(b) == BREAKER_CLOSED;
        if (!closed) nap_ms(1);
    }
    assert_true(closed);
    nap_ms(60); /* the fleet's open wait (50 ms from its trip) is surely over */
    test_redis_resume(r);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    assert_int_equal(breaker_redis_degraded(f), 0);
    assert_int_equal(hget(r, "rejoin", "st"), 1); /* still OPEN in Redis */
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK); /* and on the next answer too */
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    breaker_redis_stats st;
    breaker_redis_stats_get(f, &st);
    assert_int_equal(st.outside_trips, 0);
    assert_int_equal(atomic_load(&rejoin_outside_trips), 0);
    breaker_redis_close(f);
}

/* ---- The probe connection is never connected inline -------------------------------*/

/* A probe whose connection is down (a lost request dropped it) is refused
 * at once: no inline connect, AUTH or SELECT waits for a stalled Redis. */
static void a_probe_without_its_connection_is_refused_at_once(void **state) {
    struct test_redis *r = *state;
    breaker_redis_config rc;
    breaker_redis_config_init(&rc);
    rc.port = r->port;
    rc.password = r->password;
    rc.db = 1;
    rc.flush_interval_ns = 3600000 * MS;
    rc.io_timeout_ns = 100 * MS;
    rc.probe_budget_ns = 100 * MS; /* a wait of 80 ms for Redis, also under ASan */
    breaker_redis *f = NULL;
    assert_int_equal(breaker_redis_open(&rc, &f, NULL, 0), BREAKER_OK);
    breaker_config cfg;
    cap_cfg(&cfg);
    cfg.open_ns = cfg.open_max_ns = 50 * MS;
    breaker *b1, *b2;
    assert_int_equal(breaker_redis_attach(f, "inline1", &cfg, &b1, NULL, 0), BREAKER_OK);
    assert_int_equal(breaker_redis_attach(f, "inline2", &cfg, &b2, NULL, 0), BREAKER_OK);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    for (int i = 0; i < 5; i++) { /* both local breakers open; their fleet states too */
        breaker_redis_permit p;
        assert_int_equal(breaker_redis_acquire(f, b1, &p), BREAKER_OK);
        (void)breaker_redis_complete(f, b1, &p, BREAKER_FAILURE);
        assert_int_equal(breaker_redis_acquire(f, b2, &p), BREAKER_OK);
        (void)breaker_redis_complete(f, b2, &p, BREAKER_FAILURE);
    }
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    nap_ms(60); /* both open waits end */
    test_redis_pause(r);
    /* The first name's probe asks the stalled Redis: lost, the probe
     * connection is dropped. */
    breaker_redis_stats st;
    breaker_redis_permit p;
    assert_int_equal(breaker_redis_acquire(f, b1, &p), BREAKER_REJECTED_HALF_OPEN);
    breaker_redis_stats_get(f, &st);
    assert_int_equal(st.lease_errors, 1);
    /* The second name's probe (before the flusher, woken by the lost
     * request, times out and calls the host degraded): no connection. */
    uint64_t t = mono_ns();
    int rc2 = breaker_redis_acquire(f, b2, &p);
    uint64_t took = mono_ns() - t;
    breaker_redis_stats_get(f, &st);
    printf("probe without its connection (Redis stopped, AUTH and SELECT configured): refused "
           "after %.3f ms (budget 100 ms)\n",
           (double)took / 1e6);
    assert_int_equal(rc2, BREAKER_REJECTED_HALF_OPEN);
    assert_int_equal(st.lease_errors, 2);
    assert_true(took < 40 * MS);
    test_redis_resume(r);
    /* The flusher connects it again after a good round (every leased probe
     * of the other tests depends on it). */
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    breaker_redis_close(f);
}

/* ---- A listener evicting its own breaker --------------------------------------- */

struct evict_ctx {
    breaker_registry *reg;
    _Atomic int evicted;
    _Atomic int seen;
};
static void evict_on_close(void *ctx, const breaker_registry_event *ev) {
    struct evict_ctx *x = ctx;
    if (ev->kind != BREAKER_REGISTRY_TRANSITION ||
        ev->transition.reason != BREAKER_REASON_OUTSIDE_CLOSE)
        return;
    size_t n = 0;
    (void)breaker_registry_evict_idle(x->reg, &n);
    atomic_fetch_add(&x->evicted, (int)n);
}
static void read_name(void *ctx, const breaker_registry_event *ev) {
    struct evict_ctx *x = ctx;
    if (ev->kind != BREAKER_REGISTRY_TRANSITION) return;
    volatile size_t l = strlen(ev->name);
    (void)l;
    atomic_fetch_add(&x->seen, 1);
}
/* A listener evicts the very breaker whose fleet transition it hears, on the
 * flusher thread, which holds no registry reference: the other listeners
 * and the registry's own bookkeeping must still find the entry alive (ASan
 * in make check catches a use after free here). */
static void a_listener_may_evict_the_breaker_being_delivered(void **state) {
    struct test_redis *r = *state;
    breaker_redis *f = open_fleet(r, 3600 * 1000, 0), *f2 = open_fleet(r, 3600 * 1000, 0);
    breaker_registry_config rc;
    breaker_registry_config_init(&rc);
    cap_cfg(&rc.defaults);
    rc.defaults.open_ns = rc.defaults.open_max_ns = 50 * MS;
    rc.defaults.half_open_successes = 1;
    rc.idle_evict_ns = 5 * MS;
    rc.backend = breaker_redis_backend(f);
    breaker_registry *reg;
    assert_int_equal(breaker_registry_create(&rc, &reg), BREAKER_OK);
    struct evict_ctx x = {.reg = reg};
    assert_int_equal(breaker_registry_add_listener(reg, evict_on_close, &x), BREAKER_OK);
    assert_int_equal(breaker_registry_add_listener(reg, read_name, &x), BREAKER_OK);
    breaker *b, *b2;
    assert_int_equal(breaker_registry_get(reg, "ev.svc", &b), BREAKER_OK);
    (void)breaker_registry_release(reg, b); /* the table's reference only */
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    assert_int_equal(breaker_redis_attach(f2, "ev.svc", &rc.defaults, &b2, NULL, 0), BREAKER_OK);
    trip_and_flush(f2, b2);
    assert_int_equal(hget(r, "ev.svc", "st"), 1);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    breaker_redis_permit probe;
    lease_a_probe(f2, b2, &probe);
    assert_int_equal(breaker_redis_complete(f2, b2, &probe, BREAKER_SUCCESS), BREAKER_OK);
    assert_int_equal(breaker_redis_flush(f2), BREAKER_OK);
    assert_int_equal(hget(r, "ev.svc", "st"), 0);
    nap_ms(20);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    assert_int_equal(atomic_load(&x.evicted), 1);
    assert_true(atomic_load(&x.seen) >= 1);
    breaker_registry_destroy(reg);
    breaker_redis_close(f);
    breaker_redis_close(f2);
}
int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(the_fleet_trips_only_on_failures_from_enough_sources,
                                        setup_server, teardown_server),
        cmocka_unit_test_setup_teardown(fleet_trips_once_when_hosts_together_pass_min_calls,
                                        setup_server, teardown_server),
        cmocka_unit_test_setup_teardown(unix_socket_and_db_select_work_and_the_first_limits_win,
                                        setup_server, teardown_server),
        cmocka_unit_test_setup_teardown(password_is_sent_and_a_wrong_one_degrades_with_the_reason,
                                        setup_server_with_password, teardown_server),
        cmocka_unit_test_setup_teardown(an_acl_user_authenticates_and_its_refusals_are_reported,
                                        setup_server_with_password, teardown_server),
        cmocka_unit_test_setup_teardown(
            fleet_closes_after_successful_leased_probes_and_hosts_follow, setup_server,
            teardown_server),
        cmocka_unit_test_setup_teardown(fleet_caps_probes_in_flight_across_processes, setup_server,
                                        teardown_server),
        cmocka_unit_test_setup_teardown(leases_of_probes_never_completed_are_reclaimed,
                                        setup_server, teardown_server),
        cmocka_unit_test_setup_teardown(lease_of_a_killed_holder_is_reclaimed_at_its_deadline,
                                        setup_server, teardown_server),
        cmocka_unit_test_setup_teardown(
            redis_killed_calls_flow_locally_and_degraded_clears_on_restart, setup_server,
            teardown_server),
        cmocka_unit_test_setup_teardown(redis_stopped_inline_probe_respects_its_budget,
                                        setup_server, teardown_server),
        cmocka_unit_test_setup_teardown(redis_restarted_empty_state_is_rebuilt_by_the_next_flushes,
                                        setup_server, teardown_server),
        cmocka_unit_test_setup_teardown(commands_follow_the_flush_rate_not_the_call_rate,
                                        setup_server, teardown_server),
        cmocka_unit_test_setup_teardown(fleet_backed_calls_are_timed_beside_local_calls,
                                        setup_server, teardown_server),
        cmocka_unit_test_setup_teardown(a_listener_may_evict_the_breaker_being_delivered,
                                        setup_server, teardown_server),
        cmocka_unit_test_setup_teardown(the_fleet_view_and_its_counters_export_to_prometheus,
                                        setup_server, teardown_server),
        cmocka_unit_test_setup_teardown(
            fail_closed_under_a_registry_trips_outside_the_registry_lock, setup_server,
            teardown_server),
        cmocka_unit_test_setup_teardown(fail_closed_refuses_while_the_view_is_stale, setup_server,
                                        teardown_server),
        cmocka_unit_test_setup_teardown(
            registry_backed_by_the_fleet_shares_its_state_across_processes, setup_server,
            teardown_server),
        cmocka_unit_test_setup_teardown(the_fleet_backend_is_one_per_handle, setup_server,
                                        teardown_server),
        cmocka_unit_test_setup_teardown(a_listener_may_call_the_registry_during_a_fleet_transition,
                                        setup_server, teardown_server),
        cmocka_unit_test_setup_teardown(an_event_delivered_by_a_flush_may_attach_a_name,
                                        setup_server, teardown_server),
        cmocka_unit_test_setup_teardown(
            an_event_delivered_by_a_flush_may_ask_a_fleet_registry_for_a_new_name, setup_server,
            teardown_server),
        cmocka_unit_test_setup_teardown(a_fresh_fleet_state_does_not_close_a_following_host,
                                        setup_server, teardown_server),
        cmocka_unit_test_setup_teardown(a_lease_result_survives_a_failed_round, setup_server,
                                        teardown_server),
        cmocka_unit_test_setup_teardown(
            the_retry_after_a_cut_connection_does_not_count_deltas_twice, setup_server,
            teardown_server),
        cmocka_unit_test_setup_teardown(the_retry_after_a_cut_connection_does_not_lose_deltas,
                                        setup_server, teardown_server),
        cmocka_unit_test_setup_teardown(a_lease_granted_after_its_request_timed_out_is_released,
                                        setup_server, teardown_server),
        cmocka_unit_test_setup_teardown(
            a_host_that_recovered_while_degraded_is_not_tripped_on_rejoining, setup_server,
            teardown_server),
        cmocka_unit_test_setup_teardown(a_probe_without_its_connection_is_refused_at_once,
                                        setup_server_with_password, teardown_server),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
