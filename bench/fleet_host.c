/* SPDX-License-Identifier: MIT */
/*
 * fleet_host.c - one process of one simulated host, for bench/fleet_load
 * (make bench, part "fleetload"): a fleet handle as an application opens
 * it (breaker_redis_open() with the defaults: a flush every 250 ms), NAMES
 * names attached (load.0 .. load.N-1, the defaults with a 60 s time window:
 * the same names on every host, one fleet), and a call on every name every
 * 20 ms, each a success (a healthy fleet) or a failure (an outage of every
 * name), until SIGTERM or SIGKILL. With a store file, every process of the
 * host shares it (one flusher per host).
 *
 * It uses the public API alone, so that scripts/bench.sh builds this same
 * program against the library of another commit (the baseline of the same
 * run: bench/fleet_host.cmake) and fleet_load runs both alike.
 *
 * Usage: fleet_host PORT NAMES healthy|outage [STORE|-] [CLUSTER-SEEDS|-]
 */
#define _POSIX_C_SOURCE 200809L

#include <breaker.h>
#include <breaker/redis.h>
#include <breaker/store.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t stop;

static void on_term(int sig) {
    (void)sig;
    stop = 1;
}

static int fail(const char *what, const char *msg) {
    fprintf(stderr, "fleet_host: %s: %s\n", what, msg);
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 4 || (strcmp(argv[3], "healthy") != 0 && strcmp(argv[3], "outage") != 0))
        return fail("usage", "fleet_host PORT NAMES healthy|outage [STORE|-] [CLUSTER-SEEDS|-]");
    int names = atoi(argv[2]);
    if (names < 1 || names > 10000) return fail("NAMES", "1..10000 expected");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    breaker_redis_config rc;
    breaker_redis_config_init(&rc); /* flush every 250 ms, as deployed */
    rc.port = atoi(argv[1]);
    if (argc > 5 && strcmp(argv[5], "-") != 0) rc.cluster_nodes = argv[5];
    char msg[256] = "";
    if (argc > 4 && strcmp(argv[4], "-") != 0) { /* one flusher per host: the host's file */
        breaker_store *st = NULL;
        if (breaker_store_open(argv[4], NULL, &st, msg, sizeof msg) != BREAKER_OK)
            return fail("store", msg);
        rc.store = st; /* never closed: the bench kills the process */
    }
    breaker_redis *f = NULL;
    if (breaker_redis_open(&rc, &f, msg, sizeof msg) != BREAKER_OK) return fail("open", msg);
    breaker **b = calloc((size_t)names, sizeof *b);
    if (b == NULL) return fail("calloc", strerror(errno));
    for (int i = 0; i < names; i++) {
        char name[64];
        snprintf(name, sizeof name, "load.%d", i);
        breaker_config cfg;
        breaker_config_init(&cfg);
        cfg.trip = BREAKER_TRIP_TIME_WINDOW; /* the defaults: 60 s, 10 buckets, 20 calls, 50% */
        int rcode = breaker_redis_attach(f, name, &cfg, &b[i], msg, sizeof msg);
        if (rcode != BREAKER_OK && rcode != BREAKER_CONFIG_DIFFERS) return fail(name, msg);
    }
    enum breaker_outcome outcome = argv[3][0] == 'o' ? BREAKER_FAILURE : BREAKER_SUCCESS;
    while (!stop) {
        for (int i = 0; i < names; i++) {
            breaker_permit p;
            if (breaker_acquire(b[i], &p) == BREAKER_OK) (void)breaker_complete(b[i], &p, outcome);
        }
        struct timespec ts = {.tv_sec = 0, .tv_nsec = 20 * 1000000L};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !stop) {
        }
    }
    /* No close: the measured period is over; the bench kills what is left. */
    return 0;
}
