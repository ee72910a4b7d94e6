/* SPDX-License-Identifier: MIT */
/*
 * force.c - `breaker open|close|reset NAME`: operator control of a store's
 * breaker, seen at once by every process that shares it.
 */
#include "ops/commands.h"
#include "ops/ops.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

const char tool_force_help[] =
    "usage: breaker open|close|reset NAME [options]\n"
    "\n"
    "Operator control of a breaker of the store, seen at once by every process:\n"
    "  open   refuse every call (forced_open) until reset\n"
    "  close  admit every call, never trip (forced_closed) until reset\n"
    "  reset  back to normal operation: closed, with an empty window\n"
    "Prints the new state. The breaker must exist (see breaker ls).\n" TOOL_STORE_PATH_HELP "\n"
    "options:\n"
    "      --store PATH  the store file\n"
    "  -h, --help        show this text\n";

/* `breaker open|close|reset NAME`: argv[0] says which. */
int tool_cmd_force(int argc, char **argv) {
    const char *cmd = argv[0];
    struct tool_store_args a;
    int rc = tool_store_options(cmd, tool_force_help, false, 1, 1, argc, argv, &a);
    if (rc != 0 || a.done) return rc;
    breaker_store *st;
    struct tool_names n;
    if ((rc = tool_open_existing(cmd, &a, &st, &n)) != 0) return rc;
    tool_names_free(&n);
    breaker *b;
    if ((rc = tool_attach_existing(cmd, st, a.name, &b)) == 0) {
        int r = strcmp(cmd, "open") == 0    ? breaker_force_open(b)
                : strcmp(cmd, "close") == 0 ? breaker_force_closed(b)
                                            : breaker_reset(b);
        if (r == BREAKER_OK) {
            printf("%s: %s (generation %" PRIu64 ")\n", a.name,
                   breaker_state_name(breaker_get_state(b)), breaker_generation(b));
        } else {
            tool_error(stderr, "breaker %s: %s: %s", cmd, a.name, breaker_strerror(r));
            rc = TOOL_EXIT_IOERR;
        }
        breaker_destroy(b);
    }
    breaker_store_close(st);
    return rc;
}
