/* SPDX-License-Identifier: MIT */
/*
 * test_registry_store.c - the registry makes, detaches and frees its
 * breakers only through its backend (breaker_registry_config.backend, the
 * table of breaker/backend.h): a counting backend sees every creation, a
 * refused open, the detach of an evicted breaker at its last release, and
 * destroy; a backend's close runs without the registry's lock; and the
 * configuration refuses a backend it cannot call, or one given twice.
 */
#define _GNU_SOURCE
#include "test_util.h"

#include <pthread.h>
#include <time.h>

#define BREAKER_BACKEND_EXPERIMENTAL
#include <breaker/backend.h>
#include <breaker/registry.h>
#include <breaker/store.h>

/* get() then release(): the registry keeps the breaker listed. */
static void touch_name(breaker_registry *reg, const char *name) {
    breaker *b = NULL;
    assert_int_equal(breaker_registry_get(reg, name, &b), BREAKER_OK);
    assert_int_equal(breaker_registry_release(reg, b), BREAKER_OK);
}

/* A backend that counts what the registry asks of it and makes heap
 * breakers; it refuses to open the name "refused", and says "stored" was
 * attached to other limits (BREAKER_CONFIG_DIFFERS, as a shared backend may). */
struct counting_store {
    int opens, closes, finis;
    int closes_at_fini;
};

static int counting_open(void *store, const char *name, const breaker_config *cfg,
                         const breaker_owner *owner, breaker **out) {
    struct counting_store *cs = store;
    if (strcmp(name, "refused") == 0) return BREAKER_ENOMEM;
    cs->opens++;
    int rc = breaker_create_bound(cfg, owner, NULL, out);
    return rc == BREAKER_OK && strcmp(name, "stored") == 0 ? BREAKER_CONFIG_DIFFERS : rc;
}

static void counting_close(void *store, breaker *b) {
    struct counting_store *cs = store;
    cs->closes++;
    breaker_destroy(b);
}

static void counting_fini(void *store) {
    struct counting_store *cs = store;
    cs->finis++;
    cs->closes_at_fini = cs->closes;
}

static const breaker_backend_ops counting_ops = {
    .name = "counting",
    .open = counting_open,
    .close = counting_close,
    .fini = counting_fini,
};

static void the_registry_makes_and_frees_breakers_only_through_its_backend(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker_registry_config rc;
    breaker_registry_config_init(&rc);
    rc.clock = fake_clock_read; /* the registry's idleness clock */
    rc.clock_ctx = &clock;
    rc.idle_evict_ns = 10 * SEC;
    struct counting_store cs = {0};
    breaker_backend counting = {.ops = &counting_ops, .ctx = &cs};
    rc.backend = &counting;
    breaker_registry *reg = NULL;
    assert_int_equal(breaker_registry_create(&rc, &reg), BREAKER_OK);
    memset(&counting, 0, sizeof(counting)); /* copied: the registry does not read it again */

    breaker *held = NULL;
    assert_int_equal(breaker_registry_get(reg, "held", &held), BREAKER_OK);
    touch_name(reg, "idle");
    touch_name(reg, "held"); /* found: no second open */
    assert_int_equal(cs.opens, 2);
    breaker *b = (breaker *)reg;
    assert_int_equal(breaker_registry_get(reg, "refused", &b), BREAKER_ENOMEM);
    assert_null(b);
    assert_int_equal(breaker_registry_find(reg, "refused", &b), BREAKER_NOT_FOUND);
    /* Attached to other limits is attached: listed, not an error. */
    touch_name(reg, "stored");
    assert_int_equal(cs.opens, 3);

    /* Eviction detaches through the backend, when the last reference goes. */
    size_t n = 0;
    assert_int_equal(breaker_registry_evict_idle(reg, &n), BREAKER_OK);
    fake_clock_advance(&clock, 10 * SEC);
    assert_int_equal(breaker_registry_evict_idle(reg, &n), BREAKER_OK);
    assert_int_equal(n, 3);
    assert_int_equal(cs.closes, 2); /* "idle" and "stored"; "held" is still held */
    assert_int_equal(breaker_registry_release(reg, held), BREAKER_OK);
    assert_int_equal(cs.closes, 3);

    touch_name(reg, "later");
    assert_int_equal(cs.opens, 4);
    breaker_registry_destroy(reg); /* closes "later", then finishes the backend */
    assert_int_equal(cs.closes, 4);
    assert_int_equal(cs.finis, 1);
    assert_int_equal(cs.closes_at_fini, 4);
}

/* A backend whose close waits for another thread that needs the registry
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
    breaker_destroy(b);
}

static int waiting_open(void *store, const char *name, const breaker_config *cfg,
                        const breaker_owner *owner, breaker **out) {
    (void)store;
    (void)name;
    return breaker_create_bound(cfg, owner, NULL, out);
}

static const breaker_backend_ops waiting_ops = {
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
    struct waiting_store ws = {0};
    breaker_backend waiting = {.ops = &waiting_ops, .ctx = &ws};
    rc.backend = &waiting;
    breaker_registry *reg = NULL;
    assert_int_equal(breaker_registry_create(&rc, &reg), BREAKER_OK);
    ws.reg = reg;
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

/* A backend the registry could not call, and a store given both ways, are
 * configuration errors that name the fields. */
static void a_backend_without_operations_or_given_twice_is_refused(void **state) {
    (void)state;
    char msg[200];
    breaker_registry_config rc;
    breaker_registry_config_init(&rc);
    static const breaker_backend_ops no_close = {.name = "half", .open = counting_open};
    breaker_backend half = {.ops = &no_close, .ctx = NULL};
    rc.backend = &half;
    assert_int_equal(breaker_registry_config_validate(&rc, msg, sizeof(msg)), BREAKER_EINVAL);
    assert_non_null(strstr(msg, "backend: ops, ops->open and ops->close must be set"));
    breaker_registry *reg = (breaker_registry *)&rc;
    assert_int_equal(breaker_registry_create(&rc, &reg), BREAKER_EINVAL);
    assert_null(reg);
    breaker_backend none = {.ops = NULL, .ctx = NULL};
    rc.backend = &none;
    assert_int_equal(breaker_registry_config_validate(&rc, msg, sizeof(msg)), BREAKER_EINVAL);

    /* Both the store and a backend: which one was meant is not guessed. The
     * store is never read, so any non-NULL pointer shows it. */
    struct counting_store cs = {0};
    breaker_backend counting = {.ops = &counting_ops, .ctx = &cs};
    rc.backend = &counting;
    rc.store = (breaker_store *)&cs;
    assert_int_equal(breaker_registry_config_validate(&rc, msg, sizeof(msg)), BREAKER_EINVAL);
    assert_non_null(strstr(msg, "store and backend: both set"));
    assert_int_equal(breaker_registry_create(&rc, &reg), BREAKER_EINVAL);
    rc.store = NULL;
    assert_int_equal(breaker_registry_config_validate(&rc, msg, sizeof(msg)), BREAKER_OK);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_registry_makes_and_frees_breakers_only_through_its_backend),
        cmocka_unit_test(eviction_closes_without_the_registry_lock),
        cmocka_unit_test(a_backend_without_operations_or_given_twice_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
