/* SPDX-License-Identifier: MIT */
/*
 * test_registry.c - named breakers: lookup, names, bound, overrides, events,
 * history, flapping, low traffic versus failing probes, eviction.
 */
#include "test_util.h"

#include <breaker/registry.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

/* A registry on the fake clock whose breakers trip after 3 failures in a row,
 * wait 1 s, and close after one successful probe. */
static void registry_config(breaker_registry_config *rc, struct fake_clock *clock) {
    breaker_registry_config_init(rc);
    test_config(&rc->defaults, clock, NULL);
    rc->defaults.trip = BREAKER_TRIP_CONSECUTIVE;
    rc->defaults.failure_threshold = 3;
    rc->defaults.open_ns = 1 * SEC;
    rc->defaults.half_open_successes = 1;
    rc->defaults.probe_timeout_ns = 10 * SEC;
    rc->clock = fake_clock_read;
    rc->clock_ctx = clock;
}

static breaker_registry *make_registry(const breaker_registry_config *rc) {
    breaker_registry *reg = NULL;
    assert_int_equal(breaker_registry_create(rc, &reg), BREAKER_OK);
    assert_non_null(reg);
    return reg;
}

/* Every test here but three starts from this: a fake clock, the registry
 * configuration registry_config() gives (a test changes f->rc before it
 * calls open_registry()), and the registry, which the teardown destroys. */
struct fixture {
    struct fake_clock clock;
    breaker_registry_config rc;
    breaker_registry *reg;
};

static int setup(void **state) {
    struct fixture *f = calloc(1, sizeof(*f));
    if (f == NULL) return -1;
    registry_config(&f->rc, &f->clock);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    struct fixture *f = *state;
    if (f->reg != NULL) breaker_registry_destroy(f->reg);
    free(f);
    return 0;
}

static breaker_registry *open_registry(struct fixture *f) {
    f->reg = make_registry(&f->rc);
    return f->reg;
}

static breaker *get(breaker_registry *reg, const char *name) {
    breaker *b = NULL;
    int rc = breaker_registry_get(reg, name, &b);
    if (rc != BREAKER_OK) fail_msg("get(%s): %s", name, breaker_strerror(rc));
    assert_non_null(b);
    return b;
}

static void release(breaker_registry *reg, breaker *b) {
    assert_int_equal(breaker_registry_release(reg, b), BREAKER_OK);
}

static void trip(breaker *b) {
    for (int i = 0; i < 3; i++)
        call_ok(b, BREAKER_FAILURE);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
}

static breaker_registry_info info_of(breaker_registry *reg, breaker *b, breaker_event *hist,
                                     size_t cap) {
    breaker_registry_info info;
    assert_int_equal(breaker_registry_info_get(reg, b, &info, hist, cap), BREAKER_OK);
    return info;
}

/* ---- Lookup, names, bound --------------------------------------------------*/

static void get_returns_the_same_breaker_for_a_name_and_find_never_creates(void **state) {
    struct fixture *f = *state;
    breaker_registry *reg = open_registry(f);

    breaker *missing = (breaker *)&f->clock;
    assert_int_equal(breaker_registry_find(reg, "payments.charge", &missing), BREAKER_NOT_FOUND);
    assert_null(missing);

    breaker *a = get(reg, "payments.charge");
    breaker *b = get(reg, "payments.charge");
    breaker *other = get(reg, "payments.refund");
    breaker *found = NULL;
    assert_int_equal(breaker_registry_find(reg, "payments.charge", &found), BREAKER_OK);
    assert_ptr_equal(a, b);
    assert_ptr_equal(a, found);
    assert_ptr_not_equal(a, other);
    assert_string_equal(breaker_registry_name(reg, a), "payments.charge");

    breaker_registry_stats rs;
    breaker_registry_stats_get(reg, &rs);
    assert_int_equal(rs.breakers, 2);
    assert_int_equal(rs.created, 2);
    release(reg, a);
    release(reg, b);
    release(reg, found);
    release(reg, other);
}

static void invalid_names_are_refused_with_a_message_that_says_why(void **state) {
    (void)state;
    breaker_registry *reg = make_registry(NULL);
    char long_name[BREAKER_NAME_MAX + 2];
    memset(long_name, 'a', sizeof(long_name));
    long_name[BREAKER_NAME_MAX + 1] = '\0';
    const char *bad[] = {"",    "a/b",      "../etc",    ".hidden",     "-flag",
                         "a b", "quote\"d", "new\nline", "caf\xc3\xa9", long_name};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        breaker *b = (breaker *)reg;
        assert_int_equal(breaker_registry_get(reg, bad[i], &b), BREAKER_EINVAL);
        assert_null(b);
        char msg[160] = "";
        assert_int_equal(breaker_name_validate(bad[i], msg, sizeof(msg)), BREAKER_EINVAL);
        assert_true(strncmp(msg, "name: ", 6) == 0);
    }
    char msg[160];
    assert_int_equal(breaker_name_validate("a/b", msg, sizeof(msg)), BREAKER_EINVAL);
    assert_non_null(strstr(msg, "'/' at offset 1"));
    assert_int_equal(breaker_name_validate(long_name, msg, sizeof(msg)), BREAKER_EINVAL);
    assert_non_null(strstr(msg, "at most 128"));

    long_name[BREAKER_NAME_MAX] = '\0'; /* exactly the maximum: fine */
    const char *good[] = {"payments.charge", "db-main_read", "_internal", "9lives", long_name};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        assert_int_equal(breaker_name_validate(good[i], NULL, 0), BREAKER_OK);
        release(reg, get(reg, good[i]));
    }
    breaker_registry_stats rs;
    breaker_registry_stats_get(reg, &rs);
    assert_int_equal(rs.invalid_names, sizeof(bad) / sizeof(bad[0]));
    breaker_registry_destroy(reg);
}

static void a_full_registry_refuses_new_names_counts_them_and_never_grows(void **state) {
    struct fixture *f = *state;
    f->rc.max_breakers = 4;
    breaker_registry *reg = open_registry(f);
    breaker *held[4];
    char name[32];
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof(name), "dep%d", i);
        held[i] = get(reg, name);
    }
    for (int i = 0; i < 3; i++) {
        breaker *b = (breaker *)reg;
        assert_int_equal(breaker_registry_get(reg, "one.too.many", &b), BREAKER_REGISTRY_FULL);
        assert_null(b);
    }
    /* Existing names are still served. */
    breaker *again = get(reg, "dep2");
    assert_ptr_equal(again, held[2]);
    release(reg, again);

    breaker_registry_stats rs;
    breaker_registry_stats_get(reg, &rs);
    assert_int_equal(rs.breakers, 4);
    assert_int_equal(rs.max_breakers, 4);
    assert_int_equal(rs.created, 4);
    assert_int_equal(rs.rejected_full, 3);
    for (int i = 0; i < 4; i++)
        release(reg, held[i]);
}

static void registry_configuration_errors_name_the_field(void **state) {
    (void)state;
    breaker_registry_config rc;
    breaker_registry_config_init(&rc);
    rc.max_breakers = BREAKER_REGISTRY_MAX_BREAKERS + 1;
    char msg[160] = "";
    assert_int_equal(breaker_registry_config_validate(&rc, msg, sizeof(msg)), BREAKER_EINVAL);
    assert_non_null(strstr(msg, "max_breakers"));
    breaker_registry *reg = (breaker_registry *)&rc;
    assert_int_equal(breaker_registry_create(&rc, &reg), BREAKER_EINVAL);
    assert_null(reg);

    breaker_registry_config_init(&rc);
    rc.defaults.failure_rate = 2.0;
    assert_int_equal(breaker_registry_config_validate(&rc, msg, sizeof(msg)), BREAKER_EINVAL);
    assert_non_null(strstr(msg, "defaults: "));
    assert_non_null(strstr(msg, "failure_rate"));
}

/* ---- Overrides ----------------------------------------------------------------*/

static uint32_t threshold_of(breaker_registry *reg, const char *name) {
    breaker *b = get(reg, name);
    breaker_config cfg;
    breaker_get_config(b, &cfg);
    release(reg, b);
    return cfg.failure_threshold;
}

static void an_exact_override_beats_the_longest_prefix_which_beats_the_template(void **state) {
    struct fixture *f = *state;
    breaker_registry *reg = open_registry(f);
    breaker_config c = f->rc.defaults;
    char msg[200];
    c.failure_threshold = 10;
    assert_int_equal(breaker_registry_set_config(reg, "payments.*", &c, msg, sizeof(msg)),
                     BREAKER_OK);
    c.failure_threshold = 20;
    assert_int_equal(breaker_registry_set_config(reg, "payments.card.*", &c, msg, sizeof(msg)),
                     BREAKER_OK);
    c.failure_threshold = 30;
    assert_int_equal(breaker_registry_set_config(reg, "payments.card.visa", &c, msg, sizeof(msg)),
                     BREAKER_OK);
    c.failure_threshold = 11; /* replaces the first */
    assert_int_equal(breaker_registry_set_config(reg, "payments.*", &c, msg, sizeof(msg)),
                     BREAKER_OK);

    assert_int_equal(threshold_of(reg, "inventory"), 3);
    assert_int_equal(threshold_of(reg, "payments.refund"), 11);
    assert_int_equal(threshold_of(reg, "payments.card.amex"), 20);
    assert_int_equal(threshold_of(reg, "payments.card.visa"), 30);

    assert_int_equal(breaker_registry_set_config(reg, "pay/ments.*", &c, msg, sizeof(msg)),
                     BREAKER_EINVAL);
    assert_non_null(strstr(msg, "'/'"));
    c.failure_rate = -1;
    assert_int_equal(breaker_registry_set_config(reg, "x", &c, msg, sizeof(msg)), BREAKER_EINVAL);
    assert_non_null(strstr(msg, "failure_rate"));
}

/* ---- Events and history ------------------------------------------------------ */

#define MAX_SEEN 32
struct seen {
    int count;
    int other_thread; /* events delivered on another thread than `thread` */
    pthread_t thread;
    breaker_registry_event ev[MAX_SEEN];
    char names[MAX_SEEN][BREAKER_NAME_MAX + 1];
};

static void remember(void *ctx, const breaker_registry_event *ev) {
    struct seen *s = ctx;
    if (!pthread_equal(pthread_self(), s->thread)) s->other_thread++;
    if (s->count < MAX_SEEN) {
        s->ev[s->count] = *ev;
        snprintf(s->names[s->count], sizeof(s->names[0]), "%s", ev->name);
    }
    s->count++;
}

static int count_kind(const struct seen *s, enum breaker_registry_event_kind kind) {
    int n = 0;
    for (int i = 0; i < s->count && i < MAX_SEEN; i++)
        n += s->ev[i].kind == kind;
    return n;
}

static void every_listener_and_the_own_callback_see_each_transition_once(void **state) {
    struct fixture *f = *state;
    struct event_log own = {0};
    f->rc.defaults.on_event = event_log_record;
    f->rc.defaults.event_ctx = &own;
    breaker_registry *reg = open_registry(f);
    struct seen one = {.thread = pthread_self()}, two = {.thread = pthread_self()};
    assert_int_equal(breaker_registry_add_listener(reg, remember, &one), BREAKER_OK);
    assert_int_equal(breaker_registry_add_listener(reg, remember, &two), BREAKER_OK);

    breaker *b = get(reg, "inventory.lookup");
    trip(b);
    assert_int_equal(one.count, 1);
    assert_int_equal(two.count, 1);
    assert_int_equal(one.other_thread, 0); /* on the thread that tripped it */
    assert_int_equal(atomic_load(&own.count), 1);
    const breaker_registry_event *ev = &one.ev[0];
    assert_int_equal(ev->kind, BREAKER_REGISTRY_TRANSITION);
    assert_string_equal(one.names[0], "inventory.lookup");
    assert_ptr_equal(ev->b, b);
    assert_int_equal(ev->transition.from, BREAKER_CLOSED);
    assert_int_equal(ev->transition.to, BREAKER_OPEN);
    assert_int_equal(ev->transition.reason, BREAKER_REASON_CONSECUTIVE_FAILURES);
    assert_int_equal(ev->transition.evidence.consecutive_failures, 3);
    assert_int_equal(ev->transition.generation, 2);

    for (int i = 2; i < BREAKER_REGISTRY_MAX_LISTENERS; i++)
        assert_int_equal(breaker_registry_add_listener(reg, remember, &two), BREAKER_OK);
    assert_int_equal(breaker_registry_add_listener(reg, remember, &two), BREAKER_ENOSPC);
    release(reg, b);
}

/* The order registry.h promises: the breaker's own on_event first, then the
 * registry's listeners, on every transition (before, the registry's hook ran
 * first, and listeners heard 3,004 of 3,005 transitions before it). */
struct order_log {
    _Atomic int own, listener, out_of_order;
};

static void own_first(void *ctx, breaker *b, const breaker_event *ev) {
    (void)b;
    (void)ev;
    struct order_log *o = ctx;
    atomic_fetch_add(&o->own, 1);
}

static void listener_second(void *ctx, const breaker_registry_event *ev) {
    struct order_log *o = ctx;
    if (ev->kind != BREAKER_REGISTRY_TRANSITION) return;
    int heard = atomic_fetch_add(&o->listener, 1) + 1;
    if (atomic_load(&o->own) < heard) atomic_fetch_add(&o->out_of_order, 1);
}

static void listeners_hear_a_transition_after_the_breakers_own_on_event(void **state) {
    struct fixture *f = *state;
    struct order_log o;
    atomic_init(&o.own, 0);
    atomic_init(&o.listener, 0);
    atomic_init(&o.out_of_order, 0);
    f->rc.defaults.on_event = own_first;
    f->rc.defaults.event_ctx = &o;
    breaker_registry *reg = open_registry(f);
    assert_int_equal(breaker_registry_add_listener(reg, listener_second, &o), BREAKER_OK);
    breaker *b = get(reg, "order.svc");
    for (int i = 0; i < 50; i++) {
        trip(b);
        assert_int_equal(breaker_reset(b), BREAKER_OK);
    }
    assert_int_equal(atomic_load(&o.own), 100);
    assert_int_equal(atomic_load(&o.listener), 100);
    assert_int_equal(atomic_load(&o.out_of_order), 0);
    release(reg, b);
}

static void history_keeps_the_newest_transitions_oldest_first_with_evidence(void **state) {
    struct fixture *f = *state;
    f->rc.history_size = 4;
    f->rc.flap_threshold = 100;
    breaker_registry *reg = open_registry(f);
    breaker *b = get(reg, "search");

    trip(b); /* gen 2: closed -> open */
    fake_clock_advance(&f->clock, 2 * SEC);
    breaker_permit p;
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK); /* gen 3: open -> half_open */
    assert_int_equal(breaker_complete(b, &p, BREAKER_FAILURE), BREAKER_OK); /* gen 4 */
    assert_int_equal(breaker_force_open(b), BREAKER_OK);                    /* gen 5 */
    assert_int_equal(breaker_reset(b), BREAKER_OK);                         /* gen 6 */

    breaker_event hist[8];
    breaker_registry_info info = info_of(reg, b, hist, 8);
    assert_int_equal(info.history_len, 4);
    assert_ptr_equal(info.history, hist);
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(hist[i].generation, 3 + i);
    assert_int_equal(hist[0].reason, BREAKER_REASON_WAIT_ELAPSED);
    assert_int_equal(hist[1].from, BREAKER_HALF_OPEN);
    assert_int_equal(hist[1].to, BREAKER_OPEN);
    assert_int_equal(hist[1].reason, BREAKER_REASON_PROBE_FAILED);
    assert_int_equal(hist[1].evidence.failed_recoveries, 1);
    assert_int_equal(hist[2].to, BREAKER_FORCED_OPEN);
    assert_int_equal(hist[3].reason, BREAKER_REASON_RESET);
    assert_int_equal(hist[3].time_ns, 2 * SEC);
    assert_int_equal(info.transitions_by[BREAKER_CLOSED][BREAKER_OPEN], 1);
    assert_int_equal(info.transitions_by[BREAKER_HALF_OPEN][BREAKER_OPEN], 1);
    assert_int_equal(info.transitions_by[BREAKER_FORCED_OPEN][BREAKER_CLOSED], 1);

    /* A smaller buffer gets the newest ones. */
    info = info_of(reg, b, hist, 2);
    assert_int_equal(info.history_len, 2);
    assert_int_equal(hist[0].generation, 5);
    assert_int_equal(hist[1].generation, 6);
    release(reg, b);
}

/* One closed -> open -> half_open -> closed cycle: three transitions. */
static void cycle(breaker *b, struct fake_clock *clock) {
    trip(b);
    fake_clock_advance(clock, 1 * SEC);
    call_ok(b, BREAKER_SUCCESS);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
}

static void flapping_sets_past_the_threshold_and_clears_once_the_breaker_settles(void **state) {
    struct fixture *f = *state;
    f->rc.flap_threshold = 4;
    f->rc.flap_window_ns = 60 * SEC;
    breaker_registry *reg = open_registry(f);
    struct seen seen = {.thread = pthread_self()};
    assert_int_equal(breaker_registry_add_listener(reg, remember, &seen), BREAKER_OK);
    breaker *b = get(reg, "flaky");

    cycle(b, &f->clock); /* 3 transitions: not more than 4 */
    breaker_registry_info info = info_of(reg, b, NULL, 0);
    assert_int_equal(info.flapping, 0);
    assert_int_equal(info.recent_transitions, 3);
    assert_int_equal(count_kind(&seen, BREAKER_REGISTRY_FLAPPING_STARTED), 0);

    trip(b); /* the 4th */
    assert_int_equal(info_of(reg, b, NULL, 0).flapping, 0);
    fake_clock_advance(&f->clock, 1 * SEC);
    call_ok(b, BREAKER_SUCCESS); /* 5th and 6th: more than 4 */
    info = info_of(reg, b, NULL, 0);
    assert_int_equal(info.flapping, 1);
    assert_int_equal(info.recent_transitions, 6);
    assert_int_equal(count_kind(&seen, BREAKER_REGISTRY_FLAPPING_STARTED), 1);
    /* The flag event follows the transition that caused it, on its thread. */
    int started_at = -1;
    for (int i = 0; i < seen.count; i++)
        if (seen.ev[i].kind == BREAKER_REGISTRY_FLAPPING_STARTED) started_at = i;
    assert_int_equal(seen.ev[started_at].transition.generation, 6);
    assert_int_equal(seen.ev[started_at - 1].transition.generation, 6);
    assert_int_equal(breaker_registry_degraded(reg), 1); /* closed, but flapping */

    /* Still flapping half a window later; settled after a quiet window. */
    fake_clock_advance(&f->clock, 30 * SEC);
    assert_int_equal(info_of(reg, b, NULL, 0).flapping, 1);
    assert_int_equal(count_kind(&seen, BREAKER_REGISTRY_FLAPPING_STOPPED), 0);
    fake_clock_advance(&f->clock, 31 * SEC);
    info = info_of(reg, b, NULL, 0);
    assert_int_equal(info.flapping, 0);
    assert_int_equal(info.recent_transitions, 0);
    assert_int_equal(count_kind(&seen, BREAKER_REGISTRY_FLAPPING_STOPPED), 1);
    info = info_of(reg, b, NULL, 0); /* reported once */
    assert_int_equal(count_kind(&seen, BREAKER_REGISTRY_FLAPPING_STOPPED), 1);
    assert_int_equal(breaker_registry_degraded(reg), 0);
    release(reg, b);
}

static void an_open_breaker_without_traffic_is_told_apart_from_failing_probes(void **state) {
    struct fixture *f = *state;
    breaker_registry *reg = open_registry(f);
    breaker *quiet = get(reg, "quiet");
    breaker *failing = get(reg, "failing");
    trip(quiet);
    trip(failing);

    /* During the wait neither could have probed. */
    assert_int_equal(info_of(reg, quiet, NULL, 0).awaiting_probe, 0);
    fake_clock_advance(&f->clock, 1 * SEC + 1);

    breaker_permit p;
    assert_int_equal(breaker_acquire(failing, &p), BREAKER_OK);
    assert_int_equal(breaker_complete(failing, &p, BREAKER_FAILURE), BREAKER_OK);

    breaker_event last[1];
    breaker_registry_info qi = info_of(reg, quiet, NULL, 0);
    breaker_registry_info fi = info_of(reg, failing, last, 1);
    assert_int_equal(qi.stats.state, BREAKER_OPEN);
    assert_int_equal(qi.awaiting_probe, 1);
    assert_int_equal(qi.stats.probes_admitted, 0);
    assert_int_equal(qi.retry_after_ns, 0);
    assert_int_equal(fi.stats.state, BREAKER_OPEN);
    assert_int_equal(fi.awaiting_probe, 0); /* it probed, and waits again */
    assert_true(fi.retry_after_ns > 0);
    assert_int_equal(fi.stats.probes_failed, 1);
    assert_int_equal(last[0].reason, BREAKER_REASON_PROBE_FAILED);
    release(reg, quiet);
    release(reg, failing);
}

/* ---- Eviction -------------------------------------------------------------------*/

static void eviction_unlists_an_idle_breaker_but_a_held_handle_stays_valid(void **state) {
    struct fixture *f = *state;
    f->rc.idle_evict_ns = 10 * SEC;
    breaker_registry *reg = open_registry(f);
    breaker *held = get(reg, "rarely.used");
    call_ok(held, BREAKER_SUCCESS);

    size_t n = 99;
    assert_int_equal(breaker_registry_evict_idle(reg, &n), BREAKER_OK);
    assert_int_equal(n, 0); /* first sample sees the call: active */
    fake_clock_advance(&f->clock, 9 * SEC);
    assert_int_equal(breaker_registry_evict_idle(reg, &n), BREAKER_OK);
    assert_int_equal(n, 0);
    fake_clock_advance(&f->clock, 1 * SEC);
    assert_int_equal(breaker_registry_evict_idle(reg, &n), BREAKER_OK);
    assert_int_equal(n, 1);

    breaker *found = (breaker *)reg;
    assert_int_equal(breaker_registry_find(reg, "rarely.used", &found), BREAKER_NOT_FOUND);
    /* The held handle still works, with its history of counts. */
    call_ok(held, BREAKER_FAILURE);
    assert_int_equal(stats_of(held).admitted, 2);
    assert_string_equal(breaker_registry_name(reg, held), "rarely.used");
    /* Asking again creates a fresh breaker. */
    breaker *fresh = get(reg, "rarely.used");
    assert_ptr_not_equal(fresh, held);
    assert_int_equal(stats_of(fresh).admitted, 0);
    breaker_registry_stats rs;
    breaker_registry_stats_get(reg, &rs);
    assert_int_equal(rs.evicted, 1);
    assert_int_equal(rs.breakers, 1);
    release(reg, held); /* the last reference: freed here (ASan checks) */
    release(reg, fresh);
}

static void eviction_spares_open_busy_and_recently_used_breakers(void **state) {
    struct fixture *f = *state;
    f->rc.idle_evict_ns = 10 * SEC;
    breaker_registry *reg = open_registry(f);
    breaker *open = get(reg, "open");
    breaker *busy = get(reg, "busy");
    breaker *used = get(reg, "used");
    breaker *idle = get(reg, "idle");
    trip(open);
    breaker_permit p;
    assert_int_equal(breaker_acquire(busy, &p), BREAKER_OK);
    size_t n;
    assert_int_equal(breaker_registry_evict_idle(reg, &n), BREAKER_OK); /* samples */
    fake_clock_advance(&f->clock, 6 * SEC);
    release(reg, get(reg, "used")); /* a lookup counts as use */
    fake_clock_advance(&f->clock, 6 * SEC);
    assert_int_equal(breaker_registry_evict_idle(reg, &n), BREAKER_OK);
    assert_int_equal(n, 1);
    breaker *b;
    assert_int_equal(breaker_registry_find(reg, "idle", &b), BREAKER_NOT_FOUND);
    const char *kept[] = {"open", "busy", "used"};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(breaker_registry_find(reg, kept[i], &b), BREAKER_OK);
        release(reg, b);
    }
    /* Once the permit is settled and the quiet period passes, busy goes too. */
    assert_int_equal(breaker_complete(busy, &p, BREAKER_SUCCESS), BREAKER_OK);
    assert_int_equal(breaker_registry_evict_idle(reg, &n), BREAKER_OK);
    fake_clock_advance(&f->clock, 10 * SEC);
    assert_int_equal(breaker_registry_evict_idle(reg, &n), BREAKER_OK);
    assert_int_equal(n, 2); /* busy and used */
    assert_int_equal(breaker_registry_find(reg, "open", &b), BREAKER_OK);
    release(reg, b);
    release(reg, open);
    release(reg, busy);
    release(reg, used);
    release(reg, idle);
}

static void a_full_registry_evicts_idle_breakers_to_make_room(void **state) {
    struct fixture *f = *state;
    f->rc.max_breakers = 2;
    f->rc.idle_evict_ns = 5 * SEC;
    breaker_registry *reg = open_registry(f);
    release(reg, get(reg, "a"));
    release(reg, get(reg, "b"));
    breaker *c = NULL;
    assert_int_equal(breaker_registry_get(reg, "c", &c), BREAKER_REGISTRY_FULL);
    fake_clock_advance(&f->clock, 5 * SEC);
    c = get(reg, "c");
    breaker_registry_stats rs;
    breaker_registry_stats_get(reg, &rs);
    assert_int_equal(rs.evicted, 2);
    assert_int_equal(rs.breakers, 1);
    assert_int_equal(rs.rejected_full, 1);
    release(reg, c);
}

static void churn_through_many_names_reuses_the_index(void **state) {
    struct fixture *f = *state;
    f->rc.max_breakers = 8;
    f->rc.idle_evict_ns = 1;
    breaker_registry *reg = open_registry(f);
    char name[32];
    for (int i = 0; i < 2000; i++) {
        snprintf(name, sizeof(name), "n%d", i);
        fake_clock_advance(&f->clock, 1);
        release(reg, get(reg, name));
        /* A name created a moment ago is found without creating again. */
        breaker *b;
        assert_int_equal(breaker_registry_find(reg, name, &b), BREAKER_OK);
        release(reg, b);
    }
    breaker_registry_stats rs;
    breaker_registry_stats_get(reg, &rs);
    assert_int_equal(rs.created, 2000);
    assert_true(rs.breakers <= 8);
    assert_int_equal(rs.created - rs.evicted, rs.breakers);
}

static void releasing_a_breaker_from_elsewhere_is_refused(void **state) {
    (void)state;
    breaker_registry *reg = make_registry(NULL);
    breaker_registry *other = make_registry(NULL);
    breaker *mine = get(reg, "mine");
    breaker *standalone = NULL;
    assert_int_equal(test_breaker_create(NULL, &standalone), BREAKER_OK);
    assert_int_equal(breaker_registry_release(reg, standalone), BREAKER_EINVAL);
    assert_int_equal(breaker_registry_release(other, mine), BREAKER_EINVAL);
    assert_null(breaker_registry_name(other, mine));
    breaker_registry_info info;
    assert_int_equal(breaker_registry_info_get(reg, standalone, &info, NULL, 0), BREAKER_EINVAL);
    release(reg, mine);
    test_breaker_destroy(standalone);
    breaker_registry_destroy(reg);
    breaker_registry_destroy(other);
}

static int count_cb(void *ctx, const breaker_registry_info *info) {
    (void)info;
    (*(int *)ctx)++;
    return BREAKER_OK;
}

static int stop_cb(void *ctx, const breaker_registry_info *info) {
    (void)info;
    (*(int *)ctx)++;
    return 42;
}

static void foreach_visits_every_listed_breaker_and_stops_when_asked(void **state) {
    (void)state;
    breaker_registry *reg = make_registry(NULL);
    release(reg, get(reg, "a"));
    release(reg, get(reg, "b"));
    release(reg, get(reg, "c"));
    int n = 0;
    assert_int_equal(breaker_registry_foreach(reg, count_cb, &n), BREAKER_OK);
    assert_int_equal(n, 3);
    n = 0;
    assert_int_equal(breaker_registry_foreach(reg, stop_cb, &n), 42);
    assert_int_equal(n, 1);
    breaker_registry_destroy(reg);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            get_returns_the_same_breaker_for_a_name_and_find_never_creates, setup, teardown),
        cmocka_unit_test_setup_teardown(listeners_hear_a_transition_after_the_breakers_own_on_event,
                                        setup, teardown),
        cmocka_unit_test(invalid_names_are_refused_with_a_message_that_says_why),
        cmocka_unit_test_setup_teardown(
            a_full_registry_refuses_new_names_counts_them_and_never_grows, setup, teardown),
        cmocka_unit_test(registry_configuration_errors_name_the_field),
        cmocka_unit_test_setup_teardown(
            an_exact_override_beats_the_longest_prefix_which_beats_the_template, setup, teardown),
        cmocka_unit_test_setup_teardown(
            every_listener_and_the_own_callback_see_each_transition_once, setup, teardown),
        cmocka_unit_test_setup_teardown(
            history_keeps_the_newest_transitions_oldest_first_with_evidence, setup, teardown),
        cmocka_unit_test_setup_teardown(
            flapping_sets_past_the_threshold_and_clears_once_the_breaker_settles, setup, teardown),
        cmocka_unit_test_setup_teardown(
            an_open_breaker_without_traffic_is_told_apart_from_failing_probes, setup, teardown),
        cmocka_unit_test_setup_teardown(
            eviction_unlists_an_idle_breaker_but_a_held_handle_stays_valid, setup, teardown),
        cmocka_unit_test_setup_teardown(eviction_spares_open_busy_and_recently_used_breakers, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_full_registry_evicts_idle_breakers_to_make_room, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(churn_through_many_names_reuses_the_index, setup, teardown),
        cmocka_unit_test(releasing_a_breaker_from_elsewhere_is_refused),
        cmocka_unit_test(foreach_visits_every_listed_breaker_and_stops_when_asked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
