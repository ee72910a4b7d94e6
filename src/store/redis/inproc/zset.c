/* SPDX-License-Identifier: MIT */
/*
 * zset.c - the in-process Redis's sorted sets and their commands (ZADD,
 * ZCARD, ZSCORE, ZREM, ZRANGE, ZRANGEBYSCORE), with Redis 7.0's parsing,
 * replies and errors (t_zset.c). A sorted array: members in Redis's order
 * (score, then name byte by byte), found by name with a scan. The fleet
 * keeps at most half_open_max_probes leases in one; BYLEX ranges and the
 * other sorted-set commands are not needed and not offered.
 */
#include "store/redis/inproc/engine.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- The type ------------------------------------------------------------------------ */

static size_t zset_length(const struct breaker__inproc_obj *o) { return o->zset.n; }

static void zset_free(struct breaker__inproc_obj *o) {
    struct breaker__inproc_zset *z = &o->zset;
    for (size_t i = 0; i < z->n; i++)
        free(z->m[i].name);
    free(z->m);
    memset(z, 0, sizeof *z);
}

const struct breaker__inproc_value_type breaker__inproc_zset_type = {
    .name = "zset",
    .length = zset_length,
    .free = zset_free,
};

static int member_cmp(double score, const char *name, size_t len,
                      const struct breaker__inproc_member *m) {
    if (score < m->score) return -1;
    if (score > m->score) return 1;
    size_t n = len < m->len ? len : m->len;
    int c = n > 0 ? memcmp(name, m->name, n) : 0;
    if (c != 0) return c;
    return len < m->len ? -1 : len > m->len ? 1 : 0;
}

static ptrdiff_t find(const struct breaker__inproc_zset *z, const char *name, size_t len) {
    for (size_t i = 0; i < z->n; i++)
        if (z->m[i].len == len && memcmp(z->m[i].name, name, len) == 0) return (ptrdiff_t)i;
    return -1;
}

static void remove_at(struct breaker__inproc_zset *z, size_t i) {
    free(z->m[i].name);
    memmove(&z->m[i], &z->m[i + 1], (z->n - i - 1) * sizeof z->m[0]);
    z->n--;
}

/* Insert a member that is not there. @return 0, or -1 out of memory. A
 * score of -0 is stored as 0: a small sorted set in Redis keeps its
 * scores as text in a listpack, which reads "-0" back as the integer 0. */
static int insert(struct breaker__inproc_zset *z, double score, const char *name, size_t len) {
    if (score == 0) score = 0;
    if (z->n == z->cap) {
        size_t cap = z->cap == 0 ? 4 : z->cap * 2;
        struct breaker__inproc_member *m = realloc(z->m, cap * sizeof *m);
        if (m == NULL) return -1;
        z->m = m;
        z->cap = cap;
    }
    char *copy = malloc(len + 1);
    if (copy == NULL) return -1;
    memcpy(copy, name, len);
    copy[len] = '\0';
    size_t lo = 0, hi = z->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (member_cmp(score, name, len, &z->m[mid]) > 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    memmove(&z->m[lo + 1], &z->m[lo], (z->n - lo) * sizeof z->m[0]);
    z->m[lo] = (struct breaker__inproc_member){.score = score, .name = copy, .len = len};
    z->n++;
    return 0;
}

/* ---- ZADD ----------------------------------------------------------------------------- */

enum { Z_NX = 1, Z_XX = 2, Z_GT = 4, Z_LT = 8, Z_INCR = 16, Z_CH = 32 };
enum { Z_ADDED = 1, Z_UPDATED = 2, Z_NOP = 4, Z_NAN = 8, Z_OOM = 16 };

/* One pair, as Redis's zsetAdd(): *score becomes the member's score. */
static int zadd_one(struct breaker__inproc_zset *z, int flags, double *score, const char *name,
                    size_t len) {
    ptrdiff_t at = find(z, name, len);
    if (at < 0) {
        if (flags & Z_XX) return Z_NOP;
        return insert(z, *score, name, len) == 0 ? Z_ADDED : Z_OOM;
    }
    if (flags & Z_NX) return Z_NOP;
    double cur = z->m[at].score;
    double next = *score;
    if (flags & Z_INCR) {
        next = cur + *score;
        if (isnan(next)) return Z_NAN;
    }
    if (((flags & Z_GT) && next <= cur) || ((flags & Z_LT) && next >= cur)) {
        *score = cur;
        return Z_NOP;
    }
    *score = next;
    if (next == cur) return 0;
    /* The score moved: out and back in at its new place. */
    char *keep = z->m[at].name;
    z->m[at].name = NULL;
    remove_at(z, (size_t)at);
    int rc = insert(z, next, keep, len);
    free(keep);
    return rc == 0 ? Z_UPDATED : Z_OOM;
}

breaker_redis_reply *breaker__inproc_zadd(struct breaker__redis_inproc *s, int argc,
                                          const struct breaker__inproc_arg *argv) {
    static const struct {
        const char *word;
        int flag;
    } opts[] = {{"nx", Z_NX},     {"xx", Z_XX}, {"ch", Z_CH},
                {"incr", Z_INCR}, {"gt", Z_GT}, {"lt", Z_LT}};
    int flags = 0, at = 2;
    for (; at < argc; at++) {
        size_t k = 0;
        while (k < sizeof opts / sizeof opts[0] && !breaker__inproc_is(&argv[at], opts[k].word))
            k++;
        if (k == sizeof opts / sizeof opts[0]) break;
        flags |= opts[k].flag;
    }
    int pairs = argc - at;
    if (pairs == 0 || pairs % 2 != 0) return breaker__inproc_syntax_error();
    pairs /= 2;
    if ((flags & Z_NX) && (flags & Z_XX))
        return breaker__inproc_error("ERR XX and NX options at the same time are not compatible");
    if (((flags & Z_GT) && (flags & Z_NX)) || ((flags & Z_LT) && (flags & Z_NX)) ||
        ((flags & Z_GT) && (flags & Z_LT)))
        return breaker__inproc_error(
            "ERR GT, LT, and/or NX options at the same time are not compatible");
    if ((flags & Z_INCR) && pairs > 1)
        return breaker__inproc_error("ERR INCR option supports a single increment-element pair");
    /* Every score parsed first: the command applies whole or not at all. */
    double *scores = malloc((size_t)pairs * sizeof *scores);
    if (scores == NULL) return NULL;
    for (int i = 0; i < pairs; i++) {
        const struct breaker__inproc_arg *a = &argv[at + 2 * i];
        if (!breaker__inproc_parse_double(a->str, a->len, &scores[i])) {
            free(scores);
            return breaker__inproc_error("ERR value is not a valid float");
        }
    }
    struct breaker__inproc_obj *o;
    if (breaker__inproc_lookup_type(s, &argv[1], &breaker__inproc_zset_type, &o) != 0) {
        free(scores);
        return breaker__inproc_wrongtype();
    }
    long long added = 0, updated = 0, processed = 0;
    double last = 0;
    if (o == NULL && !(flags & Z_XX)) {
        o = breaker__inproc_create(s, &argv[1], &breaker__inproc_zset_type);
        if (o == NULL) {
            free(scores);
            return NULL;
        }
    }
    for (int i = 0; o != NULL && i < pairs; i++) {
        const struct breaker__inproc_arg *m = &argv[at + 2 * i + 1];
        double score = scores[i];
        int out = zadd_one(&o->zset, flags, &score, m->str, m->len);
        if (out & (Z_NAN | Z_OOM)) {
            free(scores);
            breaker__inproc_delete_if_empty(s, &argv[1], o);
            return out & Z_OOM ? NULL
                               : breaker__inproc_error("ERR resulting score is not a number (NaN)");
        }
        added += (out & Z_ADDED) != 0;
        updated += (out & Z_UPDATED) != 0;
        processed += (out & Z_NOP) == 0;
        last = score;
    }
    free(scores);
    if (o != NULL) breaker__inproc_delete_if_empty(s, &argv[1], o);
    if (flags & Z_INCR) return processed ? breaker__inproc_double(last) : breaker_redis_reply_nil();
    return breaker_redis_reply_integer((flags & Z_CH) ? added + updated : added);
}

/* ---- Reads and ZREM ------------------------------------------------------------------- */

breaker_redis_reply *breaker__inproc_zcard(struct breaker__redis_inproc *s, int argc,
                                           const struct breaker__inproc_arg *argv) {
    (void)argc;
    struct breaker__inproc_obj *o;
    if (breaker__inproc_lookup_type(s, &argv[1], &breaker__inproc_zset_type, &o) != 0)
        return breaker__inproc_wrongtype();
    return breaker_redis_reply_integer(o == NULL ? 0 : (long long)o->zset.n);
}

breaker_redis_reply *breaker__inproc_zscore(struct breaker__redis_inproc *s, int argc,
                                            const struct breaker__inproc_arg *argv) {
    (void)argc;
    struct breaker__inproc_obj *o;
    if (breaker__inproc_lookup_type(s, &argv[1], &breaker__inproc_zset_type, &o) != 0)
        return breaker__inproc_wrongtype();
    ptrdiff_t at = o == NULL ? -1 : find(&o->zset, argv[2].str, argv[2].len);
    return at < 0 ? breaker_redis_reply_nil() : breaker__inproc_double(o->zset.m[at].score);
}

breaker_redis_reply *breaker__inproc_zrem(struct breaker__redis_inproc *s, int argc,
                                          const struct breaker__inproc_arg *argv) {
    struct breaker__inproc_obj *o;
    if (breaker__inproc_lookup_type(s, &argv[1], &breaker__inproc_zset_type, &o) != 0)
        return breaker__inproc_wrongtype();
    long long removed = 0;
    for (int i = 2; o != NULL && i < argc; i++) {
        ptrdiff_t at = find(&o->zset, argv[i].str, argv[i].len);
        if (at >= 0) {
            remove_at(&o->zset, (size_t)at);
            removed++;
        }
    }
    if (o != NULL) breaker__inproc_delete_if_empty(s, &argv[1], o);
    return breaker_redis_reply_integer(removed);
}

/* ---- Ranges ------------------------------------------------------------------------- */

enum { RANGE_RANK, RANGE_SCORE };

/* One end of a score range (zslParseRangeItem): "(x" excludes x; the
 * rest is strtod()'s whole string, and not NaN. */
static int parse_bound(const struct breaker__inproc_arg *a, double *v, bool *ex) {
    const char *p = a->str;
    *ex = p[0] == '(';
    if (*ex) p++;
    char *end;
    *v = strtod(p, &end);
    return *end == '\0' && !isnan(*v);
}

/* Members [from, from + n) in the direction asked, with their scores. */
static breaker_redis_reply *emit(const struct breaker__inproc_zset *z, const size_t *idx, size_t n,
                                 bool withscores) {
    breaker_redis_reply *r = breaker_redis_reply_array(withscores ? 2 * n : n);
    if (r == NULL) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const struct breaker__inproc_member *m = &z->m[idx[i]];
        r->element[k++] = breaker__inproc_bulk(m->name, m->len);
        if (withscores) r->element[k++] = breaker__inproc_double(m->score);
    }
    for (size_t i = 0; i < k; i++)
        if (r->element[i] == NULL) {
            breaker_redis_reply_free(r);
            return NULL;
        }
    return r;
}

/* Redis's zrangeGenericCommand(): `first` is the argument index of the
 * key; `type` and `reverse` preset (ZRANGEBYSCORE) or -1 (ZRANGE: from
 * the options). */
static breaker_redis_reply *zrange_generic(struct breaker__redis_inproc *s, int argc,
                                           const struct breaker__inproc_arg *argv, int type,
                                           int reverse) {
    bool withscores = false, auto_type = type < 0, auto_dir = reverse < 0;
    long long offset = 0, limit = -1;
    bool has_limit = false;
    for (int j = 4; j < argc; j++) {
        int left = argc - j - 1;
        if (breaker__inproc_is(&argv[j], "withscores")) {
            withscores = true;
        } else if (breaker__inproc_is(&argv[j], "limit") && left >= 2) {
            if (!breaker__inproc_parse_ll(argv[j + 1].str, argv[j + 1].len, &offset) ||
                !breaker__inproc_parse_ll(argv[j + 2].str, argv[j + 2].len, &limit))
                return breaker__inproc_not_integer();
            has_limit = true;
            j += 2;
        } else if (auto_dir && reverse < 0 && breaker__inproc_is(&argv[j], "rev")) {
            reverse = 1;
        } else if (auto_type && type < 0 && breaker__inproc_is(&argv[j], "byscore")) {
            type = RANGE_SCORE;
        } else if (auto_type && type < 0 && breaker__inproc_is(&argv[j], "bylex")) {
            return breaker__inproc_error("ERR BYLEX is not offered by the in-process Redis");
        } else {
            return breaker__inproc_syntax_error();
        }
    }
    if (reverse < 0) reverse = 0;
    if (type < 0) type = RANGE_RANK;
    if (has_limit && limit != -1 && type == RANGE_RANK)
        return breaker__inproc_error("ERR syntax error, LIMIT is only supported in combination "
                                     "with either BYSCORE or BYLEX");
    int min_at = 2, max_at = 3;
    if (reverse && type == RANGE_SCORE) {
        min_at = 3;
        max_at = 2;
    }
    long long start = 0, stop = 0;
    double min = 0, max = 0;
    bool minex = false, maxex = false;
    if (type == RANGE_RANK) {
        if (!breaker__inproc_parse_ll(argv[min_at].str, argv[min_at].len, &start) ||
            !breaker__inproc_parse_ll(argv[max_at].str, argv[max_at].len, &stop))
            return breaker__inproc_not_integer();
    } else if (!parse_bound(&argv[min_at], &min, &minex) ||
               !parse_bound(&argv[max_at], &max, &maxex)) {
        return breaker__inproc_error("ERR min or max is not a float");
    }
    struct breaker__inproc_obj *o;
    if (breaker__inproc_lookup_type(s, &argv[1], &breaker__inproc_zset_type, &o) != 0)
        return breaker__inproc_wrongtype();
    if (o == NULL) return breaker_redis_reply_array(0);
    const struct breaker__inproc_zset *z = &o->zset;
    long long len = (long long)z->n;
    size_t *idx = malloc((z->n > 0 ? z->n : 1) * sizeof *idx);
    if (idx == NULL) return NULL;
    size_t n = 0;
    if (type == RANGE_RANK) {
        if (start < 0) start += len;
        if (stop < 0) stop += len;
        if (start < 0) start = 0;
        if (start <= stop && start < len) {
            if (stop >= len) stop = len - 1;
            for (long long r = start; r <= stop; r++)
                idx[n++] = (size_t)(reverse ? len - 1 - r : r);
        }
    } else if (!(min > max || (min == max && (minex || maxex))) && !(offset > 0 && offset >= len)) {
        /* Walk in the direction asked: skip `offset` members in range (a
         * negative offset skips them all, as Redis's loop does), then take
         * `limit` (negative: all). */
        for (long long r = 0; r < len; r++) {
            size_t i = (size_t)(reverse ? len - 1 - r : r);
            double v = z->m[i].score;
            bool above_min = minex ? v > min : v >= min;
            bool below_max = maxex ? v < max : v <= max;
            if (!above_min || !below_max) continue;
            if (offset != 0) {
                if (offset > 0) offset--;
                continue;
            }
            if (limit == 0) break;
            if (limit > 0) limit--;
            idx[n++] = i;
        }
    }
    breaker_redis_reply *r = emit(z, idx, n, withscores);
    free(idx);
    return r;
}

breaker_redis_reply *breaker__inproc_zrange(struct breaker__redis_inproc *s, int argc,
                                            const struct breaker__inproc_arg *argv) {
    return zrange_generic(s, argc, argv, -1, -1);
}

breaker_redis_reply *breaker__inproc_zrangebyscore(struct breaker__redis_inproc *s, int argc,
                                                   const struct breaker__inproc_arg *argv) {
    return zrange_generic(s, argc, argv, RANGE_SCORE, 0);
}
