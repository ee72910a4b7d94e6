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
 * (breaker(1), EXIT STATUS): the <sysexits.h> numbers, so that none looks
 * like a status `breaker exec` passes on from its COMMAND (which false, grep
 * and most programs keep below 64). */
enum tool_exit {
    TOOL_EXIT_OK = 0,
    TOOL_EXIT_GATE = 3,         /* replay: a configuration failed --fail-on-flapping or
                                   --max-trips (the answer asked for, not a failure) */
    TOOL_EXIT_USAGE = 64,       /* EX_USAGE: the command line is wrong */
    TOOL_EXIT_DATA = 65,        /* EX_DATAERR: a trace with malformed lines, or none with
                                   --fail-empty (replay, after its report) */
    TOOL_EXIT_NOINPUT = 66,     /* EX_NOINPUT: a file to read cannot be opened or read;
                                   no store at the path; no breaker NAME in it */
    TOOL_EXIT_UNAVAILABLE = 69, /* EX_UNAVAILABLE: --redis in a build without the fleet
                                   store, or the fleet cannot be used */
    TOOL_EXIT_OSERR = 71,       /* EX_OSERR: a system call failed, or out of memory */
    TOOL_EXIT_CANTCREAT = 73,   /* EX_CANTCREAT: an output file (--svg FILE) */
    TOOL_EXIT_IOERR = 74,       /* EX_IOERR: writing the output failed; the store file
                                   cannot be opened or used */
    TOOL_EXIT_REFUSED = 75,     /* EX_TEMPFAIL: exec: the breaker refused, COMMAND not run */
    TOOL_EXIT_NOPERM = 77,      /* EX_NOPERM: the store's default directory is refused */
    TOOL_EXIT_CONFIG = 78,      /* EX_CONFIG: a breaker configuration or a scenario is
                                   wrong: -b, -s, a -c file, a scenario file, validation */
    TOOL_EXIT_TIMED_OUT = 124,  /* exec: killed by --timeout (as timeout(1)) */
    TOOL_EXIT_NOT_RUN = 127,    /* exec: COMMAND could not be started (as sh) */
};

struct option; /* <getopt.h> */

/* "breaker CMD: message" (escaped) and "Try 'breaker CMD --help'." on
 * standard error. @return TOOL_EXIT_USAGE. */
int tool_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* getopt_long() answered '?' or ':' (with opterr off): say which option, and
 * the closest one for a typo. @return TOOL_EXIT_USAGE. */
int tool_option_error(const char *cmd, int c, char **argv, const struct option *longopts);

/* "breaker CMD: out of memory". @return TOOL_EXIT_OSERR. */
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
 * @return 0 or an exit status (TOOL_EXIT_CONFIG), after saying why. */
int tool_finish_breakers(const char *cmd, const struct tool_options *o, struct tool_breakers *list);

/* The exit status for a tool_load_ini() or tool_load_scenario() that
 * failed with `rc`: the file could not be read, or what it says is wrong. */
int tool_load_exit(int rc);

/* A breaker configuration, validated as the command line speaks of it: an
 * unset open_max follows a longer open (cli/config.h), and a message names
 * the keys as -b takes them ("open_max", not "open_max_ns") with durations
 * for people. @return 0, or TOOL_EXIT_CONFIG after saying
 * "breaker CMD: breaker 'NAME': why". */
int tool_validate_breaker(const char *cmd, const struct tool_breaker *b);

/* A duration option's value (--for, --timeout, ...): `text` with its unit
 * (docs/cli.md, "Durations": a bare number is refused, naming the units,
 * since --for 5 would be seconds to one reader and the library's
 * nanoseconds to another), from `min` to `max` ns, which `range` says in
 * words ("from 1ms to 365d"). @return 0 with `*out`, or TOOL_EXIT_USAGE
 * after saying "breaker CMD: OPTION: ..." and why. */
int tool_duration_option(const char *cmd, const char *option, const char *text, uint64_t min,
                         uint64_t max, const char *range, uint64_t *out);

/* Who gives an operator's control or order (operator.c): "user@host", the
 * user the name of the process's real uid in the password database ("uid
 * 1000" without an entry), never $USER; cut to `len` - 1 bytes, a control
 * byte written '?'. */
void tool_operator_who(char *out, size_t len);

#endif /* BREAKER_TOOL_CLI_H */
