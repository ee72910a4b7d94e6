/* SPDX-License-Identifier: MIT */
/*
 * test_inproc_redis.c - the in-process Redis (src/store/redis/inproc/)
 * against a real redis-server, command by command: every command and
 * script below goes to both, in order, and the replies must be the same,
 * byte for byte (error texts included). The list covers what the fleet's
 * scripts and client use and the edges of each: arities, options and
 * their conflicts, wrong types, numbers as Redis parses and prints them,
 * expiry options, every conversion between Lua and Redis replies, the
 * errors of a script (compiling, running, raised by redis.call, returned),
 * read-only globals, the bit library, math.random's sequence, and the
 * refusals of a Redis over its maxmemory and of a read-only replica.
 *
 * What cannot be the same is left out on purpose: TIME (the in-process
 * clock is the test's), REDIS_VERSION (the installed server's), a script
 * that raises a table without an `err` string (Redis 7.0.15 crashes), and
 * what the in-process Redis does not offer (inproc.h).
 */
#include "fleet_workload.h"
#include "real_side.h"
#include "redis_server.h"
#include "store/redis/inproc/inproc.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ARGS 12

/* One step: a command (NULL-terminated), or a change of both servers'
 * condition ("@oom", "@readonly", "@none"), or "@sorted" before a command
 * whose reply's order Redis does not specify (compared sorted). */
struct step {
    const char *argv[MAX_ARGS];
};

/* A multi-line script whose error is on line 3. */
#define LINES "local a = 1\nlocal b = 2\nreturn redis.call('HGET', 'h')\n"

static const struct step steps[] = {
    /* The server. */
    {{"PING"}},
    {{"PING", "hello"}},
    {{"PING", "a", "b"}},
    {{"ECHO", "x y"}},
    {{"ECHO"}},
    {{"SELECT", "0"}},
    {{"SELECT", "16"}},
    {{"SELECT", "x"}},
    {{"SELECT", "-1"}},
    {{"DBSIZE", "x"}},
    {{"FOO", "a", "b"}},
    {{"hget", "a"}},
    {{"CLUSTER"}},
    {{"CLUSTER", "SLOTS"}},
    {{"CLUSTER", "slots", "x"}},
    {{"CLUSTER", "INFO"}},
    {{"CLUSTER", "FOO"}},
    {{"FLUSHALL", "x"}},
    {{"FLUSHALL", "ASYNC", "x"}},
    {{"FLUSHALL", "SYNC"}},
    {{"FLUSHDB"}},
    {{"TIME", "x"}},
    /* Hashes. */
    {{"HSET", "h", "f", "v"}},
    {{"HSET", "h", "f"}},
    {{"HSET", "h", "a", "1", "b", "2"}},
    {{"HMSET", "h", "c", "3"}},
    {{"HMSET", "h", "c"}},
    {{"HSETNX", "h", "a", "9"}},
    {{"HSETNX", "h", "z", "9"}},
    {{"HGET", "h", "a"}},
    {{"HGET", "h", "nope"}},
    {{"HGET", "nokey", "a"}},
    {{"HMGET", "h", "a", "nope", "b"}},
    {{"HMGET", "nokey", "a", "b"}},
    {{"HDEL", "h", "z", "nope"}},
    {{"HLEN", "h"}},
    {{"HLEN", "nokey"}},
    {{"HEXISTS", "h", "b"}},
    {{"HEXISTS", "h", "nope"}},
    {{"HINCRBY", "h", "n", "5"}},
    {{"HINCRBY", "h", "n", "-7"}},
    {{"HINCRBY", "h", "n", "x"}},
    {{"HINCRBY", "h", "n", "01"}},
    {{"HINCRBY", "h", "n", "+1"}},
    {{"HINCRBY", "h", "n", "-0"}},
    {{"HINCRBY", "h", "n", "9223372036854775808"}},
    {{"HINCRBY", "h", "b", "1"}},
    {{"HINCRBY", "h", "c", "9223372036854775807"}},
    {{"HINCRBY", "h", "f", "1"}},
    {{"HSET", "h", "m", "-9223372036854775808"}},
    {{"HINCRBY", "h", "m", "-1"}},
    {{"HINCRBY", "h", "m", "0"}},
    /* Small hashes list in insertion order, in Redis as here. */
    {{"HGETALL", "h"}},
    {{"HKEYS", "h"}},
    {{"HVALS", "h"}},
    {{"HSCAN", "h", "0"}},
    {{"HSCAN", "h", "0", "MATCH", "[a-c]"}},
    {{"HSCAN", "h", "0", "MATCH", "*", "COUNT", "1"}},
    {{"HSCAN", "h", "0", "COUNT", "0"}},
    {{"HSCAN", "h", "0", "COUNT", "x"}},
    {{"HSCAN", "h", "0", "COUNT"}},
    {{"HSCAN", "h", "x"}},
    {{"HSCAN", "h", "-1"}},
    {{"HSCAN", "h", ""}},
    {{"HSCAN", "h", "0", "FOO", "1"}},
    {{"HSCAN", "nokey", "0", "FOO"}},
    {{"HGETALL", "nokey"}},
    /* Sorted sets. */
    {{"ZADD", "z", "1", "a", "2", "b"}},
    {{"ZADD", "z", "XX", "5", "c"}},
    {{"ZADD", "z", "NX", "9", "a"}},
    {{"ZADD", "z", "GT", "0", "a"}},
    {{"ZADD", "z", "GT", "CH", "3", "a"}},
    {{"ZADD", "z", "LT", "1", "b"}},
    {{"ZADD", "z", "CH", "7", "b", "8", "d"}},
    {{"ZADD", "z", "INCR", "2", "a"}},
    {{"ZADD", "z", "INCR", "NX", "1", "a"}},
    {{"ZADD", "z", "INCR", "XX", "1", "nope"}},
    {{"ZADD", "z", "1"}},
    {{"ZADD", "z", "x", "a"}},
    {{"ZADD", "z", " 1", "a"}},
    {{"ZADD", "z", "nan", "a"}},
    {{"ZADD", "z", "1e999", "a"}},
    {{"ZADD", "z", "NX", "XX", "1", "a"}},
    {{"ZADD", "z", "GT", "LT", "1", "a"}},
    {{"ZADD", "z", "GT", "NX", "1", "a"}},
    {{"ZADD", "z", "INCR", "1", "a", "2", "b"}},
    {{"ZADD", "z", "inf", "i", "-inf", "j", "0.1", "f", "1e20", "g", "-0", "k"}},
    {{"ZADD", "z", "INCR", "-inf", "i"}},
    {{"ZADD", "z", "2", "a", "2", "aa", "2", "A"}},
    {{"ZCARD", "z"}},
    {{"ZCARD", "nokey"}},
    {{"ZSCORE", "z", "f"}},
    {{"ZSCORE", "z", "g"}},
    {{"ZSCORE", "z", "i"}},
    {{"ZSCORE", "z", "nope"}},
    {{"ZRANGE", "z", "0", "-1"}},
    {{"ZRANGE", "z", "0", "-1", "WITHSCORES"}},
    {{"ZRANGE", "z", "-2", "-1"}},
    {{"ZRANGE", "z", "5", "1"}},
    {{"ZRANGE", "z", "-100", "100"}},
    {{"ZRANGE", "z", "0", "2", "REV", "WITHSCORES"}},
    {{"ZRANGE", "z", "(1", "5", "BYSCORE"}},
    {{"ZRANGE", "z", "5", "(1", "BYSCORE", "REV", "WITHSCORES"}},
    {{"ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "1", "2"}},
    {{"ZRANGE", "z", "0", "1", "LIMIT", "0", "1"}},
    {{"ZRANGE", "z", "0", "1", "LIMIT", "0", "-1"}},
    {{"ZRANGE", "z", "a", "b"}},
    {{"ZRANGE", "z", "0", "-1", "FOO"}},
    {{"ZRANGE", "z", "0", "-1", "REV", "REV"}},
    {{"ZRANGE", "nokey", "0", "-1"}},
    {{"ZRANGEBYSCORE", "z", "-inf", "+inf"}},
    {{"ZRANGEBYSCORE", "z", "-inf", "+inf", "WITHSCORES", "LIMIT", "0", "2"}},
    {{"ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "-1", "5"}},
    {{"ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "1", "-1"}},
    {{"ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "100", "1"}},
    {{"ZRANGEBYSCORE", "z", "(2", "(2"}},
    {{"ZRANGEBYSCORE", "z", "2", "2"}},
    {{"ZRANGEBYSCORE", "z", "3", "1"}},
    {{"ZRANGEBYSCORE", "z", "", "1"}},
    {{"ZRANGEBYSCORE", "z", "a", "b"}},
    {{"ZRANGEBYSCORE", "z", "0", "1", "REV"}},
    {{"ZRANGEBYSCORE", "z", "0", "1", "LIMIT", "0"}},
    {{"ZRANGEBYSCORE", "z", "0", "1", "LIMIT", "x", "1"}},
    {{"ZREM", "z", "a", "nope"}},
    {{"ZREM", "nokey", "a"}},
    /* Keys and types. */
    {{"TYPE", "h"}},
    {{"TYPE", "z"}},
    {{"TYPE", "nokey"}},
    {{"EXISTS", "h", "z", "nokey", "h"}},
    {{"@sorted", "KEYS", "*"}},
    {{"@sorted", "KEYS", "[hz]"}},
    {{"@sorted", "KEYS", "h*"}},
    {{"@sorted", "KEYS", "\\h"}},
    {{"@sorted", "KEYS", "?"}},
    {{"@sorted", "KEYS", "[^z]"}},
    {{"@sorted", "KEYS", "[a-i]"}},
    {{"@sorted", "KEYS", "[i-a]"}},
    {{"DBSIZE"}},
    {{"HGET", "z", "a"}},
    {{"ZADD", "h", "1", "a"}},
    {{"ZRANGE", "h", "0", "1"}},
    {{"ZRANGEBYSCORE", "h", "0", "1"}},
    {{"HGETALL", "z"}},
    {{"ZCARD", "h"}},
    {{"ZSCORE", "h", "a"}},
    {{"ZREM", "h", "a"}},
    {{"HSCAN", "z", "0"}},
    {{"HINCRBY", "z", "a", "1"}},
    {{"HMGET", "z", "a"}},
    {{"HDEL", "z", "a"}},
    {{"HSETNX", "z", "a", "b"}},
    /* Expiry: presence and options. The in-process clock does not run:
     * deadlines are far, and read in seconds. */
    {{"PEXPIRE", "z", "100000000"}},
    {{"PEXPIRE", "nokey", "100"}},
    {{"PEXPIRE", "z", "x"}},
    {{"PEXPIRE", "z", "10", "NX"}},
    {{"PEXPIRE", "z", "100000000", "XX"}},
    {{"PEXPIRE", "z", "10", "GT"}},
    {{"PEXPIRE", "h", "10", "XX"}},
    {{"PEXPIRE", "h", "10", "GT"}},
    {{"PEXPIRE", "h", "100000000", "LT"}},
    {{"PEXPIRE", "z", "10", "FOO"}},
    {{"PEXPIRE", "z", "10", "NX", "XX"}},
    {{"PEXPIRE", "z", "10", "GT", "LT"}},
    {{"PEXPIRE", "z", "9223372036854775807"}},
    {{"EXPIRE", "z", "9223372036854775807"}},
    {{"TTL", "nokey"}},
    {{"PTTL", "nokey"}},
    {{"TTL", "h"}}, /* in seconds: the same though the real clock runs */
    {{"PERSIST", "h"}},
    {{"PERSIST", "nokey"}},
    {{"PEXPIRE", "h", "-1"}},
    {{"EXISTS", "h"}},
    {{"DEL", "h", "nokey", "z"}},
    /* EVAL's arguments, EVALSHA, SCRIPT. */
    {{"EVAL", "return 1", "x"}},
    {{"EVAL", "return 1", "-1"}},
    {{"EVAL", "return 1", "2", "a"}},
    {{"EVAL", "return {KEYS[1], ARGV[1], #KEYS, #ARGV}", "1", "k", "a", "b"}},
    {{"EVAL", "return 1 +", "0"}},
    {{"EVAL", "\033Lua", "0"}},
    {{"EVAL", "x = ", "0"}},
    {{"EVALSHA", "abc", "0"}},
    {{"EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "0"}},
    {{"EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "x"}},
    {{"SCRIPT"}},
    {{"SCRIPT", "FOO"}},
    {{"SCRIPT", "LOAD"}},
    {{"SCRIPT", "LOAD", "return 1"}},
    {{"SCRIPT", "LOAD", "return +"}},
    {{"SCRIPT", "EXISTS", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db",
      "E0E1F9FABFC9D4800C877A703B823AC0578FF8DB", "nope"}},
    {{"EVALSHA", "E0E1F9FABFC9D4800C877A703B823AC0578FF8DB", "0"}},
    {{"SCRIPT", "EXISTS"}},
    {{"SCRIPT", "FLUSH", "x"}},
    {{"SCRIPT", "FLUSH", "ASYNC", "x"}},
    {{"SCRIPT", "KILL"}},
    {{"SCRIPT", "FLUSH"}},
    {{"EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "0"}},
    /* Lua results as replies. */
    {{"EVAL", "return {1, 2, 3.9, -3.9, nil, 4}", "0"}},
    {{"EVAL", "return {1, 'a', true, false, {err='E x'}, {ok='fine'}}", "0"}},
    {{"EVAL", "return {2^53, 2^63, -2^63, 1e300, 0/0, 1/0, -0.0}", "0"}},
    {{"EVAL", "return {'x', {}, {{}}, {1, {2, {3}}}}", "0"}},
    {{"EVAL", "return 'a\\0b'", "0"}},
    {{"EVAL", "return nil", "0"}},
    {{"EVAL", "return false", "0"}},
    {{"EVAL", "return true", "0"}},
    {{"EVAL", "return -3.7", "0"}},
    {{"EVAL", "return '2'", "0"}},
    {{"EVAL", "return function() end", "0"}},
    {{"EVAL", "return setmetatable({}, {__index=function(t, k) return 'E meta' end})", "0"}},
    {{"EVAL", "return {err=42}", "0"}},
    {{"EVAL", "return {ok=42}", "0"}},
    {{"EVAL", "return {err=''}", "0"}},
    {{"EVAL", "return {err='a\\nb'}", "0"}},
    {{"EVAL", "return {double=0.1}", "0"}},
    {{"EVAL", "return {double=1/0}", "0"}},
    {{"EVAL", "return {double=-1/0}", "0"}},
    {{"EVAL", "return {map={a=1}}", "0"}},
    {{"EVAL", "return {set={a=true}}", "0"}},
    {{"EVAL", "return {big_number='123'}", "0"}},
    {{"EVAL", "return {verbatim_string={format='txt', string='hi'}}", "0"}},
    {{"EVAL", "return {verbatim_string={format='txt'}}", "0"}},
    /* redis.error_reply and status_reply. */
    {{"EVAL", "return redis.error_reply('My bad thing')", "0"}},
    {{"EVAL", "return redis.error_reply('-X y')", "0"}},
    {{"EVAL", "return redis.error_reply('nospace')", "0"}},
    {{"EVAL", "return redis.error_reply('')", "0"}},
    {{"EVAL", "return redis.error_reply('-')", "0"}},
    {{"EVAL", "return redis.error_reply('-ERR')", "0"}},
    {{"EVAL", "return redis.error_reply('  x')", "0"}},
    {{"EVAL", "return redis.error_reply('a\\r\\nb c\\n')", "0"}},
    {{"EVAL", "return redis.error_reply(42)", "0"}},
    {{"EVAL", "return redis.error_reply()", "0"}},
    {{"EVAL", "return redis.status_reply('fine')", "0"}},
    {{"EVAL", "return redis.status_reply('')", "0"}},
    {{"EVAL", "return redis.status_reply('a\\r\\nb')", "0"}},
    {{"EVAL", "return redis.status_reply()", "0"}},
    /* Errors of a script. */
    {{"EVAL", "error('boom')", "0"}},
    {{"EVAL", "error('a\\nb')", "0"}},
    {{"EVAL", "error(nil)", "0"}},
    {{"EVAL", "error(42)", "0"}},
    {{"EVAL", "error(true)", "0"}},
    {{"EVAL", "error({err='X y'})", "0"}},
    {{"EVAL", "error({err=5})", "0"}},
    {{"EVAL", "error({err='X', source='s', line='7'})", "0"}},
    {{"EVAL", "error('no position', 0)", "0"}},
    {{"EVAL", "local function f() error('deep') end\nlocal x = 1\nf()", "0"}},
    {{"EVAL", LINES, "0"}},
    {{"EVAL", "local t = nil\nreturn t.x", "0"}},
    {{"EVAL", "return 1 + {}", "0"}},
    {{"EVAL", "return #nil", "0"}},
    {{"EVAL", "return ('x'):rep(-1) .. nil", "0"}},
    /* redis.call and redis.pcall. */
    {{"EVAL", "return redis.call('ping')", "0"}},
    {{"EVAL", "return redis.call('PiNg', 'x')", "0"}},
    {{"EVAL", "return redis.call('nosuch')", "0"}},
    {{"EVAL", "return redis.call('hget', 'a')", "0"}},
    {{"EVAL", "return redis.call()", "0"}},
    {{"EVAL", "return redis.call({})", "0"}},
    {{"EVAL", "return redis.call('hset', 'h', 'f', {})", "0"}},
    {{"EVAL", "return redis.call('hset', 'h', 'f', nil)", "0"}},
    {{"EVAL", "return redis.call('hset', 'h', 'f', true)", "0"}},
    {{"EVAL", "return redis.pcall('hget', 'a')", "0"}},
    {{"EVAL", "return {redis.pcall('hget', 'a')}", "0"}},
    {{"EVAL", "return redis.pcall()", "0"}},
    {{"EVAL", "return redis.pcall({})", "0"}},
    {{"EVAL", "return redis.call('eval', 'return 1', 0)", "0"}},
    {{"EVAL", "return redis.call('script', 'load', 'return 1')", "0"}},
    {{"EVAL", "return redis.call('auth', 'x')", "0"}},
    {{"EVAL",
      "return redis.call('hset', 'hk', 'f', 1.5, 'g', 10, 'h', 1e100, 'i', -0.0, 'j', 2^63, 'k', "
      "0.1, 'l', 1/3, 'm', 123456789012345678)",
      "0"}},
    {{"EVAL", "return redis.call('hgetall', 'hk')", "0"}},
    {{"EVAL", "redis.call('zadd', 'zk', 1, 'a') return redis.call('zadd', 'zk', 'x', 'b')", "0"}},
    {{"EVAL", "return redis.pcall('zadd', 'zk', 'x', 'b')", "0"}},
    {{"EVAL", "return redis.call('hget', 'zk', 'a')", "0"}},
    {{"EVAL", "return redis.pcall('hget', 'zk', 'a')", "0"}},
    {{"EVAL", "return redis.call('zrange', 'zk', 0, -1, 'withscores')", "0"}},
    {{"EVAL", "return redis.call('zscore', 'zk', 'a')", "0"}},
    {{"EVAL", "return redis.call('zscore', 'zk', 'nope')", "0"}},
    {{"EVAL", "return {redis.call('hget', 'nokey', 'f')}", "0"}},
    {{"EVAL", "return type(redis.call('hget', 'nokey', 'f'))", "0"}},
    {{"EVAL", "return redis.call('type', 'zk')", "0"}},
    {{"EVAL", "return redis.call('type', 'zk')['ok']", "0"}},
    {{"EVAL", "return redis.call('hmget', 'hk', 'f', 'nope', 'g')", "0"}},
    {{"EVAL", "return {pcall(function() redis.call('hget', 'a') end)}", "0"}},
    {{"EVAL", "return {pcall(function() error({err='X y'}) end)}", "0"}},
    {{"EVAL", "return {pcall(function() error('plain') end)}", "0"}},
    {{"EVAL", "return {pcall(error)}", "0"}},
    {{"EVAL", "return {xpcall(function() error('x') end, function(e) return 'h:' .. e end)}", "0"}},
    {{"EVAL", "redis.call('select', '1') return redis.call('hset', 'in1', 'f', 'v')", "0"}},
    {{"HGET", "in1", "f"}},
    {{"SELECT", "1"}},
    {{"HGET", "in1", "f"}},
    {{"DEL", "in1"}},
    {{"SELECT", "0"}},
    /* The rest of the redis table. */
    {{"EVAL", "return redis.sha1hex('')", "0"}},
    {{"EVAL", "return redis.sha1hex(12)", "0"}},
    {{"EVAL", "return redis.sha1hex()", "0"}},
    {{"EVAL", "return redis.log(redis.LOG_WARNING, 'x')", "0"}},
    {{"EVAL", "return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING}",
      "0"}},
    {{"EVAL", "return redis.log(99, 'x')", "0"}},
    {{"EVAL", "return redis.log(1)", "0"}},
    {{"EVAL", "return redis.log('x', 'y')", "0"}},
    {{"EVAL", "return redis.log(3.5, 'y')", "0"}},
    {{"EVAL", "return redis.setresp(2)", "0"}},
    {{"EVAL", "return redis.setresp(4)", "0"}},
    {{"EVAL", "return redis.setresp()", "0"}},
    {{"EVAL", "return redis.set_repl(redis.REPL_ALL)", "0"}},
    {{"EVAL", "return redis.set_repl(99)", "0"}},
    {{"EVAL", "return redis.set_repl()", "0"}},
    {{"EVAL",
      "return {redis.REPL_ALL, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, "
      "redis.REPL_NONE}",
      "0"}},
    {{"EVAL", "return redis.replicate_commands()", "0"}},
    {{"EVAL", "return redis.breakpoint()", "0"}},
    {{"EVAL", "return redis.debug('x')", "0"}},
    {{"EVAL", "return redis.acl_check_cmd('hget', 'a', 'b')", "0"}},
    {{"EVAL", "return redis.acl_check_cmd('nosuch')", "0"}},
    {{"EVAL", "return redis.acl_check_cmd()", "0"}},
    {{"EVAL",
      "local t = {} for k, v in pairs(redis) do if k ~= 'REDIS_VERSION' and k ~= "
      "'REDIS_VERSION_NUM' then t[#t+1] = k .. '=' .. type(v) end end table.sort(t) "
      "return t",
      "0"}},
    /* Globals: all of Redis's but the libraries the in-process one lacks. */
    {{"EVAL",
      "local no = {cjson=1, cmsgpack=1, struct=1} local t = {} for k, v in pairs(_G) do "
      "if not no[k] then t[#t+1] = k end end table.sort(t) return t",
      "0"}},
    {{"EVAL", "local t = {} for k, v in pairs(math) do t[#t+1] = k end table.sort(t) return t",
      "0"}},
    {{"EVAL", "local t = {} for k, v in pairs(string) do t[#t+1] = k end table.sort(t) return t",
      "0"}},
    {{"EVAL", "local t = {} for k, v in pairs(table) do t[#t+1] = k end table.sort(t) return t",
      "0"}},
    /* Read-only globals. */
    {{"EVAL", "x = 1", "0"}},
    {{"EVAL", "return y", "0"}},
    {{"EVAL", "string.foo = 1", "0"}},
    {{"EVAL", "_G.x = 1", "0"}},
    {{"EVAL", "rawset(_G, 'x', 1)", "0"}},
    {{"EVAL", "setmetatable(_G, nil)", "0"}},
    {{"EVAL", "local ok, e = pcall(function() x = 1 end) return e", "0"}},
    {{"EVAL", "return loadstring('return 1')()", "0"}},
    {{"EVAL", "return loadstring('y = 2')()", "0"}},
    {{"EVAL", "return rawget(_G, 'redis') ~= nil", "0"}},
    {{"EVAL", "return getmetatable(_G).__index == nil", "0"}},
    {{"EVAL", "local t = {} t.a = 1 KEYS[2] = 'x' return {t.a, KEYS[2]}", "1", "k"}},
    {{"EVAL", "return type(print)", "0"}},
    {{"EVAL", "return type(getfenv)", "0"}},
    {{"EVAL", "return type(os)", "0"}},
    {{"EVAL", "return tostring(2^53)", "0"}},
    {{"EVAL", "return string.format('%d %.3f %s %q', 3.7, 1/3, 'x', 'a\\nb')", "0"}},
    /* The bit library. */
    {{"EVAL",
      "return {bit.tobit(2^32 + 5), bit.band(-1, 0xff), bit.bnot(0), bit.lshift(1, 31), "
      "bit.rshift(-1, 28), bit.arshift(-256, 4), bit.rol(1, 33), bit.ror(1, 1), "
      "bit.bswap(0x12345678), bit.bxor(5, 3, 1), bit.bor(1, 2, 4)}",
      "0"}},
    {{"EVAL",
      "return {bit.tohex(255), bit.tohex(-1, -4), bit.tohex(-1, -2147483648), "
      "bit.tohex(1, 12), bit.tohex(1, 0)}",
      "0"}},
    {{"EVAL",
      "return {bit.tobit(1.5), bit.tobit(2.5), bit.tobit(-1.5), bit.tobit(2^31), "
      "bit.tobit(-2^31 - 1), bit.tobit('12'), bit.band(2^52 + 3, 7)}",
      "0"}},
    {{"EVAL", "return bit.band('x')", "0"}},
    {{"EVAL", "return bit.band()", "0"}},
    /* math.random on Redis's generator (a fresh server: the first draws
     * of its start), then seeded. */
    {{"EVAL", "local t = {} for i = 1, 10 do t[i] = math.random(1000) end return t", "0"}},
    {{"EVAL", "return {tostring(math.random()), math.random(3, 5)}", "0"}},
    {{"EVAL", "math.randomseed(7) return {math.random(1000), math.random(1000)}", "0"}},
    {{"EVAL", "math.randomseed(-7) return tostring(math.random())", "0"}},
    {{"EVAL", "return math.random(10, 5)", "0"}},
    {{"EVAL", "return math.random(1, 2, 3)", "0"}},
    /* EVAL_RO. */
    {{"EVAL_RO", "return redis.call('hset', 'h', 'f', 1)", "0"}},
    {{"EVAL_RO", "return redis.call('hgetall', 'hk')", "0"}},
    {{"EVAL_RO", "return redis.pcall('del', 'hk')", "0"}},
    /* Over maxmemory: what may grow the data is refused, a script's first
     * such call too, but not once the script wrote. */
    {{"HSET", "full", "f", "v"}},
    {{"@oom"}},
    {{"HSET", "full", "g", "v"}},
    {{"HINCRBY", "full", "n", "1"}},
    {{"ZADD", "zfull", "1", "a"}},
    {{"HGET", "full", "f"}},
    {{"PEXPIRE", "full", "100000000"}},
    {{"EVAL", "return redis.call('HSET', 'full', 'f', 'v')", "0"}},
    {{"EVAL", "return redis.pcall('HSET', 'full', 'f', 'v')", "0"}},
    {{"EVAL", "redis.call('HDEL', 'full', 'nope') return redis.pcall('HSET', 'full', 'x', 'v')",
      "0"}},
    {{"EVAL", "redis.call('DEL', 'nokey') return redis.pcall('HSET', 'full', 'y', 'v')", "0"}},
    {{"EVAL", "return redis.call('HGETALL', 'full')", "0"}},
    {{"HDEL", "full", "x", "y"}},
    {{"@none"}},
    /* A read-only replica: every write refused, in scripts too. */
    {{"@readonly"}},
    {{"HSET", "full", "g", "v"}},
    {{"DEL", "full"}},
    {{"HGET", "full", "f"}},
    {{"FLUSHALL"}},
    {{"EVAL", "return redis.call('HGET', 'full', 'f')", "0"}},
    {{"EVAL", "return redis.call('DEL', 'full')", "0"}},
    {{"EVAL", "return redis.pcall('HSET', 'full', 'f', 'w')", "0"}},
    {{"@none"}},
    {{"HGETALL", "full"}},
};

static struct test_redis real;
static redisContext *conn;
static struct breaker__redis_inproc *inproc;
static uint64_t clock_ns = UINT64_C(1700000000) * SEC;

static uint64_t clock_read(void *ctx) {
    (void)ctx;
    return clock_ns;
}

/* Both servers into a condition: over maxmemory, a read-only replica (of
 * a master on a port nobody listens on, so it never syncs), or neither. */
static void condition(const char *what) {
    const char *const none_cfg[] = {"CONFIG", "SET", "maxmemory", "0"};
    const char *const oom_cfg[] = {"CONFIG", "SET", "maxmemory", "1"};
    const char *const primary[] = {"REPLICAOF", "NO", "ONE"};
    char port[16];
    snprintf(port, sizeof port, "%d", real.port == 1 ? 2 : 1);
    const char *const replica[] = {"REPLICAOF", "127.0.0.1", port};
    size_t len[4];
    const char *const *cmds[2] = {none_cfg, primary};
    int argcs[2] = {4, 3};
    int mode = BREAKER__INPROC_REFUSE_NONE;
    if (strcmp(what, "@oom") == 0) {
        cmds[0] = oom_cfg;
        mode = BREAKER__INPROC_REFUSE_OOM;
    } else if (strcmp(what, "@readonly") == 0) {
        cmds[1] = replica;
        mode = BREAKER__INPROC_REFUSE_READONLY;
    }
    for (int c = 0; c < 2; c++) {
        for (int i = 0; i < argcs[c]; i++)
            len[i] = strlen(cmds[c][i]);
        breaker_redis_reply *r = real_side_run(conn, argcs[c], cmds[c], len);
        if (r->type == BREAKER_REDIS_REPLY_ERROR) fail_msg("%s: %s", cmds[c][0], r->str);
        breaker_redis_reply_free(r);
    }
    breaker__redis_inproc_refuse(inproc, mode);
}

static int by_text(const void *x, const void *y) {
    const breaker_redis_reply *a = *(breaker_redis_reply *const *)x;
    const breaker_redis_reply *b = *(breaker_redis_reply *const *)y;
    return strcmp(a->str, b->str);
}

static void every_command_and_script_answers_as_redis_does(void **state) {
    (void)state;
    int failures = 0;
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        const char *const *argv = steps[i].argv;
        if (argv[0][0] == '@' && strcmp(argv[0], "@sorted") != 0) {
            condition(argv[0]);
            continue;
        }
        bool sorted = strcmp(argv[0], "@sorted") == 0;
        if (sorted) argv++;
        int argc = 0;
        size_t len[MAX_ARGS];
        while (argc < MAX_ARGS && argv[argc] != NULL) {
            len[argc] = strlen(argv[argc]);
            argc++;
        }
        breaker_redis_reply *want = real_side_run(conn, argc, argv, len);
        breaker_redis_reply *got = breaker__redis_inproc_command(inproc, argc, argv, len);
        assert_non_null(got);
        if (sorted && want->type == BREAKER_REDIS_REPLY_ARRAY &&
            got->type == BREAKER_REDIS_REPLY_ARRAY && want->elements > 0 && got->elements > 0) {
            qsort(want->element, want->elements, sizeof want->element[0], by_text);
            qsort(got->element, got->elements, sizeof got->element[0], by_text);
        }
        char why[512];
        if (!fleet_reply_equal(want, got, why, sizeof why)) {
            fprintf(stderr, "step %zu: %s %.60s%s: redis and in-process differ: %s\n", i, argv[0],
                    argc > 1 ? argv[1] : "", argc > 2 ? " ..." : "", why);
            failures++;
        }
        breaker_redis_reply_free(want);
        breaker_redis_reply_free(got);
    }
    printf("%zu steps compared with redis-server\n", sizeof steps / sizeof steps[0]);
    assert_int_equal(failures, 0);
}

/* TIME: the same shape as Redis's (two integers as strings), with the
 * in-process clock's value. */
static void time_has_redis_shape_and_the_injected_clock(void **state) {
    (void)state;
    const char *argv[] = {"TIME"};
    size_t len[] = {4};
    breaker_redis_reply *want = real_side_run(conn, 1, argv, len);
    breaker_redis_reply *got = breaker__redis_inproc_command(inproc, 1, argv, len);
    assert_int_equal(want->type, BREAKER_REDIS_REPLY_ARRAY);
    assert_int_equal(got->type, BREAKER_REDIS_REPLY_ARRAY);
    assert_int_equal(want->elements, 2);
    assert_int_equal(got->elements, 2);
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(want->element[i]->type, got->element[i]->type);
    }
    assert_string_equal(got->element[0]->str, "1700000000");
    assert_string_equal(got->element[1]->str, "0");
    breaker_redis_reply_free(want);
    breaker_redis_reply_free(got);
}

static int setup(void **state) {
    (void)state;
    if (test_redis_start(&real) != 0) return -1;
    conn = real_side_connect(real.port);
    inproc = breaker__redis_inproc_create(clock_read, NULL);
    return inproc == NULL ? -1 : 0;
}

static int teardown(void **state) {
    (void)state;
    breaker__redis_inproc_destroy(inproc);
    if (conn != NULL) redisFree(conn);
    test_redis_stop(&real);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_command_and_script_answers_as_redis_does),
        cmocka_unit_test(time_has_redis_shape_and_the_injected_clock),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
