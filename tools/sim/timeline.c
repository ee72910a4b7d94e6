/* SPDX-License-Identifier: MIT */
/*
 * timeline.c - what a run looked like over time: counts and a latency
 * histogram per time bin, and the breaker's state history. simulate.c and
 * replay.c fill it; svg.c draws it.
 */
#include "sim/timeline.h"

#include "cli/parse.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LAT_MIN_NS  1e5 /* 100us: the lowest bucket's upper bound is above it */
#define LAT_DECADES 6.0

/* Round bin widths, so the time axis and per-second rates read easily. */
static const uint64_t nice_bins[] = {
    TOOL_MS,        10 * TOOL_MS,   100 * TOOL_MS,   TOOL_SEC,       2 * TOOL_SEC,   5 * TOOL_SEC,
    10 * TOOL_SEC,  15 * TOOL_SEC,  30 * TOOL_SEC,   60 * TOOL_SEC,  120 * TOOL_SEC, 300 * TOOL_SEC,
    600 * TOOL_SEC, 900 * TOOL_SEC, 1800 * TOOL_SEC, 3600 * TOOL_SEC};

uint64_t tool_timeline_pick_bin(uint64_t span_ns, uint64_t max_bins) {
    size_t n = sizeof(nice_bins) / sizeof(nice_bins[0]);
    if (max_bins == 0) max_bins = 1;
    for (size_t i = 0; i < n; i++)
        if (span_ns / nice_bins[i] <= max_bins) return nice_bins[i];
    return nice_bins[n - 1];
}

int tool_timeline_init(struct tool_timeline *tl, uint64_t start_ns, uint64_t end_ns,
                       uint64_t bin_ns) {
    memset(tl, 0, sizeof(*tl));
    if (end_ns <= start_ns) end_ns = start_ns == UINT64_MAX ? start_ns : start_ns + 1;
    uint64_t span = end_ns - start_ns;
    if (span == 0) span = 1;
    if (bin_ns == 0) bin_ns = tool_timeline_pick_bin(span, 600);
    tl->start_ns = start_ns;
    tl->end_ns = end_ns;
    tl->bin_ns = bin_ns;
    /* Rounded up without overflow, and at least one bin, so that
     * tool_timeline_bin() always has a bin to return. */
    tl->bin_count = (size_t)(span / bin_ns + (span % bin_ns != 0));
    if (tl->bin_count == 0) tl->bin_count = 1;
    if (tl->bin_count > 100000) tl->bin_count = 100000; /* a runaway span, not a real one */
    tl->bins = calloc(tl->bin_count, sizeof(*tl->bins));
    return tl->bins != NULL ? 0 : -1;
}

void tool_timeline_free(struct tool_timeline *tl) {
    free(tl->bins);
    free(tl->states);
    free(tl->events);
    memset(tl, 0, sizeof(*tl));
}

struct tool_bin *tool_timeline_bin(struct tool_timeline *tl, uint64_t t_ns) {
    if (t_ns < tl->start_ns) t_ns = tl->start_ns;
    size_t i = (size_t)((t_ns - tl->start_ns) / tl->bin_ns);
    if (i >= tl->bin_count) i = tl->bin_count - 1;
    return &tl->bins[i];
}

unsigned tool_lat_bucket(uint64_t ns) {
    if ((double)ns <= LAT_MIN_NS) return 0;
    double x = log10((double)ns / LAT_MIN_NS) * (TOOL_LAT_BUCKETS / LAT_DECADES);
    if (x >= TOOL_LAT_BUCKETS - 1) return TOOL_LAT_BUCKETS - 1;
    return (unsigned)x;
}

uint64_t tool_lat_bucket_upper(unsigned bucket) {
    return (uint64_t)(LAT_MIN_NS * pow(10.0, (bucket + 1) * (LAT_DECADES / TOOL_LAT_BUCKETS)));
}

void tool_timeline_latency(struct tool_timeline *tl, uint64_t t_ns, uint64_t latency_ns) {
    tool_timeline_bin(tl, t_ns)->lat[tool_lat_bucket(latency_ns)]++;
}

uint64_t tool_bin_quantile(const struct tool_bin *bin, double q) {
    uint64_t total = 0;
    for (unsigned i = 0; i < TOOL_LAT_BUCKETS; i++)
        total += bin->lat[i];
    if (total == 0) return 0;
    /* The smallest bucket whose cumulative count reaches q of the total. */
    uint64_t want = (uint64_t)ceil(q * (double)total);
    if (want == 0) want = 1;
    uint64_t seen = 0;
    for (unsigned i = 0; i < TOOL_LAT_BUCKETS; i++) {
        seen += bin->lat[i];
        if (seen >= want) return tool_lat_bucket_upper(i);
    }
    return tool_lat_bucket_upper(TOOL_LAT_BUCKETS - 1);
}

int tool_timeline_state(struct tool_timeline *tl, uint64_t t_ns, enum breaker_state state) {
    if (tl->state_count == tl->state_cap) {
        size_t cap = tl->state_cap ? 2 * tl->state_cap : 16;
        struct tool_state_change *s = realloc(tl->states, cap * sizeof(*s));
        if (s == NULL) return -1;
        tl->states = s;
        tl->state_cap = cap;
    }
    /* Whole entries, padding zeroed: runs are compared byte for byte. */
    memset(&tl->states[tl->state_count], 0, sizeof(tl->states[0]));
    tl->states[tl->state_count].t_ns = t_ns;
    tl->states[tl->state_count].state = state;
    tl->state_count++;
    return 0;
}

int tool_timeline_event(struct tool_timeline *tl, const breaker_event *ev) {
    if (tl->event_count == tl->event_cap) {
        size_t cap = tl->event_cap ? 2 * tl->event_cap : 32;
        breaker_event *e = realloc(tl->events, cap * sizeof(*e));
        if (e == NULL) return -1;
        tl->events = e;
        tl->event_cap = cap;
    }
    tl->events[tl->event_count++] = *ev;
    return tool_timeline_state(tl, ev->time_ns, ev->to);
}
