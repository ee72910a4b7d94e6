/* SPDX-License-Identifier: MIT */
/*
 * owner.h - how a component of the library owns the breakers it creates.
 *
 * The registry (and later the stores) create breakers on a user's behalf and
 * must recognise them again from a bare `breaker *`: to drop a reference, to
 * answer its name, to record its transitions. That identity is an explicit
 * field of the handle, set at creation and never copied into the
 * configuration, so a breaker built from breaker_get_config() of an owned
 * breaker is just a breaker: nobody's, with the user's own callback.
 */
#ifndef BREAKER_CORE_OWNER_H
#define BREAKER_CORE_OWNER_H

#include "breaker.h"

struct breaker__owner {
    /* Which component owns the breaker: the address of a static object of
     * that component, so kinds cannot collide. NULL: not owned. */
    const void *kind;
    /* The owner's record for this breaker (the registry's entry). */
    void *ctx;
    /* Called for every transition, in the thread and process that made it,
     * before the configuration's own on_event; NULL for none. */
    void (*on_event)(void *ctx, breaker *b, const breaker_event *ev);
};

/* breaker_create() with an owner (copied into the handle; may be NULL). */
int breaker__create_owned(const breaker_config *cfg, const struct breaker__owner *owner,
                          breaker **out);

/* The owner's ctx when `b` is owned by `kind`, else NULL. One compare: cheap
 * enough for request paths (registry release). */
void *breaker__owner_ctx(const breaker *b, const void *kind);

#endif /* BREAKER_CORE_OWNER_H */
