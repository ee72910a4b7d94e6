/* SPDX-License-Identifier: MIT */
/*
 * test_store_registry.c - a registry whose breakers live in a store file
 * (breaker_registry_config.backend = breaker_store_backend(st), or its short
 * form .store = st): registries of two processes share one
 * breaker per name, the stored limits win over a registry's template,
 * eviction detaches and a later get attaches again to the same state, a
 * full store is the registry's error, and each process's listeners hear the
 * transitions that process made.
 */
#define _GNU_SOURCE
#include "store_fixture.h"

#include <breaker/registry.h>

#include <stdatomic.h>
#include <string.h>

struct heard {
    _Atomic unsigned transitions;
};

static void count_transitions(void *ctx, const breaker_registry_event *ev) {
    if (ev->kind == BREAKER_REGISTRY_TRANSITION)
        atomic_fetch_add(&((struct heard *)ctx)->transitions, 1);
}

static breaker_registry *store_registry(breaker_store *st, uint32_t threshold,
                                        struct heard *heard) {
    breaker_registry_config rc;
    breaker_registry_config_init(&rc);
    rc.defaults = consecutive_config(threshold);
    rc.store = st;
    breaker_registry *reg = NULL;
    if (breaker_registry_create(&rc, &reg) != BREAKER_OK) return NULL;
    if (heard != NULL && breaker_registry_add_listener(reg, count_transitions, heard) != BREAKER_OK)
        return NULL;
    return reg;
}

static breaker *get(breaker_registry *reg, const char *name) {
    breaker *b = NULL;
    assert_int_equal(breaker_registry_get(reg, name, &b), BREAKER_OK);
    return b;
}

/* The child's side: its own store and registry, with a template whose
 * threshold (7) differs from the stored one (2); it trips the breaker. */
static int child_trips(breaker_store *inherited) {
    breaker_store_close(inherited); /* the parent's mapping: not used here */
    breaker_store *st = NULL;
    if (breaker_store_open(path, NULL, &st, NULL, 0) != BREAKER_OK) return 2;
    struct heard heard = {0};
    breaker_registry *reg = store_registry(st, 7, &heard);
    if (reg == NULL) return 3;
    breaker *b = NULL;
    if (breaker_registry_get(reg, "payments", &b) != BREAKER_OK) return 4;
    breaker_config got;
    breaker_get_config(b, &got);
    if (got.failure_threshold != 2) return 5; /* the stored limits won */
    for (int i = 0; i < 2; i++) {
        breaker_permit p;
        if (breaker_acquire(b, &p) != BREAKER_OK) return 6;
        if (breaker_complete(b, &p, BREAKER_FAILURE) != BREAKER_OK) return 7;
    }
    if (breaker_get_state(b) != BREAKER_OPEN) return 8;
    if (atomic_load(&heard.transitions) != 1) return 9; /* this process made it */
    breaker_registry_release(reg, b);
    breaker_registry_destroy(reg);
    breaker_store_close(st);
    return 0;
}

static void registries_of_two_processes_share_one_breaker(void **state) {
    (void)state;
    breaker_store *st = open_store();
    struct heard heard = {0};
    breaker_registry *reg = store_registry(st, 2, &heard);
    assert_non_null(reg);
    breaker *b = get(reg, "payments");
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* The parent's objects, inherited: freed so memcheck sees no leak
         * (nothing shared is touched by freeing them), the registry before
         * the store it attached through, as breaker_store_close() asks. */
        breaker_registry_release(reg, b);
        breaker_registry_destroy(reg);
        _exit(child_trips(st));
    }
    assert_int_equal(reap(pid), 0);
    /* The child's trip is this process's state too, without a call here. */
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    breaker_permit p;
    assert_int_equal(breaker_acquire(b, &p), BREAKER_REJECTED_OPEN);
    assert_int_equal(stats_of(b).failures, 2);
    /* Listeners hear the transitions made in their own process only. */
    assert_int_equal(atomic_load(&heard.transitions), 0);
    /* The exports list the breaker with the shared state. */
    char buf[16384];
    size_t len = 0;
    assert_int_equal(breaker_registry_export_prometheus(reg, buf, sizeof(buf), &len), BREAKER_OK);
    assert_non_null(strstr(buf, "breaker=\"payments\""));
    breaker_registry_release(reg, b);
    breaker_registry_destroy(reg);
    /* The registry is gone; the breaker stays in the file. */
    breaker *again = attach(st, "payments", NULL);
    assert_int_equal(breaker_get_state(again), BREAKER_OPEN);
    breaker_destroy(again);
    breaker_store_close(st);
}

/* Eviction detaches this process's handle; a later get attaches to the
 * same stored breaker, counts and all (not a fresh one, as on the heap). */
static void eviction_detaches_and_get_attaches_again(void **state) {
    (void)state;
    breaker_store *st = open_store();
    struct fake_clock clock = {0};
    breaker_registry_config rc;
    breaker_registry_config_init(&rc);
    rc.defaults = consecutive_config(3);
    rc.backend = breaker_store_backend(st); /* the long form of .store = st */
    rc.idle_evict_ns = SEC;
    rc.clock = fake_clock_read;
    rc.clock_ctx = &clock;
    breaker_registry *reg = NULL;
    assert_int_equal(breaker_registry_create(&rc, &reg), BREAKER_OK);
    breaker *b = get(reg, "search");
    call_ok(b, BREAKER_FAILURE);
    call_ok(b, BREAKER_FAILURE); /* two of the three in a row */
    breaker_registry_release(reg, b);
    size_t evicted = 0;
    assert_int_equal(breaker_registry_evict_idle(reg, &evicted), BREAKER_OK); /* sees it quiet */
    fake_clock_advance(&clock, 2 * SEC);
    assert_int_equal(breaker_registry_evict_idle(reg, &evicted), BREAKER_OK);
    assert_int_equal(evicted, 1);
    breaker *none = NULL;
    assert_int_equal(breaker_registry_find(reg, "search", &none), BREAKER_NOT_FOUND);
    b = get(reg, "search");
    call_ok(b, BREAKER_FAILURE); /* the third in a row: the stored count kept two */
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    assert_int_equal(stats_of(b).failures, 3);
    breaker_registry_release(reg, b);
    breaker_registry_destroy(reg);
    breaker_store_close(st);
}

/* The store's backend and its short form are one way to the file: a
 * registry of each, in one process, get the same breaker. */
static void the_store_backend_and_the_store_field_reach_the_same_breaker(void **state) {
    (void)state;
    breaker_store *st = open_store();
    assert_ptr_equal(breaker_store_backend(st), breaker_store_backend(st));
    breaker_registry *by_store = store_registry(st, 1, NULL);
    assert_non_null(by_store);
    breaker_registry_config rc;
    breaker_registry_config_init(&rc);
    rc.defaults = consecutive_config(1);
    rc.backend = breaker_store_backend(st);
    breaker_registry *by_backend = NULL;
    assert_int_equal(breaker_registry_create(&rc, &by_backend), BREAKER_OK);
    breaker *a = get(by_store, "shared");
    breaker *b = get(by_backend, "shared");
    assert_ptr_not_equal(a, b); /* two handles, one stored breaker */
    call_ok(a, BREAKER_FAILURE);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    breaker_registry_release(by_store, a);
    breaker_registry_release(by_backend, b);
    breaker_registry_destroy(by_store);
    breaker_registry_destroy(by_backend);
    breaker_store_close(st);
}

/* A store with room for one name: the second name is refused by the store,
 * and the registry passes its status on. */
static void a_full_store_is_the_registrys_error(void **state) {
    (void)state;
    breaker_store_config sc;
    breaker_store_config_init(&sc);
    sc.capacity = 1;
    breaker_store *st = NULL;
    char msg[256];
    assert_int_equal(breaker_store_open(path, &sc, &st, msg, sizeof(msg)), BREAKER_OK);
    breaker_registry *reg = store_registry(st, 3, NULL);
    assert_non_null(reg);
    breaker *a = get(reg, "first");
    breaker *b = NULL;
    assert_int_equal(breaker_registry_get(reg, "second", &b), BREAKER_ENOSPC);
    assert_null(b);
    breaker_registry_stats rs;
    assert_int_equal(breaker_registry_stats_get(reg, &rs), BREAKER_OK);
    assert_int_equal(rs.breakers, 1);
    breaker_registry_release(reg, a);
    breaker_registry_destroy(reg);
    breaker_store_close(st);
}

/* Per-name overrides still apply to names the registry creates in the file. */
static void overrides_create_names_with_their_limits(void **state) {
    (void)state;
    breaker_store *st = open_store();
    breaker_registry *reg = store_registry(st, 3, NULL);
    assert_non_null(reg);
    breaker_config strict = consecutive_config(1);
    assert_int_equal(breaker_registry_set_config(reg, "db.*", &strict, NULL, 0), BREAKER_OK);
    breaker *b = get(reg, "db.main");
    call_ok(b, BREAKER_FAILURE);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    breaker_registry_release(reg, b);
    breaker_registry_destroy(reg);
    breaker *seen = attach(st, "db.main", NULL);
    breaker_config got;
    breaker_get_config(seen, &got);
    assert_int_equal(got.failure_threshold, 1);
    breaker_destroy(seen);
    breaker_store_close(st);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(registries_of_two_processes_share_one_breaker, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(eviction_detaches_and_get_attaches_again, setup, teardown),
        cmocka_unit_test_setup_teardown(
            the_store_backend_and_the_store_field_reach_the_same_breaker, setup, teardown),
        cmocka_unit_test_setup_teardown(a_full_store_is_the_registrys_error, setup, teardown),
        cmocka_unit_test_setup_teardown(overrides_create_names_with_their_limits, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
