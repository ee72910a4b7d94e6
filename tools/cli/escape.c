/* SPDX-License-Identifier: MIT */
/*
 * escape.c - user text made safe to quote.
 *
 * Messages quote what they refuse: a trace line, an INI value, an option.
 * That text may hold bytes a terminal obeys (ESC starts a sequence that can
 * retitle the window or clear the screen; 0x9B is CSI to some terminals),
 * so every message goes out through tool_error(), which writes such bytes
 * as \xNN. UTF-8 text stays as it is; bytes that are not UTF-8, C0 and C1
 * controls and DEL are escaped.
 */
#include "cli/text.h"

#include "common/utf8.h" /* the library's own check, header only */

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* The length of the character at `s` if it may be printed as it is: 1 for
 * printable ASCII, 2 to 4 for a well-formed UTF-8 sequence (no overlong
 * forms, surrogates or C1 controls); 0 if the byte at `s` must be escaped. */
static size_t printable_len(const unsigned char *s) {
    if (s[0] >= 0x20 && s[0] < 0x7f) return 1;
    if (s[0] == 0xc2 && s[1] < 0xa0) return 0; /* U+0080..U+009F are the C1 controls */
    return breaker__utf8_sequence(s);
}

size_t tool_escape(char *dst, size_t dst_len, const char *src) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)src;
    size_t total = 0, used = 0;
    bool full = dst_len == 0;
    while (*s != '\0') {
        char esc[4];
        const char *piece = (const char *)s;
        size_t n = printable_len(s);
        if (n == 0) {
            esc[0] = '\\';
            esc[1] = 'x';
            esc[2] = hex[*s >> 4];
            esc[3] = hex[*s & 0xf];
            piece = esc;
            n = sizeof(esc);
            s++;
        } else {
            s += n;
        }
        total += n;
        /* Whole pieces only: never half an escape or half a character. */
        if (!full && used + n < dst_len) {
            memcpy(dst + used, piece, n);
            used += n;
        } else {
            full = true;
        }
    }
    if (dst_len > 0) dst[used] = '\0';
    return total;
}

bool tool_text_is_plain(const char *text) {
    const unsigned char *s = (const unsigned char *)text;
    while (*s != '\0') {
        size_t n = *s == '\t' ? 1 : printable_len(s);
        if (n == 0) return false;
        s += n;
    }
    return true;
}

void tool_error(FILE *out, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *raw = NULL;
    int len = vasprintf(&raw, fmt, ap);
    va_end(ap);
    if (len < 0) {
        fputs("(out of memory)\n", out);
        return;
    }
    size_t need = tool_escape(NULL, 0, raw) + 1;
    char *safe = malloc(need);
    if (safe == NULL) {
        fputs("(out of memory)\n", out);
    } else {
        tool_escape(safe, need, raw);
        fprintf(out, "%s\n", safe);
    }
    free(safe);
    free(raw);
}

void tool_json_string(FILE *out, const char *text) {
    const unsigned char *s = (const unsigned char *)text;
    fputc('"', out);
    while (*s != '\0') {
        size_t n = *s >= 0x80 ? printable_len(s) : 1;
        if (*s == '"' || *s == '\\') {
            fprintf(out, "\\%c", *s);
        } else if (*s < 0x20 || *s == 0x7f) {
            fprintf(out, "\\u%04x", *s);
        } else if (n == 0) {
            fputs("\\ufffd", out); /* not UTF-8 (or a C1 control) */
            n = 1;
        } else {
            fwrite(s, 1, n, out);
        }
        s += n;
    }
    fputc('"', out);
}
