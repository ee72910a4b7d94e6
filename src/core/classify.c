/*
 * classify.c - what an HTTP status or an errno says about the dependency.
 * The tables are documented in breaker.h; keep the two in step.
 */
#define _GNU_SOURCE
#include "breaker.h"

#include <errno.h>

enum breaker_outcome breaker_classify_http(int status) {
    if (status < 100 || status > 599) return BREAKER_FAILURE;   /* a broken answer */
    if (status == 408 || status == 429) return BREAKER_FAILURE; /* overload */
    if (status == 501 || status == 505) return BREAKER_SUCCESS; /* permanent, not ill health */
    if (status >= 500) return BREAKER_FAILURE;
    return BREAKER_SUCCESS; /* the dependency answered; a 4xx is the caller's problem */
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
        return BREAKER_FAILURE;
    case ECANCELED:
        return BREAKER_CANCELLED;
    default:
        return BREAKER_IGNORED;
    }
}
