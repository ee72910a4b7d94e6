/* SPDX-License-Identifier: MIT */
/*
 * core/arch/aarch64/stripe_seq.h - arm64 (GCC and Clang, little-endian):
 * the owned-stripe word read relative to the thread pointer (tpidr_el0),
 * and the restartable sequences (Linux rseq) on per-CPU stripes, the same
 * sequences as core/arch/x86_64/stripe_seq.h instruction for instruction
 * where the two instruction sets allow, laid out as the kernel's rseq
 * selftests lay them out for arm64 (rseq-arm64.h).
 *
 * Included by core/arch/stripe_seq.h only (from core/stripes.h, after the
 * thread-local words and constants it uses are declared).
 */
#ifndef BREAKER_CORE_ARCH_AARCH64_STRIPE_SEQ_H
#define BREAKER_CORE_ARCH_AARCH64_STRIPE_SEQ_H

#ifndef BREAKER_CORE_STRIPES_H
#error "include core/stripes.h, not this file"
#endif

/* The thread pointer: initial-exec variables lie at the same offset from it
 * in every thread (the arm64 TLS ABI, variant I). */
static inline uintptr_t breaker__thread_pointer(void) {
    uintptr_t tp;
    __asm__("mrs %0, tpidr_el0" : "=r"(tp));
    return tp;
}

/* The word a handle's owned_tls names, for the calling thread: its offset
 * from the thread pointer, read with one register-offset load, as the
 * x86-64 %fs-relative load does (two instructions, the mrs and the load:
 * what reading one fixed initial-exec variable costs here too). volatile
 * for the reason given there: the compiler must not merge two reads across
 * a change of the word. */
#define BREAKER__OWNED_TLS_DIRECT 1
#define BREAKER__CPU_SEQUENCES    1
static inline uintptr_t breaker__owned_word_read(uintptr_t owned_tls) {
    uintptr_t v;
    __asm__ volatile("mrs %0, tpidr_el0\n\t"
                     "ldr %0, [%0, %1]"
                     : "=&r"(v)
                     : "r"(owned_tls));
    return v;
}

/* The signature glibc registers on arm64 (sysdeps/.../aarch64/bits/rseq.h):
 * the instruction brk #0x45e0, which must be the word right before every
 * abort handler. Little-endian only: on big-endian arm64 the data word
 * differs from the instruction (core/arch/stripe_seq.h does not pick this
 * file there). */
#define BREAKER__RSEQ_SIG 0xd428bc00

/* The sequences, as on x86-64 (see there for what each does and why): read
 * the thread's mm_cid, find its stripe, check that no thread holds it,
 * check what the operation needs, end with a single store, the commit. The
 * kernel sends a sequence preempted, migrated or signalled before the
 * commit to its abort handler (here: fail, return NULL); cpu_id is checked
 * (a failed registration leaves it negative, and the kernel would not
 * restart that thread's sequences); rseq_cs is cleared on the way out.
 *
 * What arm64 adds: a weakly ordered CPU. Between threads that run on one
 * concurrency id one after the other, the scheduler's switch orders their
 * accesses (as every rseq per-CPU structure assumes), so the sequences'
 * plain loads and stores need nothing more. But a thread that holds a
 * stripe (breaker__cpu_stripe_take) may have migrated, and gives it back
 * from another CPU while a thread on the stripe's id runs its sequences:
 * the holder's release store pairs with the sequence's load of cpu_lock,
 * which is therefore a load-acquire (ldar), so that a sequence that finds
 * the stripe free reads the fields as the holder left them. (On x86-64
 * every load is an acquire.)
 *
 * [rs] is the calling thread's struct rseq (thread pointer + the handle's
 * cpu_rseq), computed before the sequence: the thread pointer does not
 * change when the thread migrates. The descriptor's address is formed with
 * adrp/add (PC-relative, so position-independent code needs no GOT entry). */
#define BREAKER__CS_BEGIN                                                \
    ".pushsection __rseq_cs, \"aw\"\n\t"                                 \
    ".balign 32\n\t"                                                     \
    "3:\n\t"                                                             \
    ".long 0, 0\n\t"              /* version, flags */                   \
    ".quad 1f, (2f - 1f), 4f\n\t" /* start, post-commit offset, abort */ \
    ".popsection\n\t"                                                    \
    "adrp %[st], 3b\n\t"                                                 \
    "add %[st], %[st], :lo12:3b\n\t"                                     \
    "str %[st], [%[rs], %[o_cs]]\n\t"                                    \
    "1:\n\t"                                                             \
    "ldr %w[t], [%[rs], %[o_cpu]]\n\t"                                   \
    "tbnz %w[t], #31, 4f\n\t" /* a negative cpu_id */                    \
    "ldr %w[cid], [%[rs], %[o_cid]]\n\t"                                 \
    "cmp %w[cid], %[ncpu]\n\t"                                           \
    "b.hs 4f\n\t"                                                        \
    "ldr %[st], [%[b], %[o_stripes]]\n\t"                                \
    "add %[st], %[st], %[cid], lsl #7\n\t"                               \
    "add %[t], %[st], %[o_lock]\n\t"                                     \
    "ldar %[t], [%[t]]\n\t" /* acquire: see above */                     \
    "cbnz %[t], 4f\n\t"
/* ... the checks, then the commit, right before 2. The abort handler (4)
 * is the failure path itself, right after its signature; a sequence that
 * commits branches over both. */
#define BREAKER__CS_END \
    "2:\n\t"            \
    "b 6f\n\t"          \
    ".inst %[sig]\n\t"  \
    "4:\n\t"            \
    "mov %[st], #0\n\t" \
    "6:\n\t"            \
    "str xzr, [%[rs], %[o_cs]]\n\t"
/* The stripe array starts at the per-CPU run (handle field cpu_stripes). */
#define BREAKER__CS_INPUTS BREAKER__CS_INPUTS_OF(b)
#define BREAKER__CS_INPUTS_OF(handle) \
    [b] "r"(handle), [rs] "r"(breaker__thread_pointer() + (handle)->cpu_rseq), BREAKER__SEQ_OPERANDS

/* Each sequence below is its x86-64 namesake, which says what it does. */
static inline struct breaker__stripe *breaker__cpu_stripe_take(const struct breaker *b) {
    uintptr_t st, cid, t;
    __asm__ volatile(BREAKER__CS_BEGIN "mov %[t], #1\n\t"
                                       "str %[t], [%[st], %[o_lock]]\n\t" BREAKER__CS_END
                     : [st] "=&r"(st), [cid] "=&r"(cid), [t] "=&r"(t)
                     : BREAKER__CS_INPUTS
                     : "memory", "cc");
    return (struct breaker__stripe *)st;
}

#define breaker__cpu_add(b_, off_, delta_)                                                         \
    __extension__({                                                                                \
        uintptr_t st_, cid_, t_;                                                                   \
        __asm__ volatile(BREAKER__CS_BEGIN "ldr %[t], [%[st], %[off]]\n\t"                         \
                                           "add %[t], %[t], %[d]\n\t"                              \
                                           "str %[t], [%[st], %[off]]\n\t" BREAKER__CS_END         \
                         : [st] "=&r"(st_), [cid] "=&r"(cid_), [t] "=&r"(t_)                       \
                         : BREAKER__CS_INPUTS_OF(b_), [off] "i"(off_), [d] "r"((uint64_t)(delta_)) \
                         : "memory", "cc");                                                        \
        (struct breaker__stripe *)st_;                                                             \
    })

static inline struct breaker__stripe *breaker__cpu_bucket_call(const struct breaker *b,
                                                               uint64_t rel, uint64_t gen_part) {
    uintptr_t st, cid, t, u;
    __asm__ volatile(BREAKER__CS_BEGIN
                     "ldr %[t], [%[st], %[o_start]]\n\t" /* hint_start: bucket start + 1, 0 none */
                     "cbz %[t], 4f\n\t"
                     "sub %[t], %[t], #1\n\t"
                     "sub %[t], %[rel], %[t]\n\t" /* rel - start, wrapping when rel < start */
                     "ldr %[u], [%[b], %[o_bucket_ns]]\n\t"
                     "cmp %[t], %[u]\n\t"
                     "b.hs 4f\n\t"
                     "ldr %[cid], [%[st], %[o_offset]]\n\t"
                     "ldr %[u], [%[b], %[o_buckets]]\n\t"
                     "add %[cid], %[cid], %[u]\n\t" /* cid: the bucket */
                     "ldr %[t], [%[st], %[o_epoch1]]\n\t"
                     "orr %[t], %[t], %[gen]\n\t"
                     "ldr %[u], [%[cid], %[o_stamp]]\n\t"
                     "cmp %[u], %[t]\n\t"
                     "b.ne 4f\n\t"
                     "ldr %[t], [%[cid], %[o_calls]]\n\t"
                     "add %[t], %[t], #1\n\t"
                     "str %[t], [%[cid], %[o_calls]]\n\t" BREAKER__CS_END
                     : [st] "=&r"(st), [cid] "=&r"(cid), [t] "=&r"(t), [u] "=&r"(u)
                     : BREAKER__CS_INPUTS, [rel] "r"(rel), [gen] "r"(gen_part),
                       BREAKER__SEQ_BUCKET_OPERANDS
                     : "memory", "cc");
    return (struct breaker__stripe *)st;
}

#define BREAKER__CPU_CHUNK_FULL ((struct breaker__stripe *)(uintptr_t)1)

/* The chunk-full exit (7) leaves the sequence before its commit, so it
 * clears rseq_cs itself. */
static inline struct breaker__stripe *breaker__cpu_ring_slot(const struct breaker *b, uint64_t *w) {
    uintptr_t st, cid, t, u;
    __asm__ volatile(
        BREAKER__CS_BEGIN
        "ldr %[cid], [%[st], %[o_chunk]]\n\t" /* cid: the chunk word, (chunk + 1) << 32 | used */
        "lsr %[t], %[cid], #32\n\t"
        "sub %w[t], %w[t], #1\n\t" /* the chunk; none wraps */
        "ldr %w[u], [%[b], %[o_chunks]]\n\t"
        "cmp %w[u], %w[t]\n\t"
        "b.ls 7f\n\t"
        "add %w[t], %w[t], #1\n\t"
        "cmp %w[t], %w[u]\n\t" /* the last chunk? */
        "ldr %w[t], [%[b], %[o_slots]]\n\t"
        "ldr %w[u], [%[b], %[o_last]]\n\t"
        "csel %w[t], %w[u], %w[t], eq\n\t" /* the chunk's length */
        "cmp %w[cid], %w[t]\n\t"
        "b.hs 7f\n\t"
        "add %[t], %[cid], #1\n\t"
        "str %[t], [%[st], %[o_chunk]]\n\t" BREAKER__CS_END "b 8f\n\t"
        "7:\n\t"
        "mov %[st], #1\n\t"
        "str xzr, [%[rs], %[o_cs]]\n\t"
        "8:\n\t"
        : [st] "=&r"(st), [cid] "=&r"(cid), [t] "=&r"(t), [u] "=&r"(u)
        : BREAKER__CS_INPUTS, BREAKER__SEQ_RING_OPERANDS
        : "memory", "cc");
    *w = cid;
    return (struct breaker__stripe *)st;
}

static inline struct breaker__stripe *breaker__cpu_ring_install(const struct breaker *b,
                                                                uint64_t expect, uint64_t want) {
    uintptr_t st, cid, t;
    __asm__ volatile(BREAKER__CS_BEGIN "ldr %[t], [%[st], %[o_chunk]]\n\t"
                                       "cmp %[t], %[expect]\n\t"
                                       "b.ne 4f\n\t"
                                       "str %[want], [%[st], %[o_chunk]]\n\t" BREAKER__CS_END
                     : [st] "=&r"(st), [cid] "=&r"(cid), [t] "=&r"(t)
                     : BREAKER__CS_INPUTS, [expect] "r"(expect), [want] "r"(want),
                       BREAKER__SEQ_RING_OPERANDS
                     : "memory", "cc");
    return (struct breaker__stripe *)st;
}
_Static_assert(sizeof(struct breaker__stripe) == 1u << 7, "the shift in BREAKER__CS_BEGIN");

#endif /* BREAKER_CORE_ARCH_AARCH64_STRIPE_SEQ_H */
