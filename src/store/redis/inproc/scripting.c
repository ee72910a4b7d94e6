/* SPDX-License-Identifier: MIT */
/*
 * scripting.c - the in-process Redis's Lua: EVAL, EVALSHA, EVAL_RO,
 * EVALSHA_RO and SCRIPT, on a Lua 5.1 state set up as Redis 7.0.15 sets up
 * its own (redis.io, "Scripting with Lua" and "Redis Lua API reference";
 * where a text or a rule had to be exact, it was checked against that
 * server, and the tests hold it there):
 *  - the libraries base, table, string, math and bit (bitlib.c), without
 *    print, dofile, loadfile, getfenv, setfenv and newproxy (Redis 7.0.15
 *    has none of them); math.random on Redis's generator; the redis table
 *    (call, pcall, error_reply, status_reply, sha1hex, log, setresp,
 *    set_repl, replicate_commands, breakpoint, debug, acl_check_cmd, the
 *    LOG_ and REPL_ constants, REDIS_VERSION, REDIS_VERSION_NUM);
 *  - a script is its body loaded as a chunk named "@user_script", kept in
 *    the registry as f_<sha1 of the body>; KEYS and ARGV are globals set
 *    for each run;
 *  - read-only globals: a script runs with an empty table as its globals
 *    that reads through to the real ones and refuses every assignment
 *    ("Attempt to modify a readonly table"), and a global that does not
 *    exist is an error ("Script attempted to access nonexistent global
 *    variable"); the library tables and _G refuse new fields, and rawset
 *    and setmetatable refuse them all. (Redis 7.0.15 makes these tables
 *    read-only in its own Lua; a stock Lua cannot, so a script can still
 *    replace an existing field of a library table through the table: none
 *    of the fleet's scripts assigns to anything but locals.)
 *  - the conversions of a reply into Lua and of a script's result into a
 *    reply, and the error texts of a failed call and of a failed script.
 *
 * Not here: scripts with a shebang ("#!lua flags=...": refused with an
 * error), RESP3 (redis.setresp(3): an error), the script debugger
 * (breakpoint() answers false), SCRIPT KILL of a running script (a script
 * is stopped after its limit of instructions instead),
 * cjson, cmsgpack and struct.
 */
#include "store/redis/inproc/engine.h"

#include <ctype.h>
#include <lauxlib.h>
#include <limits.h>
#include <lua.h>
#include <lualib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REDIS_VERSION     "7.0.15"
#define REDIS_VERSION_NUM 0x07000f
/* The count hook's period, in Lua instructions. */
#define HOOK_PERIOD 100000
/* Bodies whose SHA-1 EVAL remembers. */
#define SHA_CACHE 16
/* Scripts between two steps of the garbage collector, as Redis. */
#define GC_PERIOD 50
/* How deep a script's result may nest (Redis stops where Lua's stack
 * does, at about this depth). */
#define MAX_REPLY_DEPTH 1000

struct breaker__inproc_scripting {
    struct breaker__redis_inproc *s;
    lua_State *L;
    int globals_ref; /* the real globals table (registry references) */
    int handler_ref; /* the error handler */
    /* The script running (Redis's scriptRunCtx). */
    bool running, read_only, wrote, in_call;
    char sha[41];
    uint64_t steps;
    unsigned gc_count;
    /* A redis.call's arguments: its own, reused (never a Lua allocation,
     * so nothing leaks when Lua raises an error). */
    struct breaker__inproc_arg *args;
    char (*numbers)[32];
    size_t args_cap;
    /* A reply being converted, freed here if Lua raises midway. */
    breaker_redis_reply *pending;
    /* The SHA-1s of the scripts compiled (SCRIPT EXISTS, without Lua). */
    struct breaker__inproc_dict known;
    /* The last bodies EVAL was given, with their SHA-1s: a body is
     * compared (a few µs) instead of hashed again (tens of µs for a
     * fleet script). */
    struct {
        char *body;
        size_t len;
        char sha[41];
    } recent[SHA_CACHE];
    unsigned next_recent;
};

static struct breaker__inproc_scripting *scripting_of(lua_State *L) {
    void *ud = NULL;
    lua_getallocf(L, &ud);
    return ud;
}

static void *lua_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
    (void)ud;
    (void)osize;
    if (nsize == 0) {
        free(ptr);
        return NULL;
    }
    return realloc(ptr, nsize);
}

/* An x86 conversion of a double to a long long, as Redis's (long
 * long)lua_tonumber() compiles there: out of range or NaN gives the most
 * negative value, without C's undefined behaviour. */
static long long to_long_long(double d) {
    if (isnan(d) || d >= 9223372036854775808.0 || d < -9223372036854775808.0) return LLONG_MIN;
    return (long long)d;
}

/* ---- Errors as tables --------------------------------------------------------- */

/* Push {err = "CODE message"} for `text`, as Redis's luaPushErrorBuff():
 * "-CODE message" keeps its code (the first word); any other text is an
 * ERR; CR and LF are trimmed from the message's ends. */
static void push_error_table(lua_State *L, const char *text, size_t len) {
    const char *code = "ERR", *msg = text;
    size_t code_len = 3, msg_len = len;
    if (len > 0 && text[0] == '-') {
        const char *space = memchr(text, ' ', len);
        if (space == NULL) {
            msg = text + 1;
            msg_len = len - 1;
        } else {
            code = text + 1;
            code_len = (size_t)(space - code);
            msg = space + 1;
            msg_len = len - (size_t)(msg - text);
        }
    }
    while (msg_len > 0 && (msg[0] == '\r' || msg[0] == '\n')) {
        msg++;
        msg_len--;
    }
    while (msg_len > 0 && (msg[msg_len - 1] == '\r' || msg[msg_len - 1] == '\n'))
        msg_len--;
    lua_createtable(L, 0, 2);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addlstring(&b, code, code_len);
    luaL_addchar(&b, ' ');
    luaL_addlstring(&b, msg, msg_len);
    luaL_pushresult(&b);
    lua_setfield(L, -2, "err");
}

static void push_error(lua_State *L, const char *text) { push_error_table(L, text, strlen(text)); }

/* Raise `text` as redis.call's errors are raised: a table. */
static int raise_error(lua_State *L, const char *text) {
    push_error(L, text);
    return lua_error(L);
}

/* ---- Replies into Lua ----------------------------------------------------------- */

/* Redis's reply-to-Lua conversion (script_lua.c, redisProtocolToLuaType). */
static void push_reply(lua_State *L, const breaker_redis_reply *r) {
    if (!lua_checkstack(L, 4)) luaL_error(L, "reached lua stack limit");
    switch (r->type) {
    case BREAKER_REDIS_REPLY_INTEGER:
        lua_pushnumber(L, (lua_Number)r->integer);
        break;
    case BREAKER_REDIS_REPLY_STRING:
        lua_pushlstring(L, r->str, r->len);
        break;
    case BREAKER_REDIS_REPLY_STATUS:
        lua_createtable(L, 0, 1);
        lua_pushlstring(L, r->str, r->len);
        lua_setfield(L, -2, "ok");
        break;
    case BREAKER_REDIS_REPLY_ERROR: {
        luaL_Buffer b;
        luaL_buffinit(L, &b);
        luaL_addchar(&b, '-');
        luaL_addlstring(&b, r->str, r->len);
        luaL_pushresult(&b);
        size_t len;
        const char *text = lua_tolstring(L, -1, &len);
        push_error_table(L, text, len);
        lua_remove(L, -2);
        lua_pushboolean(L, 1);
        lua_setfield(L, -2, "ignore_error_stats_update");
        break;
    }
    case BREAKER_REDIS_REPLY_ARRAY:
        lua_createtable(L, (int)r->elements, 0);
        for (size_t i = 0; i < r->elements; i++) {
            push_reply(L, r->element[i]);
            lua_rawseti(L, -2, (int)i + 1);
        }
        break;
    case BREAKER_REDIS_REPLY_NIL:
    default:
        lua_pushboolean(L, 0);
        break;
    }
}

/* ---- redis.call and redis.pcall ------------------------------------------------- */

/* The arguments, as Redis's luaArgsToRedisArgv(): a number as "%.17g"
 * (Lua's own tostring keeps 14 digits only), a string as it is, anything
 * else refused. @return the count, or -1 with the error pushed. */
static int call_args(lua_State *L, struct breaker__inproc_scripting *sc) {
    int argc = lua_gettop(L);
    if (argc == 0) {
        push_error(L, "Please specify at least one argument for this redis lib call");
        return -1;
    }
    if ((size_t)argc > sc->args_cap) {
        size_t cap = (size_t)argc * 2;
        struct breaker__inproc_arg *a = realloc(sc->args, cap * sizeof *a);
        if (a != NULL) sc->args = a;
        char(*n)[32] = a == NULL ? NULL : realloc(sc->numbers, cap * sizeof *n);
        if (n != NULL) sc->numbers = n;
        if (a == NULL || n == NULL) luaL_error(L, "not enough memory");
        sc->args_cap = cap;
    }
    for (int j = 0; j < argc; j++) {
        if (lua_type(L, j + 1) == LUA_TNUMBER) {
            int n = snprintf(sc->numbers[j], sizeof sc->numbers[j], "%.17g",
                             (double)lua_tonumber(L, j + 1));
            sc->args[j] = (struct breaker__inproc_arg){.str = sc->numbers[j], .len = (size_t)n};
        } else {
            size_t len;
            const char *str = lua_tolstring(L, j + 1, &len);
            if (str == NULL) {
                push_error(L, "Lua redis lib command arguments must be strings or integers");
                return -1;
            }
            sc->args[j] = (struct breaker__inproc_arg){.str = str, .len = len};
        }
    }
    return argc;
}

static int redis_call_generic(lua_State *L, bool raise) {
    struct breaker__inproc_scripting *sc = scripting_of(L);
    struct breaker__redis_inproc *s = sc->s;
    if (!sc->running)
        return raise_error(L, "redis.call/pcall can only be called inside a script invocation");
    int argc = call_args(L, sc);
    if (argc < 0) return raise ? lua_error(L) : 1;
    if (sc->in_call) {
        /* Only a debug hook could get here; Redis answers the same. */
        push_error(L, "luaRedisGenericCommand() recursive call detected. Are you doing funny "
                      "stuff with Lua debug hooks?");
        return 1;
    }
    s->stats.script_calls++;
    const struct breaker__inproc_command *cmd =
        breaker__inproc_command_find(s, sc->args[0].str, sc->args[0].len);
    const char *refused = breaker__inproc_script_refusal(s, cmd, argc, sc->read_only, sc->wrote);
    if (refused != NULL) {
        if (refused[0] == '-') s->stats.refused++;
        push_error(L, refused);
        lua_pushboolean(L, 1);
        lua_setfield(L, -2, "ignore_error_stats_update");
        return raise ? lua_error(L) : 1;
    }
    if (cmd->flags & CMD_WRITE) sc->wrote = true;
    sc->in_call = true;
    breaker_redis_reply *r = cmd->fn(s, argc, sc->args);
    sc->in_call = false;
    if (r == NULL) return luaL_error(L, "not enough memory");
    lua_settop(L, 0); /* the arguments are done with */
    sc->pending = r;
    push_reply(L, r);
    sc->pending = NULL;
    bool failed = r->type == BREAKER_REDIS_REPLY_ERROR;
    breaker_redis_reply_free(r);
    return raise && failed ? lua_error(L) : 1;
}

static int redis_call(lua_State *L) { return redis_call_generic(L, true); }
static int redis_pcall(lua_State *L) { return redis_call_generic(L, false); }

/* Lua's pcall as Redis replaces it: an error that is a table with an
 * `err` string is given as that string (what scripts of Redis 6 saw). */
static int redis_lua_pcall(lua_State *L) {
    int argc = lua_gettop(L);
    luaL_checkany(L, 1);
    lua_pushboolean(L, 1);
    lua_insert(L, 1);
    if (lua_pcall(L, argc - 1, LUA_MULTRET, 0) != 0) {
        lua_remove(L, 1);
        if (lua_istable(L, -1)) {
            lua_getfield(L, -1, "err");
            if (lua_isstring(L, -1))
                lua_replace(L, -2);
            else
                lua_pop(L, 1);
        }
        lua_pushboolean(L, 0);
        lua_insert(L, 1);
    }
    return lua_gettop(L);
}

/* ---- The rest of the redis table ----------------------------------------------- */

static int redis_sha1hex(lua_State *L) {
    if (lua_gettop(L) != 1) return raise_error(L, "wrong number of arguments");
    size_t len = 0;
    const char *s = lua_tolstring(L, 1, &len);
    char hex[41];
    breaker__sha1_hex(s != NULL ? s : "", s != NULL ? len : 0, hex);
    lua_pushstring(L, hex);
    return 1;
}

/* error_reply and status_reply: a wrong argument is returned as an error
 * table, not raised (Redis's behaviour). */
static int redis_error_reply(lua_State *L) {
    if (lua_gettop(L) != 1 || lua_type(L, 1) != LUA_TSTRING) {
        push_error(L, "wrong number or type of arguments");
        return 1;
    }
    size_t len;
    const char *text = lua_tolstring(L, 1, &len);
    if (len > 0 && text[0] == '-') {
        push_error_table(L, text, len);
    } else {
        lua_pushliteral(L, "-");
        lua_pushvalue(L, 1);
        lua_concat(L, 2);
        text = lua_tolstring(L, -1, &len);
        push_error_table(L, text, len);
    }
    return 1;
}

static int redis_status_reply(lua_State *L) {
    if (lua_gettop(L) != 1 || lua_type(L, 1) != LUA_TSTRING) {
        push_error(L, "wrong number or type of arguments");
        return 1;
    }
    lua_createtable(L, 0, 1);
    lua_pushvalue(L, 1);
    lua_setfield(L, -2, "ok");
    return 1;
}

/* redis.log(level, ...): checked as Redis checks it; the server keeps no
 * log, so the message goes nowhere. */
static int redis_log(lua_State *L) {
    int argc = lua_gettop(L);
    if (argc < 2) return raise_error(L, "redis.log() requires two arguments or more.");
    if (!lua_isnumber(L, 1)) return raise_error(L, "First argument must be a number (log level).");
    long long level = to_long_long(lua_tonumber(L, 1));
    if (level < 0 || level > 3) return raise_error(L, "Invalid debug level.");
    return 0;
}

static int redis_setresp(lua_State *L) {
    if (!scripting_of(L)->running)
        return raise_error(L, "redis.setresp can only be called inside a script invocation");
    if (lua_gettop(L) != 1) return raise_error(L, "redis.setresp() requires one argument.");
    long long v = to_long_long(lua_tonumber(L, 1));
    if (v != 2 && v != 3) return raise_error(L, "RESP version must be 2 or 3.");
    if (v == 3) return raise_error(L, "RESP3 is not offered by the in-process Redis");
    return 0;
}

static int redis_set_repl(lua_State *L) {
    if (!scripting_of(L)->running)
        return raise_error(L, "redis.set_repl can only be called inside a script invocation");
    if (lua_gettop(L) != 1) return raise_error(L, "redis.set_repl() requires two arguments.");
    long long flags = to_long_long(lua_tonumber(L, 1));
    if (flags < 0 || flags > 3)
        return raise_error(L, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL "
                              "or REPL_NONE.");
    return 0;
}

static int redis_replicate_commands(lua_State *L) {
    lua_pushboolean(L, 1);
    return 1;
}

/* The debugger is not there: breakpoint() answers false, debug() nothing. */
static int redis_breakpoint(lua_State *L) {
    lua_pushboolean(L, 0);
    return 1;
}

static int redis_debug(lua_State *L) {
    (void)L;
    return 0;
}

/* Every command is allowed (the server has no users): true for a known
 * command, an error for an unknown one. */
static int redis_acl_check_cmd(lua_State *L) {
    struct breaker__inproc_scripting *sc = scripting_of(L);
    if (!sc->running)
        return raise_error(L, "redis.acl_check_cmd can only be called inside a script invocation");
    int argc = call_args(L, sc);
    if (argc < 0) return lua_error(L);
    if (breaker__inproc_command_find(sc->s, sc->args[0].str, sc->args[0].len) == NULL)
        return raise_error(L, "Invalid command passed to redis.acl_check_cmd()");
    lua_pushboolean(L, 1);
    return 1;
}

/* ---- math.random, as Redis's ---------------------------------------------------- */

/* POSIX lrand48(): x = a x + c mod 2^48, the top 31 bits (rand.c). */
static int32_t rand48_next(struct breaker__redis_inproc *s) {
    s->rand48 = (UINT64_C(0x5DEECE66D) * s->rand48 + 0xBu) & ((UINT64_C(1) << 48) - 1);
    return (int32_t)(s->rand48 >> 17);
}

/* Lua 5.1's math.random with rand() replaced by the generator above. */
static int redis_math_random(lua_State *L) {
    struct breaker__redis_inproc *s = scripting_of(L)->s;
    lua_Number r = (lua_Number)(rand48_next(s) % INT32_MAX) / (lua_Number)INT32_MAX;
    switch (lua_gettop(L)) {
    case 0:
        lua_pushnumber(L, r);
        break;
    case 1: {
        int u = luaL_checkint(L, 1);
        luaL_argcheck(L, 1 <= u, 1, "interval is empty");
        lua_pushnumber(L, floor(r * u) + 1);
        break;
    }
    case 2: {
        int l = luaL_checkint(L, 1), u = luaL_checkint(L, 2);
        luaL_argcheck(L, l <= u, 2, "interval is empty");
        lua_pushnumber(L, floor(r * (u - l + 1)) + l);
        break;
    }
    default:
        return luaL_error(L, "wrong number of arguments");
    }
    return 1;
}

/* srand48(seed): the low 16 bits 0x330E, above them the seed's 32 bits. */
static int redis_math_randomseed(lua_State *L) {
    uint32_t seed = (uint32_t)luaL_checkint(L, 1);
    scripting_of(L)->s->rand48 = (uint64_t)seed << 16 | 0x330Eu;
    return 0;
}

/* ---- Read-only globals ------------------------------------------------------------ */

static int readonly_newindex(lua_State *L) {
    luaL_where(L, 1);
    lua_pushliteral(L, "Attempt to modify a readonly table");
    lua_concat(L, 2);
    return lua_error(L);
}

static int nonexistent_global(lua_State *L) {
    const char *name = lua_tostring(L, 2);
    return luaL_error(L, "Script attempted to access nonexistent global variable '%s'",
                      name != NULL ? name : "?");
}

/* Whether the table at `i` is one of the protected ones (registry set). */
static bool is_protected(lua_State *L, int i) {
    lua_getfield(L, LUA_REGISTRYINDEX, "breaker_protected");
    lua_pushvalue(L, i);
    lua_rawget(L, -2);
    bool yes = lua_toboolean(L, -1);
    lua_pop(L, 2);
    return yes;
}

/* rawset and setmetatable, refusing the protected tables (an error
 * without a position: Redis raises it from inside the C function). */
static int guarded(lua_State *L) {
    if (lua_istable(L, 1) && is_protected(L, 1)) {
        lua_pushliteral(L, "Attempt to modify a readonly table");
        return lua_error(L);
    }
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    return lua_gettop(L);
}

static void guard(lua_State *L, const char *name) {
    lua_getglobal(L, name);
    lua_pushcclosure(L, guarded, 1);
    lua_setglobal(L, name);
}

/* Protect the table at the top: no new field (its metatable's __newindex
 * raises), no rawset, no setmetatable. `index` is its __index (0: none). */
static void protect(lua_State *L, lua_CFunction index) {
    lua_getfield(L, LUA_REGISTRYINDEX, "breaker_protected");
    lua_pushvalue(L, -2);
    lua_pushboolean(L, 1);
    lua_rawset(L, -3);
    lua_pop(L, 1);
    lua_createtable(L, 0, 2);
    lua_pushcfunction(L, readonly_newindex);
    lua_setfield(L, -2, "__newindex");
    if (index != NULL) {
        lua_pushcfunction(L, index);
        lua_setfield(L, -2, "__index");
    }
    lua_setmetatable(L, -2);
}

/* ---- The error handler ------------------------------------------------------------ */

/* Redis's __redis__err__handler: the error as a table {err=...} ("ERR "
 * and the value for an error that is not a table), with the source and
 * line of the Lua function that raised it (the caller's, when a C
 * function raised it). */
static int error_handler(lua_State *L) {
    lua_Debug ar;
    bool where = lua_getstack(L, 1, &ar) && lua_getinfo(L, "nSl", &ar);
    if (where && strcmp(ar.what, "C") == 0)
        where = lua_getstack(L, 2, &ar) && lua_getinfo(L, "nSl", &ar);
    if (!lua_istable(L, 1)) {
        lua_getglobal(L, "tostring");
        lua_pushvalue(L, 1);
        lua_call(L, 1, 1);
        lua_pushliteral(L, "ERR ");
        lua_insert(L, -2);
        lua_concat(L, 2);
        lua_createtable(L, 0, 3);
        lua_insert(L, -2);
        lua_setfield(L, -2, "err");
        lua_replace(L, 1);
    }
    lua_settop(L, 1);
    if (where) {
        lua_pushstring(L, ar.source);
        lua_setfield(L, 1, "source");
        lua_pushnumber(L, ar.currentline);
        lua_setfield(L, 1, "line");
    }
    return 1;
}

/* ---- The state -------------------------------------------------------------------- */

static void open_lib(lua_State *L, const char *name, lua_CFunction open) {
    lua_pushcfunction(L, open);
    lua_pushstring(L, name);
    lua_call(L, 1, 0);
}

static void set_fn(lua_State *L, const char *name, lua_CFunction fn) {
    lua_pushcfunction(L, fn);
    lua_setfield(L, -2, name);
}

static void set_number(lua_State *L, const char *name, lua_Number v) {
    lua_pushnumber(L, v);
    lua_setfield(L, -2, name);
}

static void push_redis_table(lua_State *L) {
    lua_createtable(L, 0, 24);
    set_fn(L, "call", redis_call);
    set_fn(L, "pcall", redis_pcall);
    set_fn(L, "log", redis_log);
    set_number(L, "LOG_DEBUG", 0);
    set_number(L, "LOG_VERBOSE", 1);
    set_number(L, "LOG_NOTICE", 2);
    set_number(L, "LOG_WARNING", 3);
    lua_pushstring(L, REDIS_VERSION);
    lua_setfield(L, -2, "REDIS_VERSION");
    set_number(L, "REDIS_VERSION_NUM", REDIS_VERSION_NUM);
    set_fn(L, "setresp", redis_setresp);
    set_fn(L, "sha1hex", redis_sha1hex);
    set_fn(L, "error_reply", redis_error_reply);
    set_fn(L, "status_reply", redis_status_reply);
    set_fn(L, "set_repl", redis_set_repl);
    set_number(L, "REPL_NONE", 0);
    set_number(L, "REPL_AOF", 1);
    set_number(L, "REPL_SLAVE", 2);
    set_number(L, "REPL_REPLICA", 2);
    set_number(L, "REPL_ALL", 3);
    set_fn(L, "replicate_commands", redis_replicate_commands);
    set_fn(L, "breakpoint", redis_breakpoint);
    set_fn(L, "debug", redis_debug);
    set_fn(L, "acl_check_cmd", redis_acl_check_cmd);
}

/* Everything that may raise (out of memory), run protected. */
static int init_state(lua_State *L) {
    struct breaker__inproc_scripting *sc = lua_touserdata(L, 1);
    lua_settop(L, 0);
    open_lib(L, "", luaopen_base);
    open_lib(L, LUA_TABLIBNAME, luaopen_table);
    open_lib(L, LUA_STRLIBNAME, luaopen_string);
    open_lib(L, LUA_MATHLIBNAME, luaopen_math);
    static const char *const removed[] = {"print",   "dofile",  "loadfile",
                                          "getfenv", "setfenv", "newproxy"};
    for (size_t i = 0; i < sizeof removed / sizeof removed[0]; i++) {
        lua_pushnil(L);
        lua_setglobal(L, removed[i]);
    }
    breaker__inproc_push_bitlib(L);
    lua_setglobal(L, "bit");
    push_redis_table(L);
    lua_setglobal(L, "redis");
    lua_pushcfunction(L, redis_lua_pcall);
    lua_setglobal(L, "pcall");
    lua_getglobal(L, "math");
    set_fn(L, "random", redis_math_random);
    set_fn(L, "randomseed", redis_math_randomseed);
    lua_pop(L, 1);
    lua_pushcfunction(L, error_handler);
    lua_pushvalue(L, -1);
    sc->handler_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_setglobal(L, "__redis__err__handler");
    lua_newtable(L);
    lua_setfield(L, LUA_REGISTRYINDEX, "breaker_protected");
    guard(L, "rawset");
    guard(L, "setmetatable");
    /* The library tables: no new field. */
    static const char *const libs[] = {"string", "table", "math", "bit", "redis", "coroutine"};
    for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
        lua_getglobal(L, libs[i]);
        protect(L, NULL);
        lua_pop(L, 1);
    }
    /* The real globals: no new field, no read of one that is not there. */
    lua_pushvalue(L, LUA_GLOBALSINDEX);
    lua_pushvalue(L, -1);
    sc->globals_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    protect(L, nonexistent_global);
    /* What scripts see as their globals: an empty table reading through. */
    lua_newtable(L);
    lua_getfield(L, LUA_REGISTRYINDEX, "breaker_protected");
    lua_pushvalue(L, -2);
    lua_pushboolean(L, 1);
    lua_rawset(L, -3);
    lua_pop(L, 1);
    lua_createtable(L, 0, 2);
    lua_pushvalue(L, -3); /* the real globals */
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, readonly_newindex);
    lua_setfield(L, -2, "__newindex");
    lua_setmetatable(L, -2);
    lua_replace(L, LUA_GLOBALSINDEX);
    return 0;
}

struct breaker__inproc_scripting *
breaker__inproc_scripting_create(struct breaker__redis_inproc *s) {
    struct breaker__inproc_scripting *sc = calloc(1, sizeof *sc);
    if (sc == NULL) return NULL;
    sc->s = s;
    breaker__inproc_dict_init(&sc->known);
    sc->L = lua_newstate(lua_alloc, sc);
    if (sc->L == NULL || lua_cpcall(sc->L, init_state, sc) != 0) {
        breaker__inproc_scripting_free(sc);
        return NULL;
    }
    return sc;
}

void breaker__inproc_scripting_free(struct breaker__inproc_scripting *sc) {
    if (sc == NULL) return;
    if (sc->L != NULL) lua_close(sc->L);
    breaker_redis_reply_free(sc->pending);
    breaker__inproc_dict_free(&sc->known);
    for (int i = 0; i < SHA_CACHE; i++)
        free(sc->recent[i].body);
    free(sc->args);
    free(sc->numbers);
    free(sc);
}

/* ---- A script's result as a reply ---------------------------------------------- */

/* Redis sends a status or an error as one line: CR and LF become spaces. */
static breaker_redis_reply *one_line(int type, const char *str, size_t len) {
    breaker_redis_reply *r = breaker_redis_reply_string(type, str, len);
    for (size_t i = 0; r != NULL && i < len; i++)
        if (r->str[i] == '\r' || r->str[i] == '\n') r->str[i] = ' ';
    return r;
}

/* The table's field `name` when it is of type `type` (pushed; nothing
 * pushed and false otherwise). Raw, as Redis 7.0.15 reads it. */
static bool field(lua_State *L, const char *name, int type) {
    lua_pushstring(L, name);
    lua_rawget(L, -2);
    if (lua_type(L, -1) == type) return true;
    lua_pop(L, 1);
    return false;
}

/* Convert the value at the top (Redis's luaReplyToRedisReply()) into
 * *slot; the value stays. Arrays are made before their elements and hung
 * in place at once, so that a Lua error midway leaves everything made
 * reachable from sc->pending (freed by the caller). @return 0, or -1 out
 * of memory. */
static int to_reply(lua_State *L, breaker_redis_reply **slot, int depth) {
    switch (lua_type(L, -1)) {
    case LUA_TSTRING: {
        size_t len;
        const char *str = lua_tolstring(L, -1, &len);
        *slot = breaker__inproc_bulk(str, len);
        break;
    }
    case LUA_TBOOLEAN:
        *slot = lua_toboolean(L, -1) ? breaker_redis_reply_integer(1) : breaker_redis_reply_nil();
        break;
    case LUA_TNUMBER:
        *slot = breaker_redis_reply_integer(to_long_long(lua_tonumber(L, -1)));
        break;
    case LUA_TTABLE: {
        if (depth > MAX_REPLY_DEPTH || !lua_checkstack(L, 6)) {
            *slot = breaker__inproc_error("ERR reached lua stack limit");
            break;
        }
        /* The tables that stand for one reply, in Redis's order: an
         * error, a status, a double, a big number (a string in RESP2). */
        static const struct {
            const char *name;
            int lua_type, reply; /* reply 0: a double */
        } single[] = {{"err", LUA_TSTRING, BREAKER_REDIS_REPLY_ERROR},
                      {"ok", LUA_TSTRING, BREAKER_REDIS_REPLY_STATUS},
                      {"double", LUA_TNUMBER, 0},
                      {"big_number", LUA_TSTRING, BREAKER_REDIS_REPLY_STRING}};
        size_t len;
        for (size_t i = 0; i < sizeof single / sizeof single[0]; i++) {
            if (!field(L, single[i].name, single[i].lua_type)) continue;
            if (single[i].reply == 0) {
                *slot = breaker__inproc_double(lua_tonumber(L, -1));
            } else {
                const char *str = lua_tolstring(L, -1, &len);
                *slot = one_line(single[i].reply, str, len);
            }
            lua_pop(L, 1);
            return *slot == NULL ? -1 : 0;
        }
        if (field(L, "verbatim_string", LUA_TTABLE)) {
            bool ok = false;
            if (field(L, "format", LUA_TSTRING)) {
                lua_pop(L, 1);
                if (field(L, "string", LUA_TSTRING)) {
                    const char *str = lua_tolstring(L, -1, &len);
                    *slot = breaker__inproc_bulk(str, len);
                    ok = true;
                    lua_pop(L, 1);
                }
            }
            lua_pop(L, 1);
            if (ok) break;
        }
        /* A map (keys and values) or a set (keys), in RESP2 a flat array
         * in the order Lua's next() gives. */
        bool map = field(L, "map", LUA_TTABLE);
        bool set = !map && field(L, "set", LUA_TTABLE);
        if (map || set) {
            size_t n = 0;
            lua_pushnil(L);
            while (lua_next(L, -2)) {
                lua_pop(L, 1);
                n++;
            }
            if ((*slot = breaker_redis_reply_array(map ? 2 * n : n)) == NULL) return -1;
            size_t k = 0;
            lua_pushnil(L);
            while (lua_next(L, -2)) {
                lua_pushvalue(L, -2); /* the key */
                if (to_reply(L, &(*slot)->element[k++], depth + 1) != 0) return -1;
                lua_pop(L, 1);
                if (map && to_reply(L, &(*slot)->element[k++], depth + 1) != 0) return -1;
                lua_pop(L, 1);
            }
            lua_pop(L, 1);
            return 0;
        }
        /* An array: 1, 2, ... up to the first nil. */
        size_t n = 0;
        for (;;) {
            lua_rawgeti(L, -1, (int)n + 1);
            bool end = lua_isnil(L, -1);
            lua_pop(L, 1);
            if (end) break;
            n++;
        }
        if ((*slot = breaker_redis_reply_array(n)) == NULL) return -1;
        for (size_t i = 0; i < n; i++) {
            lua_rawgeti(L, -1, (int)i + 1);
            if (to_reply(L, &(*slot)->element[i], depth + 1) != 0) return -1;
            lua_pop(L, 1);
        }
        return 0;
    }
    default:
        *slot = breaker_redis_reply_nil();
        break;
    }
    return *slot == NULL ? -1 : 0;
}

/* A failed script's reply (luaCallFunction()): the error table's message,
 * then " script: <sha>, on <source>:<line>." when it has both. */
static breaker_redis_reply *script_error(lua_State *L, const char *sha) {
    if (!lua_istable(L, -1)) {
        const char *msg = lua_isstring(L, -1) ? lua_tostring(L, -1) : "execution failure";
        return breaker__inproc_error("ERR Error running script %s, %.100s\n", sha, msg);
    }
    lua_getfield(L, -1, "err");
    lua_getfield(L, -2, "source");
    lua_getfield(L, -3, "line");
    const char *msg = lua_isstring(L, -3) ? lua_tostring(L, -3) : NULL;
    const char *source = lua_isstring(L, -2) ? lua_tostring(L, -2) : NULL;
    const char *line = lua_isstring(L, -1) ? lua_tostring(L, -1) : NULL;
    breaker_redis_reply *r;
    if (msg == NULL) /* Redis 7.0.15 crashes here */
        r = breaker__inproc_error("ERR Error running script %s, an error without a message", sha);
    else if (source != NULL && line != NULL)
        r = breaker__inproc_error("%s script: %s, on %s:%s.", msg, sha, source, line);
    else
        r = breaker__inproc_error("%s", msg);
    lua_pop(L, 3);
    return r;
}

/* ---- EVAL ------------------------------------------------------------------------- */

static void count_hook(lua_State *L, lua_Debug *ar) {
    (void)ar;
    struct breaker__inproc_scripting *sc = scripting_of(L);
    sc->steps += HOOK_PERIOD;
    if (sc->steps >= sc->s->script_limit) {
        /* From now on at every line: a pcall in the script cannot go on. */
        lua_sethook(L, count_hook, LUA_MASKLINE, 0);
        char msg[96]; /* lua_pushfstring() knows no %llu */
        snprintf(msg, sizeof msg, "the in-process Redis stopped the script after %llu instructions",
                 (unsigned long long)sc->steps);
        luaL_error(L, "%s", msg);
    }
}

/* A new table of `n` arguments from `argv`, set as global `name` in the
 * real globals (at index `g`). */
static void set_array(lua_State *L, int g, const char *name, const struct breaker__inproc_arg *argv,
                      int n) {
    lua_pushstring(L, name);
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lua_pushlstring(L, argv[i].str, argv[i].len);
        lua_rawseti(L, -2, i + 1);
    }
    lua_rawset(L, g);
}

/* What one EVAL runs, protected (lua_cpcall()). */
struct eval_call {
    struct breaker__inproc_scripting *sc;
    const char *body; /* EVAL: the body; EVALSHA: NULL */
    size_t body_len;
    const char *sha; /* the function's name after f_ */
    const struct breaker__inproc_arg *keys, *args;
    int nkeys, nargs;
    bool read_only;
    breaker_redis_reply *reply; /* the outcome */
    bool oom;
};

/* Compile `body` as f_<sha> in the registry (luaCreateFunction()).
 * @return 0, or -1 with c->reply the error. */
static int compile(lua_State *L, struct eval_call *c) {
    if (c->body_len >= 2 && c->body[0] == '#' && c->body[1] == '!') {
        c->reply = breaker__inproc_error(
            "ERR the in-process Redis does not run scripts with a shebang (#!lua flags=...)");
        return -1;
    }
    /* Redis's Lua parses any body as text, never as a precompiled chunk:
     * a body that starts with ESC (Lua's bytecode signature) is a syntax
     * error there. A space before it has stock Lua's lexer say the same. */
    int rc;
    if (c->body_len > 0 && c->body[0] == '\033') {
        lua_pushliteral(L, " ");
        lua_pushlstring(L, c->body, c->body_len);
        lua_concat(L, 2);
        size_t len;
        const char *text = lua_tolstring(L, -1, &len);
        rc = luaL_loadbuffer(L, text, len, "@user_script");
        lua_remove(L, -2);
    } else {
        rc = luaL_loadbuffer(L, c->body, c->body_len, "@user_script");
    }
    if (rc != 0) {
        c->reply = breaker__inproc_error("ERR Error compiling script (new function): %s",
                                         lua_tostring(L, -1));
        lua_pop(L, 1);
        return -1;
    }
    char name[43] = "f_";
    memcpy(name + 2, c->sha, 41);
    if (breaker__inproc_dict_add(&c->sc->known, c->sha, 40) == NULL)
        return luaL_error(L, "not enough memory");
    lua_setfield(L, LUA_REGISTRYINDEX, name);
    return 0;
}

static int eval_protected(lua_State *L) {
    struct eval_call *c = lua_touserdata(L, 1);
    struct breaker__inproc_scripting *sc = c->sc;
    lua_settop(L, 0);
    char name[43] = "f_";
    memcpy(name + 2, c->sha, 41);
    lua_rawgeti(L, LUA_REGISTRYINDEX, sc->handler_ref); /* 1 */
    lua_getfield(L, LUA_REGISTRYINDEX, name);           /* 2 */
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        if (c->body == NULL) {
            c->reply = breaker__inproc_error("NOSCRIPT No matching script. Please use EVAL.");
            return 0;
        }
        if (compile(L, c) != 0) return 0;
        lua_getfield(L, LUA_REGISTRYINDEX, name);
    }
    lua_rawgeti(L, LUA_REGISTRYINDEX, sc->globals_ref); /* 3 */
    set_array(L, 3, "KEYS", c->keys, c->nkeys);
    set_array(L, 3, "ARGV", c->args, c->nargs);
    lua_pop(L, 1);
    struct breaker__redis_inproc *s = sc->s;
    int db = s->selected;
    sc->running = true;
    sc->read_only = c->read_only;
    sc->wrote = false;
    sc->steps = 0;
    memcpy(sc->sha, c->sha, sizeof sc->sha);
    s->stats.scripts++;
    lua_sethook(L, count_hook, LUA_MASKCOUNT, HOOK_PERIOD);
    int err = lua_pcall(L, 0, 1, 1);
    lua_sethook(L, NULL, 0, 0);
    sc->running = false;
    sc->in_call = false;
    s->selected = db; /* a SELECT in the script was the script's own */
    breaker_redis_reply_free(sc->pending);
    sc->pending = NULL;
    if (++sc->gc_count == GC_PERIOD) {
        lua_gc(L, LUA_GCSTEP, GC_PERIOD);
        sc->gc_count = 0;
    }
    if (err != 0) {
        c->reply = script_error(L, c->sha);
        return 0;
    }
    if (to_reply(L, &sc->pending, 0) != 0) {
        c->oom = true;
        return 0;
    }
    c->reply = sc->pending;
    sc->pending = NULL;
    return 0;
}

/* The SHA-1 of an EVAL's body, from the recent ones when it is one. */
static void body_sha(struct breaker__inproc_scripting *sc, const struct breaker__inproc_arg *body,
                     char sha[41]) {
    for (int i = 0; i < SHA_CACHE; i++)
        if (sc->recent[i].body != NULL && sc->recent[i].len == body->len &&
            memcmp(sc->recent[i].body, body->str, body->len) == 0) {
            memcpy(sha, sc->recent[i].sha, 41);
            return;
        }
    breaker__sha1_hex(body->str, body->len, sha);
    char *copy = malloc(body->len + 1);
    if (copy == NULL) return; /* not remembered: hashed again next time */
    memcpy(copy, body->str, body->len + 1);
    unsigned i = sc->next_recent++ % SHA_CACHE;
    free(sc->recent[i].body);
    sc->recent[i].body = copy;
    sc->recent[i].len = body->len;
    memcpy(sc->recent[i].sha, sha, 41);
}

/* EVAL, EVALSHA and their _RO forms (eval.c, evalGenericCommand()). */
static breaker_redis_reply *eval_generic(struct breaker__redis_inproc *s, int argc,
                                         const struct breaker__inproc_arg *argv, bool by_sha,
                                         bool read_only) {
    if (by_sha && argv[1].len != 40)
        return breaker__inproc_error("NOSCRIPT No matching script. Please use EVAL.");
    long long numkeys;
    if (!breaker__inproc_parse_ll(argv[2].str, argv[2].len, &numkeys))
        return breaker__inproc_not_integer();
    if (numkeys > argc - 3)
        return breaker__inproc_error("ERR Number of keys can't be greater than number of args");
    if (numkeys < 0) return breaker__inproc_error("ERR Number of keys can't be negative");
    struct eval_call c = {.sc = s->scripting,
                          .keys = argv + 3,
                          .nkeys = (int)numkeys,
                          .args = argv + 3 + numkeys,
                          .nargs = argc - 3 - (int)numkeys,
                          .read_only = read_only};
    char sha[41];
    if (by_sha) {
        for (int i = 0; i < 40; i++)
            sha[i] = (char)tolower((unsigned char)argv[1].str[i]);
        sha[40] = '\0';
    } else {
        body_sha(s->scripting, &argv[1], sha);
        c.body = argv[1].str;
        c.body_len = argv[1].len;
    }
    c.sha = sha;
    lua_State *L = s->scripting->L;
    int rc = lua_cpcall(L, eval_protected, &c);
    if (rc != 0 || c.oom) {
        /* Out of memory in Lua: what was made of a reply goes. */
        lua_settop(L, 0);
        breaker_redis_reply_free(s->scripting->pending);
        s->scripting->pending = NULL;
        s->scripting->running = false;
        breaker_redis_reply_free(c.reply);
        return NULL;
    }
    return c.reply;
}

breaker_redis_reply *breaker__inproc_eval(struct breaker__redis_inproc *s, int argc,
                                          const struct breaker__inproc_arg *argv) {
    return eval_generic(s, argc, argv, false, false);
}

breaker_redis_reply *breaker__inproc_evalsha(struct breaker__redis_inproc *s, int argc,
                                             const struct breaker__inproc_arg *argv) {
    return eval_generic(s, argc, argv, true, false);
}

breaker_redis_reply *breaker__inproc_eval_ro(struct breaker__redis_inproc *s, int argc,
                                             const struct breaker__inproc_arg *argv) {
    return eval_generic(s, argc, argv, false, true);
}

breaker_redis_reply *breaker__inproc_evalsha_ro(struct breaker__redis_inproc *s, int argc,
                                                const struct breaker__inproc_arg *argv) {
    return eval_generic(s, argc, argv, true, true);
}

/* ---- SCRIPT ----------------------------------------------------------------------- */

static int load_protected(lua_State *L) {
    struct eval_call *c = lua_touserdata(L, 1);
    char name[43] = "f_";
    memcpy(name + 2, c->sha, 41);
    lua_getfield(L, LUA_REGISTRYINDEX, name);
    bool known = !lua_isnil(L, -1);
    lua_pop(L, 1);
    if (!known && compile(L, c) != 0) return 0;
    c->reply = breaker__inproc_bulk(c->sha, 40);
    return 0;
}

/* SCRIPT EXISTS's test: any case, as Redis's dict of scripts compares. */
static bool script_known(const struct breaker__inproc_scripting *sc,
                         const struct breaker__inproc_arg *sha) {
    if (sha->len != 40) return false;
    char lower[41];
    for (int i = 0; i < 40; i++)
        lower[i] = (char)tolower((unsigned char)sha->str[i]);
    return breaker__inproc_dict_find(&sc->known, lower, 40) != NULL;
}

/* SCRIPT LOAD | EXISTS | FLUSH | KILL (eval.c, scriptCommand()). */
breaker_redis_reply *breaker__inproc_script(struct breaker__redis_inproc *s, int argc,
                                            const struct breaker__inproc_arg *argv) {
    static const struct {
        const char *name;
        int arity;
    } sub[] = {{"load", 3}, {"exists", -3}, {"flush", -2}, {"kill", 2}};
    size_t k = 0;
    while (k < sizeof sub / sizeof sub[0] && !breaker__inproc_is(&argv[1], sub[k].name))
        k++;
    if (k == sizeof sub / sizeof sub[0])
        return breaker__inproc_error("ERR unknown subcommand '%.128s'. Try SCRIPT HELP.",
                                     argv[1].str);
    int a = sub[k].arity;
    if ((a > 0 && argc != a) || (a < 0 && argc < -a))
        return breaker__inproc_error("ERR wrong number of arguments for 'script|%s' command",
                                     sub[k].name);
    lua_State *L = s->scripting->L;
    switch (k) {
    case 0: {
        char sha[41];
        breaker__sha1_hex(argv[2].str, argv[2].len, sha);
        struct eval_call c = {
            .sc = s->scripting, .body = argv[2].str, .body_len = argv[2].len, .sha = sha};
        if (lua_cpcall(L, load_protected, &c) != 0) {
            lua_settop(L, 0);
            breaker_redis_reply_free(c.reply);
            return NULL;
        }
        return c.reply;
    }
    case 1: {
        breaker_redis_reply *r = breaker_redis_reply_array((size_t)(argc - 2));
        for (int i = 2; r != NULL && i < argc; i++) {
            r->element[i - 2] = breaker_redis_reply_integer(script_known(s->scripting, &argv[i]));
            if (r->element[i - 2] == NULL) {
                breaker_redis_reply_free(r);
                r = NULL;
            }
        }
        return r;
    }
    case 2: {
        if (argc == 3 && !breaker__inproc_is(&argv[2], "sync") &&
            !breaker__inproc_is(&argv[2], "async"))
            return breaker__inproc_error("ERR SCRIPT FLUSH only support SYNC|ASYNC option");
        if (argc > 3)
            return breaker__inproc_error("ERR SCRIPT FLUSH only support SYNC|ASYNC option");
        struct breaker__inproc_scripting *fresh = breaker__inproc_scripting_create(s);
        if (fresh == NULL) return NULL;
        breaker__inproc_scripting_free(s->scripting);
        s->scripting = fresh;
        return breaker__inproc_ok();
    }
    default:
        return breaker__inproc_error("NOTBUSY No scripts in execution right now.");
    }
}
