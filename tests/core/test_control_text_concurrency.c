/* SPDX-License-Identifier: MIT */
/*
 * test_control_text_concurrency.c - an operator's text goes with its own
 * transition only (issue 25): four threads call a breaker whose calls
 * mostly fail (it trips, waits 1 ms, probes, reopens) while a fifth gives
 * it controls with numbered who and why text (reset, timed open, forced
 * close with an end, forced open). Every event on a calling thread (a
 * trip, a probe's transitions, an expiry) must carry no text, and every
 * event on the controlling thread the text of the control it is making at
 * that moment, never an earlier one's. Run under ThreadSanitizer (LABELS
 * concurrency).
 */
#define _GNU_SOURCE
#include "test_util.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>

#define CALLERS  4
#define CONTROLS 4000

static _Thread_local int control_seq = -1; /* the controlling thread's current control */

struct run {
    breaker *b;
    _Atomic int stop;
    _Atomic unsigned caller_events, texted_caller_events, control_events, wrong_text;
    _Atomic unsigned trips_on_control_thread;
};

static void on_event(void *ctx, breaker *b, const breaker_event *ev) {
    (void)b;
    struct run *r = ctx;
    if (control_seq < 0) {
        atomic_fetch_add(&r->caller_events, 1);
        if (ev->who[0] != '\0' || ev->why[0] != '\0') atomic_fetch_add(&r->texted_caller_events, 1);
        return;
    }
    char who[32], why[48];
    snprintf(who, sizeof who, "op-%d", control_seq);
    snprintf(why, sizeof why, "control number %d", control_seq);
    atomic_fetch_add(&r->control_events, 1);
    if (ev->reason == BREAKER_REASON_FORCE_EXPIRED) {
        /* A due expiry the control's own read applied first: no text. */
        if (ev->who[0] != '\0' || ev->why[0] != '\0') atomic_fetch_add(&r->wrong_text, 1);
        return;
    }
    if (strcmp(ev->who, who) != 0 || strcmp(ev->why, why) != 0) atomic_fetch_add(&r->wrong_text, 1);
}

static void *caller(void *arg) {
    struct run *r = arg;
    for (uint64_t n = 0; !atomic_load_explicit(&r->stop, memory_order_relaxed); n++) {
        breaker_permit p;
        if (breaker_acquire(r->b, &p) == BREAKER_OK)
            (void)breaker_complete(r->b, &p, (n & 3) == 0 ? BREAKER_SUCCESS : BREAKER_FAILURE);
    }
    return NULL;
}

static void texts_never_reach_another_threads_transition(void **state) {
    (void)state;
    struct run r = {0};
    breaker_config cfg;
    breaker_config_init(&cfg);
    cfg.trip = BREAKER_TRIP_CONSECUTIVE;
    cfg.failure_threshold = 1;
    cfg.open_ns = 1 * MS;
    cfg.open_max_ns = 1 * MS;
    cfg.open_jitter = 0;
    cfg.half_open_successes = 1;
    cfg.on_event = on_event;
    cfg.event_ctx = &r;
    assert_int_equal(test_breaker_create(&cfg, &r.b), BREAKER_OK);
    pthread_t t[CALLERS];
    for (int i = 0; i < CALLERS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, caller, &r), 0);
    static const enum breaker_control_action actions[] = {
        BREAKER_CONTROL_RESET, BREAKER_CONTROL_OPEN_FOR, BREAKER_CONTROL_RESET,
        BREAKER_CONTROL_FORCE_CLOSED, BREAKER_CONTROL_FORCE_OPEN};
    for (int i = 0; i < CONTROLS; i++) {
        char who[32], why[48];
        snprintf(who, sizeof who, "op-%d", i);
        snprintf(why, sizeof why, "control number %d", i);
        breaker_control c;
        breaker_control_init(&c);
        c.action = actions[i % 5];
        c.for_ns = c.action == BREAKER_CONTROL_OPEN_FOR       ? 1 * MS
                   : c.action == BREAKER_CONTROL_FORCE_CLOSED ? 1 * MS
                                                              : 0;
        c.who = who;
        c.why = why;
        unsigned callers_before = atomic_load(&r.caller_events);
        control_seq = i;
        assert_int_equal(breaker_control_apply(r.b, &c, NULL, 0), BREAKER_OK);
        control_seq = -1;
        /* Every tenth reset, let the callers trip the breaker before the
         * next control: four threads whose calls mostly fail will (a
         * failure trips it), however the scheduler runs them, and then
         * their transitions race the controls that follow. Without the
         * wait a busy machine may run all the controls before a caller's
         * first call, and the test would check nothing on their side. */
        if (i % 50 == 0)
            while (atomic_load(&r.caller_events) == callers_before)
                sched_yield();
    }
    atomic_store(&r.stop, 1);
    for (int i = 0; i < CALLERS; i++)
        pthread_join(t[i], NULL);
    breaker_destroy(r.b);
    /* Each control made a transition (none repeats the state before it). */
    assert_true(atomic_load(&r.control_events) >= CONTROLS);
    assert_int_equal(atomic_load(&r.wrong_text), 0);
    assert_int_equal(atomic_load(&r.texted_caller_events), 0);
    /* The callers made transitions of their own meanwhile: at least one
     * after each reset the controller waited on. */
    assert_true(atomic_load(&r.caller_events) >= CONTROLS / 50);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(texts_never_reach_another_threads_transition),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
