/* SPDX-License-Identifier: MIT */
/*
 * test_concurrency.c - the concurrency claims of breaker.h (exactly the
 * allowed probes in half-open, one winner and one event per transition, permits
 * completed on another thread than the one that acquired them), proven with
 * real threads (and run under ThreadSanitizer by make check).
 */
#define _POSIX_C_SOURCE 200809L
#include "test_util.h"

#include <pthread.h>

enum { THREADS = 8, ROUNDS = 200 };

struct race {
    breaker *b;
    pthread_barrier_t start;
    pthread_barrier_t done;
    _Atomic int admitted;
    _Atomic int rounds_left;
    breaker_permit permits[THREADS];
    int rc[THREADS];
};

struct racer {
    struct race *race;
    int id;
};

static void *probe_racer(void *arg) {
    struct racer *r = arg;
    struct race *race = r->race;
    for (int round = 0; round < ROUNDS; round++) {
        pthread_barrier_wait(&race->start);
        race->rc[r->id] = breaker_acquire(race->b, &race->permits[r->id]);
        if (race->rc[r->id] == BREAKER_OK) atomic_fetch_add(&race->admitted, 1);
        pthread_barrier_wait(&race->done);
    }
    return NULL;
}

/* Start THREADS racers running `fn` on `race`, which waits for them at its
 * barriers (each round: start, then done). */
static void race_start(struct race *race, pthread_t *threads, struct racer *racers,
                       void *(*fn)(void *)) {
    pthread_barrier_init(&race->start, NULL, THREADS + 1);
    pthread_barrier_init(&race->done, NULL, THREADS + 1);
    for (int i = 0; i < THREADS; i++) {
        racers[i] = (struct racer){race, i};
        pthread_create(&threads[i], NULL, fn, &racers[i]);
    }
}

/* Wait for the racers race_start() started, and free the barriers. */
static void race_join(struct race *race, pthread_t *threads) {
    for (int i = 0; i < THREADS; i++)
        pthread_join(threads[i], NULL);
    pthread_barrier_destroy(&race->start);
    pthread_barrier_destroy(&race->done);
}

/* A breaker on `clock` that one failure opens for 1 s every time (no
 * backoff), then admits `max_probes` probes at once. */
static void probing_config(breaker_config *cfg, struct fake_clock *clock, uint32_t max_probes) {
    test_config(cfg, clock, NULL);
    cfg->trip = BREAKER_TRIP_CONSECUTIVE;
    cfg->failure_threshold = 1;
    cfg->open_ns = SEC;
    cfg->open_backoff = 1.0;
    cfg->half_open_max_probes = max_probes;
}

static void half_open_admits_exactly_max_probes_under_contention(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker_config cfg;
    probing_config(&cfg, &clock, 3);
    struct race race = {.b = make_breaker(&cfg)};
    pthread_t threads[THREADS];
    struct racer racers[THREADS];
    race_start(&race, threads, racers, probe_racer);
    call_ok(race.b, BREAKER_FAILURE); /* open */
    for (int round = 0; round < ROUNDS; round++) {
        fake_clock_advance(&clock, SEC); /* the wait ends exactly now */
        atomic_store(&race.admitted, 0);
        pthread_barrier_wait(&race.start);
        pthread_barrier_wait(&race.done);
        assert_int_equal(atomic_load(&race.admitted), 3);
        assert_int_equal(stats_of(race.b).probes_in_flight, 3);
        int refused = 0;
        for (int i = 0; i < THREADS; i++)
            refused += race.rc[i] == BREAKER_REJECTED_HALF_OPEN;
        assert_int_equal(refused, THREADS - 3);
        /* Fail one probe: the breaker reopens and the others go stale. */
        int failed = 0;
        for (int i = 0; i < THREADS; i++) {
            if (race.rc[i] != BREAKER_OK) continue;
            int rc = breaker_complete(race.b, &race.permits[i], BREAKER_FAILURE);
            assert_int_equal(rc, failed++ == 0 ? BREAKER_OK : BREAKER_STALE);
        }
        assert_int_equal(breaker_get_state(race.b), BREAKER_OPEN);
    }
    race_join(&race, threads);
    breaker_stats st = stats_of(race.b);
    assert_int_equal(st.probes_admitted, 3 * ROUNDS);
    assert_int_equal(st.transitions, 1 + 2 * ROUNDS);
    test_breaker_destroy(race.b);
}

struct counting_log {
    _Atomic unsigned opens;
    _Atomic unsigned total;
};

static void count_opens(void *ctx, breaker *b, const breaker_event *ev) {
    (void)b;
    struct counting_log *log = ctx;
    atomic_fetch_add(&log->total, 1);
    if (ev->to == BREAKER_OPEN) atomic_fetch_add(&log->opens, 1);
}

static void *failing_racer(void *arg) {
    struct racer *r = arg;
    struct race *race = r->race;
    for (int round = 0; round < ROUNDS; round++) {
        pthread_barrier_wait(&race->start);
        race->rc[r->id] = breaker_complete(race->b, &race->permits[r->id], BREAKER_FAILURE);
        pthread_barrier_wait(&race->done);
    }
    return NULL;
}

static void many_threads_failing_at_once_trip_exactly_one_transition(enum breaker_trip trip) {
    struct fake_clock clock = {0};
    struct counting_log log = {0};
    breaker_config cfg;
    test_config(&cfg, &clock, NULL);
    cfg.on_event = count_opens;
    cfg.event_ctx = &log;
    cfg.trip = trip;
    cfg.failure_threshold = 2; /* every racer crosses it */
    cfg.window_size = 16;
    cfg.min_calls = 2;
    struct race race = {.b = make_breaker(&cfg)};
    pthread_t threads[THREADS];
    struct racer racers[THREADS];
    race_start(&race, threads, racers, failing_racer);
    for (int round = 0; round < ROUNDS; round++) {
        assert_int_equal(breaker_reset(race.b), BREAKER_OK);
        for (int i = 0; i < THREADS; i++)
            assert_int_equal(breaker_acquire(race.b, &race.permits[i]), BREAKER_OK);
        unsigned before = atomic_load(&log.opens);
        pthread_barrier_wait(&race.start);
        pthread_barrier_wait(&race.done);
        assert_int_equal(atomic_load(&log.opens), before + 1);
        assert_int_equal(breaker_get_state(race.b), BREAKER_OPEN);
        int ok = 0;
        for (int i = 0; i < THREADS; i++)
            ok += race.rc[i] == BREAKER_OK;
        assert_true(ok >= 2); /* at least the ones that tripped it; the rest are stale */
    }
    race_join(&race, threads);
    assert_int_equal(atomic_load(&log.opens), ROUNDS);
    assert_int_equal(atomic_load(&log.total), 2 * ROUNDS); /* open + reset per round */
    test_breaker_destroy(race.b);
}

static void many_threads_failing_trip_once_consecutive(void **state) {
    (void)state;
    many_threads_failing_at_once_trip_exactly_one_transition(BREAKER_TRIP_CONSECUTIVE);
}

static void many_threads_failing_trip_once_count_window(void **state) {
    (void)state;
    many_threads_failing_at_once_trip_exactly_one_transition(BREAKER_TRIP_COUNT_WINDOW);
}

static void many_threads_failing_trip_once_time_window(void **state) {
    (void)state;
    many_threads_failing_at_once_trip_exactly_one_transition(BREAKER_TRIP_TIME_WINDOW);
}

/* A permit acquired on one thread, completed on another,
 * handed over through a small mutex-protected queue (as an event loop would). */
enum { HANDOFFS = 20000 };

struct handoff {
    breaker *b;
    pthread_mutex_t lock;
    pthread_cond_t ready;
    breaker_permit queue[64];
    unsigned head, tail;
    int done;
    _Atomic int completed_ok;
};

static void *completer(void *arg) {
    struct handoff *h = arg;
    for (;;) {
        pthread_mutex_lock(&h->lock);
        while (h->head == h->tail && !h->done)
            pthread_cond_wait(&h->ready, &h->lock);
        if (h->head == h->tail && h->done) {
            pthread_mutex_unlock(&h->lock);
            return NULL;
        }
        breaker_permit p = h->queue[h->head++ % 64];
        pthread_cond_broadcast(&h->ready);
        pthread_mutex_unlock(&h->lock);
        if (breaker_complete(h->b, &p, BREAKER_SUCCESS) == BREAKER_OK)
            atomic_fetch_add(&h->completed_ok, 1);
    }
}

static void permits_complete_on_another_thread(void **state) {
    (void)state;
    struct handoff h = {0};
    assert_int_equal(test_breaker_create(NULL, &h.b), BREAKER_OK);
    pthread_mutex_init(&h.lock, NULL);
    pthread_cond_init(&h.ready, NULL);
    pthread_t t;
    pthread_create(&t, NULL, completer, &h);
    for (int i = 0; i < HANDOFFS; i++) {
        breaker_permit p;
        assert_int_equal(breaker_acquire(h.b, &p), BREAKER_OK);
        pthread_mutex_lock(&h.lock);
        while (h.tail - h.head == 64)
            pthread_cond_wait(&h.ready, &h.lock);
        h.queue[h.tail++ % 64] = p;
        pthread_cond_broadcast(&h.ready);
        pthread_mutex_unlock(&h.lock);
    }
    pthread_mutex_lock(&h.lock);
    h.done = 1;
    pthread_cond_broadcast(&h.ready);
    pthread_mutex_unlock(&h.lock);
    pthread_join(t, NULL);
    assert_int_equal(atomic_load(&h.completed_ok), HANDOFFS);
    breaker_stats st = stats_of(h.b);
    assert_int_equal(st.admitted, HANDOFFS);
    assert_int_equal(st.successes, HANDOFFS);
    pthread_mutex_destroy(&h.lock);
    pthread_cond_destroy(&h.ready);
    test_breaker_destroy(h.b);
}

struct double_complete {
    breaker *b;
    breaker_permit *permit;
    pthread_barrier_t *go;
    int rc;
};

static void *complete_after_barrier(void *arg) {
    struct double_complete *d = arg;
    pthread_barrier_wait(d->go);
    d->rc = breaker_complete(d->b, d->permit, BREAKER_FAILURE);
    return NULL;
}

static void racing_double_completion_settles_once(void **state) {
    (void)state;
    breaker *b;
    assert_int_equal(test_breaker_create(NULL, &b), BREAKER_OK);
    assert_int_equal(breaker_force_closed(b), BREAKER_OK); /* records, never trips */
    pthread_barrier_t go;
    for (int round = 0; round < 500; round++) {
        breaker_permit p;
        assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
        pthread_barrier_init(&go, NULL, 2);
        struct double_complete a = {b, &p, &go, -1}, c = {b, &p, &go, -1};
        pthread_t ta, tc;
        pthread_create(&ta, NULL, complete_after_barrier, &a);
        pthread_create(&tc, NULL, complete_after_barrier, &c);
        pthread_join(ta, NULL);
        pthread_join(tc, NULL);
        pthread_barrier_destroy(&go);
        assert_true((a.rc == BREAKER_OK && c.rc == BREAKER_ALREADY_SETTLED) ||
                    (c.rc == BREAKER_OK && a.rc == BREAKER_ALREADY_SETTLED));
    }
    breaker_stats st = stats_of(b);
    assert_int_equal(st.failures, 500);
    assert_int_equal(st.duplicates, 500);
    test_breaker_destroy(b);
}

/* Review finding: breaker_reset() under traffic must leave a count window
 * consistent: afterwards, N successes on one thread are exactly N calls and
 * no failures, whatever the reset interleaved with. */
enum { RESET_WINDOW = 2000 };

struct reset_traffic {
    breaker *b;
    _Atomic int stop;
};

static void *reset_traffic_worker(void *arg) {
    struct reset_traffic *rt = arg;
    unsigned i = 0;
    while (!atomic_load(&rt->stop)) {
        breaker_permit p;
        if (breaker_acquire(rt->b, &p) == BREAKER_OK)
            (void)breaker_complete(rt->b, &p, (i++ & 1) ? BREAKER_FAILURE : BREAKER_SUCCESS);
    }
    return NULL;
}

static void count_window_stays_consistent_when_reset_under_traffic(void **state) {
    (void)state;
    breaker_config cfg;
    breaker_config_init(&cfg);
    cfg.trip = BREAKER_TRIP_COUNT_WINDOW;
    cfg.window_size = RESET_WINDOW;
    cfg.min_calls = RESET_WINDOW;
    cfg.failure_rate = 1.0; /* half the calls fail: never trips */
    struct reset_traffic rt = {0};
    assert_int_equal(test_breaker_create(&cfg, &rt.b), BREAKER_OK);
    for (int round = 0; round < 20; round++) {
        atomic_store(&rt.stop, 0);
        pthread_t t[2];
        for (int i = 0; i < 2; i++)
            pthread_create(&t[i], NULL, reset_traffic_worker, &rt);
        for (int r = 0; r < 200; r++)
            assert_int_equal(breaker_reset(rt.b), BREAKER_OK);
        atomic_store(&rt.stop, 1);
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
        for (int i = 0; i < RESET_WINDOW; i++)
            call_ok(rt.b, BREAKER_SUCCESS);
        breaker_stats st = stats_of(rt.b);
        assert_int_equal(st.window_calls, RESET_WINDOW);
        assert_int_equal(st.window_failures, 0);
    }
    test_breaker_destroy(rt.b);
}

/* Recovery closes on all its evidence, under concurrency: four probes in
 * flight, three successes needed, all four settled at once by four threads.
 * When one of them fails, the breaker must end OPEN with that failure
 * applied (never CLOSED with the failure lost as STALE); when none fails it
 * must end CLOSED. */
enum { SETTLERS = 4 };

struct settle_race {
    breaker *b;
    breaker_permit probes[SETTLERS];
    int failing; /* index of the probe that fails, or -1 */
    int rc[SETTLERS];
    pthread_barrier_t start;
    pthread_barrier_t done;
    _Atomic int stop;
};

struct settler {
    struct settle_race *race;
    int index;
};

static void *probe_settler(void *arg) {
    struct settler *me = arg;
    struct settle_race *race = me->race;
    for (;;) {
        pthread_barrier_wait(&race->start);
        if (atomic_load(&race->stop)) return NULL;
        enum breaker_outcome o = me->index == race->failing ? BREAKER_FAILURE : BREAKER_SUCCESS;
        race->rc[me->index] = breaker_complete(race->b, &race->probes[me->index], o);
        pthread_barrier_wait(&race->done);
    }
}

static void recovery_closes_only_when_every_probe_settled(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker_config cfg;
    probing_config(&cfg, &clock, SETTLERS);
    cfg.half_open_successes = SETTLERS - 1;
    cfg.probe_timeout_ns = 3600 * SEC;
    struct settle_race race = {.b = make_breaker(&cfg)};
    pthread_barrier_init(&race.start, NULL, SETTLERS + 1);
    pthread_barrier_init(&race.done, NULL, SETTLERS + 1);
    pthread_t threads[SETTLERS];
    struct settler settlers[SETTLERS];
    for (int i = 0; i < SETTLERS; i++) {
        settlers[i] = (struct settler){&race, i};
        pthread_create(&threads[i], NULL, probe_settler, &settlers[i]);
    }
    unsigned lost = 0, rounds = 2000;
    for (unsigned round = 0; round < rounds; round++) {
        assert_int_equal(breaker_reset(race.b), BREAKER_OK);
        call_ok(race.b, BREAKER_FAILURE);
        fake_clock_advance(&clock, 1 * SEC);
        for (int i = 0; i < SETTLERS; i++)
            assert_int_equal(breaker_acquire(race.b, &race.probes[i]), BREAKER_OK);
        race.failing = (int)(round % (SETTLERS + 1)) - 1; /* -1: nobody fails */
        pthread_barrier_wait(&race.start);
        pthread_barrier_wait(&race.done);
        enum breaker_state st = breaker_get_state(race.b);
        if (race.failing < 0) {
            assert_int_equal(st, BREAKER_CLOSED);
            for (int i = 0; i < SETTLERS; i++)
                assert_int_equal(race.rc[i], BREAKER_OK);
        } else {
            if (st != BREAKER_OPEN || race.rc[race.failing] != BREAKER_OK) lost++;
        }
    }
    atomic_store(&race.stop, 1);
    pthread_barrier_wait(&race.start);
    for (int i = 0; i < SETTLERS; i++)
        pthread_join(threads[i], NULL);
    if (lost != 0) fail_msg("%u of %u failing probes lost to an early close", lost, rounds);
    pthread_barrier_destroy(&race.start);
    pthread_barrier_destroy(&race.done);
    test_breaker_destroy(race.b);
}

/* ---- Checked permits: copies of one closed permit count once ---------------- */

enum { COPY_PRODUCERS = 4, COPY_BATCH = 200, COPY_ROUNDS = 25 };

struct copy_race {
    breaker *b;
    pthread_barrier_t filled, done;
    breaker_permit originals[COPY_PRODUCERS * COPY_BATCH];
    breaker_permit copies[COPY_PRODUCERS * COPY_BATCH];
    _Atomic int ok, settled, other;
};

struct copy_worker {
    struct copy_race *race;
    int id; /* 0..COPY_PRODUCERS-1 admit; then COPY_PRODUCERS, +1 complete */
};

static void count_copy_rc(struct copy_race *race, int rc) {
    atomic_fetch_add(rc == BREAKER_OK                ? &race->ok
                     : rc == BREAKER_ALREADY_SETTLED ? &race->settled
                                                     : &race->other,
                     1);
}

/* Each round: the producers admit a batch each (on their own stripes) and
 * copy each permit; then two completers finish the originals and the copies
 * at once, in opposite orders, so every pair races somewhere. */
static void *copy_worker_run(void *arg) {
    struct copy_worker *w = arg;
    struct copy_race *race = w->race;
    const int n = COPY_PRODUCERS * COPY_BATCH;
    for (int round = 0; round < COPY_ROUNDS; round++) {
        if (w->id < COPY_PRODUCERS) {
            for (int i = w->id * COPY_BATCH; i < (w->id + 1) * COPY_BATCH; i++) {
                assert_int_equal(breaker_acquire(race->b, &race->originals[i]), BREAKER_OK);
                memcpy(&race->copies[i], &race->originals[i], sizeof(breaker_permit));
            }
        }
        pthread_barrier_wait(&race->filled);
        if (w->id == COPY_PRODUCERS) {
            for (int i = 0; i < n; i++)
                count_copy_rc(race,
                              breaker_complete(race->b, &race->originals[i], BREAKER_SUCCESS));
        } else if (w->id == COPY_PRODUCERS + 1) {
            for (int i = n - 1; i >= 0; i--)
                count_copy_rc(race, breaker_complete(race->b, &race->copies[i], BREAKER_SUCCESS));
        }
        pthread_barrier_wait(&race->done);
    }
    return NULL;
}

/* With checked_permits, each pair of copies of a closed permit, completed
 * on two threads at once, counts once: one OK, one ALREADY_SETTLED, the
 * statistics show the calls and the duplicates exactly (without it, every
 * copy counted: 2 x the calls as successes). */
static void copies_of_checked_closed_permits_count_once_under_contention(void **state) {
    (void)state;
    breaker_config cfg;
    breaker_config_init(&cfg);
    cfg.checked_permits = 1;
    struct copy_race race = {.b = make_breaker(&cfg)};
    pthread_barrier_init(&race.filled, NULL, COPY_PRODUCERS + 2);
    pthread_barrier_init(&race.done, NULL, COPY_PRODUCERS + 2);
    pthread_t threads[COPY_PRODUCERS + 2];
    struct copy_worker workers[COPY_PRODUCERS + 2];
    for (int i = 0; i < COPY_PRODUCERS + 2; i++) {
        workers[i] = (struct copy_worker){&race, i};
        pthread_create(&threads[i], NULL, copy_worker_run, &workers[i]);
    }
    for (int i = 0; i < COPY_PRODUCERS + 2; i++)
        pthread_join(threads[i], NULL);
    const int calls = COPY_PRODUCERS * COPY_BATCH * COPY_ROUNDS;
    assert_int_equal(atomic_load(&race.ok), calls);
    assert_int_equal(atomic_load(&race.settled), calls);
    assert_int_equal(atomic_load(&race.other), 0);
    breaker_stats st = stats_of(race.b);
    assert_int_equal(st.admitted, calls);
    assert_int_equal(st.successes, calls);
    assert_int_equal(st.duplicates, calls);
    pthread_barrier_destroy(&race.filled);
    pthread_barrier_destroy(&race.done);
    test_breaker_destroy(race.b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(copies_of_checked_closed_permits_count_once_under_contention),
        cmocka_unit_test(half_open_admits_exactly_max_probes_under_contention),
        cmocka_unit_test(recovery_closes_only_when_every_probe_settled),
        cmocka_unit_test(many_threads_failing_trip_once_consecutive),
        cmocka_unit_test(many_threads_failing_trip_once_count_window),
        cmocka_unit_test(many_threads_failing_trip_once_time_window),
        cmocka_unit_test(permits_complete_on_another_thread),
        cmocka_unit_test(racing_double_completion_settles_once),
        cmocka_unit_test(count_window_stays_consistent_when_reset_under_traffic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
