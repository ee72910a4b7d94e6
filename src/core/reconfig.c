/* SPDX-License-Identifier: MIT */
/*
 * reconfig.c - the mechanics of live reconfiguration: a running breaker's
 * limits changed in place, seen by every thread at once and, for a store
 * file's block, by every process of the host. breaker_reconfigure() (in
 * control.c, with its event) calls breaker__limits_change().
 *
 * The limits live in the block (struct breaker__limits, `lim`), where calls
 * read them while a change is written. How a change stays whole:
 *
 * - Each field a change may rewrite (layout.h: those not marked fixed) is
 *   read with BREAKER__LIM(): one relaxed load, the same instruction as the
 *   plain load it replaced, so no call path grows; a single field is always
 *   one version's value.
 * - A decision that reads several fields and changes the state (a trip, the
 *   wait of an open) is made on a snapshot: breaker__limits_snapshot() copies
 *   the limits as of one version (a seqlock on `lim_ver`).
 * - A writer holds the block's exclusion (a heap block: the STAGING flag,
 *   taken with a CAS; a store file's: the file lock, breaker/store.h) and
 *   works in two steps, each marked in lim_ver: STAGING while it fills the
 *   staging copy `lim_next` (`lim` untouched: a snapshot reads `lim`), then
 *   COPYING while it copies lim_next into `lim` field by field (lim_next is
 *   whole and unchanging: a snapshot reads it), then the next version. A
 *   writer that dies at any instruction (a store's process) leaves a state
 *   that snapshots read whole, and that the next holder of the file lock
 *   completes (breaker__limits_repair(): STAGING is dropped, COPYING
 *   finished).
 * - What shapes the block cannot change live (its window, its probe slots,
 *   whether calls are timed, the ramp's presence): refused, naming the
 *   field; create the breaker again for those.
 *
 * Memory orders: the writer's field stores are relaxed; the version word's
 * stores are release, so a snapshot that reads a version (acquire) and
 * finds it unchanged after its copy (an acquire fence, then a load) read
 * the fields that version published. A single BREAKER__LIM() read orders
 * nothing: it needs no other field.
 */
#include "core/block.h"
#include "core/internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define VER_FLAGS (BREAKER__LIM_STAGING | BREAKER__LIM_COPYING)
#define VER_STEP  UINT64_C(4)

/* The limits' fields that a change rewrites, by width (the fixed ones are
 * never written after init). */
#define LIVE_U32(X)      \
    X(failure_threshold) \
    X(min_calls) X(half_open_successes) X(cancelled_as) X(min_failing_sources) X(source_bits_needed)
#define LIVE_U64(X) X(slow_call_ns) X(open_ns) X(open_max_ns) X(probe_timeout_ns) X(seed) X(ramp_ns)
#define LIVE_F64(X) X(failure_rate) X(slow_call_rate) X(open_backoff) X(open_jitter) X(ramp_start)

static void store_u32(uint32_t *p, uint32_t v) {
    atomic_store_explicit((_Atomic uint32_t *)(void *)p, v, memory_order_release);
}
static void store_u64(uint64_t *p, uint64_t v) {
    atomic_store_explicit((_Atomic uint64_t *)(void *)p, v, memory_order_release);
}
static void store_f64(double *p, double v) {
    atomic_store_explicit((_Atomic double *)(void *)p, v, memory_order_release);
}

/* Copy the live fields of `from` (read with relaxed loads: another writer's
 * block, or a snapshot) into `to`, written with release stores: each field's
 * store comes after the version word's COPYING (or STAGING) that preceded
 * the copy, so a snapshot that reads a copied field (then its acquire fence)
 * reads that flag or later at its second look, never the version it started
 * on (the seqlock writer's ordering, Boehm, "Can seqlocks get along with
 * programming language memory models?", 2012). A release store orders what
 * came before it, which a relaxed store after a release store does not (a
 * later relaxed store may be seen first, as on ARM); release stores rather
 * than a release fence, because ThreadSanitizer does not model fences (GCC
 * refuses atomic_thread_fence under -fsanitize=thread). Writers only: a
 * change of the limits is rare, and on x86-64 the stores are plain moves. */
static void copy_live(struct breaker__limits *to, const struct breaker__limits *from) {
#define COPY_U32(f) store_u32(&to->f, BREAKER__LIM(from, f));
#define COPY_U64(f) store_u64(&to->f, BREAKER__LIM(from, f));
#define COPY_F64(f) store_f64(&to->f, BREAKER__LIM(from, f));
    LIVE_U32(COPY_U32) LIVE_U64(COPY_U64) LIVE_F64(COPY_F64)
#undef COPY_U32
#undef COPY_U64
#undef COPY_F64
}

/* The fixed fields of `fixed` (the block's `lim`, never written after init)
 * and the live ones of `from`, into the plain struct `to`. */
static void read_all(struct breaker__limits *to, const struct breaker__limits *fixed,
                     const struct breaker__limits *from) {
    memset(to, 0, sizeof(*to));
    to->trip = fixed->trip;
    to->window_size = fixed->window_size;
    to->window_buckets = fixed->window_buckets;
    to->window_ns = fixed->window_ns;
    to->bucket_ns = fixed->bucket_ns;
    to->half_open_max_probes = fixed->half_open_max_probes;
#define READ(f) to->f = BREAKER__LIM(from, f);
    LIVE_U32(READ) LIVE_U64(READ) LIVE_F64(READ)
#undef READ
}

void breaker__limits_snapshot(const struct breaker__shared *s, struct breaker__limits *out) {
    for (;;) {
        /* Acquire: pairs with the writer's release of this version. */
        uint64_t v = breaker__load_acquire(&s->lim_ver);
        read_all(out, &s->lim, (v & BREAKER__LIM_COPYING) ? &s->lim_next : &s->lim);
        /* The copy before the second look at the version. */
        atomic_thread_fence(memory_order_acquire);
        uint64_t again = breaker__read(&s->lim_ver);
        /* STAGING alone leaves `lim` as it was: a writer that starts (or
         * ends) filling lim_next meanwhile changes nothing read. */
        if ((v & BREAKER__LIM_COPYING) == 0 && (again & BREAKER__LIM_COPYING) == 0 &&
            (v & ~(uint64_t)VER_FLAGS) == (again & ~(uint64_t)VER_FLAGS))
            return;
        if (again == v) return;
    }
}

/* Step 2 and the end, for a writer (or a repairer) holding the exclusion
 * with lim_next whole: copy, then the next version. */
static void finish_copy(struct breaker__shared *s, uint64_t v) {
    /* Release: a snapshot that sees COPYING sees lim_next whole. */
    atomic_store_explicit(&s->lim_ver, (v & ~(uint64_t)VER_FLAGS) | BREAKER__LIM_COPYING,
                          memory_order_release);
    /* The copy's stores come after COPYING: copy_live() writes each with
     * release. */
    copy_live(&s->lim, &s->lim_next);
    /* Release: a snapshot that sees the new version sees `lim` whole. */
    atomic_store_explicit(&s->lim_ver, (v & ~(uint64_t)VER_FLAGS) + VER_STEP, memory_order_release);
}

bool breaker__limits_repair(struct breaker__shared *s) {
    uint64_t v = breaker__read(&s->lim_ver);
    if ((v & VER_FLAGS) == 0) return false;
    if (v & BREAKER__LIM_COPYING)
        finish_copy(s, v); /* lim_next was whole: the change completes */
    else
        atomic_store_explicit(&s->lim_ver, v & ~(uint64_t)VER_FLAGS, memory_order_release);
    return true;
}

uint64_t breaker__limits_version(const struct breaker__shared *s) {
    return (breaker__load_acquire(&s->lim_ver) >> 2) + 1;
}

/* ---- What may change live ---------------------------------------------------- */

/* `why`: the field of `next` (a full, effective configuration) that differs
 * from the breaker's `cur` in a way the block cannot follow, or NULL. */
static const char *fixed_change(const struct breaker__limits *cur,
                                const struct breaker__limits *next, char *why, size_t len) {
    if (next->trip != cur->trip)
        return snprintf(why, len, "trip: %s -> %s", breaker_trip_name(cur->trip),
                        breaker_trip_name(next->trip)),
               "it chooses the window the block holds";
    if (cur->trip == BREAKER_TRIP_COUNT_WINDOW && next->window_size != cur->window_size)
        return snprintf(why, len, "window_size: %u -> %u", cur->window_size, next->window_size),
               "it sizes the count window in the block";
    if (cur->trip == BREAKER_TRIP_TIME_WINDOW &&
        (next->window_ns != cur->window_ns || next->window_buckets != cur->window_buckets))
        return snprintf(why, len, "window_ns/window_buckets: %llu ns in %u -> %llu ns in %u",
                        (unsigned long long)cur->window_ns, cur->window_buckets,
                        (unsigned long long)next->window_ns, next->window_buckets),
               "they lay out the time window's buckets in the block";
    if (next->half_open_max_probes != cur->half_open_max_probes)
        return snprintf(why, len, "half_open_max_probes: %u -> %u", cur->half_open_max_probes,
                        next->half_open_max_probes),
               "it sizes the probe slots in the block";
    if ((next->slow_call_ns == 0) != (cur->slow_call_ns == 0))
        return snprintf(why, len, "slow_call_ns: %llu -> %llu",
                        (unsigned long long)cur->slow_call_ns,
                        (unsigned long long)next->slow_call_ns),
               "turning call timing on or off changes the block (its duration histograms) and "
               "every handle's call path; a timed breaker's threshold may change";
    if (cur->ramp_ns != 0 && next->ramp_ns == 0)
        return snprintf(why, len, "ramp_ns: %llu -> 0", (unsigned long long)cur->ramp_ns),
               "a ramp under way cannot be dropped; set a short one (1ms) instead";
    return NULL;
}

/* The effective limits `cfg` asks for, with the breaker's seed when cfg's
 * is 0 (drawn: a change keeps the breaker's). */
static int next_limits(const breaker_config *cfg, const struct breaker__limits *cur,
                       struct breaker__limits *next, char *msg, size_t len) {
    int rc = breaker_config_validate(cfg, msg, len);
    if (rc != BREAKER_OK) return rc;
    breaker_config eff;
    breaker_config_effective(cfg, &eff);
    breaker__limits_from_config(&eff, next);
    if (next->seed == 0) next->seed = cur->seed;
    char what[160];
    const char *because = fixed_change(cur, next, what, sizeof(what));
    if (because != NULL)
        return breaker__fail(BREAKER_EINVAL, msg, len,
                             "%s: cannot change on a running breaker: %s (create it again, or a "
                             "new name, for that)",
                             what, because);
    return BREAKER_OK;
}

/* ---- The change -------------------------------------------------------------- */

/* Take the exclusion with the STAGING flag (a CAS from a version word
 * without flags); a flag found set is a dead writer's when `repair` (the
 * caller holds the store file's lock), completed first, else another
 * thread's change under way, a few stores long, waited out. */
int breaker__limits_change(struct breaker__shared *s, const breaker_config *cfg, uint64_t expect,
                           bool repair, bool *changed, struct breaker__limits *before,
                           struct breaker__limits *after, uint64_t *generation, char *msg,
                           size_t len) {
    *changed = false;
    for (;;) {
        uint64_t v = breaker__load_acquire(&s->lim_ver);
        if (v & VER_FLAGS) {
            if (repair) (void)breaker__limits_repair(s);
            continue;
        }
        *generation = (v >> 2) + 1;
        if (expect != 0 && *generation != expect)
            return breaker__fail(BREAKER_STALE, msg, len,
                                 "configuration generation %llu, not %llu: it changed meanwhile "
                                 "(read it again)",
                                 (unsigned long long)*generation, (unsigned long long)expect);
        breaker__limits_snapshot(s, before);
        int rc = next_limits(cfg, before, after, msg, len);
        if (rc != BREAKER_OK) return rc;
        if (memcmp(before, after, sizeof(*before)) == 0) return BREAKER_OK; /* the same */
        /* Acquire: this writer's stores come after the last one's. */
        if (!atomic_compare_exchange_weak_explicit(&s->lim_ver, &v, v | BREAKER__LIM_STAGING,
                                                   memory_order_acquire, memory_order_relaxed))
            continue;
        /* lim_next's stores after STAGING, as finish_copy's after COPYING
         * (copy_live() writes each with release): a snapshot still reading
         * lim_next for the last COPYING that reads one of them then sees
         * this version's flag at its second look. */
        copy_live(&s->lim_next, after);
        finish_copy(s, v);
        *changed = true;
        *generation = (v >> 2) + 2;
        return BREAKER_OK;
    }
}

int breaker__reconfigure_check(breaker *b, const breaker_config *cfg, char *msg, size_t len) {
    b = breaker__live(b);
    struct breaker__limits cur, next;
    breaker__limits_snapshot(b->shared, &cur);
    return next_limits(cfg, &cur, &next, msg, len);
}
