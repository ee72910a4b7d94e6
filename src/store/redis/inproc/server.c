/* SPDX-License-Identifier: MIT */
/*
 * server.c - the in-process Redis as its users hold it (inproc.h): made,
 * freed, restarted empty, told what to refuse and in which order to list,
 * and read without being changed.
 */
#include "store/redis/inproc/engine.h"

#include <stdlib.h>
#include <string.h>

struct breaker__redis_inproc *breaker__redis_inproc_create(breaker_clock_fn *clock,
                                                           void *clock_ctx) {
    struct breaker__redis_inproc *s = calloc(1, sizeof *s);
    if (s == NULL) return NULL;
    s->clock = clock;
    s->clock_ctx = clock_ctx;
    s->rand48 = INPROC_RAND48_START;
    s->script_limit = BREAKER__INPROC_SCRIPT_STEPS;
    s->commands = &breaker__inproc_command_table;
    for (int db = 0; db < INPROC_DATABASES; db++)
        breaker__inproc_dict_init(&s->db[db]);
    s->scripting = breaker__inproc_scripting_create(s);
    if (s->scripting == NULL) {
        free(s);
        return NULL;
    }
    return s;
}

void breaker__redis_inproc_destroy(struct breaker__redis_inproc *s) {
    if (s == NULL) return;
    for (int db = 0; db < INPROC_DATABASES; db++)
        breaker__inproc_db_clear(s, db);
    breaker__inproc_scripting_free(s->scripting);
    free(s);
}

void breaker__redis_inproc_restart(struct breaker__redis_inproc *s) {
    for (int db = 0; db < INPROC_DATABASES; db++)
        breaker__inproc_db_clear(s, db);
    s->selected = 0;
    s->refuse = BREAKER__INPROC_REFUSE_NONE;
    s->rand48 = INPROC_RAND48_START;
    /* A fresh Lua: no script known. (Out of memory, the old one stays.) */
    struct breaker__inproc_scripting *fresh = breaker__inproc_scripting_create(s);
    if (fresh != NULL) {
        breaker__inproc_scripting_free(s->scripting);
        s->scripting = fresh;
    }
}

void breaker__redis_inproc_refuse(struct breaker__redis_inproc *s, int mode) { s->refuse = mode; }

void breaker__redis_inproc_set_script_limit(struct breaker__redis_inproc *s, uint64_t steps) {
    s->script_limit = steps == 0 ? BREAKER__INPROC_SCRIPT_STEPS : steps;
}

void breaker__redis_inproc_set_order(struct breaker__redis_inproc *s, int order) {
    s->order = order;
}

/* ---- Reads -------------------------------------------------------------------------- */

static const struct breaker__inproc_obj *read_key(struct breaker__redis_inproc *s,
                                                  const char *key) {
    int64_t now_ms = (int64_t)(s->clock(s->clock_ctx) / 1000000u);
    return breaker__inproc_peek(s, 0, key, strlen(key), now_ms);
}

const char *breaker__redis_inproc_type(struct breaker__redis_inproc *s, const char *key) {
    const struct breaker__inproc_obj *o = read_key(s, key);
    return o == NULL ? "none" : o->type->name;
}

const char *breaker__redis_inproc_hget(struct breaker__redis_inproc *s, const char *key,
                                       const char *field, size_t *len) {
    const struct breaker__inproc_obj *o = read_key(s, key);
    if (o == NULL || o->type != &breaker__inproc_hash_type) return NULL;
    const struct breaker__inproc_entry *e =
        breaker__inproc_dict_find(&o->hash, field, strlen(field));
    if (e == NULL) return NULL;
    if (len != NULL) *len = e->value_len;
    return e->value;
}

size_t breaker__redis_inproc_hash_each(struct breaker__redis_inproc *s, const char *key,
                                       int (*fn)(void *ctx, const char *field, size_t field_len,
                                                 const char *value, size_t value_len),
                                       void *ctx) {
    const struct breaker__inproc_obj *o = read_key(s, key);
    if (o == NULL || o->type != &breaker__inproc_hash_type) return 0;
    size_t n = 0;
    for (size_t i = 0; i < o->hash.used; i++) {
        const struct breaker__inproc_entry *e = breaker__inproc_dict_at(&o->hash, i, s->order);
        if (e == NULL) continue;
        n++;
        if (fn(ctx, e->key, e->key_len, e->value, e->value_len) != 0) break;
    }
    return n;
}

size_t breaker__redis_inproc_zset_each(struct breaker__redis_inproc *s, const char *key,
                                       int (*fn)(void *ctx, const char *member, size_t len,
                                                 double score),
                                       void *ctx) {
    const struct breaker__inproc_obj *o = read_key(s, key);
    if (o == NULL || o->type != &breaker__inproc_zset_type) return 0;
    size_t n = 0;
    for (size_t i = 0; i < o->zset.n; i++) {
        n++;
        if (fn(ctx, o->zset.m[i].name, o->zset.m[i].len, o->zset.m[i].score) != 0) break;
    }
    return n;
}

long long breaker__redis_inproc_pttl(struct breaker__redis_inproc *s, const char *key) {
    int64_t now_ms = (int64_t)(s->clock(s->clock_ctx) / 1000000u);
    const struct breaker__inproc_obj *o = breaker__inproc_peek(s, 0, key, strlen(key), now_ms);
    if (o == NULL) return -2;
    if (o->expire_ms < 0) return -1;
    return o->expire_ms - now_ms;
}

void breaker__redis_inproc_stats(const struct breaker__redis_inproc *s,
                                 struct breaker__redis_inproc_stats *out) {
    *out = s->stats;
}
