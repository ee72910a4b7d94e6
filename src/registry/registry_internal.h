/* SPDX-License-Identifier: MIT */
/*
 * registry_internal.h - what the registry (registry.c, history.c, snapshot.c)
 * shares with the exporters.
 * Private: nothing here is API.
 */
#ifndef BREAKER_REGISTRY_INTERNAL_H
#define BREAKER_REGISTRY_INTERNAL_H

#include "breaker.h"
#include "breaker/registry.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

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
