/* SPDX-License-Identifier: MIT */
/*
 * replay.c - feed a trace of real calls through the real library on a
 * virtual clock.
 *
 * Trace: CSV, one call per line, "timestamp,duration,outcome", or the
 * columns a header line names (docs/cli.md).
 * The timestamp is when the call started. Calls are replayed in start order
 * (ties: file order); a call ending at the same instant as another starts is
 * completed first. A call the breaker refuses is not made, so its recorded
 * outcome is not reported to the breaker: the question is what the breaker
 * would have done, and it would never have seen that answer.
 */
#include "sim/replay.h"
#include "sim/heap.h"

#include "cli/parse.h"
#include "cli/text.h"

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

/* ---- Shadow logs ----------------------------------------------------------------*/

bool tool_parse_shadow(const char *text, enum tool_shadow *out) {
    static const struct {
        const char *word;
        enum tool_shadow shadow;
    } words[] = {{"", TOOL_SHADOW_NONE},
                 {"-", TOOL_SHADOW_NONE},
                 {"none", TOOL_SHADOW_NONE},
                 {"no", TOOL_SHADOW_NONE},
                 {"false", TOOL_SHADOW_NONE},
                 {"0", TOOL_SHADOW_NONE},
                 {"open", TOOL_SHADOW_OPEN},
                 {"half_open", TOOL_SHADOW_HALF_OPEN},
                 {"forced_open", TOOL_SHADOW_FORCED},
                 {"forced", TOOL_SHADOW_FORCED},
                 {"ramp", TOOL_SHADOW_RAMP},
                 {"yes", TOOL_SHADOW_REFUSED},
                 {"true", TOOL_SHADOW_REFUSED},
                 {"1", TOOL_SHADOW_REFUSED}};
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        if (word_is(text, words[i].word)) {
            *out = words[i].shadow;
            return true;
        }
    }
    return false;
}

const char *tool_shadow_name(enum tool_shadow shadow) {
    /* The library's names, so that a log written with
     * breaker_refusal_name() reads back as it was written. */
    return shadow == TOOL_SHADOW_REFUSED ? "unspecified"
                                         : breaker_refusal_name((enum breaker_refusal)shadow);
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

/* What a column holds. A header names the columns; without one a trace is
 * "timestamp,duration,outcome", numbers in seconds. */
enum column_role { COL_TIME, COL_DURATION, COL_OUTCOME, COL_SOURCE, COL_SHADOW, COL_ROLES };

#define MAX_COLUMNS 8 /* every role once, with room to name the one too many */

struct column {
    enum column_role role;
    uint64_t unit_ns; /* the unit of a bare number: seconds unless the name says */
    bool raw_key;     /* a caller column named *_key: the source key itself, a number */
    char name[32];    /* as the header wrote it (cut to fit), for messages */
};

struct columns {
    struct column col[MAX_COLUMNS];
    size_t count;
    int at[COL_ROLES]; /* the column of each role, -1 if none */
    bool header;       /* from a header line (else the default three) */
};

static const struct {
    enum column_role role;
    const char *names[5];
    bool units; /* takes a unit suffix (_s, _ms, _us, _ns) */
    const char *what;
} roles[] = {
    {COL_TIME, {"timestamp", "time", "ts", "start", NULL}, true, "timestamp"},
    {COL_DURATION, {"duration", "latency", "elapsed", NULL}, true, "duration"},
    {COL_OUTCOME, {"outcome", "status", "result", "code", NULL}, false, "outcome"},
    {COL_SOURCE, {"client", "caller", "source", "tenant", NULL}, false, "source"},
    {COL_SHADOW, {"would_reject", NULL}, false, "would_reject"},
};

#define KNOWN_COLUMNS                                                                  \
    "timestamp: ts, time, timestamp, start; duration: duration, latency, elapsed; "    \
    "outcome: outcome, status, result, code; source: client, caller, source, tenant; " \
    "would_reject: would_reject"

static const struct {
    const char *suffix;
    uint64_t ns;
} units[] = {{"s", TOOL_SEC}, {"ms", TOOL_MS}, {"us", 1000}, {"ns", 1}};

static void default_columns(struct columns *cols) {
    memset(cols, 0, sizeof(*cols));
    static const enum column_role order[] = {COL_TIME, COL_DURATION, COL_OUTCOME};
    static const char *const names[] = {"timestamp", "duration", "outcome"};
    for (size_t i = 0; i < 3; i++) {
        cols->col[i].role = order[i];
        cols->col[i].unit_ns = TOOL_SEC;
        snprintf(cols->col[i].name, sizeof(cols->col[i].name), "%s", names[i]);
    }
    cols->count = 3;
    cols->at[COL_TIME] = 0;
    cols->at[COL_DURATION] = 1;
    cols->at[COL_OUTCOME] = 2;
    cols->at[COL_SOURCE] = -1;
    cols->at[COL_SHADOW] = -1;
}

/* The role a header name is built on ("latency" in "latency_ms"), and
 * where its suffix starts ("" or "_ms"). @return the index in roles[], or
 * -1 if the name is none of them. */
static int name_role(const char *name, const char **suffix) {
    for (size_t r = 0; r < sizeof(roles) / sizeof(roles[0]); r++) {
        for (size_t k = 0; roles[r].names[k] != NULL; k++) {
            size_t n = strlen(roles[r].names[k]);
            if (strncasecmp(name, roles[r].names[k], n) == 0 &&
                (name[n] == '\0' || name[n] == '_')) {
                *suffix = name + n;
                return (int)r;
            }
        }
    }
    return -1;
}

/* A header line names at least one known column; any other first line is
 * data (and is reported if it is malformed). */
static bool is_header(char *const *fields, size_t n) {
    const char *suffix;
    for (size_t i = 0; i < n; i++)
        if (name_role(fields[i], &suffix) >= 0) return true;
    return false;
}

/* One header name into `c`. @return NULL, or what is wrong with it. */
static const char *header_column(const char *name, size_t i, struct column *c, char *why,
                                 size_t len) {
    const char *suffix;
    int r = name_role(name, &suffix);
    if (r < 0) {
        snprintf(why, len, "column %zu '%.40s': unknown column name (known: " KNOWN_COLUMNS ")",
                 i + 1, name);
        return why;
    }
    c->role = roles[r].role;
    c->unit_ns = TOOL_SEC;
    snprintf(c->name, sizeof(c->name), "%s", name);
    if (*suffix == '\0') return NULL;
    if (roles[r].units) {
        for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++) {
            if (strcasecmp(suffix + 1, units[u].suffix) == 0) {
                c->unit_ns = units[u].ns;
                return NULL;
            }
        }
        snprintf(why, len, "column %zu '%.40s': unknown unit '%.20s' (known: _s, _ms, _us, _ns)",
                 i + 1, name, suffix);
        return why;
    }
    if (c->role == COL_SOURCE && strcasecmp(suffix, "_id") == 0) return NULL;
    if (c->role == COL_SOURCE && strcasecmp(suffix, "_key") == 0) {
        c->raw_key = true; /* the keys a service passed to breaker_complete_from() */
        return NULL;
    }
    if (c->role == COL_SOURCE) {
        snprintf(why, len,
                 "column %zu '%.40s': a source column takes the suffix _id, or _key for the "
                 "source keys themselves (numbers), not '%.20s'",
                 i + 1, name, suffix);
        return why;
    }
    snprintf(why, len, "column %zu '%.40s': the %s column takes no suffix such as '%.20s'", i + 1,
             name, roles[r].what, suffix);
    return why;
}

/* The columns a header line names. @return NULL, or what is wrong. */
static const char *read_header(char *const *fields, size_t n, struct columns *cols, char *why,
                               size_t len) {
    memset(cols, 0, sizeof(*cols));
    for (size_t r = 0; r < COL_ROLES; r++)
        cols->at[r] = -1;
    cols->header = true;
    if (n > MAX_COLUMNS) {
        snprintf(why, len,
                 "%zu columns; at most %d (timestamp, duration, outcome, source, would_reject)", n,
                 MAX_COLUMNS);
        return why;
    }
    for (size_t i = 0; i < n; i++) {
        struct column *c = &cols->col[i];
        if (header_column(fields[i], i, c, why, len) != NULL) return why;
        int *at = &cols->at[c->role];
        if (*at >= 0) {
            snprintf(why, len, "column %zu '%.40s': a second %s column (column %d is '%s')", i + 1,
                     fields[i], roles[c->role].what, *at + 1, cols->col[*at].name);
            return why;
        }
        *at = (int)i;
    }
    cols->count = n;
    static const char *const needed[] = {
        [COL_TIME] = "timestamp column (ts, time, timestamp or start, optionally with _s, _ms, "
                     "_us or _ns)",
        [COL_DURATION] = "duration column (duration, latency or elapsed, optionally with _s, _ms, "
                         "_us or _ns)",
        [COL_OUTCOME] = "outcome column (outcome, status, result or code)",
    };
    for (size_t r = COL_TIME; r <= COL_OUTCOME; r++) {
        if (cols->at[r] < 0) {
            snprintf(why, len, "the header has no %s", needed[r]);
            return why;
        }
    }
    return NULL;
}

/* Split a CSV line in place into fields, as RFC 4180 writes them: a field
 * in double quotes may hold commas and doubled quotes; blanks around a field
 * are not part of it. A quoted field cannot run onto the next line. Fields
 * past `max` are counted, not kept. @return NULL with `*n` set, or what is
 * wrong. */
static const char *split_fields(char *line, char **fields, size_t max, size_t *n, char *why,
                                size_t len) {
    char *p = line;
    *n = 0;
    for (;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        char *start = p;
        if (*p == '"') {
            char *out = start;
            for (p++;; p++) {
                if (*p == '\0') {
                    snprintf(why, len,
                             "field %zu: a quoted field without its closing quote (a quoted "
                             "field cannot hold a line break)",
                             *n + 1);
                    return why;
                }
                if (*p == '"' && p[1] == '"') {
                    *out++ = '"';
                    p++;
                } else if (*p == '"') {
                    break;
                } else {
                    *out++ = *p;
                }
            }
            p++; /* the closing quote */
            while (*p == ' ' || *p == '\t')
                p++;
            if (*p != ',' && *p != '\0') {
                snprintf(why, len, "field %zu: text after the closing quote", *n + 1);
                return why;
            }
            char sep = *p;
            *out = '\0';
            *p = sep;
        } else {
            p += strcspn(p, ",");
            char *end = p;
            while (end > start && (end[-1] == ' ' || end[-1] == '\t'))
                end--;
            char sep = *p; /* *end may be the comma itself */
            *end = '\0';
            *p = sep;
        }
        if (*n < max) fields[*n] = start;
        (*n)++;
        if (*p == '\0') return NULL;
        *p++ = '\0';
    }
}

/* Days from 1970-01-01 to a date of the proleptic Gregorian calendar
 * (Howard Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

/* `n` digits at *p as a number, advancing *p. @return false if fewer. */
static bool digits(const char **p, size_t n, unsigned *out) {
    unsigned v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)(*p)[i])) return false;
        v = v * 10 + (unsigned)((*p)[i] - '0');
    }
    *p += n;
    *out = v;
    return true;
}

/* Text that starts like an ISO-8601 date, "YYYY-MM-DD": it can be nothing
 * else, so it is parsed as one (and refused as one if it is not). */
static bool looks_iso(const char *s) {
    for (size_t i = 0; i < 10; i++) {
        bool dash = i == 4 || i == 7;
        if (dash ? s[i] != '-' : !isdigit((unsigned char)s[i])) return false;
    }
    return true;
}

/* "2026-11-30T12:00:00.123Z", "2026-11-30 12:00:00+01:00", ... into
 * nanoseconds since 1970 (UTC). A zone (Z or an offset) is required: local
 * time would be a guess. @return true and *out, or false. */
static bool parse_iso(const char *s, uint64_t *out) {
    unsigned y, mo, d, h, mi, sec = 0, oh = 0, om = 0;
    const char *p = s;
    if (!digits(&p, 4, &y) || *p++ != '-' || !digits(&p, 2, &mo) || *p++ != '-' ||
        !digits(&p, 2, &d) || (*p != 'T' && *p != 't' && *p != ' '))
        return false;
    p++;
    if (!digits(&p, 2, &h) || *p++ != ':' || !digits(&p, 2, &mi)) return false;
    if (*p == ':' && !(p++, digits(&p, 2, &sec))) return false;
    uint64_t frac = 0;
    if (*p == '.' || *p == ',') {
        p++;
        size_t n = 0;
        while (isdigit((unsigned char)p[n]))
            n++;
        if (n == 0 || n > 9) return false;
        for (size_t i = 0; i < 9; i++)
            frac = frac * 10 + (i < n ? (uint64_t)(p[i] - '0') : 0);
        p += n;
    }
    int sign = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        sign = *p++ == '+' ? 1 : -1;
        if (!digits(&p, 2, &oh)) return false;
        if (*p == ':') p++;
        if (*p != '\0' && !digits(&p, 2, &om)) return false;
    } else {
        return false;
    }
    static const unsigned mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (*p != '\0' || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] ||
        (mo == 2 && d == 29 && !leap) || h > 23 || mi > 59 || sec > 59 || oh > 23 || om > 59)
        return false;
    int64_t t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec -
                sign * (int64_t)(oh * 3600 + om * 60);
    if (t < 0 || (uint64_t)t > (UINT64_MAX - frac) / TOOL_SEC) return false;
    *out = (uint64_t)t * TOOL_SEC + frac;
    return true;
}

/* The unit of a bare number in a column, for messages. */
static const char *unit_word(uint64_t unit_ns) {
    return unit_ns == TOOL_SEC  ? "seconds"
           : unit_ns == TOOL_MS ? "milliseconds"
           : unit_ns == 1000    ? "microseconds"
                                : "nanoseconds";
}

static const char *parse_time(const char *ts, const struct column *c, uint64_t *out, char *why,
                              size_t len) {
    if (looks_iso(ts)) {
        if (parse_iso(ts, out)) return NULL;
        snprintf(why, len,
                 "bad timestamp '%.40s': expected ISO-8601 with a zone, such as "
                 "2026-11-30T12:00:00.123Z or 2026-11-30T13:00:00+01:00",
                 ts);
        return why;
    }
    if (tool_parse_duration(ts, c->unit_ns, out)) return NULL;
    if (c->unit_ns == TOOL_SEC && strspn(ts, "0123456789") > 11) {
        /* Epoch milliseconds or microseconds under a column of seconds
         * overflow: say how to declare them rather than guess. */
        snprintf(why, len,
                 "bad timestamp '%.40s': too large for seconds since 1970; for milliseconds or "
                 "microseconds, name the column %s_ms or %s_us",
                 ts, c->name, c->name);
        return why;
    }
    snprintf(why, len,
             "bad timestamp '%.40s': expected %s such as %s, a duration such as 12.5s, or "
             "ISO-8601 such as 2026-11-30T12:00:00.123Z",
             ts, unit_word(c->unit_ns),
             c->unit_ns == TOOL_SEC ? "1700000000.125" : "1700000000125");
    return why;
}

/* The header's names again, comma-separated, for "expected N fields (...)". */
static void column_list(const struct columns *cols, char *buf, size_t len) {
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < cols->count && used < len; i++) {
        int w = snprintf(buf + used, len - used, "%s%s", i ? "," : "", cols->col[i].name);
        if (w < 0) break;
        used += (size_t)w;
    }
}

/* Parse one data line into `c`. @return NULL, or what is wrong with it. */
static const char *parse_line(char *line, const struct columns *cols, struct tool_call *c,
                              char *why, size_t len) {
    char *fields[MAX_COLUMNS];
    size_t n;
    if (split_fields(line, fields, MAX_COLUMNS, &n, why, len) != NULL) return why;
    if (n != cols->count) {
        char names[128];
        column_list(cols, names, sizeof(names));
        snprintf(why, len, "expected %zu fields (%s), got %zu", cols->count, names, n);
        return why;
    }
    const struct column *tc = &cols->col[cols->at[COL_TIME]];
    const struct column *dc = &cols->col[cols->at[COL_DURATION]];
    char *ts = fields[cols->at[COL_TIME]], *dur = fields[cols->at[COL_DURATION]];
    char *oc = fields[cols->at[COL_OUTCOME]];
    if (parse_time(ts, tc, &c->start_ns, why, len) != NULL) return why;
    if (!tool_parse_duration(dur, dc->unit_ns, &c->duration_ns) ||
        c->duration_ns > UINT64_MAX - c->start_ns) {
        snprintf(why, len,
                 "bad duration '%.40s': expected %s such as %s, or a duration such "
                 "as " TOOL_DURATION_FORMATS,
                 dur, unit_word(dc->unit_ns), dc->unit_ns == TOOL_SEC ? "0.250" : "250");
        return why;
    }
    if (!tool_parse_outcome(oc, &c->outcome)) {
        snprintf(why, len,
                 "bad outcome '%.40s': expected ok, failure, timeout, ignored, cancelled, an "
                 "HTTP status (100-599) or an errno name (ECONNREFUSED)",
                 oc);
        return why;
    }
    c->source = 0;
    if (cols->at[COL_SOURCE] >= 0) {
        const struct column *sc = &cols->col[cols->at[COL_SOURCE]];
        const char *who = fields[cols->at[COL_SOURCE]];
        if (!sc->raw_key) {
            c->source = tool_source_key(who);
        } else if (*who != '\0' && !tool_parse_uint(who, 0, UINT64_MAX, &c->source)) {
            snprintf(why, len,
                     "bad %s '%.40s': expected the source key given to "
                     "breaker_complete_from(), a whole number 0 to 18446744073709551615 (0 or "
                     "empty: no source)",
                     sc->name, who);
            return why;
        }
    }
    enum tool_shadow shadow = TOOL_SHADOW_NONE;
    if (cols->at[COL_SHADOW] >= 0 && !tool_parse_shadow(fields[cols->at[COL_SHADOW]], &shadow)) {
        snprintf(why, len,
                 "bad would_reject '%.40s': expected none, empty, no, -, 0 or false (admitted); "
                 "open, half_open, forced_open (or forced) or ramp (the refusal it was spared); "
                 "or yes, 1 or true (refused, reason not logged); in any case",
                 fields[cols->at[COL_SHADOW]]);
        return why;
    }
    c->shadow = (uint8_t)shadow;
    return NULL;
}

static int cmp_call(const void *a, const void *b) {
    const struct tool_call *x = a, *y = b;
    if (x->start_ns != y->start_ns) return x->start_ns < y->start_ns ? -1 : 1;
    return x->line < y->line ? -1 : x->line > y->line;
}

/* The reader's state between lines. */
struct reader {
    const char *name;
    FILE *errors;
    struct tool_trace *tr;
    struct columns cols;
    bool seen_data; /* a header may only come first */
};

/* A malformed line: reported (the first few) and counted. */
static void bad_line(struct reader *rd, uint32_t lineno, const char *why) {
    if (rd->tr->bad_lines < MAX_REPORTED_BAD_LINES && rd->errors != NULL)
        tool_error(rd->errors, "breaker replay: %s:%" PRIu32 ": %s", rd->name, lineno, why);
    rd->tr->bad_lines++;
}

/* One line, its line break removed. @return 0, or -1 with `msg` (a header
 * that cannot be honoured, out of memory). */
static int read_line(struct reader *rd, char *line, uint32_t lineno, char *msg, size_t msg_len) {
    char *s = tool_trim(line);
    if (*s == '\0' || *s == '#') return 0;
    char why[400];
    if (!rd->seen_data) {
        rd->seen_data = true;
        char *copy = strdup(s);
        if (copy == NULL) {
            snprintf(msg, msg_len, "%s: out of memory", rd->name);
            return -1;
        }
        char *fields[MAX_COLUMNS + 1];
        size_t n;
        bool header = split_fields(copy, fields, MAX_COLUMNS + 1, &n, why, sizeof(why)) == NULL &&
                      is_header(fields, n < MAX_COLUMNS + 1 ? n : MAX_COLUMNS + 1);
        const char *bad = header ? read_header(fields, n, &rd->cols, why, sizeof(why)) : NULL;
        if (bad != NULL) {
            /* The columns cannot be known: nothing after could be read
             * without guessing. */
            char safe[600];
            snprintf(safe, sizeof(safe), "%s:%" PRIu32 ": header: %s", rd->name, lineno, bad);
            snprintf(msg, msg_len, "%s", safe);
        }
        free(copy);
        if (bad != NULL) return -1;
        if (header) {
            rd->tr->has_source = rd->cols.at[COL_SOURCE] >= 0;
            rd->tr->has_shadow = rd->cols.at[COL_SHADOW] >= 0;
            return 0;
        }
    }
    struct tool_call c = {.line = lineno};
    const char *bad = parse_line(s, &rd->cols, &c, why, sizeof(why));
    if (bad != NULL) {
        bad_line(rd, lineno, bad);
        return 0;
    }
    if (add_call(rd->tr, &c) != 0) {
        snprintf(msg, msg_len, "%s: out of memory", rd->name);
        return -1;
    }
    rd->tr->shadow_calls[c.shadow]++;
    if (c.shadow != TOOL_SHADOW_NONE && c.outcome == BREAKER_SUCCESS) rd->tr->shadow_served++;
    return 0;
}

int tool_trace_read(FILE *in, const char *name, FILE *errors, struct tool_trace *tr, char *msg,
                    size_t msg_len) {
    memset(tr, 0, sizeof(*tr));
    struct reader rd = {.name = name, .errors = errors, .tr = tr};
    default_columns(&rd.cols);
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    uint32_t lineno = 0;
    int rc = 0;
    errno = 0;
    while ((got = getline(&line, &cap, in)) != -1) {
        lineno++;
        char *s = line;
        /* A UTF-8 byte order mark, as spreadsheets write it; CRLF line
         * ends go with the trailing blanks. */
        if (lineno == 1 && strncmp(s, "\xEF\xBB\xBF", 3) == 0) s += 3;
        if ((rc = read_line(&rd, s, lineno, msg, msg_len)) != 0) break;
        errno = 0;
    }
    if (rc == 0 && ferror(in)) { /* a directory, an I/O error: an input that cannot be read */
        snprintf(msg, msg_len, "%s: %s", name, errno != 0 ? strerror(errno) : "read error");
        rc = -2;
    }
    free(line);
    if (rc != 0) {
        tool_trace_free(tr);
        return rc;
    }
    if (tr->bad_lines > MAX_REPORTED_BAD_LINES && errors != NULL)
        tool_error(errors, "breaker replay: %s: %zu malformed lines in all (the first %d shown)",
                   name, tr->bad_lines, MAX_REPORTED_BAD_LINES);
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
    /* A trace with a source column names each call's caller, so that
     * min_failing_sources sees them as the live breaker would. */
    if (c->source != 0) {
        (void)breaker_complete_from(b, &p->permit, c->outcome, c->source);
    } else {
        (void)breaker_complete(b, &p->permit, c->outcome);
    }
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
    uint64_t end = tool_add_ns(trace->origin_ns, 1);
    for (size_t i = 0; i < trace->count; i++) {
        uint64_t start = trace->calls[i].start_ns, dur = trace->calls[i].duration_ns;
        uint64_t e = tool_add_ns(start, dur);
        if (e >= end) end = tool_add_ns(e, 1);
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

/* Set a call's fate in this replay beside the shadow log's. */
static void compare_shadow(struct tool_shadow_compare *cmp, const struct tool_call *call,
                           bool refused) {
    bool shadow_refused = call->shadow != TOOL_SHADOW_NONE;
    if (refused && shadow_refused) {
        cmp->both_refused++;
    } else if (!refused && !shadow_refused) {
        cmp->neither_refused++;
    } else {
        if (refused)
            cmp->replay_only++;
        else
            cmp->shadow_only++;
        if (cmp->first_line == 0) {
            cmp->first_line = call->line;
            cmp->first_ns = call->start_ns;
            cmp->first_replay_refused = refused;
        }
    }
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
        struct pending p = {
            .key = {.at = tool_add_ns(call->start_ns, call->duration_ns), .tie = i}};
        /* The caller named at admission too, as a live client that knows
         * it would (breaker_acquire_from(): a probe keeps its caller). */
        bool refused = breaker_acquire_from(b, &p.permit, call->source) != BREAKER_OK;
        if (trace->has_shadow) compare_shadow(&out->shadow, call, refused);
        if (refused) {
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

bool tool_replay_flapping(const struct tool_replay_result *r) { return r->flaps >= 2; }

uint64_t tool_replay_trips(const struct tool_replay_result *r) {
    uint64_t n = 0;
    for (size_t i = 0; i < r->timeline.event_count; i++)
        n += r->timeline.events[i].from == BREAKER_CLOSED &&
             r->timeline.events[i].to == BREAKER_OPEN;
    return n;
}
