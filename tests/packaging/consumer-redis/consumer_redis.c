/* SPDX-License-Identifier: MIT */
/*
 * consumer_redis.c - links the installed breaker::redis and runs without a
 * Redis: the fleet handle starts degraded, a name attaches, its closed calls
 * are the local breaker's.
 */
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
    breaker *b;
    if (breaker_redis_attach(fleet, "consumer", NULL, &b, msg, sizeof msg) != BREAKER_OK) {
        fprintf(stderr, "breaker_redis_attach: %s\n", msg);
        return 1;
    }
    breaker_redis_permit p;
    if (breaker_redis_acquire(fleet, b, &p) != BREAKER_OK) return 1;
    if (breaker_redis_complete(fleet, b, &p, BREAKER_SUCCESS) != BREAKER_OK) return 1;
    printf("breaker_redis %s: %s\n", breaker_version_string(),
           breaker_state_name(breaker_get_state(b)));
    breaker_redis_close(fleet);
    return 0;
}
