/*
 * ini_load.c - configuration and scenario files, parsed with inih.
 *
 *   [scenario]          workload: workers, rate, timeout, latency, ...
 *   [phase NAME]        dependency phases, in file order
 *   [breaker NAME]      one breaker configuration: breaker_config_set() keys
 *
 * inih reports the line of the first error; the handler keeps the message
 * of that first error so the two can be printed together.
 */
#include "tool.h"

#include <errno.h>
#include <ini.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int tool_breaker_set(struct tool_breaker *b, const char *key, const char *value, char *msg,
                     size_t msg_len) {
    int rc = breaker_config_set(&b->cfg, key, value, msg, msg_len);
    if (rc != BREAKER_OK) return rc;
    size_t n = strlen(b->summary);
    if (n + 2 < sizeof(b->summary))
        snprintf(b->summary + n, sizeof(b->summary) - n, "%s%s=%s", n ? " " : "", key, value);
    return BREAKER_OK;
}

int tool_breakers_add_spec(struct tool_breakers *list, const char *spec, const char *default_name,
                           char *msg, size_t msg_len) {
    char buf[512];
    if (strlen(spec) >= sizeof(buf)) {
        snprintf(msg, msg_len, "breaker spec too long");
        return -1;
    }
    snprintf(buf, sizeof(buf), "%s", spec);
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
            return -1;
        }
    }
    struct tool_breaker *b = tool_breakers_get(list, name);
    if (b == NULL) {
        snprintf(msg, msg_len, "out of memory");
        return -1;
    }
    char *save = NULL;
    for (char *item = strtok_r(body, ",", &save); item != NULL; item = strtok_r(NULL, ",", &save)) {
        char *e = strchr(item, '=');
        if (e == NULL) {
            snprintf(msg, msg_len, "'%s': expected key=value, got '%s'", spec, tool_trim(item));
            return -1;
        }
        *e = '\0';
        char err[TOOL_MSG_MAX];
        if (tool_breaker_set(b, tool_trim(item), tool_trim(e + 1), err, sizeof(err)) !=
            BREAKER_OK) {
            snprintf(msg, msg_len, "breaker '%s': %s", name, err);
            return -1;
        }
    }
    return 0;
}

/* ---- The INI handler ----------------------------------------------------------*/

struct loader {
    struct tool_scenario *sc;       /* NULL: only breakers matter */
    struct tool_breakers *breakers; /* where [breaker] sections go */
    struct tool_phase *phase;       /* the phase being filled */
    /* The input, read line by line through read_line() so that a section
     * with no keys still counts and every error has its line. */
    FILE *file;
    const char *text;
    unsigned line;
    bool at_line_start;
    unsigned err_line;
    char err[TOOL_MSG_MAX];
};

static int error(struct loader *ld, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Keep the first error's message; inih gives its line. @return 0 (inih:
 * "error on this line"). */
static int error(struct loader *ld, const char *fmt, ...) {
    if (ld->err[0] == '\0') {
        ld->err_line = ld->line;
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

static int scenario_key(struct loader *ld, const char *name, const char *value) {
    struct tool_scenario *sc = ld->sc;
    uint64_t u;
    double d;
    if (strcmp(name, "name") == 0) {
        snprintf(sc->name, sizeof(sc->name), "%s", value);
    } else if (strcmp(name, "description") == 0) {
        snprintf(sc->description, sizeof(sc->description), "%s", value);
    } else if (strcmp(name, "duration") == 0) {
        if (!tool_parse_duration(value, 0, &sc->duration_ns) || sc->duration_ns == 0)
            return error(ld, "scenario: %s: expected a duration such as 10m, got '%s'", name,
                         value);
    } else if (strcmp(name, "seed") == 0) {
        if (!tool_parse_uint(value, 0, UINT64_MAX, &sc->seed))
            return error(ld, "scenario: %s: expected a whole number, got '%s'", name, value);
    } else if (strcmp(name, "workers") == 0) {
        if (!tool_parse_uint(value, 1, 100000, &u))
            return error(ld, "scenario: %s: expected 1 to 100000, got '%s'", name, value);
        sc->workers = (uint32_t)u;
    } else if (strcmp(name, "rate") == 0) {
        if (!tool_parse_number(value, false, &d) || d <= 0.0 || d > 100000.0)
            return error(ld, "scenario: %s: expected requests per second in (0, 100000], got '%s'",
                         name, value);
        sc->rate = d;
    } else if (strcmp(name, "timeout") == 0) {
        if (!tool_parse_duration(value, 0, &sc->timeout_ns) || sc->timeout_ns == 0)
            return error(ld, "scenario: %s: expected a duration such as 1s, got '%s'", name, value);
    } else if (strcmp(name, "latency") == 0 || strcmp(name, "latency_p99") == 0) {
        uint64_t *f = name[7] == '\0' ? &sc->latency_ns : &sc->latency_p99_ns;
        if (!tool_parse_duration(value, 0, f) || *f == 0)
            return error(ld, "scenario: %s: expected a duration such as 20ms, got '%s'", name,
                         value);
    } else {
        return error(ld,
                     "scenario: unknown key '%s' (keys: name, description, duration, seed, "
                     "workers, rate, timeout, latency, latency_p99)",
                     name);
    }
    return 1;
}

static int phase_duration(struct loader *ld, const char *name, const char *value, uint64_t *out,
                          unsigned bit) {
    if (!tool_parse_duration(value, 0, out))
        return error(ld, "phase %s: %s: expected a duration such as 250ms, got '%s'",
                     ld->phase->name, name, value);
    ld->phase->given |= bit;
    return 1;
}

static int phase_key(struct loader *ld, const char *name, const char *value) {
    struct tool_phase *p = ld->phase;
    uint64_t u;
    if (strcmp(name, "kind") == 0) {
        static const char *const kinds[] = {"healthy", "down", "errors", "slow", "recovering"};
        for (size_t i = 0; i < 5; i++) {
            if (strcmp(value, kinds[i]) == 0) {
                p->kind = (enum tool_phase_kind)i;
                return 1;
            }
        }
        return error(ld,
                     "phase %s: kind: expected healthy, down, errors, slow or recovering, "
                     "got '%s'",
                     p->name, value);
    }
    if (strcmp(name, "duration") == 0) return phase_duration(ld, name, value, &p->duration_ns, 0);
    if (strcmp(name, "latency") == 0)
        return phase_duration(ld, name, value, &p->latency_ns, TOOL_GIVEN_LATENCY);
    if (strcmp(name, "latency_p99") == 0)
        return phase_duration(ld, name, value, &p->latency_p99_ns, TOOL_GIVEN_P99);
    if (strcmp(name, "cold_latency") == 0)
        return phase_duration(ld, name, value, &p->cold_latency_ns, TOOL_GIVEN_COLD_LATENCY);
    if (strcmp(name, "knockdown") == 0)
        return phase_duration(ld, name, value, &p->knockdown_ns, TOOL_GIVEN_KNOCKDOWN);
    if (strcmp(name, "error_rate") == 0) {
        if (!tool_parse_number(value, true, &p->error_rate) || p->error_rate > 1.0)
            return error(ld,
                         "phase %s: error_rate: expected a rate in [0, 1] such as 20%%, "
                         "got '%s'",
                         p->name, value);
        p->given |= TOOL_GIVEN_ERROR_RATE;
        return 1;
    }
    if (strcmp(name, "down") == 0) {
        if (strcmp(value, "timeout") == 0) {
            p->down = DOWN_TIMEOUT;
        } else if (strcmp(value, "refused") == 0) {
            p->down = DOWN_REFUSED;
        } else {
            return error(ld, "phase %s: down: expected timeout or refused, got '%s'", p->name,
                         value);
        }
        return 1;
    }
    if (strcmp(name, "capacity") == 0 || strcmp(name, "cold_capacity") == 0) {
        if (!tool_parse_uint(value, 0, 1000000, &u))
            return error(ld, "phase %s: %s: expected calls in flight, 0 to 1000000, got '%s'",
                         p->name, name, value);
        if (name[0] == 'c' && name[1] == 'a') {
            p->capacity = (uint32_t)u;
            p->given |= TOOL_GIVEN_CAPACITY;
        } else {
            p->cold_capacity = (uint32_t)u;
            p->given |= TOOL_GIVEN_COLD_CAPACITY;
        }
        return 1;
    }
    return error(ld,
                 "phase %s: unknown key '%s' (keys: kind, duration, latency, latency_p99, "
                 "error_rate, down, capacity, cold_latency, cold_capacity, knockdown)",
                 p->name, name);
}

static int breaker_key(struct loader *ld, const char *bname, const char *name, const char *value) {
    struct tool_breaker *b = tool_breakers_get(ld->breakers, bname);
    if (b == NULL) return error(ld, "out of memory");
    if (strcmp(name, "description") == 0) {
        snprintf(b->description, sizeof(b->description), "%s", value);
        return 1;
    }
    char msg[TOOL_MSG_MAX];
    if (tool_breaker_set(b, name, value, msg, sizeof(msg)) != BREAKER_OK)
        return error(ld, "breaker %s: %s", bname, msg);
    return 1;
}

/* A section header was read: create what it names, keys or not. */
static void on_section(struct loader *ld, const char *section) {
    const char *rest;
    ld->phase = NULL;
    if (starts_with_word(section, "breaker", &rest)) {
        if (tool_breakers_get(ld->breakers, *rest ? rest : "default") == NULL)
            error(ld, "out of memory");
        return;
    }
    if (ld->sc == NULL || !starts_with_word(section, "phase", &rest)) return;
    if (ld->sc->phase_count == TOOL_MAX_PHASE) {
        error(ld, "too many phases (at most %d)", TOOL_MAX_PHASE);
        return;
    }
    ld->phase = &ld->sc->phases[ld->sc->phase_count++];
    memset(ld->phase, 0, sizeof(*ld->phase));
    snprintf(ld->phase->name, sizeof(ld->phase->name), "%s", *rest ? rest : "phase");
}

/* inih's line reader (fgets semantics), watching for section headers. */
static char *read_line(char *buf, int size, void *stream) {
    struct loader *ld = stream;
    if (ld->file != NULL) {
        if (fgets(buf, size, ld->file) == NULL) return NULL;
    } else {
        if (*ld->text == '\0') return NULL;
        int n = 0;
        while (n < size - 1 && ld->text[n] != '\0' && ld->text[n] != '\n')
            n++;
        if (n < size - 1 && ld->text[n] == '\n') n++;
        memcpy(buf, ld->text, (size_t)n);
        buf[n] = '\0';
        ld->text += n;
    }
    bool starts = ld->at_line_start;
    size_t len = strlen(buf);
    ld->at_line_start = len > 0 && buf[len - 1] == '\n';
    if (!starts) return buf; /* the rest of an over-long line */
    ld->line++;
    const char *p = buf;
    while (*p == ' ' || *p == '\t')
        p++;
    const char *close = *p == '[' ? strchr(p, ']') : NULL;
    if (close != NULL) {
        char section[128];
        size_t n = (size_t)(close - p - 1);
        if (n >= sizeof(section)) n = sizeof(section) - 1;
        memcpy(section, p + 1, n);
        section[n] = '\0';
        on_section(ld, tool_trim(section));
    }
    return buf;
}

static int handler(void *user, const char *section, const char *name, const char *value) {
    struct loader *ld = user;
    const char *rest;
    if (starts_with_word(section, "breaker", &rest))
        return breaker_key(ld, *rest ? rest : "default", name, value);
    bool scenario_part =
        strcmp(section, "scenario") == 0 || starts_with_word(section, "phase", &rest);
    /* Replay reads a scenario file for its breakers and skips the rest. */
    if (ld->sc == NULL && scenario_part) return 1;
    if (strcmp(section, "scenario") == 0) return scenario_key(ld, name, value);
    if (starts_with_word(section, "phase", &rest)) {
        if (ld->phase == NULL) return 0; /* too many phases: already reported */
        return phase_key(ld, name, value);
    }
    return error(ld, "unknown section [%s] (expected [scenario], [phase NAME] or [breaker NAME])",
                 section);
}

int tool_load_ini(const char *path, const char *text, struct tool_scenario *sc,
                  struct tool_breakers *breakers, char *msg, size_t msg_len) {
    struct loader ld;
    memset(&ld, 0, sizeof(ld));
    ld.sc = sc;
    ld.breakers = breakers;
    ld.text = text;
    ld.at_line_start = true;
    const char *name = path != NULL ? path : "(built-in)";
    if (path != NULL) {
        ld.file = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
        if (ld.file == NULL) {
            snprintf(msg, msg_len, "%s: %s", path, strerror(errno));
            return -1;
        }
    }
    int rc = ini_parse_stream(read_line, &ld, handler, &ld);
    if (ld.file != NULL && ld.file != stdin) fclose(ld.file);
    if (rc == -2) {
        snprintf(msg, msg_len, "%s: out of memory", name);
        return -1;
    }
    if (ld.err[0] != '\0') {
        snprintf(msg, msg_len, "%s:%u: %s", name, ld.err_line, ld.err);
        return -1;
    }
    if (rc != 0) {
        snprintf(msg, msg_len, "%s:%d: syntax error (expected [section] or key = value)", name, rc);
        return -1;
    }
    return 0;
}
