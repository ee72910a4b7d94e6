/* SPDX-License-Identifier: MIT */
/*
 * sqlstate.c - what an SQLSTATE says about the database. The table is
 * documented in include/breaker/sqlstate.h and explained in
 * docs/postgresql.md; keep the three in step.
 */
#include "breaker/sqlstate.h"

#include <string.h>

static int well_formed(const char *code) {
    for (int i = 0; i < 5; i++) {
        char c = code[i];
        if (!((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z'))) return 0;
    }
    return code[5] == '\0';
}

static int in_class(const char *code, const char *cls) {
    return code[0] == cls[0] && code[1] == cls[1];
}

enum breaker_outcome breaker_classify_sqlstate(const char *code) {
    if (code == NULL || !well_formed(code)) return BREAKER_FAILURE; /* a broken answer */
    if (in_class(code, "00") || in_class(code, "01") || in_class(code, "02"))
        return BREAKER_SUCCESS;
    /* The server, or the way to it, is unwell: the connection is gone,
     * resources are out, it is shutting down or timed the statement out, or
     * its own storage or invariants broke. */
    if (in_class(code, "08") || in_class(code, "53") || in_class(code, "XX") ||
        in_class(code, "F0"))
        return BREAKER_FAILURE;
    if (in_class(code, "57")) return strcmp(code, "57P05") == 0 ? BREAKER_IGNORED : BREAKER_FAILURE;
    if (in_class(code, "58"))
        return strcmp(code, "58P01") == 0 || strcmp(code, "58P02") == 0 ? BREAKER_IGNORED
                                                                        : BREAKER_FAILURE;
    if (strcmp(code, "40003") == 0) return BREAKER_FAILURE;
    /* What the statement, its data, its transaction's conflicts or its
     * caller's credentials decided. */
    return BREAKER_IGNORED;
}
