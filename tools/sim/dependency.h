/* SPDX-License-Identifier: MIT */
/*
 * sim/dependency.h - the dependency both simulations call (dependency.c):
 * one service's workers (simulate.c) or a fleet's hosts (fleet_sim.c) share
 * it. It follows the scenario's phases; it can hold `capacity` calls at once
 * (0 = no limit) and a call beyond that knocks it down for `knockdown`,
 * during which it answers like a down phase; while recovering it warms up
 * (sim/scenario.h's tool_phase_progress()), and a knockdown starts the
 * warm-up again. Its random answers come from counter-based draws, so a
 * run repeats exactly.
 */
#ifndef BREAKER_TOOL_SIM_DEPENDENCY_H
#define BREAKER_TOOL_SIM_DEPENDENCY_H

#include "sim/scenario.h"
#include "sim/timeline.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The purposes of a request's draws that the dependency uses; a
 * simulation numbers its own from TOOL_DRAW_OWN. */
enum { TOOL_DRAW_ARRIVAL, TOOL_DRAW_LATENCY_U1, TOOL_DRAW_LATENCY_U2, TOOL_DRAW_ERROR };
#define TOOL_DRAW_OWN 4 /* at most 8 purposes in all */

/* A uniform draw in (0, 1) for request `id` and purpose `what`: the
 * library's splitmix64 finaliser applied to the counter, then to the seed. */
double tool_draw(uint64_t seed, uint64_t id, unsigned what);

/* Request `id`'s arrival after request id - 1 (after the start for id 0):
 * the scenario's Poisson process of `rate` per second. */
uint64_t tool_arrival_gap(const struct tool_scenario *sc, uint64_t id);

enum tool_answer { TOOL_ANSWER_OK, TOOL_ANSWER_ERROR, TOOL_ANSWER_TIMEOUT };

struct tool_dependency {
    const struct tool_scenario *sc;
    uint64_t phase_start[TOOL_MAX_PHASE + 1]; /* phase i runs from [i] to [i + 1] */
    size_t phase;                             /* the phase at the latest time asked */
    uint64_t knocked_until;
    uint32_t in_flight;  /* calls it holds now */
    uint64_t knockdowns; /* overloads that knocked it down */
};

/* One call's answer. */
struct tool_call_answer {
    enum tool_answer answer;
    uint64_t took_ns;        /* how long it takes, capped by the timeout */
    bool holds_capacity;     /* counted in in_flight until tool_dependency_done() */
    bool dead;               /* it was down when the call reached it */
    uint64_t retry_after_ns; /* an error of a phase with retry_after: a 429 that
                                asks to wait this much; else 0 */
};

/* Starts at time 0 in the first phase. */
void tool_dependency_init(struct tool_dependency *d, const struct tool_scenario *sc);
/* The phase at `t`; times only move forward. */
const struct tool_phase *tool_dependency_phase(struct tool_dependency *d, uint64_t t);
/* The answer to request `id`'s call made at `t`; the abusive caller's
 * calls (`abusive`) that it answers are errors. */
struct tool_call_answer tool_dependency_call(struct tool_dependency *d, uint64_t t, uint64_t id,
                                             bool abusive);
/* The call is over: it no longer holds capacity. */
void tool_dependency_done(struct tool_dependency *d, const struct tool_call_answer *a);
/* The phases as the timeline's labelled bands. */
void tool_dependency_bands(const struct tool_dependency *d, struct tool_timeline *tl);

#endif /* BREAKER_TOOL_SIM_DEPENDENCY_H */
