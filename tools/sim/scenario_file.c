/* SPDX-License-Identifier: MIT */
/*
 * scenario_file.c - a scenario file's own sections, as cli/ini_load.c hands
 * them on: [scenario] (the workload) and [phase NAME] (the dependency's
 * phases, in file order). Its [breaker NAME] sections are the loader's.
 */
#include "sim/scenario.h"

#include "cli/parse.h"
#include "cli/text.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

struct reader {
    struct tool_scenario *sc;
    struct tool_phase *phase; /* the phase being filled */
    char *msg;                /* the loader's message, for the first error */
    size_t msg_len;
};

static int error(struct reader *ld, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Say why in the loader's message. @return 0 (the loader's "error on this
 * line"). */
static int error(struct reader *ld, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ld->msg, ld->msg_len, fmt, ap);
    va_end(ap);
    return 0;
}

/* [scenario] name and description. @return 1, or 0 after error(). */
static int text_key(struct reader *ld, const char *name, const char *value, char *field,
                    size_t size) {
    return tool_ini_text("scenario", name, value, field, size, ld->msg, ld->msg_len) == 0;
}

static int scenario_key(struct reader *ld, const char *name, const char *value) {
    struct tool_scenario *sc = ld->sc;
    uint64_t u;
    double d;
    if (strcmp(name, "name") == 0) {
        return text_key(ld, name, value, sc->name, sizeof(sc->name));
    } else if (strcmp(name, "description") == 0) {
        return text_key(ld, name, value, sc->description, sizeof(sc->description));
    } else if (strcmp(name, "duration") == 0) {
        if (!tool_parse_duration(value, 0, &sc->duration_ns) || sc->duration_ns == 0)
            return error(
                ld, "scenario: %s: expected a duration such as " TOOL_DURATION_FORMATS ", got '%s'",
                name, value);
    } else if (strcmp(name, "seed") == 0) {
        if (!tool_parse_uint(value, 0, UINT64_MAX, &sc->seed))
            return error(ld, "scenario: %s: expected a whole number, got '%s'", name, value);
    } else if (strcmp(name, "workers") == 0) {
        if (!tool_parse_uint(value, 1, 100000, &u))
            return error(ld, "scenario: %s: expected 1 to 100000, got '%s'", name, value);
        sc->workers = (uint32_t)u;
    } else if (strcmp(name, "clients") == 0) {
        if (!tool_parse_uint(value, 0, 1000000, &u))
            return error(ld, "scenario: %s: expected 0 (callers not named) to 1000000, got '%s'",
                         name, value);
        sc->clients = (uint32_t)u;
        sc->clients_given = true;
    } else if (strcmp(name, "instances") == 0) {
        if (!tool_parse_uint(value, 1, TOOL_MAX_INSTANCES, &u))
            return error(ld, "scenario: %s: expected 1 to %d, got '%s'", name, TOOL_MAX_INSTANCES,
                         value);
        sc->instances = (uint32_t)u;
    } else if (strcmp(name, "flush_interval") == 0) {
        if (!tool_parse_duration(value, 0, &u) || u < TOOL_MS || u > 60 * TOOL_SEC)
            return error(ld,
                         "scenario: %s: expected a duration from 1ms to 1m such as 250ms, got '%s'",
                         name, value);
        sc->flush_interval_ns = u;
    } else if (strcmp(name, "rate") == 0) {
        if (!tool_parse_number(value, false, &d) || d <= 0.0 || d > 100000.0)
            return error(ld, "scenario: %s: expected requests per second in (0, 100000], got '%s'",
                         name, value);
        sc->rate = d;
    } else if (strcmp(name, "timeout") == 0) {
        if (!tool_parse_duration(value, 0, &sc->timeout_ns) || sc->timeout_ns == 0)
            return error(
                ld, "scenario: %s: expected a duration such as " TOOL_DURATION_FORMATS ", got '%s'",
                name, value);
    } else if (strcmp(name, "latency") == 0 || strcmp(name, "latency_p99") == 0) {
        uint64_t *f = name[7] == '\0' ? &sc->latency_ns : &sc->latency_p99_ns;
        if (!tool_parse_duration(value, 0, f) || *f == 0)
            return error(
                ld, "scenario: %s: expected a duration such as " TOOL_DURATION_FORMATS ", got '%s'",
                name, value);
    } else {
        return error(ld,
                     "scenario: unknown key '%s' (keys: name, description, duration, seed, "
                     "workers, clients, rate, timeout, latency, latency_p99, instances, "
                     "flush_interval)",
                     name);
    }
    return 1;
}

static int phase_duration(struct reader *ld, const char *name, const char *value, uint64_t *out,
                          unsigned bit) {
    if (!tool_parse_duration(value, 0, out))
        return error(
            ld, "phase %s: %s: expected a duration such as " TOOL_DURATION_FORMATS ", got '%s'",
            ld->phase->name, name, value);
    ld->phase->given |= bit;
    return 1;
}

/* A share of the phase's requests, 0 to 1 or 0% to 100%. */
static int phase_share(struct reader *ld, const char *name, const char *value, const char *expected,
                       double *out, unsigned bit) {
    if (!tool_parse_number(value, true, out) || *out > 1.0)
        return error(ld, "phase %s: %s: expected %s, got '%s'", ld->phase->name, name, expected,
                     value);
    ld->phase->given |= bit;
    return 1;
}

static int phase_key(struct reader *ld, const char *name, const char *value) {
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
    if (strcmp(name, "error_rate") == 0)
        return phase_share(ld, name, value, "a rate in [0, 1] such as 20%", &p->error_rate,
                           TOOL_GIVEN_ERROR_RATE);
    if (strcmp(name, "retry_after") == 0) {
        int rc = phase_duration(ld, name, value, &p->retry_after_ns, 0);
        if (rc == 1 && p->retry_after_ns == 0)
            return error(ld, "phase %s: retry_after: expected a wait over 0 such as 30s, got '%s'",
                         p->name, value);
        return rc;
    }
    if (strcmp(name, "abuser_share") == 0)
        return phase_share(ld, name, value, "a share in [0, 1] such as 60%", &p->abuser_share, 0);
    if (strcmp(name, "abuser_snipes") == 0) {
        if (strcmp(value, "yes") != 0 && strcmp(value, "no") != 0 && strcmp(value, "hint") != 0)
            return error(ld, "phase %s: abuser_snipes: expected yes, hint or no, got '%s'", p->name,
                         value);
        p->abuser_snipes = value[0] != 'n';
        p->snipes_by_hint = value[0] == 'h';
        return 1;
    }
    if (strcmp(name, "abuser_hangs") == 0) {
        if (strcmp(value, "yes") != 0 && strcmp(value, "no") != 0)
            return error(ld, "phase %s: abuser_hangs: expected yes or no, got '%s'", p->name,
                         value);
        p->abuser_hangs = value[0] == 'y';
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
                 "error_rate, retry_after, abuser_share, abuser_snipes, abuser_hangs, down, "
                 "capacity, "
                 "cold_latency, "
                 "cold_capacity, "
                 "knockdown)",
                 p->name, name);
}

static int on_phase(void *ctx, const char *name, char *msg, size_t msg_len) {
    struct reader *ld = ctx;
    ld->msg = msg;
    ld->msg_len = msg_len;
    ld->phase = NULL;
    if (ld->sc->phase_count == TOOL_MAX_PHASE)
        return error(ld, "too many phases (at most %d)", TOOL_MAX_PHASE);
    ld->phase = &ld->sc->phases[ld->sc->phase_count++];
    memset(ld->phase, 0, sizeof(*ld->phase));
    memcpy(ld->phase->name, name, strlen(name) + 1);
    return 1;
}

static int on_key(void *ctx, bool in_phase, const char *name, const char *value, char *msg,
                  size_t msg_len) {
    struct reader *ld = ctx;
    ld->msg = msg;
    ld->msg_len = msg_len;
    return in_phase ? phase_key(ld, name, value) : scenario_key(ld, name, value);
}

int tool_load_scenario_stream(FILE *in, const char *name, struct tool_scenario *sc,
                              struct tool_breakers *breakers, char *msg, size_t msg_len) {
    struct reader ld = {.sc = sc};
    const struct tool_ini_scenario hook = {.ctx = &ld, .phase = on_phase, .key = on_key};
    return tool_load_ini_stream(in, name, sc != NULL ? &hook : NULL, breakers, msg, msg_len);
}

int tool_load_scenario(const char *path, const char *text, struct tool_scenario *sc,
                       struct tool_breakers *breakers, char *msg, size_t msg_len) {
    struct reader ld = {.sc = sc};
    const struct tool_ini_scenario hook = {.ctx = &ld, .phase = on_phase, .key = on_key};
    return tool_load_ini(path, text, sc != NULL ? &hook : NULL, breakers, msg, msg_len);
}
