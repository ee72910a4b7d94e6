/* SPDX-License-Identifier: MIT */
/*
 * reference_model.h - a deliberately simple model of the breaker's state
 * machine, for the differential test (tests/core/test_differential.c).
 *
 * The model is written from the documented semantics (include/breaker.h and
 * docs/correctness.md), not from src/: one mutex around plain fields, every
 * window kept as a list of individual records, no atomics, no packing, no
 * cleverness. It is meant to be obviously correct, so that when it and the
 * real breaker disagree on the same sequence of calls, the disagreement points
 * at the fast code (or at a documented rule the model got wrong, which reading
 * the rule settles).
 *
 * Time is passed in explicitly (`now`, on the breaker's clock): the test owns
 * a fake clock and gives the model and the breaker the same reading.
 */
#ifndef BREAKER_REFERENCE_MODEL_H
#define BREAKER_REFERENCE_MODEL_H

#include <breaker.h>

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The model's permit: what the model needs to settle it. Like the real
 * permit it is caller-owned and completed in place (the settled flag lives in
 * the object, which is how duplicates are detected). */
struct ref_permit {
    bool admitted; /* false: a rejected (or never acquired) permit */
    bool settled;
    bool probe;
    uint64_t source; /* the caller named at admission (0: none) */
    uint64_t id;     /* unique per admission, to find the probe's slot */
    uint64_t generation;
    uint64_t admitted_at;
};

/* One recorded call in a window. */
struct ref_record {
    uint64_t bucket; /* TIME_WINDOW: epoch-aligned bucket index */
    bool failure;
    bool slow;
};

/* One probe in flight: which permit holds which slot, when it times out,
 * and the caller it was admitted for (0: none). */
struct ref_probe {
    uint64_t permit_id;
    uint64_t deadline;
    uint32_t slot;
    uint64_t source;
};

#define REF_MAX_EVENTS 64

struct ref_model {
    pthread_mutex_t mu;
    breaker_config cfg; /* every field explicit: the model applies no defaults */
    uint64_t epoch;
    uint64_t bucket_ns;

    enum breaker_state state;
    uint64_t generation;
    uint32_t k; /* failed recoveries */
    uint64_t since;
    uint64_t time_in_state[5];
    uint64_t open_until; /* OPEN only */
    /* CLOSED after probes closed it with ramp_ns set: when the ramp ends (0:
     * no ramp, or it was cleared by the first acquire after its end), and
     * the admission credit, 32.32 fixed point (one thread: one stripe). */
    uint64_t ramp_until;
    uint64_t ramp_credit;
    /* Failing sources (min_failing_sources 0 or > 1): the period the current map
     * covers, the current and previous 64-bit maps, the count window's ring
     * index (where a pass starts a period), and the map bits after the last
     * failure, which the trip decision reads. */
    uint64_t src_period, src_cur, src_prev;
    /* The count window's chunks, as the library fills them (one thread: one
     * stripe): chunks reserved so far, and this thread's chunk
     * (+ 1, 0 = none) and slots used in it. They decide where a pass of the
     * ring starts, the failing-source period. */
    uint64_t ring_next, chunk, chunk_used;
    uint32_t src_bits;
    /* HALF_OPEN only: the callers of its failed probes, a 48-bit map. */
    uint64_t probe_src;
    /* The callers of the failed probes of the half-open that the OPEN now,
     * and the HALF_OPEN after it, follow (0 after any other transition):
     * refused a probe until refused_until. */
    uint64_t refused_callers;
    uint64_t refused_until;
    /* OPEN (past its wait) and the HALF_OPEN after it: a named caller
     * probes from its own point on, drawn after the end of that OPEN's wait
     * (turns_from) over turns_spread, a quarter of its wait before jitter
     * in whole microseconds, fixed when it opened; the OPEN's generation
     * keys the draw. */
    uint64_t turns_from, turns_gen, turns_spread;
    /* Whether this trip streak's first probe timeout of named callers kept
     * the backoff level (false again after CLOSED or FORCED_CLOSED). */
    bool timeout_spared;
    uint32_t probe_successes; /* HALF_OPEN only */
    struct ref_probe *probes; /* HALF_OPEN only; half_open_max_probes entries */
    uint32_t nprobes;
    /* HALF_OPEN only, per probe slot: the deadline (us since the epoch) of the
     * last probe that held it in this generation, 0 for none. A slot's next
     * probe is due strictly later: admissions in one microsecond to the same
     * slot are 1 us apart, which makes every claim unique (breaker.h). */
    uint64_t *slot_last_us;

    /* Evidence recorded since the last transition into CLOSED or
     * FORCED_CLOSED. It is kept (and a time window keeps ageing) while OPEN,
     * HALF_OPEN or FORCED_OPEN: statistics show the ended period's window. */
    uint32_t run;               /* CONSECUTIVE: current run of failures */
    struct ref_record *records; /* windows: recorded calls, oldest first */
    size_t nrecords;
    size_t cap_records;

    uint64_t next_permit_id;
    breaker_stats counters; /* the cumulative counters only */

    /* Transitions not yet taken by ref_model_take_events(). */
    breaker_event events[REF_MAX_EVENTS];
    size_t nevents;
};

/* Build a model from a configuration whose every field is set (no zero
 * "defaults"), created at clock reading `now`. @return 0, or -1 (ENOMEM). */
int ref_model_init(struct ref_model *m, const breaker_config *cfg, uint64_t now);
void ref_model_fini(struct ref_model *m);

int ref_model_acquire(struct ref_model *m, uint64_t now, struct ref_permit *p);
/* ref_model_acquire() for the caller `source` (0 = none). */
int ref_model_acquire_from(struct ref_model *m, uint64_t now, struct ref_permit *p,
                           uint64_t source);
int ref_model_complete(struct ref_model *m, uint64_t now, struct ref_permit *p, int outcome);
/* ref_model_complete() with the caller's source key (0 = none). */
int ref_model_complete_from(struct ref_model *m, uint64_t now, struct ref_permit *p, int outcome,
                            uint64_t source);
int ref_model_force_open(struct ref_model *m, uint64_t now);
int ref_model_force_closed(struct ref_model *m, uint64_t now);
int ref_model_reset(struct ref_model *m, uint64_t now);
enum breaker_state ref_model_get_state(struct ref_model *m, uint64_t now);
uint64_t ref_model_retry_after(struct ref_model *m, uint64_t now);
uint64_t ref_model_generation(struct ref_model *m);
void ref_model_stats(struct ref_model *m, uint64_t now, breaker_stats *out);

/* Move the transitions the model made since the last call into `out`
 * (capacity `cap`). @return how many. */
size_t ref_model_take_events(struct ref_model *m, breaker_event *out, size_t cap);

/* The wait in OPEN after `k` failed recoveries, entering generation `gen`,
 * exactly as the manual defines it. */
uint64_t ref_model_wait_ns(const breaker_config *cfg, uint32_t k, uint64_t gen);

/* The standard splitmix64 (increment 0x9e3779b97f4a7c15, then the mix), which
 * the manual uses for jitter. */
uint64_t ref_splitmix64(uint64_t x);

/* A seeded stream of random numbers for the correctness tests: the
 * splitmix64 sequence, so a seed reproduces a run exactly. */
struct ref_rng {
    uint64_t s;
};

static inline uint64_t ref_rng_next(struct ref_rng *r) {
    uint64_t v = ref_splitmix64(r->s);
    r->s += UINT64_C(0x9e3779b97f4a7c15);
    return v;
}

/* Uniform in [0, n), n > 0 (the bias of a modulo is irrelevant here). */
static inline uint64_t ref_rng_below(struct ref_rng *r, uint64_t n) { return ref_rng_next(r) % n; }

#endif /* BREAKER_REFERENCE_MODEL_H */
