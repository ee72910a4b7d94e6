/* SPDX-License-Identifier: MIT */
/*
 * cli/config.h - breaker configurations as the command line and INI files
 * give them (ini_load.c): lists of named configurations, -b specs, -s
 * assignments, and the INI files that hold [breaker NAME] sections (and,
 * for simulate, a scenario: sim/scenario.h).
 */
#ifndef BREAKER_TOOL_CLI_CONFIG_H
#define BREAKER_TOOL_CLI_CONFIG_H

#include <breaker.h>

#include <stddef.h>
#include <stdio.h>

#define TOOL_NAME_MAX 48 /* a configuration's, a scenario's or a phase's name, with its NUL */

struct tool_scenario; /* sim/scenario.h */

/* The keys a configuration accepts, as `breaker keys` lists them. */
extern const char tool_keys_help[];

struct tool_breaker {
    char name[TOOL_NAME_MAX];
    breaker_config cfg;
    char description[160]; /* free text from the file, for reports */
    char summary[256];     /* the keys that were set, "key=value ...", for reports */
};

struct tool_breakers {
    struct tool_breaker *items;
    size_t count, cap;
};

/* Find or add the configuration called `name` (created with the library's
 * defaults). @return it, or NULL when out of memory. */
struct tool_breaker *tool_breakers_get(struct tool_breakers *list, const char *name);
void tool_breakers_free(struct tool_breakers *list);

/* Set one key through breaker_config_set() and remember it for the summary
 * (which ends in "..." once a key no longer fits). @return a breaker status;
 * `msg` says why on error. */
int tool_breaker_set(struct tool_breaker *b, const char *key, const char *value, char *msg,
                     size_t msg_len);

/* "key=value" (as `-s` takes it), of any length, blanks around either part
 * ignored. @return 0, or -1 with `msg` ("key: why" from the library). */
int tool_breaker_assign(struct tool_breaker *b, const char *assignment, char *msg, size_t msg_len);

/* "NAME:key=value,key=value" or "key=value,..." (named `default_name`), of
 * any length; a NAME longer than TOOL_NAME_MAX - 1 or holding control bytes
 * is refused. @return 0, or -1 with `msg` set. */
int tool_breakers_add_spec(struct tool_breakers *list, const char *spec, const char *default_name,
                           char *msg, size_t msg_len);

/* Load `path` (or, with path NULL, the text `text`) into `sc`: a [scenario]
 * section, [phase NAME] sections in order, [breaker NAME] sections. With
 * `sc` NULL only [breaker NAME] sections are accepted (replay), into
 * `breakers`. Lines may be of any length; names and descriptions too long
 * for their fields are refused, never cut. @return 0, or -1 with
 * "file:line: message" in `msg` (the first error; loading stops there). */
int tool_load_ini(const char *path, const char *text, struct tool_scenario *sc,
                  struct tool_breakers *breakers, char *msg, size_t msg_len);
/* The same from an open stream, called `name` in messages. */
int tool_load_ini_stream(FILE *in, const char *name, struct tool_scenario *sc,
                         struct tool_breakers *breakers, char *msg, size_t msg_len);

#endif /* BREAKER_TOOL_CLI_CONFIG_H */
