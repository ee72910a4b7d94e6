/* SPDX-License-Identifier: MIT */
/*
 * test_crash_points.c - a breaker in a store file outlives the processes
 * that use it, so any of them may stop for good between two steps of the
 * state machine. White-box: each test leaves the block exactly as a process
 * killed at that point would, then checks that the next caller, in any
 * process, carries on rather than finding the breaker stuck.
 */
#include "test_util.h"

#include "core/internal.h"

static breaker_config probing_config(struct fake_clock *clock) {
    breaker_config cfg;
    test_config(&cfg, clock, NULL);
    cfg.trip = BREAKER_TRIP_CONSECUTIVE;
    cfg.failure_threshold = 1;
    cfg.open_ns = SEC;
    cfg.half_open_max_probes = 1;
    cfg.half_open_successes = 1;
    cfg.probe_timeout_ns = 10 * SEC;
    return cfg;
}

/* The last probe's success was counted in ctl and its slot freed, but its
 * process died before the close check: no probe is in flight, enough have
 * succeeded, and acquire admits no more probes. The next acquire must make
 * the close check itself. */
static void killed_between_freeing_the_slot_and_closing(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker_config cfg = probing_config(&clock);
    breaker *b = make_breaker(&cfg);
    call_ok(b, BREAKER_FAILURE);
    fake_clock_advance(&clock, SEC);
    breaker_permit probe;
    assert_int_equal(breaker_acquire(b, &probe), BREAKER_OK);
    assert_true(breaker_permit_is_probe(&probe));
    /* What the dead process did of its completion: the success in ctl... */
    struct breaker__shared *s = b->shared;
    uint64_t ctl = atomic_load(&s->ctl);
    assert_int_equal(breaker__ctl_state(ctl), BREAKER_HALF_OPEN);
    uint64_t counted = breaker__ctl_pack(breaker__ctl_gen(ctl), BREAKER_HALF_OPEN,
                                         breaker__ctl_k(ctl), breaker__ctl_succ(ctl) + 1);
    assert_true(atomic_compare_exchange_strong(&s->ctl, &ctl, counted));
    /* ...and its slot freed; then nothing. */
    breaker__atomic64 *slot = &breaker__slots(s)[0];
    uint64_t w = atomic_load(slot);
    atomic_store(slot, breaker__slot_free_word(breaker__ctl_gen(ctl), breaker__slot_us(w)));
    /* Another caller: the breaker closes and admits. */
    breaker_permit p;
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
    assert_false(breaker_permit_is_probe(&p));
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_OK);
    /* The dead process's permit, if anyone completed it, is history. */
    assert_int_equal(breaker_complete(b, &probe, BREAKER_SUCCESS), BREAKER_STALE);
    breaker_destroy(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(killed_between_freeing_the_slot_and_closing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
