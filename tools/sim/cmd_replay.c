/* SPDX-License-Identifier: MIT */
/*
 * cmd_replay.c - `breaker replay [options] TRACE.csv`: the command line of
 * the replay (replay.c), its reports, JSON summary, picture and gates.
 *
 * Exit statuses: cli/cli.h's, as breaker(1) lists them; malformed trace
 * lines, or with --fail-empty no calls at all, are TOOL_EXIT_DATA after the
 * report; a configuration that fails --fail-on-flapping or --max-trips is
 * TOOL_EXIT_GATE (3).
 */
#include "sim/commands.h"
#include "sim/replay.h"
#include "sim/report.h"

#include "cli/cli.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

enum {
    OPT_SVG = 256,
    OPT_FAIL_EMPTY,
    OPT_JSON,
    OPT_FAIL_ON_FLAPPING,
    OPT_MAX_TRIPS,
};

const char tool_replay_help[] =
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
    "client | caller | source | tenant (the caller, for min_failing_sources; with\n"
    "_key, as client_key, the source keys themselves), and would_reject (a shadow\n"
    "log: what the shadow breaker would have refused, none | open | half_open |\n"
    "forced_open | ramp | yes; each configuration is then compared with it call\n"
    "by call).\n"
    "Any other name or unit is refused. CSV as RFC 4180 (quotes, commas in\n"
    "quotes, \"\" for a quote), CRLF and a UTF-8 BOM are fine. Blank lines and\n"
    "lines starting with # are skipped. A malformed line is reported as\n"
    "FILE:LINE: on standard error and skipped; the rest is replayed, and the exit\n"
    "status is 65.\n"
    "\n"
    "options:\n"
    "  -c, --config FILE     use the [breaker NAME] sections of FILE (repeatable)\n"
    "  -b, --breaker SPEC    use the configuration 'NAME:key=value,key=value'\n"
    "                        (repeatable; without either: the library's defaults)\n"
    "  -s, --set KEY=VALUE   set a breaker key in every configuration (repeatable)\n"
    "      --svg FILE        also write the timelines as an SVG picture (- writes\n"
    "                        it to standard output, the reports to standard error)\n"
    "      --json            print the summary as JSON (docs/cli.md lists the keys)\n"
    "      --fail-empty      exit 65 if the trace has no calls (else a warning)\n"
    "      --fail-on-flapping  exit 3 if a configuration flaps\n"
    "      --max-trips N     exit 3 if a configuration trips more than N times\n"
    "  -h, --help            show this text\n"
    "\n"
    "example:\n"
    "  breaker replay -b 'strict:trip=consecutive,failure_threshold=3,open=5s' \\\n"
    "                 -b 'lenient:window=30s,failure_rate=60%' calls.csv\n";

/* What the command line asked `breaker replay` to do. */
struct replay_args {
    struct tool_options o;
    const char *svg;  /* --svg FILE, NULL: none */
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
    int rc = tool_options_init("replay", &a->o, argc);
    if (rc != 0) return rc;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":c:b:s:h", longopts, NULL)) != -1) {
        int r = tool_common_option("replay", c, &a->o);
        if (r > 0) return r;
        if (r == 0) continue;
        if (c == 'h') {
            fputs(tool_replay_help, stdout);
            a->done = true;
            return 0;
        }
        switch (c) {
        case OPT_SVG:
            a->svg = optarg;
            continue;
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
    if (a->json && tool_svg_is_stdout(a->svg))
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
static int replay_breakers(struct tool_options *o) {
    if (!o->have_breakers && tool_breakers_get(&o->breakers, "defaults") == NULL)
        return tool_out_of_memory("replay");
    if (o->breakers.count == 0) {
        tool_error(stderr, "breaker replay: no [breaker NAME] section in the -c files");
        return TOOL_EXIT_CONFIG;
    }
    int rc = tool_finish_breakers("replay", o, &o->breakers);
    for (size_t i = 0; rc == 0 && i < o->breakers.count; i++) {
        /* A replay refuses nothing for real already: it says what each
         * configuration would refuse, which shadow mode would hide. */
        if (o->breakers.items[i].shadow) {
            tool_error(stderr,
                       "breaker replay: breaker '%s': shadow = yes: a replay already refuses "
                       "nothing for real and reports what the configuration would refuse; "
                       "remove the key (to compare with a shadow log, give the trace a "
                       "would_reject column)",
                       o->breakers.items[i].name);
            rc = TOOL_EXIT_CONFIG;
        }
    }
    return rc;
}

/* The whole trace, read before any replay because calls are replayed in
 * start order, not file order. Malformed lines are reported on standard
 * error and skipped, not fatal. @return 0 or an exit status. */
static int read_trace(const struct replay_args *a, struct tool_trace *trace) {
    FILE *in = a->from_stdin ? stdin : fopen(a->path, "r");
    if (in == NULL) {
        tool_error(stderr, "breaker replay: %s: %s", a->path, strerror(errno));
        return TOOL_EXIT_NOINPUT;
    }
    char msg[TOOL_MSG_MAX];
    int rc = tool_trace_read(in, a->name, stderr, trace, msg, sizeof(msg));
    if (!a->from_stdin) fclose(in);
    if (rc != 0) { /* a header it cannot honour, or an input it cannot read */
        tool_error(stderr, "breaker replay: %s", msg);
        return rc == -2 ? TOOL_EXIT_NOINPUT : TOOL_EXIT_DATA;
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
    fprintf(out, "; times are from the first call\n");
    tool_print_shadow_trace(out, trace);
    fputc('\n', out);
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
    if (runs->results == NULL) return tool_out_of_memory("replay");
    char msg[TOOL_MSG_MAX];
    for (size_t i = 0; i < runs->count; i++) {
        if (tool_replay(trace, &list->items[i], &runs->results[i], msg, sizeof(msg)) != 0) {
            tool_humanize_ns(msg, sizeof(msg));
            tool_error(stderr, "breaker replay: %s", msg);
            return TOOL_EXIT_OSERR;
        }
        runs->done++;
        if (out != NULL) tool_print_replay(out, trace, &list->items[i], &runs->results[i]);
    }
    return 0;
}

/* With --svg, the replays' timelines as one picture. @return 0 or an exit
 * status. */
static int draw_replays(const struct replay_args *a, const struct replay_runs *runs) {
    if (a->svg == NULL) return 0;
    const struct tool_timeline **tls = calloc(runs->count, sizeof(*tls));
    if (tls == NULL) return tool_out_of_memory("replay");
    for (size_t i = 0; i < runs->count; i++)
        tls[i] = &runs->results[i].timeline;
    char title[160];
    snprintf(title, sizeof(title), "breaker replay: %s", a->name);
    int rc = tool_svg_write_file("replay", a->svg, title, tls, runs->count);
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
    FILE *out = a->json ? NULL : tool_svg_is_stdout(a->svg) ? stderr : stdout;
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
    if (rc == 0 && (trace.bad_lines > 0 || (a->fail_empty && trace.count == 0)))
        rc = TOOL_EXIT_DATA;
    if (rc == 0 && gate_failed) rc = TOOL_EXIT_GATE;
    tool_trace_free(&trace);
    return rc;
}

/* `breaker replay`. The options (-c and -b configurations, -s) are freed
 * here, whether or not anything was replayed. */
int tool_cmd_replay(int argc, char **argv) {
    struct replay_args a;
    int rc = replay_options(argc, argv, &a);
    if (rc == 0 && !a.done) rc = replay_trace(&a);
    tool_options_free(&a.o);
    return rc;
}
