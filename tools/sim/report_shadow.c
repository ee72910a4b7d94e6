/* SPDX-License-Identifier: MIT */
/*
 * report_shadow.c - a replay set beside a shadow log: what the shadow
 * breaker would have refused (the log's would_reject column, written from
 * breaker_permit_would_reject()) against what each replayed configuration
 * refuses, call by call, as text and as JSON. Same input, same bytes.
 */
#include "sim/report.h"

#include "cli/text.h"

#include <inttypes.h>

/* Calls agreeing of `calls` (> 0), as a percentage with one decimal,
 * rounded down: 2399 of 2400 is 99.9%, never 100.0%, and only full
 * agreement is. */
static void agreement(uint64_t agree, uint64_t calls, char *buf, size_t len) {
    uint64_t permille = agree * 1000 / calls;
    snprintf(buf, len, "%" PRIu64 ".%" PRIu64 "%%", permille / 10, permille % 10);
}

/* "1232 open, 28 half_open": the refusals the log names, by kind. */
static void refusal_kinds(const struct tool_trace *trace, char *buf, size_t len) {
    size_t used = 0;
    buf[0] = '\0';
    for (enum tool_shadow k = TOOL_SHADOW_OPEN; k < TOOL_SHADOW_KINDS && used < len; k++) {
        if (trace->shadow_calls[k] == 0) continue;
        int w = snprintf(buf + used, len - used, "%s%" PRIu64 " %s", used ? ", " : "",
                         trace->shadow_calls[k], tool_shadow_name(k));
        if (w < 0) break;
        used += (size_t)w;
    }
}

static uint64_t shadow_refused(const struct tool_trace *trace) {
    uint64_t n = 0;
    for (enum tool_shadow k = TOOL_SHADOW_OPEN; k < TOOL_SHADOW_KINDS; k++)
        n += trace->shadow_calls[k];
    return n;
}

void tool_print_shadow_trace(FILE *out, const struct tool_trace *trace) {
    if (!trace->has_shadow) return;
    uint64_t refused = shadow_refused(trace);
    char kinds[160];
    refusal_kinds(trace, kinds, sizeof(kinds));
    fprintf(out, "Shadow log: the shadow breaker would have refused %" PRIu64 " of %zu calls",
            refused, trace->count);
    if (refused > 0)
        fprintf(out, " (%s); the dependency served %" PRIu64 " of them", kinds,
                trace->shadow_served);
    fputc('\n', out);
}

void tool_print_shadow_compare(FILE *out, const struct tool_trace *trace,
                               const struct tool_replay_result *r) {
    const struct tool_shadow_compare *c = &r->shadow;
    if (r->calls == 0) {
        fputs("   shadow log: no calls to compare\n", out); /* not "0 of 0 agree (100%)" */
        return;
    }
    uint64_t agree = c->both_refused + c->neither_refused;
    char pct[32], at[32];
    agreement(agree, r->calls, pct, sizeof(pct));
    fprintf(out,
            "   shadow log: %" PRIu64 " of %" PRIu64 " calls agree (%s): %" PRIu64
            " refused by both, %" PRIu64 " by neither\n",
            agree, r->calls, pct, c->both_refused, c->neither_refused);
    if (c->first_line == 0) return;
    fprintf(out,
            "   disagree: %" PRIu64 " refused only by this configuration, %" PRIu64
            " only by the shadow breaker\n",
            c->replay_only, c->shadow_only);
    tool_format_offset(c->first_ns, trace->origin_ns, at, sizeof(at));
    fprintf(out, "   first disagreement: line %" PRIu32 " at %s, refused by %s\n", c->first_line,
            at, c->first_replay_refused ? "this configuration" : "the shadow breaker");
}

void tool_json_shadow_trace(FILE *out, const struct tool_trace *trace) {
    fprintf(out, "\"shadow_log\": %s, \"would_reject\": ", trace->has_shadow ? "true" : "false");
    if (!trace->has_shadow) {
        fputs("null, \"would_reject_served\": null", out);
        return;
    }
    fputc('{', out);
    for (enum tool_shadow k = TOOL_SHADOW_NONE; k < TOOL_SHADOW_KINDS; k++)
        fprintf(out, "%s\"%s\": %" PRIu64, k ? ", " : "", tool_shadow_name(k),
                trace->shadow_calls[k]);
    fprintf(out, "}, \"would_reject_served\": %" PRIu64, trace->shadow_served);
}

void tool_json_shadow_compare(FILE *out, const struct tool_trace *trace,
                              const struct tool_replay_result *r) {
    fputs("\"shadow\": ", out);
    if (!trace->has_shadow) {
        fputs("null", out);
        return;
    }
    const struct tool_shadow_compare *c = &r->shadow;
    fprintf(out,
            "{\"agree\": %" PRIu64 ", \"both_refused\": %" PRIu64 ", \"neither_refused\": %" PRIu64
            ", \"only_replay_refused\": %" PRIu64 ", \"only_shadow_refused\": %" PRIu64
            ", \"first_disagreement\": ",
            c->both_refused + c->neither_refused, c->both_refused, c->neither_refused,
            c->replay_only, c->shadow_only);
    if (c->first_line == 0) {
        fputs("null}", out);
        return;
    }
    fprintf(out, "{\"line\": %" PRIu32 ", \"time_ns\": %" PRIu64 ", \"refused_by\": \"%s\"}}",
            c->first_line, c->first_ns > trace->origin_ns ? c->first_ns - trace->origin_ns : 0,
            c->first_replay_refused ? "replay" : "shadow");
}
