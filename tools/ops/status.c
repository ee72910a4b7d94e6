/* SPDX-License-Identifier: MIT */
/*
 * status.c - `breaker status [NAME] [--json|--prometheus|--watch]`: the
 * state and counters of a store's breakers, as a table, JSON or the
 * Prometheus text format, or, with --watch, a line per change.
 */
#include "ops/commands.h"
#include "ops/ops.h"

#include <breaker/registry.h> /* breaker_store_export_prometheus() */
#include <breaker/store.h>    /* breaker_store_last_control() */

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WATCH_INTERVAL_NS TOOL_SEC /* status --watch polls the store this often */

const char tool_status_help[] =
    "usage: breaker status [NAME] [options]\n"
    "\n"
    "Shows each breaker of the store (or NAME): state, generation, how long\n"
    "until a call is allowed when it is open, calls admitted, successes,\n"
    "failures, calls rejected and transitions. The store is never created.\n" TOOL_STORE_PATH_HELP
    "\n"
    "With --watch it goes on to print a line each time a breaker's state or\n"
    "generation changes (polling the store every --interval), until SIGINT,\n"
    "SIGTERM or SIGHUP (exit 0) or --count lines:\n"
    "  TIME NAME FROM -> TO generation G [(N transitions)]\n"
    "TIME is UTC (2026-12-01T03:10:00.123Z); FROM is 'new' for a breaker created\n"
    "meanwhile; N is said when several transitions fell between two polls.\n"
    "\n"
    "options:\n"
    "      --store PATH    the store file\n"
    "      --json          print a JSON array of objects (docs/cli.md lists the keys)\n"
    "      --prometheus    print the Prometheus text format (the library's metric\n"
    "                      names; docs/cli.md lists the families)\n"
    "      --watch         keep printing changes (see above)\n"
    "      --interval D    --watch: poll every D (default 1s)\n"
    "      --count N       --watch: stop after N change lines\n"
    "      --redis ADDR      the fleet store's names instead (see below), on the\n"
    "                        Redis at ADDR: HOST[:PORT], [IPV6][:PORT] or unix:PATH\n"
    "      --redis-cluster SEEDS\n"
    "                        the same, on a Redis Cluster (HOST[:PORT],...)\n"
    "      --redis-sentinel SENTINELS\n"
    "                        the same, on the master the Sentinels watch as\n"
    "      --redis-master MASTER\n"
    "                        (both or neither)\n" EXEC_FLEET_OPTIONS_HELP
    "  -h, --help          show this text\n"
    "\n"
    "With --redis it shows the fleet store's names as Redis holds them, and\n"
    "writes nothing there: each name's fleet state, generation, open wait left,\n"
    "probe leases out, hosts whose flush reached Redis within the keys' TTL and\n"
    "the age of the latest flush, then below the table the last operator order,\n"
    "shadow mode and a live change of the limits; --json and --prometheus as\n"
    "above (docs/redis-production.md lists the keys and families), not --watch.\n"
    "Exit 69 when Redis cannot be reached, 78 when it refuses the configuration,\n"
    "66 for a NAME it holds no state of.\n";

/* One breaker as the table and JSON show it, read at one moment. */
typedef struct {
    const char *name;
    breaker_stats s;           /* breaker_stats_get() */
    uint64_t retry_ns;         /* breaker_retry_after_ns() */
    breaker_store_control ctl; /* breaker_store_last_control(): action NONE if none */
} status_row;

static uint64_t rejected(const breaker_stats *s) {
    return s->rejected_open + s->rejected_half_open + s->rejected_forced + s->rejected_ramp;
}

/* Calls shadow mode let through that the breaker would have refused. */
static uint64_t would_reject(const breaker_stats *s) {
    return s->would_reject_open + s->would_reject_half_open + s->would_reject_forced +
           s->would_reject_ramp;
}

/* "2026-12-01T03:10:00Z": CLOCK_REALTIME ns `ns` in UTC, to the second. */
static void utc_time(uint64_t ns, char *buf, size_t len) {
    time_t sec = (time_t)(ns / TOOL_SEC);
    struct tm tm;
    if (gmtime_r(&sec, &tm) == NULL || strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(buf, len, "?");
}

/* The last operator control (breaker_store_last_control()) as JSON: an
 * object with `at` and `until` in UTC (until null when it has no end), or
 * null when none is recorded. */
static void print_json_control(const breaker_store_control *c) {
    if (c->action == BREAKER_STORE_CONTROL_NONE) {
        printf("null");
        return;
    }
    char at[40], until[40];
    utc_time(c->at_ns, at, sizeof(at));
    printf("{\"action\": \"%s\", \"who\": ", c->action_name);
    tool_json_string(stdout, c->who);
    printf(", \"why\": ");
    tool_json_string(stdout, c->why);
    printf(", \"at\": \"%s\", \"until\": ", at);
    if (c->until_ns != 0) {
        utc_time(c->until_ns, until, sizeof(until));
        printf("\"%s\"", until);
    } else {
        printf("null");
    }
    printf(", \"generation\": %" PRIu64 "}", c->generation);
}

/* The last operator control as a line below the table:
 * "api: forced_open since 2026-12-03T07:01:02Z by alice@web1: maintenance
 * (generation 3)"; a timed one says "until", a reset "at". */
static void print_text_control(const char *name, const breaker_store_control *c) {
    if (c->action == BREAKER_STORE_CONTROL_NONE) return;
    char at[40], until[40];
    utc_time(c->at_ns, at, sizeof(at));
    printf("%s: %s %s %s", name, c->action_name,
           c->action == BREAKER_STORE_CONTROL_RESET ? "at" : "since", at);
    if (c->until_ns != 0) {
        utc_time(c->until_ns, until, sizeof(until));
        printf(" until %s", until);
    }
    /* Text from the file, which any process of the host (or a damaged
     * file) may have written: escaped, never a raw control byte on the
     * terminal (the library admits bytes a terminal may still act on). */
    char text[4 * BREAKER_WHY_MAX + 1];
    if (c->who[0] != '\0') {
        tool_escape(text, sizeof(text), c->who);
        printf(" by %s", text);
    }
    if (c->why[0] != '\0') {
        tool_escape(text, sizeof(text), c->why);
        printf(": %s", text);
    }
    printf(" (generation %" PRIu64 ")\n", c->generation);
}

static void print_json_row(const status_row *r, bool last) {
    printf("  {\"name\": ");
    tool_json_string(stdout, r->name);
    printf(", \"state\": \"%s\", \"generation\": %" PRIu64 ", \"retry_after_ns\": ",
           breaker_state_name(r->s.state), r->s.generation);
    if (r->retry_ns == UINT64_MAX) {
        printf("null");
    } else {
        printf("%" PRIu64, r->retry_ns);
    }
    /* The last control before shadow and would_reject, which stay last:
     * scripts match '"would_reject": N}'. */
    printf(", \"admitted\": %" PRIu64 ", \"successes\": %" PRIu64 ", \"failures\": %" PRIu64
           ", \"ignored\": %" PRIu64 ", \"rejected\": %" PRIu64 ", \"transitions\": %" PRIu64
           ", \"last_control\": ",
           r->s.admitted, r->s.successes, r->s.failures, r->s.ignored, rejected(&r->s),
           r->s.transitions);
    print_json_control(&r->ctl);
    printf(", \"shadow\": %s, \"would_reject\": %" PRIu64 "}%s\n", r->s.shadow ? "true" : "false",
           would_reject(&r->s), last ? "" : ",");
}

static void print_text_row(const status_row *r, int width) {
    char retry[32] = "-";
    if (r->s.state == BREAKER_FORCED_OPEN) {
        snprintf(retry, sizeof(retry), "until reset");
    } else if (r->s.state != BREAKER_CLOSED && r->s.state != BREAKER_FORCED_CLOSED &&
               r->retry_ns > 0) {
        tool_format_duration(r->retry_ns, retry, sizeof(retry));
    }
    printf("%-*s  %-13s %10" PRIu64 "  %-11s %9" PRIu64 " %9" PRIu64 " %9" PRIu64 " %9" PRIu64
           " %11" PRIu64 "\n",
           width, r->name, breaker_state_name(r->s.state), r->s.generation, retry, r->s.admitted,
           r->s.successes, r->s.failures, rejected(&r->s), r->s.transitions);
}

/* Read everything status shows of `b` at one moment. */
static void row_read(breaker *b, const char *name, status_row *r) {
    memset(r, 0, sizeof(*r));
    r->name = name;
    (void)breaker_stats_get(b, &r->s); /* applies a hung probe's timeout first */
    r->retry_ns = breaker_retry_after_ns(b);
}

/* Read one breaker's row. @return 0 or an exit status. */
static int read_row(breaker_store *st, const char *name, status_row *r) {
    breaker *b;
    int rc = tool_attach_existing("status", st, name, &b);
    if (rc != 0) return rc;
    row_read(b, name, r);
    breaker_destroy(b);
    /* No record, or a name gone meanwhile: action NONE (nothing shown). */
    if (breaker_store_last_control(st, name, &r->ctl, NULL, 0) != BREAKER_OK)
        r->ctl.action = BREAKER_STORE_CONTROL_NONE;
    return 0;
}

/* The rows as text (a table, after the store's path: which file was read,
 * since a cron job and a shell may not agree on it) or JSON. */
static void print_rows(const status_row *rows, size_t count, bool json, const char *path) {
    if (json) {
        printf("[\n");
        for (size_t i = 0; i < count; i++)
            print_json_row(&rows[i], i + 1 == count);
        printf("]\n");
        return;
    }
    int width = 4;
    for (size_t i = 0; i < count; i++) {
        size_t len = strlen(rows[i].name);
        if (len > (size_t)width) width = len > 64 ? 64 : (int)len;
    }
    tool_error(stdout, "Store %s", path);
    printf("%-*s  %-13s %10s  %-11s %9s %9s %9s %9s %11s\n", width, "NAME", "STATE", "GENERATION",
           "RETRY-AFTER", "ADMITTED", "SUCCESSES", "FAILURES", "REJECTED", "TRANSITIONS");
    for (size_t i = 0; i < count; i++)
        print_text_row(&rows[i], width);
    /* Shadow mode, below the table: a shadowed breaker's state is what it
     * would be, not what it enforces. */
    for (size_t i = 0; i < count; i++)
        if (rows[i].s.shadow)
            printf("%s: shadow mode: refuses nothing; would have refused %" PRIu64
                   " calls (open %" PRIu64 ", half_open %" PRIu64 ", forced %" PRIu64
                   ", ramp %" PRIu64 "), of which %" PRIu64 " succeeded and %" PRIu64 " failed\n",
                   rows[i].name, would_reject(&rows[i].s), rows[i].s.would_reject_open,
                   rows[i].s.would_reject_half_open, rows[i].s.would_reject_forced,
                   rows[i].s.would_reject_ramp, rows[i].s.shadow_successes,
                   rows[i].s.shadow_failures);
    /* Who gave the last operator's control and why, below the table too. */
    for (size_t i = 0; i < count; i++)
        print_text_control(rows[i].name, &rows[i].ctl);
}

/* Standard output must have taken it all (a metrics file on a full disk
 * must not look written). @return 0, or an exit status after saying so. */
static int check_stdout(void) {
    if (fflush(stdout) == 0 && !ferror(stdout)) return 0;
    tool_error(stderr, "breaker status: writing the output: %s", strerror(errno));
    return TOOL_EXIT_IOERR;
}

/* --prometheus: the library's export of the store (or of NAME). @return 0
 * or an exit status. */
static int print_prometheus(const struct tool_store_args *a, breaker_store *st) {
    char *text;
    size_t len;
    int rc = breaker_store_export_prometheus_alloc(st, a->name, &text, &len);
    if (rc != BREAKER_OK) {
        tool_error(stderr, "breaker status: %s", breaker_strerror(rc));
        return rc == BREAKER_ENOMEM ? TOOL_EXIT_OSERR : TOOL_EXIT_IOERR;
    }
    fwrite(text, 1, len, stdout);
    free(text);
    return check_stdout();
}

static int print_status(const struct tool_store_args *a, breaker_store *st,
                        const struct tool_names *n) {
    if (a->prometheus) return print_prometheus(a, st);
    status_row *rows = calloc(n->count + 1, sizeof(*rows));
    if (rows == NULL) return tool_out_of_memory("status");
    size_t count = 0;
    int rc = 0;
    for (size_t i = 0; i < n->count && rc == 0; i++) {
        if (a->name != NULL && strcmp(n->items[i], a->name) != 0) continue;
        rc = read_row(st, n->items[i], &rows[count++]);
    }
    if (rc == 0) print_rows(rows, count, a->json, a->path);
    free(rows);
    return rc == 0 ? check_stdout() : rc;
}

/* A watched breaker and what was last said of it. */
struct watched {
    char *name;
    breaker *b;
    enum breaker_state state;
    uint64_t generation;
};

struct watch {
    const struct tool_store_args *a;
    breaker_store *st;
    struct watched *items;
    size_t count, cap;
    uint64_t lines; /* change lines printed */
};

/* --count lines are out. */
static bool watch_done(const struct watch *w) {
    return w->a->count != 0 && w->lines >= w->a->count;
}

static void watch_free(struct watch *w) {
    for (size_t i = 0; i < w->count; i++) {
        breaker_destroy(w->items[i].b);
        free(w->items[i].name);
    }
    free(w->items);
}

static int watch_out_of_memory(void) { return tool_out_of_memory("status"); }

/* Attach `name` and remember its state and generation, read into `*row`
 * (whose name is the watch's own copy). @return 0 or an exit status. */
static int watch_add(struct watch *w, const char *name, status_row *row) {
    if (w->count == w->cap) {
        size_t cap = w->cap != 0 ? 2 * w->cap : 16;
        struct watched *items = realloc(w->items, cap * sizeof(*items));
        if (items == NULL) return watch_out_of_memory();
        w->items = items;
        w->cap = cap;
    }
    struct watched *it = &w->items[w->count];
    if ((it->name = strdup(name)) == NULL) return watch_out_of_memory();
    int rc = tool_attach_existing("status", w->st, name, &it->b);
    if (rc != 0) {
        free(it->name);
        return rc;
    }
    row_read(it->b, it->name, row);
    if (breaker_store_last_control(w->st, it->name, &row->ctl, NULL, 0) != BREAKER_OK)
        row->ctl.action = BREAKER_STORE_CONTROL_NONE;
    it->state = row->s.state;
    it->generation = row->s.generation;
    w->count++;
    return 0;
}

/* "2026-12-01T03:10:00.123Z", the wall clock in UTC. */
static void utc_now(char *buf, size_t len) {
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, len - n, ".%03ldZ", ts.tv_nsec / 1000000L);
}

/* One change line (the format of the help text). */
static void watch_line(const char *name, const char *from, enum breaker_state to, uint64_t gen,
                       uint64_t steps) {
    char when[40];
    utc_now(when, sizeof(when));
    printf("%s %s %s -> %s generation %" PRIu64, when, name, from, breaker_state_name(to), gen);
    if (steps > 1) printf(" (%" PRIu64 " transitions)", steps);
    printf("\n");
    fflush(stdout);
}

/* Compare a watched breaker with what was last said of it. */
static void watch_poll_one(struct watch *w, struct watched *it) {
    breaker_stats s;
    (void)breaker_stats_get(it->b, &s); /* state and generation from one word */
    if (s.state == it->state && s.generation == it->generation) return;
    uint64_t steps = s.generation > it->generation ? s.generation - it->generation : 0;
    watch_line(it->name, breaker_state_name(it->state), s.state, s.generation, steps);
    it->state = s.state;
    it->generation = s.generation;
    w->lines++;
}

/* Breakers created since the last poll (without NAME): the store lists
 * names in creation order, so the new ones follow the known ones.
 * @return 0 or an exit status. */
static int watch_new_names(struct watch *w) {
    struct tool_names n;
    int rc = tool_list_names("status", w->st, &n);
    if (rc != 0) return rc;
    for (size_t i = w->count; i < n.count && rc == 0; i++) {
        if (watch_done(w)) break;
        status_row row;
        if ((rc = watch_add(w, n.items[i], &row)) != 0) break;
        watch_line(row.name, "new", row.s.state, row.s.generation, 0);
        w->lines++;
    }
    tool_names_free(&n);
    return rc;
}

/* One look at the store. @return 0 or an exit status. */
static int watch_poll(struct watch *w) {
    for (size_t i = 0; i < w->count && !watch_done(w); i++)
        watch_poll_one(w, &w->items[i]);
    if (w->a->name == NULL && !watch_done(w)) {
        int rc = watch_new_names(w);
        if (rc != 0) return rc;
    }
    return check_stdout();
}

/* SIGINT, SIGTERM and SIGHUP, blocked, into `set`: the watch takes them
 * between polls with sigtimedwait(), so that its output is never cut in
 * the middle of a line. Each gets a handler too, as an ignored signal (a
 * background job's SIGINT) could be discarded rather than left pending.
 * @return 0, or 1 after saying why. */
static int block_stop_signals(sigset_t *set) {
    static const int stops[] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = tool_on_signal;
    sigemptyset(&sa.sa_mask);
    sigemptyset(set);
    for (size_t i = 0; i < sizeof(stops) / sizeof(stops[0]); i++) {
        sigaddset(set, stops[i]);
        if (sigaction(stops[i], &sa, NULL) != 0) goto fail;
    }
    if (sigprocmask(SIG_BLOCK, set, NULL) == 0) return 0;
fail:
    tool_error(stderr, "breaker status: %s", strerror(errno));
    return TOOL_EXIT_OSERR;
}

/* The table, then a line per change until a stop signal or --count.
 * @return the exit status. */
static int watch_run(const struct tool_store_args *a, breaker_store *st,
                     const struct tool_names *n) {
    sigset_t set;
    int rc = block_stop_signals(&set);
    if (rc != 0) return rc;
    struct watch w = {.a = a, .st = st};
    status_row *rows = calloc(n->count + 1, sizeof(*rows));
    if (rows == NULL) rc = watch_out_of_memory();
    size_t count = 0;
    for (size_t i = 0; i < n->count && rc == 0; i++)
        if (a->name == NULL || strcmp(n->items[i], a->name) == 0)
            rc = watch_add(&w, n->items[i], &rows[count++]);
    if (rc == 0) {
        print_rows(rows, count, false, a->path);
        rc = check_stdout();
    }
    free(rows);
    uint64_t interval = a->interval_ns != 0 ? a->interval_ns : WATCH_INTERVAL_NS;
    while (rc == 0 && !watch_done(&w)) {
        int sig = tool_wait_signal(&set, tool_add_ns(tool_now_ns(), interval));
        if (sig > 0) break; /* asked to stop: a clean exit */
        if (sig < 0) {
            tool_error(stderr, "breaker status: %s", strerror(errno));
            rc = TOOL_EXIT_OSERR;
        } else {
            rc = watch_poll(&w);
        }
    }
    watch_free(&w);
    return rc;
}

/* --json, --prometheus and --watch: one output form at most, and --watch's
 * own options only with it. @return 0 or an exit status. */
static int check_forms(const struct tool_store_args *a) {
    if (a->json && a->prometheus)
        return tool_usage_error("status", "--json and --prometheus: choose one");
    if (a->watch && (a->json || a->prometheus))
        return tool_usage_error("status", "--watch prints text: not with --%s",
                                a->json ? "json" : "prometheus");
    if (!a->watch && (a->interval_ns != 0 || a->count != 0))
        return tool_usage_error("status", "--%s needs --watch",
                                a->interval_ns != 0 ? "interval" : "count");
    return 0;
}

int tool_cmd_status(int argc, char **argv) {
    struct tool_store_args a;
    int rc = tool_store_options("status", tool_status_help, true, 0, 1, argc, argv, &a);
    if (rc == 0 && !a.done) rc = check_forms(&a);
    if (rc != 0 || a.done) return rc;
    breaker_store *st;
    struct tool_names n;
    if (a.fleet.addr != NULL) {
        if (a.watch) return tool_usage_error("status", "--watch: a store file's only, not --redis");
        return exec_fleet_status(&a.fleet, a.name, a.json, a.prometheus);
    }
    if ((rc = tool_open_existing("status", &a, &st, &n)) != 0) return rc;
    rc = a.watch ? watch_run(&a, st, &n) : print_status(&a, st, &n);
    tool_names_free(&n);
    breaker_store_close(st);
    return rc;
}
