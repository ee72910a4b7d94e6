/* SPDX-License-Identifier: MIT */
/*
 * layout.h - the layout of a breaker's shared block: its header, its
 * variable-size arrays (stripes, window buckets or ring, probe slots,
 * latency runs) and the static asserts that pin every size and offset.
 *
 * Everything that threads share lives in one block (struct breaker__shared
 * followed by its variable-size arrays) that contains no pointers, starts
 * with a magic number, a layout version and its own size, and is addressed by
 * offsets: a store can place it in a shared-memory file and let several
 * processes attach. The per-process handle around it is in handle.h, the
 * encodings of its words in words.h.
 *
 * Changes here when a block's layout changes (and BREAKER__LAYOUT_VERSION
 * with it).
 */
#ifndef BREAKER_CORE_LAYOUT_H
#define BREAKER_CORE_LAYOUT_H

#include "common/atomics.h"
#include "breaker.h"

#include <stddef.h>
#include <stdint.h>

#define BREAKER__MAGIC UINT64_C(0x42524b52424c4f4b) /* "BRKRBLOK" */
/* The block's layout version. Bump it whenever anything a block holds changes
 * place, size or meaning: a field of struct breaker__shared, of a stripe, of
 * a bucket, of the limits, the encoding of ctl, of tagged times or of slot
 * words. The _Static_asserts after the structs pin the sizes and offsets
 * that a change would move; when one fails, update it and bump this. */
#define BREAKER__LAYOUT_VERSION 11u
#define BREAKER__CACHELINE      64

/* Threads spread their counter updates over stripes so that two threads do
 * not write the same cache line. The first BREAKER__OWNED_STRIPES stripes are
 * each owned by one thread at a time (see stripes.c), which updates them with
 * a plain load and store: no locked instruction on the hot path. Threads
 * beyond that share the remaining stripes and use atomic read-modify-writes. */
#define BREAKER__OWNED_STRIPES 8u
#define BREAKER__STRIPES       16u

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

/* The configuration as numbers only (no callbacks), with defaults applied.
 * Live reconfiguration (reconfig.c) rewrites the fields not marked fixed,
 * in place, while calls read them: read those of a block's limits with
 * BREAKER__LIM() (one relaxed load, the instruction of a plain one), and
 * decide a transition on breaker__limits_snapshot() (one version). The
 * fixed fields shape the block (its window, its probe slots) and are never
 * written after init: plain reads. */
struct breaker__limits {
    uint32_t trip; /* fixed */
    uint32_t failure_threshold;
    uint32_t window_size;    /* fixed */
    uint32_t window_buckets; /* fixed */
    uint64_t window_ns;      /* fixed */
    uint64_t bucket_ns;      /* fixed */
    uint32_t min_calls;
    uint32_t half_open_max_probes; /* fixed */
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
    uint64_t slots_off;     /* [half_open_max_probes] probe slot words, then as
                               many probe source words (words.h) */
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
    /* The callers of the failed probes of one half-open (breaker.c,
     * "Recovery no one caller can own"): the low 16 bits of its generation
     * << 48 | a 48-bit map; and the map of the half-open before it, which
     * the next one reads to tell whose probes failed last time. */
    breaker__atomic64 probe_src;
    breaker__atomic64 probe_src_prev;
    /* The generation of the half-open whose named callers' probe timeout
     * reopened at the backoff level it had (breaker.c, "A hanging caller's
     * first timeout"): one per trip streak, the streak being the
     * generations after window_gen. 0 for none. */
    breaker__atomic64 timeout_spared_gen;
    /* The instant the latest open wait ends, tagged with that OPEN's
     * generation and published with it: named callers' turns count from it
     * (breaker.c, "Turns after the wait"); their spread is turns_spread. */
    breaker__atomic64 turns_from;

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
    /* The generation the latest reset made (BREAKER_REASON_RESET; 0: none
     * yet), stored right after its transition's CAS, before anything else
     * of it: breaker_reset_generation_peek(). In the rare line's spare
     * words: no offset moves. */
    breaker__atomic64 reset_gen;
    /* The spread of the named callers' turns after the latest open wait (a
     * quarter of that wait before jitter) in microseconds, tagged and
     * published as turns_from. In the rare line's last spare word. */
    breaker__atomic64 turns_spread;

    /* Probe durations by result (enum breaker_probe_result), in the buckets
     * of breaker_latency, and their sums in ns: every breaker keeps them
     * (a probe always has its admission time). Probes are rare: shared
     * counters, atomic adds. */
    _Alignas(BREAKER__CACHELINE)
        breaker__atomic64 probe_hist[BREAKER_PROBE_RESULT_COUNT][BREAKER_LATENCY_BUCKETS];
    breaker__atomic64 probe_sum_ns[BREAKER_PROBE_RESULT_COUNT];

    /* Operator controls (breaker.c, "Timed opens" and "Shadow mode"): rare
     * counters, relaxed atomic adds. Opens for a given time, by reason
     * (BREAKER__TIMED_*); calls shadow mode admitted where the breaker
     * would have refused, by what would have refused them (BREAKER__REFUSE_*);
     * and how those calls went (success, failure). */
    _Alignas(BREAKER__CACHELINE) breaker__atomic64 timed_opens[2];
    breaker__atomic64 would_reject[4];
    breaker__atomic64 shadow_outcomes[2];

    /* Live reconfiguration (reconfig.c): the limits' version word (version
     * << 2 | BREAKER__LIM_STAGING | BREAKER__LIM_COPYING) and the staging
     * copy a change is written to before it is copied into `lim`. */
    _Alignas(BREAKER__CACHELINE) breaker__atomic64 lim_ver;
    struct breaker__limits lim_next;
};
#define BREAKER__LIM_STAGING 1u /* a writer is filling lim_next; lim is untouched */
#define BREAKER__LIM_COPYING 2u /* lim_next is whole; a writer copies it into lim */
enum { BREAKER__TIMED_SERVER = 0, BREAKER__TIMED_OPERATOR = 1 };
enum {
    BREAKER__REFUSE_OPEN = 0,
    BREAKER__REFUSE_HALF_OPEN = 1,
    BREAKER__REFUSE_FORCED = 2,
    BREAKER__REFUSE_RAMP = 3
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
_Static_assert(offsetof(struct breaker__shared, timed_opens) == 17 * BREAKER__CACHELINE,
               "operator counters last");
_Static_assert(offsetof(struct breaker__shared, lim_ver) == 18 * BREAKER__CACHELINE,
               "reconfiguration last");
_Static_assert(sizeof(struct breaker__shared) == 21 * BREAKER__CACHELINE, "header struct");

/* A limit of a block that live reconfiguration may rewrite (any field of
 * struct breaker__limits not marked fixed): one relaxed load. Relaxed: a
 * single field needs no order; a decision over several takes a snapshot. */
static inline uint32_t breaker__lim_u32(const uint32_t *p) {
    return atomic_load_explicit((const _Atomic uint32_t *)(const void *)p, memory_order_relaxed);
}
static inline uint64_t breaker__lim_u64(const uint64_t *p) {
    return atomic_load_explicit((const _Atomic uint64_t *)(const void *)p, memory_order_relaxed);
}
static inline double breaker__lim_f64(const double *p) {
    return atomic_load_explicit((const _Atomic double *)(const void *)p, memory_order_relaxed);
}
#define BREAKER__LIM(lim, field)          \
    _Generic((lim)->field, uint32_t       \
             : breaker__lim_u32, uint64_t \
             : breaker__lim_u64, double   \
             : breaker__lim_f64)(&(lim)->field)

/* The limits of `s` as of one version of its configuration (reconfig.c):
 * for a decision that reads several of them (a trip, a wait). Lock-free. */
void breaker__limits_snapshot(const struct breaker__shared *s, struct breaker__limits *out);

/* A stripe's call-duration histogram (timed breakers only): counts per bucket
 * and outcome, and the sums, written like the stripe's counters. */
struct breaker__latency_run {
    _Alignas(BREAKER__CACHELINE) breaker__atomic64 success[BREAKER_LATENCY_BUCKETS];
    breaker__atomic64 failure[BREAKER_LATENCY_BUCKETS];
    breaker__atomic64 success_sum_ns;
    breaker__atomic64 failure_sum_ns;
};

/* The histograms' bucket upper bounds in ns, for call durations and probe
 * durations alike: 1, 2.5, 5, 10, 25, 50, 100, 250, 500 ms, 1, 2.5, 5,
 * 10 s, +Inf (breaker_latency.upper_ns). */
static const uint64_t breaker__latency_upper_ns[BREAKER_LATENCY_BUCKETS] = {
    1000000,   2500000,   5000000,    10000000,   25000000,   50000000,    100000000,
    250000000, 500000000, 1000000000, 2500000000, 5000000000, 10000000000, UINT64_MAX};

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
/* The caller of each slot's probe (words.h, "Probe source words"), after
 * the slots. */
static inline breaker__atomic64 *breaker__slot_sources(const struct breaker__shared *s) {
    return breaker__slots(s) + s->lim.half_open_max_probes;
}
static inline struct breaker__latency_run *breaker__latency_runs(const struct breaker__shared *s) {
    return (struct breaker__latency_run *)(void *)((char *)(uintptr_t)s + s->latency_off);
}
static inline breaker__atomic8 *breaker__ring(const struct breaker__shared *s) {
    return (breaker__atomic8 *)(void *)((char *)(uintptr_t)s + s->ring_off);
}

/* ---- The count window's ring (window.c, "Count window: chunks") ----------
 * Its geometry, here for breaker.c's short success path. */
#define BREAKER__RING_CHUNK_BYTES (2 * BREAKER__CACHELINE) /* a line pair per chunk */

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

#endif /* BREAKER_CORE_LAYOUT_H */
