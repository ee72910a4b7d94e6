/* SPDX-License-Identifier: MIT */
/*
 * fuzz_util.h - what the fuzz targets share: the entry point they define,
 * a check that stops the run, and a reader over the input bytes.
 *
 * A failed check prints what was broken and aborts, so that libFuzzer
 * records the input as a crash and the corpus replay (replay_main.c) fails
 * its ctest test.
 */
#ifndef BREAKER_FUZZ_UTIL_H
#define BREAKER_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond, ...)                                                        \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                            \
            fputc('\n', stderr);                                                     \
            abort();                                                                 \
        }                                                                            \
    } while (0)

/* Consumes the input front to back; past its end every read gives zeros,
 * so any prefix of an input is itself a complete program. */
struct fuzz_reader {
    const uint8_t *data;
    size_t size, pos;
};

static inline int fuzz_more(const struct fuzz_reader *r) { return r->pos < r->size; }

static inline uint8_t fuzz_byte(struct fuzz_reader *r) {
    return r->pos < r->size ? r->data[r->pos++] : 0;
}

/* LEB128, at most ten bytes. */
static inline uint64_t fuzz_varint(struct fuzz_reader *r) {
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64 && fuzz_more(r); shift += 7) {
        uint8_t b = fuzz_byte(r);
        v |= (uint64_t)(b & 0x7fu) << shift;
        if ((b & 0x80u) == 0) break;
    }
    return v;
}

#endif /* BREAKER_FUZZ_UTIL_H */
