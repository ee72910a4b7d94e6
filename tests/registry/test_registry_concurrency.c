/* SPDX-License-Identifier: MIT */
/*
 * test_registry_concurrency.c - the registry under racing threads: creation
 * of the same and of different names, iteration and export while breakers
 * are created and evicted, handles used across eviction. Run under TSan by
 * `make check` (label "concurrency"); ASan catches use after free.
 */
#define _GNU_SOURCE /* rand_r, sched_yield */
#include "test_util.h"

#include <breaker/registry.h>

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4

static breaker_registry *make_registry(const breaker_registry_config *rc) {
    breaker_registry *reg = NULL;
    assert_int_equal(breaker_registry_create(rc, &reg), BREAKER_OK);
    return reg;
}

/* ---- The same new name from every thread at once ----------------------------*/

#define SAME_ROUNDS 300

struct same_ctx {
    breaker_registry *reg;
    pthread_barrier_t *barrier;
    breaker *got[SAME_ROUNDS];
    int errors;
};

static void *same_name_worker(void *arg) {
    struct same_ctx *c = arg;
    char name[32];
    for (int r = 0; r < SAME_ROUNDS; r++) {
        snprintf(name, sizeof(name), "round.%d", r);
        pthread_barrier_wait(c->barrier);
        if (breaker_registry_get(c->reg, name, &c->got[r]) != BREAKER_OK) c->errors++;
    }
    return NULL;
}

static void racing_gets_of_one_new_name_all_return_the_same_breaker(void **state) {
    (void)state;
    breaker_registry_config rc;
    breaker_registry_config_init(&rc);
    rc.max_breakers = SAME_ROUNDS;
    breaker_registry *reg = make_registry(&rc);
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, THREADS);
    static struct same_ctx ctx[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        ctx[i] = (struct same_ctx){.reg = reg, .barrier = &barrier};
        pthread_create(&t[i], NULL, same_name_worker, &ctx[i]);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(ctx[i].errors, 0);
    for (int r = 0; r < SAME_ROUNDS; r++)
        for (int i = 1; i < THREADS; i++)
            assert_ptr_equal(ctx[i].got[r], ctx[0].got[r]);
    breaker_registry_stats rs;
    breaker_registry_stats_get(reg, &rs);
    assert_int_equal(rs.created, SAME_ROUNDS);
    assert_int_equal(rs.breakers, SAME_ROUNDS);
    for (int r = 0; r < SAME_ROUNDS; r++)
        for (int i = 0; i < THREADS; i++)
            assert_int_equal(breaker_registry_release(reg, ctx[i].got[r]), BREAKER_OK);
    pthread_barrier_destroy(&barrier);
    breaker_registry_destroy(reg);
}

/* ---- Distinct names past the bound --------------------------------------------*/

#define BOUND            64
#define NAMES_PER_THREAD 50

struct distinct_ctx {
    breaker_registry *reg;
    int id;
    int ok, full, other;
};

static void *distinct_worker(void *arg) {
    struct distinct_ctx *c = arg;
    char name[32];
    for (int i = 0; i < NAMES_PER_THREAD; i++) {
        snprintf(name, sizeof(name), "t%d.n%d", c->id, i);
        breaker *b;
        int rc = breaker_registry_get(c->reg, name, &b);
        if (rc == BREAKER_OK) {
            c->ok++;
            breaker_registry_release(c->reg, b);
        } else if (rc == BREAKER_REGISTRY_FULL) {
            c->full++;
        } else {
            c->other++;
        }
    }
    return NULL;
}

static void racing_gets_of_distinct_names_stop_exactly_at_the_bound(void **state) {
    (void)state;
    breaker_registry_config rc;
    breaker_registry_config_init(&rc);
    rc.max_breakers = BOUND;
    breaker_registry *reg = make_registry(&rc);
    struct distinct_ctx ctx[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        ctx[i] = (struct distinct_ctx){.reg = reg, .id = i};
        pthread_create(&t[i], NULL, distinct_worker, &ctx[i]);
    }
    int ok = 0, full = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(ctx[i].other, 0);
        ok += ctx[i].ok;
        full += ctx[i].full;
    }
    assert_int_equal(ok, BOUND);
    assert_int_equal(full, THREADS * NAMES_PER_THREAD - BOUND);
    breaker_registry_stats rs;
    breaker_registry_stats_get(reg, &rs);
    assert_int_equal(rs.breakers, BOUND);
    assert_int_equal(rs.created, BOUND);
    assert_int_equal(rs.rejected_full, (uint64_t)full);
    breaker_registry_destroy(reg);
}

/* ---- Iteration and use while others create and evict --------------------------*/

#define CHURN_MAX   32
#define CHURN_CALLS 2500

struct churn {
    breaker_registry *reg;
    struct fake_clock clock;
    _Atomic int stop;
    _Atomic int bad_walks;
    _Atomic uint64_t walks;
};

/* Gets names at random among more than fit (so the registry is full and
 * evicts idle ones to make room), makes calls through handles it keeps across evictions. */
static void *creator(void *arg) {
    struct churn *c = arg;
    char name[32];
    unsigned seed = (unsigned)(uintptr_t)&name;
    breaker *kept = NULL;
    for (unsigned i = 0; i < CHURN_CALLS; i++) {
        snprintf(name, sizeof(name), "dep.%u", (unsigned)rand_r(&seed) % 200);
        breaker *b;
        if (breaker_registry_get(c->reg, name, &b) != BREAKER_OK) continue;
        breaker_permit p;
        if (breaker_acquire(b, &p) == BREAKER_OK) {
            (void)breaker_complete(b, &p, i % 7 == 0 ? BREAKER_FAILURE : BREAKER_SUCCESS);
        }
        fake_clock_advance(&c->clock, 1000);
        if (i % 16 == 0) {
            /* Swap the long-held handle: the old one may have been evicted
             * meanwhile and must still be usable until released. */
            if (kept != NULL) {
                if (breaker_acquire(kept, &p) == BREAKER_OK)
                    (void)breaker_complete(kept, &p, BREAKER_SUCCESS);
                breaker_registry_release(c->reg, kept);
            }
            kept = b;
        } else {
            breaker_registry_release(c->reg, b);
        }
    }
    if (kept != NULL) breaker_registry_release(c->reg, kept);
    return NULL;
}

struct walk {
    int n;
};

static int walk_cb(void *ctx, const breaker_registry_info *info) {
    struct walk *w = ctx;
    w->n += info->name != NULL && info->b != NULL;
    return BREAKER_OK;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Whether a Prometheus text names the same series twice (a breaker evicted
 * and created again during the export must not appear twice). Edits `text`. */
static int has_duplicate_series(char *text) {
    static _Thread_local const char *series[8192];
    size_t n = 0;
    for (char *line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        if (line[0] == '#' || n == 8192) continue;
        char *sp = strrchr(line, ' ');
        if (sp != NULL) *sp = '\0';
        series[n++] = line;
    }
    qsort(series, n, sizeof(series[0]), cmp_str);
    for (size_t i = 1; i < n; i++)
        if (strcmp(series[i - 1], series[i]) == 0) return 1;
    return 0;
}

static void *walker(void *arg) {
    struct churn *c = arg;
    static _Thread_local char text[256 * 1024];
    while (!atomic_load(&c->stop)) {
        struct walk w = {0};
        if (breaker_registry_foreach(c->reg, walk_cb, &w) != BREAKER_OK || w.n > CHURN_MAX)
            atomic_fetch_add(&c->bad_walks, 1);
        size_t len;
        int rc = breaker_registry_export_prometheus(c->reg, text, sizeof(text), &len);
        if (rc != BREAKER_OK || has_duplicate_series(text)) atomic_fetch_add(&c->bad_walks, 1);
        rc = breaker_registry_export_json(c->reg, text, sizeof(text), &len);
        if (rc != BREAKER_OK) atomic_fetch_add(&c->bad_walks, 1);
        atomic_fetch_add(&c->walks, 1);
    }
    return NULL;
}

static void *evictor(void *arg) {
    struct churn *c = arg;
    while (!atomic_load(&c->stop)) {
        size_t n;
        breaker_registry_evict_idle(c->reg, &n);
        sched_yield();
    }
    return NULL;
}

static void iteration_and_handles_stay_safe_while_breakers_are_created_and_evicted(void **state) {
    (void)state;
    static struct churn c;
    memset(&c, 0, sizeof(c));
    breaker_registry_config rc;
    breaker_registry_config_init(&rc);
    rc.max_breakers = CHURN_MAX;
    rc.idle_evict_ns = 50000; /* 50 fake creations' worth */
    rc.clock = fake_clock_read;
    rc.clock_ctx = &c.clock;
    c.reg = make_registry(&rc);
    pthread_t t[4];
    pthread_create(&t[0], NULL, creator, &c);
    pthread_create(&t[1], NULL, creator, &c);
    pthread_create(&t[2], NULL, walker, &c);
    pthread_create(&t[3], NULL, evictor, &c);
    pthread_join(t[0], NULL);
    pthread_join(t[1], NULL);
    /* Let the walker finish a few walks after the churn, whatever the speed. */
    uint64_t walks = atomic_load(&c.walks);
    while (atomic_load(&c.walks) < walks + 2)
        sched_yield();
    atomic_store(&c.stop, 1);
    pthread_join(t[2], NULL);
    pthread_join(t[3], NULL);
    assert_int_equal(atomic_load(&c.bad_walks), 0);
    assert_true(atomic_load(&c.walks) > 0);
    breaker_registry_stats rs;
    breaker_registry_stats_get(c.reg, &rs);
    assert_true(rs.breakers <= CHURN_MAX);
    assert_int_equal(rs.created - rs.evicted, rs.breakers);
    assert_true(rs.evicted > 0);
    breaker_registry_destroy(c.reg);
}

/* ---- Lookups racing eviction of the very names they look up -----------------*/

#define HOT_NAMES   16
#define HOT_LOOKUPS 20000

struct hot {
    breaker_registry *reg;
    struct fake_clock clock;
    _Atomic int stop;
    _Atomic int errors;
};

static void *hot_getter(void *arg) {
    struct hot *h = arg;
    char name[16];
    for (int i = 0; i < HOT_LOOKUPS; i++) {
        /* Make every name idle at once, so that the evictor removes names
         * while the other getter is looking them up. */
        fake_clock_advance(&h->clock, 100000);
        snprintf(name, sizeof(name), "hot%d", (i * 7) % HOT_NAMES);
        breaker *b;
        /* get() creates the name again right after each eviction; find() may
         * race with the eviction that removes it. Both must hand out a live
         * breaker (ASan and TSan check) and never a torn one. */
        int rc = i % 3 == 0 ? breaker_registry_get(h->reg, name, &b)
                            : breaker_registry_find(h->reg, name, &b);
        if (rc == BREAKER_NOT_FOUND) continue;
        if (rc != BREAKER_OK) {
            atomic_fetch_add(&h->errors, 1);
            continue;
        }
        const char *got = breaker_registry_name(h->reg, b);
        if (got == NULL || strcmp(got, name) != 0) atomic_fetch_add(&h->errors, 1);
        (void)breaker_generation(b);
        breaker_registry_release(h->reg, b);
        if (i % 32 == 0) sched_yield(); /* let the evictor run, too */
    }
    return NULL;
}

static void *hot_evictor(void *arg) {
    struct hot *h = arg;
    while (!atomic_load(&h->stop)) {
        size_t n;
        breaker_registry_evict_idle(h->reg, &n);
        sched_yield(); /* let the getters take the lock, too */
    }
    return NULL;
}

static void lookups_racing_the_eviction_of_their_own_names_get_live_breakers(void **state) {
    (void)state;
    static struct hot h;
    memset(&h, 0, sizeof(h));
    breaker_registry_config rc;
    breaker_registry_config_init(&rc);
    rc.max_breakers = HOT_NAMES;
    rc.idle_evict_ns = 1000;
    rc.clock = fake_clock_read;
    rc.clock_ctx = &h.clock;
    h.reg = make_registry(&rc);
    pthread_t t[3];
    pthread_create(&t[2], NULL, hot_evictor, &h);
    pthread_create(&t[0], NULL, hot_getter, &h);
    pthread_create(&t[1], NULL, hot_getter, &h);
    pthread_join(t[0], NULL);
    pthread_join(t[1], NULL);
    atomic_store(&h.stop, 1);
    pthread_join(t[2], NULL);
    assert_int_equal(atomic_load(&h.errors), 0);
    breaker_registry_stats rs;
    breaker_registry_stats_get(h.reg, &rs);
    assert_true(rs.evicted > 0);
    assert_int_equal(rs.created - rs.evicted, rs.breakers);
    breaker_registry_destroy(h.reg);
}

/* ---- Listeners under contention --------------------------------------------*/

#define FLIP_CALLS 8000

struct flip {
    breaker_registry *reg;
    breaker *b;
    struct fake_clock clock;
    _Atomic uint64_t heard;
    _Atomic uint64_t flap_events;
};

static void count_transitions(void *ctx, const breaker_registry_event *ev) {
    struct flip *f = ctx;
    if (ev->kind == BREAKER_REGISTRY_TRANSITION)
        atomic_fetch_add(&f->heard, 1);
    else
        atomic_fetch_add(&f->flap_events, 1);
}

static void *flipper(void *arg) {
    struct flip *f = arg;
    for (unsigned i = 0; i < FLIP_CALLS; i++) {
        breaker_permit p;
        if (breaker_acquire(f->b, &p) == BREAKER_OK)
            (void)breaker_complete(f->b, &p, i % 4 != 3 ? BREAKER_FAILURE : BREAKER_SUCCESS);
        fake_clock_advance(&f->clock, 400);
    }
    return NULL;
}

static void every_transition_reaches_a_listener_exactly_once_under_contention(void **state) {
    (void)state;
    static struct flip f;
    memset(&f, 0, sizeof(f));
    breaker_registry_config rc;
    breaker_registry_config_init(&rc);
    test_config(&rc.defaults, &f.clock, NULL);
    rc.defaults.trip = BREAKER_TRIP_CONSECUTIVE;
    rc.defaults.failure_threshold = 2;
    rc.defaults.open_ns = 1000;
    rc.defaults.open_backoff = 1.0; /* no backoff: keep it flipping */
    rc.defaults.half_open_successes = 1;
    rc.history_size = 64;
    f.reg = make_registry(&rc);
    assert_int_equal(breaker_registry_add_listener(f.reg, count_transitions, &f), BREAKER_OK);
    assert_int_equal(breaker_registry_get(f.reg, "flip", &f.b), BREAKER_OK);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, flipper, &f);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);

    static breaker_event hist[64];
    breaker_registry_info info;
    assert_int_equal(breaker_registry_info_get(f.reg, f.b, &info, hist, 64), BREAKER_OK);
    uint64_t by_pair = 0;
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++)
            by_pair += info.transitions_by[i][j];
    assert_true(info.stats.transitions > 100);
    assert_int_equal(atomic_load(&f.heard), info.stats.transitions);
    assert_int_equal(by_pair, info.stats.transitions);
    assert_true(atomic_load(&f.flap_events) > 0);
    /* The history is the newest transitions, one per generation, in order. */
    assert_int_equal(info.history_len, 64);
    for (size_t i = 1; i < info.history_len; i++)
        assert_int_equal(hist[i].generation, hist[i - 1].generation + 1);
    assert_int_equal(hist[63].generation, info.stats.generation);
    breaker_registry_release(f.reg, f.b);
    breaker_registry_destroy(f.reg);
}

/* ---- set_config on one pattern from several threads ---------------------------*/

#define SET_ROUNDS 400
#define SET_NAMES  8

struct setter {
    breaker_registry *reg;
    int id;
    int errors;
};

/* Threads 0 and 1 set configurations every live breaker can take (their
 * thresholds 3 and 4); thread 2 one none can (another trip: refused and
 * undone). Each set_config replaces the others' override of the pattern,
 * so each frees one another thread may still be applying or undoing. */
static void *setter(void *arg) {
    struct setter *c = arg;
    breaker_config cfg;
    breaker_config_init(&cfg);
    cfg.trip = c->id == 2 ? BREAKER_TRIP_COUNT_WINDOW : BREAKER_TRIP_CONSECUTIVE;
    cfg.failure_threshold = 3 + (uint32_t)c->id;
    char msg[512];
    for (int r = 0; r < SET_ROUNDS; r++) {
        int rc = breaker_registry_set_config(c->reg, "api.*", &cfg, msg, sizeof(msg));
        if (rc != (c->id == 2 ? BREAKER_EINVAL : BREAKER_OK)) c->errors++;
    }
    return NULL;
}

static void racing_set_configs_of_one_pattern_are_safe_and_leave_one_of_them(void **state) {
    (void)state;
    breaker_registry_config rc;
    breaker_registry_config_init(&rc);
    rc.defaults.trip = BREAKER_TRIP_CONSECUTIVE;
    rc.defaults.failure_threshold = 2;
    breaker_registry *reg = make_registry(&rc);
    breaker *b[SET_NAMES];
    for (int i = 0; i < SET_NAMES; i++) {
        char name[16];
        snprintf(name, sizeof(name), "api.%d", i);
        assert_int_equal(breaker_registry_get(reg, name, &b[i]), BREAKER_OK);
    }
    static struct setter c[3];
    pthread_t t[3];
    for (int i = 0; i < 3; i++) {
        c[i] = (struct setter){.reg = reg, .id = i};
        pthread_create(&t[i], NULL, setter, &c[i]);
    }
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < 3; i++)
        assert_int_equal(c[i].errors, 0);
    /* Settled: a new name gets what the live ones were last given. */
    breaker_config last;
    breaker_get_config(b[0], &last);
    assert_true(last.failure_threshold == 3 || last.failure_threshold == 4);
    breaker *fresh = NULL;
    assert_int_equal(breaker_registry_get(reg, "api.new", &fresh), BREAKER_OK);
    breaker_config got;
    breaker_get_config(fresh, &got);
    assert_int_equal(got.trip, BREAKER_TRIP_CONSECUTIVE);
    assert_true(got.failure_threshold == 3 || got.failure_threshold == 4);
    breaker_registry_release(reg, fresh);
    for (int i = 0; i < SET_NAMES; i++)
        breaker_registry_release(reg, b[i]);
    breaker_registry_destroy(reg);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(racing_gets_of_one_new_name_all_return_the_same_breaker),
        cmocka_unit_test(racing_gets_of_distinct_names_stop_exactly_at_the_bound),
        cmocka_unit_test(iteration_and_handles_stay_safe_while_breakers_are_created_and_evicted),
        cmocka_unit_test(lookups_racing_the_eviction_of_their_own_names_get_live_breakers),
        cmocka_unit_test(every_transition_reaches_a_listener_exactly_once_under_contention),
        cmocka_unit_test(racing_set_configs_of_one_pattern_are_safe_and_leave_one_of_them),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
