/* SPDX-License-Identifier: MIT */
/*
 * scripts.c - the fleet protocol: three Lua scripts that Redis runs
 * atomically, so one fleet generation has exactly one transition however
 * many hosts race. docs/fleet.md explains them; keep the two in step.
 *
 * KEYS (all in one hash slot: the {name} hash tag):
 *   1 breaker:v1:{name}:s  hash: state and stored limits
 *   2 breaker:v1:{name}:w  hash: the fleet window, fields c<bucket>,
 *                          f<bucket>, s<bucket> (calls, failures, slow)
 *   3 breaker:v1:{name}:l  zset: probe leases, member token, score deadline
 * ARGV common to all: 1 key TTL in ms, 2 the caller's limits as text (used
 * only by the first caller: the stored limits win).
 *
 * Times are Redis's clock (TIME) in microseconds. Numbers stay below 2^53,
 * so Lua's doubles hold them exactly; none is concatenated into a string but
 * the bucket number (10 digits), since Lua 5.1 prints 14 significant digits.
 *
 * Every script answers {state, gen, wait_us, k, successes, verdict, calls,
 * failures, slow, born}: state 0 closed, 1 open, 2 half-open; wait_us the time left
 * in OPEN, or (a refused lease in HALF_OPEN) until the earliest lease's
 * deadline; calls/failures/slow the evidence of the last trip; born the
 * generation the state was created with (0: a state from before 'born'),
 * so that a host can tell a fleet close from a state created from scratch.
 */
#include "store/redis/scripts.h"

/* clang-format off: one Lua line per C line. */
#define PRELUDE                                                                  \
    "local S, W, L = KEYS[1], KEYS[2], KEYS[3]\n"                                \
    "local ttl = tonumber(ARGV[1])\n"                                            \
    "local t = redis.call('TIME')\n"                                             \
    "local now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"                    \
    "local raw = redis.call('HGET', S, 'cfg')\n"                                 \
    "if not raw then\n"                                                          \
    "  -- The first generation is Redis's clock: a Redis restarted empty\n"      \
    "  -- never reuses a generation a host may still remember.\n"                \
    "  raw = ARGV[2]\n"                                                          \
    "  redis.call('HSET', S, 'cfg', raw, 'st', 0, 'gen', now, 'k', 0,\n"         \
    "             'succ', 0, 'until', 0, 'trips', 0, 'transitions', 0,\n"        \
    "             'ec', 0, 'ef', 0, 'es', 0, 'born', now)\n"                     \
    "end\n"                                                                      \
    "-- c: 1 min_calls, 2 failure_rate, 3 slow_rate, 4 window_us, 5 buckets,\n"  \
    "-- 6 open_us, 7 backoff, 8 open_max_us, 9 jitter, 10 max_probes,\n"         \
    "-- 11 successes, 12 probe_us, 13 failure_threshold (CONSECUTIVE; 0 or\n"    \
    "-- absent: a window policy)\n"                                              \
    "local c = {}\n"                                                             \
    "for v in string.gmatch(raw, '%S+') do c[#c + 1] = tonumber(v) end\n"        \
    "local h = redis.call('HMGET', S, 'st', 'gen', 'k', 'succ', 'until')\n"      \
    "local st, gen, k = tonumber(h[1]), tonumber(h[2]), tonumber(h[3])\n"        \
    "local succ, untl = tonumber(h[4]), tonumber(h[5])\n"                        \
    "-- The wait: min(open * backoff^k, max), plus jitter that is a pure\n"      \
    "-- function of the generation, as in the core.\n"                           \
    "local function wait_for(kk, g)\n"                                           \
    "  local w = c[6] * (c[7] ^ kk)\n"                                           \
    "  if w > c[8] then w = c[8] end\n"                                          \
    "  local u = ((g % 65536) * 40503 % 65536) / 65536\n"                        \
    "  return math.floor(w + w * c[9] * u)\n"                                    \
    "end\n"                                                                      \
    "-- The one transition: a new generation and the state's fields.\n"          \
    "local function go(to, why, kk)\n"                                           \
    "  gen = gen + 1; st = to; succ = 0; untl = 0\n"                             \
    "  if to == 1 then k = kk; untl = now + wait_for(k, gen) end\n"              \
    "  if to == 0 then k = 0; redis.call('DEL', W) end\n"                        \
    "  redis.call('DEL', L)\n"                                                   \
    "  redis.call('HSET', S, 'st', st, 'gen', gen, 'k', k, 'succ', 0,\n"         \
    "             'until', untl, 'why', why, 'run', 0)\n"                        \
    "  redis.call('HINCRBY', S, 'transitions', 1)\n"                             \
    "end\n"                                                                      \
    "-- A lease past its deadline is a hung probe: the fleet reopens.\n"         \
    "if st == 2 then\n"                                                          \
    "  local due = redis.call('ZRANGEBYSCORE', L, '-inf', now, 'LIMIT', 0, 1)\n" \
    "  if #due > 0 then go(1, 'probe_timeout', k + 1) end\n"                     \
    "end\n"                                                                      \
    "local function answer(verdict, wait)\n"                                     \
    "  redis.call('PEXPIRE', S, ttl)\n"                                          \
    "  redis.call('PEXPIRE', W, ttl)\n"                                          \
    "  redis.call('PEXPIRE', L, ttl)\n"                                          \
    "  if wait == nil then\n"                                                    \
    "    wait = 0\n"                                                             \
    "    if st == 1 and untl > now then wait = untl - now end\n"                 \
    "  end\n"                                                                    \
    "  local e = redis.call('HMGET', S, 'ec', 'ef', 'es', 'born')\n"             \
    "  return {st, gen, wait, k, succ, verdict,\n"                               \
    "          tonumber(e[1]), tonumber(e[2]), tonumber(e[3]),\n"                \
    "          tonumber(e[4]) or 0}\n"                                           \
    "end\n"

/* flush: ARGV 3 the host's last known generation (0: none), 4 calls,
 * 5 failures, 6 slow (deltas since its last flush), 7 the host's current
 * run of failures (its consecutive_failures). Deltas count only in a CLOSED
 * fleet, and only from a host that knew this generation (or none): calls
 * made before the fleet last closed belong to an ended period. The deltas
 * land in the bucket of Redis's clock now. With a CONSECUTIVE policy the
 * fleet keeps a run instead of a window: a flush of failures only extends
 * it, a flush with a success sets it to the host's run after its last
 * success (the order of calls across hosts within one interval is unknown:
 * an approximation, docs/fleet.md). verdict 1: this flush tripped the
 * fleet. */
const char breaker__redis_lua_flush[] = PRELUDE
    "local hg, dc = tonumber(ARGV[3]), tonumber(ARGV[4])\n"
    "local df, ds = tonumber(ARGV[5]), tonumber(ARGV[6])\n"
    "local trail, thr = tonumber(ARGV[7] or '0'), c[13] or 0\n"
    "if st ~= 0 or (hg ~= 0 and hg ~= gen) or dc <= 0 then return answer(0) end\n"
    "if thr > 0 then\n"
    "  local run = tonumber(redis.call('HGET', S, 'run') or '0')\n"
    "  if df >= dc then run = run + df else run = trail end\n"
    "  if run >= thr then\n"
    "    redis.call('HSET', S, 'ec', run, 'ef', run, 'es', 0)\n"
    "    redis.call('HINCRBY', S, 'trips', 1)\n"
    "    go(1, 'consecutive_failures', 0)\n"
    "    return answer(1)\n"
    "  end\n"
    "  redis.call('HSET', S, 'run', run)\n"
    "  return answer(0)\n"
    "end\n"
    "local span = math.floor(c[4] / c[5])\n"
    "local bkt = math.floor(now / span)\n"
    "redis.call('HINCRBY', W, 'c' .. bkt, dc)\n"
    "if df > 0 then redis.call('HINCRBY', W, 'f' .. bkt, df) end\n"
    "if ds > 0 then redis.call('HINCRBY', W, 's' .. bkt, ds) end\n"
    "local all = redis.call('HGETALL', W)\n"
    "local n, f, s = 0, 0, 0\n"
    "for i = 1, #all, 2 do\n"
    "  local b = tonumber(string.sub(all[i], 2))\n"
    "  if b == nil or b <= bkt - c[5] then redis.call('HDEL', W, all[i])\n"
    "  else\n"
    "    local kind, v = string.sub(all[i], 1, 1), tonumber(all[i + 1])\n"
    "    if kind == 'c' then n = n + v elseif kind == 'f' then f = f + v else s = s + v end\n"
    "  end\n"
    "end\n"
    "if n >= c[1] then\n"
    "  local why = nil\n"
    "  if f / n >= c[2] then why = 'failure_rate'\n"
    "  elseif c[3] > 0 and s / n >= c[3] then why = 'slow_call_rate' end\n"
    "  if why then\n"
    "    redis.call('HSET', S, 'ec', n, 'ef', f, 'es', s)\n"
    "    redis.call('HINCRBY', S, 'trips', 1)\n"
    "    go(1, why, 0)\n"
    "    return answer(1)\n"
    "  end\n"
    "end\n"
    "return answer(0)\n";

/* acquire_probe: ARGV 3 the lease token. verdict 0 refused, 1 the fleet is
 * closed (no lease needed), 2 granted (wait = the lease's time to its
 * deadline). The first request at or after the open wait's end turns the
 * fleet HALF_OPEN. */
const char breaker__redis_lua_acquire[] =
    PRELUDE "if st == 0 then return answer(1) end\n"
            "if st == 1 then\n"
            "  if now < untl then return answer(0) end\n"
            "  go(2, 'wait_elapsed', k)\n"
            "end\n"
            "if succ >= c[11] or redis.call('ZCARD', L) >= c[10] then\n"
            "  local first = redis.call('ZRANGE', L, 0, 0, 'WITHSCORES')\n"
            "  local wait = 0\n"
            "  if #first > 0 then wait = tonumber(first[2]) - now end\n"
            "  return answer(0, wait)\n"
            "end\n"
            "redis.call('ZADD', L, now + c[12], ARGV[3])\n"
            "return answer(2, c[12])\n";

/* release_probe: ARGV 3 the generation the lease was granted in (0: any,
 * for a request that got no answer and may have been granted), 4 its
 * token, 5 the result (0 success, 1 failure, 2 neither). verdict 3 stale
 * (expired, or the generation moved: nothing changes), 4 applied. The fleet
 * closes once half_open_successes probes succeeded and no lease is out. */
const char breaker__redis_lua_release[] = PRELUDE
    "local lg, tok, res = tonumber(ARGV[3]), ARGV[4], tonumber(ARGV[5])\n"
    "if st ~= 2 or (lg ~= gen and lg ~= 0) or not redis.call('ZSCORE', L, tok) then\n"
    "  return answer(3)\n"
    "end\n"
    "redis.call('ZREM', L, tok)\n"
    "if res == 1 then\n"
    "  go(1, 'probe_failed', k + 1)\n"
    "else\n"
    "  if res == 0 then succ = succ + 1; redis.call('HSET', S, 'succ', succ) end\n"
    "  if succ >= c[11] and redis.call('ZCARD', L) == 0 then go(0, 'probes_succeeded', 0) end\n"
    "end\n"
    "return answer(4)\n";
/* clang-format on */
