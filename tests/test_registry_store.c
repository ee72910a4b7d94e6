/* SPDX-License-Identifier: MIT */
/*
 * test_registry_store.c - the registry makes, detaches and frees its
 * breakers only through its store (src/registry/store.h): a counting store
 * put in place of the heap store sees every creation, a refused open, the
 * detach of an evicted breaker at its last release, and destroy.
 */
#define _GNU_SOURCE
#include "test_util.h"

#include <pthread.h>
#include <time.h>

#include <breaker/registry.h>

#include "registry/registry_impl.h" /* the store, replaced by a counting one */

/* get() then release(): the registry keeps the breaker listed. */
static void touch_name(breaker_registry *reg, const char *name) {
    breaker *b = NULL;
    assert_int_equal(breaker_registry_get(reg, name, &b), BREAKER_OK);
    assert_int_equal(breaker_registry_release(reg, b), BREAKER_OK);
}

/* A store that counts what the registry asks of it and passes it on to the
 * heap store; it refuses to open the name "refused". */
struct counting_store {
    int opens, closes, finis;
    int closes_at_fini;
};

static int counting_open(void *store, const char *name, const breaker_config *cfg,
                         const struct breaker__owner *owner, breaker **out) {
    struct counting_store *cs = store;
    if (strcmp(name, "refused") == 0) return BREAKER_ENOMEM;
    cs->opens++;
    return breaker__store_heap_ops.open(NULL, name, cfg, owner, out);
}

static void counting_close(void *store, breaker *b) {
    struct counting_store *cs = store;
    cs->closes++;
    breaker__store_heap_ops.close(NULL, b);
}

static void counting_fini(void *store) {
    struct counting_store *cs = store;
    cs->finis++;
    cs->closes_at_fini = cs->closes;
}

static const struct breaker__store_ops counting_ops = {
    .name = "counting",
    .open = counting_open,
    .close = counting_close,
    .fini = counting_fini,
};

static void the_registry_makes_and_frees_breakers_only_through_its_store(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker_registry_config rc;
    breaker_registry_config_init(&rc);
    rc.clock = fake_clock_read; /* the registry's idleness clock */
    rc.clock_ctx = &clock;
    rc.idle_evict_ns = 10 * SEC;
    breaker_registry *reg = NULL;
    assert_int_equal(breaker_registry_create(&rc, &reg), BREAKER_OK);
    assert_string_equal(reg->store_ops->name, "heap");
    struct counting_store cs = {0};
    reg->store = &cs; /* no public way to choose a store yet */
    reg->store_ops = &counting_ops;

    breaker *held = NULL;
    assert_int_equal(breaker_registry_get(reg, "held", &held), BREAKER_OK);
    touch_name(reg, "idle");
    touch_name(reg, "held"); /* found: no second open */
    assert_int_equal(cs.opens, 2);
    breaker *b = (breaker *)reg;
    assert_int_equal(breaker_registry_get(reg, "refused", &b), BREAKER_ENOMEM);
    assert_null(b);
    assert_int_equal(breaker_registry_find(reg, "refused", &b), BREAKER_NOT_FOUND);

    /* Eviction detaches through the store, when the last reference goes. */
    size_t n = 0;
    assert_int_equal(breaker_registry_evict_idle(reg, &n), BREAKER_OK);
    fake_clock_advance(&clock, 10 * SEC);
    assert_int_equal(breaker_registry_evict_idle(reg, &n), BREAKER_OK);
    assert_int_equal(n, 2);
    assert_int_equal(cs.closes, 1); /* "idle"; "held" is still held */
    assert_int_equal(breaker_registry_release(reg, held), BREAKER_OK);
    assert_int_equal(cs.closes, 2);

    touch_name(reg, "later");
    assert_int_equal(cs.opens, 3);
    breaker_registry_destroy(reg); /* closes "later", then finishes the store */
    assert_int_equal(cs.closes, 3);
    assert_int_equal(cs.finis, 1);
    assert_int_equal(cs.closes_at_fini, 3);
}

/* A store whose close waits for another thread that needs the registry
 * (as the fleet store's close waits for an event being delivered whose
 * listener calls breaker_registry_get()). Eviction must not hold the
 * registry lock while it closes. */
struct waiting_store {
    breaker_registry *reg;
    _Atomic int helper_done;
    int done_within_close; /* the helper finished while close waited */
};

static void *get_another_name(void *arg) {
    struct waiting_store *ws = arg;
    breaker *b = NULL;
    if (breaker_registry_get(ws->reg, "other", &b) == BREAKER_OK)
        breaker_registry_release(ws->reg, b);
    atomic_store(&ws->helper_done, 1);
    return NULL;
}

static void waiting_close(void *store, breaker *b) {
    struct waiting_store *ws = store;
    pthread_t t;
    if (pthread_create(&t, NULL, get_another_name, ws) == 0) {
        /* Bounded: under the old rule this never ends (the lock is ours). */
        for (int i = 0; i < 2000 && !atomic_load(&ws->helper_done); i++) {
            struct timespec ms = {0, 1000000};
            nanosleep(&ms, NULL);
        }
        ws->done_within_close = atomic_load(&ws->helper_done);
        if (ws->done_within_close)
            pthread_join(t, NULL);
        else
            pthread_detach(t);
    }
    breaker__store_heap_ops.close(NULL, b);
}

static int waiting_open(void *store, const char *name, const breaker_config *cfg,
                        const struct breaker__owner *owner, breaker **out) {
    (void)store;
    return breaker__store_heap_ops.open(NULL, name, cfg, owner, out);
}

static const struct breaker__store_ops waiting_ops = {
    .name = "waiting",
    .open = waiting_open,
    .close = waiting_close,
    .fini = NULL,
};

static void eviction_closes_without_the_registry_lock(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker_registry_config rc;
    breaker_registry_config_init(&rc);
    rc.clock = fake_clock_read;
    rc.clock_ctx = &clock;
    rc.idle_evict_ns = SEC;
    breaker_registry *reg = NULL;
    assert_int_equal(breaker_registry_create(&rc, &reg), BREAKER_OK);
    struct waiting_store ws = {.reg = reg};
    reg->store = &ws;
    reg->store_ops = &waiting_ops;
    touch_name(reg, "idle");
    size_t evicted = 0;
    assert_int_equal(breaker_registry_evict_idle(reg, &evicted), BREAKER_OK); /* sees it quiet */
    fake_clock_advance(&clock, 2 * SEC);
    assert_int_equal(breaker_registry_evict_idle(reg, &evicted), BREAKER_OK);
    assert_int_equal(evicted, 1);
    /* The close ran while another thread created a name: not under the lock. */
    assert_true(ws.done_within_close);
    breaker *other = NULL;
    assert_int_equal(breaker_registry_find(reg, "other", &other), BREAKER_OK);
    breaker_registry_release(reg, other);
    breaker_registry_destroy(reg);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_registry_makes_and_frees_breakers_only_through_its_store),
        cmocka_unit_test(eviction_closes_without_the_registry_lock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
