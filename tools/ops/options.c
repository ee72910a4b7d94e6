/* SPDX-License-Identifier: MIT */
/*
 * options.c - the one command line of status, ls, open, close and reset:
 * --store and -h for all, status's output forms, then NAMEs.
 */
#include "ops/ops.h"

#include "ops/exec_fleet.h"

#include <breaker/redis.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
    OPT_STORE = 256,
    OPT_JSON,
    OPT_PROMETHEUS,
    OPT_WATCH,
    OPT_INTERVAL,
    OPT_COUNT,
    OPT_FOR,
    OPT_WHY,
};

/* The NAME arguments after the options. @return 0 or an exit status. */
static int take_name(const char *cmd, int min_args, int max_args, int argc, char **argv,
                     struct tool_store_args *a) {
    int n = argc - optind;
    if (n < min_args) return tool_usage_error(cmd, "expected a breaker NAME");
    if (n > max_args)
        return tool_usage_error(cmd, "unexpected argument '%s'", argv[optind + max_args]);
    if (n > 0) {
        a->name = argv[optind];
        return tool_check_name(cmd, a->name);
    }
    return 0;
}

/* One option (those of status are only in status's `longopts`). @return 0
 * or an exit status. */
static int status_option(const char *cmd, struct tool_store_args *a, int c, char **argv,
                         const struct option *longopts) {
    if (exec_fleet_is_option(c)) return exec_fleet_option(cmd, c, optarg, &a->fleet);
    switch (c) {
    case OPT_STORE:
        a->store = optarg;
        return 0;
    case OPT_JSON:
        a->json = true;
        return 0;
    case OPT_PROMETHEUS:
        a->prometheus = true;
        return 0;
    case OPT_WATCH:
        a->watch = true;
        return 0;
    case OPT_INTERVAL:
        return tool_duration_option("status", "--interval", optarg, TOOL_MS, 24 * 3600 * TOOL_SEC,
                                    "from 1ms to 1d", &a->interval_ns);
    case OPT_FOR:
        return tool_duration_option(cmd, "--for", optarg, TOOL_MS, 365 * 24 * 3600 * TOOL_SEC,
                                    "from 1ms to 365d", &a->for_ns);
    case OPT_WHY:
        if (strlen(optarg) > BREAKER_WHY_MAX)
            return tool_usage_error(cmd, "--why: %zu bytes, at most %d", strlen(optarg),
                                    BREAKER_WHY_MAX);
        for (const char *p = optarg; *p != '\0'; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f)
                return tool_usage_error(cmd,
                                        "--why: a control character at byte %zu (printable "
                                        "text only)",
                                        (size_t)(p - optarg) + 1);
        a->why = optarg;
        return 0;
    case OPT_COUNT:
        if (!tool_parse_uint(optarg, 1, UINT32_MAX, &a->count))
            return tool_usage_error("status",
                                    "--count: bad value '%s': expected a whole number from 1 "
                                    "to 4294967295",
                                    optarg);
        return 0;
    default:
        return tool_option_error(cmd, c, argv, longopts);
    }
}

int tool_store_options(const char *cmd, const char *help, bool status, int min_names, int max_names,
                       int argc, char **argv, struct tool_store_args *a) {
    static const struct option plain[] = {{"store", required_argument, NULL, OPT_STORE},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
    static const struct option status_opts[] = {{"store", required_argument, NULL, OPT_STORE},
                                                {"json", no_argument, NULL, OPT_JSON},
                                                {"prometheus", no_argument, NULL, OPT_PROMETHEUS},
                                                {"watch", no_argument, NULL, OPT_WATCH},
                                                {"interval", required_argument, NULL, OPT_INTERVAL},
                                                {"count", required_argument, NULL, OPT_COUNT},
                                                EXEC_FLEET_LONGOPTS,
                                                {"help", no_argument, NULL, 'h'},
                                                {NULL, 0, NULL, 0}};
    static const struct option open_opts[] = {{"store", required_argument, NULL, OPT_STORE},
                                              {"for", required_argument, NULL, OPT_FOR},
                                              EXEC_FLEET_LONGOPTS,
                                              {"why", required_argument, NULL, OPT_WHY},
                                              {"help", no_argument, NULL, 'h'},
                                              {NULL, 0, NULL, 0}};
    /* reset, shadow and config: the fleet's too, without --for. */
    static const struct option fleet_opts[] = {{"store", required_argument, NULL, OPT_STORE},
                                               EXEC_FLEET_LONGOPTS,
                                               {"why", required_argument, NULL, OPT_WHY},
                                               {"help", no_argument, NULL, 'h'},
                                               {NULL, 0, NULL, 0}};
    bool fleet =
        strcmp(cmd, "reset") == 0 || strcmp(cmd, "shadow") == 0 || strcmp(cmd, "config") == 0;
    const struct option *longopts = status ? status_opts
                                    : strcmp(cmd, "open") == 0 || strcmp(cmd, "close") == 0
                                        ? open_opts
                                    : fleet ? fleet_opts
                                            : plain;
    memset(a, 0, sizeof(*a));
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (c == 'h') {
            fputs(help, stdout);
            a->done = true;
            return 0;
        }
        int rc = status_option(cmd, a, c, argv, longopts);
        if (rc != 0) return rc;
    }
    int bad = exec_fleet_options_check(cmd, &a->fleet);
    if (bad != 0) return bad;
    if (a->fleet.addr != NULL && a->store != NULL)
        return tool_usage_error(cmd, "--store and --redis%s: choose one",
                                a->fleet.cluster ? "-cluster" : "");
    /* open, close and reset take --why over a store too: for the event of
     * the transition they make (force.c). */
    bool control =
        strcmp(cmd, "open") == 0 || strcmp(cmd, "close") == 0 || strcmp(cmd, "reset") == 0;
    if (a->why != NULL && a->fleet.addr == NULL && !control)
        return tool_usage_error(cmd, "--why: only with --redis or --redis-cluster");
    return take_name(cmd, min_names, max_names, argc, argv, a);
}
