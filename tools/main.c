/* SPDX-License-Identifier: MIT */
/*
 * main.c - the `breaker` command: a table of its commands, and nothing else.
 *
 *   breaker simulate|replay ...                   sim/ (cmd_simulate.c, cmd_replay.c)
 *   breaker exec|status|ls|open|close|reset|shadow ... ops/ (exec.c, status.c, ls.c, force.c)
 *   breaker keys                                  cli/ (the configuration keys)
 *
 * Each command reads its own options and returns its exit status; the
 * statuses every command shares are cli/cli.h's (breaker(1), EXIT STATUS).
 */
#include "ops/commands.h"
#include "sim/commands.h"

#include "cli/cli.h"

#include <stdio.h>
#include <string.h>

static const char main_help[] =
    "usage: breaker <command> [options]\n"
    "\n"
    "Answers \"what would this circuit breaker configuration have done?\" by running\n"
    "the real libbreaker on a virtual clock, before production does; and runs\n"
    "scripts and cron jobs through breakers the processes of a host share.\n"
    "\n"
    "commands:\n"
    "  simulate   simulate an outage (a built-in one by default) without a breaker\n"
    "             and with one or more configurations, and compare them\n"
    "  replay     feed a CSV trace of real calls through one or more configurations\n"
    "             and report every transition with its evidence\n"
    "  keys       list the breaker configuration keys and what they accept\n"
    "  exec       run a command through a breaker this host's processes share\n"
    "             (refused: exit 75 without running it)\n"
    "  status     the state and counters of a store's breakers (--json,\n"
    "             --prometheus, --watch)\n"
    "  ls         list the breakers of a store\n"
    "  open       force a store's breaker open (operators)\n"
    "  close      force a store's breaker closed (operators)\n"
    "  reset      end a forced state and start the breaker over\n"
    "  shadow     shadow mode on or off: a store's breaker runs but refuses nothing\n"
    "  config     show a store's breaker's limits, or change them live\n"
    "  help       show this text, or `breaker help COMMAND` for a command's\n"
    "\n"
    "options:\n"
    "  -h, --help     show this text\n"
    "  -V, --version  print the library version\n"
    "\n"
    "Breaker configurations come from INI files ([breaker NAME] sections of\n"
    "key = value lines) or from the command line (-b 'NAME:key=value,...');\n"
    "`breaker keys` lists the keys.\n"
    "\n"
    "See breaker(1) for the manual.\n";

/* `breaker keys`: the text is all there is to it. */
static int print_keys(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fputs(tool_keys_help, stdout);
    return TOOL_EXIT_OK;
}

static const struct command {
    const char *name;
    int (*run)(int argc, char **argv); /* argv[0] is the command's name */
    const char *help;                  /* `breaker help NAME` */
} commands[] = {
    {"simulate", tool_cmd_simulate, tool_simulate_help},
    {"replay", tool_cmd_replay, tool_replay_help},
    {"keys", print_keys, tool_keys_help},
    {"exec", tool_cmd_exec, tool_exec_help},
    {"status", tool_cmd_status, tool_status_help},
    {"ls", tool_cmd_ls, tool_ls_help},
    {"open", tool_cmd_force, tool_force_help},
    {"close", tool_cmd_force, tool_force_help},
    {"reset", tool_cmd_force, tool_force_help},
    {"shadow", tool_cmd_shadow, tool_shadow_help},
    {"config", tool_cmd_config, tool_config_help},
};
#define COMMAND_COUNT (sizeof(commands) / sizeof(commands[0]))

static const struct command *find_command(const char *name) {
    for (size_t i = 0; i < COMMAND_COUNT; i++)
        if (strcmp(commands[i].name, name) == 0) return &commands[i];
    return NULL;
}

/* `breaker frobnicate`: say so, with the closest command or option if it
 * looks like a typo of one, and the help. @return TOOL_EXIT_USAGE. */
static int unknown_command(const char *cmd) {
    const char *names[COMMAND_COUNT + 1];
    for (size_t i = 0; i < COMMAND_COUNT; i++)
        names[i] = commands[i].name;
    names[COMMAND_COUNT] = "help";
    static const char *const options[] = {"--help", "--version"};
    bool option = cmd[0] == '-';
    const char *guess =
        option ? tool_suggest(cmd, options, 2) : tool_suggest(cmd, names, COMMAND_COUNT + 1);
    const char *what = option ? "option" : "command";
    if (guess != NULL) {
        tool_error(stderr, "breaker: unknown %s '%s'; did you mean '%s'?", what, cmd, guess);
    } else {
        tool_error(stderr, "breaker: unknown %s '%s'", what, cmd);
    }
    fprintf(stderr, "\n%s", main_help);
    return TOOL_EXIT_USAGE;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fputs(main_help, stderr);
        return TOOL_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0) {
        fputs(main_help, stdout);
        return TOOL_EXIT_OK;
    }
    if (strcmp(cmd, "-V") == 0 || strcmp(cmd, "--version") == 0) {
        printf("breaker %s\n", breaker_version_string());
        return TOOL_EXIT_OK;
    }
    if (strcmp(cmd, "help") == 0) {
        const struct command *topic = argc > 2 ? find_command(argv[2]) : NULL;
        fputs(topic != NULL ? topic->help : main_help, stdout);
        return TOOL_EXIT_OK;
    }
    const struct command *c = find_command(cmd);
    return c != NULL ? c->run(argc - 1, argv + 1) : unknown_command(cmd);
}
