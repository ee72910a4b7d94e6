/* SPDX-License-Identifier: MIT */
/*
 * test_fleet_controls.c - the fleet's shadow mode and live limits
 * (include/breaker/redis.h: fleet_set_shadow(), _limits_get(),
 * _reconfigure(); docs/fleet.md, "Controls")
 * against a real redis-server, with four host processes (fork), each with
 * its own fleet handle calling one dependency, and the test's own handle
 * making the changes as an operator's host would:
 *  - shadow on reaches every host; none refuses a call while the
 *    dependency fails and the fleet trips, probes and reopens (events with
 *    shadow = 1); off: every host enforces again;
 *  - a shadowed breaker whose probe the fleet's lease refuses admits it
 *    and counts a would-reject;
 *  - new limits reach every host (breaker_config_get(), a RECONFIGURED
 *    event), the fleet's wait follows them, a host attaching later adopts
 *    them; what cannot change live is refused naming it; a moved
 *    generation is a conflict;
 *  - a corrupt field of the control record (ch, cv, cr, a limit) is named
 *    and the state rebuilt.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, mkdtemp */
#define _POSIX_C_SOURCE 200809L

#include <breaker.h>
#include <breaker/redis.h>
#include <breaker/store.h>

#include "fleet_control.h"
#include "fleet_hosts.h"
#include "fleet_util.h"
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
#include <hiredis/hiredis.h>

#define MS    ((uint64_t)1000000)
#define NHOST 4
#define NAME  "ctl.svc"
#define SKEY  "breaker:v2:{" NAME "}:s"

/* One host's view, written by that host only. */
struct host_view {
    _Atomic int state;  /* breaker_get_state() after its last call */
    _Atomic int shadow; /* breaker_shadow() */
    _Atomic long admitted, refused;
    _Atomic long would_reject; /* the four would_reject_* counters */
    _Atomic int shadow_events; /* transitions reported with shadow = 1 */
    _Atomic int reconfigured;  /* RECONFIGURED events */
    _Atomic long min_calls;    /* breaker_get_config() */
    _Atomic long open_ms;
    _Atomic long cfg_gen; /* breaker_config_generation() */
    _Atomic long rounds;  /* its flush rounds Redis answered */
    _Atomic long reconfigs_applied;
    _Atomic long shadow_applied;
};

struct shared {
    _Atomic int ready, stop, failing;
    char store_path[256]; /* "": each process its own host; else the host's store file */
    struct host_view host[NHOST];
};

static struct shared *sh;
static int child_index;

static void nap_ms(long ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void on_event(void *ctx, breaker *b, const breaker_event *ev) {
    (void)ctx;
    (void)b;
    struct host_view *v = &sh->host[child_index];
    if (ev->reason == BREAKER_REASON_RECONFIGURED)
        atomic_fetch_add(&v->reconfigured, 1);
    else if (ev->shadow)
        atomic_fetch_add(&v->shadow_events, 1);
}

/* fleet_window_cfg() without jitter: the waits the tests expect exactly. */
static void config(breaker_config *cfg) {
    fleet_window_cfg(cfg);
    cfg->open_jitter = 0;
}

static breaker_redis *open_fleet_on(const struct test_redis *r, uint64_t interval_ns,
                                    breaker_store *st) {
    breaker_redis_config rc;
    breaker_redis_config_init(&rc);
    rc.store = st;
    rc.port = r->port;
    rc.flush_interval_ns = interval_ns;
    rc.io_timeout_ns = 2000 * MS; /* a loaded machine does not degrade a host */
    rc.probe_budget_ns = 500 * MS;
    breaker_redis *f = NULL;
    return breaker_redis_open(&rc, &f, NULL, 0) == BREAKER_OK ? f : NULL;
}

static breaker_redis *open_fleet(const struct test_redis *r, uint64_t interval_ns) {
    return open_fleet_on(r, interval_ns, NULL);
}

static int host(const struct test_redis *r, int i) {
    child_index = i;
    breaker_store *store = NULL;
    if (sh->store_path[0] != '\0' &&
        breaker_store_open(sh->store_path, NULL, &store, NULL, 0) != BREAKER_OK)
        return 1;
    breaker_redis *fleet = open_fleet_on(r, 50 * MS, store);
    /* With a store file, a process that flushes no name has no round of
     * its own to make. */
    if (fleet == NULL || (breaker_redis_flush(fleet) != BREAKER_OK && store == NULL)) return 2;
    breaker_config cfg;
    config(&cfg);
    cfg.on_event = on_event;
    breaker *b = NULL;
    int rc = breaker_redis_attach(fleet, NAME, &cfg, &b, NULL, 0);
    if (rc != BREAKER_OK && rc != BREAKER_CONFIG_DIFFERS) return 3;
    struct host_view *v = &sh->host[i];
    atomic_fetch_add(&sh->ready, 1);
    pid_t parent = getppid();
    while (fleet_host_running(&sh->stop, parent)) {
        fleet_host_call(b, &sh->failing, &v->admitted, &v->refused);
        atomic_store(&v->state, (int)breaker_get_state(b));
        atomic_store(&v->shadow, breaker_shadow(b));
        breaker_stats s;
        breaker_stats_get(b, &s);
        atomic_store(&v->would_reject, (long)(s.would_reject_open + s.would_reject_half_open +
                                              s.would_reject_forced + s.would_reject_ramp));
        breaker_config now;
        breaker_get_config(b, &now);
        atomic_store(&v->min_calls, (long)now.min_calls);
        atomic_store(&v->open_ms, (long)(now.open_ns / MS));
        atomic_store(&v->cfg_gen, (long)breaker_config_generation(b));
        breaker_redis_stats st;
        breaker_redis_stats_get(fleet, &st);
        atomic_store(&v->rounds, (long)st.flushes);
        atomic_store(&v->reconfigs_applied, (long)st.reconfigs_applied);
        atomic_store(&v->shadow_applied, (long)st.shadow_applied);
        nap_ms(2);
    }
    breaker_redis_close(fleet);
    if (store != NULL) breaker_store_close(store);
    return 0;
}

_Static_assert(NHOST <= FLEET_WORLD_HOSTS, "a fleet_world holds the hosts");

/* `store`: the NHOST processes are one host sharing a store file there. */
static void start_on(struct fleet_world *w, int failing, const char *store) {
    memset(w, 0, sizeof *w);
    assert_int_equal(test_redis_start(&w->r), 0);
    sh = fleet_hosts_share(sizeof *sh);
    snprintf(sh->store_path, sizeof sh->store_path, "%s", store != NULL ? store : "");
    atomic_store(&sh->failing, failing);
    fleet_hosts_fork(w->pid, NHOST, host, &w->r);
    fleet_hosts_wait_ready(&sh->ready, NHOST);
    int going = 0;
    for (int t = 0; t < 20000 && going < NHOST; t++) {
        going = 0;
        for (int i = 0; i < NHOST; i++)
            going += atomic_load(&sh->host[i].rounds) >= 3;
        /* With a store file one process of the host flushes the name. */
        if (store != NULL && going > 0) going = NHOST;
        nap_ms(1);
    }
    assert_int_equal(going, NHOST);
    /* The operator's handle flushes rarely: the hosts' rounds carry the change. */
    w->op = open_fleet(&w->r, 5000 * MS);
    assert_non_null(w->op);
    breaker_config cfg;
    config(&cfg);
    int rc = breaker_redis_attach(w->op, NAME, &cfg, &w->b, NULL, 0);
    assert_true(rc == BREAKER_OK || rc == BREAKER_CONFIG_DIFFERS);
}

static void start(struct fleet_world *w, int failing) { start_on(w, failing, NULL); }

static void finish(struct fleet_world *w) {
    fleet_world_finish(w, NHOST, &sh->stop, sh, sizeof *sh);
}

static long total(_Atomic long *(*field)(struct host_view *)) {
    long n = 0;
    for (int i = 0; i < NHOST; i++)
        n += atomic_load(field(&sh->host[i]));
    return n;
}
static _Atomic long *admitted_of(struct host_view *v) { return &v->admitted; }
static _Atomic long *refused_of(struct host_view *v) { return &v->refused; }
static _Atomic long *would_of(struct host_view *v) { return &v->would_reject; }

/* Wait (at most `ms`) until every host's shadow mode is `want`. @return the
 * time it took in ms, or -1. */
static long wait_shadow(int want, long ms) {
    uint64_t t0 = test_redis_now_ns();
    while ((test_redis_now_ns() - t0) / MS < (uint64_t)ms) {
        int n = 0;
        for (int i = 0; i < NHOST; i++)
            n += atomic_load(&sh->host[i].shadow) == want;
        if (n == NHOST) return (long)((test_redis_now_ns() - t0) / MS);
        nap_ms(1);
    }
    return -1;
}

static void
fleet_shadow_mode_reaches_every_host_and_none_refuses_while_the_fleet_trips(void **state) {
    (void)state;
    struct fleet_world w;
    start(&w, 0);
    char msg[256] = "";
    int rc =
        fleet_set_shadow(w.op, NAME, 1, "alice@ops-1", "trying the new limits", msg, sizeof msg);
    if (rc != BREAKER_OK) fprintf(stderr, "set_shadow: %s\n", msg);
    assert_int_equal(rc, BREAKER_OK);
    long took = wait_shadow(1, 5000);
    /* The dependency fails: the fleet trips, waits, leases one probe,
     * reopens, again and again; no host refuses a call. */
    long refused = total(refused_of), admitted = total(admitted_of);
    atomic_store(&sh->failing, 1);
    nap_ms(1500);
    long refused_after = total(refused_of), admitted_after = total(admitted_of);
    long would = total(would_of);
    long long trips = test_redis_int(&w.r, "HGET " SKEY " trips");
    long long transitions = test_redis_int(&w.r, "HGET " SKEY " transitions");
    int events = 0;
    for (int i = 0; i < NHOST; i++)
        events += atomic_load(&sh->host[i].shadow_events) > 0;
    breaker_redis_control_state lim;
    assert_int_equal(breaker_redis_control_get(w.op, NAME, &lim, msg, sizeof msg), BREAKER_OK);
    /* Off: every host enforces again, from the state it is in. */
    assert_int_equal(fleet_set_shadow(w.op, NAME, 0, "alice@ops-1", "done", msg, sizeof msg),
                     BREAKER_OK);
    long off_took = wait_shadow(0, 5000);
    long refused_off = total(refused_of);
    nap_ms(1000);
    long refused_off_after = total(refused_of);
    printf("shadow on: every host in shadow mode %ld ms after the change (flush interval 50 ms); "
           "with the dependency failing for 1.5 s: %ld calls admitted, %ld refused, %ld "
           "would-rejects; fleet trips %lld, transitions %lld; hosts with shadow events %d of "
           "%d; stored: shadow %d seq %llu by %s (%s); off: %ld ms, then %ld refused in 1 s\n",
           took, admitted_after - admitted, refused_after - refused, would, trips, transitions,
           events, NHOST, lim.shadow, (unsigned long long)lim.version, lim.who, lim.why, off_took,
           refused_off_after - refused_off);
    finish(&w);
    assert_true(took >= 0);
    assert_int_equal(refused_after - refused, 0);
    assert_true(admitted_after - admitted > 100);
    assert_true(would > 0);
    assert_true(trips >= 1);
    assert_int_equal(events, NHOST);
    assert_int_equal(lim.shadow, 1);
    assert_int_equal(lim.version, 2); /* as made, then shadow on */
    assert_string_equal(lim.who, "alice@ops-1");
    assert_string_equal(lim.why, "trying the new limits");
    assert_true(off_took >= 0);
    assert_true(refused_off_after - refused_off > 100);
}

/* The fleet open, its wait over, and its one lease taken by another host:
 * a shadowed host's probe is refused by the fleet's lease gate, and shadow
 * mode admits it (a would-reject), where an enforcing host refuses. */
static void a_shadowed_probe_the_fleet_refuses_is_admitted_and_counted(void **state) {
    (void)state;
    struct test_redis r = {0};
    assert_int_equal(test_redis_start(&r), 0);
    breaker_redis *a = open_fleet(&r, 5000 * MS), *c = open_fleet(&r, 5000 * MS);
    assert_non_null(a);
    assert_non_null(c);
    breaker_config cfg;
    config(&cfg);
    cfg.open_ns = 100 * MS;
    cfg.open_max_ns = 100 * MS;
    cfg.open_jitter = 0;
    breaker *ba = NULL, *bc = NULL;
    assert_int_equal(breaker_redis_attach(a, NAME, &cfg, &ba, NULL, 0), BREAKER_OK);
    assert_int_equal(breaker_redis_attach(c, NAME, &cfg, &bc, NULL, 0), BREAKER_OK);
    char msg[256] = "";
    /* Trip the fleet with host a's failures. */
    for (int i = 0; i < 20; i++) {
        breaker_permit p;
        if (breaker_acquire(ba, &p) == BREAKER_OK) (void)breaker_complete(ba, &p, BREAKER_FAILURE);
    }
    assert_int_equal(breaker_redis_flush(a), BREAKER_OK);
    assert_int_equal(breaker_redis_flush(c), BREAKER_OK);
    assert_int_equal(breaker_get_state(bc), BREAKER_OPEN);
    nap_ms(150); /* the fleet's wait and the local ones are over */
    /* Host a probes first and holds the fleet's one lease. */
    breaker_permit held;
    assert_int_equal(breaker_acquire(ba, &held), BREAKER_OK);
    /* Enforcing, host c's probe is refused by the fleet's lease. */
    breaker_permit p;
    int enforcing = breaker_acquire(bc, &p);
    breaker_stats before;
    breaker_stats_get(bc, &before);
    /* Shadowed (the fleet's shadow mode, applied by c's round): admitted. */
    assert_int_equal(fleet_set_shadow(a, NAME, 1, "t", "probe", msg, sizeof msg), BREAKER_OK);
    assert_int_equal(breaker_redis_flush(c), BREAKER_OK);
    int shadowed = breaker_shadow(bc);
    nap_ms(120); /* past the lease gate's retry time of the first refusal */
    breaker_redis_stats fs0, fs1;
    breaker_redis_stats_get(c, &fs0);
    int in_shadow = breaker_acquire(bc, &p);
    breaker_redis_stats_get(c, &fs1);
    breaker_stats after;
    breaker_stats_get(bc, &after);
    if (in_shadow == BREAKER_OK) (void)breaker_complete(bc, &p, BREAKER_SUCCESS);
    printf("a probe refused by the fleet's lease: enforcing %s; shadowed (%d) %s, would-rejects "
           "%llu -> %llu, lease requests refused %llu -> %llu (gated %llu -> %llu)\n",
           breaker_strerror(enforcing), shadowed, breaker_strerror(in_shadow),
           (unsigned long long)(before.would_reject_open + before.would_reject_half_open),
           (unsigned long long)(after.would_reject_open + after.would_reject_half_open),
           (unsigned long long)fs0.leases_refused, (unsigned long long)fs1.leases_refused,
           (unsigned long long)fs0.lease_gated, (unsigned long long)fs1.lease_gated);
    (void)breaker_complete(ba, &held, BREAKER_SUCCESS);
    breaker_redis_close(a);
    breaker_redis_close(c);
    test_redis_stop(&r);
    assert_true(enforcing == BREAKER_REJECTED_HALF_OPEN || enforcing == BREAKER_REJECTED_OPEN);
    assert_int_equal(shadowed, 1);
    assert_int_equal(in_shadow, BREAKER_OK);
    assert_true(after.would_reject_open + after.would_reject_half_open >
                before.would_reject_open + before.would_reject_half_open);
    /* The fleet's gate was asked (or its refusal remembered): it refused. */
    assert_true(fs1.leases_refused + fs1.lease_gated > fs0.leases_refused + fs0.lease_gated);
}

static void new_fleet_limits_reach_every_host_and_a_later_attacher(void **state) {
    (void)state;
    struct fleet_world w;
    start(&w, 0);
    char msg[256] = "";
    breaker_redis_control_state lim;
    assert_int_equal(breaker_redis_control_get(w.op, NAME, &lim, msg, sizeof msg), BREAKER_OK);
    assert_int_equal(lim.version, 1); /* as the first attacher made it */
    assert_int_equal(lim.limits.min_calls, 10);
    breaker_config next = lim.limits;
    next.min_calls = 20;
    next.open_ns = 3000 * MS; /* far above the old longest wait, 400 ms */
    next.open_max_ns = 6000 * MS;
    int rc =
        fleet_reconfigure(w.op, NAME, &next, 0, "bob@ops-2", "fewer false trips", msg, sizeof msg);
    if (rc != BREAKER_OK) fprintf(stderr, "reconfigure: %s\n", msg);
    assert_int_equal(rc, BREAKER_OK);
    uint64_t t0 = test_redis_now_ns();
    int seen = 0;
    while (seen < NHOST && test_redis_now_ns() - t0 < 5000 * MS) {
        seen = 0;
        for (int i = 0; i < NHOST; i++)
            seen += atomic_load(&sh->host[i].min_calls) == 20 &&
                    atomic_load(&sh->host[i].open_ms) == 3000 &&
                    atomic_load(&sh->host[i].cfg_gen) == 2;
        nap_ms(1);
    }
    long took = (long)((test_redis_now_ns() - t0) / MS);
    int events = 0;
    for (int i = 0; i < NHOST; i++)
        events += atomic_load(&sh->host[i].reconfigured) == 1;
    breaker_redis_control_state after;
    assert_int_equal(breaker_redis_control_get(w.op, NAME, &after, msg, sizeof msg), BREAKER_OK);
    /* A conflict: the version read (1) has moved. */
    next.min_calls = 30;
    int conflict = fleet_reconfigure(w.op, NAME, &next, 1, "carol", "", msg, sizeof msg);
    char conflict_msg[256];
    snprintf(conflict_msg, sizeof conflict_msg, "%s", msg);
    /* The fleet's open wait follows the new limits: a trip waits 300 ms. */
    atomic_store(&sh->failing, 1);
    long long until = 0, gen = 0;
    for (int t = 0; t < 5000 && test_redis_int(&w.r, "HGET " SKEY " st") != 1; t++)
        nap_ms(1);
    redisContext *c = redisConnect("127.0.0.1", w.r.port);
    redisReply *rt = redisCommand(c, "TIME");
    redisReply *ru = redisCommand(c, "HMGET " SKEY " until gen k");
    long long now_us = atoll(rt->element[0]->str) * 1000000 + atoll(rt->element[1]->str);
    until = atoll(ru->element[0]->str);
    gen = atoll(ru->element[1]->str);
    long long k = atoll(ru->element[2]->str);
    freeReplyObject(rt);
    freeReplyObject(ru);
    redisFree(c);
    atomic_store(&sh->failing, 0);
    /* A host attaching now, with the old limits, gets the new ones. */
    breaker_redis *late = open_fleet(&w.r, 50 * MS);
    assert_non_null(late);
    breaker_config old;
    config(&old);
    breaker *lb = NULL;
    int lrc = breaker_redis_attach(late, NAME, &old, &lb, NULL, 0);
    breaker_config lc;
    breaker_get_config(lb, &lc);
    breaker_redis_close(late);
    printf("new limits (min_calls 10 -> 20, open 200 ms -> 3 s): on every host %ld ms after the "
           "change (%d of %d seen, RECONFIGURED events on %d); stored generation %llu by %s (%s); "
           "a stale generation: %s (%s); the fleet's next open wait %lld ms left (k %lld, gen "
           "%lld); a later attacher: %s, min_calls %u, open %llu ms\n",
           took, seen, NHOST, events, (unsigned long long)after.version, after.who, after.why,
           breaker_strerror(conflict), conflict_msg, (until - now_us) / 1000, k, gen,
           breaker_strerror(lrc), lc.min_calls, (unsigned long long)(lc.open_ns / MS));
    finish(&w);
    assert_int_equal(seen, NHOST);
    assert_int_equal(events, NHOST);
    assert_int_equal(after.version, 2);
    assert_int_equal(after.limits.min_calls, 20);
    assert_string_equal(after.who, "bob@ops-2");
    assert_string_equal(after.why, "fewer false trips");
    assert_int_equal(conflict, BREAKER_STALE);
    assert_non_null(strstr(conflict_msg, "version 2, not 1"));
    /* The wait is the new open (3 s, k 0, no jitter) less what passed
     * since the trip: far above the old limits' longest (400 ms). */
    assert_int_equal(k, 0);
    assert_true(until - now_us <= 3000 * 1000);
    assert_true(until - now_us > 2000 * 1000);
    assert_int_equal(lrc, BREAKER_CONFIG_DIFFERS);
    assert_int_equal(lc.min_calls, 20);
    assert_int_equal(lc.open_ns, 3000 * MS);
}

/* One redis-server and one handle (flushing only when asked) with the name
 * attached. */
static breaker_redis *solo(struct test_redis *r, breaker **b) {
    memset(r, 0, sizeof *r);
    assert_int_equal(test_redis_start(r), 0);
    breaker_redis *f = open_fleet(r, 5000 * MS);
    assert_non_null(f);
    breaker_config cfg;
    config(&cfg);
    assert_int_equal(breaker_redis_attach(f, NAME, &cfg, b, NULL, 0), BREAKER_OK);
    return f;
}

/* solo(), and the fleet's stored limits as the first attacher stored them. */
static breaker_redis *solo_limits(struct test_redis *r, breaker **b,
                                  breaker_redis_control_state *lim) {
    breaker_redis *f = solo(r, b);
    char msg[256] = "";
    int rc = breaker_redis_control_get(f, NAME, lim, msg, sizeof msg);
    if (rc != BREAKER_OK) fprintf(stderr, "limits_get: %s\n", msg);
    assert_int_equal(rc, BREAKER_OK);
    return f;
}

static void what_cannot_change_live_is_refused_naming_it(void **state) {
    (void)state;
    struct test_redis r;
    breaker *b = NULL;
    char msg[256] = "";
    breaker_redis_control_state lim;
    breaker_redis *f = solo_limits(&r, &b, &lim);
    breaker_config c;
    int rc[4];
    char why[4][256];
    c = lim.limits;
    c.window_ns = 4000 * MS;
    rc[0] = fleet_reconfigure(f, NAME, &c, 0, NULL, NULL, why[0], sizeof why[0]);
    c = lim.limits;
    c.window_buckets = 20;
    rc[1] = fleet_reconfigure(f, NAME, &c, 0, NULL, NULL, why[1], sizeof why[1]);
    c = lim.limits;
    c.half_open_max_probes = 2;
    rc[2] = fleet_reconfigure(f, NAME, &c, 0, NULL, NULL, why[2], sizeof why[2]);
    c = lim.limits;
    c.trip = BREAKER_TRIP_CONSECUTIVE;
    c.failure_threshold = 5;
    rc[3] = fleet_reconfigure(f, NAME, &c, 0, NULL, NULL, why[3], sizeof why[3]);
    c = lim.limits;
    c.min_calls = 0; /* the default: valid */
    c.failure_rate = 2;
    int invalid = fleet_reconfigure(f, NAME, &c, 0, NULL, NULL, msg, sizeof msg);
    char invalid_msg[256];
    snprintf(invalid_msg, sizeof invalid_msg, "%s", msg);
    long long cg = test_redis_int(&r, "HGET " SKEY " cv") - 1; /* changes made */
    for (int i = 0; i < 4; i++)
        printf("refused: %s (%s)\n", why[i], breaker_strerror(rc[i]));
    printf("invalid: %s (%s); cg stored: %lld\n", invalid_msg, breaker_strerror(invalid), cg);
    breaker_redis_close(f);
    test_redis_stop(&r);
    for (int i = 0; i < 4; i++)
        assert_int_equal(rc[i], BREAKER_EINVAL);
    assert_non_null(strstr(why[0], "window: 2000000us -> 4000000us cannot change live"));
    assert_non_null(strstr(why[1], "window_buckets: 10 -> 20 cannot change live"));
    assert_non_null(strstr(why[2], "half_open_max_probes: 1 -> 2 cannot change live"));
    assert_non_null(strstr(why[3], "trip: a window -> consecutive cannot change live"));
    assert_int_equal(invalid, BREAKER_EINVAL);
    assert_non_null(strstr(invalid_msg, "failure_rate"));
    assert_int_equal(cg, 0); /* nothing written */
}

/* Limits equal to the stored ones change nothing (redis.h,
 * fleet_reconfigure()): no write, the generation, who and why stay,
 * so no host reconfigures; a field the fleet does not store (each host's
 * own, such as slow_call_ns) is no change of the fleet's either. */
static void the_same_limits_again_change_nothing(void **state) {
    (void)state;
    struct test_redis r;
    breaker *b = NULL;
    char msg[256] = "";
    breaker_redis_control_state lim;
    breaker_redis *f = solo_limits(&r, &b, &lim);
    breaker_config c = lim.limits;
    c.min_calls = lim.limits.min_calls + 5;
    assert_int_equal(fleet_reconfigure(f, NAME, &c, 0, "alice", "a real change", msg, sizeof msg),
                     BREAKER_OK);
    int same = fleet_reconfigure(f, NAME, &c, 2, "bob", "the same again", msg, sizeof msg);
    c.slow_call_ns = lim.limits.slow_call_ns + 7 * MS; /* a host's own field */
    int own = fleet_reconfigure(f, NAME, &c, 2, "carol", "not the fleet's", msg, sizeof msg);
    breaker_redis_control_state after;
    int got = breaker_redis_control_get(f, NAME, &after, msg, sizeof msg);
    long long cg = test_redis_int(&r, "HGET " SKEY " cv");
    breaker_redis_close(f);
    test_redis_stop(&r);
    assert_int_equal(same, BREAKER_OK);
    assert_int_equal(own, BREAKER_OK);
    assert_int_equal(got, BREAKER_OK);
    assert_int_equal(cg, 2);
    assert_int_equal(after.version, 2);
    assert_int_equal(after.limits.min_calls, lim.limits.min_calls + 5);
    assert_string_equal(after.who, "alice");
    assert_string_equal(after.why, "a real change");
}

/* A half-open fleet whose counted successes already meet the new, lower
 * half_open_successes, with no lease out: no release is left to close it
 * (the release closes), and every lease request is refused (the successes
 * are in), so the reconfig closes it, as the last release would have. With
 * a lease out, the state stays for that lease's release to decide. */
static void fewer_successes_close_a_half_open_fleet_with_none_out(void **state) {
    (void)state;
    for (int with_lease = 0; with_lease < 2; with_lease++) {
        struct test_redis r = {0};
        assert_int_equal(test_redis_start(&r), 0);
        breaker_redis *f = open_fleet(&r, 5000 * MS);
        assert_non_null(f);
        breaker_config cfg;
        config(&cfg);
        cfg.half_open_max_probes = 2;
        cfg.half_open_successes = 3;
        cfg.probe_timeout_ns = 10000 * MS;
        (void)fleet_attach_or_fail(f, NAME, &cfg);
        long long gen = test_redis_int(&r, "HGET " SKEY " gen");
        /* HALF_OPEN with 2 of 3 successes in (a valid state: at most
         * probes + successes), a lease out or none. */
        (void)test_redis_int(&r, "HSET " SKEY " st 2 succ 2");
        if (with_lease) {
            /* Due 5 s from now (Redis's clock): within the probe timeout. */
            redisContext *c = redisConnect("127.0.0.1", r.port);
            redisReply *t = redisCommand(c, "TIME");
            long long now_us = atoll(t->element[0]->str) * 1000000 + atoll(t->element[1]->str);
            freeReplyObject(t);
            freeReplyObject(
                redisCommand(c, "ZADD breaker:v2:{" NAME "}:l %lld feed", now_us + 5000000LL));
            redisFree(c);
        }
        char msg[256] = "";
        breaker_redis_control_state lim;
        assert_int_equal(breaker_redis_control_get(f, NAME, &lim, msg, sizeof msg), BREAKER_OK);
        lim.limits.half_open_successes = 2;
        int rc = fleet_reconfigure(f, NAME, &lim.limits, lim.version, "t", "", msg, sizeof msg);
        long long st = test_redis_int(&r, "HGET " SKEY " st");
        long long gen_after = test_redis_int(&r, "HGET " SKEY " gen");
        long long succ = test_redis_int(&r, "HGET " SKEY " succ");
        printf("half-open, 2 successes in, %s lease out; successes 3 -> 2: %s (%s), state %lld, "
               "generation +%lld, succ %lld\n",
               with_lease ? "a" : "no", breaker_strerror(rc), msg, st, gen_after - gen, succ);
        breaker_redis_close(f);
        test_redis_stop(&r);
        assert_int_equal(rc, BREAKER_OK);
        if (with_lease) {
            assert_int_equal(st, 2); /* the lease's release decides */
            assert_int_equal(gen_after, gen);
        } else {
            assert_int_equal(st, 0); /* closed, a new generation */
            assert_int_equal(gen_after, gen + 1);
        }
    }
}

/* A host whose local breaker cannot take the fleet's new limits (a
 * COUNT_WINDOW breaker of 20 calls, min_calls 30: breaker_config_validate()
 * refuses) keeps its own, counts the refusal once, and the fleet's limits
 * are changed all the same (redis.h, fleet_reconfigure()). */
static void a_host_that_refuses_the_limits_keeps_its_own_and_counts_it(void **state) {
    (void)state;
    struct test_redis r = {0};
    assert_int_equal(test_redis_start(&r), 0);
    breaker_redis *hf = open_fleet(&r, 5000 * MS), *op = open_fleet(&r, 5000 * MS);
    assert_non_null(hf);
    assert_non_null(op);
    breaker_config cw;
    config(&cw);
    cw.trip = BREAKER_TRIP_COUNT_WINDOW;
    cw.window_size = 20;
    breaker *hb = NULL, *ob = NULL;
    assert_int_equal(breaker_redis_attach(hf, NAME, &cw, &hb, NULL, 0), BREAKER_OK);
    breaker_config tw;
    config(&tw);
    int arc = breaker_redis_attach(op, NAME, &tw, &ob, NULL, 0);
    assert_true(arc == BREAKER_OK || arc == BREAKER_CONFIG_DIFFERS);
    char msg[256] = "";
    breaker_redis_control_state lim;
    assert_int_equal(breaker_redis_control_get(op, NAME, &lim, msg, sizeof msg), BREAKER_OK);
    lim.limits.min_calls = 30;
    lim.limits.open_ns = 300 * MS;
    int rc = fleet_reconfigure(op, NAME, &lim.limits, lim.version, "t", "", msg, sizeof msg);
    assert_int_equal(breaker_redis_flush(hf), BREAKER_OK);
    assert_int_equal(breaker_redis_flush(hf), BREAKER_OK); /* heard once */
    breaker_redis_stats st;
    breaker_redis_stats_get(hf, &st);
    breaker_config now;
    breaker_get_config(hb, &now);
    breaker_redis_control_state after;
    assert_int_equal(breaker_redis_control_get(op, NAME, &after, msg, sizeof msg), BREAKER_OK);
    char prom[8192];
    size_t len = 0;
    assert_int_equal(breaker_redis_export_prometheus(hf, prom, sizeof prom, &len), BREAKER_OK);
    printf("a count window of 20 told min_calls 30: reconfigure %s; the host: refused %llu, "
           "applied %llu, min_calls %u, open %llu ms; the fleet's: generation %llu, min_calls "
           "%u\n",
           breaker_strerror(rc), (unsigned long long)st.reconfigs_refused,
           (unsigned long long)st.reconfigs_applied, now.min_calls,
           (unsigned long long)(now.open_ns / MS), (unsigned long long)after.version,
           after.limits.min_calls);
    breaker_redis_close(op);
    breaker_redis_close(hf);
    test_redis_stop(&r);
    assert_int_equal(rc, BREAKER_OK);
    assert_int_equal(st.reconfigs_refused, 1);
    assert_int_equal(st.reconfigs_applied, 0);
    assert_int_equal(now.min_calls, 10); /* its own, whole: */
    assert_int_equal(now.open_ns, 200 * MS);
    assert_int_equal(after.version, 2);
    assert_int_equal(after.limits.min_calls, 30);
    assert_non_null(strstr(prom, "breaker_fleet_reconfigs_total{result=\"refused\"} 1\n"));
}

/* A host attaching after the fleet was shadowed gets what is in force
 * (redis.h): its first round sets its new breaker's shadow mode, once;
 * and after the fleet's off, a host attaching then enforces. */
static void a_host_attaching_later_gets_the_fleets_shadow_mode(void **state) {
    (void)state;
    struct test_redis r;
    breaker *b = NULL;
    breaker_redis *op = solo(&r, &b);
    char msg[256] = "";
    assert_int_equal(fleet_set_shadow(op, NAME, 1, "t", "", msg, sizeof msg), BREAKER_OK);
    breaker_redis *late = open_fleet(&r, 5000 * MS);
    assert_non_null(late);
    breaker_config cfg;
    config(&cfg);
    breaker *lb = fleet_attach_or_fail(late, NAME, &cfg);
    assert_int_equal(breaker_redis_flush(late), BREAKER_OK);
    int first = breaker_shadow(lb);
    assert_int_equal(breaker_redis_flush(late), BREAKER_OK);
    breaker_redis_stats st;
    breaker_redis_stats_get(late, &st);
    assert_int_equal(fleet_set_shadow(op, NAME, 0, "t", "", msg, sizeof msg), BREAKER_OK);
    breaker_redis *later = open_fleet(&r, 5000 * MS);
    assert_non_null(later);
    breaker *lb2 = NULL;
    cfg.on_event = NULL;
    assert_int_equal(breaker_redis_attach(later, NAME, &cfg, &lb2, NULL, 0), BREAKER_OK);
    assert_int_equal(breaker_set_shadow(lb2, 1), BREAKER_OK); /* its own, before its round */
    assert_int_equal(breaker_redis_flush(later), BREAKER_OK);
    int then = breaker_shadow(lb2);
    printf("attached after shadow on: shadow %d after its first round (applied %llu over two); "
           "attached after off, shadowed on its own: %d after its first round\n",
           first, (unsigned long long)st.shadow_applied, then);
    breaker_redis_close(later);
    breaker_redis_close(late);
    breaker_redis_close(op);
    test_redis_stop(&r);
    assert_int_equal(first, 1);
    assert_int_equal(st.shadow_applied, 1);
    assert_int_equal(then, 0); /* the fleet's mode in force: off */
}

/* What one in-process host heard: its trip's event (outside trip) and its
 * shadow bit. */
static struct { int trips, shadowed_trips; } heard;

static void on_heard(void *ctx, breaker *b, const breaker_event *ev) {
    (void)ctx;
    (void)b;
    if (ev->reason == BREAKER_REASON_OUTSIDE_TRIP) {
        heard.trips++;
        heard.shadowed_trips += ev->shadow != 0;
    }
}

/* A round that hears both the fleet's trip and shadow mode turned on (the
 * mode set, then another host's deltas tripped the fleet, between two of
 * this host's rounds): the mode comes first, so the trip is a would-open
 * (event.shadow = 1) and the host refuses nothing, not even between the
 * two. */
static void a_trip_heard_with_shadow_on_is_a_would_open(void **state) {
    (void)state;
    struct test_redis r;
    breaker *a = NULL;
    breaker_redis *fa = solo(&r, &a);
    breaker_redis *fb = open_fleet(&r, 60000 * MS); /* rounds only when asked */
    assert_non_null(fb);
    breaker_config cfg;
    config(&cfg);
    cfg.on_event = on_heard;
    breaker *b = fleet_attach_or_fail(fb, NAME, &cfg);
    assert_int_equal(breaker_redis_flush(fb), BREAKER_OK);
    memset(&heard, 0, sizeof heard);
    char msg[256] = "";
    assert_int_equal(fleet_set_shadow(fa, NAME, 1, "t", "trial", msg, sizeof msg), BREAKER_OK);
    /* Host a's failures trip the fleet (its window: 10 calls at least). */
    for (int i = 0; i < 20; i++) {
        breaker_permit p;
        if (breaker_acquire(a, &p) == BREAKER_OK) (void)breaker_complete(a, &p, BREAKER_FAILURE);
    }
    assert_int_equal(breaker_redis_flush(fa), BREAKER_OK);
    long long fleet_state = test_redis_int(&r, "HGET " SKEY " st");
    assert_int_equal(breaker_redis_flush(fb), BREAKER_OK); /* hears both */
    breaker_stats st;
    breaker_stats_get(b, &st);
    breaker_permit p;
    int after = breaker_acquire(b, &p);
    if (after == BREAKER_OK) (void)breaker_complete(b, &p, BREAKER_SUCCESS);
    printf("fleet state %lld; host b: %d outside trip(s), %d shadowed; state %s, shadow %d, "
           "acquire after: %s\n",
           fleet_state, heard.trips, heard.shadowed_trips, breaker_state_name(st.state), st.shadow,
           breaker_strerror(after));
    breaker_redis_close(fb);
    breaker_redis_close(fa);
    test_redis_stop(&r);
    assert_int_equal(fleet_state, 1);
    assert_int_equal(heard.trips, 1);
    assert_int_equal(heard.shadowed_trips, 1);
    assert_int_equal(st.shadow, 1);
    assert_int_equal(after, BREAKER_OK);
}

/* A stored control field out of range: the next script call names it and
 * rebuilds the state (as for every stored field). */
static void corrupt_control_fields_are_named_and_rebuilt(void **state) {
    (void)state;
    static const struct {
        const char *set, *named;
    } cases[] = {
        {"HSET " SKEY " ch 2", "field ch = 2, expected 0..1"},
        {"HSET " SKEY " cv -1", "field cv = -1, expected 1.."},
        {"HSET " SKEY " cr x", "field cr = x, expected 0.."},
        {"HSET " SKEY " min_calls 0", "field min_calls = 0, expected 1..1000000"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct test_redis r;
        breaker *b = NULL;
        breaker_redis *f = solo(&r, &b);
        char msg[256] = "";
        assert_int_equal(fleet_set_shadow(f, NAME, 1, "t", "", msg, sizeof msg), BREAKER_OK);
        breaker_redis_control_state lim;
        assert_int_equal(breaker_redis_control_get(f, NAME, &lim, msg, sizeof msg), BREAKER_OK);
        lim.limits.min_calls = 30;
        assert_int_equal(fleet_reconfigure(f, NAME, &lim.limits, 0, "t", "", msg, sizeof msg),
                         BREAKER_OK);
        assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
        int applied = breaker_shadow(b) == 1;
        breaker_config now;
        breaker_get_config(b, &now);
        (void)test_redis_int(&r, cases[i].set);
        int frc = breaker_redis_flush(f);
        redisContext *c = redisConnect("127.0.0.1", r.port);
        redisReply *rb = redisCommand(c, "HMGET " SKEY " why rebuilt ch cv");
        int rebuilt = rb->element[0]->type == REDIS_REPLY_STRING &&
                      strcmp(rb->element[0]->str, "rebuilt") == 0;
        int named = rb->element[1]->type == REDIS_REPLY_STRING &&
                    strstr(rb->element[1]->str, cases[i].named) != NULL;
        printf("%s: flush %s, rebuilt %d, reason %s\n", cases[i].set, breaker_strerror(frc),
               rebuilt, rb->element[1]->type == REDIS_REPLY_STRING ? rb->element[1]->str : "-");
        int cleared = rb->element[2]->type == REDIS_REPLY_NIL;
        freeReplyObject(rb);
        redisFree(c);
        /* The state made anew is the record every host converges to: made
         * from the limits the flusher ran (30), with no control (shadow
         * off). */
        assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
        int kept = breaker_shadow(b) == 0;
        breaker_config kept_cfg;
        breaker_get_config(b, &kept_cfg);
        breaker_redis_close(f);
        test_redis_stop(&r);
        assert_true(applied);
        assert_int_equal(now.min_calls, 30);
        /* Our round names it, or the flusher's (woken by the changes) ran
         * first and rebuilt the state, naming it there. */
        assert_true(frc == BREAKER_EIO || frc == BREAKER_OK);
        assert_true(rebuilt);
        assert_true(named);
        assert_true(cleared);
        assert_true(kept);
        assert_int_equal(kept_cfg.min_calls, 30);
    }
}

/* breaker_redis_control_get() reads the record with the control script,
 * which checks every stored field: one out of range is named and the state
 * rebuilt (redis.h), the who and why texts too (at most
 * BREAKER_REDIS_WHO_MAX and _WHY_MAX bytes), never cut short and given as
 * the last change's. */
static void the_limits_read_names_a_stored_field_out_of_range(void **state) {
    (void)state;
    static const struct {
        const char *field, *named;
    } cases[] = {
        {"cw", "field cw = aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa, expected printable text of at "
               "most 64 bytes"},
        {"cy", "field cy = aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa, expected printable text of at "
               "most 200 bytes"},
    };
    struct test_redis r;
    breaker *b = NULL;
    breaker_redis *f = solo(&r, &b);
    char msg[256] = "", big[202];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    int rc[2];
    char why[2][300];
    for (int i = 0; i < 2; i++) {
        size_t len = cases[i].field[1] == 'w' ? 65 : 201;
        (void)test_redis_int(&r, "HSET " SKEY " %s %b", cases[i].field, big, len);
        rc[i] = breaker_redis_control_get(f, NAME, &(breaker_redis_control_state){0}, why[i],
                                          sizeof why[i]);
        printf("%s of %zu bytes: %s (%s)\n", cases[i].field, len, breaker_strerror(rc[i]), why[i]);
        (void)test_redis_int(&r, "HSET " SKEY " %s ok", cases[i].field);
    }
    breaker_redis_control_state lim;
    int ok = breaker_redis_control_get(f, NAME, &lim, msg, sizeof msg);
    breaker_redis_close(f);
    test_redis_stop(&r);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(rc[i], BREAKER_EIO);
        assert_non_null(strstr(why[i], cases[i].named));
    }
    assert_int_equal(ok, BREAKER_OK);
    /* Each read rebuilt the state: the cw the first case set back to "ok"
     * went with the second rebuild, the cy after it stays. */
    assert_string_equal(lim.who, "");
    assert_string_equal(lim.why, "ok");
}

static void bad_control_arguments_are_refused_naming_them(void **state) {
    (void)state;
    struct test_redis r;
    breaker *b = NULL;
    breaker_redis *f = solo(&r, &b);
    char msg[256] = "";
    assert_int_equal(fleet_set_shadow(f, NAME, 1, "a\tb", NULL, msg, sizeof msg), BREAKER_EINVAL);
    assert_non_null(strstr(msg, "who: a control character at byte 2"));
    assert_int_equal(fleet_set_shadow(f, "other.svc", 1, NULL, NULL, msg, sizeof msg),
                     BREAKER_EINVAL);
    assert_non_null(strstr(msg, "other.svc: not attached"));
    breaker_config c;
    breaker_config_init(&c);
    c.failure_rate = -1;
    assert_int_equal(fleet_reconfigure(f, NAME, &c, 0, NULL, NULL, msg, sizeof msg),
                     BREAKER_EINVAL);
    assert_non_null(strstr(msg, "failure_rate"));
    breaker_redis_control_state lim;
    assert_int_equal(breaker_redis_control_get(f, "other.svc", &lim, msg, sizeof msg),
                     BREAKER_EINVAL);
    long long sseq = test_redis_int(&r, "HEXISTS breaker:v2:{" NAME "}:s sseq");
    breaker_redis_close(f);
    test_redis_stop(&r);
    assert_int_equal(sseq, 0);
}

/* One host of NHOST processes sharing a store file: the process that holds
 * the name's lease in the file applies the fleet's shadow mode and limits
 * to the host's breaker, and every process of the host has them (one
 * RECONFIGURED event, in the holder). */
static void with_a_store_file_the_flushers_change_is_every_process(void **state) {
    (void)state;
    char dir[] = "/tmp/breaker-controls-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/host.store", dir);
    struct fleet_world w;
    start_on(&w, 0, path);
    char msg[256] = "";
    assert_int_equal(fleet_set_shadow(w.op, NAME, 1, "t", "host", msg, sizeof msg), BREAKER_OK);
    long took = wait_shadow(1, 5000);
    breaker_redis_control_state lim;
    assert_int_equal(breaker_redis_control_get(w.op, NAME, &lim, msg, sizeof msg), BREAKER_OK);
    lim.limits.min_calls = 40;
    assert_int_equal(
        fleet_reconfigure(w.op, NAME, &lim.limits, lim.version, "t", "", msg, sizeof msg),
        BREAKER_OK);
    uint64_t t0 = test_redis_now_ns();
    int seen = 0;
    while (seen < NHOST && test_redis_now_ns() - t0 < 5000 * MS) {
        seen = 0;
        for (int i = 0; i < NHOST; i++)
            seen += atomic_load(&sh->host[i].min_calls) == 40;
        nap_ms(1);
    }
    long reconfig_took = (long)((test_redis_now_ns() - t0) / MS);
    nap_ms(200); /* four more rounds: nobody applies them again */
    int events = 0;
    long applied = 0, shadowed = 0;
    for (int i = 0; i < NHOST; i++) {
        events += atomic_load(&sh->host[i].reconfigured);
        applied += atomic_load(&sh->host[i].reconfigs_applied);
        shadowed += atomic_load(&sh->host[i].shadow_applied);
    }
    printf("one host of %d processes on a store file: shadow on in every process %ld ms after "
           "the change, min_calls 40 in %d of them %ld ms after it; RECONFIGURED events %d, "
           "reconfigurations applied %ld, shadow changes applied %ld (all processes)\n",
           NHOST, took, seen, reconfig_took, events, applied, shadowed);
    finish(&w);
    unlink(path);
    rmdir(dir);
    assert_true(took >= 0);
    assert_int_equal(seen, NHOST);
    assert_int_equal(events, 1);
    assert_int_equal(applied, 1);
    assert_int_equal(shadowed, 1);
}

/* ---- A cut of the open wait reaches every host within a round ----------------- */

/* A host at the default interval whose rounds the test also runs. */
static breaker_redis *cut_host(const struct test_redis *r) {
    breaker_redis_config rc;
    fleet_patient_cfg(&rc);
    rc.port = r->port;
    rc.flush_interval_ns = 250 * MS;
    return fleet_open_or_fail(&rc);
}

/* The fleet open for 10 s: host A tripped on its own failures, host B
 * following. The operator cuts the wait to 1 s (`breaker config NAME open=1s
 * open_max=1s --redis`). At each host's next round its local wait is the
 * fleet's (no longer than what the fleet has left, plus a round), and once
 * that is over a probe of A's takes a lease and the fleet closes, B with it.
 * Before: the cut reached Redis only (996 ms left there); the hosts kept
 * their 10 s wait and nobody asked for a lease, so the healthy dependency
 * was first admitted 9.6 s after the change. */
static void a_cut_of_the_open_wait_reaches_every_host_within_a_round(void **state) {
    (void)state;
    struct test_redis r = {0};
    assert_int_equal(test_redis_start(&r), 0);
    breaker_redis *fa = cut_host(&r), *fb = cut_host(&r);
    breaker_config cfg;
    fleet_dep_cfg(&cfg, 10000 * MS, 1000 * MS);
    breaker *a = NULL, *b = NULL;
    assert_int_equal(breaker_redis_attach(fa, NAME, &cfg, &a, NULL, 0), BREAKER_OK);
    assert_int_equal(breaker_redis_attach(fb, NAME, &cfg, &b, NULL, 0), BREAKER_OK);
    assert_true(fleet_trip_followed(fa, a, fb, b, 3));
    uint64_t a_before = breaker_retry_after_ns(a), b_before = breaker_retry_after_ns(b);
    char msg[256] = "";
    breaker_redis_control_state now;
    assert_int_equal(breaker_redis_control_get(fa, NAME, &now, msg, sizeof msg), BREAKER_OK);
    breaker_config cut = now.limits;
    cut.open_ns = cut.open_max_ns = 1000 * MS;
    int rc = fleet_reconfigure(fa, NAME, &cut, now.version, "ops@test", "shorter", msg, sizeof msg);
    if (rc != BREAKER_OK) fail_msg("reconfigure: %s", msg);
    uint64_t t_cut = test_redis_now_ns();
    assert_int_equal(breaker_redis_flush(fa), BREAKER_OK);
    assert_int_equal(breaker_redis_flush(fb), BREAKER_OK);
    uint64_t a_after = breaker_retry_after_ns(a), b_after = breaker_retry_after_ns(b);
    uint64_t since_cut = test_redis_now_ns() - t_cut;
    /* A probe once the fleet's wait is over: A's, leased. */
    breaker_permit p;
    int admitted = BREAKER_REJECTED_OPEN;
    uint64_t first = 0;
    for (int i = 0; i < 400 && admitted != BREAKER_OK; i++) {
        admitted = breaker_acquire(a, &p);
        if (admitted != BREAKER_OK) nap_ms(10);
    }
    first = test_redis_now_ns() - t_cut;
    int leased = admitted == BREAKER_OK && breaker_permit_gate_token(&p) != 0;
    if (admitted == BREAKER_OK) (void)breaker_complete(a, &p, BREAKER_SUCCESS);
    assert_int_equal(breaker_redis_flush(fa), BREAKER_OK);
    assert_int_equal(breaker_redis_flush(fb), BREAKER_OK);
    enum breaker_state sa = breaker_get_state(a), sb = breaker_get_state(b);
    printf("a cut of the open wait to 1 s: local waits %.1f s and %.1f s before, %.3f s and %.3f s "
           "after one round each (%.0f ms after the change); a probe admitted %.0f ms after the "
           "change, leased %d; hosts %s and %s\n",
           (double)a_before / 1e9, (double)b_before / 1e9, (double)a_after / 1e9,
           (double)b_after / 1e9, (double)since_cut / 1e6, (double)first / 1e6, leased,
           breaker_state_name(sa), breaker_state_name(sb));
    breaker_redis_close(fa);
    breaker_redis_close(fb);
    test_redis_stop(&r);
    assert_true(a_before > 9000 * MS && b_before > 9000 * MS);
    /* What the fleet has left (at most 1 s) and a round's tolerance. */
    assert_true(a_after <= 1000 * MS + 250 * MS);
    assert_true(b_after <= 1000 * MS + 250 * MS);
    assert_int_equal(admitted, BREAKER_OK);
    assert_true(leased);
    assert_int_equal(sa, BREAKER_CLOSED);
    assert_int_equal(sb, BREAKER_CLOSED);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            fleet_shadow_mode_reaches_every_host_and_none_refuses_while_the_fleet_trips),
        cmocka_unit_test(a_shadowed_probe_the_fleet_refuses_is_admitted_and_counted),
        cmocka_unit_test(new_fleet_limits_reach_every_host_and_a_later_attacher),
        cmocka_unit_test(what_cannot_change_live_is_refused_naming_it),
        cmocka_unit_test(the_same_limits_again_change_nothing),
        cmocka_unit_test(fewer_successes_close_a_half_open_fleet_with_none_out),
        cmocka_unit_test(a_host_that_refuses_the_limits_keeps_its_own_and_counts_it),
        cmocka_unit_test(a_host_attaching_later_gets_the_fleets_shadow_mode),
        cmocka_unit_test(a_trip_heard_with_shadow_on_is_a_would_open),
        cmocka_unit_test(corrupt_control_fields_are_named_and_rebuilt),
        cmocka_unit_test(the_limits_read_names_a_stored_field_out_of_range),
        cmocka_unit_test(bad_control_arguments_are_refused_naming_them),
        cmocka_unit_test(with_a_store_file_the_flushers_change_is_every_process),
        cmocka_unit_test(a_cut_of_the_open_wait_reaches_every_host_within_a_round),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
