/* SPDX-License-Identifier: MIT */
/*
 * replies.c - the in-process Redis's replies as its commands build them:
 * a status, a bulk string, an error on one line, Redis's own error texts
 * word for word, and a double written as Redis 7.0 writes one in RESP2.
 * Every command file builds its answers here; this file calls nothing of
 * theirs.
 */
#include "store/redis/inproc/engine.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

breaker_redis_reply *breaker__inproc_status(const char *text) {
    return breaker_redis_reply_string(BREAKER_REDIS_REPLY_STATUS, text, strlen(text));
}

breaker_redis_reply *breaker__inproc_ok(void) { return breaker__inproc_status("OK"); }

breaker_redis_reply *breaker__inproc_bulk(const char *str, size_t len) {
    return breaker_redis_reply_string(BREAKER_REDIS_REPLY_STRING, str, len);
}

/* Redis sends an error as one line: a CR or LF in it becomes a space
 * (addReplyErrorFormat()). */
breaker_redis_reply *breaker__inproc_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    breaker_redis_reply *r = breaker_redis_reply_string(BREAKER_REDIS_REPLY_ERROR, "", 0);
    char *buf = r == NULL ? NULL : realloc(r->str, (size_t)n + 1);
    if (buf == NULL) {
        breaker_redis_reply_free(r);
        return NULL;
    }
    r->str = buf;
    va_start(ap, fmt);
    vsnprintf(buf, (size_t)n + 1, fmt, ap);
    va_end(ap);
    r->len = (size_t)n;
    for (int i = 0; i < n; i++)
        if (buf[i] == '\r' || buf[i] == '\n') buf[i] = ' ';
    return r;
}

breaker_redis_reply *breaker__inproc_wrongtype(void) {
    return breaker__inproc_error("WRONGTYPE Operation against a key holding the wrong kind of "
                                 "value");
}

breaker_redis_reply *breaker__inproc_syntax_error(void) {
    return breaker__inproc_error("ERR syntax error");
}

breaker_redis_reply *breaker__inproc_not_integer(void) {
    return breaker__inproc_error("ERR value is not an integer or out of range");
}

breaker_redis_reply *breaker__inproc_arity_error(const char *name) {
    return breaker__inproc_error("ERR wrong number of arguments for '%s' command", name);
}

int breaker__inproc_format_double(char *buf, size_t len, double d) {
    if (isinf(d)) return snprintf(buf, len, "%s", d > 0 ? "inf" : "-inf");
    return snprintf(buf, len, "%.17g", d);
}

breaker_redis_reply *breaker__inproc_double(double d) {
    char buf[64];
    int n = breaker__inproc_format_double(buf, sizeof buf, d);
    return breaker__inproc_bulk(buf, (size_t)n);
}
