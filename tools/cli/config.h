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

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define TOOL_NAME_MAX 48 /* a configuration's, a scenario's or a phase's name, with its NUL */

/* The keys a configuration accepts, as `breaker keys` lists them. */
extern const char tool_keys_help[];

struct tool_breaker {
    char name[TOOL_NAME_MAX];
    breaker_config cfg;
    char description[160]; /* free text from the file, for reports */
    char summary[256];     /* the keys that were set, "key=value ...", for reports */
    bool open_max_given;   /* open_max was set: it no longer follows open */
    /* simulate's own keys (no breaker_config fields): */
    bool shadow;            /* shadow = yes: the breaker runs in shadow mode */
    bool retry_after_opens; /* retry_after_opens = yes: a 429 with Retry-After opens the
                               breaker for that long (breaker_open_for()) */
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
 * (which ends in "..." once a key no longer fits). Setting open above an
 * open_max that was never set raises open_max to it: who sets open alone
 * means it (open=1h would otherwise be refused as above the default
 * open_max of 5m). @return a breaker status; `msg` says why on error. */
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

/* The reader of a scenario file's own sections, [scenario] and [phase NAME]
 * (sim/scenario_file.c): the loader hands their lines on. Each call
 * @return 1, or 0 with the reason in `msg`. */
struct tool_ini_scenario {
    void *ctx;
    /* [phase NAME] starts; NAME was checked as a name. */
    int (*phase)(void *ctx, const char *name, char *msg, size_t msg_len);
    /* A key of [scenario] (in_phase false) or of the phase started last. */
    int (*key)(void *ctx, bool in_phase, const char *name, const char *value, char *msg,
               size_t msg_len);
};

/* Load `path` (or, with path NULL, the text `text`): [breaker NAME]
 * sections into `breakers`, and [scenario] and [phase NAME] sections
 * through `sc`; with `sc` NULL those are skipped (a scenario file's
 * breakers alone, as -c reads it). Lines may be of any length; names and
 * descriptions too long for their fields are refused, never cut. @return 0;
 * -1 with "file:line: message" in `msg` (the first error; loading stops
 * there); -2 with "file: why" when the file cannot be opened or read. */
int tool_load_ini(const char *path, const char *text, const struct tool_ini_scenario *sc,
                  struct tool_breakers *breakers, char *msg, size_t msg_len);
/* The same from an open stream, called `name` in messages. */
int tool_load_ini_stream(FILE *in, const char *name, const struct tool_ini_scenario *sc,
                         struct tool_breakers *breakers, char *msg, size_t msg_len);

/* A free-text key shown in reports and pictures (a name, a description),
 * of section `where`: copied whole into `field` of `size` bytes, or refused
 * (too long, control characters, invalid UTF-8). @return 0, or -1 with
 * `msg`. */
int tool_ini_text(const char *where, const char *name, const char *value, char *field, size_t size,
                  char *msg, size_t msg_len);

#endif /* BREAKER_TOOL_CLI_CONFIG_H */
