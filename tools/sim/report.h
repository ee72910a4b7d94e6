/* SPDX-License-Identifier: MIT */
/*
 * sim/report.h - what simulate and replay show: tables and reports
 * (report.c) and pictures (svg.c).
 */
#ifndef BREAKER_TOOL_SIM_REPORT_H
#define BREAKER_TOOL_SIM_REPORT_H

#include "cli/config.h"
#include "sim/replay.h"
#include "sim/scenario.h"
#include "sim/simulate.h"
#include "sim/timeline.h"

#include <breaker.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

void tool_print_sim_table(FILE *out, const struct tool_scenario *sc,
                          const struct tool_sim_result *runs, size_t count);
void tool_print_replay(FILE *out, const struct tool_trace *trace, const struct tool_breaker *cfg,
                       const struct tool_replay_result *r);
/* The replays' summary as one JSON object (the keys are in docs/cli.md):
 * the trace, then one entry per configuration, with its transitions. */
void tool_print_replay_json(FILE *out, const char *name, const struct tool_trace *trace,
                            const struct tool_breakers *cfgs, const struct tool_replay_result *runs,
                            size_t count);
/* The transitions as a table: time (from `origin_ns`), from -> to, reason,
 * evidence. */
void tool_print_transitions(FILE *out, const breaker_event *events, size_t count,
                            uint64_t origin_ns);

/* A shadow log (a trace with a would_reject column, report_shadow.c): what
 * the shadow breaker would have refused, as the line under the trace's
 * summary, and as the JSON members "shadow_log", "would_reject" and
 * "would_reject_served" of "trace". */
void tool_print_shadow_trace(FILE *out, const struct tool_trace *trace);
void tool_json_shadow_trace(FILE *out, const struct tool_trace *trace);
/* A replay beside the shadow log, call by call: the report's lines, and the
 * JSON member "shadow" of its configuration (null when the trace is no
 * shadow log). */
void tool_print_shadow_compare(FILE *out, const struct tool_trace *trace,
                               const struct tool_replay_result *r);
void tool_json_shadow_compare(FILE *out, const struct tool_trace *trace,
                              const struct tool_replay_result *r);

/* One line of evidence for a transition, as "25 of 40 calls failed (62.5%)". */
void tool_format_evidence(const breaker_event *ev, char *buf, size_t len);

/* The fleet scenario's table: per recovery round, probes in flight and
 * dead calls, local breakers against the fleet store. */
void tool_print_fleet_table(FILE *out, const struct tool_scenario *sc,
                            const struct tool_fleet_result *runs, size_t count);

/* Write one panel per timeline, stacked. @return 0, or -1 with errno set. */
int tool_svg_write(FILE *out, const char *title, const struct tool_timeline *const *timelines,
                   size_t count);
/* The fleet scenario: per configuration, bars of probes in flight and dead
 * calls per recovery round (local against fleet), then the two runs'
 * timelines. @return 0, or -1 with errno set. */
int tool_svg_write_fleet(FILE *out, const char *title, const struct tool_fleet_result *runs,
                         size_t count);

/* Write `n` timelines to `path` ("-": standard output) as one SVG picture
 * (--svg of `breaker CMD`). @return 0, or 1 after saying on standard error
 * why it could not be written. */
int tool_svg_write_file(const char *cmd, const char *path, const char *title,
                        const struct tool_timeline *const *timelines, size_t n);
/* --svg -: the picture goes to standard output, the text to standard error. */
bool tool_svg_is_stdout(const char *path);

#endif /* BREAKER_TOOL_SIM_REPORT_H */
