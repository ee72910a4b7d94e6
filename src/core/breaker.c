/* SPDX-License-Identifier: MIT */
/*
 * breaker.c - the call path: acquire, complete, the probe slots and the
 * transitions they make. Create and destroy are block.c's; the queries and
 * the controls that steer a breaker from outside its calls (forced states,
 * timed opens, outside evidence, shadow mode, live reconfiguration, retry
 * hints) are control.c's, which make their transitions through
 * breaker__transition() (machine.h). The short paths of acquire and complete
 * stay together in this one file, frameless (docs/design.md "Layout of
 * src/"). What the block and its words hold is in layout.h and words.h, how
 * a thread picks and writes its stripe in stripes.h.
 *
 * Concurrency design (docs/design.md has the long form):
 *
 * - All state a transition changes is in one 64-bit word, `ctl` (generation,
 *   state, failed recoveries k, probe successes). A transition is one CAS on
 *   it, so exactly one thread wins each transition and reports it.
 * - Whatever a reader must see together with a new state (the open deadline,
 *   the emptied window) is written before the CAS (release) and read after
 *   loading ctl (acquire).
 * - CLOSED and OPEN never write shared lines on the call path except one
 *   counter stripe (the thread's own, the one of the concurrency id it runs
 *   on, or a shared one: stripes.h) and, in CLOSED, the window (a failure
 *   also writes the consecutive run; a success only reads it).
 * - HALF_OPEN admits probes by claiming one of `half_open_max_probes` slots,
 *   each a single word holding the probe's generation tag and its deadline, so
 *   "at most N probes" is enforced by N CAS-protected words and a hung probe is
 *   visible to whoever looks next. The probe admitted by the OPEN -> HALF_OPEN
 *   transition itself owns slot 0 implicitly (its deadline is in phase_time):
 *   the transition and that probe's admission are then one atomic step, so the
 *   first caller after the wait is the probe, and a process that dies right
 *   after winning the transition leaves a probe that simply times out.
 */
#define _GNU_SOURCE
#include "core/block.h"
#include "core/internal.h"
#include "core/machine.h"
#include "common/text.h"
#include "common/time_ns.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- Permits ---------------------------------------------------------------
 * The head word's encoding is in words.h (block.c binds the handle's tag). */
enum {
    PERMIT_ADMITTED = BREAKER__PERMIT_ADMITTED,
    PERMIT_PROBE = BREAKER__PERMIT_PROBE,
    PERMIT_SETTLED = BREAKER__PERMIT_SETTLED,
    PERMIT_SHADOW = BREAKER__PERMIT_SHADOW,
};
#define PERMIT_GEN_MASK BREAKER__PERMIT_GEN_MASK
#define PERMIT_TAG_MASK BREAKER__PERMIT_TAG_MASK

/* Per-CPU stripes (stripes.h): the byte offset of a stripe counter, and one
 * count on the concurrency id's stripe, or on the thread's own stripe when
 * the sequence fails (id without a stripe, stripe held, interrupted). */
#define STRIPE_FIELD(field) offsetof(struct breaker__stripe, field)
#define CPU_COUNT(b, field)                                                       \
    do {                                                                          \
        if (breaker__cpu_add((b), STRIPE_FIELD(field), 1) == NULL) {              \
            struct breaker__stripe_ref cpu_fallback_ = breaker__thread_stripe(b); \
            breaker__stripe_count(cpu_fallback_, &cpu_fallback_.stripe->field);   \
        }                                                                         \
    } while (0)

/* may_alias: this view is laid over the caller's breaker_permit storage. */
struct __attribute__((may_alias)) permit_view {
    breaker__atomic64 head;
    uint64_t admitted_at; /* written only when slow calls are timed, or a probe */
    uint64_t slot_value;  /* probes: the slot word they claimed */
    uint64_t slot_index;
    /* The admitting breaker's 64-bit instance id, written with every
     * admission. The head's 20-bit tag alone lets about one completion in a
     * million through to the wrong breaker among a few thousand; the id
     * makes "not a permit of this breaker" hold in practice. */
    uint64_t breaker_id;
    /* Probes: the backend gate's word for the probe (its fleet lease), 0 for
     * none; handed back to the gate's settle. */
    uint64_t gate_token;
};
_Static_assert(sizeof(struct permit_view) == sizeof(breaker_permit), "permit layout");
_Static_assert(_Alignof(breaker__atomic64) <= _Alignof(breaker_permit), "permit alignment");

static struct permit_view *permit_view_of(breaker_permit *p) {
    return (struct permit_view *)(void *)p;
}

static uint64_t permit_head(const breaker *b, uint64_t gen, unsigned flags) {
    return (gen << BREAKER__GEN_SHIFT) | b->permit_tag | flags;
}

/* Relaxed stores: the permit reaches whichever thread completes it through
 * the caller's own synchronisation (a queue, a join, a callback). */
static void permit_set_head(breaker_permit *permit, uint64_t head) {
    atomic_store_explicit(&permit_view_of(permit)->head, head, memory_order_relaxed);
}

static void permit_fill_probe(const breaker *b, breaker_permit *permit, uint64_t gen, uint64_t now,
                              unsigned slot, uint64_t slot_value, uint64_t gate_token) {
    struct permit_view *pv = permit_view_of(permit);
    pv->admitted_at = now;
    pv->slot_value = slot_value;
    pv->slot_index = slot;
    pv->breaker_id = b->breaker_id;
    pv->gate_token = gate_token;
    permit_set_head(permit, permit_head(b, gen, PERMIT_ADMITTED | PERMIT_PROBE));
}

/* Whether the breaker times its calls (slow_call_ns > 0): fixed for the
 * block's life (a live change may move the threshold, never to or from 0:
 * reconfig.c), so the handle's copy answers, without the load of a live
 * limit. */
static inline bool timed(const breaker *b) { return b->cfg.slow_call_ns != 0; }

/* A refusal writes only the head: completing it fails as "not admitted". */
static void permit_refuse(const breaker *b, breaker_permit *permit) {
    permit_set_head(permit, b->permit_tag);
}

/* ---- Refusals and shadow mode -------------------------------------------------
 * Every refusal of the general paths comes through refuse(), with the state
 * word it was decided on. In shadow mode (ctl's SHADOW bit) the call is
 * admitted instead with a shadow permit, whose completion is counted as a
 * shadow outcome and changes nothing else (no window, count, state or call
 * duration). The machine thus runs as if the call had been refused. The
 * open short path (acquire_open) never sees a shadowed breaker:
 * breaker_acquire() compares the raw state bits, SHADOW included. A shadow
 * permit's breaker_id is the handle's marked (SHADOW_ID), so every
 * completion's first test (whose permit this is) sends it out of line to
 * complete_foreign_from(), which settles it (shadow_complete()) before
 * anything is recorded, at no cost to the completions' code; its
 * generation 0, which no generation is, keeps it off every generation's
 * evidence too (complete_closed()'s stale branch, as a second guard). */
#define SHADOW_ID UINT64_C(0x5ad0c0de5ad0c0de)

static int shadow_complete(breaker *b, struct permit_view *pv, enum breaker_outcome outcome);

__attribute__((noinline, cold)) static int shadow_admit(breaker *b, breaker_permit *permit,
                                                        unsigned why) {
    struct breaker__shared *s = b->shared;
    breaker__count(&s->would_reject[why]);
    struct permit_view *pv = permit_view_of(permit);
    pv->admitted_at = timed(b) ? b->now_precise(b) : 0;
    pv->slot_value = 0;
    pv->slot_index = 0; /* never a checked permit's record */
    pv->breaker_id = b->breaker_id ^ SHADOW_ID;
    pv->gate_token = 0;
    permit_set_head(permit, permit_head(b, 0,
                                        PERMIT_ADMITTED | PERMIT_SHADOW |
                                            (why << BREAKER__PERMIT_REFUSAL_SHIFT)));
    return BREAKER_OK;
}

/* Inlined: each caller's `why` is a constant, so the counter and the status
 * fold into the code each refusal had before shadow mode, plus one test of
 * the SHADOW bit. */
__attribute__((always_inline)) static inline int refuse(breaker *b, breaker_permit *permit,
                                                        uint64_t ctl, unsigned why) {
    if (__builtin_expect(breaker__ctl_shadow(ctl), 0)) return shadow_admit(b, permit, why);
    struct breaker__stripe_ref stripe = breaker__thread_stripe(b);
    struct breaker__stripe *st = stripe.stripe;
    breaker__stripe_count(stripe, why == BREAKER__REFUSE_OPEN        ? &st->rejected_open
                                  : why == BREAKER__REFUSE_HALF_OPEN ? &st->rejected_half_open
                                  : why == BREAKER__REFUSE_FORCED    ? &st->rejected_forced
                                                                     : &st->rejected_ramp);
    permit_refuse(b, permit);
    return why == BREAKER__REFUSE_HALF_OPEN ? BREAKER_REJECTED_HALF_OPEN
           : why == BREAKER__REFUSE_RAMP    ? BREAKER_REJECTED_RAMP
                                            : BREAKER_REJECTED_OPEN;
}

/* The completion of a shadow permit: how the call would-have-been-refused
 * went, and nothing else. */
static int shadow_settle(breaker *b, enum breaker_outcome outcome) {
    if (outcome == BREAKER_SUCCESS || outcome == BREAKER_FAILURE)
        breaker__count(&b->shared->shadow_outcomes[outcome == BREAKER_FAILURE]);
    return BREAKER_OK;
}

/* A shadow permit of `b` completed: settled once (a copy completed again
 * is a duplicate), a cancellation counted as cancelled_as says, and no
 * duration (the call would have been refused). */
static int shadow_complete(breaker *b, struct permit_view *pv, enum breaker_outcome outcome) {
    if ((unsigned)outcome > (unsigned)BREAKER_CANCELLED) return BREAKER_EINVAL;
    if (atomic_fetch_or_explicit(&pv->head, PERMIT_SETTLED, memory_order_relaxed) &
        PERMIT_SETTLED) {
        breaker__count(&b->shared->duplicates);
        return BREAKER_ALREADY_SETTLED;
    }
    if (outcome == BREAKER_CANCELLED)
        outcome = (enum breaker_outcome)BREAKER__LIM(&b->shared->lim, cancelled_as);
    return shadow_settle(b, outcome);
}

/* ---- Checked permits -------------------------------------------------------
 * With cfg.checked_permits, a closed-state admission takes the next number n
 * of its thread's stripe in the handle's record and marks its word there
 * (n << 1), and its permit carries n and the handle's tag; the first
 * completion of any copy turns the word into n << 1 | 1 with a CAS, and a
 * later one finds it so: a duplicate. A word reused by admission n + RING
 * makes an older copy count, never refuses one (a slow call's outcome is not
 * lost). Relaxed throughout: the permit reaches its completers through the
 * caller's own synchronisation, which orders the admission's mark before
 * any completion's CAS; the CAS decides between racing copies by itself and
 * orders nothing else (the outcome is recorded with its own orders). The
 * record is allocated with the handle (block.c). */
__attribute__((always_inline)) static inline void permit_check_take(breaker *b,
                                                                    breaker_permit *permit) {
    struct breaker__stripe_ref r = breaker__thread_stripe(b);
    struct breaker__check_run *run = &b->check[r.index];
    uint64_t n;
    if (r.owned) { /* the stripe's only writer: a plain increment */
        n = breaker__read(&run->seq) + 1;
        breaker__write(&run->seq, n);
    } else {
        n = atomic_fetch_add_explicit(&run->seq, 1, memory_order_relaxed) + 1;
    }
    atomic_store_explicit(&run->ring[(n - 1) % BREAKER__CHECK_RING], n << 1, memory_order_relaxed);
    struct permit_view *pv = permit_view_of(permit);
    pv->slot_value = n;
    pv->slot_index = b->check_tag | r.index;
}

/* @return false when a copy of this closed-state permit was completed
 * first (a duplicate); true to record it. */
static bool permit_check_settle(breaker *b, const struct permit_view *pv) {
    if ((pv->slot_index & ~UINT64_C(0xff)) != b->check_tag) return true; /* not recorded here */
    uint64_t idx = pv->slot_index & 0xffu, n = pv->slot_value;
    if (idx >= BREAKER__STRIPES || n == 0) return true;
    breaker__atomic64 *word = &b->check[idx].ring[(n - 1) % BREAKER__CHECK_RING];
    uint64_t expect = n << 1;
    if (atomic_compare_exchange_strong_explicit(word, &expect, expect | 1, memory_order_relaxed,
                                                memory_order_relaxed))
        return true;
    return expect != ((n << 1) | 1);
}

/* ---- Small helpers ---------------------------------------------------------*/

#define RAMP_FLAG BREAKER__RAMP_FLAG

static bool ramping(uint64_t ctl) { return breaker__ctl_ramping(ctl); }

static uint64_t tagged(uint64_t gen, uint64_t us) {
    return (breaker__tag_of_gen(gen) << BREAKER__TAG_SHIFT) | us;
}

/* A claim (a probe's tag and deadline) is written with release
 * by a thread that loaded ctl with acquire and saw the claim's generation;
 * scanners read slots with acquire and then re-check ctl. So a scanner that
 * reads a claim of a newer generation also sees that generation in ctl, and
 * stops: no thread ever overwrites a newer generation's claim, whatever its
 * delay, and no reasoning about the order of tags is needed (a slot word may
 * sit untouched for any number of generations). */
static uint64_t slot_load(const breaker__atomic64 *slot) {
    return atomic_load_explicit(slot, memory_order_acquire);
}

static bool slot_cas(breaker__atomic64 *slot, uint64_t *expected, uint64_t desired) {
    return atomic_compare_exchange_strong_explicit(slot, expected, desired, memory_order_release,
                                                   memory_order_acquire);
}

/* Whether ctl still says `state` of generation `gen` (after slot reads). */
static bool still_in(const struct breaker__shared *s, unsigned state, uint64_t gen) {
    uint64_t c = breaker__load_acquire(&s->ctl);
    return breaker__ctl_gen(c) == gen && breaker__ctl_state(c) == state;
}

/* What a transition published (breaker__transition()) in one tagged word
 * (phase_time, turns_from, turns_spread): the word, and the one it
 * replaced, if it wrote. */
struct phase_publish {
    uint64_t word;
    uint64_t replaced;
    bool meant; /* published (or found a later time there) */
    bool wrote;
};

/* Publish `us` in the tagged word `w` for generation `gen`, "newer
 * generation wins" (and for the same generation, the later time): a thread
 * that computed the value long ago and was preempted cannot overwrite a
 * newer generation's. Relaxed: the ctl CAS that follows is the release that
 * publishes it. */
static void publish_tagged(breaker__atomic64 *w, uint64_t gen, uint64_t us,
                           struct phase_publish *pub) {
    uint64_t want = tagged(gen, us);
    uint64_t cur = breaker__read(w);
    pub->word = want;
    pub->meant = true;
    pub->wrote = false;
    for (;;) {
        int16_t ahead = (int16_t)(uint16_t)(breaker__tag_of_gen(gen) - breaker__tw_tag(cur));
        if (ahead < 0 || (ahead == 0 && breaker__tw_us(cur) >= us)) return;
        pub->replaced = cur;
        if (breaker__cas_relaxed(w, &cur, want)) {
            pub->wrote = true;
            return;
        }
    }
}

/* After breaker__transition()'s CAS. Every thread that saw the old generation
 * publishes for the new one before its CAS, and only one CAS wins: a loser's
 * time for the same generation (a probe's deadline, the policy's wait) may
 * be the later one and stay, so that an operator's exact wait, or a plain
 * forced close's absence of one, would become the loser's. So the winner
 * sets its own time, unless a newer generation's is there; and a loser that
 * replaced a time of that generation puts it back (it may be the winner's,
 * published before it). Relaxed, like the publication: a reader that sees
 * the loser's word meanwhile sees a time of the right generation, about to
 * be corrected. Two losers that both replace the winner's time and put
 * theirs back in the wrong order could still leave one of theirs: that
 * needs two threads preempted within one transition. */
static void settle_tagged(breaker__atomic64 *w, uint64_t gen, const struct phase_publish *pub,
                          bool won) {
    if (!pub->meant) return;
    if (won) {
        uint64_t cur = breaker__read(w);
        while (cur != pub->word &&
               (int16_t)(uint16_t)(breaker__tag_of_gen(gen) - breaker__tw_tag(cur)) >= 0 &&
               !breaker__cas_relaxed(w, &cur, pub->word)) {
        }
    } else if (pub->wrote && breaker__tw_tag(pub->replaced) == breaker__tag_of_gen(gen)) {
        uint64_t cur = pub->word;
        (void)breaker__cas_relaxed(w, &cur, pub->replaced);
    }
}

/* ---- Recovery no one caller can own ------------------------------------------
 * Every failed probe reopens at once (a failure, a slow probe with
 * slow_call_rate set, a timeout): no evidence against the dependency is set
 * aside, so a dependency that still fails part of every caller's calls
 * closes no more often than with no caller named. What one caller must not
 * do is own recovery: send a request that fails (or hangs) the moment each
 * probe is due, and so keep a healthy dependency refused for everybody.
 * So, where failing sources count (min_failing_sources 0 or 2..64), each
 * half-open notes the callers of its failed probes (the completion's
 * source, else the one the probe was admitted with, breaker_acquire_from();
 * a timeout's is the admission's), and the next half-open, for its first
 * probe_timeout_ns (from the end of the open wait), admits none of them as
 * a probe: while they are refused, the other callers probe, and their
 * probes decide. Past that the refused callers are admitted again, so a
 * breaker whose only callers are the refused ones still recovers. One
 * caller's failing requests thus reopen at most every other half-open,
 * and a hanging one costs one probe_timeout at most. A caller is a bit of
 * a 48-bit map (splitmix64(source) mod 48): a caller whose bit collides
 * with a refused one's is refused too, for that stretch. */
#define PROBE_SRC_SHIFT 48
#define PROBE_SRC_MASK  ((UINT64_C(1) << PROBE_SRC_SHIFT) - 1)

static uint64_t probe_src_tag(uint64_t gen) { return breaker__tag_of_gen(gen) << PROBE_SRC_SHIFT; }

/* Whether failing callers are noted and refused: where failing sources
 * count at all (min_failing_sources 1 turns it off). */
static bool callers_count(const struct breaker__shared *s) {
    return BREAKER__LIM(&s->lim, source_bits_needed) != 0;
}

/* A caller's bit in the maps: -1 for none (source 0). */
static int caller_bit(uint64_t source) {
    return source != 0 ? (int)(breaker__splitmix64(source) % BREAKER__SRC_BITS) : -1;
}

/* Entering the half-open of generation `gen`: the map of the half-open
 * before becomes the previous one, and this one starts empty. Written
 * before the transition's CAS, which publishes them; a loser of that race
 * writes the same words (it saw the same OPEN), or, delayed, an older
 * generation's, which no reader takes for the one it wants (tags). */
static void probe_sources_start(struct breaker__shared *s, uint64_t gen) {
    breaker__write(&s->probe_src_prev, breaker__read(&s->probe_src));
    breaker__write(&s->probe_src, probe_src_tag(gen));
}

/* Note that a probe of the half-open of generation `gen` from the caller
 * of bit `bit` failed. A word tagged with another generation counts as
 * empty, so a completion delayed past its half-open adds its caller to no
 * other half-open's map. Relaxed: the map orders nothing; the reopening's
 * CAS on ctl, after it, publishes it. */
static void probe_sources_note(struct breaker__shared *s, uint64_t gen, int bit) {
    if (bit < 0 || !callers_count(s)) return;
    uint64_t tag = probe_src_tag(gen);
    uint64_t cur = breaker__read(&s->probe_src);
    for (;;) {
        uint64_t map =
            ((cur & ~PROBE_SRC_MASK) == tag ? cur & PROBE_SRC_MASK : 0) | (UINT64_C(1) << bit);
        if (breaker__cas_relaxed(&s->probe_src, &cur, tag | map)) return;
    }
}

/* Whether the caller of bit `bit` is refused a probe now (`ctl` OPEN with
 * its wait over, or HALF_OPEN): its probe failed in the half-open this one
 * follows, and the first probe_timeout_ns of this one is not over. OPEN
 * reads that half-open's map as it left it; HALF_OPEN the copy its start
 * made. The stretch ends probe_timeout_ns after the open wait, or, in
 * HALF_OPEN, at its first probe's deadline (phase_time). */
static bool caller_refused(const struct breaker__shared *s, uint64_t ctl, int bit, uint64_t now) {
    if (bit < 0 || !callers_count(s)) return false;
    uint64_t gen = breaker__ctl_gen(ctl);
    bool open = breaker__ctl_state(ctl) == BREAKER_OPEN;
    uint64_t until = breaker__phase_time_ns(s, gen);
    if (open) {
        uint64_t more = BREAKER__LIM(&s->lim, probe_timeout_ns);
        until = until > UINT64_MAX - more ? UINT64_MAX : until + more;
    }
    if (now >= until) return false;
    uint64_t w = breaker__read(open ? &s->probe_src : &s->probe_src_prev);
    return (w & ~PROBE_SRC_MASK) == probe_src_tag(gen - (open ? 1 : 2)) && (w >> bit & 1) != 0;
}

/* The caller of the probe holding slot `i` with `claim` (its source word),
 * as a bit, or -1. */
static int slot_caller_bit(const struct breaker__shared *s, unsigned i, uint64_t claim) {
    return breaker__slot_source_bit(breaker__read(&breaker__slot_sources(s)[i]), claim);
}

/* Record the caller of the probe that just claimed slot `i` with `claim`
 * (none: nothing to write, the word there is an earlier claim's, which
 * names nobody for this one). Relaxed: its readers check that the word is
 * this claim's (words.h). */
static void slot_caller_set(struct breaker__shared *s, unsigned i, uint64_t claim, int bit) {
    if (bit >= 0)
        breaker__write(&breaker__slot_sources(s)[i],
                       breaker__slot_source_word((unsigned)bit, claim));
}

/* ---- Turns after the wait ----------------------------------------------------
 * The instant an open wait ends is the one instant a caller that wants to
 * own recovery needs: sent then, its request is the probe. So, where
 * failing sources count, a named caller (breaker_acquire_from()) is not
 * admitted as a probe at the wait's end T but at its own point T + d, d
 * drawn per generation and caller, uniform over a quarter of the wait the
 * breaker waits before jitter: the policy's for k, or the one chosen for
 * this opening (breaker_open_for(), a Retry-After, breaker_set_open_wait())
 * (machine.h: breaker__caller_point_ns(), the draw
 * breaker_retry_after_hint_from() tells that caller). That holds for the
 * whole recovery: beginning the half-open, and every probe of it, so a
 * caller that calls often, or that learned T, gets a probe no more often
 * than any other caller. The first probe thus goes to the first caller
 * whose point has passed and who calls: with many callers, a moment after
 * T (the least of n draws: the spread / (n + 1)); with one, at its point.
 * Callers that name nobody (breaker_acquire()) are admitted at T, as
 * breaker_retry_after_ns() says.
 *
 * The OPEN transition fixes T and the spread: it publishes them in
 * turns_from and turns_spread, tagged with its generation, as it publishes
 * phase_time (publish_tagged() before its CAS, settle_tagged() after), and
 * nothing else writes them. So the half-open after it reads the same words
 * (tagged with the generation before its own), a thread that loses the
 * OPEN -> HALF_OPEN race has nothing of the turns to overwrite, and a live
 * reconfiguration moves no turn and no hint already told. Readers load ctl
 * with acquire first, which orders the winner's publication before them.
 * A word of another generation (only after 65536 generations with no
 * opening) counts as no turn, which admits. */

/* The spread of the turns after a wait of `wait_ns` before jitter, in the
 * block's microseconds (a tagged word's time field). */
static uint64_t turns_spread_us(uint64_t wait_ns) {
    uint64_t us = wait_ns / 4 / 1000u;
    return us > BREAKER__TIME_MASK ? BREAKER__TIME_MASK : us;
}

uint64_t breaker__turns_spread_ns(const struct breaker__shared *s, uint64_t open_gen) {
    uint64_t w = breaker__read(&s->turns_spread);
    return breaker__tw_tag(w) == breaker__tag_of_gen(open_gen) ? breaker__tw_us(w) * 1000u : 0;
}

uint64_t breaker__turn_left_ns(const breaker *b, uint64_t ctl, uint64_t source, uint64_t now) {
    const struct breaker__shared *s = b->shared;
    if (source == 0 || !callers_count(s)) return 0;
    uint64_t gen = breaker__ctl_gen(ctl);
    uint64_t open_gen;
    switch ((enum breaker_state)breaker__ctl_state(ctl)) {
    case BREAKER_OPEN:
        open_gen = gen;
        break;
    case BREAKER_HALF_OPEN:
        open_gen = gen == 1 ? BREAKER__GEN_MASK : gen - 1; /* breaker__next_gen() undone */
        break;
    case BREAKER_CLOSED:
    case BREAKER_FORCED_CLOSED:
    case BREAKER_FORCED_OPEN:
    default:
        return 0;
    }
    uint64_t w = breaker__read(&s->turns_from);
    if (breaker__tw_tag(w) != breaker__tag_of_gen(open_gen)) return 0;
    uint64_t from = breaker__ns_of_us(s, breaker__tw_us(w));
    uint64_t d =
        breaker__caller_point_ns(b, open_gen, breaker__turns_spread_ns(s, open_gen), source);
    uint64_t point = from > UINT64_MAX - d ? UINT64_MAX : from + d;
    return point > now ? point - now : 0;
}

/* ---- Transitions -----------------------------------------------------------*/

/* Account the time spent in the state that just ended. Exact when
 * transitions do not race (one thread, or transitions apart in time); when
 * two follow each other within a few nanoseconds on different threads, an
 * interval may be counted twice or misattributed (since_gen and since_ns are
 * two words). Statistics only: no decision reads these. */
static void account_state_time(struct breaker__shared *s, uint64_t old_gen, uint64_t new_gen,
                               enum breaker_state from, uint64_t now) {
    uint64_t g = breaker__read(&s->since_gen);
    if (g >= new_gen) return;
    if (g == old_gen) {
        uint64_t since = breaker__read(&s->since_ns);
        if (now > since) breaker__count_n(&s->time_in_state[from], now - since);
    }
    if (breaker__cas_relaxed(&s->since_gen, &g, new_gen)) breaker__write(&s->since_ns, now);
}

/* A reset's mark in the block (breaker_reset_generation_peek()): the
 * generation it made, "newer wins" (relaxed CAS: a word alone, whose reader
 * is a process that took over from the dead one that wrote it), so a slower
 * store of an earlier reset never hides a later one. */
static void note_reset(struct breaker__shared *s, uint64_t gen) {
    uint64_t g = breaker__read(&s->reset_gen);
    while (g < gen && !breaker__cas_relaxed(&s->reset_gen, &g, gen)) {
    }
}

/* The text of a control into its event (zeroed: the bytes after each NUL
 * stay 0). Bounded again, though checked, so no caller's string can overrun
 * the arrays. */
static void control_text_copy(const struct breaker__control_text *text, breaker_event *ev) {
    if (text->who != NULL) memcpy(ev->who, text->who, strnlen(text->who, BREAKER_WHO_MAX));
    if (text->why != NULL) memcpy(ev->why, text->why, strnlen(text->why, BREAKER_WHY_MAX));
}

/* The wait the user's breaker_set_open_wait() function chooses for the
 * opening `t` from its evidence, told the policy's `wait`: at most
 * open_max_ns, or 0 for the policy's (no function, or its answer 0). Asked
 * of the handle the user holds. */
static uint64_t open_wait_chosen(const breaker *b, const struct breaker__transition *t,
                                 const struct breaker__limits *lim, uint64_t wait) {
    const breaker *face = b->face != NULL ? b->face : b;
    if (face->open_wait_fn == NULL) return 0;
    breaker_evidence e = t->evidence;
    e.failed_recoveries = t->k;
    uint64_t chosen = face->open_wait_fn(face->open_wait_ctx, &e, t->k, wait);
    return chosen < lim->open_max_ns ? chosen : lim->open_max_ns;
}

bool breaker__transition(breaker *b, struct breaker__transition *t) {
    struct breaker__shared *s = b->shared;
    uint64_t old_gen = breaker__ctl_gen(t->expected);
    uint64_t new_gen = breaker__next_gen(old_gen);
    enum breaker_state from = (enum breaker_state)breaker__ctl_state(t->expected);
    uint64_t wait = 0;
    struct phase_publish pub = {0}, pub_from = {0}, pub_spread = {0};

    if (t->to == BREAKER_OPEN) {
        /* The wait, and the same wait before jitter, which spreads the
         * turns after it ("Turns after the wait"): the one given (t->wait_ns),
         * the user's function's, or the policy's for k on one version of
         * the limits (a live change may be rewriting them: reconfig.c). */
        uint64_t flat = t->wait_ns;
        if (flat == 0) {
            struct breaker__limits lim;
            breaker__limits_snapshot(s, &lim);
            /* getpid(): a system call, but transitions are off the call path. */
            wait =
                breaker__open_wait_ns(&lim, t->k, new_gen, b->seed_drawn ? (uint64_t)getpid() : 0);
            flat = open_wait_chosen(b, t, &lim, wait);
            if (flat != 0) {
                wait = flat;
            } else {
                lim.open_jitter = 0.0;
                flat = breaker__open_wait_ns(&lim, t->k, new_gen, 0);
            }
        } else {
            wait = flat;
        }
        uint64_t until = breaker__deadline_us(s, t->now, wait);
        publish_tagged(&s->phase_time, new_gen, until, &pub);
        publish_tagged(&s->turns_from, new_gen, until, &pub_from);
        publish_tagged(&s->turns_spread, new_gen, turns_spread_us(flat), &pub_spread);
    } else if (t->to == BREAKER_HALF_OPEN) {
        publish_tagged(&s->phase_time, new_gen, breaker__probe_deadline_us(s, t->now), &pub);
        probe_sources_start(s, new_gen);
    } else if (t->to == BREAKER_CLOSED || t->to == BREAKER_FORCED_CLOSED) {
        /* Empty the window before the state that records into it is
         * published; the CAS below releases these stores. A transition that
         * has already lost leaves it alone (the winner's period may be
         * recording into it). */
        if (!breaker__window_reset(s, breaker__thread_stripe(b), t->expected)) return false;
        /* A ramp: its end in phase_time (unused in CLOSED otherwise); a
         * forced close's expiry likewise. */
        if (t->ramp)
            publish_tagged(&s->phase_time, new_gen,
                           breaker__deadline_us(s, t->now, BREAKER__LIM(&s->lim, ramp_ns)), &pub);
        if (t->to == BREAKER_FORCED_CLOSED && t->wait_ns != 0)
            publish_tagged(&s->phase_time, new_gen, breaker__deadline_us(s, t->now, t->wait_ns),
                           &pub);
    }
    /* In CLOSED the low field flags a ramp (it counts probe successes only
     * in HALF_OPEN), and k stays as it was until the ramp completes: a trip
     * during the ramp is one more failed recovery. */
    unsigned low = t->ramp                                             ? RAMP_FLAG
                   : t->to == BREAKER_FORCED_CLOSED && t->wait_ns != 0 ? BREAKER__FORCED_TIMED_FLAG
                                                                       : 0;
    uint64_t desired =
        breaker__ctl_pack(new_gen, t->to, t->k, low) | (t->expected & BREAKER__CTL_SHADOW);
    bool won = breaker__cas_acq_rel(&s->ctl, &t->expected, desired);
    settle_tagged(&s->phase_time, new_gen, &pub, won);
    settle_tagged(&s->turns_from, new_gen, &pub_from, won);
    settle_tagged(&s->turns_spread, new_gen, &pub_spread, won);
    if (!won) return false;
    /* A reset's mark first, before its event and its home's record: a
     * process killed from here on leaves the proof that it gave it. */
    if (t->reason == BREAKER_REASON_RESET) note_reset(s, new_gen);

    breaker__atomic64 *slots = breaker__slots(s);
    if (t->to == BREAKER_OPEN) {
        /* No probe exists in OPEN: mark every slot free for this generation,
         * so that when HALF_OPEN starts every word is one generation behind
         * it, however long a word sat untouched (16384 resets would wrap the
         * 14-bit tag onto it). Stops as soon as ctl leaves this OPEN (see
         * slot_load), so a delayed marker never touches a later claim. */
        uint64_t mark = breaker__slot_free_word(new_gen, 0);
        for (uint32_t i = 0; i < s->lim.half_open_max_probes; i++) {
            uint64_t v = slot_load(&slots[i]);
            while (v != mark && still_in(s, BREAKER_OPEN, new_gen) &&
                   !slot_cas(&slots[i], &v, mark)) {
            }
        }
    } else if (t->to == BREAKER_HALF_OPEN) {
        /* The winner is the first probe and owns slot 0 implicitly from the
         * CAS (its deadline is in phase_time). Before anything else, the event
         * included, make the claim explicit so it is released like any other;
         * unless this half-open is already over, and the probe with it. */
        uint64_t v = slot_load(&slots[0]);
        t->slot0_claim =
            breaker__slot_claim_word(new_gen, breaker__probe_deadline_us(s, t->now), v);
        while (!breaker__slot_is_for(v, new_gen) && still_in(s, BREAKER_HALF_OPEN, new_gen) &&
               !slot_cas(&slots[0], &v, t->slot0_claim)) {
        }
    }
    breaker__count(&s->transitions);
    account_state_time(s, old_gen, new_gen, from, t->now);
    if (t->to == BREAKER_CLOSED || t->to == BREAKER_FORCED_CLOSED)
        breaker__write(&s->window_gen, new_gen);

    breaker_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.from = from;
    ev.to = t->to;
    ev.reason = t->reason;
    ev.generation = new_gen;
    ev.time_ns = t->now;
    ev.open_ns = wait;
    ev.evidence = t->evidence;
    ev.evidence.failed_recoveries = t->k;
    ev.shadow = breaker__ctl_shadow(desired);
    if (t->text != NULL) {
        control_text_copy(t->text, &ev);
        t->text->made_gen = new_gen;
    }
    breaker__emit(b, &ev);
    return true;
}

static void half_open_evidence(uint64_t ctl, unsigned succ, breaker_evidence *e) {
    memset(e, 0, sizeof(*e));
    e->probe_successes = succ;
    e->failed_recoveries = breaker__ctl_k(ctl);
}

static unsigned next_k(uint64_t ctl) {
    unsigned k = breaker__ctl_k(ctl);
    return k < BREAKER__FIELD12 ? k + 1 : k;
}

/* ---- Half-open: probe slots --------------------------------------------------
 * Slot word for generation G (see "Probe slot words"): tag(G) | deadline busy;
 * tag(G) | FREE | last deadline free; another tag: unused this generation (free,
 * except slot 0, which then belongs to the transition's probe with its
 * deadline in phase_time). */
static void scan_slots(const struct breaker__shared *s, uint64_t ctl, uint64_t now,
                       struct breaker__slot_scan *r) {
    uint64_t gen = breaker__ctl_gen(ctl);
    const breaker__atomic64 *slots = breaker__slots(s);
    r->free_slot = r->expired_slot = -1;
    r->free_value = r->expired_value = 0;
    r->expired_at = UINT64_MAX;
    r->next_deadline = UINT64_MAX;
    for (uint32_t i = 0; i < s->lim.half_open_max_probes; i++) {
        uint64_t v = slot_load(&slots[i]);
        uint64_t deadline;
        bool free_now;
        if (breaker__slot_is_for(v, gen)) {
            free_now = breaker__slot_is_free(v);
            deadline = breaker__ns_of_us(s, breaker__slot_us(v));
        } else {
            /* A word of another generation: free, except in slot 0, where it
             * means the transition's own probe between its CAS and its
             * explicit claim. (If ctl has moved on, this whole view is stale:
             * callers re-check before acting on it.) */
            free_now = i != 0;
            deadline = breaker__phase_time_ns(s, gen);
        }
        if (free_now) {
            if (r->free_slot < 0) {
                r->free_slot = (int)i;
                r->free_value = v;
            }
            continue;
        }
        if (now >= deadline) {
            if (r->expired_slot < 0) {
                r->expired_slot = (int)i;
                r->expired_value = v;
            }
            if (deadline < r->expired_at) r->expired_at = deadline;
        }
        if (deadline < r->next_deadline) r->next_deadline = deadline;
    }
}

/* Note the callers of the probes of generation `gen` past their deadline
 * at `now`: a timeout is its caller's failure ("Recovery no one caller can
 * own"). Each is noted by whoever applies the timeout, before the reopening
 * that publishes the map. @return whether every one of them named its
 * caller (and there was one), where callers count. */
static bool note_expired_callers(struct breaker__shared *s, uint64_t gen, uint64_t now) {
    if (!callers_count(s)) return false;
    const breaker__atomic64 *slots = breaker__slots(s);
    bool named = false, nameless = false;
    for (uint32_t i = 0; i < s->lim.half_open_max_probes; i++) {
        uint64_t v = slot_load(&slots[i]);
        if (!breaker__slot_is_for(v, gen) || breaker__slot_is_free(v)) continue;
        if (now < breaker__ns_of_us(s, breaker__slot_us(v))) continue;
        int bit = slot_caller_bit(s, i, v);
        probe_sources_note(s, gen, bit);
        named |= bit >= 0;
        nameless |= bit < 0;
    }
    return named && !nameless;
}

/* ---- A hanging caller's first timeout -----------------------------------------
 * A failed probe reopens with the backoff level raised: a dependency that
 * still fails needs longer waits. But a caller whose requests hang past
 * probe_timeout_ns (not the dependency: its own query, say) costs, when its
 * point comes before the other callers' probes have closed the breaker, that
 * half-open and then the longer wait. So, where failing sources count, the
 * first probe timeout of a trip streak (the generations since the breaker
 * was last CLOSED or FORCED_CLOSED, window_gen) whose timed-out probes all
 * named their caller reopens at the level it had; every later timeout, and
 * every failure, raises it. The failure is not set aside: it reopens, and
 * its caller is refused a probe of the next half-open, as before. A
 * dependency that hangs for every caller backs off from its second timeout
 * on, one wait behind a breaker with no caller named; a half-recovered one
 * fails fast and is not concerned. The word holds the half-open whose
 * timeout kept the level, written before the reopening's CAS, which
 * publishes it; relaxed, like window_gen's read: a stale streak start only
 * makes a timeout raise the level, as without callers. A CAS lost to a
 * failure that reopened the same half-open leaves the word naming it: that
 * streak then backs off from its first timeout, as a breaker with no caller
 * named does. */
static bool timeout_keeps_level(struct breaker__shared *s, uint64_t gen) {
    uint64_t spared = breaker__read(&s->timeout_spared_gen);
    if (spared == gen) return true; /* this half-open's, by an earlier try */
    /* Whether the spared half-open came after the streak began: generations
     * wrap after 2^36, so "after" is a distance below half of that. */
    uint64_t since = breaker__read(&s->window_gen);
    uint64_t d = (spared - since) & BREAKER__GEN_MASK;
    if (d != 0 && d < (BREAKER__GEN_MASK >> 1)) return false;
    breaker__write(&s->timeout_spared_gen, gen);
    return true;
}

/* Apply a due probe timeout: a probe past its deadline is a failed probe
 * (PROBE_TIMEOUT). The timeout takes effect at the deadline, whenever it is
 * noticed: the transition is dated then, so the next wait runs from the
 * deadline and the half-open is credited only up to it (under low traffic the
 * first caller after a quiet hour finds the wait long over and probes, instead
 * of starting a wait of its own). The CAS may lose to another probe's success, which
 * changes ctl without ending the half-open, so it retries while the
 * generation lasts. The hung probe's slot keeps its word; the next OPEN
 * re-stamps it. @return true if the state moved on (by this call or another);
 * false with `*scan` describing the slots of `*ctl` (possibly reloaded). */
bool breaker__half_open_check_timeouts(breaker *b, uint64_t *ctl, uint64_t now,
                                       struct breaker__slot_scan *scan) {
    struct breaker__shared *s = b->shared;
    uint64_t gen = breaker__ctl_gen(*ctl);
    for (;;) {
        scan_slots(s, *ctl, now, scan);
        if (scan->expired_slot < 0) return false;
        /* Dated at the deadline; never before the half-open began (a
         * deadline that saturated 8.9 years after creation, or 0 for a slot-0
         * deadline lost to tag wrap-around, would date it earlier) and never
         * after now. */
        uint64_t at = scan->expired_at;
        uint64_t began = breaker__read(&s->since_ns);
        if (at < began) at = began;
        if (at > now) at = now;
        bool named = note_expired_callers(s, gen, now);
        struct breaker__transition t = {
            .expected = *ctl,
            .to = BREAKER_OPEN,
            .reason = BREAKER_REASON_PROBE_TIMEOUT,
            .k = named && timeout_keeps_level(s, gen) ? breaker__ctl_k(*ctl) : next_k(*ctl),
            .now = at};
        half_open_evidence(*ctl, breaker__ctl_succ(*ctl), &t.evidence);
        if (breaker__transition(b, &t)) {
            breaker__count(&s->probes_timed_out);
            breaker__count(&s->probes_failed);
            return true;
        }
        *ctl = breaker__load_acquire(&s->ctl);
        if (breaker__ctl_gen(*ctl) != gen || breaker__ctl_state(*ctl) != BREAKER_HALF_OPEN)
            return true;
    }
}

/* ACQUIRE_SHADOWED: admitted by shadow mode where the breaker would have
 * refused (refuse()); the permit is written: return BREAKER_OK. */
enum { ACQUIRE_RETRY = -1, ACQUIRE_SHADOWED = -2 };

static void close_if_settled(breaker *b, uint64_t gen, uint64_t now);

/* A probe slot of generation `gen` just claimed with `claim`, before the
 * probe is counted: the backend's gate has the last word (the fleet store
 * asks for a fleet lease). @return BREAKER_OK with `*token` (0 without a
 * gate), or the gate's refusal (REJECTED_OPEN, else REJECTED_HALF_OPEN):
 * then the slot is given back (free
 * for the generation, its deadline kept, so the next claim's is later), the
 * last settling probe's close check is made for it, and the caller refuses
 * (counted as a refusal, never as a probe). Only probes come here: the
 * closed and open short paths never read the gate. */
static int gate_probe(breaker *b, uint64_t gen, unsigned slot_index, uint64_t claim, uint64_t now,
                      uint64_t *token) {
    *token = 0;
    if (b->gate.admit == NULL) return BREAKER_OK;
    int rc = b->gate.admit(b->gate.ctx, b, token);
    if (rc == BREAKER_OK) return BREAKER_OK;
    *token = 0;
    breaker__atomic64 *slot = &breaker__slots(b->shared)[slot_index];
    uint64_t expect = claim;
    /* Fails only if the half-open ended meanwhile (OPEN re-marked it). */
    slot_cas(slot, &expect, breaker__slot_free_word(gen, breaker__slot_us(claim)));
    /* A probe that settled while we held the slot saw it busy and left the
     * close to whoever freed it last. */
    close_if_settled(b, gen, now);
    return rc == BREAKER_REJECTED_OPEN ? BREAKER_REJECTED_OPEN : BREAKER_REJECTED_HALF_OPEN;
}

/* The refuse() reason for a gate's refusal. */
static unsigned gate_refusal(int gated) {
    return gated == BREAKER_REJECTED_OPEN ? BREAKER__REFUSE_OPEN : BREAKER__REFUSE_HALF_OPEN;
}

/* HALF_OPEN: claim a probe slot for the caller of bit `bit` (-1: none).
 * Inlined into both acquire entries (acquire_states()): breaker_acquire()'s
 * half-open refusal is then the code it was before callers were named. */
__attribute__((always_inline)) static inline int
half_open_acquire(breaker *b, uint64_t ctl, breaker_permit *permit, int bit, uint64_t source) {
    struct breaker__shared *s = b->shared;
    uint64_t now = b->now_precise(b);
    struct breaker__slot_scan scan;
    if (breaker__half_open_check_timeouts(b, &ctl, now, &scan)) return ACQUIRE_RETRY;
    /* Enough successes and nothing in flight, yet still HALF_OPEN: the probe
     * that freed the last slot never made its close check (its process was
     * killed in between; a store file outlives it). Make the check for it,
     * or the breaker would refuse for good. */
    if (breaker__ctl_succ(ctl) >= BREAKER__LIM(&s->lim, half_open_successes) &&
        scan.next_deadline == UINT64_MAX) {
        close_if_settled(b, breaker__ctl_gen(ctl), now);
        if (!still_in(s, BREAKER_HALF_OPEN, breaker__ctl_gen(ctl))) return ACQUIRE_RETRY;
    }
    /* Enough probes have succeeded: admit no more; the breaker closes when
     * those in flight settle (close_if_settled). */
    if (scan.free_slot < 0 || breaker__ctl_succ(ctl) >= BREAKER__LIM(&s->lim, half_open_successes))
        return refuse(b, permit, ctl, BREAKER__REFUSE_HALF_OPEN);
    /* A caller whose probe failed last time waits while the others probe. */
    if (caller_refused(s, ctl, bit, now)) return refuse(b, permit, ctl, BREAKER__REFUSE_HALF_OPEN);
    /* A named caller probes from its own point on ("Turns after the wait"). */
    if (source != 0 && breaker__turn_left_ns(b, ctl, source, now) > 0)
        return refuse(b, permit, ctl, BREAKER__REFUSE_HALF_OPEN);
    uint64_t gen = breaker__ctl_gen(ctl);
    uint64_t expect = scan.free_value;
    uint64_t due = breaker__probe_deadline_us(s, now);
    uint64_t claim = breaker__slot_claim_word(gen, due, expect);
    if (breaker__slot_us(claim) >
        due + BREAKER__SLOT_STEP_MAX_US) /* outran the clock: refuse, do not drift */
        return refuse(b, permit, ctl, BREAKER__REFUSE_HALF_OPEN);
    breaker__atomic64 *slot = &breaker__slots(s)[scan.free_slot];
    /* The slot was read (acquire) before this re-check: if it held a newer
     * generation's claim, ctl shows that generation now (see slot_load). */
    if (!still_in(s, BREAKER_HALF_OPEN, gen)) return ACQUIRE_RETRY;
    /* The claim CAS is what bounds the probes: one word per probe. */
    if (!slot_cas(slot, &expect, claim)) return ACQUIRE_RETRY;
    slot_caller_set(s, (unsigned)scan.free_slot, claim, bit);
    uint64_t again = breaker__load_acquire(&s->ctl);
    if (breaker__ctl_gen(again) != gen || breaker__ctl_state(again) != BREAKER_HALF_OPEN) {
        /* The state moved on while we claimed: hand the slot back. */
        slot_cas(slot, &claim, breaker__slot_free_word(gen, breaker__slot_us(claim)));
        return ACQUIRE_RETRY;
    }
    uint64_t token;
    int gated = gate_probe(b, gen, (unsigned)scan.free_slot, claim, now, &token);
    if (gated != BREAKER_OK) return refuse(b, permit, ctl, gate_refusal(gated));
    struct breaker__stripe_ref stripe = breaker__thread_stripe(b);
    breaker__count(&s->probes_admitted);
    breaker__stripe_count(stripe, &stripe.stripe->admitted);
    permit_fill_probe(b, permit, gen, now, (unsigned)scan.free_slot, claim, token);
    return BREAKER_OK;
}

/* OPEN and the wait is over: the caller that wins OPEN -> HALF_OPEN is the
 * first probe, unless its probe failed last time (`bit`, -1: no caller):
 * it then leaves the transition to another caller for a while. A named
 * caller (`source`, 0: none) begins it only from its turn ("Turns after
 * the wait"). Out of line: made once per recovery, and inlining it would
 * cost the general acquire path registers.
 * @return BREAKER_OK with the permit filled, a refusal, or ACQUIRE_RETRY. */
static int open_try_probe(breaker *b, uint64_t ctl, breaker_permit *permit, int bit,
                          uint64_t source) {
    struct breaker__shared *s = b->shared;
    uint64_t now = b->now_precise(b);
    if (caller_refused(s, ctl, bit, now)) return refuse(b, permit, ctl, BREAKER__REFUSE_OPEN);
    if (source != 0 && breaker__turn_left_ns(b, ctl, source, now) > 0)
        return refuse(b, permit, ctl, BREAKER__REFUSE_OPEN);
    struct breaker__transition t = {.expected = ctl,
                                    .to = BREAKER_HALF_OPEN,
                                    .reason = BREAKER_REASON_WAIT_ELAPSED,
                                    .k = breaker__ctl_k(ctl),
                                    .now = now};
    half_open_evidence(ctl, 0, &t.evidence);
    if (!breaker__transition(b, &t)) return ACQUIRE_RETRY;
    uint64_t gen = breaker__next_gen(breaker__ctl_gen(ctl));
    uint64_t token;
    slot_caller_set(s, 0, t.slot0_claim, bit);
    int gated = gate_probe(b, gen, 0, t.slot0_claim, now, &token);
    if (gated != BREAKER_OK)
        return refuse(b, permit, breaker__load_acquire(&s->ctl), gate_refusal(gated));
    struct breaker__stripe_ref stripe = breaker__thread_stripe(b);
    breaker__count(&s->probes_admitted);
    breaker__stripe_count(stripe, &stripe.stripe->admitted);
    permit_fill_probe(b, permit, gen, now, 0, t.slot0_claim, token);
    return BREAKER_OK;
}

/* ---- The call path -----------------------------------------------------------*/

/* ---- Ramp after recovery ------------------------------------------------------
 * When probes close a breaker with ramp_ns set, CLOSED starts with a ramp:
 * ctl's low field says so, phase_time holds its end, and k keeps the failed
 * recoveries so far. The share of calls admitted grows linearly from
 * ramp_start to 1; refusals are REJECTED_RAMP. A trip during the ramp needs
 * only the ramp's share of min_calls (the traffic is that much thinner) and
 * counts as one more failed recovery. The first call after the ramp's end
 * clears the flag and k in place: the same generation, so permits admitted
 * during the ramp stay current. */

/* Whether the calling thread's next call is admitted at `share`: add the
 * share to the stripe's credit; admitted when the credit crosses an integer.
 * Exactly that share of the calls through a stripe gets in, without a shared
 * counter; a shared stripe adds with fetch_add, which keeps the count exact
 * under concurrency. Relaxed: the credit orders nothing. */
static bool ramp_admits(struct breaker__stripe_ref stripe, double share) {
    uint64_t inc = breaker__ramp_increment(share);
    breaker__atomic64 *credit = &stripe.stripe->ramp_credit;
    uint64_t old;
    if (stripe.owned) {
        old = breaker__read(credit);
        breaker__write(credit, old + inc);
    } else {
        old = atomic_fetch_add_explicit(credit, inc, memory_order_relaxed);
    }
    return ((old + inc) >> 32) != (old >> 32);
}

/* A CLOSED breaker that is ramping: admit its share, or refuse.
 * @return BREAKER_OK (go on admitting as CLOSED), BREAKER_REJECTED_RAMP with
 * the permit refused, ACQUIRE_SHADOWED (shadow mode admitted it instead), or
 * ACQUIRE_RETRY once the ramp is over (flag cleared). */
static int ramp_acquire(breaker *b, uint64_t ctl, breaker_permit *permit) {
    struct breaker__shared *s = b->shared;
    uint64_t gen = breaker__ctl_gen(ctl);
    uint64_t now = b->now_precise(b);
    uint64_t until = breaker__phase_time_ns(s, gen);
    if (now >= until) {
        /* Over: the recovery is complete. A lost CAS means another caller
         * did it, or a trip: either way, look again. */
        breaker__cas_acq_rel(&s->ctl, &ctl,
                             breaker__ctl_pack(gen, BREAKER_CLOSED, 0, 0) |
                                 (ctl & BREAKER__CTL_SHADOW));
        return ACQUIRE_RETRY;
    }
    struct breaker__stripe_ref stripe = breaker__thread_stripe(b);
    if (ramp_admits(stripe, breaker__ramp_share(&s->lim, until - now))) return BREAKER_OK;
    int rc = refuse(b, permit, ctl, BREAKER__REFUSE_RAMP);
    return rc == BREAKER_OK ? ACQUIRE_SHADOWED : rc;
}

/* A forced close given an expiry (breaker_force_closed_for(), its end in
 * phase_time for its generation) that has run out: back to CLOSED, reason
 * FORCE_EXPIRED, with an empty window, as a reset. A forced close without
 * one (ctl's low field says which: words.h) never expires, whatever
 * phase_time holds for its generation (a transition that lost the race to
 * it may have written there). @return true when it had run out (this
 * call's transition or another's): look at ctl again. */
bool breaker__forced_expired(breaker *b, uint64_t ctl) {
    struct breaker__shared *s = b->shared;
    if (!breaker__ctl_forced_timed(ctl)) return false;
    uint64_t until = breaker__phase_time_ns(s, breaker__ctl_gen(ctl));
    uint64_t now = b->now_precise(b);
    if (now < until) return false;
    struct breaker__transition t = {.expected = ctl,
                                    .to = BREAKER_CLOSED,
                                    .reason = BREAKER_REASON_FORCE_EXPIRED,
                                    .now = until < now ? until : now};
    struct breaker__window_view view;
    breaker__window_read(s, breaker__ctl_gen(ctl), now, &view);
    breaker__evidence_from_view(&view, &t.evidence);
    (void)breaker__transition(b, &t); /* lost: another caller made it, or a newer order */
    return true;
}

/* Everything but the two common cases: closed without slow-call timing, and
 * an open breaker refusing before its wait ends, for the caller of bit
 * `bit` (-1: none). Inlined into its two out-of-line entries below, so that
 * breaker_acquire()'s (a constant -1) is the code it was before callers. */
__attribute__((always_inline)) static inline int acquire_states(breaker *b, breaker_permit *permit,
                                                                int bit, uint64_t source) {
    struct breaker__shared *s = b->shared;
    for (;;) {
        uint64_t ctl = breaker__load_acquire(&s->ctl); /* pairs with breaker__transition()'s CAS */
        switch ((enum breaker_state)breaker__ctl_state(ctl)) {
        case BREAKER_FORCED_CLOSED:
            /* Its own label, so that CLOSED's admission runs no test more. */
            if (breaker__forced_expired(b, ctl)) break;
            __attribute__((fallthrough));
        case BREAKER_CLOSED: {
            if (ramping(ctl)) {
                int rc = ramp_acquire(b, ctl, permit);
                if (rc != BREAKER_OK) {
                    if (rc == ACQUIRE_RETRY) break;
                    return rc == ACQUIRE_SHADOWED ? BREAKER_OK : rc;
                }
            }
            /* The admission time is needed only to tell slow calls. */
            permit_view_of(permit)->admitted_at = timed(b) ? b->now_precise(b) : 0;
            if (b->check != NULL) permit_check_take(b, permit);
            permit_view_of(permit)->breaker_id = b->breaker_id;
            permit_set_head(permit, permit_head(b, breaker__ctl_gen(ctl), PERMIT_ADMITTED));
            struct breaker__stripe_ref stripe = breaker__thread_stripe(b);
            /* Timed calls and ramps come here on every call: a pool's thread
             * counts on its concurrency id's stripe as on the short path. */
            if (stripe.owned || b->cpu_rseq == 0 ||
                breaker__cpu_add(b, STRIPE_FIELD(admitted), 1) == NULL)
                breaker__stripe_count(stripe, &stripe.stripe->admitted);
            return BREAKER_OK;
        }
        case BREAKER_OPEN: {
            if (breaker__open_wait_left(b, breaker__phase_time_ns(s, breaker__ctl_gen(ctl)),
                                        b->now_precise(b)) > 0)
                return refuse(b, permit, ctl, BREAKER__REFUSE_OPEN);
            int rc = open_try_probe(b, ctl, permit, bit, source);
            if (rc != ACQUIRE_RETRY) return rc;
            break;
        }
        case BREAKER_HALF_OPEN: {
            int rc = half_open_acquire(b, ctl, permit, bit, source);
            if (rc != ACQUIRE_RETRY) return rc;
            break;
        }
        case BREAKER_FORCED_OPEN:
            return refuse(b, permit, ctl, BREAKER__REFUSE_FORCED);
        }
    }
}

/* breaker_acquire()'s general path: a call that names no caller. Out of
 * line, so the common cases need no stack frame. */
__attribute__((noinline)) static int acquire_slow(breaker *b, breaker_permit *permit) {
    return acquire_states(b, permit, -1, 0);
}

/* breaker_acquire_from()'s, for the caller of bit `bit`. */
__attribute__((noinline)) static int acquire_general(breaker *b, breaker_permit *permit, int bit,
                                                     uint64_t source) {
    return acquire_states(b, permit, bit, source);
}

/* OPEN: refuse until the wait ends (the common case during an outage). */
__attribute__((noinline)) static int acquire_open(breaker *b, breaker_permit *permit,
                                                  uint64_t ctl) {
    /* The deadline before the clock call, so little lives across it. On the
     * coarse clock, refuse here only while the wait is more than the clock's
     * lag bound from its end; acquire_slow decides the last stretch on the
     * precise clock (see breaker__open_wait_left). */
    uint64_t deadline = breaker__phase_time_ns(b->shared, breaker__ctl_gen(ctl));
    uint64_t now =
        b->coarse_for_open ? breaker__coarse_now() + b->coarse_lag_ns : b->now_precise(b);
    if (__builtin_expect(now < deadline, 1)) {
        struct breaker__stripe *own;
        if (__builtin_expect(breaker__owned_stripe(b, &own), 1)) {
            breaker__owned_count(&own->rejected_open);
            permit_refuse(b, permit);
            return BREAKER_REJECTED_OPEN;
        }
        if (b->cpu_rseq != 0 && breaker__cpu_add(b, STRIPE_FIELD(rejected_open), 1) != NULL) {
            permit_refuse(b, permit);
            return BREAKER_REJECTED_OPEN;
        }
        struct breaker__stripe_ref stripe = breaker__thread_stripe(b);
        breaker__stripe_count(stripe, &stripe.stripe->rejected_open);
        permit_refuse(b, permit);
        return BREAKER_REJECTED_OPEN;
    }
    return acquire_slow(b, permit);
}

/* The closed short path of a thread without an owned stripe, with per-CPU
 * stripes: the admission is counted on the stripe of the concurrency id it
 * runs on. A thread's first call takes the general path, which gives it a
 * stripe of the pool (an owned one while any is free). */
__attribute__((noinline)) static int acquire_closed_cpu(breaker *b, breaker_permit *permit,
                                                        uint64_t ctl) {
    if (__builtin_expect(breaker__tls_stripe_plus_one == 0, 0)) return acquire_slow(b, permit);
    permit_view_of(permit)->breaker_id = b->breaker_id;
    permit_set_head(permit, (ctl & PERMIT_GEN_MASK) | b->admit_tag);
    CPU_COUNT(b, admitted);
    return BREAKER_OK;
}

/* A forwarded handle's acquire: the forward's (breaker__live). */
__attribute__((noinline, cold)) static int acquire_forwarded(breaker *b, breaker_permit *permit) {
    return breaker_acquire(breaker__live(b), permit);
}

int breaker_acquire(breaker *b, breaker_permit *permit) {
    /* Acquire: pairs with breaker__transition()'s release CAS, so a new OPEN comes with
     * its deadline and a new CLOSED with its emptied window. */
    uint64_t ctl = breaker__load_acquire(b->ctl);
    struct breaker__stripe *own;
    /* The mask relaxed: it orders nothing (breaker__forward). */
    if (__builtin_expect((ctl & breaker__read(&b->admit_mask)) == 0, 1)) {
        if (__builtin_expect(breaker__owned_stripe(b, &own), 1)) {
            permit_view_of(permit)->breaker_id = b->breaker_id;
            permit_set_head(permit, (ctl & PERMIT_GEN_MASK) | b->admit_tag);
            breaker__owned_count(&own->admitted);
            return BREAKER_OK;
        }
        if (b->cpu_rseq != 0) return acquire_closed_cpu(b, permit, ctl);
    }
    /* A forwarded handle's block is abandoned: its state decides nothing.
     * Relaxed here (one load, off the closed short path); the forward is
     * read again with acquire before it is used. */
    if (__builtin_expect(atomic_load_explicit(&b->forward, memory_order_relaxed) != NULL, 0))
        return acquire_forwarded(b, permit);
    /* The raw state bits: a shadowed OPEN is no OPEN here (acquire_open
     * refuses), and goes to acquire_slow, which admits it. */
    unsigned state = breaker__ctl_state_raw(ctl);
    if (state == BREAKER_OPEN) return acquire_open(b, permit, ctl);
    return acquire_slow(b, permit);
}

/* The caller's source matters only where a probe may be admitted: a
 * closed breaker takes breaker_acquire()'s short path. (A trip and a wait
 * shorter than the nanoseconds between the two loads of ctl would admit
 * that one probe naming nobody: the careful side.) */
int breaker_acquire_from(breaker *b, breaker_permit *permit, uint64_t source) {
    uint64_t ctl = breaker__load_acquire(b->ctl); /* as breaker_acquire()'s */
    if (source == 0 || (ctl & breaker__read(&b->admit_mask)) == 0)
        return breaker_acquire(b, permit);
    if (__builtin_expect(atomic_load_explicit(&b->forward, memory_order_relaxed) != NULL, 0))
        return breaker_acquire_from(breaker__live(b), permit, source);
    return acquire_general(b, permit, caller_bit(source), source);
}

/* Free the slot a settling probe of generation `gen` holds. Fails only if
 * the generation has moved on and OPEN re-marked the slot: nothing to free. */
static void release_slot(breaker__atomic64 *slot, uint64_t settling, uint64_t gen) {
    uint64_t expect = settling;
    slot_cas(slot, &expect, breaker__slot_free_word(gen, breaker__slot_us(settling)));
}

/* Close the half-open of generation `gen` if enough probes have succeeded and
 * none is in flight (claimed or settling). Called by every completion that
 * freed its slot without failing: the last probe to settle closes. */
static void close_if_settled(breaker *b, uint64_t gen, uint64_t now) {
    struct breaker__shared *s = b->shared;
    /* Two probes settling at once each free their own slot, then look at the
     * other's: with release/acquire alone both could read the other's slot
     * as still busy (a store then a load of another word), and neither would
     * close. A seq_cst fence between the free and the scan on both sides
     * makes at least one of them see the other's slot free. */
    atomic_thread_fence(memory_order_seq_cst);
    for (;;) {
        uint64_t ctl = breaker__load_acquire(&s->ctl);
        if (breaker__ctl_gen(ctl) != gen || breaker__ctl_state(ctl) != BREAKER_HALF_OPEN) return;
        unsigned succ = breaker__ctl_succ(ctl);
        if (succ < BREAKER__LIM(&s->lim, half_open_successes)) return;
        struct breaker__slot_scan scan;
        scan_slots(s, ctl, now, &scan);
        /* A probe still out (claimed or settling) decides: its failure or
         * timeout reopens, and its own completion closes after it. */
        if (scan.next_deadline != UINT64_MAX) return;
        bool ramp = BREAKER__LIM(&s->lim, ramp_ns) != 0;
        struct breaker__transition t = {.expected = ctl,
                                        .to = BREAKER_CLOSED,
                                        .reason = BREAKER_REASON_PROBES_SUCCEEDED,
                                        .k = ramp ? breaker__ctl_k(ctl) : 0,
                                        .now = now,
                                        .ramp = ramp};
        half_open_evidence(ctl, succ, &t.evidence);
        if (breaker__transition(b, &t)) return;
    }
}

/* `took`: the call's duration when calls are timed, else NOT_TIMED. */
#define NOT_TIMED UINT64_MAX

static void record_latency(breaker *b, enum breaker_outcome outcome, uint64_t took);

static int record_probe(breaker *b, struct permit_view *pv, uint64_t head,
                        enum breaker_outcome outcome, bool cancelled, bool slow, uint64_t took,
                        uint64_t source);
static void record_probe_duration(struct breaker__shared *s, enum breaker_probe_result result,
                                  uint64_t took);

/* A probe's completion: recorded locally, then the gate (if the probe went
 * with a token) hears how it went, after the local breaker has applied it,
 * so that whatever the backend does next (the fleet's flusher sending the
 * result and closing this breaker) cannot overtake the local completion and
 * make it STALE. Never for a duplicate or a permit that is not ours. */
static int complete_probe(breaker *b, struct permit_view *pv, uint64_t head,
                          enum breaker_outcome outcome, bool cancelled, bool slow, uint64_t took,
                          uint64_t source) {
    uint64_t token = pv->gate_token;
    int rc = record_probe(b, pv, head, outcome, cancelled, slow, took, source);
    if (token != 0 && b->gate.settle != NULL && rc != BREAKER_ALREADY_SETTLED)
        b->gate.settle(b->gate.ctx, b, token, outcome);
    return rc;
}

static int record_probe(breaker *b, struct permit_view *pv, uint64_t head,
                        enum breaker_outcome outcome, bool cancelled, bool slow, uint64_t took,
                        uint64_t source) {
    struct breaker__shared *s = b->shared;
    struct breaker__stripe_ref stripe = breaker__thread_stripe(b);
    uint64_t gen = breaker__ctl_gen(head);
    uint64_t now = b->now_precise(b);
    /* The probe's duration, for every breaker (a probe always carries its
     * admission time), by the caller's outcome. */
    uint64_t probe_took = now > pv->admitted_at ? now - pv->admitted_at : 0;
    enum breaker_probe_result result = outcome == BREAKER_SUCCESS   ? BREAKER_PROBE_SUCCEEDED
                                       : outcome == BREAKER_FAILURE ? BREAKER_PROBE_FAILED
                                                                    : BREAKER_PROBE_IGNORED;

    /* A probe completing after its deadline has already failed: apply the
     * timeout first, which makes this completion stale. */
    uint64_t ctl = breaker__load_acquire(&s->ctl);
    struct breaker__slot_scan scan;
    if (breaker__ctl_gen(ctl) == gen && breaker__ctl_state(ctl) == BREAKER_HALF_OPEN)
        breaker__half_open_check_timeouts(b, &ctl, now, &scan);

    /* Claim -> SETTLING: the claim word is unique per admission, so exactly
     * one completion of this admission gets past this CAS. The slot stays in
     * flight (not claimable, its deadline still counts) until the outcome is
     * in ctl: a success that would close the breaker waits for it, and a
     * timeout scan that fires meanwhile moves the generation, which makes
     * this completion stale below. */
    breaker__atomic64 *slot = &breaker__slots(s)[pv->slot_index];
    uint64_t expect = pv->slot_value;
    uint64_t settling = pv->slot_value | BREAKER__SLOT_SETTLING;
    if (!slot_cas(slot, &expect, settling)) {
        /* Our claim is gone while our generation lasts: a copy of this
         * permit was completed first. */
        ctl = breaker__load_acquire(&s->ctl);
        if (breaker__ctl_gen(ctl) == gen) {
            breaker__count(&s->duplicates);
            return BREAKER_ALREADY_SETTLED;
        }
    }
    /* A backend that decides recovery itself (the fleet) counts its
     * probes' successes: locally such a success is IGNORED (not timed
     * either, as an IGNORED completion never is), and the local breaker
     * closes when the backend says so. */
    if (pv->gate_token != 0 && (b->gate.flags & BREAKER_GATE_DECIDES_RECOVERY) &&
        outcome == BREAKER_SUCCESS) {
        outcome = BREAKER_IGNORED;
        slow = false;
        took = NOT_TIMED;
    }
    /* Counted here, once the completion is known not to be a duplicate;
     * a stale cancellation still counts (breaker.h). */
    if (cancelled) breaker__stripe_count(stripe, &stripe.stripe->cancelled);
    if (took != NOT_TIMED) record_latency(b, outcome, took);

    bool fails =
        outcome == BREAKER_FAILURE || (slow && BREAKER__LIM(&s->lim, slow_call_rate) > 0.0);
    for (;;) {
        ctl = breaker__load_acquire(&s->ctl);
        if (breaker__ctl_gen(ctl) != gen || breaker__ctl_state(ctl) != BREAKER_HALF_OPEN) {
            breaker__stripe_count(stripe, &stripe.stripe->stale);
            record_probe_duration(s, BREAKER_PROBE_STALE, probe_took);
            return BREAKER_STALE;
        }
        if (outcome == BREAKER_IGNORED) {
            /* Neither evidence of health nor of failure: the slot goes back,
             * and if the other probes already succeeded, this was the last
             * one they waited for. */
            breaker__count_outcome(stripe, outcome, false);
            record_probe_duration(s, result, probe_took);
            release_slot(slot, settling, gen);
            close_if_settled(b, gen, now);
            return BREAKER_OK;
        }
        unsigned succ = breaker__ctl_succ(ctl);
        if (fails) {
            /* Its caller, for the next half-open ("Recovery no one caller
             * can own"): the completion's, else the admission's. The slot
             * stays SETTLING: the reopening moves the generation, and a
             * closer that looked meanwhile saw this probe in flight. */
            probe_sources_note(s, gen,
                               source != 0
                                   ? caller_bit(source)
                                   : slot_caller_bit(s, (unsigned)pv->slot_index, pv->slot_value));
            struct breaker__transition t = {.expected = ctl, .now = now};
            t.to = BREAKER_OPEN;
            t.reason = outcome == BREAKER_FAILURE ? BREAKER_REASON_PROBE_FAILED
                                                  : BREAKER_REASON_PROBE_SLOW;
            t.k = next_k(ctl);
            half_open_evidence(ctl, succ, &t.evidence);
            if (!breaker__transition(b, &t)) continue;
            breaker__count(&s->probes_failed);
        } else {
            /* Count the success in ctl first, then free the slot: a closer
             * that sees the slot free sees the success (the release CAS on
             * the slot orders them). acq_rel like a transition: the next
             * probe's completion must see it. */
            /* succ is the low field; it saturates (4095 probes may succeed
             * after 4094 others, more than its 12 bits hold). */
            uint64_t desired = succ < BREAKER__FIELD12 ? ctl + 1 : ctl;
            if (!breaker__cas_acq_rel(&s->ctl, &ctl, desired)) continue;
            breaker__count(&s->probes_succeeded);
            release_slot(slot, settling, gen);
            close_if_settled(b, gen, now);
        }
        breaker__count_outcome(stripe, outcome, slow);
        record_probe_duration(s, result, probe_took);
        return BREAKER_OK;
    }
}

static int time_window_success_cpu(breaker *b, uint64_t head, uint64_t now);
static int count_window_success_cpu(breaker *b, uint64_t head);

/* A trip complete_closed() decided, decided again on a snapshot of the
 * limits (one version of the configuration; reconfig.c): the ramp's share
 * of min_calls and the trip condition. Off the call path: only a failure
 * that is about to trip comes here. @return whether it still trips, with
 * `*reason` (the snapshot's). */
__attribute__((noinline)) static bool trip_on_one_version(const struct breaker__shared *s,
                                                          uint64_t ctl, uint64_t gen,
                                                          uint64_t precise_now,
                                                          const struct breaker__window_view *view,
                                                          enum breaker_reason *reason) {
    struct breaker__limits lim;
    breaker__limits_snapshot(s, &lim);
    uint32_t min_calls = lim.min_calls;
    if (ramping(ctl) && precise_now != 0) {
        uint64_t until = breaker__phase_time_ns(s, gen);
        double share = precise_now < until ? breaker__ramp_share(&lim, until - precise_now) : 1.0;
        double scaled = ceil((double)min_calls * share);
        min_calls = scaled < 1.0 ? 1u : (uint32_t)scaled;
    }
    return breaker__window_should_trip(&lim, min_calls, view, reason);
}

static int complete_closed(breaker *b, uint64_t head, enum breaker_outcome outcome, uint64_t now,
                           bool slow, uint64_t source) {
    uint64_t gen = breaker__ctl_gen(head);
    struct breaker__shared *s = b->shared;
    /* Acquire: pairs with the CAS of a transition into CLOSED, so this
     * thread's window update lands after that transition's window reset. */
    uint64_t ctl = breaker__load_acquire(&s->ctl);
    if (breaker__ctl_gen(ctl) != gen) {
        /* A shadow permit's generation is 0, never ctl's. */
        if (head & PERMIT_SHADOW) return shadow_settle(b, outcome);
        struct breaker__stripe_ref stripe = breaker__thread_stripe(b);
        breaker__stripe_count(stripe, &stripe.stripe->stale);
        return BREAKER_STALE;
    }
    if (outcome == BREAKER_IGNORED) {
        breaker__count_outcome(breaker__thread_stripe(b), outcome, false);
        return BREAKER_OK;
    }
    bool failure = outcome == BREAKER_FAILURE;

    /* `now` is the precise clock when calls are timed, else 0. The window
     * may place a call by the coarse clock; a transition is stamped with the
     * precise one (its time, the open deadline and state_since_ns are
     * promises, and transitions are rare). */
    uint64_t precise_now = now;
    if (s->lim.trip == BREAKER_TRIP_TIME_WINDOW && now == 0)
        now = b->coarse_for_window ? b->now_coarse(b) : b->now_precise(b);
    struct breaker__window_view view;
    /* A thread without an owned stripe records a window policy's outcomes on
     * its concurrency id's stripe, like its untimed successes: a window read
     * sums the stripes one after the other, and stripes holding different
     * mixes of outcomes would let a read torn by a preemption skew the
     * rate. A success that is not slow (a timed call's) takes the same
     * sequences as an untimed one; anything else holds the stripe for the
     * writes only (window_record gives it back before reading the window).
     * The consecutive policy's evidence is the run word: nothing to hold. */
    struct breaker__stripe_ref stripe = breaker__thread_stripe(b);
    struct breaker__stripe *held = NULL;
    if (!stripe.owned && b->cpu_rseq != 0 && s->lim.trip != BREAKER_TRIP_CONSECUTIVE) {
        if (outcome == BREAKER_SUCCESS && !slow)
            return s->lim.trip == BREAKER_TRIP_TIME_WINDOW ? time_window_success_cpu(b, head, now)
                                                           : count_window_success_cpu(b, head);
        if ((held = breaker__cpu_stripe_take(b)) != NULL) stripe = breaker__cpu_stripe_ref(b, held);
    }
    breaker__count_outcome(stripe, outcome, slow);
    if (!breaker__window_record(s, stripe, held, gen, now, failure, slow, source, &view))
        return BREAKER_OK;
    for (;;) {
        if (breaker__ctl_state(ctl) != BREAKER_CLOSED) return BREAKER_OK; /* forced closed */
        struct breaker__transition t = {.expected = ctl, .to = BREAKER_OPEN, .k = 0};
        uint32_t min_calls = BREAKER__LIM(&s->lim, min_calls);
        if (ramping(ctl)) {
            /* The ramp's share of the volume is evidence enough, and a trip
             * now is one more failed recovery (see "Ramp after recovery"). */
            if (precise_now == 0) precise_now = b->now_precise(b);
            uint64_t until = breaker__phase_time_ns(s, gen);
            double share =
                precise_now < until ? breaker__ramp_share(&s->lim, until - precise_now) : 1.0;
            double scaled = ceil((double)min_calls * share);
            min_calls = scaled < 1.0 ? 1u : (uint32_t)scaled;
            t.k = next_k(ctl);
        }
        if (!breaker__window_should_trip(&s->lim, min_calls, &view, &t.reason)) return BREAKER_OK;
        if (s->lim.trip != BREAKER_TRIP_CONSECUTIVE) {
            breaker__window_confirm(s, gen, now, &view);
            if (!breaker__window_should_trip(&s->lim, min_calls, &view, &t.reason))
                return BREAKER_OK;
        }
        /* Decided on one version of the limits: the fields above were read
         * one by one, and a live change may have come between them. */
        if (!trip_on_one_version(s, ctl, gen, precise_now, &view, &t.reason)) return BREAKER_OK;
        t.now = precise_now != 0 ? precise_now : b->now_precise(b);
        breaker__evidence_from_view(&view, &t.evidence);
        /* Many threads may cross the threshold at once: the CAS in
         * breaker__transition() lets exactly one of them open the breaker; the
         * others' CAS fails and their outcome simply stays recorded. */
        if (breaker__transition(b, &t)) return BREAKER_OK;
        /* Lost: to a transition (done), or to the end of a ramp, which
         * changes ctl within the generation: then decide again. */
        ctl = breaker__load_acquire(&s->ctl);
        if (breaker__ctl_gen(ctl) != gen) return BREAKER_OK;
    }
}

/* ---- Call durations (timed breakers) ------------------------------------------*/

/* Count one duration on the calling thread's stripe (its histogram run has
 * the same owner as the stripe: plain stores when owned). */
static void record_latency(breaker *b, enum breaker_outcome outcome, uint64_t took) {
    if (outcome != BREAKER_SUCCESS && outcome != BREAKER_FAILURE) return;
    struct breaker__stripe_ref stripe = breaker__thread_stripe(b);
    struct breaker__latency_run *run = &breaker__latency_runs(b->shared)[stripe.index];
    unsigned i = 0;
    while (took > breaker__latency_upper_ns[i])
        i++; /* the last bound is UINT64_MAX */
    bool ok = outcome == BREAKER_SUCCESS;
    breaker__stripe_count(stripe, ok ? &run->success[i] : &run->failure[i]);
    breaker__atomic64 *sum = ok ? &run->success_sum_ns : &run->failure_sum_ns;
    if (stripe.owned)
        breaker__write(sum, breaker__read(sum) + took);
    else
        atomic_fetch_add_explicit(sum, took, memory_order_relaxed);
}

/* Count one probe duration. Relaxed adds on shared counters: probes are few,
 * and an exporter's read orders nothing. */
static void record_probe_duration(struct breaker__shared *s, enum breaker_probe_result result,
                                  uint64_t took) {
    unsigned i = 0;
    while (took > breaker__latency_upper_ns[i])
        i++;
    atomic_fetch_add_explicit(&s->probe_hist[result][i], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->probe_sum_ns[result], took, memory_order_relaxed);
}

/* Everything but the common case (see breaker_complete), after settling. */
__attribute__((noinline)) static int complete_slow(breaker *b, struct permit_view *pv,
                                                   uint64_t head, bool was_settled,
                                                   enum breaker_outcome outcome, uint64_t source) {
    struct breaker__shared *s = b->shared;
    if (was_settled) {
        breaker__count(&s->duplicates);
        return BREAKER_ALREADY_SETTLED;
    }
    /* A corrupted permit must not make the library write out of bounds. */
    if ((head & PERMIT_PROBE) && pv->slot_index >= s->lim.half_open_max_probes)
        return BREAKER_EINVAL;
    if (!(head & PERMIT_PROBE) && b->check != NULL && !permit_check_settle(b, pv)) {
        breaker__count(&s->duplicates);
        return BREAKER_ALREADY_SETTLED;
    }
    bool cancelled = outcome == BREAKER_CANCELLED;
    if (cancelled) outcome = (enum breaker_outcome)BREAKER__LIM(&s->lim, cancelled_as);
    uint64_t now = 0;
    bool slow = false;
    uint64_t took = NOT_TIMED;
    if (timed(b) && outcome != BREAKER_IGNORED) {
        now = b->now_precise(b);
        took = now > pv->admitted_at ? now - pv->admitted_at : 0;
        slow = took > BREAKER__LIM(&s->lim, slow_call_ns);
    }
    /* A probe's duration is recorded once it is known not to be a duplicate
     * completion (complete_probe); a closed call's permit was settled above,
     * so it is not one. */
    if (head & PERMIT_PROBE)
        return complete_probe(b, pv, head, outcome, cancelled, slow, took, source);
    if (took != NOT_TIMED) record_latency(b, outcome, took);
    struct breaker__stripe_ref stripe = breaker__thread_stripe(b);
    if (cancelled && !(head & PERMIT_SHADOW))
        breaker__stripe_count(stripe, &stripe.stripe->cancelled);
    return complete_closed(b, head, outcome, now, slow, source);
}

/* A closed-state success under the time-window policy, the general way:
 * assign a stripe if needed, find (and recycle) the bucket by division. */
static int time_window_success_on(breaker *b, uint64_t head, uint64_t now,
                                  struct breaker__stripe_ref stripe, struct breaker__stripe *held) {
    breaker__count_outcome(stripe, BREAKER_SUCCESS, false);
    struct breaker__window_view unused; /* a success never evaluates the trip */
    (void)breaker__window_record(b->shared, stripe, held, breaker__ctl_gen(head), now, false, false,
                                 0, &unused);
    return BREAKER_OK;
}

__attribute__((noinline)) static int time_window_success_slow(breaker *b, uint64_t head,
                                                              uint64_t now) {
    return time_window_success_on(b, head, now, breaker__thread_stripe(b), NULL);
}

/* Count a success on stripe `own`, which the thread owns or holds, when the
 * stripe's hinted bucket is current (every call but the first of each
 * bucket). @return false, having written nothing, when it is not. */
static inline bool time_window_success_hinted(const breaker *b, uint64_t head, uint64_t now,
                                              struct breaker__stripe *own) {
    /* No clamp: a coarse clock still behind the epoch wraps, the range check
     * below fails, and the slow variant clamps. */
    uint64_t rel = now - b->epoch_ns;
    uint64_t start = breaker__read(&own->hint_start);
    if (__builtin_expect(start == 0 || rel - (start - 1) >= b->bucket_ns, 0)) return false;
    struct breaker__bucket *bk =
        (struct breaker__bucket *)(void *)(b->buckets + breaker__read(&own->hint_offset));
    uint64_t want = ((head >> BREAKER__GEN_SHIFT) << BREAKER__STAMP_EPOCH_BITS) |
                    breaker__read(&own->hint_epoch1);
    if (__builtin_expect(breaker__read(&bk->stamp) != want, 0)) return false;
    breaker__owned_count(&own->successes);
    breaker__owned_count(&bk->calls);
    return true;
}

/* A time-window success for a thread without an owned stripe, with per-CPU
 * stripes: one sequence adds the call to the hinted bucket of its
 * concurrency id's stripe, one more counts the success. The first call of a
 * bucket on that id takes the stripe and moves its hint the general way. */
__attribute__((noinline)) static int time_window_success_cpu(breaker *b, uint64_t head,
                                                             uint64_t now) {
    uint64_t gen_part = (head >> BREAKER__GEN_SHIFT) << BREAKER__STAMP_EPOCH_BITS;
    if (__builtin_expect(breaker__cpu_bucket_call(b, now - b->epoch_ns, gen_part) != NULL, 1)) {
        CPU_COUNT(b, successes);
        return BREAKER_OK;
    }
    struct breaker__stripe *st = breaker__cpu_stripe_try(b);
    if (st == NULL) return time_window_success_slow(b, head, now);
    (void)time_window_success_on(b, head, now, breaker__cpu_stripe_ref(b, st), st); /* gives st */
    return BREAKER_OK;
}

/* A closed-state success under the time window, for a thread that owns its
 * stripe. It calls nothing but the clock, and hands anything else to the
 * other variants, so it needs almost no stack frame. */
__attribute__((noinline)) static int time_window_success(breaker *b, uint64_t head) {
    uint64_t now = b->coarse_for_window ? breaker__coarse_now() : b->now_precise(b);
    struct breaker__stripe *own;
    if (__builtin_expect(!breaker__owned_stripe(b, &own), 0))
        return b->cpu_rseq != 0 ? time_window_success_cpu(b, head, now)
                                : time_window_success_slow(b, head, now);
    if (__builtin_expect(!time_window_success_hinted(b, head, now, own), 0))
        return time_window_success_slow(b, head, now);
    return BREAKER_OK;
}

/* A closed-state success under the count window, the general way: assign a
 * stripe if needed, reserve a chunk when the stripe's is full. */
static int count_window_success_on(breaker *b, uint64_t head, struct breaker__stripe_ref stripe) {
    breaker__count_outcome(stripe, BREAKER_SUCCESS, false);
    struct breaker__window_view unused; /* a success never evaluates the trip */
    (void)breaker__window_record(b->shared, stripe, NULL, breaker__ctl_gen(head), 0, false, false,
                                 0, &unused);
    return BREAKER_OK;
}

__attribute__((noinline)) static int count_window_success_slow(breaker *b, uint64_t head) {
    return count_window_success_on(b, head, breaker__thread_stripe(b));
}

/* Count a success on stripe `own`, which the thread owns or holds, when its
 * chunk has room, which is all calls but one in K: the next slot of the
 * chunk (the stripe's own line pair), one exchange, and the stripe's share of
 * the ring only when the slot held something other than a success. @return
 * false, having written nothing, when the chunk is full. */
static inline bool count_window_success_chunk(const breaker *b, struct breaker__stripe *own) {
    uint64_t w = breaker__read(&own->ring_chunk);
    uint64_t c = (w >> 32) - 1; /* no chunk: wraps, and fails the test below */
    uint32_t used = (uint32_t)w;
    if (__builtin_expect(c >= b->ring_chunks ||
                             used >=
                                 (c + 1 == b->ring_chunks ? b->ring_last_len : b->ring_chunk_slots),
                         0))
        return false;
    breaker__write(&own->ring_chunk, w + 1);
    breaker__atomic8 *slot = b->ring + c * BREAKER__RING_CHUNK_BYTES + used;
    /* An exchange, not a store: a slot may meet another writer after a
     * reset, and each write must retire exactly what it replaced. */
    uint8_t old =
        atomic_exchange_explicit(slot, (uint8_t)BREAKER__RING_RECORDED, memory_order_relaxed);
    if (__builtin_expect(old != BREAKER__RING_RECORDED, 0))
        breaker__write(&own->ring_part, breaker__read(&own->ring_part) +
                                            breaker__ring_delta(old, BREAKER__RING_RECORDED));
    breaker__owned_count(&own->successes);
    return true;
}

/* A count-window success for a thread without an owned stripe, with per-CPU
 * stripes: one sequence takes the next slot of its concurrency id's chunk;
 * when that chunk is full, the thread reserves the next chunk, takes its
 * first slot, and installs it as the id's chunk with another sequence (if
 * the id's chunk word changed meanwhile, or the thread moved to another id,
 * the rest of the reserved chunk stays unwritten this pass, as when two
 * shared-stripe threads race for a chunk). The slot is written like an
 * owner writes it; the share and the success are counted by sequences of
 * their own (a share may land on any stripe: the window is their sum). No
 * stripe is ever held, so a preempted thread leaves nothing locked. */
__attribute__((noinline)) static int count_window_success_cpu(breaker *b, uint64_t head) {
    uint64_t w;
    struct breaker__stripe *st = breaker__cpu_ring_slot(b, &w);
    if (__builtin_expect(st == NULL, 0)) return count_window_success_slow(b, head);
    if (__builtin_expect(st == BREAKER__CPU_CHUNK_FULL, 0)) {
        uint64_t want = breaker__ring_reserve(b->shared);
        (void)breaker__cpu_ring_install(b, w, want);
        w = want - 1;
    }
    breaker__atomic8 *slot = b->ring + ((w >> 32) - 1) * BREAKER__RING_CHUNK_BYTES + (uint32_t)w;
    uint8_t old =
        atomic_exchange_explicit(slot, (uint8_t)BREAKER__RING_RECORDED, memory_order_relaxed);
    if (__builtin_expect(old != BREAKER__RING_RECORDED, 0)) {
        uint64_t delta = breaker__ring_delta(old, BREAKER__RING_RECORDED);
        if (breaker__cpu_add(b, STRIPE_FIELD(ring_part), delta) == NULL)
            breaker__ring_share_add(breaker__thread_stripe(b), delta);
    }
    CPU_COUNT(b, successes);
    return BREAKER_OK;
}

/* A closed-state success under the count window. */
__attribute__((noinline)) static int count_window_success(breaker *b, uint64_t head) {
    struct breaker__stripe *own;
    if (__builtin_expect(!breaker__owned_stripe(b, &own), 0))
        return b->cpu_rseq != 0 ? count_window_success_cpu(b, head)
                                : count_window_success_slow(b, head);
    if (__builtin_expect(!count_window_success_chunk(b, own), 0))
        return count_window_success_slow(b, head);
    return BREAKER_OK;
}

static int complete_foreign_from(breaker *b, breaker_permit *permit, enum breaker_outcome outcome,
                                 uint64_t source);

/* Every completion but the closed success's short path. A permit that is not
 * this handle's comes here too, so that the short path's test of it costs
 * no more than before there were forwards (breaker_complete()): it goes on
 * to the forward, if any. */
__attribute__((noinline)) static int complete_general(breaker *b, struct permit_view *pv,
                                                      enum breaker_outcome outcome, uint64_t head,
                                                      uint64_t source) {
    if (__builtin_expect((head & (PERMIT_TAG_MASK | PERMIT_ADMITTED)) != b->admit_tag ||
                             pv->breaker_id != b->breaker_id,
                         0))
        return complete_foreign_from(b, (breaker_permit *)(void *)pv, outcome, source);
    if ((unsigned)outcome > (unsigned)BREAKER_CANCELLED) return BREAKER_EINVAL;
    bool was_settled =
        atomic_fetch_or_explicit(&pv->head, PERMIT_SETTLED, memory_order_relaxed) & PERMIT_SETTLED;
    return complete_slow(b, pv, head, was_settled, outcome, source);
}

/* A closed-state success under the consecutive policy for a thread without
 * an owned stripe, with per-CPU stripes: counted on its concurrency id's
 * stripe, or the general way. */
__attribute__((noinline)) static int consecutive_success_cpu(breaker *b, struct permit_view *pv,
                                                             uint64_t head) {
    if (breaker__cpu_add(b, STRIPE_FIELD(successes), 1) == NULL)
        return complete_slow(b, pv, head, false, BREAKER_SUCCESS, 0);
    breaker__consecutive_success(b->consecutive);
    return BREAKER_OK;
}

/* A permit that is not `b`'s: its forward's, if `b` is forwarded (a permit
 * the forward gave out through `b`), else none of this breaker's. */
__attribute__((noinline, cold)) static int complete_foreign_from(breaker *b, breaker_permit *permit,
                                                                 enum breaker_outcome outcome,
                                                                 uint64_t source) {
    /* The newest handle first (the permits a forwarded handle gives out
     * now), then the older links of the chain, for a permit given before a
     * later move. A match completes there and never comes back here. */
    struct permit_view *pv = permit_view_of(permit);
    uint64_t head = atomic_load_explicit(&pv->head, memory_order_relaxed);
    uint64_t tag = head & (PERMIT_TAG_MASK | PERMIT_ADMITTED);
    /* A shadow permit: `b`'s own (given before any move), or a forward's. */
    bool shadow = (head & PERMIT_SHADOW) != 0;
    if (shadow && tag == b->admit_tag && pv->breaker_id == (b->breaker_id ^ SHADOW_ID))
        return shadow_complete(b, pv, outcome);
    breaker *live = breaker__live(b);
    for (breaker *l = live; l != NULL;) {
        if (l != b && tag == l->admit_tag && pv->breaker_id == l->breaker_id)
            return breaker_complete_from(l, permit, outcome, source);
        if (l != b && shadow && tag == l->admit_tag &&
            pv->breaker_id == (l->breaker_id ^ SHADOW_ID))
            return shadow_complete(l, pv, outcome);
        l = l == live ? atomic_load_explicit(&b->forward, memory_order_acquire)
                      : atomic_load_explicit(&l->forward, memory_order_acquire);
        if (l == live) l = NULL; /* the chain's end, tried first */
    }
    return BREAKER_EINVAL;
}

int breaker_complete(breaker *b, breaker_permit *permit, enum breaker_outcome outcome) {
    struct permit_view *pv = permit_view_of(permit);
    uint64_t head = atomic_load_explicit(&pv->head, memory_order_relaxed);
    unsigned fast = b->fast_success; /* read before the atomic, once */
    if ((head & (PERMIT_TAG_MASK | PERMIT_ADMITTED)) != b->admit_tag ||
        pv->breaker_id != b->breaker_id)
        return complete_general(b, pv, outcome, head, 0); /* not ours: a forward's, or none */
    if (__builtin_expect(outcome != BREAKER_SUCCESS || (head & PERMIT_PROBE) || fast == 0, 0))
        return complete_general(b, pv, outcome, head, 0);
    if (__builtin_expect(atomic_fetch_or_explicit(&pv->head, PERMIT_SETTLED, memory_order_relaxed) &
                             PERMIT_SETTLED,
                         0))
        return complete_slow(b, pv, head, true, outcome, 0);
    /* Acquire: pairs with the CAS of a transition into CLOSED. */
    uint64_t ctl = breaker__load_acquire(b->ctl);
    if (__builtin_expect(((ctl ^ head) & PERMIT_GEN_MASK) != 0, 0))
        return complete_slow(b, pv, head, false, outcome, 0);
    if (fast != BREAKER_TRIP_CONSECUTIVE + 1)
        return fast == BREAKER_TRIP_TIME_WINDOW + 1 ? time_window_success(b, head)
                                                    : count_window_success(b, head);
    struct breaker__stripe *own;
    if (__builtin_expect(!breaker__owned_stripe(b, &own), 0))
        return b->cpu_rseq != 0 ? consecutive_success_cpu(b, pv, head)
                                : complete_slow(b, pv, head, false, outcome, 0);
    breaker__owned_count(&own->successes);
    breaker__consecutive_success(b->consecutive);
    return BREAKER_OK;
}

/* The source only matters to a failure's window record: a success takes
 * breaker_complete()'s short path unchanged. */
int breaker_complete_from(breaker *b, breaker_permit *permit, enum breaker_outcome outcome,
                          uint64_t source) {
    if (outcome == BREAKER_SUCCESS || source == 0) return breaker_complete(b, permit, outcome);
    struct permit_view *pv = permit_view_of(permit);
    uint64_t head = atomic_load_explicit(&pv->head, memory_order_relaxed);
    return complete_general(b, pv, outcome, head, source); /* also tests the permit */
}

uint64_t breaker_permit_gate_token(const breaker_permit *permit) {
    return breaker_permit_is_probe(permit)
               ? ((const struct permit_view *)(const void *)permit)->gate_token
               : 0;
}

int breaker_permit_is_probe(const breaker_permit *permit) {
    uint64_t head = atomic_load_explicit(&((const struct permit_view *)(const void *)permit)->head,
                                         memory_order_relaxed);
    return (head & (PERMIT_ADMITTED | PERMIT_PROBE)) == (PERMIT_ADMITTED | PERMIT_PROBE);
}

/* Relaxed: the permit reached this thread through the caller's own
 * synchronisation, as for a completion; the head is written whole by every
 * acquire (admitted, refused or shadow), so an old shadow permit's bits do
 * not survive its reuse. */
enum breaker_refusal breaker_permit_would_reject(const breaker_permit *permit) {
    uint64_t head = atomic_load_explicit(&((const struct permit_view *)(const void *)permit)->head,
                                         memory_order_relaxed);
    if ((head & (PERMIT_ADMITTED | PERMIT_SHADOW)) != (PERMIT_ADMITTED | PERMIT_SHADOW))
        return BREAKER_REFUSAL_NONE;
    _Static_assert(BREAKER__REFUSE_OPEN + 1 == BREAKER_REFUSAL_OPEN &&
                       BREAKER__REFUSE_HALF_OPEN + 1 == BREAKER_REFUSAL_HALF_OPEN &&
                       BREAKER__REFUSE_FORCED + 1 == BREAKER_REFUSAL_FORCED &&
                       BREAKER__REFUSE_RAMP + 1 == BREAKER_REFUSAL_RAMP,
                   "the public refusals are the internal ones, plus NONE");
    return (enum breaker_refusal)(
        ((head & BREAKER__PERMIT_REFUSAL_MASK) >> BREAKER__PERMIT_REFUSAL_SHIFT) + 1);
}
