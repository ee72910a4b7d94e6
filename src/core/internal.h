/* SPDX-License-Identifier: MIT */
/*
 * internal.h - what the core's files (and the store and tests that work on a
 * block) declare to each other, and the way in to the rest:
 *   core/layout.h   the shared block's layout and its static asserts
 *   core/words.h    the encodings of its atomic words
 *   core/handle.h   the per-process handle around it
 *   core/stripes.h  the calling thread's stripe and how it counts there
 *                   (core/arch/<arch>/stripe_seq.h: the per-CPU sequences)
 *   core/window.h   the failure windows (window.c)
 * and below: forwarding a handle, checked permits, the clock and the
 * configuration's defaults.
 */
#ifndef BREAKER_INTERNAL_H
#define BREAKER_INTERNAL_H

#include "common/atomics.h"
#include "common/message.h"
#include "common/splitmix.h"
#include "breaker.h"
#include "core/config_fields.h"
#include "core/handle.h"
#include "core/layout.h"
#include "core/owner.h"
#include "core/stripes.h"
#include "core/window.h"
#include "core/words.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Forward every call and query of `from` to `to` (a handle on the same name
 * in the file now at the store's path), from now on: `to` is owned by
 * `from` (destroyed with it). Calls already inside `from` finish on its old
 * block; permits it gave out complete there. Once per handle; off the call
 * path (block.c). */
void breaker__forward(struct breaker *from, struct breaker *to);

/* ---- A breaker's state carried to a new block (control.c) ----------------- */
/* breaker_trip_outside_for() that enters OPEN at backoff level `k` (the
 * open wait's exponent; the next failed probe waits open_ns * backoff^(k+1)),
 * for a store that carries a breaker's state to a new block. */
int breaker__trip_outside_k(struct breaker *b, uint64_t gen, uint64_t wait_ns, unsigned k,
                            const breaker_evidence *evidence);
/* The backoff level of `b`'s state word now. */
unsigned breaker__backoff_level(struct breaker *b);

/* OPEN: how long `b`'s wait has left (at least 1 ns); any other state: 0.
 * Applies nothing and emits nothing (a store reads it under its lock). */
uint64_t breaker__open_left_ns(struct breaker *b);

/* FORCED_CLOSED with an expiry (breaker_force_closed_for()): how long it
 * has left (at least 1 ns); without one, or any other state: 0. Applies
 * nothing and emits nothing. */
uint64_t breaker__forced_left_ns(struct breaker *b);

/* ---- The handle's home (block.c) ----------------------------------------- */
/* Tell `detach(ctx, b)` when `b` is destroyed, before it is freed. */
void breaker__set_home(struct breaker *b, void (*detach)(void *ctx, struct breaker *b), void *ctx);
/* The home's lock for writers of the block's limits (handle.h, home_lock),
 * with the ctx of breaker__set_home(). */
void breaker__set_home_lock(struct breaker *b,
                            int (*lock)(void *ctx, bool lock, char *msg, size_t msg_len));
/* The home's record of an operator's control (handle.h, home_control), with
 * the ctx of breaker__set_home(). */
void breaker__set_home_control(struct breaker *b,
                               void (*record)(void *ctx, struct breaker *b,
                                              const struct breaker__control_made *made));

/* ---- Live reconfiguration (reconfig.c) ------------------------------------- */
/* Complete or drop a change a writer left half made (it died holding the
 * store file's lock): call with that lock held. @return whether there was
 * one. */
bool breaker__limits_repair(struct breaker__shared *s);
/* Whether breaker_reconfigure(b, cfg) would be refused for `cfg` itself
 * (invalid, or a change the block cannot follow), without changing
 * anything. @return BREAKER_OK or BREAKER_EINVAL with `msg`. */
int breaker__reconfigure_check(struct breaker *b, const breaker_config *cfg, char *msg, size_t len);
/* The configuration generation of `s` (1 at creation, +1 per change). */
uint64_t breaker__limits_version(const struct breaker__shared *s);
/* Write `cfg` into `s`'s limits as the next version (the exclusion taken
 * there; `repair`: the caller holds the store file's lock, so a change a
 * dead writer left is completed first). `expect` non-zero: refused with
 * BREAKER_STALE unless the configuration generation is that. @return
 * BREAKER_OK with `*changed` (false: `cfg` asks for the limits there are),
 * the limits before and after and the generation now; else the refusal
 * with `msg`. */
int breaker__limits_change(struct breaker__shared *s, const breaker_config *cfg, uint64_t expect,
                           bool repair, bool *changed, struct breaker__limits *before,
                           struct breaker__limits *after, uint64_t *generation, char *msg,
                           size_t len);

/* ---- Checked permits (kept by breaker.c, allocated by block.c) ------------ */
/* Admissions a stripe's run remembers: a copy completed within this many
 * later admissions on the same stripe is told apart from its original. */
#define BREAKER__CHECK_RING 1024u
struct breaker__check_run {
    _Alignas(BREAKER__CACHELINE) breaker__atomic64 seq; /* admissions so far */
    /* Admission n (from 1) at [(n - 1) % RING]: n << 1 | settled. */
    _Alignas(BREAKER__CACHELINE) breaker__atomic64 ring[BREAKER__CHECK_RING];
};

/* The configuration the limits `lim` are (callbacks, clock NULL; block.c). */
void breaker__config_of_limits(const struct breaker__limits *lim, breaker_config *cfg);

/* ---- Time ---------------------------------------------------------------- */
void breaker__clock_setup(struct breaker *b, const struct breaker__limits *lim);

/* ---- Configuration (config.c) -------------------------------------------- */
void breaker__limits_from_config(const breaker_config *cfg, struct breaker__limits *lim);

#endif /* BREAKER_INTERNAL_H */
