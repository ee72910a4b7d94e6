/* SPDX-License-Identifier: MIT */
/*
 * core/arch/stripe_seq.h - picks the architecture's stripe sequences: each
 * core/arch/<arch>/stripe_seq.h defines BREAKER__OWNED_TLS_DIRECT,
 * breaker__owned_word_read(), BREAKER__CPU_SEQUENCES and the per-CPU stripe
 * sequences (breaker__cpu_stripe_take, breaker__cpu_add,
 * breaker__cpu_bucket_call, breaker__cpu_ring_slot,
 * breaker__cpu_ring_install, BREAKER__CPU_CHUNK_FULL); those with sequences
 * also breaker__thread_pointer() and BREAKER__RSEQ_SIG. core/arch/generic/
 * is the portable fallback, with no sequences: every other CPU, big-endian
 * arm64 (whose signature word is not the instruction's), and object formats
 * other than ELF (the sequences' descriptors are ELF sections).
 *
 * -DBREAKER_ARCH_GENERIC picks the fallback on any CPU, so that a build on
 * x86-64 or arm64 can test what other CPUs run (CMake: -DBREAKER_ARCH=generic).
 */
#ifndef BREAKER_CORE_ARCH_STRIPE_SEQ_H
#define BREAKER_CORE_ARCH_STRIPE_SEQ_H

/* The rseq ABI (linux/rseq.h), the same on every architecture: struct
 * rseq's cpu_id at 4, rseq_cs at 8, mm_cid at 24. */
#define BREAKER__RSEQ_CPU_ID 4
#define BREAKER__RSEQ_CS     8
#define BREAKER__RSEQ_MM_CID 24

/* The operands the sequences of every architecture name (each file's asm
 * refers to them by these names; an operand a sequence does not use costs
 * nothing): the per-CPU run's length, the rseq fields, the handle's fields
 * and a stripe's; then the time window's and the count window's. */
#define BREAKER__SEQ_OPERANDS                                                                 \
    [ncpu] "i"(BREAKER__CPU_STRIPES), [o_cs] "i"(BREAKER__RSEQ_CS),                           \
        [o_cpu] "i"(BREAKER__RSEQ_CPU_ID), [o_cid] "i"(BREAKER__RSEQ_MM_CID),                 \
        [sig] "i"(BREAKER__RSEQ_SIG), [o_stripes] "i"(offsetof(struct breaker, cpu_stripes)), \
        [o_lock] "i"(offsetof(struct breaker__stripe, cpu_lock))
#define BREAKER__SEQ_BUCKET_OPERANDS                                   \
    [o_start] "i"(offsetof(struct breaker__stripe, hint_start)),       \
        [o_offset] "i"(offsetof(struct breaker__stripe, hint_offset)), \
        [o_epoch1] "i"(offsetof(struct breaker__stripe, hint_epoch1)), \
        [o_bucket_ns] "i"(offsetof(struct breaker, bucket_ns)),        \
        [o_buckets] "i"(offsetof(struct breaker, buckets)),            \
        [o_stamp] "i"(offsetof(struct breaker__bucket, stamp)),        \
        [o_calls] "i"(offsetof(struct breaker__bucket, calls))
#define BREAKER__SEQ_RING_OPERANDS                                 \
    [o_chunk] "i"(offsetof(struct breaker__stripe, ring_chunk)),   \
        [o_chunks] "i"(offsetof(struct breaker, ring_chunks)),     \
        [o_slots] "i"(offsetof(struct breaker, ring_chunk_slots)), \
        [o_last] "i"(offsetof(struct breaker, ring_last_len))

#if defined(BREAKER_ARCH_GENERIC) || !defined(__GNUC__) || !defined(__ELF__)
#include "core/arch/generic/stripe_seq.h"
#elif defined(__x86_64__)
#include "core/arch/x86_64/stripe_seq.h"
#elif defined(__aarch64__) && defined(__AARCH64EL__)
#include "core/arch/aarch64/stripe_seq.h"
#else
#include "core/arch/generic/stripe_seq.h"
#endif

#endif /* BREAKER_CORE_ARCH_STRIPE_SEQ_H */
