/* SPDX-License-Identifier: MIT */
/*
 * test_recovery.c - recovery: the open wait with backoff and
 * jitter, the half-open probes and their bound, and hung probes; an open
 * wait chosen from the evidence (experimental: breaker_set_open_wait()).
 */
#define BREAKER_EXPERIMENTAL /* breaker_set_open_wait() */
#include "breaker_fixture.h"

static breaker_config *recovery_config(struct breaker_fixture *f, uint64_t now_ns) {
    breaker_config *cfg = fixture_init_consecutive(f, now_ns, 1);
    cfg->open_ns = 10 * SEC;
    cfg->open_backoff = 2.0;
    cfg->open_max_ns = 60 * SEC;
    cfg->half_open_max_probes = 1;
    cfg->half_open_successes = 2;
    cfg->probe_timeout_ns = 5 * SEC;
    return cfg;
}

/* A breaker of recovery_config() at 0 that admits `max_probes` probes at
 * once and closes on `successes` of them, tripped by one failure and past
 * its 10 s wait: its next acquire is a probe (state HALF_OPEN from then). */
static breaker *half_open_breaker(struct breaker_fixture *f, uint32_t max_probes,
                                  uint32_t successes) {
    breaker_config *cfg = recovery_config(f, 0);
    cfg->half_open_max_probes = max_probes;
    cfg->half_open_successes = successes;
    breaker *b = fixture_create(f);
    fixture_trip_to_half_open(f);
    return b;
}

static void open_rejects_until_the_wait_ends(void **state) {
    (void)state;
    struct breaker_fixture f;
    recovery_config(&f, 0);
    breaker *b = fixture_create(&f);
    call_ok(b, BREAKER_FAILURE);
    breaker_permit p;
    for (int i = 0; i < 100; i++) {
        assert_int_equal(breaker_acquire(b, &p), BREAKER_REJECTED_OPEN);
        assert_int_equal(breaker_retry_after_ns(b), 10 * SEC - (uint64_t)i * 99 * MS);
        fake_clock_advance(&f.clock, 99 * MS);
    }
    fake_clock_advance(&f.clock, 10 * SEC - 100 * 99 * MS - 1); /* 1 ns before the end */
    assert_int_equal(breaker_retry_after_ns(b), 1);
    assert_int_equal(breaker_acquire(b, &p), BREAKER_REJECTED_OPEN);
    assert_int_equal(stats_of(b).rejected_open, 101);
    fake_clock_advance(&f.clock, 1);
    assert_int_equal(breaker_retry_after_ns(b), 0);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN); /* until a call arrives */
    fixture_destroy(&f);
}

static void first_acquire_after_the_wait_is_the_probe(void **state) {
    (void)state;
    struct breaker_fixture f;
    recovery_config(&f, 0);
    breaker *b = fixture_create(&f);
    breaker_permit closed_permit;
    assert_int_equal(breaker_acquire(b, &closed_permit), BREAKER_OK);
    assert_int_equal(breaker_permit_is_probe(&closed_permit), 0);
    assert_int_equal(breaker_complete(b, &closed_permit, BREAKER_FAILURE), BREAKER_OK);
    fake_clock_advance(&f.clock, 10 * SEC);
    breaker_permit probe, other;
    assert_int_equal(breaker_acquire(b, &probe), BREAKER_OK);
    assert_int_equal(breaker_get_state(b), BREAKER_HALF_OPEN);
    assert_int_equal(breaker_permit_is_probe(&probe), 1);
    assert_int_equal(fixture_events(&f), 2);
    assert_int_equal(f.log.events[1].from, BREAKER_OPEN);
    assert_int_equal(f.log.events[1].to, BREAKER_HALF_OPEN);
    assert_int_equal(f.log.events[1].reason, BREAKER_REASON_WAIT_ELAPSED);
    assert_int_equal(breaker_acquire(b, &other), BREAKER_REJECTED_HALF_OPEN);
    assert_int_equal(breaker_permit_is_probe(&other), 0);
    assert_int_equal(breaker_complete(b, &probe, BREAKER_SUCCESS), BREAKER_OK);
    /* One success of two: still half-open, the slot is free again. */
    assert_int_equal(breaker_get_state(b), BREAKER_HALF_OPEN);
    assert_int_equal(breaker_acquire(b, &probe), BREAKER_OK);
    assert_int_equal(breaker_complete(b, &probe, BREAKER_SUCCESS), BREAKER_OK);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    assert_int_equal(f.log.events[2].reason, BREAKER_REASON_PROBES_SUCCEEDED);
    assert_int_equal(f.log.events[2].evidence.probe_successes, 2);
    breaker_stats st = stats_of(b);
    assert_int_equal(st.probes_admitted, 2);
    assert_int_equal(st.probes_succeeded, 2);
    assert_int_equal(st.rejected_half_open, 1);
    fixture_destroy(&f);
}

static void half_open_admits_at_most_max_probes(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker *b = half_open_breaker(&f, 3, 5);
    breaker_permit probes[3], extra;
    for (int i = 0; i < 3; i++)
        assert_int_equal(breaker_acquire(b, &probes[i]), BREAKER_OK);
    for (int i = 0; i < 10; i++)
        assert_int_equal(breaker_acquire(b, &extra), BREAKER_REJECTED_HALF_OPEN);
    assert_int_equal(stats_of(b).probes_in_flight, 3);
    /* Settling one frees exactly one slot. */
    assert_int_equal(breaker_complete(b, &probes[1], BREAKER_SUCCESS), BREAKER_OK);
    assert_int_equal(stats_of(b).probes_in_flight, 2);
    assert_int_equal(breaker_acquire(b, &probes[1]), BREAKER_OK);
    assert_int_equal(breaker_acquire(b, &extra), BREAKER_REJECTED_HALF_OPEN);
    fixture_destroy(&f);
}

static void failed_probe_reopens_at_once(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker *b = half_open_breaker(&f, 2, 2);
    breaker_permit a, c;
    assert_int_equal(breaker_acquire(b, &a), BREAKER_OK);
    assert_int_equal(breaker_acquire(b, &c), BREAKER_OK);
    assert_int_equal(breaker_complete(b, &a, BREAKER_FAILURE), BREAKER_OK);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    assert_int_equal(f.log.events[2].reason, BREAKER_REASON_PROBE_FAILED);
    assert_int_equal(f.log.events[2].evidence.failed_recoveries, 1);
    assert_int_equal(f.log.events[2].open_ns, 20 * SEC);
    /* The other probe's success arrives late: it cannot close the breaker. */
    assert_int_equal(breaker_complete(b, &c, BREAKER_SUCCESS), BREAKER_STALE);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    assert_int_equal(breaker_retry_after_ns(b), 20 * SEC);
    fixture_destroy(&f);
}

static void ignored_probe_frees_its_slot_without_counting(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker *b = half_open_breaker(&f, 1, 1);
    for (int i = 0; i < 5; i++) {
        breaker_permit p;
        assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
        assert_int_equal(breaker_complete(b, &p, i % 2 ? BREAKER_IGNORED : BREAKER_CANCELLED),
                         BREAKER_OK);
        assert_int_equal(breaker_get_state(b), BREAKER_HALF_OPEN);
    }
    breaker_stats st = stats_of(b);
    assert_int_equal(st.probes_succeeded, 0);
    assert_int_equal(st.probes_failed, 0);
    assert_int_equal(st.probes_in_flight, 0);
    call_ok(b, BREAKER_SUCCESS);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    fixture_destroy(&f);
}

static void hung_probe_reopens_the_breaker_at_the_next_call(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker *b = half_open_breaker(&f, 1, 2);
    breaker_permit hung, p;
    assert_int_equal(breaker_acquire(b, &hung), BREAKER_OK);
    fake_clock_advance(&f.clock, 5 * SEC - 1);
    assert_int_equal(breaker_acquire(b, &p), BREAKER_REJECTED_HALF_OPEN);
    assert_int_equal(breaker_retry_after_ns(b), 1);
    fake_clock_advance(&f.clock, 1);
    /* The deadline has passed: the next call finds the breaker open again. */
    assert_int_equal(breaker_acquire(b, &p), BREAKER_REJECTED_OPEN);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    assert_int_equal(fixture_events(&f), 3);
    assert_int_equal(f.log.events[2].reason, BREAKER_REASON_PROBE_TIMEOUT);
    assert_int_equal(f.log.events[2].open_ns, 20 * SEC);
    /* Its completion, however good, is stale. */
    assert_int_equal(breaker_complete(b, &hung, BREAKER_SUCCESS), BREAKER_STALE);
    breaker_stats st = stats_of(b);
    assert_int_equal(st.probes_timed_out, 1);
    assert_int_equal(st.probes_failed, 1);
    assert_int_equal(st.stale, 1);
    /* And the next half-open has its slot back. */
    fake_clock_advance(&f.clock, 20 * SEC);
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
    fixture_destroy(&f);
}

static void hung_probe_is_noticed_by_get_state(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker *b = half_open_breaker(&f, 4, 2);
    breaker_permit first, second;
    assert_int_equal(breaker_acquire(b, &first), BREAKER_OK);
    fake_clock_advance(&f.clock, 2 * SEC);
    assert_int_equal(breaker_acquire(b, &second), BREAKER_OK);
    assert_int_equal(breaker_complete(b, &first, BREAKER_SUCCESS), BREAKER_OK);
    /* The second probe hangs: its own deadline (2 s later than the first's)
     * is what counts. */
    fake_clock_advance(&f.clock, 5 * SEC - 1);
    assert_int_equal(breaker_get_state(b), BREAKER_HALF_OPEN);
    fake_clock_advance(&f.clock, 1);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    assert_int_equal(breaker_complete(b, &second, BREAKER_SUCCESS), BREAKER_STALE);
    fixture_destroy(&f);
}

static void probe_completed_after_its_deadline_is_stale(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker *b = half_open_breaker(&f, 1, 1);
    breaker_permit p;
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
    fake_clock_advance(&f.clock, 6 * SEC);
    /* Nobody called in between: the completion itself notices the timeout. */
    assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_STALE);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    assert_int_equal(stats_of(b).probes_timed_out, 1);
    fixture_destroy(&f);
}

static void repeated_failed_recoveries_grow_the_wait_up_to_the_cap(void **state) {
    (void)state;
    struct breaker_fixture f;
    recovery_config(&f, 0);
    breaker *b = fixture_create(&f);
    call_ok(b, BREAKER_FAILURE);
    const uint64_t expected[] = {10 * SEC, 20 * SEC, 40 * SEC, 60 * SEC, 60 * SEC, 60 * SEC};
    for (int i = 0; i < 6; i++) {
        assert_int_equal(breaker_retry_after_ns(b), expected[i]);
        fake_clock_advance(&f.clock, expected[i] - 1);
        breaker_permit p;
        assert_int_equal(breaker_acquire(b, &p), BREAKER_REJECTED_OPEN);
        fake_clock_advance(&f.clock, 1);
        call_ok(b, BREAKER_FAILURE); /* the probe fails */
        assert_int_equal(stats_of(b).failed_recoveries, (uint32_t)i + 1);
    }
    /* A recovery puts k back to 0: the next trip waits open_ns again. */
    fake_clock_advance(&f.clock, 60 * SEC);
    call_ok(b, BREAKER_SUCCESS);
    call_ok(b, BREAKER_SUCCESS);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    assert_int_equal(stats_of(b).failed_recoveries, 0);
    call_ok(b, BREAKER_FAILURE);
    assert_int_equal(breaker_retry_after_ns(b), 10 * SEC);
    fixture_destroy(&f);
}

/* Collect the first `n` waits of a breaker that never recovers. */
static void collect_waits(uint64_t seed, double jitter, uint64_t *waits, int n) {
    struct breaker_fixture f;
    breaker_config *cfg = recovery_config(&f, 0);
    cfg->seed = seed;
    cfg->open_jitter = jitter;
    cfg->open_max_ns = 40 * SEC;
    breaker *b = fixture_create(&f);
    call_ok(b, BREAKER_FAILURE);
    for (int i = 0; i < n; i++) {
        waits[i] = breaker_retry_after_ns(b);
        fake_clock_advance(&f.clock, waits[i]);
        call_ok(b, BREAKER_FAILURE);
    }
    fixture_destroy(&f);
}

static void jitter_stays_within_bounds_and_is_reproducible_with_a_seed(void **state) {
    (void)state;
    enum { N = 40 };
    uint64_t a[N], again[N], other[N];
    collect_waits(12345, 0.25, a, N);
    collect_waits(12345, 0.25, again, N);
    collect_waits(777, 0.25, other, N);
    int differ = 0;
    for (int i = 0; i < N; i++) {
        uint64_t base = i == 0 ? 10 * SEC : i == 1 ? 20 * SEC : 40 * SEC;
        /* Within [base, base * 1.25], at microsecond resolution. */
        assert_in_range(a[i], base, base + base / 4 + 1000);
        assert_int_equal(a[i], again[i]);
        differ += a[i] != other[i];
    }
    assert_true(differ > N / 2);
    /* Not all equal: the jitter does vary from wait to wait. */
    int varied = 0;
    for (int i = 3; i < N; i++)
        varied += a[i] != a[2];
    assert_true(varied > N / 2);
    breaker_config cfg;
    breaker_config_init(&cfg);
    assert_int_equal(cfg.open_jitter, 0.0);
}

static void slow_probe_fails_when_slow_calls_trip(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker_config *cfg = fixture_init_count_window(&f, 0, 4, 4);
    cfg->slow_call_ns = 100 * MS;
    cfg->slow_call_rate = 0.5;
    cfg->open_ns = SEC;
    cfg->half_open_successes = 1;
    breaker *b = fixture_create(&f);
    for (int i = 0; i < 4; i++)
        call_ok(b, BREAKER_FAILURE);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    fake_clock_advance(&f.clock, SEC);
    breaker_permit p;
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
    fake_clock_advance(&f.clock, 200 * MS);
    assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_OK);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    assert_int_equal(f.log.events[2].reason, BREAKER_REASON_PROBE_SLOW);
    fixture_destroy(&f);
}

/* Review finding: a slot word idle for 65536 generations must not alias a
 * live one through the 16-bit tag (65536 resets between two half-opens). */
static void probe_limit_holds_across_generation_tag_wraparound(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker_config *cfg = recovery_config(&f, 1000 * SEC);
    cfg->open_ns = MS;
    breaker *b = fixture_create(&f);
    breaker_permit p, q, r;
    call_ok(b, BREAKER_FAILURE); /* gen 2 OPEN */
    fake_clock_advance(&f.clock, 2 * MS);
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK); /* gen 3 HALF_OPEN */
    assert_int_equal(breaker_complete(b, &p, BREAKER_IGNORED), BREAKER_OK);
    while (breaker_generation(b) < 65537)
        assert_int_equal(breaker_reset(b), BREAKER_OK);
    call_ok(b, BREAKER_FAILURE); /* gen 65538 OPEN */
    fake_clock_advance(&f.clock, 2 * MS);
    assert_int_equal(breaker_acquire(b, &q), BREAKER_OK); /* gen 65539: tag 3 again */
    assert_int_equal(breaker_acquire(b, &r), BREAKER_REJECTED_HALF_OPEN);
    assert_int_equal(breaker_complete(b, &q, BREAKER_SUCCESS), BREAKER_OK);
    fixture_destroy(&f);
}

/* Review finding: deadlines saturate rather than wrap near the clock's top. */
static void waits_never_wrap_near_the_top_of_the_clock(void **state) {
    (void)state;
    struct breaker_fixture f;
    recovery_config(&f, UINT64_MAX - 5 * SEC);
    breaker *b = fixture_create(&f);
    call_ok(b, BREAKER_FAILURE); /* open for 10 s: past the top of the clock */
    fake_clock_advance(&f.clock, 1000);
    breaker_permit p;
    assert_int_equal(breaker_acquire(b, &p), BREAKER_REJECTED_OPEN);
    assert_true(breaker_retry_after_ns(b) > 4 * SEC);
    fixture_destroy(&f);
}

/* Under low traffic a hung probe's timeout takes effect at its deadline:
 * nothing calls between the deadline (16 s) and an hour later, yet the next
 * wait is measured from the deadline, statistics read in between already
 * show OPEN, time in state credits half-open only up to the deadline, and
 * the first caller after the quiet hour is admitted as a probe. */
static void hung_probe_times_out_at_its_deadline_under_low_traffic(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker_config *cfg = recovery_config(&f, 0);
    cfg->open_ns = 10 * SEC;
    cfg->open_backoff = 2.0;
    cfg->open_max_ns = 600 * SEC;
    cfg->probe_timeout_ns = 6 * SEC;
    breaker *b = fixture_create(&f);
    call_ok(b, BREAKER_FAILURE); /* OPEN at 0 for 10 s */
    fake_clock_advance(&f.clock, 10 * SEC);
    breaker_permit hung;
    assert_int_equal(breaker_acquire(b, &hung), BREAKER_OK); /* HALF_OPEN at 10 s, due at 16 s */
    fake_clock_advance(&f.clock, 3590 * SEC);                /* a quiet hour: now 3600 s */
    breaker_stats st = stats_of(b);
    assert_int_equal(st.state, BREAKER_OPEN);
    assert_int_equal(st.probes_in_flight, 0);
    assert_int_equal(st.state_since_ns, 16 * SEC);
    assert_int_equal(st.open_until_ns, 16 * SEC + 20 * SEC); /* the doubled wait, from 16 s */
    assert_int_equal(st.time_in_state_ns[BREAKER_HALF_OPEN], 6 * SEC);
    assert_int_equal(st.time_in_state_ns[BREAKER_OPEN], 10 * SEC + 3584 * SEC);
    unsigned n = fixture_events(&f);
    assert_int_equal(f.log.events[n - 1].reason, BREAKER_REASON_PROBE_TIMEOUT);
    assert_int_equal(f.log.events[n - 1].time_ns, 16 * SEC);
    /* The first caller after the quiet hour is the next probe. */
    breaker_permit p;
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
    assert_true(breaker_permit_is_probe(&p));
    assert_int_equal(breaker_complete(b, &hung, BREAKER_SUCCESS), BREAKER_STALE);
    assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_OK);
    fixture_destroy(&f);
}

/* With four probes and three successes needed, the third success does not
 * close while the fourth probe is out: no more probes are admitted, and the
 * fourth decides (its failure reopens; its success or an ignored answer
 * closes). The failure is applied, not lost as STALE. */
static void recovery_waits_for_every_probe_in_flight(void **state) {
    (void)state;
    const enum breaker_outcome last[] = {BREAKER_FAILURE, BREAKER_SUCCESS, BREAKER_IGNORED};
    for (size_t c = 0; c < 3; c++) {
        struct breaker_fixture f;
        breaker *b = half_open_breaker(&f, 4, 3);
        breaker_permit p[4], extra;
        for (int i = 0; i < 4; i++)
            assert_int_equal(breaker_acquire(b, &p[i]), BREAKER_OK);
        for (int i = 0; i < 3; i++)
            assert_int_equal(breaker_complete(b, &p[i], BREAKER_SUCCESS), BREAKER_OK);
        assert_int_equal(breaker_get_state(b), BREAKER_HALF_OPEN);
        /* Slots are free, but the successes are in: no more probes. */
        assert_int_equal(breaker_acquire(b, &extra), BREAKER_REJECTED_HALF_OPEN);
        assert_true(breaker_retry_after_ns(b) > 0);
        assert_int_equal(breaker_complete(b, &p[3], last[c]), BREAKER_OK);
        assert_int_equal(breaker_get_state(b),
                         last[c] == BREAKER_FAILURE ? BREAKER_OPEN : BREAKER_CLOSED);
        fixture_destroy(&f);
    }
}

/* ---- An open wait chosen from the evidence ---------------------------------- */

struct wait_choice {
    unsigned calls;
    breaker_evidence seen;
    unsigned k;
    uint64_t policy;
    uint64_t answer[4]; /* by k */
};

static uint64_t choose_wait(void *ctx, const breaker_evidence *e, unsigned k, uint64_t policy) {
    struct wait_choice *w = ctx;
    w->calls++;
    w->seen = *e;
    w->k = k;
    w->policy = policy;
    return w->answer[k < 4 ? k : 3];
}

/* breaker_set_open_wait(): the function sees each opening's evidence, its
 * backoff level and the policy's wait, and its answer is the wait (0: the
 * policy's; above open_max_ns: open_max_ns). A timed open keeps its own. */
static void an_open_wait_chosen_from_the_evidence(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker_config *cfg = recovery_config(&f, 0);
    cfg->failure_threshold = 3;
    cfg->half_open_successes = 1;
    breaker *b = fixture_create(&f);
    struct wait_choice w = {.answer = {7 * SEC, 10 * 60 * SEC, 0, 0}};
    assert_int_equal(breaker_set_open_wait(b, choose_wait, &w), BREAKER_OK);
    for (int i = 0; i < 3; i++)
        call_ok(b, BREAKER_FAILURE);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    assert_int_equal(w.seen.consecutive_failures, 3);
    assert_int_equal(w.k, 0);
    assert_int_equal(w.policy, 10 * SEC);
    assert_int_equal(breaker_retry_after_ns(b), 7 * SEC); /* its answer */
    fake_clock_advance(&f.clock, 7 * SEC);
    call_ok(b, BREAKER_FAILURE); /* the probe fails: k 1, policy 20 s */
    assert_int_equal(w.k, 1);
    assert_int_equal(w.policy, 20 * SEC);
    assert_int_equal(w.seen.failed_recoveries, 1);
    assert_int_equal(breaker_retry_after_ns(b), 60 * SEC); /* 10 min, cut to open_max */
    fake_clock_advance(&f.clock, 60 * SEC);
    call_ok(b, BREAKER_FAILURE); /* k 2: 0 keeps the policy's 40 s */
    assert_int_equal(breaker_retry_after_ns(b), 40 * SEC);
    unsigned before = w.calls;
    assert_int_equal(breaker_open_for(b, 3 * SEC, BREAKER_REASON_OPERATOR), BREAKER_OK);
    assert_int_equal(w.calls, before); /* a timed open carries its own wait */
    assert_int_equal(breaker_retry_after_ns(b), 3 * SEC);
    fixture_destroy(&f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(recovery_waits_for_every_probe_in_flight),
        cmocka_unit_test(hung_probe_times_out_at_its_deadline_under_low_traffic),
        cmocka_unit_test(open_rejects_until_the_wait_ends),
        cmocka_unit_test(first_acquire_after_the_wait_is_the_probe),
        cmocka_unit_test(half_open_admits_at_most_max_probes),
        cmocka_unit_test(failed_probe_reopens_at_once),
        cmocka_unit_test(ignored_probe_frees_its_slot_without_counting),
        cmocka_unit_test(hung_probe_reopens_the_breaker_at_the_next_call),
        cmocka_unit_test(hung_probe_is_noticed_by_get_state),
        cmocka_unit_test(probe_completed_after_its_deadline_is_stale),
        cmocka_unit_test(repeated_failed_recoveries_grow_the_wait_up_to_the_cap),
        cmocka_unit_test(jitter_stays_within_bounds_and_is_reproducible_with_a_seed),
        cmocka_unit_test(slow_probe_fails_when_slow_calls_trip),
        cmocka_unit_test(probe_limit_holds_across_generation_tag_wraparound),
        cmocka_unit_test(waits_never_wrap_near_the_top_of_the_clock),
        cmocka_unit_test(an_open_wait_chosen_from_the_evidence),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
