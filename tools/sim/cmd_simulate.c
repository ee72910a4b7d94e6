/* SPDX-License-Identifier: MIT */
/*
 * cmd_simulate.c - `breaker simulate [options] [SCENARIO.ini]`: the command
 * line of the simulation (simulate.c, fleet_sim.c), its table and picture.
 *
 * Exit statuses: cli/cli.h's, as breaker(1) lists them.
 */
#include "sim/commands.h"
#include "sim/report.h"
#include "sim/simulate.h"

#include "cli/cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

enum {
    OPT_SEED = 256,
    OPT_DURATION,
    OPT_WORKERS,
    OPT_RATE,
    OPT_TIMEOUT,
    OPT_NO_BASELINE,
    OPT_SVG,
    OPT_PRINT_SCENARIO,
    OPT_EVENTS,
    OPT_INSTANCES,
};

const char tool_simulate_help[] =
    "usage: breaker simulate [options] [SCENARIO.ini]\n"
    "\n"
    "Runs SCENARIO (the built-in one if none is given) once without a breaker and\n"
    "once per breaker configuration, with the same seed, on a virtual clock, and\n"
    "prints a comparison table: requests served, failed fast (refused by the\n"
    "breaker, or shed because every worker was busy), failed slowly (timeouts),\n"
    "worker pool saturation, calls that reached the dependency during the outage\n"
    "and the recovery, how long after the dependency recovered the breaker closed\n"
    "for good, transitions, probes, and response time p50/p99.\n"
    "\n"
    "The breakers compared are the scenario file's [breaker NAME] sections, or, if\n"
    "-c or -b is given, those instead.\n"
    "\n"
    "options:\n"
    "  -c, --config FILE     use the [breaker NAME] sections of FILE (repeatable)\n"
    "  -b, --breaker SPEC    use the configuration 'NAME:key=value,key=value'\n"
    "                        (repeatable; without 'NAME:' it is called cliN)\n"
    "  -s, --set KEY=VALUE   set a breaker key in every configuration (repeatable)\n"
    "      --seed N          override the scenario's seed\n"
    "      --duration D      override the scenario's length (e.g. 10m, 1m30s)\n"
    "      --workers N       override the worker pool size\n"
    "      --rate R          override the requests per second\n"
    "      --timeout D       override the per-call timeout (e.g. 1s)\n"
    "      --instances N     run the fleet scenario: N hosts, each with its own\n"
    "                        breaker, share the dependency; local breakers are\n"
    "                        compared with a fleet store (see below)\n"
    "      --no-baseline     skip the run without a breaker\n"
    "      --events          also list every transition of every run, with evidence\n"
    "      --svg FILE        also write the runs' timelines as an SVG picture\n"
    "                        (- writes it to standard output, the table to\n"
    "                        standard error)\n"
    "      --print-scenario  print the built-in scenario (an INI file to copy and\n"
    "                        edit) and exit\n"
    "  -h, --help            show this text\n"
    "\n"
    "Scenario files: [scenario] (name, description, duration, seed, workers,\n"
    "clients, rate, timeout, latency, latency_p99, instances, flush_interval),\n"
    "then [phase NAME] sections in order (kind = healthy | down | errors | slow |\n"
    "recovering, duration, latency, latency_p99, error_rate, abuser_share,\n"
    "abuser_snipes, down = timeout | refused, capacity, cold_latency, cold_capacity,\n"
    "knockdown), then [breaker NAME] sections. See docs/cli.md;\n"
    "examples/scenarios/abusive_caller.ini and hijacked_recovery.ini show one\n"
    "caller's failures, and its probes, against min_failing_sources.\n"
    "\n"
    "Fleet scenario ([scenario] instances = N, or --instances N; flush_interval,\n"
    "default 250ms): each configuration runs twice on the same requests, with\n"
    "local breakers alone and backed by an in-process model of the Redis fleet\n"
    "store (breaker_redis), and the table shows, per recovery round, the probes\n"
    "in flight at once and the calls that reached the dead dependency. See\n"
    "examples/scenarios/fleet.ini.\n"
    "\n"
    "examples:\n"
    "  breaker simulate\n"
    "  breaker simulate --svg outage.svg\n"
    "  breaker simulate -b 'fast:trip=consecutive,failure_threshold=5,open=2s'\n"
    "  breaker simulate --print-scenario > mine.ini; breaker simulate mine.ini\n"
    "  breaker simulate --svg fleet.svg examples/scenarios/fleet.ini\n";

static int override(const char *opt, const char *arg, struct tool_scenario *sc, int c) {
    uint64_t u;
    double d;
    const char *expected = "";
    switch (c) {
    case OPT_SEED:
        if (tool_parse_uint(arg, 0, UINT64_MAX, &sc->seed)) return 0;
        expected = "a whole number such as 42";
        break;
    case OPT_DURATION:
    case OPT_TIMEOUT:
        if (tool_parse_duration(arg, 0, &u) && u > 0) {
            *(c == OPT_DURATION ? &sc->duration_ns : &sc->timeout_ns) = u;
            return 0;
        }
        expected = "a duration above 0 such as " TOOL_DURATION_FORMATS;
        break;
    case OPT_WORKERS:
        if (tool_parse_uint(arg, 1, 100000, &u)) {
            sc->workers = (uint32_t)u;
            return 0;
        }
        expected = "a whole number from 1 to 100000";
        break;
    case OPT_RATE:
        if (tool_parse_number(arg, false, &d) && d > 0.0 && d <= 100000.0) {
            sc->rate = d;
            return 0;
        }
        expected = "requests per second in (0, 100000] such as 200 or 12.5";
        break;
    case OPT_INSTANCES:
        if (tool_parse_uint(arg, 1, TOOL_MAX_INSTANCES, &u)) {
            sc->instances = (uint32_t)u;
            return 0;
        }
        expected = "a whole number of hosts from 1 to 1000";
        break;
    default:
        break;
    }
    tool_error(stderr, "breaker simulate: --%s: bad value '%s': expected %s", opt, arg, expected);
    return TOOL_EXIT_USAGE;
}

/* A scenario override (--seed, --duration, ...), kept until the scenario
 * it changes is loaded. */
struct sim_override {
    int c;
    const char *opt, *arg;
};

/* What the command line asked `breaker simulate` to do. */
struct sim_args {
    struct tool_options o;
    const char *svg;                /* --svg FILE, NULL: none */
    struct sim_override *overrides; /* in command-line order, room for one per argument */
    size_t override_count;
    bool baseline, new_duration, events;
    const char *path; /* the scenario file, NULL for the built-in one */
    bool done;        /* --help or --print-scenario answered: nothing to run */
};

/* Remember an override under its long option's name, for the message should
 * its value be bad. */
static void keep_override(struct sim_args *a, const struct option *longopts, int c,
                          const char *arg) {
    struct sim_override *ov = &a->overrides[a->override_count++];
    ov->c = c;
    ov->arg = arg;
    for (const struct option *lo = longopts; lo->name; lo++)
        if (lo->val == c) ov->opt = lo->name;
}

/* Read the command line into `a`. Overrides wait until the scenario is
 * loaded, so they are only collected here. @return 0 or an exit status. */
static int simulate_options(int argc, char **argv, struct sim_args *a) {
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'},
        {"breaker", required_argument, NULL, 'b'},
        {"set", required_argument, NULL, 's'},
        {"seed", required_argument, NULL, OPT_SEED},
        {"duration", required_argument, NULL, OPT_DURATION},
        {"workers", required_argument, NULL, OPT_WORKERS},
        {"rate", required_argument, NULL, OPT_RATE},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"instances", required_argument, NULL, OPT_INSTANCES},
        {"no-baseline", no_argument, NULL, OPT_NO_BASELINE},
        {"svg", required_argument, NULL, OPT_SVG},
        {"print-scenario", no_argument, NULL, OPT_PRINT_SCENARIO},
        {"events", no_argument, NULL, OPT_EVENTS},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    memset(a, 0, sizeof(*a));
    a->baseline = true;
    int rc = tool_options_init("simulate", &a->o, argc);
    if (rc != 0) return rc;
    a->overrides = calloc((size_t)argc, sizeof(*a->overrides));
    if (a->overrides == NULL) return tool_out_of_memory("simulate");
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":c:b:s:h", longopts, NULL)) != -1) {
        int r = tool_common_option("simulate", c, &a->o);
        if (r > 0) return r;
        if (r == 0) continue;
        switch (c) {
        case 'h':
            fputs(tool_simulate_help, stdout);
            a->done = true;
            return 0;
        case OPT_PRINT_SCENARIO:
            fputs(tool_builtin_scenario, stdout);
            a->done = true;
            return 0;
        case OPT_SVG:
            a->svg = optarg;
            break;
        case OPT_NO_BASELINE:
            a->baseline = false;
            break;
        case OPT_EVENTS:
            a->events = true;
            break;
        case OPT_DURATION:
            a->new_duration = true;
            /* fall through */
        case OPT_SEED:
        case OPT_WORKERS:
        case OPT_RATE:
        case OPT_TIMEOUT:
        case OPT_INSTANCES:
            keep_override(a, longopts, c, optarg);
            break;
        default:
            return tool_option_error("simulate", c, argv, longopts);
        }
    }
    if (argc - optind > 1)
        return tool_usage_error("simulate", "expected at most one scenario file, got '%s' too",
                                argv[optind + 1]);
    a->path = optind < argc ? argv[optind] : NULL;
    return 0;
}

/* The scenario file (or the built-in one) with the overrides applied in
 * order; checked only then, because an override can make it valid or not.
 * @return 0 or an exit status. */
static int load_scenario(const struct sim_args *a, struct tool_scenario *sc) {
    char msg[TOOL_MSG_MAX];
    int rc =
        tool_load_scenario(a->path, tool_builtin_scenario, sc, &sc->breakers, msg, sizeof(msg));
    if (rc != 0) {
        tool_error(stderr, "breaker simulate: %s", msg);
        return tool_load_exit(rc);
    }
    for (size_t i = 0; i < a->override_count; i++) {
        const struct sim_override *ov = &a->overrides[i];
        rc = override(ov->opt, ov->arg, sc, ov->c);
        if (rc != 0) return rc;
    }
    if (a->new_duration && sc->phase_count > 0) {
        /* A new duration stretches or cuts the last phase. */
        sc->phases[sc->phase_count - 1].duration_ns = 0;
    }
    if (tool_scenario_finish(sc, msg, sizeof(msg)) != 0) {
        tool_error(stderr, "breaker simulate: %s: %s", a->path ? a->path : "(built-in)", msg);
        return TOOL_EXIT_CONFIG;
    }
    return 0;
}

/* The runs' results; the first `done` are filled and must be freed. */
struct sim_runs {
    struct tool_sim_result *results;
    size_t count, done;
};

/* The scenario without a breaker (unless --no-baseline), then with each
 * configuration: the same seed for all, so they differ only by their
 * breaker. @return 0 or an exit status. */
static int run_simulations(const struct sim_args *a, const struct tool_scenario *sc,
                           const struct tool_breakers *list, struct sim_runs *runs) {
    runs->count = list->count + (a->baseline ? 1 : 0);
    if (runs->count == 0)
        return tool_usage_error("simulate", "nothing to run: --no-baseline and no breaker");
    runs->results = calloc(runs->count, sizeof(*runs->results));
    if (runs->results == NULL) return tool_out_of_memory("simulate");
    char msg[TOOL_MSG_MAX];
    for (size_t i = 0; i < runs->count; i++) {
        const struct tool_breaker *b =
            a->baseline ? (i == 0 ? NULL : &list->items[i - 1]) : &list->items[i];
        if (tool_simulate(sc, b, &runs->results[i], msg, sizeof(msg)) != 0) {
            tool_error(stderr, "breaker simulate: %s", msg);
            return TOOL_EXIT_OSERR;
        }
        runs->done++;
    }
    return 0;
}

/* The comparison table, and with --events the evidence behind it: every
 * transition of every run that had a breaker. */
static void print_simulations(FILE *out, const struct sim_args *a, const struct tool_scenario *sc,
                              const struct sim_runs *runs) {
    tool_print_sim_table(out, sc, runs->results, runs->count);
    for (size_t i = 0; a->events && i < runs->count; i++) {
        if (!runs->results[i].has_breaker) continue;
        fprintf(out, "\n== %s: transitions\n", runs->results[i].name);
        tool_print_transitions(out, runs->results[i].timeline.events,
                               runs->results[i].timeline.event_count, 0);
    }
}

/* With --svg, the runs' timelines as one picture, and where it went.
 * @return 0 or an exit status. */
static int draw_simulations(const struct sim_args *a, const struct tool_scenario *sc,
                            const struct sim_runs *runs) {
    if (a->svg == NULL) return 0;
    const struct tool_timeline **tls = calloc(runs->count, sizeof(*tls));
    if (tls == NULL) return tool_out_of_memory("simulate");
    for (size_t i = 0; i < runs->count; i++)
        tls[i] = &runs->results[i].timeline;
    char title[160];
    snprintf(title, sizeof(title), "breaker simulate: %s (seed %llu)", sc->name,
             (unsigned long long)sc->seed);
    int rc = tool_svg_write_file("simulate", a->svg, title, tls, runs->count);
    free(tls);
    if (rc == 0 && strcmp(a->svg, "-") != 0) printf("\nTimelines written to %s\n", a->svg);
    return rc;
}

static void free_sim_runs(struct sim_runs *runs) {
    for (size_t i = 0; i < runs->done; i++)
        tool_sim_result_free(&runs->results[i]);
    free(runs->results);
}

/* The fleet scenario (instances > 0): each configuration against local
 * breakers and the fleet store, the table, and with --svg the picture.
 * @return 0 or an exit status. */
static int simulate_fleet(const struct sim_args *a, const struct tool_scenario *sc,
                          const struct tool_breakers *list) {
    if (list->count == 0)
        return tool_usage_error("simulate", "the fleet scenario needs a breaker configuration");
    struct tool_fleet_result *runs = calloc(list->count, sizeof(*runs));
    if (runs == NULL) return tool_out_of_memory("simulate");
    char msg[TOOL_MSG_MAX];
    size_t done = 0;
    int rc = 0;
    for (; done < list->count; done++) {
        if (tool_simulate_fleet(sc, &list->items[done], &runs[done], msg, sizeof(msg)) != 0) {
            tool_error(stderr, "breaker simulate: %s", msg);
            rc = TOOL_EXIT_UNAVAILABLE; /* a build without the fleet store or Lua, or no memory */
            break;
        }
    }
    if (rc == 0) {
        tool_print_fleet_table(tool_svg_is_stdout(a->svg) ? stderr : stdout, sc, runs, done);
        if (a->svg != NULL) {
            char title[160];
            snprintf(title, sizeof(title), "breaker simulate: %s (seed %llu, %u hosts)", sc->name,
                     (unsigned long long)sc->seed, sc->instances);
            bool to_stdout = strcmp(a->svg, "-") == 0;
            FILE *f = to_stdout ? stdout : fopen(a->svg, "w");
            if (f == NULL) {
                tool_error(stderr, "breaker simulate: %s: %s", a->svg, strerror(errno));
                rc = TOOL_EXIT_CANTCREAT;
            } else {
                int w = tool_svg_write_fleet(f, title, runs, done);
                if ((to_stdout ? fflush(f) : fclose(f)) != 0 || w != 0) {
                    tool_error(stderr, "breaker simulate: %s: write error",
                               to_stdout ? "standard output" : a->svg);
                    rc = TOOL_EXIT_IOERR;
                } else if (!to_stdout) {
                    printf("\nPicture written to %s\n", a->svg);
                }
            }
        }
    }
    for (size_t i = 0; i < done; i++)
        tool_fleet_result_free(&runs[i]);
    free(runs);
    return rc;
}

/* Everything after the command line: a separate step so that --help and
 * --print-scenario, which answer while it is read, skip all of it. */
static int simulate(struct sim_args *a) {
    struct tool_scenario sc;
    tool_scenario_init(&sc);
    struct sim_runs runs;
    memset(&runs, 0, sizeof(runs));
    int rc = load_scenario(a, &sc);
    /* -c and -b replace the scenario file's breakers. */
    struct tool_breakers *list = a->o.have_breakers ? &a->o.breakers : &sc.breakers;
    if (rc == 0) rc = tool_finish_breakers("simulate", &a->o, list);
    if (rc == 0 && sc.instances > 0) {
        rc = simulate_fleet(a, &sc, list);
        tool_scenario_free(&sc);
        return rc;
    }
    if (rc == 0) rc = run_simulations(a, &sc, list, &runs);
    if (rc == 0) {
        /* With --svg -, the picture has standard output to itself. */
        print_simulations(tool_svg_is_stdout(a->svg) ? stderr : stdout, a, &sc, &runs);
        rc = draw_simulations(a, &sc, &runs);
    }
    free_sim_runs(&runs);
    tool_scenario_free(&sc);
    return rc;
}

/* `breaker simulate`. The options (-c and -b configurations, -s, the
 * overrides) are freed here, whether or not anything ran. */
int tool_cmd_simulate(int argc, char **argv) {
    struct sim_args a;
    int rc = simulate_options(argc, argv, &a);
    if (rc == 0 && !a.done) rc = simulate(&a);
    tool_options_free(&a.o);
    free(a.overrides);
    return rc;
}
