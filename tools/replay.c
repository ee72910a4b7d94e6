/*
 * replay.c - feed a trace of real calls through the real library on a
 * virtual clock.
 *
 * Trace: CSV, one call per line, "timestamp,duration,outcome" (docs/cli.md).
 * The timestamp is when the call started. Calls are replayed in start order
 * (ties: file order); a call ending at the same instant as another starts is
 * completed first. A call the breaker refuses is not made, so its recorded
 * outcome is not reported to the breaker: the question is what the breaker
 * would have done, and it would never have seen that answer.
 */
#include "tool.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_REPORTED_BAD_LINES 50

/* ---- Outcomes -------------------------------------------------------------------*/

static const struct {
    const char *name;
    int value;
} errno_names[] = {
    {"ECONNREFUSED", ECONNREFUSED},
    {"ECONNRESET", ECONNRESET},
    {"ECONNABORTED", ECONNABORTED},
    {"ETIMEDOUT", ETIMEDOUT},
    {"EHOSTUNREACH", EHOSTUNREACH},
    {"ENETUNREACH", ENETUNREACH},
    {"EHOSTDOWN", EHOSTDOWN},
    {"ENETDOWN", ENETDOWN},
    {"ENETRESET", ENETRESET},
    {"EPIPE", EPIPE},
    {"ECANCELED", ECANCELED},
    {"EINVAL", EINVAL},
    {"ENOMEM", ENOMEM},
    {"EMFILE", EMFILE},
    {"ENFILE", ENFILE},
    {"EAGAIN", EAGAIN},
    {"EWOULDBLOCK", EWOULDBLOCK},
    {"EINTR", EINTR},
    {"ENOENT", ENOENT},
    {"EACCES", EACCES},
    {"EPERM", EPERM},
    {"ENOSPC", ENOSPC},
    {"EIO", EIO},
    {"EBADF", EBADF},
    {"EADDRINUSE", EADDRINUSE},
    {"EADDRNOTAVAIL", EADDRNOTAVAIL},
    {"EPROTO", EPROTO},
    {"EMSGSIZE", EMSGSIZE},
    {"ENOBUFS", ENOBUFS},
    {"ENOTCONN", ENOTCONN},
    {"EINPROGRESS", EINPROGRESS},
    {"EALREADY", EALREADY},
};

static bool word_is(const char *s, const char *w) { return strcasecmp(s, w) == 0; }

bool tool_parse_outcome(const char *text, enum breaker_outcome *out) {
    static const struct {
        const char *word;
        enum breaker_outcome outcome;
    } words[] = {{"ok", BREAKER_SUCCESS},        {"success", BREAKER_SUCCESS},
                 {"failure", BREAKER_FAILURE},   {"fail", BREAKER_FAILURE},
                 {"error", BREAKER_FAILURE},     {"timeout", BREAKER_FAILURE},
                 {"ignored", BREAKER_IGNORED},   {"cancelled", BREAKER_CANCELLED},
                 {"canceled", BREAKER_CANCELLED}};
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        if (word_is(text, words[i].word)) {
            *out = words[i].outcome;
            return true;
        }
    }
    if (isdigit((unsigned char)text[0])) {
        uint64_t status;
        if (strlen(text) != 3 || !tool_parse_uint(text, 100, 599, &status)) return false;
        *out = breaker_classify_http((int)status);
        return true;
    }
    for (size_t i = 0; i < sizeof(errno_names) / sizeof(errno_names[0]); i++) {
        if (strcmp(text, errno_names[i].name) == 0) {
            *out = breaker_classify_errno(errno_names[i].value);
            return true;
        }
    }
    return false;
}

/* ---- Reading a trace ------------------------------------------------------------*/

static int add_call(struct tool_trace *tr, const struct tool_call *c) {
    if (tr->count == tr->cap) {
        size_t cap = tr->cap ? 2 * tr->cap : 1024;
        struct tool_call *calls = realloc(tr->calls, cap * sizeof(*calls));
        if (calls == NULL) return -1;
        tr->calls = calls;
        tr->cap = cap;
    }
    tr->calls[tr->count++] = *c;
    return 0;
}

/* An optional header line: its first field names the timestamp column. A
 * first line that merely starts with a letter is data, and is reported if
 * it is malformed. */
static bool is_header(const char *line) {
    static const char *const names[] = {"timestamp", "time", "ts", "start"};
    size_t n = strcspn(line, ",");
    while (n > 0 && isspace((unsigned char)line[n - 1]))
        n--;
    if (n > 0 && line[0] == '"' && line[n - 1] == '"' && n >= 2) {
        line++;
        n -= 2;
    }
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strlen(names[i]) == n && strncasecmp(line, names[i], n) == 0) return true;
    return false;
}

/* A field without its blanks and, if it has them, its CSV double quotes. */
static char *field(char *s) {
    s = tool_trim(s);
    size_t n = strlen(s);
    if (n >= 2 && s[0] == '"' && s[n - 1] == '"') {
        s[n - 1] = '\0';
        s++;
    }
    return s;
}

/* Parse one data line into `c`. @return NULL, or what is wrong with it. */
static const char *parse_line(char *line, struct tool_call *c, char *why, size_t len) {
    char *fields[4];
    size_t n = 0;
    char *p = line;
    /* Split on every comma (strtok would merge empty fields). */
    for (;;) {
        char *comma = strchr(p, ',');
        if (n < 4) fields[n] = p;
        n++;
        if (comma == NULL) break;
        *comma = '\0';
        p = comma + 1;
    }
    if (n != 3) {
        snprintf(why, len, "expected 3 fields (timestamp,duration,outcome), got %zu", n);
        return why;
    }
    char *ts = field(fields[0]), *dur = field(fields[1]), *oc = field(fields[2]);
    if (!tool_parse_duration(ts, TOOL_SEC, &c->start_ns)) {
        snprintf(why, len, "bad timestamp '%.40s': expected seconds such as 1700000000.125", ts);
        return why;
    }
    if (!tool_parse_duration(dur, TOOL_SEC, &c->duration_ns) ||
        c->duration_ns > UINT64_MAX - c->start_ns) {
        snprintf(why, len, "bad duration '%.40s': expected seconds such as 0.250, or 250ms", dur);
        return why;
    }
    if (!tool_parse_outcome(oc, &c->outcome)) {
        snprintf(why, len,
                 "bad outcome '%.40s': expected ok, failure, timeout, ignored, cancelled, an "
                 "HTTP status (100-599) or an errno name (ECONNREFUSED)",
                 oc);
        return why;
    }
    return NULL;
}

static int cmp_call(const void *a, const void *b) {
    const struct tool_call *x = a, *y = b;
    if (x->start_ns != y->start_ns) return x->start_ns < y->start_ns ? -1 : 1;
    return x->line < y->line ? -1 : x->line > y->line;
}

int tool_trace_read(FILE *in, const char *name, FILE *errors, struct tool_trace *tr, char *msg,
                    size_t msg_len) {
    memset(tr, 0, sizeof(*tr));
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    uint32_t lineno = 0;
    bool seen_data = false;
    int rc = 0;
    while ((got = getline(&line, &cap, in)) != -1) {
        lineno++;
        char *s = tool_trim(line);
        if (*s == '\0' || *s == '#') continue;
        if (!seen_data && is_header(s)) {
            seen_data = true;
            continue;
        }
        seen_data = true;
        struct tool_call c = {.line = lineno};
        char why[200];
        const char *bad = parse_line(s, &c, why, sizeof(why));
        if (bad != NULL) {
            if (tr->bad_lines < MAX_REPORTED_BAD_LINES && errors != NULL)
                tool_error(errors, "%s:%" PRIu32 ": %s", name, lineno, bad);
            tr->bad_lines++;
            continue;
        }
        if (add_call(tr, &c) != 0) {
            snprintf(msg, msg_len, "%s: out of memory", name);
            rc = -1;
            break;
        }
    }
    if (rc == 0 && ferror(in)) {
        snprintf(msg, msg_len, "%s: read error", name);
        rc = -1;
    }
    free(line);
    if (rc != 0) {
        tool_trace_free(tr);
        return rc;
    }
    if (tr->bad_lines > MAX_REPORTED_BAD_LINES && errors != NULL)
        tool_error(errors, "%s: %zu malformed lines in all (the first %d shown)", name,
                   tr->bad_lines, MAX_REPORTED_BAD_LINES);
    if (tr->count > 1) qsort(tr->calls, tr->count, sizeof(*tr->calls), cmp_call);
    tr->origin_ns = tr->count ? tr->calls[0].start_ns : 0;
    return 0;
}

void tool_trace_free(struct tool_trace *tr) {
    free(tr->calls);
    memset(tr, 0, sizeof(*tr));
}

/* ---- Replaying ---------------------------------------------------------------------*/

struct pending {              /* an admitted call waiting for its end */
    struct tool_heap_key key; /* end time, then index: ties end in start order */
    breaker_permit permit;
};

struct replay {
    uint64_t now;
    struct tool_heap heap; /* of struct pending */
    struct tool_replay_result *r;
    bool oom;
};

static uint64_t replay_clock(void *ctx) { return ((struct replay *)ctx)->now; }

static void on_transition(void *ctx, breaker *b, const breaker_event *ev) {
    (void)b;
    struct replay *rp = ctx;
    if (tool_timeline_event(&rp->r->timeline, ev) != 0) rp->oom = true;
}

static void complete(struct replay *rp, breaker *b, const struct tool_trace *trace,
                     struct pending *p) {
    const struct tool_call *c = &trace->calls[p->key.tie];
    rp->now = p->key.at;
    (void)breaker_complete(b, &p->permit, c->outcome);
    if (c->outcome == BREAKER_FAILURE) tool_timeline_bin(&rp->r->timeline, rp->now)->failed++;
    tool_timeline_latency(&rp->r->timeline, rp->now, c->duration_ns);
}

/* Time spent in OPEN and HALF_OPEN, and flaps, from the event list. */
static void summarise(struct tool_replay_result *r, uint64_t start, uint64_t end) {
    enum breaker_state state = BREAKER_CLOSED;
    uint64_t since = start, last_close = 0;
    bool closed_once = false;
    for (size_t i = 0; i <= r->timeline.event_count; i++) {
        uint64_t t = i < r->timeline.event_count ? r->timeline.events[i].time_ns : end;
        if (t < since) t = since;
        if (state == BREAKER_OPEN) r->time_open_ns += t - since;
        if (state == BREAKER_HALF_OPEN) r->time_half_open_ns += t - since;
        if (i == r->timeline.event_count) break;
        const breaker_event *ev = &r->timeline.events[i];
        if (ev->from == BREAKER_CLOSED && ev->to == BREAKER_OPEN && closed_once &&
            ev->time_ns - last_close <= TOOL_FLAP_WINDOW_NS)
            r->flaps++;
        if (ev->to == BREAKER_CLOSED) {
            closed_once = true;
            last_close = ev->time_ns;
        }
        state = ev->to;
        since = t;
    }
}

/* One past the last call's end, saturating: the clock must never run
 * backwards, even for a trace that ends at the top of the range. */
static uint64_t replay_end(const struct tool_trace *trace) {
    uint64_t end = trace->origin_ns == UINT64_MAX ? UINT64_MAX : trace->origin_ns + 1;
    for (size_t i = 0; i < trace->count; i++) {
        uint64_t start = trace->calls[i].start_ns, dur = trace->calls[i].duration_ns;
        uint64_t e = start > UINT64_MAX - dur ? UINT64_MAX : start + dur;
        if (e >= end) end = e == UINT64_MAX ? UINT64_MAX : e + 1;
    }
    return end;
}

/* The result's timeline, labelled for the report and the picture. Bins of
 * about one call or more, so that a sparse trace draws rates, not a comb of
 * lone calls; at least 10 bins, at most 600. @return 0 or -1 (out of
 * memory). */
static int start_timeline(struct tool_timeline *tl, const struct tool_trace *trace,
                          const struct tool_breaker *cfg, uint64_t end) {
    uint64_t max_bins = trace->count < 10 ? 10 : trace->count > 600 ? 600 : trace->count;
    uint64_t bin_ns = tool_timeline_pick_bin(end - trace->origin_ns, max_bins);
    if (tool_timeline_init(tl, trace->origin_ns, end, bin_ns) != 0) return -1;
    snprintf(tl->title, sizeof(tl->title), "%s", cfg->name);
    snprintf(tl->subtitle, sizeof(tl->subtitle), "%s",
             cfg->summary[0] ? cfg->summary : "library defaults");
    tl->has_breaker = true;
    return 0;
}

/* The configuration as a breaker on the replay's virtual clock, reporting
 * every transition to the timeline, so that it sees the trace's time and
 * not the machine's. @return the breaker, or NULL with `msg`. */
static breaker *create_breaker(struct replay *rp, const struct tool_breaker *cfg,
                               uint64_t origin_ns, char *msg, size_t msg_len) {
    breaker_config c = cfg->cfg;
    c.clock = replay_clock;
    c.clock_ctx = rp;
    c.on_event = on_transition;
    c.event_ctx = rp;
    if (c.seed == 0) c.seed = 1; /* jitter must repeat from run to run */
    char why[TOOL_MSG_MAX];
    breaker *b = NULL;
    if (breaker_config_validate(&c, why, sizeof(why)) != BREAKER_OK) {
        snprintf(msg, msg_len, "breaker %s: %s", cfg->name, why);
        return NULL;
    }
    if (breaker_create(&c, &b) != BREAKER_OK ||
        tool_timeline_state(&rp->r->timeline, origin_ns, BREAKER_CLOSED) != 0) {
        snprintf(msg, msg_len, "breaker %s: cannot create", cfg->name);
        breaker_destroy(b);
        return NULL;
    }
    return b;
}

/* Each call in start order asks for a permit, after the admitted calls that
 * ended by its start have completed, so the breaker learns outcomes when
 * they happened. A refused call is counted and never made. Stops early when
 * out of memory. */
static void feed_calls(struct replay *rp, breaker *b, const struct tool_trace *trace) {
    struct tool_replay_result *out = rp->r;
    for (size_t i = 0; i < trace->count && !rp->oom; i++) {
        const struct tool_call *call = &trace->calls[i];
        const struct pending *next;
        while ((next = tool_heap_top(&rp->heap)) != NULL && next->key.at <= call->start_ns) {
            struct pending p;
            tool_heap_pop(&rp->heap, &p);
            complete(rp, b, trace, &p);
        }
        rp->now = call->start_ns;
        out->calls++;
        struct tool_bin *bin = tool_timeline_bin(&out->timeline, rp->now);
        struct pending p = {.key = {.at = call->start_ns + call->duration_ns, .tie = i}};
        if (breaker_acquire(b, &p.permit) != BREAKER_OK) {
            out->refused++;
            bin->refused++;
            continue;
        }
        bin->reached++;
        if (tool_heap_push(&rp->heap, &p) != 0) rp->oom = true;
    }
}

/* The calls still in flight after the last start complete in end order,
 * then the clock moves to `end` so that a probe still hanging times out, if
 * it is due, before the final counts are taken. */
static void finish_calls(struct replay *rp, breaker *b, const struct tool_trace *trace,
                         uint64_t end) {
    while (rp->heap.n > 0 && !rp->oom) {
        struct pending p;
        tool_heap_pop(&rp->heap, &p);
        complete(rp, b, trace, &p);
    }
    rp->now = end;
    (void)breaker_get_state(b);
    breaker_stats_get(b, &rp->r->stats);
}

int tool_replay(const struct tool_trace *trace, const struct tool_breaker *cfg,
                struct tool_replay_result *out, char *msg, size_t msg_len) {
    memset(out, 0, sizeof(*out));
    snprintf(out->name, sizeof(out->name), "%s", cfg->name);
    struct replay rp;
    memset(&rp, 0, sizeof(rp));
    rp.r = out;
    rp.now = trace->origin_ns;
    tool_heap_init(&rp.heap, sizeof(struct pending));

    uint64_t end = replay_end(trace);
    if (start_timeline(&out->timeline, trace, cfg, end) != 0) {
        snprintf(msg, msg_len, "out of memory");
        return -1;
    }
    breaker *b = create_breaker(&rp, cfg, trace->origin_ns, msg, msg_len);
    if (b == NULL) {
        tool_replay_result_free(out);
        return -1;
    }
    feed_calls(&rp, b, trace);
    finish_calls(&rp, b, trace, end);
    breaker_destroy(b);
    tool_heap_free(&rp.heap);
    if (rp.oom) {
        snprintf(msg, msg_len, "out of memory");
        tool_replay_result_free(out);
        return -1;
    }
    summarise(out, trace->origin_ns, end);
    return 0;
}

void tool_replay_result_free(struct tool_replay_result *r) { tool_timeline_free(&r->timeline); }
