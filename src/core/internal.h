/* SPDX-License-Identifier: MIT */
/*
 * internal.h - the layout of a breaker's shared block and the handle around it.
 *
 * Everything that threads share lives in one block (struct breaker__shared
 * followed by its variable-size arrays) that contains no pointers, starts
 * with a magic number, a layout version and its own size, and is addressed by
 * offsets: a later store can place it in a shared-memory file and let several
 * processes attach. The per-process handle (struct breaker) holds what cannot
 * be shared: the clock and event callbacks and the address of the block.
 */
#ifndef BREAKER_INTERNAL_H
#define BREAKER_INTERNAL_H

#include "common/atomics.h"
#include "common/message.h"
#include "common/splitmix.h"
#include "breaker.h"
#include "core/config_fields.h"
#include "core/owner.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BREAKER__MAGIC UINT64_C(0x42524b52424c4f4b) /* "BRKRBLOK" */
/* The block's layout version. Bump it whenever anything a block holds changes
 * place, size or meaning: a field of struct breaker__shared, of a stripe, of
 * a bucket, of the limits, the encoding of ctl, of tagged times or of slot
 * words. The _Static_asserts after the structs pin the sizes and offsets
 * that a change would move; when one fails, update it and bump this. */
#define BREAKER__LAYOUT_VERSION 3u
#define BREAKER__CACHELINE      64

/* Threads spread their counter updates over stripes so that two threads do
 * not write the same cache line. The first BREAKER__OWNED_STRIPES stripes are
 * each owned by one thread at a time (see stripes.c), which updates them with
 * a plain load and store: no locked instruction on the hot path. Threads
 * beyond that share the remaining stripes and use atomic read-modify-writes. */
#define BREAKER__OWNED_STRIPES 8u
#define BREAKER__STRIPES       16u

/* Per-CPU stripes (stripes.c, "Per-CPU stripes"): in a process where the
 * kernel's restartable sequences are usable, a heap block's stripes have
 * three roles instead of two. The first BREAKER__CPU_FIRST are owned by
 * threads as above (the first threads to call get them); the next
 * BREAKER__CPU_STRIPES belong to the process's concurrency ids (the rseq
 * mm_cid: a small number no two running threads share), and a thread
 * without an owned stripe writes the one of the id it runs on in
 * restartable sequences, each ending in one plain store (a record that
 * needs several holds the stripe's cpu_lock, taken by such a sequence, for
 * its writes); the rest are shared and written
 * atomically (threads on ids beyond them, and anyone who finds the id's
 * stripe busy). So a pool of any number of threads on up to 8 cores writes
 * with plain stores only. Store blocks keep the two roles: their processes
 * have different ids. */
#define BREAKER__CPU_FIRST   4u
#define BREAKER__CPU_STRIPES 8u

/* ---- The state word -------------------------------------------------------
 * One 64-bit word holds everything a transition must change atomically:
 *   bits 28..63  generation (36 bits; +1 per transition)
 *   bits 24..27  state (enum breaker_state)
 *   bits 12..23  k, consecutive failed recoveries (saturates at 4095)
 *   bits  0..11  successful probes in the current half-open
 * A transition is one CAS on this word, so exactly one thread wins it. */
#define BREAKER__GEN_SHIFT   28
#define BREAKER__STATE_SHIFT 24
#define BREAKER__K_SHIFT     12
#define BREAKER__FIELD12     0xfffu
#define BREAKER__GEN_MASK    ((UINT64_C(1) << 36) - 1)

static inline uint64_t breaker__ctl_pack(uint64_t gen, unsigned state, unsigned k, unsigned succ) {
    return ((gen & BREAKER__GEN_MASK) << BREAKER__GEN_SHIFT) |
           ((uint64_t)(state & 0xfu) << BREAKER__STATE_SHIFT) |
           ((uint64_t)(k & BREAKER__FIELD12) << BREAKER__K_SHIFT) |
           (uint64_t)(succ & BREAKER__FIELD12);
}
static inline uint64_t breaker__ctl_gen(uint64_t c) { return c >> BREAKER__GEN_SHIFT; }

/* The generation after `gen`: 36 bits wrap after 2^36 transitions, and they
 * skip 0, so that ctl is never 0 (a plain CLOSED of generation 0 would be,
 * and the handle's admit_mask of all ones relies on ctl never being 0). */
static inline uint64_t breaker__next_gen(uint64_t gen) {
    uint64_t next = (gen + 1) & BREAKER__GEN_MASK;
    return next != 0 ? next : 1;
}
static inline unsigned breaker__ctl_state(uint64_t c) {
    return (unsigned)(c >> BREAKER__STATE_SHIFT) & 0xfu;
}
static inline unsigned breaker__ctl_k(uint64_t c) {
    return (unsigned)(c >> BREAKER__K_SHIFT) & BREAKER__FIELD12;
}
static inline unsigned breaker__ctl_succ(uint64_t c) { return (unsigned)c & BREAKER__FIELD12; }

/* The low field in CLOSED: 1 while traffic ramps back up after a recovery
 * (it counts probe successes only in HALF_OPEN). */
#define BREAKER__RAMP_FLAG 1u
static inline bool breaker__ctl_ramping(uint64_t c) {
    return breaker__ctl_state(c) == 0 /* BREAKER_CLOSED */ &&
           breaker__ctl_succ(c) == BREAKER__RAMP_FLAG;
}

/* ---- Permit heads ----------------------------------------------------------
 * Word 0 of a breaker_permit (atomic), the head: generation (bits 28..63,
 * where ctl keeps it) | the breaker's tag (bits 8..27) | flags (bits 0..7).
 * One store admits a closed-state call; one load tells a completion whose
 * permit it is, from which generation, and whether it is a probe. SETTLED is
 * set by an atomic OR, so two racing completions of one permit settle it
 * exactly once. */
enum {
    BREAKER__PERMIT_ADMITTED = 1,
    BREAKER__PERMIT_PROBE = 2,
    BREAKER__PERMIT_SETTLED = 4,
};
#define BREAKER__PERMIT_GEN_MASK (~((UINT64_C(1) << BREAKER__GEN_SHIFT) - 1))
#define BREAKER__PERMIT_TAG_MASK (((UINT64_C(1) << BREAKER__GEN_SHIFT) - 1) & ~UINT64_C(0xff))

/* ---- Tagged time words ----------------------------------------------------
 * The open deadline and each probe slot are single words:
 *   bits 48..63  the low 16 bits of the generation they belong to
 *   bits  0..47  a time in microseconds since the block's epoch, rounded up
 *               (2^48 us is 8.9 years)
 * so a reader can tell in one load whether the time is for the generation it
 * is looking at. Waits and probe deadlines thus have 1 us resolution and are
 * never early. */
#define BREAKER__TAG_SHIFT 48
#define BREAKER__TIME_MASK ((UINT64_C(1) << 48) - 1)

static inline uint64_t breaker__tag_of_gen(uint64_t gen) { return gen & 0xffffu; }
static inline uint64_t breaker__tw_tag(uint64_t w) { return w >> BREAKER__TAG_SHIFT; }
static inline uint64_t breaker__tw_us(uint64_t w) { return w & BREAKER__TIME_MASK; }

/* ---- Probe slot words ------------------------------------------------------
 *   bits 50..63  the low 14 bits of the generation the word is for
 *   bit  49      SETTLING: the probe's completion is being applied
 *   bit  48      FREE
 *   bits  0..47  busy or settling: the probe's deadline (a tagged time, in us)
 *                free: the deadline of the last probe that held the slot
 * A claim's deadline is strictly after the last one its slot held in the same
 * generation (stepped by 1 us when two admissions share a microsecond, at most
 * BREAKER__SLOT_STEP_MAX_US in all; see below), so every
 * claim word of a generation is unique: completing a copy of an earlier
 * probe's permit expects that probe's word and can never free a newer probe's
 * claim. (Deadlines saturate 8.9 years after creation, and with them this
 * uniqueness; see breaker__deadline_us.) A completion first turns its claim
 * into SETTLING (still in flight: not claimable, its deadline still counts),
 * applies the outcome, then frees the slot; so a probe whose success would
 * close the breaker sees every probe whose outcome is not in yet. 14 bits of
 * generation are enough: the words are compared for equality only, and
 * entering OPEN re-marks every slot (breaker.c, transition()), so a word is
 * one generation behind the half-open that reads it, unless that marking
 * was cut short (it stops when OPEN ends, which a very short open_ns allows)
 * and the word then also sat untouched for 16384 generations: a tag collision
 * that can make one stale word read as an expired probe (a spurious
 * PROBE_TIMEOUT), never an extra probe. */
#define BREAKER__SLOT_TAG_SHIFT 50
#define BREAKER__SLOT_SETTLING  (UINT64_C(1) << 49)
#define BREAKER__SLOT_FREE      (UINT64_C(1) << 48)

static inline uint64_t breaker__slot_tag(uint64_t gen) { return gen & 0x3fffu; }
static inline bool breaker__slot_is_for(uint64_t w, uint64_t gen) {
    return (w >> BREAKER__SLOT_TAG_SHIFT) == breaker__slot_tag(gen);
}
static inline bool breaker__slot_is_free(uint64_t w) { return (w & BREAKER__SLOT_FREE) != 0; }
static inline uint64_t breaker__slot_us(uint64_t w) { return w & BREAKER__TIME_MASK; }

static inline uint64_t breaker__slot_free_word(uint64_t gen, uint64_t last_us) {
    return (breaker__slot_tag(gen) << BREAKER__SLOT_TAG_SHIFT) | BREAKER__SLOT_FREE | last_us;
}

/* How far a claim's deadline may be stepped past its probe's own: a slot
 * admits at most one probe per microsecond on average, in bursts of up to
 * this many; a claim that would step further is refused (REJECTED_HALF_OPEN)
 * rather than let deadlines drift away from the clock (a tight loop of
 * ignored probes could otherwise push a hung probe's deadline out without
 * bound). So a probe is due at most 1 ms after probe_timeout_ns. */
#define BREAKER__SLOT_STEP_MAX_US 1000u

/* The claim of a probe of generation `gen` due at `us`, replacing `cur`. */
static inline uint64_t breaker__slot_claim_word(uint64_t gen, uint64_t us, uint64_t cur) {
    if (breaker__slot_is_for(cur, gen) && us <= breaker__slot_us(cur))
        us = breaker__slot_us(cur) < BREAKER__TIME_MASK ? breaker__slot_us(cur) + 1
                                                        : BREAKER__TIME_MASK;
    return (breaker__slot_tag(gen) << BREAKER__SLOT_TAG_SHIFT) | us;
}

/* Per-stripe counters. The first line holds what the hot paths bump. */
struct breaker__stripe {
    _Alignas(BREAKER__CACHELINE) breaker__atomic64 admitted;
    breaker__atomic64 successes;
    breaker__atomic64 failures;
    breaker__atomic64 ignored;
    breaker__atomic64 cancelled;
    breaker__atomic64 slow;
    breaker__atomic64 stale;
    breaker__atomic64 rejected_open;
    /* second line: refusals in other states */
    breaker__atomic64 rejected_forced;
    breaker__atomic64 rejected_half_open;
    /* Time window: the last bucket this stripe wrote, so most calls find
     * theirs with one compare instead of two divisions: its start (ns since
     * the epoch, + 1; 0 = none), its byte offset in the bucket array, and its
     * epoch + 1 (the low part of its stamp). */
    union {
        struct { /* time window */
            breaker__atomic64 hint_start;
            breaker__atomic64 hint_offset;
            breaker__atomic64 hint_epoch1;
        };
        struct {                          /* count window (window.c, "Count window: chunks") */
            breaker__atomic64 ring_chunk; /* (chunk + 1) << 32 | slots used; 0 = none */
            breaker__atomic64 ring_part;  /* this stripe's share of the ring's content */
            breaker__atomic64 count_spare_;
        };
    };
    breaker__atomic64 rejected_ramp;
    /* Ramp after recovery: this stripe's admission credit, 32.32 fixed
     * point. Each call adds the share admitted now; a call is admitted when
     * the sum crosses an integer, so exactly that share of the calls through
     * this stripe gets in (breaker.c, ramp_admits). */
    breaker__atomic64 ramp_credit;
    /* Per-CPU stripes of a heap block: 1 while a thread holds the stripe
     * (breaker__cpu_stripe_take), 0 otherwise; never written in any other
     * stripe or in a store's block, where it stays 0 as before. */
    breaker__atomic64 cpu_lock;
};

/* Time-window bucket counts, one set per stripe per bucket, written only by
 * the stripe's thread(s). `stamp` says which bucket and which closed
 * generation the counts belong to: (generation & 0xffffff) << 40 | (epoch + 1),
 * so a new generation (the breaker closed again) starts with an empty window
 * without anyone writing to other threads' lines. */
struct breaker__bucket {
    breaker__atomic64 calls;
    breaker__atomic64 failures;
    breaker__atomic64 slow;
    breaker__atomic64 stamp;
};
#define BREAKER__STAMP_EPOCH_BITS 40

/* The configuration as numbers only (no callbacks), with defaults applied. */
struct breaker__limits {
    uint32_t trip;
    uint32_t failure_threshold;
    uint32_t window_size;
    uint32_t window_buckets;
    uint64_t window_ns;
    uint64_t bucket_ns;
    uint32_t min_calls;
    uint32_t half_open_max_probes;
    uint32_t half_open_successes;
    uint32_t cancelled_as;
    double failure_rate;
    double slow_call_rate;
    double open_backoff;
    double open_jitter;
    uint64_t slow_call_ns;
    uint64_t open_ns;
    uint64_t open_max_ns;
    uint64_t probe_timeout_ns;
    uint64_t seed;
    uint64_t ramp_ns;
    double ramp_start;
    uint32_t min_failing_sources; /* as configured: 0 = the default, 1 = off */
    uint32_t source_bits_needed;  /* the map bits a trip needs (0 = off; the
                                     default's 3 apply only to a map that
                                     holds a source) */
};

struct breaker__shared {
    /* Header: identifies and sizes the block (checked on attach). */
    uint64_t magic;
    uint32_t layout_version;
    uint32_t header_size;
    uint64_t total_size;
    uint64_t instance_id; /* random, unique in practice; permits carry it */
    uint64_t epoch_ns;    /* clock at creation; tagged times count from it */
    struct breaker__limits lim;
    /* Offsets of the arrays that follow the struct, from the block start. */
    uint64_t abi;           /* BREAKER__ABI: sizes this library was built with */
    uint64_t stripes_off;   /* [BREAKER__STRIPES] stripes */
    uint64_t buckets_off;   /* time window: [stripe][bucket], each stripe's run
                               line-aligned; 0 otherwise */
    uint64_t bucket_stride; /* bytes between stripes in the bucket array */
    uint64_t ring_off;      /* count window: [window_size] bytes of outcomes,
                               where the time window keeps its buckets (the
                               two never coexist); 0 otherwise */
    uint64_t slots_off;     /* [half_open_max_probes] probe slot words */
    uint64_t latency_off;   /* timed calls: [stripe] struct breaker__latency_run,
                               last; 0 otherwise */

    /* Read on every call, written only by transitions. */
    _Alignas(BREAKER__CACHELINE) breaker__atomic64 ctl;
    /* Tagged time for the current phase. In OPEN: when a probe becomes
     * eligible. In HALF_OPEN: the deadline of the first probe, the one admitted
     * by the transition itself (it owns slot 0 implicitly, see breaker.c). */
    breaker__atomic64 phase_time;

    /* Consecutive policy: written on failures, read (and cleared when
     * non-zero) on successes. Its own line so reads stay shared. */
    _Alignas(BREAKER__CACHELINE) breaker__atomic64 consecutive;

    /* Count window: written on every recorded call (no scaling target). */
    _Alignas(BREAKER__CACHELINE) breaker__atomic64 ring_next; /* chunks reserved so far */
    /* Failing sources (window.c): the period the current map covers (0 =
     * none yet), its map, and the previous period's. */
    breaker__atomic64 src_period;
    breaker__atomic64 src_cur;
    breaker__atomic64 src_prev;
    /* The sources of the failed probes of one half-open (breaker.c,
     * "Recovery no one source can hold back"): the low 16 bits of its
     * generation << 48 | a 48-bit map. */
    breaker__atomic64 probe_src;

    /* Rare counters and transition bookkeeping. */
    _Alignas(BREAKER__CACHELINE) breaker__atomic64 duplicates;
    breaker__atomic64 probes_admitted;
    breaker__atomic64 probes_succeeded;
    breaker__atomic64 probes_failed;
    breaker__atomic64 probes_timed_out;
    breaker__atomic64 transitions;
    breaker__atomic64 since_ns;  /* clock when the current state began */
    breaker__atomic64 since_gen; /* generation since_ns belongs to */
    /* The generation of the latest CLOSED/FORCED_CLOSED period: statistics
     * show its window while the breaker is open or half-open. */
    breaker__atomic64 window_gen;
    breaker__atomic64 time_in_state[BREAKER_STATE_COUNT];

    /* Probe durations by result (enum breaker_probe_result), in the buckets
     * of breaker_latency, and their sums in ns: every breaker keeps them
     * (a probe always has its admission time). Probes are rare: shared
     * counters, atomic adds. */
    _Alignas(BREAKER__CACHELINE)
        breaker__atomic64 probe_hist[BREAKER_PROBE_RESULT_COUNT][BREAKER_LATENCY_BUCKETS];
    breaker__atomic64 probe_sum_ns[BREAKER_PROBE_RESULT_COUNT];
};

/* What the layout depends on besides the version: a block written by a build
 * with other struct sizes (another compiler, another version of the library
 * with the same layout version by mistake) fails its check. */
#define BREAKER__ABI                                    \
    (((uint64_t)sizeof(struct breaker__shared) << 32) | \
     ((uint64_t)sizeof(struct breaker__stripe) << 16) | \
     ((uint64_t)sizeof(struct breaker__limits) << 6) | (uint64_t)sizeof(struct breaker__bucket))

/* The layout, pinned (see BREAKER__LAYOUT_VERSION). */
_Static_assert(sizeof(struct breaker__stripe) == 2 * BREAKER__CACHELINE, "stripe: two lines");
_Static_assert(sizeof(struct breaker__bucket) == 32, "bucket: four counters");
_Static_assert(sizeof(struct breaker__limits) == 144, "limits");
_Static_assert(offsetof(struct breaker__shared, lim) == 40, "limits follow the header");
_Static_assert(offsetof(struct breaker__shared, ctl) == 4 * BREAKER__CACHELINE, "ctl's line");
_Static_assert(offsetof(struct breaker__shared, consecutive) == 5 * BREAKER__CACHELINE,
               "consecutive run's line");
_Static_assert(offsetof(struct breaker__shared, probe_hist) == 9 * BREAKER__CACHELINE,
               "probe histogram after the rare counters");
_Static_assert(sizeof(struct breaker__shared) == 17 * BREAKER__CACHELINE, "header struct");

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
    /* Who must hear of breaker_destroy() before the handle goes (a store
     * keeps a list of the handles it may have to forward). NULL: nobody. */
    void (*home_detach)(void *ctx, struct breaker *b);
    void *home_ctx;
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

/* Forward every call and query of `from` to `to` (a handle on the same name
 * in the file now at the store's path), from now on: `to` is owned by
 * `from` (destroyed with it). Calls already inside `from` finish on its old
 * block; permits it gave out complete there. Once per handle; off the call
 * path (block.c). */
void breaker__forward(struct breaker *from, struct breaker *to);

/* breaker_trip_outside_for() that enters OPEN at backoff level `k` (the
 * open wait's exponent; the next failed probe waits open_ns * backoff^(k+1)),
 * for a store that carries a breaker's state to a new block. */
int breaker__trip_outside_k(struct breaker *b, uint64_t gen, uint64_t wait_ns, unsigned k,
                            const breaker_evidence *evidence);
/* The backoff level of `b`'s state word now. */
unsigned breaker__backoff_level(struct breaker *b);

/* OPEN: how long `b`'s wait has left (at least 1 ns); any other state: 0.
 * Applies nothing and emits nothing (a store reads it under its lock). */
uint64_t breaker__open_left_ns(struct breaker *b);

/* Tell `detach(ctx, b)` when `b` is destroyed, before it is freed. */
void breaker__set_home(struct breaker *b, void (*detach)(void *ctx, struct breaker *b), void *ctx);

/* A stripe's call-duration histogram (timed breakers only): counts per bucket
 * and outcome, and the sums, written like the stripe's counters. */
struct breaker__latency_run {
    _Alignas(BREAKER__CACHELINE) breaker__atomic64 success[BREAKER_LATENCY_BUCKETS];
    breaker__atomic64 failure[BREAKER_LATENCY_BUCKETS];
    breaker__atomic64 success_sum_ns;
    breaker__atomic64 failure_sum_ns;
};

/* ---- Accessors for the arrays ------------------------------------------- */
static inline struct breaker__stripe *breaker__stripes(const struct breaker__shared *s) {
    return (struct breaker__stripe *)(void *)((char *)(uintptr_t)s + s->stripes_off);
}
static inline struct breaker__bucket *breaker__buckets_of(const struct breaker__shared *s,
                                                          unsigned stripe) {
    return (struct breaker__bucket *)(void *)((char *)(uintptr_t)s + s->buckets_off +
                                              (size_t)stripe * s->bucket_stride);
}
static inline breaker__atomic64 *breaker__slots(const struct breaker__shared *s) {
    return (breaker__atomic64 *)(void *)((char *)(uintptr_t)s + s->slots_off);
}
static inline struct breaker__latency_run *breaker__latency_runs(const struct breaker__shared *s) {
    return (struct breaker__latency_run *)(void *)((char *)(uintptr_t)s + s->latency_off);
}
static inline breaker__atomic8 *breaker__ring(const struct breaker__shared *s) {
    return (breaker__atomic8 *)(void *)((char *)(uintptr_t)s + s->ring_off);
}

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
 * calling thread's owned stripe. On x86-64, the word's offset from the
 * thread pointer (the same in every thread: the words are initial-exec TLS);
 * elsewhere 0 for the process pool's word, 1 + k for host domain k, and
 * BREAKER__HOST_DOMAINS + 1 for a word that stays 0. */
uintptr_t breaker__owned_tls_heap(void);
uintptr_t breaker__owned_tls_host(unsigned domain);
uintptr_t breaker__owned_tls_none(void);

/* The word a handle's owned_tls names, for the calling thread. On x86-64 a
 * single %fs-relative load: as many instructions as reading one fixed
 * initial-exec variable through the GOT, so heap and shared handles share
 * the short paths at no cost. */
#if defined(__x86_64__) && defined(__GNUC__)
#define BREAKER__OWNED_TLS_DIRECT 1
static inline uintptr_t breaker__owned_word_read(uintptr_t owned_tls) {
    uintptr_t v;
    /* volatile: the compiler cannot see that the asm reads memory, and must
     * not merge two reads across a change of the word (a claim, a thread
     * exit, the child side of a fork). Costs no instruction. */
    __asm__ volatile("movq %%fs:(%1), %0" : "=r"(v) : "r"(owned_tls));
    return v;
}
#else
#define BREAKER__OWNED_TLS_DIRECT 0
static inline uintptr_t breaker__owned_word_read(uintptr_t owned_tls) {
    if (owned_tls == 0) return breaker__tls_owned_offset;
    if (owned_tls <= BREAKER__HOST_DOMAINS) return breaker__tls_host_offset[owned_tls - 1];
    return 0;
}
#endif

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

/* ---- Per-CPU stripes --------------------------------------------------------
 * The rseq offset when this process can use per-CPU stripes (x86-64, glibc
 * registered rseq, a kernel that reports mm_cid), else 0; decided once per
 * process, before the owned-stripe pool hands out its first stripe. */
uintptr_t breaker__cpu_stripes_rseq(void);

#if BREAKER__OWNED_TLS_DIRECT
/* The rseq ABI (linux/rseq.h): struct rseq's cpu_id at 4, rseq_cs at 8,
 * mm_cid at 24; the signature glibc registered, which must precede every
 * abort handler. */
#define BREAKER__RSEQ_CPU_ID 4
#define BREAKER__RSEQ_CS     8
#define BREAKER__RSEQ_MM_CID 24
#define BREAKER__RSEQ_SIG    0x53053053

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
#define BREAKER__CS_INPUTS_OF(handle)                                                  \
    [b] "r"(handle), [rseq] "r"((handle)->cpu_rseq), [ncpu] "i"(BREAKER__CPU_STRIPES), \
        [o_cs] "i"(BREAKER__RSEQ_CS), [o_cpu] "i"(BREAKER__RSEQ_CPU_ID),               \
        [o_cid] "i"(BREAKER__RSEQ_MM_CID), [sig] "i"(BREAKER__RSEQ_SIG),               \
        [o_stripes] "i"(offsetof(struct breaker, cpu_stripes)),                        \
        [o_lock] "i"(offsetof(struct breaker__stripe, cpu_lock))

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
                       [o_start] "i"(offsetof(struct breaker__stripe, hint_start)),
                       [o_offset] "i"(offsetof(struct breaker__stripe, hint_offset)),
                       [o_epoch1] "i"(offsetof(struct breaker__stripe, hint_epoch1)),
                       [o_bucket_ns] "i"(offsetof(struct breaker, bucket_ns)),
                       [o_buckets] "i"(offsetof(struct breaker, buckets)),
                       [o_stamp] "i"(offsetof(struct breaker__bucket, stamp)),
                       [o_calls] "i"(offsetof(struct breaker__bucket, calls))
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
        : BREAKER__CS_INPUTS, [o_chunk] "i"(offsetof(struct breaker__stripe, ring_chunk)),
          [o_chunks] "i"(offsetof(struct breaker, ring_chunks)),
          [o_slots] "i"(offsetof(struct breaker, ring_chunk_slots)),
          [o_last] "i"(offsetof(struct breaker, ring_last_len))
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
                       [o_chunk] "i"(offsetof(struct breaker__stripe, ring_chunk))
                     : "memory", "cc");
    return (struct breaker__stripe *)st;
}
_Static_assert(sizeof(struct breaker__stripe) == 1u << 7, "the shift in BREAKER__CS_BEGIN");
#else
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
#define BREAKER__CPU_CHUNK_FULL         ((struct breaker__stripe *)(uintptr_t)1)
#endif

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

/* ---- Checked permits (breaker.c) ------------------------------------------ */
/* Admissions a stripe's run remembers: a copy completed within this many
 * later admissions on the same stripe is told apart from its original. */
#define BREAKER__CHECK_RING 1024u
struct breaker__check_run {
    _Alignas(BREAKER__CACHELINE) breaker__atomic64 seq; /* admissions so far */
    /* Admission n (from 1) at [(n - 1) % RING]: n << 1 | settled. */
    _Alignas(BREAKER__CACHELINE) breaker__atomic64 ring[BREAKER__CHECK_RING];
};
/* Allocate the record of a handle whose cfg.checked_permits is set, and send
 * its closed-state calls to the general paths; nothing otherwise. Call after
 * breaker__block_bind. @return BREAKER_OK or BREAKER_ENOMEM. */
int breaker__check_setup(struct breaker *b);
void breaker__check_free(struct breaker *b);

/* ---- Time ---------------------------------------------------------------- */
void breaker__clock_setup(struct breaker *b, const struct breaker__limits *lim);
/* now + add as a tagged time: microseconds since the epoch, rounded up,
 * saturating (never wrapping) at 2^48 - 1 us, 8.9 years after creation: the
 * documented lifetime over which waits and probe deadlines stay exact. */
static inline uint64_t breaker__deadline_us(const struct breaker__shared *s, uint64_t now,
                                            uint64_t add) {
    uint64_t rel = now > s->epoch_ns ? now - s->epoch_ns : 0;
    if (rel > UINT64_MAX - add) return BREAKER__TIME_MASK;
    rel += add;
    uint64_t us = rel / 1000u + (rel % 1000u != 0);
    return us > BREAKER__TIME_MASK ? BREAKER__TIME_MASK : us;
}

/* A tagged time back on the clock, saturating at UINT64_MAX (a clock that
 * starts near its top must not see a deadline wrap into the past). */
static inline uint64_t breaker__ns_of_us(const struct breaker__shared *s, uint64_t us) {
    uint64_t rel = us * 1000u; /* us < 2^48: no overflow */
    return rel > UINT64_MAX - s->epoch_ns ? UINT64_MAX : s->epoch_ns + rel;
}

/* ---- Configuration (config.c) -------------------------------------------- */
/* Apply defaults to a copy of the user's config. */
void breaker__config_effective(const breaker_config *in, breaker_config *out);
void breaker__limits_from_config(const breaker_config *cfg, struct breaker__limits *lim);

/* ---- Windows (window.c) -------------------------------------------------- */

/* The count window's ring geometry and slot values (window.c, "Count window:
 * chunks"), here for breaker.c's short success path. */
#define BREAKER__RING_CHUNK_BYTES (2 * BREAKER__CACHELINE) /* a line pair per chunk */
#define BREAKER__RING_FIELD_BITS  21
enum { BREAKER__RING_RECORDED = 1, BREAKER__RING_FAILURE = 2, BREAKER__RING_SLOW = 4 };

static inline uint32_t breaker__chunk_slots(uint32_t window_size) {
    uint32_t k = window_size / 4;
    return k < 1 ? 1 : k > BREAKER__CACHELINE ? BREAKER__CACHELINE : k;
}

static inline uint32_t breaker__chunk_count(uint32_t window_size) {
    uint32_t k = breaker__chunk_slots(window_size);
    return (window_size + k - 1) / k;
}

/* Slots in chunk c (the last one may be short). */
static inline uint32_t breaker__chunk_length(uint32_t window_size, uint32_t c) {
    uint32_t k = breaker__chunk_slots(window_size), n = breaker__chunk_count(window_size);
    return c + 1 < n ? k : window_size - (n - 1) * k;
}

/* The change to a packed share (calls | failures << 21 | slow << 42) when a
 * ring slot goes from `old` to `v`. */
static inline uint64_t breaker__ring_delta(uint8_t old, uint8_t v) {
    int64_t dc = (int64_t)((v & BREAKER__RING_RECORDED) != 0) -
                 (int64_t)((old & BREAKER__RING_RECORDED) != 0);
    int64_t df =
        (int64_t)((v & BREAKER__RING_FAILURE) != 0) - (int64_t)((old & BREAKER__RING_FAILURE) != 0);
    int64_t ds =
        (int64_t)((v & BREAKER__RING_SLOW) != 0) - (int64_t)((old & BREAKER__RING_SLOW) != 0);
    return (uint64_t)dc + ((uint64_t)df << BREAKER__RING_FIELD_BITS) +
           ((uint64_t)ds << (2 * BREAKER__RING_FIELD_BITS));
}
/* What a window holds right now. */
struct breaker__window_view {
    uint64_t calls;
    uint64_t failures;
    uint64_t slow;
    uint32_t consecutive;
    uint32_t source_bits; /* bits set in the failing-source map (window.c) */
};

size_t breaker__window_bytes(const struct breaker__limits *lim, size_t *buckets_stride);
/* A window view that is about to trip the breaker, read again: from the
 * evidence itself where the view came from a faster, approximate sum (the
 * count window's shares; O(window_size)), or a second time (the time window
 * of generation `gen` at `now`, whose read sums the stripes one by one);
 * calls, failures and slow calls are replaced, consecutive and source_bits
 * kept. Lock-free. Nothing to do for the consecutive policy. */
void breaker__window_confirm(const struct breaker__shared *s, uint64_t gen, uint64_t now,
                             struct breaker__window_view *view);
/* Empty the window for a transition into CLOSED that expects ctl to be
 * `expected_ctl`. It stops as soon as ctl differs (that transition has lost,
 * and the winner's period may be recording), leaving the window to the
 * winner. @return true if emptied, false if stopped: the transition must
 * then not be made. */
bool breaker__window_reset(struct breaker__shared *s, struct breaker__stripe_ref stripe,
                           uint64_t expected_ctl);
/* Reserve the next chunk of the count window's ring for a stripe whose chunk
 * is full, as ring_take_slot does (the failing-source period moves on when
 * it starts a pass). @return the stripe's chunk word with the chunk's first
 * slot taken: ((chunk + 1) << 32) | 1. */
uint64_t breaker__ring_reserve(struct breaker__shared *s);
/* Record one outcome of closed generation `gen` in the window, on `stripe`.
 * `held`: the per-CPU stripe `stripe` is, which the caller holds for the
 * record, or NULL; it is given back as soon as the record is written, before
 * the window is read (internal.h, "Per-CPU stripes": nothing long is done
 * holding one). @return true when the trip condition must be evaluated, with
 * `view` holding the window then: only failures and slow calls do (a
 * success never opens the breaker). */
bool breaker__window_record(struct breaker__shared *s, struct breaker__stripe_ref stripe,
                            struct breaker__stripe *held, uint64_t gen, uint64_t now, bool failure,
                            bool slow, uint64_t source, struct breaker__window_view *view);
/* The number of distinct sources `bits` set bits of the 64-bit failing-source
 * map estimate (linear counting), and the bits that estimate at least `n`. */
uint32_t breaker__sources_estimate(uint32_t bits);
uint32_t breaker__sources_bits_needed(uint32_t n);
/* Whether a failing-source map with `bits` set meets min_failing_sources
 * (the default 0 asks it only of a map that holds a source). */
bool breaker__sources_enough(const struct breaker__limits *lim, uint32_t bits);
/* The window of closed generation `gen` at time `now`. */
void breaker__window_read(const struct breaker__shared *s, uint64_t gen, uint64_t now,
                          struct breaker__window_view *view);
/* The success path of the consecutive and time-window policies, inline for
 * breaker_complete()'s common case. */
static inline void breaker__consecutive_success(breaker__atomic64 *run) {
    /* Read before writing: in a healthy service the run is already 0 and
     * the line stays shared between cores instead of bouncing. */
    if (breaker__read(run) != 0) breaker__write(run, 0);
}

#define BREAKER__STAMP_EPOCH_MASK ((UINT64_C(1) << BREAKER__STAMP_EPOCH_BITS) - 1)

static inline uint64_t breaker__bucket_stamp(uint64_t gen, uint64_t epoch) {
    return ((gen & 0xffffffu) << BREAKER__STAMP_EPOCH_BITS) |
           ((epoch + 1) & BREAKER__STAMP_EPOCH_MASK);
}

/* The share of calls a ramp admits with `left` ns of it to go: linear from
 * ramp_start to 1 (breaker.c, "Ramp after recovery"). */
static inline double breaker__ramp_share(const struct breaker__limits *lim, uint64_t left) {
    if (left > lim->ramp_ns) left = lim->ramp_ns; /* its end is rounded up to 1 us */
    return lim->ramp_start +
           (1.0 - lim->ramp_start) * ((double)(lim->ramp_ns - left) / (double)lim->ramp_ns);
}

/* Whether `view` meets the trip condition with a minimum volume of
 * `min_calls` (the limit's, or less during a ramp), and why. */
bool breaker__window_should_trip(const struct breaker__limits *lim, uint32_t min_calls,
                                 const struct breaker__window_view *view,
                                 enum breaker_reason *reason);
void breaker__evidence_from_view(const struct breaker__window_view *v, breaker_evidence *e);

#endif /* BREAKER_INTERNAL_H */
