/*
 * text_out.h - a bounded text builder that keeps counting past the end, so a
 * too-small buffer learns the size it needs; what the exporters write with
 * (text_out.c). Private: nothing here is API.
 */
#ifndef BREAKER_EXPORT_TEXT_OUT_H
#define BREAKER_EXPORT_TEXT_OUT_H

#include "breaker.h"

#include <stddef.h>
#include <stdint.h>

struct breaker__out {
    char *buf;
    size_t cap;
    size_t len; /* bytes produced, possibly more than cap */
};

void breaker__out_init(struct breaker__out *o, char *buf, size_t cap);
void breaker__out_mem(struct breaker__out *o, const char *s, size_t n);
void breaker__out_str(struct breaker__out *o, const char *s);
void breaker__out_u64(struct breaker__out *o, uint64_t v);
/* A duration in ns as seconds with nine decimals ("1.500000000"). */
void breaker__out_seconds(struct breaker__out *o, uint64_t ns);
/* A ratio in [0, 1] with six decimals ("0.250000"), whatever the locale. */
void breaker__out_ratio(struct breaker__out *o, double r);
/* A JSON string literal, quotes included, escaped for any bytes. */
void breaker__out_json_string(struct breaker__out *o, const char *s);
/* NUL-terminate and produce the export status (see registry.h). */
int breaker__out_finish(struct breaker__out *o, size_t *len);

#endif /* BREAKER_EXPORT_TEXT_OUT_H */
