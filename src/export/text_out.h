/* SPDX-License-Identifier: MIT */
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
    int grow;   /* the builder owns `buf` and reallocates it as needed */
    int failed; /* grow: a reallocation failed; the text is incomplete */
};

/* Write into the caller's `buf` of `cap` bytes (the buffer variants). */
void breaker__out_init(struct breaker__out *o, char *buf, size_t cap);
/* Write into a buffer the builder allocates and grows (the _alloc variants);
 * end with breaker__out_finish_alloc(), which hands it over or frees it. */
void breaker__out_init_alloc(struct breaker__out *o);
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
/* For a builder from breaker__out_init_alloc(): on success NUL-terminate,
 * give the buffer to the caller in `*out` (free() it) with the length
 * without the NUL in `*len` (may be NULL) and @return BREAKER_OK; after a
 * failed reallocation free it, set `*out` NULL and @return BREAKER_ENOMEM. */
int breaker__out_finish_alloc(struct breaker__out *o, char **out, size_t *len);
/* Free what a builder from breaker__out_init_alloc() holds (an export that
 * failed before it finished). */
void breaker__out_discard(struct breaker__out *o);

/* An export's writer: writes everything into `o`; @return BREAKER_OK, or the
 * error that stopped it (nothing is then returned to the caller). */
typedef int breaker__write_fn(void *ctx, struct breaker__out *o);
/* Run `write` into the caller's buffer (the contract of registry.h). */
int breaker__out_to_buffer(breaker__write_fn *write, void *ctx, char *buf, size_t cap, size_t *len);
/* Run `write` into a buffer allocated to fit (the _alloc contract). */
int breaker__out_to_alloc(breaker__write_fn *write, void *ctx, char **out, size_t *len);

#endif /* BREAKER_EXPORT_TEXT_OUT_H */
