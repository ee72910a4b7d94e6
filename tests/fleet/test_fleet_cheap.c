/* SPDX-License-Identifier: MIT */
/*
 * test_fleet_cheap.c - against a real redis-server: a healthy name costs
 * the fleet almost nothing (docs/fleet.md "Cost", breaker_redis_config.
 * full_flush_rounds). Its rounds are a version read (one HMGET, no script,
 * no TIME), and every full_flush_rounds rounds a credit (the credit
 * script, no prelude; one for a round's names of one Redis) that sends
 * the successes held back; a
 * failure goes at the next round, whatever the cadence, with every success
 * held back; a trip made by another host reaches a healthy reader at its
 * next round (its version moved: the state is read in the same round); a
 * state the host cannot trust is never followed (the script rebuilds it);
 * the keys live on the full flushes; and breaker_redis_close() sends what
 * was held back. Rounds are breaker_redis_flush() calls (the flusher's
 * interval is an hour), commands are counted by Redis (INFO commandstats,
 * which counts a script's inner calls too), the window by reading it.
 */
#define _POSIX_C_SOURCE 200809L

#include "fleet_util.h"
#include "redis_server.h"

#include <breaker/redis.h>
#define BREAKER_REDIS_TRANSPORT_EXPERIMENTAL
#include <breaker/redis_transport.h>

#include <hiredis/hiredis.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#define MS  ((uint64_t)1000000)
#define SEC (1000 * MS)

static struct test_redis server;

/* A handle flushing every `interval_ns` (an hour: its rounds run only when
 * asked), full flushes every `rounds`, keys kept `ttl_ns`. */
static breaker_redis *open_fleet_ttl(uint32_t rounds, uint64_t interval_ns, uint64_t ttl_ns) {
    breaker_redis_config rc;
    breaker_redis_config_init(&rc);
    rc.port = server.port;
    rc.flush_interval_ns = interval_ns;
    rc.io_timeout_ns = 2000 * MS; /* patient: a loaded machine must not degrade it */
    rc.probe_budget_ns = 1000 * MS;
    rc.full_flush_rounds = rounds;
    rc.key_ttl_ns = ttl_ns;
    return fleet_open_or_fail(&rc);
}

/* Keys that outlive the rounds' cadence (K rounds of an hour each): the
 * cadence is then the handle's (key_ttl_ns caps it). */
static breaker_redis *open_fleet(uint32_t rounds) {
    return open_fleet_ttl(rounds, 3600 * SEC, 30ull * 24 * 3600 * SEC);
}

/* A window long enough for the cadence to be the handle's (held back: at
 * most 1/20 of the window, here 4 hours of 300 days). */
static breaker *attach(breaker_redis *f, const char *name, uint32_t min_calls) {
    breaker_config c;
    breaker_config_init(&c);
    c.trip = BREAKER_TRIP_TIME_WINDOW;
    c.window_ns = 300ull * 24 * 3600 * SEC;
    c.window_buckets = 10;
    c.min_calls = min_calls;
    c.failure_rate = 0.5;
    c.open_ns = c.open_max_ns = 60 * SEC;
    c.open_jitter = 0;
    breaker *b = NULL;
    char msg[256] = "";
    int rc = breaker_redis_attach(f, name, &c, &b, msg, sizeof msg);
    if (rc != BREAKER_OK && rc != BREAKER_CONFIG_DIFFERS) fail_msg("attach %s: %s", name, msg);
    return b;
}

static void calls(breaker *b, int n, enum breaker_outcome outcome) {
    for (int i = 0; i < n; i++) {
        breaker_permit p;
        assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
        assert_int_equal(breaker_complete(b, &p, outcome), BREAKER_OK);
    }
}

/* Script calls Redis ran so far (EVALSHA and EVAL). */
static long long scripts(void) {
    return test_redis_cmdstat(&server, "evalsha") + test_redis_cmdstat(&server, "eval");
}

/* One round of `f`: @return the script calls it made. */
static long long round_scripts(breaker_redis *f) {
    long long before = scripts();
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    return scripts() - before;
}

/* What a round costs Redis, by command (INFO commandstats; a script's
 * inner calls included). */
struct cost {
    long long scripts, hmget, time, type, hgetall;
};

static struct cost cost_now(void) {
    return (struct cost){scripts(), test_redis_cmdstat(&server, "hmget"),
                         test_redis_cmdstat(&server, "time"), test_redis_cmdstat(&server, "type"),
                         test_redis_cmdstat(&server, "hgetall")};
}

/* One round of `f` that returns `rc`: @return its cost. */
static struct cost round_cost_rc(breaker_redis *f, int rc) {
    struct cost a = cost_now();
    assert_int_equal(breaker_redis_flush(f), rc);
    struct cost b = cost_now();
    return (struct cost){b.scripts - a.scripts, b.hmget - a.hmget, b.time - a.time, b.type - a.type,
                         b.hgetall - a.hgetall};
}

static struct cost round_cost(breaker_redis *f) { return round_cost_rc(f, BREAKER_OK); }

/* The calls (kind 'c') or failures ('f') in `name`'s fleet window. */
static long long window(const char *name, char kind) {
    struct timeval tv = {.tv_sec = 5, .tv_usec = 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", server.port, tv);
    assert_true(c != NULL && !c->err);
    redisReply *r = redisCommand(c, "HGETALL breaker:v2:{%s}:w", name);
    long long sum = 0;
    for (size_t i = 0; r != NULL && i + 1 < r->elements; i += 2)
        if (r->element[i]->str[0] == kind) sum += strtoll(r->element[i + 1]->str, NULL, 10);
    if (r != NULL) freeReplyObject(r);
    redisFree(c);
    return sum;
}

/* Three healthy names, full_flush_rounds 4: each round between their
 * credits is one HMGET per name and nothing else (no script, no TIME);
 * every 4th round of the handle (4, 8, 12: the first after attach is its
 * round 1) one credit for the three names (one Redis: one command), which
 * runs the credit script alone (no TYPE check, no window read of the
 * flush script's prelude) and counts every success held back. */
static void a_healthy_name_makes_no_script_call_for_k_minus_1_rounds(void **state) {
    (void)state;
    breaker_redis *f = open_fleet(4);
    breaker *b[3] = {attach(f, "cheap.k0", 1000), attach(f, "cheap.k1", 1000),
                     attach(f, "cheap.k2", 1000)};
    /* The first round after attach: full. */
    for (int i = 0; i < 3; i++)
        calls(b[i], 10, BREAKER_SUCCESS);
    assert_int_equal(round_scripts(f), 3);
    for (int r = 2; r <= 13; r++) {
        for (int i = 0; i < 3; i++)
            calls(b[i], 10, BREAKER_SUCCESS);
        struct cost c = round_cost(f);
        /* The reads need no clock; a credit reads Redis's once. */
        if (c.time != c.scripts || c.type != 0 || c.hgetall != 0)
            fail_msg("round %d: TIME %lld, TYPE %lld, HGETALL %lld: expected %lld, 0, 0", r, c.time,
                     c.type, c.hgetall, c.scripts);
        /* Each name: its version read, or its part of the credit (one
         * HMGET of the state's fields it checks). */
        if (c.hmget != 3) fail_msg("round %d: %lld HMGETs, expected 3", r, c.hmget);
        if (c.scripts != (r % 4 == 0 ? 1 : 0))
            fail_msg("round %d: %lld script calls, expected %d", r, c.scripts, r % 4 ? 0 : 1);
    }
    /* Each window: the first round's 10, then round 12's credit sent
     * every success of rounds 2 to 12; round 13's are held back. */
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof name, "cheap.k%d", i);
        assert_int_equal(window(name, 'c'), 10 + 11 * 10);
    }
    breaker_redis_close(f);
}

/* Many healthy names of one Redis: their credits go in as few commands as
 * a command's arguments allow (numkeys, the TTL, then 2 keys and 3
 * arguments per name: 12 names in BREAKER_REDIS_COMMAND_ARGS_MAX), all
 * counted: no full flush, no name degraded. */
static void many_names_credit_in_few_commands(void **state) {
    (void)state;
    breaker_redis *f = open_fleet(4);
    enum { NAMES = 30 };
    breaker *b[NAMES];
    for (int i = 0; i < NAMES; i++) {
        char name[16];
        snprintf(name, sizeof name, "cheap.m%d", i);
        b[i] = attach(f, name, 1000);
        calls(b[i], 1, BREAKER_SUCCESS);
    }
    assert_int_equal(round_scripts(f), NAMES); /* the first round: full */
    for (int r = 2; r <= 4; r++) {
        for (int i = 0; i < NAMES; i++)
            calls(b[i], 2, BREAKER_SUCCESS);
        struct cost c = round_cost(f);
        const long long per = (BREAKER_REDIS_COMMAND_ARGS_MAX - 2) / 5;
        long long want = r == 4 ? (NAMES + per - 1) / per : 0;
        if (c.scripts != want || c.type != 0)
            fail_msg("round %d: %lld script calls (TYPE %lld), expected %lld credits", r, c.scripts,
                     c.type, want);
    }
    breaker_redis_stats st;
    breaker_redis_stats_get(f, &st);
    assert_int_equal(st.degraded, 0);
    for (int i = 0; i < NAMES; i++) {
        char name[16];
        snprintf(name, sizeof name, "cheap.m%d", i);
        assert_int_equal(window(name, 'c'), 1 + 3 * 2);
    }
    breaker_redis_close(f);
}

/* A failure goes at the next round, whatever the cadence: at every point
 * of it (0 to K-1 rounds after the last flush), with every success held
 * back; so a trip is never delayed by it. */
static void a_failure_goes_at_the_next_round_with_every_pending_success(void **state) {
    (void)state;
    for (int at = 0; at < 8; at++) {
        breaker_redis *f = open_fleet(8);
        char name[32];
        snprintf(name, sizeof name, "cheap.fail%d", at);
        breaker *b = attach(f, name, 1000);
        assert_int_equal(round_scripts(f), 1);
        long long sent = 0, made = 0;
        for (int r = 0; r < at; r++) { /* `at` rounds of successes: reads and credits */
            calls(b, 3, BREAKER_SUCCESS);
            made += 3;
            assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
        }
        sent = window(name, 'c');
        calls(b, 5, BREAKER_SUCCESS);
        calls(b, 1, BREAKER_FAILURE);
        made += 6;
        struct cost c = round_cost(f);
        assert_int_equal(c.scripts, 1);
        assert_true(c.type > 0); /* the full flush: the prelude's checks */
        if (window(name, 'c') != made || window(name, 'f') != 1)
            fail_msg("%d rounds into the cadence (%lld sent before): the window holds %lld "
                     "calls and %lld failures, expected %lld and 1",
                     at, sent, window(name, 'c'), window(name, 'f'), made);
        breaker_redis_close(f);
    }
}

static void a_trip_by_another_host_reaches_a_healthy_reader_within_one_round(void **state) {
    (void)state;
    breaker_redis *a = open_fleet(16), *b = open_fleet(16);
    breaker *ba = attach(a, "cheap.trip", 10);
    breaker *bb = attach(b, "cheap.trip", 10);
    assert_int_equal(round_scripts(a), 1);
    assert_int_equal(round_scripts(b), 1);
    calls(ba, 3, BREAKER_SUCCESS);
    assert_int_equal(round_scripts(a), 0); /* a reader */
    calls(bb, 10, BREAKER_FAILURE);        /* the other host's failures trip the fleet */
    assert_int_equal(round_scripts(b), 1);
    assert_int_equal(test_redis_int(&server, "HGET breaker:v2:{cheap.trip}:s st"), 1);
    assert_int_equal(breaker_get_state(ba), BREAKER_CLOSED);
    calls(ba, 1, BREAKER_SUCCESS);
    /* Its next round: the version read shows a new generation, and the
     * state is read whole in the same round (one script call, the control
     * script's read). */
    struct cost c = round_cost(a);
    assert_int_equal(c.scripts, 1);
    assert_int_equal(breaker_get_state(ba), BREAKER_OPEN); /* follows the trip */
    breaker_redis_stats st;
    breaker_redis_stats_get(a, &st);
    assert_int_equal(st.outside_trips, 1);
    /* Its held-back successes were of the period the trip ended: dropped,
     * as the script drops a host's deltas for a generation it did not
     * know; the window holds the tripping host's 10 failures alone. */
    c = round_cost(a); /* an open fleet: a follower reads it too, and it has not moved */
    assert_int_equal(c.scripts, 0);
    assert_int_equal(c.hmget, 1);
    assert_int_equal(breaker_get_state(ba), BREAKER_OPEN);
    assert_int_equal(window("cheap.trip", 'c'), 10);
    breaker_redis_close(a);
    breaker_redis_close(b);
}

/* A state that moved to something the host cannot trust is never
 * followed: the read of the moved state runs the script, which names it
 * and rebuilds it (the round fails for the name: its view is not this
 * round's), and the next round's full flush rejoins. */
static void a_state_a_read_cannot_trust_is_never_followed(void **state) {
    (void)state;
    breaker_redis *f = open_fleet(16);
    breaker *b = attach(f, "cheap.bad", 1000);
    assert_int_equal(round_scripts(f), 1);
    calls(b, 2, BREAKER_SUCCESS);
    assert_int_equal(round_scripts(f), 0);
    /* Open for ten years: more than the stored limits allow. */
    long long gen = test_redis_int(&server, "HGET breaker:v2:{cheap.bad}:s gen");
    assert_true(gen > 0);
    assert_int_equal(test_redis_int(&server,
                                    "HSET breaker:v2:{cheap.bad}:s st 1 gen %lld until %llu",
                                    gen + 1, (unsigned long long)4000000000000000ull),
                     0);
    calls(b, 1, BREAKER_SUCCESS);
    struct cost c = round_cost_rc(f, BREAKER_EIO); /* the state's read: CORRUPT, rebuilt */
    assert_int_equal(c.scripts, 1);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    assert_int_equal(test_redis_int(&server, "HGET breaker:v2:{cheap.bad}:s st"), 0);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK); /* rejoined */
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    breaker_redis_close(f);
}

/* A credit counts successes alone into a window that holds no failure or
 * slow call (successes can trip nothing then): while the window holds one,
 * it counts nothing and the round's second exchange sends them with the
 * full flush, which also judges them against it; once the failure has
 * left the window (lf, the last bucket with one, older than the window:
 * written here as the script would find it), the credit again. */
static void successes_go_in_full_while_the_window_holds_a_failure(void **state) {
    (void)state;
    breaker_redis *f = open_fleet(2);
    breaker *b = attach(f, "cheap.lf", 1000);
    assert_int_equal(round_scripts(f), 1);
    calls(b, 4, BREAKER_SUCCESS);
    calls(b, 1, BREAKER_FAILURE);
    assert_int_equal(round_cost(f).scripts, 1); /* the failure, at once */
    assert_true(test_redis_int(&server, "HGET breaker:v2:{cheap.lf}:s lf") > 0);
    calls(b, 3, BREAKER_SUCCESS);
    assert_int_equal(round_cost(f).scripts, 0); /* a read */
    struct cost c = round_cost(f);              /* the cadence: a credit, not counted, then ... */
    assert_int_equal(c.scripts, 2);
    assert_true(c.type > 0 && c.hgetall > 0); /* ... the full flush */
    assert_int_equal(window("cheap.lf", 'c'), 8);
    assert_int_equal(test_redis_int(&server, "HSET breaker:v2:{cheap.lf}:s lf 1"), 0);
    calls(b, 2, BREAKER_SUCCESS);
    assert_int_equal(round_cost(f).scripts, 0);
    c = round_cost(f);
    assert_int_equal(c.scripts, 1);
    assert_int_equal(c.type, 0); /* the credit, counted */
    assert_int_equal(window("cheap.lf", 'c'), 10);
    breaker_redis_close(f);
}

/* CONSECUTIVE: a fleet run of failures makes a healthy reader send its
 * held-back successes at its next round, which end the run. */
static void a_fleet_run_of_failures_brings_the_held_back_successes(void **state) {
    (void)state;
    breaker_redis *a = open_fleet(16), *b = open_fleet(16);
    breaker_config c;
    breaker_config_init(&c);
    c.trip = BREAKER_TRIP_CONSECUTIVE;
    c.failure_threshold = 5;
    c.window_ns = 300ull * 24 * 3600 * SEC; /* the cadence: the handle's (attach()) */
    breaker *ba = NULL, *bb = NULL;
    char msg[256] = "";
    assert_int_equal(breaker_redis_attach(a, "cheap.run", &c, &ba, msg, sizeof msg), BREAKER_OK);
    assert_int_equal(breaker_redis_attach(b, "cheap.run", &c, &bb, msg, sizeof msg), BREAKER_OK);
    assert_int_equal(round_scripts(a), 1);
    assert_int_equal(round_scripts(b), 1);
    calls(ba, 4, BREAKER_SUCCESS);
    assert_int_equal(round_scripts(a), 0); /* held back */
    calls(bb, 3, BREAKER_FAILURE);
    assert_int_equal(round_scripts(b), 1);
    assert_int_equal(test_redis_int(&server, "HGET breaker:v2:{cheap.run}:s run"), 3);
    calls(ba, 1, BREAKER_SUCCESS);
    assert_int_equal(round_scripts(a), 0); /* the read sees the run */
    assert_int_equal(round_scripts(a), 1); /* and the next round sends the successes */
    assert_int_equal(test_redis_int(&server, "HGET breaker:v2:{cheap.run}:s run"), 0);
    calls(ba, 1, BREAKER_SUCCESS);
    assert_int_equal(round_scripts(a), 0); /* the run is over: a reader again */
    assert_int_equal(round_scripts(a), 0);
    breaker_redis_close(a);
    breaker_redis_close(b);
}

static void one_full_flush_round_is_the_script_every_round(void **state) {
    (void)state;
    breaker_redis *f = open_fleet(1);
    breaker *b = attach(f, "cheap.one", 1000);
    for (int r = 0; r < 4; r++) {
        calls(b, 1, BREAKER_SUCCESS);
        assert_int_equal(round_scripts(f), 1);
    }
    assert_int_equal(window("cheap.one", 'c'), 4);
    breaker_redis_close(f);
}

static void close_sends_the_successes_held_back(void **state) {
    (void)state;
    breaker_redis *f = open_fleet(16);
    breaker *b = attach(f, "cheap.close", 1000);
    assert_int_equal(round_scripts(f), 1);
    calls(b, 9, BREAKER_SUCCESS);
    assert_int_equal(round_scripts(f), 0);
    calls(b, 2, BREAKER_SUCCESS);
    breaker_redis_close(f);
    assert_int_equal(window("cheap.close", 'c'), 11);
}

static void a_bad_full_flush_rounds_is_refused_by_name(void **state) {
    (void)state;
    breaker_redis_config rc;
    breaker_redis_config_init(&rc);
    rc.port = server.port;
    rc.full_flush_rounds = 1001;
    breaker_redis *f = NULL;
    char msg[256] = "";
    assert_int_equal(breaker_redis_open(&rc, &f, msg, sizeof msg), BREAKER_EINVAL);
    assert_non_null(strstr(msg, "full_flush_rounds: must be 0..1000"));
}

/* A healthy name's keys expire after key_ttl_ns without a script call (a
 * read refreshes no TTL): the cadence of its full flushes is lowered so
 * that the script runs well within the TTL. Before, key_ttl_ns 2 s with
 * 200 ms rounds kept the default cadence (15 rounds then, 2.4-3.6 s): the state
 * expired between full flushes, was rebuilt at a new generation (the held-
 * back successes fenced out with it) and the fleet window started again.
 * The flusher runs at its interval here; the cadence leaves the TTL's half
 * (1 s) for the flusher's lateness. */
static void a_healthy_name_keeps_its_keys_within_their_ttl(void **state) {
    (void)state;
    breaker_redis *f = open_fleet_ttl(0, 200 * MS, 2 * SEC);
    char msg[256] = "";
    breaker_config c;
    breaker_config_init(&c); /* a 60 s window: 12 rounds by the window alone (1.9-2.9 s) */
    c.min_calls = 1000000;
    breaker *b = NULL;
    assert_int_equal(breaker_redis_attach(f, "cheap.ttl", &c, &b, msg, sizeof msg), BREAKER_OK);
    long long gen = test_redis_int(&server, "HGET breaker:v2:{cheap.ttl}:s gen");
    assert_true(gen > 0);
    uint64_t end = test_redis_now_ns() + 5 * SEC;
    while (test_redis_now_ns() < end) {
        calls(b, 1, BREAKER_SUCCESS);
        test_redis_nap_ms(10);
        long long now = test_redis_int(&server, "HGET breaker:v2:{cheap.ttl}:s gen");
        if (now != gen)
            fail_msg("the state of a healthy name expired and was rebuilt (gen %lld -> %lld)", gen,
                     now);
    }
    breaker_redis_close(f);
}

/* The fields of `name`'s sequences hash (one per host that flushed). */
static long long sequences(const char *name) {
    return test_redis_int(&server, "HLEN breaker:v2:{%s}:q", name);
}

/* A host that left is pruned from the sequences hash though no host
 * arrives after it: every host scans a few fields once per quarter of the
 * TTL. Before, only a host new to the name scanned, so in a fleet that
 * shrank and stayed the departed hosts' fields were kept for as long as any
 * host flushed. Rounds 400 ms apart, TTL 2 s: the keys stay (every round is
 * the script, key_ttl_ns caps the cadence) and the host that left is 2 s
 * silent after 5 rounds. */
static void a_host_that_left_is_pruned_without_arrivals(void **state) {
    (void)state;
    breaker_redis *a = open_fleet_ttl(0, 3600 * SEC, 2 * SEC);
    breaker_redis *b = open_fleet_ttl(0, 3600 * SEC, 2 * SEC);
    breaker *ba = attach(a, "cheap.left", 1000000), *bb = attach(b, "cheap.left", 1000000);
    calls(ba, 1, BREAKER_SUCCESS);
    calls(bb, 1, BREAKER_SUCCESS);
    assert_int_equal(breaker_redis_flush(a), BREAKER_OK);
    assert_int_equal(breaker_redis_flush(b), BREAKER_OK);
    assert_int_equal(sequences("cheap.left"), 2);
    breaker_redis_close(b); /* the host leaves */
    uint64_t left = test_redis_now_ns();
    int rounds = 0;
    while (sequences("cheap.left") == 2) {
        if (test_redis_now_ns() - left > 6 * SEC)
            fail_msg("the host that left is still in the sequences after %d rounds", rounds);
        test_redis_nap_ms(400);
        calls(ba, 1, BREAKER_SUCCESS);
        assert_int_equal(breaker_redis_flush(a), BREAKER_OK);
        rounds++;
    }
    assert_int_equal(sequences("cheap.left"), 1);
    assert_true(test_redis_now_ns() - left >= 2 * SEC); /* never before its TTL */
    breaker_redis_close(a);
}

/* A state deleted (docs/fleet.md, "Limits": delete the :s key to make the
 * fleet start over) starts over with an empty window: the next state is
 * made from scratch, and the failures counted under the deleted one are
 * not its evidence. Before, the window hash outlived the state: 8 failures
 * of the deleted state and 2 of the new one tripped the new state on 10
 * (min_calls 10). Found by test_fleet_differential at 4,000 steps (the
 * run's map, also in the window hash, outlived it too). */
static void a_deleted_state_starts_over_with_an_empty_window(void **state) {
    (void)state;
    breaker_redis *f = open_fleet(16);
    breaker *b = attach(f, "cheap.del", 10);
    assert_int_equal(round_scripts(f), 1);
    calls(b, 8, BREAKER_FAILURE); /* 8 of min_calls 10: no trip */
    assert_int_equal(round_scripts(f), 1);
    assert_int_equal(window("cheap.del", 'f'), 8);
    assert_int_equal(test_redis_int(&server, "DEL breaker:v2:{cheap.del}:s"), 1);
    /* The version read finds no state; the state's read in the same round
     * (the control script's prelude) makes it again. */
    assert_int_equal(round_scripts(f), 1);
    calls(b, 2, BREAKER_FAILURE);
    assert_int_equal(round_scripts(f), 1);
    assert_int_equal(test_redis_int(&server, "HGET breaker:v2:{cheap.del}:s st"), 0);
    assert_int_equal(window("cheap.del", 'f'), 2); /* (the local breaker saw 10: its own) */
    breaker_redis_close(f);
}

/* The scan of the sequences hash goes on where the last one stopped (the
 * cursor the state keeps, qc), so a host that left is pruned however many
 * hosts come before it: here 600 hosts that keep flushing (their fields
 * dated a day ahead, never due) and one that left, in a hash too big for
 * one page of HSCAN (Redis lists a hash of up to 512 fields whole). Before,
 * the cursor was read from the wrong field and every scan began at 0: the
 * same first page, the cursor never past it. TTL 1 s: a scan a quarter. */
static void the_pruning_scan_goes_round_the_whole_hash(void **state) {
    (void)state;
    breaker_redis *a = open_fleet_ttl(0, 3600 * SEC, SEC);
    breaker_redis *b = open_fleet_ttl(0, 3600 * SEC, SEC);
    breaker *ba = attach(a, "cheap.many", 1000000), *bb = attach(b, "cheap.many", 1000000);
    calls(ba, 1, BREAKER_SUCCESS);
    calls(bb, 1, BREAKER_SUCCESS);
    assert_int_equal(breaker_redis_flush(a), BREAKER_OK);
    assert_int_equal(breaker_redis_flush(b), BREAKER_OK);
    breaker_redis_close(b); /* the host that leaves */
    /* Redis's clock is the wall clock: a day ahead of it. */
    unsigned long long ahead = ((unsigned long long)time(NULL) + 86400ull) * 1000000ull;
    char value[48];
    snprintf(value, sizeof value, "1 %llu", ahead);
    for (int i = 0; i < 600; i++)
        (void)test_redis_int(&server, "HSET breaker:v2:{cheap.many}:q %016x %s", 0x1000 + i, value);
    assert_int_equal(sequences("cheap.many"), 602);
    uint64_t left = test_redis_now_ns();
    int rounds = 0;
    /* The cursors the scans left (qc): a page further each time. */
    long long cursor[64];
    int cursors = 0;
    while (sequences("cheap.many") == 602 || cursors < 3) {
        if (test_redis_now_ns() - left > 60 * SEC)
            fail_msg("the host that left is still in the sequences after %d rounds", rounds);
        test_redis_nap_ms(150);
        calls(ba, 1, BREAKER_SUCCESS);
        assert_int_equal(breaker_redis_flush(a), BREAKER_OK);
        rounds++;
        long long qc = test_redis_int(&server, "HGET breaker:v2:{cheap.many}:s qc");
        int seen = 0;
        for (int i = 0; i < cursors; i++)
            seen = seen || cursor[i] == qc;
        if (!seen && cursors < 64) cursor[cursors++] = qc;
    }
    printf("a host that left, behind 600: pruned after %d rounds, %.1f s; %d cursors\n", rounds,
           (double)(test_redis_now_ns() - left) / 1e9, cursors);
    assert_int_equal(sequences("cheap.many"), 601);
    breaker_redis_close(a);
}

/* One redis-server for every case (each uses names of its own). */
static int setup(void **state) {
    *state = &server;
    return test_redis_start(&server) == 0 ? 0 : -1;
}

static int teardown(void **state) {
    test_redis_stop(*state);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_healthy_name_makes_no_script_call_for_k_minus_1_rounds),
        cmocka_unit_test(many_names_credit_in_few_commands),
        cmocka_unit_test(a_failure_goes_at_the_next_round_with_every_pending_success),
        cmocka_unit_test(a_trip_by_another_host_reaches_a_healthy_reader_within_one_round),
        cmocka_unit_test(a_state_a_read_cannot_trust_is_never_followed),
        cmocka_unit_test(successes_go_in_full_while_the_window_holds_a_failure),
        cmocka_unit_test(a_fleet_run_of_failures_brings_the_held_back_successes),
        cmocka_unit_test(one_full_flush_round_is_the_script_every_round),
        cmocka_unit_test(close_sends_the_successes_held_back),
        cmocka_unit_test(a_bad_full_flush_rounds_is_refused_by_name),
        cmocka_unit_test(a_healthy_name_keeps_its_keys_within_their_ttl),
        cmocka_unit_test(a_host_that_left_is_pruned_without_arrivals),
        cmocka_unit_test(the_pruning_scan_goes_round_the_whole_hash),
        cmocka_unit_test(a_deleted_state_starts_over_with_an_empty_window),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
