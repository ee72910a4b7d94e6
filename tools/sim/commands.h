/* SPDX-License-Identifier: MIT */
/*
 * sim/commands.h - `breaker simulate` (cmd_simulate.c) and `breaker replay`
 * (cmd_replay.c), as main.c's table calls them.
 */
#ifndef BREAKER_TOOL_SIM_COMMANDS_H
#define BREAKER_TOOL_SIM_COMMANDS_H

extern const char tool_simulate_help[];
extern const char tool_replay_help[];

/* argv[0] is the command's name. @return the exit status. */
int tool_cmd_simulate(int argc, char **argv);
int tool_cmd_replay(int argc, char **argv);

#endif /* BREAKER_TOOL_SIM_COMMANDS_H */
