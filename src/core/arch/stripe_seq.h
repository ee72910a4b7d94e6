/* SPDX-License-Identifier: MIT */
/*
 * core/arch/stripe_seq.h - picks the architecture's stripe sequences: each
 * core/arch/<arch>/stripe_seq.h defines BREAKER__OWNED_TLS_DIRECT,
 * breaker__owned_word_read() and the per-CPU stripe sequences
 * (breaker__cpu_stripe_take, breaker__cpu_add, breaker__cpu_bucket_call,
 * breaker__cpu_ring_slot, breaker__cpu_ring_install, BREAKER__CPU_CHUNK_FULL);
 * core/arch/generic/ is the portable fallback, with no sequences.
 */
#ifndef BREAKER_CORE_ARCH_STRIPE_SEQ_H
#define BREAKER_CORE_ARCH_STRIPE_SEQ_H

#if defined(__x86_64__) && defined(__GNUC__)
#include "core/arch/x86_64/stripe_seq.h"
#else
#include "core/arch/generic/stripe_seq.h"
#endif

#endif /* BREAKER_CORE_ARCH_STRIPE_SEQ_H */
