/* SPDX-License-Identifier: MIT */
/*
 * fuzz_replay_trace.c - the CSV trace reader of `breaker replay`
 * (tools/sim/replay.c), and the replay itself, on arbitrary text.
 *
 * Input: a trace as the command reads it. If the first line starts with
 * "#!", the rest of that line is a breaker spec as `breaker replay -b`
 * takes it ("trip=consecutive,failure_threshold=3"), applied through
 * tool_breakers_add_spec(); the line is a comment to the trace reader.
 *
 * What must hold: reading text in memory fails only on a header it cannot
 * honour ("fuzz:LINE: header: ..." for a line that names an unknown column
 * or unit, a column twice or lacks one) or out of memory; every call kept is
 * well formed (start + duration does not wrap, a valid outcome, a line
 * number within the input, a source key only when the header names a caller
 * column) and the calls come sorted; the replay of a trace of modest size (replay_is_cheap())
 * succeeds whenever the configuration validates, counts every call once
 * (admitted + refused), settles every admitted call, and reports its
 * transitions in time order.
 */
#define _GNU_SOURCE
#include "fuzz_util.h"

#include "cli/cli.h"
#include "sim/replay.h"
#include "sim/report.h"
#include "sim/simulate.h"

#include <string.h>

#define MAX_REPLAY_CALLS 4096

static size_t count_lines(const uint8_t *data, size_t size) {
    size_t n = size != 0;
    for (size_t i = 0; i + 1 < size; i++)
        n += data[i] == '\n';
    return n;
}

static void check_trace(const struct tool_trace *tr, size_t lines) {
    FUZZ_CHECK(tr->count + tr->bad_lines <= lines, "%zu calls + %zu bad lines > %zu lines",
               tr->count, tr->bad_lines, lines);
    for (size_t i = 0; i < tr->count; i++) {
        const struct tool_call *c = &tr->calls[i];
        FUZZ_CHECK(c->duration_ns <= UINT64_MAX - c->start_ns, "line %u: start + duration wraps",
                   c->line);
        FUZZ_CHECK((unsigned)c->outcome <= BREAKER_CANCELLED, "line %u: outcome %d", c->line,
                   (int)c->outcome);
        FUZZ_CHECK(c->line >= 1 && c->line <= lines, "line number %u of %zu", c->line, lines);
        FUZZ_CHECK(tr->has_source || c->source == 0, "line %u: a source without a caller column",
                   c->line);
        if (i > 0) {
            const struct tool_call *p = &tr->calls[i - 1];
            FUZZ_CHECK(p->start_ns < c->start_ns ||
                           (p->start_ns == c->start_ns && p->line < c->line),
                       "calls out of order at lines %u, %u", p->line, c->line);
        }
    }
    FUZZ_CHECK(tr->origin_ns == (tr->count ? tr->calls[0].start_ns : 0), "origin");
}

/* A replay costs a timeline of up to 100000 bins (27 MB, zeroed): over a
 * long span that dominates the run (200 runs/s instead of thousands), so
 * only traces within a week replay, and longer ones of two calls at most
 * (enough to reach the edges of the time range). */
static bool replay_is_cheap(const struct tool_trace *tr) {
    if (tr->count > MAX_REPLAY_CALLS) return false;
    if (tr->count <= 2) return true;
    uint64_t end = tr->origin_ns;
    for (size_t i = 0; i < tr->count; i++)
        if (tr->calls[i].start_ns + tr->calls[i].duration_ns > end)
            end = tr->calls[i].start_ns + tr->calls[i].duration_ns;
    return end - tr->origin_ns <= 7 * 24 * 3600 * TOOL_SEC;
}

static void check_replay(const struct tool_trace *tr, const struct tool_breaker *cfg) {
    struct tool_replay_result r;
    char msg[TOOL_MSG_MAX];
    breaker_config c = cfg->cfg;
    c.clock = NULL;
    c.clock_ctx = NULL;
    bool valid = breaker_config_validate(&c, NULL, 0) == BREAKER_OK;
    int rc = tool_replay(tr, cfg, &r, msg, sizeof(msg));
    if (!valid) {
        FUZZ_CHECK(rc != 0, "replay accepted an invalid configuration");
        return;
    }
    if (rc != 0 && strstr(msg, "out of memory") != NULL) return;
    FUZZ_CHECK(rc == 0, "replay failed: %s", msg);
    const breaker_stats *s = &r.stats;
    FUZZ_CHECK(r.calls == tr->count, "replayed %llu of %zu calls", (unsigned long long)r.calls,
               tr->count);
    FUZZ_CHECK(s->admitted + r.refused == r.calls, "admitted %llu + refused %llu != %llu calls",
               (unsigned long long)s->admitted, (unsigned long long)r.refused,
               (unsigned long long)r.calls);
    FUZZ_CHECK(s->admitted == s->successes + s->failures + s->ignored + s->stale,
               "every call settled, yet admitted %llu != %llu + %llu + %llu + %llu",
               (unsigned long long)s->admitted, (unsigned long long)s->successes,
               (unsigned long long)s->failures, (unsigned long long)s->ignored,
               (unsigned long long)s->stale);
    FUZZ_CHECK(s->generation == 1 + s->transitions && s->transitions == r.timeline.event_count,
               "generation %llu, transitions %llu, events %zu", (unsigned long long)s->generation,
               (unsigned long long)s->transitions, r.timeline.event_count);
    /* Beside a shadow log, every call falls in exactly one of the four
     * cells, and the two sides' refusals add up. */
    const struct tool_shadow_compare *sc = &r.shadow;
    if (tr->has_shadow) {
        uint64_t shadow_refused = tr->count - tr->shadow_calls[BREAKER_REFUSAL_NONE];
        FUZZ_CHECK(sc->both_refused + sc->neither_refused + sc->shadow_only + sc->replay_only ==
                           r.calls &&
                       sc->both_refused + sc->replay_only == r.refused &&
                       sc->both_refused + sc->shadow_only == shadow_refused,
                   "shadow cells %llu %llu %llu %llu for %llu calls, %llu refused, %llu by the log",
                   (unsigned long long)sc->both_refused, (unsigned long long)sc->neither_refused,
                   (unsigned long long)sc->shadow_only, (unsigned long long)sc->replay_only,
                   (unsigned long long)r.calls, (unsigned long long)r.refused,
                   (unsigned long long)shadow_refused);
        FUZZ_CHECK((sc->first_line == 0) == (sc->shadow_only + sc->replay_only == 0),
                   "first disagreement at line %u with %llu disagreements", sc->first_line,
                   (unsigned long long)(sc->shadow_only + sc->replay_only));
        FUZZ_CHECK(tr->shadow_served <= shadow_refused, "served %llu of %llu refused",
                   (unsigned long long)tr->shadow_served, (unsigned long long)shadow_refused);
    } else {
        FUZZ_CHECK(sc->both_refused + sc->neither_refused + sc->shadow_only + sc->replay_only == 0,
                   "a trace without a would_reject column was compared with a shadow log");
    }
    for (size_t i = 1; i < r.timeline.event_count; i++)
        FUZZ_CHECK(r.timeline.events[i].time_ns >= r.timeline.events[i - 1].time_ns,
                   "event %zu at %llu before event %zu at %llu", i,
                   (unsigned long long)r.timeline.events[i].time_ns, i - 1,
                   (unsigned long long)r.timeline.events[i - 1].time_ns);
    tool_replay_result_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    struct tool_breakers list = {0};
    struct tool_breaker *cfg = NULL;
    char msg[TOOL_MSG_MAX];
    if (size > 2 && data[0] == '#' && data[1] == '!') {
        const uint8_t *nl = memchr(data, '\n', size);
        size_t len = (nl != NULL ? (size_t)(nl - data) : size) - 2;
        char *spec = malloc(len + 1);
        if (spec == NULL) return 0;
        memcpy(spec, data + 2, len);
        spec[len] = '\0';
        if (memchr(spec, '\0', len) == NULL &&
            tool_breakers_add_spec(&list, spec, "fuzz", msg, sizeof(msg)) == 0 && list.count > 0)
            cfg = &list.items[list.count - 1];
        free(spec);
    }
    if (cfg == NULL) {
        tool_breakers_free(&list);
        cfg = tool_breakers_get(&list, "fuzz");
        if (cfg == NULL) return 0;
    }

    struct tool_trace tr;
    memset(&tr, 0, sizeof(tr));
    if (size > 0) {
        /* fmemopen reads from the buffer: give it a copy it may not write. */
        char *copy = malloc(size);
        if (copy == NULL) goto out;
        memcpy(copy, data, size);
        FILE *in = fmemopen(copy, size, "r");
        char *errors = NULL;
        size_t errors_len = 0;
        FILE *err = open_memstream(&errors, &errors_len);
        if (in == NULL || err == NULL) {
            if (in != NULL) fclose(in);
            if (err != NULL) fclose(err);
            free(errors);
            free(copy);
            goto out;
        }
        int rc = tool_trace_read(in, "fuzz", err, &tr, msg, sizeof(msg));
        fclose(in);
        fclose(err);
        free(errors);
        free(copy);
        if (rc != 0) {
            unsigned line = 0;
            int end = 0;
            bool header = sscanf(msg, "fuzz:%u: header: %n", &line, &end) == 1 && end > 0 &&
                          line >= 1 && line <= count_lines(data, size);
            FUZZ_CHECK(header || strstr(msg, "out of memory") != NULL,
                       "reading from memory failed: %s", msg);
            goto out;
        }
    }
    check_trace(&tr, count_lines(data, size));
    if (replay_is_cheap(&tr)) check_replay(&tr, cfg);
    tool_trace_free(&tr);
out:
    tool_breakers_free(&list);
    return 0;
}
