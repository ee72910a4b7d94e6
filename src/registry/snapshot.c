/* SPDX-License-Identifier: MIT */
/*
 * snapshot.c - what a registry shows of its breakers: one breaker's info
 * (state, counters, transitions, flapping), the walk over every listed
 * breaker, the degraded verdict, and the self-contained, sorted snapshots
 * the exporters write from.
 *
 * The walk visits the dense slot array (registry_impl.h), where an entry
 * keeps its slot for as long as it is listed: each visit takes a reference
 * inside a read section, so a visited breaker cannot be freed during its
 * callback, and no breaker is visited twice. Reading a breaker's history
 * re-evaluates its flapping flag, so a snapshot may be what tells the
 * listeners that flapping stopped.
 */
#include "registry/registry_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Introspection --------------------------------------------------------- */

/* Fill `info` for `e` (held by the caller). */
static void snapshot(struct breaker__entry *e, breaker_registry_info *info, breaker_event *hist,
                     size_t cap) {
    memset(info, 0, sizeof(*info));
    info->name = e->name;
    info->b = e->b;
    (void)breaker_get_state(e->b); /* applies a hung probe's timeout */
    breaker_stats_get(e->b, &info->stats);
    info->now_ns = breaker_now_ns(e->b);
    info->retry_after_ns = breaker_retry_after_ns(e->b);
    info->awaiting_probe =
        info->stats.state == BREAKER_OPEN && info->stats.open_until_ns <= info->now_ns;
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

/* Take a reference on the entry in dense slot `s`, or NULL. */
static struct breaker__entry *hold_slot(breaker_registry *reg, size_t s) {
    _Atomic uint64_t *rs = breaker__reclaim_enter(&reg->reclaim);
    struct breaker__entry *e = atomic_load_explicit(&reg->slots[s], memory_order_acquire);
    if (e != NULL) atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
    breaker__reclaim_leave(rs);
    return e;
}

int breaker_registry_foreach(breaker_registry *reg,
                             int (*fn)(void *ctx, const breaker_registry_info *info), void *ctx) {
    breaker_event *hist = malloc(reg->cfg.history_size * sizeof(*hist));
    if (hist == NULL) return BREAKER_ENOMEM;
    int rc = BREAKER_OK;
    for (size_t s = 0; s < reg->cfg.max_breakers && rc == BREAKER_OK; s++) {
        struct breaker__entry *e = hold_slot(reg, s);
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

static int collect_cb(void *ctx, const breaker_registry_info *info) {
    struct collect *c = ctx;
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 16;
        struct breaker__snapshot *v = realloc(c->v, cap * sizeof(*v));
        if (v == NULL) return BREAKER_ENOMEM;
        c->v = v;
        c->cap = cap;
    }
    struct breaker__snapshot *s = &c->v[c->n];
    memset(s, 0, sizeof(*s));
    snprintf(s->name, sizeof(s->name), "%s", info->name);
    breaker_get_config(info->b, &s->cfg); /* held during the callback */
    s->timed = breaker_latency_get(info->b, &s->latency) == BREAKER_OK;
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

void breaker__snapshots_free(struct breaker__snapshot *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(s[i].history);
    free(s);
}
