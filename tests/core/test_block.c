/* SPDX-License-Identifier: MIT */
/*
 * test_block.c - a breaker's shared block before anyone trusts it: the
 * layout is a pure function of the limits, init publishes the magic last,
 * and check refuses, with a message naming the field, every block this
 * library cannot use (wrong magic, layout version, ABI, sizes, offsets,
 * limits), while a bound handle works on a block it did not allocate.
 */
#include "core/block.h"

#include "test_util.h"

#include <math.h>
#include <stdlib.h>

struct fixture {
    struct breaker__limits lim;
    struct breaker__block_layout lay;
    struct breaker__shared *s;
    char msg[256];
};

static struct breaker__limits limits_for(enum breaker_trip trip) {
    breaker_config cfg, eff;
    breaker_config_init(&cfg);
    cfg.trip = trip;
    cfg.half_open_max_probes = 3;
    cfg.seed = 7;
    breaker_config_effective(&cfg, &eff);
    struct breaker__limits lim;
    breaker__limits_from_config(&eff, &lim);
    return lim;
}

static struct fixture *fixture_new(enum breaker_trip trip) {
    struct fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    f->lim = limits_for(trip);
    breaker__block_layout(&f->lim, &f->lay);
    f->s = aligned_alloc(BREAKER__CACHELINE, f->lay.total);
    assert_non_null(f->s);
    memset(f->s, 0, f->lay.total);
    breaker__block_init(f->s, &f->lay, &f->lim, 1000, 42);
    return f;
}

static void fixture_free(struct fixture *f) {
    free(f->s);
    free(f);
}

static void expect_incompatible(struct fixture *f, size_t mapped, const char *field) {
    f->msg[0] = '\0';
    assert_int_equal(breaker__block_check(f->s, mapped, f->msg, sizeof(f->msg)),
                     BREAKER_EINCOMPATIBLE);
    if (strstr(f->msg, field) == NULL) fail_msg("message \"%s\" does not name %s", f->msg, field);
}

static void layout_is_pure_and_in_bounds(void **state) {
    (void)state;
    const enum breaker_trip trips[] = {BREAKER_TRIP_CONSECUTIVE, BREAKER_TRIP_COUNT_WINDOW,
                                       BREAKER_TRIP_TIME_WINDOW};
    for (size_t i = 0; i < 3; i++) {
        struct breaker__limits lim = limits_for(trips[i]);
        struct breaker__block_layout a, b;
        breaker__block_layout(&lim, &a);
        breaker__block_layout(&lim, &b);
        assert_memory_equal(&a, &b, sizeof(a));
        assert_true(a.stripes_off >= sizeof(struct breaker__shared));
        assert_int_equal(a.stripes_off % BREAKER__CACHELINE, 0);
        assert_int_equal(a.slots_off % BREAKER__CACHELINE, 0);
        assert_true(a.slots_off + lim.half_open_max_probes * sizeof(uint64_t) <= a.total);
        /* Exactly one window array, where the trip policy needs it. */
        assert_int_equal(a.buckets_off != 0, trips[i] == BREAKER_TRIP_TIME_WINDOW);
        assert_int_equal(a.ring_off != 0, trips[i] == BREAKER_TRIP_COUNT_WINDOW);
        if (a.ring_off != 0) assert_true(a.ring_off + lim.window_size <= a.slots_off);
        if (a.buckets_off != 0)
            assert_true(a.buckets_off + a.bucket_stride * BREAKER__STRIPES <= a.slots_off);
    }
}

static void a_fresh_block_passes(void **state) {
    (void)state;
    struct fixture *f = fixture_new(BREAKER_TRIP_TIME_WINDOW);
    assert_int_equal(breaker__block_check(f->s, f->lay.total, f->msg, sizeof(f->msg)), BREAKER_OK);
    assert_int_equal(f->s->total_size, f->lay.total);
    assert_int_equal(f->s->abi, BREAKER__ABI);
    fixture_free(f);
}

static void check_refuses_what_it_cannot_use(void **state) {
    (void)state;
    struct fixture *f = fixture_new(BREAKER_TRIP_COUNT_WINDOW);
    struct breaker__shared good = *f->s;

    f->s->magic = 0; /* not initialised (or not a block) */
    expect_incompatible(f, f->lay.total, "magic");
    *f->s = good;
    f->s->layout_version = BREAKER__LAYOUT_VERSION + 1;
    expect_incompatible(f, f->lay.total, "layout_version");
    *f->s = good;
    f->s->abi ^= 1;
    expect_incompatible(f, f->lay.total, "abi");
    *f->s = good;
    f->s->header_size -= 8;
    expect_incompatible(f, f->lay.total, "abi");
    *f->s = good;
    expect_incompatible(f, f->lay.total - 1, "total_size"); /* mapped too short */
    expect_incompatible(f, sizeof(struct breaker__shared) - 1, "mapped");
    f->s->ring_off += BREAKER__CACHELINE;
    expect_incompatible(f, f->lay.total, "offsets");
    *f->s = good;
    f->s->slots_off = f->lay.total; /* would index past the end */
    expect_incompatible(f, f->lay.total, "offsets");
    *f->s = good;
    f->s->lim.half_open_max_probes = BREAKER__MAX_PROBES + 1;
    expect_incompatible(f, f->lay.total, "limits");
    *f->s = good;
    f->s->lim.window_size = 5000; /* a ring larger than the block holds */
    expect_incompatible(f, f->lay.total, "offsets");
    *f->s = good;
    /* Limits no valid configuration gives, and what they would have broken:
     * a success count carrying into k, an undefined cast of the wait. */
    f->s->lim.half_open_successes = 5000;
    expect_incompatible(f, f->lay.total, "half_open_successes");
    *f->s = good;
    f->s->lim.open_backoff = NAN;
    expect_incompatible(f, f->lay.total, "open_backoff");
    *f->s = good;
    f->s->lim.bucket_ns += 1; /* derived: not what window_ns / buckets gives */
    expect_incompatible(f, f->lay.total, "derives");
    *f->s = good;
    /* A state word no state of this library has (the state field has 4
     * bits), or a CLOSED with a low field other than the ramp flag. */
    atomic_store(&f->s->ctl, breaker__ctl_pack(3, 7, 0, 0));
    expect_incompatible(f, f->lay.total, "ctl");
    atomic_store(&f->s->ctl, breaker__ctl_pack(3, 15, 0, 0));
    expect_incompatible(f, f->lay.total, "ctl");
    atomic_store(&f->s->ctl, breaker__ctl_pack(3, BREAKER_CLOSED, 0, 2));
    expect_incompatible(f, f->lay.total, "ctl");
    atomic_store(&f->s->ctl, breaker__ctl_pack(3, BREAKER_HALF_OPEN, 4, 17));
    assert_int_equal(breaker__block_check(f->s, f->lay.total, NULL, 0), BREAKER_OK);
    /* The ramp flag only with a ramp: its share divides by ramp_ns (found
     * by fuzz_store_file: 0/0 on the first call). */
    atomic_store(&f->s->ctl, breaker__ctl_pack(3, BREAKER_CLOSED, 0, BREAKER__RAMP_FLAG));
    expect_incompatible(f, f->lay.total, "ctl");
    *f->s = good;
    assert_int_equal(breaker__block_check(f->s, f->lay.total, NULL, 0), BREAKER_OK);
    fixture_free(f);
}

/* A block at an address not on a cache line is refused before any of its
 * fields is read (its atomics would be undefined): a store entry's offset
 * could say anything (found by fuzz_store_file). */
static void a_misaligned_block_is_refused_before_it_is_read(void **state) {
    (void)state;
    struct fixture *f = fixture_new(BREAKER_TRIP_CONSECUTIVE);
    size_t total = f->lay.total;
    char *mem = aligned_alloc(BREAKER__CACHELINE, total + BREAKER__CACHELINE);
    assert_non_null(mem);
    memcpy(mem + 8, f->s, total);
    f->msg[0] = '\0';
    assert_int_equal(breaker__block_check((const struct breaker__shared *)(void *)(mem + 8), total,
                                          f->msg, sizeof(f->msg)),
                     BREAKER_EINCOMPATIBLE);
    assert_non_null(strstr(f->msg, "aligned"));
    free(mem);
    fixture_free(f);
}

/* breaker_shared_size() is the whole block the breaker's shared state lives
 * in: the planned size, which grows with the window and the probe slots. */
static void shared_size_is_the_planned_block(void **state) {
    (void)state;
    size_t sizes[2];
    for (unsigned i = 0; i < 2; i++) {
        breaker_config cfg, eff;
        breaker_config_init(&cfg);
        cfg.trip = BREAKER_TRIP_COUNT_WINDOW;
        cfg.window_size = i == 0 ? 100 : 100000;
        cfg.half_open_max_probes = i == 0 ? 1 : 64;
        size_t planned = 0;
        assert_int_equal(breaker__block_plan(&cfg, &eff, &planned, NULL, 0), BREAKER_OK);
        breaker *b = NULL;
        assert_int_equal(breaker_create(&cfg, &b), BREAKER_OK);
        sizes[i] = breaker_shared_size(b);
        assert_int_equal(sizes[i], planned);
        breaker_destroy(b);
    }
    assert_true(sizes[1] > sizes[0] + 100000 - 100); /* one byte per slot of the ring, at least */
}

/* A handle bound to a block it did not allocate works on it, in either
 * stripe mode, and two handles on one block share one state. */
static void handles_bound_to_one_block_share_it(void **state) {
    (void)state;
    struct fake_clock clock = {.now = 1000};
    breaker_config cfg;
    test_config(&cfg, &clock, NULL);
    cfg.trip = BREAKER_TRIP_CONSECUTIVE;
    cfg.failure_threshold = 2;
    breaker_config eff;
    breaker_config_effective(&cfg, &eff);
    struct breaker__limits lim;
    breaker__limits_from_config(&eff, &lim);
    struct breaker__block_layout lay;
    breaker__block_layout(&lim, &lay);
    struct breaker__shared *s = aligned_alloc(BREAKER__CACHELINE, lay.total);
    assert_non_null(s);
    memset(s, 0, lay.total);
    breaker__block_init(s, &lay, &lim, clock.now, 99);
    assert_int_equal(breaker__block_check(s, lay.total, NULL, 0), BREAKER_OK);

    struct breaker one, two;
    memset(&one, 0, sizeof(one));
    memset(&two, 0, sizeof(two));
    one.cfg = two.cfg = eff;
    breaker__clock_setup(&one, &lim);
    breaker__clock_setup(&two, &lim);
    breaker__block_bind(&one, s, lay.total, BREAKER__STRIPES_THREAD_OWNED, 0);
    breaker__block_bind(&two, s, lay.total, BREAKER__STRIPES_ATOMIC, 0);

    call_ok(&one, BREAKER_FAILURE);
    call_ok(&two, BREAKER_FAILURE); /* the second failure in a row, seen by both */
    assert_int_equal(breaker_get_state(&one), BREAKER_OPEN);
    assert_int_equal(breaker_get_state(&two), BREAKER_OPEN);
    breaker_permit p;
    assert_int_equal(breaker_acquire(&two, &p), BREAKER_REJECTED_OPEN);
    assert_int_equal(breaker_reset(&one), BREAKER_OK);
    /* A permit of one handle completes through the other: same block. */
    assert_int_equal(breaker_acquire(&one, &p), BREAKER_OK);
    assert_int_equal(breaker_complete(&two, &p, BREAKER_SUCCESS), BREAKER_OK);
    breaker_stats st = stats_of(&one);
    assert_int_equal(st.admitted, 3);
    assert_int_equal(st.failures, 2);
    assert_int_equal(st.successes, 1);
    assert_int_equal(st.rejected_open, 1);
    free(s);
}

/* A ring position past the ring (a block a faulty process wrote after it was
 * checked: the chunk counter, or a stripe's chunk word) never makes a write
 * outside the block (ASan): counters are taken modulo the ring, and a chunk
 * word naming no chunk is replaced by a fresh reservation. */
static void a_ring_index_out_of_range_stays_in_the_ring(void **state) {
    (void)state;
    struct fake_clock clock = {.now = 1000};
    breaker_config cfg;
    test_config(&cfg, &clock, NULL);
    cfg.trip = BREAKER_TRIP_COUNT_WINDOW;
    cfg.window_size = 10;
    cfg.min_calls = 5;
    breaker *b = make_breaker(&cfg);
    atomic_store(&b->shared->ring_next, (UINT64_C(1) << 40) + 3);
    struct breaker__stripe *stripes = breaker__stripes(b->shared);
    for (unsigned i = 0; i < BREAKER__STRIPES; i++)
        atomic_store(&stripes[i].ring_chunk, (UINT64_C(999) << 32) | 7);
    for (int i = 0; i < 25; i++)
        call_ok(b, BREAKER_SUCCESS);
    assert_int_equal(stats_of(b).window_calls, 10);
    test_breaker_destroy(b);
}

/* The generation skips 0 when its 36 bits wrap: ctl is never 0, which the
 * handle's all-ones admit_mask (timed calls, shared blocks) relies on. */
static void the_generation_skips_zero_when_it_wraps(void **state) {
    (void)state;
    struct fake_clock clock = {.now = 1000};
    breaker_config cfg;
    test_config(&cfg, &clock, NULL);
    cfg.slow_call_ns = 5 * MS; /* admit_mask all ones: every acquire reads ctl in full */
    breaker *b = make_breaker(&cfg);
    atomic_store(&b->shared->ctl, breaker__ctl_pack(BREAKER__GEN_MASK, BREAKER_CLOSED, 0, 0));
    assert_int_equal(breaker_reset(b), BREAKER_OK);
    assert_int_equal(breaker_generation(b), 1);
    assert_true(atomic_load(&b->shared->ctl) != 0);
    /* A fast success is not slow: the admission time was taken. */
    breaker_permit p;
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
    assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_OK);
    assert_int_equal(stats_of(b).slow, 0);
    test_breaker_destroy(b);
}

/* The count window's sum of per-stripe shares, read while other threads
 * record, can be torn: one share read before a burst and another after it.
 * Shares wander without bound (a stripe that writes successes over others'
 * failures goes negative), so a torn sum once showed 11341 failures in a
 * window of 100 and tripped a breaker failing 28% of calls at a 60%
 * threshold. Here a stripe's share is moved as a torn read would see it;
 * the trip must rest on the ring's slots, and stats never show a window
 * that cannot exist. */
static void a_torn_share_sum_neither_trips_nor_shows(void **state) {
    (void)state;
    struct fake_clock clock = {.now = 1000};
    static struct event_log log;
    breaker_config cfg;
    test_config(&cfg, &clock, &log);
    cfg.trip = BREAKER_TRIP_COUNT_WINDOW;
    cfg.window_size = 100;
    cfg.min_calls = 100;
    cfg.failure_rate = 0.6;
    breaker *b = make_breaker(&cfg);
    for (int i = 0; i < 100; i++)
        call_ok(b, i % 4 == 0 ? BREAKER_FAILURE : BREAKER_SUCCESS);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    struct breaker__stripe *stripes = breaker__stripes(b->shared);
    /* Plausible but false: 40 more failures than the ring holds (65 of 100). */
    const uint64_t failure = UINT64_C(1) << BREAKER__RING_FIELD_BITS;
    atomic_fetch_add(&stripes[5].ring_part, 40 * failure);
    call_ok(b, BREAKER_FAILURE); /* over slot 0's failure: 25 of 100 */
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    /* Impossible: more failures than calls. Stats read the slots instead. */
    atomic_fetch_add(&stripes[5].ring_part, 10000 * failure);
    breaker_stats st = stats_of(b);
    assert_int_equal(st.window_calls, 100);
    assert_int_equal(st.window_failures, 25);
    call_ok(b, BREAKER_FAILURE);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    /* A real trip still happens, with the ring's evidence. */
    for (int i = 0; i < 60 && breaker_get_state(b) == BREAKER_CLOSED; i++)
        call_ok(b, BREAKER_FAILURE);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    assert_int_equal(atomic_load(&log.count), 1);
    assert_int_equal(log.events[0].evidence.calls, 100);
    assert_int_equal(log.events[0].evidence.failures, 60); /* the first window at 60% */
    test_breaker_destroy(b);
}

/* A transition into CLOSED empties the window before its CAS; one that has
 * already lost (ctl moved) must leave the window alone, since the winner's
 * new period may be recording into it (a 1M-slot window takes milliseconds
 * to empty). */
static void a_losing_close_leaves_the_window_alone(void **state) {
    (void)state;
    struct fake_clock clock = {.now = 1000};
    breaker_config cfg;
    test_config(&cfg, &clock, NULL);
    cfg.trip = BREAKER_TRIP_COUNT_WINDOW;
    cfg.window_size = 100;
    cfg.min_calls = 100;
    breaker *b = make_breaker(&cfg);
    for (int i = 0; i < 10; i++)
        call_ok(b, BREAKER_FAILURE);
    uint64_t ctl = atomic_load(&b->shared->ctl);
    struct breaker__stripe_ref stripe = breaker__thread_stripe(b);
    assert_false(breaker__window_reset(b->shared, stripe, ctl + 1));
    breaker_stats st = stats_of(b);
    assert_int_equal(st.window_calls, 10);
    assert_int_equal(st.window_failures, 10);
    assert_true(breaker__window_reset(b->shared, stripe, ctl));
    st = stats_of(b);
    assert_int_equal(st.window_calls, 0);
    test_breaker_destroy(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(layout_is_pure_and_in_bounds),
        cmocka_unit_test(a_fresh_block_passes),
        cmocka_unit_test(shared_size_is_the_planned_block),
        cmocka_unit_test(check_refuses_what_it_cannot_use),
        cmocka_unit_test(a_misaligned_block_is_refused_before_it_is_read),
        cmocka_unit_test(handles_bound_to_one_block_share_it),
        cmocka_unit_test(a_ring_index_out_of_range_stays_in_the_ring),
        cmocka_unit_test(the_generation_skips_zero_when_it_wraps),
        cmocka_unit_test(a_torn_share_sum_neither_trips_nor_shows),
        cmocka_unit_test(a_losing_close_leaves_the_window_alone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
