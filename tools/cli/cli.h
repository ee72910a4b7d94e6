/* SPDX-License-Identifier: MIT */
/*
 * cli/cli.h - what every command of `breaker` shares on its command line:
 * exit statuses, usage errors and their messages, and the -c, -b and -s
 * options (cli.c). The numbers and durations it reads are cli/parse.h, the
 * breaker configurations cli/config.h, the escaping of user text
 * cli/text.h. Nothing here is library API.
 */
#ifndef BREAKER_TOOL_CLI_H
#define BREAKER_TOOL_CLI_H

#include "cli/config.h"
#include "cli/parse.h"
#include "cli/text.h"

#include <stdbool.h>
#include <stddef.h>

/* The exit statuses of the tool's own outcomes, the same for every command
 * (breaker(1), EXIT STATUS). */
enum tool_exit {
    TOOL_EXIT_OK = 0,
    TOOL_EXIT_ERROR = 1, /* a bad file, an invalid configuration, a store error */
    TOOL_EXIT_USAGE = 2, /* a usage error: the command line itself is wrong */
};

struct option; /* <getopt.h> */

/* "breaker CMD: message" (escaped) and "Try 'breaker CMD --help'." on
 * standard error. @return TOOL_EXIT_USAGE. */
int tool_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* getopt_long() answered '?' or ':' (with opterr off): say which option, and
 * the closest one for a typo. @return TOOL_EXIT_USAGE. */
int tool_option_error(const char *cmd, int c, char **argv, const struct option *longopts);

/* "breaker CMD: out of memory". @return TOOL_EXIT_ERROR. */
int tool_out_of_memory(const char *cmd);

/* The -c, -b and -s options, as simulate and replay take them. */
struct tool_options {
    struct tool_breakers breakers; /* from -c and -b */
    bool have_breakers;
    const char **sets; /* the -s options, room for one per argument */
    size_t set_count;
    int cli_count; /* -b specs without a name so far: the next is cli<N+1> */
};

/* Room for the options that can occur once per argument. @return 0, or an
 * exit status after saying so. */
int tool_options_init(const char *cmd, struct tool_options *o, int argc);
/* The -c and -b configurations and the -s list. */
void tool_options_free(struct tool_options *o);
/* Handle -c, -b or -s (`c` as getopt_long() returned it, its value in
 * optarg). @return -1 if `c` is none of them, else 0 or an exit status. */
int tool_common_option(const char *cmd, int c, struct tool_options *o);
/* Apply every -s to every configuration of `list`, then validate them all.
 * @return 0 or an exit status, after saying why. */
int tool_finish_breakers(const char *cmd, const struct tool_options *o, struct tool_breakers *list);

#endif /* BREAKER_TOOL_CLI_H */
