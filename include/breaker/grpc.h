/* SPDX-License-Identifier: MIT */
/*
 * breaker/grpc.h - gRPC status codes as breaker outcomes.
 *
 * Part of libbreaker itself: no gRPC headers or libraries are needed, so a
 * C++ gRPC client, a C core client or a proxy that sees the grpc-status
 * trailer all count the same things. The codes are the 17 of the gRPC
 * specification (statuscodes.md), numbered as on the wire.
 *
 * The table (breaker_classify_grpc, and breaker_classify_grpc_with with the
 * default policy); docs/grpc.md gives the reasons:
 *   OK (0)                   -> SUCCESS
 *   CANCELLED (1)            -> CANCELLED (the caller, or its own client
 *                               library, gave up)
 *   UNKNOWN (2)              -> FAILURE  (policy `unknown`: an exception the
 *                               server did not map; IGNORED on request)
 *   INVALID_ARGUMENT (3), NOT_FOUND (5), ALREADY_EXISTS (6),
 *   FAILED_PRECONDITION (9), ABORTED (10), OUT_OF_RANGE (11),
 *   UNIMPLEMENTED (12)       -> IGNORED  (decided by the request)
 *   PERMISSION_DENIED (7), UNAUTHENTICATED (16)
 *                            -> IGNORED  (policy `auth_failures`: the
 *                               caller's credentials; FAILURE on request)
 *   RESOURCE_EXHAUSTED (8)   -> IGNORED  (policy `resource_exhausted`: a
 *                               quota of this caller, or a message too large,
 *                               as HTTP's 429; FAILURE on request, for a
 *                               server that sheds load for everyone with it)
 *   DEADLINE_EXCEEDED (4)    -> FAILURE  (no answer in time)
 *   INTERNAL (13)            -> FAILURE  (policy `internal`: the server broke
 *                               an invariant, as HTTP's 500; IGNORED on
 *                               request)
 *   UNAVAILABLE (14)         -> FAILURE  (the server is down, draining or
 *                               unreachable: the fault a breaker is for)
 *   DATA_LOSS (15)           -> FAILURE  (unrecoverable loss or corruption)
 *   any other value          -> FAILURE  (a broken answer)
 * Only OK is ever a SUCCESS, whatever the policy.
 *
 * Naming the caller: a client that completes its own permits (C, or
 * asynchronous C++ calls) passes the caller's source with the outcome,
 * breaker_complete_from(b, &permit, breaker_classify_grpc(code), source), so
 * that min_failing_sources applies; breaker/grpc.hpp's call_from() does it
 * for a synchronous C++ call. 0 names nobody.
 *
 * Thread-safety: every function here is pure and reads only its arguments.
 */
#ifndef BREAKER_GRPC_H
#define BREAKER_GRPC_H

#include <breaker.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The gRPC status codes, with their wire values (grpc::StatusCode and
 * grpc_status_code use the same numbers). */
enum breaker_grpc_code {
    BREAKER_GRPC_OK = 0,
    BREAKER_GRPC_CANCELLED = 1,
    BREAKER_GRPC_UNKNOWN = 2,
    BREAKER_GRPC_INVALID_ARGUMENT = 3,
    BREAKER_GRPC_DEADLINE_EXCEEDED = 4,
    BREAKER_GRPC_NOT_FOUND = 5,
    BREAKER_GRPC_ALREADY_EXISTS = 6,
    BREAKER_GRPC_PERMISSION_DENIED = 7,
    BREAKER_GRPC_RESOURCE_EXHAUSTED = 8,
    BREAKER_GRPC_FAILED_PRECONDITION = 9,
    BREAKER_GRPC_ABORTED = 10,
    BREAKER_GRPC_OUT_OF_RANGE = 11,
    BREAKER_GRPC_UNIMPLEMENTED = 12,
    BREAKER_GRPC_INTERNAL = 13,
    BREAKER_GRPC_UNAVAILABLE = 14,
    BREAKER_GRPC_DATA_LOSS = 15,
    BREAKER_GRPC_UNAUTHENTICATED = 16
};
/* The number of codes the specification defines (0..16). */
#define BREAKER_GRPC_CODE_COUNT 17

/* The choices the table leaves to the caller. Fill with
 * breaker_grpc_policy_init(), then change what you need. Each field is
 * BREAKER_IGNORED or BREAKER_FAILURE; 0 (BREAKER_SUCCESS, never allowed)
 * means the default, so a zeroed struct is the default policy. */
typedef struct breaker_grpc_policy breaker_grpc_policy;
struct breaker_grpc_policy {
    enum breaker_outcome resource_exhausted; /* RESOURCE_EXHAUSTED: IGNORED (default) */
    enum breaker_outcome internal;           /* INTERNAL: FAILURE (default) */
    enum breaker_outcome unknown;            /* UNKNOWN: FAILURE (default) */
    enum breaker_outcome auth_failures;      /* PERMISSION_DENIED, UNAUTHENTICATED:
                                                IGNORED (default) */
};

/*! breaker_grpc_policy_init() :
 *  Clear `p` (every byte, fields added later included) and set the defaults
 *  of the table above. */
BREAKER_API void breaker_grpc_policy_init(breaker_grpc_policy *p) BREAKER_NONNULL(1);

/*! breaker_grpc_policy_validate() :
 *  @return BREAKER_OK, or BREAKER_EINVAL with a message naming the first bad
 *  field and its allowed values written to `msg` (NUL-terminated, truncated
 *  to `msg_len`; `msg` may be NULL when msg_len is 0). */
BREAKER_API int breaker_grpc_policy_validate(const breaker_grpc_policy *p, char *msg,
                                             size_t msg_len) BREAKER_NONNULL(1);

/*! breaker_classify_grpc() :
 *  @return the outcome of a call that ended with gRPC status `code`, by the
 *  table above with the default policy: breaker_classify_grpc_with(NULL,
 *  code). */
BREAKER_API enum breaker_outcome breaker_classify_grpc(int code);

/*! breaker_classify_grpc_with() :
 *  @return the outcome of status `code` under `p` (NULL = the defaults). A
 *  field of `p` that breaker_grpc_policy_validate() would refuse is read as
 *  its default, so a bad policy can neither crash nor make a failed call
 *  evidence of health. */
BREAKER_API enum breaker_outcome breaker_classify_grpc_with(const breaker_grpc_policy *p, int code);

/*! breaker_grpc_code_name() :
 *  @return the code's name as the specification spells it
 *  ("DEADLINE_EXCEEDED"), static, or "INVALID_CODE" outside 0..16. */
BREAKER_API const char *breaker_grpc_code_name(int code);

#ifdef __cplusplus
}
#endif

#endif /* BREAKER_GRPC_H */
