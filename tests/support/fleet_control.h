/* SPDX-License-Identifier: MIT */
/*
 * fleet_control.h - the fleet's control record (breaker_redis_control_apply()
 * and _get(), include/breaker/redis.h) as the tests use it: one change at a
 * time, in a line.
 */
#ifndef BREAKER_TEST_FLEET_CONTROL_H
#define BREAKER_TEST_FLEET_CONTROL_H

#include <breaker/redis.h>

#include <stddef.h>
#include <stdint.h>

/* The fleet forced open or closed (`state` BREAKER_FORCED_OPEN or
 * _CLOSED), `for_ns` 0: no end. */
static inline int fleet_force(breaker_redis *f, const char *name, enum breaker_state state,
                              uint64_t for_ns, const char *who, const char *why, char *msg,
                              size_t msg_len) {
    breaker_redis_control c;
    breaker_redis_control_init(&c);
    c.set = BREAKER_REDIS_SET_FORCED;
    c.forced = state;
    c.for_ns = for_ns;
    c.who = who;
    c.why = why;
    return breaker_redis_control_apply(f, name, &c, msg, msg_len);
}

/* A timed open of the fleet. */
static inline int fleet_open_for(breaker_redis *f, const char *name, uint64_t wait_ns,
                                 const char *who, const char *why, char *msg, size_t msg_len) {
    return fleet_force(f, name, BREAKER_FORCED_OPEN, wait_ns, who, why, msg, msg_len);
}

static inline int fleet_reset(breaker_redis *f, const char *name, const char *who, const char *why,
                              char *msg, size_t msg_len) {
    breaker_redis_control c;
    breaker_redis_control_init(&c);
    c.set = BREAKER_REDIS_RESET;
    c.who = who;
    c.why = why;
    return breaker_redis_control_apply(f, name, &c, msg, msg_len);
}

static inline int fleet_set_shadow(breaker_redis *f, const char *name, int on, const char *who,
                                   const char *why, char *msg, size_t msg_len) {
    breaker_redis_control c;
    breaker_redis_control_init(&c);
    c.set = BREAKER_REDIS_SET_SHADOW;
    c.shadow = on;
    c.who = who;
    c.why = why;
    return breaker_redis_control_apply(f, name, &c, msg, msg_len);
}

/* New limits, from `cfg`, if the record is still at `expect_version` (0:
 * whatever it is). */
static inline int fleet_reconfigure(breaker_redis *f, const char *name, const breaker_config *cfg,
                                    uint64_t expect_version, const char *who, const char *why,
                                    char *msg, size_t msg_len) {
    breaker_redis_control c;
    breaker_redis_control_init(&c);
    c.set = BREAKER_REDIS_SET_LIMITS;
    c.limits = *cfg;
    c.expect_version = expect_version;
    c.who = who;
    c.why = why;
    return breaker_redis_control_apply(f, name, &c, msg, msg_len);
}

#endif /* BREAKER_TEST_FLEET_CONTROL_H */
