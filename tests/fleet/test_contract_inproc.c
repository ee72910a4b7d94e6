/* SPDX-License-Identifier: MIT */
/*
 * test_contract_inproc.c - the store contract (store_contract.h) for the
 * fleet store's real client (breaker/redis.h) over the in-process
 * transport (src/store/redis/inproc/link.h): the real rounds, the real
 * probe gate and the real Lua scripts, in an in-process Redis on the real
 * monotonic clock, as `breaker simulate` runs its fleet scenarios. Two
 * sites are two fleet handles (two hosts) with no flusher thread; sync() is
 * a round of each, as each host's flusher would make one within an
 * interval; calls are breaker_acquire() and breaker_complete(), so probes
 * take leases inside them. The contract's breakers trip on two consecutive
 * failures: the fleet keeps a run of failures for that policy, so the two
 * failures that trip one site's breaker trip the fleet at the next round,
 * and through it the other site.
 */
#define _GNU_SOURCE
#define BREAKER_REDIS_TRANSPORT_EXPERIMENTAL
#include "store_contract.h"

#include "store/redis/inproc/link.h"
#include "test_util.h"

#include <breaker/redis_transport.h>

#include <string.h>
#include <time.h>

static struct breaker__redis_inproc *redis;
static breaker_redis *sites[2];

static uint64_t mono(void *ctx) {
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int inproc_setup(void) {
    redis = breaker__redis_inproc_create(mono, NULL);
    if (redis == NULL) return -1;
    for (int i = 0; i < 2; i++) {
        struct breaker__inproc_link *link = breaker__inproc_link_create(redis, mono, NULL);
        breaker_redis_config cfg;
        breaker_redis_config_init(&cfg);
        char msg[256];
        if (link == NULL || breaker_redis_open_transport(&cfg, &breaker__inproc_link_ops, link,
                                                         BREAKER_REDIS_NO_FLUSHER, &sites[i], msg,
                                                         sizeof msg) != BREAKER_OK)
            return -1;
    }
    return 0;
}

static void inproc_teardown(void) {
    for (int i = 0; i < 2; i++) {
        breaker_redis_close(sites[i]);
        sites[i] = NULL;
    }
    breaker__redis_inproc_destroy(redis);
    redis = NULL;
}

static int inproc_attach(int site, const char *name, const breaker_config *cfg, breaker **out) {
    return breaker_redis_attach(sites[site], name, cfg, out, NULL, 0);
}

static void inproc_detach(int site, breaker *b) {
    assert_int_equal(breaker_redis_detach(sites[site], b), BREAKER_OK);
}

static void inproc_sync(void) {
    for (int i = 0; i < 2; i++)
        (void)breaker_redis_flush(sites[i]);
}

static int inproc_acquire(breaker *b, breaker_permit *p) { return breaker_acquire(b, p); }

static int inproc_complete(breaker *b, breaker_permit *p, enum breaker_outcome outcome) {
    return breaker_complete(b, p, outcome);
}

int main(void) {
    static const struct store_under_test fleet_inproc = {
        .name = "fleet store over the in-process transport",
        .setup = inproc_setup,
        .teardown = inproc_teardown,
        .attach = inproc_attach,
        .detach = inproc_detach,
        .sync = inproc_sync,
        .acquire = inproc_acquire,
        .complete = inproc_complete,
    };
    return store_contract_run(&fleet_inproc);
}
