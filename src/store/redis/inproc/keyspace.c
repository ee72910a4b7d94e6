/* SPDX-License-Identifier: MIT */
/*
 * keyspace.c - the in-process Redis's databases: each a dict of keys whose
 * values are typed objects (a hash or a sorted set) with an optional
 * deadline on the injected clock. A value is freed and its emptiness told
 * through its type's table (engine.h), so that the types' files (hash.c,
 * zset.c) build on this one and this one names none of them. Expiry is lazy, as Redis's is when a
 * command touches a key: a key whose deadline has passed (the clock's ms
 * after it, Redis's keyIsExpired()) is deleted before the command sees it.
 * Redis also reclaims such keys in the background; nothing here does, so
 * a key nobody touches again stays allocated (and out of every answer).
 */
#include "store/redis/inproc/engine.h"

#include <stdlib.h>
#include <string.h>

/* Redis's keyIsExpired(): the clock is past the deadline. */
static bool past(const struct breaker__inproc_obj *o, int64_t now_ms) {
    return o->expire_ms >= 0 && now_ms > o->expire_ms;
}

static void obj_free(struct breaker__inproc_obj *o) {
    if (o == NULL) return;
    o->type->free(o);
    free(o);
}

static void delete_entry(struct breaker__inproc_dict *db, struct breaker__inproc_entry *e) {
    obj_free(e->obj);
    breaker__inproc_dict_delete(db, e);
}

struct breaker__inproc_obj *breaker__inproc_lookup(struct breaker__redis_inproc *s,
                                                   const struct breaker__inproc_arg *key) {
    struct breaker__inproc_dict *db = &s->db[s->selected];
    struct breaker__inproc_entry *e = breaker__inproc_dict_find(db, key->str, key->len);
    if (e == NULL) return NULL;
    if (past(e->obj, s->now_ms)) {
        delete_entry(db, e);
        return NULL;
    }
    return e->obj;
}

struct breaker__inproc_obj *breaker__inproc_peek(const struct breaker__redis_inproc *s, int db,
                                                 const char *key, size_t len, int64_t now_ms) {
    struct breaker__inproc_entry *e = breaker__inproc_dict_find(&s->db[db], key, len);
    return e == NULL || past(e->obj, now_ms) ? NULL : e->obj;
}

int breaker__inproc_lookup_type(struct breaker__redis_inproc *s,
                                const struct breaker__inproc_arg *key,
                                const struct breaker__inproc_value_type *type,
                                struct breaker__inproc_obj **out) {
    struct breaker__inproc_obj *o = breaker__inproc_lookup(s, key);
    *out = NULL;
    if (o != NULL && o->type != type) return -1;
    *out = o;
    return 0;
}

struct breaker__inproc_obj *breaker__inproc_create(struct breaker__redis_inproc *s,
                                                   const struct breaker__inproc_arg *key,
                                                   const struct breaker__inproc_value_type *type) {
    struct breaker__inproc_obj *o = calloc(1, sizeof *o);
    if (o == NULL) return NULL;
    o->type = type;
    o->expire_ms = -1;
    breaker__inproc_dict_init(&o->hash);
    struct breaker__inproc_entry *e =
        breaker__inproc_dict_add(&s->db[s->selected], key->str, key->len);
    if (e == NULL) {
        free(o);
        return NULL;
    }
    e->obj = o;
    return o;
}

int breaker__inproc_delete(struct breaker__redis_inproc *s, const struct breaker__inproc_arg *key) {
    if (breaker__inproc_lookup(s, key) == NULL) return 0;
    struct breaker__inproc_dict *db = &s->db[s->selected];
    delete_entry(db, breaker__inproc_dict_find(db, key->str, key->len));
    return 1;
}

void breaker__inproc_delete_if_empty(struct breaker__redis_inproc *s,
                                     const struct breaker__inproc_arg *key,
                                     struct breaker__inproc_obj *o) {
    if (o->type->length(o) == 0) breaker__inproc_delete(s, key);
}

void breaker__inproc_db_clear(struct breaker__redis_inproc *s, int db) {
    struct breaker__inproc_dict *d = &s->db[db];
    for (size_t i = 0; i < d->used; i++)
        obj_free(d->entries[i].obj);
    breaker__inproc_dict_free(d);
}

/* Redis's glob (util.c, stringmatchlen()), case-sensitive: `*` any run,
 * `?` any byte, `[...]` a set (`^` negates, `a-z` a range either way
 * round, `\` escapes; an unclosed set ends at the pattern's end), `\x`
 * the byte x. */
static bool in_set(const char **pp, size_t *plen, unsigned char c) {
    const char *p = *pp + 1; /* after '[' */
    size_t n = *plen - 1;
    bool negate = n > 0 && *p == '^';
    if (negate) {
        p++;
        n--;
    }
    bool match = false;
    for (;;) {
        if (n >= 2 && *p == '\\') {
            p++;
            n--;
            if ((unsigned char)*p == c) match = true;
        } else if (n == 0) {
            p--; /* an unclosed set: its last byte ends the pattern */
            n++;
            break;
        } else if (*p == ']') {
            break;
        } else if (n >= 3 && p[1] == '-') {
            unsigned char lo = (unsigned char)p[0], hi = (unsigned char)p[2];
            if (lo > hi) {
                unsigned char t = lo;
                lo = hi;
                hi = t;
            }
            p += 2;
            n -= 2;
            if (c >= lo && c <= hi) match = true;
        } else if ((unsigned char)*p == c) {
            match = true;
        }
        p++;
        n--;
    }
    *pp = p; /* on the ']' (or the last byte) */
    *plen = n;
    return negate ? !match : match;
}

bool breaker__inproc_glob(const char *pat, size_t plen, const char *str, size_t slen) {
    while (plen > 0 && slen > 0) {
        switch (*pat) {
        case '*':
            while (plen > 1 && pat[1] == '*') {
                pat++;
                plen--;
            }
            if (plen == 1) return true;
            for (size_t i = 0; i <= slen; i++)
                if (breaker__inproc_glob(pat + 1, plen - 1, str + i, slen - i)) return true;
            return false;
        case '?':
            break;
        case '[':
            if (!in_set(&pat, &plen, (unsigned char)*str)) return false;
            break;
        case '\\':
            if (plen >= 2) {
                pat++;
                plen--;
            }
            if (*pat != *str) return false;
            break;
        default:
            if (*pat != *str) return false;
            break;
        }
        pat++;
        plen--;
        str++;
        slen--;
    }
    while (plen > 0 && *pat == '*') {
        pat++;
        plen--;
    }
    return plen == 0 && slen == 0;
}
