/* SPDX-License-Identifier: MIT */
/*
 * test_sources.c - request content must not steer a shared breaker: with
 * min_failing_sources set, a trip needs its failures to come from enough
 * distinct callers (breaker_complete_from's source keys), so one caller whose
 * own requests fail cannot open the breaker for everyone, while an outage
 * that fails every caller still trips it.
 */
#include "common/splitmix.h" /* the map's bit for a key, to pick keys on distinct bits */
#include "test_util.h"

static breaker_config sources_config(struct fake_clock *clock, enum breaker_trip trip,
                                     uint32_t min_sources) {
    breaker_config cfg;
    test_config(&cfg, clock, NULL);
    cfg.trip = trip;
    cfg.failure_threshold = 5;
    cfg.window_size = 100;
    cfg.min_calls = 20;
    cfg.failure_rate = 0.5;
    cfg.min_failing_sources = min_sources;
    return cfg;
}

static void call_from(breaker *b, enum breaker_outcome o, uint64_t source) {
    breaker_permit p;
    if (breaker_acquire(b, &p) != BREAKER_OK) return;
    assert_int_equal(breaker_complete_from(b, &p, o, source), BREAKER_OK);
}

/* One abusive caller (source 666) fails every request; nine others are
 * healthy but send less. Without the protection the breaker opens for all;
 * with it, it stays closed. */
static void one_abusive_caller_cannot_open_a_shared_breaker(void **state) {
    (void)state;
    const enum breaker_trip trips[] = {BREAKER_TRIP_CONSECUTIVE, BREAKER_TRIP_COUNT_WINDOW,
                                       BREAKER_TRIP_TIME_WINDOW};
    for (size_t t = 0; t < 3; t++) {
        for (uint32_t protect = 0; protect <= 1; protect++) {
            struct fake_clock clock = {0};
            breaker_config cfg = sources_config(&clock, trips[t], protect ? 3 : 0);
            breaker *b = make_breaker(&cfg);
            for (int i = 0; i < 2000; i++) {
                if (i % 10 < 8)
                    call_from(b, BREAKER_FAILURE, 666);
                else
                    call_from(b, BREAKER_SUCCESS, 1 + (uint64_t)(i % 9));
                fake_clock_advance(&clock, 10 * MS);
            }
            breaker_stats st = stats_of(b);
            if (protect)
                assert_int_equal(st.transitions, 0);
            else
                assert_true(st.transitions > 0); /* tripped by one caller */
            test_breaker_destroy(b);
        }
    }
}

/* An outage fails every caller: the protected breaker still trips, and its
 * evidence says how many callers failed. */
static void an_outage_across_callers_still_trips(void **state) {
    (void)state;
    const enum breaker_trip trips[] = {BREAKER_TRIP_CONSECUTIVE, BREAKER_TRIP_COUNT_WINDOW,
                                       BREAKER_TRIP_TIME_WINDOW};
    for (size_t t = 0; t < 3; t++) {
        struct fake_clock clock = {0};
        struct event_log log = {0};
        breaker_config cfg = sources_config(&clock, trips[t], 3);
        cfg.on_event = event_log_record;
        cfg.event_ctx = &log;
        breaker *b = make_breaker(&cfg);
        for (int i = 0; i < 200 && breaker_get_state(b) == BREAKER_CLOSED; i++) {
            call_from(b, BREAKER_FAILURE, 100 + (uint64_t)(i % 7));
            fake_clock_advance(&clock, 10 * MS);
        }
        assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
        assert_true(log.events[0].evidence.failing_sources >= 3);
        assert_true(log.events[0].evidence.failing_sources <= 8);
        test_breaker_destroy(b);
    }
}

/* Failures without a source set no bit: turning the protection on without
 * naming callers keeps a breaker from tripping, which the manual warns of. */
static void failures_without_a_source_name_no_caller(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker_config cfg = sources_config(&clock, BREAKER_TRIP_CONSECUTIVE, 2);
    breaker *b = make_breaker(&cfg);
    for (int i = 0; i < 50; i++)
        call_ok(b, BREAKER_FAILURE);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    call_from(b, BREAKER_FAILURE, 1);
    call_from(b, BREAKER_FAILURE, 2);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    char msg[128];
    cfg.min_failing_sources = 33;
    assert_int_equal(breaker_config_validate(&cfg, msg, sizeof(msg)), BREAKER_EINVAL);
    assert_non_null(strstr(msg, "min_failing_sources"));
    test_breaker_destroy(b);
}

/* `n` keys whose bits in the 64-bit source map are all different. */
static void keys_on_distinct_bits(uint64_t *keys, uint32_t n) {
    uint64_t used = 0;
    uint32_t got = 0;
    for (uint64_t k = 1; got < n; k++) {
        uint64_t bit = UINT64_C(1) << (breaker__splitmix64(k) & 63u);
        if (used & bit) continue;
        used |= bit;
        keys[got++] = k;
    }
}

/* The bound is exact for every N the API accepts: failures from N - 1
 * sources on distinct bits never trip, whatever their number; one failure
 * from an N-th source trips. (Before, the bits needed were the expected
 * count for N sources: from N = 12 on, N - 1 sources tripped it.) */
static void fewer_than_n_sources_never_trip_for_every_n(void **state) {
    (void)state;
    const enum breaker_trip trips[] = {BREAKER_TRIP_CONSECUTIVE, BREAKER_TRIP_COUNT_WINDOW,
                                       BREAKER_TRIP_TIME_WINDOW};
    uint64_t keys[32];
    keys_on_distinct_bits(keys, 32);
    for (size_t t = 0; t < 3; t++) {
        for (uint32_t n = 2; n <= 32; n++) {
            struct fake_clock clock = {0};
            breaker_config cfg = sources_config(&clock, trips[t], n);
            breaker *b = make_breaker(&cfg);
            for (int i = 0; i < 90; i++)
                call_from(b, BREAKER_FAILURE, keys[(uint32_t)i % (n - 1)]);
            breaker_stats st = stats_of(b);
            if (st.transitions != 0)
                fail_msg("trip %d, N = %u: %u sources tripped it", (int)trips[t], n, n - 1);
            call_from(b, BREAKER_FAILURE, keys[n - 1]);
            if (breaker_get_state(b) != BREAKER_OPEN)
                fail_msg("trip %d, N = %u: %u sources did not trip it", (int)trips[t], n, n);
            test_breaker_destroy(b);
        }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_abusive_caller_cannot_open_a_shared_breaker),
        cmocka_unit_test(fewer_than_n_sources_never_trip_for_every_n),
        cmocka_unit_test(an_outage_across_callers_still_trips),
        cmocka_unit_test(failures_without_a_source_name_no_caller),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
