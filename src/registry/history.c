/* SPDX-License-Identifier: MIT */
/*
 * history.c - per-breaker transition ring and flapping detection.
 *
 * Each breaker in a registry keeps its last transitions in a small ring. The
 * ring is written by whichever thread made a transition (from the breaker's
 * on_event callback) and read by exporters; transitions are rare, so a plain
 * mutex is the clear choice. Two transitions of one breaker may be reported
 * by different threads in the opposite order to the one they happened in (the
 * callbacks run after the state CAS), so readers sort by generation and a
 * full ring gives up its oldest generation, not its oldest insertion.
 *
 * Flapping: the breaker is flapping when more than `flap_threshold`
 * transitions happened within `flap_window_ns` before now. The flag sets on
 * the transition that crosses the threshold and clears, with hysteresis, once
 * the count in the window has fallen to half the threshold or less, so a
 * breaker hovering at the threshold does not make the flag itself flap. The
 * ring holds at least flap_threshold + 1 records so that the count is exact.
 */
#include "registry/registry_internal.h"

#include <stdlib.h>
#include <string.h>

int breaker__history_init(struct breaker__history *h, uint32_t keep, uint32_t flap_threshold,
                          uint64_t flap_window_ns) {
    memset(h, 0, sizeof(*h));
    h->keep = keep;
    h->cap = keep > flap_threshold ? keep : flap_threshold + 1;
    h->flap_threshold = flap_threshold;
    h->flap_window_ns = flap_window_ns;
    h->ring = calloc(h->cap, sizeof(*h->ring));
    if (h->ring == NULL) return BREAKER_ENOMEM;
    if (pthread_mutex_init(&h->lock, NULL) != 0) {
        free(h->ring);
        return BREAKER_ENOMEM;
    }
    for (unsigned i = 0; i < BREAKER_STATE_COUNT; i++)
        for (unsigned j = 0; j < BREAKER_STATE_COUNT; j++)
            atomic_init(&h->by_pair[i][j], 0);
    return BREAKER_OK;
}

void breaker__history_fini(struct breaker__history *h) {
    pthread_mutex_destroy(&h->lock);
    free(h->ring);
    h->ring = NULL;
}

/* Transitions in the ring within the window ending at `now`. Called locked. */
static uint32_t count_recent(const struct breaker__history *h, uint64_t now) {
    uint32_t n = h->next < h->cap ? h->next : h->cap;
    uint32_t recent = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t t = h->ring[i].time_ns;
        /* A record stamped after `now` (a racing transition read a later
         * clock) is recent too. */
        if (t >= now || now - t < h->flap_window_ns) recent++;
    }
    return recent;
}

/* Update the flag from the count. Called locked. */
static enum breaker__flap_change update_flag(struct breaker__history *h, uint32_t recent) {
    if (!h->flapping && recent > h->flap_threshold) {
        h->flapping = 1;
        return BREAKER__FLAP_STARTED;
    }
    if (h->flapping && recent <= h->flap_threshold / 2) {
        h->flapping = 0;
        return BREAKER__FLAP_STOPPED;
    }
    return BREAKER__FLAP_NONE;
}

enum breaker__flap_change breaker__history_record(struct breaker__history *h,
                                                  const breaker_event *ev, uint32_t *recent) {
    if ((unsigned)ev->from < BREAKER_STATE_COUNT && (unsigned)ev->to < BREAKER_STATE_COUNT)
        atomic_fetch_add_explicit(&h->by_pair[ev->from][ev->to], 1, memory_order_relaxed);
    pthread_mutex_lock(&h->lock);
    if (h->next < h->cap) {
        h->ring[h->next++] = *ev;
    } else {
        /* Full: replace the oldest generation, so the ring holds the newest
         * transitions even when a late report arrives out of order. A report
         * older than everything held is dropped. */
        uint32_t oldest = 0;
        for (uint32_t i = 1; i < h->cap; i++)
            if (h->ring[i].generation < h->ring[oldest].generation) oldest = i;
        if (ev->generation > h->ring[oldest].generation) h->ring[oldest] = *ev;
    }
    *recent = count_recent(h, ev->time_ns);
    enum breaker__flap_change c = update_flag(h, *recent);
    pthread_mutex_unlock(&h->lock);
    return c;
}

static int by_generation(const void *a, const void *b) {
    uint64_t ga = ((const breaker_event *)a)->generation;
    uint64_t gb = ((const breaker_event *)b)->generation;
    return (ga > gb) - (ga < gb);
}

enum breaker__flap_change breaker__history_read(struct breaker__history *h, uint64_t now,
                                                breaker_event *out, size_t cap, size_t *n,
                                                int *flapping, uint32_t *recent,
                                                breaker_event *last) {
    pthread_mutex_lock(&h->lock);
    uint32_t have = h->next < h->cap ? h->next : h->cap;
    /* The newest `keep` records: copy all that are held, sort, keep the tail. */
    breaker_event tmp[16]; /* each carries its who and why text: some 400 bytes */
    breaker_event *all = have <= 16 ? tmp : malloc(have * sizeof(*all));
    size_t got = 0;
    if (all != NULL) {
        memcpy(all, h->ring, have * sizeof(*all));
        qsort(all, have, sizeof(*all), by_generation);
        size_t shown = have < h->keep ? have : h->keep;
        if (shown > cap) shown = cap;
        if (shown > 0) memcpy(out, all + (have - shown), shown * sizeof(*out));
        got = shown;
        if (last != NULL) {
            if (have > 0)
                *last = all[have - 1];
            else
                memset(last, 0, sizeof(*last));
        }
    } else if (last != NULL) {
        memset(last, 0, sizeof(*last));
    }
    *recent = count_recent(h, now);
    enum breaker__flap_change c = update_flag(h, *recent);
    *flapping = h->flapping;
    pthread_mutex_unlock(&h->lock);
    if (all != tmp) free(all);
    *n = got;
    return c;
}
