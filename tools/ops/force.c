/* SPDX-License-Identifier: MIT */
/*
 * force.c - `breaker open|close|reset NAME`: operator control of a store's
 * breaker, seen at once by every process that shares it.
 */
#include "ops/commands.h"
#include "ops/exec_fleet.h"
#include "ops/ops.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <getopt.h>
#include <string.h>

const char tool_force_help[] =
    "usage: breaker open|close|reset NAME [options]\n"
    "\n"
    "Operator control of a breaker of the store, seen at once by every process:\n"
    "  open   refuse every call (forced_open) until reset; with --for D, refuse\n"
    "         for D (open, reason operator), then probe as after any wait\n"
    "  close  admit every call, never trip (forced_closed) until reset; with\n"
    "         --for D, for D, then back to normal operation (closed)\n"
    "  reset  back to normal operation: closed, with an empty window\n"
    "Prints the new state. The breaker must exist (see breaker ls).\n" TOOL_STORE_PATH_HELP "\n"
    "With --redis ADDR or --redis-cluster SEEDS, the order is the whole fleet's:\n"
    "stored in Redis with who gave it (user@host) and --why, and applied by every\n"
    "host at its next flush (a reset is not undone by the next flush). AUTH uses\n"
    "the password of --redis-password-file, else $BREAKER_REDIS_PASSWORD.\n"
    "\n"
    "options:\n"
    "      --store PATH      the store file\n"
    "      --for D           open, close: for D only (1ms to 365d, such as 90s, "
    "5m)\n" TOOL_FLEET_OPTIONS_HELP("order") "  -h, --help            show this text\n";

const char tool_shadow_help[] =
    "usage: breaker shadow NAME on|off [options]\n"
    "\n"
    "Shadow mode for a breaker of the store, at once for every process: on, its\n"
    "state machine runs on the real traffic (it trips, waits, probes, recovers,\n"
    "with its events) but refuses no call; the calls it would have refused are\n"
    "counted by reason (breaker status --json: would_reject_*; the Prometheus\n"
    "family breaker_would_reject_calls_total). off: it enforces again, from the\n"
    "state it is in. Prints the state and the mode.\n" TOOL_STORE_PATH_HELP "\n"
    "With --redis ADDR or --redis-cluster SEEDS, shadow mode is the whole fleet's:\n"
    "stored in Redis with who (user@host) and --why, and applied by every host at\n"
    "its next flush; the fleet still trips, waits and probes on the hosts'\n"
    "evidence, and no host refuses a call.\n"
    "\n"
    "options:\n"
    "      --store PATH      the store file\n" TOOL_FLEET_OPTIONS_HELP(
        "change") "  -h, --help            show this text\n";

/* What open, close and reset do to `b`, and what they print. */
static int force(breaker *b, const struct tool_store_args *a, const char *cmd) {
    bool open = strcmp(cmd, "open") == 0, close = strcmp(cmd, "close") == 0;
    bool timed = (open || close) && a->for_ns != 0;
    /* With who (user@host) and --why for the transition's event, and for
     * the store file's record of the last control (breaker status shows
     * it, in any process). */
    char who[BREAKER_WHO_MAX + 1];
    tool_operator_who(who, sizeof who);
    breaker_control c;
    breaker_control_init(&c);
    c.action = timed && open ? BREAKER_CONTROL_OPEN_FOR
               : open        ? BREAKER_CONTROL_FORCE_OPEN
               : close       ? BREAKER_CONTROL_FORCE_CLOSED
                             : BREAKER_CONTROL_RESET;
    c.for_ns = timed ? a->for_ns : 0;
    c.who = who;
    c.why = a->why;
    char msg[160] = "";
    int r = breaker_control_apply(b, &c, msg, sizeof msg);
    if (r != BREAKER_OK) {
        fprintf(stderr, "breaker %s: %s\n", cmd, msg);
        return r;
    }
    printf("%s: %s (generation %" PRIu64 ")", a->name, breaker_state_name(breaker_get_state(b)),
           breaker_generation(b));
    if (timed) {
        char d[32];
        tool_format_duration(a->for_ns, d, sizeof(d));
        printf(open ? " for %s, then a probe" : " for %s, then normal operation", d);
    }
    if (a->why != NULL) printf(", by %s: %s", who, a->why);
    printf("\n");
    return BREAKER_OK;
}

/* `breaker open|close|reset NAME`: argv[0] says which. */
int tool_cmd_force(int argc, char **argv) {
    const char *cmd = argv[0];
    struct tool_store_args a;
    int rc = tool_store_options(cmd, tool_force_help, false, 1, 1, argc, argv, &a);
    if (rc != 0 || a.done) return rc;
    if (a.fleet.addr != NULL) return exec_fleet_order(&a.fleet, cmd, a.name, a.for_ns, a.why);
    return tool_with_breaker(cmd, &a, force);
}

static int shadow(breaker *b, const struct tool_store_args *a, const char *cmd) {
    (void)cmd;
    int r = breaker_set_shadow(b, a->on);
    if (r != BREAKER_OK) return r;
    printf("%s: %s, shadow %s (generation %" PRIu64 ")\n", a->name,
           breaker_state_name(breaker_get_state(b)), breaker_shadow(b) ? "on" : "off",
           breaker_generation(b));
    return BREAKER_OK;
}

/* `breaker shadow NAME on|off`. */
int tool_cmd_shadow(int argc, char **argv) {
    const char *cmd = argv[0];
    struct tool_store_args a;
    int rc = tool_store_options(cmd, tool_shadow_help, false, 1, 2, argc, argv, &a);
    if (rc != 0 || a.done) return rc;
    /* NAME given (else "expected a breaker NAME"), and nothing after it. */
    if (argc - optind < 2) return tool_usage_error(cmd, "expected on or off after NAME");
    const char *word = argv[optind + 1];
    a.on = strcmp(word, "on") == 0;
    if (!a.on && strcmp(word, "off") != 0)
        return tool_usage_error(cmd, "expected on or off after NAME, not '%s'", word);
    if (a.fleet.addr != NULL) return exec_fleet_shadow(&a.fleet, a.name, a.on, a.why);
    return tool_with_breaker(cmd, &a, shadow);
}
