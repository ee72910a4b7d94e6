/* SPDX-License-Identifier: MIT */
/*
 * commands.c - the in-process Redis's command table and dispatch, and the
 * commands on keys and on the server itself. A command is found by name,
 * its arity checked, then what a Redis in the refused condition would
 * refuse (inproc.h) is refused, in the order of Redis 7.0's processCommand()
 * (and, for a script's call, scriptCall()), with their error texts.
 */
#include "store/redis/inproc/engine.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- Replies ---------------------------------------------------------------------- */

breaker_redis_reply *breaker__inproc_status(const char *text) {
    return breaker_redis_reply_string(BREAKER_REDIS_REPLY_STATUS, text, strlen(text));
}

breaker_redis_reply *breaker__inproc_ok(void) { return breaker__inproc_status("OK"); }

breaker_redis_reply *breaker__inproc_bulk(const char *str, size_t len) {
    return breaker_redis_reply_string(BREAKER_REDIS_REPLY_STRING, str, len);
}

/* Redis sends an error as one line: a CR or LF in it becomes a space
 * (addReplyErrorFormat()). */
breaker_redis_reply *breaker__inproc_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    breaker_redis_reply *r = breaker_redis_reply_string(BREAKER_REDIS_REPLY_ERROR, "", 0);
    char *buf = r == NULL ? NULL : realloc(r->str, (size_t)n + 1);
    if (buf == NULL) {
        breaker_redis_reply_free(r);
        return NULL;
    }
    r->str = buf;
    va_start(ap, fmt);
    vsnprintf(buf, (size_t)n + 1, fmt, ap);
    va_end(ap);
    r->len = (size_t)n;
    for (int i = 0; i < n; i++)
        if (buf[i] == '\r' || buf[i] == '\n') buf[i] = ' ';
    return r;
}

breaker_redis_reply *breaker__inproc_wrongtype(void) {
    return breaker__inproc_error("WRONGTYPE Operation against a key holding the wrong kind of "
                                 "value");
}

breaker_redis_reply *breaker__inproc_syntax_error(void) {
    return breaker__inproc_error("ERR syntax error");
}

breaker_redis_reply *breaker__inproc_not_integer(void) {
    return breaker__inproc_error("ERR value is not an integer or out of range");
}

breaker_redis_reply *breaker__inproc_arity_error(const char *name) {
    return breaker__inproc_error("ERR wrong number of arguments for '%s' command", name);
}

int breaker__inproc_format_double(char *buf, size_t len, double d) {
    if (isinf(d)) return snprintf(buf, len, "%s", d > 0 ? "inf" : "-inf");
    return snprintf(buf, len, "%.17g", d);
}

breaker_redis_reply *breaker__inproc_double(double d) {
    char buf[64];
    int n = breaker__inproc_format_double(buf, sizeof buf, d);
    return breaker__inproc_bulk(buf, (size_t)n);
}

/* ---- Parsing ------------------------------------------------------------------------ */

/* util.c, string2ll(): at most 20 bytes; "0", or an optional '-' and
 * digits without a leading zero; within a long long. */
int breaker__inproc_parse_ll(const char *s, size_t len, long long *out) {
    if (len == 0 || len > 20) return 0;
    if (len == 1 && s[0] == '0') {
        *out = 0;
        return 1;
    }
    size_t i = 0;
    bool negative = s[0] == '-';
    if (negative && ++i == len) return 0;
    if (s[i] < '1' || s[i] > '9') return 0;
    unsigned long long v = 0;
    for (; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') return 0;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (ULLONG_MAX - d) / 10) return 0;
        v = v * 10 + d;
    }
    if (negative) {
        if (v > (unsigned long long)LLONG_MAX + 1) return 0;
        *out = v == (unsigned long long)LLONG_MAX + 1 ? LLONG_MIN : -(long long)v;
    } else {
        if (v > (unsigned long long)LLONG_MAX) return 0;
        *out = (long long)v;
    }
    return 1;
}

/* object.c, getDoubleFromObject(): strtod() of the whole text, no leading
 * space, not NaN, no overflow or underflow to zero. `s` ends with a NUL
 * at `len` (every argument does). */
int breaker__inproc_parse_double(const char *s, size_t len, double *out) {
    if (len == 0 || isspace((unsigned char)s[0])) return 0;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if ((size_t)(end - s) != len || isnan(v)) return 0;
    if (errno == ERANGE && (v == HUGE_VAL || v == -HUGE_VAL || fpclassify(v) == FP_ZERO)) return 0;
    *out = v;
    return 1;
}

bool breaker__inproc_is(const struct breaker__inproc_arg *a, const char *word) {
    return strlen(word) == a->len && strncasecmp(a->str, word, a->len) == 0;
}

/* ---- The server's commands ---------------------------------------------------------- */

static breaker_redis_reply *cmd_ping(struct breaker__redis_inproc *s, int argc,
                                     const struct breaker__inproc_arg *argv) {
    (void)s;
    if (argc > 2) return breaker__inproc_arity_error("ping");
    return argc == 2 ? breaker__inproc_bulk(argv[1].str, argv[1].len)
                     : breaker__inproc_status("PONG");
}

static breaker_redis_reply *cmd_echo(struct breaker__redis_inproc *s, int argc,
                                     const struct breaker__inproc_arg *argv) {
    (void)s;
    (void)argc;
    return breaker__inproc_bulk(argv[1].str, argv[1].len);
}

/* The database of this one logical connection (inproc.h). */
static breaker_redis_reply *cmd_select(struct breaker__redis_inproc *s, int argc,
                                       const struct breaker__inproc_arg *argv) {
    (void)argc;
    long long id;
    if (!breaker__inproc_parse_ll(argv[1].str, argv[1].len, &id) || id < INT_MIN || id > INT_MAX)
        return breaker__inproc_not_integer();
    if (id < 0 || id >= INPROC_DATABASES)
        return breaker__inproc_error("ERR DB index is out of range");
    s->selected = (int)id;
    return breaker__inproc_ok();
}

/* Any password is accepted: the server has no users (inproc.h). */
static breaker_redis_reply *cmd_ok(struct breaker__redis_inproc *s, int argc,
                                   const struct breaker__inproc_arg *argv) {
    (void)s;
    (void)argc;
    (void)argv;
    return breaker__inproc_ok();
}

static breaker_redis_reply *cmd_time(struct breaker__redis_inproc *s, int argc,
                                     const struct breaker__inproc_arg *argv) {
    (void)argc;
    (void)argv;
    char sec[24], usec[24];
    int ns = snprintf(sec, sizeof sec, "%llu", (unsigned long long)(s->now_ns / 1000000000u));
    int nu =
        snprintf(usec, sizeof usec, "%llu", (unsigned long long)(s->now_ns / 1000u % 1000000u));
    breaker_redis_reply *r = breaker_redis_reply_array(2);
    if (r == NULL) return NULL;
    r->element[0] = breaker__inproc_bulk(sec, (size_t)ns);
    r->element[1] = breaker__inproc_bulk(usec, (size_t)nu);
    if (r->element[0] == NULL || r->element[1] == NULL) {
        breaker_redis_reply_free(r);
        return NULL;
    }
    return r;
}

/* The keys in the selected database that are not past their deadline:
 * DBSIZE counts them all, as Redis counts keys it has not reclaimed yet. */
static breaker_redis_reply *cmd_dbsize(struct breaker__redis_inproc *s, int argc,
                                       const struct breaker__inproc_arg *argv) {
    (void)argc;
    (void)argv;
    return breaker_redis_reply_integer((long long)s->db[s->selected].live);
}

static breaker_redis_reply *cmd_keys(struct breaker__redis_inproc *s, int argc,
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

static breaker_redis_reply *cmd_del(struct breaker__redis_inproc *s, int argc,
                                    const struct breaker__inproc_arg *argv) {
    long long n = 0;
    for (int i = 1; i < argc; i++)
        n += breaker__inproc_delete(s, &argv[i]);
    return breaker_redis_reply_integer(n);
}

static breaker_redis_reply *cmd_exists(struct breaker__redis_inproc *s, int argc,
                                       const struct breaker__inproc_arg *argv) {
    long long n = 0;
    for (int i = 1; i < argc; i++)
        n += breaker__inproc_lookup(s, &argv[i]) != NULL;
    return breaker_redis_reply_integer(n);
}

static breaker_redis_reply *cmd_type(struct breaker__redis_inproc *s, int argc,
                                     const struct breaker__inproc_arg *argv) {
    (void)argc;
    const struct breaker__inproc_obj *o = breaker__inproc_lookup(s, &argv[1]);
    return breaker__inproc_status(o == NULL ? "none" : o->type == INPROC_HASH ? "hash" : "zset");
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

static breaker_redis_reply *cmd_expire(struct breaker__redis_inproc *s, int argc,
                                       const struct breaker__inproc_arg *argv) {
    return expire_generic(s, argc, argv, "expire", 1000);
}

static breaker_redis_reply *cmd_pexpire(struct breaker__redis_inproc *s, int argc,
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

static breaker_redis_reply *cmd_ttl(struct breaker__redis_inproc *s, int argc,
                                    const struct breaker__inproc_arg *argv) {
    (void)argc;
    return ttl_generic(s, &argv[1], false);
}

static breaker_redis_reply *cmd_pttl(struct breaker__redis_inproc *s, int argc,
                                     const struct breaker__inproc_arg *argv) {
    (void)argc;
    return ttl_generic(s, &argv[1], true);
}

static breaker_redis_reply *cmd_persist(struct breaker__redis_inproc *s, int argc,
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

static breaker_redis_reply *cmd_flushall(struct breaker__redis_inproc *s, int argc,
                                         const struct breaker__inproc_arg *argv) {
    if (!flush_args_ok(argc, argv)) return breaker__inproc_syntax_error();
    for (int db = 0; db < INPROC_DATABASES; db++)
        breaker__inproc_flushdb(s, db);
    return breaker__inproc_ok();
}

static breaker_redis_reply *cmd_flushdb(struct breaker__redis_inproc *s, int argc,
                                        const struct breaker__inproc_arg *argv) {
    if (!flush_args_ok(argc, argv)) return breaker__inproc_syntax_error();
    breaker__inproc_flushdb(s, s->selected);
    return breaker__inproc_ok();
}

/* CLUSTER: a Redis without cluster support (the fleet client asks CLUSTER
 * SLOTS to tell one Redis from a Cluster). Each subcommand of 7.0 with its
 * arity, so that a wrong call gets Redis's error first. */
static breaker_redis_reply *cmd_cluster(struct breaker__redis_inproc *s, int argc,
                                        const struct breaker__inproc_arg *argv) {
    (void)s;
    static const struct {
        const char *name;
        int arity;
    } sub[] = {{"addslots", -3},
               {"addslotsrange", -4},
               {"bumpepoch", 2},
               {"count-failure-reports", 3},
               {"countkeysinslot", 3},
               {"delslots", -3},
               {"delslotsrange", -4},
               {"failover", -2},
               {"flushslots", 2},
               {"forget", 3},
               {"getkeysinslot", 4},
               {"help", 2},
               {"info", 2},
               {"keyslot", 3},
               {"links", 2},
               {"meet", -4},
               {"myid", 2},
               {"nodes", 2},
               {"replicas", 3},
               {"replicate", 3},
               {"reset", -2},
               {"saveconfig", 2},
               {"set-config-epoch", 3},
               {"setslot", -4},
               {"shards", 2},
               {"slaves", 3},
               {"slots", 2}};
    for (size_t i = 0; i < sizeof sub / sizeof sub[0]; i++) {
        if (!breaker__inproc_is(&argv[1], sub[i].name)) continue;
        int a = sub[i].arity;
        if ((a > 0 && argc != a) || (a < 0 && argc < -a))
            return breaker__inproc_error("ERR wrong number of arguments for 'cluster|%s' command",
                                         sub[i].name);
        return breaker__inproc_error("ERR This instance has cluster support disabled");
    }
    return breaker__inproc_error("ERR unknown subcommand '%.128s'. Try CLUSTER HELP.", argv[1].str);
}

/* ---- The table ----------------------------------------------------------------------- */

/* Sorted by name, for the binary search. */
static const struct breaker__inproc_command commands[] = {
    {"auth", -2, CMD_NOSCRIPT, cmd_ok},
    {"cluster", -2, 0, cmd_cluster},
    {"dbsize", 1, 0, cmd_dbsize},
    {"del", -2, CMD_WRITE, cmd_del},
    {"echo", 2, 0, cmd_echo},
    {"eval", -3, CMD_NOSCRIPT, breaker__inproc_eval},
    {"eval_ro", -3, CMD_NOSCRIPT, breaker__inproc_eval_ro},
    {"evalsha", -3, CMD_NOSCRIPT, breaker__inproc_evalsha},
    {"evalsha_ro", -3, CMD_NOSCRIPT, breaker__inproc_evalsha_ro},
    {"exists", -2, 0, cmd_exists},
    {"expire", -3, CMD_WRITE, cmd_expire},
    {"flushall", -1, CMD_WRITE, cmd_flushall},
    {"flushdb", -1, CMD_WRITE, cmd_flushdb},
    {"hdel", -3, CMD_WRITE, breaker__inproc_hdel},
    {"hexists", 3, 0, breaker__inproc_hexists},
    {"hget", 3, 0, breaker__inproc_hget},
    {"hgetall", 2, 0, breaker__inproc_hgetall},
    {"hincrby", 4, CMD_WRITE | CMD_DENYOOM, breaker__inproc_hincrby},
    {"hkeys", 2, 0, breaker__inproc_hkeys},
    {"hlen", 2, 0, breaker__inproc_hlen},
    {"hmget", -3, 0, breaker__inproc_hmget},
    {"hmset", -4, CMD_WRITE | CMD_DENYOOM, breaker__inproc_hmset},
    {"hscan", -3, 0, breaker__inproc_hscan},
    {"hset", -4, CMD_WRITE | CMD_DENYOOM, breaker__inproc_hset},
    {"hsetnx", 4, CMD_WRITE | CMD_DENYOOM, breaker__inproc_hsetnx},
    {"hvals", 2, 0, breaker__inproc_hvals},
    {"keys", 2, 0, cmd_keys},
    {"persist", 2, CMD_WRITE, cmd_persist},
    {"pexpire", -3, CMD_WRITE, cmd_pexpire},
    {"ping", -1, 0, cmd_ping},
    {"pttl", 2, 0, cmd_pttl},
    {"quit", -1, CMD_NOSCRIPT, cmd_ok},
    {"script", -2, CMD_NOSCRIPT, breaker__inproc_script},
    {"select", 2, 0, cmd_select},
    {"time", 1, 0, cmd_time},
    {"ttl", 2, 0, cmd_ttl},
    {"type", 2, 0, cmd_type},
    {"zadd", -4, CMD_WRITE | CMD_DENYOOM, breaker__inproc_zadd},
    {"zcard", 2, 0, breaker__inproc_zcard},
    {"zrange", -4, 0, breaker__inproc_zrange},
    {"zrangebyscore", -4, 0, breaker__inproc_zrangebyscore},
    {"zrem", -3, CMD_WRITE, breaker__inproc_zrem},
    {"zscore", 3, 0, breaker__inproc_zscore},
};

const struct breaker__inproc_command *breaker__inproc_command_find(const char *name, size_t len) {
    char lower[24];
    if (len == 0 || len >= sizeof lower) return NULL;
    for (size_t i = 0; i < len; i++)
        lower[i] = (char)tolower((unsigned char)name[i]);
    lower[len] = '\0';
    size_t lo = 0, hi = sizeof commands / sizeof commands[0];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(lower, commands[mid].name);
        if (c == 0) return &commands[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

static bool arity_ok(const struct breaker__inproc_command *cmd, int argc) {
    return cmd->arity > 0 ? argc == cmd->arity : argc >= -cmd->arity;
}

#define OOM_ERROR      "-OOM command not allowed when used memory > 'maxmemory'."
#define READONLY_ERROR "-READONLY You can't write against a read only replica."

const char *breaker__inproc_script_refusal(struct breaker__redis_inproc *s,
                                           const struct breaker__inproc_command *cmd, int argc,
                                           bool read_only, bool wrote) {
    if (cmd == NULL) return "Unknown Redis command called from script";
    if (!arity_ok(cmd, argc)) return "Wrong number of args calling Redis command from script";
    if (cmd->flags & CMD_NOSCRIPT) return "This Redis command is not allowed from script";
    if (!(cmd->flags & CMD_WRITE)) return NULL;
    if (read_only) return "Write commands are not allowed from read-only scripts.";
    /* A script that wrote already cannot be stopped half done. */
    if (wrote) return NULL;
    if (s->refuse == BREAKER__INPROC_REFUSE_READONLY) return READONLY_ERROR;
    if (s->refuse == BREAKER__INPROC_REFUSE_OOM && (cmd->flags & CMD_DENYOOM)) return OOM_ERROR;
    return NULL;
}

/* The error of an unknown command: the name and the first arguments, at
 * most 128 bytes of them (server.c, processCommand()). */
static breaker_redis_reply *unknown_command(int argc, const struct breaker__inproc_arg *argv) {
    char args[512] = "";
    size_t len = 0;
    for (int i = 1; i < argc && len < 128; i++) {
        int n = snprintf(args + len, sizeof args - len, "'%.*s' ", (int)(128 - len), argv[i].str);
        if (n > 0) len += (size_t)n < sizeof args - len ? (size_t)n : sizeof args - len - 1;
    }
    return breaker__inproc_error("ERR unknown command '%.128s', with args beginning with: %s",
                                 argv[0].str, args);
}

breaker_redis_reply *breaker__redis_inproc_command(struct breaker__redis_inproc *s, int argc,
                                                   const char *const *argv, const size_t *argvlen) {
    if (argc <= 0) return breaker__inproc_error("ERR empty command");
    s->now_ns = s->clock(s->clock_ctx);
    s->now_ms = (int64_t)(s->now_ns / 1000000u);
    s->stats.commands++;
    /* The arguments as the commands read them: each ends with a NUL (the
     * parsers rely on it, as Redis's sds strings do). */
    size_t bytes = 0;
    for (int i = 0; i < argc; i++)
        bytes += argvlen[i] + 1;
    struct breaker__inproc_arg small[32];
    char text[1024];
    struct breaker__inproc_arg *args = argc <= 32 ? small : malloc((size_t)argc * sizeof *args);
    char *copy = bytes <= sizeof text ? text : malloc(bytes);
    breaker_redis_reply *r = NULL;
    if (args != NULL && copy != NULL) {
        char *p = copy;
        for (int i = 0; i < argc; i++) {
            if (argvlen[i] > 0) memcpy(p, argv[i], argvlen[i]);
            p[argvlen[i]] = '\0';
            args[i] = (struct breaker__inproc_arg){.str = p, .len = argvlen[i]};
            p += argvlen[i] + 1;
        }
        const struct breaker__inproc_command *cmd =
            breaker__inproc_command_find(args[0].str, args[0].len);
        if (cmd == NULL) {
            r = unknown_command(argc, args);
        } else if (!arity_ok(cmd, argc)) {
            r = breaker__inproc_arity_error(cmd->name);
        } else if (s->refuse == BREAKER__INPROC_REFUSE_OOM && (cmd->flags & CMD_DENYOOM)) {
            s->stats.refused++;
            r = breaker__inproc_error("%s", OOM_ERROR + 1);
        } else if (s->refuse == BREAKER__INPROC_REFUSE_READONLY && (cmd->flags & CMD_WRITE)) {
            s->stats.refused++;
            r = breaker__inproc_error("%s", READONLY_ERROR + 1);
        } else {
            r = cmd->fn(s, argc, args);
        }
    }
    if (args != small) free(args);
    if (copy != text) free(copy);
    return r;
}
