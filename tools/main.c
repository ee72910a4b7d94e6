/* SPDX-License-Identifier: MIT */
/*
 * main.c - the `breaker` command: "what would this configuration have done?"
 *
 *   breaker simulate [options] [SCENARIO.ini]
 *   breaker replay [options] TRACE.csv
 *   breaker exec|status|ls|open|close|reset ...   (store_cmds.c)
 *
 * Exit status: 0 success; 1 an error (bad file, invalid configuration) or,
 * for replay, malformed trace lines or, with --fail-empty, no calls at all
 * (the report is still printed); 2 a usage error; 3, for replay, a
 * configuration that failed --fail-on-flapping or --max-trips.
 *
 * Every message that quotes user input goes out through tool_error(), which
 * escapes control bytes.
 */
#include "tool.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_USAGE 2
#define EXIT_GATE  3 /* replay: --fail-on-flapping or --max-trips */

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

static const char simulate_help[] =
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
    "recovering, duration, latency, latency_p99, error_rate, abuser_share, down =\n"
    "timeout | refused, capacity, cold_latency, cold_capacity, knockdown), then\n"
    "[breaker NAME] sections. See docs/cli.md;\n"
    "examples/scenarios/abusive_caller.ini shows one caller's failures against\n"
    "min_failing_sources.\n"
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

static const char replay_help[] =
    "usage: breaker replay [options] TRACE.csv    (- reads standard input)\n"
    "\n"
    "Feeds a trace of real calls through each breaker configuration on a virtual\n"
    "clock and prints, per configuration: every transition with its time (from the\n"
    "first call), reason and evidence; how many calls would have been refused; the\n"
    "probes; the time spent open and half-open; and a warning if it flaps (closes\n"
    "and trips again within 60s, twice or more). Same trace and configuration, same\n"
    "output, byte for byte.\n"
    "\n"
    "Trace format: one call per line, 'timestamp,duration,outcome':\n"
    "  timestamp  when the call started: seconds (1700000000.125), a duration\n"
    "             with a unit (12.5s, 1500ms) or ISO-8601 with a zone\n"
    "             (2026-11-30T12:00:00.123Z); only differences matter\n"
    "  duration   seconds (0.250) or with a unit (250ms)\n"
    "  outcome    ok | success | failure | fail | error | timeout | ignored |\n"
    "             cancelled, an HTTP status (503; classified as breaker.h says), or\n"
    "             an errno name (ECONNREFUSED, ETIMEDOUT, ECANCELED, EINVAL, ...)\n"
    "A first line naming columns is a header, and then the columns are as it\n"
    "says, in any order: ts | time | timestamp | start, duration | latency |\n"
    "elapsed (each with an optional unit _s, _ms, _us or _ns for bare numbers;\n"
    "none means seconds), outcome | status | result | code, and optionally\n"
    "client | caller | source | tenant (the caller, for min_failing_sources).\n"
    "Any other name or unit is refused. CSV as RFC 4180 (quotes, commas in\n"
    "quotes, \"\" for a quote), CRLF and a UTF-8 BOM are fine. Blank lines and\n"
    "lines starting with # are skipped. A malformed line is reported as\n"
    "FILE:LINE: on standard error and skipped; the rest is replayed, and the exit\n"
    "status is 1.\n"
    "\n"
    "options:\n"
    "  -c, --config FILE     use the [breaker NAME] sections of FILE (repeatable)\n"
    "  -b, --breaker SPEC    use the configuration 'NAME:key=value,key=value'\n"
    "                        (repeatable; without either: the library's defaults)\n"
    "  -s, --set KEY=VALUE   set a breaker key in every configuration (repeatable)\n"
    "      --svg FILE        also write the timelines as an SVG picture (- writes\n"
    "                        it to standard output, the reports to standard error)\n"
    "      --json            print the summary as JSON (docs/cli.md lists the keys)\n"
    "      --fail-empty      exit 1 if the trace has no calls (else a warning)\n"
    "      --fail-on-flapping  exit 3 if a configuration flaps\n"
    "      --max-trips N     exit 3 if a configuration trips more than N times\n"
    "  -h, --help            show this text\n"
    "\n"
    "example:\n"
    "  breaker replay -b 'strict:trip=consecutive,failure_threshold=3,open=5s' \\\n"
    "                 -b 'lenient:window=30s,failure_rate=60%' calls.csv\n";

static const char keys_help[] =
    "Breaker configuration keys (breaker_config_set(); include/breaker.h):\n"
    "  trip                  consecutive | count_window | time_window (default)\n"
    "  failure_threshold     consecutive: failures in a row to trip, 1..1000000 (5)\n"
    "  window_size           count_window: calls in the window, 1..1000000 (100)\n"
    "  window                time_window: span, 1ms..365d, 1ms a bucket (60s)\n"
    "  window_buckets        time_window: buckets, 1..600 (10)\n"
    "  min_calls             windows: never trip on fewer calls, 1..1000000 (20)\n"
    "  failure_rate          windows: trip at this failure rate, (0,1] or % (50%)\n"
    "  slow_call             a call longer than this is slow (0 = off)\n"
    "  slow_call_rate        windows: trip at this slow-call rate; a slow probe\n"
    "                        fails (0 = off)\n"
    "  open                  first wait in open before a probe (30s)\n"
    "  open_backoff          wait multiplier per failed recovery, 1..100 (2)\n"
    "  open_max              cap of the wait, >= open (5m)\n"
    "  open_jitter           add up to this fraction of the wait, [0,1] (0.2)\n"
    "  half_open_max_probes  probes in flight at once, 1..4095 (1)\n"
    "  half_open_successes   successful probes to close, 1..4095 (3)\n"
    "  probe_timeout         a probe not completed by then fails (30s)\n"
    "  ramp                  after a recovery, admit a growing share of calls\n"
    "                        over this time (0 = off)\n"
    "  ramp_start            the share admitted as the ramp begins, (0,1] (10%)\n"
    "  min_failing_sources   trip only on failures from this many callers,\n"
    "                        0..32 (0 = off)\n"
    "  cancelled_as          ignored (default) | failure\n"
    "  seed                  jitter seed (the tool fixes it so runs repeat)\n"
    "Durations: 250ms, 5s, 1m, 1m30s, 1500us, 20ns, 1.5s (a bare number is ns);\n"
    "duration keys also accept a _ns suffix. Rates: 0.5 or 50%.\n";

/* ---- Shared option handling ---------------------------------------------------*/

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
    OPT_FAIL_EMPTY,
    OPT_JSON,
    OPT_FAIL_ON_FLAPPING,
    OPT_MAX_TRIPS,
    OPT_INSTANCES,
};

struct options {
    struct tool_breakers breakers; /* from -c and -b */
    bool have_breakers;
    const char **sets; /* the -s options, room for one per argument */
    size_t set_count;
    const char *svg;
    int cli_count;
};

/* @return 1, the exit status, after saying so. */
static int out_of_memory(const char *cmd) {
    tool_error(stderr, "breaker %s: out of memory", cmd);
    return 1;
}

/* Room for the options that can occur once per argument. @return 0, or 1
 * after saying so. */
static int options_init(const char *cmd, struct options *o, int argc) {
    memset(o, 0, sizeof(*o));
    o->sets = calloc((size_t)argc, sizeof(*o->sets));
    return o->sets != NULL ? 0 : out_of_memory(cmd);
}

/* The -c and -b configurations and the -s list: the options own them,
 * whether or not anything ran. */
static void options_free(struct options *o) {
    tool_breakers_free(&o->breakers);
    free(o->sets);
    o->sets = NULL;
}

int tool_usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *text = NULL;
    if (vasprintf(&text, fmt, ap) < 0) text = NULL;
    va_end(ap);
    tool_error(stderr, "breaker %s: %s", cmd, text != NULL ? text : "(out of memory)");
    free(text);
    fprintf(stderr, "Try 'breaker %s --help'.\n", cmd);
    return EXIT_USAGE;
}

/* getopt_long() answered '?' (an unknown or ambiguous option) or ':' (an
 * option without its value), with opterr off so that the message is ours:
 * the command's prefix, and the closest option for a typo.
 * @return EXIT_USAGE. */
int tool_option_error(const char *cmd, int c, char **argv, const struct option *longopts) {
    const char *arg = argv[optind - 1];
    if (c == ':') {
        if (optopt != 0 && optopt < 256 && strncmp(arg, "--", 2) != 0)
            return tool_usage_error(cmd, "option '-%c' needs a value", optopt);
        return tool_usage_error(cmd, "option '%.*s' needs a value", (int)strcspn(arg, "="), arg);
    }
    if (optopt != 0) return tool_usage_error(cmd, "unknown option '-%c'", optopt);
    /* A long option: its name without the dashes and any "=value". */
    const char *name = arg + strspn(arg, "-");
    int len = (int)strcspn(name, "=");
    const char *names[32];
    size_t n = 0, prefixed = 0;
    char typed[80];
    snprintf(typed, sizeof(typed), "%.*s", len, name);
    for (const struct option *lo = longopts; lo->name != NULL && n < 32; lo++) {
        names[n++] = lo->name;
        prefixed += strncmp(lo->name, typed, strlen(typed)) == 0;
    }
    if (prefixed > 1) return tool_usage_error(cmd, "option '--%s' is ambiguous", typed);
    const char *guess = tool_suggest(typed, names, n);
    if (guess != NULL)
        return tool_usage_error(cmd, "unknown option '--%s'; did you mean '--%s'?", typed, guess);
    return tool_usage_error(cmd, "unknown option '--%s'", typed);
}

/* Handle -c, -b, -s. @return -1 if not one of them, else 0 or an exit code. */
static int common_option(const char *cmd, int c, struct options *o) {
    char msg[TOOL_MSG_MAX];
    switch (c) {
    case 'c':
        o->have_breakers = true;
        if (tool_load_ini(optarg, NULL, NULL, &o->breakers, msg, sizeof(msg)) != 0) {
            tool_error(stderr, "breaker %s: %s", cmd, msg);
            return 1;
        }
        return 0;
    case 'b': {
        char name[16];
        snprintf(name, sizeof(name), "cli%d", ++o->cli_count);
        o->have_breakers = true;
        if (tool_breakers_add_spec(&o->breakers, optarg, name, msg, sizeof(msg)) != 0) {
            tool_error(stderr, "breaker %s: -b %s", cmd, msg);
            return EXIT_USAGE;
        }
        return 0;
    }
    case 's':
        if (strchr(optarg, '=') == NULL)
            return tool_usage_error(cmd, "--set %s: expected KEY=VALUE", optarg);
        o->sets[o->set_count++] = optarg;
        return 0;
    case OPT_SVG:
        o->svg = optarg;
        return 0;
    default:
        return -1;
    }
}

/* Apply every --set to every configuration, then validate them all. */
static int finish_breakers(const char *cmd, struct options *o, struct tool_breakers *list) {
    char msg[TOOL_MSG_MAX];
    for (size_t i = 0; i < list->count; i++) {
        for (size_t k = 0; k < o->set_count; k++) {
            if (tool_breaker_assign(&list->items[i], o->sets[k], msg, sizeof(msg)) != 0) {
                tool_error(stderr, "breaker %s: --set %s", cmd, msg);
                return EXIT_USAGE;
            }
        }
        if (breaker_config_validate(&list->items[i].cfg, msg, sizeof(msg)) != BREAKER_OK) {
            tool_humanize_ns(msg, sizeof(msg));
            tool_error(stderr, "breaker %s: breaker '%s': %s", cmd, list->items[i].name, msg);
            return 1;
        }
    }
    return 0;
}

/* Write `n` timelines to `path` ("-": standard output) as one SVG picture
 * (--svg). @return 0, or 1
 * after saying on standard error why the file could not be written. */
static int write_svg(const char *cmd, const char *path, const char *title,
                     const struct tool_timeline *const *timelines, size_t n) {
    if (strcmp(path, "-") == 0) {
        int rc = tool_svg_write(stdout, title, timelines, n);
        if (fflush(stdout) != 0 || ferror(stdout) || rc != 0) {
            tool_error(stderr, "breaker %s: standard output: write error", cmd);
            return 1;
        }
        return 0;
    }
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        tool_error(stderr, "breaker %s: %s: %s", cmd, path, strerror(errno));
        return 1;
    }
    int rc = tool_svg_write(f, title, timelines, n);
    if (fclose(f) != 0 || rc != 0) {
        tool_error(stderr, "breaker %s: %s: write error", cmd, path);
        return 1;
    }
    return 0;
}

/* --svg -: the picture goes to standard output, the text to standard error. */
static bool svg_to_stdout(const struct options *o) {
    return o->svg != NULL && strcmp(o->svg, "-") == 0;
}

/* ---- simulate ------------------------------------------------------------------*/

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
    return EXIT_USAGE;
}

/* A scenario override (--seed, --duration, ...), kept until the scenario
 * it changes is loaded. */
struct sim_override {
    int c;
    const char *opt, *arg;
};

/* What the command line asked `breaker simulate` to do. */
struct sim_args {
    struct options o;
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
    if (options_init("simulate", &a->o, argc) != 0) return 1;
    a->overrides = calloc((size_t)argc, sizeof(*a->overrides));
    if (a->overrides == NULL) return out_of_memory("simulate");
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":c:b:s:h", longopts, NULL)) != -1) {
        int r = common_option("simulate", c, &a->o);
        if (r > 0) return r;
        if (r == 0) continue;
        switch (c) {
        case 'h':
            fputs(simulate_help, stdout);
            a->done = true;
            return 0;
        case OPT_PRINT_SCENARIO:
            fputs(tool_builtin_scenario, stdout);
            a->done = true;
            return 0;
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
    if (tool_load_ini(a->path, tool_builtin_scenario, sc, &sc->breakers, msg, sizeof(msg)) != 0) {
        tool_error(stderr, "breaker simulate: %s", msg);
        return 1;
    }
    for (size_t i = 0; i < a->override_count; i++) {
        const struct sim_override *ov = &a->overrides[i];
        int rc = override(ov->opt, ov->arg, sc, ov->c);
        if (rc != 0) return rc;
    }
    if (a->new_duration && sc->phase_count > 0) {
        /* A new duration stretches or cuts the last phase. */
        sc->phases[sc->phase_count - 1].duration_ns = 0;
    }
    if (tool_scenario_finish(sc, msg, sizeof(msg)) != 0) {
        tool_error(stderr, "breaker simulate: %s: %s", a->path ? a->path : "(built-in)", msg);
        return 1;
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
    if (runs->results == NULL) return out_of_memory("simulate");
    char msg[TOOL_MSG_MAX];
    for (size_t i = 0; i < runs->count; i++) {
        const struct tool_breaker *b =
            a->baseline ? (i == 0 ? NULL : &list->items[i - 1]) : &list->items[i];
        if (tool_simulate(sc, b, &runs->results[i], msg, sizeof(msg)) != 0) {
            tool_error(stderr, "breaker simulate: %s", msg);
            return 1;
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
    if (a->o.svg == NULL) return 0;
    const struct tool_timeline **tls = calloc(runs->count, sizeof(*tls));
    if (tls == NULL) return out_of_memory("simulate");
    for (size_t i = 0; i < runs->count; i++)
        tls[i] = &runs->results[i].timeline;
    char title[160];
    snprintf(title, sizeof(title), "breaker simulate: %s (seed %llu)", sc->name,
             (unsigned long long)sc->seed);
    int rc = write_svg("simulate", a->o.svg, title, tls, runs->count);
    free(tls);
    if (rc == 0 && strcmp(a->o.svg, "-") != 0) printf("\nTimelines written to %s\n", a->o.svg);
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
    if (runs == NULL) return out_of_memory("simulate");
    char msg[TOOL_MSG_MAX];
    size_t done = 0;
    int rc = 0;
    for (; done < list->count; done++) {
        if (tool_simulate_fleet(sc, &list->items[done], &runs[done], msg, sizeof(msg)) != 0) {
            tool_error(stderr, "breaker simulate: %s", msg);
            rc = 1;
            break;
        }
    }
    if (rc == 0) {
        tool_print_fleet_table(svg_to_stdout(&a->o) ? stderr : stdout, sc, runs, done);
        if (a->o.svg != NULL) {
            char title[160];
            snprintf(title, sizeof(title), "breaker simulate: %s (seed %llu, %u hosts)", sc->name,
                     (unsigned long long)sc->seed, sc->instances);
            bool to_stdout = strcmp(a->o.svg, "-") == 0;
            FILE *f = to_stdout ? stdout : fopen(a->o.svg, "w");
            if (f == NULL) {
                tool_error(stderr, "breaker simulate: %s: %s", a->o.svg, strerror(errno));
                rc = 1;
            } else {
                int w = tool_svg_write_fleet(f, title, runs, done);
                if ((to_stdout ? fflush(f) : fclose(f)) != 0 || w != 0) {
                    tool_error(stderr, "breaker simulate: %s: write error",
                               to_stdout ? "standard output" : a->o.svg);
                    rc = 1;
                } else if (!to_stdout) {
                    printf("\nPicture written to %s\n", a->o.svg);
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
    if (rc == 0) rc = finish_breakers("simulate", &a->o, list);
    if (rc == 0 && sc.instances > 0) {
        rc = simulate_fleet(a, &sc, list);
        tool_scenario_free(&sc);
        return rc;
    }
    if (rc == 0) rc = run_simulations(a, &sc, list, &runs);
    if (rc == 0) {
        /* With --svg -, the picture has standard output to itself. */
        print_simulations(svg_to_stdout(&a->o) ? stderr : stdout, a, &sc, &runs);
        rc = draw_simulations(a, &sc, &runs);
    }
    free_sim_runs(&runs);
    tool_scenario_free(&sc);
    return rc;
}

/* `breaker simulate`. The options (-c and -b configurations, -s, the
 * overrides) are freed here, whether or not anything ran. */
static int cmd_simulate(int argc, char **argv) {
    struct sim_args a;
    int rc = simulate_options(argc, argv, &a);
    if (rc == 0 && !a.done) rc = simulate(&a);
    options_free(&a.o);
    free(a.overrides);
    return rc;
}

/* ---- replay ---------------------------------------------------------------------*/

/* What the command line asked `breaker replay` to do. */
struct replay_args {
    struct options o;
    const char *path; /* the trace file, "-" for standard input */
    const char *name; /* the trace as the reports name it */
    bool from_stdin;
    bool fail_empty; /* --fail-empty: a trace without calls is an error */
    bool json;       /* --json: the summary as JSON instead of the reports */
    bool fail_on_flapping;
    bool max_trips_given;
    uint64_t max_trips; /* --max-trips N */
    bool done;          /* --help answered: nothing to replay */
};

/* Read the command line into `a`. @return 0 or an exit status. */
static int replay_options(int argc, char **argv, struct replay_args *a) {
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'},
        {"breaker", required_argument, NULL, 'b'},
        {"set", required_argument, NULL, 's'},
        {"svg", required_argument, NULL, OPT_SVG},
        {"fail-empty", no_argument, NULL, OPT_FAIL_EMPTY},
        {"json", no_argument, NULL, OPT_JSON},
        {"fail-on-flapping", no_argument, NULL, OPT_FAIL_ON_FLAPPING},
        {"max-trips", required_argument, NULL, OPT_MAX_TRIPS},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    memset(a, 0, sizeof(*a));
    if (options_init("replay", &a->o, argc) != 0) return 1;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":c:b:s:h", longopts, NULL)) != -1) {
        int r = common_option("replay", c, &a->o);
        if (r > 0) return r;
        if (r == 0) continue;
        if (c == 'h') {
            fputs(replay_help, stdout);
            a->done = true;
            return 0;
        }
        switch (c) {
        case OPT_FAIL_EMPTY:
            a->fail_empty = true;
            continue;
        case OPT_JSON:
            a->json = true;
            continue;
        case OPT_FAIL_ON_FLAPPING:
            a->fail_on_flapping = true;
            continue;
        case OPT_MAX_TRIPS:
            if (!tool_parse_uint(optarg, 0, UINT32_MAX, &a->max_trips))
                return tool_usage_error("replay",
                                        "--max-trips: bad value '%s': expected a whole number of "
                                        "trips such as 0 or 3",
                                        optarg);
            a->max_trips_given = true;
            continue;
        default:
            return tool_option_error("replay", c, argv, longopts);
        }
    }
    if (a->json && svg_to_stdout(&a->o))
        return tool_usage_error("replay", "--json and --svg - would both write to standard output");
    if (argc - optind != 1) return tool_usage_error("replay", "expected one trace file (or -)");
    a->path = argv[optind];
    a->from_stdin = strcmp(a->path, "-") == 0;
    a->name = a->from_stdin ? "(stdin)" : a->path;
    return 0;
}

/* The configurations to replay: those of -c and -b, or without either the
 * library's defaults, each with every --set and validated before any trace
 * is read. @return 0 or an exit status. */
static int replay_breakers(struct options *o) {
    if (!o->have_breakers && tool_breakers_get(&o->breakers, "defaults") == NULL) return 1;
    if (o->breakers.count == 0) {
        tool_error(stderr, "breaker replay: no [breaker NAME] section in the -c files");
        return 1;
    }
    return finish_breakers("replay", o, &o->breakers);
}

/* The whole trace, read before any replay because calls are replayed in
 * start order, not file order. Malformed lines are reported on standard
 * error and skipped, not fatal. @return 0 or an exit status. */
static int read_trace(const struct replay_args *a, struct tool_trace *trace) {
    FILE *in = a->from_stdin ? stdin : fopen(a->path, "r");
    if (in == NULL) {
        tool_error(stderr, "breaker replay: %s: %s", a->path, strerror(errno));
        return 1;
    }
    char msg[TOOL_MSG_MAX];
    int rc = tool_trace_read(in, a->name, stderr, trace, msg, sizeof(msg));
    if (!a->from_stdin) fclose(in);
    if (rc != 0) {
        tool_error(stderr, "breaker replay: %s", msg);
        return 1;
    }
    return 0;
}

/* One line on what was read, so that the reports' times (from the first
 * call) and any skipped lines are explained before them. */
static void print_trace_summary(FILE *out, const char *name, const struct tool_trace *trace) {
    fprintf(out, "Trace %s: %zu calls", name, trace->count);
    if (trace->count > 0) {
        char span[32];
        uint64_t last = 0;
        for (size_t i = 0; i < trace->count; i++)
            if (trace->calls[i].start_ns > last) last = trace->calls[i].start_ns;
        fprintf(out, " over %s", tool_format_duration(last - trace->origin_ns, span, sizeof(span)));
    }
    if (trace->bad_lines > 0)
        fprintf(out, ", %zu malformed lines skipped (listed on standard error)", trace->bad_lines);
    fprintf(out, "; times are from the first call\n\n");
}

/* The replays' results; the first `done` are filled and must be freed. */
struct replay_runs {
    struct tool_replay_result *results;
    size_t count, done;
};

/* Replay the trace through each configuration and print its report to
 * `out` (NULL: none) as soon as it is done; a failed replay stops there,
 * after the reports before it. @return 0 or an exit status. */
static int replay_each(FILE *out, const struct tool_trace *trace, const struct tool_breakers *list,
                       struct replay_runs *runs) {
    runs->count = list->count;
    runs->results = calloc(runs->count, sizeof(*runs->results));
    if (runs->results == NULL) return out_of_memory("replay");
    char msg[TOOL_MSG_MAX];
    for (size_t i = 0; i < runs->count; i++) {
        if (tool_replay(trace, &list->items[i], &runs->results[i], msg, sizeof(msg)) != 0) {
            tool_humanize_ns(msg, sizeof(msg));
            tool_error(stderr, "breaker replay: %s", msg);
            return 1;
        }
        runs->done++;
        if (out != NULL) tool_print_replay(out, trace, &list->items[i], &runs->results[i]);
    }
    return 0;
}

/* With --svg, the replays' timelines as one picture. @return 0 or an exit
 * status. */
static int draw_replays(const struct replay_args *a, const struct replay_runs *runs) {
    if (a->o.svg == NULL) return 0;
    const struct tool_timeline **tls = calloc(runs->count, sizeof(*tls));
    if (tls == NULL) return out_of_memory("replay");
    for (size_t i = 0; i < runs->count; i++)
        tls[i] = &runs->results[i].timeline;
    char title[160];
    snprintf(title, sizeof(title), "breaker replay: %s", a->name);
    int rc = write_svg("replay", a->o.svg, title, tls, runs->count);
    free(tls);
    return rc;
}

/* --fail-on-flapping and --max-trips: say on standard error which
 * configurations fail them. @return true if one does. */
static bool replay_gate(const struct replay_args *a, const struct replay_runs *runs) {
    bool failed = false;
    char window[32];
    tool_format_duration(TOOL_FLAP_WINDOW_NS, window, sizeof(window));
    for (size_t i = 0; i < runs->done; i++) {
        const struct tool_replay_result *r = &runs->results[i];
        if (a->fail_on_flapping && tool_replay_flapping(r)) {
            tool_error(stderr,
                       "breaker replay: %s: flapping: closed and tripped again within %s %" PRIu64
                       " times (--fail-on-flapping)",
                       r->name, window, r->flaps);
            failed = true;
        }
        uint64_t trips = tool_replay_trips(r);
        if (a->max_trips_given && trips > a->max_trips) {
            tool_error(stderr,
                       "breaker replay: %s: tripped %" PRIu64
                       " times, more than --max-trips %" PRIu64,
                       r->name, trips, a->max_trips);
            failed = true;
        }
    }
    return failed;
}

static void free_replay_runs(struct replay_runs *runs) {
    for (size_t i = 0; i < runs->done; i++)
        tool_replay_result_free(&runs->results[i]);
    free(runs->results);
}

/* Everything after the command line: a separate step so that --help, which
 * answers while it is read, skips all of it. */
static int replay_trace(struct replay_args *a) {
    struct tool_trace trace;
    memset(&trace, 0, sizeof(trace));
    struct replay_runs runs;
    memset(&runs, 0, sizeof(runs));
    int rc = replay_breakers(&a->o);
    if (rc == 0) rc = read_trace(a, &trace);
    /* A trace without calls replays to nothing, which says nothing about
     * the configurations: say so (an error with --fail-empty). */
    if (rc == 0 && trace.count == 0)
        tool_error(stderr, "breaker replay: %s%s: no calls in the trace",
                   a->fail_empty ? "" : "warning: ", a->name);
    /* The reports go to standard output, unless the JSON summary or the
     * picture (--svg -) has it. */
    FILE *out = a->json ? NULL : svg_to_stdout(&a->o) ? stderr : stdout;
    if (rc == 0) {
        if (out != NULL) print_trace_summary(out, a->name, &trace);
        rc = replay_each(out, &trace, &a->o.breakers, &runs);
    }
    if (rc == 0 && a->json)
        tool_print_replay_json(stdout, a->name, &trace, &a->o.breakers, runs.results, runs.count);
    if (rc == 0) rc = draw_replays(a, &runs);
    bool gate_failed = rc == 0 && replay_gate(a, &runs);
    free_replay_runs(&runs);
    /* Malformed lines fail the command, after the report on the others; so
     * does an empty trace with --fail-empty. They say the trace is not to be
     * trusted, so they come before a failed gate. */
    if (rc == 0 && (trace.bad_lines > 0 || (a->fail_empty && trace.count == 0))) rc = 1;
    if (rc == 0 && gate_failed) rc = EXIT_GATE;
    tool_trace_free(&trace);
    return rc;
}

/* `breaker replay`. The options (-c and -b configurations, -s) are freed
 * here, whether or not anything was replayed. */
static int cmd_replay(int argc, char **argv) {
    struct replay_args a;
    int rc = replay_options(argc, argv, &a);
    if (rc == 0 && !a.done) rc = replay_trace(&a);
    options_free(&a.o);
    return rc;
}

/* `breaker frobnicate`: say so, with the closest command or option if it
 * looks like a typo of one, and the help. @return EXIT_USAGE. */
static int unknown_command(const char *cmd) {
    static const char *const commands[] = {"simulate", "replay", "keys", "help",  "exec",
                                           "status",   "ls",     "open", "close", "reset"};
    static const char *const options[] = {"--help", "--version"};
    bool option = cmd[0] == '-';
    const char *guess = option
                            ? tool_suggest(cmd, options, 2)
                            : tool_suggest(cmd, commands, sizeof(commands) / sizeof(commands[0]));
    const char *what = option ? "option" : "command";
    if (guess != NULL) {
        tool_error(stderr, "breaker: unknown %s '%s'; did you mean '%s'?", what, cmd, guess);
    } else {
        tool_error(stderr, "breaker: unknown %s '%s'", what, cmd);
    }
    fprintf(stderr, "\n%s", main_help);
    return EXIT_USAGE;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fputs(main_help, stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0) {
        fputs(main_help, stdout);
        return 0;
    }
    if (strcmp(cmd, "-V") == 0 || strcmp(cmd, "--version") == 0) {
        printf("breaker %s\n", breaker_version_string());
        return 0;
    }
    if (strcmp(cmd, "help") == 0) {
        const char *topic = argc > 2 ? argv[2] : "";
        fputs(strcmp(topic, "simulate") == 0 ? simulate_help
              : strcmp(topic, "replay") == 0 ? replay_help
              : strcmp(topic, "keys") == 0   ? keys_help
              : strcmp(topic, "exec") == 0   ? tool_exec_help
              : strcmp(topic, "status") == 0 ? tool_status_help
              : strcmp(topic, "ls") == 0     ? tool_ls_help
              : strcmp(topic, "open") == 0 || strcmp(topic, "close") == 0 ||
                      strcmp(topic, "reset") == 0
                  ? tool_force_help
                  : main_help,
              stdout);
        return 0;
    }
    if (strcmp(cmd, "keys") == 0) {
        fputs(keys_help, stdout);
        return 0;
    }
    if (strcmp(cmd, "simulate") == 0) return cmd_simulate(argc - 1, argv + 1);
    if (strcmp(cmd, "replay") == 0) return cmd_replay(argc - 1, argv + 1);
    if (strcmp(cmd, "exec") == 0) return tool_cmd_exec(argc - 1, argv + 1);
    if (strcmp(cmd, "status") == 0) return tool_cmd_status(argc - 1, argv + 1);
    if (strcmp(cmd, "ls") == 0) return tool_cmd_ls(argc - 1, argv + 1);
    if (strcmp(cmd, "open") == 0 || strcmp(cmd, "close") == 0 || strcmp(cmd, "reset") == 0)
        return tool_cmd_force(argc - 1, argv + 1);
    return unknown_command(cmd);
}
