/* SPDX-License-Identifier: MIT */
/*
 * stripes.h - which counter stripe the calling thread writes, and how it
 * counts there (stripes.c assigns them): an owned stripe with plain loads and
 * stores, a per-CPU stripe in a restartable sequence (the sequences are per
 * architecture: core/arch/<arch>/stripe_seq.h, with a portable fallback that
 * has none), or a shared stripe with atomic read-modify-writes.
 *
 * Changes when the way a thread gets or writes its stripe changes.
 */
#ifndef BREAKER_CORE_STRIPES_H
#define BREAKER_CORE_STRIPES_H

#include "common/atomics.h"
#include "breaker.h"
#include "core/handle.h"
#include "core/layout.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h> /* pid_t */

/* Per-CPU stripes (stripes.c, "Per-CPU stripes"): in a process where the
 * kernel's restartable sequences are usable, a heap block's stripes have
 * three roles instead of two. The first BREAKER__CPU_FIRST are owned by
 * threads, as owned stripes are (layout.h, BREAKER__OWNED_STRIPES; the
 * first threads to call get them); the next BREAKER__CPU_STRIPES belong to
 * the process's concurrency ids (the rseq mm_cid: a small number no two
 * running threads share), and a thread without an owned stripe writes the
 * one of the id it runs on in restartable sequences, each ending in one
 * plain store (a record that needs several holds the stripe's cpu_lock,
 * taken by such a sequence, for its writes); the rest are shared and
 * written atomically (threads on ids beyond them, and anyone who finds the
 * id's stripe busy). So a pool of any number of threads on up to 8 cores
 * writes with plain stores only. Store blocks keep the two roles: their
 * processes have different ids. */
#define BREAKER__CPU_FIRST   4u
#define BREAKER__CPU_STRIPES 8u

/* ---- The calling thread's stripe -----------------------------------------
 * stripes.c assigns each thread a stripe index the first time it touches any
 * breaker. initial-exec TLS: read on every call, and the general-dynamic
 * model would cost a __tls_get_addr call each time. */
extern _Thread_local unsigned breaker__tls_stripe_plus_one
    __attribute__((tls_model("initial-exec")));
/* The byte offset + 1 of the thread's stripe when it owns one of the process
 * pool's owned stripes, else 0 (not assigned yet, or a shared stripe). */
extern _Thread_local uintptr_t breaker__tls_owned_offset __attribute__((tls_model("initial-exec")));
/* Host domains: the store files whose blocks processes share, each with a
 * table of claims on the owned stripes (stripes.c). A process takes part in
 * up to BREAKER__HOST_DOMAINS of them; the blocks of further store files
 * count atomically. Per domain, the byte offset + 1 of the stripe the thread
 * claimed there, else 0. */
#define BREAKER__HOST_DOMAINS 8u
#define BREAKER__HOST_NONE    0xffu
extern _Thread_local uintptr_t breaker__tls_host_offset[BREAKER__HOST_DOMAINS]
    __attribute__((tls_model("initial-exec")));
unsigned breaker__stripe_assign(void);

/* A handle's owned_tls: which thread-local word its short paths read for the
 * calling thread's owned stripe. On x86-64 and arm64, the word's offset from the
 * thread pointer (the same in every thread: the words are initial-exec TLS);
 * elsewhere 0 for the process pool's word, 1 + k for host domain k, and
 * BREAKER__HOST_DOMAINS + 1 for a word that stays 0. */
uintptr_t breaker__owned_tls_heap(void);
uintptr_t breaker__owned_tls_host(unsigned domain);
uintptr_t breaker__owned_tls_none(void);

/* A process's state letter and start time (clock ticks since boot): fields 3
 * and 22 of /proc/<pid>/stat. @return 0, ENOENT (no such process), or
 * another errno (cannot tell). The claims' liveness, and the store file's
 * host leases. */
int breaker__proc_stat(pid_t pid, char *state, uint64_t *ticks);

/* Take part in the host domain of the store whose id is `id`, with its
 * claim table `claims` (BREAKER__OWNED_STRIPES words). @return JOINED: a new
 * domain, and `claims` must stay mapped for the life of the process;
 * ALREADY: the process is in it, with a table given before; FULL: the
 * process is in BREAKER__HOST_DOMAINS others (or cannot take part). */
enum breaker__host_join { BREAKER__HOST_JOINED, BREAKER__HOST_ALREADY, BREAKER__HOST_FULL };
enum breaker__host_join breaker__host_domain_join(uint64_t id, breaker__atomic64 *claims);
/* Register the host domains' fork handlers now (once), so that handlers a
 * caller registers after this run their prepare step first: a store file
 * takes its locks before host_lock, in fork as on the path that moves it. */
void breaker__host_fork_handlers(void);
/* The domain index of store `id`, or BREAKER__HOST_NONE. */
unsigned breaker__host_domain_of(uint64_t id);

/* breaker__thread_stripe for a handle in ATOMIC mode (stripes.c): the
 * thread's claim in the handle's host domain when it holds (or now gets)
 * one, else one of the shared stripes, written atomically. */
struct breaker__stripe_ref breaker__host_stripe(const struct breaker *b);

/* ---- Per-CPU stripes --------------------------------------------------------
 * The rseq offset when this process can use per-CPU stripes (x86-64 or
 * arm64, glibc registered rseq, a kernel that reports mm_cid), else 0
 * (BREAKER_CPU_STRIPES=0, another CPU or C library, a kernel or emulator
 * without rseq: the thread-owned scheme); decided once per
 * process, before the owned-stripe pool hands out its first stripe. */
uintptr_t breaker__cpu_stripes_rseq(void);

/* The word a handle's owned_tls names (breaker__owned_word_read) and the
 * restartable sequences on per-CPU stripes, per architecture. */
#include "core/arch/stripe_seq.h"

/* A stripe as the calling thread writes it: owned (single writer: plain
 * load and store) or not (atomic read-modify-write). */
struct breaker__stripe_ref {
    struct breaker__stripe *stripe;
    unsigned index;
    bool owned;
};

/* The calling thread's stripe in `b`'s block: the one way to get it. */
static inline struct breaker__stripe_ref breaker__thread_stripe(const struct breaker *b) {
    if (b->stripe_mode == BREAKER__STRIPES_ATOMIC) return breaker__host_stripe(b);
    unsigned i = breaker__tls_stripe_plus_one;
    i = __builtin_expect(i != 0, 1) ? i - 1 : breaker__stripe_assign();
    /* The pool hands out owned stripes below BREAKER__OWNED_STRIPES only (below
     * BREAKER__CPU_FIRST with per-CPU stripes), and shared ones above them. */
    struct breaker__stripe_ref r = {&b->stripes[i], i, i < BREAKER__OWNED_STRIPES};
    return r;
}

/* The first half of breaker__thread_stripe, for the three short paths
 * (closed acquire, closed success, open refusal) that must stay frameless:
 * the thread's owned stripe for this handle in one load and one add, or
 * false, which sends the caller down its general path. The word read is the
 * handle's (owned_tls): the process pool's for a heap block, the host
 * domain's claim for a shared block, a zero word otherwise; so
 * a plain store here only ever lands on a stripe no other thread of any
 * process writes. */
static inline bool breaker__owned_stripe(const struct breaker *b, struct breaker__stripe **out) {
    uintptr_t o = breaker__owned_word_read(b->owned_tls);
    if (__builtin_expect(o == 0, 0)) return false;
    *out = (struct breaker__stripe *)(void *)((char *)b->stripes + o - 1);
    return true;
}

/* breaker__cpu_stripe_take for a thread that has been given its pool stripe:
 * NULL for a thread's first calls, so the general path assigns it one (it
 * may get an owned stripe, which is cheaper and keeps a count window in
 * order). */
static inline struct breaker__stripe *breaker__cpu_stripe_try(const struct breaker *b) {
    if (__builtin_expect(breaker__tls_stripe_plus_one == 0, 0)) return NULL;
    return breaker__cpu_stripe_take(b);
}

/* Give back a stripe breaker__cpu_stripe_take returned. Release: the next
 * holder sees this one's stores. */
static inline void breaker__cpu_stripe_give(struct breaker__stripe *st) {
    atomic_store_explicit(&st->cpu_lock, 0, memory_order_release);
}

/* A held per-CPU stripe as a stripe_ref, for a general path called with it:
 * its holder is its only writer, like an owner. */
static inline struct breaker__stripe_ref breaker__cpu_stripe_ref(const struct breaker *b,
                                                                 struct breaker__stripe *st) {
    struct breaker__stripe_ref r = {st, (unsigned)(st - b->stripes), true};
    return r;
}

/* Count one on a stripe the thread owns: the only writer, so a relaxed load
 * and store cannot lose an update, and readers still see whole values. */
static inline void breaker__owned_count(breaker__atomic64 *counter) {
    atomic_store_explicit(counter, atomic_load_explicit(counter, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

/* Count one on a counter of the thread's stripe (or of its bucket run): the
 * plain store when the thread owns it, else the locked read-modify-write. */
static inline void breaker__stripe_count(struct breaker__stripe_ref r, breaker__atomic64 *counter) {
    if (r.owned)
        breaker__owned_count(counter);
    else
        atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
}

/* Add `delta` to the count window's share held by the thread's stripe: a
 * plain store when the thread owns it (window.c, "Count window: chunks"). */
static inline void breaker__ring_share_add(struct breaker__stripe_ref r, uint64_t delta) {
    breaker__atomic64 *part = &r.stripe->ring_part;
    if (r.owned)
        breaker__write(part, breaker__read(part) + delta);
    else
        atomic_fetch_add_explicit(part, delta, memory_order_relaxed);
}

/* Count the outcome of a recorded call: the one place the statistics'
 * outcome counters are written outside the short paths. */
static inline void breaker__count_outcome(struct breaker__stripe_ref r,
                                          enum breaker_outcome outcome, bool slow) {
    struct breaker__stripe *st = r.stripe;
    breaker__stripe_count(r, outcome == BREAKER_FAILURE   ? &st->failures
                             : outcome == BREAKER_IGNORED ? &st->ignored
                                                          : &st->successes);
    if (slow) breaker__stripe_count(r, &st->slow);
}

#endif /* BREAKER_CORE_STRIPES_H */
