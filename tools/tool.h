/* SPDX-License-Identifier: MIT */
/*
 * tool.h - the parts of the `breaker` command, shared between its files and
 * its tests. Nothing here is library API.
 *
 * Files: main.c (command line, help), parse.c (numbers and durations),
 * suggest.c ("did you mean"), escape.c (user text in messages), ini_load.c (configuration and
 * scenario files, and the -b and -s options), scenario.c (the dependency model and the built-in
 * scenario), simulate.c (the discrete-event simulation), replay.c (traces), timeline.c (per-second
 * series and state history), heap.c (the event queues), fleet_server.c, fleet_model.c and
 * fleet_sim.c (the fleet scenario: the Redis scripts' logic, a model of the fleet store on it that
 * makes the Redis client's decisions through src/store/redis/protocol.c, and N hosts on it), svg.c
 * (pictures), report.c (tables and reports), store_cmds.c (exec, status, ls, open, close, reset:
 * breakers shared through a store file), store_prom.c (status --prometheus).
 */
#ifndef BREAKER_TOOL_H
#define BREAKER_TOOL_H

#include <breaker.h>

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TOOL_MS  UINT64_C(1000000)
#define TOOL_SEC (1000 * TOOL_MS)

#define TOOL_NAME_MAX      48
#define TOOL_MSG_MAX       512
#define TOOL_MAX_PHASE     32
#define TOOL_MAX_INSTANCES 1000 /* hosts of a fleet scenario */

/* ---- parse.c ---------------------------------------------------------------*/

/* A duration: digits with an optional fraction and a unit (ns, us, ms, s, m,
 * h, d); `bare_unit_ns` is the unit of a number without one. Exact.
 * @return true and *out, or false. */
bool tool_parse_duration(const char *text, uint64_t bare_unit_ns, uint64_t *out);

/* A non-negative decimal, or a percentage ("50%" = 0.5) if `percent_ok`. */
bool tool_parse_number(const char *text, bool percent_ok, double *out);

/* A whole number in [min, max]. */
bool tool_parse_uint(const char *text, uint64_t min, uint64_t max, uint64_t *out);

/* Format a duration for people: "250ms", "1.5s", "2m30s". `buf` gets it. */
const char *tool_format_duration(uint64_t ns, char *buf, size_t len);

/* Trim blanks in place at both ends; @return the trimmed start. */
char *tool_trim(char *s);

/* What every message about a bad duration says is accepted. */
#define TOOL_DURATION_FORMATS "250ms, 1.5s, 1m30s (units ns us ms s m h d)"

/* Rewrite each "<digits> ns" in `msg` (the library's validation messages
 * count in nanoseconds) as a duration for people, exactly ("10s", "1.5ms",
 * "1.000000001s"), in place. */
void tool_humanize_ns(char *msg, size_t len);

/* ---- suggest.c --------------------------------------------------------------*/

/* The candidate closest to `word` if `word` looks like a typo of it (at
 * most 2 edits, at most half its length), else NULL. */
const char *tool_suggest(const char *word, const char *const *candidates, size_t count);

/* ---- escape.c ---------------------------------------------------------------*/

/* Copy `src` into `dst` as it may be shown on a terminal: printable ASCII
 * and well-formed UTF-8 as they are, every other byte (C0 and C1 controls,
 * DEL, bytes that are not UTF-8) as \xNN. Like snprintf, the copy is cut to
 * fit `dst_len` (at a whole character or escape) and NUL-terminated.
 * @return the length of the whole escaped text. */
size_t tool_escape(char *dst, size_t dst_len, const char *src);

/* True if tool_escape() would leave `text` as it is, tabs aside: what names
 * and descriptions shown in reports and pictures may hold. */
bool tool_text_is_plain(const char *text);

/* Write a message and a newline to `out`, escaped with tool_escape(): the
 * way every message that quotes user input leaves the tool. */
void tool_error(FILE *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Write `text` as a JSON string, quotes included: control characters as
 * \u00XX, bytes that are not UTF-8 as U+FFFD, so the output is valid
 * JSON whatever a file name or a header held. */
void tool_json_string(FILE *out, const char *text);

/* ---- heap.c -------------------------------------------------------------------*/

/* Every heap item starts with this: earliest `at` first, then lowest `tie`. */
struct tool_heap_key {
    uint64_t at;
    uint64_t tie;
};

struct tool_heap {
    unsigned char *data;
    size_t n, cap, size;
};

void tool_heap_init(struct tool_heap *h, size_t item_size);
void tool_heap_free(struct tool_heap *h);
/* @return 0, or -1 when out of memory. */
int tool_heap_push(struct tool_heap *h, const void *item);
/* The earliest item, or NULL when empty. */
const void *tool_heap_top(const struct tool_heap *h);
/* Remove the earliest item into `out`; the heap must not be empty. */
void tool_heap_pop(struct tool_heap *h, void *out);

/* ---- Breaker configurations ----------------------------------------------*/

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

/* ---- Scenario ----------------------------------------------------------------*/

enum tool_phase_kind { PHASE_HEALTHY, PHASE_DOWN, PHASE_ERRORS, PHASE_SLOW, PHASE_RECOVERING };
enum tool_down_mode { DOWN_TIMEOUT, DOWN_REFUSED };

struct tool_phase {
    char name[TOOL_NAME_MAX];
    enum tool_phase_kind kind;
    uint64_t duration_ns;
    uint64_t latency_ns;      /* median answer time (at the end, when recovering) */
    uint64_t latency_p99_ns;  /* 99th percentile (same) */
    uint64_t cold_latency_ns; /* recovering: the median at the start */
    double error_rate;        /* share of answers that are errors */
    enum tool_down_mode down; /* down, and while knocked down */
    uint32_t capacity;        /* calls it can hold at once, 0 = no limit (end value) */
    uint32_t cold_capacity;   /* recovering: capacity at the start */
    uint64_t knockdown_ns;    /* how long an overload keeps it down */
    double abuser_share;      /* share of requests sent by the abusive caller, whose
                                 requests the dependency always answers with an error */
    unsigned given;           /* TOOL_GIVEN_* bits: keys the file set */
};

/* How far a phase's dependency has warmed up at `t` (0..1): from
 * `warm_start` (the phase's start, or the end of its last knockdown) over
 * the phase's duration. The one model simulate and the fleet scenario share. */
static inline double tool_phase_progress(const struct tool_phase *p, uint64_t t,
                                         uint64_t warm_start) {
    double progress = 1.0;
    if (p->duration_ns > 0 && t >= warm_start)
        progress = (double)(t - warm_start) / (double)p->duration_ns;
    return progress > 1.0 ? 1.0 : progress;
}

/* The calls it can hold at once at that progress (meaningful when
 * p->capacity > 0): from cold_capacity up to capacity. */
static inline double tool_phase_capacity(const struct tool_phase *p, double progress) {
    return p->cold_capacity + (double)((int64_t)p->capacity - (int64_t)p->cold_capacity) * progress;
}

/* An answer's time at that progress, from two uniform draws u1, u2 in (0, 1]:
 * log-normal, its median moving geometrically from cold_latency_ns to
 * latency_ns while the dependency warms up, its spread (p99 / median)
 * staying. */
static inline double tool_phase_latency_ns(const struct tool_phase *p, double progress, double u1,
                                           double u2) {
    double median = (double)p->cold_latency_ns *
                    pow((double)p->latency_ns / (double)p->cold_latency_ns, progress);
    double sigma = log((double)p->latency_p99_ns / (double)p->latency_ns) / 2.3263478740;
    double z = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
    return median * exp(sigma * z);
}

/* Keys a phase section set, so that the kind's defaults leave them alone. */
enum {
    TOOL_GIVEN_LATENCY = 1,
    TOOL_GIVEN_P99 = 2,
    TOOL_GIVEN_COLD_LATENCY = 4,
    TOOL_GIVEN_ERROR_RATE = 8,
    TOOL_GIVEN_CAPACITY = 16,
    TOOL_GIVEN_COLD_CAPACITY = 32,
    TOOL_GIVEN_KNOCKDOWN = 64,
};

struct tool_scenario {
    char name[TOOL_NAME_MAX];
    char description[256];
    uint64_t duration_ns; /* 0 = the sum of the phases */
    uint64_t seed;
    uint32_t workers;
    double rate; /* requests per second, Poisson */
    uint64_t timeout_ns;
    uint64_t latency_ns; /* healthy defaults for phases */
    uint64_t latency_p99_ns;
    uint32_t clients;           /* legitimate callers; requests pick one at random */
    bool clients_given;         /* the file set `clients` (shown in the report) */
    uint32_t instances;         /* > 0: a fleet scenario of this many hosts (fleet_sim.c) */
    uint64_t flush_interval_ns; /* fleet: each host's flush interval, 0 = 250ms */
    struct tool_phase phases[TOOL_MAX_PHASE];
    size_t phase_count;
    struct tool_breakers breakers;
};

/* The built-in scenario, as INI text (`breaker simulate --print-scenario`). */
extern const char tool_builtin_scenario[];

void tool_scenario_init(struct tool_scenario *sc);
void tool_scenario_free(struct tool_scenario *sc);
/* Apply kind defaults, check ranges; @return 0 or -1 with `msg`. */
int tool_scenario_finish(struct tool_scenario *sc, char *msg, size_t msg_len);
const char *tool_phase_kind_name(enum tool_phase_kind kind);
/* Down, slow, or errors at 50% or more: what the outage columns count. */
bool tool_phase_is_outage(const struct tool_phase *p);
/* True if some phase has an abusive caller (abuser_share > 0). */
bool tool_scenario_has_abuser(const struct tool_scenario *sc);

/* ---- ini_load.c ------------------------------------------------------------*/

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

/* ---- timeline.c ------------------------------------------------------------*/

#define TOOL_LAT_BUCKETS 64 /* log-spaced from 100us to 100s */

struct tool_bin {
    uint32_t reached; /* calls that reached the dependency */
    uint32_t refused; /* refused by the breaker */
    uint32_t shed;    /* no free worker */
    uint32_t failed;  /* failed at the dependency (error or timeout), by end time */
    uint32_t lat[TOOL_LAT_BUCKETS];
};

struct tool_state_change {
    uint64_t t_ns;
    enum breaker_state state;
};

struct tool_band { /* a labelled background span (scenario phases) */
    uint64_t from_ns, to_ns;
    char label[TOOL_NAME_MAX];
    int shade; /* 0 healthy, 1 outage, 2 recovering */
};

struct tool_timeline {
    char title[160];
    char subtitle[256];
    uint64_t start_ns, end_ns, bin_ns;
    size_t bin_count;
    struct tool_bin *bins;
    struct tool_state_change *states; /* states[0] at start_ns */
    size_t state_count, state_cap;
    bool has_breaker;
    bool has_shed;
    struct tool_band bands[TOOL_MAX_PHASE];
    size_t band_count;
    uint64_t timeout_ns;   /* drawn as a line on the latency chart, 0 = none */
    breaker_event *events; /* every transition, in order */
    size_t event_count, event_cap;
};

/* The smallest round bin width (1ms, 10ms, ..., 1s, 2s, 5s, ..., 1h) that
 * cuts `span_ns` into at most `max_bins` bins. */
uint64_t tool_timeline_pick_bin(uint64_t span_ns, uint64_t max_bins);
/* @return 0 or -1 (out of memory). bin_ns 0 = choose (at most ~600 bins). */
int tool_timeline_init(struct tool_timeline *tl, uint64_t start_ns, uint64_t end_ns,
                       uint64_t bin_ns);
void tool_timeline_free(struct tool_timeline *tl);
struct tool_bin *tool_timeline_bin(struct tool_timeline *tl, uint64_t t_ns);
void tool_timeline_latency(struct tool_timeline *tl, uint64_t t_ns, uint64_t latency_ns);
int tool_timeline_state(struct tool_timeline *tl, uint64_t t_ns, enum breaker_state state);
/* Record a transition: the event and the state it starts. @return 0 or -1. */
int tool_timeline_event(struct tool_timeline *tl, const breaker_event *ev);
/* The latency bucket index of a duration, and a bucket's upper bound. */
unsigned tool_lat_bucket(uint64_t ns);
uint64_t tool_lat_bucket_upper(unsigned bucket);
/* The q-quantile (0..1) of a bin's latency histogram, 0 if empty. */
uint64_t tool_bin_quantile(const struct tool_bin *bin, double q);

/* ---- simulate.c ---------------------------------------------------------------*/

struct tool_sim_result {
    char name[TOOL_NAME_MAX];
    bool has_breaker;
    bool has_ramp; /* the breaker ramps after a recovery (ramp_ns > 0) */
    uint64_t requests;
    uint64_t served;          /* the dependency answered OK */
    uint64_t refused;         /* failed fast: refused by the breaker, the ramp included */
    uint64_t refused_ramp;    /* ...of which refused by the ramp (REJECTED_RAMP) */
    uint64_t abuser_requests; /* requests sent by the abusive caller */
    uint64_t refused_legit;   /* refused while open or half-open, not the abuser's */
    uint64_t shed;            /* failed fast: every worker busy */
    uint64_t errors;          /* the dependency answered an error (or refused the connection) */
    uint64_t timeouts;        /* failed slowly: waited for the whole timeout */
    uint64_t saturated_ns;    /* time with every worker busy */
    uint64_t reached;         /* calls that reached the dependency */
    uint64_t reached_outage;
    uint64_t reached_recovery;
    uint64_t knockdowns;      /* overloads that knocked the dependency down */
    uint64_t recovered_at_ns; /* the dependency came back (UINT64_MAX: never) */
    uint64_t closed_after_ns; /* from recovered_at to the final close; UINT64_MAX: never */
    uint64_t transitions;
    uint64_t probes;
    uint64_t p50_ns, p99_ns;       /* response time of every request */
    struct tool_timeline timeline; /* with every transition */
};

/* Run the scenario once without a breaker (cfg NULL) or with `cfg`.
 * @return 0, or -1 with `msg`. The result owns its timeline. */
int tool_simulate(const struct tool_scenario *sc, const struct tool_breaker *cfg,
                  struct tool_sim_result *out, char *msg, size_t msg_len);
void tool_sim_result_free(struct tool_sim_result *r);

/* ---- fleet_sim.c: the fleet scenario (instances > 0) ---------------------------*/

#define TOOL_FLEET_MAX_ROUNDS 1000 /* recovery rounds counted; later ones join the last */

/* One recovery round: a host's n-th HALF_OPEN (local breakers), or the
 * fleet's n-th (fleet store). */
struct tool_fleet_round {
    uint32_t max_in_flight; /* the most probes of this round in flight at once, fleet-wide */
    uint64_t probes;        /* probes sent */
    uint64_t dead;          /* ...that reached the dependency while it was down */
    uint64_t first_ns;      /* the round's first probe */
};

struct tool_fleet_run {
    bool fleet; /* backed by the fleet model, else local breakers alone */
    struct tool_fleet_round rounds[TOOL_FLEET_MAX_ROUNDS];
    uint32_t round_count;
    uint32_t max_in_flight; /* probes in flight at once, any round */
    uint64_t requests, served, refused, shed, reached;
    uint64_t reached_dead; /* calls that reached the dependency while it was down */
    uint64_t probes, probes_dead;
    uint64_t local_trips;       /* hosts' breakers CLOSED -> OPEN (outside trips too) */
    uint64_t local_transitions; /* every transition of every host's breaker */
    uint64_t fleet_trips, fleet_transitions, leases;
    uint64_t outage_at_ns;                /* the first outage phase (UINT64_MAX: none) */
    uint64_t first_open_ns, last_open_ns; /* first and last host to open after it */
    uint32_t hosts_opened;
    uint32_t hosts_closed_at_end;
    struct tool_timeline timeline; /* every host's calls; the state of host 1 or the fleet */
};

struct tool_fleet_result {
    char name[TOOL_NAME_MAX];
    uint32_t max_probes; /* the configuration's half_open_max_probes */
    struct tool_fleet_run local, fleet;
};

/* Run the fleet scenario (sc->instances hosts) with `cfg`, once with local
 * breakers and once backed by the fleet model. @return 0, or -1 with `msg`
 * (also when this build cannot drive the model: a shared libbreaker). */
int tool_simulate_fleet(const struct tool_scenario *sc, const struct tool_breaker *cfg,
                        struct tool_fleet_result *out, char *msg, size_t msg_len);
void tool_fleet_result_free(struct tool_fleet_result *r);

/* ---- replay.c -----------------------------------------------------------------*/

struct tool_call {
    uint64_t start_ns; /* trace timestamp */
    uint64_t duration_ns;
    enum breaker_outcome outcome;
    uint32_t line;
    uint64_t source; /* a hash of the caller column's value; 0 = none */
};

struct tool_trace {
    struct tool_call *calls; /* sorted by start time, then line */
    size_t count, cap;
    size_t bad_lines;   /* malformed lines (reported to the error stream) */
    uint64_t origin_ns; /* the first timestamp: reports count from it */
    bool has_source;    /* the header names a caller column */
};

/* Read a CSV trace: "timestamp,duration,outcome" in seconds, or the
 * columns its header line names (docs/cli.md). Each malformed line is
 * reported on `errors` as "breaker replay: NAME:LINE: message" and counted;
 * the other lines are kept. @return 0, or -1 with `msg`: a header that
 * cannot be honoured ("NAME:LINE: header: ..."), an I/O error, or out of
 * memory. */
int tool_trace_read(FILE *in, const char *name, FILE *errors, struct tool_trace *trace, char *msg,
                    size_t msg_len);
void tool_trace_free(struct tool_trace *trace);
/* Parse one outcome field: ok, failure, 503, ECONNREFUSED, ... */
bool tool_parse_outcome(const char *text, enum breaker_outcome *out);

struct tool_replay_result {
    char name[TOOL_NAME_MAX];
    breaker_stats stats;
    uint64_t calls;
    uint64_t refused;
    uint64_t time_open_ns, time_half_open_ns;
    uint64_t flaps;                /* closes followed by a re-trip within the flap window */
    struct tool_timeline timeline; /* with every transition */
};

#define TOOL_FLAP_WINDOW_NS (60 * TOOL_SEC)

/* Flapping, as the report warns of it: closed and tripped again within
 * TOOL_FLAP_WINDOW_NS, twice or more. */
bool tool_replay_flapping(const struct tool_replay_result *r);
/* Trips: transitions from closed to open (a failed probe's reopening is not
 * one). */
uint64_t tool_replay_trips(const struct tool_replay_result *r);

int tool_replay(const struct tool_trace *trace, const struct tool_breaker *cfg,
                struct tool_replay_result *out, char *msg, size_t msg_len);
void tool_replay_result_free(struct tool_replay_result *r);

/* ---- report.c -----------------------------------------------------------------*/

void tool_print_sim_table(FILE *out, const struct tool_scenario *sc,
                          const struct tool_sim_result *runs, size_t count);
void tool_print_replay(FILE *out, const struct tool_trace *trace, const struct tool_breaker *cfg,
                       const struct tool_replay_result *r);
/* The replays' summary as one JSON object (the keys are in docs/cli.md):
 * the trace, then one entry per configuration, with its transitions. */
void tool_print_replay_json(FILE *out, const char *name, const struct tool_trace *trace,
                            const struct tool_breakers *cfgs, const struct tool_replay_result *runs,
                            size_t count);
/* The transitions as a table: time (from `origin_ns`), from -> to, reason,
 * evidence. */
void tool_print_transitions(FILE *out, const breaker_event *events, size_t count,
                            uint64_t origin_ns);
/* One line of evidence for a transition, as "25 of 40 calls failed (62.5%)". */
void tool_format_evidence(const breaker_event *ev, char *buf, size_t len);

/* The fleet scenario's table: per recovery round, probes in flight and
 * dead calls, local breakers against the fleet store. */
void tool_print_fleet_table(FILE *out, const struct tool_scenario *sc,
                            const struct tool_fleet_result *runs, size_t count);

/* ---- svg.c ------------------------------------------------------------------*/

/* Write one panel per timeline, stacked. @return 0, or -1 with errno set. */
int tool_svg_write(FILE *out, const char *title, const struct tool_timeline *const *timelines,
                   size_t count);
/* The fleet scenario: per configuration, bars of probes in flight and dead
 * calls per recovery round (local against fleet), then the two runs'
 * timelines. @return 0, or -1 with errno set. */
int tool_svg_write_fleet(FILE *out, const char *title, const struct tool_fleet_result *runs,
                         size_t count);

/* ---- main.c: messages of the command line ---------------------------------*/

struct option; /* <getopt.h> */

/* "breaker CMD: message" (escaped) and "Try 'breaker CMD --help'." on
 * standard error. @return 2, the exit status of a usage error. */
int tool_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* getopt_long() answered '?' or ':' (with opterr off): say which option, and
 * the closest one for a typo. @return 2. */
int tool_option_error(const char *cmd, int c, char **argv, const struct option *longopts);

/* ---- store_cmds.c: the commands on a store of shared breakers -------------*/

extern const char tool_exec_help[];
extern const char tool_status_help[];
extern const char tool_ls_help[];
extern const char tool_force_help[]; /* open, close and reset share one text */

/* `breaker exec|status|ls|open|close|reset`: argv[0] is the command.
 * @return the exit status. */
int tool_cmd_exec(int argc, char **argv);
int tool_cmd_status(int argc, char **argv);
int tool_cmd_ls(int argc, char **argv);
int tool_cmd_force(int argc, char **argv);

/* ---- store_prom.c: `breaker status --prometheus` ---------------------------*/

/* One breaker of a store as `breaker status` reads it, all at one moment, so
 * that its text, JSON and Prometheus forms agree. */
struct tool_store_row {
    const char *name;
    breaker_stats s;         /* breaker_stats_get() */
    uint64_t now_ns;         /* the breaker's clock when `s` was read */
    uint64_t retry_ns;       /* breaker_retry_after_ns() */
    breaker_config cfg;      /* the stored limits: breaker_get_config() */
    breaker_latency latency; /* breaker_latency_get() */
    bool timed;              /* it times its calls: `latency` is filled */
};

/* Write `rows` (any order) in the Prometheus text format, under the library
 * exporter's metric names and labels, sorted by name; the families a store
 * does not keep (per-pair transitions, flapping, a registry's own counters)
 * are left out (store_prom.c says why). @return 0, or -1 out of memory. */
int tool_store_prometheus(FILE *out, const struct tool_store_row *rows, size_t n);

#endif /* BREAKER_TOOL_H */
