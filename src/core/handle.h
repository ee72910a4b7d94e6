/* SPDX-License-Identifier: MIT */
/*
 * handle.h - the per-process handle (struct breaker) around a breaker's
 * shared block: what cannot be shared (the clock and event callbacks, the
 * block's address, the copies the call path reads next to it) and the
 * forward chain a store file's move leaves behind.
 *
 * Changes when the handle gains or loses a field.
 */
#ifndef BREAKER_CORE_HANDLE_H
#define BREAKER_CORE_HANDLE_H

#include "common/atomics.h"
#ifndef BREAKER_EXPERIMENTAL
#define BREAKER_EXPERIMENTAL /* breaker_open_wait_fn, of the handle */
#endif
#include "breaker.h"
#include "core/layout.h"
#include "core/owner.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct breaker__check_run;

/* How the threads of a bound handle get counter stripes (block.h binds it).
 * - THREAD_OWNED: the process-wide pool (stripes.c): a thread that owns one
 *   of its owned stripes writes that stripe with plain loads and stores. Only
 *   for a block no other process writes (the process heap): the pool is per
 *   process, so two processes would each think they own stripe 0.
 * - ATOMIC: for a block that other processes bind too. A thread owns a
 *   stripe only through a claim in its host domain's table (stripes.c), which
 *   no thread of any process holds twice; every other thread writes the
 *   shared stripes with atomic read-modify-writes. */
enum breaker__stripe_mode { BREAKER__STRIPES_THREAD_OWNED, BREAKER__STRIPES_ATOMIC };

/* An operator's control that made a transition (breaker_control_apply()),
 * as a home records it (home_control below): the text checked, valid during
 * the call only. */
struct breaker__control_made {
    enum breaker_control_action action;
    uint64_t for_ns;     /* as given: OPEN_FOR's wait, FORCE_CLOSED's expiry or 0 */
    const char *who;     /* NULL or "": none */
    const char *why;     /* NULL or "": none */
    uint64_t generation; /* the generation its transition started */
};

/* The per-process handle. */
struct breaker {
    struct breaker__shared *shared;
    size_t shared_size;
    breaker_config cfg;  /* effective configuration, callbacks included */
    breaker_owner owner; /* who created it on the user's behalf, if anyone */
    /* The backend's say on the half-open slow path (breaker/backend.h);
     * admit NULL: none. Read only when a probe is admitted or settles, so
     * the short paths never look at it. */
    breaker_probe_gate gate;
    /* precise: slow-call timing, deadlines. coarse: bucket selection and the
     * open-state check, where a clock that lags by its resolution is safe
     * (never early) and far cheaper. Both are cfg.clock when one is given. */
    uint64_t (*now_precise)(const struct breaker *b);
    uint64_t (*now_coarse)(const struct breaker *b);
    bool coarse_for_window;
    bool coarse_for_open;
    /* With coarse_for_open: how far the coarse clock may lag the precise one
     * (clock.c). The open check refuses on the coarse clock only while the
     * wait is more than this away from its end, and asks the precise clock
     * in the last stretch. */
    uint64_t coarse_lag_ns;
    /* enum breaker__stripe_mode (block.h): THREAD_OWNED lets a thread that
     * owns a stripe of the process pool write it with plain stores. */
    enum breaker__stripe_mode stripe_mode;
    /* The jitter seed was drawn at create (cfg.seed 0), not fixed by the
     * user: jitter then also mixes in the process id (breaker.c). */
    bool seed_drawn;
    /* The block is a store's (mapped from a file), not the heap's:
     * breaker_destroy() frees the handle only. */
    bool block_borrowed;
    /* Checked permits (cfg.checked_permits): one run per stripe index of the
     * handle's record of closed-state admissions (breaker.c, "Checked
     * permits"), allocated with the handle; NULL when off. */
    struct breaker__check_run *check;
    uint64_t check_tag; /* this handle's mark in a checked permit (bits 8..63) */
    /* Copies of what the call path reads, next to the block pointer. */
    /* Which short path a closed-state success may take in breaker_complete:
     * 0 none (slow-call timing), else the trip policy + 1. */
    unsigned fast_success;
    /* (ctl & admit_mask) == 0: breaker_acquire admits on its short path.
     * The state bits (CLOSED is 0), or all ones when calls are timed or the
     * handle is forwarded (ctl is never 0, its generation starts at 1).
     * Atomic because a store file's watcher sets it to all ones on a live
     * handle (breaker__forward); read relaxed, the same load as a plain one. */
    breaker__atomic64 admit_mask;
    uint64_t admit_tag;              /* permit_tag | PERMIT_ADMITTED */
    uint64_t breaker_id;             /* the block's instance_id, checked on completion */
    breaker__atomic64 *consecutive;  /* &shared->consecutive */
    uint64_t permit_tag;             /* this breaker's tag in a permit head (bits 8..27) */
    struct breaker__stripe *stripes; /* the block's stripe array */
    /* Which thread-local word holds the calling thread's owned stripe for
     * this handle (breaker__owned_stripe): heap handles read the process
     * pool's, handles of a shared block in one of the process's host
     * domains that domain's claim's, and any other shared block's handles a
     * word that stays 0 (stripes.c). */
    uintptr_t owned_tls;
    /* Per-CPU stripes (heap blocks in a process where they are usable): the
     * offset of the thread's rseq area from the thread pointer; 0 = none. A
     * thread without an owned stripe tries these before the general paths. */
    uintptr_t cpu_rseq;
    struct breaker__stripe *cpu_stripes; /* the per-CPU run: stripes + BREAKER__CPU_FIRST */
    unsigned host_domain;                /* its host domain's index, or BREAKER__HOST_NONE */
    breaker__atomic64 *ctl;              /* &shared->ctl, one load fewer per call */
    char *buckets;                       /* time window: the bucket array */
    uint64_t bucket_stride;              /* bytes between stripes in it */
    /* Count window: the ring, its chunk count, chunk size and last chunk's
     * length (window.c), for the short success path. */
    breaker__atomic8 *ring;
    uint32_t ring_chunks;
    uint32_t ring_chunk_slots;
    uint32_t ring_last_len;
    uint64_t bucket_ns;
    uint64_t epoch_ns;
    /* Set once when the block this handle works on is abandoned (its store
     * file was unlinked or replaced, and the store moved to the file at the
     * path): the handle attached there in its place, which every call and
     * query of this handle then goes to (breaker__live). NULL: none. */
    _Atomic(struct breaker *) forward;
    /* The newest handle of the chain this one starts (set on the handle the
     * user holds, its face, and on each link when it is forwarded): calls
     * and queries go there in one step however many moves came before;
     * `forward` keeps the chain, for completions of older permits and for
     * breaker_destroy(). NULL: not forwarded. */
    _Atomic(struct breaker *) newest;
    /* The handle a user holds for this one: events of a forward pass it to
     * the callbacks, so a user sees the handle it knows. NULL: itself. */
    struct breaker *face;
    /* breaker_set_open_wait(): the open wait from the evidence (on the face:
     * a forward's transitions ask the handle the user set it on); NULL:
     * the policy's. */
    breaker_open_wait_fn *open_wait_fn;
    void *open_wait_ctx;
    /* Who must hear of breaker_destroy() before the handle goes (a store
     * keeps a list of the handles it may have to forward). NULL: nobody. */
    void (*home_detach)(void *ctx, struct breaker *b);
    void *home_ctx;
    /* The home's exclusion of writers of the block's limits across its
     * processes (a store file's lock: breaker_reconfigure()), taken (`lock`
     * true: BREAKER_OK, or a status with `msg` saying why) and released
     * with home_ctx; NULL: the block is this process's alone. */
    int (*home_lock)(void *ctx, bool lock, char *msg, size_t msg_len);
    /* The home's record of an operator's control that made a transition
     * (breaker_control_apply(): a store file keeps the last one, under its
     * lock), called with home_ctx on the controlling thread, no lock held;
     * NULL: nothing kept. */
    void (*home_control)(void *ctx, struct breaker *b, const struct breaker__control_made *made);
};

/* The handle that does the work for `b`: b itself, or the newest handle of
 * its forward chain (one link per move of its store file; one step from the
 * face, a few from an older link caught mid-move). Acquire: pairs with
 * breaker__forward()'s release, so the forward's fields are seen whole. */
static inline struct breaker *breaker__live(struct breaker *b) {
    struct breaker *f;
    while ((f = atomic_load_explicit(&b->newest, memory_order_acquire)) != NULL)
        b = f;
    return b;
}

#endif /* BREAKER_CORE_HANDLE_H */
