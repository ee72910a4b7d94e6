/* SPDX-License-Identifier: MIT */
/*
 * dependency.c - the simulated dependency (sim/dependency.h), the one model
 * simulate.c and fleet_sim.c call.
 */
#include "sim/dependency.h"

#include "cli/parse.h"

#include "common/splitmix.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

double tool_draw(uint64_t seed, uint64_t id, unsigned what) {
    uint64_t x = breaker__splitmix64(seed ^ breaker__splitmix64(id * 8u + what));
    return ((double)(x >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

uint64_t tool_arrival_gap(const struct tool_scenario *sc, uint64_t id) {
    return (uint64_t)(-log(tool_draw(sc->seed, id, TOOL_DRAW_ARRIVAL)) / sc->rate * 1e9);
}

void tool_dependency_init(struct tool_dependency *d, const struct tool_scenario *sc) {
    memset(d, 0, sizeof(*d));
    d->sc = sc;
    for (size_t i = 0; i < sc->phase_count; i++)
        d->phase_start[i + 1] = d->phase_start[i] + sc->phases[i].duration_ns;
}

const struct tool_phase *tool_dependency_phase(struct tool_dependency *d, uint64_t t) {
    while (d->phase + 1 < d->sc->phase_count && t >= d->phase_start[d->phase + 1])
        d->phase++;
    return &d->sc->phases[d->phase];
}

struct tool_call_answer tool_dependency_call(struct tool_dependency *d, uint64_t t, uint64_t id,
                                             bool abusive) {
    const struct tool_scenario *sc = d->sc;
    const struct tool_phase *p = tool_dependency_phase(d, t);
    struct tool_call_answer a = {.answer = TOOL_ANSWER_TIMEOUT, .took_ns = sc->timeout_ns};
    /* Warm-up starts with the phase, and again after each knockdown: a
     * dependency that fell over comes back cold. */
    uint64_t warm_start = d->phase_start[d->phase];
    if (d->knocked_until > warm_start) warm_start = d->knocked_until;
    double progress = tool_phase_progress(p, t, warm_start);

    bool down = p->kind == PHASE_DOWN || t < d->knocked_until;
    if (!down) {
        double cap = tool_phase_capacity(p, progress);
        if (p->capacity > 0 && (double)(d->in_flight + 1) > cap) {
            /* Overload: it falls over, and this call with it. */
            d->knocked_until = tool_add_ns(t, p->knockdown_ns);
            d->knockdowns++;
            down = true;
        }
    }
    a.dead = down;
    if (down) {
        if (p->down == DOWN_REFUSED) { /* connect refused */
            a.answer = TOOL_ANSWER_ERROR;
            a.took_ns = sc->timeout_ns < TOOL_MS ? sc->timeout_ns : TOOL_MS;
        }
        return a;
    }

    double latency =
        tool_phase_latency_ns(p, progress, tool_draw(sc->seed, id, TOOL_DRAW_LATENCY_U1),
                              tool_draw(sc->seed, id, TOOL_DRAW_LATENCY_U2));
    a.holds_capacity = true;
    d->in_flight++;
    if (latency >= (double)sc->timeout_ns || (abusive && p->abuser_hangs)) return a;
    if (abusive) {
        a.answer = TOOL_ANSWER_ERROR; /* the abusive caller's requests always fail */
    } else {
        a.answer = tool_draw(sc->seed, id, TOOL_DRAW_ERROR) < p->error_rate ? TOOL_ANSWER_ERROR
                                                                            : TOOL_ANSWER_OK;
        if (a.answer == TOOL_ANSWER_ERROR) a.retry_after_ns = p->retry_after_ns;
    }
    a.took_ns = latency < 1.0 ? 1 : (uint64_t)latency;
    return a;
}

void tool_dependency_done(struct tool_dependency *d, const struct tool_call_answer *a) {
    if (a->holds_capacity) d->in_flight--;
}

void tool_dependency_bands(const struct tool_dependency *d, struct tool_timeline *tl) {
    const struct tool_scenario *sc = d->sc;
    for (size_t i = 0; i < sc->phase_count && i < TOOL_MAX_PHASE; i++) {
        struct tool_band *band = &tl->bands[tl->band_count++];
        band->from_ns = d->phase_start[i];
        band->to_ns = d->phase_start[i] + sc->phases[i].duration_ns;
        snprintf(band->label, sizeof(band->label), "%s", sc->phases[i].name);
        band->shade = tool_phase_is_outage(&sc->phases[i])     ? 1
                      : sc->phases[i].kind == PHASE_RECOVERING ? 2
                                                               : 0;
    }
}
