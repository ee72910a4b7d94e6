/* SPDX-License-Identifier: MIT */
/*
 * report.c - the text output: the simulation's comparison table and the
 * replay report. Plain ASCII, fixed widths, no locale: the same input gives
 * the same bytes.
 */
#include "sim/report.h"

#include "cli/parse.h"
#include "cli/text.h"

#include <inttypes.h>
#include <string.h>

#define LABEL_WIDTH 40

static const char *seconds(uint64_t ns, char *buf, size_t len) {
    return tool_format_duration(ns, buf, len);
}

/* ---- simulate ---------------------------------------------------------------*/

struct row {
    const char *label;
    void (*cell)(const struct tool_sim_result *r, char *buf, size_t len);
    /* NULL: always shown; else shown only where it says something (a row
     * of ramp refusals where no breaker ramps would be a row of zeros). */
    bool (*shown)(const struct tool_scenario *sc, const struct tool_sim_result *runs, size_t count);
};

#define COUNT_CELL(fn, field)                                                \
    static void fn(const struct tool_sim_result *r, char *buf, size_t len) { \
        snprintf(buf, len, "%" PRIu64, r->field);                            \
    }

COUNT_CELL(cell_requests, requests)
COUNT_CELL(cell_refused_ramp, refused_ramp)
COUNT_CELL(cell_abuser_requests, abuser_requests)
COUNT_CELL(cell_shed, shed)
COUNT_CELL(cell_errors, errors)
COUNT_CELL(cell_timeouts, timeouts)
COUNT_CELL(cell_reached, reached)
COUNT_CELL(cell_reached_outage, reached_outage)
COUNT_CELL(cell_reached_recovery, reached_recovery)
COUNT_CELL(cell_knockdowns, knockdowns)

static void cell_served(const struct tool_sim_result *r, char *buf, size_t len) {
    double pct = r->requests ? 100.0 * (double)r->served / (double)r->requests : 0.0;
    snprintf(buf, len, "%" PRIu64 " %4.1f%%", r->served, pct);
}

/* Refused while open or half-open: the ramp's refusals have their own row. */
static void cell_refused(const struct tool_sim_result *r, char *buf, size_t len) {
    snprintf(buf, len, "%" PRIu64, r->refused - r->refused_ramp);
}

/* The legitimate callers' share of the refusals, against their requests. */
static void cell_refused_legit(const struct tool_sim_result *r, char *buf, size_t len) {
    uint64_t legit = r->requests - r->abuser_requests;
    double pct = legit ? 100.0 * (double)r->refused_legit / (double)legit : 0.0;
    snprintf(buf, len, "%" PRIu64 " %4.1f%%", r->refused_legit, pct);
}

/* ...and outside the outage phases: what a caller's failures cost the
 * others while the dependency was up. */
static void cell_refused_legit_up(const struct tool_sim_result *r, char *buf, size_t len) {
    double pct = r->legit_up ? 100.0 * (double)r->refused_legit_up / (double)r->legit_up : 0.0;
    snprintf(buf, len, "%" PRIu64 " %4.1f%%", r->refused_legit_up, pct);
}

static bool some_run_ramps(const struct tool_scenario *sc, const struct tool_sim_result *runs,
                           size_t count) {
    (void)sc;
    for (size_t i = 0; i < count; i++)
        if (runs[i].has_ramp) return true;
    return false;
}

static bool has_abuser(const struct tool_scenario *sc, const struct tool_sim_result *runs,
                       size_t count) {
    (void)runs;
    (void)count;
    return tool_scenario_has_abuser(sc);
}

static void cell_saturated(const struct tool_sim_result *r, char *buf, size_t len) {
    seconds(r->saturated_ns, buf, len);
}

static void cell_closed_after(const struct tool_sim_result *r, char *buf, size_t len) {
    if (!r->has_breaker) {
        snprintf(buf, len, "-");
    } else if (r->transitions == 0) {
        snprintf(buf, len, "never opened");
    } else if (r->recovered_at_ns == UINT64_MAX) {
        snprintf(buf, len, "no outage");
    } else if (r->closed_after_ns == UINT64_MAX) {
        snprintf(buf, len, "never");
    } else {
        seconds(r->closed_after_ns, buf, len);
    }
}

/* A breaker's own count, "-" for the run without one. */
#define BREAKER_CELL(fn, field)                                              \
    static void fn(const struct tool_sim_result *r, char *buf, size_t len) { \
        if (!r->has_breaker) {                                               \
            snprintf(buf, len, "-");                                         \
        } else {                                                             \
            snprintf(buf, len, "%" PRIu64, r->field);                        \
        }                                                                    \
    }

BREAKER_CELL(cell_transitions, transitions)
BREAKER_CELL(cell_closes, closes)
BREAKER_CELL(cell_probes, probes)

static void cell_p50(const struct tool_sim_result *r, char *buf, size_t len) {
    seconds(r->p50_ns, buf, len);
}

static void cell_p99(const struct tool_sim_result *r, char *buf, size_t len) {
    seconds(r->p99_ns, buf, len);
}

static bool some_run_throttled(const struct tool_scenario *sc, const struct tool_sim_result *runs,
                               size_t count) {
    (void)sc;
    for (size_t i = 0; i < count; i++)
        if (runs[i].throttled != 0) return true;
    return false;
}

static bool some_run_shadowed(const struct tool_scenario *sc, const struct tool_sim_result *runs,
                              size_t count) {
    (void)sc;
    for (size_t i = 0; i < count; i++)
        if (runs[i].shadow) return true;
    return false;
}

COUNT_CELL(cell_throttled, throttled)

static void cell_would_reject(const struct tool_sim_result *r, char *buf, size_t len) {
    if (!r->shadow)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%" PRIu64, r->would_reject);
}

static void cell_shadow_served(const struct tool_sim_result *r, char *buf, size_t len) {
    if (!r->shadow)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%" PRIu64, r->shadow_served);
}

static const struct row rows[] = {
    {"requests", cell_requests, NULL},
    {"  ...from the abusive caller", cell_abuser_requests, has_abuser},
    {"served (dependency answered OK)", cell_served, NULL},
    {"failed fast: refused by the breaker", cell_refused, NULL},
    {"  ...legitimate callers' requests", cell_refused_legit, has_abuser},
    {"     ...while the dependency was up", cell_refused_legit_up, has_abuser},
    {"failed fast: refused by the ramp", cell_refused_ramp, some_run_ramps},
    {"failed fast: shed, every worker busy", cell_shed, NULL},
    {"failed: dependency answered an error", cell_errors, NULL},
    {"  ...of which 429 with Retry-After", cell_throttled, some_run_throttled},
    {"shadow: would have refused", cell_would_reject, some_run_shadowed},
    {"  ...of which the dependency served", cell_shadow_served, some_run_shadowed},
    {"failed slowly: waited for the timeout", cell_timeouts, NULL},
    {"worker pool saturated for", cell_saturated, NULL},
    {"calls that reached the dependency", cell_reached, NULL},
    {"  ...during the outage", cell_reached_outage, NULL},
    {"  ...during the recovery", cell_reached_recovery, NULL},
    {"dependency knocked down by overload", cell_knockdowns, NULL},
    {"breaker closed for good, after recovery", cell_closed_after, NULL},
    {"breaker transitions", cell_transitions, NULL},
    {"  ...closed by its probes", cell_closes, NULL},
    {"probes admitted", cell_probes, NULL},
    {"response time p50", cell_p50, NULL},
    {"response time p99", cell_p99, NULL},
};

static void print_phases(FILE *out, const struct tool_scenario *sc) {
    uint64_t t = 0;
    char a[32], b[32], d[32];
    for (size_t i = 0; i < sc->phase_count; i++) {
        const struct tool_phase *p = &sc->phases[i];
        fprintf(out, "  %7s-%-7s %-12s %-10s", i == 0 ? "0s" : seconds(t, a, sizeof(a)),
                seconds(t + p->duration_ns, b, sizeof(b)), p->name, tool_phase_kind_name(p->kind));
        switch (p->kind) {
        case PHASE_DOWN:
            fprintf(out, " calls %s",
                    p->down == DOWN_TIMEOUT ? "hang until the timeout" : "are refused at once");
            break;
        case PHASE_ERRORS:
            if (p->retry_after_ns != 0)
                fprintf(out, " %.0f%% of calls answer 429, Retry-After %s", 100.0 * p->error_rate,
                        seconds(p->retry_after_ns, a, sizeof(a)));
            else
                fprintf(out, " %.0f%% of calls fail", 100.0 * p->error_rate);
            break;
        case PHASE_RECOVERING:
            fprintf(out, " latency %s -> %s, capacity %u -> %u calls in flight",
                    seconds(p->cold_latency_ns, a, sizeof(a)), seconds(p->latency_ns, b, sizeof(b)),
                    p->cold_capacity, p->capacity);
            break;
        case PHASE_HEALTHY:
        case PHASE_SLOW:
            fprintf(out, " latency p50 %s, p99 %s", seconds(p->latency_ns, a, sizeof(a)),
                    seconds(p->latency_p99_ns, d, sizeof(d)));
            if (p->error_rate > 0.0) fprintf(out, ", %.1f%% errors", 100.0 * p->error_rate);
            break;
        }
        if (p->abuser_share > 0.0)
            fprintf(out, "; one caller sends %.0f%% of the requests, all %s",
                    100.0 * p->abuser_share, p->abuser_hangs ? "hanging" : "failing");
        fputc('\n', out);
        t += p->duration_ns;
    }
}

/* "96% fewer", "12% more" or "as many": `now` against `before`. */
static const char *change(uint64_t now, uint64_t before, char *buf, size_t len) {
    if (before == 0 || now == before) {
        snprintf(buf, len, now == before ? "as many" : "more");
    } else if (now < before) {
        snprintf(buf, len, "%.0f%% fewer", 100.0 * (double)(before - now) / (double)before);
    } else {
        snprintf(buf, len, "%.0f%% more", 100.0 * (double)(now - before) / (double)before);
    }
    return buf;
}

/* One sentence per breaker against the baseline: the numbers that matter
 * (with an abusive caller, what the breaker did to everybody else). */
static void print_reading(FILE *out, const struct tool_scenario *sc,
                          const struct tool_sim_result *runs, size_t count) {
    const struct tool_sim_result *base = NULL;
    for (size_t i = 0; i < count; i++)
        if (!runs[i].has_breaker) base = &runs[i];
    if (base == NULL) return;
    fprintf(out, "\nCompared with no breaker:\n");
    for (size_t i = 0; i < count; i++) {
        const struct tool_sim_result *r = &runs[i];
        if (!r->has_breaker) continue;
        char a[32], b[32];
        if (tool_scenario_has_abuser(sc)) {
            uint64_t legit = r->requests - r->abuser_requests;
            fprintf(out, "  %s: %" PRIu64 " legitimate requests refused (%.1f%% of theirs)",
                    r->name, r->refused_legit,
                    legit ? 100.0 * (double)r->refused_legit / (double)legit : 0.0);
        } else {
            fprintf(out, "  %s: %s calls during the outage, %s timeouts", r->name,
                    change(r->reached_outage, base->reached_outage, a, sizeof(a)),
                    change(r->timeouts, base->timeouts, b, sizeof(b)));
        }
        /* The rest on a second line, under the first, to stay narrow. */
        fprintf(out, ",\n  %*s", (int)strlen(r->name) + 2, "");
        if (r->knockdowns > 0 || base->knockdowns > 0)
            fprintf(out, "%" PRIu64 " knockdowns (%" PRIu64 " without), ", r->knockdowns,
                    base->knockdowns);
        fprintf(out, "%.1f%% served (%.1f%% without)\n",
                r->requests ? 100.0 * (double)r->served / (double)r->requests : 0.0,
                base->requests ? 100.0 * (double)base->served / (double)base->requests : 0.0);
    }
}

/* A run's column: its name and two blanks, at least 14 characters. */
static int column_width(const struct tool_sim_result *r) {
    int w = (int)strlen(r->name) + 2;
    return w < 14 ? 14 : w;
}

void tool_print_sim_table(FILE *out, const struct tool_scenario *sc,
                          const struct tool_sim_result *runs, size_t count) {
    char a[32], b[32];
    fprintf(out, "Scenario: %s (seed %" PRIu64 ", %s)\n", sc->name, sc->seed,
            seconds(sc->duration_ns, a, sizeof(a)));
    if (sc->description[0]) fprintf(out, "%s\n", sc->description);
    fprintf(out, "Workload: %.0f requests/s on %u workers, %s timeout per call", sc->rate,
            sc->workers, seconds(sc->timeout_ns, b, sizeof(b)));
    if (sc->clients_given && sc->clients != 0) fprintf(out, ", from %u callers", sc->clients);
    if (sc->clients_given && sc->clients == 0) fprintf(out, ", naming no caller");
    fputc('\n', out);
    fprintf(out, "Dependency:\n");
    print_phases(out, sc);
    fprintf(out, "\n");

    fprintf(out, "%-*s", LABEL_WIDTH, "");
    for (size_t i = 0; i < count; i++)
        fprintf(out, "%*s", column_width(&runs[i]), runs[i].name);
    fputc('\n', out);
    for (size_t k = 0; k < sizeof(rows) / sizeof(rows[0]); k++) {
        if (rows[k].shown != NULL && !rows[k].shown(sc, runs, count)) continue;
        fprintf(out, "%-*s", LABEL_WIDTH, rows[k].label);
        for (size_t i = 0; i < count; i++) {
            char cell[64];
            rows[k].cell(&runs[i], cell, sizeof(cell));
            fprintf(out, "%*s", column_width(&runs[i]), cell);
        }
        fputc('\n', out);
    }
    print_reading(out, sc, runs, count);
}

/* ---- simulate: the fleet scenario ---------------------------------------------*/

static void print_fleet_run_line(FILE *out, const char *label, const struct tool_fleet_run *r) {
    char a[32], b[32];
    fprintf(out,
            "  %-16s %" PRIu64 " calls reached the dead dependency (%" PRIu64
            " of them probes); %" PRIu64 " probes in all\n",
            label, r->reached_dead, r->probes_dead, r->probes);
    if (r->hosts_opened > 0 && r->outage_at_ns != UINT64_MAX)
        fprintf(out, "  %-16s hosts open after the outage began: first %s, all %u by %s\n", "",
                seconds(r->first_open_ns - r->outage_at_ns, a, sizeof(a)), r->hosts_opened,
                seconds(r->last_open_ns - r->outage_at_ns, b, sizeof(b)));
    if (r->fleet)
        fprintf(out,
                "  %-16s fleet trips %" PRIu64 ", fleet transitions %" PRIu64 ", leases %" PRIu64
                "; hosts' transitions %" PRIu64 "\n",
                "", r->fleet_trips, r->fleet_transitions, r->leases, r->local_transitions);
    else
        fprintf(out, "  %-16s hosts' trips %" PRIu64 ", hosts' transitions %" PRIu64 "\n", "",
                r->local_trips, r->local_transitions);
    fprintf(out,
            "  %-16s served %" PRIu64 ", refused %" PRIu64 ", shed %" PRIu64 " of %" PRIu64
            " requests\n",
            "", r->served, r->refused, r->shed, r->requests);
    if (r->throttled != 0)
        fprintf(out,
                "  %-16s answered 429 with Retry-After: %" PRIu64 " calls; hosts' opens for it "
                "%" PRIu64 "\n",
                "", r->throttled, r->directed_opens);
}

void tool_print_fleet_table(FILE *out, const struct tool_scenario *sc,
                            const struct tool_fleet_result *runs, size_t count) {
    char a[32], b[32], c[32];
    fprintf(out, "Scenario: %s (seed %" PRIu64 ", %s)\n", sc->name, sc->seed,
            seconds(sc->duration_ns, a, sizeof(a)));
    if (sc->description[0]) fprintf(out, "%s\n", sc->description);
    fprintf(out,
            "Fleet: %u hosts, each with %u workers and its own breaker, share one dependency;\n"
            "%.0f requests/s in all, %s timeout per call; fleet store: each host flushes every "
            "%s (+-20%%)\n",
            sc->instances, sc->workers, sc->rate, seconds(sc->timeout_ns, b, sizeof(b)),
            seconds(sc->flush_interval_ns, c, sizeof(c)));
    fprintf(out, "Dependency:\n");
    print_phases(out, sc);
    for (size_t i = 0; i < count; i++) {
        const struct tool_fleet_result *r = &runs[i];
        fprintf(out,
                "\n== %s (half_open_max_probes %u): local breakers vs the fleet store\n"
                "A round is a host's n-th half-open (local) or the fleet's n-th (fleet store).\n"
                "In flight: the most probes in flight at once, all hosts together. Dead: probes\n"
                "that reached the dependency while it was down.\n\n",
                r->name, r->max_probes);
        fprintf(out, "%7s  %-28s  %s\n", "", "local breakers", "fleet store");
        fprintf(out, "%7s  %9s %8s %9s  %9s %8s %9s\n", "round", "in flight", "probes", "dead",
                "in flight", "probes", "dead");
        uint32_t rounds = r->local.round_count > r->fleet.round_count ? r->local.round_count
                                                                      : r->fleet.round_count;
        for (uint32_t k = 0; k < rounds; k++) {
            const struct tool_fleet_round *l = &r->local.rounds[k], *f = &r->fleet.rounds[k];
            fprintf(out, "%7u", k + 1);
            if (k < r->local.round_count)
                fprintf(out, "  %9u %8" PRIu64 " %9" PRIu64, l->max_in_flight, l->probes, l->dead);
            else
                fprintf(out, "  %9s %8s %9s", "-", "-", "-");
            if (k < r->fleet.round_count)
                fprintf(out, "  %9u %8" PRIu64 " %9" PRIu64, f->max_in_flight, f->probes, f->dead);
            else
                fprintf(out, "  %9s %8s %9s", "-", "-", "-");
            fputc('\n', out);
        }
        fprintf(out, "%7s  %9u %8" PRIu64 " %9" PRIu64 "  %9u %8" PRIu64 " %9" PRIu64 "\n", "all",
                r->local.max_in_flight, r->local.probes, r->local.probes_dead,
                r->fleet.max_in_flight, r->fleet.probes, r->fleet.probes_dead);
        fputc('\n', out);
        print_fleet_run_line(out, "local breakers:", &r->local);
        print_fleet_run_line(out, "fleet store:", &r->fleet);
    }
}

/* ---- replay ---------------------------------------------------------------------*/

void tool_format_evidence(const breaker_event *ev, char *buf, size_t len) {
    const breaker_evidence *e = &ev->evidence;
    char w[32];
    switch (ev->reason) {
    case BREAKER_REASON_FAILURE_RATE:
        snprintf(buf, len, "%" PRIu64 " of %" PRIu64 " calls failed (%.1f%%)", e->failures,
                 e->calls, 100.0 * e->failure_rate);
        break;
    case BREAKER_REASON_SLOW_CALL_RATE:
        snprintf(buf, len, "%" PRIu64 " of %" PRIu64 " calls slow (%.1f%%)", e->slow_calls,
                 e->calls, 100.0 * e->slow_call_rate);
        break;
    case BREAKER_REASON_CONSECUTIVE_FAILURES:
        snprintf(buf, len, "%u failures in a row", e->consecutive_failures);
        break;
    case BREAKER_REASON_PROBES_SUCCEEDED:
        snprintf(buf, len, "%u probe%s succeeded", e->probe_successes,
                 e->probe_successes == 1 ? "" : "s");
        break;
    case BREAKER_REASON_PROBE_FAILED:
    case BREAKER_REASON_PROBE_TIMEOUT:
    case BREAKER_REASON_PROBE_SLOW:
        snprintf(buf, len, "after %u good probes; failed recoveries %u", e->probe_successes,
                 e->failed_recoveries);
        break;
    case BREAKER_REASON_WAIT_ELAPSED:
        snprintf(buf, len, "first probe admitted");
        break;
    case BREAKER_REASON_OUTSIDE_TRIP:
        snprintf(buf, len, "shared evidence: %llu calls, %llu failures",
                 (unsigned long long)e->calls, (unsigned long long)e->failures);
        break;
    case BREAKER_REASON_OUTSIDE_CLOSE:
        snprintf(buf, len, "the shared store recovered");
        break;
    case BREAKER_REASON_SERVER_DIRECTED:
        snprintf(buf, len, "the dependency asked for a wait");
        break;
    case BREAKER_REASON_RECONFIGURED:
        snprintf(buf, len, "limits changed");
        break;
    case BREAKER_REASON_OPERATOR:
    case BREAKER_REASON_FORCE_EXPIRED:
    case BREAKER_REASON_FORCED_OPEN:
    case BREAKER_REASON_FORCED_CLOSED:
    case BREAKER_REASON_RESET:
        snprintf(buf, len, "operator");
        break;
    default:
        snprintf(buf, len, "-");
        break;
    }
    if (e->failing_sources > 0 && ev->to == BREAKER_OPEN) {
        /* Estimated only with min_failing_sources set. */
        size_t n = strlen(buf);
        snprintf(buf + n, len - n, ", from ~%u callers", e->failing_sources);
    }
    if (ev->to == BREAKER_OPEN) {
        size_t n = strlen(buf);
        snprintf(buf + n, len - n, "; open for %s", seconds(ev->open_ns, w, sizeof(w)));
    }
}

void tool_print_transitions(FILE *out, const breaker_event *events, size_t count,
                            uint64_t origin_ns) {
    char t[32], tr[48], ev_text[160];
    if (count == 0) {
        fprintf(out, "   no transitions: the breaker stayed closed\n");
        return;
    }
    fprintf(out, "   %-12s %-22s %-20s %s\n", "time", "transition", "reason", "evidence");
    for (size_t i = 0; i < count; i++) {
        const breaker_event *ev = &events[i];
        snprintf(tr, sizeof(tr), "%s -> %s", breaker_state_name(ev->from),
                 breaker_state_name(ev->to));
        tool_format_offset(ev->time_ns, origin_ns, t, sizeof(t));
        tool_format_evidence(ev, ev_text, sizeof(ev_text));
        fprintf(out, "   %-12s %-22s %-20s %s\n", t, tr, breaker_reason_name(ev->reason), ev_text);
    }
}

void tool_print_replay(FILE *out, const struct tool_trace *trace, const struct tool_breaker *cfg,
                       const struct tool_replay_result *r) {
    char a[32], b[32], c[32];
    fprintf(out, "== %s: %s\n", cfg->name,
            cfg->summary[0] ? cfg->summary : "library defaults (no keys set)");
    tool_print_transitions(out, r->timeline.events, r->timeline.event_count, trace->origin_ns);
    const breaker_stats *st = &r->stats;
    uint64_t span = trace->count ? r->timeline.end_ns - r->timeline.start_ns : 0;
    fprintf(out,
            "   calls %" PRIu64 ": admitted %" PRIu64 ", refused %" PRIu64 " (%.1f%%: %" PRIu64
            " while open, %" PRIu64 " while half-open)\n",
            r->calls, st->admitted, r->refused,
            r->calls ? 100.0 * (double)r->refused / (double)r->calls : 0.0, st->rejected_open,
            st->rejected_half_open);
    fprintf(out,
            "   probes %" PRIu64 ": %" PRIu64 " succeeded, %" PRIu64 " failed (%" PRIu64
            " timed out)\n",
            st->probes_admitted, st->probes_succeeded, st->probes_failed, st->probes_timed_out);
    fprintf(out, "   time open %s, half-open %s, of %s; transitions %" PRIu64 "\n",
            seconds(r->time_open_ns, a, sizeof(a)), seconds(r->time_half_open_ns, b, sizeof(b)),
            seconds(span, c, sizeof(c)), st->transitions);
    if (tool_replay_flapping(r)) {
        fprintf(out,
                "   WARNING: flapping: %" PRIu64
                " times the breaker closed and tripped again within %s; the dependency may "
                "not be healthy when it closes (raise half_open_successes) or the trip is "
                "too sensitive (raise min_calls or failure_rate)\n",
                r->flaps, seconds(TOOL_FLAP_WINDOW_NS, a, sizeof(a)));
    }
    if (trace->has_shadow) tool_print_shadow_compare(out, trace, r);
    fputc('\n', out);
}

/* ---- replay, as JSON ---------------------------------------------------------------*/

static void json_events(FILE *out, const struct tool_replay_result *r, uint64_t origin) {
    fputs("\"events\": [", out);
    for (size_t i = 0; i < r->timeline.event_count; i++) {
        const breaker_event *ev = &r->timeline.events[i];
        char text[160];
        tool_format_evidence(ev, text, sizeof(text));
        fprintf(out, "%s\n        {\"time_ns\": %" PRIu64 ", \"from\": \"%s\", \"to\": \"%s\", ",
                i ? "," : "", ev->time_ns > origin ? ev->time_ns - origin : 0,
                breaker_state_name(ev->from), breaker_state_name(ev->to));
        fprintf(out, "\"reason\": \"%s\", \"evidence\": ", breaker_reason_name(ev->reason));
        tool_json_string(out, text);
        fputc('}', out);
    }
    fputs(r->timeline.event_count ? "\n      ]" : "]", out);
}

static void json_breaker(FILE *out, const struct tool_trace *trace, const struct tool_breaker *cfg,
                         const struct tool_replay_result *r) {
    const breaker_stats *st = &r->stats;
    fputs("    {\"name\": ", out);
    tool_json_string(out, cfg->name);
    fputs(", \"keys\": ", out);
    tool_json_string(out, cfg->summary);
    fputs(", \"description\": ", out);
    tool_json_string(out, cfg->description);
    fprintf(out,
            ",\n      \"calls\": %" PRIu64 ", \"admitted\": %" PRIu64 ", \"refused\": %" PRIu64
            ", \"refused_open\": %" PRIu64 ", \"refused_half_open\": %" PRIu64
            ", \"refused_ramp\": %" PRIu64 ",\n",
            r->calls, st->admitted, r->refused, st->rejected_open, st->rejected_half_open,
            st->rejected_ramp);
    fprintf(out,
            "      \"probes\": %" PRIu64 ", \"probes_succeeded\": %" PRIu64
            ", \"probes_failed\": %" PRIu64 ", \"probes_timed_out\": %" PRIu64 ",\n",
            st->probes_admitted, st->probes_succeeded, st->probes_failed, st->probes_timed_out);
    fprintf(out,
            "      \"transitions\": %" PRIu64 ", \"trips\": %" PRIu64 ", \"flaps\": %" PRIu64
            ", \"flapping\": %s,\n",
            st->transitions, tool_replay_trips(r), r->flaps,
            tool_replay_flapping(r) ? "true" : "false");
    uint64_t span = trace->count ? r->timeline.end_ns - r->timeline.start_ns : 0;
    fprintf(out,
            "      \"time_open_ns\": %" PRIu64 ", \"time_half_open_ns\": %" PRIu64
            ", \"replayed_ns\": %" PRIu64 ",\n      ",
            r->time_open_ns, r->time_half_open_ns, span);
    tool_json_shadow_compare(out, trace, r);
    fputs(",\n      ", out);
    json_events(out, r, trace->origin_ns);
    fputc('}', out);
}

void tool_print_replay_json(FILE *out, const char *name, const struct tool_trace *trace,
                            const struct tool_breakers *cfgs, const struct tool_replay_result *runs,
                            size_t count) {
    uint64_t last = trace->origin_ns;
    for (size_t i = 0; i < trace->count; i++)
        if (trace->calls[i].start_ns > last) last = trace->calls[i].start_ns;
    fputs("{\n  \"format\": \"breaker-replay/1\",\n  \"trace\": {\"name\": ", out);
    tool_json_string(out, name);
    fprintf(out,
            ", \"calls\": %zu, \"malformed_lines\": %zu, \"span_ns\": %" PRIu64
            ", \"sources\": %s, ",
            trace->count, trace->bad_lines, last - trace->origin_ns,
            trace->has_source ? "true" : "false");
    tool_json_shadow_trace(out, trace);
    fputs("},\n  \"breakers\": [", out);
    for (size_t i = 0; i < count && i < cfgs->count; i++) {
        fputs(i ? ",\n" : "\n", out);
        json_breaker(out, trace, &cfgs->items[i], &runs[i]);
    }
    fputs(count ? "\n  ]\n}\n" : "]\n}\n", out);
}
