/* SPDX-License-Identifier: MIT */
/*
 * sim/timeline.h - per-bin series and state history of a run (timeline.c),
 * what the reports and pictures are drawn from.
 */
#ifndef BREAKER_TOOL_SIM_TIMELINE_H
#define BREAKER_TOOL_SIM_TIMELINE_H

#include "sim/scenario.h"

#include <breaker.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TOOL_LAT_BUCKETS 64 /* log-spaced from 100us to 100s */

struct tool_bin {
    uint32_t reached; /* calls that reached the dependency */
    uint32_t refused; /* refused by the breaker */
    uint32_t shed;    /* no free worker */
    uint32_t failed;  /* failed at the dependency (error or timeout), by end time */
    uint32_t lat[TOOL_LAT_BUCKETS];
};

struct tool_state_change {
    uint64_t t_ns;
    enum breaker_state state;
};

struct tool_band { /* a labelled background span (scenario phases) */
    uint64_t from_ns, to_ns;
    char label[TOOL_NAME_MAX];
    int shade; /* 0 healthy, 1 outage, 2 recovering */
};

struct tool_timeline {
    char title[160];
    char subtitle[256];
    uint64_t start_ns, end_ns, bin_ns;
    size_t bin_count;
    struct tool_bin *bins;
    struct tool_state_change *states; /* states[0] at start_ns */
    size_t state_count, state_cap;
    bool has_breaker;
    bool has_shed;
    struct tool_band bands[TOOL_MAX_PHASE];
    size_t band_count;
    uint64_t timeout_ns;   /* drawn as a line on the latency chart, 0 = none */
    breaker_event *events; /* every transition, in order */
    size_t event_count, event_cap;
};

/* The smallest round bin width (1ms, 10ms, ..., 1s, 2s, 5s, ..., 1h) that
 * cuts `span_ns` into at most `max_bins` bins. */
uint64_t tool_timeline_pick_bin(uint64_t span_ns, uint64_t max_bins);
/* @return 0 or -1 (out of memory). bin_ns 0 = choose (at most ~600 bins). */
int tool_timeline_init(struct tool_timeline *tl, uint64_t start_ns, uint64_t end_ns,
                       uint64_t bin_ns);
void tool_timeline_free(struct tool_timeline *tl);
struct tool_bin *tool_timeline_bin(struct tool_timeline *tl, uint64_t t_ns);
void tool_timeline_latency(struct tool_timeline *tl, uint64_t t_ns, uint64_t latency_ns);
int tool_timeline_state(struct tool_timeline *tl, uint64_t t_ns, enum breaker_state state);
/* Record a transition: the event and the state it starts. @return 0 or -1. */
int tool_timeline_event(struct tool_timeline *tl, const breaker_event *ev);
/* The latency bucket index of a duration, and a bucket's upper bound. */
unsigned tool_lat_bucket(uint64_t ns);
uint64_t tool_lat_bucket_upper(unsigned bucket);
/* The q-quantile (0..1) of a bin's latency histogram, 0 if empty. */
uint64_t tool_bin_quantile(const struct tool_bin *bin, double q);

#endif /* BREAKER_TOOL_SIM_TIMELINE_H */
