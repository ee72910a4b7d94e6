/* SPDX-License-Identifier: MIT */
/*
 * test_operate_concurrency.c - live changes under traffic (issue 25): four
 * threads call a breaker whose every call fails (so it trips, waits, probes
 * and reopens with a growing wait) while a fifth switches its limits between
 * two versions and turns shadow mode on and off. Every wait an OPEN starts
 * must be a wait of one version (never an open_ns of one with the backoff
 * of the other), and the counters must add up: each admitted call settled
 * once, each call shadow mode let through counted once as a would-reject
 * and once as a shadow outcome. Run under ThreadSanitizer (LABELS
 * concurrency).
 */
#define _GNU_SOURCE
#include "test_util.h"

#include <pthread.h>
#include <time.h>

#define CALLERS 4
#define CHANGES 2000

/* Version A: 1 ms, no backoff. Version B: 3 ms doubling up to 12 ms. A mix
 * (A's open_ns with B's backoff) would wait 2, 4 or 8 ms: no version's. */
static void version(breaker_config *c, int b) {
    c->open_ns = b ? 3 * MS : 1 * MS;
    c->open_backoff = b ? 2.0 : 1.0;
    c->open_max_ns = b ? 12 * MS : 1 * MS;
    c->failure_threshold = b ? 3 : 1;
}

static int wait_of_a_version(uint64_t w) {
    return w == 1 * MS || w == 3 * MS || w == 6 * MS || w == 12 * MS;
}

struct run {
    breaker *b;
    _Atomic int stop;
    _Atomic unsigned opens, mixed, events;
    _Atomic uint64_t calls;
};

static void on_event(void *ctx, breaker *b, const breaker_event *ev) {
    (void)b;
    struct run *r = ctx;
    atomic_fetch_add(&r->events, 1);
    if (ev->reason == BREAKER_REASON_RECONFIGURED) return;
    if (ev->to == BREAKER_OPEN) {
        atomic_fetch_add(&r->opens, 1);
        if (!wait_of_a_version(ev->open_ns)) atomic_fetch_add(&r->mixed, 1);
    }
}

static void *caller(void *arg) {
    struct run *r = arg;
    uint64_t n = 0;
    for (; !atomic_load_explicit(&r->stop, memory_order_relaxed); n++) {
        breaker_permit p;
        if (breaker_acquire(r->b, &p) == BREAKER_OK)
            (void)breaker_complete(r->b, &p, (n & 7) == 0 ? BREAKER_SUCCESS : BREAKER_FAILURE);
    }
    atomic_fetch_add(&r->calls, n);
    return NULL;
}

static void *changer(void *arg) {
    struct run *r = arg;
    breaker_config c;
    (void)r->stop;
    breaker_get_config(r->b, &c);
    /* Paced, so that waits of both versions run out under traffic; nothing
     * is decided on the pace. */
    struct timespec pace = {0, 200 * 1000};
    for (int i = 0; i < CHANGES; i++) {
        nanosleep(&pace, NULL);
        version(&c, i & 1);
        char msg[256];
        if (breaker_reconfigure(r->b, &c, 0, msg, sizeof(msg)) != BREAKER_OK)
            fail_msg("reconfigure: %s", msg);
        if ((i & 15) == 0) (void)breaker_set_shadow(r->b, (i & 16) != 0);
    }
    return NULL;
}

static void changes_under_traffic_are_whole_and_counts_add_up(void **state) {
    (void)state;
    struct run r = {0};
    breaker_config cfg;
    breaker_config_init(&cfg);
    cfg.trip = BREAKER_TRIP_CONSECUTIVE;
    cfg.open_jitter = 0;
    cfg.half_open_max_probes = 2;
    cfg.half_open_successes = 1;
    cfg.probe_timeout_ns = 50 * MS;
    cfg.min_failing_sources = 1;
    version(&cfg, 0);
    cfg.on_event = on_event;
    cfg.event_ctx = &r;
    assert_int_equal(test_breaker_create(&cfg, &r.b), BREAKER_OK);
    pthread_t t[CALLERS + 1];
    for (int i = 0; i < CALLERS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, caller, &r), 0);
    assert_int_equal(pthread_create(&t[CALLERS], NULL, changer, &r), 0);
    pthread_join(t[CALLERS], NULL);
    atomic_store(&r.stop, 1);
    for (int i = 0; i < CALLERS; i++)
        pthread_join(t[i], NULL);
    breaker_stats st;
    assert_int_equal(breaker_stats_get(r.b, &st), BREAKER_OK);
    print_message("opens %u (mixed %u), events %u, config generation %llu, admitted %llu, "
                  "would-reject %llu\n",
                  atomic_load(&r.opens), atomic_load(&r.mixed), atomic_load(&r.events),
                  (unsigned long long)breaker_config_generation(r.b),
                  (unsigned long long)st.admitted,
                  (unsigned long long)(st.would_reject_open + st.would_reject_half_open));
    assert_true(atomic_load(&r.opens) > 0);
    assert_int_equal(atomic_load(&r.mixed), 0);
    assert_int_equal(st.admitted, st.successes + st.failures + st.ignored + st.stale);
    assert_int_equal(st.would_reject_open + st.would_reject_half_open + st.would_reject_forced +
                         st.would_reject_ramp,
                     st.shadow_successes + st.shadow_failures);
    assert_int_equal(st.admitted + st.rejected_open + st.rejected_half_open + st.would_reject_open +
                         st.would_reject_half_open,
                     atomic_load(&r.calls));
    /* the first change asks for the limits the breaker has: no change */
    assert_int_equal(breaker_config_generation(r.b), CHANGES);
    test_breaker_destroy(r.b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(changes_under_traffic_are_whole_and_counts_add_up),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
