/* SPDX-License-Identifier: MIT */
/*
 * cli/parse.h - numbers and durations as the `breaker` command reads and
 * prints them (parse.c). Nothing here is library API.
 */
#ifndef BREAKER_TOOL_CLI_PARSE_H
#define BREAKER_TOOL_CLI_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TOOL_MS  UINT64_C(1000000)
#define TOOL_SEC (1000 * TOOL_MS)

/* A duration: digits with an optional fraction and a unit (ns, us, ms, s, m,
 * h, d); `bare_unit_ns` is the unit of a number without one. Exact.
 * @return true and *out, or false. */
bool tool_parse_duration(const char *text, uint64_t bare_unit_ns, uint64_t *out);

/* A non-negative decimal, or a percentage ("50%" = 0.5) if `percent_ok`. */
bool tool_parse_number(const char *text, bool percent_ok, double *out);

/* A whole number in [min, max]. */
bool tool_parse_uint(const char *text, uint64_t min, uint64_t max, uint64_t *out);

/* A source key for breaker_complete_from() named by `text` (a tenant, a job,
 * a replay log's source column): FNV-1a of the text, never 0 (0 means no
 * source); the empty text names no source (0). */
uint64_t tool_source_key(const char *text);

/* Format a duration for people: "250ms", "1.5s", "2m30s". `buf` gets it. */
const char *tool_format_duration(uint64_t ns, char *buf, size_t len);

/* A time `t` as seconds since `origin` (a trace's first call), with
 * millisecond precision: "12.345s" (0.000s before it). */
void tool_format_offset(uint64_t t, uint64_t origin, char *buf, size_t len);

/* Trim blanks in place at both ends; @return the trimmed start. */
char *tool_trim(char *s);

/* What every message about a bad duration says is accepted. */
#define TOOL_DURATION_FORMATS "250ms, 1.5s, 1m30s (units ns us ms s m h d)"

/* Rewrite the library's validation message `msg` in the command line's
 * words, in place: each "<digits> ns" as a duration for people, exactly
 * ("10s", "1.5ms", "1.000000001s"), and each field "xxx_ns" as its key
 * "xxx" ("open_max_ns" as "open_max"). */
void tool_humanize_ns(char *msg, size_t len);

/* a + b, or UINT64_MAX if that does not fit: every sum of a time and a
 * duration, so that a huge duration means "never", not a time that wrapped
 * into the past. */
static inline uint64_t tool_add_ns(uint64_t a, uint64_t b) {
    return b > UINT64_MAX - a ? UINT64_MAX : a + b;
}

#endif /* BREAKER_TOOL_CLI_PARSE_H */
