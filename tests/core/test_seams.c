/* SPDX-License-Identifier: MIT */
/*
 * test_seams.c - the seams a shared store builds on, and the defects found
 * while drawing them: a breaker's identity is its handle's (never its
 * configuration's), a probe slot claim is unique per admission, and a block
 * is checked before it is used.
 */
#define BREAKER_BACKEND_EXPERIMENTAL
#include <breaker/backend.h>

#include "breaker_fixture.h"

#include <breaker/registry.h>

/* ---- Identity: the registry recognises its breakers by their handle ------- */

static unsigned user_events;
static void count_user_event(void *ctx, breaker *b, const breaker_event *ev) {
    (void)ctx;
    (void)b;
    (void)ev;
    user_events++;
}

static void copy_of_registry_config_is_not_the_registrys(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker_registry_config rc;
    breaker_registry_config_init(&rc);
    test_config(&rc.defaults, &clock, NULL);
    rc.defaults.on_event = count_user_event;
    rc.defaults.event_ctx = &user_events;
    rc.clock = fake_clock_read;
    rc.clock_ctx = &clock;
    breaker_registry *reg = NULL;
    assert_int_equal(breaker_registry_create(&rc, &reg), BREAKER_OK);
    breaker *real = NULL;
    assert_int_equal(breaker_registry_get(reg, "payments", &real), BREAKER_OK);

    /* The configuration hands back the user's own callback. */
    breaker_config cfg;
    breaker_get_config(real, &cfg);
    assert_ptr_equal(cfg.on_event, count_user_event);
    assert_ptr_equal(cfg.event_ctx, &user_events);

    /* A breaker made from it is nobody's. */
    breaker *copy = make_breaker(&cfg);
    assert_null(breaker_registry_name(reg, copy));
    assert_int_equal(breaker_registry_release(reg, copy), BREAKER_EINVAL);
    breaker_registry_info info;
    assert_int_equal(breaker_registry_info_get(reg, copy, &info, NULL, 0), BREAKER_EINVAL);

    /* Its transitions reach the user's callback and not the registry's
     * history of the real breaker. */
    user_events = 0;
    assert_int_equal(breaker_force_open(copy), BREAKER_OK);
    assert_int_equal(user_events, 1);
    breaker_event hist[8];
    assert_int_equal(breaker_registry_info_get(reg, real, &info, hist, 8), BREAKER_OK);
    assert_int_equal(info.history_len, 0);
    assert_int_equal(breaker_get_state(real), BREAKER_CLOSED);

    /* The real breaker's own transitions still reach both. */
    assert_int_equal(breaker_force_open(real), BREAKER_OK);
    assert_int_equal(user_events, 2);
    assert_int_equal(breaker_registry_info_get(reg, real, &info, hist, 8), BREAKER_OK);
    assert_int_equal(info.history_len, 1);
    assert_string_equal(breaker_registry_name(reg, real), "payments");

    /* The real reference is still there to release, once. */
    assert_int_equal(breaker_registry_release(reg, real), BREAKER_OK);
    test_breaker_destroy(copy);
    breaker_registry_destroy(reg);
}

/* ---- Probe slots: one claim per admission ---------------------------------- */

/* Open a breaker (one failure trips it) whose half-open admits one probe at a
 * time and needs `successes` of them, and move to the end of the wait. The
 * clock then stands still: every admission below falls in one microsecond. */
static breaker *half_open_breaker(struct breaker_fixture *f, uint32_t successes) {
    (void)fixture_init_one_failure_opens(f, 1000 * SEC, 1 * SEC, successes);
    breaker *b = fixture_create(f);
    fixture_trip_to_half_open(f);
    return b;
}

static void completed_copy_cannot_free_a_newer_probes_slot(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker *b = half_open_breaker(&f, 3);
    breaker_permit first, copy, second, third;
    assert_int_equal(breaker_acquire(b, &first), BREAKER_OK);
    copy = first;
    assert_int_equal(breaker_complete(b, &first, BREAKER_SUCCESS), BREAKER_OK);
    /* The next probe takes the same slot in the same microsecond. */
    assert_int_equal(breaker_acquire(b, &second), BREAKER_OK);
    assert_true(breaker_permit_is_probe(&second));
    /* The copy of the first probe's permit is a duplicate: it must not free
     * the second probe's slot... */
    assert_int_equal(breaker_complete(b, &copy, BREAKER_SUCCESS), BREAKER_ALREADY_SETTLED);
    /* ...so the limit of one probe in flight still holds. */
    assert_int_equal(breaker_acquire(b, &third), BREAKER_REJECTED_HALF_OPEN);
    breaker_stats st = stats_of(b);
    assert_int_equal(st.probes_in_flight, 1);
    assert_int_equal(st.probes_admitted, 2);
    assert_int_equal(st.probes_succeeded, 1);
    assert_int_equal(breaker_complete(b, &second, BREAKER_SUCCESS), BREAKER_OK);
    fixture_destroy(&f);
}

static void completed_copy_cannot_close_the_breaker(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker *b = half_open_breaker(&f, 2);
    breaker_permit first, copy, second;
    assert_int_equal(breaker_acquire(b, &first), BREAKER_OK);
    copy = first;
    assert_int_equal(breaker_complete(b, &first, BREAKER_SUCCESS), BREAKER_OK);
    assert_int_equal(breaker_acquire(b, &second), BREAKER_OK);
    /* A second success would close the breaker: the copy's must not count. */
    assert_int_equal(breaker_complete(b, &copy, BREAKER_SUCCESS), BREAKER_ALREADY_SETTLED);
    assert_int_equal(breaker_get_state(b), BREAKER_HALF_OPEN);
    /* The live probe's failure is what decides, and it reopens. */
    assert_int_equal(breaker_complete(b, &second, BREAKER_FAILURE), BREAKER_OK);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    fixture_destroy(&f);
}

/* Many probes through one slot in one microsecond: each claim is distinct,
 * and the deadline of each is never earlier than probe_timeout after its
 * admission (the 1 us steps only ever move it later). */
static void same_microsecond_probes_each_get_their_own_claim(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker *b = half_open_breaker(&f, 1000);
    breaker_permit copies[50];
    for (int i = 0; i < 50; i++) {
        breaker_permit p;
        assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
        copies[i] = p;
        assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_OK);
    }
    breaker_permit live;
    assert_int_equal(breaker_acquire(b, &live), BREAKER_OK);
    for (int i = 0; i < 50; i++)
        assert_int_equal(breaker_complete(b, &copies[i], BREAKER_SUCCESS), BREAKER_ALREADY_SETTLED);
    assert_int_equal(stats_of(b).probes_in_flight, 1);
    /* The live probe, 51st in its slot this microsecond, times out no earlier
     * than 10 s after admission and no later than 51 us after that. */
    fake_clock_advance(&f.clock, 10 * SEC - 1);
    assert_int_equal(breaker_get_state(b), BREAKER_HALF_OPEN);
    fake_clock_advance(&f.clock, 1 + 51 * 1000);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    fixture_destroy(&f);
}

/* ---- Evidence from outside the call path --------------------------------- */

static void outside_trip_opens_through_the_normal_transition(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker_config *cfg = fixture_init(&f, 5 * SEC);
    cfg->open_ns = 2 * SEC;
    breaker *b = fixture_create(&f);
    uint64_t gen = breaker_generation(b);
    breaker_evidence ev = {.calls = 400, .failures = 300, .failure_rate = 0.75};
    assert_int_equal(breaker_trip_outside(b, gen, &ev), BREAKER_OK);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    assert_int_equal(fixture_events(&f), 1);
    assert_int_equal(f.log.events[0].from, BREAKER_CLOSED);
    assert_int_equal(f.log.events[0].to, BREAKER_OPEN);
    assert_int_equal(f.log.events[0].reason, BREAKER_REASON_OUTSIDE_TRIP);
    assert_int_equal(f.log.events[0].evidence.calls, 400);
    assert_int_equal(f.log.events[0].evidence.failures, 300);
    assert_int_equal(f.log.events[0].open_ns, 2 * SEC); /* the first trip's wait */
    assert_int_equal(f.log.events[0].time_ns, 5 * SEC);
    assert_string_equal(breaker_reason_name(BREAKER_REASON_OUTSIDE_TRIP), "outside_trip");
    /* From here on it recovers like any breaker. */
    breaker_permit p;
    assert_int_equal(breaker_acquire(b, &p), BREAKER_REJECTED_OPEN);
    fake_clock_advance(&f.clock, 2 * SEC);
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
    assert_true(breaker_permit_is_probe(&p));
    assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_OK);
    fixture_destroy(&f);
}

/* A follower of an outside open whose wait is already running waits what is
 * left of it, not its own first wait. */
static void outside_trip_for_a_given_wait_probes_when_it_ends(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker_config *cfg = fixture_init(&f, 5 * SEC);
    cfg->open_ns = 60 * SEC;
    cfg->open_backoff = 1;
    breaker *b = fixture_create(&f);
    assert_int_equal(breaker_trip_outside_for(b, breaker_generation(b), 300 * MS, NULL),
                     BREAKER_OK);
    assert_int_equal(f.log.events[0].open_ns, 300 * MS);
    assert_int_equal(f.log.events[0].reason, BREAKER_REASON_OUTSIDE_TRIP);
    breaker_permit p;
    fake_clock_advance(&f.clock, 300 * MS - 1);
    assert_int_equal(breaker_acquire(b, &p), BREAKER_REJECTED_OPEN);
    fake_clock_advance(&f.clock, 1);
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
    assert_true(breaker_permit_is_probe(&p));
    /* A failed probe reopens with the breaker's own backoff, not the given wait. */
    assert_int_equal(breaker_complete(b, &p, BREAKER_FAILURE), BREAKER_OK);
    assert_int_equal(f.log.events[2].open_ns, 60 * SEC);
    fixture_destroy(&f);
}

/* ---- The probe gate (breaker/backend.h) ------------------------------------ */

struct gate_log {
    int admits, settles;
    int refuse;                         /* admit answers this when non-zero */
    uint64_t next_token;                /* admit gives this token */
    uint64_t settled_token;             /* the last settle's */
    enum breaker_outcome settled;       /* the last settle's outcome */
    enum breaker_state state_at_settle; /* the local breaker's, when settle ran */
};

static int gate_admit(void *ctx, breaker *b, uint64_t *token) {
    (void)b;
    struct gate_log *g = ctx;
    g->admits++;
    assert_int_equal(*token, 0);
    if (g->refuse) return g->refuse;
    *token = g->next_token;
    return BREAKER_OK;
}

static void gate_settle(void *ctx, breaker *b, uint64_t token, enum breaker_outcome outcome) {
    struct gate_log *g = ctx;
    g->settles++;
    g->settled_token = token;
    g->settled = outcome;
    g->state_at_settle = breaker_state_peek(b);
}

static breaker *gated_breaker(struct breaker_fixture *f, struct gate_log *g, unsigned flags) {
    breaker_config *cfg = fixture_init_one_failure_opens(f, SEC, SEC, 1);
    breaker_probe_gate gate = {
        .admit = gate_admit, .settle = gate_settle, .ctx = g, .flags = flags};
    assert_int_equal(breaker_create_bound(cfg, NULL, &gate, &f->b), BREAKER_OK);
    return f->b;
}

/* Closed calls and open refusals never ask the gate; the probe does, in
 * both places one is admitted (the OPEN -> HALF_OPEN winner, and a free slot
 * of HALF_OPEN after a refused probe gave its slot back). A refusal is
 * counted as a refusal, not as a probe (a follower of a fleet open refuses
 * this way on every call). */
static void the_gate_is_asked_for_probes_only_and_a_refusal_frees_the_slot(void **state) {
    (void)state;
    struct breaker_fixture f;
    struct gate_log g = {.refuse = BREAKER_REJECTED_HALF_OPEN};
    breaker *b = gated_breaker(&f, &g, 0);
    call_ok(b, BREAKER_SUCCESS);
    call_ok(b, BREAKER_FAILURE); /* trips */
    breaker_permit p;
    assert_int_equal(breaker_acquire(b, &p), BREAKER_REJECTED_OPEN);
    assert_int_equal(g.admits, 0);
    fake_clock_advance(&f.clock, SEC);
    /* The winner of OPEN -> HALF_OPEN: refused by the gate. */
    assert_int_equal(breaker_acquire(b, &p), BREAKER_REJECTED_HALF_OPEN);
    assert_int_equal(g.admits, 1);
    assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_EINVAL); /* refused */
    assert_int_equal(breaker_get_state(b), BREAKER_HALF_OPEN);
    breaker_stats st = stats_of(b);
    assert_int_equal(st.probes_in_flight, 0); /* the slot is free again */
    /* An open refusal from the gate is passed on as such. */
    g.refuse = BREAKER_REJECTED_OPEN;
    assert_int_equal(breaker_acquire(b, &p), BREAKER_REJECTED_OPEN);
    /* Anything else the gate answers is a half-open refusal. */
    g.refuse = BREAKER_EIO;
    assert_int_equal(breaker_acquire(b, &p), BREAKER_REJECTED_HALF_OPEN);
    assert_int_equal(g.admits, 3);
    /* A refused probe is a refusal, never an admission: nothing admitted
     * or ignored, two half-open refusals and two open ones (the breaker's
     * own and the gate's). */
    st = stats_of(b);
    assert_int_equal(st.probes_admitted, 0);
    assert_int_equal(st.ignored, 0);
    assert_int_equal(st.admitted, st.successes + st.failures);
    assert_int_equal(st.rejected_half_open, 2);
    assert_int_equal(st.rejected_open, 2);
    /* Admitted with a token: the permit carries it, settle gets it back. */
    g.refuse = 0;
    g.next_token = 0xfeed;
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
    assert_true(breaker_permit_is_probe(&p));
    assert_int_equal(breaker_permit_gate_token(&p), 0xfeed);
    breaker_permit copy = p;
    assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_OK);
    assert_int_equal(g.settles, 1);
    assert_int_equal(g.settled_token, 0xfeed);
    assert_int_equal(g.settled, BREAKER_SUCCESS);
    /* Told after the local breaker applied it: already closed. */
    assert_int_equal(g.state_at_settle, BREAKER_CLOSED);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    /* A copy completed after the breaker moved on is STALE, and reaches
     * settle again with the same token (settle is idempotent per token). */
    assert_int_equal(breaker_complete(b, &copy, BREAKER_SUCCESS), BREAKER_STALE);
    assert_int_equal(g.settles, 2);
    assert_int_equal(g.settled_token, 0xfeed);
    /* Closed calls: no gate, no token. */
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
    assert_int_equal(breaker_permit_gate_token(&p), 0);
    assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_OK);
    assert_int_equal(g.admits, 4);
    assert_int_equal(g.settles, 2);
    fixture_destroy(&f);
}

/* Within the probe's generation a copy of its permit is a duplicate
 * (ALREADY_SETTLED) and never reaches settle. */
static void a_duplicate_within_the_generation_never_reaches_settle(void **state) {
    (void)state;
    struct breaker_fixture f;
    struct gate_log g = {.next_token = 9};
    breaker *b = gated_breaker(&f, &g, BREAKER_GATE_DECIDES_RECOVERY);
    fixture_trip_to_half_open(&f);
    breaker_permit p;
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
    breaker_permit copy = p;
    assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_OK);
    assert_int_equal(breaker_get_state(b), BREAKER_HALF_OPEN); /* recorded as IGNORED */
    assert_int_equal(breaker_complete(b, &copy, BREAKER_SUCCESS), BREAKER_ALREADY_SETTLED);
    assert_int_equal(g.settles, 1);
    fixture_destroy(&f);
}

/* BREAKER_GATE_DECIDES_RECOVERY: a tokened success is recorded as IGNORED
 * (the fleet decides recovery), a failure as a failure; CANCELLED reaches
 * settle already mapped through cancelled_as; a stale completion still
 * tells the gate. */
static void the_gate_decides_what_a_settled_probe_records(void **state) {
    (void)state;
    struct breaker_fixture f;
    struct gate_log g = {.next_token = 7};
    breaker *b = gated_breaker(&f, &g, BREAKER_GATE_DECIDES_RECOVERY);
    fixture_trip_to_half_open(&f);
    breaker_permit p;
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
    assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_OK);
    assert_int_equal(g.settled, BREAKER_SUCCESS);
    assert_int_equal(breaker_get_state(b), BREAKER_HALF_OPEN); /* recorded as IGNORED */
    assert_int_equal(stats_of(b).probes_succeeded, 0);
    /* A cancellation arrives as cancelled_as says (IGNORED by default). */
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
    assert_int_equal(breaker_complete(b, &p, BREAKER_CANCELLED), BREAKER_OK);
    assert_int_equal(g.settled, BREAKER_IGNORED);
    assert_int_equal(stats_of(b).cancelled, 1);
    /* A probe completed after the breaker moved on: STALE, and settle knows. */
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
    assert_int_equal(breaker_trip_outside(b, breaker_generation(b), NULL), BREAKER_STALE);
    assert_int_equal(breaker_reset(b), BREAKER_OK);
    int before = g.settles;
    assert_int_equal(breaker_complete(b, &p, BREAKER_FAILURE), BREAKER_STALE);
    assert_int_equal(g.settles, before + 1);
    assert_int_equal(g.settled, BREAKER_FAILURE);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    fixture_destroy(&f);
}

/* A named caller's failed probe reaches the gate as the FAILURE it is and
 * reopens: a backend that decides recovery (the fleet) hears what the
 * breaker itself decided, whoever's probe it was. */
static void a_named_failed_probe_settles_as_a_failure(void **state) {
    (void)state;
    struct fake_clock clock = {.now = SEC};
    struct event_log log = {0};
    struct gate_log g = {.next_token = 5};
    breaker_config cfg;
    test_config(&cfg, &clock, &log);
    cfg.open_ns = SEC;
    cfg.half_open_max_probes = 1;
    cfg.half_open_successes = 1;
    cfg.min_failing_sources = 3;
    breaker_probe_gate gate = {.admit = gate_admit,
                               .settle = gate_settle,
                               .ctx = &g,
                               .flags = BREAKER_GATE_DECIDES_RECOVERY};
    breaker *b = NULL;
    assert_int_equal(breaker_create_bound(&cfg, NULL, &gate, &b), BREAKER_OK);
    assert_int_equal(breaker_trip_outside(b, breaker_generation(b), NULL), BREAKER_OK);
    fake_clock_advance(&clock, SEC);
    /* A named caller probes from its own point after the wait, which its
     * hint names (breaker.c, "Turns after the wait"). */
    fake_clock_advance(&clock, breaker_retry_after_hint_from(b, 42) * SEC);
    breaker_permit p;
    assert_int_equal(breaker_acquire_from(b, &p, 42), BREAKER_OK);
    assert_int_equal(breaker_complete_from(b, &p, BREAKER_FAILURE, 42), BREAKER_OK);
    assert_int_equal(g.settles, 1);
    assert_int_equal(g.settled, BREAKER_FAILURE);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    test_breaker_destroy(b);
}

static void outside_trip_is_fenced_by_generation(void **state) {
    (void)state;
    struct breaker_fixture f;
    (void)fixture_init(&f, 5 * SEC);
    breaker *b = fixture_create(&f);
    uint64_t gen = breaker_generation(b);
    /* A decision about an earlier closed period: the breaker was reset. */
    assert_int_equal(breaker_reset(b), BREAKER_OK);
    assert_int_equal(breaker_trip_outside(b, gen, NULL), BREAKER_STALE);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    /* A future generation is no better. */
    assert_int_equal(breaker_trip_outside(b, breaker_generation(b) + 1, NULL), BREAKER_STALE);
    /* Already open: the second decision finds nothing to do. */
    gen = breaker_generation(b);
    assert_int_equal(breaker_trip_outside(b, gen, NULL), BREAKER_OK);
    assert_int_equal(breaker_trip_outside(b, gen, NULL), BREAKER_STALE);
    assert_int_equal(breaker_trip_outside(b, breaker_generation(b), NULL), BREAKER_STALE);
    /* Forced closed ignores trips, from outside as from calls. */
    assert_int_equal(breaker_force_closed(b), BREAKER_OK);
    assert_int_equal(breaker_trip_outside(b, breaker_generation(b), NULL), BREAKER_STALE);
    assert_int_equal(breaker_get_state(b), BREAKER_FORCED_CLOSED);
    assert_int_equal(fixture_events(&f), 3); /* reset, outside trip, forced closed */
    fixture_destroy(&f);
}

static void outside_close_closes_through_the_normal_transition(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker_config *cfg = fixture_init(&f, 5 * SEC);
    cfg->open_ns = 2 * SEC;
    breaker *b = fixture_create(&f);
    assert_int_equal(breaker_trip_outside(b, breaker_generation(b), NULL), BREAKER_OK);
    /* From OPEN: closed at once, the wait not over. */
    uint64_t gen = breaker_generation(b);
    breaker_evidence ev = {.probe_successes = 3};
    assert_int_equal(breaker_close_outside(b, gen, &ev), BREAKER_OK);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    assert_true(breaker_generation(b) > gen);
    assert_int_equal(fixture_events(&f), 2);
    assert_int_equal(f.log.events[1].from, BREAKER_OPEN);
    assert_int_equal(f.log.events[1].to, BREAKER_CLOSED);
    assert_int_equal(f.log.events[1].reason, BREAKER_REASON_OUTSIDE_CLOSE);
    assert_int_equal(f.log.events[1].evidence.probe_successes, 3);
    assert_int_equal(f.log.events[1].evidence.failed_recoveries, 0);
    assert_string_equal(breaker_reason_name(BREAKER_REASON_OUTSIDE_CLOSE), "outside_close");
    /* The window starts empty: the calls of the open period are not in it. */
    breaker_permit p;
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
    assert_false(breaker_permit_is_probe(&p));
    assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_OK);
    /* From HALF_OPEN with a local probe out: closed; the probe is stale. */
    assert_int_equal(breaker_trip_outside(b, breaker_generation(b), NULL), BREAKER_OK);
    fake_clock_advance(&f.clock, 2 * SEC);
    breaker_permit probe;
    assert_int_equal(breaker_acquire(b, &probe), BREAKER_OK);
    assert_true(breaker_permit_is_probe(&probe));
    assert_int_equal(breaker_get_state(b), BREAKER_HALF_OPEN);
    assert_int_equal(breaker_close_outside(b, breaker_generation(b), NULL), BREAKER_OK);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    assert_int_equal(breaker_complete(b, &probe, BREAKER_FAILURE), BREAKER_STALE);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    assert_int_equal(f.log.events[4].from, BREAKER_HALF_OPEN);
    assert_int_equal(f.log.events[4].reason, BREAKER_REASON_OUTSIDE_CLOSE);
    fixture_destroy(&f);
}

static void outside_close_is_fenced_by_generation(void **state) {
    (void)state;
    struct breaker_fixture f;
    (void)fixture_init(&f, 5 * SEC);
    breaker *b = fixture_create(&f);
    /* CLOSED: nothing to close. */
    assert_int_equal(breaker_close_outside(b, breaker_generation(b), NULL), BREAKER_STALE);
    /* The store saw it open in `gen`; meanwhile it was reset and tripped
     * again on its own evidence: the old decision must not close it. */
    assert_int_equal(breaker_trip_outside(b, breaker_generation(b), NULL), BREAKER_OK);
    uint64_t gen = breaker_generation(b);
    assert_int_equal(breaker_reset(b), BREAKER_OK);
    assert_int_equal(breaker_trip_outside(b, breaker_generation(b), NULL), BREAKER_OK);
    assert_int_equal(breaker_close_outside(b, gen, NULL), BREAKER_STALE);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    /* A future generation is no better; the current one closes, once. */
    assert_int_equal(breaker_close_outside(b, breaker_generation(b) + 1, NULL), BREAKER_STALE);
    gen = breaker_generation(b);
    assert_int_equal(breaker_close_outside(b, gen, NULL), BREAKER_OK);
    assert_int_equal(breaker_close_outside(b, gen, NULL), BREAKER_STALE);
    /* Forced states are the operator's: never closed from outside. */
    assert_int_equal(breaker_force_open(b), BREAKER_OK);
    assert_int_equal(breaker_close_outside(b, breaker_generation(b), NULL), BREAKER_STALE);
    assert_int_equal(breaker_get_state(b), BREAKER_FORCED_OPEN);
    /* trip, reset, trip, close, forced open */
    assert_int_equal(fixture_events(&f), 5);
    fixture_destroy(&f);
}

static void outside_close_starts_a_ramp_like_a_recovery(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker_config *cfg = fixture_init(&f, 5 * SEC);
    cfg->ramp_ns = 10 * SEC;
    cfg->ramp_start = 0.05;
    breaker *b = fixture_create(&f);
    assert_int_equal(breaker_trip_outside(b, breaker_generation(b), NULL), BREAKER_OK);
    assert_int_equal(breaker_close_outside(b, breaker_generation(b), NULL), BREAKER_OK);
    /* At the ramp's start it admits about its 5% share: the rest is refused. */
    int refused = 0;
    for (int i = 0; i < 100; i++) {
        breaker_permit p;
        int rc = breaker_acquire(b, &p);
        if (rc == BREAKER_REJECTED_RAMP)
            refused++;
        else if (rc == BREAKER_OK)
            assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), 0);
    }
    assert_in_range(refused, 80, 99);
    fixture_destroy(&f);
}

/* ---- A reset's mark (breaker_reset_generation_peek()) ------------------------ */

static uint64_t mark_at_reset_event;
static void note_mark_at_reset(void *ctx, breaker *b, const breaker_event *ev) {
    (void)ctx;
    if (ev->reason == BREAKER_REASON_RESET) mark_at_reset_event = breaker_reset_generation_peek(b);
}

/* The mark is the generation the latest reset made, set before the reset's
 * event (a listener sees it: a process killed there leaves it), and no
 * other transition (trips, half-opens, forced states, a recovery) moves
 * it: a move of the generation alone is no reset. */
static void a_reset_marks_its_generation_and_no_other_transition_does(void **state) {
    (void)state;
    struct breaker_fixture f;
    breaker_config *cfg = fixture_init_one_failure_opens(&f, 0, 1 * SEC, 1);
    cfg->on_event = note_mark_at_reset;
    cfg->event_ctx = NULL;
    breaker *b = fixture_create(&f);
    assert_int_equal(breaker_reset_generation_peek(b), 0); /* none yet */
    fixture_trip_to_half_open(&f);
    breaker_permit p;
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK); /* the half-open */
    assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_OK);
    assert_int_equal(breaker_state_peek(b), BREAKER_CLOSED); /* recovered */
    assert_int_equal(breaker_force_open(b), BREAKER_OK);
    assert_int_equal(breaker_reset_generation_peek(b), 0);
    assert_int_equal(breaker_reset(b), BREAKER_OK);
    uint64_t made = breaker_generation(b);
    assert_int_equal(mark_at_reset_event, made);
    assert_int_equal(breaker_reset_generation_peek(b), made);
    call_ok(b, BREAKER_FAILURE); /* a trip, then a probe that fails */
    fake_clock_advance(&f.clock, 1 * SEC);
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
    assert_int_equal(breaker_complete(b, &p, BREAKER_FAILURE), BREAKER_OK);
    assert_true(breaker_generation(b) > made);
    assert_int_equal(breaker_reset_generation_peek(b), made);
    assert_int_equal(breaker_reset(b), BREAKER_OK); /* a reset of a closed breaker too */
    assert_int_equal(breaker_reset(b), BREAKER_OK);
    assert_int_equal(breaker_reset_generation_peek(b), breaker_generation(b));
    assert_int_equal(mark_at_reset_event, breaker_generation(b));
    fixture_destroy(&f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(copy_of_registry_config_is_not_the_registrys),
        cmocka_unit_test(completed_copy_cannot_free_a_newer_probes_slot),
        cmocka_unit_test(completed_copy_cannot_close_the_breaker),
        cmocka_unit_test(same_microsecond_probes_each_get_their_own_claim),
        cmocka_unit_test(outside_trip_opens_through_the_normal_transition),
        cmocka_unit_test(outside_trip_is_fenced_by_generation),
        cmocka_unit_test(outside_trip_for_a_given_wait_probes_when_it_ends),
        cmocka_unit_test(the_gate_is_asked_for_probes_only_and_a_refusal_frees_the_slot),
        cmocka_unit_test(the_gate_decides_what_a_settled_probe_records),
        cmocka_unit_test(a_named_failed_probe_settles_as_a_failure),
        cmocka_unit_test(a_duplicate_within_the_generation_never_reaches_settle),
        cmocka_unit_test(outside_close_closes_through_the_normal_transition),
        cmocka_unit_test(outside_close_is_fenced_by_generation),
        cmocka_unit_test(outside_close_starts_a_ramp_like_a_recovery),
        cmocka_unit_test(a_reset_marks_its_generation_and_no_other_transition_does),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
