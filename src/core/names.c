/* SPDX-License-Identifier: MIT */
/*
 * names.c - the names of things: status strings and enum names, generated
 * from the lists in breaker.h so that they cannot drift from the
 * enumerations; and the rule for a breaker's name (breaker_name_validate()),
 * written once for the registry, the store file and the fleet store.
 */
#define _GNU_SOURCE /* strnlen */
#include "core/names.h"

#include "breaker.h"
#include "common/message.h"

#include <stddef.h>
#include <string.h>

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
        "consecutive_failures", "failure_rate",    "slow_call_rate",   "wait_elapsed",
        "probe_failed",         "probe_timeout",   "probes_succeeded", "forced_open",
        "forced_closed",        "reset",           "probe_slow",       "outside_trip",
        "outside_close",        "server_directed", "operator",         "reconfigured",
        "force_expired"};
    return name_in(names, COUNT(names), (unsigned)reason);
}

const char *breaker_refusal_name(enum breaker_refusal refusal) {
    /* "forced_open" as the reason label of the refusal counters. */
    static const char *const names[] = {"none", "open", "half_open", "forced_open", "ramp"};
    _Static_assert(COUNT(names) == BREAKER_REFUSAL_COUNT, "a name per refusal");
    return name_in(names, COUNT(names), (unsigned)refusal);
}

const char *breaker_probe_result_name(enum breaker_probe_result result) {
    static const char *const names[] = {"success", "failure", "ignored", "stale"};
    return name_in(names, COUNT(names), (unsigned)result);
}

/* ---- Breaker names ------------------------------------------------------- */

static bool name_char_ok(char c, bool first) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')
        return true;
    return !first && (c == '-' || c == '.');
}

int breaker__name_check(const char *s, size_t len, bool prefix, char *msg, size_t msg_len) {
    if (len == 0 && !prefix) {
        (void)breaker__fail(0, msg, msg_len, "name: empty; a name has 1 to %d characters",
                            BREAKER_NAME_MAX);
        return BREAKER_EINVAL;
    }
    if (len > BREAKER_NAME_MAX) {
        (void)breaker__fail(0, msg, msg_len, "name: %zu bytes long; at most %d allowed", len,
                            BREAKER_NAME_MAX);
        return BREAKER_EINVAL;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!name_char_ok((char)c, i == 0)) {
            if (c >= 0x21 && c < 0x7f)
                (void)breaker__fail(
                    0, msg, msg_len,
                    "name: character '%c' at offset %zu is not allowed; use letters, digits, "
                    "'_', and (not first) '-' and '.'",
                    c, i);
            else
                (void)breaker__fail(
                    0, msg, msg_len,
                    "name: byte 0x%02x at offset %zu is not allowed; use letters, digits, "
                    "'_', and (not first) '-' and '.'",
                    c, i);
            return BREAKER_EINVAL;
        }
    }
    return BREAKER_OK;
}

int breaker_name_validate(const char *name, char *msg, size_t msg_len) {
    if (name == NULL) {
        (void)breaker__fail(0, msg, msg_len, "name: NULL");
        return BREAKER_EINVAL;
    }
    size_t len = strnlen(name, BREAKER_NAME_MAX + 1);
    return breaker__name_check(name, len, false, msg, msg_len);
}
