/* SPDX-License-Identifier: MIT */
/*
 * dict.c - the in-process Redis's table of byte-string keys (the keyspace,
 * a hash's fields). Entries sit in an array in insertion order, as a small
 * Redis hash's fields do in its listpack, so a listing is the same every
 * run; an open-addressed index finds them. A deletion leaves a hole (no
 * entry moves while a command walks the table), and the insertion that
 * finds the array full compacts the holes away or grows it.
 */
#include "store/redis/inproc/engine.h"

#include <stdlib.h>
#include <string.h>

#define SLOT_EMPTY   0u
#define SLOT_DELETED UINT32_MAX

/* FNV-1a, 64 bits: the keys are short and no adversary chooses them. */
static uint64_t key_hash(const char *key, size_t len) {
    uint64_t h = UINT64_C(14695981039346656037);
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)key[i];
        h *= UINT64_C(1099511628211);
    }
    return h;
}

void breaker__inproc_dict_init(struct breaker__inproc_dict *d) {
    memset(d, 0, sizeof *d);
    d->next_seq = 1; /* 0 is the cursor that starts a scan */
}

void breaker__inproc_dict_free(struct breaker__inproc_dict *d) {
    for (size_t i = 0; i < d->used; i++)
        free(d->entries[i].key);
    free(d->entries);
    free(d->index);
    breaker__inproc_dict_init(d);
}

static bool same_key(const struct breaker__inproc_entry *e, uint64_t h, const char *key,
                     size_t len) {
    return e->hash == h && e->key_len == len && memcmp(e->key, key, len) == 0;
}

struct breaker__inproc_entry *breaker__inproc_dict_find(const struct breaker__inproc_dict *d,
                                                        const char *key, size_t len) {
    if (d->live == 0) return NULL;
    uint64_t h = key_hash(key, len);
    size_t mask = d->index_cap - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        uint32_t slot = d->index[i];
        if (slot == SLOT_EMPTY) return NULL;
        if (slot == SLOT_DELETED) continue;
        struct breaker__inproc_entry *e = &d->entries[slot - 1];
        if (same_key(e, h, key, len)) return e;
    }
}

static void index_put(struct breaker__inproc_dict *d, size_t entry) {
    size_t mask = d->index_cap - 1;
    size_t i = (size_t)d->entries[entry].hash & mask;
    while (d->index[i] != SLOT_EMPTY && d->index[i] != SLOT_DELETED)
        i = (i + 1) & mask;
    d->index[i] = (uint32_t)(entry + 1);
}

/* Room for one more entry: the holes compacted away when they are a
 * quarter of the array, else a bigger array; the index rebuilt at twice
 * the array's size, so that it is at most half full (deleted slots
 * included: each is an entry of the array). */
static int make_room(struct breaker__inproc_dict *d) {
    size_t holes = d->used - d->live;
    if (d->used > 0 && holes >= d->used / 4) {
        size_t to = 0;
        for (size_t i = 0; i < d->used; i++)
            if (d->entries[i].key != NULL) d->entries[to++] = d->entries[i];
        d->used = to;
    } else {
        size_t cap = d->cap == 0 ? 4 : d->cap * 2;
        if (cap > (size_t)UINT32_MAX / 4) return -1;
        struct breaker__inproc_entry *e = realloc(d->entries, cap * sizeof *e);
        if (e == NULL) return -1;
        d->entries = e;
        d->cap = cap;
    }
    size_t icap = 8;
    while (icap < 2 * d->cap)
        icap *= 2;
    if (icap != d->index_cap) {
        uint32_t *index = malloc(icap * sizeof *index);
        if (index == NULL) return -1;
        free(d->index);
        d->index = index;
        d->index_cap = icap;
    }
    memset(d->index, 0, d->index_cap * sizeof *d->index);
    for (size_t i = 0; i < d->used; i++)
        index_put(d, i);
    return 0;
}

struct breaker__inproc_entry *breaker__inproc_dict_add(struct breaker__inproc_dict *d,
                                                       const char *key, size_t len) {
    if (d->used == d->cap && make_room(d) != 0) return NULL;
    char *copy = malloc(len + 1);
    if (copy == NULL) return NULL;
    if (len > 0) memcpy(copy, key, len);
    copy[len] = '\0';
    struct breaker__inproc_entry *e = &d->entries[d->used];
    memset(e, 0, sizeof *e);
    e->key = copy;
    e->key_len = len;
    e->hash = key_hash(key, len);
    e->seq = d->next_seq++;
    index_put(d, d->used);
    d->used++;
    d->live++;
    return e;
}

void breaker__inproc_dict_delete(struct breaker__inproc_dict *d, struct breaker__inproc_entry *e) {
    size_t entry = (size_t)(e - d->entries);
    size_t mask = d->index_cap - 1;
    size_t i = (size_t)e->hash & mask;
    while (d->index[i] != entry + 1)
        i = (i + 1) & mask;
    d->index[i] = SLOT_DELETED;
    free(e->key);
    /* A hole keeps its seq: the array stays sorted by seq for _seek(). */
    e->key = NULL;
    e->key_len = 0;
    e->obj = NULL;
    e->value = NULL;
    e->value_len = 0;
    d->live--;
    if (d->live == 0) {
        /* Empty again: start over (no holes, no deleted slots). */
        d->used = 0;
        memset(d->index, 0, d->index_cap * sizeof *d->index);
    }
}

struct breaker__inproc_entry *breaker__inproc_dict_at(const struct breaker__inproc_dict *d,
                                                      size_t i, int order) {
    size_t at = order == BREAKER__INPROC_ORDER_REVERSED ? d->used - 1 - i : i;
    struct breaker__inproc_entry *e = &d->entries[at];
    return e->key != NULL ? e : NULL;
}

size_t breaker__inproc_dict_seek(const struct breaker__inproc_dict *d, uint64_t cursor, int order) {
    if (cursor == 0) return 0;
    /* seq grows along the array (compaction keeps the order): the first
     * index whose seq is >= cursor. */
    size_t lo = 0, hi = d->used;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (d->entries[mid].seq < cursor)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (order != BREAKER__INPROC_ORDER_REVERSED) return lo;
    /* Reversed: the last index whose seq is <= cursor, counted from the end. */
    size_t last = lo < d->used && d->entries[lo].seq == cursor ? lo + 1 : lo;
    return d->used - last;
}
