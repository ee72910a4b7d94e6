/* SPDX-License-Identifier: MIT */
/*
 * store_cases.c - the benchmark's breakers attached through a store file
 * (breaker/store.h), for the store-backed rows of main.c.
 *
 * Each breaker has the configuration of its in-process counterpart in
 * cases.c and a name of its own in one store, so a row's ratio to that
 * counterpart is what the store costs a call. The store file lives in a new
 * directory under /tmp, made on first use and removed at exit by the process
 * that made it; the bench's forked workers leave it alone (they exit with
 * _exit(), and the handler checks the process id besides).
 */
#define _GNU_SOURCE
#include "cases.h"

#include <breaker/store.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_STORE_CASES 16

static breaker_store *store;
static pid_t store_owner;
static char store_dir[64];
static char store_path[96];
static struct breaker_case *attached[MAX_STORE_CASES];
static unsigned nattached;

static void remove_store(void) {
    if (store == NULL || getpid() != store_owner) return;
    for (unsigned i = 0; i < nattached; i++)
        breaker_case_free(attached[i]);
    nattached = 0;
    breaker_store_close(store);
    store = NULL;
    (void)unlink(store_path);
    (void)rmdir(store_dir);
}

static breaker_store *open_store(void) {
    if (store != NULL) return store;
    snprintf(store_dir, sizeof(store_dir), "/tmp/breaker-bench-XXXXXX");
    if (mkdtemp(store_dir) == NULL) bench_die("mkdtemp %s failed", store_dir);
    snprintf(store_path, sizeof(store_path), "%s/store", store_dir);
    char msg[256] = "";
    int rc = breaker_store_open(store_path, NULL, &store, msg, sizeof(msg));
    if (rc != BREAKER_OK) {
        (void)rmdir(store_dir);
        bench_die("breaker_store_open %s: %s: %s", store_path, breaker_strerror(rc), msg);
    }
    store_owner = getpid();
    if (atexit(remove_store) != 0) bench_die("atexit failed");
    return store;
}

/* Attach a new breaker named "bench.<what>.<n>": every case has its own, as
 * every in-process case has its own breaker_create(). */
static struct breaker_case *attach_case(const char *what, const breaker_config *cfg, int expect) {
    if (nattached == MAX_STORE_CASES) bench_die("too many store-backed cases");
    breaker_store *st = open_store();
    char name[64];
    snprintf(name, sizeof(name), "bench.%s.%u", what, nattached);
    struct breaker_case *c = calloc(1, sizeof(*c));
    if (c == NULL) bench_die("out of memory");
    char msg[256] = "";
    /* A new file, so every name is created here with `cfg`: anything but
     * BREAKER_OK (BREAKER_CONFIG_DIFFERS included) is a broken case. */
    int rc = breaker_store_attach(st, name, cfg, &c->b, msg, sizeof(msg));
    if (rc != BREAKER_OK)
        bench_die("breaker_store_attach %s: %s: %s", name, breaker_strerror(rc), msg);
    c->expect = expect;
    attached[nattached++] = c;
    return c;
}

struct breaker_case *make_store_closed(enum breaker_trip trip) {
    static const char *const names[] = {
        [BREAKER_TRIP_CONSECUTIVE] = "consecutive",
        [BREAKER_TRIP_COUNT_WINDOW] = "count",
        [BREAKER_TRIP_TIME_WINDOW] = "time",
    };
    if ((unsigned)trip >= sizeof(names) / sizeof(names[0]) || names[trip] == NULL)
        bench_die("make_store_closed: trip policy %d", (int)trip);
    breaker_config cfg;
    config_closed(&cfg, trip, 0);
    struct breaker_case *c = attach_case(names[trip], &cfg, BREAKER_OK);
    case_expect_state(c, BREAKER_CLOSED, "store-backed closed case");
    return c;
}

struct breaker_case *make_store_open(void) {
    breaker_config cfg;
    config_open(&cfg);
    struct breaker_case *c = attach_case("open", &cfg, BREAKER_REJECTED_OPEN);
    case_trip(c);
    return c;
}
