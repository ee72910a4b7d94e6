/* SPDX-License-Identifier: MIT */
/*
 * args.c - the in-process Redis's reading of a command's arguments, as
 * Redis's util.c and object.c read them: a strict decimal long long, a
 * double of strtod() over the whole text, an option word in any case.
 */
#include "store/redis/inproc/engine.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* util.c, string2ll(): at most 20 bytes; "0", or an optional '-' and
 * digits without a leading zero; within a long long. */
int breaker__inproc_parse_ll(const char *s, size_t len, long long *out) {
    if (len == 0 || len > 20) return 0;
    if (len == 1 && s[0] == '0') {
        *out = 0;
        return 1;
    }
    size_t i = 0;
    bool negative = s[0] == '-';
    if (negative && ++i == len) return 0;
    if (s[i] < '1' || s[i] > '9') return 0;
    unsigned long long v = 0;
    for (; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') return 0;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (ULLONG_MAX - d) / 10) return 0;
        v = v * 10 + d;
    }
    if (negative) {
        if (v > (unsigned long long)LLONG_MAX + 1) return 0;
        *out = v == (unsigned long long)LLONG_MAX + 1 ? LLONG_MIN : -(long long)v;
    } else {
        if (v > (unsigned long long)LLONG_MAX) return 0;
        *out = (long long)v;
    }
    return 1;
}

/* object.c, getDoubleFromObject(): strtod() of the whole text, no leading
 * space, not NaN, no overflow or underflow to zero. `s` ends with a NUL
 * at `len` (every argument does). */
int breaker__inproc_parse_double(const char *s, size_t len, double *out) {
    if (len == 0 || isspace((unsigned char)s[0])) return 0;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if ((size_t)(end - s) != len || isnan(v)) return 0;
    if (errno == ERANGE && (v == HUGE_VAL || v == -HUGE_VAL || fpclassify(v) == FP_ZERO)) return 0;
    *out = v;
    return 1;
}

bool breaker__inproc_is(const struct breaker__inproc_arg *a, const char *word) {
    return strlen(word) == a->len && strncasecmp(a->str, word, a->len) == 0;
}
