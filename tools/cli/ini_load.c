/* SPDX-License-Identifier: MIT */
/*
 * ini_load.c - configuration and scenario files, and the -b and -s options.
 *
 *   [scenario]          workload: workers, rate, timeout, latency, ...
 *   [phase NAME]        dependency phases, in file order
 *   [breaker NAME]      one breaker configuration: breaker_config_set() keys
 *
 * The files were read with inih, whose line buffer (200 bytes, fixed when
 * the system's library was built) cut long lines in two and parsed the
 * rest as a line of its own, and which cut section names at 49 bytes. The
 * parser here reads inih's syntax (comments, sections, key = value or
 * key: value, inline " ;" comments, indented continuation lines, a UTF-8
 * BOM) with lines of any length, and stops at the first error.
 */
#include "cli/config.h"

#include "cli/parse.h"
#include "cli/text.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* `breaker keys`: what -b, -s and [breaker NAME] sections accept. */
const char tool_keys_help[] =
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
    "  open_max              cap of the wait, >= open (5m; unset, it follows a\n"
    "                        longer open)\n"
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
    "Durations: 250ms, 5s, 1m, 1m30s, 1500us, 20ns, 1.5s: a unit always (0 needs\n"
    "none); duration keys spelled with _ns (open_ns) take nanoseconds. Rates: 0.5\n"
    "or 50%.\n"
    "Simulation only (breaker simulate, not a breaker limit):\n"
    "  shadow                yes: run in shadow mode, refusing nothing (no)\n"
    "  retry_after_opens     yes: a 429's Retry-After opens for that long (no)\n";

/* ---- Breaker configuration lists -------------------------------------------*/

struct tool_breaker *tool_breakers_get(struct tool_breakers *list, const char *name) {
    for (size_t i = 0; i < list->count; i++)
        if (strcmp(list->items[i].name, name) == 0) return &list->items[i];
    if (list->count == list->cap) {
        size_t cap = list->cap ? 2 * list->cap : 4;
        struct tool_breaker *items = realloc(list->items, cap * sizeof(*items));
        if (items == NULL) return NULL;
        list->items = items;
        list->cap = cap;
    }
    struct tool_breaker *b = &list->items[list->count++];
    memset(b, 0, sizeof(*b));
    snprintf(b->name, sizeof(b->name), "%s", name);
    breaker_config_init(&b->cfg);
    return b;
}

void tool_breakers_free(struct tool_breakers *list) {
    free(list->items);
    memset(list, 0, sizeof(*list));
}

/* Whether `key` names `field` as breaker_config_set() takes it: the key, or
 * with the "_ns" of a duration key. */
static bool is_key(const char *key, const char *field) {
    size_t n = strlen(field);
    return strncmp(key, field, n) == 0 && (key[n] == '\0' || strcmp(key + n, "_ns") == 0);
}

/* simulate's yes/no keys, which are no breaker_config fields. @return 1 if
 * `key` is one (set, or `msg` and BREAKER_EINVAL in *rc), else 0. */
static int sim_key(struct tool_breaker *b, const char *key, const char *value, char *msg,
                   size_t msg_len, int *rc) {
    bool *flag = strcmp(key, "shadow") == 0              ? &b->shadow
                 : strcmp(key, "retry_after_opens") == 0 ? &b->retry_after_opens
                                                         : NULL;
    if (flag == NULL) return 0;
    *rc = BREAKER_OK;
    if (strcmp(value, "yes") == 0) {
        *flag = true;
    } else if (strcmp(value, "no") == 0) {
        *flag = false;
    } else {
        snprintf(msg, msg_len, "%s: expected yes or no, got '%s'", key, value);
        *rc = BREAKER_EINVAL;
    }
    return 1;
}

/* An unknown key (`msg` the library's "unknown key 'KEY' (keys: a, b,
 * ...)"): the closest key instead of the list, as a mistyped option or
 * command gets. The candidates are the library's own list, each duration
 * key with its "_ns" spelling too (those breaker_config_set() knows), and
 * simulate's keys; no close one leaves the message as it is. */
static void suggest_key(const char *key, char *msg, size_t msg_len) {
    const char *list = strstr(msg, " (keys: ");
    if (list == NULL) return;
    char names[TOOL_MSG_MAX];
    snprintf(names, sizeof names, "%s", list + strlen(" (keys: "));
    enum { MAX_KEYS = 64 };
    char spelled[MAX_KEYS][48]; /* "open_ns", ... */
    const char *cand[2 * MAX_KEYS + 2];
    size_t n = 0, durations = 0;
    breaker_config scratch;
    breaker_config_init(&scratch);
    char *save = NULL;
    for (char *name = strtok_r(names, ", )", &save); name != NULL && durations < MAX_KEYS;
         name = strtok_r(NULL, ", )", &save)) {
        cand[n++] = name;
        char *ns = spelled[durations];
        snprintf(ns, sizeof spelled[0], "%s_ns", name);
        if (breaker_config_set(&scratch, ns, "0", NULL, 0) != BREAKER_NOT_FOUND) {
            cand[n++] = ns;
            durations++;
        }
    }
    cand[n++] = "shadow";
    cand[n++] = "retry_after_opens";
    const char *best = tool_suggest(key, cand, n);
    if (best == NULL) return;
    size_t quoted = (size_t)(list - msg); /* "unknown key 'KEY'", escaped by the library */
    char head[TOOL_MSG_MAX];
    snprintf(head, sizeof head, "%.*s", (int)quoted, msg);
    snprintf(msg, msg_len, "%s; did you mean '%s'?", head, best);
}

int tool_breaker_set(struct tool_breaker *b, const char *key, const char *value, char *msg,
                     size_t msg_len) {
    int rc = BREAKER_OK;
    if (!sim_key(b, key, value, msg, msg_len, &rc))
        rc = breaker_config_set(&b->cfg, key, value, msg, msg_len);
    if (rc == BREAKER_NOT_FOUND) suggest_key(key, msg, msg_len);
    if (rc != BREAKER_OK) return rc;
    /* Who sets open alone means it: an open_max left to its default follows
     * a longer open, rather than refuse it as shorter than open. */
    if (is_key(key, "open_max")) b->open_max_given = true;
    if (is_key(key, "open") && !b->open_max_given && b->cfg.open_max_ns < b->cfg.open_ns)
        b->cfg.open_max_ns = b->cfg.open_ns;
    /* The summary is for people: a key that does not fit is left out and
     * the summary ends in "...", rather than show a value cut short. */
    static const char more[] = " ...";
    size_t n = strlen(b->summary), room = sizeof(b->summary) - n;
    bool full = strcmp(b->summary, more + 1) == 0 ||
                (n >= sizeof(more) - 1 && strcmp(b->summary + n - (sizeof(more) - 1), more) == 0);
    if (full) return BREAKER_OK;
    int w = snprintf(b->summary + n, room, "%s%s=%s", n ? " " : "", key, value);
    if (w < 0 || (size_t)w >= room) {
        b->summary[n] = '\0';
        while (n > 0 && n + sizeof(more) > sizeof(b->summary)) { /* room for the mark */
            char *blank = strrchr(b->summary, ' ');
            n = blank != NULL ? (size_t)(blank - b->summary) : 0;
            b->summary[n] = '\0';
        }
        snprintf(b->summary + n, sizeof(b->summary) - n, "%s", n ? more : more + 1);
    }
    return BREAKER_OK;
}

/* Split "key=value" in place at its first '=' and set it. @return 0, or -1
 * with `msg` ("key: why", from the library). */
static int assign_pair(struct tool_breaker *b, char *pair, char *msg, size_t msg_len) {
    char *eq = strchr(pair, '=');
    if (eq == NULL) {
        snprintf(msg, msg_len, "expected key=value, got '%s'", tool_trim(pair));
        return -1;
    }
    *eq = '\0';
    return tool_breaker_set(b, tool_trim(pair), tool_trim(eq + 1), msg, msg_len) == BREAKER_OK ? 0
                                                                                               : -1;
}

int tool_breaker_assign(struct tool_breaker *b, const char *assignment, char *msg, size_t msg_len) {
    char *pair = strdup(assignment);
    if (pair == NULL) {
        snprintf(msg, msg_len, "out of memory");
        return -1;
    }
    int rc = assign_pair(b, pair, msg, msg_len);
    free(pair);
    return rc;
}

/* A name shown in tables and pictures: it must fit its field whole and hold
 * no control bytes. @return 0, or -1 with `msg` ("WHAT 'NAME' is ...", the
 * name quoted up to 64 bytes, as the library quotes values). */
static int check_name(const char *what, const char *name, char *msg, size_t msg_len) {
    size_t n = strlen(name);
    if (n >= TOOL_NAME_MAX) {
        snprintf(msg, msg_len, "%s '%.64s%s' is %zu characters long; at most %d", what, name,
                 n > 64 ? "..." : "", n, TOOL_NAME_MAX - 1);
        return -1;
    }
    if (!tool_text_is_plain(name)) {
        snprintf(msg, msg_len, "%s '%s': control characters and invalid UTF-8 are not allowed",
                 what, name);
        return -1;
    }
    return 0;
}

int tool_breakers_add_spec(struct tool_breakers *list, const char *spec, const char *default_name,
                           char *msg, size_t msg_len) {
    char *buf = strdup(spec);
    if (buf == NULL) {
        snprintf(msg, msg_len, "out of memory");
        return -1;
    }
    int rc = -1;
    char *body = buf;
    const char *name = default_name;
    char *colon = strchr(buf, ':');
    char *eq = strchr(buf, '=');
    if (colon != NULL && (eq == NULL || colon < eq)) {
        *colon = '\0';
        name = tool_trim(buf);
        body = colon + 1;
        if (*name == '\0') {
            snprintf(msg, msg_len, "'%s': empty breaker name before ':'", spec);
            goto out;
        }
        if (check_name("breaker name", name, msg, msg_len) != 0) goto out;
    }
    struct tool_breaker *b = tool_breakers_get(list, name);
    if (b == NULL) {
        snprintf(msg, msg_len, "out of memory");
        goto out;
    }
    char *save = NULL;
    for (char *item = strtok_r(body, ",", &save); item != NULL; item = strtok_r(NULL, ",", &save)) {
        if (strchr(item, '=') == NULL) {
            snprintf(msg, msg_len, "'%s': expected key=value, got '%s'", spec, tool_trim(item));
            goto out;
        }
        char err[TOOL_MSG_MAX];
        if (assign_pair(b, item, err, sizeof(err)) != 0) {
            snprintf(msg, msg_len, "breaker '%s': %s", name, err);
            goto out;
        }
    }
    rc = 0;
out:
    free(buf);
    return rc;
}

/* ---- The INI handler ----------------------------------------------------------*/

struct loader {
    const struct tool_ini_scenario *sc; /* NULL: only breakers matter */
    struct tool_breakers *breakers;     /* where [breaker] sections go */
    bool in_phase;                      /* a [phase NAME] was started */
    const char *section;                /* the current section's name, "" before any */
    char *prev_name;                    /* the last key, for continuation lines */
    unsigned line;
    char err[TOOL_MSG_MAX];
};

static int error(struct loader *ld, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Keep the first error's message; the parser stops there and prints it with
 * its line. @return 0 (the handlers' "error on this line"). */
static int error(struct loader *ld, const char *fmt, ...) {
    if (ld->err[0] == '\0') {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ld->err, sizeof(ld->err), fmt, ap);
        va_end(ap);
    }
    return 0;
}

static bool starts_with_word(const char *s, const char *word, const char **rest) {
    size_t n = strlen(word);
    if (strncmp(s, word, n) != 0 || (s[n] != '\0' && s[n] != ' ' && s[n] != '\t')) return false;
    *rest = s + n;
    while (**rest == ' ' || **rest == '\t')
        (*rest)++;
    return true;
}

int tool_ini_text(const char *where, const char *name, const char *value, char *field, size_t size,
                  char *msg, size_t msg_len) {
    size_t n = strlen(value);
    if (n >= size) {
        snprintf(msg, msg_len, "%s: %s is %zu characters long; at most %zu", where, name, n,
                 size - 1);
        return -1;
    }
    if (!tool_text_is_plain(value)) {
        snprintf(msg, msg_len, "%s: %s: control characters and invalid UTF-8 are not allowed",
                 where, name);
        return -1;
    }
    memcpy(field, value, n + 1);
    return 0;
}

static int breaker_key(struct loader *ld, const char *bname, const char *name, const char *value) {
    struct tool_breaker *b = tool_breakers_get(ld->breakers, bname);
    if (b == NULL) return error(ld, "out of memory");
    char msg[TOOL_MSG_MAX];
    if (strcmp(name, "description") == 0) {
        char where[TOOL_MSG_MAX];
        snprintf(where, sizeof(where), "breaker %s", bname);
        return tool_ini_text(where, name, value, b->description, sizeof(b->description), ld->err,
                             sizeof(ld->err)) == 0;
    }
    if (tool_breaker_set(b, name, value, msg, sizeof(msg)) != BREAKER_OK)
        return error(ld, "breaker %s: %s", bname, msg);
    return 1;
}

/* A section header was read: create what it names, keys or not. */
static void on_section(struct loader *ld, const char *section) {
    const char *rest;
    char msg[TOOL_MSG_MAX];
    ld->in_phase = false;
    if (starts_with_word(section, "breaker", &rest)) {
        const char *name = *rest ? rest : "default";
        if (check_name("breaker name", name, msg, sizeof(msg)) != 0) {
            error(ld, "%s", msg);
        } else if (tool_breakers_get(ld->breakers, name) == NULL) {
            error(ld, "out of memory");
        }
        return;
    }
    if (ld->sc == NULL || !starts_with_word(section, "phase", &rest)) return;
    const char *name = *rest ? rest : "phase";
    if (check_name("phase name", name, msg, sizeof(msg)) != 0) {
        error(ld, "%s", msg);
        return;
    }
    ld->in_phase = ld->sc->phase(ld->sc->ctx, name, ld->err, sizeof(ld->err)) != 0;
}

/* A key = value line of `section`. @return 1, or 0 after error(). */
static int handler(struct loader *ld, const char *section, const char *name, const char *value) {
    const char *rest;
    if (starts_with_word(section, "breaker", &rest))
        return breaker_key(ld, *rest ? rest : "default", name, value);
    bool scenario_part =
        strcmp(section, "scenario") == 0 || starts_with_word(section, "phase", &rest);
    /* Replay reads a scenario file for its breakers and skips the rest. */
    if (ld->sc == NULL && scenario_part) return 1;
    if (strcmp(section, "scenario") == 0)
        return ld->sc->key(ld->sc->ctx, false, name, value, ld->err, sizeof(ld->err));
    if (starts_with_word(section, "phase", &rest)) {
        if (!ld->in_phase) return 0; /* too many phases: already reported */
        return ld->sc->key(ld->sc->ctx, true, name, value, ld->err, sizeof(ld->err));
    }
    return error(ld, "unknown section [%s] (expected [scenario], [phase NAME] or [breaker NAME])",
                 section);
}

/* ---- The INI parser ------------------------------------------------------------*/

/* Blanks as inih skips them (isspace). */
static char *skip_blanks(char *s) {
    while (*s != '\0' && isspace((unsigned char)*s))
        s++;
    return s;
}

static char *strip_end(char *s) {
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* The first of `chars` in `s`, or the start of an inline comment (a ';'
 * after a blank), or the end of `s`: inih's find_chars_or_comment(). */
static char *find_chars_or_comment(char *s, const char *chars) {
    bool was_space = false;
    while (*s != '\0' && (chars == NULL || strchr(chars, *s) == NULL) &&
           !(was_space && *s == ';')) {
        was_space = isspace((unsigned char)*s);
        s++;
    }
    return s;
}

static int syntax_error(struct loader *ld) {
    return error(ld, "syntax error (expected [section] or key = value)");
}

/* Remember the last key's name, for continuation lines. @return 1, or 0
 * after error(). */
static int keep_name(struct loader *ld, const char *name) {
    free(ld->prev_name);
    ld->prev_name = strdup(name);
    return ld->prev_name != NULL ? 1 : error(ld, "out of memory");
}

/* "[section]": every later key belongs to it. @return 1, or 0 after error(). */
static int section_line(struct loader *ld, char *start, char **section) {
    char *end = find_chars_or_comment(start + 1, "]");
    if (*end != ']') return syntax_error(ld);
    *end = '\0';
    free(*section);
    *section = strdup(tool_trim(start + 1));
    if (*section == NULL) return error(ld, "out of memory");
    ld->section = *section;
    free(ld->prev_name);
    ld->prev_name = NULL;
    on_section(ld, ld->section);
    return ld->err[0] == '\0';
}

/* One line (its newline removed), read as inih reads it. @return 1, or 0
 * after error(). */
static int parse_line(struct loader *ld, char *line, char **section) {
    char *start = line;
    if (ld->line == 1 && strncmp(start, "\xEF\xBB\xBF", 3) == 0) start += 3; /* a UTF-8 BOM */
    start = skip_blanks(strip_end(start));
    if (*start == '\0' || *start == ';' || *start == '#') return 1; /* blank or comment */
    if (ld->prev_name != NULL && start > line) {
        /* An indented line after a key continues its value (as Python's
         * configparser): the handler sees the key again. */
        *find_chars_or_comment(start, NULL) = '\0';
        return handler(ld, ld->section, ld->prev_name, strip_end(start));
    }
    if (*start == '[') return section_line(ld, start, section);
    char *end = find_chars_or_comment(start, "=:");
    if (*end != '=' && *end != ':') return syntax_error(ld);
    *end = '\0';
    char *name = strip_end(start);
    char *value = end + 1;
    *find_chars_or_comment(value, NULL) = '\0';
    value = strip_end(skip_blanks(value));
    if (!keep_name(ld, name)) return 0;
    return handler(ld, ld->section, name, value);
}

int tool_load_ini_stream(FILE *in, const char *name, const struct tool_ini_scenario *sc,
                         struct tool_breakers *breakers, char *msg, size_t msg_len) {
    struct loader ld;
    memset(&ld, 0, sizeof(ld));
    ld.sc = sc;
    ld.breakers = breakers;
    ld.section = "";
    char *section = NULL, *line = NULL;
    size_t cap = 0;
    ssize_t got;
    errno = 0;
    while (ld.err[0] == '\0' && (got = getline(&line, &cap, in)) != -1) {
        errno = 0;
        ld.line++;
        size_t len = (size_t)got;
        if (len > 0 && line[len - 1] == '\n') line[--len] = '\0';
        if (memchr(line, '\0', len) != NULL) {
            error(&ld, "a NUL byte in the line");
            break;
        }
        parse_line(&ld, line, &section);
    }
    bool read_error = ld.err[0] == '\0' && ferror(in);
    int read_errno = errno; /* getline's: EISDIR for a directory */
    free(line);
    free(section);
    free(ld.prev_name);
    if (ld.err[0] != '\0') {
        snprintf(msg, msg_len, "%s:%u: %s", name, ld.line, ld.err);
        return -1;
    }
    if (read_error) {
        snprintf(msg, msg_len, "%s: %s", name,
                 read_errno != 0 ? strerror(read_errno) : "read error");
        return -2;
    }
    return 0;
}

int tool_load_ini(const char *path, const char *text, const struct tool_ini_scenario *sc,
                  struct tool_breakers *breakers, char *msg, size_t msg_len) {
    if (path == NULL) {
        /* fmemopen() refuses an empty buffer, and there is nothing to read. */
        if (*text == '\0') return 0;
        FILE *in = fmemopen((void *)(uintptr_t)text, strlen(text), "r");
        if (in == NULL) {
            snprintf(msg, msg_len, "(built-in): %s", strerror(errno));
            return -2;
        }
        int rc = tool_load_ini_stream(in, "(built-in)", sc, breakers, msg, msg_len);
        fclose(in);
        return rc;
    }
    bool from_stdin = strcmp(path, "-") == 0;
    FILE *in = from_stdin ? stdin : fopen(path, "r");
    if (in == NULL) {
        snprintf(msg, msg_len, "%s: %s", path, strerror(errno));
        return -2;
    }
    int rc = tool_load_ini_stream(in, path, sc, breakers, msg, msg_len);
    if (!from_stdin) fclose(in);
    return rc;
}
