/* SPDX-License-Identifier: MIT */
/*
 * config.h - the fleet client's checks and defaults of a
 * breaker_redis_config (fleet.c), which every way of opening a handle
 * applies: breaker_redis_open_transport() itself, and the hiredis
 * transport's breaker_redis_open() before it sizes its own timeouts.
 */
#ifndef BREAKER_REDIS_CONFIG_H
#define BREAKER_REDIS_CONFIG_H

#include "breaker/redis.h"

#include <stddef.h>

/* @return BREAKER_OK, or BREAKER_EINVAL naming the field of `cfg` that is
 * out of range. */
int breaker__redis_check_config(const breaker_redis_config *cfg, char *msg, size_t msg_len);

/* What 0 means in the fields of `c` (breaker_redis_config's comments). */
void breaker__redis_apply_defaults(breaker_redis_config *c);

#endif /* BREAKER_REDIS_CONFIG_H */
