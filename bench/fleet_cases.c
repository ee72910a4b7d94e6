/* SPDX-License-Identifier: MIT */
/*
 * fleet_cases.c - the benchmark's breakers attached through the fleet store
 * (breaker/redis.h), for the fleet-backed rows of main.c. Built only when
 * the breaker_redis target exists (hiredis found).
 *
 * Each breaker has the configuration of its in-process counterpart in
 * cases.c and is called through plain breaker_acquire() and
 * breaker_complete(), as every fleet-backed breaker is now (the fleet's
 * leases are the breaker's probe gate, on the half-open path only), so a
 * row's ratio to that counterpart is what the fleet store costs a call in
 * CLOSED and OPEN: the same instructions (callgrind), and in time the
 * flusher thread reading the breaker's counters every interval. The fleet handle talks to a private
 * redis-server started here on a free loopback port (tests/support/redis_server.c) when one is
 * installed; without one the handle stays degraded, which changes nothing on these paths (the
 * flusher still reads the counters every interval). The server is stopped at exit by the process
 * that started it; the bench's forked workers leave it alone (they exit with _exit()).
 */
#define _GNU_SOURCE
#include "cases.h"

#include "redis_server.h"

#include <breaker/redis.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct fleet_case {
    struct breaker_case c; /* first: the rows' ctx is a breaker_case */
    breaker_redis *fleet;
};

static breaker_redis *fleet;
static struct test_redis server;
static pid_t fleet_owner;
static unsigned nattached;

static void close_fleet(void) {
    if (fleet == NULL || getpid() != fleet_owner) return;
    breaker_redis_close(fleet); /* destroys the attached breakers */
    fleet = NULL;
    if (server.pid != 0) test_redis_stop(&server);
}

static breaker_redis *open_fleet(void) {
    if (fleet != NULL) return fleet;
    breaker_redis_config rc;
    breaker_redis_config_init(&rc); /* flush every 250 ms, as deployed */
    /* BENCH_FLUSH_MS: another interval (scripts/bench.sh parks the flusher
     * for the instruction counts, so they count the call path alone). */
    const char *flush_ms = getenv("BENCH_FLUSH_MS");
    if (flush_ms != NULL) rc.flush_interval_ns = strtoull(flush_ms, NULL, 10) * 1000000ull;
    if (test_redis_start(&server) == 0)
        rc.port = server.port;
    else
        rc.unix_path = "/nonexistent/breaker-bench-redis.sock"; /* degraded */
    char msg[256] = "";
    int rc_open = breaker_redis_open(&rc, &fleet, msg, sizeof msg);
    if (rc_open != BREAKER_OK) bench_die("breaker_redis_open: %s", msg);
    fleet_owner = getpid();
    if (atexit(close_fleet) != 0) bench_die("atexit failed");
    if (server.pid != 0 && breaker_redis_flush(fleet) != BREAKER_OK)
        bench_die("the bench's redis-server does not answer");
    return fleet;
}

int fleet_bench_connected(void) { return fleet != NULL && !breaker_redis_degraded(fleet); }

static struct breaker_case *attach_case(const char *what, const breaker_config *cfg, int expect) {
    breaker_redis *f = open_fleet();
    char name[64];
    snprintf(name, sizeof name, "bench.%s.%u.%ld", what, nattached++, (long)getpid());
    struct fleet_case *c = calloc(1, sizeof *c);
    if (c == NULL) bench_die("out of memory");
    char msg[256] = "";
    int rc = breaker_redis_attach(f, name, cfg, &c->c.b, msg, sizeof msg);
    if (rc != BREAKER_OK)
        bench_die("breaker_redis_attach %s: %s: %s", name, breaker_strerror(rc), msg);
    c->c.expect = expect;
    c->fleet = f;
    return &c->c;
}

struct breaker_case *make_fleet_closed(enum breaker_trip trip) {
    static const char *const names[] = {
        [BREAKER_TRIP_CONSECUTIVE] = "consecutive",
        [BREAKER_TRIP_COUNT_WINDOW] = "count",
        [BREAKER_TRIP_TIME_WINDOW] = "time",
    };
    if ((unsigned)trip >= sizeof names / sizeof names[0] || names[trip] == NULL)
        bench_die("make_fleet_closed: trip policy %d", (int)trip);
    breaker_config cfg;
    config_closed(&cfg, trip, 0);
    struct breaker_case *c = attach_case(names[trip], &cfg, BREAKER_OK);
    case_expect_state(c, BREAKER_CLOSED, "fleet-backed closed case");
    return c;
}

struct breaker_case *make_fleet_open(void) {
    breaker_config cfg;
    config_open(&cfg);
    struct breaker_case *c = attach_case("open", &cfg, BREAKER_REJECTED_OPEN);
    case_trip(c);
    return c;
}

uint64_t case_fleet_closed(void *ctx, uint64_t iters) {
    struct fleet_case *c = ctx;
    breaker *b = c->c.b;
    uint64_t ok = 0;
    for (uint64_t i = 0; i < iters; i++) {
        breaker_permit p;
        if (breaker_acquire(b, &p) == BREAKER_OK)
            ok += breaker_complete(b, &p, BREAKER_SUCCESS) == BREAKER_OK;
    }
    return ok;
}

uint64_t case_fleet_refused(void *ctx, uint64_t iters) {
    struct fleet_case *c = ctx;
    breaker *b = c->c.b;
    int expect = c->c.expect;
    uint64_t ok = 0;
    for (uint64_t i = 0; i < iters; i++) {
        breaker_permit p;
        ok += breaker_acquire(b, &p) == expect;
    }
    return ok;
}
