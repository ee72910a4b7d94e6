/* SPDX-License-Identifier: MIT */
/*
 * inproc_util.h - commands for the in-process Redis (src/store/redis/inproc/)
 * written as one line, for the tests: inproc_run(s, "HSET k f v") splits the
 * line at spaces (an argument with a space goes through inproc_runv()).
 */
#ifndef BREAKER_TEST_INPROC_UTIL_H
#define BREAKER_TEST_INPROC_UTIL_H

#include "store/redis/inproc/inproc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Run argv (NUL-terminated strings). @return the reply (never NULL: an
 * out-of-memory NULL aborts the test program). */
static inline breaker_redis_reply *inproc_runv(struct breaker__redis_inproc *s, int argc,
                                                 const char *const *argv) {
    size_t len[64];
    if (argc > 64) abort();
    for (int i = 0; i < argc; i++)
        len[i] = strlen(argv[i]);
    breaker_redis_reply *r = breaker__redis_inproc_command(s, argc, argv, len);
    if (r == NULL) {
        fprintf(stderr, "in-process Redis: out of memory\n");
        abort();
    }
    return r;
}

static inline breaker_redis_reply *inproc_run(struct breaker__redis_inproc *s, const char *line) {
    char buf[1024];
    const char *argv[64];
    int argc = 0;
    snprintf(buf, sizeof buf, "%s", line);
    for (char *p = buf; *p != '\0' && argc < 64;) {
        while (*p == ' ')
            *p++ = '\0';
        if (*p == '\0') break;
        argv[argc++] = p;
        while (*p != '\0' && *p != ' ')
            p++;
    }
    return inproc_runv(s, argc, argv);
}

/* The reply as one line of text, for assertions: integers as digits, a
 * string as it is, a status as +text, an error as -text, nil as (nil), an
 * array as [a, b]. */
static inline void reply_text(const breaker_redis_reply *r, char *out, size_t len) {
    size_t n = 0;
    out[0] = '\0';
#define REPLY_PUT(...)                                                   \
    do {                                                                 \
        int k_ = snprintf(out + n, len - n, __VA_ARGS__);                \
        if (k_ > 0) n = (size_t)k_ < len - n ? n + (size_t)k_ : len - 1; \
    } while (0)
    switch (r->type) {
    case BREAKER_REDIS_REPLY_INTEGER:
        REPLY_PUT("%lld", r->integer);
        break;
    case BREAKER_REDIS_REPLY_STRING:
        REPLY_PUT("%s", r->str);
        break;
    case BREAKER_REDIS_REPLY_STATUS:
        REPLY_PUT("+%s", r->str);
        break;
    case BREAKER_REDIS_REPLY_ERROR:
        REPLY_PUT("-%s", r->str);
        break;
    case BREAKER_REDIS_REPLY_NIL:
        REPLY_PUT("(nil)");
        break;
    case BREAKER_REDIS_REPLY_ARRAY:
        REPLY_PUT("[");
        for (size_t i = 0; i < r->elements; i++) {
            char inner[1024];
            reply_text(r->element[i], inner, sizeof inner);
            REPLY_PUT("%s%s", i > 0 ? ", " : "", inner);
        }
        REPLY_PUT("]");
        break;
    default:
        REPLY_PUT("(type %d)", r->type);
        break;
    }
#undef REPLY_PUT
}

/* Run `line` and compare its reply's text with `want`. @return 1 when
 * equal, else 0 with both printed. */
static inline int inproc_expect(struct breaker__redis_inproc *s, const char *line,
                                const char *want) {
    breaker_redis_reply *r = inproc_run(s, line);
    char got[2048];
    reply_text(r, got, sizeof got);
    breaker_redis_reply_free(r);
    if (strcmp(got, want) == 0) return 1;
    fprintf(stderr, "%s\n  got:  %s\n  want: %s\n", line, got, want);
    return 0;
}

#endif /* BREAKER_TEST_INPROC_UTIL_H */
