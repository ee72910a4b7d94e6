/* SPDX-License-Identifier: MIT */
/*
 * test_operate_store.c - operators steering a host's breaker through its
 * store file (issue 25), with separate processes: one server-directed open
 * quiets every process of the host for exactly that long, then the normal
 * bounded probing; shadow mode switched in one process holds in all; a
 * live change of the limits made in one process applies in all, and one
 * left half made by a writer that died is completed or dropped.
 */
#define _GNU_SOURCE
#include "store_fixture.h"

#include "core/internal.h" /* a writer's half-made change, by hand */

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

/* A child that attached the name and checks what it sees: exit 0 when it
 * saw what it should. */
static pid_t spawn(int (*body)(breaker *b, void *arg), void *arg, const breaker_config *cfg) {
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        breaker_store *cs = NULL;
        breaker *c = child_attach("api", cfg, &cs);
        int rc = body(c, arg);
        breaker_destroy(c);
        breaker_store_close(cs);
        _exit(rc);
    }
    return pid;
}

/* Refused before the wait's end, by its own clock; then the first call
 * after it is the one probe, and no second one is admitted while it is
 * out. */
static int refused_until_then_one_probe(breaker *c, void *arg) {
    uint64_t until = *(const uint64_t *)arg;
    breaker_stats st;
    (void)breaker_stats_get(c, &st);
    if (st.state != BREAKER_OPEN || st.open_until_ns != until) return 10;
    if (st.server_directed_opens != 1) return 11;
    for (;;) {
        breaker_permit p;
        uint64_t before = monotonic_ns();
        int rc = breaker_acquire(c, &p);
        uint64_t after = monotonic_ns();
        if (rc == BREAKER_REJECTED_OPEN) {
            if (before >= until) return 12; /* refused past the wait */
            continue;
        }
        if (rc != BREAKER_OK) return 13;
        if (after < until) return 14; /* admitted before the end */
        if (!breaker_permit_is_probe(&p)) return 15;
        breaker_permit q;
        if (breaker_acquire(c, &q) != BREAKER_REJECTED_HALF_OPEN) return 16;
        return breaker_complete(c, &p, BREAKER_SUCCESS) == BREAKER_OK ? 0 : 17;
    }
}

static void one_server_directed_open_quiets_every_process_of_the_host(void **state) {
    (void)state;
    breaker_store *st = open_store();
    breaker_config cfg = consecutive_config(5);
    cfg.half_open_successes = 1;
    cfg.open_max_ns = 60 * SEC;
    breaker *b = attach(st, "api", &cfg);
    /* Another process hears the dependency's 429 with Retry-After: 300ms. */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        breaker_store *cs = NULL;
        breaker *c = child_attach("api", &cfg, &cs);
        int rc = breaker_open_for(c, 300 * MS, BREAKER_REASON_SERVER_DIRECTED);
        breaker_destroy(c);
        breaker_store_close(cs);
        breaker_destroy(b);
        breaker_store_close(st);
        _exit(rc == BREAKER_OK ? 0 : 1);
    }
    assert_int_equal(reap(pid), 0);
    breaker_stats s = stats_of(b);
    assert_int_equal(s.state, BREAKER_OPEN);
    assert_int_equal(s.server_directed_opens, 1);
    uint64_t until = s.open_until_ns;
    assert_true(until > monotonic_ns());
    breaker_permit p;
    assert_int_equal(breaker_acquire(b, &p), BREAKER_REJECTED_OPEN);
    /* A third process: refused until exactly then, then one probe. */
    pid = spawn(refused_until_then_one_probe, &until, &cfg);
    assert_int_equal(reap(pid), 0);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    s = stats_of(b);
    assert_int_equal(s.probes_admitted, 1);
    assert_int_equal(s.probes_succeeded, 1);
    breaker_destroy(b);
    breaker_store_close(st);
}

static int admitted_in_shadow(breaker *c, void *arg) {
    (void)arg;
    if (!breaker_shadow(c) || breaker_get_state(c) != BREAKER_OPEN) return 10;
    breaker_permit p;
    if (breaker_acquire(c, &p) != BREAKER_OK) return 11;
    if (breaker_complete(c, &p, BREAKER_SUCCESS) != BREAKER_OK) return 12;
    /* And off again, for every process. */
    return breaker_set_shadow(c, 0) == BREAKER_OK ? 0 : 13;
}

static void shadow_mode_switched_in_one_process_holds_in_all(void **state) {
    (void)state;
    breaker_store *st = open_store();
    breaker_config cfg = consecutive_config(1);
    breaker *b = attach(st, "api", &cfg);
    assert_int_equal(breaker_set_shadow(b, 1), BREAKER_OK);
    call_ok(b, BREAKER_FAILURE); /* would open */
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    pid_t pid = spawn(admitted_in_shadow, NULL, &cfg);
    assert_int_equal(reap(pid), 0);
    breaker_stats s = stats_of(b);
    assert_int_equal(s.shadow, 0);
    assert_int_equal(s.would_reject_open, 1);
    assert_int_equal(s.shadow_successes, 1);
    breaker_permit p;
    assert_int_equal(breaker_acquire(b, &p), BREAKER_REJECTED_OPEN);
    breaker_destroy(b);
    breaker_store_close(st);
}

/* ---- Live reconfiguration --------------------------------------------------- */

static int reconfigure_child(breaker *c, void *arg) {
    (void)arg;
    breaker_config cfg;
    breaker_get_config(c, &cfg);
    if (cfg.failure_threshold != 5) return 10;
    cfg.failure_threshold = 1;
    cfg.open_ns = 2 * SEC;
    char msg[256];
    if (breaker_reconfigure(c, &cfg, 1, msg, sizeof(msg)) != BREAKER_OK) return 11;
    return breaker_config_generation(c) == 2 ? 0 : 12;
}

static void a_change_in_one_process_applies_in_every_process(void **state) {
    (void)state;
    breaker_store *st = open_store();
    breaker_config cfg = consecutive_config(5);
    cfg.open_ns = 30 * SEC;
    breaker *b = attach(st, "api", &cfg);
    call_ok(b, BREAKER_FAILURE);
    pid_t pid = spawn(reconfigure_child, NULL, &cfg);
    assert_int_equal(reap(pid), 0);
    /* This process's handle, made before: the new limits at once. */
    assert_int_equal(breaker_config_generation(b), 2);
    breaker_config now;
    breaker_get_config(b, &now);
    assert_int_equal(now.failure_threshold, 1);
    assert_int_equal(now.open_ns, 2 * SEC);
    call_ok(b, BREAKER_FAILURE); /* trips at the new threshold, for the new wait */
    breaker_stats s = stats_of(b);
    assert_int_equal(s.state, BREAKER_OPEN);
    assert_true(breaker_retry_after_ns(b) <= 2 * SEC);
    /* An attacher with the old limits is told the stored ones win. */
    breaker *other = NULL;
    char msg[256];
    assert_int_equal(breaker_store_attach(st, "api", &cfg, &other, msg, sizeof(msg)),
                     BREAKER_CONFIG_DIFFERS);
    breaker_destroy(other);
    breaker_destroy(b);
    breaker_store_close(st);
}

/* A writer that dies at any instruction (here: after filling the staging
 * copy, or while filling it) leaves limits every reader sees whole, and
 * the next holder of the file lock (an attach) completes or drops it. */
static void a_change_left_half_made_is_completed_or_dropped(void **state) {
    (void)state;
    breaker_store *st = open_store();
    breaker_config cfg = consecutive_config(5);
    breaker *b = attach(st, "api", &cfg);
    struct breaker__shared *s = b->shared;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) { /* step 1 done, then killed in the copy */
        s->lim_next.failure_threshold = 1;
        atomic_store(&s->lim_ver, BREAKER__LIM_COPYING);
        s->lim.failure_threshold = 1; /* the copy's first field, of several */
        _exit(0);
    }
    assert_int_equal(reap(pid), 0);
    breaker_config now;
    breaker_get_config(b, &now); /* whole: the staging copy */
    assert_int_equal(now.failure_threshold, 1);
    breaker *again = attach(st, "api", NULL); /* the next holder completes it */
    assert_int_equal(atomic_load(&s->lim_ver), 4);
    assert_int_equal(breaker_config_generation(b), 2);
    assert_int_equal(s->lim.failure_threshold, 1);
    breaker_destroy(again);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) { /* killed while filling the staging copy */
        atomic_store(&s->lim_ver, 4 | BREAKER__LIM_STAGING);
        s->lim_next.failure_threshold = 77;
        _exit(0);
    }
    assert_int_equal(reap(pid), 0);
    breaker_get_config(b, &now); /* `lim`, untouched */
    assert_int_equal(now.failure_threshold, 1);
    char msg[256];
    breaker_config c = now;
    c.failure_threshold = 3;         /* a writer in this process completes nothing half made... */
    again = attach(st, "api", NULL); /* ...the next attach drops the dead one's */
    assert_int_equal(atomic_load(&s->lim_ver), 4);
    assert_int_equal(breaker_config_generation(b), 2);
    assert_int_equal(breaker_reconfigure(b, &c, 2, msg, sizeof(msg)), BREAKER_OK);
    assert_int_equal(breaker_config_generation(b), 3);
    breaker_get_config(again, &now);
    assert_int_equal(now.failure_threshold, 3);
    breaker_destroy(again);
    breaker_destroy(b);
    breaker_store_close(st);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(one_server_directed_open_quiets_every_process_of_the_host,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(shadow_mode_switched_in_one_process_holds_in_all, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_change_in_one_process_applies_in_every_process, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_change_left_half_made_is_completed_or_dropped, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
