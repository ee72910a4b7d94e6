/* SPDX-License-Identifier: MIT */
/*
 * engine.h - the in-process Redis's parts, shared between its files
 * (private to src/store/redis/inproc/; inproc.h is what its users see).
 * Each file calls only the files listed below it:
 *  - link.c        the in-process transport (link.h), over dispatch.c;
 *  - server.c      the server: create, destroy, the faults, the reads;
 *  - commands.c    the command table: each command's arity and flags, and
 *                  the file that runs it;
 *  - scripting.c   the Lua environment, EVAL, EVALSHA and SCRIPT; its
 *                  calls run through dispatch.c;
 *  - hash.c, zset.c  the hash and the sorted-set types and their commands;
 *  - keys.c        the commands on keys and on whole databases;
 *  - connection.c  the commands that touch no key;
 *  - dispatch.c    running a command: lookup in the server's table,
 *                  arity, refusals;
 *  - keyspace.c    the databases: keys, their values through their type's
 *                  table, expiry on the clock;
 *  - replies.c     the replies the commands build, Redis's errors;
 *  - args.c        the arguments as the commands read them;
 *  - dict.c        a table of byte-string keys kept in insertion order;
 *  - bitlib.c      Lua's bit library (LuaBitOp's semantics);
 *  - sha1.c        SHA-1 (FIPS 180-4), for the scripts' names (inproc.h).
 */
#ifndef BREAKER_REDIS_INPROC_ENGINE_H
#define BREAKER_REDIS_INPROC_ENGINE_H

#include "store/redis/inproc/inproc.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- dict.c -------------------------------------------------------------------- */

/* One key of a dict and its value: an object (the keyspace) or bytes (a
 * hash's field). `key` is NULL for an entry deleted since the last
 * compaction. `seq` grows with each insertion: it orders the entries and
 * is HSCAN's cursor. */
struct breaker__inproc_entry {
    char *key; /* NUL-terminated copy */
    size_t key_len;
    uint64_t hash; /* of the key */
    uint64_t seq;
    void *obj;   /* keyspace: struct breaker__inproc_obj */
    char *value; /* hash: NUL-terminated copy */
    size_t value_len;
};

/* Entries in insertion order (deletion leaves a hole that a later
 * insertion compacts away), found through an open-addressed index. */
struct breaker__inproc_dict {
    struct breaker__inproc_entry *entries;
    size_t used;      /* entries[0 .. used - 1], holes included */
    size_t live;      /* entries with a key */
    size_t cap;       /* room in entries */
    uint32_t *index;  /* 0 empty, UINT32_MAX a deleted slot, else entry + 1 */
    size_t index_cap; /* a power of two, or 0 */
    uint64_t next_seq;
};

void breaker__inproc_dict_init(struct breaker__inproc_dict *d);
/* Free the index, the entries and their keys; the values are the caller's
 * to free first. */
void breaker__inproc_dict_free(struct breaker__inproc_dict *d);
struct breaker__inproc_entry *breaker__inproc_dict_find(const struct breaker__inproc_dict *d,
                                                        const char *key, size_t len);
/* Add `key`, which must be absent: @return its entry (value fields zero),
 * or NULL when out of memory. Moves entries: earlier entry pointers die. */
struct breaker__inproc_entry *breaker__inproc_dict_add(struct breaker__inproc_dict *d,
                                                       const char *key, size_t len);
/* Remove `e` (its value freed by the caller first). Moves nothing. */
void breaker__inproc_dict_delete(struct breaker__inproc_dict *d, struct breaker__inproc_entry *e);
/* Entry `i` of 0 .. d->used - 1 in `order` (BREAKER__INPROC_ORDER_*), or
 * NULL for a hole. */
struct breaker__inproc_entry *breaker__inproc_dict_at(const struct breaker__inproc_dict *d,
                                                      size_t i, int order);
/* The position (for _dict_at() in `order`) of the first entry whose seq is
 * at or after `cursor` in that order (cursor 0: the start). */
size_t breaker__inproc_dict_seek(const struct breaker__inproc_dict *d, uint64_t cursor, int order);

/* ---- replies.c ------------------------------------------------------------------ */

breaker_redis_reply *breaker__inproc_ok(void);
breaker_redis_reply *breaker__inproc_status(const char *text);
breaker_redis_reply *breaker__inproc_bulk(const char *str, size_t len);
breaker_redis_reply *breaker__inproc_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
/* Redis's errors, word for word. */
breaker_redis_reply *breaker__inproc_wrongtype(void);
breaker_redis_reply *breaker__inproc_syntax_error(void);
breaker_redis_reply *breaker__inproc_not_integer(void);
breaker_redis_reply *breaker__inproc_arity_error(const char *name);
/* A double as Redis 7.0 writes one in RESP2 (a bulk string: "%.17g",
 * "inf", "-inf"). */
breaker_redis_reply *breaker__inproc_double(double d);
int breaker__inproc_format_double(char *buf, size_t len, double d);

/* ---- args.c --------------------------------------------------------------------- */

/* One argument as the commands read it. */
struct breaker__inproc_arg {
    const char *str;
    size_t len;
};

/* Redis's number parsing (util.c): a strict decimal long long (no sign
 * but '-', no leading zero, no space, fits); a double of strtod() taking
 * the whole string, not NaN, not out of range. @return 1 with *out. */
int breaker__inproc_parse_ll(const char *s, size_t len, long long *out);
int breaker__inproc_parse_double(const char *s, size_t len, double *out);
/* Case-insensitive equality of an argument with a word. */
bool breaker__inproc_is(const struct breaker__inproc_arg *a, const char *word);

/* ---- keyspace.c ------------------------------------------------------------------ */

struct breaker__inproc_obj;

/* What the keyspace needs of a value's type, as Redis's dictType gives a
 * dict its callbacks: the keyspace frees a value and tells an empty one
 * through its type, never naming the file of a type (hash.c, zset.c). */
struct breaker__inproc_value_type {
    const char *name; /* TYPE's answer: "hash", "zset" */
    /* The value's fields or members: a value of none is deleted. */
    size_t (*length)(const struct breaker__inproc_obj *o);
    /* Free what the value holds (not the object itself). */
    void (*free)(struct breaker__inproc_obj *o);
};

/* Members sorted by score, then by name (bytes, memcmp), as Redis orders
 * them. A sorted array: the fleet keeps a few probe leases per name. Its
 * commands are zset.c's. */
struct breaker__inproc_member {
    double score;
    char *name; /* NUL-terminated copy */
    size_t len;
};

struct breaker__inproc_zset {
    struct breaker__inproc_member *m;
    size_t n, cap;
};

struct breaker__inproc_obj {
    const struct breaker__inproc_value_type *type;
    int64_t expire_ms; /* the deadline on the clock, ms since the epoch; -1 none */
    /* A hash past Redis's small encoding (listpack: at most 128 fields,
     * none longer than 64 bytes): HSCAN pages it. Set once, as Redis never
     * converts back. */
    bool big;
    struct breaker__inproc_dict hash; /* a hash's fields (empty for a zset) */
    struct breaker__inproc_zset zset; /* a sorted set's members (empty for a hash) */
};

#define INPROC_DATABASES 16

struct breaker__inproc_scripting;     /* scripting.c */
struct breaker__inproc_command_table; /* commands.c */

struct breaker__redis_inproc {
    breaker_clock_fn *clock;
    void *clock_ctx;
    uint64_t now_ns; /* the clock, read when the running command started */
    int64_t now_ms;
    int order;
    int selected;
    int refuse;
    uint64_t script_limit; /* Lua instructions a script may run */
    /* The commands it offers (Redis's server.commands): dispatch.c finds
     * them here. */
    const struct breaker__inproc_command_table *commands;
    struct breaker__inproc_dict db[INPROC_DATABASES];
    struct breaker__inproc_scripting *scripting;
    /* math.random's generator (Redis's rand.c: lrand48's 48 bits), the
     * server's like Redis's, kept across scripts and SCRIPT FLUSH. */
    uint64_t rand48;
    struct breaker__redis_inproc_stats stats;
};

/* rand48's state in a fresh Redis (rand.c: x = 0x1234ABCD330E). */
#define INPROC_RAND48_START UINT64_C(0x1234ABCD330E)

/* `key` in the selected database, or NULL when absent; a key past its
 * deadline is deleted first (lazy expiry). */
struct breaker__inproc_obj *breaker__inproc_lookup(struct breaker__redis_inproc *s,
                                                   const struct breaker__inproc_arg *key);
/* The same in database `db` at the clock's `now_ms`, without deleting
 * (for reads that change nothing): a key past its deadline is absent. */
struct breaker__inproc_obj *breaker__inproc_peek(const struct breaker__redis_inproc *s, int db,
                                                 const char *key, size_t len, int64_t now_ms);
/* `key` if it is of type `type` (*out NULL when absent): @return 0, or -1
 * when it holds another type (the command answers WRONGTYPE). */
int breaker__inproc_lookup_type(struct breaker__redis_inproc *s,
                                const struct breaker__inproc_arg *key,
                                const struct breaker__inproc_value_type *type,
                                struct breaker__inproc_obj **out);
/* A new empty key of `type` (absent before). NULL when out of memory. */
struct breaker__inproc_obj *breaker__inproc_create(struct breaker__redis_inproc *s,
                                                   const struct breaker__inproc_arg *key,
                                                   const struct breaker__inproc_value_type *type);
/* Delete `key`: @return 1 if it was there. */
int breaker__inproc_delete(struct breaker__redis_inproc *s, const struct breaker__inproc_arg *key);
/* Delete `key` if its object `o` is now empty (Redis keeps no empty hash or
 * sorted set). */
void breaker__inproc_delete_if_empty(struct breaker__redis_inproc *s,
                                     const struct breaker__inproc_arg *key,
                                     struct breaker__inproc_obj *o);
/* Delete every key of database `db`. */
void breaker__inproc_db_clear(struct breaker__redis_inproc *s, int db);
/* Redis's glob (KEYS, HSCAN MATCH): * ? [a-z] [^a] and \ escapes. */
bool breaker__inproc_glob(const char *pat, size_t plen, const char *str, size_t slen);

/* ---- dispatch.c ------------------------------------------------------------------ */

/* A command's flags, as Redis's command table has them. */
enum {
    CMD_WRITE = 1,    /* changes the data */
    CMD_DENYOOM = 2,  /* may grow the data: refused over maxmemory */
    CMD_NOSCRIPT = 4, /* not callable from a script */
};

typedef breaker_redis_reply *breaker__inproc_cmd_fn(struct breaker__redis_inproc *s, int argc,
                                                    const struct breaker__inproc_arg *argv);

struct breaker__inproc_command {
    const char *name; /* lower case, as Redis names it in errors */
    int arity;        /* Redis's: n exactly n arguments, -n at least n (name included) */
    int flags;
    breaker__inproc_cmd_fn *fn;
};

/* A server's commands, sorted by name (commands.c). */
struct breaker__inproc_command_table {
    const struct breaker__inproc_command *commands;
    size_t count;
};

/* The command of `s` named `name` (any case), or NULL. */
const struct breaker__inproc_command *
breaker__inproc_command_find(const struct breaker__redis_inproc *s, const char *name, size_t len);

/* The errors a script's call meets before the command runs, in Redis's
 * order (script.c, scriptCall): NULL when `cmd` may run now, else the error
 * text ("-CODE message" or "message"). `read_only`: the script is an
 * EVAL_RO's; `wrote`: it wrote already. */
const char *breaker__inproc_script_refusal(struct breaker__redis_inproc *s,
                                           const struct breaker__inproc_command *cmd, int argc,
                                           bool read_only, bool wrote);

/* ---- The commands: connection.c, keys.c, hash.c, zset.c, scripting.c ------------- */

breaker__inproc_cmd_fn breaker__inproc_ping, breaker__inproc_echo, breaker__inproc_select,
    breaker__inproc_accept, breaker__inproc_time, breaker__inproc_cluster;
breaker__inproc_cmd_fn breaker__inproc_del, breaker__inproc_exists, breaker__inproc_type,
    breaker__inproc_keys, breaker__inproc_dbsize, breaker__inproc_flushdb, breaker__inproc_flushall,
    breaker__inproc_expire, breaker__inproc_pexpire, breaker__inproc_ttl, breaker__inproc_pttl,
    breaker__inproc_persist;
breaker__inproc_cmd_fn breaker__inproc_hset, breaker__inproc_hmset, breaker__inproc_hsetnx,
    breaker__inproc_hget, breaker__inproc_hmget, breaker__inproc_hdel, breaker__inproc_hlen,
    breaker__inproc_hexists, breaker__inproc_hincrby, breaker__inproc_hgetall,
    breaker__inproc_hkeys, breaker__inproc_hvals, breaker__inproc_hscan;
breaker__inproc_cmd_fn breaker__inproc_zadd, breaker__inproc_zcard, breaker__inproc_zscore,
    breaker__inproc_zrem, breaker__inproc_zrange, breaker__inproc_zrangebyscore;
breaker__inproc_cmd_fn breaker__inproc_eval, breaker__inproc_evalsha, breaker__inproc_eval_ro,
    breaker__inproc_evalsha_ro, breaker__inproc_script;

/* The value types (hash.c, zset.c). */
extern const struct breaker__inproc_value_type breaker__inproc_hash_type;
extern const struct breaker__inproc_value_type breaker__inproc_zset_type;

/* ---- scripting.c ----------------------------------------------------------------- */

/* The Lua environment: made by _create (NULL when out of memory), gone with
 * _free; a SCRIPT FLUSH or a restart makes it anew. */
struct breaker__inproc_scripting *breaker__inproc_scripting_create(struct breaker__redis_inproc *s);
void breaker__inproc_scripting_free(struct breaker__inproc_scripting *sc);

/* ---- commands.c ------------------------------------------------------------------ */

/* Every command the server offers; server.c hands it to each server. */
extern const struct breaker__inproc_command_table breaker__inproc_command_table;

/* ---- bitlib.c -------------------------------------------------------------------- */

struct lua_State;
/* Push a new table of the bit library's functions. */
void breaker__inproc_push_bitlib(struct lua_State *L);

#endif /* BREAKER_REDIS_INPROC_ENGINE_H */
