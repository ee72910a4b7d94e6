/* SPDX-License-Identifier: MIT */
/*
 * test_sources.c - request content must not steer a shared breaker: with
 * min_failing_sources set, a trip needs its failures to come from enough
 * distinct callers (breaker_complete_from's source keys), so one caller whose
 * own requests fail cannot open the breaker for everyone, while an outage
 * that fails every caller still trips it.
 */
#include "common/splitmix.h" /* the half-open map's bit for a key */
#include "source_keys.h"     /* keys on distinct bits of the window's map */
#include "test_util.h"

#include <stdbool.h>

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
 * healthy but send less. Without the protection (min_failing_sources 1) the
 * breaker opens for all; with it (3, and the default, 0), it stays closed. */
static void one_abusive_caller_cannot_open_a_shared_breaker(void **state) {
    (void)state;
    const enum breaker_trip trips[] = {BREAKER_TRIP_CONSECUTIVE, BREAKER_TRIP_COUNT_WINDOW,
                                       BREAKER_TRIP_TIME_WINDOW};
    const uint32_t settings[] = {1, 3, 0};
    for (size_t t = 0; t < 3; t++) {
        for (uint32_t k = 0; k < 3; k++) {
            uint32_t protect = settings[k] != 1;
            struct fake_clock clock = {0};
            breaker_config cfg = sources_config(&clock, trips[t], settings[k]);
            breaker *b = make_breaker(&cfg);
            for (int i = 0; i < 2000; i++) {
                if (i % 10 < 8)
                    call_from(b, BREAKER_FAILURE, 666);
                else
                    call_from(b, BREAKER_SUCCESS, 1 + (uint64_t)(i % 9));
                fake_clock_advance(&clock, 10 * MS);
            }
            breaker_stats st = stats_of(b);
            if (protect && st.transitions != 0)
                fail_msg("trip %d, min_failing_sources %u: one caller opened it", (int)trips[t],
                         settings[k]);
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
    char msg[160];
    cfg.min_failing_sources = 65;
    assert_int_equal(breaker_config_validate(&cfg, msg, sizeof(msg)), BREAKER_EINVAL);
    assert_non_null(strstr(msg, "min_failing_sources"));
    test_breaker_destroy(b);
}

/* The bound is exact for every N the API accepts: failures from N - 1
 * sources on distinct bits never trip, whatever their number; one failure
 * from an N-th source trips. (Before, the bits needed were the expected
 * count for N sources: from N = 12 on, N - 1 sources tripped it.) */
static void fewer_than_n_sources_never_trip_for_every_n(void **state) {
    (void)state;
    const enum breaker_trip trips[] = {BREAKER_TRIP_CONSECUTIVE, BREAKER_TRIP_COUNT_WINDOW,
                                       BREAKER_TRIP_TIME_WINDOW};
    uint64_t keys[64];
    keys_on_distinct_bits(keys, 64);
    for (size_t t = 0; t < 3; t++) {
        for (uint32_t n = 2; n <= 64; n++) {
            struct fake_clock clock = {0};
            breaker_config cfg = sources_config(&clock, trips[t], n);
            breaker *b = make_breaker(&cfg);
            for (int i = 0; i < 130; i++)
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

/* ---- Recovery no one source can hold back ---------------------------------- */

/* One simulated hour against a dependency that failed for its first minute
 * (every caller's calls fail) and is healthy after: ten callers send a call
 * every 100 ms each; with `attacker`, source 666 also sends one failing
 * request whenever breaker_retry_after_ns() says 0 (the instant it names),
 * before anyone else. @return the other callers' calls refused, per mille. */
static unsigned others_refused_per_mille(uint32_t min_sources, bool attacker) {
    struct fake_clock clock = {0};
    breaker_config cfg = sources_config(&clock, BREAKER_TRIP_CONSECUTIVE, min_sources);
    cfg.open_ns = 5 * SEC;
    cfg.open_max_ns = 60 * SEC;
    cfg.half_open_max_probes = 1;
    cfg.half_open_successes = 3;
    breaker *b = make_breaker(&cfg);
    uint64_t others = 0, refused = 0;
    for (uint64_t t = 0; t < 3600 * SEC; t += 100 * MS) {
        bool outage = t < 60 * SEC;
        if (attacker && breaker_retry_after_ns(b) == 0) {
            breaker_permit p;
            if (breaker_acquire(b, &p) == BREAKER_OK)
                assert_int_equal(breaker_complete_from(b, &p, BREAKER_FAILURE, 666), BREAKER_OK);
        }
        for (uint64_t caller = 1; caller <= 10; caller++) {
            breaker_permit p;
            others++;
            if (breaker_acquire(b, &p) != BREAKER_OK) {
                refused++;
                continue;
            }
            assert_int_equal(
                breaker_complete_from(b, &p, outage ? BREAKER_FAILURE : BREAKER_SUCCESS, caller),
                BREAKER_OK);
        }
        fake_clock_advance(&clock, 100 * MS);
    }
    test_breaker_destroy(b);
    return (unsigned)(refused * 1000 / others);
}

/* The hijacked recovery: one caller that sends a failing request at the
 * instant breaker_retry_after_ns() names took every probe and kept the
 * breaker open for the whole hour (old code: 1000 per mille refused, against
 * 18 without it). Where sources count (min_failing_sources 3, and the
 * default), its failed probes do not reopen on their own: the others'
 * refusals stay near the figure without it; without the protection (1) it
 * still holds the breaker open, as the manual says. */
static void one_caller_cannot_hold_recovery_back(void **state) {
    (void)state;
    const uint32_t settings[] = {3, 0};
    for (size_t i = 0; i < 2; i++) {
        unsigned quiet = others_refused_per_mille(settings[i], false);
        unsigned attacked = others_refused_per_mille(settings[i], true);
        print_message("min_failing_sources %u: others refused %u per mille, %u with the attacker\n",
                      settings[i], quiet, attacked);
        if (attacked > quiet + 5)
            fail_msg("min_failing_sources %u: the attacker raised refusals from %u to %u per mille",
                     settings[i], quiet, attacked);
    }
    assert_true(others_refused_per_mille(1, true) > 900);
}

/* `n` keys whose bits in a half-open's 48-bit map (splitmix64 mod 48) are
 * all different. */
static void keys_on_distinct_probe_bits(uint64_t *keys, uint32_t n) {
    uint64_t used = 0;
    uint32_t got = 0;
    for (uint64_t k = 1; got < n; k++) {
        uint64_t bit = UINT64_C(1) << (breaker__splitmix64(k) % 48u);
        if (used & bit) continue;
        used |= bit;
        keys[got++] = k;
    }
}

/* A breaker with min_failing_sources `n`, opened by failures from 64
 * sources, and the clock moved to the end of its wait. */
static breaker *opened(struct fake_clock *clock, uint32_t n) {
    breaker_config cfg = sources_config(clock, BREAKER_TRIP_CONSECUTIVE, n);
    cfg.half_open_max_probes = 1;
    cfg.half_open_successes = 2;
    breaker *b = make_breaker(&cfg);
    uint64_t keys[64];
    keys_on_distinct_bits(keys, 64);
    for (uint32_t i = 0; i < 64 && breaker_get_state(b) == BREAKER_CLOSED; i++)
        call_from(b, BREAKER_FAILURE, keys[i]);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    fake_clock_advance(clock, breaker_retry_after_ns(b));
    return b;
}

/* The reopening bound is exact too: failed probes from fewer than N sources
 * (at most 48) on distinct bits never reopen a half-open breaker, and leave
 * its successes counting; the N-th source reopens it. A failed probe without
 * a source reopens at once, as before. */
static void fewer_than_n_failed_probe_sources_never_reopen(void **state) {
    (void)state;
    uint64_t keys[48];
    keys_on_distinct_probe_bits(keys, 48);
    for (uint32_t n = 2; n <= 64; n++) {
        uint32_t needed = n < 48 ? n : 48;
        struct fake_clock clock = {0};
        breaker *b = opened(&clock, n);
        for (uint32_t i = 0; i + 1 < needed; i++) {
            call_from(b, BREAKER_FAILURE, keys[i]);
            call_from(b, BREAKER_FAILURE, keys[i]); /* the same source again */
            if (breaker_get_state(b) != BREAKER_HALF_OPEN)
                fail_msg("N = %u: %u failed probe sources reopened it", n, i + 1);
        }
        call_from(b, BREAKER_FAILURE, keys[needed - 1]);
        if (breaker_get_state(b) != BREAKER_OPEN)
            fail_msg("N = %u: %u failed probe sources did not reopen it", n, needed);
        /* A new half-open starts an empty map. */
        fake_clock_advance(&clock, breaker_retry_after_ns(b));
        call_from(b, BREAKER_FAILURE, keys[0]);
        assert_int_equal(breaker_get_state(b), BREAKER_HALF_OPEN);
        call_ok(b, BREAKER_FAILURE); /* no source */
        assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
        test_breaker_destroy(b);
    }
    /* Held failures do not reset the successes. */
    struct fake_clock clock = {0};
    breaker *b = opened(&clock, 3);
    call_from(b, BREAKER_SUCCESS, 1);
    call_from(b, BREAKER_FAILURE, keys[0]);
    call_from(b, BREAKER_SUCCESS, 2);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    test_breaker_destroy(b);
}

/* ---- A retry hint that does not name the probe instant -------------------- */

/* The outward hint is never shorter than the exact wait, points at the same
 * instant however often and whenever it is asked within a generation (so
 * asking many times reveals nothing more), and that instant lies up to a
 * quarter of the wait (here 7.5 s of 30 s) after the probe instant, drawn
 * anew each generation: over 200 trips it is a second or more late in most
 * of them. FORCED_OPEN says UINT64_MAX, an admitting breaker 0. */
static void the_retry_hint_hides_the_probe_instant(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker_config cfg = sources_config(&clock, BREAKER_TRIP_CONSECUTIVE, 1);
    cfg.failure_threshold = 1;
    cfg.open_ns = 30 * SEC;
    cfg.open_backoff = 1.0;
    cfg.half_open_successes = 1;
    breaker *b = make_breaker(&cfg);
    assert_int_equal(breaker_retry_after_hint_s(b), 0);
    unsigned late = 0, early_half = 0;
    for (int trip = 0; trip < 200; trip++) {
        call_ok(b, BREAKER_FAILURE);
        assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
        uint64_t probe_at = breaker_now_ns(b) + breaker_retry_after_ns(b);
        uint64_t named_min = UINT64_MAX, named_max = 0;
        while (breaker_retry_after_ns(b) > 0) {
            uint64_t exact = breaker_retry_after_ns(b);
            uint64_t hint = breaker_retry_after_hint_s(b);
            if (hint * SEC < exact || hint == 0)
                fail_msg("trip %d: hint %llu s under the exact %llu ns", trip,
                         (unsigned long long)hint, (unsigned long long)exact);
            uint64_t named = breaker_now_ns(b) + hint * SEC;
            if (named < named_min) named_min = named;
            if (named > named_max) named_max = named;
            fake_clock_advance(&clock, 97 * MS);
        }
        /* One point, counted down in whole seconds. */
        assert_true(named_max - named_min < SEC);
        assert_true(named_min >= probe_at);
        assert_true(named_min <= probe_at + 30 * SEC / 4 + SEC);
        late += named_min - probe_at >= SEC;
        early_half += named_min - probe_at < 30 * SEC / 8;
        call_ok(b, BREAKER_SUCCESS); /* the probe closes it */
        assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    }
    print_message("hint a second or more past the probe instant in %u of 200 trips, "
                  "in the first half of its spread in %u\n",
                  late, early_half);
    assert_true(late > 120);
    assert_in_range(early_half, 50, 150);
    assert_int_equal(breaker_force_open(b), BREAKER_OK);
    assert_int_equal(breaker_retry_after_hint_s(b), UINT64_MAX);
    test_breaker_destroy(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_abusive_caller_cannot_open_a_shared_breaker),
        cmocka_unit_test(fewer_than_n_sources_never_trip_for_every_n),
        cmocka_unit_test(an_outage_across_callers_still_trips),
        cmocka_unit_test(failures_without_a_source_name_no_caller),
        cmocka_unit_test(one_caller_cannot_hold_recovery_back),
        cmocka_unit_test(fewer_than_n_failed_probe_sources_never_reopen),
        cmocka_unit_test(the_retry_hint_hides_the_probe_instant),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
