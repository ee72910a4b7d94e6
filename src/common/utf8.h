/* SPDX-License-Identifier: MIT */
/*
 * utf8.h - the one check of a UTF-8 sequence, for the exporters' JSON
 * (export/text_out.c) and the tool's escaping of user text
 * (tools/cli/escape.c, which includes this file from src/). Header only,
 * so the tool needs no private symbol of the library (none is exported).
 * Private: nothing here is API.
 */
#ifndef BREAKER_COMMON_UTF8_H
#define BREAKER_COMMON_UTF8_H

#include <stddef.h>

/* The length of the well-formed UTF-8 sequence at `s` (2..4 bytes), or 0.
 * (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF.)
 * The bytes it reads stop at the first one that does not continue the
 * sequence, so a NUL-terminated string is never read past its end. */
static inline size_t breaker__utf8_sequence(const unsigned char *s) {
    unsigned char c = s[0];
    unsigned char lo = 0x80, hi = 0xbf; /* the range of the second byte */
    size_t n;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        if (c == 0xe0) lo = 0xa0; /* overlong */
        if (c == 0xed) hi = 0x9f; /* surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        if (c == 0xf0) lo = 0x90; /* overlong */
        if (c == 0xf4) hi = 0x8f; /* above U+10FFFF */
    } else {
        return 0;
    }
    if (s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xbf) return 0;
    return n;
}

#endif /* BREAKER_COMMON_UTF8_H */
