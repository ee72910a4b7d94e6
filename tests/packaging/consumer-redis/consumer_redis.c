/* SPDX-License-Identifier: MIT */
/*
 * consumer_redis.c - links the installed breaker::breaker and breaker::redis
 * together (one copy of the core: libbreaker_redis links libbreaker) and runs
 * without a Redis: the fleet handle starts degraded, a name attaches, its
 * closed calls are the local breaker's; a plain breaker of the same program
 * works beside it.
 */
#include <breaker.h>
#include <breaker/redis.h>

#include <stdio.h>

int main(void) {
    breaker_redis_config rc;
    breaker_redis_config_init(&rc);
    rc.unix_path = "/nonexistent/breaker-consumer.sock";
    breaker_redis *fleet;
    char msg[256] = "";
    if (breaker_redis_open(&rc, &fleet, msg, sizeof msg) != BREAKER_OK) {
        fprintf(stderr, "breaker_redis_open: %s\n", msg);
        return 1;
    }
    breaker *b, *plain;
    if (breaker_redis_attach(fleet, "consumer", NULL, &b, msg, sizeof msg) != BREAKER_OK) {
        fprintf(stderr, "breaker_redis_attach: %s\n", msg);
        return 1;
    }
    if (breaker_create(NULL, &plain) != BREAKER_OK) return 1;
    breaker_permit p, q;
    if (breaker_acquire(b, &p) != BREAKER_OK) return 1;
    if (breaker_acquire(plain, &q) != BREAKER_OK) return 1;
    if (breaker_complete(b, &p, BREAKER_SUCCESS) != BREAKER_OK) return 1;
    if (breaker_complete(plain, &q, BREAKER_SUCCESS) != BREAKER_OK) return 1;
    /* A permit of one is not the other's: the two come from one core. */
    if (breaker_complete(plain, &p, BREAKER_SUCCESS) != BREAKER_EINVAL) return 1;
    printf("breaker_redis %s: %s, plain %s\n", breaker_version_string(),
           breaker_state_name(breaker_get_state(b)), breaker_state_name(breaker_get_state(plain)));
    breaker_destroy(plain);
    breaker_redis_close(fleet);
    return 0;
}
