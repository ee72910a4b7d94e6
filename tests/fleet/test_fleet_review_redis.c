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
#include <time.h>
#include <stdarg.h>
#include <stdatomic.h>
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

/* A holder killed in a round, at a place its own event listener makes
 * exact: a redis-server, a store file in a new directory (made before the
 * child opens it), a child that opens it, attaches its names (names()),
 * makes a round that takes them, then, told to go, the round it dies in. */
struct killed_holder {
    struct test_redis r;
    char dir[32], path[64];
    int ready[2], go[2];
    pid_t pid;
};

static void killed_holder_start(struct killed_holder *k, void (*names)(breaker_redis *p1)) {
    memset(k, 0, sizeof *k);
    assert_int_equal(test_redis_start(&k->r), 0);
    snprintf(k->dir, sizeof k->dir, "/tmp/breaker-review-XXXXXX");
    assert_non_null(mkdtemp(k->dir));
    snprintf(k->path, sizeof k->path, "%s/host.store", k->dir);
    breaker_store *boot = open_store(k->path); /* the file exists before the child opens it */
    breaker_store_close(boot);
    assert_int_equal(pipe(k->ready), 0);
    assert_int_equal(pipe(k->go), 0);
    k->pid = fork();
    assert_true(k->pid >= 0);
    if (k->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        breaker_store *st = open_store(k->path);
        breaker_redis *p1 = quiet_fleet(&k->r, st);
        names(p1);
        char one = breaker_redis_flush(p1) == BREAKER_OK ? 1 : 0; /* holds its names */
        (void)!write(k->ready[1], &one, 1);
        (void)!read(k->go[0], &one, 1);
        (void)breaker_redis_flush(p1); /* dies in it */
        _exit(3);
    }
    char one = 0;
    assert_int_equal(read(k->ready[0], &one, 1), 1);
    assert_int_equal(one, 1);
}

/* Tell the child to go; @return its status once it died. */
static int killed_holder_go(struct killed_holder *k) {
    char one = 1;
    assert_int_equal(write(k->go[1], &one, 1), 1);
    int status = 0;
    assert_int_equal(waitpid(k->pid, &status, 0), k->pid);
    return status;
}

static void killed_holder_cleanup(struct killed_holder *k) {
    close(k->ready[0]);
    close(k->ready[1]);
    close(k->go[0]);
    close(k->go[1]);
    unlink(k->path);
    rmdir(k->dir);
    test_redis_stop(&k->r);
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

static void dies_applying_the_forced_open(breaker_redis *p1) {
    (void)attach_as(p1, NAME, die_on_forced_open); /* entry 0: applied first */
    breaker *hb = attach_as(p1, NAME_B, NULL);
    (void)breaker_open_for(hb, 60000 * MS, BREAKER_REASON_OPERATOR);
}

static void a_reset_decided_by_a_holder_killed_before_applying_it_is_applied_once(void **state) {
    (void)state;
    struct killed_holder k;
    killed_holder_start(&k, dies_applying_the_forced_open);
    breaker_redis *op = quiet_fleet(&k.r, NULL);
    (void)attach_as(op, NAME, NULL);
    (void)attach_as(op, NAME_B, NULL);
    char msg[256] = "";
    assert_int_equal(
        fleet_force(op, NAME, BREAKER_FORCED_OPEN, 0, "dave", "maint", msg, sizeof msg),
        BREAKER_OK);
    assert_int_equal(fleet_reset(op, NAME_B, "dave", "fixed", msg, sizeof msg), BREAKER_OK);
    int status = killed_holder_go(&k);
    breaker_store *st = open_store(k.path);
    breaker_redis *p2 = quiet_fleet(&k.r, st);
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
    killed_holder_cleanup(&k);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0); /* died where meant */
    assert_int_equal(before, BREAKER_OPEN);
    assert_int_equal(after, BREAKER_CLOSED);
}

/* The other side of the same promise (added with the fix): the holder
 * gives the reset and is killed before it records that it did (SIGKILL's
 * place, made exact: the reset's own event listener exits, before the
 * words' outcome and before the store file's last-control record, which
 * is written after the event). The next holder finds the holder's intent
 * in the words and a breaker moved on from the generation it names: the
 * reset was given, and is not given again (its generation stays, no reset
 * event of its own). */
static void die_on_reset(void *ctx, breaker *b, const breaker_event *ev) {
    (void)ctx;
    (void)b;
    if (ev->reason == BREAKER_REASON_RESET) _exit(0);
}

static _Atomic int resets_here;

static void count_resets(void *ctx, breaker *b, const breaker_event *ev) {
    (void)ctx;
    (void)b;
    if (ev->reason == BREAKER_REASON_RESET) atomic_fetch_add(&resets_here, 1);
}

static void dies_in_the_resets_event(breaker_redis *p1) {
    breaker *hb = attach_as(p1, NAME_B, die_on_reset);
    (void)breaker_open_for(hb, 60000 * MS, BREAKER_REASON_OPERATOR);
}

static void a_reset_given_by_a_holder_killed_before_recording_it_is_not_given_again(void **state) {
    (void)state;
    struct killed_holder k;
    killed_holder_start(&k, dies_in_the_resets_event);
    breaker_redis *op = quiet_fleet(&k.r, NULL);
    (void)attach_as(op, NAME_B, NULL);
    char msg[256] = "";
    assert_int_equal(fleet_reset(op, NAME_B, "dave", "fixed", msg, sizeof msg), BREAKER_OK);
    int status = killed_holder_go(&k); /* the reset given, not recorded */
    breaker_store *st = open_store(k.path);
    breaker_redis *p2 = quiet_fleet(&k.r, st);
    breaker *hb = attach_as(p2, NAME_B, count_resets);
    enum breaker_state before = breaker_get_state(hb);
    uint64_t gen_before = breaker_generation(hb);
    for (int i = 0; i < 3; i++)
        assert_int_equal(breaker_redis_flush(p2), BREAKER_OK);
    uint64_t gen_after = breaker_generation(hb);
    int resets = atomic_load(&resets_here);
    printf("a holder killed between giving a reset and recording it: child exit %d; the host "
           "breaker %s, generation %llu before the new holder's rounds, %llu after, %d resets "
           "given by it (want the same generation, none)\n",
           WIFEXITED(status) ? WEXITSTATUS(status) : -1, breaker_state_name(before),
           (unsigned long long)gen_before, (unsigned long long)gen_after, resets);
    breaker_redis_close(p2);
    breaker_redis_close(op);
    breaker_store_close(st);
    killed_holder_cleanup(&k);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0); /* died where meant */
    assert_int_equal(before, BREAKER_CLOSED);                   /* the reset was given */
    assert_int_equal(resets, 0);
    assert_int_equal(gen_after, gen_before);
}

/* SIGKILL's place between the intent and the reset, made exact: NAME
 * (entry 0, applied first) arms it in its forced open's event; NAME_B's
 * clock then ends the process at its next reading, the record's reset
 * given by the apply phase right after it wrote NAME_B's intent in the
 * host words (writing the intent reads no clock; the reset reads it
 * before its transition). */
static _Atomic int die_at_next_clock;

static void arm_on_forced_open(void *ctx, breaker *b, const breaker_event *ev) {
    (void)ctx;
    (void)b;
    if (ev->reason == BREAKER_REASON_FORCED_OPEN) atomic_store(&die_at_next_clock, 1);
}

static uint64_t clock_that_dies_when_armed(void *ctx) {
    (void)ctx;
    if (atomic_load(&die_at_next_clock)) _exit(0);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void dies_between_the_intent_and_the_reset(breaker_redis *p1) {
    (void)attach_as(p1, NAME, arm_on_forced_open); /* entry 0: applied first */
    breaker_config cfg;
    config(&cfg);
    cfg.clock = clock_that_dies_when_armed;
    breaker *hb = NULL;
    char msg[256] = "";
    int rc = breaker_redis_attach(p1, NAME_B, &cfg, &hb, msg, sizeof msg);
    if (rc != BREAKER_OK && rc != BREAKER_CONFIG_DIFFERS) _exit(4);
    (void)breaker_open_for(hb, 300 * MS, BREAKER_REASON_OPERATOR);
}

/* docs/fleet.md: "a control is applied once per host and never lost,
 * whoever dies where, but for one double fault: a holder killed in the
 * microseconds between its intent and the reset while another process's
 * call moved the breaker loses that reset" (host.c settle_intent()). The
 * second fault is not confined to those microseconds: settle_intent()
 * takes ANY move of the generation between the intent and the next
 * holder's takeover for the reset. One fault (the kill between the intent
 * and the reset) and ordinary traffic afterwards (another process's call
 * finds the open wait over and begins a half-open, before the next holder's
 * first round) lose the reset: no process ever gives it. */
static void a_reset_whose_holder_died_before_giving_it_is_given_after_later_traffic(void **state) {
    (void)state;
    struct killed_holder k;
    killed_holder_start(&k, dies_between_the_intent_and_the_reset);
    breaker_redis *op = quiet_fleet(&k.r, NULL);
    (void)attach_as(op, NAME, NULL);
    (void)attach_as(op, NAME_B, NULL);
    char msg[256] = "";
    assert_int_equal(
        fleet_force(op, NAME, BREAKER_FORCED_OPEN, 0, "dave", "maint", msg, sizeof msg),
        BREAKER_OK);
    assert_int_equal(fleet_reset(op, NAME_B, "dave", "fixed", msg, sizeof msg), BREAKER_OK);
    int status = killed_holder_go(&k); /* the intent written, the reset not given */
    atomic_store(&resets_here, 0);
    breaker_store *st = open_store(k.path);
    breaker_redis *p2 = quiet_fleet(&k.r, st);
    (void)attach_as(p2, NAME, NULL);
    breaker *hb = attach_as(p2, NAME_B, count_resets);
    enum breaker_state before = breaker_get_state(hb);
    uint64_t gen_killed = breaker_generation(hb);
    test_redis_nap_ms(400); /* the 300 ms open wait is over */
    breaker_permit p;
    if (breaker_acquire(hb, &p) == BREAKER_OK) /* ordinary traffic: the half-open */
        (void)breaker_complete(hb, &p, BREAKER_FAILURE);
    uint64_t gen_moved = breaker_generation(hb);
    for (int i = 0; i < 3; i++)
        assert_int_equal(breaker_redis_flush(p2), BREAKER_OK);
    int resets = atomic_load(&resets_here);
    enum breaker_state after = breaker_get_state(hb);
    printf("a holder killed between its intent and the reset: child exit %d; the host breaker %s "
           "(generation %llu), moved by a call to %llu before the new holder's rounds; %d resets "
           "given by it, %s after (want 1 reset)\n",
           WIFEXITED(status) ? WEXITSTATUS(status) : -1, breaker_state_name(before),
           (unsigned long long)gen_killed, (unsigned long long)gen_moved, resets,
           breaker_state_name(after));
    breaker_redis_close(p2);
    breaker_redis_close(op);
    breaker_store_close(st);
    killed_holder_cleanup(&k);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0); /* died where meant */
    assert_int_equal(before, BREAKER_OPEN);                     /* the reset not given */
    assert_true(gen_moved > gen_killed);
    assert_int_equal(resets, 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_forced_state_given_just_before_a_detach_is_released_by_the_next_holder),
        cmocka_unit_test(a_reset_decided_by_a_holder_killed_before_applying_it_is_applied_once),
        cmocka_unit_test(a_reset_given_by_a_holder_killed_before_recording_it_is_not_given_again),
        cmocka_unit_test(a_reset_whose_holder_died_before_giving_it_is_given_after_later_traffic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
