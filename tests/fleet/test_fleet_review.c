/* SPDX-License-Identifier: MIT */
/*
 * test_fleet_review.c - a reviewer's reproducers for the fleet's control
 * record (include/breaker/redis.h, "The fleet's controls"; docs/fleet.md,
 * "Controls"), on the real client over the in-process transport
 * (src/store/redis/inproc/link.h) and the real Lua scripts, on a virtual
 * clock: hosts are fleet handles with no flusher thread, a round is
 * breaker_redis_flush(). Each test names the promise it holds the code to.
 */
#define _POSIX_C_SOURCE 200809L
#define BREAKER_BACKEND_EXPERIMENTAL
#define BREAKER_REDIS_TRANSPORT_EXPERIMENTAL

#include "fleet_control.h"
#include "inproc_util.h"
#include "store/redis/inproc/link.h"

#include <breaker.h>
#include <breaker/backend.h>
#include <breaker/redis.h>
#include <breaker/redis_transport.h>

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#define MS          UINT64_C(1000000)
#define SEC         (1000 * MS)
#define INTERVAL_NS (100 * MS)
#define REDIS_EPOCH (UINT64_C(1700000000) * SEC)
#define NAME        "rev.svc"

/* ---- A world: one in-process Redis, hosts on a virtual clock ------------------ */

static _Atomic uint64_t virtual_now = 10 * SEC;

static uint64_t host_clock(void *ctx) {
    (void)ctx;
    return atomic_load(&virtual_now);
}

static uint64_t redis_clock(void *ctx) {
    (void)ctx;
    return REDIS_EPOCH + atomic_load(&virtual_now);
}

static void advance(uint64_t ns) { atomic_fetch_add(&virtual_now, ns); }

static breaker_redis *host_open(struct breaker__redis_inproc *redis) {
    struct breaker__inproc_link *link = breaker__inproc_link_create(redis, host_clock, NULL);
    assert_non_null(link);
    breaker_redis_config rc;
    breaker_redis_config_init(&rc);
    rc.flush_interval_ns = INTERVAL_NS;
    breaker_redis *f = NULL;
    char msg[256] = "";
    int rc2 = breaker_redis_open_transport(&rc, &breaker__inproc_link_ops, link,
                                           BREAKER_REDIS_NO_FLUSHER, &f, msg, sizeof msg);
    if (rc2 != BREAKER_OK) fail_msg("open: %s", msg);
    return f;
}

static void time_window(breaker_config *c) {
    breaker_config_init(c);
    c->clock = host_clock;
    c->trip = BREAKER_TRIP_TIME_WINDOW;
    c->window_ns = 10 * SEC;
    c->window_buckets = 10;
    c->min_calls = 10;
    c->failure_rate = 0.5;
    c->open_ns = 200 * MS;
    c->open_max_ns = 4 * SEC;
    c->half_open_max_probes = 2;
    c->half_open_successes = 2;
    c->probe_timeout_ns = 500 * MS;
}

static breaker *attach(breaker_redis *f, const breaker_config *c) {
    breaker *b = NULL;
    char msg[256] = "";
    int rc = breaker_redis_attach(f, NAME, c, &b, msg, sizeof msg);
    if (rc != BREAKER_OK && rc != BREAKER_CONFIG_DIFFERS) fail_msg("attach: %s", msg);
    return b;
}

static void round_of(breaker_redis *f) {
    advance(INTERVAL_NS);
    (void)breaker_redis_flush(f);
}

/* ---- Refused limits are remembered by version alone ------------------------- */

/* The record is known by its state's born and its version (docs/fleet.md,
 * "Controls": "a state made anew starts again at 1"), and a host whose
 * breaker refused a record's limits is "not asked again that version".
 * After Redis lost the state, the new state's version 2 is another record:
 * its limits (which this host can take) must reach it within two rounds
 * (redis.h: "Every live host reaches a change within two flush intervals").
 * The host keeps refused_version = 2 from the old state and never asks. */
static void limits_refused_in_a_lost_state_do_not_block_the_new_states_same_version(void **state) {
    (void)state;
    struct breaker__redis_inproc *redis = breaker__redis_inproc_create(redis_clock, NULL);
    assert_non_null(redis);
    breaker_redis *hf = host_open(redis), *op = host_open(redis);
    /* The host: a count window of 20 calls, which cannot take min_calls 30
     * (breaker_config_validate()): it refuses that record's limits. */
    breaker_config cw;
    time_window(&cw);
    cw.trip = BREAKER_TRIP_COUNT_WINDOW;
    cw.window_size = 20;
    breaker *hb = attach(hf, &cw);
    breaker_config tw;
    time_window(&tw);
    (void)attach(op, &tw);
    round_of(hf);
    round_of(op);
    char msg[256] = "";
    breaker_redis_control_state rec;
    assert_int_equal(breaker_redis_control_get(op, NAME, &rec, msg, sizeof msg), BREAKER_OK);
    rec.limits.min_calls = 30;
    assert_int_equal(fleet_reconfigure(op, NAME, &rec.limits, 0, "op", "", msg, sizeof msg),
                     BREAKER_OK); /* version 2 of the first state */
    round_of(hf);
    round_of(hf);
    breaker_redis_stats st;
    breaker_redis_stats_get(hf, &st);
    assert_int_equal(st.reconfigs_refused, 1); /* as designed: it keeps its own */

    /* Redis loses everything; the host's next round makes the state anew
     * (its own limits: min_calls 10), version 1. */
    breaker_redis_reply_free(inproc_run(redis, "FLUSHALL"));
    round_of(hf);
    round_of(hf);
    assert_int_equal(breaker_redis_control_get(op, NAME, &rec, msg, sizeof msg), BREAKER_OK);
    assert_int_equal(rec.version, 1);
    assert_int_equal(rec.limits.min_calls, 10);
    /* Version 2 of the new state: a longer open wait, which the host can take. */
    rec.limits.open_ns = 300 * MS;
    assert_int_equal(fleet_reconfigure(op, NAME, &rec.limits, 0, "op", "", msg, sizeof msg),
                     BREAKER_OK);
    assert_int_equal(breaker_redis_control_get(op, NAME, &rec, msg, sizeof msg), BREAKER_OK);
    assert_int_equal(rec.version, 2);
    round_of(hf);
    round_of(hf);
    breaker_config now;
    breaker_get_config(hb, &now);
    breaker_redis_stats_get(hf, &st);
    printf("the new state's version 2 (open 300 ms): the host's open wait %llu ms; refused %llu, "
           "applied %llu\n",
           (unsigned long long)(now.open_ns / MS), (unsigned long long)st.reconfigs_refused,
           (unsigned long long)st.reconfigs_applied);
    breaker_redis_close(hf);
    breaker_redis_close(op);
    breaker__redis_inproc_destroy(redis);
    assert_int_equal(now.open_ns, 300 * MS);
}

/* ---- breaker_redis_control_get() against a concurrent detach --------------- */

/* breaker_redis_control_get() is documented thread-safe, and takes a name,
 * not a breaker: a detach of that name on another thread (a registry's
 * eviction) may run while it waits for Redis. It reads the breaker it found
 * (breaker_get_config()) after the exchange, with no lock: a use after free
 * under ASan. Without a sanitizer this test passes (the freed memory is
 * usually still readable); build with BREAKER_SANITIZER=address. */
struct churn {
    breaker_redis *f;
    _Atomic int stop;
    _Atomic unsigned spins;
    _Atomic long attached;
    breaker_config cfg;
};

static void *attach_detach(void *arg) {
    struct churn *c = arg;
    while (!atomic_load(&c->stop)) {
        breaker *b = NULL;
        int rc = breaker_redis_attach(c->f, NAME, &c->cfg, &b, NULL, 0);
        if (rc != BREAKER_OK && rc != BREAKER_CONFIG_DIFFERS) continue;
        atomic_fetch_add(&c->attached, 1);
        /* Attached a little while: a read may find it, then lose it. */
        struct timespec ts = {0, (long)(20000 + (atomic_fetch_add(&c->spins, 1) % 8) * 10000)};
        nanosleep(&ts, NULL);
        (void)breaker_redis_detach(c->f, b);
    }
    return NULL;
}

static void control_get_survives_a_concurrent_detach_of_the_name(void **state) {
    (void)state;
    struct breaker__redis_inproc *redis = breaker__redis_inproc_create(redis_clock, NULL);
    assert_non_null(redis);
    struct churn c;
    memset(&c, 0, sizeof c);
    c.f = host_open(redis);
    time_window(&c.cfg);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, attach_detach, &c), 0);
    int ok = 0;
    while (atomic_load(&c.attached) < 2000) {
        breaker_redis_control_state rec;
        if (breaker_redis_control_get(c.f, NAME, &rec, NULL, 0) == BREAKER_OK) ok++;
    }
    atomic_store(&c.stop, 1);
    pthread_join(t, NULL);
    printf("control_get beside attach/detach: %d reads answered, %ld attaches\n", ok,
           atomic_load(&c.attached));
    breaker_redis_close(c.f);
    breaker__redis_inproc_destroy(redis);
}

/* ---- The probe path reads the limits text the flusher rewrites ------------- */

/* The gate (lease.c) sends the acquire script with the entry's limits text
 * (e->limits, ARGV 2) as an argument, from the caller's thread, with no lock;
 * the flusher rewrites that text (snprintf) under round_mu when the record's
 * limits are applied (flush.c, apply_actions()). A data race (TSan), and a
 * probe may send a torn text (the script makes a state from it when none
 * is there). A transport around the in-process link, serialising its own
 * calls, lets the probe run on a caller's thread: it records every limits
 * text a probe carried, each must be one the handle formatted whole. */
struct guarded {
    pthread_mutex_t mu;
    void *link;
    _Atomic long probes, torn;
};

static struct guarded guard;

static int g_exchange(void *t, breaker_redis_command *cmds, size_t n, breaker_redis_reply **r,
                      char *why, size_t why_len) {
    (void)t;
    pthread_mutex_lock(&guard.mu);
    int got = breaker__inproc_link_ops.exchange(guard.link, cmds, n, r, why, why_len);
    pthread_mutex_unlock(&guard.mu);
    return got;
}

/* The two texts the operator alternates (min_calls 10 or 11), as the client
 * formats them (the limits' text: protocol.c). */
static int limits_whole(const char *text) {
    return strncmp(text, "min_calls=10 ", 13) == 0 || strncmp(text, "min_calls=11 ", 13) == 0;
}

static int g_probe(void *t, breaker_redis_command *cmd, uint64_t deadline,
                   breaker_redis_reply **reply) {
    (void)t;
    /* argv: numkeys, 4 keys, TTL, the limits text, the token. */
    char copy[512];
    const char *limits = cmd->argv[6];
    size_t len = strlen(limits);
    if (len >= sizeof copy) len = sizeof copy - 1;
    memcpy(copy, limits, len);
    copy[len] = '\0';
    atomic_fetch_add(&guard.probes, 1);
    if (!limits_whole(copy) || strstr(copy, " min_failing_sources=") == NULL)
        atomic_fetch_add(&guard.torn, 1);
    pthread_mutex_lock(&guard.mu);
    int got = breaker__inproc_link_ops.probe(guard.link, cmd, deadline, reply);
    pthread_mutex_unlock(&guard.mu);
    return got;
}

static uint32_t g_server_of(void *t, const char *key) {
    (void)t;
    return breaker__inproc_link_ops.server_of(guard.link, key);
}
static int g_reachable(void *t, const char *key) {
    (void)t;
    pthread_mutex_lock(&guard.mu);
    int r = breaker__inproc_link_ops.reachable(guard.link, key);
    pthread_mutex_unlock(&guard.mu);
    return r;
}
static void g_round_done(void *t) { (void)t; }
static uint64_t g_now(void *t) {
    (void)t;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec;
}
static void g_destroy(void *t) {
    (void)t;
    breaker__inproc_link_ops.destroy(guard.link);
}

static const breaker_redis_transport_ops guarded_ops = {
    .name = "guarded-inproc",
    .exchange = g_exchange,
    .probe = g_probe,
    .server_of = g_server_of,
    .reachable = g_reachable,
    .round_done = g_round_done,
    .now_ns = g_now,
    .destroy = g_destroy,
};

static uint64_t mono_clock(void *ctx) { return g_now(ctx); }

struct prober {
    breaker *b;
    _Atomic int stop;
};

/* A breaker tripped by this host alone, under a CLOSED fleet: each probe
 * asks for a lease, hears "the fleet is closed" and goes ahead; its success
 * closes the breaker, which is tripped again. */
static void *probe_loop(void *arg) {
    struct prober *p = arg;
    while (!atomic_load(&p->stop)) {
        if (breaker_state_peek(p->b) == BREAKER_CLOSED)
            (void)breaker_trip_outside_for(p->b, breaker_generation(p->b), 1, NULL);
        breaker_permit pm;
        if (breaker_acquire(p->b, &pm) == BREAKER_OK)
            (void)breaker_complete(p->b, &pm, BREAKER_SUCCESS);
    }
    return NULL;
}

static void a_probe_never_sends_a_limits_text_the_flusher_is_rewriting(void **state) {
    (void)state;
    struct breaker__redis_inproc *redis = breaker__redis_inproc_create(mono_clock, NULL);
    assert_non_null(redis);
    pthread_mutex_init(&guard.mu, NULL);
    guard.link = breaker__inproc_link_create(redis, mono_clock, NULL);
    assert_non_null(guard.link);
    breaker_redis_config rc;
    breaker_redis_config_init(&rc);
    rc.flush_interval_ns = INTERVAL_NS;
    breaker_redis *f = NULL, *op = NULL;
    char msg[256] = "";
    assert_int_equal(breaker_redis_open_transport(&rc, &guarded_ops, NULL, BREAKER_REDIS_NO_FLUSHER,
                                                  &f, msg, sizeof msg),
                     BREAKER_OK);
    struct breaker__inproc_link *oplink = breaker__inproc_link_create(redis, mono_clock, NULL);
    breaker_config cfg;
    time_window(&cfg);
    cfg.clock = mono_clock;
    cfg.open_ns = 1000; /* 1 us: probe after probe */
    struct prober p = {.b = attach(f, &cfg)};
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    /* The operator's handle shares the server: its calls go under the guard. */
    assert_int_equal(breaker_redis_open_transport(&rc, &breaker__inproc_link_ops, oplink,
                                                  BREAKER_REDIS_NO_FLUSHER, &op, msg, sizeof msg),
                     BREAKER_OK);
    pthread_mutex_lock(&guard.mu);
    (void)attach(op, &cfg);
    pthread_mutex_unlock(&guard.mu);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, probe_loop, &p), 0);
    for (int i = 0; i < 400; i++) {
        breaker_redis_control_state rec;
        pthread_mutex_lock(&guard.mu);
        int rc1 = breaker_redis_control_get(op, NAME, &rec, msg, sizeof msg);
        if (rc1 == BREAKER_OK) {
            rec.limits.min_calls = rec.limits.min_calls == 10 ? 11 : 10;
            (void)fleet_reconfigure(op, NAME, &rec.limits, 0, "op", "", msg, sizeof msg);
        }
        pthread_mutex_unlock(&guard.mu);
        (void)breaker_redis_flush(f); /* applies them: e->limits rewritten */
    }
    atomic_store(&p.stop, 1);
    pthread_join(t, NULL);
    long probes = atomic_load(&guard.probes), torn = atomic_load(&guard.torn);
    printf("probes sent %ld beside 400 limits changes; torn limits texts %ld\n", probes, torn);
    breaker_redis_close(f);
    breaker_redis_close(op);
    breaker__redis_inproc_destroy(redis);
    assert_true(probes > 0);
    assert_int_equal(torn, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(limits_refused_in_a_lost_state_do_not_block_the_new_states_same_version),
        cmocka_unit_test(control_get_survives_a_concurrent_detach_of_the_name),
        cmocka_unit_test(a_probe_never_sends_a_limits_text_the_flusher_is_rewriting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
