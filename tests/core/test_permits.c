/* SPDX-License-Identifier: MIT */
/*
 * test_permits.c - generations make late completions stale, a
 * permit settles once, and a permit is a plain value the caller may move.
 */
#include "breaker_fixture.h"

#include <stdlib.h>

static breaker *consecutive(struct breaker_fixture *f, uint32_t threshold) {
    breaker_config *cfg = fixture_init_consecutive(f, 0, threshold);
    cfg->open_ns = SEC;
    cfg->half_open_successes = 1;
    return fixture_create(f);
}

static void every_transition_increments_the_generation(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker *b = consecutive(&f, 1);
    assert_int_equal(breaker_generation(b), 1);
    call_ok(b, BREAKER_FAILURE); /* -> open */
    assert_int_equal(breaker_generation(b), 2);
    fake_clock_advance(&f.clock, SEC);
    call_ok(b, BREAKER_SUCCESS); /* -> half-open -> closed */
    assert_int_equal(breaker_generation(b), 4);
    assert_int_equal(breaker_reset(b), BREAKER_OK);
    assert_int_equal(breaker_generation(b), 5);
    assert_int_equal(stats_of(b).transitions, 4);
    fixture_destroy(&f);
}

static void completion_from_an_earlier_generation_is_stale(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker *b = consecutive(&f, 2);
    breaker_permit late[10];
    for (int i = 0; i < 10; i++)
        assert_int_equal(breaker_acquire(b, &late[i]), BREAKER_OK);
    call_ok(b, BREAKER_FAILURE);
    call_ok(b, BREAKER_FAILURE); /* trips */
    fake_clock_advance(&f.clock, SEC);
    call_ok(b, BREAKER_SUCCESS); /* recovers */
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    /* Failures admitted before the trip arrive now: they must not decide
     * the new closed state. */
    for (int i = 0; i < 10; i++)
        assert_int_equal(breaker_complete(b, &late[i], BREAKER_FAILURE), BREAKER_STALE);
    breaker_stats st = stats_of(b);
    assert_int_equal(st.state, BREAKER_CLOSED);
    assert_int_equal(st.stale, 10);
    assert_int_equal(st.consecutive_failures, 0);
    assert_int_equal(st.failures, 2);
    fixture_destroy(&f);
}

static void completing_twice_is_already_settled_and_counts_once(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker *b = consecutive(&f, 5);
    breaker_permit p;
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
    assert_int_equal(breaker_complete(b, &p, BREAKER_FAILURE), BREAKER_OK);
    for (int i = 0; i < 10; i++)
        assert_int_equal(breaker_complete(b, &p, BREAKER_FAILURE), BREAKER_ALREADY_SETTLED);
    breaker_stats st = stats_of(b);
    assert_int_equal(st.failures, 1);
    assert_int_equal(st.consecutive_failures, 1);
    assert_int_equal(st.duplicates, 10);
    fixture_destroy(&f);
}

static void already_settled_wins_over_stale(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker *b = consecutive(&f, 1);
    breaker_permit p;
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
    assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_OK);
    assert_int_equal(breaker_reset(b), BREAKER_OK); /* p is now from an old generation */
    assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_ALREADY_SETTLED);
    breaker_permit q;
    assert_int_equal(breaker_acquire(b, &q), BREAKER_OK);
    assert_int_equal(breaker_reset(b), BREAKER_OK);
    assert_int_equal(breaker_complete(b, &q, BREAKER_SUCCESS), BREAKER_STALE);
    assert_int_equal(breaker_complete(b, &q, BREAKER_SUCCESS), BREAKER_ALREADY_SETTLED);
    breaker_stats st = stats_of(b);
    assert_int_equal(st.stale, 1);
    assert_int_equal(st.duplicates, 2);
    fixture_destroy(&f);
}

struct request {
    int id;
    breaker_permit permit; /* stored in the caller's own request state */
};

static void permit_is_a_plain_value_the_caller_may_move(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker *b = consecutive(&f, 3);
    breaker_permit p;
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
    struct request *req = malloc(sizeof(*req));
    assert_non_null(req);
    req->id = 1;
    memcpy(&req->permit, &p, sizeof(p));
    memset(&p, 0xa5, sizeof(p)); /* the original is gone */
    struct request *moved = realloc(req, sizeof(*req) * 4);
    assert_non_null(moved);
    assert_int_equal(breaker_complete(b, &moved->permit, BREAKER_FAILURE), BREAKER_OK);
    assert_int_equal(stats_of(b).failures, 1);
    free(moved);
    fixture_destroy(&f);
}

static void rejected_or_foreign_permits_are_invalid(void **state) {
    (void)state;
    struct breaker_fixture f, g;
    breaker *b = consecutive(&f, 1);
    breaker *other = consecutive(&g, 1);
    breaker_permit p, mine;
    assert_int_equal(breaker_acquire(b, &mine), BREAKER_OK);
    assert_int_equal(breaker_complete(other, &mine, BREAKER_SUCCESS), BREAKER_EINVAL);
    assert_int_equal(breaker_complete(b, &mine, (enum breaker_outcome)42), BREAKER_EINVAL);
    /* Invalid completions leave the permit unsettled. */
    assert_int_equal(breaker_complete(b, &mine, BREAKER_FAILURE), BREAKER_OK);
    assert_int_equal(breaker_acquire(b, &p), BREAKER_REJECTED_OPEN);
    assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_EINVAL);
    breaker_permit garbage;
    memset(&garbage, 0, sizeof(garbage));
    assert_int_equal(breaker_complete(b, &garbage, BREAKER_SUCCESS), BREAKER_EINVAL);
    fixture_destroy(&f);
    fixture_destroy(&g);
}

/* A permit of one breaker completed on another is refused (EINVAL) and counts
 * nothing there, even when the two share the 20-bit tag in the permit's head:
 * among 6000 breakers some pairs always do (about 17 on average), and with
 * only that tag to go by, such a completion was taken for the other breaker's
 * own and counted a failure there. */
static void foreign_permits_are_refused_even_when_tags_collide(void **state) {
    (void)state;
    enum { N = 6000 };
    struct fake_clock clock = {0};
    breaker_config cfg;
    test_config(&cfg, &clock, NULL); /* the same fixed seed for all */
    cfg.trip = BREAKER_TRIP_CONSECUTIVE;
    cfg.failure_threshold = 1;
    breaker **bs = calloc(N, sizeof(*bs));
    breaker_permit *ps = calloc(N, sizeof(*ps));
    assert_non_null(bs);
    assert_non_null(ps);
    for (int i = 0; i < N; i++) {
        bs[i] = make_breaker(&cfg);
        assert_int_equal(breaker_acquire(bs[i], &ps[i]), BREAKER_OK);
    }
    /* Pairs whose heads carry the same tag (bits 8..27; the permit layout is
     * private, which is exactly why a test must look). */
    uint32_t *first = calloc(1u << 20, sizeof(*first)); /* tag -> index + 1 */
    assert_non_null(first);
    int collisions = 0;
    for (int i = 0; i < N; i++) {
        uint32_t tag = (uint32_t)(ps[i].opaque_[0] >> 8) & 0xfffffu;
        if (first[tag] == 0) {
            first[tag] = (uint32_t)i + 1;
            continue;
        }
        int j = (int)first[tag] - 1;
        collisions++;
        breaker_permit foreign = ps[j];
        assert_int_equal(breaker_complete(bs[i], &foreign, BREAKER_FAILURE), BREAKER_EINVAL);
        assert_int_equal(breaker_get_state(bs[i]), BREAKER_CLOSED);
        assert_int_equal(stats_of(bs[i]).failures, 0);
    }
    if (collisions == 0) fail_msg("no two of %d breakers shared a tag: the test saw nothing", N);
    for (int i = 0; i < N; i++) {
        assert_int_equal(breaker_complete(bs[i], &ps[i], BREAKER_SUCCESS), BREAKER_OK);
        test_breaker_destroy(bs[i]);
    }
    free(first);
    free(ps);
    free(bs);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(foreign_permits_are_refused_even_when_tags_collide),
        cmocka_unit_test(every_transition_increments_the_generation),
        cmocka_unit_test(completion_from_an_earlier_generation_is_stale),
        cmocka_unit_test(completing_twice_is_already_settled_and_counts_once),
        cmocka_unit_test(already_settled_wins_over_stale),
        cmocka_unit_test(permit_is_a_plain_value_the_caller_may_move),
        cmocka_unit_test(rejected_or_foreign_permits_are_invalid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
