/* SPDX-License-Identifier: MIT */
/*
 * export_json.c - the JSON reports: the operators' report and the public
 * health report.
 *
 * The library stays free of dependencies, so the JSON is written by hand.
 * Two rules keep it correct for any input: every string goes through
 * breaker__out_json_string() (quotes, backslashes and control bytes escaped,
 * bytes that are not UTF-8 replaced), and every number is written by the
 * builder's integer formatting (text_out.c), never printf %g, whose output
 * depends on the locale and can be "nan" or "inf", which JSON lacks.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "export/text_out.h"
#include "registry/registry_internal.h"
#include "common/time_ns.h"

#include <string.h>
#include <time.h>

/* ---- The operators' report --------------------------------------------------*/

static void key(struct breaker__out *o, const char *k) {
    breaker__out_json_string(o, k);
    breaker__out_mem(o, ":", 1);
}

static void kv_u64(struct breaker__out *o, const char *k, uint64_t v, int comma) {
    key(o, k);
    breaker__out_u64(o, v);
    if (comma) breaker__out_mem(o, ",", 1);
}

static void kv_str(struct breaker__out *o, const char *k, const char *v, int comma) {
    key(o, k);
    breaker__out_json_string(o, v);
    if (comma) breaker__out_mem(o, ",", 1);
}

static void kv_bool(struct breaker__out *o, const char *k, int v, int comma) {
    key(o, k);
    breaker__out_str(o, v ? "true" : "false");
    if (comma) breaker__out_mem(o, ",", 1);
}

static void kv_seconds(struct breaker__out *o, const char *k, uint64_t ns, int comma) {
    key(o, k);
    breaker__out_seconds(o, ns);
    if (comma) breaker__out_mem(o, ",", 1);
}

static void kv_ratio(struct breaker__out *o, const char *k, double r, int comma) {
    key(o, k);
    breaker__out_ratio(o, r);
    if (comma) breaker__out_mem(o, ",", 1);
}

static void write_evidence(struct breaker__out *o, const breaker_evidence *e) {
    breaker__out_mem(o, "{", 1);
    kv_u64(o, "calls", e->calls, 1);
    kv_u64(o, "failures", e->failures, 1);
    kv_u64(o, "slow_calls", e->slow_calls, 1);
    kv_ratio(o, "failure_rate", e->failure_rate, 1);
    kv_ratio(o, "slow_call_rate", e->slow_call_rate, 1);
    kv_u64(o, "consecutive_failures", e->consecutive_failures, 1);
    kv_u64(o, "probe_successes", e->probe_successes, 1);
    kv_u64(o, "failed_recoveries", e->failed_recoveries, 1);
    kv_u64(o, "failing_sources", e->failing_sources, 0);
    breaker__out_mem(o, "}", 1);
}

/* Wall-clock time of something `age_ns` ago: ages are measured on each
 * breaker's own (monotonic) clock, which has no calendar date, and subtracted
 * from the wall clock read once per report. */
static void kv_unix_time(struct breaker__out *o, const char *k, uint64_t wall_ns, uint64_t age_ns) {
    kv_seconds(o, k, wall_ns > age_ns ? wall_ns - age_ns : 0, 1);
}

static void write_transition(struct breaker__out *o, const breaker_event *ev, uint64_t now,
                             uint64_t wall_ns) {
    uint64_t age = now > ev->time_ns ? now - ev->time_ns : 0;
    breaker__out_mem(o, "{", 1);
    kv_seconds(o, "seconds_ago", age, 1);
    kv_unix_time(o, "unix_time", wall_ns, age);
    kv_u64(o, "generation", ev->generation, 1);
    kv_str(o, "from", breaker_state_name(ev->from), 1);
    kv_str(o, "to", breaker_state_name(ev->to), 1);
    kv_str(o, "reason", breaker_reason_name(ev->reason), 1);
    kv_seconds(o, "open_seconds", ev->open_ns, 1);
    /* An operator's control: who and why (empty for every other). */
    kv_str(o, "who", ev->who, 1);
    kv_str(o, "why", ev->why, 1);
    key(o, "evidence");
    write_evidence(o, &ev->evidence);
    breaker__out_mem(o, "}", 1);
}

/* The limits the counters are judged against (defaults applied), with the
 * keys of breaker_config_set(); durations in seconds. */
static void write_config(struct breaker__out *o, const breaker_config *c) {
    int windowed = c->trip != BREAKER_TRIP_CONSECUTIVE;
    breaker__out_mem(o, "{", 1);
    kv_str(o, "trip", breaker_trip_name(c->trip), 1);
    kv_u64(o, "failure_threshold", c->failure_threshold, 1);
    kv_u64(o, "window_size", c->window_size, 1);
    kv_seconds(o, "window", c->window_ns, 1);
    kv_u64(o, "window_buckets", c->window_buckets, 1);
    kv_u64(o, "min_calls", windowed ? c->min_calls : 0, 1);
    kv_ratio(o, "failure_rate", c->failure_rate, 1);
    kv_seconds(o, "slow_call", c->slow_call_ns, 1);
    kv_ratio(o, "slow_call_rate", c->slow_call_rate, 1);
    kv_seconds(o, "open", c->open_ns, 1);
    kv_seconds(o, "open_max", c->open_max_ns, 1);
    kv_ratio(o, "open_jitter", c->open_jitter, 1);
    kv_u64(o, "half_open_max_probes", c->half_open_max_probes, 1);
    kv_u64(o, "half_open_successes", c->half_open_successes, 1);
    kv_seconds(o, "probe_timeout", c->probe_timeout_ns, 1);
    kv_seconds(o, "ramp", c->ramp_ns, 1);
    kv_u64(o, "min_failing_sources", c->min_failing_sources, 0);
    breaker__out_mem(o, "}", 1);
}

/* Probe durations by result: per-bucket counts (not cumulative; upper bounds
 * as breaker_latency's: 1 ms .. 10 s, +Inf), their number and total. */
static void write_probe_durations(struct breaker__out *o, const breaker_probe_latency *h) {
    breaker__out_mem(o, "{", 1);
    for (unsigned r = 0; r < BREAKER_PROBE_RESULT_COUNT; r++) {
        uint64_t count = 0;
        key(o, breaker_probe_result_name((enum breaker_probe_result)r));
        breaker__out_mem(o, "{", 1);
        key(o, "buckets");
        breaker__out_mem(o, "[", 1);
        for (unsigned b = 0; b < BREAKER_LATENCY_BUCKETS; b++) {
            if (b > 0) breaker__out_mem(o, ",", 1);
            breaker__out_u64(o, h->count[r][b]);
            count += h->count[r][b];
        }
        breaker__out_mem(o, "],", 2);
        kv_u64(o, "count", count, 1);
        kv_seconds(o, "sum_seconds", h->sum_ns[r], 0);
        breaker__out_mem(o, r + 1 < BREAKER_PROBE_RESULT_COUNT ? "}," : "}",
                         r + 1 < BREAKER_PROBE_RESULT_COUNT ? 2 : 1);
    }
    breaker__out_mem(o, "}", 1);
}

static void write_breaker(struct breaker__out *o, const breaker_registry_info *in,
                          const breaker_config *cfg, const breaker_probe_latency *probes,
                          uint64_t wall_ns) {
    const breaker_stats *st = &in->stats;
    breaker__out_mem(o, "{", 1);
    kv_str(o, "name", in->name, 1);
    kv_str(o, "state", breaker_state_name(st->state), 1);
    kv_u64(o, "generation", st->generation, 1);
    uint64_t age = in->now_ns > st->state_since_ns ? in->now_ns - st->state_since_ns : 0;
    kv_seconds(o, "state_age_seconds", age, 1);
    kv_unix_time(o, "state_since_unix_time", wall_ns, age);
    kv_bool(o, "degraded", breaker__info_degraded(in), 1);
    kv_bool(o, "flapping", in->flapping, 1);
    kv_bool(o, "shadow", st->shadow != 0, 1);
    kv_u64(o, "recent_transitions", in->recent_transitions, 1);
    kv_bool(o, "awaiting_probe", in->awaiting_probe, 1);
    key(o, "retry_after_seconds");
    if (in->retry_after_ns == UINT64_MAX)
        breaker__out_str(o, "null"); /* forced open: until an operator acts */
    else
        breaker__out_seconds(o, in->retry_after_ns);
    breaker__out_mem(o, ",", 1);
    kv_u64(o, "failed_recoveries", st->failed_recoveries, 1);
    kv_ratio(o, "ramp_share", st->ramp_share, 1);

    key(o, "counters");
    breaker__out_mem(o, "{", 1);
    kv_u64(o, "admitted", st->admitted, 1);
    kv_u64(o, "successes", st->successes, 1);
    kv_u64(o, "failures", st->failures, 1);
    kv_u64(o, "ignored", st->ignored, 1);
    kv_u64(o, "cancelled", st->cancelled, 1);
    kv_u64(o, "slow", st->slow, 1);
    kv_u64(o, "rejected_open", st->rejected_open, 1);
    kv_u64(o, "rejected_half_open", st->rejected_half_open, 1);
    kv_u64(o, "rejected_forced", st->rejected_forced, 1);
    kv_u64(o, "rejected_ramp", st->rejected_ramp, 1);
    kv_u64(o, "stale", st->stale, 1);
    kv_u64(o, "duplicates", st->duplicates, 1);
    kv_u64(o, "probes_admitted", st->probes_admitted, 1);
    kv_u64(o, "probes_succeeded", st->probes_succeeded, 1);
    kv_u64(o, "probes_failed", st->probes_failed, 1);
    kv_u64(o, "probes_timed_out", st->probes_timed_out, 1);
    kv_u64(o, "probes_in_flight", st->probes_in_flight, 1);
    kv_u64(o, "probe_successes", st->probe_successes, 1);
    kv_u64(o, "server_directed_opens", st->server_directed_opens, 1);
    kv_u64(o, "operator_opens", st->operator_opens, 1);
    kv_u64(o, "would_reject_open", st->would_reject_open, 1);
    kv_u64(o, "would_reject_half_open", st->would_reject_half_open, 1);
    kv_u64(o, "would_reject_forced", st->would_reject_forced, 1);
    kv_u64(o, "would_reject_ramp", st->would_reject_ramp, 1);
    kv_u64(o, "shadow_successes", st->shadow_successes, 1);
    kv_u64(o, "shadow_failures", st->shadow_failures, 1);
    kv_u64(o, "transitions", st->transitions, 0);
    breaker__out_mem(o, "},", 2);

    key(o, "window");
    breaker__out_mem(o, "{", 1);
    kv_u64(o, "calls", st->window_calls, 1);
    kv_u64(o, "failures", st->window_failures, 1);
    kv_u64(o, "slow", st->window_slow, 1);
    kv_ratio(o, "failure_rate", st->window_failure_rate, 1);
    kv_ratio(o, "slow_call_rate", st->window_slow_rate, 1);
    kv_u64(o, "consecutive_failures", st->consecutive_failures, 1);
    /* min_calls: the window cannot trip below it (0 under the consecutive
     * policy), so "ready": false tells too few calls from health. */
    uint64_t min_calls = cfg->trip != BREAKER_TRIP_CONSECUTIVE ? cfg->min_calls : 0;
    kv_u64(o, "min_calls", min_calls, 1);
    kv_bool(o, "ready", st->window_calls >= min_calls, 0);
    breaker__out_mem(o, "},", 2);

    key(o, "config");
    write_config(o, cfg);
    breaker__out_mem(o, ",", 1);

    key(o, "probe_durations");
    write_probe_durations(o, probes);
    breaker__out_mem(o, ",", 1);

    key(o, "seconds_in_state");
    breaker__out_mem(o, "{", 1);
    for (unsigned s = 0; s < BREAKER_STATE_COUNT; s++)
        kv_seconds(o, breaker_state_name((enum breaker_state)s), st->time_in_state_ns[s], s < 4);
    breaker__out_mem(o, "},", 2);

    key(o, "transitions");
    breaker__out_mem(o, "[", 1);
    for (size_t i = 0; i < in->history_len; i++) {
        if (i > 0) breaker__out_mem(o, ",", 1);
        write_transition(o, &in->history[i], in->now_ns, wall_ns);
    }
    breaker__out_mem(o, "]}", 2);
}

static int write_json(void *ctx, struct breaker__out *o) {
    breaker_registry *reg = ctx;
    struct breaker__snapshot *snaps;
    size_t n;
    int rc = breaker__snapshots_take(reg, 1, &snaps, &n);
    if (rc != BREAKER_OK) return rc;
    breaker_registry_stats rs;
    breaker_registry_stats_get(reg, &rs);
    uint64_t wall_ns = breaker__clock_ns(CLOCK_REALTIME);
    int degraded = 0;
    for (size_t i = 0; i < n; i++)
        degraded |= breaker__info_degraded(&snaps[i].info);

    breaker__out_mem(o, "{", 1);
    kv_u64(o, "version", 1, 1);
    kv_str(o, "library_version", breaker_version_string(), 1);
    kv_seconds(o, "unix_time", wall_ns, 1);
    kv_bool(o, "degraded", degraded, 1);
    key(o, "registry");
    breaker__out_mem(o, "{", 1);
    kv_u64(o, "breakers", rs.breakers, 1);
    kv_u64(o, "max_breakers", rs.max_breakers, 1);
    kv_u64(o, "created", rs.created, 1);
    kv_u64(o, "evicted", rs.evicted, 1);
    kv_u64(o, "rejected_full", rs.rejected_full, 1);
    kv_u64(o, "invalid_names", rs.invalid_names, 0);
    breaker__out_mem(o, "},", 2);
    key(o, "breakers");
    breaker__out_mem(o, "[", 1);
    for (size_t i = 0; i < n; i++) {
        if (i > 0) breaker__out_mem(o, ",", 1);
        write_breaker(o, &snaps[i].info, &snaps[i].cfg, &snaps[i].probes, wall_ns);
    }
    breaker__out_mem(o, "]}\n", 3);
    breaker__snapshots_free(snaps, n);
    return BREAKER_OK;
}

int breaker_registry_export_json(breaker_registry *reg, char *buf, size_t cap, size_t *len) {
    return breaker__out_to_buffer(write_json, reg, buf, cap, len);
}

int breaker_registry_export_json_alloc(breaker_registry *reg, char **out, size_t *len) {
    return breaker__out_to_alloc(write_json, reg, out, len);
}

/* ---- The public report ----------------------------------------------------- */

static int write_health(void *ctx, struct breaker__out *o) {
    breaker_registry *reg = ctx;
    breaker__out_str(o, breaker_registry_degraded(reg) ? "{\"status\":\"degraded\"}\n"
                                                       : "{\"status\":\"ok\"}\n");
    return BREAKER_OK;
}

int breaker_registry_export_health_json(breaker_registry *reg, char *buf, size_t cap, size_t *len) {
    return breaker__out_to_buffer(write_health, reg, buf, cap, len);
}

int breaker_registry_export_health_json_alloc(breaker_registry *reg, char **out, size_t *len) {
    return breaker__out_to_alloc(write_health, reg, out, len);
}
