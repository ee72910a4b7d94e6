/* SPDX-License-Identifier: MIT */
/*
 * test_fleet_sentinel.c - the fleet store behind Redis Sentinel (issue 37,
 * docs/redis-production.md "Sentinel"), with real Sentinels
 * (redis-server --sentinel, as Debian's redis-sentinel runs it): a master,
 * two replicas and three Sentinels on loopback, started by the test.
 *
 *  - A handle finds the master through the Sentinels; a master name they
 *    do not know is a configuration error; Sentinels that do not answer are
 *    an outage, and a master known already is kept meanwhile.
 *  - The master SIGKILLed while the fleet is open: three hosts, each with
 *    its flusher and a caller thread, find the promoted replica within the
 *    stated bound (one round of theirs after the Sentinels name it); the
 *    fleet's open state and generation survive the switch; after it, the
 *    recovery probes hold fleet leases, at most half_open_max_probes at
 *    once across the hosts; and the fleet makes exactly the transitions a
 *    run without a failover makes (one trip per generation: none more).
 *  - A graceful failover (SENTINEL FAILOVER: the old master stays up as a
 *    replica, answering writes with READONLY): the hosts move to the new
 *    master and their rounds keep being answered.
 */
#define _POSIX_C_SOURCE 200809L

#include "fleet_util.h"
#include "redis_server.h"
#include "run_tool.h"

#define BREAKER_BACKEND_EXPERIMENTAL
#include <breaker/backend.h> /* breaker_permit_gate_token() */
#include <breaker/redis.h>

#include <hiredis/hiredis.h>

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#define MS       ((uint64_t)1000000)
#define HOSTS    3
#define INTERVAL (250 * MS)  /* the hosts' flush interval */
#define IO       (1000 * MS) /* their io_timeout_ns */
#define OPEN_NS  (8000 * MS) /* the fleet's open wait: longer than a failover */
/* The stated bound (docs/redis-production.md): a host uses the new master
 * from its first round that starts after the Sentinels name it, so within
 * one interval (jittered: 1.2 x) and that round (io_timeout_ns) of it; a
 * round already under way when they do may fail first: twice that. */
#define JOIN_BOUND_NS (2 * (INTERVAL + INTERVAL / 5 + IO))

static struct test_sentinels set;

static uint64_t now_ns(void) { return test_redis_now_ns(); }

static void nap_ms(long ms) { test_redis_nap_ms(ms); }

/* The handle of a host, through the Sentinels. */
static breaker_redis *open_host(const char *master, uint64_t interval_ns) {
    breaker_redis_config rc;
    fleet_patient_cfg(&rc);
    rc.sentinel_nodes = set.addrs;
    rc.sentinel_master = master;
    rc.flush_interval_ns = interval_ns;
    rc.io_timeout_ns = IO;
    rc.probe_budget_ns = 500 * MS;
    return fleet_open_or_fail(&rc);
}

/* HGET of `name`'s state on data node `k`. */
static long long state_of(int k, const char *name, const char *field) {
    return test_redis_int(&set.node[k], "HGET breaker:v2:{%s}:s %s", name, field);
}

/* ---- Finding the master ------------------------------------------------------------- */

static void a_handle_finds_the_master_through_the_sentinels(void **state) {
    (void)state;
    breaker_redis *f = open_host(set.master_name, 3600 * 1000 * MS);
    (void)fleet_attach_or_fail(f, "sentinel.find", NULL);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    assert_int_equal(breaker_redis_degraded(f), BREAKER_REDIS_JOINED);
    int m = test_sentinels_master(&set);
    assert_true(m >= 0);
    assert_int_equal(state_of(m, "sentinel.find", "st"), 0); /* written on the master */
    breaker_redis_close(f);
    /* A master no Sentinel watches: a configuration error. */
    breaker_redis_config rc;
    fleet_patient_cfg(&rc);
    rc.sentinel_nodes = set.addrs;
    rc.sentinel_master = "no-such-master";
    assert_true(fleet_round_fails(&rc, BREAKER_REDIS_MISCONFIGURED,
                                  "Sentinel: no master named 'no-such-master'"));
    /* No Sentinel answers: an outage. */
    rc.sentinel_nodes = "127.0.0.1:1,127.0.0.1:2";
    rc.sentinel_master = set.master_name;
    assert_true(fleet_round_fails(&rc, BREAKER_REDIS_DEGRADED, "Sentinel: no Sentinel answered"));
    /* Refused at open. */
    char msg[256];
    rc.sentinel_master = NULL;
    assert_int_equal(breaker_redis_open(&rc, &f, msg, sizeof msg), BREAKER_EINVAL);
    assert_string_equal(msg, "sentinel_nodes: set without sentinel_master");
    rc.sentinel_master = "m";
    rc.sentinel_nodes = "127.0.0.1";
    assert_int_equal(breaker_redis_open(&rc, &f, msg, sizeof msg), BREAKER_EINVAL);
    assert_non_null(strstr(msg, "sentinel_nodes: \"127.0.0.1\" is not host:port"));
}

/* ---- A failover under a fleet ------------------------------------------------------- */

/* A host: its handle, its breaker and a caller thread calling the
 * dependency without pause. */
struct host {
    breaker_redis *f;
    breaker *b;
    pthread_t caller;
    _Atomic int opened; /* transitions to OPEN of its breaker */
};

static struct host hosts[HOSTS];
static _Atomic int healthy;   /* the dependency answers */
static _Atomic int stop;      /* the callers stop */
static _Atomic int in_flight; /* leased probes running, all hosts */
static _Atomic int max_in_flight;
static _Atomic int leased;       /* leased probes run */
static _Atomic int local_probes; /* probes without a lease (a degraded host's) */

static void on_event(void *ctx, breaker *b, const breaker_event *e) {
    (void)b;
    struct host *h = ctx;
    if (e->to == BREAKER_OPEN) atomic_fetch_add(&h->opened, 1);
}

static void *caller(void *arg) {
    struct host *h = arg;
    while (!atomic_load(&stop)) {
        breaker_permit p;
        if (breaker_acquire(h->b, &p) != BREAKER_OK) {
            nap_ms(5);
            continue;
        }
        int probe = breaker_permit_is_probe(&p);
        int lease = breaker_permit_gate_token(&p) != 0;
        if (lease) {
            int now = atomic_fetch_add(&in_flight, 1) + 1;
            int seen = atomic_load(&max_in_flight);
            while (now > seen && !atomic_compare_exchange_weak(&max_in_flight, &seen, now)) {
            }
            atomic_fetch_add(&leased, 1);
        } else if (probe) {
            atomic_fetch_add(&local_probes, 1);
        }
        nap_ms(probe ? 100 : 2); /* a probe takes a while: others try meanwhile */
        if (lease) atomic_fetch_sub(&in_flight, 1);
        (void)breaker_complete(h->b, &p, atomic_load(&healthy) ? BREAKER_SUCCESS : BREAKER_FAILURE);
    }
    return NULL;
}

static void start_hosts(const char *name) {
    atomic_store(&stop, 0);
    atomic_store(&in_flight, 0);
    atomic_store(&max_in_flight, 0);
    atomic_store(&leased, 0);
    atomic_store(&local_probes, 0);
    for (int i = 0; i < HOSTS; i++) {
        struct host *h = &hosts[i];
        memset(h, 0, sizeof *h);
        h->f = open_host(set.master_name, INTERVAL);
        breaker_config c;
        fleet_dep_cfg(&c, OPEN_NS, 30000 * MS);
        c.on_event = on_event;
        c.event_ctx = h;
        char msg[256] = "";
        assert_int_equal(breaker_redis_attach(h->f, name, &c, &h->b, msg, sizeof msg), BREAKER_OK);
        assert_int_equal(pthread_create(&h->caller, NULL, caller, h), 0);
    }
}

static void stop_hosts(void) {
    atomic_store(&stop, 1);
    for (int i = 0; i < HOSTS; i++) {
        pthread_join(hosts[i].caller, NULL);
        breaker_redis_close(hosts[i].f);
    }
}

/* Wait (at most `ms`) until every host's breaker is `want`. */
static int all_in(enum breaker_state want, int ms) {
    for (int waited = 0; waited <= ms; waited += 10) {
        int n = 0;
        for (int i = 0; i < HOSTS; i++)
            n += breaker_get_state(hosts[i].b) == want;
        if (n == HOSTS) return 1;
        nap_ms(10);
    }
    return 0;
}

/* The fleet's generation now, on the master the Sentinels name. */
static long long fleet_gen(const char *name) {
    return state_of(test_sentinels_master(&set), name, "gen");
}

/* One outage and recovery of `name` under HOSTS hosts: the dependency
 * fails until the fleet is open on every host, then `during_open` runs,
 * then it recovers. @return the fleet generations it took (the last
 * generation minus the one before the trip). */
static long long outage(const char *name, void (*during_open)(const char *name)) {
    atomic_store(&healthy, 0);
    start_hosts(name);
    assert_true(all_in(BREAKER_OPEN, 20000));
    /* ... and the fleet, in Redis (the hosts' next rounds). */
    for (int waited = 0; state_of(test_sentinels_master(&set), name, "st") != 1; waited += 10) {
        if (waited > 20000) fail_msg("%s: the fleet did not open in Redis", name);
        nap_ms(10);
    }
    long long before = fleet_gen(name);
    if (during_open != NULL) during_open(name);
    atomic_store(&healthy, 1);
    assert_true(all_in(BREAKER_CLOSED, 30000));
    long long after = fleet_gen(name);
    stop_hosts();
    int opened = 0;
    for (int i = 0; i < HOSTS; i++)
        opened += atomic_load(&hosts[i].opened);
    printf("  %s: generations %lld -> %lld, hosts opened %d times, %d leased probes (at most %d "
           "at once), %d probes without a lease\n",
           name, before, after, opened, atomic_load(&leased), atomic_load(&max_in_flight),
           atomic_load(&local_probes));
    /* The probe cap: leased probes, across the hosts. */
    assert_true(atomic_load(&leased) >= 1);
    assert_true(atomic_load(&max_in_flight) <= 1);
    return after - before;
}

/* The master SIGKILLed while the fleet is open: the Sentinels promote a
 * replica; each host must be on it within the bound. */
static void kill_master(const char *name) {
    int old = test_sentinels_master(&set);
    long long gen = state_of(old, name, "gen");
    nap_ms(100); /* the trip's writes reach the replicas (asynchronous) */
    test_redis_kill(&set.node[old]);
    uint64_t killed = now_ns();
    int m = test_sentinels_wait_failover(&set, old, 60000);
    assert_true(m >= 0);
    uint64_t named = now_ns();
    printf("  master %d killed; the Sentinels named %d after %.0f ms\n", old, m,
           (double)(named - killed) / 1e6);
    for (int i = 0; i < HOSTS; i++) {
        struct host *h = &hosts[i];
        uint64_t end = named + 10 * JOIN_BOUND_NS; /* looked at longer than the bound */
        breaker_redis_stats st;
        uint64_t flushes = 0;
        for (;;) {
            breaker_redis_stats_get(h->f, &st);
            if (st.master_switches >= 1 && st.degraded == 0 && flushes != 0 && st.flushes > flushes)
                break;
            if (st.master_switches >= 1 && flushes == 0) flushes = st.flushes;
            if (now_ns() > end)
                fail_msg("host %d: not on the new master after %.0f ms", i,
                         (double)(now_ns() - named) / 1e6);
            nap_ms(2);
        }
        uint64_t joined = now_ns();
        printf(
            "  host %d: on the new master %.0f ms after the Sentinels named it (bound %.0f ms)\n",
            i, ((double)joined - (double)named) / 1e6, (double)JOIN_BOUND_NS / 1e6);
        assert_true(joined <= named + JOIN_BOUND_NS);
    }
    /* The open state and its generation came across with the replica. */
    assert_int_equal(state_of(m, name, "st"), 1);
    assert_int_equal(state_of(m, name, "gen"), gen);
}

static void a_failover_keeps_one_trip_per_generation_and_the_probe_cap(void **state) {
    (void)state;
    long long plain = outage("sentinel.plain", NULL);
    long long failed_over = outage("sentinel.killed", kill_master);
    assert_int_equal(failed_over, plain);
}

/* A graceful failover: the old master stays up, a replica now. */
static void switch_gracefully(const char *name) {
    (void)name;
    int old = test_sentinels_master(&set);
    redisContext *c = redisConnect("127.0.0.1", set.sentinel[0].port);
    assert_true(c != NULL && !c->err);
    redisReply *r = redisCommand(c, "SENTINEL FAILOVER %s", set.master_name);
    assert_true(r != NULL && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    redisFree(c);
    int m = test_sentinels_wait_failover(&set, old, 60000);
    assert_true(m >= 0);
    uint64_t named = now_ns();
    for (int i = 0; i < HOSTS; i++) {
        breaker_redis_stats st;
        for (;;) {
            breaker_redis_stats_get(hosts[i].f, &st);
            if (st.master_switches >= 1 && st.degraded == 0) break;
            if (now_ns() > named + 10 * JOIN_BOUND_NS) fail_msg("host %d did not move", i);
            nap_ms(2);
        }
    }
    printf("  graceful failover: %d -> %d, every host moved\n", old, m);
}

static void a_graceful_failover_moves_the_hosts(void **state) {
    (void)state;
    long long plain = outage("sentinel.plain2", NULL);
    long long switched = outage("sentinel.graceful", switch_gracefully);
    assert_int_equal(switched, plain);
}

/* `breaker exec --redis-sentinel ... --redis-master ...` runs through the
 * master the Sentinels name. */
static void breaker_exec_finds_the_master(void **state) {
    (void)state;
    const char *tool = getenv("BREAKER_TEST_TOOL");
    if (tool == NULL) skip();
    char err[] = "/tmp/breaker-sentinel-err-XXXXXX";
    int fd = mkstemp(err);
    assert_true(fd >= 0);
    close(fd);
    const char *args[] = {"exec",    "sentinel.cli",   "--redis-sentinel",
                          set.addrs, "--redis-master", set.master_name,
                          "--",      "false",          NULL};
    assert_int_equal(test_run_tool(tool, err, args), 1); /* false's status: it ran */
    assert_false(test_file_says(err, "unreachable"));
    int m = test_sentinels_master(&set);
    assert_int_equal(state_of(m, "sentinel.cli", "st"), 0);
    /* Its failure reached the master's window (the last round at exit). */
    assert_true(test_redis_int(&set.node[m], "HLEN breaker:v2:{sentinel.cli}:w") >= 1);
    unlink(err);
}

static int setup(void **state) {
    (void)state;
    return test_sentinels_start(&set, 2, 3, 1000);
}

static int teardown(void **state) {
    (void)state;
    test_sentinels_stop(&set);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_handle_finds_the_master_through_the_sentinels),
        cmocka_unit_test(breaker_exec_finds_the_master),
        cmocka_unit_test(a_failover_keeps_one_trip_per_generation_and_the_probe_cap),
        cmocka_unit_test(a_graceful_failover_moves_the_hosts),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
