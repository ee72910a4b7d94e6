/* SPDX-License-Identifier: MIT */
/*
 * breaker_control.h - breaker_control_apply() (include/breaker.h) as the
 * tests use it: one action on one breaker, with who and why, in a line.
 * fleet_control.h is its twin for the fleet's control record.
 */
#ifndef BREAKER_TEST_BREAKER_CONTROL_H
#define BREAKER_TEST_BREAKER_CONTROL_H

#include <breaker.h>

#include <stddef.h>
#include <stdint.h>

/* `action` on `b` for `for_ns` (0: no end; OPEN_FOR needs one), by `who`
 * because of `why` (either NULL). @return breaker_control_apply()'s, its
 * message in `msg` (NULL: none). */
static inline int control_apply(breaker *b, enum breaker_control_action action, uint64_t for_ns,
                                const char *who, const char *why, char *msg, size_t msg_len) {
    breaker_control c;
    breaker_control_init(&c);
    c.action = action;
    c.for_ns = for_ns;
    c.who = who;
    c.why = why;
    return breaker_control_apply(b, &c, msg, msg_len);
}

#endif
