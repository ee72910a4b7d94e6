/* SPDX-License-Identifier: MIT */
/*
 * test_contract_redis.c - the store contract (store_contract.h) for the
 * fleet store on a real redis-server (redis_server.c starts it on a free
 * loopback port): two sites are two fleet handles, as two hosts would have.
 * Each handle's flusher runs every 50 ms; sync() makes one flush round on
 * both at once (the flush a host makes within an interval). Calls go through
 * plain breaker_acquire()/breaker_complete(): a fleet-backed breaker's probes
 * ask Redis for fleet leases on every path. The contract's limits (two consecutive failures) go to
 * the fleet as they are: the fleet keeps a run of failures for a CONSECUTIVE policy
 * (docs/fleet.md).
 */
#define _GNU_SOURCE
#include "store_contract.h"

#include "redis_server.h"
#include "test_util.h"

#include <breaker/redis.h>

#include <stdio.h>
#include <string.h>

static struct test_redis server;
static breaker_redis *fleets[2];

/* The breakers the sites attached. */
static struct {
    breaker *b;
    int site;
} attached[32];

static int redis_setup(void) {
    (void)test_redis_int(&server, "FLUSHALL"); /* a status answer: -1 */
    memset(attached, 0, sizeof attached);
    for (int i = 0; i < 2; i++) {
        breaker_redis_config rc;
        breaker_redis_config_init(&rc);
        rc.port = server.port;
        rc.flush_interval_ns = 50 * MS;
        rc.io_timeout_ns = 200 * MS;
        char msg[256] = "";
        if (breaker_redis_open(&rc, &fleets[i], msg, sizeof msg) != BREAKER_OK) {
            fprintf(stderr, "redis: open: %s\n", msg);
            return -1;
        }
        /* Joined before the contract starts: not degraded. */
        if (breaker_redis_flush(fleets[i]) != BREAKER_OK) return -1;
    }
    return 0;
}

static void redis_teardown(void) {
    for (int i = 0; i < 2; i++) {
        breaker_redis_close(fleets[i]);
        fleets[i] = NULL;
    }
}

static int redis_attach(int site, const char *name, const breaker_config *cfg, breaker **out) {
    char msg[256] = "";
    int rc = breaker_redis_attach(fleets[site], name, cfg, out, msg, sizeof msg);
    if (rc != BREAKER_OK) {
        fprintf(stderr, "redis: attach %s: %s\n", name, msg);
        return rc;
    }
    for (size_t i = 0; i < sizeof attached / sizeof attached[0]; i++)
        if (attached[i].b == NULL) {
            attached[i].b = *out;
            attached[i].site = site;
            return BREAKER_OK;
        }
    fail_msg("redis: too many breakers");
    return BREAKER_ENOMEM;
}

static void redis_detach(int site, breaker *b) {
    assert_int_equal(breaker_redis_detach(fleets[site], b), BREAKER_OK);
    for (size_t i = 0; i < sizeof attached / sizeof attached[0]; i++)
        if (attached[i].b == b) attached[i].b = NULL;
}

static void redis_sync(void) {
    for (int i = 0; i < 2; i++)
        assert_int_equal(breaker_redis_flush(fleets[i]), BREAKER_OK);
}

int main(void) {
    if (test_redis_start(&server) != 0) return 1;
    static const struct store_under_test redis = {
        .name = "redis",
        .setup = redis_setup,
        .teardown = redis_teardown,
        .attach = redis_attach,
        .detach = redis_detach,
        .sync = redis_sync,
    };
    int rc = store_contract_run(&redis);
    test_redis_stop(&server);
    return rc;
}
