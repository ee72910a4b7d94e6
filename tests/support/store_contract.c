/* SPDX-License-Identifier: MIT */
/*
 * store_contract.c - the store contract (store_contract.h), once, for every
 * store. Real time with short waits: each wait is a bounded poll, never a
 * sleep standing in for a state.
 */
#define _GNU_SOURCE
#include "store_contract.h"

#include "test_util.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static const struct store_under_test *sut;

/* Every time of the contract, stretched under valgrind (make valgrind:
 * everything some 50 times slower), whose run is for memory errors, not
 * time: the waits, the deadlines and the slack alike, so that they keep
 * their proportions. */
static uint64_t slow(void) {
    const char *preload = getenv("LD_PRELOAD");
    return preload != NULL && strstr(preload, "vgpreload") != NULL ? 30 : 1;
}
#define OPEN_MS  (30 * slow())  /* first open wait */
#define PROBE_MS (400 * slow()) /* probe deadline: far beyond a held probe's life in the tests */
#define SLACK_MS (150 * slow()) /* scheduler and propagation slack on a loaded 2-core machine */

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int contract_setup(void **state) {
    (void)state;
    return sut->setup();
}

static int contract_teardown(void **state) {
    (void)state;
    sut->teardown();
    return 0;
}

static void sync_sites(void) {
    if (sut->sync != NULL) sut->sync();
}

/* A call through the store's own functions, where it has them. */
static int sut_acquire(breaker *b, breaker_permit *p) {
    return sut->acquire != NULL ? sut->acquire(b, p) : breaker_acquire(b, p);
}

static int sut_complete(breaker *b, breaker_permit *p, enum breaker_outcome outcome) {
    return sut->complete != NULL ? sut->complete(b, p, outcome) : breaker_complete(b, p, outcome);
}

static void sut_call(breaker *b, enum breaker_outcome outcome) {
    breaker_permit p;
    assert_int_equal(sut_acquire(b, &p), BREAKER_OK);
    assert_int_equal(sut_complete(b, &p, outcome), BREAKER_OK);
}

static breaker_config contract_config(uint32_t max_probes) {
    breaker_config cfg;
    breaker_config_init(&cfg);
    cfg.trip = BREAKER_TRIP_CONSECUTIVE;
    cfg.failure_threshold = 2;
    cfg.open_ns = OPEN_MS * MS;
    cfg.open_jitter = 0;
    cfg.half_open_max_probes = max_probes;
    cfg.half_open_successes = max_probes;
    cfg.probe_timeout_ns = PROBE_MS * MS;
    return cfg;
}

static breaker *site(int which, const char *name, const breaker_config *cfg) {
    breaker *b = NULL;
    int rc = sut->attach(which, name, cfg, &b);
    if (rc != BREAKER_OK && rc != BREAKER_CONFIG_DIFFERS)
        fail_msg("%s: attach %s at site %d: %s", sut->name, name, which, breaker_strerror(rc));
    return b;
}

static void trip(breaker *b) {
    while (breaker_get_state(b) == BREAKER_CLOSED)
        sut_call(b, BREAKER_FAILURE);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
}

/* Poll `b` until it admits (a probe once the wait is over), within `ms`. */
static void admitted_within(breaker *b, breaker_permit *p, uint64_t ms) {
    uint64_t give_up = now_ns() + ms * MS;
    for (;;) {
        if (sut_acquire(b, p) == BREAKER_OK) return;
        if (now_ns() > give_up)
            fail_msg("%s: not admitted within %llu ms", sut->name, (unsigned long long)ms);
        sync_sites();
    }
}

/* Poll until `b` shows `state` (after sync), within `ms`. */
static void state_within(breaker *b, enum breaker_state state, uint64_t ms) {
    uint64_t give_up = now_ns() + ms * MS;
    for (;;) {
        sync_sites();
        if (breaker_get_state(b) == state) return;
        if (now_ns() > give_up)
            fail_msg("%s: %s, not %s, after %llu ms", sut->name,
                     breaker_state_name(breaker_get_state(b)), breaker_state_name(state),
                     (unsigned long long)ms);
    }
}

static void one_name_is_one_breaker(void **state) {
    (void)state;
    breaker_config cfg = contract_config(1);
    breaker *a = site(0, "svc", &cfg);
    breaker *b = site(1, "svc", &cfg);
    trip(a);
    state_within(b, BREAKER_OPEN, SLACK_MS);
    breaker_permit p;
    assert_int_equal(sut_acquire(b, &p), BREAKER_REJECTED_OPEN);
    sut->detach(0, a);
    sut->detach(1, b);
}

static void names_are_independent(void **state) {
    (void)state;
    breaker_config cfg = contract_config(1);
    breaker *one = site(0, "one", &cfg);
    breaker *two = site(1, "two", &cfg);
    trip(one);
    sync_sites();
    assert_int_equal(breaker_get_state(two), BREAKER_CLOSED);
    sut_call(two, BREAKER_SUCCESS);
    sut->detach(0, one);
    sut->detach(1, two);
}

/* Probes asked for at both sites, held: never more than the budget. */
static void the_probe_budget_is_the_stores(void **state) {
    (void)state;
    enum { MAX = 2 };
    breaker_config cfg = contract_config(MAX);
    breaker *s[2] = {site(0, "budget", &cfg), site(1, "budget", &cfg)};
    trip(s[0]);
    state_within(s[1], BREAKER_OPEN, SLACK_MS);
    breaker_permit held[2 * MAX + 2];
    breaker *from[2 * MAX + 2]; /* the site each permit came from */
    uint64_t got[2 * MAX + 2];  /* the clock just after each admission */
    int n = 0;
    /* Until the wait is over and 100 ms past it (well inside the first
     * probe's deadline, so none expires meanwhile): ask at both sites in
     * turn, keep every permit. A process descheduled through all of that
     * (seen once, at load 15) keeps asking until it holds a probe, and
     * then stops at once: still inside that probe's deadline. */
    uint64_t until = now_ns() + (OPEN_MS + 100) * MS;
    uint64_t give_up = now_ns() + 10000 * MS;
    while ((now_ns() < until || n == 0) && now_ns() < give_up &&
           n < (int)(sizeof(held) / sizeof(held[0]))) {
        for (int i = 0; i < 2; i++) {
            uint64_t asked = now_ns();
            if (sut_acquire(s[i], &held[n]) != BREAKER_OK) continue;
            got[n] = now_ns();
            assert_true(breaker_permit_is_probe(&held[n]));
            /* The budget is of probes within their deadline: one admitted
             * PROBE_MS or more before this one was asked for has expired
             * (a loaded machine, a single core: the test was descheduled
             * that long) and rightly freed its slot. */
            int live = 1;
            for (int k = 0; k < n; k++)
                live += asked - got[k] < (uint64_t)PROBE_MS * MS;
            if (live > MAX)
                fail_msg("%s: %d probes in flight within their deadline; budget %d", sut->name,
                         live, MAX);
            from[n++] = s[i];
        }
        sync_sites();
    }
    if (n < 1) fail_msg("%s: no probe admitted", sut->name);
    for (int i = 0; i < n; i++) {
        int rc = sut_complete(from[i], &held[i], BREAKER_SUCCESS);
        /* A probe completes OK while every probe held is inside its
         * deadline. Once the first one admitted is past it (the test was
         * descheduled PROBE_MS or more: seen at load 97), that probe's
         * timeout has reopened the breaker, and the promise is STALE. */
        if (now_ns() - got[0] >= (uint64_t)PROBE_MS * MS && rc == BREAKER_STALE) continue;
        assert_int_equal(rc, BREAKER_OK);
    }
    sut->detach(0, s[0]);
    sut->detach(1, s[1]);
}

/* A permit admitted before a trip made elsewhere completes STALE and does
 * not close the new OPEN. */
static void a_late_result_is_stale(void **state) {
    (void)state;
    breaker_config cfg = contract_config(1);
    breaker *a = site(0, "late", &cfg);
    breaker *b = site(1, "late", &cfg);
    breaker_permit p;
    assert_int_equal(sut_acquire(a, &p), BREAKER_OK);
    trip(b);
    state_within(a, BREAKER_OPEN, SLACK_MS);
    assert_int_equal(sut_complete(a, &p, BREAKER_SUCCESS), BREAKER_STALE);
    sync_sites();
    assert_int_equal(breaker_get_state(a), BREAKER_OPEN);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    sut->detach(0, a);
    sut->detach(1, b);
}

/* Site 0 takes the only probe and never completes it (its process hung or
 * died): site 1 gets the next probe, not before the deadline, and no later
 * than the deadline plus the doubled open wait plus slack. */
static void an_abandoned_probe_is_reclaimed_at_its_deadline(void **state) {
    (void)state;
    breaker_config cfg = contract_config(1);
    breaker *a = site(0, "abandoned", &cfg);
    breaker *b = site(1, "abandoned", &cfg);
    trip(a);
    state_within(b, BREAKER_OPEN, SLACK_MS);
    breaker_permit lost;
    admitted_within(a, &lost, OPEN_MS + SLACK_MS);
    uint64_t taken = now_ns();
    breaker_permit next;
    admitted_within(b, &next, PROBE_MS + 2 * OPEN_MS + 2 * SLACK_MS);
    uint64_t got = now_ns();
    if (got < taken + PROBE_MS * MS)
        fail_msg("%s: a second probe %llu ms after the first, before its %llu ms deadline",
                 sut->name, (unsigned long long)((got - taken) / MS), (unsigned long long)PROBE_MS);
    assert_true(breaker_permit_is_probe(&next));
    assert_int_equal(sut_complete(b, &next, BREAKER_SUCCESS), BREAKER_OK);
    state_within(a, BREAKER_CLOSED, SLACK_MS);
    assert_int_equal(sut_complete(a, &lost, BREAKER_SUCCESS), BREAKER_STALE);
    sut->detach(0, a);
    sut->detach(1, b);
}

static void detaching_keeps_the_state(void **state) {
    (void)state;
    breaker_config cfg = contract_config(1);
    breaker *a = site(0, "kept", &cfg);
    trip(a);
    sync_sites();
    sut->detach(0, a);
    breaker *again = site(0, "kept", &cfg);
    breaker *other = site(1, "kept", &cfg);
    state_within(again, BREAKER_OPEN, SLACK_MS);
    state_within(other, BREAKER_OPEN, SLACK_MS);
    sut->detach(0, again);
    sut->detach(1, other);
}

static void the_first_creators_limits_win(void **state) {
    (void)state;
    breaker_config first = contract_config(1);
    breaker_config other = contract_config(3);
    other.failure_threshold = 9;
    breaker *a = site(0, "limits", &first);
    breaker *b = site(1, "limits", &other);
    breaker_config got;
    breaker_get_config(b, &got);
    assert_int_equal(got.failure_threshold, 2);
    assert_int_equal(got.half_open_max_probes, 1);
    sut->detach(0, a);
    sut->detach(1, b);
}

int store_contract_run(const struct store_under_test *under_test) {
    sut = under_test;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(one_name_is_one_breaker, contract_setup, contract_teardown),
        cmocka_unit_test_setup_teardown(names_are_independent, contract_setup, contract_teardown),
        cmocka_unit_test_setup_teardown(the_probe_budget_is_the_stores, contract_setup,
                                        contract_teardown),
        cmocka_unit_test_setup_teardown(a_late_result_is_stale, contract_setup, contract_teardown),
        cmocka_unit_test_setup_teardown(an_abandoned_probe_is_reclaimed_at_its_deadline,
                                        contract_setup, contract_teardown),
        cmocka_unit_test_setup_teardown(detaching_keeps_the_state, contract_setup,
                                        contract_teardown),
        cmocka_unit_test_setup_teardown(the_first_creators_limits_win, contract_setup,
                                        contract_teardown),
    };
    return _cmocka_run_group_tests(sut->name, tests, sizeof(tests) / sizeof(tests[0]), NULL, NULL);
}
