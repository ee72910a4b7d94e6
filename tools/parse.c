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
#include <string.h>

#define NS_PER_SEC UINT64_C(1000000000)

char *tool_trim(char *s) {
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* Digits with an optional fraction of up to nine digits, times 1e9.
 * @return past the number, or NULL. */
static const char *decimal_e9(const char *s, uint64_t *out) {
    uint64_t whole = 0, frac = 0;
    unsigned digits = 0, frac_digits = 0;
    for (; isdigit((unsigned char)*s); s++, digits++) {
        if (whole > (UINT64_MAX - 9) / 10) return NULL;
        whole = whole * 10 + (uint64_t)(*s - '0');
    }
    if (*s == '.') {
        for (s++; isdigit((unsigned char)*s); s++, digits++) {
            if (frac_digits == 9) {
                if (*s != '0') return NULL;
                continue;
            }
            frac = frac * 10 + (uint64_t)(*s - '0');
            frac_digits++;
        }
    }
    if (digits == 0) return NULL;
    for (; frac_digits < 9; frac_digits++)
        frac *= 10;
    if (whole > (UINT64_MAX - frac) / NS_PER_SEC) return NULL;
    *out = whole * NS_PER_SEC + frac;
    return s;
}

bool tool_parse_duration(const char *text, uint64_t bare_unit_ns, uint64_t *out) {
    static const struct {
        const char *suffix;
        uint64_t ns;
    } units[] = {{"ns", 1},
                 {"us", 1000},
                 {"ms", 1000000},
                 {"s", NS_PER_SEC},
                 {"m", 60 * NS_PER_SEC},
                 {"h", 3600 * NS_PER_SEC},
                 {"d", 86400 * NS_PER_SEC}};
    uint64_t v;
    const char *end = decimal_e9(text, &v);
    if (end == NULL) return false;
    uint64_t unit = 0;
    if (*end == '\0') {
        unit = bare_unit_ns;
    } else {
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
            if (strcmp(end, units[i].suffix) == 0) unit = units[i].ns;
    }
    if (unit == 0) return false;
    /* v * unit / 1e9 without overflow: every unit is below a second or a
     * whole number of seconds. */
    uint64_t whole = v / NS_PER_SEC, frac = v % NS_PER_SEC;
    uint64_t frac_part;
    if (unit >= NS_PER_SEC) {
        frac_part = frac * (unit / NS_PER_SEC);
    } else {
        if ((frac * unit) % NS_PER_SEC != 0) return false; /* finer than 1 ns */
        frac_part = frac * unit / NS_PER_SEC;
    }
    if (whole != 0 && unit > UINT64_MAX / whole) return false;
    uint64_t a = whole * unit;
    if (a > UINT64_MAX - frac_part) return false;
    *out = a + frac_part;
    return true;
}

bool tool_parse_number(const char *text, bool percent_ok, double *out) {
    uint64_t v;
    const char *end = decimal_e9(text, &v);
    if (end == NULL) return false;
    double d = (double)(v / NS_PER_SEC) + (double)(v % NS_PER_SEC) / 1e9;
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
