/* SPDX-License-Identifier: MIT */
/*
 * test_doc_backend_example.c - breaker_backend(3)'s EXAMPLE, a probe gate
 * that admits at most two probes at once across every breaker made with it,
 * run as the page describes it (tests/docs/docs.cmake copies the example out of
 * the page, so the page's code is what runs here), on a fake clock.
 */
#include "test_util.h"

/* The page's function (doc_backend_example.c). */
int make_replica_breakers(const breaker_config *cfg, breaker **out, int n);

static void a_third_probe_is_refused_while_two_are_out_whichever_breakers(void **state) {
    (void)state;
    struct fake_clock clock = {.now = SEC};
    breaker_config cfg;
    test_config(&cfg, &clock, NULL);
    cfg.trip = BREAKER_TRIP_CONSECUTIVE;
    cfg.failure_threshold = 1;
    cfg.open_ns = SEC;
    cfg.open_backoff = 1;
    cfg.half_open_max_probes = 1;
    cfg.half_open_successes = 1;
    cfg.probe_timeout_ns = 10 * SEC; /* below the example's 30 s lease */
    breaker *b[3];
    assert_int_equal(make_replica_breakers(&cfg, b, 3), BREAKER_OK);
    for (int i = 0; i < 3; i++)
        call_ok(b[i], BREAKER_FAILURE); /* each opens */
    fake_clock_advance(&clock, SEC);
    breaker_permit p[3];
    assert_int_equal(breaker_acquire(b[0], &p[0]), BREAKER_OK);
    assert_int_equal(breaker_acquire(b[1], &p[1]), BREAKER_OK);
    assert_true(breaker_permit_is_probe(&p[0]) && breaker_permit_is_probe(&p[1]));
    /* Two probes out, through two breakers: the third breaker's is refused. */
    assert_int_equal(breaker_acquire(b[2], &p[2]), BREAKER_REJECTED_HALF_OPEN);
    /* A completion frees its slot: now the third goes. */
    assert_int_equal(breaker_complete(b[0], &p[0], BREAKER_SUCCESS), BREAKER_OK);
    assert_int_equal(breaker_get_state(b[0]), BREAKER_CLOSED); /* flags 0: it decides */
    assert_int_equal(breaker_acquire(b[2], &p[2]), BREAKER_OK);
    /* Both slots out again (b[1], b[2]); b[1]'s probe is never completed.
     * Its local probe times out at 10 s; its gate slot frees itself at the
     * lease's end (30 s), and a probe goes again. */
    assert_int_equal(breaker_complete(b[2], &p[2], BREAKER_SUCCESS), BREAKER_OK);
    call_ok(b[0], BREAKER_FAILURE);
    call_ok(b[2], BREAKER_FAILURE);
    fake_clock_advance(&clock, SEC);
    assert_int_equal(breaker_acquire(b[0], &p[0]), BREAKER_OK); /* the second slot */
    fake_clock_advance(&clock, 10 * SEC);                       /* both probes past 10 s */
    assert_int_equal(breaker_get_state(b[1]), BREAKER_OPEN);    /* timed out locally */
    assert_int_equal(breaker_complete(b[0], &p[0], BREAKER_FAILURE), BREAKER_STALE);
    /* b[0]'s settle freed its slot; b[1]'s slot is held until 30 s. */
    assert_int_equal(breaker_acquire(b[2], &p[2]), BREAKER_OK);
    breaker_permit q;
    fake_clock_advance(&clock, 2 * SEC); /* b[0]'s and b[1]'s waits are over */
    assert_int_equal(breaker_acquire(b[0], &q), BREAKER_REJECTED_HALF_OPEN);
    fake_clock_advance(&clock, 20 * SEC);                    /* past b[1]'s lease */
    assert_int_equal(breaker_get_state(b[2]), BREAKER_OPEN); /* its probe timed out too */
    assert_int_equal(breaker_acquire(b[0], &q), BREAKER_OK);
    assert_int_equal(breaker_complete(b[0], &q, BREAKER_SUCCESS), BREAKER_OK);
    for (int i = 0; i < 3; i++)
        test_breaker_destroy(b[i]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_third_probe_is_refused_while_two_are_out_whichever_breakers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
