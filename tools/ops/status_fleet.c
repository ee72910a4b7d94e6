/* SPDX-License-Identifier: MIT
 *
 * status_fleet.c - `breaker status [NAME] --redis ADDR` (or --redis-cluster,
 * --redis-sentinel): every fleet name's state as Redis holds it
 * (breaker_redis_status(), which writes nothing), as a table, JSON or the
 * Prometheus text format, the forms of the store file's status (status.c).
 * Built only with the fleet store (tools/CMakeLists.txt).
 */
#include "ops/exec_fleet.h"
#include "ops/ops.h"

#include "cli/cli.h"

#include <breaker/redis.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The names read, in order. */
struct rows {
    breaker_redis_name_status *item;
    size_t count, cap;
    bool out_of_memory;
};

static int keep(void *ctx, const breaker_redis_name_status *st) {
    struct rows *r = ctx;
    if (r->count == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 16;
        breaker_redis_name_status *item = realloc(r->item, cap * sizeof *item);
        if (item == NULL) {
            r->out_of_memory = true;
            return 1; /* stops the walk */
        }
        r->item = item;
        r->cap = cap;
    }
    r->item[r->count++] = *st;
    return 0;
}

/* The forced state in force, in the words of the store file's controls;
 * NULL: none. */
static const char *forced_name(const breaker_redis_control_state *c) {
    return c->forced == BREAKER_FORCED_OPEN     ? "forced_open"
           : c->forced == BREAKER_OPEN          ? "open_for"
           : c->forced == BREAKER_FORCED_CLOSED ? "forced_closed"
                                                : NULL;
}

/* "4.2s", or "-" for 0 (none), or "never". */
static const char *duration(uint64_t ns, char *buf, size_t len) {
    if (ns == UINT64_MAX) return "never";
    if (ns == 0) return "-";
    return tool_format_duration(ns, buf, len);
}

static void print_table(const struct rows *rows, const char *addr) {
    int width = 4;
    for (size_t i = 0; i < rows->count; i++) {
        size_t len = strlen(rows->item[i].name);
        if (len > (size_t)width) width = len > 64 ? 64 : (int)len;
    }
    tool_error(stdout, "Fleet store %s", addr);
    printf("%-*s  %-13s %16s  %-10s %6s %6s  %-10s\n", width, "NAME", "STATE", "GENERATION",
           "WAIT-LEFT", "LEASES", "HOSTS", "LAST-FLUSH");
    for (size_t i = 0; i < rows->count; i++) {
        const breaker_redis_name_status *s = &rows->item[i];
        if (s->problem[0] != '\0') {
            printf("%-*s  %-13s\n", width, s->name, "unreadable");
            continue;
        }
        char wait[32], age[32];
        printf("%-*s  %-13s %16" PRIu64 "  %-10s %6" PRIu32 " %6" PRIu32 "  %-10s\n", width,
               s->name, breaker_state_name(s->state), s->generation,
               duration(s->wait_left_ns, wait, sizeof wait), s->leases_out, s->hosts,
               duration(s->last_flush_age_ns, age, sizeof age));
    }
    /* Below the table, as the store file's status: what is not a column. */
    char text[4 * BREAKER_WHY_MAX + 1];
    for (size_t i = 0; i < rows->count; i++) {
        const breaker_redis_name_status *s = &rows->item[i];
        if (s->problem[0] != '\0') {
            tool_escape(text, sizeof text, s->problem);
            printf("%s: unreadable: %s\n", s->name, text);
            continue;
        }
        const breaker_redis_control_state *c = &s->control;
        if (c->version > 1) { /* changed by an operator */
            char left[32];
            printf("%s: control version %" PRIu64, s->name, c->version);
            if (forced_name(c) != NULL) printf(", %s", forced_name(c));
            if (c->left_ns != 0)
                printf(" (%s left)", tool_format_duration(c->left_ns, left, sizeof left));
            if (c->reset_generation != 0)
                printf(", reset to generation %" PRIu64, c->reset_generation);
            tool_escape(text, sizeof text, c->who);
            if (text[0] != '\0') printf(" by %s", text);
            tool_escape(text, sizeof text, c->why);
            if (text[0] != '\0') printf(": %s", text);
            printf("\n");
        }
        if (c->shadow) printf("%s: shadow mode: every host refuses nothing\n", s->name);
    }
}

static void print_json_row(const breaker_redis_name_status *s, bool last) {
    printf("  {\"name\": ");
    tool_json_string(stdout, s->name);
    if (s->problem[0] != '\0') {
        printf(", \"problem\": ");
        tool_json_string(stdout, s->problem);
        printf("}%s\n", last ? "" : ",");
        return;
    }
    printf(", \"state\": \"%s\", \"generation\": %" PRIu64 ", \"wait_left_ns\": %" PRIu64
           ", \"failed_recoveries\": %" PRIu32 ", \"leases_out\": %" PRIu32 ", \"hosts\": %" PRIu32
           ", \"last_flush_age_ns\": ",
           breaker_state_name(s->state), s->generation, s->wait_left_ns, s->failed_recoveries,
           s->leases_out, s->hosts);
    if (s->last_flush_age_ns == UINT64_MAX)
        printf("null");
    else
        printf("%" PRIu64, s->last_flush_age_ns);
    const breaker_redis_control_state *c = &s->control;
    printf(", \"control\": {\"version\": %" PRIu64 ", \"forced\": ", c->version);
    if (forced_name(c) == NULL)
        printf("null");
    else
        printf("\"%s\"", forced_name(c));
    printf(", \"left_ns\": %" PRIu64 ", \"shadow\": %s, \"reset_generation\": %" PRIu64
           ", \"who\": ",
           c->left_ns, c->shadow ? "true" : "false", c->reset_generation);
    tool_json_string(stdout, c->who);
    printf(", \"why\": ");
    tool_json_string(stdout, c->why);
    printf("}}%s\n", last ? "" : ",");
}

/* Seconds with nanosecond digits, locale-independent; +Inf for none. */
static void seconds(uint64_t ns, char *buf, size_t len) {
    if (ns == UINT64_MAX)
        snprintf(buf, len, "+Inf");
    else
        snprintf(buf, len, "%" PRIu64 ".%09" PRIu64, ns / TOOL_SEC, ns % TOOL_SEC);
}

/* One family: its HELP and TYPE, then a sample per readable name. */
static void family(const struct rows *rows, const char *metric, const char *type, const char *help,
                   int which) {
    printf("# HELP %s %s\n# TYPE %s %s\n", metric, help, metric, type);
    for (size_t i = 0; i < rows->count; i++) {
        const breaker_redis_name_status *s = &rows->item[i];
        if (s->problem[0] != '\0') continue;
        char v[40];
        switch (which) {
        case 0:
            snprintf(v, sizeof v, "%d", (int)s->state);
            break;
        case 1:
            snprintf(v, sizeof v, "%" PRIu64, s->generation);
            break;
        case 2:
            seconds(s->wait_left_ns, v, sizeof v);
            break;
        case 3:
            snprintf(v, sizeof v, "%" PRIu32, s->leases_out);
            break;
        case 4:
            snprintf(v, sizeof v, "%" PRIu32, s->hosts);
            break;
        case 5:
            seconds(s->last_flush_age_ns, v, sizeof v);
            break;
        case 6:
            snprintf(v, sizeof v, "%d", s->control.shadow);
            break;
        default:
            snprintf(v, sizeof v, "%" PRIu64, s->control.version);
            break;
        }
        /* Names are breaker_name_validate()'s: no quote or backslash. */
        printf("%s{breaker=\"%s\"} %s\n", metric, s->name, v);
    }
}

static void print_prometheus(const struct rows *rows) {
    family(rows, "breaker_fleet_state", "gauge",
           "The fleet's state in Redis, as breaker_state (0 closed, 1 open, 2 half_open, 3 "
           "forced_open, 4 forced_closed).",
           0);
    family(rows, "breaker_fleet_generation", "gauge", "The fleet's generation in Redis.", 1);
    family(rows, "breaker_fleet_open_wait_seconds", "gauge",
           "The fleet's open wait left (0 when not open).", 2);
    family(rows, "breaker_fleet_leases", "gauge", "Probe leases held now, fleet-wide.", 3);
    family(rows, "breaker_fleet_hosts", "gauge",
           "Hosts that flushed the name within the keys' TTL.", 4);
    family(rows, "breaker_fleet_last_flush_age_seconds", "gauge",
           "Age of the latest flush of the name by any host (+Inf: none).", 5);
    family(rows, "breaker_fleet_shadow", "gauge", "1 while the fleet is in shadow mode.", 6);
    family(rows, "breaker_fleet_control_version", "gauge",
           "The version of the fleet's control record: +1 per operator change (0: none).", 7);
}

int exec_fleet_status(const struct exec_fleet_opts *o, const char *name, bool json,
                      bool prometheus) {
    struct exec_fleet *fl;
    int rc = exec_fleet_open(o, "status", &fl);
    if (rc != 0) return rc;
    struct rows rows = {0};
    char msg[TOOL_MSG_MAX] = "";
    int st = breaker_redis_status(exec_fleet_handle(fl), name, keep, &rows, msg, sizeof msg);
    exec_fleet_close(fl);
    if (st == BREAKER_OK && rows.out_of_memory) st = BREAKER_ENOMEM;
    if (st != BREAKER_OK) {
        free(rows.item);
        tool_error(stderr, "breaker status: %s", msg[0] != '\0' ? msg : breaker_strerror(st));
        return st == BREAKER_ENOMEM                            ? TOOL_EXIT_OSERR
               : name != NULL && strstr(msg, "no fleet state") ? TOOL_EXIT_NOINPUT
                                                               : TOOL_EXIT_UNAVAILABLE;
    }
    if (prometheus)
        print_prometheus(&rows);
    else if (json) {
        printf("[\n");
        for (size_t i = 0; i < rows.count; i++)
            print_json_row(&rows.item[i], i + 1 == rows.count);
        printf("]\n");
    } else {
        print_table(&rows, o->addr);
    }
    free(rows.item);
    if (fflush(stdout) == 0 && !ferror(stdout)) return 0;
    tool_error(stderr, "breaker status: writing the output: %s", strerror(errno));
    return TOOL_EXIT_IOERR;
}
