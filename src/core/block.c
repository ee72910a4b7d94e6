/* SPDX-License-Identifier: MIT */
/*
 * block.c - a breaker's shared block: layout, init, check, bind (block.h),
 * and breaker_create()/breaker_destroy() built from them on the process heap.
 */
#define _GNU_SOURCE
#include "core/block.h"
#include "common/time_ns.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static size_t align_up(size_t n) {
    return (n + BREAKER__CACHELINE - 1) & ~(size_t)(BREAKER__CACHELINE - 1);
}

/* ---- Layout ------------------------------------------------------------------
 * The header struct, the stripes, the window (time-window buckets or the
 * count-window ring: a breaker has one or neither), then the probe slots.
 * Every array starts on a cache line. */
void breaker__block_layout(const struct breaker__limits *lim, struct breaker__block_layout *out) {
    memset(out, 0, sizeof(*out));
    size_t off = align_up(sizeof(struct breaker__shared));
    out->stripes_off = off;
    off += align_up(sizeof(struct breaker__stripe) * BREAKER__STRIPES);
    size_t stride = 0;
    size_t window_bytes = breaker__window_bytes(lim, &stride);
    if (lim->trip == BREAKER_TRIP_TIME_WINDOW) {
        out->buckets_off = off;
        out->bucket_stride = stride;
    } else if (lim->trip == BREAKER_TRIP_COUNT_WINDOW) {
        out->ring_off = off;
    }
    off += align_up(window_bytes);
    out->slots_off = off; /* each probe slot's word, then its probe's caller's */
    off += align_up(2 * sizeof(uint64_t) * lim->half_open_max_probes);
    if (lim->slow_call_ns != 0) { /* timed calls: a duration histogram per stripe */
        out->latency_off = off;
        off += sizeof(struct breaker__latency_run) * BREAKER__STRIPES;
    }
    out->total = off;
}

/* ---- Init ----------------------------------------------------------------------*/
void breaker__block_init(struct breaker__shared *s, const struct breaker__block_layout *lay,
                         const struct breaker__limits *lim, uint64_t epoch_ns,
                         uint64_t instance_id) {
    s->layout_version = BREAKER__LAYOUT_VERSION;
    s->header_size = (uint32_t)sizeof(struct breaker__shared);
    s->total_size = lay->total;
    s->instance_id = instance_id;
    s->epoch_ns = epoch_ns;
    s->lim = *lim;
    s->lim_next = *lim; /* the staging copy of a live change (reconfig.c) */
    s->abi = BREAKER__ABI;
    s->stripes_off = lay->stripes_off;
    s->buckets_off = lay->buckets_off;
    s->bucket_stride = lay->bucket_stride;
    s->ring_off = lay->ring_off;
    s->slots_off = lay->slots_off;
    s->latency_off = lay->latency_off;
    breaker__write(&s->since_ns, epoch_ns);
    breaker__write(&s->since_gen, 1);
    breaker__write(&s->window_gen, 1);
    /* Slot words start at tag 0: generation 1 is CLOSED, so nothing reads
     * them before the first half-open marks them for its generation. */
    breaker__write(&s->ctl, breaker__ctl_pack(1, BREAKER_CLOSED, 0, 0));
    /* The magic last, with release: a process that reads it with acquire
     * (breaker__block_check) sees every store above. */
    atomic_store_explicit((_Atomic uint64_t *)(void *)&s->magic, BREAKER__MAGIC,
                          memory_order_release);
}

/* ---- Check ---------------------------------------------------------------------*/

/* The configuration `lim` was derived from (callbacks aside). */
void breaker__config_of_limits(const struct breaker__limits *lim, breaker_config *cfg) {
    memset(cfg, 0, sizeof(*cfg));
    cfg->trip = (enum breaker_trip)lim->trip;
    cfg->failure_threshold = lim->failure_threshold;
    cfg->window_size = lim->window_size;
    cfg->window_ns = lim->window_ns;
    cfg->window_buckets = lim->window_buckets;
    cfg->min_calls = lim->min_calls;
    cfg->failure_rate = lim->failure_rate;
    cfg->slow_call_ns = lim->slow_call_ns;
    cfg->slow_call_rate = lim->slow_call_rate;
    cfg->open_ns = lim->open_ns;
    cfg->open_backoff = lim->open_backoff;
    cfg->open_max_ns = lim->open_max_ns;
    cfg->open_jitter = lim->open_jitter;
    cfg->half_open_max_probes = lim->half_open_max_probes;
    cfg->half_open_successes = lim->half_open_successes;
    cfg->probe_timeout_ns = lim->probe_timeout_ns;
    cfg->ramp_ns = lim->ramp_ns;
    cfg->ramp_start = lim->ramp_start;
    cfg->min_failing_sources = lim->min_failing_sources;
    cfg->cancelled_as = (enum breaker_outcome)lim->cancelled_as;
    cfg->seed = lim->seed;
}

/* Whether `lim` is what breaker__limits_from_config() gives for a valid
 * configuration: the ranges, and everything derived from them. */
static bool limits_are_valid(const struct breaker__limits *lim, char *msg, size_t len) {
    breaker_config cfg;
    breaker__config_of_limits(lim, &cfg);
    char why[160];
    if (breaker_config_validate(&cfg, why, sizeof(why)) != BREAKER_OK) {
        breaker__fail(0, msg, len, "block limits: %s", why);
        return false;
    }
    breaker_config eff;
    breaker_config_effective(&cfg, &eff);
    struct breaker__limits again;
    breaker__limits_from_config(&eff, &again);
    if (memcmp(&again, lim, sizeof(again)) != 0) {
        breaker__fail(0, msg, len,
                      "block limits: not as this library derives them from their own "
                      "configuration (a default left unapplied, a derived field or padding)");
        return false;
    }
    return true;
}
int breaker__block_check(const struct breaker__shared *s, size_t mapped, char *msg, size_t len) {
    /* Before any field is read: atomics on a misaligned block are undefined. */
    if ((uintptr_t)s % BREAKER__CACHELINE != 0)
        return breaker__fail(BREAKER_EINCOMPATIBLE, msg, len,
                             "block address: %p is not aligned to %d bytes", (const void *)s,
                             BREAKER__CACHELINE);
    if (mapped < sizeof(struct breaker__shared))
        return breaker__fail(BREAKER_EINCOMPATIBLE, msg, len,
                             "block: %zu bytes mapped, a block needs at least %zu", mapped,
                             sizeof(struct breaker__shared));
    uint64_t magic = atomic_load_explicit((_Atomic uint64_t *)(void *)(uintptr_t)&s->magic,
                                          memory_order_acquire);
    if (magic != BREAKER__MAGIC)
        return breaker__fail(BREAKER_EINCOMPATIBLE, msg, len,
                             "block magic: 0x%016llx, expected 0x%016llx (not a breaker block, "
                             "or not initialised yet)",
                             (unsigned long long)magic, (unsigned long long)BREAKER__MAGIC);
    if (s->layout_version != BREAKER__LAYOUT_VERSION)
        return breaker__fail(BREAKER_EINCOMPATIBLE, msg, len,
                             "block layout_version: %u, this library reads version %u",
                             s->layout_version, BREAKER__LAYOUT_VERSION);
    if (s->abi != BREAKER__ABI || s->header_size != sizeof(struct breaker__shared))
        return breaker__fail(BREAKER_EINCOMPATIBLE, msg, len,
                             "block abi: 0x%llx with a %u-byte header, this build has 0x%llx and "
                             "%zu (built with other struct sizes)",
                             (unsigned long long)s->abi, s->header_size,
                             (unsigned long long)BREAKER__ABI, sizeof(struct breaker__shared));
    if (s->total_size > mapped)
        return breaker__fail(BREAKER_EINCOMPATIBLE, msg, len,
                             "block total_size: %llu bytes, only %zu mapped",
                             (unsigned long long)s->total_size, mapped);
    /* The limits must be exactly what this library derives from a valid
     * configuration (every range, the derived bucket width, the padding),
     * and the offsets the layout those limits give: then every index and
     * every computation the code derives from the limits stays in bounds. */
    const struct breaker__limits *lim = &s->lim;
    if (!limits_are_valid(lim, msg, len)) return BREAKER_EINCOMPATIBLE;
    /* The state word: a state this library has, and in CLOSED no other low
     * field than the ramp flag, and that only with a ramp configured (the
     * ramp's share divides by ramp_ns). Every other field of it fits
     * whatever it holds; counters may hold anything. */
    uint64_t ctl = breaker__read((breaker__atomic64 *)(uintptr_t)&s->ctl);
    unsigned state = breaker__ctl_state(ctl);
    unsigned low_max = lim->ramp_ns != 0 ? BREAKER__RAMP_FLAG : 0;
    if (state >= BREAKER_STATE_COUNT ||
        (state == BREAKER_CLOSED && breaker__ctl_succ(ctl) > low_max))
        return breaker__fail(BREAKER_EINCOMPATIBLE, msg, len,
                             "block ctl: state %u with low field %u is not a state of this "
                             "library",
                             state, breaker__ctl_succ(ctl));
    struct breaker__block_layout lay;
    breaker__block_layout(lim, &lay);
    if (s->total_size != lay.total || s->stripes_off != lay.stripes_off ||
        s->buckets_off != lay.buckets_off || s->bucket_stride != lay.bucket_stride ||
        s->ring_off != lay.ring_off || s->slots_off != lay.slots_off ||
        s->latency_off != lay.latency_off)
        return breaker__fail(BREAKER_EINCOMPATIBLE, msg, len,
                             "block offsets: total %llu, stripes %llu, buckets %llu, ring %llu, "
                             "slots %llu; its limits give %zu, %zu, %zu, %zu, %zu",
                             (unsigned long long)s->total_size, (unsigned long long)s->stripes_off,
                             (unsigned long long)s->buckets_off, (unsigned long long)s->ring_off,
                             (unsigned long long)s->slots_off, lay.total, lay.stripes_off,
                             lay.buckets_off, lay.ring_off, lay.slots_off);
    return BREAKER_OK;
}

/* ---- Bind ----------------------------------------------------------------------*/
void breaker__block_bind(breaker *b, struct breaker__shared *s, size_t mapped,
                         enum breaker__stripe_mode mode, uint64_t store_id) {
    const struct breaker__limits *lim = &s->lim;
    b->shared = s;
    b->shared_size = mapped;
    b->stripe_mode = mode;
    b->permit_tag = (s->instance_id << 8) & BREAKER__PERMIT_TAG_MASK;
    b->admit_tag = b->permit_tag | BREAKER__PERMIT_ADMITTED;
    b->breaker_id = s->instance_id;
    b->stripes = breaker__stripes(s);
    b->cpu_stripes = b->stripes + BREAKER__CPU_FIRST;
    b->ctl = &s->ctl;
    b->consecutive = &s->consecutive;
    b->buckets = (char *)s + s->buckets_off;
    if (lim->trip == BREAKER_TRIP_COUNT_WINDOW) {
        b->ring = breaker__ring(s);
        b->ring_chunks = breaker__chunk_count(lim->window_size);
        b->ring_chunk_slots = breaker__chunk_slots(lim->window_size);
        b->ring_last_len = breaker__chunk_length(lim->window_size, b->ring_chunks - 1);
    }
    b->bucket_stride = s->bucket_stride;
    b->bucket_ns = lim->bucket_ns;
    b->epoch_ns = s->epoch_ns;
    /* The short paths write the thread's owned stripe with plain stores, and
     * the handle says which thread-local word names it: the process pool's
     * for a heap block; for a shared block, its host domain's claim when the
     * process takes part in that domain, else a word that stays 0, which sends
     * every call to the general paths and their atomic counts (stripes.c). */
    b->host_domain = mode == BREAKER__STRIPES_ATOMIC && store_id != 0
                         ? breaker__host_domain_of(store_id)
                         : BREAKER__HOST_NONE;
    b->cpu_rseq = 0;
    if (mode == BREAKER__STRIPES_THREAD_OWNED) {
        b->owned_tls = breaker__owned_tls_heap();
        /* Only here: a heap block is written by this process alone, whose
         * concurrency ids are unique among its running threads (another
         * process's are not). */
        b->cpu_rseq = breaker__cpu_stripes_rseq();
    } else if (b->host_domain != BREAKER__HOST_NONE)
        b->owned_tls = breaker__owned_tls_host(b->host_domain);
    else
        b->owned_tls = breaker__owned_tls_none();
    bool times_calls = lim->slow_call_ns != 0;
    b->fast_success = times_calls ? 0 : lim->trip + 1;
    /* Every bit but the generation: the short path admits a plain CLOSED
     * (state 0, k 0, no ramp flag), nothing else. */
    breaker__write(&b->admit_mask,
                   times_calls ? ~UINT64_C(0) : ((UINT64_C(1) << BREAKER__GEN_SHIFT) - 1));
}

void breaker__forward(breaker *from, breaker *to) {
    breaker *face = from->face != NULL ? from->face : from;
    to->face = face;
    /* Release: a caller that finds the forward (breaker__live's acquire)
     * sees `to` whole. The chain link first, then the shortcuts. */
    atomic_store_explicit(&from->forward, to, memory_order_release);
    atomic_store_explicit(&from->newest, to, memory_order_release);
    if (face != from) atomic_store_explicit(&face->newest, to, memory_order_release);
    /* Then every closed call leaves the short path for the one that looks at
     * the forward. Relaxed: a call that sees the new mask before the forward
     * takes the general path on the old block, as if it had come a moment
     * earlier. */
    breaker__write(&from->admit_mask, ~UINT64_C(0));
}

void breaker__set_home(breaker *b, void (*detach)(void *ctx, breaker *b), void *ctx) {
    b->home_detach = detach;
    b->home_ctx = ctx;
}

void breaker__set_home_lock(breaker *b,
                            int (*lock)(void *ctx, bool lock, char *msg, size_t msg_len)) {
    b->home_lock = lock;
}

void breaker__set_home_control(breaker *b,
                               void (*record)(void *ctx, breaker *b,
                                              const struct breaker__control_made *made)) {
    b->home_control = record;
}

/* ---- On the process heap: breaker_create / breaker_destroy ----------------------*/

/* ---- Checked permits (breaker.c, "Checked permits") ------------------------
 * Allocate the record of a handle whose cfg.checked_permits is set, and send
 * its closed-state calls to the general paths; nothing otherwise. Call after
 * breaker__block_bind. @return BREAKER_OK or BREAKER_ENOMEM. */
static int check_setup(breaker *b) {
    if (b->cfg.checked_permits == 0) return BREAKER_OK;
    b->check = aligned_alloc(BREAKER__CACHELINE, sizeof(*b->check) * BREAKER__STRIPES);
    if (b->check == NULL) return BREAKER_ENOMEM;
    memset(b->check, 0, sizeof(*b->check) * BREAKER__STRIPES);
    /* Unique among this block's handles in practice (a stale permit of
     * another handle must not look like one of ours); never 0. */
    b->check_tag = (breaker__splitmix64(b->breaker_id ^ (uint64_t)(uintptr_t)b) | 1u) << 8;
    /* Closed calls take the general paths, which keep the record. */
    b->fast_success = 0;
    b->admit_mask = ~UINT64_C(0);
    return BREAKER_OK;
}

static void check_free(breaker *b) { free(b->check); }

static uint64_t random_seed(const void *salt) {
    uint64_t x = (uint64_t)(uintptr_t)salt ^ ((uint64_t)getpid() << 32);
    x ^= breaker__clock_ns(CLOCK_MONOTONIC);
    return breaker__splitmix64(x) | 1u;
}

/* An instance id no other breaker of this process has had, and that one of
 * another process has only by a 64-bit coincidence: a count of creations
 * mixed with the pid, the clock and the block's address. Not the jitter
 * seed: a user's fixed seed must not make two breakers' permits look alike. */
static uint64_t new_instance_id(const void *block) {
    static _Atomic uint64_t created;
    uint64_t n = atomic_fetch_add_explicit(&created, 1, memory_order_relaxed);
    return breaker__splitmix64(random_seed(block) ^ (n * BREAKER__GOLDEN_GAMMA));
}

int breaker_create(const breaker_config *user, breaker **out) {
    return breaker_create_bound(user, NULL, NULL, out);
}

int breaker_create_bound(const breaker_config *user, const breaker_owner *owner,
                         const breaker_probe_gate *gate, breaker **out) {
    if (out == NULL) return BREAKER_EINVAL;
    *out = NULL;
    breaker_config cfg;
    if (user == NULL) {
        breaker_config_init(&cfg);
    } else {
        if (breaker_config_validate(user, NULL, 0) != BREAKER_OK) return BREAKER_EINVAL;
        breaker_config_effective(user, &cfg);
    }

    breaker *b = calloc(1, sizeof(*b));
    if (b == NULL) return BREAKER_ENOMEM;
    b->cfg = cfg;
    if (owner != NULL) b->owner = *owner;
    if (gate != NULL) b->gate = *gate;

    struct breaker__limits lim;
    breaker__limits_from_config(&cfg, &lim);
    b->seed_drawn = lim.seed == 0;
    if (lim.seed == 0) lim.seed = random_seed(b);
    b->cfg.seed = lim.seed;

    struct breaker__block_layout lay;
    breaker__block_layout(&lim, &lay);
    struct breaker__shared *s = aligned_alloc(BREAKER__CACHELINE, lay.total);
    if (s == NULL) {
        free(b);
        return BREAKER_ENOMEM;
    }
    memset(s, 0, lay.total);
    breaker__clock_setup(b, &lim);
    breaker__block_init(s, &lay, &lim, b->now_precise(b), new_instance_id(s));
    /* A block this process just wrote always passes; checking it anyway keeps
     * the check exercised on every create. */
    if (breaker__block_check(s, lay.total, NULL, 0) != BREAKER_OK) {
        free(s);
        free(b);
        return BREAKER_EINCOMPATIBLE;
    }
    breaker__block_bind(b, s, lay.total, BREAKER__STRIPES_THREAD_OWNED, 0);
    if (check_setup(b) != BREAKER_OK) {
        free(s);
        free(b);
        return BREAKER_ENOMEM;
    }
    *out = b;
    return BREAKER_OK;
}

void breaker_destroy(breaker *b) {
    if (b == NULL) return;
    /* The home first: once it has let go, nobody forwards this handle any
     * more, and its forward (read after) is final. */
    if (b->home_detach != NULL) b->home_detach(b->home_ctx, b);
    breaker_destroy(atomic_load_explicit(&b->forward, memory_order_acquire));
    if (!b->block_borrowed) free(b->shared);
    check_free(b);
    free(b);
}

/* ---- Blocks a store places ------------------------------------------------------*/

int breaker__block_plan(const breaker_config *user, breaker_config *effective, size_t *size,
                        char *msg, size_t len) {
    if (user == NULL) {
        breaker_config_init(effective);
    } else {
        int rc = breaker_config_validate(user, msg, len);
        if (rc != BREAKER_OK) return rc;
        breaker_config_effective(user, effective);
    }
    if (effective->seed == 0) effective->seed = random_seed(effective);
    struct breaker__limits lim;
    breaker__limits_from_config(effective, &lim);
    struct breaker__block_layout lay;
    breaker__block_layout(&lim, &lay);
    *size = lay.total;
    return BREAKER_OK;
}

void breaker__block_create_at(void *mem, size_t size, const breaker_config *effective,
                              uint64_t epoch_ns) {
    struct breaker__limits lim;
    breaker__limits_from_config(effective, &lim);
    struct breaker__block_layout lay;
    breaker__block_layout(&lim, &lay);
    (void)size; /* the caller planned it: lay.total */
    breaker__block_init(mem, &lay, &lim, epoch_ns, new_instance_id(mem));
}

void breaker__block_config(const struct breaker__shared *s, breaker_config *out) {
    struct breaker__limits lim;
    breaker__limits_snapshot(s, &lim); /* as of one version: reconfig.c */
    breaker__config_of_limits(&lim, out);
}

int breaker__attach_block(void *mem, size_t size, uint64_t store_id, const breaker_config *cfg,
                          const breaker_owner *owner, const breaker_probe_gate *gate, breaker **out,
                          char *msg, size_t len) {
    *out = NULL;
    struct breaker__shared *s = mem;
    /* A change of its limits that a writer left half made (it died holding
     * the store's lock, which the caller holds now): completed or dropped
     * before the limits are checked. Only a block that passes the header's
     * checks is touched. */
    if ((uintptr_t)s % BREAKER__CACHELINE == 0 && size >= sizeof(struct breaker__shared) &&
        atomic_load_explicit((_Atomic uint64_t *)(void *)&s->magic, memory_order_acquire) ==
            BREAKER__MAGIC &&
        s->layout_version == BREAKER__LAYOUT_VERSION && s->abi == BREAKER__ABI)
        (void)breaker__limits_repair(s);
    int rc = breaker__block_check(s, size, msg, len);
    if (rc != BREAKER_OK) return rc;
    breaker *b = calloc(1, sizeof(*b));
    if (b == NULL) return BREAKER_ENOMEM;
    breaker__config_of_limits(&s->lim, &b->cfg);
    if (cfg != NULL) {
        b->cfg.clock = cfg->clock;
        b->cfg.clock_ctx = cfg->clock_ctx;
        b->cfg.on_event = cfg->on_event;
        b->cfg.event_ctx = cfg->event_ctx;
        b->cfg.checked_permits = cfg->checked_permits; /* the handle's own */
    }
    if (owner != NULL) b->owner = *owner;
    if (gate != NULL) b->gate = *gate;
    b->block_borrowed = true;
    b->seed_drawn = false; /* the block's seed: every process computes the same waits */
    breaker__clock_setup(b, &s->lim);
    breaker__block_bind(b, s, size, BREAKER__STRIPES_ATOMIC, store_id);
    if (check_setup(b) != BREAKER_OK) {
        free(b);
        return BREAKER_ENOMEM;
    }
    *out = b;
    return BREAKER_OK;
}
