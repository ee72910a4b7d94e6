/* SPDX-License-Identifier: MIT */
/*
 * names.c - status strings and enum names, generated from the lists in
 * breaker.h so that they cannot drift from the enumerations.
 */
#include "breaker.h"

#include <stddef.h>

#define STR_(x) #x
#define STR(x)  STR_(x)

const char *breaker_version_string(void) {
    return STR(BREAKER_VERSION_MAJOR) "." STR(BREAKER_VERSION_MINOR) "." STR(BREAKER_VERSION_PATCH);
}

const char *breaker_strerror(int status) {
    switch (status) {
#define BREAKER__STATUS_TEXT(name, value, text) \
    case value:                                 \
        return text;
        BREAKER_STATUS_LIST(BREAKER__STATUS_TEXT)
#undef BREAKER__STATUS_TEXT
    default:
        return "unknown status";
    }
}

const char *breaker_status_name(int status) {
    switch (status) {
#define BREAKER__STATUS_NAME(name, value, text) \
    case value:                                 \
        return #name;
        BREAKER_STATUS_LIST(BREAKER__STATUS_NAME)
#undef BREAKER__STATUS_NAME
    default:
        return "UNKNOWN";
    }
}

static const char *name_in(const char *const *names, size_t count, unsigned value) {
    return value < count ? names[value] : "unknown";
}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

const char *breaker_state_name(enum breaker_state state) {
    static const char *const names[] = {"closed", "open", "half_open", "forced_open",
                                        "forced_closed"};
    return name_in(names, COUNT(names), (unsigned)state);
}

const char *breaker_outcome_name(enum breaker_outcome outcome) {
    static const char *const names[] = {"success", "failure", "ignored", "cancelled"};
    return name_in(names, COUNT(names), (unsigned)outcome);
}

const char *breaker_trip_name(enum breaker_trip trip) {
    static const char *const names[] = {"consecutive", "count_window", "time_window"};
    return name_in(names, COUNT(names), (unsigned)trip);
}

const char *breaker_reason_name(enum breaker_reason reason) {
    static const char *const names[] = {
        "consecutive_failures", "failure_rate",  "slow_call_rate",   "wait_elapsed",
        "probe_failed",         "probe_timeout", "probes_succeeded", "forced_open",
        "forced_closed",        "reset",         "probe_slow",       "outside_trip",
        "outside_close"};
    return name_in(names, COUNT(names), (unsigned)reason);
}
