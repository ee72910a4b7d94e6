/* SPDX-License-Identifier: MIT */
/*
 * fleet_none.c - the fleet scenario of `breaker simulate` in a build that
 * cannot run it: it runs the fleet store's real client (breaker_redis,
 * built with hiredis) against the real Lua scripts in an embedded Lua 5.1
 * (liblua5.1-0-dev), and this build lacks one of them.
 */
#include "sim/simulate.h"

#include <stdio.h>
#include <string.h>

int tool_simulate_fleet(const struct tool_scenario *sc, const struct tool_breaker *cfg,
                        struct tool_fleet_result *out, char *msg, size_t msg_len) {
    (void)sc;
    memset(out, 0, sizeof(*out));
    snprintf(msg, msg_len,
             "%s: this build of breaker cannot run fleet scenarios (instances > 0): they need the "
             "fleet store (hiredis, libhiredis-dev) and Lua 5.1 (liblua5.1-0-dev) at build time",
             cfg->name);
    return -1;
}

void tool_fleet_result_free(struct tool_fleet_result *r) { (void)r; }
