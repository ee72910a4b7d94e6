/* SPDX-License-Identifier: MIT */
/*
 * registry_internal.h - the registry's private layout and what its files
 * share with each other and with the exporters (src/export): registry.c
 * (lifecycle, get/find/release, listeners, eviction), index.c (the name
 * index), history.c (each breaker's transition ring and flapping flag) and
 * snapshot.c (what the registry shows of its breakers).
 * Private: nothing here is API.
 *
 * Each breaker lives in an entry (name, reference count, history). Entries
 * are listed twice:
 *  - `slots`, a dense array of max_breakers atomic pointers. An entry keeps
 *    its slot for as long as it is listed, so walking the array visits each
 *    listed entry once, whatever creations and evictions happen meanwhile;
 *    this is what snapshots and the exporters iterate.
 *  - the name index (index.c), for lookups by name.
 * Readers load both without a lock, inside a read section (reclaim.h);
 * whatever unlinks an entry or an index array waits for a grace period
 * before it frees or reuses it.
 */
#ifndef BREAKER_REGISTRY_INTERNAL_H
#define BREAKER_REGISTRY_INTERNAL_H

#include "breaker.h"
#include "breaker/registry.h"
#include "registry/reclaim.h"
#include "store/store.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---- history.c: one breaker's transition ring and flapping flag ----------- */

struct breaker__history {
    pthread_mutex_t lock; /* transitions are rare; readers copy under it */
    breaker_event *ring;  /* `cap` records, the oldest overwritten first */
    uint32_t cap;         /* max(history_size, flap_threshold + 1) */
    uint32_t keep;        /* history_size: how many a report shows */
    uint32_t next;        /* records held, up to cap */
    uint32_t flap_threshold;
    uint64_t flap_window_ns;
    int flapping;
    /* [from][to] counts; relaxed counters, read by exporters. */
    _Atomic uint64_t by_pair[BREAKER_STATE_COUNT][BREAKER_STATE_COUNT];
};

/* What a flag update changed. */
enum breaker__flap_change { BREAKER__FLAP_NONE, BREAKER__FLAP_STARTED, BREAKER__FLAP_STOPPED };

int breaker__history_init(struct breaker__history *h, uint32_t keep, uint32_t flap_threshold,
                          uint64_t flap_window_ns);
void breaker__history_fini(struct breaker__history *h);
/* Record `ev`; returns whether the flapping flag changed, and the number of
 * transitions within the flap window in `*recent`. */
enum breaker__flap_change breaker__history_record(struct breaker__history *h,
                                                  const breaker_event *ev, uint32_t *recent);
/* Re-evaluate the flag at `now` (it may clear), copy up to `cap` of the newest
 * kept transitions, oldest first, into `out`. */
enum breaker__flap_change breaker__history_read(struct breaker__history *h, uint64_t now,
                                                breaker_event *out, size_t cap, size_t *n,
                                                int *flapping, uint32_t *recent,
                                                breaker_event *last);

#define BREAKER__ENTRY_MAGIC UINT64_C(0x42524b52454e5452) /* "BRKRENTR" */

/* The registry's record of one breaker. */
struct breaker__entry {
    uint64_t magic;
    breaker_registry *reg;
    breaker *b;
    _Atomic uint64_t refs;
    _Atomic int evicted;        /* set before the entry is unlinked */
    _Atomic uint64_t last_used; /* registry clock at the last get/find */
    uint32_t hash;
    uint32_t slot; /* index in reg->slots */
    /* Idleness sampling; touched only under reg->lock. */
    uint64_t seen_activity;
    uint64_t seen_at;
    struct breaker__entry *victim_next; /* eviction's list, under reg->lock */
    struct breaker__history hist;
    char name[BREAKER_NAME_MAX + 1];
};

/* ---- index.c: the name index ----------------------------------------------- */

/* Index cells hold an entry, NULL (never used: ends a probe) or TOMBSTONE,
 * an address no entry can have (entries are malloc'd, hence aligned). */
#define BREAKER__TOMBSTONE ((struct breaker__entry *)(uintptr_t)1)

/* One open-addressing array (linear probing), a power of two long. */
struct breaker__index_array {
    size_t mask;
    _Atomic(struct breaker__entry *) *cells;
};

/* Two arrays: the one readers use and a spare for rebuilds. */
struct breaker__index {
    struct breaker__index_array arrays[2];
    _Atomic(struct breaker__index_array *) cur; /* the one readers use */
    size_t tombstones;                          /* in *cur; under the registry lock */
};

/* Allocate both arrays for up to `max_breakers` entries. @return BREAKER_OK
 * or BREAKER_ENOMEM (then nothing is held). */
int breaker__index_init(struct breaker__index *ix, uint32_t max_breakers);
void breaker__index_fini(struct breaker__index *ix);

/* The cell a new entry called `name` goes into, under the registry lock.
 * Rebuilds the index first (from the `n_slots` listed `slots`, waiting for a
 * grace period of `rc`) when too few never-used cells are left. */
_Atomic(struct breaker__entry *) *
breaker__index_insert_cell(struct breaker__index *ix, const char *name, uint32_t h,
                           _Atomic(struct breaker__entry *) *slots, size_t n_slots,
                           struct breaker__reclaim *rc);
/* Publish `e` in `cell` (from breaker__index_insert_cell()). Under lock. */
void breaker__index_insert(struct breaker__index *ix, _Atomic(struct breaker__entry *) *cell,
                           struct breaker__entry *e);
/* Replace `e` by a tombstone. Under lock; the caller waits for a grace
 * period before it frees `e`. */
void breaker__index_remove(struct breaker__index *ix, struct breaker__entry *e);

/* The lookup path's part of the index is inline: a lookup hit must cost no
 * call beyond the library entry point. */

static inline uint32_t breaker__index_hash(const char *s) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s != '\0'; s++) {
        h ^= (unsigned char)*s;
        h *= 16777619u;
    }
    return h;
}

/* The array to probe. Acquire pairs with the release store that publishes a
 * rebuilt array: a reader sees its cells. Inside a read section, or under
 * the registry lock. */
static inline struct breaker__index_array *breaker__index_current(struct breaker__index *ix) {
    return atomic_load_explicit(&ix->cur, memory_order_acquire);
}

/* Probe `a` for `name`. Returns the entry, or NULL. With `free_cell`
 * non-NULL (under lock), also reports the first reusable cell for an
 * insertion. A probe never misses an entry that stayed listed while it ran:
 * in one array a cell only goes NULL -> entry -> TOMBSTONE -> entry, so a
 * probe chain never gets a NULL in the middle. */
static inline struct breaker__entry *
breaker__index_probe(struct breaker__index_array *a, const char *name, uint32_t h,
                     _Atomic(struct breaker__entry *) **free_cell) {
    if (free_cell != NULL) *free_cell = NULL;
    for (size_t i = 0; i <= a->mask; i++) {
        _Atomic(struct breaker__entry *) *cell = &a->cells[(h + i) & a->mask];
        /* Acquire pairs with the release store that published the entry. */
        struct breaker__entry *e = atomic_load_explicit(cell, memory_order_acquire);
        if (e == NULL) {
            if (free_cell != NULL && *free_cell == NULL) *free_cell = cell;
            return NULL;
        }
        if (e == BREAKER__TOMBSTONE) {
            if (free_cell != NULL && *free_cell == NULL) *free_cell = cell;
            continue;
        }
        if (e->hash == h && strcmp(e->name, name) == 0) return e;
    }
    return NULL;
}

/* ---- registry.c ------------------------------------------------------------ */

struct breaker__override; /* a per-name configuration, registry.c */

struct breaker__listener {
    breaker_registry_listener_fn *fn;
    void *ctx;
};

struct breaker_registry {
    breaker_registry_config cfg;
    pthread_mutex_t lock;
    struct breaker__index names;
    _Atomic(struct breaker__entry *) *slots;
    size_t listed;                       /* under lock */
    struct breaker__override *overrides; /* under lock */
    /* breaker_registry_set_config() one at a time (registry.c): each frees
     * the override it replaces, which another may still be applying. The
     * overrides replaced meanwhile, freed when the outermost call ends (a
     * listener may call set_config from inside one). Under set_lock. */
    pthread_mutex_t set_lock;
    struct breaker__override *retired;
    struct breaker__reclaim reclaim; /* read sections for lock-free lookups */
    struct breaker__listener listeners[BREAKER_REGISTRY_MAX_LISTENERS];
    _Atomic unsigned n_listeners;
    _Atomic uint64_t n_listed, created, evicted, rejected_full, invalid_names;
    /* Where the breakers are made and freed (breaker/backend.h): a copy of
     * cfg.backend, or of the store file's (cfg.store), or the heap's. Its
     * context is not owned. */
    breaker_backend backend;
};

/* Drop one reference on `e`; the last one frees it. */
void breaker__entry_unref(struct breaker__entry *e);
/* A reference on the entry in dense slot `s` (release it with
 * breaker__entry_unref()), or NULL for an empty slot. */
struct breaker__entry *breaker__registry_hold_slot(breaker_registry *reg, size_t s);
/* The entry behind a breaker handed out by `reg`, or NULL. */
struct breaker__entry *breaker__registry_entry_of(breaker_registry *reg, breaker *b);
/* Tell the listeners that `e`'s flapping flag changed (nothing if
 * BREAKER__FLAP_NONE); `last` is the latest transition. */
void breaker__registry_notify_flap(struct breaker__entry *e, enum breaker__flap_change c,
                                   const breaker_event *last, uint32_t recent);

/* ---- snapshot.c: snapshots for the exporters ------------------------------ */

/* A self-contained copy of one breaker's info (name and history included),
 * so exporters can sort and walk several families after the walk ended. */
struct breaker__snapshot {
    char name[BREAKER_NAME_MAX + 1];
    breaker_registry_info info; /* info.name and info.history point into this */
    breaker_event *history;     /* malloc'd, info.history_len records */
    breaker_config cfg;         /* breaker_get_config(): the limits the exports
                                   show next to the counters (its callbacks and
                                   contexts are not for calling) */
    breaker_latency latency;    /* call durations, when `timed` */
    int timed;                  /* the breaker times its calls (slow_call_ns > 0) */
    /* Probe durations by result (every breaker keeps them). */
    breaker_probe_latency probes;
};

/* Snapshot every listed breaker, sorted by name. Free with
 * breaker__snapshots_free(). @return BREAKER_OK or BREAKER_ENOMEM. */
int breaker__snapshots_take(breaker_registry *reg, int with_history, struct breaker__snapshot **out,
                            size_t *n);
/* Snapshot the breakers of a store (or, with `name` not NULL, that one),
 * sorted by name, each attached with its stored limits for the moment it
 * is read. A store keeps neither per-pair transitions nor history: those
 * fields are 0. @return BREAKER_OK, BREAKER_NOT_FOUND (no breaker `name`),
 * BREAKER_ENOMEM, or the error of an attach. */
int breaker__store_snapshots_take(struct breaker_store *st, const char *name,
                                  struct breaker__snapshot **out, size_t *n);
void breaker__snapshots_free(struct breaker__snapshot *s, size_t n);
/* Whether one breaker makes the service degraded. */
int breaker__info_degraded(const breaker_registry_info *info);

#endif /* BREAKER_REGISTRY_INTERNAL_H */
