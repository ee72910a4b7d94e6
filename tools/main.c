/*
 * main.c - the `breaker` command: "what would this configuration have done?"
 *
 *   breaker simulate [options] [SCENARIO.ini]
 *   breaker replay [options] TRACE.csv
 *
 * Exit status: 0 success; 1 an error (bad file, invalid configuration) or,
 * for replay, malformed trace lines (the report is still printed); 2 a
 * usage error.
 */
#include "tool.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_USAGE 2

static const char main_help[] =
    "usage: breaker <command> [options]\n"
    "\n"
    "Answers \"what would this circuit breaker configuration have done?\" by running\n"
    "the real libbreaker on a virtual clock, before production does.\n"
    "\n"
    "commands:\n"
    "  simulate   simulate an outage (a built-in one by default) without a breaker\n"
    "             and with one or more configurations, and compare them\n"
    "  replay     feed a CSV trace of real calls through one or more configurations\n"
    "             and report every transition with its evidence\n"
    "  keys       list the breaker configuration keys and what they accept\n"
    "  help       show this text, or `breaker help COMMAND` for a command's\n"
    "\n"
    "options:\n"
    "  -h, --help     show this text\n"
    "  -V, --version  print the library version\n"
    "\n"
    "Breaker configurations come from INI files ([breaker NAME] sections of\n"
    "key = value lines) or from the command line (-b 'NAME:key=value,...');\n"
    "`breaker keys` lists the keys. Manual: docs/cli.md.\n";

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
    "      --duration D      override the scenario's length (e.g. 10m)\n"
    "      --workers N       override the worker pool size\n"
    "      --rate R          override the requests per second\n"
    "      --timeout D       override the per-call timeout (e.g. 1s)\n"
    "      --no-baseline     skip the run without a breaker\n"
    "      --events          also list every transition of every run, with evidence\n"
    "      --svg FILE        also write the runs' timelines as an SVG picture\n"
    "      --print-scenario  print the built-in scenario (an INI file to copy and\n"
    "                        edit) and exit\n"
    "  -h, --help            show this text\n"
    "\n"
    "Scenario files: [scenario] (name, description, duration, seed, workers, rate,\n"
    "timeout, latency, latency_p99), then [phase NAME] sections in order (kind =\n"
    "healthy | down | errors | slow | recovering, duration, latency, latency_p99,\n"
    "error_rate, down = timeout | refused, capacity, cold_latency, cold_capacity,\n"
    "knockdown), then [breaker NAME] sections. See docs/cli.md.\n"
    "\n"
    "examples:\n"
    "  breaker simulate\n"
    "  breaker simulate --svg outage.svg\n"
    "  breaker simulate -b 'fast:trip=consecutive,failure_threshold=5,open=2s'\n"
    "  breaker simulate --print-scenario > mine.ini; breaker simulate mine.ini\n";

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
    "  timestamp  when the call started: seconds (1700000000.125) or a duration\n"
    "             with a unit (12.5s, 1500ms); only differences matter\n"
    "  duration   seconds (0.250) or with a unit (250ms)\n"
    "  outcome    ok | success | failure | fail | error | timeout | ignored |\n"
    "             cancelled, an HTTP status (503; classified as breaker.h says), or\n"
    "             an errno name (ECONNREFUSED, ETIMEDOUT, ECANCELED, EINVAL, ...)\n"
    "Fields may be in double quotes. Blank lines and lines starting with # are\n"
    "skipped, as is a first line whose first field is timestamp, time, ts or start\n"
    "(a header). A malformed line is reported as FILE:LINE: on standard error and\n"
    "skipped; the rest is replayed, and the exit status is 1.\n"
    "\n"
    "options:\n"
    "  -c, --config FILE     use the [breaker NAME] sections of FILE (repeatable)\n"
    "  -b, --breaker SPEC    use the configuration 'NAME:key=value,key=value'\n"
    "                        (repeatable; without either: the library's defaults)\n"
    "  -s, --set KEY=VALUE   set a breaker key in every configuration (repeatable)\n"
    "      --svg FILE        also write the timelines as an SVG picture\n"
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
    "  open_jitter           add up to this fraction of the wait, [0,1] (0)\n"
    "  half_open_max_probes  probes in flight at once, 1..4095 (1)\n"
    "  half_open_successes   successful probes to close, 1..4095 (3)\n"
    "  probe_timeout         a probe not completed by then fails (30s)\n"
    "  cancelled_as          ignored (default) | failure\n"
    "  seed                  jitter seed (the tool fixes it so runs repeat)\n"
    "Durations: 250ms, 5s, 1m, 1500us, 20ns, 1.5s (a bare number is ns); duration\n"
    "keys also accept a _ns suffix. Rates: 0.5 or 50%.\n";

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
};

struct options {
    struct tool_breakers breakers; /* from -c and -b */
    bool have_breakers;
    const char *sets[64];
    size_t set_count;
    const char *svg;
    int cli_count;
};

static int usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "breaker %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nTry 'breaker %s --help'.\n", cmd);
    va_end(ap);
    return EXIT_USAGE;
}

/* Handle -c, -b, -s. @return -1 if not one of them, else 0 or an exit code. */
static int common_option(const char *cmd, int c, struct options *o) {
    char msg[TOOL_MSG_MAX];
    switch (c) {
    case 'c':
        o->have_breakers = true;
        if (tool_load_ini(optarg, NULL, NULL, &o->breakers, msg, sizeof(msg)) != 0) {
            fprintf(stderr, "breaker %s: %s\n", cmd, msg);
            return 1;
        }
        return 0;
    case 'b': {
        char name[16];
        snprintf(name, sizeof(name), "cli%d", ++o->cli_count);
        o->have_breakers = true;
        if (tool_breakers_add_spec(&o->breakers, optarg, name, msg, sizeof(msg)) != 0) {
            fprintf(stderr, "breaker %s: -b %s\n", cmd, msg);
            return EXIT_USAGE;
        }
        return 0;
    }
    case 's':
        if (o->set_count == sizeof(o->sets) / sizeof(o->sets[0]))
            return usage_error(cmd, "too many --set options");
        if (strchr(optarg, '=') == NULL)
            return usage_error(cmd, "--set %s: expected KEY=VALUE", optarg);
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
            char kv[256];
            snprintf(kv, sizeof(kv), "%s", o->sets[k]);
            char *eq = strchr(kv, '=');
            *eq = '\0';
            if (tool_breaker_set(&list->items[i], tool_trim(kv), tool_trim(eq + 1), msg,
                                 sizeof(msg)) != BREAKER_OK) {
                fprintf(stderr, "breaker %s: --set %s\n", cmd, msg);
                return EXIT_USAGE;
            }
        }
        if (breaker_config_validate(&list->items[i].cfg, msg, sizeof(msg)) != BREAKER_OK) {
            fprintf(stderr, "breaker %s: breaker '%s': %s\n", cmd, list->items[i].name, msg);
            return 1;
        }
    }
    return 0;
}

/* The picture holds at most this many timelines; later runs are left out. */
#define SVG_MAX_PANELS 64

/* Write `n` timelines to `path` as one SVG picture (--svg). @return 0, or 1
 * after saying on standard error why the file could not be written. */
static int write_svg(const char *cmd, const char *path, const char *title,
                     const struct tool_timeline *const *timelines, size_t n) {
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "breaker %s: %s: %s\n", cmd, path, strerror(errno));
        return 1;
    }
    int rc = tool_svg_write(f, title, timelines, n);
    if (fclose(f) != 0 || rc != 0) {
        fprintf(stderr, "breaker %s: %s: write error\n", cmd, path);
        return 1;
    }
    return 0;
}

/* ---- simulate ------------------------------------------------------------------*/

static int override(const char *opt, const char *arg, struct tool_scenario *sc, int c) {
    uint64_t u;
    double d;
    switch (c) {
    case OPT_SEED:
        if (!tool_parse_uint(arg, 0, UINT64_MAX, &sc->seed)) break;
        return 0;
    case OPT_DURATION:
        if (!tool_parse_duration(arg, 0, &u) || u == 0) break;
        sc->duration_ns = u;
        return 0;
    case OPT_WORKERS:
        if (!tool_parse_uint(arg, 1, 100000, &u)) break;
        sc->workers = (uint32_t)u;
        return 0;
    case OPT_RATE:
        if (!tool_parse_number(arg, false, &d) || d <= 0.0 || d > 100000.0) break;
        sc->rate = d;
        return 0;
    case OPT_TIMEOUT:
        if (!tool_parse_duration(arg, 0, &u) || u == 0) break;
        sc->timeout_ns = u;
        return 0;
    default:
        break;
    }
    fprintf(stderr, "breaker simulate: --%s: bad value '%s'\n", opt, arg);
    return EXIT_USAGE;
}

static int cmd_simulate(int argc, char **argv) {
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'},
        {"breaker", required_argument, NULL, 'b'},
        {"set", required_argument, NULL, 's'},
        {"seed", required_argument, NULL, OPT_SEED},
        {"duration", required_argument, NULL, OPT_DURATION},
        {"workers", required_argument, NULL, OPT_WORKERS},
        {"rate", required_argument, NULL, OPT_RATE},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"no-baseline", no_argument, NULL, OPT_NO_BASELINE},
        {"svg", required_argument, NULL, OPT_SVG},
        {"print-scenario", no_argument, NULL, OPT_PRINT_SCENARIO},
        {"events", no_argument, NULL, OPT_EVENTS},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    struct options o;
    memset(&o, 0, sizeof(o));
    struct tool_scenario sc;
    tool_scenario_init(&sc);
    /* Overrides wait until the scenario is loaded; keep them in order. */
    struct {
        int c;
        const char *opt, *arg;
    } overrides[16];
    size_t override_count = 0;
    bool baseline = true, new_duration = false, events = false;
    int rc = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "c:b:s:h", longopts, NULL)) != -1) {
        int r = common_option("simulate", c, &o);
        if (r > 0) {
            rc = r;
            goto out;
        }
        if (r == 0) continue;
        switch (c) {
        case 'h':
            fputs(simulate_help, stdout);
            goto out;
        case OPT_PRINT_SCENARIO:
            fputs(tool_builtin_scenario, stdout);
            goto out;
        case OPT_NO_BASELINE:
            baseline = false;
            break;
        case OPT_EVENTS:
            events = true;
            break;
        case OPT_DURATION:
            new_duration = true;
            /* fall through */
        case OPT_SEED:
        case OPT_WORKERS:
        case OPT_RATE:
        case OPT_TIMEOUT:
            if (override_count < 16) {
                overrides[override_count].c = c;
                overrides[override_count].arg = optarg;
                for (const struct option *lo = longopts; lo->name; lo++)
                    if (lo->val == c) overrides[override_count].opt = lo->name;
                override_count++;
            }
            break;
        default:
            fputs("Try 'breaker simulate --help'.\n", stderr);
            rc = EXIT_USAGE;
            goto out;
        }
    }
    if (argc - optind > 1) {
        rc = usage_error("simulate", "expected at most one scenario file, got '%s' too",
                         argv[optind + 1]);
        goto out;
    }
    char msg[TOOL_MSG_MAX];
    const char *path = optind < argc ? argv[optind] : NULL;
    if (tool_load_ini(path, tool_builtin_scenario, &sc, &sc.breakers, msg, sizeof(msg)) != 0) {
        fprintf(stderr, "breaker simulate: %s\n", msg);
        rc = 1;
        goto out;
    }
    for (size_t i = 0; i < override_count; i++) {
        if ((rc = override(overrides[i].opt, overrides[i].arg, &sc, overrides[i].c)) != 0) goto out;
    }
    if (new_duration && sc.phase_count > 0) {
        /* A new duration stretches or cuts the last phase. */
        sc.phases[sc.phase_count - 1].duration_ns = 0;
    }
    if (tool_scenario_finish(&sc, msg, sizeof(msg)) != 0) {
        fprintf(stderr, "breaker simulate: %s: %s\n", path ? path : "(built-in)", msg);
        rc = 1;
        goto out;
    }
    struct tool_breakers *list = o.have_breakers ? &o.breakers : &sc.breakers;
    if ((rc = finish_breakers("simulate", &o, list)) != 0) goto out;

    size_t runs = list->count + (baseline ? 1 : 0);
    if (runs == 0) {
        rc = usage_error("simulate", "nothing to run: --no-baseline and no breaker");
        goto out;
    }
    struct tool_sim_result *results = calloc(runs ? runs : 1, sizeof(*results));
    if (results == NULL) {
        fprintf(stderr, "breaker simulate: out of memory\n");
        rc = 1;
        goto out;
    }
    size_t done = 0;
    for (size_t i = 0; i < runs; i++) {
        const struct tool_breaker *b =
            baseline ? (i == 0 ? NULL : &list->items[i - 1]) : &list->items[i];
        if (tool_simulate(&sc, b, &results[i], msg, sizeof(msg)) != 0) {
            fprintf(stderr, "breaker simulate: %s\n", msg);
            rc = 1;
            break;
        }
        done++;
    }
    if (rc == 0) {
        tool_print_sim_table(stdout, &sc, results, runs);
        for (size_t i = 0; events && i < runs; i++) {
            if (!results[i].has_breaker) continue;
            printf("\n== %s: transitions\n", results[i].name);
            tool_print_transitions(stdout, results[i].timeline.events,
                                   results[i].timeline.event_count, 0);
        }
        if (o.svg != NULL) {
            const struct tool_timeline *tls[SVG_MAX_PANELS];
            size_t n = runs < SVG_MAX_PANELS ? runs : SVG_MAX_PANELS;
            for (size_t i = 0; i < n; i++)
                tls[i] = &results[i].timeline;
            char title[160];
            snprintf(title, sizeof(title), "breaker simulate: %s (seed %llu)", sc.name,
                     (unsigned long long)sc.seed);
            rc = write_svg("simulate", o.svg, title, tls, n);
            if (rc == 0) printf("\nTimelines written to %s\n", o.svg);
        }
    }
    for (size_t i = 0; i < done; i++)
        tool_sim_result_free(&results[i]);
    free(results);
out:
    tool_breakers_free(&o.breakers);
    tool_scenario_free(&sc);
    return rc;
}

/* ---- replay ---------------------------------------------------------------------*/

static int cmd_replay(int argc, char **argv) {
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'}, {"breaker", required_argument, NULL, 'b'},
        {"set", required_argument, NULL, 's'},    {"svg", required_argument, NULL, OPT_SVG},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0}};
    struct options o;
    memset(&o, 0, sizeof(o));
    struct tool_trace trace;
    memset(&trace, 0, sizeof(trace));
    int rc = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "c:b:s:h", longopts, NULL)) != -1) {
        int r = common_option("replay", c, &o);
        if (r > 0) {
            rc = r;
            goto out;
        }
        if (r == 0) continue;
        if (c == 'h') {
            fputs(replay_help, stdout);
            goto out;
        }
        fputs("Try 'breaker replay --help'.\n", stderr);
        rc = EXIT_USAGE;
        goto out;
    }
    if (argc - optind != 1) {
        rc = usage_error("replay", "expected one trace file (or -)");
        goto out;
    }
    if (!o.have_breakers && tool_breakers_get(&o.breakers, "defaults") == NULL) {
        rc = 1;
        goto out;
    }
    if (o.breakers.count == 0) {
        fprintf(stderr, "breaker replay: no [breaker NAME] section in the -c files\n");
        rc = 1;
        goto out;
    }
    if ((rc = finish_breakers("replay", &o, &o.breakers)) != 0) goto out;

    const char *path = argv[optind];
    bool from_stdin = strcmp(path, "-") == 0;
    FILE *in = from_stdin ? stdin : fopen(path, "r");
    if (in == NULL) {
        fprintf(stderr, "breaker replay: %s: %s\n", path, strerror(errno));
        rc = 1;
        goto out;
    }
    char msg[TOOL_MSG_MAX];
    int read_rc =
        tool_trace_read(in, from_stdin ? "(stdin)" : path, stderr, &trace, msg, sizeof(msg));
    if (!from_stdin) fclose(in);
    if (read_rc != 0) {
        fprintf(stderr, "breaker replay: %s\n", msg);
        rc = 1;
        goto out;
    }
    printf("Trace %s: %zu calls", from_stdin ? "(stdin)" : path, trace.count);
    if (trace.count > 0) {
        char span[32];
        uint64_t last = 0;
        for (size_t i = 0; i < trace.count; i++)
            if (trace.calls[i].start_ns > last) last = trace.calls[i].start_ns;
        printf(" over %s", tool_format_duration(last - trace.origin_ns, span, sizeof(span)));
    }
    if (trace.bad_lines > 0)
        printf(", %zu malformed lines skipped (listed on standard error)", trace.bad_lines);
    printf("; times are from the first call\n\n");

    size_t n = o.breakers.count;
    struct tool_replay_result *results = calloc(n ? n : 1, sizeof(*results));
    if (results == NULL) {
        rc = 1;
        goto out;
    }
    size_t done = 0;
    for (size_t i = 0; i < n; i++) {
        if (tool_replay(&trace, &o.breakers.items[i], &results[i], msg, sizeof(msg)) != 0) {
            fprintf(stderr, "breaker replay: %s\n", msg);
            rc = 1;
            break;
        }
        done++;
        tool_print_replay(stdout, &trace, &o.breakers.items[i], &results[i]);
    }
    if (rc == 0 && o.svg != NULL) {
        const struct tool_timeline *tls[SVG_MAX_PANELS];
        size_t k = n < SVG_MAX_PANELS ? n : SVG_MAX_PANELS;
        for (size_t i = 0; i < k; i++)
            tls[i] = &results[i].timeline;
        char title[160];
        snprintf(title, sizeof(title), "breaker replay: %s", from_stdin ? "(stdin)" : path);
        rc = write_svg("replay", o.svg, title, tls, k);
    }
    for (size_t i = 0; i < done; i++)
        tool_replay_result_free(&results[i]);
    free(results);
    if (rc == 0 && trace.bad_lines > 0) rc = 1;
out:
    tool_trace_free(&trace);
    tool_breakers_free(&o.breakers);
    return rc;
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
    fprintf(stderr, "breaker: unknown command '%s'\n\n%s", cmd, main_help);
    return EXIT_USAGE;
}
