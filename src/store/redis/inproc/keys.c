/* SPDX-License-Identifier: MIT */
/*
 * keys.c - the in-process Redis's commands on keys whatever their type and
 * on whole databases, with Redis 7.0's replies and errors: DEL, EXISTS,
 * TYPE, KEYS, DBSIZE, FLUSHDB and FLUSHALL; the deadlines EXPIRE, PEXPIRE,
 * TTL, PTTL and PERSIST (db.c, expire.c).
 */
#include "store/redis/inproc/engine.h"

#include <limits.h>

/* The keys in the selected database that are not past their deadline:
 * DBSIZE counts them all, as Redis counts keys it has not reclaimed yet. */
breaker_redis_reply *breaker__inproc_dbsize(struct breaker__redis_inproc *s, int argc,
                                            const struct breaker__inproc_arg *argv) {
    (void)argc;
    (void)argv;
    return breaker_redis_reply_integer((long long)s->db[s->selected].live);
}

breaker_redis_reply *breaker__inproc_keys(struct breaker__redis_inproc *s, int argc,
                                          const struct breaker__inproc_arg *argv) {
    (void)argc;
    const struct breaker__inproc_dict *db = &s->db[s->selected];
    breaker_redis_reply *r = breaker_redis_reply_array(db->live);
    if (r == NULL) return NULL;
    size_t k = 0;
    bool all = argv[1].len == 1 && argv[1].str[0] == '*';
    for (size_t i = 0; i < db->used; i++) {
        const struct breaker__inproc_entry *e = breaker__inproc_dict_at(db, i, s->order);
        if (e == NULL ||
            breaker__inproc_peek(s, s->selected, e->key, e->key_len, s->now_ms) == NULL)
            continue;
        if (!all && !breaker__inproc_glob(argv[1].str, argv[1].len, e->key, e->key_len)) continue;
        if ((r->element[k++] = breaker__inproc_bulk(e->key, e->key_len)) == NULL) {
            breaker_redis_reply_free(r);
            return NULL;
        }
    }
    r->elements = k;
    return r;
}

breaker_redis_reply *breaker__inproc_del(struct breaker__redis_inproc *s, int argc,
                                         const struct breaker__inproc_arg *argv) {
    long long n = 0;
    for (int i = 1; i < argc; i++)
        n += breaker__inproc_delete(s, &argv[i]);
    return breaker_redis_reply_integer(n);
}

breaker_redis_reply *breaker__inproc_exists(struct breaker__redis_inproc *s, int argc,
                                            const struct breaker__inproc_arg *argv) {
    long long n = 0;
    for (int i = 1; i < argc; i++)
        n += breaker__inproc_lookup(s, &argv[i]) != NULL;
    return breaker_redis_reply_integer(n);
}

breaker_redis_reply *breaker__inproc_type(struct breaker__redis_inproc *s, int argc,
                                          const struct breaker__inproc_arg *argv) {
    (void)argc;
    const struct breaker__inproc_obj *o = breaker__inproc_lookup(s, &argv[1]);
    return breaker__inproc_status(o == NULL ? "none" : o->type->name);
}

/* EXPIRE and PEXPIRE (expire.c, expireGenericCommand()). */
enum { EXP_NX = 1, EXP_XX = 2, EXP_GT = 4, EXP_LT = 8 };

static breaker_redis_reply *expire_generic(struct breaker__redis_inproc *s, int argc,
                                           const struct breaker__inproc_arg *argv, const char *name,
                                           long long unit) {
    int flags = 0;
    for (int i = 3; i < argc; i++) {
        if (breaker__inproc_is(&argv[i], "nx"))
            flags |= EXP_NX;
        else if (breaker__inproc_is(&argv[i], "xx"))
            flags |= EXP_XX;
        else if (breaker__inproc_is(&argv[i], "gt"))
            flags |= EXP_GT;
        else if (breaker__inproc_is(&argv[i], "lt"))
            flags |= EXP_LT;
        else
            return breaker__inproc_error("ERR Unsupported option %s", argv[i].str);
    }
    if ((flags & EXP_NX) && (flags & (EXP_XX | EXP_GT | EXP_LT)))
        return breaker__inproc_error(
            "ERR NX and XX, GT or LT options at the same time are not compatible");
    if ((flags & EXP_GT) && (flags & EXP_LT))
        return breaker__inproc_error("ERR GT and LT options at the same time are not compatible");
    long long when;
    if (!breaker__inproc_parse_ll(argv[2].str, argv[2].len, &when))
        return breaker__inproc_not_integer();
    if (when > LLONG_MAX / unit || when < LLONG_MIN / unit)
        return breaker__inproc_error("ERR invalid expire time in '%s' command", name);
    when *= unit;
    if (when > LLONG_MAX - s->now_ms)
        return breaker__inproc_error("ERR invalid expire time in '%s' command", name);
    when += s->now_ms;
    struct breaker__inproc_obj *o = breaker__inproc_lookup(s, &argv[1]);
    if (o == NULL) return breaker_redis_reply_integer(0);
    long long cur = o->expire_ms;
    if (((flags & EXP_NX) && cur != -1) || ((flags & EXP_XX) && cur == -1) ||
        ((flags & EXP_GT) && (when <= cur || cur == -1)) ||
        ((flags & EXP_LT) && cur != -1 && when >= cur))
        return breaker_redis_reply_integer(0);
    if (when <= s->now_ms)
        breaker__inproc_delete(s, &argv[1]); /* already past: deleted now */
    else
        o->expire_ms = when;
    return breaker_redis_reply_integer(1);
}

breaker_redis_reply *breaker__inproc_expire(struct breaker__redis_inproc *s, int argc,
                                            const struct breaker__inproc_arg *argv) {
    return expire_generic(s, argc, argv, "expire", 1000);
}

breaker_redis_reply *breaker__inproc_pexpire(struct breaker__redis_inproc *s, int argc,
                                             const struct breaker__inproc_arg *argv) {
    return expire_generic(s, argc, argv, "pexpire", 1);
}

static breaker_redis_reply *ttl_generic(struct breaker__redis_inproc *s,
                                        const struct breaker__inproc_arg *key, bool ms) {
    const struct breaker__inproc_obj *o = breaker__inproc_lookup(s, key);
    if (o == NULL) return breaker_redis_reply_integer(-2);
    if (o->expire_ms < 0) return breaker_redis_reply_integer(-1);
    long long left = o->expire_ms - s->now_ms;
    if (left < 0) left = 0;
    return breaker_redis_reply_integer(ms ? left : (left + 500) / 1000);
}

breaker_redis_reply *breaker__inproc_ttl(struct breaker__redis_inproc *s, int argc,
                                         const struct breaker__inproc_arg *argv) {
    (void)argc;
    return ttl_generic(s, &argv[1], false);
}

breaker_redis_reply *breaker__inproc_pttl(struct breaker__redis_inproc *s, int argc,
                                          const struct breaker__inproc_arg *argv) {
    (void)argc;
    return ttl_generic(s, &argv[1], true);
}

breaker_redis_reply *breaker__inproc_persist(struct breaker__redis_inproc *s, int argc,
                                             const struct breaker__inproc_arg *argv) {
    (void)argc;
    struct breaker__inproc_obj *o = breaker__inproc_lookup(s, &argv[1]);
    if (o == NULL || o->expire_ms < 0) return breaker_redis_reply_integer(0);
    o->expire_ms = -1;
    return breaker_redis_reply_integer(1);
}

/* FLUSHALL and FLUSHDB [ASYNC|SYNC] (db.c, getFlushCommandFlags()): the
 * keys go, the scripts stay. */
static bool flush_args_ok(int argc, const struct breaker__inproc_arg *argv) {
    return argc == 1 || (argc == 2 && (breaker__inproc_is(&argv[1], "sync") ||
                                       breaker__inproc_is(&argv[1], "async")));
}

breaker_redis_reply *breaker__inproc_flushall(struct breaker__redis_inproc *s, int argc,
                                              const struct breaker__inproc_arg *argv) {
    if (!flush_args_ok(argc, argv)) return breaker__inproc_syntax_error();
    for (int db = 0; db < INPROC_DATABASES; db++)
        breaker__inproc_db_clear(s, db);
    return breaker__inproc_ok();
}

breaker_redis_reply *breaker__inproc_flushdb(struct breaker__redis_inproc *s, int argc,
                                             const struct breaker__inproc_arg *argv) {
    if (!flush_args_ok(argc, argv)) return breaker__inproc_syntax_error();
    breaker__inproc_db_clear(s, s->selected);
    return breaker__inproc_ok();
}
