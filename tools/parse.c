/*
 * parse.c - numbers and durations for scenario files and traces.
 *
 * Breaker keys go through the library's breaker_config_set(); these parse
 * the tool's own values (scenario keys, trace fields), which need a wider
 * range (a trace timestamp is decades of nanoseconds since 1970) and a
 * configurable bare unit (trace durations are seconds).
 */
#include "tool.h"

#include <ctype.h>
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
        uint64_t s = (ns + TOOL_SEC / 2) / TOOL_SEC;
        if (s % 60 == 0) {
            snprintf(buf, len, "%" PRIu64 "m", s / 60);
        } else {
            snprintf(buf, len, "%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
        }
    }
    return buf;
}
