/* SPDX-License-Identifier: MIT */
/*
 * config.c - `breaker config NAME [key=value...]`: a store's breaker's
 * limits, shown, or changed live for every process of the host
 * (breaker_reconfigure()).
 */
#define _POSIX_C_SOURCE 200809L /* open_memstream, strtok_r */

#include "ops/commands.h"
#include "ops/ops.h"

#include "cli/config.h"
#include "cli/parse.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char tool_config_help[] =
    "usage: breaker config NAME [key=value...] [options]\n"
    "\n"
    "Without key=value: prints the limits of the store's breaker NAME, one\n"
    "key=value per line (the keys of breaker keys), after its configuration\n"
    "generation. With them: changes those limits live, at once for every\n"
    "process of the host, keeping the breaker's state, counters and the calls\n"
    "in flight; prints the generation before and after. What shapes the\n"
    "breaker's block cannot change live (trip, window_size, window,\n"
    "window_buckets, half_open_max_probes, slow_call to or from 0, ramp to 0):\n"
    "refused (exit 78), naming it. A change made by another process between\n"
    "the read and the write is not overwritten (exit 75: run it again).\n" TOOL_STORE_PATH_HELP "\n"
    "With --redis ADDR or --redis-cluster SEEDS, the limits are the whole fleet's,\n"
    "stored in Redis's control record: shown with its version, or changed for every\n"
    "host (each applies them at its next flush), fenced by the version read (exit\n"
    "75), and printed old -> new. The fleet stores min_calls, failure_rate, slow_call_rate,\n"
    "open, open_backoff, open_max, open_jitter, half_open_successes,\n"
    "probe_timeout, failure_threshold and min_failing_sources (changeable), window,\n"
    "window_buckets and half_open_max_probes (not live); the other keys (ramp,\n"
    "slow_call, ...) are each host's: refused (exit 64).\n"
    "\n"
    "options:\n"
    "      --store PATH      the store file\n" TOOL_FLEET_OPTIONS_HELP(
        "change") "  -h, --help            show this text\n";

/* The limits as key=value lines breaker_config_set() reads back. */
static void print_limits(FILE *out, const breaker_config *c) {
    char d[32];
    fprintf(out, "trip=%s\n", breaker_trip_name(c->trip));
    if (c->trip == BREAKER_TRIP_CONSECUTIVE)
        fprintf(out, "failure_threshold=%u\n", c->failure_threshold);
    if (c->trip == BREAKER_TRIP_COUNT_WINDOW) fprintf(out, "window_size=%u\n", c->window_size);
    if (c->trip == BREAKER_TRIP_TIME_WINDOW)
        fprintf(out, "window=%s\nwindow_buckets=%u\n",
                tool_format_duration(c->window_ns, d, sizeof(d)), c->window_buckets);
    if (c->trip != BREAKER_TRIP_CONSECUTIVE)
        fprintf(out, "min_calls=%u\nfailure_rate=%g\n", c->min_calls, c->failure_rate);
    fprintf(out, "slow_call=%s\n",
            c->slow_call_ns ? tool_format_duration(c->slow_call_ns, d, sizeof(d)) : "0");
    fprintf(out, "slow_call_rate=%g\n", c->slow_call_rate);
    fprintf(out, "open=%s\n", tool_format_duration(c->open_ns, d, sizeof(d)));
    fprintf(out, "open_backoff=%g\n", c->open_backoff);
    fprintf(out, "open_max=%s\n", tool_format_duration(c->open_max_ns, d, sizeof(d)));
    fprintf(out, "open_jitter=%g\n", c->open_jitter);
    fprintf(out, "half_open_max_probes=%u\nhalf_open_successes=%u\n", c->half_open_max_probes,
            c->half_open_successes);
    fprintf(out, "probe_timeout=%s\n", tool_format_duration(c->probe_timeout_ns, d, sizeof(d)));
    fprintf(out, "ramp=%s\n", c->ramp_ns ? tool_format_duration(c->ramp_ns, d, sizeof(d)) : "0");
    fprintf(out, "ramp_start=%g\n", c->ramp_start);
    fprintf(out, "min_failing_sources=%u\n", c->min_failing_sources);
    fprintf(out, "cancelled_as=%s\n", breaker_outcome_name(c->cancelled_as));
}

static void print_config(const char *name, const char *what, uint64_t generation,
                         const breaker_config *c) {
    printf("%s: %sconfiguration generation %" PRIu64 "\n", name, what, generation);
    print_limits(stdout, c);
}

/* What shapes the breaker's block and cannot change live, said with the
 * keys and durations the command takes (the library's message names the C
 * fields, in ns): `*why` set, or NULL. A key left at 0 ("the default") is
 * left to the library's check, which knows the defaults. */
static const char *shape_change(const breaker_config *was, const breaker_config *now, char *what,
                                size_t len) {
    char d1[32], d2[32];
    if (now->trip != was->trip)
        return snprintf(what, len, "trip: %s -> %s", breaker_trip_name(was->trip),
                        breaker_trip_name(now->trip)),
               "it chooses the window the breaker keeps";
    if (was->trip == BREAKER_TRIP_COUNT_WINDOW && now->window_size != 0 &&
        now->window_size != was->window_size)
        return snprintf(what, len, "window_size: %u -> %u", was->window_size, now->window_size),
               "it sizes the count window";
    if (was->trip == BREAKER_TRIP_TIME_WINDOW && now->window_ns != 0 &&
        now->window_ns != was->window_ns)
        return snprintf(what, len, "window: %s -> %s",
                        tool_format_duration(was->window_ns, d1, sizeof(d1)),
                        tool_format_duration(now->window_ns, d2, sizeof(d2))),
               "it lays out the time window's buckets";
    if (was->trip == BREAKER_TRIP_TIME_WINDOW && now->window_buckets != 0 &&
        now->window_buckets != was->window_buckets)
        return snprintf(what, len, "window_buckets: %u -> %u", was->window_buckets,
                        now->window_buckets),
               "it lays out the time window's buckets";
    if (now->half_open_max_probes != 0 && now->half_open_max_probes != was->half_open_max_probes)
        return snprintf(what, len, "half_open_max_probes: %u -> %u", was->half_open_max_probes,
                        now->half_open_max_probes),
               "it sizes the probe slots";
    if ((now->slow_call_ns == 0) != (was->slow_call_ns == 0))
        return snprintf(what, len, "slow_call: %s -> %s",
                        was->slow_call_ns ? tool_format_duration(was->slow_call_ns, d1, sizeof(d1))
                                          : "0",
                        now->slow_call_ns ? tool_format_duration(now->slow_call_ns, d2, sizeof(d2))
                                          : "0"),
               "timing calls is on or off for the breaker's life; a timed breaker's slow_call "
               "may change";
    if (was->ramp_ns != 0 && now->ramp_ns == 0)
        return snprintf(what, len, "ramp: %s -> 0",
                        tool_format_duration(was->ramp_ns, d1, sizeof(d1))),
               "a ramp cannot be turned off; set a short one (ramp=1ms) instead";
    return NULL;
}

/* The keys the fleet stores (docs/fleet.md, "Limits"); the others are
 * each host's. */
static bool fleet_stores(const char *key) {
    static const char *const keys[] = {"failure_threshold",
                                       "window",
                                       "window_buckets",
                                       "min_calls",
                                       "failure_rate",
                                       "slow_call_rate",
                                       "open",
                                       "open_backoff",
                                       "open_max",
                                       "open_jitter",
                                       "half_open_max_probes",
                                       "half_open_successes",
                                       "probe_timeout",
                                       "min_failing_sources"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strcmp(key, keys[i]) == 0) return true;
    return false;
}

/* The key=value arguments of `a` applied to `t` (`fleet`: to the fleet's
 * stored limits, so a key the fleet does not store is refused). @return 0
 * or an exit status after saying why. */
static int apply_pairs(const char *cmd, const struct tool_store_args *a, struct tool_breaker *t,
                       bool fleet) {
    t->open_max_given = true; /* an open_max already set: it does not follow open */
    char msg[512];
    for (int i = 0; i < a->n_pairs; i++) {
        char pair[512];
        snprintf(pair, sizeof(pair), "%s", a->pairs[i]);
        char *eq = strchr(pair, '=');
        if (eq == NULL) {
            tool_error(stderr, "breaker %s: expected key=value, got '%s'", cmd, a->pairs[i]);
            return TOOL_EXIT_USAGE;
        }
        *eq = '\0';
        const char *key = tool_trim(pair);
        if (strcmp(key, "shadow") == 0 || strcmp(key, "retry_after_opens") == 0) {
            tool_error(stderr,
                       "breaker %s: %s: not a limit of the breaker (shadow mode: breaker shadow "
                       "NAME on|off)",
                       cmd, key);
            return TOOL_EXIT_USAGE;
        }
        if (fleet && strcmp(key, "trip") == 0) {
            tool_error(stderr,
                       "breaker %s: trip: the fleet's trip policy cannot change live (delete the "
                       "name's state in Redis to start the fleet over)",
                       cmd);
            return TOOL_EXIT_CONFIG;
        }
        if (tool_breaker_set(t, tool_trim(pair), tool_trim(eq + 1), msg, sizeof(msg)) !=
            BREAKER_OK) {
            tool_error(stderr, "breaker %s: %s: %s", cmd, a->name, msg);
            return TOOL_EXIT_CONFIG;
        }
        /* A key of the breaker's (it was set), not one the fleet stores. */
        if (fleet && !fleet_stores(key)) {
            tool_error(stderr,
                       "breaker %s: %s: not one of the fleet's stored limits but each host's own: "
                       "change it on each host (breaker config NAME %s=... --store PATH there, or "
                       "its configuration)",
                       cmd, key, key);
            return TOOL_EXIT_USAGE;
        }
    }
    return 0;
}

static int configure(breaker *b, const struct tool_store_args *a, const char *cmd) {
    uint64_t generation = breaker_config_generation(b);
    struct tool_breaker t;
    memset(&t, 0, sizeof(t));
    breaker_get_config(b, &t.cfg);
    if (a->n_pairs == 0) {
        print_config(a->name, "", generation, &t.cfg);
        return BREAKER_OK;
    }
    int bad = apply_pairs(cmd, a, &t, false);
    if (bad != 0) return bad;
    char msg[512];
    breaker_config was;
    breaker_get_config(b, &was);
    char what[128];
    const char *because = shape_change(&was, &t.cfg, what, sizeof(what));
    if (because != NULL) {
        tool_error(stderr,
                   "breaker %s: %s: %s: cannot change on a running breaker (%s); use a new "
                   "name for that",
                   cmd, a->name, what, because);
        return TOOL_EXIT_CONFIG;
    }
    int rc = breaker_reconfigure(b, &t.cfg, generation, msg, sizeof(msg));
    if (rc == BREAKER_STALE) {
        tool_error(stderr, "breaker %s: %s: %s", cmd, a->name, msg);
        return TOOL_EXIT_REFUSED;
    }
    if (rc == BREAKER_EINVAL) {
        tool_error(stderr, "breaker %s: %s: %s", cmd, a->name, msg);
        return TOOL_EXIT_CONFIG;
    }
    if (rc != BREAKER_OK) return rc;
    printf("%s: configuration generation %" PRIu64 " -> %" PRIu64 ": %s\n", a->name, generation,
           breaker_config_generation(b), t.summary);
    return BREAKER_OK;
}

/* print_limits() of `was` and of `now`, as two strings to free (NULL: no
 * memory). */
static void limits_texts(const breaker_config *was, const breaker_config *now, char **a, char **b) {
    size_t alen = 0, blen = 0;
    *a = *b = NULL;
    FILE *fa = open_memstream(a, &alen), *fb = open_memstream(b, &blen);
    if (fa != NULL) print_limits(fa, was);
    if (fb != NULL) print_limits(fb, now);
    if (fa != NULL) fclose(fa);
    if (fb != NULL) fclose(fb);
}

/* The lines of print_limits() that differ between `was` and `now`, as
 * "key: old -> new". */
static void print_changes(const breaker_config *was, const breaker_config *now) {
    char *a, *b;
    limits_texts(was, now, &a, &b);
    char *sa = NULL, *sb = NULL;
    for (char *la = a ? strtok_r(a, "\n", &sa) : NULL, *lb = b ? strtok_r(b, "\n", &sb) : NULL;
         la != NULL && lb != NULL; la = strtok_r(NULL, "\n", &sa), lb = strtok_r(NULL, "\n", &sb)) {
        if (strcmp(la, lb) == 0) continue;
        const char *va = strchr(la, '='), *vb = strchr(lb, '=');
        if (va == NULL || vb == NULL) continue;
        printf("  %.*s: %s -> %s\n", (int)(va - la), la, va + 1, vb + 1);
    }
    free(a);
    free(b);
}

/* Whether `now` asks for other limits than `was`. */
static bool limits_differ(const breaker_config *was, const breaker_config *now) {
    char *a, *b;
    limits_texts(was, now, &a, &b);
    /* Unable to tell (no memory): ask the fleet, which knows. */
    bool differ = a == NULL || b == NULL || strcmp(a, b) != 0;
    free(a);
    free(b);
    return differ;
}

/* The fleet's stored limits: the lines of print_limits() of the keys the
 * fleet stores (and the trip policy), after their generation. */
static void print_fleet_limits(const char *name, uint64_t generation, const breaker_config *c) {
    printf("%s: the fleet's limits, control version %" PRIu64 "\n", name, generation);
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (m == NULL) return;
    print_limits(m, c);
    fclose(m);
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        char key[64];
        size_t k = strcspn(line, "=");
        snprintf(key, sizeof key, "%.*s", (int)(k < sizeof key ? k : sizeof key - 1), line);
        if (strcmp(key, "trip") == 0 || fleet_stores(key)) printf("%s\n", line);
    }
    free(text);
}

/* `breaker config NAME [key=value...] --redis ADDR`: the fleet's stored
 * limits, shown or changed for every host, fenced by their generation. */
static int fleet_configure(struct tool_store_args *a, const char *cmd) {
    struct exec_fleet *fl = NULL;
    struct tool_breaker t;
    memset(&t, 0, sizeof(t));
    uint64_t generation = 0;
    int rc = exec_fleet_limits_read(&a->fleet, a->name, &fl, &t.cfg, &generation);
    if (rc != 0) return rc;
    if (a->n_pairs == 0) {
        print_fleet_limits(a->name, generation, &t.cfg);
        exec_fleet_close(fl);
        return 0;
    }
    breaker_config was = t.cfg;
    rc = apply_pairs(cmd, a, &t, true);
    char what[128];
    const char *because = rc == 0 ? shape_change(&was, &t.cfg, what, sizeof(what)) : NULL;
    if (because != NULL) {
        tool_error(stderr,
                   "breaker %s: %s: %s: cannot change on a running fleet (%s); delete the name's "
                   "state in Redis to start the fleet over",
                   cmd, a->name, what, because);
        rc = TOOL_EXIT_CONFIG;
    }
    if (rc == 0 && !limits_differ(&was, &t.cfg)) {
        /* The limits in force: the fleet would write nothing (its script
         * changes no generation for them), so neither is a write asked. */
        printf("%s: the fleet's limits, control version %" PRIu64 ": no change\n", a->name,
               generation);
        exec_fleet_close(fl);
        return 0;
    }
    if (rc == 0) rc = exec_fleet_limits_write(fl, a->name, &t.cfg, generation, a->why);
    if (rc == 0) print_changes(&was, &t.cfg);
    exec_fleet_close(fl); /* its last round applies them here too */
    return rc;
}

/* `breaker config NAME [key=value...]`. */
int tool_cmd_config(int argc, char **argv) {
    const char *cmd = argv[0];
    struct tool_store_args a;
    int rc = tool_store_options(cmd, tool_config_help, false, 1, argc, argc, argv, &a);
    if (rc != 0 || a.done) return rc;
    a.pairs = argv + optind + 1;
    a.n_pairs = argc - optind - 1;
    if (a.fleet.addr != NULL) return fleet_configure(&a, cmd);
    return tool_with_breaker(cmd, &a, configure);
}
