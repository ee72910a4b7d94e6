/* SPDX-License-Identifier: MIT */
/*
 * sim/scenario.h - the dependency model and the workload a simulation runs
 * (scenario.c; the built-in scenario, and the files ini_load.c reads).
 */
#ifndef BREAKER_TOOL_SIM_SCENARIO_H
#define BREAKER_TOOL_SIM_SCENARIO_H

#include "cli/config.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TOOL_MAX_PHASE     32
#define TOOL_MAX_INSTANCES 1000 /* hosts of a fleet scenario */

enum tool_phase_kind { PHASE_HEALTHY, PHASE_DOWN, PHASE_ERRORS, PHASE_SLOW, PHASE_RECOVERING };
enum tool_down_mode { DOWN_TIMEOUT, DOWN_REFUSED };

struct tool_phase {
    char name[TOOL_NAME_MAX];
    enum tool_phase_kind kind;
    uint64_t duration_ns;
    uint64_t latency_ns;      /* median answer time (at the end, when recovering) */
    uint64_t latency_p99_ns;  /* 99th percentile (same) */
    uint64_t cold_latency_ns; /* recovering: the median at the start */
    double error_rate;        /* share of answers that are errors */
    uint64_t retry_after_ns;  /* > 0: each error is a 429 Too Many Requests with
                                 Retry-After of this much (the dependency asks
                                 its callers to wait); 0: errors are 5xx */
    enum tool_down_mode down; /* down, and while knocked down */
    uint32_t capacity;        /* calls it can hold at once, 0 = no limit (end value) */
    uint32_t cold_capacity;   /* recovering: capacity at the start */
    uint64_t knockdown_ns;    /* how long an overload keeps it down */
    double abuser_share;      /* share of requests sent by the abusive caller, whose
                                 requests the dependency always answers with an error */
    bool abuser_snipes;       /* the abusive caller also sends one request at the
                                 instant each open wait ends (what
                                 breaker_retry_after_ns() names): the probe */
    bool snipes_by_hint;      /* ...at the instant its own retry hint names
                                 instead (breaker_retry_after_hint_from()):
                                 what a service that publishes hints tells it */
    bool abuser_hangs;        /* the dependency never answers the abusive
                                 caller's requests: each ends at the timeout */
    unsigned given;           /* TOOL_GIVEN_* bits: keys the file set */
};

/* How far a phase's dependency has warmed up at `t` (0..1): from
 * `warm_start` (the phase's start, or the end of its last knockdown) over
 * the phase's duration. The one model simulate and the fleet scenario share. */
static inline double tool_phase_progress(const struct tool_phase *p, uint64_t t,
                                         uint64_t warm_start) {
    double progress = 1.0;
    if (p->duration_ns > 0 && t >= warm_start)
        progress = (double)(t - warm_start) / (double)p->duration_ns;
    return progress > 1.0 ? 1.0 : progress;
}

/* The calls it can hold at once at that progress (meaningful when
 * p->capacity > 0): from cold_capacity up to capacity. */
static inline double tool_phase_capacity(const struct tool_phase *p, double progress) {
    return p->cold_capacity + (double)((int64_t)p->capacity - (int64_t)p->cold_capacity) * progress;
}

/* An answer's time at that progress, from two uniform draws u1, u2 in (0, 1]:
 * log-normal, its median moving geometrically from cold_latency_ns to
 * latency_ns while the dependency warms up, its spread (p99 / median)
 * staying. */
static inline double tool_phase_latency_ns(const struct tool_phase *p, double progress, double u1,
                                           double u2) {
    double median = (double)p->cold_latency_ns *
                    pow((double)p->latency_ns / (double)p->cold_latency_ns, progress);
    double sigma = log((double)p->latency_p99_ns / (double)p->latency_ns) / 2.3263478740;
    double z = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
    return median * exp(sigma * z);
}

/* Keys a phase section set, so that the kind's defaults leave them alone. */
enum {
    TOOL_GIVEN_LATENCY = 1,
    TOOL_GIVEN_P99 = 2,
    TOOL_GIVEN_COLD_LATENCY = 4,
    TOOL_GIVEN_ERROR_RATE = 8,
    TOOL_GIVEN_CAPACITY = 16,
    TOOL_GIVEN_COLD_CAPACITY = 32,
    TOOL_GIVEN_KNOCKDOWN = 64,
};

struct tool_scenario {
    char name[TOOL_NAME_MAX];
    char description[256];
    uint64_t duration_ns; /* 0 = the sum of the phases */
    uint64_t seed;
    uint32_t workers;
    double rate; /* requests per second, Poisson */
    uint64_t timeout_ns;
    uint64_t latency_ns; /* healthy defaults for phases */
    uint64_t latency_p99_ns;
    uint32_t clients;           /* legitimate callers; requests pick one at random */
    bool clients_given;         /* the file set `clients` (shown in the report) */
    uint32_t instances;         /* > 0: a fleet scenario of this many hosts (fleet_sim.c) */
    uint64_t flush_interval_ns; /* fleet: each host's flush interval, 0 = 250ms */
    struct tool_phase phases[TOOL_MAX_PHASE];
    size_t phase_count;
    struct tool_breakers breakers;
};

/* The built-in scenario, as INI text (`breaker simulate --print-scenario`). */
extern const char tool_builtin_scenario[];

void tool_scenario_init(struct tool_scenario *sc);
void tool_scenario_free(struct tool_scenario *sc);
/* Apply kind defaults, check ranges; @return 0 or -1 with `msg`. */
int tool_scenario_finish(struct tool_scenario *sc, char *msg, size_t msg_len);
const char *tool_phase_kind_name(enum tool_phase_kind kind);
/* Down, slow, or errors at 50% or more: what the outage columns count. */
bool tool_phase_is_outage(const struct tool_phase *p);
/* True if some phase has an abusive caller (abuser_share > 0, or one that
 * snipes the probes). */
bool tool_scenario_has_abuser(const struct tool_scenario *sc);

/* Load a scenario file `path` (or, with path NULL, the text `text`) into
 * `sc`: a [scenario] section, [phase NAME] sections in order, and
 * [breaker NAME] sections into `breakers` (cli/config.h's tool_load_ini(),
 * which says how lines are read). With `sc` NULL only the breakers are
 * read. @return 0, or -1 with "file:line: message" in `msg`. */
int tool_load_scenario(const char *path, const char *text, struct tool_scenario *sc,
                       struct tool_breakers *breakers, char *msg, size_t msg_len);
/* The same from an open stream, called `name` in messages. */
int tool_load_scenario_stream(FILE *in, const char *name, struct tool_scenario *sc,
                              struct tool_breakers *breakers, char *msg, size_t msg_len);

#endif /* BREAKER_TOOL_SIM_SCENARIO_H */
