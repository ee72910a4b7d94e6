/* SPDX-License-Identifier: MIT */
/*
 * parse.c - numbers and durations for scenario files and traces.
 *
 * Breaker keys go through the library's breaker_config_set(); these parse
 * the tool's own values (scenario keys, trace fields), which need a wider
 * range (a trace timestamp is decades of nanoseconds since 1970) and a
 * configurable bare unit (trace durations are seconds).
 */
#include "cli/parse.h"
#include "cli/text.h"

#include <breaker.h>

#include <ctype.h>
#include <stdio.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

char *tool_trim(char *s) {
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

bool tool_parse_duration(const char *text, uint64_t bare_unit_ns, uint64_t *out) {
    return breaker_parse_duration(text, bare_unit_ns, out) == BREAKER_OK;
}

bool tool_parse_number(const char *text, bool percent_ok, double *out) {
    /* Plain decimals only ("12", "0.5", ".5"): strtod alone would also take
     * signs, hex, "inf", "nan" and exponents, which no scenario value means. */
    static const char digits[] = "0123456789";
    const char *p = text;
    size_t whole = strspn(p, digits), frac = 0;
    p += whole;
    if (*p == '.') {
        frac = strspn(p + 1, digits);
        p += 1 + frac;
    }
    if (whole + frac == 0) return false;
    char *end;
    double d = strtod(text, &end);
    if (end != p) return false;
    if (percent_ok && *end == '%') {
        d /= 100.0;
        end++;
    }
    if (*end != '\0') return false;
    *out = d;
    return true;
}

bool tool_parse_uint(const char *text, uint64_t min, uint64_t max, uint64_t *out) {
    if (*text == '\0') return false;
    uint64_t v = 0;
    for (const char *s = text; *s != '\0'; s++) {
        if (!isdigit((unsigned char)*s)) return false;
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10) return false;
        v = v * 10 + d;
    }
    if (v < min || v > max) return false;
    *out = v;
    return true;
}

const char *tool_format_duration(uint64_t ns, char *buf, size_t len) {
    /* Three significant digits in the largest unit that keeps the number
     * below 1000 once rounded, so 999.6ms prints as 1s, never 1e+03ms. */
    double d = (double)ns;
    if (ns == 0) {
        snprintf(buf, len, "0s");
    } else if (ns < 1000) {
        snprintf(buf, len, "%" PRIu64 "ns", ns);
    } else if (d / 1e3 < 999.5) {
        snprintf(buf, len, "%.3gus", d / 1e3);
    } else if (d / 1e6 < 999.5) {
        snprintf(buf, len, "%.3gms", d / 1e6);
    } else if (d / 1e9 < 59.95) {
        snprintf(buf, len, "%.3gs", d / 1e9);
    } else {
        uint64_t s = ns / TOOL_SEC + (ns % TOOL_SEC >= TOOL_SEC / 2); /* no wrap near 2^64 */
        if (s % 60 == 0) {
            snprintf(buf, len, "%" PRIu64 "m", s / 60);
        } else {
            snprintf(buf, len, "%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
        }
    }
    return buf;
}

void tool_format_offset(uint64_t t, uint64_t origin, char *buf, size_t len) {
    uint64_t d = t > origin ? t - origin : 0;
    snprintf(buf, len, "%" PRIu64 ".%03" PRIu64 "s", d / TOOL_SEC, (d % TOOL_SEC) / TOOL_MS);
}

/* `ns` as tool_format_duration() prints it if that is exact, else in
 * seconds with every digit it needs. */
static void format_exact(uint64_t ns, char *buf, size_t len) {
    uint64_t back;
    if (ns >= 3600 * TOOL_SEC && ns % TOOL_SEC == 0) {
        /* Hours and days as terms ("366d", "1h30m"), not thousands of
         * minutes. */
        static const struct {
            uint64_t s;
            char unit;
        } terms[] = {{86400, 'd'}, {3600, 'h'}, {60, 'm'}, {1, 's'}};
        uint64_t s = ns / TOOL_SEC;
        size_t used = 0;
        buf[0] = '\0';
        for (size_t i = 0; i < 4 && used < len; i++) {
            if (s < terms[i].s) continue;
            int w =
                snprintf(buf + used, len - used, "%" PRIu64 "%c", s / terms[i].s, terms[i].unit);
            if (w < 0) break;
            used += (size_t)w;
            s %= terms[i].s;
        }
        return;
    }
    tool_format_duration(ns, buf, len);
    if (breaker_parse_duration(buf, 0, &back) == BREAKER_OK && back == ns) return;
    char frac[16];
    snprintf(frac, sizeof(frac), "%09" PRIu64, ns % TOOL_SEC);
    size_t n = strlen(frac);
    while (n > 0 && frac[n - 1] == '0')
        frac[--n] = '\0';
    snprintf(buf, len, "%" PRIu64 "%s%ss", ns / TOOL_SEC, n ? "." : "", frac);
}

void tool_humanize_ns(char *msg, size_t len) {
    char out[TOOL_MSG_MAX];
    size_t used = 0;
    const char *p = msg;
    while (*p != '\0' && used + 1 < sizeof(out) && used + 1 < len) {
        size_t d = strspn(p, "0123456789");
        bool word_start = p == msg || !isalnum((unsigned char)p[-1]);
        uint64_t ns;
        if (d > 0 && d <= 20 && word_start && strncmp(p + d, " ns", 3) == 0 &&
            !isalnum((unsigned char)p[d + 3])) {
            char num[24], human[40];
            memcpy(num, p, d);
            num[d] = '\0';
            if (tool_parse_uint(num, 0, UINT64_MAX, &ns)) {
                format_exact(ns, human, sizeof(human));
                int w = snprintf(out + used, sizeof(out) - used, "%s", human);
                used = w < 0 ? used : used + (size_t)w;
                if (used >= sizeof(out)) used = sizeof(out) - 1;
                p += d + 3;
                continue;
            }
        }
        /* A configuration field ("open_max_ns") as the command line names
         * its key ("open_max"). */
        size_t w = strspn(p, "abcdefghijklmnopqrstuvwxyz_");
        if (word_start && w > 3 && strncmp(p + w - 3, "_ns", 3) == 0 &&
            !isalnum((unsigned char)p[w])) {
            size_t keep = w - 3 < sizeof(out) - 1 - used ? w - 3 : sizeof(out) - 1 - used;
            memcpy(out + used, p, keep);
            used += keep;
            p += w;
            continue;
        }
        out[used++] = *p++;
    }
    out[used] = '\0';
    /* The rewritten text is never longer than the original: it fits. */
    snprintf(msg, len, "%s", out);
}

uint64_t tool_source_key(const char *text) {
    if (*text == '\0') return 0;
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (const unsigned char *s = (const unsigned char *)text; *s != '\0'; s++)
        h = (h ^ *s) * UINT64_C(0x100000001b3);
    return h != 0 ? h : 1;
}
