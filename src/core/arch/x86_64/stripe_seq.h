/* SPDX-License-Identifier: MIT */
/*
 * core/arch/x86_64/stripe_seq.h - x86-64 (GCC and Clang): the owned-stripe
 * word read as one %%fs-relative load, and the restartable sequences (Linux
 * rseq) on per-CPU stripes.
 *
 * Included by core/arch/stripe_seq.h only (from core/stripes.h, after the
 * thread-local words and constants it uses are declared).
 */
#ifndef BREAKER_CORE_ARCH_X86_64_STRIPE_SEQ_H
#define BREAKER_CORE_ARCH_X86_64_STRIPE_SEQ_H

#ifndef BREAKER_CORE_STRIPES_H
#error "include core/stripes.h, not this file"
#endif

/* The thread pointer, the word at %fs:0 (the x86-64 TLS ABI): initial-exec
 * variables lie at the same offset from it in every thread. */
static inline uintptr_t breaker__thread_pointer(void) {
    uintptr_t tp;
    __asm__("movq %%fs:0, %0" : "=r"(tp));
    return tp;
}

/* The word a handle's owned_tls names, for the calling thread. On x86-64 a
 * single %fs-relative load: as many instructions as reading one fixed
 * initial-exec variable through the GOT, so heap and shared handles share
 * the short paths at no cost. */
#define BREAKER__OWNED_TLS_DIRECT 1
#define BREAKER__CPU_SEQUENCES    1
static inline uintptr_t breaker__owned_word_read(uintptr_t owned_tls) {
    uintptr_t v;
    /* volatile: the compiler cannot see that the asm reads memory, and must
     * not merge two reads across a change of the word (a claim, a thread
     * exit, the child side of a fork). Costs no instruction. */
    __asm__ volatile("movq %%fs:(%1), %0" : "=r"(v) : "r"(owned_tls));
    return v;
}

/* The signature glibc registers on x86-64, which must precede every abort
 * handler (the operand of the ud1 in BREAKER__CS_END). */
#define BREAKER__RSEQ_SIG 0x53053053

/* Restartable sequences on the stripe of the concurrency id the thread runs
 * on. Each is one sequence: read the thread's mm_cid, find its stripe, check
 * that no thread holds the stripe (cpu_lock 0), check what the operation
 * needs, and end with a single store, the commit. The kernel restarts (here:
 * fails) the sequence if the thread is preempted, migrated or signalled
 * before the commit, so between the read of the id and the commit no other
 * thread of the process runs on that id: writers of one stripe never
 * interleave, with no locked instruction. Each returns the stripe, or NULL
 * when the id has none (8 or more), the stripe is held, a check failed, or
 * the sequence was interrupted; the caller then takes another path.
 * cpu_id is checked too: a thread whose rseq registration failed has a
 * negative one, and the kernel would not restart its sequences. rseq_cs is
 * cleared on the way out so that the descriptor, in this library's data, is
 * never left for the kernel to read after a dlclose. The asm reads the
 * handle's fields by offset ([b]) to need few registers; [rseq] is the
 * handle's cpu_rseq. */
#define BREAKER__CS_BEGIN                                                \
    ".pushsection __rseq_cs, \"aw\"\n\t"                                 \
    ".balign 32\n\t"                                                     \
    "3:\n\t"                                                             \
    ".long 0, 0\n\t"              /* version, flags */                   \
    ".quad 1f, (2f - 1f), 4f\n\t" /* start, post-commit offset, abort */ \
    ".popsection\n\t"                                                    \
    "leaq 3b(%%rip), %[st]\n\t"                                          \
    "movq %[st], %%fs:%c[o_cs](%[rseq])\n\t"                             \
    "1:\n\t"                                                             \
    "cmpl $0, %%fs:%c[o_cpu](%[rseq])\n\t"                               \
    "jl 5f\n\t"                                                          \
    "movl %%fs:%c[o_cid](%[rseq]), %k[cid]\n\t"                          \
    "cmpl %[ncpu], %k[cid]\n\t"                                          \
    "jae 5f\n\t"                                                         \
    "movq %[cid], %[st]\n\t"                                             \
    "shlq $7, %[st]\n\t"                                                 \
    "addq %c[o_stripes](%[b]), %[st]\n\t"                                \
    "cmpq $0, %c[o_lock](%[st])\n\t"                                     \
    "jne 5f\n\t"
/* ... the checks, then the commit, right before 2: */
#define BREAKER__CS_END                                                  \
    "2:\n\t"                                                             \
    "jmp 6f\n\t"                                                         \
    ".pushsection __rseq_failure, \"ax\"\n\t"                            \
    ".byte 0x0f, 0xb9, 0x3d\n\t" /* ud1: the signature is its operand */ \
    ".long %c[sig]\n\t"                                                  \
    "4:\n\t"                                                             \
    "jmp 5f\n\t"                                                         \
    ".popsection\n\t"                                                    \
    "5:\n\t"                                                             \
    "xorl %k[st], %k[st]\n\t"                                            \
    "6:\n\t"                                                             \
    "movq $0, %%fs:%c[o_cs](%[rseq])\n\t"
/* The stripe array starts at the per-CPU run (handle field cpu_stripes). */
#define BREAKER__CS_INPUTS BREAKER__CS_INPUTS_OF(b)
#define BREAKER__CS_INPUTS_OF(handle) \
    [b] "r"(handle), [rseq] "r"((handle)->cpu_rseq), BREAKER__SEQ_OPERANDS

/* Take the stripe for a general path: cpu_lock 0 -> 1 is the commit. The
 * holder may then migrate; it stays the stripe's only writer (sequences
 * check the lock) until breaker__cpu_stripe_give. */
static inline struct breaker__stripe *breaker__cpu_stripe_take(const struct breaker *b) {
    uintptr_t st, cid, t;
    __asm__ volatile(BREAKER__CS_BEGIN "movq $1, %c[o_lock](%[st])\n\t" BREAKER__CS_END
                     : [st] "=&r"(st), [cid] "=&r"(cid), [t] "=&r"(t)
                     : BREAKER__CS_INPUTS
                     : "memory", "cc");
    return (struct breaker__stripe *)st;
}

/* Add `delta` to the counter at byte offset `off` of the stripe. */
#define breaker__cpu_add(b_, off_, delta_)                                                         \
    __extension__({                                                                                \
        uintptr_t st_, cid_, t_;                                                                   \
        __asm__ volatile(BREAKER__CS_BEGIN "movq %c[off](%[st]), %[t]\n\t"                         \
                                           "addq %[d], %[t]\n\t"                                   \
                                           "movq %[t], %c[off](%[st])\n\t" BREAKER__CS_END         \
                         : [st] "=&r"(st_), [cid] "=&r"(cid_), [t] "=&r"(t_)                       \
                         : BREAKER__CS_INPUTS_OF(b_), [off] "i"(off_), [d] "r"((uint64_t)(delta_)) \
                         : "memory", "cc");                                                        \
        (struct breaker__stripe *)st_;                                                             \
    })

/* A time-window success: when the stripe's hinted bucket holds `rel` (ns
 * since the epoch) and is stamped `gen_part` | hint_epoch1, add one to the
 * bucket's calls. */
static inline struct breaker__stripe *breaker__cpu_bucket_call(const struct breaker *b,
                                                               uint64_t rel, uint64_t gen_part) {
    uintptr_t st, cid, t;
    __asm__ volatile(BREAKER__CS_BEGIN
                     "movq %c[o_start](%[st]), %[t]\n\t" /* hint_start: bucket start + 1, 0 none */
                     "subq $1, %[t]\n\t"
                     "jb 5f\n\t"
                     "negq %[t]\n\t"
                     "addq %[rel], %[t]\n\t" /* rel - start, wrapping when rel < start */
                     "cmpq %c[o_bucket_ns](%[b]), %[t]\n\t"
                     "jae 5f\n\t"
                     "movq %c[o_offset](%[st]), %[cid]\n\t"
                     "addq %c[o_buckets](%[b]), %[cid]\n\t" /* cid: the bucket */
                     "movq %c[o_epoch1](%[st]), %[t]\n\t"
                     "orq %[gen], %[t]\n\t"
                     "cmpq %[t], %c[o_stamp](%[cid])\n\t"
                     "jne 5f\n\t"
                     "movq %c[o_calls](%[cid]), %[t]\n\t"
                     "addq $1, %[t]\n\t"
                     "movq %[t], %c[o_calls](%[cid])\n\t" BREAKER__CS_END
                     : [st] "=&r"(st), [cid] "=&r"(cid), [t] "=&r"(t)
                     : BREAKER__CS_INPUTS, [rel] "r"(rel), [gen] "r"(gen_part),
                       BREAKER__SEQ_BUCKET_OPERANDS
                     : "memory", "cc");
    return (struct breaker__stripe *)st;
}

/* What breaker__cpu_ring_slot returns besides a stripe: the stripe's chunk
 * is full (or it has none). */
#define BREAKER__CPU_CHUNK_FULL ((struct breaker__stripe *)(uintptr_t)1)

/* A count-window success: when the stripe's chunk has room, take its next
 * slot (ring_chunk + 1 is the commit). *w is ring_chunk as read, also when
 * the chunk is full (BREAKER__CPU_CHUNK_FULL). */
static inline struct breaker__stripe *breaker__cpu_ring_slot(const struct breaker *b, uint64_t *w) {
    uintptr_t st, cid, t;
    __asm__ volatile(
        BREAKER__CS_BEGIN
        "movq %c[o_chunk](%[st]), %[cid]\n\t" /* cid: the chunk word, (chunk + 1) << 32 | used */
        "movq %[cid], %[t]\n\t"
        "shrq $32, %[t]\n\t"
        "subl $1, %k[t]\n\t" /* the chunk; none wraps */
        "cmpl %k[t], %c[o_chunks](%[b])\n\t"
        "jbe 7f\n\t"
        "addl $1, %k[t]\n\t"
        "cmpl %k[t], %c[o_chunks](%[b])\n\t"
        "movl %c[o_slots](%[b]), %k[t]\n\t"
        "cmovel %c[o_last](%[b]), %k[t]\n\t" /* the chunk's length */
        "cmpl %k[t], %k[cid]\n\t"
        "jae 7f\n\t"
        "leaq 1(%[cid]), %[t]\n\t"
        "movq %[t], %c[o_chunk](%[st])\n\t" BREAKER__CS_END "jmp 8f\n\t"
        "7:\n\t"
        "movl $1, %k[st]\n\t"
        "movq $0, %%fs:%c[o_cs](%[rseq])\n\t"
        "8:\n\t"
        : [st] "=&r"(st), [cid] "=&r"(cid), [t] "=&r"(t)
        : BREAKER__CS_INPUTS, BREAKER__SEQ_RING_OPERANDS
        : "memory", "cc");
    *w = cid;
    return (struct breaker__stripe *)st;
}

/* Install a newly reserved chunk: ring_chunk `expect` (the full word
 * breaker__cpu_ring_slot saw) becomes `want`. Fails if the word changed or
 * the thread now runs on another id (whose stripe has a chunk of its own). */
static inline struct breaker__stripe *breaker__cpu_ring_install(const struct breaker *b,
                                                                uint64_t expect, uint64_t want) {
    uintptr_t st, cid, t;
    __asm__ volatile(BREAKER__CS_BEGIN "cmpq %[expect], %c[o_chunk](%[st])\n\t"
                                       "jne 5f\n\t"
                                       "movq %[want], %c[o_chunk](%[st])\n\t" BREAKER__CS_END
                     : [st] "=&r"(st), [cid] "=&r"(cid), [t] "=&r"(t)
                     : BREAKER__CS_INPUTS, [expect] "r"(expect), [want] "r"(want),
                       BREAKER__SEQ_RING_OPERANDS
                     : "memory", "cc");
    return (struct breaker__stripe *)st;
}
_Static_assert(sizeof(struct breaker__stripe) == 1u << 7, "the shift in BREAKER__CS_BEGIN");

#endif /* BREAKER_CORE_ARCH_X86_64_STRIPE_SEQ_H */
