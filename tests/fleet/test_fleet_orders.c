/* SPDX-License-Identifier: MIT */
/*
 * test_fleet_orders.c - the fleet's forced states and resets
 * (include/breaker/redis.h, breaker_redis_control_apply(); docs/fleet.md,
 * "Controls") against a real redis-server, with four host processes (fork),
 * each with its own fleet handle, calling one dependency, and the test's
 * own handle giving the orders as an operator's host would:
 *  - forced open from one host: every host refuses every call, and stays
 *    so across many flushes; who and why reach every host's event
 *    (breaker_event.who, .why) and, on the
 *    hosts with a registry (the even ones), its history;
 *  - forced closed: every host admits its calls while the dependency
 *    fails, and the fleet never trips; who and why as above (and for the
 *    reset);
 *  - reset on one host: a tripped fleet closes on every host, and the next
 *    flushes do not trip it again (breaker_reset() alone is re-tripped);
 *  - a timed open (and a forced close with an end) ends by itself: the
 *    hosts probe and close again;
 *  - bad arguments are refused, naming the field;
 *  - a reset is a new period for every host, also one whose first round
 *    comes after it: a host attached before the reset, and a process that
 *    attaches through a store file whose host breaker counted calls
 *    before it, do not trip the fleet again with those calls (rounds by
 *    breaker_redis_flush(), in the test's own process).
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, mkdtemp */
#define _POSIX_C_SOURCE 200809L

#include <breaker.h>
#include <breaker/redis.h>
#include <breaker/registry.h>
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
#define NAME  "ops.svc"

/* One host's view, written by that host only. */
struct host_view {
    _Atomic int state;        /* breaker_get_state() after its last call */
    _Atomic long admitted;    /* calls admitted */
    _Atomic long refused;     /* calls refused */
    _Atomic int order_events; /* events of an order's transition */
    _Atomic int last_reason;
    _Atomic long rounds; /* its flush rounds Redis answered (breaker_redis_stats.flushes) */
    char ev_who[BREAKER_WHO_MAX + 1]; /* what the order's event itself said */
    char ev_why[BREAKER_WHY_MAX + 1];
    /* Hosts with a registry (even ones): the newest record of its history
     * after the order's transition. */
    char hist_who[BREAKER_WHO_MAX + 1];
    char hist_why[BREAKER_WHY_MAX + 1];
};

struct shared {
    _Atomic int ready, stop, failing;
    _Atomic int directed_by;   /* 1 + the host to get a server-directed open (0: none) */
    _Atomic long directed_ms;  /* for how long */
    _Atomic int opened[NHOST]; /* the host was seen OPEN after it */
    struct host_view host[NHOST];
};

static struct shared *sh;
static breaker_redis *child_fleet;
static int child_index;

static void nap_ms(long ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void on_event(void *ctx, breaker *b, const breaker_event *ev) {
    (void)ctx;
    struct host_view *v = &sh->host[child_index];
    atomic_store(&v->last_reason, (int)ev->reason);
    (void)b;
    if (ev->reason == BREAKER_REASON_FORCED_OPEN || ev->reason == BREAKER_REASON_FORCED_CLOSED ||
        ev->reason == BREAKER_REASON_RESET || ev->reason == BREAKER_REASON_OPERATOR) {
        memcpy(v->ev_who, ev->who, sizeof v->ev_who);
        memcpy(v->ev_why, ev->why, sizeof v->ev_why);
        atomic_fetch_add(&v->order_events, 1);
    }
}

/* A registry host's listener: after each transition, its history's newest
 * record (the registry recorded it before telling listeners). */
static void on_registry_event(void *ctx, const breaker_registry_event *ev) {
    breaker_registry *reg = ctx;
    if (ev->kind != BREAKER_REGISTRY_TRANSITION) return;
    breaker_event hist[4];
    breaker_registry_info info;
    if (breaker_registry_info_get(reg, ev->b, &info, hist, 4) != BREAKER_OK ||
        info.history_len == 0)
        return;
    const breaker_event *last = &hist[info.history_len - 1];
    struct host_view *v = &sh->host[child_index];
    memcpy(v->hist_who, last->who, sizeof v->hist_who);
    memcpy(v->hist_why, last->why, sizeof v->hist_why);
}

/* Hosts whose event and (registry hosts) history both say `who` and `why`. */
static int hosts_with_text(const char *who, const char *why) {
    int n = 0;
    for (int i = 0; i < NHOST; i++) {
        const struct host_view *v = &sh->host[i];
        n += strcmp(v->ev_who, who) == 0 && strcmp(v->ev_why, why) == 0 &&
             (i % 2 != 0 || (strcmp(v->hist_who, who) == 0 && strcmp(v->hist_why, why) == 0));
    }
    return n;
}

static breaker_redis *open_fleet(const struct test_redis *r) {
    breaker_redis_config rc;
    breaker_redis_config_init(&rc);
    rc.port = r->port;
    rc.flush_interval_ns = 50 * MS;
    rc.io_timeout_ns = 2000 * MS; /* a loaded machine does not degrade a host */
    rc.probe_budget_ns = 500 * MS;
    breaker_redis *f = NULL;
    return breaker_redis_open(&rc, &f, NULL, 0) == BREAKER_OK ? f : NULL;
}

static int host(const struct test_redis *r, int i) {
    child_index = i;
    child_fleet = open_fleet(r);
    if (child_fleet == NULL || breaker_redis_flush(child_fleet) != BREAKER_OK) return 2;
    breaker_config cfg;
    fleet_window_cfg(&cfg);
    cfg.on_event = on_event;
    breaker *b = NULL;
    if (i % 2 == 0) { /* a registry on the fleet's backend: its history */
        breaker_registry_config regc;
        breaker_registry_config_init(&regc);
        regc.defaults = cfg;
        regc.backend = breaker_redis_backend(child_fleet);
        breaker_registry *reg = NULL;
        if (breaker_registry_create(&regc, &reg) != BREAKER_OK ||
            breaker_registry_add_listener(reg, on_registry_event, reg) != BREAKER_OK ||
            breaker_registry_get(reg, NAME, &b) != BREAKER_OK)
            return 3;
    } else {
        int rc = breaker_redis_attach(child_fleet, NAME, &cfg, &b, NULL, 0);
        if (rc != BREAKER_OK && rc != BREAKER_CONFIG_DIFFERS) return 3;
    }
    struct host_view *v = &sh->host[i];
    atomic_fetch_add(&sh->ready, 1);
    pid_t parent = getppid();
    while (fleet_host_running(&sh->stop, parent)) {
        fleet_host_call(b, &sh->failing, &v->admitted, &v->refused);
        if (atomic_load(&sh->directed_by) == i + 1) {
            /* The dependency answered 429 with Retry-After (as breaker_curl's
             * retry_after_opens does it). */
            atomic_store(&sh->directed_by, 0);
            (void)breaker_open_for(b, (uint64_t)atomic_load(&sh->directed_ms) * MS,
                                   BREAKER_REASON_SERVER_DIRECTED);
        }
        atomic_store(&v->state, (int)breaker_get_state(b));
        if (atomic_load(&v->state) == BREAKER_OPEN) atomic_store(&sh->opened[i], 1);
        breaker_redis_stats st;
        breaker_redis_stats_get(child_fleet, &st);
        atomic_store(&v->rounds, (long)st.flushes);
        nap_ms(2);
    }
    breaker_redis_close(child_fleet);
    return 0;
}

_Static_assert(NHOST <= FLEET_WORLD_HOSTS, "a fleet_world holds the hosts");

static void start(struct fleet_world *w, int failing) {
    memset(w, 0, sizeof *w);
    assert_int_equal(test_redis_start(&w->r), 0);
    sh = fleet_hosts_share(sizeof *sh);
    atomic_store(&sh->failing, failing);
    fleet_hosts_fork(w->pid, NHOST, host, &w->r);
    fleet_hosts_wait_ready(&sh->ready, NHOST);
    /* Every host's flusher has had answered rounds with the name attached:
     * an order finds each one following the fleet. (A host whose first
     * round comes after a reset no longer sends the calls it made before
     * it: a_host_attached_before_a_reset_does_not_trip_the_fleet_again.) */
    int going = 0;
    for (int t = 0; t < 20000 && going < NHOST; t++) {
        going = 0;
        for (int i = 0; i < NHOST; i++)
            going += atomic_load(&sh->host[i].rounds) >= 3;
        nap_ms(1);
    }
    assert_int_equal(going, NHOST);
    w->op = open_fleet(&w->r);
    assert_non_null(w->op);
    breaker_config cfg;
    fleet_window_cfg(&cfg);
    int rc = breaker_redis_attach(w->op, NAME, &cfg, &w->b, NULL, 0);
    assert_true(rc == BREAKER_OK || rc == BREAKER_CONFIG_DIFFERS);
}

static void finish(struct fleet_world *w) {
    fleet_world_finish(w, NHOST, &sh->stop, sh, sizeof *sh);
}

/* How many hosts are in `state` now. */
static int hosts_in(int state) {
    int n = 0;
    for (int i = 0; i < NHOST; i++)
        n += atomic_load(&sh->host[i].state) == state;
    return n;
}

/* Wait (at most `ms`) until every host is in `state`. @return the time it
 * took in ms, or -1. */
static long wait_all(int state, long ms) {
    uint64_t t0 = test_redis_now_ns();
    for (long t = 0; t < ms; t++) {
        if (hosts_in(state) == NHOST) return (long)((test_redis_now_ns() - t0) / MS);
        nap_ms(1);
    }
    return -1;
}

static long total(_Atomic long *(*field)(struct host_view *)) {
    long n = 0;
    for (int i = 0; i < NHOST; i++)
        n += atomic_load(field(&sh->host[i]));
    return n;
}
static _Atomic long *admitted_of(struct host_view *v) { return &v->admitted; }
static _Atomic long *refused_of(struct host_view *v) { return &v->refused; }

static void fleet_forced_open_refuses_on_every_host_and_survives_their_flushes(void **state) {
    (void)state;
    struct fleet_world w;
    start(&w, 0);
    assert_int_equal(wait_all(BREAKER_CLOSED, 5000) >= 0, 1);
    char msg[256] = "";
    int rc = fleet_force(w.op, NAME, BREAKER_FORCED_OPEN, 0, "alice@ops-1",
                         "INC-42: the payments API is being migrated", msg, sizeof msg);
    if (rc != BREAKER_OK) fprintf(stderr, "force: %s\n", msg);
    assert_int_equal(rc, BREAKER_OK);
    long took = wait_all(BREAKER_FORCED_OPEN, 5000);
    /* Twenty flush intervals later, every host still refuses everything. */
    nap_ms(200);
    long admitted = total(admitted_of);
    nap_ms(1000);
    long admitted_after = total(admitted_of), refused = total(refused_of);
    long long fleet_state = test_redis_int(&w.r, "HGET breaker:v2:{" NAME "}:s st");
    long long order = test_redis_int(&w.r, "HGET breaker:v2:{" NAME "}:s cf");
    int who_ok = 0;
    for (int i = 0; i < NHOST; i++)
        who_ok += atomic_load(&sh->host[i].last_reason) == BREAKER_REASON_FORCED_OPEN;
    if (hosts_with_text("alice@ops-1", "INC-42: the payments API is being migrated") != NHOST)
        who_ok = 0;
    int still = hosts_in(BREAKER_FORCED_OPEN);
    printf("forced open: every host forced open %ld ms after the order (flush interval 50 ms); "
           "admitted in the next second %ld, refused %ld; who/why on %d of %d hosts\n",
           took, admitted_after - admitted, refused, who_ok, NHOST);
    finish(&w);
    assert_true(took >= 0);
    assert_int_equal(still, NHOST);
    assert_int_equal(admitted_after - admitted, 0);
    assert_int_equal(fleet_state, 1); /* OPEN */
    assert_int_equal(order, 1);
    assert_int_equal(who_ok, NHOST);
}

static void fleet_forced_closed_admits_despite_failures(void **state) {
    (void)state;
    struct fleet_world w;
    start(&w, 0);
    assert_true(wait_all(BREAKER_CLOSED, 5000) >= 0);
    char msg[256] = "";
    assert_int_equal(
        fleet_force(w.op, NAME, BREAKER_FORCED_CLOSED, 0, "bob", "false alarm", msg, sizeof msg),
        BREAKER_OK);
    long took = wait_all(BREAKER_FORCED_CLOSED, 5000);
    int texts = hosts_with_text("bob", "false alarm");
    atomic_store(&sh->failing, 1);
    long refused = total(refused_of), admitted = total(admitted_of);
    nap_ms(1500); /* 30 flushes of failures, far over min_calls at a rate of 1 */
    long refused_after = total(refused_of), admitted_after = total(admitted_of);
    long long trips = test_redis_int(&w.r, "HGET breaker:v2:{" NAME "}:s trips");
    long long fleet_state = test_redis_int(&w.r, "HGET breaker:v2:{" NAME "}:s st");
    int still = hosts_in(BREAKER_FORCED_CLOSED);
    printf("forced closed: every host forced closed %ld ms after the order; with the dependency "
           "failing, %ld calls admitted and %ld refused in 1.5 s; fleet trips %lld\n",
           took, admitted_after - admitted, refused_after - refused, trips);
    printf("forced closed: who/why in order_get, the event and the history on %d of %d hosts\n",
           texts, NHOST);
    finish(&w);
    assert_true(took >= 0);
    assert_int_equal(texts, NHOST);
    assert_int_equal(still, NHOST);
    assert_int_equal(refused_after - refused, 0);
    assert_true(admitted_after - admitted > 100);
    assert_int_equal(trips, 0);
    assert_int_equal(fleet_state, 0);
}

static void fleet_reset_closes_every_host_and_is_not_tripped_again(void **state) {
    (void)state;
    struct fleet_world w;
    start(&w, 1);
    /* The dependency fails: the fleet trips, every host follows. */
    long long trips = 0;
    for (int t = 0; t < 10000 && trips < 1; t++) {
        trips = test_redis_int(&w.r, "HGET breaker:v2:{" NAME "}:s trips");
        nap_ms(1);
    }
    assert_true(trips >= 1);
    /* A reset of this host's breaker alone is undone by its next flush:
     * the fleet is still open. */
    assert_int_equal(breaker_reset(w.b), BREAKER_OK);
    for (int t = 0; t < 3000 && breaker_get_state(w.b) == BREAKER_CLOSED; t++)
        nap_ms(1);
    int local_reset_undone = breaker_get_state(w.b) != BREAKER_CLOSED;
    /* The fleet's reset, with the dependency back. */
    trips = test_redis_int(&w.r, "HGET breaker:v2:{" NAME "}:s trips");
    atomic_store(&sh->failing, 0);
    char msg[256] = "";
    assert_int_equal(fleet_reset(w.op, NAME, "carol", "fixed upstream", msg, sizeof msg),
                     BREAKER_OK);
    long took = wait_all(BREAKER_CLOSED, 5000);
    long refused = total(refused_of);
    nap_ms(1000); /* twenty flushes */
    long refused_after = total(refused_of);
    int closed = hosts_in(BREAKER_CLOSED);
    int resets = hosts_with_text("carol", "fixed upstream");
    long long fleet_state = test_redis_int(&w.r, "HGET breaker:v2:{" NAME "}:s st");
    long long trips_after = test_redis_int(&w.r, "HGET breaker:v2:{" NAME "}:s trips");
    int op_closed = breaker_get_state(w.b) == BREAKER_CLOSED;
    for (int i = 0; i < NHOST; i++)
        printf("host %d: state %d, last reason %s, who '%s'\n", i, atomic_load(&sh->host[i].state),
               breaker_reason_name((enum breaker_reason)atomic_load(&sh->host[i].last_reason)),
               sh->host[i].ev_who);
    printf("reset: trips %lld before the reset, %lld after; a local reset undone by the next "
           "flush: %s; after the fleet reset every host "
           "closed in %ld ms, refused in the next second %ld, hosts with who/why %d of %d\n",
           trips, trips_after, local_reset_undone ? "yes" : "no", took, refused_after - refused,
           resets, NHOST);
    finish(&w);
    assert_true(local_reset_undone);
    assert_true(took >= 0);
    assert_int_equal(closed, NHOST);
    assert_true(op_closed);
    assert_int_equal(refused_after - refused, 0);
    assert_int_equal(fleet_state, 0);
    assert_int_equal(trips_after, trips);
    assert_int_equal(resets, NHOST);
}

static void timed_orders_end_by_themselves(void **state) {
    (void)state;
    struct fleet_world w;
    start(&w, 0);
    assert_true(wait_all(BREAKER_CLOSED, 5000) >= 0);
    char msg[256] = "";
    /* Longer than the limits' open_max_ns (400 ms): an operator's wait. */
    uint64_t t0 = test_redis_now_ns();
    assert_int_equal(fleet_open_for(w.op, NAME, 1500 * MS, "dave", "deploy", msg, sizeof msg),
                     BREAKER_OK);
    long took = wait_all(BREAKER_OPEN, 1400);
    int reasons = 0;
    for (int i = 0; i < NHOST; i++)
        reasons += atomic_load(&sh->host[i].last_reason) == BREAKER_REASON_OPERATOR;
    /* Still open well past open_max_ns: the order's time, not the limits'. */
    while (test_redis_now_ns() - t0 < 1000 * MS)
        nap_ms(5);
    int open_at_1s = hosts_in(BREAKER_OPEN);
    /* Then the hosts probe (one lease) and close. */
    long closed_in = wait_all(BREAKER_CLOSED, 5000);
    uint64_t ended_ms = (test_redis_now_ns() - t0) / MS;
    /* A forced close with an end: back to normal operation. */
    assert_int_equal(fleet_force(w.op, NAME, BREAKER_FORCED_CLOSED, 500 * MS, "erin", "load test",
                                 msg, sizeof msg),
                     BREAKER_OK);
    long forced_in = wait_all(BREAKER_FORCED_CLOSED, 5000);
    long back_in = wait_all(BREAKER_CLOSED, 5000);
    printf("timed open of 1.5 s: every host open in %ld ms (reason operator on %d), %d open at "
           "1 s, every host closed again %llu ms after the order; a forced close of 500 ms: in "
           "%ld ms, back to closed %ld ms later\n",
           took, reasons, open_at_1s, (unsigned long long)ended_ms, forced_in, back_in);
    finish(&w);
    assert_true(took >= 0);
    assert_int_equal(reasons, NHOST);
    assert_int_equal(open_at_1s, NHOST);
    assert_true(closed_in >= 0);
    assert_true(ended_ms >= 1500);
    assert_true(forced_in >= 0);
    assert_true(back_in >= 0);
}

/* A 429 with Retry-After on one of the hosts quiets them all: its next
 * flush opens the fleet for what is left of the wait (capped at
 * open_max_ns, 400 ms here), the others follow within one interval, and
 * after it every host probes and closes again. */
static void a_server_directed_open_on_one_host_quiets_the_whole_fleet(void **state) {
    (void)state;
    struct fleet_world w;
    start(&w, 0);
    assert_true(wait_all(BREAKER_CLOSED, 5000) >= 0);
    for (int i = 0; i < NHOST; i++)
        atomic_store(&sh->opened[i], 0);
    atomic_store(&sh->directed_ms, 350);
    uint64_t t0 = test_redis_now_ns();
    atomic_store(&sh->directed_by, 1); /* host 0 */
    int opened = 0;
    while (opened < NHOST && test_redis_now_ns() - t0 < 5000 * MS) {
        opened = 0;
        for (int i = 0; i < NHOST; i++)
            opened += atomic_load(&sh->opened[i]);
        nap_ms(1);
    }
    uint64_t all_open_ms = (test_redis_now_ns() - t0) / MS;
    char why[64] = "";
    redisContext *c = redisConnect("127.0.0.1", w.r.port);
    redisReply *rw = c != NULL ? redisCommand(c, "HGET breaker:v2:{" NAME "}:s why") : NULL;
    if (rw != NULL && rw->type == REDIS_REPLY_STRING) snprintf(why, sizeof why, "%s", rw->str);
    if (rw != NULL) freeReplyObject(rw);
    if (c != NULL) redisFree(c);
    long closed_in = wait_all(BREAKER_CLOSED, 5000);
    uint64_t back_ms = (test_redis_now_ns() - t0) / MS;
    printf("server-directed open of 350 ms on host 0: %d of %d hosts open %llu ms after it, fleet "
           "why %s; every host closed again %llu ms after it\n",
           opened, NHOST, (unsigned long long)all_open_ms, why, (unsigned long long)back_ms);
    finish(&w);
    assert_int_equal(opened, NHOST);
    assert_string_equal(why, "server_directed");
    assert_true(closed_in >= 0);
    assert_true(back_ms >= 300); /* the whole wait, not the local breakers' own */
}

static void bad_orders_are_refused_naming_the_field(void **state) {
    (void)state;
    struct test_redis r = {0};
    assert_int_equal(test_redis_start(&r), 0);
    breaker_redis *f = open_fleet(&r);
    assert_non_null(f);
    (void)fleet_attach_or_fail(f, NAME, NULL);
    char msg[256] = "", why[BREAKER_REDIS_WHY_MAX + 2];
    memset(why, 'x', sizeof why - 1);
    why[sizeof why - 1] = '\0';
    assert_int_equal(fleet_force(f, NAME, BREAKER_FORCED_OPEN, 0, "a", why, msg, sizeof msg),
                     BREAKER_EINVAL);
    assert_non_null(strstr(msg, "why: 201 bytes, at most 200"));
    assert_int_equal(fleet_reset(f, NAME, "a\nb", NULL, msg, sizeof msg), BREAKER_EINVAL);
    assert_non_null(strstr(msg, "who: a control character at byte 2"));
    assert_int_equal(fleet_open_for(f, NAME, 10, NULL, NULL, msg, sizeof msg), BREAKER_EINVAL);
    assert_non_null(strstr(msg, "for_ns: 0 (no end) or 1 ms .. 365 days (got 10 ns)"));
    assert_int_equal(fleet_force(f, NAME, BREAKER_FORCED_CLOSED, 366ull * 86400 * 1000 * MS, NULL,
                                 NULL, msg, sizeof msg),
                     BREAKER_EINVAL);
    assert_non_null(strstr(msg, "365 days"));
    assert_int_equal(fleet_force(f, NAME, BREAKER_OPEN, 0, NULL, NULL, msg, sizeof msg),
                     BREAKER_EINVAL);
    assert_non_null(strstr(msg, "forced: BREAKER_FORCED_OPEN or BREAKER_FORCED_CLOSED"));
    assert_int_equal(fleet_reset(f, "other.svc", NULL, NULL, msg, sizeof msg), BREAKER_EINVAL);
    assert_non_null(strstr(msg, "other.svc: not attached"));
    /* Nothing reached Redis. */
    long long oseq = test_redis_int(&r, "HGET breaker:v2:{" NAME "}:s cv") - 1; /* changes */
    /* A corrupt order in Redis is named, and the state rebuilt. */
    int orc = fleet_force(f, NAME, BREAKER_FORCED_OPEN, 0, "a", "b", msg, sizeof msg);
    if (orc != BREAKER_OK) fprintf(stderr, "force: %s\n", msg);
    assert_int_equal(orc, BREAKER_OK);
    (void)test_redis_int(&r, "HSET breaker:v2:{" NAME "}:s cf 9");
    int frc = fleet_force(f, NAME, BREAKER_FORCED_OPEN, 0, "a", "b", msg, sizeof msg);
    /* The order names it; or the flusher's round (woken by the first
     * order) ran first, and its script rebuilt the state, naming it. */
    redisContext *c = redisConnect("127.0.0.1", r.port);
    redisReply *rb = c != NULL ? redisCommand(c, "HGET breaker:v2:{" NAME "}:s rebuilt") : NULL;
    int named = frc == BREAKER_EIO ? strstr(msg, "field cf = 9, expected 0..2") != NULL
                                   : rb != NULL && rb->type == REDIS_REPLY_STRING &&
                                         strstr(rb->str, "field cf = 9, expected 0..2") != NULL;
    printf("a corrupt order field: %s\n", frc == BREAKER_EIO      ? msg
                                          : rb != NULL && rb->str ? rb->str
                                                                  : "(not named)");
    if (rb != NULL) freeReplyObject(rb);
    if (c != NULL) redisFree(c);
    breaker_redis_close(f);
    test_redis_stop(&r);
    assert_int_equal(oseq, 0);
    assert_true(named);
}

/* ---- A reset is a new period, whenever a host's first round comes ---------- */

/* A handle in the test's own process whose rounds run only when asked
 * (breaker_redis_flush(); an order wakes its own flusher once), through
 * store file `st` (NULL: none). */
static breaker_redis *quiet_fleet(const struct test_redis *r, breaker_store *st) {
    breaker_redis_config rc;
    breaker_redis_config_init(&rc);
    rc.port = r->port;
    rc.flush_interval_ns = 3600ull * 1000 * MS;
    rc.io_timeout_ns = 2000 * MS;
    rc.probe_budget_ns = 500 * MS;
    rc.store = st;
    return fleet_open_or_fail(&rc);
}

static breaker *quiet_attach(breaker_redis *f) {
    breaker_config cfg;
    fleet_window_cfg(&cfg);
    breaker *b = NULL;
    char msg[256] = "";
    int rc = breaker_redis_attach(f, NAME, &cfg, &b, msg, sizeof msg);
    if (rc != BREAKER_OK && rc != BREAKER_CONFIG_DIFFERS) fail_msg("attach: %s", msg);
    return b;
}

static void failures(breaker *b, int n) {
    for (int i = 0; i < n; i++) {
        breaker_permit p;
        if (breaker_acquire(b, &p) == BREAKER_OK) (void)breaker_complete(b, &p, BREAKER_FAILURE);
    }
}

static long long fleet_field(const struct test_redis *r, const char *field) {
    return test_redis_int(r, "HGET breaker:v2:{" NAME "}:s %s", field);
}

/* A store file for one host in a new directory `dir` (a mkdtemp()
 * template), its path in `path`. */
static breaker_store *open_host_store(char *dir, char *path, size_t path_len) {
    assert_non_null(mkdtemp(dir));
    snprintf(path, path_len, "%s/host.store", dir);
    breaker_store *st = NULL;
    assert_int_equal(breaker_store_open(path, NULL, &st, NULL, 0), BREAKER_OK);
    return st;
}

/* Host A trips the fleet; host B attached before the operator's reset and
 * made its calls then, but its first round comes after the reset: those
 * calls belong to the period the reset ended. Before: B's first round named
 * no generation (its attach's answer was not kept), the script counted its
 * 10 failures in the reset's generation, and the fleet tripped again. */
static void a_host_attached_before_a_reset_does_not_trip_the_fleet_again(void **state) {
    (void)state;
    struct test_redis r = {0};
    assert_int_equal(test_redis_start(&r), 0);
    breaker_redis *fa = quiet_fleet(&r, NULL), *fb = quiet_fleet(&r, NULL);
    breaker_redis *op = quiet_fleet(&r, NULL);
    breaker *a = quiet_attach(fa), *b = quiet_attach(fb);
    (void)quiet_attach(op);
    long long gen_attached = fleet_field(&r, "gen");
    failures(a, 10);
    failures(b, 10);
    assert_int_equal(breaker_redis_flush(fa), BREAKER_OK);
    long long trips = fleet_field(&r, "trips");
    char msg[256] = "";
    assert_int_equal(fleet_reset(op, NAME, "dave", "fixed", msg, sizeof msg), BREAKER_OK);
    long long gen_reset = fleet_field(&r, "gen");
    assert_int_equal(breaker_redis_flush(fa), BREAKER_OK);
    int a_state = (int)breaker_get_state(a);
    assert_int_equal(breaker_redis_flush(fb), BREAKER_OK); /* B's first round */
    int b_state = (int)breaker_get_state(b);
    assert_int_equal(breaker_redis_flush(fb), BREAKER_OK);
    long long trips_after = fleet_field(&r, "trips");
    long long st_after = fleet_field(&r, "st");
    long long gen_after = fleet_field(&r, "gen");
    printf("a host attached before the reset: gen %lld at attach, %lld after the reset, %lld "
           "after its first round; trips %lld before the reset, %lld after; fleet state %lld; "
           "host A %s, host B %s\n",
           gen_attached, gen_reset, gen_after, trips, trips_after, st_after,
           breaker_state_name((enum breaker_state)a_state),
           breaker_state_name((enum breaker_state)b_state));
    breaker_redis_close(fa);
    breaker_redis_close(fb);
    breaker_redis_close(op);
    test_redis_stop(&r);
    assert_int_equal(trips, 1);
    assert_int_equal(trips_after, 1);
    assert_int_equal(st_after, 0);
    assert_int_equal(gen_after, gen_reset);
    assert_int_equal(a_state, BREAKER_CLOSED);
    /* The reset came after B's breaker was made: it is B's too. */
    assert_int_equal(b_state, BREAKER_CLOSED);
}

/* One host through a store file: its first process attached and counted
 * 10 failures before the fleet's reset, then detached before any round
 * (the host breaker keeps them, for the name's next holder); a second
 * process attaches after the reset. Before: the words of a name no round
 * had written were a baseline of 0 and no generation, so the new holder's
 * first round sent every call the host breaker had counted, in the reset's
 * generation, and the fleet tripped again. */
static void a_process_attaching_after_a_reset_does_not_send_its_hosts_older_calls(void **state) {
    (void)state;
    struct test_redis r = {0};
    assert_int_equal(test_redis_start(&r), 0);
    char dir[] = "/tmp/breaker-orders-XXXXXX", path[64];
    breaker_store *st = open_host_store(dir, path, sizeof path);
    breaker_redis *fa = quiet_fleet(&r, NULL), *op = quiet_fleet(&r, NULL);
    breaker *a = quiet_attach(fa);
    (void)quiet_attach(op);
    breaker_redis *p1 = quiet_fleet(&r, st);
    breaker *h1 = quiet_attach(p1);
    failures(a, 10);
    failures(h1, 10);
    assert_int_equal(breaker_redis_flush(fa), BREAKER_OK);
    long long trips = fleet_field(&r, "trips");
    assert_int_equal(breaker_redis_detach(p1, h1), BREAKER_OK);
    breaker_redis_close(p1);
    char msg[256] = "";
    assert_int_equal(fleet_reset(op, NAME, "dave", "fixed", msg, sizeof msg), BREAKER_OK);
    assert_int_equal(breaker_redis_flush(fa), BREAKER_OK);
    breaker_redis *p2 = quiet_fleet(&r, st);
    breaker *h2 = quiet_attach(p2);
    breaker_stats hs;
    breaker_stats_get(h2, &hs);
    assert_int_equal(breaker_redis_flush(p2), BREAKER_OK); /* the host's first round */
    assert_int_equal(breaker_redis_flush(p2), BREAKER_OK);
    long long trips_after = fleet_field(&r, "trips");
    long long st_after = fleet_field(&r, "st");
    printf("a process attaching after the reset: the host breaker had %llu failures; trips %lld "
           "before the reset, %lld after; fleet state %lld\n",
           (unsigned long long)hs.failures, trips, trips_after, st_after);
    breaker_redis_close(p2);
    breaker_redis_close(fa);
    breaker_redis_close(op);
    breaker_store_close(st);
    unlink(path);
    rmdir(dir);
    test_redis_stop(&r);
    assert_int_equal(hs.failures, 10);
    assert_int_equal(trips, 1);
    assert_int_equal(trips_after, 1);
    assert_int_equal(st_after, 0);
}

/* ---- An order is applied once per state -------------------------------------- */

/* One host through a store file, two processes (two handles here): the
 * first holds the name and applies the operator's reset to the host
 * breaker, whose calls after it then count; the second takes the name
 * over. Before: the words kept no order sequence, so the new holder took
 * the reset for a new one, applied it again (a new generation, the window
 * emptied of the calls made since) and recorded it twice. */
static void a_new_holder_of_the_host_does_not_apply_an_order_again(void **state) {
    (void)state;
    struct test_redis r = {0};
    assert_int_equal(test_redis_start(&r), 0);
    char dir[] = "/tmp/breaker-orders-XXXXXX", path[64];
    breaker_store *st = open_host_store(dir, path, sizeof path);
    breaker_redis *op = quiet_fleet(&r, NULL);
    (void)quiet_attach(op);
    breaker_redis *p1 = quiet_fleet(&r, st), *p2 = quiet_fleet(&r, st);
    breaker *h1 = quiet_attach(p1), *h2 = quiet_attach(p2);
    assert_int_equal(breaker_redis_flush(p1), BREAKER_OK); /* p1 holds the name */
    char msg[256] = "";
    assert_int_equal(fleet_reset(op, NAME, "dave", "fixed", msg, sizeof msg), BREAKER_OK);
    assert_int_equal(breaker_redis_flush(p1), BREAKER_OK); /* applies it */
    breaker_stats s0;
    breaker_stats_get(h2, &s0);
    failures(h2, 4);
    assert_int_equal(breaker_redis_flush(p1), BREAKER_OK);
    assert_int_equal(breaker_redis_detach(p1, h1), BREAKER_OK);
    breaker_redis_close(p1);
    failures(h2, 2);
    assert_int_equal(breaker_redis_flush(p2), BREAKER_OK); /* the new holder's first round */
    assert_int_equal(breaker_redis_flush(p2), BREAKER_OK);
    breaker_stats s1;
    breaker_stats_get(h2, &s1);
    breaker_store_control rec;
    int rrc = breaker_store_last_control(st, NAME, &rec, msg, sizeof msg);
    printf("a new holder after a reset: host generation %llu after the reset, %llu after the "
           "takeover; window failures %llu; record %s at generation %llu\n",
           (unsigned long long)s0.generation, (unsigned long long)s1.generation,
           (unsigned long long)s1.window_failures, rrc == BREAKER_OK ? rec.who : "-",
           (unsigned long long)rec.generation);
    breaker_redis_close(p2);
    breaker_redis_close(op);
    breaker_store_close(st);
    unlink(path);
    rmdir(dir);
    test_redis_stop(&r);
    assert_int_equal(s1.generation, s0.generation);
    assert_int_equal(s1.window_failures, 6);
    assert_int_equal(rrc, BREAKER_OK);
    assert_int_equal(rec.generation, s0.generation);
}

/* A state made anew (Redis restarted empty) numbers its orders from 1
 * again. Before: a host that had applied orders 1 and 2 of the old state
 * took the new state's first order for one it had applied, and ignored
 * it: the fleet forced open, the host not. */
static void an_order_of_a_state_made_anew_is_applied(void **state) {
    (void)state;
    struct test_redis r = {0};
    assert_int_equal(test_redis_start(&r), 0);
    breaker_redis *fa = quiet_fleet(&r, NULL), *op = quiet_fleet(&r, NULL);
    breaker *a = quiet_attach(fa);
    (void)quiet_attach(op);
    char msg[256] = "";
    assert_int_equal(fleet_force(op, NAME, BREAKER_FORCED_OPEN, 0, "dave", "one", msg, sizeof msg),
                     BREAKER_OK);
    assert_int_equal(breaker_redis_flush(fa), BREAKER_OK);
    assert_int_equal(breaker_get_state(a), BREAKER_FORCED_OPEN);
    assert_int_equal(fleet_reset(op, NAME, "dave", "two", msg, sizeof msg), BREAKER_OK);
    assert_int_equal(breaker_redis_flush(fa), BREAKER_OK);
    assert_int_equal(breaker_get_state(a), BREAKER_CLOSED);
    long long seq_before = fleet_field(&r, "cv");
    test_redis_kill(&r);
    assert_int_equal(test_redis_restart(&r), 0); /* empty: nothing persists */
    int rc = BREAKER_EIO;
    for (int i = 0; i < 50 && rc != BREAKER_OK; i++) {
        rc = breaker_redis_flush(fa); /* the state made anew */
        if (rc != BREAKER_OK) nap_ms(20);
    }
    assert_int_equal(rc, BREAKER_OK);
    rc = BREAKER_EIO;
    for (int i = 0; i < 50 && rc != BREAKER_OK; i++) {
        rc = fleet_force(op, NAME, BREAKER_FORCED_OPEN, 0, "erin", "three", msg, sizeof msg);
        if (rc != BREAKER_OK) nap_ms(20);
    }
    assert_int_equal(rc, BREAKER_OK);
    long long seq_after = fleet_field(&r, "cv");
    assert_int_equal(breaker_redis_flush(fa), BREAKER_OK);
    assert_int_equal(breaker_redis_flush(fa), BREAKER_OK);
    int a_state = (int)breaker_get_state(a);
    printf("an order of a state made anew: order sequence %lld before the restart, %lld after; "
           "host %s\n",
           seq_before, seq_after, breaker_state_name((enum breaker_state)a_state));
    breaker_redis_close(fa);
    breaker_redis_close(op);
    test_redis_stop(&r);
    assert_int_equal(seq_before, 3); /* as made, forced open, reset */
    assert_int_equal(seq_after, 2);  /* made anew, forced open */
    assert_int_equal(a_state, BREAKER_FORCED_OPEN);
}

/* A forced state the record gave is released once the record no longer
 * holds it (Redis restarted empty: a state made anew forces nothing), but
 * one an operator gave this host alone stays: the record never forced it.
 * Before, a host forced by the record stayed forced after the state was
 * lost, until someone reset it, while hosts attaching later were not. */
static void a_forced_state_the_record_no_longer_holds_is_released(void **state) {
    (void)state;
    struct test_redis r = {0};
    assert_int_equal(test_redis_start(&r), 0);
    breaker_redis *fa = quiet_fleet(&r, NULL), *fb = quiet_fleet(&r, NULL);
    breaker_redis *op = quiet_fleet(&r, NULL);
    breaker *a = quiet_attach(fa), *b = quiet_attach(fb);
    (void)quiet_attach(op);
    char msg[256] = "";
    assert_int_equal(fleet_force(op, NAME, BREAKER_FORCED_OPEN, 0, "dave", "one", msg, sizeof msg),
                     BREAKER_OK);
    assert_int_equal(breaker_redis_flush(fa), BREAKER_OK);
    assert_int_equal(breaker_get_state(a), BREAKER_FORCED_OPEN); /* by the record */
    assert_int_equal(breaker_force_open(b), BREAKER_OK);         /* by this host's operator */
    assert_int_equal(breaker_redis_flush(fb), BREAKER_OK);
    test_redis_kill(&r);
    assert_int_equal(test_redis_restart(&r), 0); /* empty: the record is gone */
    int rc = BREAKER_EIO;
    for (int i = 0; i < 50 && rc != BREAKER_OK; i++) {
        rc = breaker_redis_flush(fa);
        if (rc != BREAKER_OK) nap_ms(20);
    }
    assert_int_equal(rc, BREAKER_OK);
    assert_int_equal(breaker_redis_flush(fa), BREAKER_OK);
    assert_int_equal(breaker_redis_flush(fb), BREAKER_OK);
    assert_int_equal(breaker_redis_flush(fb), BREAKER_OK);
    enum breaker_state sa = breaker_get_state(a), sb = breaker_get_state(b);
    printf("a state made anew: the host the record forced open is %s, the host forced by its own "
           "operator %s\n",
           breaker_state_name(sa), breaker_state_name(sb));
    breaker_redis_close(fa);
    breaker_redis_close(fb);
    breaker_redis_close(op);
    test_redis_stop(&r);
    assert_int_equal(sa, BREAKER_CLOSED);
    assert_int_equal(sb, BREAKER_FORCED_OPEN);
}

/* ---- A control reaches a host once, across a move and a takeover ------------ */

static void count_operator_event(void *ctx, breaker *b, const breaker_event *ev) {
    (void)b;
    if (ev->reason == BREAKER_REASON_FORCED_OPEN || ev->reason == BREAKER_REASON_FORCED_CLOSED ||
        ev->reason == BREAKER_REASON_RESET || ev->reason == BREAKER_REASON_OPERATOR)
        atomic_fetch_add((_Atomic int *)ctx, 1);
}

static breaker *counted_attach(breaker_redis *f, _Atomic int *events) {
    breaker_config cfg;
    fleet_window_cfg(&cfg);
    cfg.on_event = count_operator_event;
    cfg.event_ctx = events; /* _Atomic int *, as count_operator_event() reads it */
    breaker *b = NULL;
    char msg[256] = "";
    int rc = breaker_redis_attach(f, NAME, &cfg, &b, msg, sizeof msg);
    if (rc != BREAKER_OK && rc != BREAKER_CONFIG_DIFFERS) fail_msg("attach: %s", msg);
    return b;
}

enum once_kind { ONCE_RESET, ONCE_TIMED_OPEN, ONCE_FORCED_CLOSED };

/* One host, two processes (a store handle and a fleet handle each), the
 * first holding the name: the operator's control `kind` is applied to the
 * host breaker by the holder; then the store file is unlinked, both
 * processes move to the new file, the holder closes and the other takes the
 * name over there. @return the host's operator events before the move
 * (*before) and in all (*after), and its state at the end. */
static enum breaker_state once_across_a_move(enum once_kind kind, int *before, int *after) {
    struct test_redis r = {0};
    assert_int_equal(test_redis_start(&r), 0);
    char dir[] = "/tmp/breaker-once-XXXXXX", path[64];
    breaker_store *sa = open_host_store(dir, path, sizeof path), *sb = NULL;
    assert_int_equal(breaker_store_open(path, NULL, &sb, NULL, 0), BREAKER_OK);
    breaker_redis *op = quiet_fleet(&r, NULL);
    (void)quiet_attach(op);
    _Atomic int events = 0;
    breaker_redis *p1 = quiet_fleet(&r, sa), *p2 = quiet_fleet(&r, sb);
    breaker *h1 = counted_attach(p1, &events), *h2 = counted_attach(p2, &events);
    assert_int_equal(breaker_redis_flush(p1), BREAKER_OK); /* p1 holds the name */
    assert_int_equal(breaker_redis_flush(p2), BREAKER_OK); /* p2 does not */
    char msg[256] = "";
    int rc = kind == ONCE_RESET ? fleet_reset(op, NAME, "dave", "fixed", msg, sizeof msg)
             : kind == ONCE_TIMED_OPEN
                 ? fleet_open_for(op, NAME, 600 * 1000 * MS, "dave", "window", msg, sizeof msg)
                 : fleet_force(op, NAME, BREAKER_FORCED_CLOSED, 600 * 1000 * MS, "dave", "trust",
                               msg, sizeof msg);
    if (rc != BREAKER_OK) fail_msg("control: %s", msg);
    for (int i = 0; i < 3; i++) { /* applied once, however many rounds */
        assert_int_equal(breaker_redis_flush(p1), BREAKER_OK);
        assert_int_equal(breaker_redis_flush(p2), BREAKER_OK);
    }
    *before = atomic_load(&events);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(breaker_store_check(sa, msg, sizeof msg), BREAKER_OK); /* makes the new file */
    assert_int_equal(breaker_store_check(sb, msg, sizeof msg), BREAKER_OK);
    assert_int_equal(breaker_redis_flush(p1), BREAKER_OK); /* holds it in the new file */
    assert_int_equal(breaker_redis_detach(p1, h1), BREAKER_OK);
    breaker_redis_close(p1);
    for (int i = 0; i < 3; i++) /* p2 takes the name over, in the new file */
        assert_int_equal(breaker_redis_flush(p2), BREAKER_OK);
    *after = atomic_load(&events);
    enum breaker_state end = breaker_get_state(h2);
    breaker_redis_close(p2);
    breaker_redis_close(op);
    breaker_store_close(sa);
    breaker_store_close(sb);
    unlink(path);
    rmdir(dir);
    test_redis_stop(&r);
    return end;
}

/* Each control once per host: one event before the move, none after (the
 * timed open and the forced close are carried to the new file with the
 * time they had left, and the new holder finds the host breaker already as
 * the record asks; the reset is one the host has had, whichever process
 * applied it). Before: one event before the move and two after, each a new
 * generation. */
static void a_control_reaches_a_host_once_across_a_store_move_and_a_takeover(void **state) {
    (void)state;
    static const char *const what[] = {"reset", "timed open", "forced close"};
    static const enum breaker_state want[] = {BREAKER_CLOSED, BREAKER_OPEN, BREAKER_FORCED_CLOSED};
    for (int k = ONCE_RESET; k <= ONCE_FORCED_CLOSED; k++) {
        int before = 0, after = 0;
        enum breaker_state end = once_across_a_move((enum once_kind)k, &before, &after);
        printf("a %s across a store move and a takeover: %d host event(s) before the move, %d "
               "in all; the host %s\n",
               what[k], before, after, breaker_state_name(end));
        assert_int_equal(before, 1);
        assert_int_equal(after, 1);
        assert_int_equal(end, want[k]);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fleet_forced_open_refuses_on_every_host_and_survives_their_flushes),
        cmocka_unit_test(fleet_forced_closed_admits_despite_failures),
        cmocka_unit_test(fleet_reset_closes_every_host_and_is_not_tripped_again),
        cmocka_unit_test(timed_orders_end_by_themselves),
        cmocka_unit_test(a_server_directed_open_on_one_host_quiets_the_whole_fleet),
        cmocka_unit_test(bad_orders_are_refused_naming_the_field),
        cmocka_unit_test(a_host_attached_before_a_reset_does_not_trip_the_fleet_again),
        cmocka_unit_test(a_process_attaching_after_a_reset_does_not_send_its_hosts_older_calls),
        cmocka_unit_test(a_new_holder_of_the_host_does_not_apply_an_order_again),
        cmocka_unit_test(an_order_of_a_state_made_anew_is_applied),
        cmocka_unit_test(a_forced_state_the_record_no_longer_holds_is_released),
        cmocka_unit_test(a_control_reaches_a_host_once_across_a_store_move_and_a_takeover),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
