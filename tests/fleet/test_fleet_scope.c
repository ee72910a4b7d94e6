/* SPDX-License-Identifier: MIT */
/*
 * test_fleet_scope.c - a fleet-backed breaker keeps the fleet's scope on
 * every path that reaches it, not only through one special function: ten
 * processes (ten hosts, each with its own fleet handle) call one dependency
 * through breaker_executor_run() on an attached breaker, or through a
 * registry made on breaker_redis_backend() with plain breaker_acquire() /
 * breaker_complete(), against a real redis-server (redis_server.c).
 *
 * While the dependency is down: never more probes at the dependency at once
 * than the fleet's half_open_max_probes (1), and every probe holds a fleet
 * lease. After it recovers: every host closes and stays closed (before the
 * lease moved into the breaker, registry hosts probed locally, recovered
 * locally and were tripped again by the next flush, for ever).
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#define _POSIX_C_SOURCE 200809L

#include <breaker.h>
#define BREAKER_BACKEND_EXPERIMENTAL /* breaker_permit_gate_token(): a probe's lease */
#include <breaker/backend.h>
#include <breaker/compose.h>
#include <breaker/redis.h>
#include <breaker/registry.h>

#include "fleet_hosts.h"
#include "fleet_probes.h"
#include "redis_server.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#define MS    ((uint64_t)1000000)
#define NPROC 10

static void nap_ms(long ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

enum path { VIA_EXECUTOR, VIA_REGISTRY };

/* What the processes share (an anonymous shared mapping). */
struct scope_shared {
    _Atomic int ready, go, stop;
    struct fleet_probe_counts dep; /* the dependency's counts while down */
    /* After recovery: hosts seen closed, and their reopenings after that. */
    _Atomic int closed_hosts, reopened;
    _Atomic int degraded_hosts, final_closed;
};

static struct scope_shared *sh;

static int wait_count(_Atomic int *c, int want, int timeout_ms) {
    for (int i = 0; i < timeout_ms; i++) {
        if (atomic_load(c) >= want) return 1;
        nap_ms(1);
    }
    return atomic_load(c) >= want;
}

/* The dependency: down until `healthy` (fleet_probes.h). */
static enum breaker_outcome dependency(int is_probe, int leased) {
    return fleet_probe_dependency(&sh->dep, is_probe, leased);
}

/* A host's view of its breaker's transitions: after it was seen closed in
 * the healthy phase, any reopening counts. */
static _Atomic int seen_closed;

static void on_transition(void *ctx, breaker *b, const breaker_event *ev) {
    (void)ctx;
    (void)b;
    if (atomic_load(&seen_closed) && ev->to != BREAKER_CLOSED) atomic_fetch_add(&sh->reopened, 1);
}

/* The executor's operation: the attempt says whether it is a probe; the
 * host's lease count says whether that probe holds a lease (one caller per
 * process, so the grant counted since before the run is this probe's). */
struct exec_op {
    breaker_redis *f;
    uint64_t leases_before;
};

static enum breaker_outcome exec_op(void *ctx, breaker_attempt *attempt) {
    struct exec_op *op = ctx;
    int leased = 0;
    if (attempt->is_probe) {
        breaker_redis_stats st;
        breaker_redis_stats_get(op->f, &st);
        leased = st.leases_granted == op->leases_before + 1;
    }
    return dependency(attempt->is_probe, leased);
}

/* One call through `path`. */
static void one_call(enum path path, breaker_redis *f, breaker *b, breaker_executor *ex) {
    if (path == VIA_EXECUTOR) {
        breaker_redis_stats st;
        breaker_redis_stats_get(f, &st);
        struct exec_op op = {.f = f, .leases_before = st.leases_granted};
        breaker_call call = {.op = exec_op, .op_ctx = &op};
        breaker_result res;
        (void)!breaker_executor_run(ex, &call, &res); /* the dependency counts what matters */
        return;
    }
    breaker_permit p;
    if (breaker_acquire(b, &p) != BREAKER_OK) return;
    int probe = breaker_permit_is_probe(&p);
    enum breaker_outcome out = dependency(probe, breaker_permit_gate_token(&p) != 0);
    (void)breaker_complete(b, &p, out);
}

static void say_degraded(void *ctx, int degraded, const char *why) {
    (void)ctx;
    if (degraded) fprintf(stderr, "host %d: degraded: %s\n", (int)getpid(), why);
}

static int host(const struct test_redis *r, enum path path) {
    breaker_redis_config rc;
    breaker_redis_config_init(&rc);
    rc.port = r->port;
    rc.flush_interval_ns = 50 * MS;
    /* Generous, so that a loaded machine does not degrade a host (a
     * degraded host probes on its own: the test checks none did). */
    rc.io_timeout_ns = 2000 * MS;
    rc.probe_budget_ns = 500 * MS;
    rc.on_degraded = say_degraded;
    breaker_redis *f = NULL;
    if (breaker_redis_open(&rc, &f, NULL, 0) != BREAKER_OK) return 2;
    int frc = breaker_redis_flush(f);
    if (frc != BREAKER_OK) {
        fprintf(stderr, "flush: %s\n", breaker_strerror(frc));
        return 3;
    }
    breaker_config cfg;
    fleet_probe_cfg(&cfg);
    cfg.on_event = on_transition;
    breaker *b = NULL;
    breaker_registry *reg = NULL;
    breaker_executor *ex = NULL;
    if (path == VIA_EXECUTOR) {
        if (breaker_redis_attach(f, "scope.svc", &cfg, &b, NULL, 0) != BREAKER_OK) return 4;
        breaker_executor_config ec;
        breaker_executor_config_init(&ec);
        ec.b = b;
        if (breaker_executor_create(&ec, &ex) != BREAKER_OK) return 5;
    } else {
        breaker_registry_config regc;
        breaker_registry_config_init(&regc);
        regc.defaults = cfg;
        regc.backend = breaker_redis_backend(f);
        if (breaker_registry_create(&regc, &reg) != BREAKER_OK) return 4;
        if (breaker_registry_get(reg, "scope.svc", &b) != BREAKER_OK) return 5;
    }
    atomic_fetch_add(&sh->ready, 1);
    while (!atomic_load(&sh->go))
        nap_ms(1);
    int counted_closed = 0;
    while (!atomic_load(&sh->stop)) {
        one_call(path, f, b, ex);
        if (atomic_load(&sh->dep.healthy) && !counted_closed &&
            breaker_get_state(b) == BREAKER_CLOSED) {
            counted_closed = 1;
            atomic_store(&seen_closed, 1);
            atomic_fetch_add(&sh->closed_hosts, 1);
        }
        nap_ms(2); /* one host's request rate: 500/s */
    }
    breaker_redis_stats st;
    breaker_redis_stats_get(f, &st);
    if (st.degraded_entered > 0) atomic_fetch_add(&sh->degraded_hosts, 1);
    if (breaker_get_state(b) == BREAKER_CLOSED) atomic_fetch_add(&sh->final_closed, 1);
    breaker_executor_destroy(ex);
    if (reg != NULL) {
        (void)breaker_registry_release(reg, b);
        breaker_registry_destroy(reg);
    }
    breaker_redis_close(f);
    return 0;
}

static void run_hosts(enum path path) {
    struct test_redis r = {0};
    assert_int_equal(test_redis_start(&r), 0);
    sh = fleet_hosts_share(sizeof *sh);
    pid_t pids[NPROC];
    for (int i = 0; i < NPROC; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            int rc = host(&r, path);
            if (rc != 0) fprintf(stderr, "host %d: failed at step %d\n", i, rc);
            _exit(rc);
        }
    }
    int started = wait_count(&sh->ready, NPROC, 20000);
    atomic_store(&sh->go, 1);
    /* Two seconds of outage: about a dozen recovery rounds of 150 ms. */
    nap_ms(2000);
    atomic_store(&sh->dep.healthy, 1);
    /* Every host closes within bounded rounds (three leased successes, then
     * one flush interval for the others to follow), then stays closed for
     * another second. */
    int all_closed = wait_count(&sh->closed_hosts, NPROC, 20000);
    nap_ms(1000);
    atomic_store(&sh->stop, 1);
    int failed_child = fleet_hosts_reap(pids, NPROC);
    long long fleet_state = test_redis_int(&r, "HGET breaker:v2:{scope.svc}:s st");
    long long transitions = test_redis_int(&r, "HGET breaker:v2:{scope.svc}:s transitions");
    test_redis_stop(&r);
    printf("%s, %d hosts, half_open_max_probes 1: max probes in flight %d, probes %d "
           "(unleased %d), fleet transitions %lld; after recovery: %d hosts closed, "
           "%d reopenings, %d closed at the end, %d degraded\n",
           path == VIA_EXECUTOR ? "executor" : "registry", NPROC,
           atomic_load(&sh->dep.max_in_flight), atomic_load(&sh->dep.probes),
           atomic_load(&sh->dep.unleased), transitions, atomic_load(&sh->closed_hosts),
           atomic_load(&sh->reopened), atomic_load(&sh->final_closed),
           atomic_load(&sh->degraded_hosts));
    assert_true(started);
    assert_int_equal(failed_child, 0);
    assert_int_equal(atomic_load(&sh->degraded_hosts), 0);
    assert_int_equal(atomic_load(&sh->dep.max_in_flight), 1);
    assert_true(atomic_load(&sh->dep.probes) >= 2); /* recovery was tried and failed */
    assert_int_equal(atomic_load(&sh->dep.unleased), 0);
    assert_true(all_closed);
    assert_int_equal(atomic_load(&sh->reopened), 0);
    assert_int_equal(atomic_load(&sh->final_closed), NPROC);
    assert_int_equal(fleet_state, 0); /* CLOSED */
    munmap(sh, sizeof *sh);
}

static void through_the_executor_probes_hold_fleet_leases_and_every_host_recovers(void **state) {
    (void)state;
    run_hosts(VIA_EXECUTOR);
}

static void
through_a_fleet_registry_probes_hold_fleet_leases_and_every_host_recovers(void **state) {
    (void)state;
    run_hosts(VIA_REGISTRY);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(through_the_executor_probes_hold_fleet_leases_and_every_host_recovers),
        cmocka_unit_test(through_a_fleet_registry_probes_hold_fleet_leases_and_every_host_recovers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
