/* SPDX-License-Identifier: MIT */
/*
 * classify.c - what an HTTP status or an errno says about the dependency.
 * The tables are documented in breaker.h and explained in
 * docs/classification.md; keep the three in step.
 */
#define _GNU_SOURCE
#include "breaker.h"

#include "common/message.h"

#include <errno.h>
#include <string.h>

/* The defaults of struct breaker_http_policy. */
#define DEFAULT_AUTH_FAILURES                BREAKER_IGNORED
#define DEFAULT_TOO_MANY_REQUESTS            BREAKER_IGNORED
#define DEFAULT_UNAVAILABLE_WITH_RETRY_AFTER BREAKER_FAILURE

static const breaker_http_policy default_policy = {
    .auth_failures = DEFAULT_AUTH_FAILURES,
    .too_many_requests = DEFAULT_TOO_MANY_REQUESTS,
    .unavailable_with_retry_after = DEFAULT_UNAVAILABLE_WITH_RETRY_AFTER,
};

void breaker_http_policy_init(breaker_http_policy *p) {
    /* Every byte first, so that fields added later start at 0 = default. */
    memset(p, 0, sizeof(*p));
    p->auth_failures = default_policy.auth_failures;
    p->too_many_requests = default_policy.too_many_requests;
    p->unavailable_with_retry_after = default_policy.unavailable_with_retry_after;
}

/* A policy field may be IGNORED or FAILURE, or 0 (SUCCESS) for the default:
 * none of the answers it governs shows the dependency working. */
static int allowed(enum breaker_outcome v) {
    return v == BREAKER_SUCCESS || v == BREAKER_IGNORED || v == BREAKER_FAILURE;
}

static int check_field(const char *name, enum breaker_outcome v, char *msg, size_t len) {
    if (allowed(v)) return BREAKER_OK;
    return breaker__fail(BREAKER_EINVAL, msg, len,
                         "%s: must be BREAKER_IGNORED or BREAKER_FAILURE, or 0 for the default "
                         "(got %d)",
                         name, (int)v);
}

int breaker_http_policy_validate(const breaker_http_policy *p, char *msg, size_t len) {
    int rc = check_field("auth_failures", p->auth_failures, msg, len);
    if (rc == BREAKER_OK) rc = check_field("too_many_requests", p->too_many_requests, msg, len);
    if (rc == BREAKER_OK)
        rc = check_field("unavailable_with_retry_after", p->unavailable_with_retry_after, msg, len);
    return rc;
}

/* A field's choice, or its default `def` when it is 0 or not an allowed
 * value: an unvalidated policy must not turn an answer into evidence of
 * health, nor make one caller's mistake trip a shared breaker. */
static enum breaker_outcome chosen(enum breaker_outcome v, enum breaker_outcome def) {
    return v == BREAKER_IGNORED || v == BREAKER_FAILURE ? v : def;
}

enum breaker_outcome breaker_classify_http_with(const breaker_http_policy *p, int status,
                                                int retry_after) {
    if (p == NULL) p = &default_policy;
    if (status < 100 || status > 599) return BREAKER_FAILURE; /* a broken answer */
    if (status >= 200 && status <= 299) return BREAKER_SUCCESS;
    /* 1xx is not a final answer; a 3xx can come from a front end or a cache
     * (a redirect to a maintenance page during an outage) without the
     * dependency: neither shows it working. */
    if (status < 400) return BREAKER_IGNORED;
    switch (status) {
    case 401: /* Unauthorized */
    case 403: /* Forbidden */
    case 407: /* Proxy Authentication Required */
        return chosen(p->auth_failures, DEFAULT_AUTH_FAILURES);
    case 408: /* the request did not reach the dependency in time */
        return BREAKER_FAILURE;
    case 429:
        return chosen(p->too_many_requests, DEFAULT_TOO_MANY_REQUESTS);
    case 501: /* Not Implemented: permanent, decided by the request's method */
    case 505: /* HTTP Version Not Supported: permanent, decided by the request */
        return BREAKER_IGNORED;
    case 503:
        if (retry_after == 0) return BREAKER_FAILURE;
        return chosen(p->unavailable_with_retry_after, DEFAULT_UNAVAILABLE_WITH_RETRY_AFTER);
    default:
        /* Any other 4xx refuses the request for what it is; a 5xx is the
         * server's fault. */
        return status >= 500 ? BREAKER_FAILURE : BREAKER_IGNORED;
    }
}

enum breaker_outcome breaker_classify_http(int status) {
    return breaker_classify_http_with(NULL, status, 0);
}

enum breaker_outcome breaker_classify_errno(int err) {
    switch (err) {
    case 0:
        return BREAKER_SUCCESS;
    case ECONNREFUSED:
    case ECONNRESET:
    case ECONNABORTED:
    case ETIMEDOUT:
    case EHOSTUNREACH:
    case ENETUNREACH:
    case EHOSTDOWN:
    case ENETDOWN:
    case ENETRESET:
    case EPIPE:
    /* The final result of a blocking call with a timeout: a read past
     * SO_RCVTIMEO ends with EAGAIN (EWOULDBLOCK), a connect past SO_SNDTIMEO
     * with EINPROGRESS; the dependency did not answer in time. */
    case EAGAIN:
#if EWOULDBLOCK != EAGAIN
    case EWOULDBLOCK:
#endif
    case EINPROGRESS:
    /* The connection is gone, or the peer broke the protocol. */
    case ENOTCONN:
    case EPROTO:
        return BREAKER_FAILURE;
    case ECANCELED:
        return BREAKER_CANCELLED;
    default:
        return BREAKER_IGNORED;
    }
}
