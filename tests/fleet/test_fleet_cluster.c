/* SPDX-License-Identifier: MIT */
/*
 * test_fleet_cluster.c - the fleet store on a real Redis Cluster
 * (docs/fleet.md, "Redis Cluster"): 3 masters with a replica each, started
 * by the test on free loopback ports (tests/support/redis_server.c, node timeout
 * 1 s, cluster-require-full-coverage no) and stopped on every path. Names
 * spread over the masters; a fleet trip by one host process reaches the
 * others once per generation and the probe cap holds across hosts; a
 * killed master's replica is promoted and its names rejoin; a slot
 * migrated while traffic runs is followed (ASK, then MOVED). Timeouts are
 * generous and every wait is bounded: what is asserted is what the library
 * promises, never how the machine schedules.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#define _POSIX_C_SOURCE 200809L

#include <breaker.h>
#include <breaker/redis.h>

#include "fleet_util.h"
#include "redis_server.h"
#include "store/redis/hiredis/net.h" /* breaker__redis_key_slot(): slots.c is compiled in */

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
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#define MS          ((uint64_t)1000000)
#define INTERVAL_MS 250
#define OPEN_MS     300
#define MASTERS     3

static struct test_cluster cluster;

#define mono_ns test_redis_now_ns
#define nap_ms  test_redis_nap_ms

/* ---- Helpers ------------------------------------------------------------------------ */

static unsigned slot_of_name(const char *name) {
    char key[300];
    snprintf(key, sizeof key, "breaker:v2:{%.200s}:s", name);
    return breaker__redis_key_slot(key, strlen(key));
}

/* A name whose slot master `m` served when the cluster was made. */
static void name_on_master(const char *prefix, int m, char *out, size_t len) {
    for (int i = 0;; i++) {
        snprintf(out, len, "%s-%d", prefix, i);
        if (slot_of_name(out) * MASTERS / 16384 == (unsigned)m) return;
    }
}

/* Why a handle degraded, printed for the log. */
static void print_degraded(void *ctx, int degraded, const char *why) {
    (void)ctx;
    if (degraded) printf("  (degraded: %s)\n", why);
}

/* Generous bounds: the tests decide on what the library promises.
 * `interval_ms`: the flusher's (0: the default). */
static breaker_redis *open_cluster_handle_every(uint64_t interval_ms) {
    breaker_redis_config rc;
    breaker_redis_config_init(&rc);
    if (interval_ms != 0) rc.flush_interval_ns = interval_ms * MS;
    rc.cluster_nodes = cluster.seeds;
    rc.io_timeout_ns = 1000 * MS;
    rc.probe_budget_ns = 300 * MS;
    rc.probe_budget_max_ns = 600 * MS;
    rc.on_degraded = print_degraded;
    breaker_redis *f = NULL;
    char msg[256] = "";
    if (breaker_redis_open(&rc, &f, msg, sizeof msg) != BREAKER_OK)
        fprintf(stderr, "open: %s\n", msg);
    return f;
}

static breaker_redis *open_cluster_handle(void) { return open_cluster_handle_every(0); }

static breaker *attach(breaker_redis *f, const char *name) {
    breaker_config cfg;
    fleet_dep_cfg(&cfg, OPEN_MS * MS, 5000 * MS);
    breaker *b = NULL;
    char msg[256] = "";
    int rc = breaker_redis_attach(f, name, &cfg, &b, msg, sizeof msg);
    if (rc != BREAKER_OK && rc != BREAKER_CONFIG_DIFFERS) fail_msg("attach %s: %s", name, msg);
    return b;
}

/* A flush round that succeeds, within `timeout_ms` (a loaded machine may
 * miss one io_timeout). */
static int flush_ok_within(breaker_redis *f, int timeout_ms) {
    uint64_t end = mono_ns() + (uint64_t)timeout_ms * MS;
    do {
        if (breaker_redis_flush(f) == BREAKER_OK) return 1;
        nap_ms(20);
    } while (mono_ns() < end);
    return 0;
}

/* A field of `name`'s fleet state, read from the master that serves it. */
static long long state_field(const char *name, const char *field) {
    int k = test_cluster_master_of(&cluster, slot_of_name(name));
    if (k < 0) return -1;
    redisReply *rep = test_cluster_command(&cluster, k, "HGET breaker:v2:{%s}:s %s", name, field);
    long long v = -1;
    if (rep != NULL && rep->type == REDIS_REPLY_STRING) v = strtoll(rep->str, NULL, 10);
    if (rep != NULL) freeReplyObject(rep);
    return v;
}

static long long node_int(int k, const char *fmt, const char *arg) {
    redisReply *rep = test_cluster_command(&cluster, k, fmt, arg);
    long long v = rep != NULL && rep->type == REDIS_REPLY_INTEGER ? rep->integer : -1;
    if (rep != NULL) freeReplyObject(rep);
    return v;
}

static void fail_until_open(breaker *b) {
    for (int i = 0; i < 20 && breaker_get_state(b) == BREAKER_CLOSED; i++) {
        breaker_permit p;
        if (breaker_acquire(b, &p) == BREAKER_OK) (void)breaker_complete(b, &p, BREAKER_FAILURE);
    }
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
}

/* ---- Slots ---------------------------------------------------------------------- */

/* CRC-16/XMODEM's check value, and the slot of a key with and without a
 * hash tag, against the cluster's own CLUSTER KEYSLOT. */
static void the_slot_of_a_key_is_the_clusters(void **state) {
    (void)state;
    assert_int_equal(breaker__redis_crc16("123456789", 9), 0x31C3);
    const char *keys[] = {"breaker:v2:{payments-db}:s",
                          "plain",
                          "{}x",
                          "a{}{b}",
                          "{a}{b}",
                          "x{tag",
                          "x}{y}",
                          "",
                          "breaker:v2:{n}:w"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        long long want = node_int(0, "CLUSTER KEYSLOT %s", keys[i]);
        assert_int_equal(breaker__redis_key_slot(keys[i], strlen(keys[i])), want);
    }
    for (int i = 0; i < 200; i++) {
        char name[32];
        snprintf(name, sizeof name, "name-%d", i);
        char key[64];
        snprintf(key, sizeof key, "breaker:v2:{%.31s}:q", name);
        assert_int_equal(slot_of_name(name), node_int(1, "CLUSTER KEYSLOT %s", key));
    }
}

/* ---- Configuration -------------------------------------------------------------------- */

static void expect_einval(const char *nodes, const char *unix_path, int db, const char *says) {
    breaker_redis_config rc;
    breaker_redis_config_init(&rc);
    rc.cluster_nodes = nodes;
    rc.unix_path = unix_path;
    rc.db = db;
    breaker_redis *f = NULL;
    char msg[256] = "";
    assert_int_equal(breaker_redis_open(&rc, &f, msg, sizeof msg), BREAKER_EINVAL);
    assert_null(f);
    if (strstr(msg, says) == NULL) fail_msg("\"%s\" does not say \"%s\"", msg, says);
}

static void a_bad_cluster_configuration_names_the_field(void **state) {
    (void)state;
    expect_einval("", NULL, 0, "cluster_nodes: empty");
    expect_einval("127.0.0.1", NULL, 0, "cluster_nodes: \"127.0.0.1\" is not host:port");
    expect_einval("127.0.0.1:7000,:7001", NULL, 0, "cluster_nodes: \":7001\" is not host:port");
    expect_einval("h:0", NULL, 0, "(port 1..65535)");
    expect_einval("h:65536", NULL, 0, "(port 1..65535)");
    expect_einval("h:70x", NULL, 0, "\"h:70x\"");
    expect_einval("h:7000", "/tmp/redis.sock", 0, "unix_path must be NULL");
    expect_einval("h:7000", NULL, 3, "db: a Redis Cluster has only db 0 (got 3)");
    /* A well-formed list opens (the nodes need not answer yet). */
    breaker_redis_config rc;
    breaker_redis_config_init(&rc);
    rc.cluster_nodes = " 127.0.0.1:1 , [::1]:2";
    breaker_redis *f = NULL;
    assert_int_equal(breaker_redis_open(&rc, &f, NULL, 0), BREAKER_OK);
    assert_int_equal(breaker_redis_degraded(f), 1);
    breaker_redis_close(f);
}

/* ---- Names over the masters ------------------------------------------------------------- */

/* 30 names, one handle: every name's state lands on the master of its slot,
 * and every master holds some. */
static void names_spread_over_the_three_masters(void **state) {
    (void)state;
    breaker_redis *f = open_cluster_handle_every(3600 * 1000); /* explicit rounds only */
    assert_non_null(f);
    enum { NAMES = 30 };
    char names[NAMES][32];
    for (int i = 0; i < NAMES; i++) {
        snprintf(names[i], sizeof names[i], "spread-%d", i);
        (void)attach(f, names[i]);
    }
    assert_true(flush_ok_within(f, 5000));
    int per_master[MASTERS] = {0};
    for (int i = 0; i < NAMES; i++) {
        int k = test_cluster_master_of(&cluster, slot_of_name(names[i]));
        assert_true(k >= 0 && k < MASTERS);
        per_master[k]++;
        char key[64];
        snprintf(key, sizeof key, "breaker:v2:{%.31s}:s", names[i]);
        for (int m = 0; m < MASTERS; m++) {
            redisReply *rep = test_cluster_command(&cluster, m, "EXISTS %s", key);
            assert_non_null(rep);
            /* On its master: 1. On another: a MOVED error. */
            if (m == k)
                assert_int_equal(rep->integer, 1);
            else
                assert_int_equal(rep->type, REDIS_REPLY_ERROR);
            freeReplyObject(rep);
        }
    }
    for (int m = 0; m < MASTERS; m++) {
        printf("master %d: %d names, dbsize %lld\n", m, per_master[m], node_int(m, "DBSIZE", NULL));
        assert_true(per_master[m] > 0);
        assert_true(node_int(m, "DBSIZE", NULL) >= per_master[m]);
    }
    breaker_redis_stats st;
    breaker_redis_stats_get(f, &st);
    assert_int_equal(st.degraded, 0);
    /* While the map is right, a round is one call per name, each on its
     * master, and no map read (CLUSTER SLOTS). */
    for (int m = 0; m < MASTERS; m++)
        (void)node_int(m, "CONFIG RESETSTAT", NULL);
    long long rounds = 5;
    for (int i = 0; i < rounds; i++)
        assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    long long evalsha = 0, slots = 0;
    for (int m = 0; m < MASTERS; m++) {
        long long e = test_redis_cmdstat(&cluster.node[m], "evalsha");
        long long c = test_redis_cmdstat(&cluster.node[m], "cluster|slots");
        printf("master %d: %lld EVALSHA, %lld CLUSTER SLOTS in %lld rounds\n", m, e, c, rounds);
        evalsha += e;
        slots += c;
    }
    assert_int_equal(evalsha, rounds * NAMES);
    assert_int_equal(slots, 0);
    breaker_redis_close(f);
}

/* An ACL user (ACLs are per node in a Cluster: made on every node): the
 * handle authenticates on every master it routes to, and a wrong password
 * is reported by the round, naming AUTH. */
static char last_why[256];
static void remember_why(void *ctx, int degraded, const char *why) {
    (void)ctx;
    if (degraded) snprintf(last_why, sizeof last_why, "%s", why);
}

static void an_acl_user_authenticates_on_every_node(void **state) {
    (void)state;
    for (int k = 0; k < cluster.count; k++)
        (void)node_int(k, "ACL SETUSER fleet-cl on >cl-pass ~breaker:* +@all", NULL);
    for (int wrong = 0; wrong < 2; wrong++) {
        breaker_redis_config rc;
        breaker_redis_config_init(&rc);
        rc.cluster_nodes = cluster.seeds;
        rc.io_timeout_ns = 1000 * MS;
        rc.flush_interval_ns = 3600ull * 1000 * MS; /* explicit rounds only */
        rc.username = "fleet-cl";
        rc.password = wrong ? "not-it" : "cl-pass";
        rc.on_degraded = remember_why;
        breaker_redis *f = NULL;
        assert_int_equal(breaker_redis_open(&rc, &f, NULL, 0), BREAKER_OK);
        for (int m = 0; m < MASTERS; m++) {
            char name[32];
            name_on_master("acl", m, name, sizeof name);
            (void)attach(f, name);
        }
        last_why[0] = '\0';
        if (wrong) {
            assert_int_equal(breaker_redis_flush(f), BREAKER_EIO);
            printf("wrong password: %s\n", last_why);
            assert_non_null(strstr(last_why, "AUTH"));
        } else {
            assert_true(flush_ok_within(f, 5000));
            for (int m = 0; m < MASTERS; m++) {
                char name[32];
                name_on_master("acl", m, name, sizeof name);
                assert_true(state_field(name, "gen") >= 1);
            }
        }
        breaker_redis_close(f);
    }
    for (int k = 0; k < cluster.count; k++)
        (void)node_int(k, "ACL DELUSER fleet-cl", NULL);
}

/* ---- A trip across host processes ------------------------------------------------------ */

#define HOSTS 4
struct shared {
    _Atomic int attached, tripped, followed, probed, settled, closed;
    _Atomic int admitted[MASTERS];
    _Atomic int opened_by_fleet[HOSTS];
};

static int wait_count(_Atomic int *c, int want, int timeout_ms) {
    for (int i = 0; i < timeout_ms / 2; i++) {
        if (atomic_load(c) >= want) return 1;
        nap_ms(2);
    }
    return 0;
}

/* One host process: attaches a name on each master; host 0 trips them;
 * each host then follows; after the fleet's wait each asks for one probe
 * per name; the one admitted succeeds; every host then closes. @return 0,
 * or the step that failed. */
static int host_main(int h, struct shared *sh, char names[MASTERS][32]) {
    breaker_redis *f = open_cluster_handle();
    if (f == NULL) return 10;
    breaker *b[MASTERS];
    for (int m = 0; m < MASTERS; m++)
        if ((b[m] = attach(f, names[m])) == NULL) return 11;
    if (!flush_ok_within(f, 5000)) return 12;
    atomic_fetch_add(&sh->attached, 1);
    if (!wait_count(&sh->attached, HOSTS, 20000)) return 13;
    if (h == 0) {
        for (int m = 0; m < MASTERS; m++)
            fail_until_open(b[m]);
        if (!flush_ok_within(f, 5000)) return 14; /* the fleet trips */
        atomic_store(&sh->tripped, 1);
    }
    if (!wait_count(&sh->tripped, 1, 20000)) return 15;
    if (h != 0) {
        if (!flush_ok_within(f, 5000)) return 16;
        int open = 0;
        for (int m = 0; m < MASTERS; m++)
            open += breaker_get_state(b[m]) == BREAKER_OPEN;
        atomic_store(&sh->opened_by_fleet[h], open);
    }
    atomic_fetch_add(&sh->followed, 1);
    if (!wait_count(&sh->followed, HOSTS, 20000)) return 17;
    /* Every local wait and the fleet's are over; one probe per name may
     * go, fleet-wide. */
    nap_ms(OPEN_MS + 200);
    breaker_permit p[MASTERS];
    int held[MASTERS] = {0};
    for (int m = 0; m < MASTERS; m++)
        if (breaker_acquire(b[m], &p[m]) == BREAKER_OK) {
            held[m] = 1;
            atomic_fetch_add(&sh->admitted[m], 1);
        }
    atomic_fetch_add(&sh->probed, 1);
    if (!wait_count(&sh->probed, HOSTS, 20000)) return 18;
    for (int m = 0; m < MASTERS; m++)
        if (held[m]) (void)breaker_complete(b[m], &p[m], BREAKER_SUCCESS);
    if (!flush_ok_within(f, 5000)) return 19; /* the fleet closes */
    atomic_fetch_add(&sh->settled, 1);
    if (!wait_count(&sh->settled, HOSTS, 20000)) return 20;
    /* Each host follows the close within a round. */
    uint64_t end = mono_ns() + 5000 * MS;
    int closed = 0;
    while (closed < MASTERS && mono_ns() < end) {
        (void)breaker_redis_flush(f);
        closed = 0;
        for (int m = 0; m < MASTERS; m++)
            closed += breaker_get_state(b[m]) == BREAKER_CLOSED;
    }
    if (closed < MASTERS) return 21;
    atomic_fetch_add(&sh->closed, 1);
    breaker_redis_close(f);
    return 0;
}

static void a_trip_reaches_every_host_once_and_the_probe_cap_holds(void **state) {
    (void)state;
    char names[MASTERS][32];
    for (int m = 0; m < MASTERS; m++)
        name_on_master("hosts", m, names[m], sizeof names[m]);
    struct shared *sh =
        mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(sh != MAP_FAILED);
    memset(sh, 0, sizeof *sh);
    pid_t pid[HOSTS];
    for (int h = 0; h < HOSTS; h++) {
        pid[h] = fork();
        assert_true(pid[h] >= 0);
        if (pid[h] == 0) _exit(host_main(h, sh, names));
    }
    for (int h = 0; h < HOSTS; h++) {
        int st = 0;
        assert_int_equal(waitpid(pid[h], &st, 0), pid[h]);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            fail_msg("host %d failed at step %d", h, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    }
    for (int h = 1; h < HOSTS; h++)
        assert_int_equal(atomic_load(&sh->opened_by_fleet[h]), MASTERS);
    for (int m = 0; m < MASTERS; m++) {
        printf("%s (master %d): trips %lld, probes admitted across %d hosts: %d\n", names[m], m,
               state_field(names[m], "trips"), HOSTS, atomic_load(&sh->admitted[m]));
        /* One trip for the generation; one probe fleet-wide. */
        assert_int_equal(state_field(names[m], "trips"), 1);
        assert_int_equal(atomic_load(&sh->admitted[m]), 1);
        assert_int_equal(state_field(names[m], "st"), 0);
    }
    munmap(sh, sizeof *sh);
}

/* Wait (at most `timeout_ms`) until `b` is OPEN, by its handle's own
 * flusher. @return the time it took in ms, or -1. */
static long follows_within(breaker *b, int timeout_ms) {
    uint64_t start = mono_ns(), end = start + (uint64_t)timeout_ms * MS;
    while (breaker_get_state(b) != BREAKER_OPEN) {
        if (mono_ns() >= end) return -1;
        nap_ms(2);
    }
    return (long)((mono_ns() - start) / MS);
}

/* ---- Failover ---------------------------------------------------------------------- */

/* Wait (at most `timeout_ms`) until every handle of `h` has made a good
 * round. @return the time it took, in ms, or -1. */
static long rejoined_within(breaker_redis **h, int n, int timeout_ms) {
    uint64_t start = mono_ns(), end = start + (uint64_t)timeout_ms * MS;
    for (;;) {
        int all = 1;
        for (int i = 0; i < n; i++)
            all &= breaker_redis_degraded(h[i]) == 0;
        if (all) return (long)((mono_ns() - start) / MS);
        if (mono_ns() >= end) return -1;
        nap_ms(5);
    }
}

/* The replica of node `k` (the node whose INFO replication names k's port). */
static int replica_of(int k) {
    char want[32];
    snprintf(want, sizeof want, "master_port:%d", cluster.node[k].port);
    for (int j = 0; j < cluster.count; j++) {
        redisReply *rep = test_cluster_command(&cluster, j, "INFO replication");
        int yes = rep != NULL && rep->type == REDIS_REPLY_STRING && strstr(rep->str, want);
        if (rep != NULL) freeReplyObject(rep);
        if (yes) return j;
    }
    return -1;
}

/* SIGKILL the master of a name: its replica is promoted (node timeout 1 s),
 * the handles read the new map and the name rejoins within two rounds of the
 * promotion; the fleet's rules hold on the new master (one trip, followed by
 * the other host). The killed node comes back as a replica. */
static void a_killed_master_fails_over_and_its_names_rejoin(void **state) {
    (void)state;
    char x[32];
    name_on_master("failover", 0, x, sizeof x);
    unsigned slot = slot_of_name(x);
    breaker_redis *h[2];
    breaker *b[2];
    for (int i = 0; i < 2; i++) {
        h[i] = open_cluster_handle();
        assert_non_null(h[i]);
        b[i] = attach(h[i], x);
        assert_true(flush_ok_within(h[i], 5000));
    }
    int k = test_cluster_master_of(&cluster, slot);
    int replica = replica_of(k);
    assert_true(k >= 0 && replica >= 0);
    uint64_t killed = mono_ns();
    test_redis_kill(&cluster.node[k]);
    /* Calls go on meanwhile, on the local breakers: never refused. */
    uint64_t end = killed + 30000 * MS;
    int promoted = 0, refused = 0;
    while (!promoted && mono_ns() < end) {
        for (int i = 0; i < 2; i++) {
            breaker_permit p;
            if (breaker_acquire(b[i], &p) == BREAKER_OK)
                (void)breaker_complete(b[i], &p, BREAKER_SUCCESS);
            else
                refused++;
        }
        promoted = test_cluster_master_of(&cluster, slot) == replica;
        nap_ms(20);
    }
    assert_true(promoted);
    assert_int_equal(test_cluster_wait_slot(&cluster, slot, replica, 20000), 0);
    long promoted_ms = (long)((mono_ns() - killed) / MS);
    /* Rejoined within two jittered intervals and a round's io_timeout. */
    long rejoin_ms = rejoined_within(h, 2, 2 * 300 + 1000 + 500);
    printf("master %d killed: replica %d promoted after %ld ms, handles rejoined %ld ms later, "
           "calls refused meanwhile %d\n",
           k, replica, promoted_ms, rejoin_ms, refused);
    assert_true(rejoin_ms >= 0);
    assert_int_equal(refused, 0);
    /* The rules on the new master: one trip, which the other host follows. */
    long long trips = state_field(x, "trips");
    fail_until_open(b[0]);
    assert_true(flush_ok_within(h[0], 5000));
    /* The staleness bound: the other host's own flusher brings the trip
     * within one jittered interval and a round (io_timeout 1 s). */
    long followed_ms = follows_within(b[1], 300 + 1000 + 500);
    printf("the other host followed after %ld ms\n", followed_ms);
    assert_true(followed_ms >= 0);
    assert_int_equal(state_field(x, "trips"), trips + 1);
    for (int i = 0; i < 2; i++)
        breaker_redis_close(h[i]);
    /* The killed node rejoins as the new master's replica. */
    assert_int_equal(test_redis_restart(&cluster.node[k]), 0);
    uint64_t back = mono_ns() + 30000 * MS;
    while (replica_of(replica) != k && mono_ns() < back)
        nap_ms(50);
    assert_int_equal(replica_of(replica), k);
    assert_int_equal(test_cluster_wait_slot(&cluster, slot, replica, 20000), 0);
}

/* A master down with its replica stopped (so no failover can start): the
 * names it serves fall back to their local breakers within one round (a
 * local probe needs no lease), while a name on a healthy master keeps the
 * fleet (a trip by one host reaches the other). Both recover when the
 * master is back. */
static void a_dead_master_degrades_only_its_own_names(void **state) {
    (void)state;
    char x[32], y[32];
    name_on_master("down-x", 0, x, sizeof x);
    name_on_master("down-y", 1, y, sizeof y);
    int k = test_cluster_master_of(&cluster, slot_of_name(x));
    int replica = replica_of(k);
    assert_true(k >= 0 && replica >= 0 && test_cluster_master_of(&cluster, slot_of_name(y)) != k);
    breaker_redis *h[2];
    breaker *bx[2], *by[2];
    for (int i = 0; i < 2; i++) {
        h[i] = open_cluster_handle();
        assert_non_null(h[i]);
        bx[i] = attach(h[i], x);
        by[i] = attach(h[i], y);
        assert_true(flush_ok_within(h[i], 5000));
    }
    test_redis_pause(&cluster.node[replica]);
    test_redis_kill(&cluster.node[k]);
    /* Within a round, each handle knows (its flusher's next round fails). */
    for (int i = 0; i < 2; i++) {
        uint64_t end = mono_ns() + (2 * 300 + 1000 + 500) * MS;
        while (!breaker_redis_degraded(h[i]) && mono_ns() < end)
            nap_ms(5);
        assert_int_equal(breaker_redis_degraded(h[i]), 1);
    }
    /* x: its local breaker alone. Tripped on host 0, the other host does not
     * follow, and after the local wait its probe goes ahead without a lease. */
    fail_until_open(bx[0]);
    (void)breaker_redis_flush(h[0]);
    (void)breaker_redis_flush(h[1]);
    assert_int_equal(breaker_get_state(bx[1]), BREAKER_CLOSED);
    nap_ms(OPEN_MS + 50);
    breaker_permit p;
    assert_int_equal(breaker_acquire(bx[0], &p), BREAKER_OK);
    assert_int_equal(breaker_complete(bx[0], &p, BREAKER_SUCCESS), BREAKER_OK);
    assert_int_equal(breaker_get_state(bx[0]), BREAKER_CLOSED);
    /* y: still the fleet's. */
    fail_until_open(by[0]);
    assert_int_equal(breaker_redis_flush(h[0]), BREAKER_EIO); /* x's call failed, y's answered */
    assert_int_equal(breaker_redis_flush(h[1]), BREAKER_EIO);
    assert_int_equal(breaker_get_state(by[1]), BREAKER_OPEN);
    assert_int_equal(state_field(y, "trips"), 1);
    breaker_redis_stats st;
    breaker_redis_stats_get(h[0], &st);
    printf("master %d down: host 0 degraded %d, flush errors %llu; %s local, %s followed the "
           "fleet\n",
           k, st.degraded, (unsigned long long)st.flush_errors, x, y);
    /* The master back (empty: nothing persists), its replica resumed. */
    assert_int_equal(test_redis_restart(&cluster.node[k]), 0);
    test_redis_resume(&cluster.node[replica]);
    assert_int_equal(test_cluster_wait_slot(&cluster, slot_of_name(x), k, 20000), 0);
    long rejoin_ms = rejoined_within(h, 2, 2 * 300 + 1000 + 500);
    printf("master back: handles rejoined after %ld ms\n", rejoin_ms);
    assert_true(rejoin_ms >= 0);
    uint64_t back = mono_ns() + 30000 * MS;
    while (replica_of(k) != replica && mono_ns() < back)
        nap_ms(50);
    assert_int_equal(replica_of(k), replica);
    for (int i = 0; i < 2; i++)
        breaker_redis_close(h[i]);
}

/* Two masters stopped (SIGSTOP, their replicas too, so nothing fails
 * over): a round writes every master's pipeline before reading any and
 * waits for all of them at once, so it ends one io_timeout_ns (1 s here)
 * after it began, not one per stalled master. */
static void a_round_waits_for_its_masters_at_once(void **state) {
    (void)state;
    breaker_redis *f = open_cluster_handle_every(3600 * 1000); /* explicit rounds only */
    assert_non_null(f);
    int stalled[4], n = 0;
    for (int m = 0; m < MASTERS; m++) {
        char name[32];
        name_on_master("stall", m, name, sizeof name);
        (void)attach(f, name);
        if (m == MASTERS - 1) continue;
        int k = test_cluster_master_of(&cluster, slot_of_name(name));
        assert_true(k >= 0);
        stalled[n++] = k;
        stalled[n++] = replica_of(k);
        assert_true(stalled[n - 1] >= 0);
    }
    assert_true(flush_ok_within(f, 5000));
    for (int i = 0; i < n; i++)
        test_redis_pause(&cluster.node[stalled[i]]);
    uint64_t t0 = mono_ns();
    int rc = breaker_redis_flush(f);
    uint64_t took_ms = (mono_ns() - t0) / MS;
    for (int i = 0; i < n; i++)
        test_redis_resume(&cluster.node[stalled[i]]);
    printf("a round with 2 of 3 masters stopped: %llu ms (io_timeout 1000 ms)\n",
           (unsigned long long)took_ms);
    assert_int_equal(rc, BREAKER_EIO);
    assert_true(took_ms >= 1000);
    assert_true(took_ms < 1000 + 600); /* one stalled master after the other: >= 2000 */
    assert_int_equal(
        test_cluster_wait_slot(&cluster, 0, test_cluster_master_of(&cluster, 0), 20000), 0);
    assert_true(flush_ok_within(f, 10000));
    breaker_redis_close(f);
}

/* ---- A slot migrated under traffic ------------------------------------------------------ */

struct traffic {
    breaker *b[2];
    _Atomic int stop;
    _Atomic long admitted, refused;
};

static void *traffic_main(void *arg) {
    struct traffic *t = arg;
    while (!atomic_load(&t->stop)) {
        for (int i = 0; i < 2; i++) {
            breaker_permit p;
            if (breaker_acquire(t->b[i], &p) == BREAKER_OK) {
                (void)breaker_complete(t->b[i], &p, BREAKER_SUCCESS);
                atomic_fetch_add(&t->admitted, 1);
            } else {
                atomic_fetch_add(&t->refused, 1);
            }
        }
        nap_ms(2);
    }
    return NULL;
}

static void node_ok(int k, const char *fmt, const char *a, const char *b) {
    redisReply *rep = test_cluster_command(&cluster, k, fmt, a, b);
    if (rep == NULL || rep->type == REDIS_REPLY_ERROR)
        fail_msg("node %d: %s: %s", k, fmt, rep ? rep->str : "no reply");
    freeReplyObject(rep);
}

/* MIGRATE every key of `slot` from node `from` to node `to`, in batches
 * (one MIGRATE each, so a name's keys move together). */
static void migrate_keys(int from, int to, unsigned slot) {
    redisContext *c = redisConnect("127.0.0.1", cluster.node[from].port);
    assert_true(c != NULL && !c->err);
    for (;;) {
        redisReply *keys = redisCommand(c, "CLUSTER GETKEYSINSLOT %u 100", slot);
        assert_non_null(keys);
        size_t n = keys->elements;
        if (n == 0) {
            freeReplyObject(keys);
            break;
        }
        const char *argv[110];
        size_t len[110];
        char port[16];
        snprintf(port, sizeof port, "%d", cluster.node[to].port);
        const char *head[] = {"MIGRATE", "127.0.0.1", port, "", "0", "5000", "KEYS"};
        size_t argc = 0;
        for (size_t i = 0; i < 7; i++, argc++) {
            argv[argc] = head[i];
            len[argc] = strlen(head[i]);
        }
        for (size_t i = 0; i < n; i++, argc++) {
            argv[argc] = keys->element[i]->str;
            len[argc] = keys->element[i]->len;
        }
        redisReply *rep = redisCommandArgv(c, (int)argc, argv, len);
        if (rep == NULL || rep->type == REDIS_REPLY_ERROR)
            fail_msg("MIGRATE: %s", rep ? rep->str : "no reply");
        freeReplyObject(rep);
        freeReplyObject(keys);
    }
    redisFree(c);
}

/* A name's slot moves to another master while two hosts call and flush:
 * between MIGRATE and SETSLOT NODE the old master answers ASK (followed with
 * ASKING, the map kept), after it MOVED (the map updated); no healthy call
 * is refused, the name's keys end on the new master, and the fleet's rules
 * hold there. */
static void a_slot_migrated_while_traffic_runs_is_followed(void **state) {
    (void)state;
    char z[32];
    name_on_master("migrate", 1, z, sizeof z);
    unsigned slot = slot_of_name(z);
    int from = test_cluster_master_of(&cluster, slot);
    int to = test_cluster_master_of(&cluster, 16383);
    assert_true(from >= 0 && to >= 0 && from != to);
    struct traffic t;
    memset(&t, 0, sizeof t);
    breaker_redis *h[2];
    for (int i = 0; i < 2; i++) {
        h[i] = open_cluster_handle();
        assert_non_null(h[i]);
        t.b[i] = attach(h[i], z);
        assert_true(flush_ok_within(h[i], 5000));
    }
    /* A third host that only makes rounds when told: its map stays the old
     * one until then. A name on the migration's target gives it a probe
     * connection there. */
    breaker_redis *late = open_cluster_handle_every(3600 * 1000);
    assert_non_null(late);
    char w[32];
    name_on_master("migrate-w", 2, w, sizeof w);
    breaker *late_z = attach(late, z);
    (void)attach(late, w);
    assert_true(flush_ok_within(late, 5000));
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, traffic_main, &t), 0);
    nap_ms(2 * INTERVAL_MS);
    char s[16];
    snprintf(s, sizeof s, "%u", slot);
    node_ok(to, "CLUSTER SETSLOT %s IMPORTING %s", s, cluster.id[from]);
    node_ok(from, "CLUSTER SETSLOT %s MIGRATING %s", s, cluster.id[to]);
    migrate_keys(from, to, slot);
    /* The keys are on the importing node: the old master answers ASK, which
     * the round follows (ASKING, the map kept). The importing node runs a
     * script there only if all its keys exist; the name holds no lease (no
     * :l key), so it answers TRYAGAIN until the slot is its own: the name's
     * call fails in such rounds (Redis's rule for multi-key commands in a
     * slot being migrated). */
    breaker_redis_stats st0;
    breaker_redis_stats_get(h[0], &st0);
    uint64_t asked = st0.redirects_ask;
    (void)breaker_redis_flush(h[0]);
    breaker_redis_stats_get(h[0], &st0);
    assert_true(st0.redirects_ask > asked);
    nap_ms(INTERVAL_MS);
    for (int m = 0; m < cluster.count; m++)
        if (cluster.node[m].pid > 0 && test_cluster_master_of(&cluster, 0) >= 0) {
            redisReply *rep =
                test_cluster_command(&cluster, m, "CLUSTER SETSLOT %s NODE %s", s, cluster.id[to]);
            if (rep != NULL) freeReplyObject(rep);
        }
    assert_int_equal(test_cluster_wait_slot(&cluster, slot, to, 20000), 0);
    /* The slot is the new master's: MOVED, the map updated. */
    for (int i = 0; i < 2; i++)
        assert_true(flush_ok_within(h[i], 5000));
    nap_ms(2 * INTERVAL_MS);
    atomic_store(&t.stop, 1);
    assert_int_equal(pthread_join(th, NULL), 0);
    breaker_redis_stats st[2];
    for (int i = 0; i < 2; i++) {
        breaker_redis_stats_get(h[i], &st[i]);
        printf("host %d: redirects: moved %llu, ask %llu; flushes %llu, flush errors %llu\n", i,
               (unsigned long long)st[i].redirects_moved, (unsigned long long)st[i].redirects_ask,
               (unsigned long long)st[i].flushes, (unsigned long long)st[i].flush_errors);
        assert_true(st[i].redirects_moved >= 1);
    }
    char text[4096];
    assert_int_equal(breaker_redis_export_prometheus(h[0], text, sizeof text, NULL), BREAKER_OK);
    /* The flusher keeps running: the export's count lies between the stats
     * read before it and the stats read after it. */
    breaker_redis_stats after;
    breaker_redis_stats_get(h[0], &after);
    const char *series = "breaker_fleet_redirects_total{kind=\"moved\"} ";
    const char *at = strstr(text, series);
    assert_non_null(at);
    unsigned long long exported = strtoull(at + strlen(series), NULL, 10);
    assert_true(exported >= st[0].redirects_moved && exported <= after.redirects_moved);
    printf("calls during the migration: %ld admitted, %ld refused\n", atomic_load(&t.admitted),
           atomic_load(&t.refused));
    assert_int_equal(atomic_load(&t.refused), 0);
    /* The name lives on the new master now, and the old one redirects. */
    char key[64];
    snprintf(key, sizeof key, "breaker:v2:{%.31s}:s", z);
    assert_int_equal(node_int(to, "EXISTS %s", key), 1);
    assert_int_equal(node_int(from, "EXISTS %s", key), -1); /* MOVED */
    /* A MOVED is learned once: a round now goes straight to the new master. */
    uint64_t moved = st[0].redirects_moved;
    assert_true(flush_ok_within(h[0], 5000));
    breaker_redis_stats_get(h[0], &st0);
    assert_int_equal(st0.redirects_moved, moved);
    /* The rules on the new master: one trip, which the other host follows. */
    long long trips = state_field(z, "trips");
    fail_until_open(t.b[0]);
    assert_true(flush_ok_within(h[0], 5000));
    /* The staleness bound: the other host's own flusher brings the trip
     * within one jittered interval and a round (io_timeout 1 s). */
    long followed_ms = follows_within(t.b[1], 300 + 1000 + 500);
    printf("the other host followed after %ld ms\n", followed_ms);
    assert_true(followed_ms >= 0);
    assert_int_equal(state_field(z, "trips"), trips + 1);
    /* The late host's lease request goes to the old master, which answers
     * MOVED: followed to the new master within the budget, which answers it
     * (granted or refused: the fleet is open from the trip above), no lease
     * error. */
    fail_until_open(late_z);
    nap_ms(OPEN_MS + 50);
    breaker_redis_stats ls;
    breaker_redis_stats_get(late, &ls);
    breaker_permit lp;
    if (breaker_acquire(late_z, &lp) == BREAKER_OK)
        (void)breaker_complete(late_z, &lp, BREAKER_SUCCESS);
    breaker_redis_stats ls2;
    breaker_redis_stats_get(late, &ls2);
    printf("late host's probe: redirects moved %llu -> %llu, lease errors %llu -> %llu, "
           "answered %llu -> %llu\n",
           (unsigned long long)ls.redirects_moved, (unsigned long long)ls2.redirects_moved,
           (unsigned long long)ls.lease_errors, (unsigned long long)ls2.lease_errors,
           (unsigned long long)(ls.leases_granted + ls.leases_refused),
           (unsigned long long)(ls2.leases_granted + ls2.leases_refused));
    assert_int_equal(ls2.redirects_moved, ls.redirects_moved + 1);
    assert_int_equal(ls2.lease_errors, ls.lease_errors);
    assert_int_equal(ls2.leases_granted + ls2.leases_refused,
                     ls.leases_granted + ls.leases_refused + 1);
    breaker_redis_close(late);
    for (int i = 0; i < 2; i++)
        breaker_redis_close(h[i]);
}

/* ---- Main -------------------------------------------------------------------------- */

static int setup(void **state) {
    (void)state;
    return test_cluster_start(&cluster, MASTERS, 1, 1000) == 0 ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    test_cluster_stop(&cluster);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_slot_of_a_key_is_the_clusters),
        cmocka_unit_test(a_bad_cluster_configuration_names_the_field),
        cmocka_unit_test(names_spread_over_the_three_masters),
        cmocka_unit_test(an_acl_user_authenticates_on_every_node),
        cmocka_unit_test(a_trip_reaches_every_host_once_and_the_probe_cap_holds),
        cmocka_unit_test(a_round_waits_for_its_masters_at_once),
        cmocka_unit_test(a_slot_migrated_while_traffic_runs_is_followed),
        cmocka_unit_test(a_dead_master_degrades_only_its_own_names),
        cmocka_unit_test(a_killed_master_fails_over_and_its_names_rejoin),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
