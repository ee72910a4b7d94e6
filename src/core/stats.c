/* SPDX-License-Identifier: MIT */
/*
 * stats.c - the statistics snapshot (sums the counter stripes and reads the
 * window) and the duration histograms (sums the stripes' runs). Not on the
 * call path.
 */
#include "core/internal.h"

#include <string.h>

int breaker_stats_get(breaker *b, breaker_stats *out) {
    /* A probe past its deadline has already failed: apply its timeout (dated
     * at the deadline) first, so a snapshot taken at any time shows the state
     * the breaker is really in, not a half-open with a dead probe. */
    (void)breaker_get_state(b);
    breaker_stats_peek(b, out);
    return BREAKER_OK;
}

uint64_t breaker_failing_sources_peek(breaker *b) {
    b = breaker__live(b);
    /* Relaxed: a snapshot of two words, as the trip rule reads them. */
    return breaker__read(&b->shared->src_cur) | breaker__read(&b->shared->src_prev);
}

void breaker_stats_peek(breaker *b, breaker_stats *out) {
    b = breaker__live(b);
    const struct breaker__shared *s = b->shared;
    memset(out, 0, sizeof(*out));
    uint64_t ctl = breaker__load_acquire(&s->ctl);
    uint64_t now = b->now_precise(b);

    const struct breaker__stripe *stripes = breaker__stripes(s);
    for (unsigned i = 0; i < BREAKER__STRIPES; i++) {
        const struct breaker__stripe *st = &stripes[i];
        out->admitted += breaker__read(&st->admitted);
        out->successes += breaker__read(&st->successes);
        out->failures += breaker__read(&st->failures);
        out->ignored += breaker__read(&st->ignored);
        out->cancelled += breaker__read(&st->cancelled);
        out->slow += breaker__read(&st->slow);
        out->stale += breaker__read(&st->stale);
        out->rejected_open += breaker__read(&st->rejected_open);
        out->rejected_forced += breaker__read(&st->rejected_forced);
        out->rejected_half_open += breaker__read(&st->rejected_half_open);
        out->rejected_ramp += breaker__read(&st->rejected_ramp);
    }
    out->duplicates = breaker__read(&s->duplicates);
    out->probes_admitted = breaker__read(&s->probes_admitted);
    out->probes_succeeded = breaker__read(&s->probes_succeeded);
    out->probes_failed = breaker__read(&s->probes_failed);
    out->probes_timed_out = breaker__read(&s->probes_timed_out);
    out->transitions = breaker__read(&s->transitions);
    out->server_directed_opens = breaker__read(&s->timed_opens[BREAKER__TIMED_SERVER]);
    out->operator_opens = breaker__read(&s->timed_opens[BREAKER__TIMED_OPERATOR]);
    out->would_reject_open = breaker__read(&s->would_reject[BREAKER__REFUSE_OPEN]);
    out->would_reject_half_open = breaker__read(&s->would_reject[BREAKER__REFUSE_HALF_OPEN]);
    out->would_reject_forced = breaker__read(&s->would_reject[BREAKER__REFUSE_FORCED]);
    out->would_reject_ramp = breaker__read(&s->would_reject[BREAKER__REFUSE_RAMP]);
    out->shadow_successes = breaker__read(&s->shadow_outcomes[0]);
    out->shadow_failures = breaker__read(&s->shadow_outcomes[1]);

    out->state = (enum breaker_state)breaker__ctl_state(ctl);
    out->shadow = breaker__ctl_shadow(ctl);
    out->generation = breaker__ctl_gen(ctl);
    out->failed_recoveries = breaker__ctl_k(ctl);
    out->state_since_ns = breaker__read(&s->since_ns);
    for (unsigned i = 0; i < BREAKER_STATE_COUNT; i++)
        out->time_in_state_ns[i] = breaker__read(&s->time_in_state[i]);
    if (now > out->state_since_ns) out->time_in_state_ns[out->state] += now - out->state_since_ns;

    out->ramp_share = out->state == BREAKER_CLOSED || out->state == BREAKER_FORCED_CLOSED;
    if (breaker__ctl_ramping(ctl)) {
        uint64_t w = breaker__read(&s->phase_time);
        uint64_t until = breaker__tw_tag(w) == breaker__tag_of_gen(out->generation)
                             ? breaker__ns_of_us(s, breaker__tw_us(w))
                             : 0;
        if (now < until) {
            out->ramp_until_ns = until;
            out->ramp_share = breaker__ramp_share(&s->lim, until - now);
        }
    }
    /* The phase's end: an open wait's, or a timed forced close's. */
    bool timed = out->state == BREAKER_FORCED_CLOSED && breaker__ctl_forced_timed(ctl);
    if (out->state == BREAKER_OPEN || timed) {
        uint64_t w = breaker__read(&s->phase_time);
        uint64_t until = breaker__tw_tag(w) == breaker__tag_of_gen(out->generation)
                             ? breaker__ns_of_us(s, breaker__tw_us(w))
                             : 0;
        *(timed ? &out->forced_until_ns : &out->open_until_ns) = until;
    }
    if (out->state == BREAKER_HALF_OPEN) {
        out->probe_successes = breaker__ctl_succ(ctl);
        const breaker__atomic64 *slots = breaker__slots(s);
        for (uint32_t i = 0; i < s->lim.half_open_max_probes; i++) {
            uint64_t v = breaker__read(&slots[i]);
            /* Slot 0 of another generation: the transition's own probe. */
            bool busy =
                breaker__slot_is_for(v, out->generation) ? !breaker__slot_is_free(v) : i == 0;
            out->probes_in_flight += busy;
        }
    }

    struct breaker__window_view view;
    /* While OPEN or HALF_OPEN, show the window of the closed period that
     * ended: the evidence of the trip, ageing as time passes. */
    uint64_t window_gen = out->state == BREAKER_CLOSED || out->state == BREAKER_FORCED_CLOSED
                              ? out->generation
                              : breaker__read(&s->window_gen);
    breaker__window_read(s, window_gen, now, &view);
    out->consecutive_failures = view.consecutive;
    out->window_calls = view.calls;
    out->window_failures = view.failures;
    out->window_slow = view.slow;
    out->window_failure_rate = view.calls ? (double)view.failures / (double)view.calls : 0.0;
    out->window_slow_rate = view.calls ? (double)view.slow / (double)view.calls : 0.0;
}

int breaker_probe_latency_get(breaker *b, breaker_probe_latency *out) {
    b = breaker__live(b);
    memset(out, 0, sizeof(*out));
    const struct breaker__shared *s = b->shared;
    for (unsigned i = 0; i < BREAKER_LATENCY_BUCKETS; i++)
        out->upper_ns[i] = breaker__latency_upper_ns[i];
    for (unsigned r = 0; r < BREAKER_PROBE_RESULT_COUNT; r++) {
        for (unsigned i = 0; i < BREAKER_LATENCY_BUCKETS; i++)
            out->count[r][i] = breaker__read(&s->probe_hist[r][i]);
        out->sum_ns[r] = breaker__read(&s->probe_sum_ns[r]);
    }
    return BREAKER_OK;
}

int breaker_latency_get(breaker *b, breaker_latency *out) {
    b = breaker__live(b);
    memset(out, 0, sizeof(*out));
    for (unsigned i = 0; i < BREAKER_LATENCY_BUCKETS; i++)
        out->upper_ns[i] = breaker__latency_upper_ns[i];
    const struct breaker__shared *s = b->shared;
    if (s->latency_off == 0) return BREAKER_NOT_FOUND;
    const struct breaker__latency_run *runs = breaker__latency_runs(s);
    for (unsigned st = 0; st < BREAKER__STRIPES; st++) {
        for (unsigned i = 0; i < BREAKER_LATENCY_BUCKETS; i++) {
            out->success[i] += breaker__read(&runs[st].success[i]);
            out->failure[i] += breaker__read(&runs[st].failure[i]);
        }
        out->success_sum_ns += breaker__read(&runs[st].success_sum_ns);
        out->failure_sum_ns += breaker__read(&runs[st].failure_sum_ns);
    }
    return BREAKER_OK;
}
