/* SPDX-License-Identifier: MIT */
/*
 * config.c - `breaker config NAME [key=value...]`: a store's breaker's
 * limits, shown, or changed live for every process of the host
 * (breaker_reconfigure()).
 */
#include "ops/commands.h"
#include "ops/ops.h"

#include "cli/config.h"
#include "cli/parse.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
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
    "options:\n"
    "      --store PATH  the store file\n"
    "  -h, --help        show this text\n";

/* The limits as key=value lines breaker_config_set() reads back. */
static void print_config(const char *name, uint64_t generation, const breaker_config *c) {
    char d[32];
    printf("%s: configuration generation %" PRIu64 "\n", name, generation);
    printf("trip=%s\n", breaker_trip_name(c->trip));
    if (c->trip == BREAKER_TRIP_CONSECUTIVE) printf("failure_threshold=%u\n", c->failure_threshold);
    if (c->trip == BREAKER_TRIP_COUNT_WINDOW) printf("window_size=%u\n", c->window_size);
    if (c->trip == BREAKER_TRIP_TIME_WINDOW)
        printf("window=%s\nwindow_buckets=%u\n", tool_format_duration(c->window_ns, d, sizeof(d)),
               c->window_buckets);
    if (c->trip != BREAKER_TRIP_CONSECUTIVE)
        printf("min_calls=%u\nfailure_rate=%g\n", c->min_calls, c->failure_rate);
    printf("slow_call=%s\n",
           c->slow_call_ns ? tool_format_duration(c->slow_call_ns, d, sizeof(d)) : "0");
    printf("slow_call_rate=%g\n", c->slow_call_rate);
    printf("open=%s\n", tool_format_duration(c->open_ns, d, sizeof(d)));
    printf("open_backoff=%g\n", c->open_backoff);
    printf("open_max=%s\n", tool_format_duration(c->open_max_ns, d, sizeof(d)));
    printf("open_jitter=%g\n", c->open_jitter);
    printf("half_open_max_probes=%u\nhalf_open_successes=%u\n", c->half_open_max_probes,
           c->half_open_successes);
    printf("probe_timeout=%s\n", tool_format_duration(c->probe_timeout_ns, d, sizeof(d)));
    printf("ramp=%s\n", c->ramp_ns ? tool_format_duration(c->ramp_ns, d, sizeof(d)) : "0");
    printf("ramp_start=%g\n", c->ramp_start);
    printf("min_failing_sources=%u\n", c->min_failing_sources);
    printf("cancelled_as=%s\n", breaker_outcome_name(c->cancelled_as));
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

static int configure(breaker *b, const struct tool_store_args *a, const char *cmd) {
    uint64_t generation = breaker_config_generation(b);
    struct tool_breaker t;
    memset(&t, 0, sizeof(t));
    breaker_get_config(b, &t.cfg);
    if (a->n_pairs == 0) {
        print_config(a->name, generation, &t.cfg);
        return BREAKER_OK;
    }
    t.open_max_given = true; /* an open_max already set: it does not follow open */
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
        if (tool_breaker_set(&t, tool_trim(pair), tool_trim(eq + 1), msg, sizeof(msg)) !=
            BREAKER_OK) {
            tool_error(stderr, "breaker %s: %s: %s", cmd, a->name, msg);
            return TOOL_EXIT_CONFIG;
        }
    }
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

/* `breaker config NAME [key=value...]`. */
int tool_cmd_config(int argc, char **argv) {
    const char *cmd = argv[0];
    struct tool_store_args a;
    int rc = tool_store_options(cmd, tool_config_help, false, 1, argc, argc, argv, &a);
    if (rc != 0 || a.done) return rc;
    a.pairs = argv + optind + 1;
    a.n_pairs = argc - optind - 1;
    return tool_with_breaker(cmd, &a, configure);
}
