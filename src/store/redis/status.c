/* SPDX-License-Identifier: MIT */
/*
 * status.c - the fleet as Redis holds it (breaker_redis_status(),
 * `breaker status --redis`), read without writing: the names, by SCAN of
 * their state keys on each server the transport sends to (a Cluster's every
 * master: breaker_redis_transport_ops.server_keys), gathered, sorted and
 * read in batches; each name's state with the read a healthy round makes
 * (HMGET of breaker__fleet_read_fields, decided by the protocol's
 * breaker__fleet_read_answer() at the TIME of its server), its leases (the
 * zset's deadlines ahead of that TIME) and its hosts (the sequences hash:
 * "seq time" per host, lua/prelude.lua's KEYS[4]) and its control record
 * (the fields lua/control.lua keeps, and the stored limits).
 */
#include "store/redis/client.h"

#include "common/message.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCAN_COUNT  "512" /* keys SCAN looks at per call */
#define BATCH       64u   /* names read in one exchange */
#define PER_NAME    5u    /* TIME, HMGET, ZRANGE, HGETALL, HMGET of the record */
#define MAX_SERVERS 256u

/* The names found, each once. */
struct names {
    char **item;
    size_t count, cap;
};

static void names_free(struct names *n) {
    for (size_t i = 0; i < n->count; i++)
        free(n->item[i]);
    free(n->item);
}

/* A state key's name ("breaker:v2:{NAME}:s"), added. @return 1, or 0 (out
 * of memory); a key of another shape is none. */
static int names_add(struct names *n, const char *key, size_t len) {
    static const char head[] = "breaker:v2:{", tail[] = "}:s";
    size_t hl = sizeof head - 1, tl = sizeof tail - 1;
    if (len <= hl + tl || memcmp(key, head, hl) != 0 || memcmp(key + len - tl, tail, tl) != 0)
        return 1;
    size_t nl = len - hl - tl;
    char name[BREAKER_NAME_MAX + 1];
    if (nl >= sizeof name) return 1;
    memcpy(name, key + hl, nl);
    name[nl] = '\0';
    if (breaker_name_validate(name, NULL, 0) != BREAKER_OK) return 1;
    if (n->count == n->cap) {
        size_t cap = n->cap ? 2 * n->cap : 64;
        char **item = realloc(n->item, cap * sizeof *item);
        if (item == NULL) return 0;
        n->item = item;
        n->cap = cap;
    }
    if ((n->item[n->count] = malloc(nl + 1)) == NULL) return 0;
    memcpy(n->item[n->count++], name, nl + 1);
    return 1;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted, each once (SCAN may return a key twice). */
static void names_settle(struct names *n) {
    if (n->count == 0) return;
    qsort(n->item, n->count, sizeof *n->item, by_name);
    size_t out = 1;
    for (size_t i = 1; i < n->count; i++) {
        if (strcmp(n->item[i], n->item[out - 1]) == 0) {
            free(n->item[i]);
            continue;
        }
        n->item[out++] = n->item[i];
    }
    n->count = out;
}

/* `n` commands through the transport, under the round lock. @return 1 when
 * all were answered, else 0 with `msg` (BREAKER_EIO). */
static int exchange(breaker_redis *f, breaker_redis_command *cmds, size_t n,
                    breaker_redis_reply **r, char *msg, size_t msg_len) {
    char why[256] = "";
    pthread_mutex_lock(&f->round_mu);
    int got = f->io->exchange(f->io_ctx, cmds, n, r, why, sizeof why);
    pthread_mutex_unlock(&f->round_mu);
    if (got == 1) return 1;
    (void)breaker__fail(BREAKER_EIO, msg, msg_len, "the fleet's state: %s",
                        why[0] ? why : "no answer");
    return 0;
}

/* An error reply (or one of another shape), said. @return -1. */
static int refused(const breaker_redis_reply *r, const char *what, char *msg, size_t msg_len) {
    (void)breaker__fail(BREAKER_EIO, msg, msg_len, "%s: %s", what,
                        r->type == BREAKER_REDIS_REPLY_ERROR ? r->str : "unexpected reply");
    return -1;
}

/* Every name of the server `key` routes to, by SCAN. @return 1, or 0 with
 * `*rc` and `msg`. */
static int scan_server(breaker_redis *f, const char *key, struct names *n, int *rc, char *msg,
                       size_t msg_len) {
    char cursor[24] = "0";
    do {
        const char *argv[] = {"SCAN", cursor, "MATCH", "breaker:v2:{*}:s", "COUNT", SCAN_COUNT};
        breaker_redis_command cmd = {.key = key, .argc = 6, .argv = argv, .idempotent = 1};
        breaker_redis_reply *r = NULL;
        *rc = BREAKER_EIO;
        if (!exchange(f, &cmd, 1, &r, msg, msg_len)) return 0;
        int ok = r->type == BREAKER_REDIS_REPLY_ARRAY && r->elements == 2 &&
                 r->element[0]->type == BREAKER_REDIS_REPLY_STRING &&
                 r->element[0]->len < sizeof cursor &&
                 r->element[1]->type == BREAKER_REDIS_REPLY_ARRAY;
        if (!ok) {
            (void)refused(r, "SCAN", msg, msg_len);
            breaker_redis_reply_free(r);
            return 0;
        }
        memcpy(cursor, r->element[0]->str, r->element[0]->len + 1);
        const breaker_redis_reply *keys = r->element[1];
        for (size_t i = 0; i < keys->elements && ok; i++)
            if (keys->element[i]->type == BREAKER_REDIS_REPLY_STRING)
                ok = names_add(n, keys->element[i]->str, keys->element[i]->len);
        breaker_redis_reply_free(r);
        if (!ok) {
            *rc = breaker__fail(BREAKER_ENOMEM, msg, msg_len, "out of memory");
            return 0;
        }
    } while (strcmp(cursor, "0") != 0);
    return 1;
}

/* Every name on every server. @return BREAKER_OK or an error with `msg`. */
static int scan_all(breaker_redis *f, struct names *n, char *msg, size_t msg_len) {
    /* One command first: the transport connects and learns its servers. */
    const char *time_argv[] = {"TIME"};
    breaker_redis_command probe = {.key = "{0}", .argc = 1, .argv = time_argv, .idempotent = 1};
    breaker_redis_reply *r = NULL;
    if (!exchange(f, &probe, 1, &r, msg, msg_len)) return BREAKER_EIO;
    breaker_redis_reply_free(r);
    char keys[MAX_SERVERS][32];
    size_t servers = 1;
    pthread_mutex_lock(&f->round_mu);
    if (f->io->server_keys != NULL)
        servers = f->io->server_keys(f->io_ctx, keys, MAX_SERVERS);
    else
        snprintf(keys[0], sizeof keys[0], "{0}");
    pthread_mutex_unlock(&f->round_mu);
    int rc = BREAKER_OK;
    for (size_t s = 0; s < servers; s++)
        if (!scan_server(f, keys[s], n, &rc, msg, msg_len)) return rc;
    names_settle(n);
    return BREAKER_OK;
}

/* ---- One name ------------------------------------------------------------------------ */

/* The control record's own fields in the state hash (lua/control.lua):
 * version, forced (1 open, 2 closed), its end (Redis µs, 0: none), shadow,
 * the last reset's generation, who, why, the change's time, the last
 * reset's time (Redis µs); then the stored limits. */
static const char *const record_fields[] = {"cv", "cf", "cu", "ch", "cr", "cw", "cy", "ct", "rt"};
#define RECORD_OWN    9
#define RECORD_FIELDS (RECORD_OWN + BREAKER__FLEET_LIMIT_COUNT)

/* The commands that read `name` (keys in `key`), into cmds[0 .. PER_NAME). */
static void read_cmds(const char key[FLEET_KEY_COUNT][BREAKER__FLEET_KEY_LEN],
                      const char *hmget[2 + BREAKER__FLEET_READ_FIELDS], const char *zrange[5],
                      const char *hgetall[2], const char *record[2 + RECORD_FIELDS],
                      breaker_redis_command cmds[PER_NAME]) {
    static const char *const time_argv[] = {"TIME"};
    hmget[0] = "HMGET";
    hmget[1] = key[FLEET_KEY_STATE];
    for (int i = 0; i < BREAKER__FLEET_READ_FIELDS; i++)
        hmget[2 + i] = breaker__fleet_read_fields[i];
    zrange[0] = "ZRANGE";
    zrange[1] = key[FLEET_KEY_LEASES];
    zrange[2] = "0";
    zrange[3] = "-1";
    zrange[4] = "WITHSCORES";
    hgetall[0] = "HGETALL";
    hgetall[1] = key[FLEET_KEY_SEQ];
    record[0] = "HMGET";
    record[1] = key[FLEET_KEY_STATE];
    for (int i = 0; i < RECORD_FIELDS; i++)
        record[2 + i] =
            i < RECORD_OWN ? record_fields[i] : breaker__fleet_limit_names[i - RECORD_OWN];
    const char *const *argv[PER_NAME] = {time_argv, hmget, zrange, hgetall, record};
    const int argc[PER_NAME] = {1, 2 + BREAKER__FLEET_READ_FIELDS, 5, 2, 2 + RECORD_FIELDS};
    for (unsigned c = 0; c < PER_NAME; c++) {
        memset(&cmds[c], 0, sizeof cmds[c]);
        cmds[c].key = key[FLEET_KEY_STATE]; /* one slot: the {name} tag */
        cmds[c].argc = argc[c];
        cmds[c].argv = argv[c];
        cmds[c].idempotent = 1;
    }
}

/* A number of plain digits of `r` (a bulk string), or UINT64_MAX. */
static uint64_t number(const breaker_redis_reply *r) {
    if (r->type != BREAKER_REDIS_REPLY_STRING || r->len == 0 || r->len > 19) return UINT64_MAX;
    uint64_t v = 0;
    for (size_t i = 0; i < r->len; i++) {
        if (r->str[i] < '0' || r->str[i] > '9') return UINT64_MAX;
        v = v * 10 + (uint64_t)(r->str[i] - '0');
    }
    return v;
}

/* The leases whose deadline (the zset's scores, µs of Redis's clock) is
 * after `now_us`. */
static uint32_t leases_ahead(const breaker_redis_reply *z, uint64_t now_us) {
    uint32_t n = 0;
    for (size_t i = 1; z->type == BREAKER_REDIS_REPLY_ARRAY && i < z->elements; i += 2) {
        uint64_t deadline = number(z->element[i]);
        n += deadline != UINT64_MAX && deadline > now_us;
    }
    return n;
}

/* The hosts whose last flush ("seq time", time in µs) is within `ttl_us`
 * of `now_us`, and the latest flush's age. */
static void hosts_seen(const breaker_redis_reply *q, uint64_t now_us, uint64_t ttl_us,
                       breaker_redis_name_status *out) {
    uint64_t latest = 0;
    out->hosts = 0;
    for (size_t i = 1; q->type == BREAKER_REDIS_REPLY_ARRAY && i < q->elements; i += 2) {
        const breaker_redis_reply *v = q->element[i];
        const char *sp = v->type == BREAKER_REDIS_REPLY_STRING ? strchr(v->str, ' ') : NULL;
        unsigned long long t;
        if (sp == NULL || sscanf(sp + 1, "%llu", &t) != 1 || t > now_us) continue;
        if (t + ttl_us >= now_us) out->hosts++;
        if (t > latest) latest = t;
    }
    out->last_flush_age_ns = latest == 0 ? UINT64_MAX : (now_us - latest) * 1000;
}

/* The control record from its fields `v` (HMGET of record_fields and the
 * limits) at Redis's `now_us`, as the control script answers it: a forced
 * state whose end has passed is none. @return 1, or 0 with `why`. */
static int record_of(const breaker_redis_reply *v, uint64_t now_us,
                     struct breaker__fleet_record *rec, char *why, size_t why_len) {
    uint64_t n[RECORD_OWN];
    for (int i = 0; i < RECORD_OWN; i++) {
        if (i == 5 || i == 6) continue; /* who, why: texts */
        const breaker_redis_reply *x = v->element[i];
        n[i] = x->type == BREAKER_REDIS_REPLY_NIL ? 0 : number(x);
        if (n[i] == UINT64_MAX) {
            snprintf(why, why_len, "control record: field %s is not a number", record_fields[i]);
            return 0;
        }
    }
    uint64_t forced = n[1], until = n[2];
    int64_t num[5] = {(int64_t)forced, 0, (int64_t)n[3], (int64_t)n[4],
                      n[8] > 0 && now_us > n[8] ? (int64_t)(now_us - n[8]) : 0};
    if (forced != 0 && until != 0) {
        if (until > now_us)
            num[1] = (int64_t)(until - now_us);
        else
            num[0] = 0; /* ran out */
    }
    int64_t age = n[7] > 0 && now_us > n[7] ? (int64_t)(now_us - n[7]) : 0;
    const breaker_redis_reply *who = v->element[5], *wy = v->element[6];
    const char *limits[BREAKER__FLEET_LIMIT_COUNT];
    for (int i = 0; i < BREAKER__FLEET_LIMIT_COUNT; i++) {
        const breaker_redis_reply *x = v->element[RECORD_OWN + i];
        limits[i] = x->type == BREAKER_REDIS_REPLY_STRING ? x->str : NULL;
    }
    return breaker__fleet_record_read(
        n[0], num, who->type == BREAKER_REDIS_REPLY_STRING ? who->str : "",
        who->type == BREAKER_REDIS_REPLY_STRING ? who->len : 0,
        wy->type == BREAKER_REDIS_REPLY_STRING ? wy->str : "",
        wy->type == BREAKER_REDIS_REPLY_STRING ? wy->len : 0, age, limits, rec, why, why_len);
}

/* Fill `out` from the replies r[0 .. PER_NAME) to read_cmds(). @return 1;
 * 0 when the name has no state (gone since the SCAN); -1 with `msg` when a
 * reply was an error. */
static int read_replies(breaker_redis *f, breaker_redis_reply *const r[PER_NAME],
                        breaker_redis_name_status *out, char *msg, size_t msg_len) {
    const breaker_redis_reply *time = r[0], *hm = r[1];
    uint64_t now_us = 0;
    if (time->type != BREAKER_REDIS_REPLY_ARRAY || time->elements != 2 ||
        !breaker__fleet_time_read(time->element[0]->str, time->element[1]->str, &now_us))
        return refused(time, "TIME", msg, msg_len);
    if (hm->type != BREAKER_REDIS_REPLY_ARRAY || hm->elements != BREAKER__FLEET_READ_FIELDS)
        return refused(hm, "HMGET", msg, msg_len);
    for (unsigned c = 2; c < PER_NAME; c++)
        if (r[c]->type != BREAKER_REDIS_REPLY_ARRAY)
            return refused(r[c], c == 2 ? "ZRANGE" : c == 3 ? "HGETALL" : "HMGET", msg, msg_len);
    if (r[4]->type != BREAKER_REDIS_REPLY_ARRAY || r[4]->elements != RECORD_FIELDS)
        return refused(r[4], "HMGET", msg, msg_len);
    const char *v[BREAKER__FLEET_READ_FIELDS];
    for (int i = 0; i < BREAKER__FLEET_READ_FIELDS; i++) {
        const breaker_redis_reply *e = hm->element[i];
        v[i] = e->type == BREAKER_REDIS_REPLY_STRING ? e->str : NULL;
    }
    if (v[0] == NULL) return 0; /* "st": no state */
    struct breaker__fleet_answer a;
    uint64_t run = 0;
    /* No bound on the wait read here: what Redis holds is shown. */
    if (!breaker__fleet_read_answer(v, now_us, BREAKER__FLEET_MAX_DURATION_US, &a, &run,
                                    out->problem, sizeof out->problem))
        return 1;
    struct breaker__fleet_record rec;
    if (!record_of(r[4], now_us, &rec, out->problem, sizeof out->problem)) return 1;
    breaker_config defaults;
    breaker_config_init(&defaults);
    breaker__redis_control_state_of(&rec, &defaults, &out->control);
    out->state = a.state == FLEET_OPEN        ? BREAKER_OPEN
                 : a.state == FLEET_HALF_OPEN ? BREAKER_HALF_OPEN
                                              : BREAKER_CLOSED;
    out->generation = a.gen;
    out->wait_left_ns = a.state == FLEET_OPEN ? a.wait_us * 1000 : 0;
    out->failed_recoveries = a.k;
    out->leases_out = leases_ahead(r[2], now_us);
    hosts_seen(r[3], now_us, f->cfg.key_ttl_ns / 1000, out);
    /* A forced state in force is what the hosts enforce: forced open or
     * closed, or open with no lease granted before its end (a timed open,
     * lua/control.lua). */
    if (out->control.forced != BREAKER_CLOSED) {
        out->state = out->control.forced;
        if (out->control.forced == BREAKER_OPEN && out->control.left_ns > out->wait_left_ns)
            out->wait_left_ns = out->control.left_ns;
        if (out->control.forced != BREAKER_OPEN) out->wait_left_ns = 0;
    }
    return 1;
}

/* Read names[0 .. n) (at most BATCH) and call `each` for each that has a
 * state. @return BREAKER_OK, 1 (`each` stopped it), or an error. */
static int read_batch(breaker_redis *f, const char *const *names, size_t n,
                      breaker_redis_status_fn *each, void *ctx, char *msg, size_t msg_len) {
    static const size_t per = PER_NAME;
    char(*key)[FLEET_KEY_COUNT][BREAKER__FLEET_KEY_LEN] = calloc(n, sizeof *key);
    const char *(*hmget)[2 + BREAKER__FLEET_READ_FIELDS] = calloc(n, sizeof *hmget);
    const char *(*zrange)[5] = calloc(n, sizeof *zrange);
    const char *(*hgetall)[2] = calloc(n, sizeof *hgetall);
    const char *(*record)[2 + RECORD_FIELDS] = calloc(n, sizeof *record);
    breaker_redis_command *cmds = calloc(n * per, sizeof *cmds);
    breaker_redis_reply **r = calloc(n * per, sizeof *r);
    breaker_redis_name_status *st = malloc(sizeof *st);
    int rc = BREAKER_OK;
    if (key == NULL || hmget == NULL || zrange == NULL || hgetall == NULL || record == NULL ||
        cmds == NULL || r == NULL || st == NULL) {
        rc = breaker__fail(BREAKER_ENOMEM, msg, msg_len, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        for (int k = 0; k < FLEET_KEY_COUNT; k++)
            breaker__fleet_key(names[i], k, key[i][k], sizeof key[i][k]);
        read_cmds(key[i], hmget[i], zrange[i], hgetall[i], record[i], &cmds[i * per]);
    }
    if (!exchange(f, cmds, n * per, r, msg, msg_len)) {
        rc = BREAKER_EIO;
        goto done;
    }
    for (size_t i = 0; i < n && rc == BREAKER_OK; i++) {
        memset(st, 0, sizeof *st);
        snprintf(st->name, sizeof st->name, "%s", names[i]);
        int got = read_replies(f, &r[i * per], st, msg, msg_len);
        if (got < 0) rc = BREAKER_EIO;
        if (got > 0 && each(ctx, st) != 0) rc = 1;
    }
done:
    for (size_t i = 0; r != NULL && i < n * per; i++)
        breaker_redis_reply_free(r[i]);
    free(key);
    free(hmget);
    free(zrange);
    free(hgetall);
    free(record);
    free(cmds);
    free(r);
    free(st);
    return rc;
}

/* ---- The entry point --------------------------------------------------------------- */

/* The one name asked for: its state, or "no fleet state". */
struct one {
    breaker_redis_status_fn *each;
    void *ctx;
    int seen;
};

static int one_seen(void *ctx, const breaker_redis_name_status *st) {
    struct one *o = ctx;
    o->seen = 1;
    return o->each(o->ctx, st);
}

int breaker_redis_status(breaker_redis *f, const char *name, breaker_redis_status_fn *each,
                         void *ctx, char *msg, size_t msg_len) {
    if (name != NULL) {
        int rc = breaker_name_validate(name, msg, msg_len);
        if (rc != BREAKER_OK) return rc;
        struct one o = {.each = each, .ctx = ctx};
        rc = read_batch(f, &name, 1, one_seen, &o, msg, msg_len);
        if (rc == BREAKER_OK && !o.seen)
            rc = breaker__fail(BREAKER_EIO, msg, msg_len, "%s: no fleet state in Redis", name);
        return rc == 1 ? BREAKER_OK : rc;
    }
    struct names n = {0};
    int rc = scan_all(f, &n, msg, msg_len);
    for (size_t i = 0; rc == BREAKER_OK && i < n.count; i += BATCH)
        rc = read_batch(f, (const char *const *)n.item + i,
                        n.count - i < BATCH ? n.count - i : BATCH, each, ctx, msg, msg_len);
    names_free(&n);
    return rc == 1 ? BREAKER_OK : rc;
}
