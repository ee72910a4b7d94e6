/* SPDX-License-Identifier: MIT */
/*
 * export_prometheus.c - the Prometheus text exposition (format 0.0.4) of a
 * registry, and of a store's breakers (one metric table for both: a family
 * the store does not keep is left out of its export).
 *
 * The format wants all samples of a metric family together, after its HELP
 * and TYPE lines, so the exporter first snapshots every breaker (sorted by
 * name, so scrapes diff cleanly) and then writes family by family. Naming
 * follows the Prometheus conventions: a `breaker_` namespace, base units
 * (seconds, ratios in [0, 1]), `_total` on counters, and one label per
 * dimension rather than one metric per value.
 */
#include "export/text_out.h"
#include "registry/registry_internal.h"
#include "breaker/compose.h"
#include "breaker/store.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Writes the samples of one family for one breaker. */
typedef void family_fn(struct breaker__out *o, const char *metric,
                       const struct breaker__snapshot *sn);

struct family {
    const char *name;
    const char *type;
    const char *help;
    family_fn *fn;
};

/* Label values: escape backslash, double quote and newline, as the format
 * says (names are validated and never need it; this keeps the exporter
 * correct on its own). */
static void label_value(struct breaker__out *o, const char *v) {
    const char *run = v;
    for (; *v != '\0'; v++) {
        const char *esc = *v == '\\' ? "\\\\" : *v == '"' ? "\\\"" : *v == '\n' ? "\\n" : NULL;
        if (esc == NULL) continue;
        breaker__out_mem(o, run, (size_t)(v - run));
        breaker__out_str(o, esc);
        run = v + 1;
    }
    breaker__out_mem(o, run, (size_t)(v - run));
}

/* `metric{breaker="name"[,k1="v1"[,k2="v2"]]} ` ready for the value. */
static void series(struct breaker__out *o, const char *metric, const char *name, const char *k1,
                   const char *v1, const char *k2, const char *v2) {
    breaker__out_str(o, metric);
    breaker__out_str(o, "{breaker=\"");
    label_value(o, name);
    breaker__out_mem(o, "\"", 1);
    if (k1 != NULL) {
        breaker__out_mem(o, ",", 1);
        breaker__out_str(o, k1);
        breaker__out_str(o, "=\"");
        label_value(o, v1);
        breaker__out_mem(o, "\"", 1);
    }
    if (k2 != NULL) {
        breaker__out_mem(o, ",", 1);
        breaker__out_str(o, k2);
        breaker__out_str(o, "=\"");
        label_value(o, v2);
        breaker__out_mem(o, "\"", 1);
    }
    breaker__out_str(o, "} ");
}

static void u64_line(struct breaker__out *o, uint64_t v) {
    breaker__out_u64(o, v);
    breaker__out_mem(o, "\n", 1);
}

static void plain(struct breaker__out *o, const char *metric, const struct breaker__snapshot *sn,
                  uint64_t v) {
    series(o, metric, sn->info.name, NULL, NULL, NULL, NULL);
    u64_line(o, v);
}

static const char *state_label(unsigned s) { return breaker_state_name((enum breaker_state)s); }

/* One series with the state's number (enum breaker_state, append-only, so a
 * value never changes meaning) rather than a 0/1 series per state: a fifth of
 * the series, and what a state-timeline panel or an alert needs. How often
 * and how long each state was held between scrapes is in
 * breaker_transitions_total and breaker_state_seconds_total. */
_Static_assert(BREAKER_CLOSED == 0 && BREAKER_OPEN == 1 && BREAKER_HALF_OPEN == 2 &&
                   BREAKER_FORCED_OPEN == 3 && BREAKER_FORCED_CLOSED == 4,
               "breaker_state's HELP text numbers the states");
static void f_state(struct breaker__out *o, const char *m, const struct breaker__snapshot *sn) {
    plain(o, m, sn, (uint64_t)sn->info.stats.state);
}

static void f_calls(struct breaker__out *o, const char *m, const struct breaker__snapshot *sn) {
    series(o, m, sn->info.name, "outcome", "success", NULL, NULL);
    u64_line(o, sn->info.stats.successes);
    series(o, m, sn->info.name, "outcome", "failure", NULL, NULL);
    u64_line(o, sn->info.stats.failures);
    series(o, m, sn->info.name, "outcome", "ignored", NULL, NULL);
    u64_line(o, sn->info.stats.ignored);
}

static void f_admitted(struct breaker__out *o, const char *m, const struct breaker__snapshot *sn) {
    plain(o, m, sn, sn->info.stats.admitted);
}
static void f_cancelled(struct breaker__out *o, const char *m, const struct breaker__snapshot *sn) {
    plain(o, m, sn, sn->info.stats.cancelled);
}
static void f_slow(struct breaker__out *o, const char *m, const struct breaker__snapshot *sn) {
    plain(o, m, sn, sn->info.stats.slow);
}

/* One series per value of label `k`: `n` values `v[i]` with counts `c[i]`. */
static void labelled(struct breaker__out *o, const char *m, const struct breaker__snapshot *sn,
                     const char *k, const char *const *v, const uint64_t *c, size_t n) {
    for (size_t i = 0; i < n; i++) {
        series(o, m, sn->info.name, k, v[i], NULL, NULL);
        u64_line(o, c[i]);
    }
}

/* The refusal reasons, in the order of breaker_rejected_calls_total (and of
 * breaker_would_reject_calls_total: the refusals shadow mode spared). */
static const char *const refusal_reasons[4] = {"open", "half_open", "forced_open", "ramp"};

static void f_rejected(struct breaker__out *o, const char *m, const struct breaker__snapshot *sn) {
    const breaker_stats *s = &sn->info.stats;
    const uint64_t c[4] = {s->rejected_open, s->rejected_half_open, s->rejected_forced,
                           s->rejected_ramp};
    labelled(o, m, sn, "reason", refusal_reasons, c, 4);
}

/* Whether the breaker has ever been in operator state `s`: a transition to
 * it, or (a store's breaker, whose transitions by pair are not kept) time
 * spent in it or being in it now. */
static int entered(const struct breaker__snapshot *sn, unsigned s) {
    for (unsigned f = 0; f < BREAKER_STATE_COUNT; f++)
        if (sn->info.transitions_by[f][s] != 0) return 1;
    return sn->info.stats.time_in_state_ns[s] != 0 || sn->info.stats.state == (enum breaker_state)s;
}

/* The recovery cycle's pairs are always exported (from zero, so rate() works
 * from the first scrape); the operator pairs once they have happened. */
static int always_exported(unsigned from, unsigned to) {
    return (from == BREAKER_CLOSED && to == BREAKER_OPEN) ||
           (from == BREAKER_OPEN && to == BREAKER_HALF_OPEN) ||
           (from == BREAKER_HALF_OPEN && to == BREAKER_OPEN) ||
           (from == BREAKER_HALF_OPEN && to == BREAKER_CLOSED);
}

static void f_transitions(struct breaker__out *o, const char *m,
                          const struct breaker__snapshot *sn) {
    for (unsigned f = 0; f < BREAKER_STATE_COUNT; f++)
        for (unsigned t = 0; t < BREAKER_STATE_COUNT; t++) {
            uint64_t v = sn->info.transitions_by[f][t];
            if (v == 0 && !always_exported(f, t)) continue;
            series(o, m, sn->info.name, "from", state_label(f), "to", state_label(t));
            u64_line(o, v);
        }
}

/* A store keeps the number of transitions, made by any process, not their
 * from and to states. */
static void f_store_transitions(struct breaker__out *o, const char *m,
                                const struct breaker__snapshot *sn) {
    plain(o, m, sn, sn->info.stats.transitions);
}

static void f_state_seconds(struct breaker__out *o, const char *m,
                            const struct breaker__snapshot *sn) {
    for (unsigned s = 0; s < BREAKER_STATE_COUNT; s++) {
        /* The forced states only once an operator has used them, as with the
         * operator pairs of breaker_transitions_total. */
        int forced = s == BREAKER_FORCED_OPEN || s == BREAKER_FORCED_CLOSED;
        if (forced && !entered(sn, s)) continue;
        series(o, m, sn->info.name, "state", state_label(s), NULL, NULL);
        breaker__out_seconds(o, sn->info.stats.time_in_state_ns[s]);
        breaker__out_mem(o, "\n", 1);
    }
}

static void f_probes_admitted(struct breaker__out *o, const char *m,
                              const struct breaker__snapshot *sn) {
    plain(o, m, sn, sn->info.stats.probes_admitted);
}

static void f_probes(struct breaker__out *o, const char *m, const struct breaker__snapshot *sn) {
    const breaker_stats *st = &sn->info.stats;
    uint64_t failed =
        st->probes_failed >= st->probes_timed_out ? st->probes_failed - st->probes_timed_out : 0;
    series(o, m, sn->info.name, "result", "success", NULL, NULL);
    u64_line(o, st->probes_succeeded);
    series(o, m, sn->info.name, "result", "failure", NULL, NULL);
    u64_line(o, failed);
    series(o, m, sn->info.name, "result", "timeout", NULL, NULL);
    u64_line(o, st->probes_timed_out);
}

static void f_in_flight(struct breaker__out *o, const char *m, const struct breaker__snapshot *sn) {
    plain(o, m, sn, sn->info.stats.probes_in_flight);
}
static void f_half_open_successes(struct breaker__out *o, const char *m,
                                  const struct breaker__snapshot *sn) {
    plain(o, m, sn, sn->info.stats.probe_successes);
}
/* Operator controls (issue 25): shadow mode, its would-be refusals and how
 * those calls went, and timed opens by reason. */
static void f_shadow(struct breaker__out *o, const char *m, const struct breaker__snapshot *sn) {
    plain(o, m, sn, sn->info.stats.shadow);
}
/* The shadow counters once a breaker has been in shadow mode, the timed
 * opens once one happened (as the operator transition pairs): a breaker
 * that never used them adds no series. */
static int has_shadow(const struct breaker__snapshot *sn) {
    const breaker_stats *s = &sn->info.stats;
    return s->shadow || s->would_reject_open || s->would_reject_half_open ||
           s->would_reject_forced || s->would_reject_ramp || s->shadow_successes ||
           s->shadow_failures;
}
static int has_timed_opens(const struct breaker__snapshot *sn) {
    return sn->info.stats.server_directed_opens || sn->info.stats.operator_opens;
}
static void f_would_reject(struct breaker__out *o, const char *m,
                           const struct breaker__snapshot *sn) {
    if (!has_shadow(sn)) return;
    const breaker_stats *s = &sn->info.stats;
    const uint64_t c[4] = {s->would_reject_open, s->would_reject_half_open, s->would_reject_forced,
                           s->would_reject_ramp};
    labelled(o, m, sn, "reason", refusal_reasons, c, 4);
}
static void f_shadow_calls(struct breaker__out *o, const char *m,
                           const struct breaker__snapshot *sn) {
    if (!has_shadow(sn)) return;
    static const char *const outcomes[2] = {"success", "failure"};
    const uint64_t c[2] = {sn->info.stats.shadow_successes, sn->info.stats.shadow_failures};
    labelled(o, m, sn, "outcome", outcomes, c, 2);
}
static void f_timed_opens(struct breaker__out *o, const char *m,
                          const struct breaker__snapshot *sn) {
    if (!has_timed_opens(sn)) return;
    static const char *const reasons[2] = {"server_directed", "operator"};
    const uint64_t c[2] = {sn->info.stats.server_directed_opens, sn->info.stats.operator_opens};
    labelled(o, m, sn, "reason", reasons, c, 2);
}

static void f_stale(struct breaker__out *o, const char *m, const struct breaker__snapshot *sn) {
    plain(o, m, sn, sn->info.stats.stale);
}
static void f_duplicates(struct breaker__out *o, const char *m,
                         const struct breaker__snapshot *sn) {
    plain(o, m, sn, sn->info.stats.duplicates);
}
static void f_window_calls(struct breaker__out *o, const char *m,
                           const struct breaker__snapshot *sn) {
    plain(o, m, sn, sn->info.stats.window_calls);
}

static void ratio(struct breaker__out *o, const char *m, const struct breaker__snapshot *sn,
                  double r) {
    series(o, m, sn->info.name, NULL, NULL, NULL, NULL);
    breaker__out_ratio(o, r);
    breaker__out_mem(o, "\n", 1);
}
static void f_failure_ratio(struct breaker__out *o, const char *m,
                            const struct breaker__snapshot *sn) {
    ratio(o, m, sn, sn->info.stats.window_failure_rate);
}
static void f_slow_ratio(struct breaker__out *o, const char *m,
                         const struct breaker__snapshot *sn) {
    ratio(o, m, sn, sn->info.stats.window_slow_rate);
}
static void f_ramp_share(struct breaker__out *o, const char *m,
                         const struct breaker__snapshot *sn) {
    ratio(o, m, sn, sn->info.stats.ramp_share);
}

static void f_next_probe(struct breaker__out *o, const char *m,
                         const struct breaker__snapshot *sn) {
    series(o, m, sn->info.name, NULL, NULL, NULL, NULL);
    if (sn->info.stats.state == BREAKER_FORCED_OPEN)
        breaker__out_str(o, "+Inf");
    else if (sn->info.stats.state == BREAKER_OPEN)
        breaker__out_seconds(o, sn->info.retry_after_ns);
    else
        breaker__out_mem(o, "0", 1);
    breaker__out_mem(o, "\n", 1);
}

static void f_awaiting(struct breaker__out *o, const char *m, const struct breaker__snapshot *sn) {
    plain(o, m, sn, sn->info.awaiting_probe != 0);
}
static void f_flapping(struct breaker__out *o, const char *m, const struct breaker__snapshot *sn) {
    plain(o, m, sn, sn->info.flapping != 0);
}
static void f_recoveries(struct breaker__out *o, const char *m,
                         const struct breaker__snapshot *sn) {
    plain(o, m, sn, sn->info.stats.failed_recoveries);
}

/* ---- The configuration, next to the counters it explains ------------------ */

/* A duration as decimal seconds without trailing zeros ("30", "0.25"), and a
 * rate the same way ("0.5"): label values read by people, formatted with
 * integers so that no locale changes them. */
static void seconds_text(char *buf, size_t cap, uint64_t ns) {
    uint64_t whole = ns / UINT64_C(1000000000), frac = ns % UINT64_C(1000000000);
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

static void rate_text(char *buf, size_t cap, double r) {
    if (!(r > 0.0)) r = 0.0;
    if (r > 1.0) r = 1.0;
    seconds_text(buf, cap, (uint64_t)llround(r * 1e6) * 1000u); /* six decimals at most */
}

static void label(struct breaker__out *o, const char *k, const char *v) {
    breaker__out_mem(o, ",", 1);
    breaker__out_str(o, k);
    breaker__out_str(o, "=\"");
    label_value(o, v);
    breaker__out_mem(o, "\"", 1);
}

static void label_u64(struct breaker__out *o, const char *k, uint64_t v) {
    char t[24];
    snprintf(t, sizeof(t), "%" PRIu64, v);
    label(o, k, t);
}

static void label_seconds(struct breaker__out *o, const char *k, uint64_t ns) {
    char t[40];
    seconds_text(t, sizeof(t), ns);
    label(o, k, t);
}

static void label_rate(struct breaker__out *o, const char *k, double r) {
    char t[40];
    rate_text(t, sizeof(t), r);
    label(o, k, t);
}

static int windowed(const breaker_config *c) { return c->trip != BREAKER_TRIP_CONSECUTIVE; }

/* One series per breaker, always 1, whose labels are its limits (defaults
 * applied). The values are the numbers of one configuration, fixed for the
 * breaker's life, so they add no series over time; a label that the trip
 * policy does not use is left out rather than shown with a value that
 * means nothing (failure_threshold is the consecutive policy's, the window
 * labels the window policies'). */
static void f_config_info(struct breaker__out *o, const char *m,
                          const struct breaker__snapshot *sn) {
    const breaker_config *c = &sn->cfg;
    breaker__out_str(o, m);
    breaker__out_str(o, "{breaker=\"");
    label_value(o, sn->name);
    breaker__out_mem(o, "\"", 1);
    label(o, "trip", breaker_trip_name(c->trip));
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
    breaker__out_str(o, "} 1\n");
}

/* What the window must hold before it may trip: with breaker_window_calls it
 * tells "too few calls to judge" from "0% failures". */
static void f_min_calls(struct breaker__out *o, const char *m, const struct breaker__snapshot *sn) {
    plain(o, m, sn, windowed(&sn->cfg) ? sn->cfg.min_calls : 0);
}
static void f_failure_threshold(struct breaker__out *o, const char *m,
                                const struct breaker__snapshot *sn) {
    ratio(o, m, sn, windowed(&sn->cfg) ? sn->cfg.failure_rate : 0.0);
}
static void f_slow_threshold(struct breaker__out *o, const char *m,
                             const struct breaker__snapshot *sn) {
    ratio(o, m, sn, windowed(&sn->cfg) ? sn->cfg.slow_call_rate : 0.0);
}

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
    {"breaker_transitions_total", "counter", "State transitions, by from and to state.",
     f_transitions},
    {"breaker_timed_opens_total", "counter",
     "Opens for a given time, by reason: server_directed (the dependency's Retry-After) or "
     "operator.",
     f_timed_opens},
    {"breaker_shadow", "gauge",
     "1 while the breaker is in shadow mode: its state machine runs but it refuses nothing.",
     f_shadow},
    {"breaker_would_reject_calls_total", "counter",
     "Calls shadow mode admitted that the breaker would have refused, by reason.", f_would_reject},
    {"breaker_shadow_calls_total", "counter",
     "Outcomes of the calls shadow mode admitted that the breaker would have refused.",
     f_shadow_calls},
    {"breaker_store_transitions_total", "counter",
     "State transitions of the shared breaker, made by any process (a store keeps their "
     "number, not the from and to states).",
     f_store_transitions},
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
    {"breaker_flapping", "gauge", "1 while the breaker changes state too often.", f_flapping},
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

static void header(struct breaker__out *o, const char *name, const char *type, const char *help) {
    breaker__out_str(o, "# HELP ");
    breaker__out_str(o, name);
    breaker__out_mem(o, " ", 1);
    breaker__out_str(o, help);
    breaker__out_str(o, "\n# TYPE ");
    breaker__out_str(o, name);
    breaker__out_mem(o, " ", 1);
    breaker__out_str(o, type);
    breaker__out_mem(o, "\n", 1);
}

static void registry_metric(struct breaker__out *o, const char *name, const char *type,
                            const char *help, uint64_t v) {
    header(o, name, type, help);
    breaker__out_str(o, name);
    breaker__out_mem(o, " ", 1);
    u64_line(o, v);
}

static void write_build_info(struct breaker__out *o) {
    header(o, "breaker_build_info", "gauge", "Always 1; the label is the library's version.");
    breaker__out_str(o, "breaker_build_info{version=\"");
    label_value(o, breaker_version_string());
    breaker__out_str(o, "\"} 1\n");
}

/* The registry-wide series. */
static void write_registry(struct breaker__out *o, const breaker_registry_stats *rs) {
    write_build_info(o);
    registry_metric(o, "breaker_registry_breakers", "gauge", "Breakers listed in the registry.",
                    rs->breakers);
    registry_metric(o, "breaker_registry_max_breakers", "gauge",
                    "The registry's bound on listed breakers.", rs->max_breakers);
    registry_metric(o, "breaker_registry_created_total", "counter", "Breakers created.",
                    rs->created);
    registry_metric(o, "breaker_registry_evicted_total", "counter",
                    "Breakers evicted for being idle.", rs->evicted);
    registry_metric(o, "breaker_registry_rejected_full_total", "counter",
                    "New names refused because the registry was full.", rs->rejected_full);
}

/* The call-duration histogram of the breakers that time their calls
 * (slow_call_ns > 0), by outcome: cumulative buckets, _sum in seconds,
 * _count. Left out entirely when no breaker times its calls. */
static void write_durations(struct breaker__out *o, const struct breaker__snapshot *snaps,
                            size_t n) {
    static const char *const le[BREAKER_LATENCY_BUCKETS] = {
        "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1",
        "0.25",  "0.5",    "1",     "2.5",  "5",     "10",   "+Inf"};
    const char *m = "breaker_call_duration_seconds";
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        const struct breaker__snapshot *sn = &snaps[i];
        if (!sn->timed) continue;
        if (!any)
            header(o, m, "histogram", "Durations of timed calls (slow_call_ns > 0), by outcome.");
        any = true;
        for (int ok = 1; ok >= 0; ok--) {
            const uint64_t *counts = ok ? sn->latency.success : sn->latency.failure;
            const char *outcome = ok ? "success" : "failure";
            uint64_t cumulative = 0;
            for (unsigned b = 0; b < BREAKER_LATENCY_BUCKETS; b++) {
                cumulative += counts[b];
                series(o, "breaker_call_duration_seconds_bucket", sn->info.name, "outcome", outcome,
                       "le", le[b]);
                u64_line(o, cumulative);
            }
            series(o, "breaker_call_duration_seconds_sum", sn->info.name, "outcome", outcome, NULL,
                   NULL);
            breaker__out_seconds(o, ok ? sn->latency.success_sum_ns : sn->latency.failure_sum_ns);
            breaker__out_mem(o, "\n", 1);
            series(o, "breaker_call_duration_seconds_count", sn->info.name, "outcome", outcome,
                   NULL, NULL);
            u64_line(o, cumulative);
        }
    }
}

/* The probe-duration histogram of every breaker that has had a probe, by
 * result (success, failure, ignored, stale): cumulative buckets, _sum in
 * seconds, _count. A breaker that never probed adds no series; the family
 * is left out when none did. */
static void write_probe_durations(struct breaker__out *o, const struct breaker__snapshot *snaps,
                                  size_t n) {
    static const char *const le[BREAKER_LATENCY_BUCKETS] = {
        "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1",
        "0.25",  "0.5",    "1",     "2.5",  "5",     "10",   "+Inf"};
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        const breaker_probe_latency *h = &snaps[i].probes;
        uint64_t total = 0;
        for (unsigned r = 0; r < BREAKER_PROBE_RESULT_COUNT; r++)
            for (unsigned b = 0; b < BREAKER_LATENCY_BUCKETS; b++)
                total += h->count[r][b];
        if (total == 0) continue;
        if (!any)
            header(o, "breaker_probe_duration_seconds", "histogram",
                   "Durations of half-open probes, admission to completion, by result.");
        any = true;
        for (unsigned r = 0; r < BREAKER_PROBE_RESULT_COUNT; r++) {
            const char *result = breaker_probe_result_name((enum breaker_probe_result)r);
            uint64_t cumulative = 0;
            for (unsigned b = 0; b < BREAKER_LATENCY_BUCKETS; b++) {
                cumulative += h->count[r][b];
                series(o, "breaker_probe_duration_seconds_bucket", snaps[i].info.name, "result",
                       result, "le", le[b]);
                u64_line(o, cumulative);
            }
            series(o, "breaker_probe_duration_seconds_sum", snaps[i].info.name, "result", result,
                   NULL, NULL);
            breaker__out_seconds(o, h->sum_ns[r]);
            breaker__out_mem(o, "\n", 1);
            series(o, "breaker_probe_duration_seconds_count", snaps[i].info.name, "result", result,
                   NULL, NULL);
            u64_line(o, cumulative);
        }
    }
}

/* Whether family `f` is kept by the breakers' source: a store keeps the
 * number of transitions, not the pairs, and no history to tell flapping
 * (values a starting process would show as 0, wrong rather than unknown);
 * a registry has the pairs. */
static int family_kept(const struct family *f, int store) {
    if (f->fn == f_transitions || f->fn == f_flapping) return !store;
    if (f->fn == f_store_transitions) return store;
    return 1;
}

/* NULL: every breaker has samples of family `f`; else whether a breaker
 * has them (a family no breaker has is left out, HELP and TYPE too). */
static int (*family_has(const struct family *f))(const struct breaker__snapshot *) {
    if (f->fn == f_timed_opens) return has_timed_opens;
    if (f->fn == f_would_reject || f->fn == f_shadow_calls) return has_shadow;
    return NULL;
}

/* Every per-breaker family of `snaps`, then the call durations. */
static void write_breakers(struct breaker__out *o, const struct breaker__snapshot *snaps, size_t n,
                           int store) {
    /* A family without samples is left out: HELP and TYPE alone say nothing. */
    for (size_t f = 0; f < sizeof(families) / sizeof(families[0]) && n > 0; f++) {
        if (!family_kept(&families[f], store)) continue;
        int (*has)(const struct breaker__snapshot *) = family_has(&families[f]);
        if (has != NULL) {
            size_t with = 0;
            for (size_t i = 0; i < n && with == 0; i++)
                with += has(&snaps[i]) != 0;
            if (with == 0) continue;
        }
        header(o, families[f].name, families[f].type, families[f].help);
        for (size_t i = 0; i < n; i++)
            families[f].fn(o, families[f].name, &snaps[i]);
    }
    write_durations(o, snaps, n);
    write_probe_durations(o, snaps, n);
}

static int write_prometheus(void *ctx, struct breaker__out *o) {
    breaker_registry *reg = ctx;
    struct breaker__snapshot *snaps;
    size_t n;
    int rc = breaker__snapshots_take(reg, 0, &snaps, &n);
    if (rc != BREAKER_OK) return rc;
    breaker_registry_stats rs;
    breaker_registry_stats_get(reg, &rs);
    write_breakers(o, snaps, n, 0);
    write_registry(o, &rs);
    breaker__snapshots_free(snaps, n);
    return BREAKER_OK;
}

int breaker_registry_export_prometheus(breaker_registry *reg, char *buf, size_t cap, size_t *len) {
    return breaker__out_to_buffer(write_prometheus, reg, buf, cap, len);
}

int breaker_registry_export_prometheus_alloc(breaker_registry *reg, char **out, size_t *len) {
    return breaker__out_to_alloc(write_prometheus, reg, out, len);
}

/* ---- A store's breakers (breaker/store.h) ----------------------------------*/

struct store_export {
    struct breaker__snapshot *snaps;
    size_t n;
};

static int write_store(void *ctx, struct breaker__out *o) {
    const struct store_export *e = ctx;
    write_breakers(o, e->snaps, e->n, 1);
    write_build_info(o);
    return BREAKER_OK;
}

/* The snapshots are taken before writing, so that an unknown name or a
 * failed attach returns before any text. */
static int store_export(breaker_store *st, const char *name, char *buf, size_t cap, size_t *len,
                        char **out) {
    struct store_export e;
    int rc = breaker__store_snapshots_take(st, name, &e.snaps, &e.n);
    if (rc != BREAKER_OK) return rc;
    rc = out != NULL ? breaker__out_to_alloc(write_store, &e, out, len)
                     : breaker__out_to_buffer(write_store, &e, buf, cap, len);
    breaker__snapshots_free(e.snaps, e.n);
    return rc;
}

int breaker_store_export_prometheus(breaker_store *st, const char *name, char *buf, size_t cap,
                                    size_t *len) {
    return store_export(st, name, buf, cap, len, NULL);
}

int breaker_store_export_prometheus_alloc(breaker_store *st, const char *name, char **out,
                                          size_t *len) {
    *out = NULL;
    return store_export(st, name, NULL, 0, len, out);
}

/* ---- Bulkheads, retry budgets and executors (compose.h) -------------------
 * These objects belong to no registry, so the caller names them in a list;
 * each family is written once with a series per named object, so the list's
 * text can follow the registry's in one scrape (their families differ). */

/* Every object's counters, read once before writing, so that the families of
 * one object describe one moment. */
struct compose_snap {
    breaker_bulkhead_stats bh;
    breaker_retry_budget_stats rb;
    breaker_executor_stats ex;
};

enum compose_kind { KIND_BULKHEAD, KIND_BUDGET, KIND_EXECUTOR };

typedef void compose_fn(struct breaker__out *o, const char *m, const char *name,
                        const struct compose_snap *s);

struct compose_family {
    const char *name;
    const char *type;
    const char *help;
    enum compose_kind kind;
    compose_fn *fn;
};

static int has_kind(const breaker_compose_metrics *it, enum compose_kind k) {
    switch (k) {
    case KIND_BULKHEAD:
        return it->bulkhead != NULL;
    case KIND_BUDGET:
        return it->budget != NULL;
    case KIND_EXECUTOR:
        return it->executor != NULL;
    }
    return 0;
}

/* `metric{name="<name>"[,k="v"]} ` ready for the value. */
static void compose_series(struct breaker__out *o, const char *metric, const char *name,
                           const char *k, const char *v) {
    breaker__out_str(o, metric);
    breaker__out_str(o, "{name=\"");
    label_value(o, name);
    breaker__out_mem(o, "\"", 1);
    if (k != NULL) label(o, k, v);
    breaker__out_str(o, "} ");
}

static void compose_u64(struct breaker__out *o, const char *m, const char *name, const char *k,
                        const char *v, uint64_t value) {
    compose_series(o, m, name, k, v);
    u64_line(o, value);
}

#define COMPOSE_PLAIN(fn, expr)                                             \
    static void fn(struct breaker__out *o, const char *m, const char *name, \
                   const struct compose_snap *s) {                          \
        compose_u64(o, m, name, NULL, NULL, (expr));                        \
    }
COMPOSE_PLAIN(c_bh_max, s->bh.max_concurrent)
COMPOSE_PLAIN(c_bh_in_flight, s->bh.in_flight)
COMPOSE_PLAIN(c_bh_waiting, s->bh.waiting)
COMPOSE_PLAIN(c_bh_peak, s->bh.peak)
COMPOSE_PLAIN(c_bh_acquired, s->bh.acquired)
COMPOSE_PLAIN(c_bh_refused, s->bh.refused)
COMPOSE_PLAIN(c_bh_waited, s->bh.waited)
COMPOSE_PLAIN(c_rb_requests, s->rb.deposits)
COMPOSE_PLAIN(c_rb_allowed, s->rb.withdrawals)
COMPOSE_PLAIN(c_rb_refunded, s->rb.refunded)
COMPOSE_PLAIN(c_rb_refused, s->rb.refused)
COMPOSE_PLAIN(c_rb_window_requests, s->rb.window_requests)
COMPOSE_PLAIN(c_rb_window_retries, s->rb.window_retries)
COMPOSE_PLAIN(c_ex_requests, s->ex.requests)
COMPOSE_PLAIN(c_ex_attempts, s->ex.attempts)
COMPOSE_PLAIN(c_ex_retries, s->ex.retries)
COMPOSE_PLAIN(c_ex_late, s->ex.late)
COMPOSE_PLAIN(c_ex_fallbacks, s->ex.fallbacks)
COMPOSE_PLAIN(c_ex_records, s->ex.breaker_records)
#undef COMPOSE_PLAIN

static void c_ex_results(struct breaker__out *o, const char *m, const char *name,
                         const struct compose_snap *s) {
    compose_u64(o, m, name, "result", "succeeded", s->ex.succeeded);
    compose_u64(o, m, name, "result", "failed", s->ex.failed);
    compose_u64(o, m, name, "result", "cancelled", s->ex.cancelled);
}

static void c_ex_refused(struct breaker__out *o, const char *m, const char *name,
                         const struct compose_snap *s) {
    compose_u64(o, m, name, "layer", "deadline", s->ex.refused_deadline);
    compose_u64(o, m, name, "layer", "bulkhead", s->ex.refused_bulkhead);
    compose_u64(o, m, name, "layer", "breaker", s->ex.refused_breaker);
}

static void c_ex_stopped(struct breaker__out *o, const char *m, const char *name,
                         const struct compose_snap *s) {
    compose_u64(o, m, name, "layer", "breaker", s->ex.stopped_breaker);
    compose_u64(o, m, name, "layer", "retry_budget", s->ex.stopped_budget);
    compose_u64(o, m, name, "layer", "deadline", s->ex.stopped_deadline);
}

static void c_ex_slept(struct breaker__out *o, const char *m, const char *name,
                       const struct compose_snap *s) {
    compose_series(o, m, name, NULL, NULL);
    breaker__out_seconds(o, s->ex.slept_ns);
    breaker__out_mem(o, "\n", 1);
}

static const struct compose_family compose_families[] = {
    {"breaker_bulkhead_max_concurrent", "gauge", "The bulkhead's slots.", KIND_BULKHEAD, c_bh_max},
    {"breaker_bulkhead_in_flight", "gauge", "Slots held now.", KIND_BULKHEAD, c_bh_in_flight},
    {"breaker_bulkhead_waiting", "gauge", "Threads waiting for a slot now.", KIND_BULKHEAD,
     c_bh_waiting},
    {"breaker_bulkhead_peak_in_flight", "gauge", "Most slots ever held at once.", KIND_BULKHEAD,
     c_bh_peak},
    {"breaker_bulkhead_acquired_total", "counter", "Slots granted.", KIND_BULKHEAD, c_bh_acquired},
    {"breaker_bulkhead_refused_total", "counter",
     "Acquisitions refused (every slot taken, or the wait ran out).", KIND_BULKHEAD, c_bh_refused},
    {"breaker_bulkhead_waited_total", "counter", "Slots granted after a wait.", KIND_BULKHEAD,
     c_bh_waited},
    {"breaker_retry_budget_requests_total", "counter", "Requests (first attempts) deposited.",
     KIND_BUDGET, c_rb_requests},
    {"breaker_retry_budget_retries_allowed_total", "counter",
     "Retries the budget allowed (refunded ones included).", KIND_BUDGET, c_rb_allowed},
    {"breaker_retry_budget_retries_refunded_total", "counter",
     "Allowed retries given back because they were not made.", KIND_BUDGET, c_rb_refunded},
    {"breaker_retry_budget_retries_refused_total", "counter",
     "Retries refused because the budget was spent.", KIND_BUDGET, c_rb_refused},
    {"breaker_retry_budget_window_requests", "gauge", "Requests in the budget's current window.",
     KIND_BUDGET, c_rb_window_requests},
    {"breaker_retry_budget_window_retries", "gauge",
     "Retries in the budget's current window (refunds deducted).", KIND_BUDGET,
     c_rb_window_retries},
    {"breaker_executor_requests_total", "counter", "Requests run.", KIND_EXECUTOR, c_ex_requests},
    {"breaker_executor_attempts_total", "counter", "Attempts that reached the operation.",
     KIND_EXECUTOR, c_ex_attempts},
    {"breaker_executor_retries_total", "counter", "Attempts after the first.", KIND_EXECUTOR,
     c_ex_retries},
    {"breaker_executor_results_total", "counter",
     "Requests that ran, by result (a fallback counts as the result it replaced).", KIND_EXECUTOR,
     c_ex_results},
    {"breaker_executor_refused_total", "counter",
     "Requests refused before any attempt, by the refusing layer.", KIND_EXECUTOR, c_ex_refused},
    {"breaker_executor_retries_stopped_total", "counter",
     "Requests whose retries a layer ended: the breaker opened, the budget was spent, or the "
     "deadline left no room.",
     KIND_EXECUTOR, c_ex_stopped},
    {"breaker_executor_late_attempts_total", "counter",
     "Attempts that answered after their deadline.", KIND_EXECUTOR, c_ex_late},
    {"breaker_executor_fallbacks_total", "counter", "Results served by the fallback.",
     KIND_EXECUTOR, c_ex_fallbacks},
    {"breaker_executor_breaker_records_total", "counter",
     "Outcomes recorded in the breaker (stale completions excluded).", KIND_EXECUTOR, c_ex_records},
    {"breaker_executor_backoff_seconds_total", "counter", "Time slept in backoffs.", KIND_EXECUTOR,
     c_ex_slept},
};

/* Names must be valid breaker names (so label values never need escaping)
 * and unique per kind (a scrape names a series once). */
static int compose_check(const breaker_compose_metrics *items, size_t n) {
    if (n > 0 && items == NULL) return BREAKER_EINVAL;
    for (size_t i = 0; i < n; i++) {
        if (items[i].name == NULL || breaker_name_validate(items[i].name, NULL, 0) != BREAKER_OK)
            return BREAKER_EINVAL;
        for (size_t j = 0; j < i; j++) {
            if (strcmp(items[i].name, items[j].name) != 0) continue;
            for (int k = KIND_BULKHEAD; k <= KIND_EXECUTOR; k++)
                if (has_kind(&items[i], (enum compose_kind)k) &&
                    has_kind(&items[j], (enum compose_kind)k))
                    return BREAKER_EINVAL;
        }
    }
    return BREAKER_OK;
}

struct compose_list {
    const breaker_compose_metrics *items;
    size_t n;
};

static int write_compose(void *ctx, struct breaker__out *o) {
    const struct compose_list *l = ctx;
    struct compose_snap *snaps = l->n > 0 ? calloc(l->n, sizeof(*snaps)) : NULL;
    if (l->n > 0 && snaps == NULL) return BREAKER_ENOMEM;
    for (size_t i = 0; i < l->n; i++) {
        const breaker_compose_metrics *it = &l->items[i];
        if (it->bulkhead != NULL) breaker_bulkhead_stats_get(it->bulkhead, &snaps[i].bh);
        if (it->budget != NULL) breaker_retry_budget_stats_get(it->budget, &snaps[i].rb);
        if (it->executor != NULL) breaker_executor_stats_get(it->executor, &snaps[i].ex);
    }
    for (size_t f = 0; f < sizeof(compose_families) / sizeof(compose_families[0]); f++) {
        const struct compose_family *cf = &compose_families[f];
        int any = 0;
        for (size_t i = 0; i < l->n; i++) {
            if (!has_kind(&l->items[i], cf->kind)) continue;
            if (!any) header(o, cf->name, cf->type, cf->help);
            any = 1;
            cf->fn(o, cf->name, l->items[i].name, &snaps[i]);
        }
    }
    free(snaps);
    return BREAKER_OK;
}

int breaker_compose_export_prometheus(const breaker_compose_metrics *items, size_t n, char *buf,
                                      size_t cap, size_t *len) {
    int rc = compose_check(items, n);
    if (rc != BREAKER_OK) return rc;
    struct compose_list l = {items, n};
    return breaker__out_to_buffer(write_compose, &l, buf, cap, len);
}

int breaker_compose_export_prometheus_alloc(const breaker_compose_metrics *items, size_t n,
                                            char **out, size_t *len) {
    *out = NULL;
    int rc = compose_check(items, n);
    if (rc != BREAKER_OK) return rc;
    struct compose_list l = {items, n};
    return breaker__out_to_alloc(write_compose, &l, out, len);
}
