/* SPDX-License-Identifier: MIT */
/*
 * snapshot.c - what a registry shows of its breakers: one breaker's info
 * (state, counters, transitions, flapping), the walk over every listed
 * breaker, the degraded verdict, and the self-contained, sorted snapshots
 * the exporters write from, also of a store's breakers.
 *
 * The walk visits the dense slot array (registry_internal.h), where an entry
 * keeps its slot for as long as it is listed: each visit takes a reference
 * inside a read section, so a visited breaker cannot be freed during its
 * callback, and no breaker is visited twice. Reading a breaker's history
 * re-evaluates its flapping flag, so a snapshot may be what tells the
 * listeners that flapping stopped.
 */
#include "registry/registry_internal.h"

#include "breaker/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Introspection --------------------------------------------------------- */

/* Fill what `info` says of breaker `b` itself (state, counters, clock),
 * registry or not. */
static void read_breaker(breaker *b, breaker_registry_info *info) {
    (void)breaker_get_state(b); /* applies a hung probe's timeout */
    breaker_stats_get(b, &info->stats);
    info->now_ns = breaker_now_ns(b);
    info->retry_after_ns = breaker_retry_after_ns(b);
    info->awaiting_probe =
        info->stats.state == BREAKER_OPEN && info->stats.open_until_ns <= info->now_ns;
}

/* Fill `info` for `e` (held by the caller). */
static void snapshot(struct breaker__entry *e, breaker_registry_info *info, breaker_event *hist,
                     size_t cap) {
    memset(info, 0, sizeof(*info));
    info->name = e->name;
    info->b = e->b;
    read_breaker(e->b, info);
    for (unsigned i = 0; i < BREAKER_STATE_COUNT; i++)
        for (unsigned j = 0; j < BREAKER_STATE_COUNT; j++)
            info->transitions_by[i][j] =
                atomic_load_explicit(&e->hist.by_pair[i][j], memory_order_relaxed);
    breaker_event last;
    enum breaker__flap_change c =
        breaker__history_read(&e->hist, info->now_ns, hist, cap, &info->history_len,
                              &info->flapping, &info->recent_transitions, &last);
    info->history = hist;
    breaker__registry_notify_flap(e, c, &last, info->recent_transitions);
}

int breaker_registry_info_get(breaker_registry *reg, breaker *b, breaker_registry_info *out,
                              breaker_event *history, size_t history_cap) {
    struct breaker__entry *e = breaker__registry_entry_of(reg, b);
    if (e == NULL) return BREAKER_EINVAL;
    snapshot(e, out, history, history == NULL ? 0 : history_cap);
    return BREAKER_OK;
}

int breaker_registry_foreach(breaker_registry *reg,
                             int (*fn)(void *ctx, const breaker_registry_info *info), void *ctx) {
    breaker_event *hist = malloc(reg->cfg.history_size * sizeof(*hist));
    if (hist == NULL) return BREAKER_ENOMEM;
    int rc = BREAKER_OK;
    for (size_t s = 0; s < reg->cfg.max_breakers && rc == BREAKER_OK; s++) {
        struct breaker__entry *e = breaker__registry_hold_slot(reg, s);
        if (e == NULL) continue;
        breaker_registry_info info;
        snapshot(e, &info, hist, reg->cfg.history_size);
        rc = fn(ctx, &info);
        breaker__entry_unref(e);
    }
    free(hist);
    return rc;
}

int breaker__info_degraded(const breaker_registry_info *info) {
    switch (info->stats.state) {
    case BREAKER_OPEN:
    case BREAKER_HALF_OPEN:
    case BREAKER_FORCED_OPEN:
        return 1;
    case BREAKER_CLOSED:
    case BREAKER_FORCED_CLOSED:
        break;
    }
    return info->flapping != 0;
}

static int degraded_cb(void *ctx, const breaker_registry_info *info) {
    (void)ctx;
    return breaker__info_degraded(info) ? 1 : BREAKER_OK;
}

int breaker_registry_degraded(breaker_registry *reg) {
    /* A walk stopped by the first degraded breaker returns 1. ENOMEM is
     * reported as degraded: the safe answer when we cannot tell. */
    return breaker_registry_foreach(reg, degraded_cb, NULL) != BREAKER_OK;
}

/* ---- Snapshots for the exporters --------------------------------------------*/

struct collect {
    struct breaker__snapshot *v;
    size_t n, cap;
    int with_history;
    int failed;
};

/* The snapshot's name, limits and call durations, from `b`. */
static void read_limits(breaker *b, const char *name, struct breaker__snapshot *s) {
    snprintf(s->name, sizeof(s->name), "%s", name);
    breaker_get_config(b, &s->cfg);
    s->timed = breaker_latency_get(b, &s->latency) == BREAKER_OK;
    (void)breaker_probe_latency_get(b, &s->probes);
}

/* Make room for one more snapshot. @return BREAKER_OK or BREAKER_ENOMEM. */
static int collect_room(struct collect *c) {
    if (c->n < c->cap) return BREAKER_OK;
    size_t cap = c->cap ? c->cap * 2 : 16;
    struct breaker__snapshot *v = realloc(c->v, cap * sizeof(*v));
    if (v == NULL) return BREAKER_ENOMEM;
    c->v = v;
    c->cap = cap;
    return BREAKER_OK;
}

static int collect_cb(void *ctx, const breaker_registry_info *info) {
    struct collect *c = ctx;
    if (collect_room(c) != BREAKER_OK) return BREAKER_ENOMEM;
    struct breaker__snapshot *s = &c->v[c->n];
    memset(s, 0, sizeof(*s));
    read_limits(info->b, info->name, s); /* held during the callback */
    s->info = *info;
    s->info.name = NULL;
    s->info.b = NULL; /* not held after the walk */
    s->info.history = NULL;
    s->info.history_len = 0;
    if (c->with_history && info->history_len > 0) {
        s->history = malloc(info->history_len * sizeof(*s->history));
        if (s->history == NULL) return BREAKER_ENOMEM;
        memcpy(s->history, info->history, info->history_len * sizeof(*s->history));
        s->info.history_len = info->history_len;
    }
    c->n++;
    return BREAKER_OK;
}

static int by_name(const void *a, const void *b) {
    return strcmp(((const struct breaker__snapshot *)a)->name,
                  ((const struct breaker__snapshot *)b)->name);
}

int breaker__snapshots_take(breaker_registry *reg, int with_history, struct breaker__snapshot **out,
                            size_t *n) {
    struct collect c = {.with_history = with_history};
    int rc = breaker_registry_foreach(reg, collect_cb, &c);
    if (rc != BREAKER_OK) {
        breaker__snapshots_free(c.v, c.n);
        *out = NULL;
        *n = 0;
        return rc;
    }
    if (c.n > 1) qsort(c.v, c.n, sizeof(*c.v), by_name);
    /* A breaker evicted during the walk and created again under the same name
     * in a slot not yet visited is seen twice; an export must name a series
     * once, so keep one (either is a true picture of a moment of the walk). */
    size_t kept = 0;
    for (size_t i = 0; i < c.n; i++) {
        if (kept > 0 && strcmp(c.v[kept - 1].name, c.v[i].name) == 0) {
            free(c.v[i].history);
            continue;
        }
        if (kept != i) c.v[kept] = c.v[i];
        kept++;
    }
    c.n = kept;
    /* Point into each element only now that the array no longer moves. */
    for (size_t i = 0; i < c.n; i++) {
        c.v[i].info.name = c.v[i].name;
        c.v[i].info.history = c.v[i].history;
    }
    *out = c.v;
    *n = c.n;
    return BREAKER_OK;
}

/* ---- Snapshots of a store's breakers (breaker/store.h) ---------------------*/

/* A store's names, copied out: attaching while breaker_store_foreach()
 * runs could wait on the store's lock. */
struct store_names {
    char **v;
    size_t n, cap;
    const char *only; /* NULL: every name */
};

static int store_name_cb(void *ctx, const char *name) {
    struct store_names *l = ctx;
    if (l->only != NULL && strcmp(name, l->only) != 0) return 0;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        char **v = realloc(l->v, cap * sizeof(*v));
        if (v == NULL) return 1;
        l->v = v;
        l->cap = cap;
    }
    size_t len = strlen(name) + 1; /* strdup() is not C11 */
    if ((l->v[l->n] = malloc(len)) == NULL) return 1;
    memcpy(l->v[l->n++], name, len);
    return 0;
}

/* Attach the stored breaker `name` with the limits it has (NULL: the stored
 * ones win) and take its snapshot into `s`. A store keeps no per-pair
 * transitions and no history: those stay 0. */
static int store_snapshot(breaker_store *st, const char *name, struct breaker__snapshot *s) {
    memset(s, 0, sizeof(*s));
    breaker *b;
    int rc = breaker_store_attach(st, name, NULL, &b, NULL, 0);
    if (rc != BREAKER_OK && rc != BREAKER_CONFIG_DIFFERS) return rc;
    read_limits(b, name, s);
    read_breaker(b, &s->info);
    breaker_destroy(b);
    return BREAKER_OK;
}

int breaker__store_snapshots_take(breaker_store *st, const char *name,
                                  struct breaker__snapshot **out, size_t *n) {
    struct store_names names = {.only = name};
    struct collect c = {0};
    int rc = breaker_store_foreach(st, store_name_cb, &names) == 0 ? BREAKER_OK : BREAKER_ENOMEM;
    if (rc == BREAKER_OK && name != NULL && names.n == 0) rc = BREAKER_NOT_FOUND;
    for (size_t i = 0; i < names.n && rc == BREAKER_OK; i++) {
        rc = collect_room(&c);
        if (rc == BREAKER_OK) rc = store_snapshot(st, names.v[i], &c.v[c.n]);
        if (rc == BREAKER_OK) c.n++;
    }
    for (size_t i = 0; i < names.n; i++)
        free(names.v[i]);
    free(names.v);
    if (rc != BREAKER_OK) {
        breaker__snapshots_free(c.v, c.n);
        *out = NULL;
        *n = 0;
        return rc;
    }
    if (c.n > 1) qsort(c.v, c.n, sizeof(*c.v), by_name);
    for (size_t i = 0; i < c.n; i++)
        c.v[i].info.name = c.v[i].name;
    *out = c.v;
    *n = c.n;
    return BREAKER_OK;
}

void breaker__snapshots_free(struct breaker__snapshot *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(s[i].history);
    free(s);
}
