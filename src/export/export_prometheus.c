/*
 * export_prometheus.c - the Prometheus text exposition (format 0.0.4) of a
 * registry.
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

#include <string.h>

/* Writes the samples of one family for one breaker. */
typedef void family_fn(struct breaker__out *o, const char *metric, const breaker_registry_info *in);

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

static void plain(struct breaker__out *o, const char *metric, const breaker_registry_info *in,
                  uint64_t v) {
    series(o, metric, in->name, NULL, NULL, NULL, NULL);
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
static void f_state(struct breaker__out *o, const char *m, const breaker_registry_info *in) {
    plain(o, m, in, (uint64_t)in->stats.state);
}

static void f_calls(struct breaker__out *o, const char *m, const breaker_registry_info *in) {
    series(o, m, in->name, "outcome", "success", NULL, NULL);
    u64_line(o, in->stats.successes);
    series(o, m, in->name, "outcome", "failure", NULL, NULL);
    u64_line(o, in->stats.failures);
    series(o, m, in->name, "outcome", "ignored", NULL, NULL);
    u64_line(o, in->stats.ignored);
}

static void f_admitted(struct breaker__out *o, const char *m, const breaker_registry_info *in) {
    plain(o, m, in, in->stats.admitted);
}
static void f_cancelled(struct breaker__out *o, const char *m, const breaker_registry_info *in) {
    plain(o, m, in, in->stats.cancelled);
}
static void f_slow(struct breaker__out *o, const char *m, const breaker_registry_info *in) {
    plain(o, m, in, in->stats.slow);
}

static void f_rejected(struct breaker__out *o, const char *m, const breaker_registry_info *in) {
    series(o, m, in->name, "reason", "open", NULL, NULL);
    u64_line(o, in->stats.rejected_open);
    series(o, m, in->name, "reason", "half_open", NULL, NULL);
    u64_line(o, in->stats.rejected_half_open);
    series(o, m, in->name, "reason", "forced_open", NULL, NULL);
    u64_line(o, in->stats.rejected_forced);
    series(o, m, in->name, "reason", "ramp", NULL, NULL);
    u64_line(o, in->stats.rejected_ramp);
}

/* Whether the breaker has ever been in operator state `s`. */
static int entered(const breaker_registry_info *in, unsigned s) {
    for (unsigned f = 0; f < BREAKER_STATE_COUNT; f++)
        if (in->transitions_by[f][s] != 0) return 1;
    return 0;
}

/* The recovery cycle's pairs are always exported (from zero, so rate() works
 * from the first scrape); the operator pairs once they have happened. */
static int always_exported(unsigned from, unsigned to) {
    return (from == BREAKER_CLOSED && to == BREAKER_OPEN) ||
           (from == BREAKER_OPEN && to == BREAKER_HALF_OPEN) ||
           (from == BREAKER_HALF_OPEN && to == BREAKER_OPEN) ||
           (from == BREAKER_HALF_OPEN && to == BREAKER_CLOSED);
}

static void f_transitions(struct breaker__out *o, const char *m, const breaker_registry_info *in) {
    for (unsigned f = 0; f < BREAKER_STATE_COUNT; f++)
        for (unsigned t = 0; t < BREAKER_STATE_COUNT; t++) {
            uint64_t v = in->transitions_by[f][t];
            if (v == 0 && !always_exported(f, t)) continue;
            series(o, m, in->name, "from", state_label(f), "to", state_label(t));
            u64_line(o, v);
        }
}

static void f_state_seconds(struct breaker__out *o, const char *m,
                            const breaker_registry_info *in) {
    for (unsigned s = 0; s < BREAKER_STATE_COUNT; s++) {
        /* The forced states only once an operator has used them, as with the
         * operator pairs of breaker_transitions_total. */
        int forced = s == BREAKER_FORCED_OPEN || s == BREAKER_FORCED_CLOSED;
        if (forced && !entered(in, s)) continue;
        series(o, m, in->name, "state", state_label(s), NULL, NULL);
        breaker__out_seconds(o, in->stats.time_in_state_ns[s]);
        breaker__out_mem(o, "\n", 1);
    }
}

static void f_probes_admitted(struct breaker__out *o, const char *m,
                              const breaker_registry_info *in) {
    plain(o, m, in, in->stats.probes_admitted);
}

static void f_probes(struct breaker__out *o, const char *m, const breaker_registry_info *in) {
    const breaker_stats *st = &in->stats;
    uint64_t failed =
        st->probes_failed >= st->probes_timed_out ? st->probes_failed - st->probes_timed_out : 0;
    series(o, m, in->name, "result", "success", NULL, NULL);
    u64_line(o, st->probes_succeeded);
    series(o, m, in->name, "result", "failure", NULL, NULL);
    u64_line(o, failed);
    series(o, m, in->name, "result", "timeout", NULL, NULL);
    u64_line(o, st->probes_timed_out);
}

static void f_in_flight(struct breaker__out *o, const char *m, const breaker_registry_info *in) {
    plain(o, m, in, in->stats.probes_in_flight);
}
static void f_half_open_successes(struct breaker__out *o, const char *m,
                                  const breaker_registry_info *in) {
    plain(o, m, in, in->stats.probe_successes);
}
static void f_stale(struct breaker__out *o, const char *m, const breaker_registry_info *in) {
    plain(o, m, in, in->stats.stale);
}
static void f_duplicates(struct breaker__out *o, const char *m, const breaker_registry_info *in) {
    plain(o, m, in, in->stats.duplicates);
}
static void f_window_calls(struct breaker__out *o, const char *m, const breaker_registry_info *in) {
    plain(o, m, in, in->stats.window_calls);
}

static void ratio(struct breaker__out *o, const char *m, const breaker_registry_info *in,
                  double r) {
    series(o, m, in->name, NULL, NULL, NULL, NULL);
    breaker__out_ratio(o, r);
    breaker__out_mem(o, "\n", 1);
}
static void f_failure_ratio(struct breaker__out *o, const char *m,
                            const breaker_registry_info *in) {
    ratio(o, m, in, in->stats.window_failure_rate);
}
static void f_slow_ratio(struct breaker__out *o, const char *m, const breaker_registry_info *in) {
    ratio(o, m, in, in->stats.window_slow_rate);
}
static void f_ramp_share(struct breaker__out *o, const char *m, const breaker_registry_info *in) {
    ratio(o, m, in, in->stats.ramp_share);
}

static void f_next_probe(struct breaker__out *o, const char *m, const breaker_registry_info *in) {
    series(o, m, in->name, NULL, NULL, NULL, NULL);
    if (in->stats.state == BREAKER_FORCED_OPEN)
        breaker__out_str(o, "+Inf");
    else if (in->stats.state == BREAKER_OPEN)
        breaker__out_seconds(o, in->retry_after_ns);
    else
        breaker__out_mem(o, "0", 1);
    breaker__out_mem(o, "\n", 1);
}

static void f_awaiting(struct breaker__out *o, const char *m, const breaker_registry_info *in) {
    plain(o, m, in, in->awaiting_probe != 0);
}
static void f_flapping(struct breaker__out *o, const char *m, const breaker_registry_info *in) {
    plain(o, m, in, in->flapping != 0);
}
static void f_recoveries(struct breaker__out *o, const char *m, const breaker_registry_info *in) {
    plain(o, m, in, in->stats.failed_recoveries);
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

int breaker_registry_export_prometheus(breaker_registry *reg, char *buf, size_t cap, size_t *len) {
    struct breaker__snapshot *snaps;
    size_t n;
    int rc = breaker__snapshots_take(reg, 0, &snaps, &n);
    if (rc != BREAKER_OK) return rc;
    breaker_registry_stats rs;
    breaker_registry_stats_get(reg, &rs);

    struct breaker__out o;
    breaker__out_init(&o, buf, cap);
    /* A family without samples is left out: HELP and TYPE alone say nothing. */
    for (size_t f = 0; f < sizeof(families) / sizeof(families[0]) && n > 0; f++) {
        header(&o, families[f].name, families[f].type, families[f].help);
        for (size_t i = 0; i < n; i++)
            families[f].fn(&o, families[f].name, &snaps[i].info);
    }
    registry_metric(&o, "breaker_registry_breakers", "gauge", "Breakers listed in the registry.",
                    rs.breakers);
    registry_metric(&o, "breaker_registry_max_breakers", "gauge",
                    "The registry's bound on listed breakers.", rs.max_breakers);
    registry_metric(&o, "breaker_registry_created_total", "counter", "Breakers created.",
                    rs.created);
    registry_metric(&o, "breaker_registry_evicted_total", "counter",
                    "Breakers evicted for being idle.", rs.evicted);
    registry_metric(&o, "breaker_registry_rejected_full_total", "counter",
                    "New names refused because the registry was full.", rs.rejected_full);
    breaker__snapshots_free(snaps, n);
    return breaker__out_finish(&o, len);
}
