/* SPDX-License-Identifier: MIT */
/*
 * sim/replay.h - traces of real calls and their replay through the real
 * library on a virtual clock (replay.c).
 */
#ifndef BREAKER_TOOL_SIM_REPLAY_H
#define BREAKER_TOOL_SIM_REPLAY_H

#include "cli/config.h"
#include "cli/parse.h"
#include "sim/timeline.h"

#include <breaker.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct tool_call {
    uint64_t start_ns; /* trace timestamp */
    uint64_t duration_ns;
    enum breaker_outcome outcome;
    uint32_t line;
    uint8_t shadow;  /* enum tool_shadow: what a shadow log says of the call */
    uint64_t source; /* a hash of the caller column's value; 0 = none */
};

/* A shadow log's would_reject column, per call: what
 * breaker_permit_would_reject() said (the values of enum breaker_refusal,
 * NONE also for a trace without the column), or that it would have been
 * refused for a reason the log does not give ("yes"). */
enum tool_shadow {
    TOOL_SHADOW_NONE = BREAKER_REFUSAL_NONE, /* admitted for real */
    TOOL_SHADOW_OPEN = BREAKER_REFUSAL_OPEN,
    TOOL_SHADOW_HALF_OPEN = BREAKER_REFUSAL_HALF_OPEN,
    TOOL_SHADOW_FORCED = BREAKER_REFUSAL_FORCED,
    TOOL_SHADOW_RAMP = BREAKER_REFUSAL_RAMP,
    TOOL_SHADOW_REFUSED = BREAKER_REFUSAL_COUNT, /* "yes": refused, reason not logged */
    TOOL_SHADOW_KINDS                            /* the number of values */
};

struct tool_trace {
    struct tool_call *calls; /* sorted by start time, then line */
    size_t count, cap;
    size_t bad_lines;   /* malformed lines (reported to the error stream) */
    uint64_t origin_ns; /* the first timestamp: reports count from it */
    bool has_source;    /* the header names a caller column */
    bool has_shadow;    /* the header names a would_reject column: a shadow log */
    uint64_t shadow_calls[TOOL_SHADOW_KINDS]; /* calls by enum tool_shadow value */
    uint64_t shadow_served; /* calls the shadow would have refused that succeeded */
};

/* Read a CSV trace: "timestamp,duration,outcome" in seconds, or the
 * columns its header line names (docs/cli.md). Each malformed line is
 * reported on `errors` as "breaker replay: NAME:LINE: message" and counted;
 * the other lines are kept. @return 0; -1 with `msg`: a header that
 * cannot be honoured ("NAME:LINE: header: ..."), or out of memory; -2 with
 * "NAME: why" when `in` cannot be read (a directory, an I/O error). */
int tool_trace_read(FILE *in, const char *name, FILE *errors, struct tool_trace *trace, char *msg,
                    size_t msg_len);
void tool_trace_free(struct tool_trace *trace);
/* Parse one outcome field: ok, failure, 503, ECONNREFUSED, ... */
bool tool_parse_outcome(const char *text, enum breaker_outcome *out);
/* Parse one would_reject field: empty, none, no, -, 0 or false (admitted);
 * open, half_open, forced_open (or forced), ramp; or yes, 1 or true (would
 * have been refused, for a reason the log does not give). Any case. */
bool tool_parse_shadow(const char *text, enum tool_shadow *out);
/* The name of a would_reject value as reports print it:
 * breaker_refusal_name()'s ("none", "open", ...), "unspecified" for
 * TOOL_SHADOW_REFUSED. */
const char *tool_shadow_name(enum tool_shadow shadow);

/* A replay set call by call beside the shadow log it replayed: which calls
 * both refused, neither, only the shadow breaker (it would have refused,
 * this configuration admits), only this configuration. */
struct tool_shadow_compare {
    uint64_t both_refused, neither_refused, shadow_only, replay_only;
    uint32_t first_line;       /* the first call they disagree on; 0: none */
    uint64_t first_ns;         /* its start, on the trace's clock */
    bool first_replay_refused; /* at it, this configuration refused */
};

struct tool_replay_result {
    char name[TOOL_NAME_MAX];
    breaker_stats stats;
    uint64_t calls;
    uint64_t refused;
    uint64_t time_open_ns, time_half_open_ns;
    uint64_t flaps;                    /* closes followed by a re-trip within the flap window */
    struct tool_shadow_compare shadow; /* against the trace's shadow log, if it is one */
    struct tool_timeline timeline;     /* with every transition */
};

#define TOOL_FLAP_WINDOW_NS (60 * TOOL_SEC)

/* Flapping, as the report warns of it: closed and tripped again within
 * TOOL_FLAP_WINDOW_NS, twice or more. */
bool tool_replay_flapping(const struct tool_replay_result *r);
/* Trips: transitions from closed to open (a failed probe's reopening is not
 * one). */
uint64_t tool_replay_trips(const struct tool_replay_result *r);

int tool_replay(const struct tool_trace *trace, const struct tool_breaker *cfg,
                struct tool_replay_result *out, char *msg, size_t msg_len);
void tool_replay_result_free(struct tool_replay_result *r);

#endif /* BREAKER_TOOL_SIM_REPLAY_H */
