/* SPDX-License-Identifier: MIT */
/*
 * test_fleet_follower.c - against a real redis-server: a host that follows
 * the fleet's open, and whose probe asks for a lease after another host's
 * probes closed the fleet but before its own next round, hears "the fleet
 * is closed". It must not probe alone (with every follower doing so, more
 * probes would be in flight than the fleet's limit): the probe is refused
 * and its flusher, woken, closes the local breaker at once
 * (breaker__fleet_lease_settle() in src/store/redis/protocol.c).
 */
#define _POSIX_C_SOURCE 200809L

#include "redis_group.h"

#define BREAKER_BACKEND_EXPERIMENTAL
#include <breaker/backend.h> /* breaker_permit_gate_token() */
#include <breaker/redis.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <cmocka.h>

#define MS ((uint64_t)1000000)

static void nap_ms(long ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A handle whose flusher only runs when woken (an hour's interval). */
static breaker_redis *open_fleet(void) {
    breaker_redis_config rc;
    breaker_redis_config_init(&rc);
    rc.port = group_redis.port;
    rc.flush_interval_ns = 3600 * 1000 * MS;
    rc.io_timeout_ns = 2000 * MS;   /* patient: a loaded machine must not degrade it */
    rc.probe_budget_ns = 1000 * MS; /* nor run a lease request past its budget */
    breaker_redis *f = NULL;
    char msg[256] = "";
    if (breaker_redis_open(&rc, &f, msg, sizeof msg) != BREAKER_OK) fail_msg("open: %s", msg);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK); /* joined */
    return f;
}

static void follower_cfg(breaker_config *c) {
    breaker_config_init(c);
    c->trip = BREAKER_TRIP_CONSECUTIVE;
    c->failure_threshold = 2;
    c->open_ns = c->open_max_ns = 100 * MS;
    c->open_jitter = 0;
    c->half_open_max_probes = 1;
    c->half_open_successes = 1;
    c->probe_timeout_ns = 30000 * MS;
}

static void a_follower_that_hears_the_fleet_closed_closes_instead_of_probing(void **state) {
    (void)state;
    breaker_redis *fa = open_fleet(), *fb = open_fleet();
    breaker_config cfg;
    follower_cfg(&cfg);
    breaker *a, *b;
    assert_int_equal(breaker_redis_attach(fa, "follow", &cfg, &a, NULL, 0), BREAKER_OK);
    assert_int_equal(breaker_redis_attach(fb, "follow", &cfg, &b, NULL, 0), BREAKER_OK);
    /* Host A's two failures trip the fleet; host B follows it. */
    for (int i = 0; i < 2; i++) {
        breaker_permit p;
        assert_int_equal(breaker_acquire(a, &p), BREAKER_OK);
        (void)breaker_complete(a, &p, BREAKER_FAILURE);
    }
    assert_int_equal(breaker_redis_flush(fa), BREAKER_OK);
    assert_int_equal(breaker_redis_flush(fb), BREAKER_OK);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    nap_ms(250); /* every open wait is over: the fleet's and both hosts' */
    /* A's probe takes the lease and succeeds: the fleet closes (A's round). */
    breaker_permit p;
    assert_int_equal(breaker_acquire(a, &p), BREAKER_OK);
    assert_true(breaker_permit_gate_token(&p) != 0);
    (void)breaker_complete(a, &p, BREAKER_SUCCESS);
    assert_int_equal(breaker_redis_flush(fa), BREAKER_OK);
    assert_int_equal(test_redis_int(&group_redis, "HGET breaker:v2:{follow}:s st"), 0);
    assert_int_equal(breaker_get_state(a), BREAKER_CLOSED);
    /* B, before its next round: its probe hears "closed", and is refused. */
    breaker_permit q;
    assert_int_equal(breaker_acquire(b, &q), BREAKER_REJECTED_HALF_OPEN);
    /* Its flusher, woken, closes it (bounded: 5 s for a loaded machine). */
    for (int i = 0; i < 500 && breaker_get_state(b) != BREAKER_CLOSED; i++)
        nap_ms(10);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    breaker_stats s;
    breaker_stats_get(b, &s);
    assert_int_equal(s.probes_succeeded + s.probes_failed, 0); /* it never probed */
    breaker_redis_stats st;
    breaker_redis_stats_get(fb, &st);
    assert_int_equal(st.fleet_closes, 1);
    breaker_redis_close(fa);
    breaker_redis_close(fb);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_follower_that_hears_the_fleet_closed_closes_instead_of_probing),
    };
    return cmocka_run_group_tests(tests, group_redis_start, group_redis_stop);
}
