/* SPDX-License-Identifier: MIT */
/*
 * test_fleet_review_redis.c - a reviewer's reproducers for the control
 * record across a change of a store file's holder (docs/fleet.md, "One
 * flusher per host", "Controls"), on a real redis-server: the host words
 * carry what the record did to the host breaker ("the last reset applied",
 * "the generation the record's forced state made"), so that a new holder
 * neither applies a control again nor misses one. Each test names the
 * promise it holds the code to.
 */
#define _DEFAULT_SOURCE /* mkdtemp */
#define _POSIX_C_SOURCE 200809L

#include <breaker.h>
#include <breaker/redis.h>
#include <breaker/store.h>

#include "fleet_control.h"
#include "redis_server.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#define MS     ((uint64_t)1000000)
#define NAME   "review.a"
#define NAME_B "review.b"

static void config(breaker_config *cfg) {
    breaker_config_init(cfg);
    cfg->trip = BREAKER_TRIP_TIME_WINDOW;
    cfg->window_ns = 2000 * MS;
    cfg->window_buckets = 10;
    cfg->min_calls = 10;
    cfg->failure_rate = 0.5;
    cfg->open_ns = 200 * MS;
    cfg->open_max_ns = 400 * MS;
    cfg->half_open_max_probes = 1;
    cfg->half_open_successes = 1;
    cfg->probe_timeout_ns = 1000 * MS;
}

/* A handle whose rounds run only when the test asks (an hour's interval). */
static breaker_redis *quiet_fleet(const struct test_redis *r, breaker_store *st) {
    breaker_redis_config rc;
    breaker_redis_config_init(&rc);
    rc.port = r->port;
    rc.flush_interval_ns = 3600ull * 1000 * MS;
    rc.io_timeout_ns = 2000 * MS;
    rc.probe_budget_ns = 500 * MS;
    rc.store = st;
    breaker_redis *f = NULL;
    char msg[256] = "";
    if (breaker_redis_open(&rc, &f, msg, sizeof msg) != BREAKER_OK) fail_msg("open: %s", msg);
    return f;
}

static breaker *attach_as(breaker_redis *f, const char *name, breaker_event_fn *on_event) {
    breaker_config cfg;
    config(&cfg);
    cfg.on_event = on_event;
    breaker *b = NULL;
    char msg[256] = "";
    int rc = breaker_redis_attach(f, name, &cfg, &b, msg, sizeof msg);
    if (rc != BREAKER_OK && rc != BREAKER_CONFIG_DIFFERS) fail_msg("attach: %s", msg);
    return b;
}

static breaker_store *open_store(const char *path) {
    breaker_store *st = NULL;
    assert_int_equal(breaker_store_open(path, NULL, &st, NULL, 0), BREAKER_OK);
    return st;
}

/* Redis's rounds until one answers (a restarted server). */
static int flush_until_ok(breaker_redis *f) {
    int rc = BREAKER_EIO;
    for (int i = 0; i < 100 && rc != BREAKER_OK; i++) {
        rc = breaker_redis_flush(f);
        if (rc != BREAKER_OK) test_redis_nap_ms(20);
    }
    return rc;
}

/* redis.h: "a forced state the record gave a host is released (a reset,
 * saying "the fleet's control record forces nothing") when the record no
 * longer holds it, e.g. a state Redis made anew after losing it";
 * docs/fleet.md: "the generation it made is in the host words". The holder
 * applies the record's forced open in a round, and gives the name up (a
 * detach, a registry's eviction; a kill is the same) before its next round:
 * the words still say no forced state was made (they are written before the
 * transitions are applied, flush.c apply_actions() sets forced_gen after).
 * The next holder never releases the host breaker: FORCED_OPEN for good,
 * though Redis lost the record. */
static void a_forced_state_given_just_before_a_detach_is_released_by_the_next_holder(void **state) {
    (void)state;
    struct test_redis r;
    memset(&r, 0, sizeof r);
    assert_int_equal(test_redis_start(&r), 0);
    char dir[] = "/tmp/breaker-review-XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/host.store", dir);
    breaker_store *st = open_store(path);
    breaker_redis *op = quiet_fleet(&r, NULL);
    (void)attach_as(op, NAME, NULL);
    breaker_redis *p1 = quiet_fleet(&r, st), *p2 = quiet_fleet(&r, st);
    breaker *h1 = attach_as(p1, NAME, NULL), *h2 = attach_as(p2, NAME, NULL);
    assert_int_equal(breaker_redis_flush(p1), BREAKER_OK); /* p1 holds the name */
    char msg[256] = "";
    assert_int_equal(
        fleet_force(op, NAME, BREAKER_FORCED_OPEN, 0, "dave", "maint", msg, sizeof msg),
        BREAKER_OK);
    assert_int_equal(breaker_redis_flush(p1), BREAKER_OK); /* applies it */
    enum breaker_state forced = breaker_get_state(h2);
    assert_int_equal(breaker_redis_detach(p1, h1), BREAKER_OK);
    breaker_redis_close(p1);
    assert_int_equal(breaker_redis_flush(p2), BREAKER_OK); /* the new holder */
    test_redis_kill(&r);
    assert_int_equal(test_redis_restart(&r), 0); /* empty: the record is gone */
    int rc = flush_until_ok(p2);
    assert_int_equal(breaker_redis_flush(p2), BREAKER_OK);
    assert_int_equal(breaker_redis_flush(p2), BREAKER_OK);
    enum breaker_state after = breaker_get_state(h2);
    printf("the record's forced open, then a new holder, then Redis emptied: the host breaker %s "
           "before, %s after (want closed)\n",
           breaker_state_name(forced), breaker_state_name(after));
    breaker_redis_close(p2);
    breaker_redis_close(op);
    breaker_store_close(st);
    unlink(path);
    rmdir(dir);
    test_redis_stop(&r);
    assert_int_equal(rc, BREAKER_OK);
    assert_int_equal(forced, BREAKER_FORCED_OPEN);
    assert_int_equal(after, BREAKER_CLOSED);
}

/* docs/fleet.md: "the last reset applied is in the host words, so a new
 * holder or a moved file applies none again"; redis.h: "each host whose
 * breaker is older than it applies once". The holder's round decides a
 * reset of NAME_B (and a forced open of NAME), writes its words (the reset
 * marked seen) and dies while applying the round's transitions, before the
 * reset (SIGKILL's place, made exact: NAME's event listener exits). The new
 * holder reads the words and never applies the reset: the host breaker
 * stays open. "Exactly once" became "never". */
static void die_on_forced_open(void *ctx, breaker *b, const breaker_event *ev) {
    (void)ctx;
    (void)b;
    if (ev->reason == BREAKER_REASON_FORCED_OPEN) _exit(0);
}

static void a_reset_decided_by_a_holder_killed_before_applying_it_is_applied_once(void **state) {
    (void)state;
    struct test_redis r;
    memset(&r, 0, sizeof r);
    assert_int_equal(test_redis_start(&r), 0);
    char dir[] = "/tmp/breaker-review-XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/host.store", dir);
    breaker_store *boot = open_store(path); /* the file exists before the child opens it */
    breaker_store_close(boot);
    int ready[2], go[2];
    assert_int_equal(pipe(ready), 0);
    assert_int_equal(pipe(go), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        breaker_store *st = open_store(path);
        breaker_redis *p1 = quiet_fleet(&r, st);
        (void)attach_as(p1, NAME, die_on_forced_open); /* entry 0: applied first */
        breaker *hb = attach_as(p1, NAME_B, NULL);
        (void)breaker_open_for(hb, 60000 * MS, BREAKER_REASON_OPERATOR);
        char one = breaker_redis_flush(p1) == BREAKER_OK ? 1 : 0; /* holds both names */
        (void)!write(ready[1], &one, 1);
        (void)!read(go[0], &one, 1);
        (void)breaker_redis_flush(p1); /* dies in it */
        _exit(3);
    }
    char one = 0;
    assert_int_equal(read(ready[0], &one, 1), 1);
    assert_int_equal(one, 1);
    breaker_redis *op = quiet_fleet(&r, NULL);
    (void)attach_as(op, NAME, NULL);
    (void)attach_as(op, NAME_B, NULL);
    char msg[256] = "";
    assert_int_equal(
        fleet_force(op, NAME, BREAKER_FORCED_OPEN, 0, "dave", "maint", msg, sizeof msg),
        BREAKER_OK);
    assert_int_equal(fleet_reset(op, NAME_B, "dave", "fixed", msg, sizeof msg), BREAKER_OK);
    assert_int_equal(write(go[1], &one, 1), 1);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    breaker_store *st = open_store(path);
    breaker_redis *p2 = quiet_fleet(&r, st);
    (void)attach_as(p2, NAME, NULL);
    breaker *hb = attach_as(p2, NAME_B, NULL);
    enum breaker_state before = breaker_get_state(hb);
    for (int i = 0; i < 3; i++)
        assert_int_equal(breaker_redis_flush(p2), BREAKER_OK);
    enum breaker_state after = breaker_get_state(hb);
    printf("a holder killed between deciding a reset and applying it: child exit %d; the host "
           "breaker %s before the new holder's rounds, %s after (want closed)\n",
           WIFEXITED(status) ? WEXITSTATUS(status) : -1, breaker_state_name(before),
           breaker_state_name(after));
    breaker_redis_close(p2);
    breaker_redis_close(op);
    breaker_store_close(st);
    close(ready[0]);
    close(ready[1]);
    close(go[0]);
    close(go[1]);
    unlink(path);
    rmdir(dir);
    test_redis_stop(&r);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0); /* died where meant */
    assert_int_equal(before, BREAKER_OPEN);
    assert_int_equal(after, BREAKER_CLOSED);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_forced_state_given_just_before_a_detach_is_released_by_the_next_holder),
        cmocka_unit_test(a_reset_decided_by_a_holder_killed_before_applying_it_is_applied_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
