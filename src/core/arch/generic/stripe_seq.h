/* SPDX-License-Identifier: MIT */
/*
 * core/arch/generic/stripe_seq.h - the portable fallback: the owned-stripe
 * word read from the thread-local variables themselves, and no per-CPU
 * stripes (every sequence fails, so callers take their general paths).
 *
 * Included by core/arch/stripe_seq.h only (from core/stripes.h, after the
 * thread-local words and constants it uses are declared).
 */
#ifndef BREAKER_CORE_ARCH_GENERIC_STRIPE_SEQ_H
#define BREAKER_CORE_ARCH_GENERIC_STRIPE_SEQ_H

#ifndef BREAKER_CORE_STRIPES_H
#error "include core/stripes.h, not this file"
#endif

#define BREAKER__OWNED_TLS_DIRECT 0
#define BREAKER__CPU_SEQUENCES    0
static inline uintptr_t breaker__owned_word_read(uintptr_t owned_tls) {
    if (owned_tls == 0) return breaker__tls_owned_offset;
    if (owned_tls <= BREAKER__HOST_DOMAINS) return breaker__tls_host_offset[owned_tls - 1];
    return 0;
}

static inline struct breaker__stripe *breaker__cpu_stripe_take(const struct breaker *b) {
    (void)b;
    return NULL;
}
#define breaker__cpu_add(b, off, delta) ((void)(b), (void)(delta), (struct breaker__stripe *)NULL)
static inline struct breaker__stripe *breaker__cpu_bucket_call(const struct breaker *b,
                                                               uint64_t rel, uint64_t gen_part) {
    (void)b, (void)rel, (void)gen_part;
    return NULL;
}
static inline struct breaker__stripe *breaker__cpu_ring_slot(const struct breaker *b, uint64_t *w) {
    (void)b, (void)w;
    return NULL;
}
static inline struct breaker__stripe *breaker__cpu_ring_install(const struct breaker *b,
                                                                uint64_t expect, uint64_t want) {
    (void)b, (void)expect, (void)want;
    return NULL;
}
#define BREAKER__CPU_CHUNK_FULL ((struct breaker__stripe *)(uintptr_t)1)

#endif /* BREAKER_CORE_ARCH_GENERIC_STRIPE_SEQ_H */
