/* SPDX-License-Identifier: MIT */
/*
 * ops/ops.h - what the commands on a store of shared breakers share (exec,
 * status, ls, open, close, reset): finding and opening the store file
 * (store.c), the options of the five commands after exec (options.c), and
 * waiting for signals with a deadline (wait.c). Nothing here is library API.
 */
#ifndef BREAKER_TOOL_OPS_H
#define BREAKER_TOOL_OPS_H

#include "cli/cli.h"
#include "ops/exec_fleet.h"

#include <breaker.h>
#include <breaker/store.h>

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TOOL_STORE_FILE "breakers.store"

/* Where the store is, as every help text of these commands says it. */
#define TOOL_STORE_PATH_HELP                                                                  \
    "The store is --store PATH, else $BREAKER_STORE, else /run/breaker/" TOOL_STORE_FILE "\n" \
    "for root and /tmp/breaker-$UID/" TOOL_STORE_FILE " for other users: the same\n"          \
    "for a user's login shells, cron jobs and services. A default directory\n"                \
    "must be this user's and not writable by others (in /tmp: mode 0700).\n"

/* ---- store.c ------------------------------------------------------------------*/

/* Open the store at --store PATH (`given`) or the default path; with
 * `create`, create its default directory and the file. The path tried goes
 * to `used` (may be NULL). @return 0, or an exit status after saying why. */
int tool_open_store(const char *cmd, const char *given, bool create, breaker_store **out,
                    char *used, size_t used_len);

/* A store's names, copied out. */
struct tool_names {
    char **items;
    size_t count, cap;
};

/* The store's names, copied out: attaching while foreach runs could wait on
 * the store's lock. @return 0, or an exit status after saying so. */
int tool_list_names(const char *cmd, breaker_store *st, struct tool_names *out);
void tool_names_free(struct tool_names *n);
bool tool_names_has(const struct tool_names *n, const char *name);

/* A NAME argument the library would refuse is a usage error. @return 0 or
 * TOOL_EXIT_USAGE after saying why. */
int tool_check_name(const char *cmd, const char *name);

/* Attach an existing breaker with whatever limits it has. @return 0, or an
 * exit status after saying why. */
int tool_attach_existing(const char *cmd, breaker_store *st, const char *name, breaker **out);

/* The help lines of --redis, --redis-cluster, their connection options and
 * --why, for the commands whose `what` (an order, a change) can be the
 * whole fleet's. */
#define TOOL_FLEET_OPTIONS_HELP(what)                                                    \
    "      --redis ADDR      the fleet's " what ", on the Redis at ADDR: HOST[:PORT],\n" \
    "                        [IPV6][:PORT] or unix:PATH\n"                               \
    "      --redis-cluster SEEDS\n"                                                      \
    "                        the same, on a Redis Cluster "                              \
    "(HOST[:PORT],...)\n"                                                                \
    "      --redis-sentinel SENTINELS\n"                                                 \
    "                        the same, on the master the Sentinels watch as\n"           \
    "      --redis-master MASTER\n"                                                      \
    "                        (both or neither)\n" EXEC_FLEET_OPTIONS_HELP                \
    "      --why TEXT        with --redis: why (at most 200 bytes), stored with the\n"   \
    "                        " what "\n"

/* ---- options.c: status, ls, open, close, reset ------------------------------*/

/* Their command line: --store, -h, and for status its output forms; then
 * NAMEs. */
struct tool_store_args {
    const char *store;
    const char *name; /* NULL: none given */
    bool done;        /* --help answered */
    /* status only */
    bool json, prometheus, watch;
    uint64_t interval_ns; /* --watch: 0 = the default */
    uint64_t count;       /* --watch: stop after this many lines, 0 = never */
    /* open and close only */
    uint64_t for_ns; /* --for D: open for D, or forced closed for D; 0 = until reset */
    /* open, close, reset, shadow and config: --redis ADDR or
     * --redis-cluster SEEDS and their connection options (the fleet's
     * control, not the store's: fleet.addr set), --why TEXT */
    struct exec_fleet_opts fleet;
    const char *why;
    /* shadow only: on (true) or off */
    bool on;
    /* config only: the key=value arguments after NAME */
    char **pairs;
    int n_pairs;
    char path[4096]; /* the store's file, once opened */
};

/* Read the options of `cmd` (status's own too if `status`), then
 * `min_names` to `max_names` NAMEs. --help prints `help`. @return 0 or an
 * exit status. */
int tool_store_options(const char *cmd, const char *help, bool status, int min_names, int max_names,
                       int argc, char **argv, struct tool_store_args *a);

/* Open the store without creating it (its path into a->path) and list its
 * names; with a NAME in `a`, it must be one of them. @return 0, or an exit
 * status (the store closed). */
int tool_open_existing(const char *cmd, struct tool_store_args *a, breaker_store **st,
                       struct tool_names *n);

/* Open the store without creating it, attach a->name (which must exist),
 * run `act` on it (which prints what it did, and returns BREAKER_OK, a
 * library status, or an exit status of 64 or more it has already
 * explained), detach and close. @return 0, or an exit status after saying
 * why (a library status from `act`: TOOL_EXIT_IOERR). */
int tool_with_breaker(const char *cmd, struct tool_store_args *a,
                      int (*act)(breaker *b, const struct tool_store_args *a, const char *cmd));

/* ---- wait.c ---------------------------------------------------------------------*/

/* A handler that does nothing: it only makes a signal pending for
 * sigtimedwait(), since an ignored one may be discarded. */
void tool_on_signal(int sig);
/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t tool_now_ns(void);

/* Wait for one of `set` (blocked) until `deadline` (tool_now_ns(); 0:
 * none). @return the signal, 0 at the deadline, -1 on error. */
int tool_wait_signal(const sigset_t *set, uint64_t deadline);

#endif /* BREAKER_TOOL_OPS_H */
