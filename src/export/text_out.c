/* SPDX-License-Identifier: MIT */
/*
 * text_out.c - the bounded text builder the exporters write with: it copies
 * what fits into the caller's buffer and keeps counting past the end, so a
 * too-small buffer learns the size it needs (BREAKER_ENOSPC). Numbers are
 * formatted with integer arithmetic, never printf %g or %f, so the output
 * does not depend on the C locale.
 */
#include "export/text_out.h"
#include "common/utf8.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void breaker__out_init(struct breaker__out *o, char *buf, size_t cap) {
    memset(o, 0, sizeof(*o));
    o->buf = buf;
    o->cap = buf != NULL ? cap : 0;
}

void breaker__out_init_alloc(struct breaker__out *o) {
    memset(o, 0, sizeof(*o));
    o->grow = 1;
}

/* Make room for `n` more bytes and the NUL, doubling so that an export of
 * any size costs O(log size) reallocations. */
static void reserve(struct breaker__out *o, size_t n) {
    if (o->failed || (o->len <= o->cap && n < o->cap - o->len)) return;
    if (n >= SIZE_MAX - o->len) {
        o->failed = 1;
        return;
    }
    size_t need = o->len + n + 1;
    size_t cap = o->cap > 0 ? o->cap : 4096;
    while (cap < need && cap <= SIZE_MAX / 2)
        cap *= 2;
    char *buf = cap >= need ? realloc(o->buf, cap) : NULL;
    if (buf == NULL) {
        o->failed = 1; /* keep counting; finish_alloc reports ENOMEM */
        return;
    }
    o->buf = buf;
    o->cap = cap;
}

void breaker__out_mem(struct breaker__out *o, const char *s, size_t n) {
    if (o->grow) reserve(o, n);
    /* Copy what fits and count everything, so that ENOSPC can say how much
     * was needed; breaker__out_finish() checks there is room for the NUL. */
    if (o->len < o->cap) {
        size_t room = o->cap - o->len;
        memcpy(o->buf + o->len, s, n < room ? n : room);
    }
    o->len += n;
}

void breaker__out_str(struct breaker__out *o, const char *s) { breaker__out_mem(o, s, strlen(s)); }

void breaker__out_u64(struct breaker__out *o, uint64_t v) {
    char tmp[24];
    int n = snprintf(tmp, sizeof(tmp), "%" PRIu64, v);
    breaker__out_mem(o, tmp, (size_t)n);
}

void breaker__out_seconds(struct breaker__out *o, uint64_t ns) {
    char tmp[40];
    int n = snprintf(tmp, sizeof(tmp), "%" PRIu64 ".%09" PRIu64, ns / UINT64_C(1000000000),
                     ns % UINT64_C(1000000000));
    breaker__out_mem(o, tmp, (size_t)n);
}

void breaker__out_ratio(struct breaker__out *o, double r) {
    if (!(r > 0.0)) r = 0.0; /* NaN and negatives: 0 */
    if (r > 1.0) r = 1.0;
    uint64_t micro = (uint64_t)llround(r * 1e6);
    char tmp[24];
    int n =
        snprintf(tmp, sizeof(tmp), "%" PRIu64 ".%06" PRIu64, micro / 1000000u, micro % 1000000u);
    breaker__out_mem(o, tmp, (size_t)n);
}

void breaker__out_json_string(struct breaker__out *o, const char *str) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)str;
    const unsigned char *run = s;
    breaker__out_mem(o, "\"", 1);
    while (*s != '\0') {
        unsigned char c = *s;
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
            s++;
            continue;
        }
        if (c >= 0x80) {
            size_t n = breaker__utf8_sequence(s);
            if (n > 0) { /* well-formed: copied as is */
                s += n;
                continue;
            }
        }
        breaker__out_mem(o, (const char *)run, (size_t)(s - run));
        switch (c) {
        case '"':
            breaker__out_mem(o, "\\\"", 2);
            break;
        case '\\':
            breaker__out_mem(o, "\\\\", 2);
            break;
        case '\n':
            breaker__out_mem(o, "\\n", 2);
            break;
        case '\r':
            breaker__out_mem(o, "\\r", 2);
            break;
        case '\t':
            breaker__out_mem(o, "\\t", 2);
            break;
        default:
            if (c >= 0x80) {
                /* A byte that is not UTF-8: JSON text must be, so it becomes
                 * U+FFFD, the replacement character. */
                breaker__out_mem(o, "\\ufffd", 6);
            } else {
                char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
                breaker__out_mem(o, u, sizeof(u));
            }
        }
        s++;
        run = s;
    }
    breaker__out_mem(o, (const char *)run, (size_t)(s - run));
    breaker__out_mem(o, "\"", 1);
}

int breaker__out_finish(struct breaker__out *o, size_t *len) {
    if (o->len < o->cap) {
        o->buf[o->len] = '\0';
        if (len != NULL) *len = o->len;
        return BREAKER_OK;
    }
    if (o->cap > 0) o->buf[0] = '\0';
    if (len != NULL) *len = o->len + 1;
    return BREAKER_ENOSPC;
}

int breaker__out_finish_alloc(struct breaker__out *o, char **out, size_t *len) {
    reserve(o, 0); /* room for the NUL of an empty text */
    if (o->failed) {
        breaker__out_discard(o);
        *out = NULL;
        if (len != NULL) *len = 0;
        return BREAKER_ENOMEM;
    }
    o->buf[o->len] = '\0';
    *out = o->buf;
    if (len != NULL) *len = o->len;
    o->buf = NULL;
    o->cap = 0;
    return BREAKER_OK;
}

void breaker__out_discard(struct breaker__out *o) {
    if (o->grow) free(o->buf);
    o->buf = NULL;
    o->cap = 0;
}

int breaker__out_to_buffer(breaker__write_fn *write, void *ctx, char *buf, size_t cap,
                           size_t *len) {
    struct breaker__out o;
    breaker__out_init(&o, buf, cap);
    int rc = write(ctx, &o);
    return rc != BREAKER_OK ? rc : breaker__out_finish(&o, len);
}

int breaker__out_to_alloc(breaker__write_fn *write, void *ctx, char **out, size_t *len) {
    struct breaker__out o;
    breaker__out_init_alloc(&o);
    *out = NULL;
    if (len != NULL) *len = 0;
    int rc = write(ctx, &o);
    if (rc != BREAKER_OK) {
        breaker__out_discard(&o);
        return rc;
    }
    return breaker__out_finish_alloc(&o, out, len);
}
