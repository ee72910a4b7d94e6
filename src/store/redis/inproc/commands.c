/* SPDX-License-Identifier: MIT */
/*
 * commands.c - the in-process Redis's command table: every command it
 * offers, with Redis 7.0's name, arity and flags, and the function that
 * runs it (keys.c, connection.c, hash.c, zset.c, scripting.c). A server
 * holds the table from its creation (server.c) and dispatch.c finds
 * commands in it there, so no file of a command names this one back, not
 * even scripting.c, whose scripts call commands.
 */
#include "store/redis/inproc/engine.h"

/* Sorted by name, for the binary search. */
static const struct breaker__inproc_command commands[] = {
    {"auth", -2, CMD_NOSCRIPT, breaker__inproc_accept},
    {"cluster", -2, 0, breaker__inproc_cluster},
    {"dbsize", 1, 0, breaker__inproc_dbsize},
    {"del", -2, CMD_WRITE, breaker__inproc_del},
    {"echo", 2, 0, breaker__inproc_echo},
    {"eval", -3, CMD_NOSCRIPT, breaker__inproc_eval},
    {"eval_ro", -3, CMD_NOSCRIPT, breaker__inproc_eval_ro},
    {"evalsha", -3, CMD_NOSCRIPT, breaker__inproc_evalsha},
    {"evalsha_ro", -3, CMD_NOSCRIPT, breaker__inproc_evalsha_ro},
    {"exists", -2, 0, breaker__inproc_exists},
    {"expire", -3, CMD_WRITE, breaker__inproc_expire},
    {"flushall", -1, CMD_WRITE, breaker__inproc_flushall},
    {"flushdb", -1, CMD_WRITE, breaker__inproc_flushdb},
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
    {"keys", 2, 0, breaker__inproc_keys},
    {"persist", 2, CMD_WRITE, breaker__inproc_persist},
    {"pexpire", -3, CMD_WRITE, breaker__inproc_pexpire},
    {"ping", -1, 0, breaker__inproc_ping},
    {"pttl", 2, 0, breaker__inproc_pttl},
    {"quit", -1, CMD_NOSCRIPT, breaker__inproc_accept},
    {"script", -2, CMD_NOSCRIPT, breaker__inproc_script},
    {"select", 2, 0, breaker__inproc_select},
    {"time", 1, 0, breaker__inproc_time},
    {"ttl", 2, 0, breaker__inproc_ttl},
    {"type", 2, 0, breaker__inproc_type},
    {"zadd", -4, CMD_WRITE | CMD_DENYOOM, breaker__inproc_zadd},
    {"zcard", 2, 0, breaker__inproc_zcard},
    {"zrange", -4, 0, breaker__inproc_zrange},
    {"zrangebyscore", -4, 0, breaker__inproc_zrangebyscore},
    {"zrem", -3, CMD_WRITE, breaker__inproc_zrem},
    {"zscore", 3, 0, breaker__inproc_zscore},
};

const struct breaker__inproc_command_table breaker__inproc_command_table = {
    .commands = commands,
    .count = sizeof commands / sizeof commands[0],
};
