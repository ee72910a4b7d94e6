/* SPDX-License-Identifier: MIT */
/*
 * scenario.c - scenarios: defaults, the built-in one, and checks.
 *
 * The built-in scenario is INI text parsed by the same loader as a user's
 * file, so `breaker simulate --print-scenario` prints a file that gives the
 * same result, ready to copy and edit.
 */
#include "sim/scenario.h"

#include "cli/parse.h"
#include "cli/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char tool_builtin_scenario[] =
    "; The built-in scenario of `breaker simulate`: a service whose database\n"
    "; hangs for three minutes, then comes back cold.\n"
    "[scenario]\n"
    "name = database outage\n"
    "description = the dependency hangs for 3m, then comes back cold: slow, with little "
    "capacity, for 2m\n"
    "duration = 10m\n"
    "seed = 1\n"
    "workers = 64\n"
    "clients = 0         ; calls name no caller: every one counts alike\n"
    "rate = 200          ; requests per second\n"
    "timeout = 1s        ; per call to the dependency\n"
    "latency = 20ms      ; healthy median answer time\n"
    "latency_p99 = 150ms\n"
    "\n"
    "[phase steady]\n"
    "kind = healthy\n"
    "duration = 1m\n"
    "\n"
    "[phase blip]\n"
    "kind = errors      ; a short error burst a breaker should ride out\n"
    "duration = 15s\n"
    "error_rate = 20%\n"
    "\n"
    "[phase steady]\n"
    "kind = healthy\n"
    "duration = 45s\n"
    "\n"
    "[phase outage]\n"
    "kind = down\n"
    "down = timeout     ; calls hang until the caller's timeout\n"
    "duration = 3m\n"
    "\n"
    "[phase warm-up]\n"
    "kind = recovering  ; cold: slow and little capacity, both improving;\n"
    "                   ; an overload knocks it down and it starts cold again\n"
    "duration = 2m\n"
    "cold_latency = 400ms\n"
    "cold_capacity = 10 ; calls in flight it can take at the start...\n"
    "capacity = 200     ; ...and at the end; more knocks it down\n"
    "knockdown = 10s\n"
    "\n"
    "[phase healthy]\n"
    "kind = healthy     ; the rest of the run\n"
    "\n"
    "[breaker defaults]\n"
    "description = the library's defaults: 60s window, 30s open doubling to 5m\n"
    "\n"
    "[breaker tuned]\n"
    "description = 10s window, 5s open doubling to 30s, one probe at a time\n"
    "window = 10s\n"
    "min_calls = 20\n"
    "failure_rate = 50%\n"
    "open = 5s\n"
    "open_max = 30s\n"
    "slow_call = 250ms  ; a slower probe fails: do not close on a cold dependency\n"
    "slow_call_rate = 80%\n"
    "half_open_max_probes = 1\n"
    "half_open_successes = 5\n"
    "probe_timeout = 2s\n"
    "\n"
    "[breaker unbounded probes]\n"
    "description = as tuned, but half-open lets every call through\n"
    "window = 10s\n"
    "min_calls = 20\n"
    "failure_rate = 50%\n"
    "open = 5s\n"
    "open_max = 30s\n"
    "slow_call = 250ms\n"
    "slow_call_rate = 80%\n"
    "half_open_max_probes = 4095\n"
    "half_open_successes = 5\n"
    "probe_timeout = 2s\n"
    "\n"
    "[breaker ramp]\n"
    "description = as tuned, but any probe answered in time is good, and after a close "
    "traffic ramps up from 5% over 60s\n"
    "window = 10s\n"
    "min_calls = 20\n"
    "failure_rate = 50%\n"
    "open = 5s\n"
    "open_max = 30s\n"
    "half_open_max_probes = 1\n"
    "half_open_successes = 5\n"
    "probe_timeout = 2s\n"
    "ramp = 60s         ; close as soon as probes answer, but admit 5% of calls\n"
    "ramp_start = 5%    ; at first: the cold dependency holds 10 calls, the load ~80\n";

void tool_scenario_init(struct tool_scenario *sc) {
    memset(sc, 0, sizeof(*sc));
    snprintf(sc->name, sizeof(sc->name), "scenario");
    sc->seed = 1;
    sc->workers = 64;
    sc->rate = 100.0;
    sc->timeout_ns = TOOL_SEC;
    sc->latency_ns = 20 * TOOL_MS;
    sc->latency_p99_ns = 150 * TOOL_MS;
    sc->clients = 100;
}

void tool_scenario_free(struct tool_scenario *sc) { tool_breakers_free(&sc->breakers); }

const char *tool_phase_kind_name(enum tool_phase_kind kind) {
    switch (kind) {
    case PHASE_HEALTHY:
        return "healthy";
    case PHASE_DOWN:
        return "down";
    case PHASE_ERRORS:
        return "errors";
    case PHASE_SLOW:
        return "slow";
    case PHASE_RECOVERING:
        return "recovering";
    }
    return "unknown";
}

bool tool_phase_is_outage(const struct tool_phase *p) {
    /* A small error burst is weather, not an outage: a breaker should ride
     * it out, and counting it would blur the comparison. */
    return p->kind == PHASE_DOWN || p->kind == PHASE_SLOW ||
           (p->kind == PHASE_ERRORS && p->error_rate >= 0.5);
}

bool tool_scenario_has_abuser(const struct tool_scenario *sc) {
    for (size_t i = 0; i < sc->phase_count; i++)
        if (sc->phases[i].abuser_share > 0.0 || sc->phases[i].abuser_snipes) return true;
    return false;
}

static void phase_defaults(const struct tool_scenario *sc, struct tool_phase *p) {
    double spread = (double)sc->latency_p99_ns / (double)sc->latency_ns;
    if (!(p->given & TOOL_GIVEN_LATENCY))
        p->latency_ns = p->kind == PHASE_SLOW ? 10 * sc->latency_ns : sc->latency_ns;
    if (!(p->given & TOOL_GIVEN_P99))
        p->latency_p99_ns = (uint64_t)((double)p->latency_ns * spread);
    if (!(p->given & TOOL_GIVEN_COLD_LATENCY)) p->cold_latency_ns = 10 * p->latency_ns;
    if (!(p->given & TOOL_GIVEN_ERROR_RATE)) p->error_rate = p->kind == PHASE_ERRORS ? 0.5 : 0.0;
    if (p->kind == PHASE_RECOVERING) {
        if (!(p->given & TOOL_GIVEN_COLD_CAPACITY)) p->cold_capacity = 10;
        if (!(p->given & TOOL_GIVEN_CAPACITY)) p->capacity = 10 * p->cold_capacity;
    } else {
        p->cold_latency_ns = p->latency_ns;
        p->cold_capacity = p->capacity;
    }
    if (!(p->given & TOOL_GIVEN_KNOCKDOWN)) p->knockdown_ns = 10 * TOOL_SEC;
}

int tool_scenario_finish(struct tool_scenario *sc, char *msg, size_t msg_len) {
    if (sc->phase_count == 0) {
        /* No phases: healthy throughout. */
        struct tool_phase *p = &sc->phases[0];
        memset(p, 0, sizeof(*p));
        snprintf(p->name, sizeof(p->name), "healthy");
        p->kind = PHASE_HEALTHY;
        sc->phase_count = 1;
    }
    if (sc->latency_ns == 0 || sc->latency_p99_ns < sc->latency_ns) {
        snprintf(msg, msg_len, "scenario: latency_p99 must be at least latency (and latency > 0)");
        return -1;
    }
    /* A run lasts at most a week: checked on the sum as it grows, so that
     * durations that would wrap it around 2^64 are refused too. */
    const uint64_t max_run_ns = 7 * 24 * 3600 * TOOL_SEC;
    uint64_t total = 0;
    for (size_t i = 0; i < sc->phase_count; i++) {
        struct tool_phase *p = &sc->phases[i];
        phase_defaults(sc, p);
        if (p->latency_ns == 0 || p->latency_p99_ns < p->latency_ns) {
            snprintf(msg, msg_len, "phase %s: latency_p99 must be at least latency (> 0)", p->name);
            return -1;
        }
        if (p->duration_ns == 0 && i + 1 < sc->phase_count) {
            snprintf(msg, msg_len, "phase %s: needs a duration (only the last may omit it)",
                     p->name);
            return -1;
        }
        if (p->duration_ns > max_run_ns - total) {
            snprintf(msg, msg_len, "phase %s: the phases add up to more than 7d, the longest run",
                     p->name);
            return -1;
        }
        total += p->duration_ns;
    }
    if (sc->duration_ns == 0) sc->duration_ns = total;
    if (sc->duration_ns == 0) sc->duration_ns = 10 * 60 * TOOL_SEC;
    if (total > sc->duration_ns) {
        snprintf(msg, msg_len, "scenario: the phases last longer than duration");
        return -1;
    }
    /* The last phase fills the rest of the run. */
    sc->phases[sc->phase_count - 1].duration_ns += sc->duration_ns - total;
    if (sc->duration_ns > max_run_ns) {
        snprintf(msg, msg_len, "scenario: duration must be at most 7d");
        return -1;
    }
    if (sc->instances > 0) {
        if (sc->flush_interval_ns == 0) sc->flush_interval_ns = 250 * TOOL_MS;
        if ((uint64_t)sc->instances * sc->workers > 1000000) {
            snprintf(msg, msg_len, "scenario: instances x workers must be at most 1000000");
            return -1;
        }
    }
    /* Each request costs a few bytes for the percentiles: keep a run in
     * memory and in seconds. */
    if (sc->rate * ((double)sc->duration_ns / 1e9) > 20e6) {
        snprintf(msg, msg_len, "scenario: rate x duration must be at most 20 million requests");
        return -1;
    }
    return 0;
}
