/* SPDX-License-Identifier: MIT */
/*
 * hash.c - the in-process Redis's hashes and their commands (HSET, HMSET,
 * HSETNX, HGET, HMGET, HDEL, HLEN, HEXISTS, HINCRBY, HGETALL, HKEYS, HVALS,
 * HSCAN), with Redis 7.0's parsing, replies and errors (t_hash.c). Fields
 * are listed in the server's order (inproc.h). A hash that outgrows
 * Redis's small encoding (more than 128 fields, or a field or value longer
 * than 64 bytes: hash-max-listpack-entries and -value, the defaults) is
 * marked big, for HSCAN, which answers a small hash whole as Redis does.
 */
#include "store/redis/inproc/engine.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LISTPACK_ENTRIES 128
#define LISTPACK_VALUE   64

/* ---- The type ------------------------------------------------------------------------ */

static size_t hash_length(const struct breaker__inproc_obj *o) { return o->hash.live; }

static void hash_free(struct breaker__inproc_obj *o) {
    for (size_t i = 0; i < o->hash.used; i++)
        free(o->hash.entries[i].value);
    breaker__inproc_dict_free(&o->hash);
}

const struct breaker__inproc_value_type breaker__inproc_hash_type = {
    .name = "hash",
    .length = hash_length,
    .free = hash_free,
};

/* ---- The commands ------------------------------------------------------------------ */

/* Set `field` to `value`. @return 1 new, 0 replaced, -1 out of memory. */
static int hash_set(struct breaker__inproc_obj *o, const struct breaker__inproc_arg *field,
                    const char *value, size_t len) {
    char *copy = malloc(len + 1);
    if (copy == NULL) return -1;
    memcpy(copy, value, len);
    copy[len] = '\0';
    struct breaker__inproc_entry *e = breaker__inproc_dict_find(&o->hash, field->str, field->len);
    int created = e == NULL;
    if (created) {
        e = breaker__inproc_dict_add(&o->hash, field->str, field->len);
        if (e == NULL) {
            free(copy);
            return -1;
        }
    }
    free(e->value);
    e->value = copy;
    e->value_len = len;
    if (o->hash.live > LISTPACK_ENTRIES) o->big = true;
    return created;
}

/* The hash at argv[1] for a write, created when absent: NULL with *err
 * the reply (WRONGTYPE, or NULL itself when out of memory). */
static struct breaker__inproc_obj *hash_for_write(struct breaker__redis_inproc *s,
                                                  const struct breaker__inproc_arg *key,
                                                  breaker_redis_reply **err) {
    struct breaker__inproc_obj *o;
    *err = NULL;
    if (breaker__inproc_lookup_type(s, key, &breaker__inproc_hash_type, &o) != 0) {
        *err = breaker__inproc_wrongtype();
        return NULL;
    }
    if (o == NULL) o = breaker__inproc_create(s, key, &breaker__inproc_hash_type);
    return o;
}

/* Redis's hashTypeTryConversion(): a long field or value makes it big. */
static void note_lengths(struct breaker__inproc_obj *o, int argc,
                         const struct breaker__inproc_arg *argv, int from) {
    for (int i = from; i < argc; i++)
        if (argv[i].len > LISTPACK_VALUE) o->big = true;
}

static breaker_redis_reply *hset_generic(struct breaker__redis_inproc *s, int argc,
                                         const struct breaker__inproc_arg *argv, const char *name,
                                         bool ok_reply) {
    if (argc % 2 == 1) return breaker__inproc_arity_error(name);
    breaker_redis_reply *err;
    struct breaker__inproc_obj *o = hash_for_write(s, &argv[1], &err);
    if (o == NULL) return err;
    note_lengths(o, argc, argv, 2);
    long long created = 0;
    for (int i = 2; i < argc; i += 2) {
        int rc = hash_set(o, &argv[i], argv[i + 1].str, argv[i + 1].len);
        if (rc < 0) return NULL;
        created += rc;
    }
    return ok_reply ? breaker__inproc_ok() : breaker_redis_reply_integer(created);
}

breaker_redis_reply *breaker__inproc_hset(struct breaker__redis_inproc *s, int argc,
                                          const struct breaker__inproc_arg *argv) {
    return hset_generic(s, argc, argv, "hset", false);
}

breaker_redis_reply *breaker__inproc_hmset(struct breaker__redis_inproc *s, int argc,
                                           const struct breaker__inproc_arg *argv) {
    return hset_generic(s, argc, argv, "hmset", true);
}

breaker_redis_reply *breaker__inproc_hsetnx(struct breaker__redis_inproc *s, int argc,
                                            const struct breaker__inproc_arg *argv) {
    breaker_redis_reply *err;
    struct breaker__inproc_obj *o = hash_for_write(s, &argv[1], &err);
    if (o == NULL) return err;
    if (breaker__inproc_dict_find(&o->hash, argv[2].str, argv[2].len) != NULL)
        return breaker_redis_reply_integer(0);
    note_lengths(o, argc, argv, 2);
    return hash_set(o, &argv[2], argv[3].str, argv[3].len) < 0 ? NULL
                                                               : breaker_redis_reply_integer(1);
}

/* The hash at argv[1] for a read: 0 with *o (NULL when absent), or -1
 * (WRONGTYPE). */
static int hash_for_read(struct breaker__redis_inproc *s, const struct breaker__inproc_arg *key,
                         struct breaker__inproc_obj **o) {
    return breaker__inproc_lookup_type(s, key, &breaker__inproc_hash_type, o);
}

static const struct breaker__inproc_entry *field_of(const struct breaker__inproc_obj *o,
                                                    const struct breaker__inproc_arg *f) {
    return o == NULL ? NULL : breaker__inproc_dict_find(&o->hash, f->str, f->len);
}

breaker_redis_reply *breaker__inproc_hget(struct breaker__redis_inproc *s, int argc,
                                          const struct breaker__inproc_arg *argv) {
    (void)argc;
    struct breaker__inproc_obj *o;
    if (hash_for_read(s, &argv[1], &o) != 0) return breaker__inproc_wrongtype();
    const struct breaker__inproc_entry *e = field_of(o, &argv[2]);
    return e == NULL ? breaker_redis_reply_nil() : breaker__inproc_bulk(e->value, e->value_len);
}

breaker_redis_reply *breaker__inproc_hmget(struct breaker__redis_inproc *s, int argc,
                                           const struct breaker__inproc_arg *argv) {
    struct breaker__inproc_obj *o;
    if (hash_for_read(s, &argv[1], &o) != 0) return breaker__inproc_wrongtype();
    breaker_redis_reply *r = breaker_redis_reply_array((size_t)(argc - 2));
    if (r == NULL) return NULL;
    for (int i = 2; i < argc; i++) {
        const struct breaker__inproc_entry *e = field_of(o, &argv[i]);
        breaker_redis_reply *v =
            e == NULL ? breaker_redis_reply_nil() : breaker__inproc_bulk(e->value, e->value_len);
        if (v == NULL) {
            breaker_redis_reply_free(r);
            return NULL;
        }
        r->element[i - 2] = v;
    }
    return r;
}

breaker_redis_reply *breaker__inproc_hdel(struct breaker__redis_inproc *s, int argc,
                                          const struct breaker__inproc_arg *argv) {
    struct breaker__inproc_obj *o;
    if (hash_for_read(s, &argv[1], &o) != 0) return breaker__inproc_wrongtype();
    long long deleted = 0;
    for (int i = 2; o != NULL && i < argc; i++) {
        struct breaker__inproc_entry *e =
            breaker__inproc_dict_find(&o->hash, argv[i].str, argv[i].len);
        if (e == NULL) continue;
        free(e->value);
        breaker__inproc_dict_delete(&o->hash, e);
        deleted++;
        if (o->hash.live == 0) {
            breaker__inproc_delete(s, &argv[1]);
            break;
        }
    }
    return breaker_redis_reply_integer(deleted);
}

breaker_redis_reply *breaker__inproc_hlen(struct breaker__redis_inproc *s, int argc,
                                          const struct breaker__inproc_arg *argv) {
    (void)argc;
    struct breaker__inproc_obj *o;
    if (hash_for_read(s, &argv[1], &o) != 0) return breaker__inproc_wrongtype();
    return breaker_redis_reply_integer(o == NULL ? 0 : (long long)o->hash.live);
}

breaker_redis_reply *breaker__inproc_hexists(struct breaker__redis_inproc *s, int argc,
                                             const struct breaker__inproc_arg *argv) {
    (void)argc;
    struct breaker__inproc_obj *o;
    if (hash_for_read(s, &argv[1], &o) != 0) return breaker__inproc_wrongtype();
    return breaker_redis_reply_integer(field_of(o, &argv[2]) != NULL);
}

breaker_redis_reply *breaker__inproc_hincrby(struct breaker__redis_inproc *s, int argc,
                                             const struct breaker__inproc_arg *argv) {
    (void)argc;
    long long incr, value = 0;
    if (!breaker__inproc_parse_ll(argv[3].str, argv[3].len, &incr))
        return breaker__inproc_not_integer();
    breaker_redis_reply *err;
    struct breaker__inproc_obj *o = hash_for_write(s, &argv[1], &err);
    if (o == NULL) return err;
    const struct breaker__inproc_entry *e = field_of(o, &argv[2]);
    if (e != NULL && !breaker__inproc_parse_ll(e->value, e->value_len, &value))
        return breaker__inproc_error("ERR hash value is not an integer");
    if ((incr < 0 && value < 0 && incr < LLONG_MIN - value) ||
        (incr > 0 && value > 0 && incr > LLONG_MAX - value))
        return breaker__inproc_error("ERR increment or decrement would overflow");
    value += incr;
    char text[24];
    int n = snprintf(text, sizeof text, "%lld", value);
    if (hash_set(o, &argv[2], text, (size_t)n) < 0) return NULL;
    return breaker_redis_reply_integer(value);
}

/* HGETALL, HKEYS, HVALS: the fields and/or values, in the server's order. */
static breaker_redis_reply *list_fields(struct breaker__redis_inproc *s,
                                        const struct breaker__inproc_arg *key, bool fields,
                                        bool values) {
    struct breaker__inproc_obj *o;
    if (hash_for_read(s, key, &o) != 0) return breaker__inproc_wrongtype();
    size_t per = (size_t)fields + (size_t)values;
    breaker_redis_reply *r = breaker_redis_reply_array(o == NULL ? 0 : o->hash.live * per);
    if (r == NULL || o == NULL) return r;
    size_t k = 0;
    for (size_t i = 0; i < o->hash.used; i++) {
        const struct breaker__inproc_entry *e = breaker__inproc_dict_at(&o->hash, i, s->order);
        if (e == NULL) continue;
        if (fields) r->element[k++] = breaker__inproc_bulk(e->key, e->key_len);
        if (values) r->element[k++] = breaker__inproc_bulk(e->value, e->value_len);
    }
    for (size_t i = 0; i < k; i++)
        if (r->element[i] == NULL) {
            breaker_redis_reply_free(r);
            return NULL;
        }
    return r;
}

breaker_redis_reply *breaker__inproc_hgetall(struct breaker__redis_inproc *s, int argc,
                                             const struct breaker__inproc_arg *argv) {
    (void)argc;
    return list_fields(s, &argv[1], true, true);
}

breaker_redis_reply *breaker__inproc_hkeys(struct breaker__redis_inproc *s, int argc,
                                           const struct breaker__inproc_arg *argv) {
    (void)argc;
    return list_fields(s, &argv[1], true, false);
}

breaker_redis_reply *breaker__inproc_hvals(struct breaker__redis_inproc *s, int argc,
                                           const struct breaker__inproc_arg *argv) {
    (void)argc;
    return list_fields(s, &argv[1], false, true);
}

/* HSCAN key cursor [MATCH pattern] [COUNT count] (db.c, scanGenericCommand).
 * A small hash is answered whole with cursor 0, as Redis answers a listpack;
 * a big one in pages of `count` fields, the cursor being the insertion
 * sequence where the next page starts (inproc.h). */
breaker_redis_reply *breaker__inproc_hscan(struct breaker__redis_inproc *s, int argc,
                                           const struct breaker__inproc_arg *argv) {
    /* parseScanCursorOrReply(): strtoul() of the whole text. */
    errno = 0;
    char *end;
    unsigned long long cursor = strtoull(argv[2].str, &end, 10);
    if (isspace((unsigned char)argv[2].str[0]) || *end != '\0' || errno == ERANGE)
        return breaker__inproc_error("ERR invalid cursor");
    struct breaker__inproc_obj *o;
    if (hash_for_read(s, &argv[1], &o) != 0) return breaker__inproc_wrongtype();
    breaker_redis_reply *r = breaker_redis_reply_array(2);
    if (r == NULL) return NULL;
    if (o == NULL) {
        r->element[0] = breaker__inproc_bulk("0", 1);
        r->element[1] = breaker_redis_reply_array(0);
        if (r->element[0] == NULL || r->element[1] == NULL) {
            breaker_redis_reply_free(r);
            return NULL;
        }
        return r;
    }
    long long count = 10;
    const struct breaker__inproc_arg *pat = NULL;
    for (int i = 3; i < argc; i += 2) {
        int left = argc - i;
        if (breaker__inproc_is(&argv[i], "count") && left >= 2) {
            if (!breaker__inproc_parse_ll(argv[i + 1].str, argv[i + 1].len, &count)) {
                breaker_redis_reply_free(r);
                return breaker__inproc_not_integer();
            }
            if (count < 1) {
                breaker_redis_reply_free(r);
                return breaker__inproc_syntax_error();
            }
        } else if (breaker__inproc_is(&argv[i], "match") && left >= 2) {
            pat = &argv[i + 1];
            if (pat->len == 1 && pat->str[0] == '*') pat = NULL; /* matches all */
        } else {
            breaker_redis_reply_free(r);
            return breaker__inproc_syntax_error();
        }
    }
    size_t at = o->big ? breaker__inproc_dict_seek(&o->hash, cursor, s->order) : 0;
    size_t room = o->big ? (size_t)count : o->hash.live;
    breaker_redis_reply *items =
        breaker_redis_reply_array(2 * (room < o->hash.live ? room : o->hash.live));
    if (items == NULL) {
        breaker_redis_reply_free(r);
        return NULL;
    }
    r->element[1] = items;
    size_t taken = 0, k = 0;
    uint64_t next = 0;
    for (; at < o->hash.used; at++) {
        const struct breaker__inproc_entry *e = breaker__inproc_dict_at(&o->hash, at, s->order);
        if (e == NULL) continue;
        if (taken == room) {
            next = e->seq;
            break;
        }
        taken++;
        if (pat != NULL && !breaker__inproc_glob(pat->str, pat->len, e->key, e->key_len)) continue;
        items->element[k++] = breaker__inproc_bulk(e->key, e->key_len);
        items->element[k++] = breaker__inproc_bulk(e->value, e->value_len);
    }
    items->elements = k; /* fewer when MATCH filtered some out */
    char text[24];
    int n = snprintf(text, sizeof text, "%llu", (unsigned long long)next);
    r->element[0] = breaker__inproc_bulk(text, (size_t)n);
    bool whole = r->element[0] != NULL;
    for (size_t i = 0; i < k; i++)
        whole = whole && items->element[i] != NULL;
    if (!whole) {
        breaker_redis_reply_free(r);
        return NULL;
    }
    return r;
}
