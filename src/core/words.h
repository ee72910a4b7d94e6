/* SPDX-License-Identifier: MIT */
/*
 * words.h - the encodings of the block's atomic words: the state word (ctl),
 * permit heads, tagged times, probe slot words, window bucket stamps and
 * count-window ring slots. Each is read and written whole, in one atomic
 * access; these helpers pack and unpack them.
 *
 * Changes when an encoding changes (and BREAKER__LAYOUT_VERSION with it,
 * layout.h).
 */
#ifndef BREAKER_CORE_WORDS_H
#define BREAKER_CORE_WORDS_H

#include "core/layout.h"

#include <stdbool.h>
#include <stdint.h>

/* ---- The state word -------------------------------------------------------
 * One 64-bit word holds everything a transition must change atomically:
 *   bits 28..63  generation (36 bits; +1 per transition)
 *   bit  27      SHADOW: shadow mode (breaker.c, "Shadow mode"): the state
 *               machine runs, but nothing it decides refuses a call
 *   bits 24..26  state (enum breaker_state)
 *   bits 12..23  k, consecutive failed recoveries (saturates at 4095)
 *   bits  0..11  successful probes in the current half-open
 * A transition is one CAS on this word, so exactly one thread wins it, and
 * it keeps the SHADOW bit as it found it. The bit sits among the state bits
 * so that the short paths' tests (ctl & admit_mask, the raw state compared
 * with OPEN) send a shadowed breaker to the general paths with the same
 * instructions as before: shadow mode off costs nothing. */
#define BREAKER__GEN_SHIFT   28
#define BREAKER__STATE_SHIFT 24
#define BREAKER__K_SHIFT     12
#define BREAKER__FIELD12     0xfffu
#define BREAKER__CTL_SHADOW  (UINT64_C(1) << 27)
#define BREAKER__GEN_MASK    ((UINT64_C(1) << 36) - 1)

static inline uint64_t breaker__ctl_pack(uint64_t gen, unsigned state, unsigned k, unsigned succ) {
    return ((gen & BREAKER__GEN_MASK) << BREAKER__GEN_SHIFT) |
           ((uint64_t)(state & 0x7u) << BREAKER__STATE_SHIFT) |
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
    return (unsigned)(c >> BREAKER__STATE_SHIFT) & 0x7u;
}
/* The state bits with SHADOW (bit 3 of the field): equal to a state only
 * when shadow mode is off. The short paths compare this. */
static inline unsigned breaker__ctl_state_raw(uint64_t c) {
    return (unsigned)(c >> BREAKER__STATE_SHIFT) & 0xfu;
}
static inline bool breaker__ctl_shadow(uint64_t c) { return (c & BREAKER__CTL_SHADOW) != 0; }
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

/* The low field in FORCED_CLOSED: 1 when the forced close has an expiry
 * (breaker_force_closed_for(), its end in phase_time). In ctl, not inferred
 * from phase_time: a transition that lost the race to a plain forced close
 * may have written phase_time for the generation the forced close took. */
#define BREAKER__FORCED_TIMED_FLAG 1u
static inline bool breaker__ctl_forced_timed(uint64_t c) {
    return breaker__ctl_state(c) == 4 /* BREAKER_FORCED_CLOSED */ &&
           breaker__ctl_succ(c) == BREAKER__FORCED_TIMED_FLAG;
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
    /* Admitted by shadow mode where the breaker would have refused: its
     * generation field is 0 (no generation is), so its completion leaves the
     * short path on the generation test and changes nothing but the shadow
     * counters. */
    BREAKER__PERMIT_SHADOW = 8,
};
#define BREAKER__PERMIT_GEN_MASK (~((UINT64_C(1) << BREAKER__GEN_SHIFT) - 1))
#define BREAKER__PERMIT_TAG_MASK (((UINT64_C(1) << BREAKER__GEN_SHIFT) - 1) & ~UINT64_C(0xff))

/* A shadow permit's bits 4..5: the refusal it was spared (BREAKER__REFUSE_*,
 * layout.h), for breaker_permit_would_reject(). 0 in every other permit.
 * Only that function reads them (every completion masks the flags it
 * tests), so a build that does not know them completes such a permit as
 * before: no layout change. */
#define BREAKER__PERMIT_REFUSAL_SHIFT 4
#define BREAKER__PERMIT_REFUSAL_MASK  (UINT64_C(3) << BREAKER__PERMIT_REFUSAL_SHIFT)

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

/* ---- Probe source words ----------------------------------------------------
 * Beside each slot, the caller of the probe that holds it, for a timeout
 * (which no completion reports) and for a completion that names nobody:
 *   bits 48..54  the caller's bit in a half-open's map of failing callers
 *               (breaker.c, "Recovery no one caller can own"), + 1; 0: none
 *   bits  0..47  the deadline (us) of the claim it belongs to
 * Written by the admitting thread just after its claim; read by a thread
 * that holds or times out that claim. A word whose deadline is not the
 * claim's belongs to an earlier probe of the slot (every claim's deadline
 * is unique: "Probe slot words"), or is not written yet: no caller. */
#define BREAKER__SRC_BIT_SHIFT 48
#define BREAKER__SRC_BITS      48u

static inline uint64_t breaker__slot_source_word(unsigned bit, uint64_t claim) {
    return ((uint64_t)(bit + 1) << BREAKER__SRC_BIT_SHIFT) | breaker__slot_us(claim);
}
/* The caller's bit for `claim` in `w`, or -1 for none. */
static inline int breaker__slot_source_bit(uint64_t w, uint64_t claim) {
    if ((w & BREAKER__TIME_MASK) != breaker__slot_us(claim)) return -1;
    unsigned b1 = (unsigned)(w >> BREAKER__SRC_BIT_SHIFT) & 0x7fu;
    return b1 == 0 || b1 > BREAKER__SRC_BITS ? -1 : (int)b1 - 1;
}

/* ---- Deadlines as tagged times ------------------------------------------- */
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

/* ---- Time-window bucket stamps (struct breaker__bucket) ------------------ */
#define BREAKER__STAMP_EPOCH_MASK ((UINT64_C(1) << BREAKER__STAMP_EPOCH_BITS) - 1)

static inline uint64_t breaker__bucket_stamp(uint64_t gen, uint64_t epoch) {
    return ((gen & 0xffffffu) << BREAKER__STAMP_EPOCH_BITS) |
           ((epoch + 1) & BREAKER__STAMP_EPOCH_MASK);
}

/* ---- Count-window ring slots (window.c, "Count window: chunks") ---------- */
#define BREAKER__RING_FIELD_BITS 21
enum { BREAKER__RING_RECORDED = 1, BREAKER__RING_FAILURE = 2, BREAKER__RING_SLOW = 4 };

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

#endif /* BREAKER_CORE_WORDS_H */
