/* SPDX-License-Identifier: MIT */
/*
 * tool.h - `breaker status --prometheus` (store_prom.c), for ops/status.c.
 * Nothing here is library API.
 */
#ifndef BREAKER_TOOL_H
#define BREAKER_TOOL_H

#include "cli/cli.h"

#include <breaker.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* ---- store_prom.c: `breaker status --prometheus` ---------------------------*/

/* One breaker of a store as `breaker status` reads it, all at one moment, so
 * that its text, JSON and Prometheus forms agree. */
struct tool_store_row {
    const char *name;
    breaker_stats s;         /* breaker_stats_get() */
    uint64_t now_ns;         /* the breaker's clock when `s` was read */
    uint64_t retry_ns;       /* breaker_retry_after_ns() */
    breaker_config cfg;      /* the stored limits: breaker_get_config() */
    breaker_latency latency; /* breaker_latency_get() */
    bool timed;              /* it times its calls: `latency` is filled */
};

/* Write `rows` (any order) in the Prometheus text format, under the library
 * exporter's metric names and labels, sorted by name; the families a store
 * does not keep (per-pair transitions, flapping, a registry's own counters)
 * are left out (store_prom.c says why). @return 0, or -1 out of memory. */
int tool_store_prometheus(FILE *out, const struct tool_store_row *rows, size_t n);

#endif /* BREAKER_TOOL_H */
