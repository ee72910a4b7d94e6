/* SPDX-License-Identifier: MIT */
/*
 * test_contract_model.c - the store contract (store_contract.h) for the
 * in-process model of the Redis fleet store (tools/sim/fleet_model.h), the one
 * `breaker simulate` runs its fleet scenario on: two sites are two clients
 * (two hosts) of one model on the real monotonic clock; sync() is a flush of
 * both, as each host's flusher would make one within an interval; calls go
 * through the client's acquire and complete, so probes ask for leases.
 * The contract's breakers trip on two consecutive failures: the fleet keeps
 * a run of failures for that policy, as the Redis flush script does, so the
 * two failures that trip one site's breaker trip the fleet at the next
 * flush, and through it the other site.
 */
#define _GNU_SOURCE
#include "store_contract.h"

#include "../../tools/sim/fleet_model.h"
#include "test_util.h"

#include <string.h>
#include <time.h>

static struct fleet_model *model;
static struct fleet_client *sites[2];

/* The permits the contract holds, by address: a leased probe's lease. */
static struct {
    breaker_permit *at;
    struct fleet_permit fp;
} held[32];

static uint64_t mono(void *ctx) {
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int model_setup(void) {
    struct fleet_model_config cfg = {.clock = mono};
    if (fleet_model_create(&cfg, &model) != 0) return -1;
    for (int i = 0; i < 2; i++)
        if (fleet_client_create(model, &sites[i]) != 0) return -1;
    memset(held, 0, sizeof(held));
    return 0;
}

static void model_teardown(void) {
    for (int i = 0; i < 2; i++) {
        fleet_client_destroy(sites[i]);
        sites[i] = NULL;
    }
    fleet_model_destroy(model);
    model = NULL;
}

static int model_attach(int site, const char *name, const breaker_config *cfg, breaker **out) {
    return fleet_client_attach(sites[site], name, cfg, out);
}

static void model_detach(int site, breaker *b) { fleet_client_detach(sites[site], b); }

static void model_sync(void) {
    for (int i = 0; i < 2; i++)
        fleet_client_flush(sites[i]);
}

static int model_acquire(breaker *b, breaker_permit *p) {
    struct fleet_permit fp;
    int rc = fleet_client_acquire(fleet_model_client_of(model, b), b, &fp);
    *p = fp.permit;
    if (rc == BREAKER_OK && fleet_permit_is_leased(&fp)) {
        for (size_t i = 0; i < sizeof(held) / sizeof(held[0]); i++) {
            if (held[i].at == NULL) {
                held[i].at = p;
                held[i].fp = fp;
                return rc;
            }
        }
        fail_msg("more than %zu leased permits held", sizeof(held) / sizeof(held[0]));
    }
    return rc;
}

static int model_complete(breaker *b, breaker_permit *p, enum breaker_outcome outcome) {
    struct fleet_permit fp = {.permit = *p};
    for (size_t i = 0; i < sizeof(held) / sizeof(held[0]); i++) {
        if (held[i].at == p) {
            fp = held[i].fp;
            held[i].at = NULL;
            break;
        }
    }
    return fleet_client_complete(fleet_model_client_of(model, b), b, &fp, outcome, 0);
}

int main(void) {
    static const struct store_under_test fleet_model = {
        .name = "fleet model",
        .setup = model_setup,
        .teardown = model_teardown,
        .attach = model_attach,
        .detach = model_detach,
        .sync = model_sync,
        .acquire = model_acquire,
        .complete = model_complete,
    };
    return store_contract_run(&fleet_model);
}
