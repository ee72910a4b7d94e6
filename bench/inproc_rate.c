/* SPDX-License-Identifier: MIT */
/*
 * inproc_rate.c - how many fleet calls per second the in-process Redis
 * (src/store/redis/inproc/) answers on this machine, for sizing a
 * simulation: the flush script with deltas (EVALSHA, a healthy name's full
 * flush) and a healthy name's state read (HMGET of the fields a round
 * reads). One name, one host, the clock moving 1 ms a call. Not part of
 * make bench (no baseline: a figure to size a simulation by).
 * Usage: inproc_rate [flushes [reads]]
 */
#define _POSIX_C_SOURCE 200809L

#include "store/redis/inproc/inproc.h"
#include "store/redis/protocol.h"
#include "store/redis/scripts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t clock_read(void *ctx) { return *(uint64_t *)ctx; }

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static breaker_redis_reply *run(struct breaker__redis_inproc *s, int argc, const char **argv) {
    size_t len[48];
    for (int i = 0; i < argc; i++)
        len[i] = strlen(argv[i]);
    breaker_redis_reply *r = breaker__redis_inproc_command(s, argc, argv, len);
    if (r == NULL || r->type == BREAKER_REDIS_REPLY_ERROR) {
        fprintf(stderr, "inproc_rate: %s\n", r != NULL ? r->str : "out of memory");
        exit(1);
    }
    return r;
}

int main(int argc, char **argv) {
    long flushes = argc > 1 ? atol(argv[1]) : 100000, reads = argc > 2 ? atol(argv[2]) : 1000000;
    uint64_t clock = UINT64_C(1700000000000000000);
    struct breaker__redis_inproc *s = breaker__redis_inproc_create(clock_read, &clock);
    breaker_config cfg;
    breaker_config_init(&cfg);
    breaker *b;
    if (s == NULL || breaker_create(&cfg, &b) != BREAKER_OK) return 1;
    breaker_get_config(b, &cfg);
    breaker_destroy(b);
    char limits[BREAKER__FLEET_LIMITS_LEN], ttl[24], host[17];
    breaker__fleet_limits_text(&cfg, limits, sizeof limits);
    breaker__fleet_ttl_text(UINT64_C(60000000000), ttl);
    breaker__fleet_host_id(42, host);
    char keys[FLEET_KEY_COUNT][BREAKER__FLEET_KEY_LEN];
    for (int k = 0; k < FLEET_KEY_COUNT; k++)
        breaker__fleet_key("bench", k, keys[k], sizeof keys[k]);
    const char *load[] = {"SCRIPT", "LOAD", breaker__redis_lua_flush};
    breaker_redis_reply *sha = run(s, 3, load);

    uint64_t seq = 0, gen = 0;
    double t0 = seconds();
    for (long i = 0; i < flushes; i++) {
        clock += UINT64_C(1000000);
        struct breaker__fleet_deltas d = {.calls = 10};
        struct breaker__fleet_call c;
        seq = breaker__fleet_next_seq(seq, clock / 1000);
        breaker__fleet_call_host_flush(&c, gen, &d, host, seq, 0);
        const char *args[48];
        int n = 0;
        args[n++] = "EVALSHA";
        args[n++] = sha->str;
        args[n++] = BREAKER__FLEET_KEY_COUNT_TEXT;
        for (int k = 0; k < FLEET_KEY_COUNT; k++)
            args[n++] = keys[k];
        args[n++] = ttl;
        args[n++] = limits;
        for (int k = 0; k < c.argc; k++)
            args[n++] = c.argv[k];
        breaker_redis_reply *r = run(s, n, args);
        gen = (uint64_t)r->element[ANS_GEN]->integer;
        breaker_redis_reply_free(r);
    }
    double t1 = seconds();
    for (long i = 0; i < reads; i++) {
        const char *args[2 + BREAKER__FLEET_READ_FIELDS] = {"HMGET", keys[FLEET_KEY_STATE]};
        for (int k = 0; k < BREAKER__FLEET_READ_FIELDS; k++)
            args[2 + k] = breaker__fleet_read_fields[k];
        breaker_redis_reply_free(run(s, 2 + BREAKER__FLEET_READ_FIELDS, args));
    }
    double t2 = seconds();
    printf("in-process Redis: %.0f flush scripts/s (%.1f us each), %.0f state reads/s (%.2f us "
           "each)\n",
           (double)flushes / (t1 - t0), (t1 - t0) / (double)flushes * 1e6,
           (double)reads / (t2 - t1), (t2 - t1) / (double)reads * 1e6);
    breaker_redis_reply_free(sha);
    breaker__redis_inproc_destroy(s);
    return 0;
}
