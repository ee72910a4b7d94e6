/* SPDX-License-Identifier: MIT */
/*
 * test_fleet_reconfig_race.c - the fleet's new limits and a local change of
 * the same breaker at the same time, against a real redis-server.
 *
 * A host's flusher applies the fleet's limits by reading the local
 * breaker's configuration, replacing the fields the fleet stores and
 * writing it back (include/breaker/redis.h, fleet_reconfigure()).
 * Meanwhile a local writer changes a field the fleet does not store
 * (ramp_start), as an operator's `breaker config NAME ramp_start=...` over
 * the host's store file does, fenced by the generation it read. Neither
 * may write over the other: the writer never finds its last value gone,
 * and once the operator stops changing the fleet's limits, the host runs
 * them, whatever rounds the writer's changes made the flusher retry.
 * Run with the breaker in a store file (another handle on the same block
 * makes the local changes) and without (the handle itself).
 */
#define _DEFAULT_SOURCE /* mkdtemp */
#define _POSIX_C_SOURCE 200809L

#include <breaker.h>
#include <breaker/redis.h>
#include <breaker/store.h>

#include "fleet_control.h"
#include "fleet_util.h"
#include "redis_group.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#define MS   ((uint64_t)1000000)
#define NAME "race.svc"

/* Fleet reconfigurations the host must apply before the writer stops:
 * enough rounds that a flusher reading before the writer's change and
 * writing after it would have happened. */
#define FLEET_CHANGES 150

static void config(breaker_config *cfg) {
    breaker_config_init(cfg);
    cfg->trip = BREAKER_TRIP_TIME_WINDOW;
    cfg->window_ns = 2000 * MS;
    cfg->window_buckets = 10;
    cfg->min_calls = 10;
    cfg->open_ns = 200 * MS;
    cfg->open_jitter = 0;
}

static breaker_redis *open_fleet(breaker_store *st) {
    breaker_redis_config rc;
    breaker_redis_config_init(&rc);
    rc.store = st;
    rc.port = group_redis.port;
    rc.flush_interval_ns = 2 * MS;
    rc.io_timeout_ns = 2000 * MS;
    return fleet_open_or_fail(&rc);
}

/* The local writer: ramp_start through distinct values, each change fenced
 * by the generation read before the configuration. */
struct writer {
    breaker *b; /* the handle it changes: the fleet's, or another on its block */
    _Atomic int stop;
    long lost;    /* its last value was gone: someone wrote over it */
    long changes; /* changes it made */
    char why[160];
};

static void *write_locally(void *arg) {
    struct writer *w = arg;
    double last = 0;
    for (unsigned k = 0; !atomic_load(&w->stop); k++) {
        uint64_t gen = breaker_config_generation(w->b);
        breaker_config c;
        breaker_get_config(w->b, &c);
        if (last != 0 && c.ramp_start != last) {
            if (w->lost++ == 0)
                snprintf(w->why, sizeof w->why, "ramp_start %g, its last change %g", c.ramp_start,
                         last);
            last = c.ramp_start;
        }
        double next = 0.1 + (double)(k % 800) / 1000.0;
        if (next == c.ramp_start) continue;
        c.ramp_start = next;
        int rc = breaker_reconfigure(w->b, &c, gen, NULL, 0);
        if (rc == BREAKER_OK) {
            last = next;
            w->changes++;
            /* Tens of thousands of changes a second, not millions: a
             * writer with no pause at all would keep the flusher from ever
             * winning (its read, replace and write takes longer than the
             * writer's), which no operator does; either way each change is
             * one the flusher must not write over. */
            struct timespec pause = {.tv_sec = 0, .tv_nsec = 20000};
            nanosleep(&pause, NULL);
        } else if (rc != BREAKER_STALE) {
            snprintf(w->why, sizeof w->why, "reconfigure: %s", breaker_strerror(rc));
            w->lost++;
            break;
        }
    }
    return NULL;
}

/* The operator: the fleet's min_calls to `value`, read and changed. */
static void fleet_min_calls(breaker_redis *op, uint32_t value) {
    for (;;) {
        breaker_redis_control_state l;
        char msg[256];
        int rc = breaker_redis_control_get(op, NAME, &l, msg, sizeof msg);
        if (rc != BREAKER_OK) fail_msg("limits_get: %s", msg);
        l.limits.min_calls = value;
        rc = fleet_reconfigure(op, NAME, &l.limits, l.version, "test", "race", msg, sizeof msg);
        if (rc == BREAKER_OK) return;
        if (rc != BREAKER_STALE) fail_msg("reconfigure: %s", msg);
    }
}

static uint64_t applied(breaker_redis *f) {
    breaker_redis_stats st;
    breaker_redis_stats_get(f, &st);
    return st.reconfigs_applied;
}

static void race(bool with_store) {
    char dir[] = "/tmp/breaker_race_XXXXXX", path[64];
    breaker_store *st = NULL;
    if (with_store) {
        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof path, "%s/store", dir);
        breaker_store_config sc;
        breaker_store_config_init(&sc);
        sc.flags |= BREAKER_STORE_CREATE;
        char msg[256];
        if (breaker_store_open(path, &sc, &st, msg, sizeof msg) != BREAKER_OK)
            fail_msg("store: %s", msg);
    }
    breaker_redis *host = open_fleet(st), *op = open_fleet(NULL);
    breaker_config cfg;
    config(&cfg);
    breaker *b = NULL, *mine = NULL, *other = NULL;
    char msg[256];
    assert_int_equal(breaker_redis_attach(host, NAME, &cfg, &b, msg, sizeof msg), BREAKER_OK);
    assert_int_equal(breaker_redis_attach(op, NAME, &cfg, &mine, msg, sizeof msg), BREAKER_OK);
    struct writer w = {.b = b};
    if (with_store) {
        /* `breaker config NAME` over the store file: another handle on the
         * same block. */
        assert_int_equal(breaker_store_attach(st, NAME, NULL, &other, msg, sizeof msg), BREAKER_OK);
        w.b = other;
    }
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, write_locally, &w), 0);
    uint32_t value = 10;
    uint64_t deadline = test_redis_now_ns() + 60000 * MS;
    while (applied(host) < FLEET_CHANGES && test_redis_now_ns() < deadline) {
        value = value == 10 ? 11 : 10;
        fleet_min_calls(op, value);
        test_redis_nap_ms(3);
    }
    uint64_t took_ms = (test_redis_now_ns() - (deadline - 60000 * MS)) / MS;
    atomic_store(&w.stop, 1);
    assert_int_equal(pthread_join(t, NULL), 0);
    breaker_redis_stats hs;
    breaker_redis_stats_get(host, &hs);
    printf("%s: %llu fleet changes applied (%llu refused) in %llu ms while the writer made %ld\n",
           with_store ? "store file" : "local", (unsigned long long)hs.reconfigs_applied,
           (unsigned long long)hs.reconfigs_refused, (unsigned long long)took_ms, w.changes);
    if (w.lost != 0) fail_msg("the writer's change was written over %ld times: %s", w.lost, w.why);
    if (applied(host) < FLEET_CHANGES)
        fail_msg("only %llu of %d fleet changes applied in 60 s", (unsigned long long)applied(host),
                 FLEET_CHANGES);
    assert_true(w.changes > 0);
    /* Quiet now: the host runs the fleet's last limits within a few rounds,
     * retried if the writer made it give up. */
    breaker_config now;
    for (int i = 0; i < 2000; i++) {
        breaker_get_config(b, &now);
        if (now.min_calls == value) break;
        test_redis_nap_ms(5);
    }
    assert_int_equal(now.min_calls, value);
    breaker_destroy(other);
    breaker_redis_close(op);
    breaker_redis_close(host);
    if (st != NULL) {
        breaker_store_close(st);
        unlink(path);
        rmdir(dir);
    }
}

static void a_local_change_and_the_fleets_limits_never_overwrite_each_other(void **state) {
    (void)state;
    race(false);
}

static void a_change_over_the_store_file_is_never_overwritten_by_the_fleets(void **state) {
    (void)state;
    race(true);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            a_local_change_and_the_fleets_limits_never_overwrite_each_other, group_redis_start,
            group_redis_stop),
        cmocka_unit_test_setup_teardown(
            a_change_over_the_store_file_is_never_overwritten_by_the_fleets, group_redis_start,
            group_redis_stop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
