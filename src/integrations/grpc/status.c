/* SPDX-License-Identifier: MIT */
/*
 * status.c - what a gRPC status code says about the dependency. The table is
 * documented in include/breaker/grpc.h and explained in docs/grpc.md; keep
 * the three in step.
 */
#include "breaker/grpc.h"

#include "common/message.h"

#include <string.h>

/* What each code counts as when no policy field governs it. The policy's
 * codes are here with their defaults, so one array is the whole table. */
static const enum breaker_outcome by_code[BREAKER_GRPC_CODE_COUNT] = {
    [BREAKER_GRPC_OK] = BREAKER_SUCCESS,
    [BREAKER_GRPC_CANCELLED] = BREAKER_CANCELLED,
    [BREAKER_GRPC_UNKNOWN] = BREAKER_FAILURE,
    [BREAKER_GRPC_INVALID_ARGUMENT] = BREAKER_IGNORED,
    [BREAKER_GRPC_DEADLINE_EXCEEDED] = BREAKER_FAILURE,
    [BREAKER_GRPC_NOT_FOUND] = BREAKER_IGNORED,
    [BREAKER_GRPC_ALREADY_EXISTS] = BREAKER_IGNORED,
    [BREAKER_GRPC_PERMISSION_DENIED] = BREAKER_IGNORED,
    [BREAKER_GRPC_RESOURCE_EXHAUSTED] = BREAKER_IGNORED,
    [BREAKER_GRPC_FAILED_PRECONDITION] = BREAKER_IGNORED,
    [BREAKER_GRPC_ABORTED] = BREAKER_IGNORED,
    [BREAKER_GRPC_OUT_OF_RANGE] = BREAKER_IGNORED,
    [BREAKER_GRPC_UNIMPLEMENTED] = BREAKER_IGNORED,
    [BREAKER_GRPC_INTERNAL] = BREAKER_FAILURE,
    [BREAKER_GRPC_UNAVAILABLE] = BREAKER_FAILURE,
    [BREAKER_GRPC_DATA_LOSS] = BREAKER_FAILURE,
    [BREAKER_GRPC_UNAUTHENTICATED] = BREAKER_IGNORED,
};

static const char *const names[BREAKER_GRPC_CODE_COUNT] = {
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
};

static int in_range(int code) { return code >= 0 && code < BREAKER_GRPC_CODE_COUNT; }

void breaker_grpc_policy_init(breaker_grpc_policy *p) {
    memset(p, 0, sizeof(*p)); /* fields added later start at 0 = default */
    p->resource_exhausted = by_code[BREAKER_GRPC_RESOURCE_EXHAUSTED];
    p->internal = by_code[BREAKER_GRPC_INTERNAL];
    p->unknown = by_code[BREAKER_GRPC_UNKNOWN];
    p->auth_failures = by_code[BREAKER_GRPC_UNAUTHENTICATED];
}

/* A field holds IGNORED, FAILURE, or 0 (SUCCESS) for the default: none of
 * the codes it governs shows the dependency working. */
static int valid_choice(enum breaker_outcome v) {
    return v == BREAKER_SUCCESS || v == BREAKER_IGNORED || v == BREAKER_FAILURE;
}

int breaker_grpc_policy_validate(const breaker_grpc_policy *p, char *msg, size_t msg_len) {
    const struct {
        const char *name;
        enum breaker_outcome value;
    } fields[] = {
        {"resource_exhausted", p->resource_exhausted},
        {"internal", p->internal},
        {"unknown", p->unknown},
        {"auth_failures", p->auth_failures},
    };
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
        if (!valid_choice(fields[i].value))
            return breaker__fail(BREAKER_EINVAL, msg, msg_len,
                                 "%s: BREAKER_IGNORED, BREAKER_FAILURE or 0 (the default), not %d",
                                 fields[i].name, (int)fields[i].value);
    return BREAKER_OK;
}

/* The policy's choice, or the table's default when the field is 0 or not an
 * allowed value. */
static enum breaker_outcome choice_or(enum breaker_outcome v, int code) {
    return v == BREAKER_IGNORED || v == BREAKER_FAILURE ? v : by_code[code];
}

enum breaker_outcome breaker_classify_grpc_with(const breaker_grpc_policy *p, int code) {
    if (!in_range(code)) return BREAKER_FAILURE; /* a broken answer */
    if (p == NULL) return by_code[code];
    switch (code) {
    case BREAKER_GRPC_RESOURCE_EXHAUSTED:
        return choice_or(p->resource_exhausted, code);
    case BREAKER_GRPC_INTERNAL:
        return choice_or(p->internal, code);
    case BREAKER_GRPC_UNKNOWN:
        return choice_or(p->unknown, code);
    case BREAKER_GRPC_PERMISSION_DENIED:
    case BREAKER_GRPC_UNAUTHENTICATED:
        return choice_or(p->auth_failures, code);
    default:
        return by_code[code];
    }
}

enum breaker_outcome breaker_classify_grpc(int code) {
    return breaker_classify_grpc_with(NULL, code);
}

const char *breaker_grpc_code_name(int code) {
    return in_range(code) ? names[code] : "INVALID_CODE";
}
