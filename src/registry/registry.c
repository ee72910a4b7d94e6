/* SPDX-License-Identifier: MIT */
/*
 * registry.c - named breakers: the registry's lifecycle, names and
 * per-name configurations, lookups (get, find, release), transition events
 * and listeners, and idle eviction.
 *
 * The layout (entries, the dense slot array, the registry struct) is in
 * registry_internal.h, the name index in index.c, the reclamation that makes
 * lock-free lookups safe against frees in reclaim.h, and what the registry
 * shows of its breakers (info, walks, exporters' snapshots) in snapshot.c.
 * Breakers are made and freed only through the registry's backend, a table
 * of operations (breaker/backend.h; src/store/store.h): the process heap by
 * default, a store file, the fleet store, or a caller's own.
 *
 * Lookups take no lock: a read section, a probe of the name index, and a
 * reference taken on the entry found. Creation, eviction, index rebuilds and
 * override registration take `lock`, which no reader takes. A lookup never
 * misses an entry that stayed listed while it ran (index.c says why); a miss
 * in get() is confirmed under the lock before creating.
 *
 * References. A listed entry holds one reference for the table; each handle
 * returned by get/find holds one. Eviction unlinks the entry, waits for a
 * grace period (after which no reader can take a new reference from the
 * table) and drops the table's reference; whoever drops the last one
 * closes the breaker through the backend (detaching it) and frees its entry.
 */
#define _GNU_SOURCE
#include "registry/registry_internal.h"
#include "common/message.h"
#include "breaker/store.h"
#include "common/time_ns.h"
#include "core/internal.h" /* breaker__reconfigure_check() */
#include "core/names.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFAULT_MAX      1024u
#define DEFAULT_HISTORY  16u
#define DEFAULT_FLAP     6u
#define DEFAULT_FLAP_WIN (UINT64_C(600) * 1000000000u)
#define MAX_FLAP         1024u

/* The owner kind of the registry's breakers (core/owner.h): its address. */
static const char registry_kind = 'r';

struct breaker__override {
    struct breaker__override *next;
    char pattern[BREAKER_NAME_MAX + 1]; /* without the trailing '*' */
    size_t len;
    bool prefix;
    breaker_config cfg;
};

/* ---- Small helpers ---------------------------------------------------------*/

static uint64_t reg_now(const breaker_registry *reg) {
    return reg->cfg.clock != NULL ? reg->cfg.clock(reg->cfg.clock_ctx)
                                  : breaker__clock_ns(CLOCK_MONOTONIC);
}

static uint64_t relaxed_load(_Atomic uint64_t *p) {
    return atomic_load_explicit(p, memory_order_relaxed);
}

static void relaxed_inc(_Atomic uint64_t *p) {
    atomic_fetch_add_explicit(p, 1, memory_order_relaxed);
}

/* ---- Configuration ------------------------------------------------------- */

void breaker_registry_config_init(breaker_registry_config *cfg) {
    memset(cfg, 0, sizeof(*cfg));
    cfg->max_breakers = DEFAULT_MAX;
    cfg->history_size = DEFAULT_HISTORY;
    cfg->flap_threshold = DEFAULT_FLAP;
    cfg->flap_window_ns = DEFAULT_FLAP_WIN;
    breaker_config_init(&cfg->defaults);
}

static void registry_effective(const breaker_registry_config *in, breaker_registry_config *out) {
    *out = *in;
    if (out->max_breakers == 0) out->max_breakers = DEFAULT_MAX;
    if (out->history_size == 0) out->history_size = DEFAULT_HISTORY;
    if (out->flap_threshold == 0) out->flap_threshold = DEFAULT_FLAP;
    if (out->flap_window_ns == 0) out->flap_window_ns = DEFAULT_FLAP_WIN;
}

int breaker_registry_config_validate(const breaker_registry_config *in, char *msg, size_t msg_len) {
    breaker_registry_config c;
    registry_effective(in, &c);
    if (c.max_breakers > BREAKER_REGISTRY_MAX_BREAKERS) {
        (void)breaker__fail(0, msg, msg_len, "max_breakers: %u; allowed 1..%u (0 = default %u)",
                            c.max_breakers, BREAKER_REGISTRY_MAX_BREAKERS, DEFAULT_MAX);
        return BREAKER_EINVAL;
    }
    if (c.history_size > BREAKER_REGISTRY_MAX_HISTORY) {
        (void)breaker__fail(0, msg, msg_len, "history_size: %u; allowed 1..%u (0 = default %u)",
                            c.history_size, BREAKER_REGISTRY_MAX_HISTORY, DEFAULT_HISTORY);
        return BREAKER_EINVAL;
    }
    if (c.flap_threshold > MAX_FLAP) {
        (void)breaker__fail(0, msg, msg_len, "flap_threshold: %u; allowed 1..%u (0 = default %u)",
                            c.flap_threshold, MAX_FLAP, DEFAULT_FLAP);
        return BREAKER_EINVAL;
    }
    if (c.store != NULL && c.backend != NULL) {
        (void)breaker__fail(0, msg, msg_len,
                            "store and backend: both set; store is the short form of "
                            "backend = breaker_store_backend(store): set one");
        return BREAKER_EINVAL;
    }
    if (c.backend != NULL &&
        (c.backend->ops == NULL || c.backend->ops->open == NULL || c.backend->ops->close == NULL)) {
        (void)breaker__fail(0, msg, msg_len,
                            "backend: ops, ops->open and ops->close must be set "
                            "(breaker/backend.h)");
        return BREAKER_EINVAL;
    }
    char sub[200];
    if (breaker_config_validate(&c.defaults, sub, sizeof(sub)) != BREAKER_OK) {
        (void)breaker__fail(0, msg, msg_len, "defaults: %s", sub);
        return BREAKER_EINVAL;
    }
    return BREAKER_OK;
}

/* ---- Create and destroy ---------------------------------------------------- */

int breaker_registry_create(const breaker_registry_config *cfg, breaker_registry **out) {
    if (out == NULL) return BREAKER_EINVAL;
    *out = NULL;
    breaker_registry_config def;
    if (cfg == NULL) {
        breaker_registry_config_init(&def);
        cfg = &def;
    }
    if (breaker_registry_config_validate(cfg, NULL, 0) != BREAKER_OK) return BREAKER_EINVAL;

    breaker_registry *reg = calloc(1, sizeof(*reg));
    if (reg == NULL) return BREAKER_ENOMEM;
    registry_effective(cfg, &reg->cfg);
    if (breaker__index_init(&reg->names, reg->cfg.max_breakers) != BREAKER_OK) {
        free(reg);
        return BREAKER_ENOMEM;
    }
    reg->slots = calloc(reg->cfg.max_breakers, sizeof(*reg->slots));
    if (reg->slots == NULL || pthread_mutex_init(&reg->lock, NULL) != 0) {
        breaker__index_fini(&reg->names);
        free(reg->slots);
        free(reg);
        return BREAKER_ENOMEM;
    }
    if (pthread_mutex_init(&reg->set_lock, NULL) != 0) {
        pthread_mutex_destroy(&reg->lock);
        breaker__index_fini(&reg->names);
        free(reg->slots);
        free(reg);
        return BREAKER_ENOMEM;
    }
    for (size_t i = 0; i < reg->cfg.max_breakers; i++)
        atomic_init(&reg->slots[i], NULL);
    if (cfg->backend != NULL)
        reg->backend = *cfg->backend;
    else if (cfg->store != NULL)
        reg->backend = *breaker_store_backend(cfg->store);
    else
        reg->backend = breaker__backend_heap;
    breaker__reclaim_init(&reg->reclaim);
    *out = reg;
    return BREAKER_OK;
}

static void entry_free(struct breaker__entry *e) {
    /* Detach: the backend frees this process's handle, never shared state. */
    e->reg->backend.ops->close(e->reg->backend.ctx, e->b);
    breaker__history_fini(&e->hist);
    e->magic = 0;
    free(e);
}

/* Drop one reference; the last one frees. acq_rel: the freeing thread must
 * see every write the other holders made to the breaker before they let go. */
static void entry_unref(struct breaker__entry *e) {
    if (atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) == 1) entry_free(e);
}

void breaker__entry_unref(struct breaker__entry *e) { entry_unref(e); }

/* A read section keeps the entry from being freed until the reference is
 * taken (reclaim.h). */
struct breaker__entry *breaker__registry_hold_slot(breaker_registry *reg, size_t s) {
    _Atomic uint64_t *rs = breaker__reclaim_enter(&reg->reclaim);
    struct breaker__entry *e = atomic_load_explicit(&reg->slots[s], memory_order_acquire);
    if (e != NULL) atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
    breaker__reclaim_leave(rs);
    return e;
}

void breaker_registry_destroy(breaker_registry *reg) {
    if (reg == NULL) return;
    for (size_t i = 0; i < reg->cfg.max_breakers; i++) {
        struct breaker__entry *e = atomic_load_explicit(&reg->slots[i], memory_order_relaxed);
        if (e != NULL) entry_free(e);
    }
    while (reg->overrides != NULL) {
        struct breaker__override *o = reg->overrides;
        reg->overrides = o->next;
        free(o);
    }
    if (reg->backend.ops->fini != NULL) reg->backend.ops->fini(reg->backend.ctx);
    pthread_mutex_destroy(&reg->set_lock);
    pthread_mutex_destroy(&reg->lock);
    breaker__index_fini(&reg->names);
    free(reg->slots);
    free(reg);
}

/* ---- Overrides ------------------------------------------------------------- */

static const breaker_config *config_for(const breaker_registry *reg, const char *name);

/* Whether the live breaker of `e` takes its configuration from pattern
 * `o` (the best match for its name). */
static bool governed_by(breaker_registry *reg, const struct breaker__entry *e,
                        const struct breaker__override *o) {
    pthread_mutex_lock(&reg->lock);
    bool yes = config_for(reg, e->name) == &o->cfg;
    pthread_mutex_unlock(&reg->lock);
    return yes;
}

/* set_config's second half (issue 25): every live breaker the pattern now
 * governs takes its limits (breaker_reconfigure()); with `check`, nothing
 * is changed and the first that could not is named. Outside the lock: a
 * change's event reaches the listeners, which may call the registry.
 * @return BREAKER_OK, or the first refusal with `msg`. */
static int apply_live(breaker_registry *reg, const struct breaker__override *o, bool check,
                      char *msg, size_t msg_len) {
    int rc = BREAKER_OK;
    for (size_t s = 0; s < reg->cfg.max_breakers && rc == BREAKER_OK; s++) {
        struct breaker__entry *e = breaker__registry_hold_slot(reg, s);
        if (e == NULL) continue;
        if (!atomic_load_explicit(&e->evicted, memory_order_acquire) && governed_by(reg, e, o)) {
            char why[400];
            rc = check ? breaker__reconfigure_check(e->b, &o->cfg, why, sizeof(why))
                       : breaker_reconfigure(e->b, &o->cfg, 0, why, sizeof(why));
            if (rc != BREAKER_OK)
                (void)breaker__fail(0, msg, msg_len, "%s%s: live breaker %s: %s", o->pattern,
                                    o->prefix ? "*" : "", e->name, why);
        }
        entry_unref(e);
    }
    return rc;
}

/* The registry whose set_config this thread is in (a listener that calls it
 * again from inside, on the same thread, holds its set_lock already). */
static _Thread_local breaker_registry *setting;

/* An override no longer listed, freed when the outermost set_config ends.
 * Under set_lock. */
static void retire(breaker_registry *reg, struct breaker__override *o) {
    o->next = reg->retired;
    reg->retired = o;
}

/* Under set_lock: list `o` in place of the pattern's override, check, then
 * apply to the live breakers, or undo. */
static int set_config_locked(breaker_registry *reg, struct breaker__override *o, char *msg,
                             size_t msg_len) {
    /* The live breakers it will govern must all be able to take it: checked
     * first (nothing registered otherwise), applied after. A breaker made
     * meanwhile is made with it. */
    pthread_mutex_lock(&reg->lock);
    struct breaker__override **pp = &reg->overrides, *replaced = NULL;
    for (; *pp != NULL; pp = &(*pp)->next) {
        struct breaker__override *cur = *pp;
        if (cur->prefix == o->prefix && cur->len == o->len &&
            memcmp(cur->pattern, o->pattern, o->len) == 0) {
            o->next = cur->next;
            *pp = o;
            replaced = cur;
            break;
        }
    }
    if (replaced == NULL) *pp = o;
    pthread_mutex_unlock(&reg->lock);
    /* The check emits nothing: no listener runs, so `o` is still listed
     * for the undo. */
    int rc = apply_live(reg, o, true, msg, msg_len);
    if (rc != BREAKER_OK) { /* undo: as it was */
        pthread_mutex_lock(&reg->lock);
        for (pp = &reg->overrides; *pp != o; pp = &(*pp)->next) {
        }
        if (replaced != NULL) {
            replaced->next = o->next;
            *pp = replaced;
        } else {
            *pp = o->next;
        }
        pthread_mutex_unlock(&reg->lock);
        retire(reg, o);
        return rc;
    }
    if (replaced != NULL) retire(reg, replaced);
    /* A listener that sets the pattern again from inside replaces `o`:
     * retired, not freed, so this loop reads it safely and stops applying
     * it (no breaker is governed by it any more). */
    return apply_live(reg, o, false, msg, msg_len);
}

int breaker_registry_set_config(breaker_registry *reg, const char *pattern,
                                const breaker_config *cfg, char *msg, size_t msg_len) {
    size_t len = strnlen(pattern, BREAKER_NAME_MAX + 2);
    bool prefix = len > 0 && pattern[len - 1] == '*';
    if (prefix) len--;
    if (breaker__name_check(pattern, len, prefix, msg, msg_len) != BREAKER_OK)
        return BREAKER_EINVAL;
    char sub[200];
    if (breaker_config_validate(cfg, sub, sizeof(sub)) != BREAKER_OK) {
        (void)breaker__fail(0, msg, msg_len, "%s: %s", pattern, sub);
        return BREAKER_EINVAL;
    }
    struct breaker__override *o = calloc(1, sizeof(*o));
    if (o == NULL) return BREAKER_ENOMEM;
    memcpy(o->pattern, pattern, len);
    o->len = len;
    o->prefix = prefix;
    o->cfg = *cfg;
    /* One at a time: two calls racing on one pattern would each free the
     * override the other is applying (or undo one no longer listed). */
    bool outer = setting != reg;
    if (outer) {
        pthread_mutex_lock(&reg->set_lock);
        setting = reg;
    }
    int rc = set_config_locked(reg, o, msg, msg_len);
    if (outer) {
        while (reg->retired != NULL) {
            struct breaker__override *r = reg->retired;
            reg->retired = r->next;
            free(r);
        }
        setting = NULL;
        pthread_mutex_unlock(&reg->set_lock);
    }
    return rc;
}

/* The configuration for a new breaker `name`. Under lock. */
static const breaker_config *config_for(const breaker_registry *reg, const char *name) {
    const struct breaker__override *best = NULL;
    size_t name_len = strlen(name);
    for (const struct breaker__override *o = reg->overrides; o != NULL; o = o->next) {
        if (!o->prefix) {
            if (o->len == name_len && memcmp(o->pattern, name, name_len) == 0) return &o->cfg;
        } else if (o->len <= name_len && memcmp(o->pattern, name, o->len) == 0) {
            if (best == NULL || o->len > best->len) best = o;
        }
    }
    return best != NULL ? &best->cfg : &reg->cfg.defaults;
}

/* ---- Events ------------------------------------------------------------------ */

static void notify(breaker_registry *reg, const breaker_registry_event *ev) {
    /* Acquire pairs with the release in add_listener: a listener counted is
     * fully written. */
    unsigned n = atomic_load_explicit(&reg->n_listeners, memory_order_acquire);
    for (unsigned i = 0; i < n; i++)
        reg->listeners[i].fn(reg->listeners[i].ctx, ev);
}

void breaker__registry_notify_flap(struct breaker__entry *e, enum breaker__flap_change c,
                                   const breaker_event *last, uint32_t recent) {
    if (c == BREAKER__FLAP_NONE) return;
    breaker_registry_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.kind = c == BREAKER__FLAP_STARTED ? BREAKER_REGISTRY_FLAPPING_STARTED
                                         : BREAKER_REGISTRY_FLAPPING_STOPPED;
    ev.name = e->name;
    ev.b = e->b;
    ev.transition = *last;
    ev.recent_transitions = recent;
    notify(e->reg, &ev);
}

/* A reference for the length of a delivery, unless the entry is already
 * on its way out (no reference left): then whoever dropped the last one is
 * in the backend's close, which waits for this delivery before the entry is
 * freed. acquire on success: as entry_unref's acq_rel pairs. */
static bool entry_try_ref(struct breaker__entry *e) {
    uint64_t refs = atomic_load_explicit(&e->refs, memory_order_relaxed);
    while (refs != 0)
        if (atomic_compare_exchange_weak_explicit(&e->refs, &refs, refs + 1, memory_order_acquire,
                                                  memory_order_relaxed))
            return true;
    return false;
}

/* The on_event of every breaker in a registry. A listener may evict the
 * very breaker whose transition it hears (breaker_registry_evict_idle(), or
 * a get() that finds the registry full): the delivery holds a reference, so
 * the entry it reads lives until the last listener returns. The thread
 * making a transition normally holds one already; a backend's own thread
 * (the fleet store's flusher) holds none. */
static void dispatch(void *ctx, breaker *b, const breaker_event *bev) {
    struct breaker__entry *e = ctx;
    bool held = entry_try_ref(e);
    uint32_t recent = 0;
    /* A live change of the limits is no transition: listeners hear it, the
     * history and the flapping count (transitions) do not. */
    bool transition = bev->reason != BREAKER_REASON_RECONFIGURED;
    enum breaker__flap_change c =
        transition ? breaker__history_record(&e->hist, bev, &recent) : BREAKER__FLAP_NONE;
    breaker_registry_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.kind = transition ? BREAKER_REGISTRY_TRANSITION : BREAKER_REGISTRY_RECONFIGURED;
    ev.name = e->name;
    ev.b = b;
    ev.transition = *bev;
    ev.recent_transitions = recent;
    notify(e->reg, &ev);
    breaker__registry_notify_flap(e, c, bev, recent);
    if (held) entry_unref(e);
}

int breaker_registry_add_listener(breaker_registry *reg, breaker_registry_listener_fn *fn,
                                  void *ctx) {
    pthread_mutex_lock(&reg->lock);
    unsigned n = atomic_load_explicit(&reg->n_listeners, memory_order_relaxed);
    if (n >= BREAKER_REGISTRY_MAX_LISTENERS) {
        pthread_mutex_unlock(&reg->lock);
        return BREAKER_ENOSPC;
    }
    reg->listeners[n].fn = fn;
    reg->listeners[n].ctx = ctx;
    atomic_store_explicit(&reg->n_listeners, n + 1, memory_order_release);
    pthread_mutex_unlock(&reg->lock);
    return BREAKER_OK;
}

/* ---- Lookup ------------------------------------------------------------------ */

static void touch(breaker_registry *reg, struct breaker__entry *e) {
    if (reg->cfg.idle_evict_ns == 0) return;
    /* Write the shared line only when the stamp is noticeably old, so that a
     * hot name's lookups do not all write the same cache line. */
    uint64_t now = reg_now(reg);
    uint64_t last = relaxed_load(&e->last_used);
    if (now > last && now - last > reg->cfg.idle_evict_ns / 16)
        atomic_store_explicit(&e->last_used, now, memory_order_relaxed);
}

/* Lock-free lookup; returns a new reference or NULL. */
static struct breaker__entry *lookup(breaker_registry *reg, const char *name, uint32_t h) {
    _Atomic uint64_t *rs = breaker__reclaim_enter(&reg->reclaim);
    struct breaker__entry *e =
        breaker__index_probe(breaker__index_current(&reg->names), name, h, NULL);
    if (e != NULL) {
        /* The table's reference keeps refs >= 1 during the read section.
         * seq_cst with the load of `evicted`: an evictor sets the flag before
         * it unlinks, so we either see it or took our reference before. */
        atomic_fetch_add_explicit(&e->refs, 1, memory_order_seq_cst);
        if (atomic_load_explicit(&e->evicted, memory_order_seq_cst)) {
            atomic_fetch_sub_explicit(&e->refs, 1, memory_order_relaxed);
            e = NULL;
        }
    }
    breaker__reclaim_leave(rs);
    if (e != NULL) touch(reg, e);
    return e;
}

int breaker_registry_find(breaker_registry *reg, const char *name, breaker **out) {
    *out = NULL;
    if (breaker_name_validate(name, NULL, 0) != BREAKER_OK) return BREAKER_NOT_FOUND;
    struct breaker__entry *e = lookup(reg, name, breaker__index_hash(name));
    if (e == NULL) return BREAKER_NOT_FOUND;
    *out = e->b;
    return BREAKER_OK;
}

/* ---- Insertion and removal (under lock) --------------------------------------*/

/* Unlink `e` from both tables. The caller synchronizes, then unrefs. */
static void unlink_entry(breaker_registry *reg, struct breaker__entry *e) {
    atomic_store_explicit(&e->evicted, 1, memory_order_seq_cst);
    breaker__index_remove(&reg->names, e);
    atomic_store_explicit(&reg->slots[e->slot], NULL, memory_order_release);
    reg->listed--;
    atomic_fetch_sub_explicit(&reg->n_listed, 1, memory_order_relaxed);
}

/* Whether `e` may be evicted now: closed, nothing in flight, quiet long
 * enough. Updates its activity sample. Under lock. */
static bool evictable(breaker_registry *reg, struct breaker__entry *e) {
    breaker_stats st;
    breaker_stats_get(e->b, &st);
    /* The clock after the counters: a lookup stamped before it is seen. */
    uint64_t now = reg_now(reg);
    uint64_t activity = st.admitted + st.rejected_open + st.rejected_half_open +
                        st.rejected_forced + st.successes + st.failures + st.ignored + st.stale;
    if (activity != e->seen_activity) {
        e->seen_activity = activity;
        e->seen_at = now;
        return false;
    }
    uint64_t settled = st.successes + st.failures + st.ignored + st.stale;
    if (st.state != BREAKER_CLOSED || st.admitted > settled) return false;
    uint64_t last = relaxed_load(&e->last_used);
    if (e->seen_at > last) last = e->seen_at;
    return now >= last && now - last >= reg->cfg.idle_evict_ns;
}

/* Unlink the idle entries and wait until no reader can take a new
 * reference to them, under the lock. The caller drops the table's
 * references with drop_victims() AFTER unlocking: dropping the last one
 * closes the breaker through the backend, and a backend's close may wait
 * for work that itself needs the lock (the fleet store finishing the delivery
 * of an event whose listener calls breaker_registry_get()). */
static struct breaker__entry *evict_locked(breaker_registry *reg, size_t *count) {
    *count = 0;
    if (reg->cfg.idle_evict_ns == 0) return NULL;
    struct breaker__entry *victims = NULL;
    size_t n = 0;
    for (size_t s = 0; s < reg->cfg.max_breakers; s++) {
        struct breaker__entry *e = atomic_load_explicit(&reg->slots[s], memory_order_relaxed);
        if (e == NULL || !evictable(reg, e)) continue;
        unlink_entry(reg, e);
        e->victim_next = victims;
        victims = e;
        n++;
    }
    if (n == 0) return NULL;
    breaker__reclaim_synchronize(&reg->reclaim);
    atomic_fetch_add_explicit(&reg->evicted, n, memory_order_relaxed);
    *count = n;
    return victims;
}

/* The second half of an eviction, without the lock. */
static void drop_victims(struct breaker__entry *victims) {
    while (victims != NULL) {
        struct breaker__entry *e = victims;
        victims = e->victim_next;
        entry_unref(e);
    }
}

int breaker_registry_evict_idle(breaker_registry *reg, size_t *evicted) {
    size_t n = 0;
    pthread_mutex_lock(&reg->lock);
    struct breaker__entry *victims = evict_locked(reg, &n);
    pthread_mutex_unlock(&reg->lock);
    drop_victims(victims);
    if (evicted != NULL) *evicted = n;
    return BREAKER_OK;
}

static int create_locked(breaker_registry *reg, const char *name, uint32_t h,
                         _Atomic(struct breaker__entry *) *cell, struct breaker__entry **out) {
    size_t slot = 0;
    while (atomic_load_explicit(&reg->slots[slot], memory_order_relaxed) != NULL)
        slot++;
    struct breaker__entry *e = calloc(1, sizeof(*e));
    if (e == NULL) return BREAKER_ENOMEM;
    int rc = breaker__history_init(&e->hist, reg->cfg.history_size, reg->cfg.flap_threshold,
                                   reg->cfg.flap_window_ns);
    if (rc != BREAKER_OK) {
        free(e);
        return rc;
    }
    /* What dispatch() reads is set before the handle exists: a backend that
     * attaches to a shared breaker may report a transition at once. */
    e->reg = reg;
    e->hash = h;
    e->slot = (uint32_t)slot;
    strcpy(e->name, name);
    breaker_owner owner = {.kind = &registry_kind, .ctx = e, .on_event = dispatch};
    rc = reg->backend.ops->open(reg->backend.ctx, name, config_for(reg, name), &owner, &e->b);
    if (rc == BREAKER_CONFIG_DIFFERS) rc = BREAKER_OK; /* attached, to the stored limits */
    if (rc != BREAKER_OK) {
        breaker__history_fini(&e->hist);
        free(e);
        return rc;
    }
    e->magic = BREAKER__ENTRY_MAGIC;
    atomic_init(&e->refs, 2); /* the table's and the caller's */
    atomic_init(&e->evicted, 0);
    uint64_t now = reg->cfg.idle_evict_ns != 0 ? reg_now(reg) : 0;
    atomic_init(&e->last_used, now);
    e->seen_at = now;

    /* Release: a reader that loads the pointer sees the entry initialised. */
    atomic_store_explicit(&reg->slots[slot], e, memory_order_release);
    breaker__index_insert(&reg->names, cell, e);
    reg->listed++;
    atomic_fetch_add_explicit(&reg->n_listed, 1, memory_order_relaxed);
    relaxed_inc(&reg->created);
    *out = e;
    return BREAKER_OK;
}

int breaker_registry_get(breaker_registry *reg, const char *name, breaker **out) {
    *out = NULL;
    if (breaker_name_validate(name, NULL, 0) != BREAKER_OK) {
        relaxed_inc(&reg->invalid_names);
        return BREAKER_EINVAL;
    }
    uint32_t h = breaker__index_hash(name);
    struct breaker__entry *e = lookup(reg, name, h);
    if (e != NULL) {
        *out = e->b;
        return BREAKER_OK;
    }

    pthread_mutex_lock(&reg->lock);
    int rc = BREAKER_OK;
    struct breaker__entry *victims = NULL;
    e = breaker__index_probe(breaker__index_current(&reg->names), name, h, NULL);
    if (e != NULL) {
        /* Another thread created it first; under the lock it cannot go. */
        atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
    } else {
        size_t unused;
        if (reg->listed >= reg->cfg.max_breakers) victims = evict_locked(reg, &unused);
        if (reg->listed >= reg->cfg.max_breakers) {
            relaxed_inc(&reg->rejected_full);
            rc = BREAKER_REGISTRY_FULL;
        } else {
            _Atomic(struct breaker__entry *) *cell = breaker__index_insert_cell(
                &reg->names, name, h, reg->slots, reg->cfg.max_breakers, &reg->reclaim);
            rc = create_locked(reg, name, h, cell, &e);
        }
    }
    pthread_mutex_unlock(&reg->lock);
    drop_victims(victims);
    if (rc == BREAKER_OK) *out = e->b;
    return rc;
}

/* The entry behind a breaker handed out by `reg`, or NULL. */
static struct breaker__entry *entry_of(breaker_registry *reg, breaker *b) {
    /* The handle's owner, never the configuration: a breaker created from a
     * copy of this one's configuration is not the registry's. */
    struct breaker__entry *e = breaker_owner_ctx(b, &registry_kind);
    if (e == NULL || e->magic != BREAKER__ENTRY_MAGIC || e->reg != reg) return NULL;
    return e;
}

int breaker_registry_release(breaker_registry *reg, breaker *b) {
    struct breaker__entry *e = entry_of(reg, b);
    if (e == NULL) return BREAKER_EINVAL;
    entry_unref(e);
    return BREAKER_OK;
}

struct breaker__entry *breaker__registry_entry_of(breaker_registry *reg, breaker *b) {
    return entry_of(reg, b);
}

const char *breaker_registry_name(breaker_registry *reg, breaker *b) {
    struct breaker__entry *e = entry_of(reg, b);
    return e != NULL ? e->name : NULL;
}

/* ---- Counters ---------------------------------------------------------------- */

int breaker_registry_stats_get(breaker_registry *reg, breaker_registry_stats *out) {
    memset(out, 0, sizeof(*out));
    out->breakers = relaxed_load(&reg->n_listed);
    out->max_breakers = reg->cfg.max_breakers;
    out->created = relaxed_load(&reg->created);
    out->evicted = relaxed_load(&reg->evicted);
    out->rejected_full = relaxed_load(&reg->rejected_full);
    out->invalid_names = relaxed_load(&reg->invalid_names);
    return BREAKER_OK;
}
