/* SPDX-License-Identifier: MIT */
/*
 * ops/commands.h - the commands on a store of shared breakers, as main.c's
 * table calls them: exec (exec.c), status (status.c), ls (ls.c), open,
 * close and reset (force.c).
 */
#ifndef BREAKER_TOOL_OPS_COMMANDS_H
#define BREAKER_TOOL_OPS_COMMANDS_H

extern const char tool_exec_help[];
extern const char tool_status_help[];
extern const char tool_ls_help[];
extern const char tool_force_help[]; /* open, close and reset share one text */
extern const char tool_shadow_help[];
extern const char tool_config_help[];

/* argv[0] is the command's name. @return the exit status. */
int tool_cmd_exec(int argc, char **argv);
int tool_cmd_status(int argc, char **argv);
int tool_cmd_ls(int argc, char **argv);
int tool_cmd_force(int argc, char **argv);
int tool_cmd_shadow(int argc, char **argv);
int tool_cmd_config(int argc, char **argv);

#endif /* BREAKER_TOOL_OPS_COMMANDS_H */
