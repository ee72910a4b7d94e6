/* SPDX-License-Identifier: MIT
 *
 * store_prom.c - `breaker status --prometheus`: the breakers of a store file
 * in the Prometheus text exposition format (0.0.4), under the metric names
 * and labels of the library's exporter (breaker_registry_export_prometheus(),
 * breaker/registry.h), so that the same dashboards and rules read both.
 *
 * The library's exporter cannot be used as it is: it exports a registry,
 * and a registry keeps some of what it exports in this process only (the
 * transitions by from and to state, the history behind breaker_flapping,
 * its own counters), which for a command that has just started would all
 * be zero, wrong rather than unknown. So this file writes the families whose
 * values live in the store, shared by every process, and leaves the others
 * out; breaker_store_transitions_total stands in for the per-pair counts
 * (the store keeps their sum). Numbers are written as the library writes
 * them: seconds with nine decimals, ratios with six, whatever the locale.
 */
#include "tool.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef void family_fn(FILE *out, const char *metric, const struct tool_store_row *r);

struct family {
    const char *name;
    const char *type;
    const char *help;
    family_fn *fn;
};

/* Label values escaped as the format says (stored names never need it). */
static void label_value(FILE *out, const char *v) {
    for (; *v != '\0'; v++) {
        if (*v == '\\')
            fputs("\\\\", out);
        else if (*v == '"')
            fputs("\\\"", out);
        else if (*v == '\n')
            fputs("\\n", out);
        else
            fputc(*v, out);
    }
}

/* `metric{breaker="name"[,k="v"][,k2="v2"]} `, ready for the value. */
static void series(FILE *out, const char *metric, const char *name, const char *k, const char *v,
                   const char *k2, const char *v2) {
    fprintf(out, "%s{breaker=\"", metric);
    label_value(out, name);
    fputc('"', out);
    if (k != NULL) {
        fprintf(out, ",%s=\"", k);
        label_value(out, v);
        fputc('"', out);
    }
    if (k2 != NULL) {
        fprintf(out, ",%s=\"", k2);
        label_value(out, v2);
        fputc('"', out);
    }
    fputs("} ", out);
}

static void seconds(FILE *out, uint64_t ns) {
    fprintf(out, "%" PRIu64 ".%09" PRIu64 "\n", ns / TOOL_SEC, ns % TOOL_SEC);
}

static void ratio(FILE *out, double r) {
    if (!(r > 0.0)) r = 0.0; /* NaN and negatives: 0 */
    if (r > 1.0) r = 1.0;
    uint64_t micro = (uint64_t)llround(r * 1e6);
    fprintf(out, "%" PRIu64 ".%06" PRIu64 "\n", micro / 1000000u, micro % 1000000u);
}

static void plain(FILE *out, const char *m, const struct tool_store_row *r, uint64_t v) {
    series(out, m, r->name, NULL, NULL, NULL, NULL);
    fprintf(out, "%" PRIu64 "\n", v);
}

static void labelled(FILE *out, const char *m, const struct tool_store_row *r, const char *k,
                     const char *v, uint64_t value) {
    series(out, m, r->name, k, v, NULL, NULL);
    fprintf(out, "%" PRIu64 "\n", value);
}

static void plain_ratio(FILE *out, const char *m, const struct tool_store_row *r, double v) {
    series(out, m, r->name, NULL, NULL, NULL, NULL);
    ratio(out, v);
}

static bool windowed(const breaker_config *c) { return c->trip != BREAKER_TRIP_CONSECUTIVE; }

/* ---- The families ----------------------------------------------------------------*/

static void f_state(FILE *o, const char *m, const struct tool_store_row *r) {
    plain(o, m, r, (uint64_t)r->s.state);
}
static void f_calls(FILE *o, const char *m, const struct tool_store_row *r) {
    labelled(o, m, r, "outcome", "success", r->s.successes);
    labelled(o, m, r, "outcome", "failure", r->s.failures);
    labelled(o, m, r, "outcome", "ignored", r->s.ignored);
}
static void f_admitted(FILE *o, const char *m, const struct tool_store_row *r) {
    plain(o, m, r, r->s.admitted);
}
static void f_cancelled(FILE *o, const char *m, const struct tool_store_row *r) {
    plain(o, m, r, r->s.cancelled);
}
static void f_slow(FILE *o, const char *m, const struct tool_store_row *r) {
    plain(o, m, r, r->s.slow);
}
static void f_rejected(FILE *o, const char *m, const struct tool_store_row *r) {
    labelled(o, m, r, "reason", "open", r->s.rejected_open);
    labelled(o, m, r, "reason", "half_open", r->s.rejected_half_open);
    labelled(o, m, r, "reason", "forced_open", r->s.rejected_forced);
    labelled(o, m, r, "reason", "ramp", r->s.rejected_ramp);
}
static void f_transitions(FILE *o, const char *m, const struct tool_store_row *r) {
    plain(o, m, r, r->s.transitions);
}

/* The forced states once entered, as the library has it: here, once time
 * was spent in them or the breaker is in one now. */
static void f_state_seconds(FILE *o, const char *m, const struct tool_store_row *r) {
    for (unsigned s = 0; s < BREAKER_STATE_COUNT; s++) {
        bool forced = s == BREAKER_FORCED_OPEN || s == BREAKER_FORCED_CLOSED;
        if (forced && r->s.time_in_state_ns[s] == 0 && r->s.state != (enum breaker_state)s)
            continue;
        series(o, m, r->name, "state", breaker_state_name((enum breaker_state)s), NULL, NULL);
        seconds(o, r->s.time_in_state_ns[s]);
    }
}

static void f_probes_admitted(FILE *o, const char *m, const struct tool_store_row *r) {
    plain(o, m, r, r->s.probes_admitted);
}
static void f_probes(FILE *o, const char *m, const struct tool_store_row *r) {
    const breaker_stats *s = &r->s;
    uint64_t failed =
        s->probes_failed >= s->probes_timed_out ? s->probes_failed - s->probes_timed_out : 0;
    labelled(o, m, r, "result", "success", s->probes_succeeded);
    labelled(o, m, r, "result", "failure", failed);
    labelled(o, m, r, "result", "timeout", s->probes_timed_out);
}
static void f_in_flight(FILE *o, const char *m, const struct tool_store_row *r) {
    plain(o, m, r, r->s.probes_in_flight);
}
static void f_half_open_successes(FILE *o, const char *m, const struct tool_store_row *r) {
    plain(o, m, r, r->s.probe_successes);
}
static void f_stale(FILE *o, const char *m, const struct tool_store_row *r) {
    plain(o, m, r, r->s.stale);
}
static void f_duplicates(FILE *o, const char *m, const struct tool_store_row *r) {
    plain(o, m, r, r->s.duplicates);
}
static void f_window_calls(FILE *o, const char *m, const struct tool_store_row *r) {
    plain(o, m, r, r->s.window_calls);
}
static void f_failure_ratio(FILE *o, const char *m, const struct tool_store_row *r) {
    plain_ratio(o, m, r, r->s.window_failure_rate);
}
static void f_slow_ratio(FILE *o, const char *m, const struct tool_store_row *r) {
    plain_ratio(o, m, r, r->s.window_slow_rate);
}
static void f_ramp_share(FILE *o, const char *m, const struct tool_store_row *r) {
    plain_ratio(o, m, r, r->s.ramp_share);
}
static void f_next_probe(FILE *o, const char *m, const struct tool_store_row *r) {
    series(o, m, r->name, NULL, NULL, NULL, NULL);
    if (r->s.state == BREAKER_FORCED_OPEN)
        fputs("+Inf\n", o);
    else if (r->s.state == BREAKER_OPEN)
        seconds(o, r->retry_ns);
    else
        fputs("0\n", o);
}
static void f_awaiting(FILE *o, const char *m, const struct tool_store_row *r) {
    plain(o, m, r, r->s.state == BREAKER_OPEN && r->s.open_until_ns <= r->now_ns);
}
static void f_recoveries(FILE *o, const char *m, const struct tool_store_row *r) {
    plain(o, m, r, r->s.failed_recoveries);
}

/* ---- The configuration, as the library labels it -------------------------------*/

/* Decimal seconds without trailing zeros ("30", "0.25"). */
static void seconds_text(char *buf, size_t cap, uint64_t ns) {
    uint64_t whole = ns / TOOL_SEC, frac = ns % TOOL_SEC;
    int width = 9;
    while (frac != 0 && frac % 10 == 0) {
        frac /= 10;
        width--;
    }
    if (frac == 0)
        snprintf(buf, cap, "%" PRIu64, whole);
    else
        snprintf(buf, cap, "%" PRIu64 ".%0*" PRIu64, whole, width, frac);
}

static void label_text(FILE *o, const char *k, const char *v) {
    fprintf(o, ",%s=\"", k);
    label_value(o, v);
    fputc('"', o);
}
static void label_u64(FILE *o, const char *k, uint64_t v) {
    fprintf(o, ",%s=\"%" PRIu64 "\"", k, v);
}
static void label_seconds(FILE *o, const char *k, uint64_t ns) {
    char t[40];
    seconds_text(t, sizeof(t), ns);
    label_text(o, k, t);
}
static void label_rate(FILE *o, const char *k, double r) {
    char t[40];
    if (!(r > 0.0)) r = 0.0;
    if (r > 1.0) r = 1.0;
    seconds_text(t, sizeof(t), (uint64_t)llround(r * 1e6) * 1000u); /* six decimals at most */
    label_text(o, k, t);
}

static void f_config_info(FILE *o, const char *m, const struct tool_store_row *r) {
    const breaker_config *c = &r->cfg;
    fprintf(o, "%s{breaker=\"", m);
    label_value(o, r->name);
    fputc('"', o);
    label_text(o, "trip", breaker_trip_name(c->trip));
    if (!windowed(c)) label_u64(o, "failure_threshold", c->failure_threshold);
    if (c->trip == BREAKER_TRIP_COUNT_WINDOW) label_u64(o, "window_size", c->window_size);
    if (c->trip == BREAKER_TRIP_TIME_WINDOW) label_seconds(o, "window_seconds", c->window_ns);
    if (windowed(c)) {
        label_u64(o, "min_calls", c->min_calls);
        label_rate(o, "failure_rate", c->failure_rate);
        label_rate(o, "slow_call_rate", c->slow_call_rate);
    }
    label_seconds(o, "slow_call_seconds", c->slow_call_ns);
    label_seconds(o, "open_seconds", c->open_ns);
    label_seconds(o, "open_max_seconds", c->open_max_ns);
    label_u64(o, "half_open_max_probes", c->half_open_max_probes);
    label_u64(o, "half_open_successes", c->half_open_successes);
    label_seconds(o, "probe_timeout_seconds", c->probe_timeout_ns);
    label_seconds(o, "ramp_seconds", c->ramp_ns);
    fputs("} 1\n", o);
}
static void f_min_calls(FILE *o, const char *m, const struct tool_store_row *r) {
    plain(o, m, r, windowed(&r->cfg) ? r->cfg.min_calls : 0);
}
static void f_failure_threshold(FILE *o, const char *m, const struct tool_store_row *r) {
    plain_ratio(o, m, r, windowed(&r->cfg) ? r->cfg.failure_rate : 0.0);
}
static void f_slow_threshold(FILE *o, const char *m, const struct tool_store_row *r) {
    plain_ratio(o, m, r, windowed(&r->cfg) ? r->cfg.slow_call_rate : 0.0);
}

/* In the library's order; its HELP texts where the meaning is the same. */
static const struct family families[] = {
    {"breaker_state", "gauge",
     "Current state: 0 closed, 1 open, 2 half_open, 3 forced_open, 4 forced_closed.", f_state},
    {"breaker_calls_total", "counter",
     "Completed calls by recorded outcome (cancelled calls count as configured).", f_calls},
    {"breaker_admitted_calls_total", "counter", "Calls admitted (probes included).", f_admitted},
    {"breaker_cancelled_calls_total", "counter",
     "Calls completed as cancelled by the caller (also counted in breaker_calls_total).",
     f_cancelled},
    {"breaker_slow_calls_total", "counter", "Recorded calls slower than the slow-call threshold.",
     f_slow},
    {"breaker_rejected_calls_total", "counter",
     "Calls refused by the breaker, by reason (ramp: during the slow start after a recovery).",
     f_rejected},
    {"breaker_store_transitions_total", "counter",
     "State transitions of the shared breaker, made by any process (a store keeps their "
     "number, not the from and to states).",
     f_transitions},
    {"breaker_state_seconds_total", "counter",
     "Seconds spent in each state (forced states once entered).", f_state_seconds},
    {"breaker_probes_admitted_total", "counter", "Half-open probes admitted.", f_probes_admitted},
    {"breaker_probes_total", "counter", "Settled half-open probes, by result.", f_probes},
    {"breaker_probes_in_flight", "gauge", "Half-open probes admitted and not yet settled.",
     f_in_flight},
    {"breaker_half_open_successes", "gauge",
     "Successful probes in the current half-open (0 in other states); the breaker closes at "
     "half_open_successes once the probes in flight have settled.",
     f_half_open_successes},
    {"breaker_stale_completions_total", "counter",
     "Completions of permits from an earlier generation (ignored).", f_stale},
    {"breaker_duplicate_completions_total", "counter",
     "Completions of permits already settled (ignored).", f_duplicates},
    {"breaker_window_calls", "gauge", "Calls recorded in the current window.", f_window_calls},
    {"breaker_window_failure_ratio", "gauge", "Failure rate over the current window (0..1).",
     f_failure_ratio},
    {"breaker_window_slow_call_ratio", "gauge", "Slow-call rate over the current window (0..1).",
     f_slow_ratio},
    {"breaker_ramp_share", "gauge",
     "Share of calls the breaker admits now (0..1): strictly between 0 and 1 only while "
     "ramping up after a recovery; otherwise 1 when closed or forced closed, else 0.",
     f_ramp_share},
    {"breaker_next_probe_seconds", "gauge",
     "Seconds until an open breaker admits a probe (0 when not open, +Inf when forced open).",
     f_next_probe},
    {"breaker_open_awaiting_probe", "gauge",
     "1 when the breaker is open, its wait is over, and no call has come to probe (low "
     "traffic, not failing probes).",
     f_awaiting},
    {"breaker_failed_recoveries", "gauge",
     "Consecutive failed recoveries (drives the open-wait backoff).", f_recoveries},
    {"breaker_config_info", "gauge",
     "Always 1; the labels are the breaker's configuration (defaults applied; labels its "
     "trip policy does not use are left out).",
     f_config_info},
    {"breaker_window_min_calls", "gauge",
     "Calls the window must hold before it may trip (0 under the consecutive policy): "
     "breaker_window_calls below it means too few calls to judge, not health.",
     f_min_calls},
    {"breaker_failure_rate_threshold", "gauge",
     "The window failure ratio at which the breaker opens (0 under the consecutive policy).",
     f_failure_threshold},
    {"breaker_slow_call_rate_threshold", "gauge",
     "The window slow-call ratio at which the breaker opens (0 = off).", f_slow_threshold},
};

static void header(FILE *o, const char *name, const char *type, const char *help) {
    fprintf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The call-duration histogram of the breakers that time their calls, left
 * out when none does. */
static void write_durations(FILE *o, const struct tool_store_row *const *rows, size_t n) {
    static const char *const le[BREAKER_LATENCY_BUCKETS] = {
        "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1",
        "0.25",  "0.5",    "1",     "2.5",  "5",     "10",   "+Inf"};
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        const struct tool_store_row *r = rows[i];
        if (!r->timed) continue;
        if (!any)
            header(o, "breaker_call_duration_seconds", "histogram",
                   "Durations of timed calls (slow_call_ns > 0), by outcome.");
        any = true;
        for (int ok = 1; ok >= 0; ok--) {
            const uint64_t *counts = ok ? r->latency.success : r->latency.failure;
            const char *outcome = ok ? "success" : "failure";
            uint64_t cumulative = 0;
            for (unsigned b = 0; b < BREAKER_LATENCY_BUCKETS; b++) {
                cumulative += counts[b];
                series(o, "breaker_call_duration_seconds_bucket", r->name, "outcome", outcome, "le",
                       le[b]);
                fprintf(o, "%" PRIu64 "\n", cumulative);
            }
            series(o, "breaker_call_duration_seconds_sum", r->name, "outcome", outcome, NULL, NULL);
            seconds(o, ok ? r->latency.success_sum_ns : r->latency.failure_sum_ns);
            series(o, "breaker_call_duration_seconds_count", r->name, "outcome", outcome, NULL,
                   NULL);
            fprintf(o, "%" PRIu64 "\n", cumulative);
        }
    }
}

static int by_name(const void *a, const void *b) {
    const struct tool_store_row *const *x = a, *const *y = b;
    return strcmp((*x)->name, (*y)->name);
}

int tool_store_prometheus(FILE *out, const struct tool_store_row *rows, size_t n) {
    /* Sorted by name, as the library sorts them, so that scrapes diff. */
    const struct tool_store_row **sorted = malloc((n + 1) * sizeof(*sorted));
    if (sorted == NULL) return -1;
    for (size_t i = 0; i < n; i++)
        sorted[i] = &rows[i];
    qsort(sorted, n, sizeof(*sorted), by_name);
    /* A family without samples is left out: HELP and TYPE alone say nothing. */
    for (size_t f = 0; f < sizeof(families) / sizeof(families[0]) && n > 0; f++) {
        header(out, families[f].name, families[f].type, families[f].help);
        for (size_t i = 0; i < n; i++)
            families[f].fn(out, families[f].name, sorted[i]);
    }
    write_durations(out, sorted, n);
    header(out, "breaker_build_info", "gauge", "Always 1; the label is the library's version.");
    fputs("breaker_build_info{version=\"", out);
    label_value(out, breaker_version_string());
    fputs("\"} 1\n", out);
    free(sorted);
    return 0;
}
