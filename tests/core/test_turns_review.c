/* SPDX-License-Identifier: MIT */
/*
 * test_turns_review.c - a reviewer's reproducers for the named callers'
 * turns after the open wait (breaker.c "Turns after the wait", breaker.h
 * breaker_acquire_from() and breaker_retry_after_hint_from(), docs/design.md
 * "Turns after the wait"). Each test names the promise it holds the code to.
 */
#include "source_keys.h"
#include "test_util.h"

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>

static breaker_config turns_config(struct fake_clock *clock) {
    breaker_config cfg;
    test_config(&cfg, clock, NULL);
    cfg.trip = BREAKER_TRIP_CONSECUTIVE;
    cfg.failure_threshold = 5;
    cfg.min_failing_sources = 0; /* failing sources count: turns are on */
    cfg.open_backoff = 1.0;
    return cfg;
}

/* Trip `b` with failures from many callers. */
/* The first caller key from 1000 whose hint is `min_s` seconds or more,
 * with that hint in `*hint_s` (fails the test if none of 100 is). */
static uint64_t caller_told_at_least(breaker *b, uint64_t min_s, uint64_t *hint_s) {
    for (uint64_t k = 1000; k < 1100; k++) {
        uint64_t h = breaker_retry_after_hint_from(b, k);
        if (h >= min_s) {
            *hint_s = h;
            return k;
        }
    }
    fail_msg("no caller of keys 1000 to 1099 is told %llu s or more", (unsigned long long)min_s);
    return 0;
}

static void trip(breaker *b) {
    uint64_t keys[64];
    keys_on_distinct_bits(keys, 64);
    for (uint32_t i = 0; i < 64 && breaker_get_state(b) == BREAKER_CLOSED; i++) {
        breaker_permit p;
        if (breaker_acquire_from(b, &p, keys[i]) != BREAKER_OK) continue;
        assert_int_equal(breaker_complete_from(b, &p, BREAKER_FAILURE, keys[i]), BREAKER_OK);
    }
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
}

/* docs/design.md: "the price: ... a lone named caller waits up to a quarter
 * of the wait more"; breaker.h: d "uniform over a quarter of the wait before
 * jitter". A dependency's own answer (breaker_open_for, SERVER_DIRECTED: a
 * Retry-After of 1 s) or an operator's opens for a wait other than the
 * policy's; the turns' spread is still a quarter of the policy's wait for
 * k (breaker__open_spread_ns(): open_ns 60 s, so 15 s), not of the wait the
 * breaker waited. A lone named caller then waits up to 15 s past a 1 s
 * wait. (A breaker_set_open_wait() function that chooses a shorter wait
 * does the same.) */
static void a_lone_named_callers_turn_is_within_a_quarter_of_the_wait_it_followed(void **state) {
    (void)state;
    const uint64_t wait = 1 * SEC;
    uint64_t worst = 0, worst_key = 0;
    for (uint64_t key = 1; key <= 20; key++) {
        struct fake_clock clock = {.now = 1 * SEC};
        breaker_config cfg = turns_config(&clock);
        cfg.open_ns = 60 * SEC;
        cfg.open_max_ns = 120 * SEC;
        breaker *b = make_breaker(&cfg);
        assert_int_equal(breaker_open_for(b, wait, BREAKER_REASON_SERVER_DIRECTED), BREAKER_OK);
        fake_clock_advance(&clock, breaker_retry_after_ns(b));
        assert_int_equal(breaker_retry_after_ns(b), 0);
        uint64_t wait_end = clock.now;
        breaker_permit p;
        while (breaker_acquire_from(b, &p, key) == BREAKER_REJECTED_OPEN)
            clock.now += 10 * MS;
        assert_int_equal(breaker_get_state(b), BREAKER_HALF_OPEN);
        if (clock.now - wait_end > worst) {
            worst = clock.now - wait_end;
            worst_key = key;
        }
        test_breaker_destroy(b);
    }
    printf("a 1 s server-directed open (policy open_ns 60 s): a lone named caller (key %llu) "
           "admitted %.2f s after the wait's end (want at most a quarter of 1 s: 0.25 s)\n",
           (unsigned long long)worst_key, (double)worst / (double)SEC);
    assert_true(worst <= wait / 4 + 10 * MS);
}

/* breaker.h, breaker_acquire_from(): a caller is admitted as a probe "only
 * from its own point after the open wait, ... which
 * breaker_retry_after_hint_from() tells it"; docs/design.md:
 * "breaker_retry_after_hint_from() tells a caller the same point". In a
 * HALF_OPEN whose one probe slot is taken (an unnamed caller's probe at the
 * wait's end), the hint is the probe's deadline plus a draw over a quarter of
 * probe_timeout_ns: a named caller whose turn is seconds later comes back at
 * its hint, with the slot free again, and is refused (its turn has not
 * come). */
static void the_hint_in_a_busy_half_open_is_not_before_the_callers_turn(void **state) {
    (void)state;
    struct fake_clock clock = {.now = 1 * SEC};
    breaker_config cfg = turns_config(&clock);
    cfg.open_ns = 40 * SEC; /* turns spread over 10 s */
    cfg.half_open_max_probes = 1;
    cfg.half_open_successes = 2;
    cfg.probe_timeout_ns = 1 * SEC;
    breaker *b = make_breaker(&cfg);
    trip(b);
    fake_clock_advance(&clock, breaker_retry_after_ns(b));
    uint64_t wait_end = clock.now;
    /* At the wait's end the hint is the time to the caller's turn: a caller
     * whose turn is 5 s or more after it. */
    uint64_t turn_s = 0;
    uint64_t key = caller_told_at_least(b, 5, &turn_s);
    breaker_permit unnamed;
    assert_int_equal(breaker_acquire(b, &unnamed), BREAKER_OK); /* the first probe, at T */
    assert_int_equal(breaker_get_state(b), BREAKER_HALF_OPEN);
    clock.now += 100 * MS;
    breaker_permit p;
    assert_int_equal(breaker_acquire_from(b, &p, key), BREAKER_REJECTED_HALF_OPEN);
    uint64_t hint = breaker_retry_after_hint_from(b, key);
    uint64_t told = clock.now + hint * SEC;
    clock.now += 100 * MS;
    assert_int_equal(breaker_complete(b, &unnamed, BREAKER_SUCCESS), BREAKER_OK); /* 1 of 2 */
    clock.now = told;
    int rc = breaker_acquire_from(b, &p, key);
    printf("busy half-open: caller %llu told %llu s at T+0.1 s (its turn: %llu s after T); back "
           "at T+%.1f s with the slot free: %s, hint now %llu s (want admitted)\n",
           (unsigned long long)key, (unsigned long long)hint, (unsigned long long)turn_s,
           (double)(told - wait_end) / (double)SEC, breaker_status_name(rc),
           (unsigned long long)breaker_retry_after_hint_from(b, key));
    if (rc == BREAKER_OK) (void)breaker_complete(b, &p, BREAKER_SUCCESS);
    test_breaker_destroy(b);
    assert_int_equal(rc, BREAKER_OK);
}

/* A clock that parks one thread in its next reading until told to go: the
 * exact place of a preemption, made deterministic. */
struct parking_clock {
    struct fake_clock clock;
    pthread_t parked;
    _Atomic int armed;
    sem_t at_clock, go;
};

static uint64_t parking_clock_read(void *ctx) {
    struct parking_clock *c = ctx;
    if (atomic_load(&c->armed) && pthread_equal(pthread_self(), c->parked) &&
        atomic_exchange(&c->armed, 0)) {
        sem_post(&c->at_clock);
        sem_wait(&c->go);
    }
    return fake_clock_read(&c->clock);
}

struct late_caller {
    struct parking_clock *clock;
    breaker *b;
    uint64_t key;
    int rc;
};

static void *late_caller_run(void *arg) {
    struct late_caller *l = arg;
    l->clock->parked = pthread_self();
    atomic_store(&l->clock->armed, 1);
    breaker_permit p;
    l->rc = breaker_acquire_from(l->b, &p, l->key);
    if (l->rc == BREAKER_OK) (void)breaker_complete(l->b, &p, BREAKER_SUCCESS);
    return NULL;
}

/* breaker.c, "Turns after the wait": the half-open keeps T, the wait's end,
 * in turns_from, "written before the transition's CAS, which publishes it";
 * breaker.h: a named caller is admitted "from its own point after the open
 * wait". A named caller that loaded the OPEN and lost the OPEN -> HALF_OPEN
 * race (preempted between its ctl load and its transition) runs
 * turns_start() after the winner published the half-open's phase_time: the
 * OPEN's tag no longer matches, so it writes ITS OWN clock reading, tagged
 * with the half-open's generation, over the winner's T; its CAS then fails
 * and nothing restores the word. Every named caller's turn now counts from
 * the loser's reading: with the first callers 20 s after the wait's end,
 * a caller whose point passed long ago is refused in the half-open until
 * its point after the loser's reading (up to a quarter of the wait more). */
static void a_lost_transition_race_does_not_move_the_named_callers_turns(void **state) {
    (void)state;
    struct parking_clock pc = {.clock = {.now = 1 * SEC}};
    sem_init(&pc.at_clock, 0, 0);
    sem_init(&pc.go, 0, 0);
    breaker_config cfg = turns_config(&pc.clock);
    cfg.clock = parking_clock_read;
    cfg.clock_ctx = &pc;
    cfg.open_ns = 40 * SEC; /* turns spread over 10 s */
    cfg.half_open_max_probes = 2;
    cfg.half_open_successes = 2;
    cfg.probe_timeout_ns = 60 * SEC;
    breaker *b = make_breaker(&cfg);
    trip(b);
    fake_clock_advance(&pc.clock, breaker_retry_after_ns(b));
    uint64_t wait_end = pc.clock.now;
    /* A caller whose point is 2 s or more after the wait's end. */
    uint64_t turn_s = 0;
    uint64_t key = caller_told_at_least(b, 2, &turn_s);
    pc.clock.now = wait_end + 20 * SEC; /* the first callers come later: every turn has come */
    struct late_caller late = {.clock = &pc, .b = b, .key = 7};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, late_caller_run, &late), 0);
    sem_wait(&pc.at_clock); /* it loaded the OPEN, and is preempted */
    breaker_permit first;
    assert_int_equal(breaker_acquire(b, &first), BREAKER_OK); /* begins the half-open */
    uint64_t hint_before = breaker_retry_after_hint_from(b, key);
    sem_post(&pc.go);
    assert_int_equal(pthread_join(t, NULL), 0);
    uint64_t hint_after = breaker_retry_after_hint_from(b, key);
    breaker_permit p;
    int rc = breaker_acquire_from(b, &p, key);
    printf("first callers 20 s after the wait's end; caller %llu's point %llu s after it: hint "
           "%llu s before a lost OPEN -> HALF_OPEN race, %llu s after; the loser %s; the caller "
           "%s (want admitted)\n",
           (unsigned long long)key, (unsigned long long)turn_s, (unsigned long long)hint_before,
           (unsigned long long)hint_after, breaker_status_name(late.rc), breaker_status_name(rc));
    if (rc == BREAKER_OK) (void)breaker_complete(b, &p, BREAKER_SUCCESS);
    (void)breaker_complete(b, &first, BREAKER_SUCCESS);
    test_breaker_destroy(b);
    sem_destroy(&pc.at_clock);
    sem_destroy(&pc.go);
    assert_int_equal(hint_before, 0);
    assert_int_equal(rc, BREAKER_OK);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_lone_named_callers_turn_is_within_a_quarter_of_the_wait_it_followed),
        cmocka_unit_test(the_hint_in_a_busy_half_open_is_not_before_the_callers_turn),
        cmocka_unit_test(a_lost_transition_race_does_not_move_the_named_callers_turns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
