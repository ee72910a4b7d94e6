/* SPDX-License-Identifier: MIT */
/*
 * config_fields.h - the range and the default of every numeric field of
 * struct breaker_config, written once.
 *
 * Validation (config.c), the text keys and their error messages
 * (config_text.c), the block check (block.c) and the defaults all read these.
 * They are plain integers so that config_text.c can also spell them into its
 * messages (BREAKER__STR). The manual (breaker.h, struct breaker_config)
 * states the same numbers for readers; tests/core/test_config.c checks every
 * documented boundary against validation and breaker_config_set(), so the
 * manual cannot drift from these without a test failing.
 */
#ifndef BREAKER_CORE_CONFIG_FIELDS_H
#define BREAKER_CORE_CONFIG_FIELDS_H

#define BREAKER__STR_(x) #x
#define BREAKER__STR(x)  BREAKER__STR_(x)

/* ---- Ranges ----------------------------------------------------------------- */
#define BREAKER__MAX_FAILURE_THRESHOLD 1000000
#define BREAKER__MAX_WINDOW_SIZE       1000000 /* fits the 21-bit packed window fields */
#define BREAKER__MAX_MIN_CALLS         1000000
#define BREAKER__MAX_BUCKETS           600
#define BREAKER__MIN_BUCKET_MS         1 /* each time-window bucket spans at least this */
#define BREAKER__MAX_PROBES                            \
    4095 /* half_open_max_probes, half_open_successes: \
            the 12-bit fields of the state word */
#define BREAKER__MAX_OPEN_BACKOFF    100
#define BREAKER__MAX_DURATION_DAYS   365 /* open_max, probe_timeout, slow_call, ... */
#define BREAKER__MAX_FAILING_SOURCES 64  /* the bits of the 64-bit source map */

/* ---- Defaults (what 0 means where 0 would be meaningless) -------------------- */
#define BREAKER__DEFAULT_FAILURE_THRESHOLD 5
#define BREAKER__DEFAULT_WINDOW_SIZE       100
#define BREAKER__DEFAULT_WINDOW_S          60
#define BREAKER__DEFAULT_WINDOW_BUCKETS    10
#define BREAKER__DEFAULT_MIN_CALLS         20
#define BREAKER__DEFAULT_FAILURE_RATE      0.5
#define BREAKER__DEFAULT_OPEN_S            30
#define BREAKER__DEFAULT_OPEN_BACKOFF      2
#define BREAKER__DEFAULT_OPEN_MAX_MIN      5
#define BREAKER__DEFAULT_MAX_PROBES        1
#define BREAKER__DEFAULT_PROBE_SUCCESSES   3
#define BREAKER__DEFAULT_PROBE_TIMEOUT_S   30
#define BREAKER__DEFAULT_RAMP_START        0.1
#define BREAKER__DEFAULT_FAILING_SOURCES   3 /* min_failing_sources 0, once sources are given */
#define BREAKER__DEFAULT_OPEN_JITTER          \
    0.2 /* set by breaker_config_init() only: \
           0 is meaningful (none) */

#endif /* BREAKER_CORE_CONFIG_FIELDS_H */
