/* SPDX-License-Identifier: MIT */
/*
 * window.c - the evidence a closed breaker keeps: a run of consecutive
 * failures, the last N calls (count window), or the last T of time in buckets
 * (time window).
 *
 * Precision under concurrency. The trip decision is a statistical one, so the
 * windows favour a cheap, scalable hot path over a perfectly consistent cut:
 * counts are read field by field, and a call that lands exactly while its
 * bucket is being recycled may be counted in the neighbouring period or not at
 * all. The cumulative statistics (stats.c) are separate counters and stay
 * exact. With one thread, every window is exact, which the differential test
 * relies on.
 *
 * When the trip condition is evaluated. Only a recorded failure or slow call
 * evaluates it: a success can lower a failure rate but never raise it, so the
 * only thing a success could do is bring the window up to min_calls, and we
 * choose that a success is never the event that opens a breaker (as
 * gobreaker does). This keeps the success path free of window sums.
 */
#include "core/internal.h"

#include <math.h>
#include <string.h>

/* ---- Count window: chunks ---------------------------------------------------
 * The window is a ring of window_size one-byte slots, one per recorded call,
 * cut into chunks of K slots (K = window_size / 4, between 1 and 64), each
 * chunk on a cache line pair of its own. A thread reserves a whole chunk at a time
 * (one fetch_add on ring_next, the only shared write, once every K calls) and
 * fills it from its stripe; the slot write is an exchange, so a slot that two
 * writers meet (after a reset, or a chunk two shared-stripe threads raced
 * for) is still counted exactly once. Each stripe keeps its share of the
 * ring's content (ring_part: what it added minus what it overwrote, packed as
 * below), and the window is the sum of the shares: exact, whoever wrote what.
 *
 * What it counts. With one thread, or with calls that take turns on one
 * stripe, slots are written in ring order and the window is exactly the last
 * window_size calls (a thread that owns its stripe; a thread on per-CPU
 * stripes writes the chunk of whichever concurrency id it runs on, so it is
 * in order chunk by chunk only). With several threads it holds window_size
 * recorded calls
 * but not always the last ones: a stripe that goes quiet with a partly filled
 * chunk leaves the chunk's unwritten slots holding calls of an earlier pass
 * until a later pass fills them, so a call's age has no fixed bound in calls
 * (docs/performance.md). The volume is always exactly window_size once full,
 * so min_calls and the rate's denominator are never inflated.
 * Reading it: see ring_scan() and breaker__window_confirm().
 * The chunk size is what scaling needs: reserving a chunk is the one write
 * to a shared line, and on the development machine two threads sharing one
 * breaker delivered 0.25x one thread's throughput reserving per call (the
 * exact global order), 1.14x with K = window_size / 16, 1.4-1.5x with / 8
 * and 1.83-1.89x with / 4.
 *
 * Packed shares: calls | failures << 21 | slow << 42 in one word, changed by
 * adding a signed delta. A stripe's share may be negative (it overwrote more
 * than it wrote), so fields are decoded as signed 21-bit values with carries,
 * which is exact whenever every true sum is within +-2^20. */
#define FIELD_BITS BREAKER__RING_FIELD_BITS
#define FIELD_MASK ((UINT64_C(1) << FIELD_BITS) - 1)

static int64_t field_signed(uint64_t raw) {
    int64_t v = (int64_t)(raw & FIELD_MASK);
    return v >= (INT64_C(1) << (FIELD_BITS - 1)) ? v - (INT64_C(1) << FIELD_BITS) : v;
}

/* Decode a sum of shares into *v. @return whether it is a window that can
 * exist (0 <= failures, slow <= calls <= window_size): a sum read while
 * other threads record mixes older and newer shares, and since a stripe's
 * share wanders without bound (it keeps what it overwrote of others), such a
 * torn sum can be anything; see ring_scan(). */
static bool agg_decode(uint64_t w, uint32_t window_size, struct breaker__window_view *v) {
    int64_t f[3];
    uint64_t rest = w;
    for (int i = 0; i < 3; i++) {
        f[i] = field_signed(rest);
        rest = (rest - (uint64_t)f[i]) >> FIELD_BITS;
    }
    v->calls = f[0] > 0 ? (uint64_t)f[0] : 0;
    v->failures = f[1] > 0 ? (uint64_t)f[1] : 0;
    v->slow = f[2] > 0 ? (uint64_t)f[2] : 0;
    return f[0] >= 0 && f[1] >= 0 && f[2] >= 0 && f[0] <= (int64_t)window_size && f[1] <= f[0] &&
           f[2] <= f[0];
}

static breaker__atomic8 *ring_slot(const struct breaker__shared *s, uint32_t c, uint32_t i) {
    return &breaker__ring(s)[(size_t)c * BREAKER__RING_CHUNK_BYTES + i];
}

/* The ring's content: the sum of the stripes' shares. */
static uint64_t ring_total(const struct breaker__shared *s) {
    const struct breaker__stripe *stripes = breaker__stripes(s);
    uint64_t total = 0;
    for (unsigned i = 0; i < BREAKER__STRIPES; i++)
        total += breaker__read(&stripes[i].ring_part);
    return total;
}

/* The window read from the ring's slots themselves: O(window_size) loads,
 * so only where a decision rests on it (a trip, and a torn sum). Every slot
 * read is a call the window really held, so the result is always a window
 * that can exist (failures and slow calls within calls, calls within
 * window_size), and a scan racing recorders is off only by the slots written
 * while it ran: the same precision as the time window's bucket reads. */
static void ring_scan(const struct breaker__shared *s, struct breaker__window_view *v) {
    uint32_t n = s->lim.window_size, chunks = breaker__chunk_count(n);
    uint64_t calls = 0, failures = 0, slow = 0;
    for (uint32_t c = 0; c < chunks; c++) {
        const breaker__atomic8 *slot = ring_slot(s, c, 0);
        for (uint32_t i = 0; i < breaker__chunk_length(n, c); i++) {
            uint8_t x = atomic_load_explicit(&slot[i], memory_order_relaxed);
            if (!(x & BREAKER__RING_RECORDED)) continue;
            calls++;
            failures += (x & BREAKER__RING_FAILURE) != 0;
            slow += (x & BREAKER__RING_SLOW) != 0;
        }
    }
    v->calls = calls;
    v->failures = failures;
    v->slow = slow;
}

/* Reserve the next chunk: the stripe's chunk word with its first slot
 * taken. Relaxed: ring_next only spreads writers over the ring; the slot
 * exchange counts. */
static uint64_t ring_next_chunk(struct breaker__shared *s, uint32_t chunks) {
    uint64_t c = atomic_fetch_add_explicit(&s->ring_next, 1, memory_order_relaxed) % chunks;
    return ((c + 1) << 32) | 1;
}

/* The slot for the calling thread's next call: the next one of its stripe's
 * chunk, or the first of a newly reserved chunk. *pass_start: this call
 * reserved chunk 0 (a new pass of the ring begins). */
static breaker__atomic8 *ring_take_slot(struct breaker__shared *s,
                                        struct breaker__stripe_ref stripe, bool *pass_start) {
    uint32_t n = s->lim.window_size, chunks = breaker__chunk_count(n);
    breaker__atomic64 *word = &stripe.stripe->ring_chunk;
    *pass_start = false;
    for (;;) {
        /* Owned: the only writer, plain load now and store below. Shared:
         * fetch_add claims a position among the stripe's threads. */
        uint64_t w = stripe.owned ? breaker__read(word)
                                  : atomic_fetch_add_explicit(word, 1, memory_order_relaxed);
        uint64_t c1 = w >> 32;
        uint32_t used = (uint32_t)w;
        if (c1 != 0 && c1 <= chunks && used < breaker__chunk_length(n, (uint32_t)(c1 - 1))) {
            if (stripe.owned) breaker__write(word, w + 1);
            return ring_slot(s, (uint32_t)(c1 - 1), used);
        }
        /* The chunk is full (or there is none, or the word is garbage from a
         * faulty process): reserve the next one. */
        uint64_t want = ring_next_chunk(s, chunks);
        uint64_t c = (want >> 32) - 1;
        if (stripe.owned) {
            breaker__write(word, want);
        } else {
            /* Another thread of the stripe may have installed a chunk since
             * our fetch_add: then use theirs (ours stays unwritten this
             * pass, one of the stale chunks the bound above allows). */
            uint64_t expect = w + 1;
            if (!breaker__cas_relaxed(word, &expect, want)) continue;
        }
        *pass_start = c == 0;
        return ring_slot(s, (uint32_t)c, 0);
    }
}

/* Whether the map is kept: min_failing_sources 0 (the default, for windows
 * whose failures name sources) or 2..64. */
static bool sources_on(const struct breaker__limits *lim) {
    return BREAKER__LIM(lim, source_bits_needed) != 0;
}

static void sources_enter(struct breaker__shared *s, uint64_t period);

uint64_t breaker__ring_reserve(struct breaker__shared *s) {
    uint64_t want = ring_next_chunk(s, breaker__chunk_count(s->lim.window_size));
    /* Each pass of the ring is a failing-source period (window_record). */
    if (want >> 32 == 1 && sources_on(&s->lim)) sources_enter(s, breaker__read(&s->src_period) + 1);
    return want;
}

/* Record one call in the count window. @return whether it started a pass
 * of the ring (the failing-source period). */
static bool count_write(struct breaker__shared *s, struct breaker__stripe_ref stripe, bool failure,
                        bool slow) {
    uint8_t v = (uint8_t)(BREAKER__RING_RECORDED | (failure ? BREAKER__RING_FAILURE : 0) |
                          (slow ? BREAKER__RING_SLOW : 0));
    bool pass_start;
    breaker__atomic8 *slot = ring_take_slot(s, stripe, &pass_start);
    uint8_t old = atomic_exchange_explicit(slot, v, memory_order_relaxed);
    breaker__ring_share_add(stripe, breaker__ring_delta(old, v));
    return pass_start;
}

/* The count window now, for a failure or slow call (a success never trips).
 * A torn sum that cannot be a window is not evidence of anything: read the
 * slots. A plausible one may still be torn; a trip is confirmed on the slots
 * before it happens (breaker__window_confirm). */
static void count_read(const struct breaker__shared *s, struct breaker__window_view *view) {
    if (!agg_decode(ring_total(s), s->lim.window_size, view)) ring_scan(s, view);
}

/* ---- Time window ----------------------------------------------------------
 * Bucket e covers [epoch + e*width, epoch + (e+1)*width). Each stripe keeps
 * its own ring of `buckets` slots; slot e % buckets holds bucket e, stamped
 * with the closed generation it belongs to and e + 1. The window at bucket E
 * of generation G is every stripe's slots stamped G with an epoch in
 * (E - buckets, E], so old buckets drop out however long the breaker idled,
 * and a breaker that closes again starts empty without anyone clearing other
 * threads' lines. Owned stripes are written only by their thread; shared
 * stripes recycle a slot by CAS on its stamp (a call racing the recycling may
 * be lost from the window: the cumulative counters are separate and exact). */
static uint64_t bucket_epoch(const struct breaker__shared *s, uint64_t now) {
    uint64_t rel = now > s->epoch_ns ? now - s->epoch_ns : 0;
    return rel / s->lim.bucket_ns;
}

static struct breaker__bucket *bucket_locate(const struct breaker__shared *s,
                                             struct breaker__stripe_ref stripe, uint64_t now,
                                             uint64_t *epoch) {
    uint64_t e = bucket_epoch(s, now);
    unsigned slot = (unsigned)(e % s->lim.window_buckets);
    /* Relaxed stores, start last: only the owner of a stripe reads the hint
     * back, on its short path, and checks it before use. Shared stripes
     * always come here and leave the line alone. */
    if (stripe.owned) {
        breaker__write(&stripe.stripe->hint_offset,
                       stripe.index * s->bucket_stride + slot * sizeof(struct breaker__bucket));
        breaker__write(&stripe.stripe->hint_epoch1, (e + 1) & BREAKER__STAMP_EPOCH_MASK);
        breaker__write(&stripe.stripe->hint_start, e * s->lim.bucket_ns + 1);
    }
    *epoch = e;
    return &breaker__buckets_of(s, stripe.index)[slot];
}

/* A stamp no bucket ever has (its epoch field would be 2^40 - 1 with every
 * generation bit set): a shared-stripe bucket being emptied. Readers skip it
 * (it is above every stamp they accept) and recorders drop their call. */
#define STAMP_RECYCLING UINT64_MAX

static bool bucket_recycle(struct breaker__bucket *bk, struct breaker__stripe_ref stripe,
                           uint64_t want) {
    uint64_t st = breaker__read(&bk->stamp);
    if (st == want) return true;
    if (st == STAMP_RECYCLING) {
        /* Being emptied, or left so by a process killed in the middle (a
         * store file's block outlives its writers): finish the job rather
         * than drop this stripe's calls from the window for good. Racing a
         * live recycler, this may zero a call or two recorded just after it
         * published: the window's documented loss, never the counters'. */
        breaker__write(&bk->calls, 0);
        breaker__write(&bk->failures, 0);
        breaker__write(&bk->slow, 0);
        /* Release: as below. A failed CAS: the recycler published first. */
        uint64_t expect = STAMP_RECYCLING;
        atomic_compare_exchange_strong_explicit(&bk->stamp, &expect, want, memory_order_release,
                                                memory_order_acquire);
        return breaker__read(&bk->stamp) == want;
    }
    /* A newer bucket of the same generation, or any bucket of a newer
     * generation (24-bit serial compare): this call is late; leave it out
     * rather than erase what others recorded since. */
    uint32_t st_gen = (uint32_t)(st >> BREAKER__STAMP_EPOCH_BITS);
    uint32_t want_gen = (uint32_t)(want >> BREAKER__STAMP_EPOCH_BITS);
    if (st != 0 && (int32_t)((st_gen - want_gen) << 8) > 0) return false;
    if (st_gen == want_gen && (st & BREAKER__STAMP_EPOCH_MASK) > (want & BREAKER__STAMP_EPOCH_MASK))
        return false;
    if (stripe.owned) {
        breaker__write(&bk->calls, 0);
        breaker__write(&bk->failures, 0);
        breaker__write(&bk->slow, 0);
        /* Release: a reader that sees the new stamp sees the zeroed counts. */
        atomic_store_explicit(&bk->stamp, want, memory_order_release);
        return true;
    }
    /* Shared stripe: mark the bucket as being emptied first, so no reader
     * counts the old counts under the new stamp, then publish the stamp. */
    if (!atomic_compare_exchange_strong_explicit(&bk->stamp, &st, STAMP_RECYCLING,
                                                 memory_order_acquire, memory_order_relaxed))
        return st == want;
    breaker__write(&bk->calls, 0);
    breaker__write(&bk->failures, 0);
    breaker__write(&bk->slow, 0);
    atomic_store_explicit(&bk->stamp, want, memory_order_release);
    return true;
}

static void time_read(const struct breaker__shared *s, uint64_t gen, uint64_t epoch,
                      struct breaker__window_view *view) {
    uint64_t buckets = s->lim.window_buckets;
    uint64_t newest = breaker__bucket_stamp(gen, epoch);
    uint64_t oldest = epoch + 1 >= buckets ? breaker__bucket_stamp(gen, epoch + 1 - buckets)
                                           : breaker__bucket_stamp(gen, 0);
    view->calls = view->failures = view->slow = 0;
    for (unsigned i = 0; i < BREAKER__STRIPES; i++) {
        const struct breaker__bucket *bk = breaker__buckets_of(s, i);
        for (unsigned b = 0; b < buckets; b++) {
            /* Acquire: pairs with the release store of bucket_recycle(). */
            uint64_t st = atomic_load_explicit(&bk[b].stamp, memory_order_acquire);
            if (st < oldest || st > newest) continue;
            view->calls += breaker__read(&bk[b].calls);
            view->failures += breaker__read(&bk[b].failures);
            view->slow += breaker__read(&bk[b].slow);
        }
    }
}

/* Record one call in its bucket (*epoch). @return false when it was dropped
 * (a shared stripe's bucket being recycled: see bucket_recycle). */
static bool time_write(struct breaker__shared *s, struct breaker__stripe_ref stripe, uint64_t gen,
                       uint64_t now, bool failure, bool slow, uint64_t *epoch) {
    struct breaker__bucket *bk = bucket_locate(s, stripe, now, epoch);
    if (!bucket_recycle(bk, stripe, breaker__bucket_stamp(gen, *epoch))) return false;
    breaker__stripe_count(stripe, &bk->calls);
    if (failure) breaker__stripe_count(stripe, &bk->failures);
    if (slow) breaker__stripe_count(stripe, &bk->slow);
    return true;
}

/* ---- Failing sources ----------------------------------------------------------
 * A cheap estimate of how many distinct callers the failures come from (the
 * source keys given to breaker_complete_from()): each failure with a source
 * sets one bit of a 64-bit map, chosen by the source's hash, and the number of
 * set bits estimates the number of sources (linear counting; two sources share
 * a bit with probability 1/64, which only ever makes the estimate lower). A map
 * covers a period: the current run of failures (consecutive), one pass of the
 * ring (count window), one window_ns of time (time window); the estimate is
 * of the current period's map OR the previous one's, so it spans one to two
 * windows. A failure racing a change of period may lose its bit: an estimate,
 * taken without a lock, never an exact count. Failures completed without a
 * source (0) set no bit. */
static uint64_t source_bit(uint64_t source) {
    return UINT64_C(1) << (breaker__splitmix64(source) & 63u);
}

/* Start period `period` unless the maps already cover it: the map of the
 * period just ended becomes the previous one (or nothing, after a gap). */
static void sources_enter(struct breaker__shared *s, uint64_t period) {
    uint64_t cur = breaker__read(&s->src_period);
    while (period > cur) {
        if (breaker__cas_relaxed(&s->src_period, &cur, period)) {
            uint64_t bits = atomic_exchange_explicit(&s->src_cur, 0, memory_order_relaxed);
            breaker__write(&s->src_prev, period == cur + 1 ? bits : 0);
            return;
        }
    }
}

/* Record a failure of `source` in the current period; the map's bits now. */
static uint32_t sources_note(struct breaker__shared *s, uint64_t source) {
    if (source != 0)
        atomic_fetch_or_explicit(&s->src_cur, source_bit(source), memory_order_relaxed);
    return (uint32_t)__builtin_popcountll(breaker__read(&s->src_cur) | breaker__read(&s->src_prev));
}

static void sources_clear(struct breaker__shared *s) {
    breaker__write(&s->src_cur, 0);
    breaker__write(&s->src_prev, 0);
}

/* The time window's period at `now`: one per window_ns, counted from 1. */
static uint64_t time_period(const struct breaker__shared *s, uint64_t now) {
    uint64_t rel = now > s->epoch_ns ? now - s->epoch_ns : 0;
    return rel / s->lim.window_ns + 1;
}

uint32_t breaker__sources_estimate(uint32_t bits) {
    if (bits >= 64) return 64 * 5; /* every bit set: "very many" (e^5 * 64 is far past the range) */
    return (uint32_t)lround(-64.0 * log(1.0 - (double)bits / 64.0));
}

/* N bits for N sources: fewer than N distinct sources set fewer than N bits
 * of the map, so they never trip, exactly, for every N the API accepts. (The
 * expected number of bits N sources set, 64 (1 - e^(-N/64)), is below N from
 * N = 12 on: with it, 11 sources on distinct bits tripped a breaker set to 12.)
 * The price: N sources whose keys collide set fewer bits and do not trip on
 * their own; more failing sources do (M sources set 64 (1 - e^(-M/64)) bits
 * on average: about 1.4 N sources for N = 32). */
uint32_t breaker__sources_bits_needed(uint32_t n) { return n <= 1 ? 0 : n; }

/* Whether a map with `bits` set is diverse enough to trip. The default
 * (min_failing_sources 0) asks it only of a map that holds a source: a
 * breaker whose failures never name one trips as it always did, and one
 * given sources is protected without being told to be. */
bool breaker__sources_enough(const struct breaker__limits *lim, uint32_t bits) {
    if (bits >= BREAKER__LIM(lim, source_bits_needed)) return true;
    return BREAKER__LIM(lim, min_failing_sources) == 0 && bits == 0;
}

/* ---- Policy-independent entry points -------------------------------------- */

size_t breaker__window_bytes(const struct breaker__limits *lim, size_t *bucket_stride) {
    size_t per_stripe = 0;
    size_t total = 0;
    if (lim->trip == BREAKER_TRIP_TIME_WINDOW) {
        per_stripe = sizeof(struct breaker__bucket) * lim->window_buckets;
        per_stripe = (per_stripe + BREAKER__CACHELINE - 1) & ~(size_t)(BREAKER__CACHELINE - 1);
        total = per_stripe * BREAKER__STRIPES;
    } else if (lim->trip == BREAKER_TRIP_COUNT_WINDOW) {
        total = (size_t)breaker__chunk_count(lim->window_size) * BREAKER__RING_CHUNK_BYTES;
    }
    *bucket_stride = per_stripe;
    return total;
}

/* Whether the transition emptying the window has lost: ctl moved from what
 * it expected (its CAS will fail, and another thread's period may already
 * be recording). Acquire, like every read of ctl that decides. */
static bool reset_lost(const struct breaker__shared *s, uint64_t expected_ctl) {
    return atomic_load_explicit(&s->ctl, memory_order_acquire) != expected_ctl;
}

bool breaker__window_reset(struct breaker__shared *s, struct breaker__stripe_ref stripe,
                           uint64_t expected_ctl) {
    if (reset_lost(s, expected_ctl)) return false;
    bool emptied = true;
    breaker__write(&s->consecutive, 0);
    switch ((enum breaker_trip)s->lim.trip) {
    case BREAKER_TRIP_CONSECUTIVE:
        break;
    case BREAKER_TRIP_COUNT_WINDOW: {
        /* Retire each slot with the same exchange a recorder uses, into this
         * thread's share, never by storing 0 into anyone's share: a recorder
         * racing the reset (breaker_reset() under traffic) then leaves ring
         * and shares consistent, whatever the interleaving. The stripes'
         * current chunks are theirs to finish, and reservations go on in
         * ring order (not from chunk 0, which would make one thread reuse
         * its own chunk a pass early and drop calls of the new window). */
        uint32_t n = s->lim.window_size, chunks = breaker__chunk_count(n);
        uint64_t delta = 0;
        for (uint32_t c = 0; c < chunks; c++) {
            /* A large window takes a while to empty: stop as soon as this
             * transition has lost, so a loser erases at most one chunk of
             * the winner's new period, not the whole of it. */
            if (reset_lost(s, expected_ctl)) {
                emptied = false;
                break;
            }
            for (uint32_t i = 0; i < breaker__chunk_length(n, c); i++) {
                uint8_t old = atomic_exchange_explicit(ring_slot(s, c, i), 0, memory_order_relaxed);
                if (old != 0) delta += breaker__ring_delta(old, 0);
            }
        }
        if (delta != 0) breaker__ring_share_add(stripe, delta);
        break;
    }
    case BREAKER_TRIP_TIME_WINDOW:
        /* Nothing to clear: buckets are stamped with their generation. */
        break;
    }
    if (!emptied) return false;
    sources_clear(s);
    return true;
}

/* Give back the per-CPU stripe a record was written on, if any. */
static void give_back(struct breaker__stripe *held) {
    if (held != NULL) breaker__cpu_stripe_give(held);
}

bool breaker__window_record(struct breaker__shared *s, struct breaker__stripe_ref stripe,
                            struct breaker__stripe *held, uint64_t gen, uint64_t now, bool failure,
                            bool slow, uint64_t source, struct breaker__window_view *view) {
    bool evaluate = false;
    switch ((enum breaker_trip)s->lim.trip) {
    case BREAKER_TRIP_CONSECUTIVE:
        give_back(held); /* the run word is no stripe's */
        if (!failure) {
            breaker__consecutive_success(&s->consecutive);
            return false;
        }
        memset(view, 0, sizeof(*view));
        uint64_t n = atomic_fetch_add_explicit(&s->consecutive, 1, memory_order_relaxed) + 1;
        view->consecutive = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
        /* A run's first failure starts its map (successes never touch it). */
        if (n == 1 && sources_on(&s->lim)) sources_clear(s);
        evaluate = true;
        break;
    case BREAKER_TRIP_COUNT_WINDOW: {
        bool pass_start = count_write(s, stripe, failure, slow);
        give_back(held);
        evaluate = failure || slow;
        if (evaluate) count_read(s, view);
        view->consecutive = 0;
        /* Each pass of the ring is a period; whoever starts one rotates. */
        if (pass_start && sources_on(&s->lim)) sources_enter(s, breaker__read(&s->src_period) + 1);
        break;
    }
    case BREAKER_TRIP_TIME_WINDOW: {
        uint64_t epoch;
        bool written = time_write(s, stripe, gen, now, failure, slow, &epoch);
        give_back(held);
        evaluate = written && (failure || slow);
        if (evaluate) time_read(s, gen, epoch, view);
        view->consecutive = 0;
        if (failure && sources_on(&s->lim)) sources_enter(s, time_period(s, now));
        break;
    }
    default: /* no such policy passes create or a store's check */
        give_back(held);
        break;
    }
    view->source_bits = 0;
    if (failure && sources_on(&s->lim)) view->source_bits = sources_note(s, source);
    return evaluate;
}

void breaker__window_read(const struct breaker__shared *s, uint64_t gen, uint64_t now,
                          struct breaker__window_view *view) {
    memset(view, 0, sizeof(*view));
    uint64_t run = breaker__read(&s->consecutive);
    view->consecutive = run > UINT32_MAX ? UINT32_MAX : (uint32_t)run;
    switch ((enum breaker_trip)s->lim.trip) {
    case BREAKER_TRIP_CONSECUTIVE:
        break;
    case BREAKER_TRIP_COUNT_WINDOW:
        if (!agg_decode(ring_total(s), s->lim.window_size, view)) ring_scan(s, view);
        break;
    case BREAKER_TRIP_TIME_WINDOW:
        time_read(s, gen, bucket_epoch(s, now), view);
        break;
    }
}

void breaker__window_confirm(const struct breaker__shared *s, uint64_t gen, uint64_t now,
                             struct breaker__window_view *view) {
    /* Count window: the shares' sum is exact at rest but, read while others
     * record, can be torn into a plausible window that is not the ring's
     * (seen: a 28% failure rate read as 60%+ and tripping). A trip is rare
     * and opens the breaker, so it is worth one pass over the slots.
     * Time window: the stripes are summed one after the other, and a reader
     * descheduled in the middle adds old counts of the first stripes to new
     * counts of the last; when stripes hold different mixes of outcomes
     * (threads on different stripes, or one thread's successes and failures
     * on two) that skews the rate (seen: a 6% failure rate read as 98% and
     * tripping, 11 runs in 300, 64 threads on 2 cores). A second read must
     * agree before a trip. */
    if (s->lim.trip == BREAKER_TRIP_COUNT_WINDOW) ring_scan(s, view);
    if (s->lim.trip == BREAKER_TRIP_TIME_WINDOW) time_read(s, gen, bucket_epoch(s, now), view);
}

bool breaker__window_should_trip(const struct breaker__limits *lim, uint32_t min_calls,
                                 const struct breaker__window_view *v,
                                 enum breaker_reason *reason) {
    if (lim->trip == BREAKER_TRIP_CONSECUTIVE) {
        *reason = BREAKER_REASON_CONSECUTIVE_FAILURES;
        return v->consecutive >= BREAKER__LIM(lim, failure_threshold) &&
               breaker__sources_enough(lim, v->source_bits);
    }
    if (v->calls < min_calls || v->calls == 0) return false;
    /* A failure rate counts only if it comes from enough distinct callers
     * (min_failing_sources; source_bits_needed is 0 when that is off). */
    if ((double)v->failures >= BREAKER__LIM(lim, failure_rate) * (double)v->calls &&
        breaker__sources_enough(lim, v->source_bits)) {
        *reason = BREAKER_REASON_FAILURE_RATE;
        return true;
    }
    double slow_rate = BREAKER__LIM(lim, slow_call_rate);
    if (slow_rate > 0.0 && (double)v->slow >= slow_rate * (double)v->calls) {
        *reason = BREAKER_REASON_SLOW_CALL_RATE;
        return true;
    }
    return false;
}

void breaker__evidence_from_view(const struct breaker__window_view *v, breaker_evidence *e) {
    memset(e, 0, sizeof(*e));
    e->calls = v->calls;
    e->failures = v->failures;
    e->slow_calls = v->slow;
    e->failure_rate = v->calls ? (double)v->failures / (double)v->calls : 0.0;
    e->slow_call_rate = v->calls ? (double)v->slow / (double)v->calls : 0.0;
    e->failing_sources = v->source_bits ? breaker__sources_estimate(v->source_bits) : 0;
    e->consecutive_failures = v->consecutive;
}
