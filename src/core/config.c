/* SPDX-License-Identifier: MIT */
/*
 * config.c - defaults and validation of struct breaker_config.
 */
#include "core/internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define NS_PER_SEC UINT64_C(1000000000)

/* The defaults, from config_fields.h, in the fields' units. */
#define DEFAULT_FAILURE_THRESHOLD BREAKER__DEFAULT_FAILURE_THRESHOLD
#define DEFAULT_WINDOW_SIZE       BREAKER__DEFAULT_WINDOW_SIZE
#define DEFAULT_WINDOW_NS         (BREAKER__DEFAULT_WINDOW_S * NS_PER_SEC)
#define DEFAULT_WINDOW_BUCKETS    BREAKER__DEFAULT_WINDOW_BUCKETS
#define DEFAULT_MIN_CALLS         BREAKER__DEFAULT_MIN_CALLS
#define DEFAULT_FAILURE_RATE      BREAKER__DEFAULT_FAILURE_RATE
#define DEFAULT_OPEN_NS           (BREAKER__DEFAULT_OPEN_S * NS_PER_SEC)
#define DEFAULT_OPEN_BACKOFF      ((double)BREAKER__DEFAULT_OPEN_BACKOFF)
#define DEFAULT_OPEN_MAX_NS       (BREAKER__DEFAULT_OPEN_MAX_MIN * 60 * NS_PER_SEC)
#define DEFAULT_MAX_PROBES        BREAKER__DEFAULT_MAX_PROBES
#define DEFAULT_PROBE_SUCCESSES   BREAKER__DEFAULT_PROBE_SUCCESSES
#define DEFAULT_PROBE_TIMEOUT_NS  (BREAKER__DEFAULT_PROBE_TIMEOUT_S * NS_PER_SEC)
#define DEFAULT_RAMP_START        BREAKER__DEFAULT_RAMP_START
#define MAX_DURATION_NS           (BREAKER__MAX_DURATION_DAYS * 24 * 3600 * NS_PER_SEC)
#define MIN_BUCKET_NS             (BREAKER__MIN_BUCKET_MS * UINT64_C(1000000))

void breaker_config_init(breaker_config *cfg) {
    memset(cfg, 0, sizeof(*cfg));
    cfg->trip = BREAKER_TRIP_TIME_WINDOW;
    cfg->failure_threshold = DEFAULT_FAILURE_THRESHOLD;
    cfg->window_size = DEFAULT_WINDOW_SIZE;
    cfg->window_ns = DEFAULT_WINDOW_NS;
    cfg->window_buckets = DEFAULT_WINDOW_BUCKETS;
    cfg->min_calls = DEFAULT_MIN_CALLS;
    cfg->failure_rate = DEFAULT_FAILURE_RATE;
    cfg->open_ns = DEFAULT_OPEN_NS;
    cfg->open_backoff = DEFAULT_OPEN_BACKOFF;
    cfg->open_max_ns = DEFAULT_OPEN_MAX_NS;
    cfg->half_open_max_probes = DEFAULT_MAX_PROBES;
    cfg->half_open_successes = DEFAULT_PROBE_SUCCESSES;
    cfg->probe_timeout_ns = DEFAULT_PROBE_TIMEOUT_NS;
    cfg->ramp_start = DEFAULT_RAMP_START;
    cfg->open_jitter = BREAKER__DEFAULT_OPEN_JITTER;
    cfg->cancelled_as = BREAKER_IGNORED;
}

void breaker_config_effective(const breaker_config *in, breaker_config *out) {
    *out = *in;
    if (out->failure_threshold == 0) out->failure_threshold = DEFAULT_FAILURE_THRESHOLD;
    if (out->window_size == 0) out->window_size = DEFAULT_WINDOW_SIZE;
    if (out->window_ns == 0) out->window_ns = DEFAULT_WINDOW_NS;
    if (out->window_buckets == 0) out->window_buckets = DEFAULT_WINDOW_BUCKETS;
    if (out->min_calls == 0) out->min_calls = DEFAULT_MIN_CALLS;
    if (out->failure_rate == 0.0) out->failure_rate = DEFAULT_FAILURE_RATE;
    if (out->open_ns == 0) out->open_ns = DEFAULT_OPEN_NS;
    if (out->open_backoff == 0.0) out->open_backoff = DEFAULT_OPEN_BACKOFF;
    if (out->open_max_ns == 0)
        out->open_max_ns = out->open_ns > DEFAULT_OPEN_MAX_NS ? out->open_ns : DEFAULT_OPEN_MAX_NS;
    if (out->half_open_max_probes == 0) out->half_open_max_probes = DEFAULT_MAX_PROBES;
    if (out->half_open_successes == 0) out->half_open_successes = DEFAULT_PROBE_SUCCESSES;
    if (out->probe_timeout_ns == 0) out->probe_timeout_ns = DEFAULT_PROBE_TIMEOUT_NS;
    if (out->ramp_start == 0.0) out->ramp_start = DEFAULT_RAMP_START;
    /* SUCCESS is the zero value and never a sensible answer: the default. */
    if (out->cancelled_as == BREAKER_SUCCESS) out->cancelled_as = BREAKER_IGNORED;
}

void breaker__limits_from_config(const breaker_config *cfg, struct breaker__limits *lim) {
    memset(lim, 0, sizeof(*lim));
    lim->trip = (uint32_t)cfg->trip;
    lim->failure_threshold = cfg->failure_threshold;
    lim->window_size = cfg->window_size;
    lim->window_buckets = cfg->window_buckets;
    lim->window_ns = cfg->window_ns;
    lim->bucket_ns = cfg->window_ns / cfg->window_buckets;
    lim->min_calls = cfg->min_calls;
    lim->half_open_max_probes = cfg->half_open_max_probes;
    lim->half_open_successes = cfg->half_open_successes;
    lim->cancelled_as = (uint32_t)cfg->cancelled_as;
    lim->failure_rate = cfg->failure_rate;
    lim->slow_call_rate = cfg->slow_call_rate;
    lim->open_backoff = cfg->open_backoff;
    lim->open_jitter = cfg->open_jitter;
    lim->slow_call_ns = cfg->slow_call_ns;
    lim->open_ns = cfg->open_ns;
    lim->open_max_ns = cfg->open_max_ns;
    lim->probe_timeout_ns = cfg->probe_timeout_ns;
    lim->ramp_ns = cfg->ramp_ns;
    lim->ramp_start = cfg->ramp_start;
    lim->min_failing_sources = cfg->min_failing_sources;
    /* 0: the default, N = BREAKER__DEFAULT_FAILING_SOURCES for windows whose
     * failures name sources (window.c, breaker__sources_apply). */
    lim->source_bits_needed = breaker__sources_bits_needed(cfg->min_failing_sources == 0
                                                               ? BREAKER__DEFAULT_FAILING_SOURCES
                                                               : cfg->min_failing_sources);
    lim->seed = cfg->seed;
}

/* A rate field: finite and in (0, 1], or 0 where zero means off/default. */
static bool rate_ok(double r) { return isfinite(r) && r > 0.0 && r <= 1.0; }

/* breaker_config_validate() in four parts, each a group of fields checked in
 * the order the documentation lists them; the first field out of range is
 * the one the message names. */

/* The trip policy and its window. */
static int validate_window(const breaker_config *c, char *msg, size_t len) {
    if ((unsigned)c->trip > (unsigned)BREAKER_TRIP_TIME_WINDOW)
        return breaker__fail(BREAKER_EINVAL, msg, len,
                             "trip: must be consecutive, count_window or time_window (got %d)",
                             (int)c->trip);
    if (c->failure_threshold > BREAKER__MAX_FAILURE_THRESHOLD)
        return breaker__fail(BREAKER_EINVAL, msg, len,
                             "failure_threshold: must be between 1 and %u (got %u)",
                             BREAKER__MAX_FAILURE_THRESHOLD, c->failure_threshold);
    if (c->window_size > BREAKER__MAX_WINDOW_SIZE)
        return breaker__fail(BREAKER_EINVAL, msg, len,
                             "window_size: must be between 1 and %u calls (got %u)",
                             BREAKER__MAX_WINDOW_SIZE, c->window_size);
    if (c->window_buckets > BREAKER__MAX_BUCKETS)
        return breaker__fail(BREAKER_EINVAL, msg, len,
                             "window_buckets: must be between 1 and %u (got %u)",
                             BREAKER__MAX_BUCKETS, c->window_buckets);
    if (c->window_ns / c->window_buckets < MIN_BUCKET_NS)
        return breaker__fail(BREAKER_EINVAL, msg, len,
                             "window_ns: each of the %u buckets must span at least %ums "
                             "(window_ns >= %llu ns, got %llu ns)",
                             c->window_buckets, BREAKER__MIN_BUCKET_MS,
                             (unsigned long long)MIN_BUCKET_NS * c->window_buckets,
                             (unsigned long long)c->window_ns);
    if (c->min_calls > BREAKER__MAX_MIN_CALLS)
        return breaker__fail(BREAKER_EINVAL, msg, len,
                             "min_calls: must be between 1 and %u (got %u)", BREAKER__MAX_MIN_CALLS,
                             c->min_calls);
    if (c->trip == BREAKER_TRIP_COUNT_WINDOW && c->min_calls > c->window_size)
        return breaker__fail(BREAKER_EINVAL, msg, len,
                             "min_calls: must be <= window_size (%u) with count_window, or the "
                             "window could never trip (got %u)",
                             c->window_size, c->min_calls);
    return BREAKER_OK;
}

/* The failure and slow-call rates. */
static int validate_rates(const breaker_config *c, char *msg, size_t len) {
    if (!rate_ok(c->failure_rate))
        return breaker__fail(BREAKER_EINVAL, msg, len, "failure_rate: must be in (0, 1] (got %g)",
                             c->failure_rate);
    if (c->slow_call_rate != 0.0 && !rate_ok(c->slow_call_rate))
        return breaker__fail(BREAKER_EINVAL, msg, len,
                             "slow_call_rate: must be 0 (off) or in (0, 1] (got %g)",
                             c->slow_call_rate);
    if (c->slow_call_rate != 0.0 && c->slow_call_ns == 0)
        return breaker__fail(BREAKER_EINVAL, msg, len,
                             "slow_call_rate: needs slow_call_ns > 0 to say what is slow");
    if (c->slow_call_rate != 0.0 && c->trip == BREAKER_TRIP_CONSECUTIVE)
        return breaker__fail(BREAKER_EINVAL, msg, len,
                             "slow_call_rate: needs a window trip policy (count_window or "
                             "time_window), not consecutive");
    return BREAKER_OK;
}

/* The open wait (backoff, durations, jitter). */
static int validate_open(const breaker_config *c, char *msg, size_t len) {
    if (!isfinite(c->open_backoff) || c->open_backoff < 1.0 ||
        c->open_backoff > BREAKER__MAX_OPEN_BACKOFF)
        return breaker__fail(BREAKER_EINVAL, msg, len,
                             "open_backoff: must be between 1 and %u (got %g)",
                             BREAKER__MAX_OPEN_BACKOFF, c->open_backoff);
    /* Each duration against its own limit first, so that a message names
     * the field the caller set (an unset open_max follows open). */
    const struct {
        const char *name;
        uint64_t value;
    } durations[] = {{"window_ns", c->window_ns},
                     {"slow_call_ns", c->slow_call_ns},
                     {"open_ns", c->open_ns},
                     {"open_max_ns", c->open_max_ns},
                     {"probe_timeout_ns", c->probe_timeout_ns},
                     {"ramp_ns", c->ramp_ns}};
    for (size_t i = 0; i < sizeof(durations) / sizeof(durations[0]); i++)
        if (durations[i].value > MAX_DURATION_NS)
            return breaker__fail(BREAKER_EINVAL, msg, len,
                                 "%s: must be at most %u days (got %llu ns)", durations[i].name,
                                 BREAKER__MAX_DURATION_DAYS,
                                 (unsigned long long)durations[i].value);
    if (c->open_max_ns < c->open_ns)
        return breaker__fail(BREAKER_EINVAL, msg, len,
                             "open_max_ns: must be >= open_ns (%llu ns), got %llu ns",
                             (unsigned long long)c->open_ns, (unsigned long long)c->open_max_ns);
    if (!isfinite(c->open_jitter) || c->open_jitter < 0.0 || c->open_jitter > 1.0)
        return breaker__fail(BREAKER_EINVAL, msg, len, "open_jitter: must be in [0, 1] (got %g)",
                             c->open_jitter);
    return BREAKER_OK;
}

/* Recovery (probes, sources, the ramp) and the remaining fields. */
static int validate_recovery(const breaker_config *c, char *msg, size_t len) {
    if (c->half_open_max_probes > BREAKER__MAX_PROBES)
        return breaker__fail(BREAKER_EINVAL, msg, len,
                             "half_open_max_probes: must be between 1 and %u (got %u)",
                             BREAKER__MAX_PROBES, c->half_open_max_probes);
    if (c->half_open_successes > BREAKER__MAX_PROBES)
        return breaker__fail(BREAKER_EINVAL, msg, len,
                             "half_open_successes: must be between 1 and %u (got %u)",
                             BREAKER__MAX_PROBES, c->half_open_successes);
    if (c->checked_permits > 1)
        return breaker__fail(BREAKER_EINVAL, msg, len,
                             "checked_permits: must be 0 (off) or 1 (got %u)", c->checked_permits);
    if (c->min_failing_sources > BREAKER__MAX_FAILING_SOURCES)
        return breaker__fail(BREAKER_EINVAL, msg, len,
                             "min_failing_sources: must be between 0 (default %u where "
                             "failures name sources) and %u, 1 = off (got %u)",
                             BREAKER__DEFAULT_FAILING_SOURCES, BREAKER__MAX_FAILING_SOURCES,
                             c->min_failing_sources);
    if (!rate_ok(c->ramp_start))
        return breaker__fail(BREAKER_EINVAL, msg, len, "ramp_start: must be in (0, 1] (got %g)",
                             c->ramp_start);
    if (c->cancelled_as != BREAKER_IGNORED && c->cancelled_as != BREAKER_FAILURE)
        return breaker__fail(BREAKER_EINVAL, msg, len,
                             "cancelled_as: must be BREAKER_IGNORED or BREAKER_FAILURE (got %d)",
                             (int)c->cancelled_as);
    if (c->clock == NULL && c->clock_ctx != NULL)
        return breaker__fail(BREAKER_EINVAL, msg, len, "clock_ctx: set without a clock function");
    return BREAKER_OK;
}

int breaker_config_validate(const breaker_config *user, char *msg, size_t len) {
    breaker_config c;
    breaker_config_effective(user, &c);
    if (msg != NULL && len > 0) msg[0] = '\0';
    int rc = validate_window(&c, msg, len);
    if (rc == BREAKER_OK) rc = validate_rates(&c, msg, len);
    if (rc == BREAKER_OK) rc = validate_open(&c, msg, len);
    if (rc == BREAKER_OK) rc = validate_recovery(&c, msg, len);
    return rc;
}
