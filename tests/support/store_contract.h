/* SPDX-License-Identifier: MIT */
/*
 * store_contract.h - the behaviours every store of named breakers promises,
 * written once (store_contract.c) and run against each store through an
 * adapter: the process heap behind a registry (test_contract_heap.c), a
 * store file (test_contract_file.c), and a fleet store.
 *
 * A store under test hands out handles by name from separate "sites": two
 * sites stand for two processes (or two hosts), each with its own handle on
 * the same named breaker. For the heap, both sites share one registry (the
 * only way two handles of one process share a breaker); for a store file,
 * each site maps the file itself; for a fleet store, each site is its own
 * client.
 *
 * The contract (each line a test in store_contract.c):
 *  - one name is one breaker: a trip seen through one site refuses at the other;
 *  - names are independent;
 *  - the probe budget is the store's: at most half_open_max_probes probes in
 *    flight across the sites;
 *  - a late result does not decide the new state: a permit of an earlier
 *    generation completes STALE, whichever site completes it;
 *  - a probe never completed is reclaimed at its deadline, by another site;
 *  - detaching keeps the state: a new handle on the name sees it;
 *  - the first creator's limits win: a site asking other limits gets the
 *    stored ones.
 *
 * Calls go through the store's acquire() and complete() where it has them
 * (a fleet store's probes need a lease).
 *
 * Times are real (a fleet store decides on its server's clock), and short;
 * where a store propagates state asynchronously, sync() makes it visible
 * before the test looks (a no-op where the state is shared memory).
 */
#ifndef BREAKER_TEST_STORE_CONTRACT_H
#define BREAKER_TEST_STORE_CONTRACT_H

#include <breaker.h>

struct store_under_test {
    const char *name;
    /* Prepare an empty store with two sites; 0 on success. */
    int (*setup)(void);
    void (*teardown)(void);
    /* A handle on `name` at site 0 or 1, with `cfg`. @return BREAKER_OK or
     * BREAKER_CONFIG_DIFFERS (attached to stored limits), else an error. */
    int (*attach)(int site, const char *name, const breaker_config *cfg, breaker **out);
    /* Give back a handle from attach(). */
    void (*detach)(int site, breaker *b);
    /* Make what the sites did visible to each other (may be NULL). */
    void (*sync)(void);
    /* A store whose calls go through its own functions (a fleet store's
     * probes ask for a lease: breaker_redis_acquire()) gives them here; NULL:
     * breaker_acquire() and breaker_complete(). A permit stays where the
     * contract put it from acquire to complete, so an adapter may key what
     * it keeps for the permit by its address. */
    int (*acquire)(breaker *b, breaker_permit *p);
    int (*complete)(breaker *b, breaker_permit *p, enum breaker_outcome outcome);
};

/* Run the contract against `sut`; cmocka's exit status. */
int store_contract_run(const struct store_under_test *sut);

#endif /* BREAKER_TEST_STORE_CONTRACT_H */
