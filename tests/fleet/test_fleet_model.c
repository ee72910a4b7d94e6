/* SPDX-License-Identifier: MIT */
/*
 * test_fleet_model.c - the simulator's model of the fleet store
 * (tools/sim/fleet_model.c on tools/sim/fleet_server.c), end to end with real local
 * breakers on a fake clock, where it had drifted from the Redis client and
 * scripts: a release for any generation (an orphan's) frees its lease, a
 * CLOSED state created after a restart closes no follower while a real
 * fleet close does, and a later attacher is compared on the limits the
 * fleet stores, keeping its own local fields. And the rule that keeps a
 * fleet's probes within its limit through the close: a follower whose
 * lease request hears "the fleet is closed" closes instead of probing. The rules themselves are
 * tests/fleet/test_fleet_protocol.c's; the server half against a real
 * redis-server is tests/fleet/test_fleet_differential.c's.
 */
#include "../../tools/sim/fleet_model.h"

#include "test_util.h"

#include <string.h>

#define START_NS (1700000000ull * SEC) /* Redis's clock is the epoch's */

static struct fake_clock clock_;

static void fleet_cfg(breaker_config *c) {
    breaker_config_init(c);
    c->clock = fake_clock_read;
    c->clock_ctx = &clock_;
    c->window_ns = 10 * SEC;
    c->window_buckets = 10;
    c->min_calls = 4;
    c->failure_rate = 0.5;
    c->open_ns = 1 * SEC;
    c->open_max_ns = 10 * SEC;
    c->open_jitter = 0;
    c->half_open_max_probes = 1;
    c->half_open_successes = 1;
    c->probe_timeout_ns = 5 * SEC;
    c->seed = 1;
}

static struct fleet_model *model_on_fake_clock(void) {
    atomic_store(&clock_.now, START_NS);
    struct fleet_model_config mc = {.clock = fake_clock_read, .clock_ctx = &clock_};
    struct fleet_model *m = NULL;
    assert_int_equal(fleet_model_create(&mc, &m), 0);
    return m;
}

static void fail_calls(breaker *b, int n) {
    for (int i = 0; i < n; i++) {
        breaker_permit p;
        if (breaker_acquire(b, &p) == BREAKER_OK) (void)breaker_complete(b, &p, BREAKER_FAILURE);
    }
}

/* Two hosts of one model, each with a breaker for "dep". */
struct two_hosts {
    struct fleet_model *m;
    struct fleet_client *a, *b;
    breaker *ba, *bb;
};

/* @return the status of b's attach (a's must be BREAKER_OK). */
static int two_hosts_attach(struct two_hosts *t, const breaker_config *ca,
                            const breaker_config *cb) {
    t->m = model_on_fake_clock();
    assert_int_equal(fleet_client_create(t->m, &t->a), 0);
    assert_int_equal(fleet_client_create(t->m, &t->b), 0);
    assert_int_equal(fleet_client_attach(t->a, "dep", ca, &t->ba), BREAKER_OK);
    return fleet_client_attach(t->b, "dep", cb, &t->bb);
}

static void two_hosts_free(struct two_hosts *t) {
    fleet_client_destroy(t->a);
    fleet_client_destroy(t->b);
    fleet_model_destroy(t->m);
}

/* Host a fails 4 calls and flushes (the fleet trips); host b flushes and
 * follows the fleet's open. */
static void trip_the_fleet(struct two_hosts *t) {
    fail_calls(t->ba, 4);
    fleet_client_flush(t->a);
    fleet_client_flush(t->b);
    assert_int_equal(breaker_get_state(t->bb), BREAKER_OPEN);
    struct breaker_stats s;
    breaker_stats_get(t->bb, &s);
    assert_int_equal(s.failures, 0); /* tripped by the fleet's evidence, not its own */
}

/* Drift: the model's release refused generation 0, which the scripts take as
 * "any" (the release of a request that got no answer and may have been
 * granted). */
static void a_release_for_any_generation_frees_its_lease(void **state) {
    (void)state;
    struct fleet_model *m = model_on_fake_clock();
    struct fleet_server *srv = fleet_model_server(m);
    breaker_config cfg;
    fleet_cfg(&cfg);
    char limits[BREAKER__FLEET_LIMITS_LEN];
    breaker__fleet_limits_text(&cfg, limits, sizeof limits);
    struct breaker__fleet_call call;
    int64_t a[ANS_COUNT];
    struct breaker__fleet_deltas fails = {.calls = 4, .failures = 4};
    breaker__fleet_call_flush(&call, 0, &fails);
    assert_int_equal(fleet_server_call(srv, "dep", limits, &call, a), 0);
    assert_int_equal(a[ANS_VERDICT], VERDICT_TRIPPED);
    fake_clock_advance(&clock_, 2 * SEC); /* past the open wait */
    breaker__fleet_call_acquire(&call, 77);
    assert_int_equal(fleet_server_call(srv, "dep", limits, &call, a), 0);
    assert_int_equal(a[ANS_VERDICT], VERDICT_GRANTED);
    uint64_t gen = (uint64_t)a[ANS_GEN];
    /* Another generation: stale. Generation 0: applied, the lease gone. */
    breaker__fleet_call_release(&call, gen - 1, 77, FLEET_RESULT_NEITHER);
    assert_int_equal(fleet_server_call(srv, "dep", limits, &call, a), 0);
    assert_int_equal(a[ANS_VERDICT], VERDICT_STALE);
    breaker__fleet_call_release(&call, 0, 77, FLEET_RESULT_NEITHER);
    assert_int_equal(fleet_server_call(srv, "dep", limits, &call, a), 0);
    assert_int_equal(a[ANS_VERDICT], VERDICT_APPLIED);
    struct fleet_name_stats st;
    assert_int_equal(fleet_server_name_stats(srv, "dep", &st), 0);
    assert_int_equal(st.leases_out, 0);
    assert_int_equal(st.state, BREAKER_HALF_OPEN);
    fleet_model_destroy(m);
}

static void a_fleet_close_closes_the_hosts_that_followed_its_open(void **state) {
    (void)state;
    breaker_config cfg;
    fleet_cfg(&cfg);
    struct two_hosts t;
    assert_int_equal(two_hosts_attach(&t, &cfg, &cfg), BREAKER_OK);
    trip_the_fleet(&t);
    /* A's probe takes the lease and succeeds: the fleet closes, and B
     * follows at its next flush. */
    fake_clock_advance(&clock_, 2 * SEC);
    struct fleet_permit p;
    assert_int_equal(fleet_client_acquire(t.a, t.ba, &p), BREAKER_OK);
    assert_true(fleet_permit_is_leased(&p));
    assert_int_equal(fleet_client_complete(t.a, t.ba, &p, BREAKER_SUCCESS, 0), BREAKER_OK);
    struct fleet_name_stats st;
    assert_int_equal(fleet_model_name_stats(t.m, "dep", &st), 0);
    assert_int_equal(st.state, BREAKER_CLOSED);
    assert_int_equal(breaker_get_state(t.ba), BREAKER_CLOSED);
    assert_int_equal(breaker_get_state(t.bb), BREAKER_OPEN);
    fleet_client_flush(t.b);
    assert_int_equal(breaker_get_state(t.bb), BREAKER_CLOSED);
    two_hosts_free(&t);
}

/* Between the fleet's close and a follower's next flush, the follower's
 * probe asks for a lease and hears "the fleet is closed": it must not probe
 * on its own (one probe more in flight than the fleet allows), but close. */
static void a_follower_that_hears_the_fleet_closed_closes_instead_of_probing(void **state) {
    (void)state;
    breaker_config cfg;
    fleet_cfg(&cfg);
    struct two_hosts t;
    assert_int_equal(two_hosts_attach(&t, &cfg, &cfg), BREAKER_OK);
    trip_the_fleet(&t);
    fake_clock_advance(&clock_, 2 * SEC); /* both hosts' waits are over */
    struct fleet_permit p;
    assert_int_equal(fleet_client_acquire(t.a, t.ba, &p), BREAKER_OK);
    assert_int_equal(fleet_client_complete(t.a, t.ba, &p, BREAKER_SUCCESS, 0), BREAKER_OK);
    struct fleet_permit q;
    assert_int_equal(fleet_client_acquire(t.b, t.bb, &q), BREAKER_REJECTED_HALF_OPEN);
    assert_int_equal(breaker_get_state(t.bb), BREAKER_CLOSED);
    struct breaker_stats s;
    breaker_stats_get(t.bb, &s);
    assert_int_equal(s.probes_succeeded + s.probes_failed, 0);
    two_hosts_free(&t);
}

/* Drift: the model's close ignored `born`: a fleet state created from
 * scratch (Redis restarted empty) closed every host that followed the old
 * state's open. */
static void a_state_created_after_a_restart_closes_no_follower(void **state) {
    (void)state;
    breaker_config cfg;
    fleet_cfg(&cfg);
    cfg.open_ns = 60 * SEC; /* B's own wait outlasts the test */
    cfg.open_max_ns = 60 * SEC;
    struct two_hosts t;
    assert_int_equal(two_hosts_attach(&t, &cfg, &cfg), BREAKER_OK);
    trip_the_fleet(&t);
    fleet_server_flushall(fleet_model_server(t.m));
    fake_clock_advance(&clock_, SEC);
    /* B follows an open fleet: its round reads the state, finds none (no
     * answer), and its next round runs the script, which creates one. (The
     * Redis client's connection to a restarted Redis is cut: that round
     * fails and the next one runs the script.) */
    fleet_client_flush(t.b);
    assert_int_equal(breaker_get_state(t.bb), BREAKER_OPEN); /* nothing followed */
    fleet_client_flush(t.b);
    struct fleet_name_stats st;
    assert_int_equal(fleet_model_name_stats(t.m, "dep", &st), 0);
    assert_int_equal(st.state, BREAKER_CLOSED);
    assert_true(st.born > START_NS / 1000);
    assert_int_equal(breaker_get_state(t.bb), BREAKER_OPEN); /* its local breaker decides */
    two_hosts_free(&t);
}

/* Drift: the model compared a later attacher's whole configuration with
 * memcmp() (padding and unstored fields included), and gave it the first
 * attacher's ramp and other local fields. */
static void a_later_attacher_is_compared_on_the_stored_limits_only(void **state) {
    (void)state;
    breaker_config first, later;
    fleet_cfg(&first);
    fleet_cfg(&later);
    later.seed = 99;
    later.ramp_ns = 20 * SEC;
    later.slow_call_ns = 300 * MS;
    struct two_hosts t;
    assert_int_equal(two_hosts_attach(&t, &first, &later), BREAKER_OK);
    breaker_config got;
    breaker_get_config(t.bb, &got);
    assert_int_equal(got.ramp_ns, 20 * SEC);
    assert_int_equal(got.slow_call_ns, 300 * MS);
    assert_int_equal(got.seed, 99);
    /* Other stored limits: they win, with the local fields kept. */
    breaker *bc;
    later.min_calls = 50;
    later.half_open_successes = 3;
    assert_int_equal(fleet_client_attach(t.b, "dep", &later, &bc), BREAKER_CONFIG_DIFFERS);
    breaker_get_config(bc, &got);
    assert_int_equal(got.min_calls, 4);
    assert_int_equal(got.half_open_successes, 1);
    assert_int_equal(got.ramp_ns, 20 * SEC);
    assert_int_equal(got.seed, 99);
    two_hosts_free(&t);
}

/* The model's client chooses as the Redis client does (docs/fleet.md,
 * "Cost"): a healthy host reads the state and sends its successes with the
 * script every full_flush_rounds rounds; another host's trip reaches it
 * through a read within one round. */
static void a_healthy_host_reads_and_a_trip_reaches_it_within_one_round(void **state) {
    (void)state;
    atomic_store(&clock_.now, START_NS);
    struct fleet_model_config mc = {
        .clock = fake_clock_read, .clock_ctx = &clock_, .full_flush_rounds = 4};
    struct two_hosts t;
    assert_int_equal(fleet_model_create(&mc, &t.m), 0);
    assert_int_equal(fleet_client_create(t.m, &t.a), 0);
    assert_int_equal(fleet_client_create(t.m, &t.b), 0);
    breaker_config cfg;
    fleet_cfg(&cfg);
    cfg.window_ns = 60 * SEC; /* 4 rounds of 250 ms are under 1/20 of it */
    cfg.failure_rate = 0.3;   /* b's 4 failures against a's 8 successes trip it */
    assert_int_equal(fleet_client_attach(t.a, "dep", &cfg, &t.ba), BREAKER_OK);
    assert_int_equal(fleet_client_attach(t.b, "dep", &cfg, &t.bb), BREAKER_OK);
    struct fleet_server *srv = fleet_model_server(t.m);
    fleet_client_flush(t.a); /* the first round after attach: the script */
    fleet_client_flush(t.b);
    uint64_t before = fleet_server_script_calls(srv);
    for (int r = 0; r < 8; r++) {
        breaker_permit p;
        assert_int_equal(breaker_acquire(t.ba, &p), BREAKER_OK);
        assert_int_equal(breaker_complete(t.ba, &p, BREAKER_SUCCESS), BREAKER_OK);
        fake_clock_advance(&clock_, 250 * MS);
        fleet_client_flush(t.a);
    }
    assert_int_equal(fleet_server_script_calls(srv) - before, 2); /* 8 rounds, 1 in 4 */
    fail_calls(t.bb, 4);
    fleet_client_flush(t.b); /* b's failures trip the fleet */
    struct fleet_name_stats st;
    assert_int_equal(fleet_model_name_stats(t.m, "dep", &st), 0);
    assert_int_equal(st.state, BREAKER_OPEN);
    before = fleet_server_script_calls(srv);
    fleet_client_flush(t.a);
    assert_int_equal(fleet_server_script_calls(srv) - before, 0); /* a read */
    assert_int_equal(breaker_get_state(t.ba), BREAKER_OPEN);      /* followed */
    two_hosts_free(&t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_release_for_any_generation_frees_its_lease),
        cmocka_unit_test(a_fleet_close_closes_the_hosts_that_followed_its_open),
        cmocka_unit_test(a_follower_that_hears_the_fleet_closed_closes_instead_of_probing),
        cmocka_unit_test(a_state_created_after_a_restart_closes_no_follower),
        cmocka_unit_test(a_later_attacher_is_compared_on_the_stored_limits_only),
        cmocka_unit_test(a_healthy_host_reads_and_a_trip_reaches_it_within_one_round),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
