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
 *   4 breaker:v1:{name}:q  hash: the hosts' flush sequences, field host id
 *                          (16 hex digits), value "seq time" (the sequence
 *                          last applied, Redis's clock then)
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

#include "core/config_fields.h"

/* The configuration's ranges (core/config_fields.h), as the scripts check
 * stored limits against them; BIG bounds stored integers (generations,
 * times in µs, counters: 2^52, exact in Lua's doubles with room to count). */
#define BIG_TEXT      "4503599627370496"
#define DUR_TEXT      "31536000000000" /* BREAKER__MAX_DURATION_DAYS in µs */
#define MAX_MIN_CALLS BREAKER__STR(BREAKER__MAX_MIN_CALLS)
#define MAX_BUCKETS   BREAKER__STR(BREAKER__MAX_BUCKETS)
#define MAX_BACKOFF   BREAKER__STR(BREAKER__MAX_OPEN_BACKOFF)
#define MAX_PROBES    "4095"
#define MAX_THRESHOLD BREAKER__STR(BREAKER__MAX_FAILURE_THRESHOLD)
#define WHO_MAX       BREAKER__STR(BREAKER__FLEET_WHO_MAX)
#define WHY_MAX       BREAKER__STR(BREAKER__FLEET_WHY_MAX)
_Static_assert(BREAKER__MAX_DURATION_DAYS == 365, "DUR_TEXT is 365 days");
_Static_assert(BREAKER__MAX_PROBES == 4095, "MAX_PROBES is the core's");

/* One Lua line per C line: */
/* clang-format off */
#define PRELUDE                                                                  \
    "local S, W, L, Q = KEYS[1], KEYS[2], KEYS[3], KEYS[4]\n"                    \
    "local ttl = tonumber(ARGV[1])\n"                                            \
    "local t = redis.call('TIME')\n"                                             \
    "local now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"                    \
    "-- Everything read from Redis is checked before it is used: the first\n"    \
    "-- violation is named (key, field, value, what was expected) in `bad`.\n"   \
    "local BIG = " BIG_TEXT "\n"                                                 \
    "local BIG_TEXT = '" BIG_TEXT "'\n"                                          \
    "local DUR = " DUR_TEXT "\n"                                                 \
    "local bad = nil\n"                                                          \
    "local function seen(v)\n"                                                   \
    "  v = string.gsub(string.sub(tostring(v), 1, 40), '[^%w%.%-%+ ()]', '?')\n"   \
    "  return v\n"                                                               \
    "end\n"                                                                      \
    "local function flag(key, f, v, want)\n"                                     \
    "  if not bad then\n"                                                        \
    "    bad = key .. ': field ' .. f .. ' = ' .. seen(v) .. ', expected ' .. want\n" \
    "  end\n"                                                                    \
    "end\n"                                                                      \
    "-- A whole number of plain digits in lo..hi (nil: absent is allowed).\n"    \
    "local function int(key, f, v, lo, hi, opt)\n"                               \
    "  if v == nil or v == false then\n"                                         \
    "    if not opt then flag(key, f, '(missing)', string.format('%.0f..%.0f', lo, hi)) end\n" \
    "    return lo\n"                                                            \
    "  end\n"                                                                    \
    "  local n = nil\n"                                                          \
    "  if string.match(v, '^%d+$') and #v <= 16 then n = tonumber(v) end\n"      \
    "  if n == nil or n < lo or n > hi then\n"                                   \
    "    flag(key, f, v, string.format('%.0f..%.0f', lo, hi)); return lo\n"      \
    "  end\n"                                                                    \
    "  return n\n"                                                               \
    "end\n"                                                                      \
    "-- A finite plain number in lo..hi.\n"                                      \
    "local function real(key, f, v, lo, hi, lo_open)\n"                          \
    "  local n = nil\n"                                                          \
    "  if string.match(v, '^%d[%d%.eE%+%-]*$') then n = tonumber(v) end\n"       \
    "  if n == nil or n ~= n or n < lo or n > hi or (lo_open and n == lo) then\n" \
    "    local range = '[' .. lo .. ', ' .. hi .. ']'\n"                         \
    "    if lo_open then range = '(' .. lo .. ', ' .. hi .. ']' end\n"           \
    "    flag(key, f, v, range); return hi\n"                                    \
    "  end\n"                                                                    \
    "  return n\n"                                                               \
    "end\n"                                                                      \
    "local function typed(key, want)\n"                                          \
    "  local ty = redis.call('TYPE', key)['ok']\n"                               \
    "  if ty ~= 'none' and ty ~= want then flag(key, 'type', ty, want) end\n"   \
    "  return ty\n"                                                              \
    "end\n"                                                                      \
    "-- The limits text (c[1] .. c[13]) against the configuration's ranges\n"    \
    "-- (breaker_config_validate(); times in microseconds).\n"                   \
    "-- The usual text, 14 plain numbers, read by one match: the field by\n"    \
    "-- field reading below runs only for any other text (and names what is\n"  \
    "-- wrong with it).\n"                                                       \
    "local R = '(%d[%d%.eE%+%-]*)'\n"                                            \
    "local LIMITS14 = '^(%d+) ' .. R .. ' ' .. R .. ' (%d+) (%d+) (%d+) ' .. R ..\n" \
    "  ' (%d+) ' .. R .. ' (%d+) (%d+) (%d+) (%d+) (%d+)$'\n"                      \
    "local INTS = {1, 4, 5, 6, 8, 10, 11, 12, 13, 14}\n"                          \
    "local function limits_fast(raw)\n"                                          \
    "  local a = {string.match(raw, LIMITS14)}\n"                                \
    "  if #a ~= 14 then return nil end\n"                                        \
    "  local c = {}\n"                                                           \
    "  for i = 1, 14 do c[i] = tonumber(a[i]); if c[i] == nil then return nil end end\n" \
    "  for _, i in ipairs(INTS) do if #a[i] > 16 then return nil end end\n"       \
    "  if c[1] >= 1 and c[1] <= " MAX_MIN_CALLS " and c[2] > 0 and c[2] <= 1 and\n" \
    "     c[3] >= 0 and c[3] <= 1 and c[4] >= 1 and c[4] <= DUR and c[5] >= 1 and\n" \
    "     c[5] <= " MAX_BUCKETS " and c[4] / c[5] >= 1000 and c[6] >= 1 and c[6] <= DUR and\n" \
    "     c[7] >= 1 and c[7] <= " MAX_BACKOFF " and c[8] >= c[6] and c[8] <= DUR and\n" \
    "     c[9] >= 0 and c[9] <= 1 and c[10] >= 1 and c[10] <= " MAX_PROBES " and\n"  \
    "     c[11] >= 1 and c[11] <= " MAX_PROBES " and c[12] >= 1 and c[12] <= DUR and\n" \
    "     c[13] >= 0 and c[13] <= " MAX_THRESHOLD " and c[14] >= 0 and c[14] <= 64 then\n" \
    "    return c\n"                                                             \
    "  end\n"                                                                    \
    "  return nil\n"                                                             \
    "end\n"                                                                      \
    "local function limits(key, raw)\n"                                          \
    "  local fast = limits_fast(raw)\n"                                          \
    "  if fast then return fast end\n"                                           \
    "  local v = {}\n"                                                           \
    "  for x in string.gmatch(raw, '%S+') do v[#v + 1] = x end\n"                \
    "  if #v < 12 then flag(key, 'cfg', raw, '12 or 13 limits'); return nil end\n" \
    "  local c = {}\n"                                                           \
    "  local f = 'cfg.'\n"                                                       \
    "  c[1] = int(key, f .. 'min_calls', v[1], 1, " MAX_MIN_CALLS ")\n"          \
    "  c[2] = real(key, f .. 'failure_rate', v[2], 0, 1, true)\n"                \
    "  c[3] = real(key, f .. 'slow_call_rate', v[3], 0, 1)\n"                    \
    "  c[4] = int(key, f .. 'window_us', v[4], 1, DUR)\n"                        \
    "  c[5] = int(key, f .. 'window_buckets', v[5], 1, " MAX_BUCKETS ")\n"       \
    "  if not bad and c[4] / c[5] < 1000 then\n"                                 \
    "    flag(key, f .. 'window_us', v[4], 'at least 1000 us per bucket')\n"     \
    "  end\n"                                                                    \
    "  c[6] = int(key, f .. 'open_us', v[6], 1, DUR)\n"                          \
    "  c[7] = real(key, f .. 'open_backoff', v[7], 1, " MAX_BACKOFF ")\n"        \
    "  c[8] = int(key, f .. 'open_max_us', v[8], c[6], DUR)\n"                   \
    "  c[9] = real(key, f .. 'open_jitter', v[9], 0, 1)\n"                       \
    "  c[10] = int(key, f .. 'half_open_max_probes', v[10], 1, " MAX_PROBES ")\n" \
    "  c[11] = int(key, f .. 'half_open_successes', v[11], 1, " MAX_PROBES ")\n" \
    "  c[12] = int(key, f .. 'probe_timeout_us', v[12], 1, DUR)\n"               \
    "  c[13] = int(key, f .. 'failure_threshold', v[13], 0, " MAX_THRESHOLD ", true)\n" \
    "  c[14] = 1\n"                                                              \
    "  if v[14] then c[14] = int(key, f .. 'min_failing_sources', v[14], 0, 64) end\n" \
    "  return c\n"                                                               \
    "end\n"                                                                      \
    "-- The caller's limits: a client that sends others is broken.\n"            \
    "local mine = limits('ARGV[2]', ARGV[2])\n"                                  \
    "if bad then return redis.error_reply('ERR breaker: ' .. bad) end\n"         \
    "local has_s = typed(S, 'hash') == 'hash'\n"                                 \
    "typed(W, 'hash'); typed(L, 'zset'); typed(Q, 'hash')\n"                     \
    "local raw, c = nil, nil\n"                                                  \
    "local h = {}\n"                                                             \
    "-- The last trip's evidence and born, as the answer sends them.\n"          \
    "local E = {0, 0, 0, 0}\n"                                                   \
    "if not bad and has_s then\n"                                                \
    "  h = redis.call('HMGET', S, 'cfg', 'st', 'gen', 'k', 'succ', 'until',\n"   \
    "                 'born', 'trips', 'transitions', 'ec', 'ef', 'es', 'run', 'qc',\n"  \
    "                 'ok', 'fu', 'oseq', 'ow', 'oy', 'sh', 'sseq', 'cg', 'sw', 'sy',\n" \
    "                 'cw', 'cy')\n"                                              \
    "  raw = h[1] or '(missing)'\n"                                              \
    "  -- The same text as the caller's (the usual case): checked once.\n"      \
    "  if raw == ARGV[2] then c = mine else c = limits(S, raw) end\n"            \
    "  E = {h[10], h[11], h[12], h[7]}\n"                                        \
    "end\n"                                                                      \
    "local st, gen, k, succ, untl = 0, 0, 0, 0, 0\n"                             \
    "-- The fleet's operator order (docs/fleet.md, \"Fleet-wide orders\"): ord\n" \
    "-- 0 none, 1 open, 2 closed, 3 reset; fu its expiry (0: none), oseq its\n" \
    "-- sequence, ow and oy who gave it and why.\n"                           \
    "local ord, fu, oseq = 0, 0, 0\n"                                           \
    "-- The fleet's controls (\"Fleet-wide shadow mode and limits\"): sh 1 while\n" \
    "-- shadowed, sseq its sequence; cg the stored limits' generation (0: the\n" \
    "-- first attacher's, never changed); sw, sy, cw, cy who and why.\n"          \
    "local shadow, sseq, cgen = 0, 0, 0\n"                                       \
    "local gen_seen = 0\n"                                                       \
    "if raw and not bad then\n"                                                  \
    "  st = int(S, 'st', h[2], 0, 2)\n"                                          \
    "  gen = int(S, 'gen', h[3], 1, BIG)\n"                                      \
    "  if not bad then gen_seen = gen end\n"                                     \
    "  k = int(S, 'k', h[4], 0, 4294967295)\n"                                   \
    "  succ = int(S, 'succ', h[5], 0, c[10] + c[11])\n"                          \
    "  local most = 0\n"                                                         \
    "  if st == 1 then most = math.floor(c[8] + c[8] * c[9]) end\n"              \
    "  untl = int(S, 'until', h[6], 0, BIG)\n"                                   \
    "  if not bad and st == 1 and untl > now + most then\n"                      \
    "    flag(S, 'until', h[6], string.format('at most %.0f (now + the longest wait)', now + most))\n" \
    "  end\n"                                                                    \
    "  int(S, 'born', h[7], 0, gen, true)\n"                                     \
    "  int(S, 'trips', h[8], 0, BIG)\n"                                          \
    "  int(S, 'transitions', h[9], 0, BIG)\n"                                    \
    "  local ec = int(S, 'ec', h[10], 0, BIG)\n"                                 \
    "  int(S, 'ef', h[11], 0, ec)\n"                                             \
    "  int(S, 'es', h[12], 0, ec)\n"                                             \
    "  int(S, 'run', h[13], 0, BIG, true)\n"                                     \
    "  int(S, 'qc', h[14], 0, BIG, true)\n"                                      \
    "  ord = int(S, 'ok', h[15], 0, 3, true)\n"                                 \
    "  fu = int(S, 'fu', h[16], 0, BIG, true)\n"                                \
    "  oseq = int(S, 'oseq', h[17], 0, BIG, true)\n"                            \
    "  if not bad and h[18] and #h[18] > " WHO_MAX " then flag(S, 'ow', h[18], 'at most " WHO_MAX " bytes') end\n" \
    "  if not bad and h[19] and #h[19] > " WHY_MAX " then flag(S, 'oy', h[19], 'at most " WHY_MAX " bytes') end\n" \
    "  shadow = int(S, 'sh', h[20], 0, 1, true)\n"                               \
    "  sseq = int(S, 'sseq', h[21], 0, BIG, true)\n"                             \
    "  cgen = int(S, 'cg', h[22], 0, BIG, true)\n"                               \
    "  for i, f in ipairs({'sw', 'sy', 'cw', 'cy'}) do\n"                        \
    "    local most = " WHY_MAX "\n"                                              \
    "    if i % 2 == 1 then most = " WHO_MAX " end\n"                             \
    "    if not bad and h[22 + i] and #h[22 + i] > most then flag(S, f, h[22 + i], 'at most ' .. most .. ' bytes') end\n" \
    "  end\n"                                                                    \
    "  if not bad and h[18] and h[18]:find('%c') then flag(S, 'ow', h[18], 'printable text') end\n" \
    "  if not bad and h[19] and h[19]:find('%c') then flag(S, 'oy', h[19], 'printable text') end\n" \
    "  if not bad and st == 2 then\n"                                            \
    "    -- A lease's deadline is at most one probe timeout away.\n"             \
    "    local n = redis.call('ZCARD', L)\n"                                     \
    "    if n > c[10] then flag(L, 'leases', n, '0..' .. c[10]) end\n"           \
    "    local last = redis.call('ZRANGE', L, -1, -1, 'WITHSCORES')\n"           \
    "    local first = redis.call('ZRANGE', L, 0, 0, 'WITHSCORES')\n"            \
    "    if not bad and #last > 0 and not (tonumber(last[2]) <= now + c[12]) then\n" \
    "      flag(L, 'score of ' .. seen(last[1]), last[2], string.format('at most %.0f', now + c[12]))\n" \
    "    end\n"                                                                  \
    "    if not bad and #first > 0 and not (tonumber(first[2]) >= 0) then\n"     \
    "      flag(L, 'score of ' .. seen(first[1]), first[2], 'a deadline >= 0')\n" \
    "    end\n"                                                                  \
    "  end\n"                                                                    \
    "end\n"                                                                      \
    "-- A violation: the keys are rebuilt (a new, later generation; the\n"       \
    "-- caller's limits), never followed, and the error names it. Only the\n"    \
    "-- flusher's scripts rebuild (its round reports the error: degraded,\n"     \
    "-- on_degraded); acquire_probe answers the error and writes nothing.\n"     \
    "local function corrupt(fix)\n"                                              \
    "  if not fix then return redis.error_reply('CORRUPT ' .. bad) end\n"        \
    "  local g = now\n"                                                          \
    "  if gen_seen + 1 > g then g = gen_seen + 1 end\n"                          \
    "  redis.call('DEL', S, W, L, Q)\n"                                          \
    "  redis.call('HSET', S, 'cfg', ARGV[2], 'st', 0, 'gen', g, 'k', 0,\n"       \
    "             'succ', 0, 'until', 0, 'trips', 0, 'transitions', 0,\n"        \
    "             'ec', 0, 'ef', 0, 'es', 0, 'born', g, 'why', 'rebuilt',\n"     \
    "             'rebuilt', bad)\n"                                             \
    "  redis.call('PEXPIRE', S, ttl)\n"                                          \
    "  return redis.error_reply(string.format('CORRUPT %s; rebuilt at generation %.0f', bad, g))\n" \
    "end\n"                                                                      \
    "if not raw and not bad then\n"                                              \
    "  -- The first generation is Redis's clock: a Redis restarted empty\n"      \
    "  -- never reuses a generation a host may still remember. The fleet\n"  \
    "  -- starts over: a window (and a run's map) left by a deleted state\n"   \
    "  -- is no evidence of this one.\n"                                        \
    "  redis.call('DEL', W)\n"                                                  \
    "  raw = ARGV[2]\n"                                                          \
    "  redis.call('HSET', S, 'cfg', raw, 'st', 0, 'gen', now, 'k', 0,\n"         \
    "             'succ', 0, 'until', 0, 'trips', 0, 'transitions', 0,\n"        \
    "             'ec', 0, 'ef', 0, 'es', 0, 'born', now)\n"                     \
    "  c = mine\n"                                                               \
    "  gen = now\n"                                                              \
    "  E = {0, 0, 0, now}\n"                                                              \
    "end\n"                                                                      \
    "-- c: 1 min_calls, 2 failure_rate, 3 slow_rate, 4 window_us, 5 buckets,\n"  \
    "-- 6 open_us, 7 backoff, 8 open_max_us, 9 jitter, 10 max_probes,\n"         \
    "-- 11 successes, 12 probe_us, 13 failure_threshold (CONSECUTIVE; 0 or\n"    \
    "-- absent: a window policy), 14 min_failing_sources (absent: 1, off)\n"     \
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
    "  if to == 0 then k = 0; redis.call('DEL', W) else redis.call('HDEL', W, 'ra', 'rb') end\n" \
    "  redis.call('DEL', L)\n"                                                   \
    "  redis.call('HSET', S, 'st', st, 'gen', gen, 'k', k, 'succ', 0,\n"         \
    "             'until', untl, 'why', why, 'run', 0)\n"                        \
    "  redis.call('HINCRBY', S, 'transitions', 1)\n"                             \
    "end\n"                                                                      \
    "-- A lease past its deadline is a hung probe: the fleet reopens.\n"         \
    "if not bad and st == 2 then\n"                                              \
    "  local due = redis.call('ZRANGEBYSCORE', L, '-inf', now, 'LIMIT', 0, 1)\n" \
    "  if #due > 0 then go(1, 'probe_timeout', k + 1) end\n"                     \
    "end\n"                                                                      \
    "local function answer(verdict, wait)\n"                                     \
    "  redis.call('PEXPIRE', S, ttl)\n"                                          \
    "  redis.call('PEXPIRE', W, ttl)\n"                                          \
    "  redis.call('PEXPIRE', L, ttl)\n"                                          \
    "  redis.call('PEXPIRE', Q, ttl)\n"                                          \
    "  if wait == nil then\n"                                                    \
    "    wait = 0\n"                                                             \
    "    if st == 1 and untl > now then wait = untl - now end\n"                 \
    "  end\n"                                                                    \
    "  local a = {st, gen, wait, k, succ, verdict,\n"                            \
    "          tonumber(E[1]), tonumber(E[2]), tonumber(E[3]),\n"                \
    "          tonumber(E[4]) or 0}\n"                                           \
    "  -- An order given: its kind, time left (0: none or over), sequence,\n"  \
    "  -- who and why, after the ten numbers.\n"                               \
    "  if oseq > 0 or sseq > 0 or cgen > 0 then\n"                             \
    "    local left = 0\n"                                                       \
    "    if fu > now then left = fu - now end\n"                                 \
    "    local t = redis.call('HMGET', S, 'ow', 'oy')\n"                         \
    "    local o = ord\n"                                                        \
    "    if (ord == 1 or ord == 2) and fu > 0 and left == 0 then o = 0 end\n"    \
    "    a[11], a[12], a[13], a[14], a[15] = o, left, oseq, t[1] or '', t[2] or ''\n" \
    "  end\n"                                                                    \
    "  -- A shadow or limits change ever made: the shadow mode, its sequence,\n" \
    "  -- the limits' generation and (when it is not 0) the limits.\n"          \
    "  if sseq > 0 or cgen > 0 then\n"                                          \
    "    local text = ''\n"                                                     \
    "    if cgen > 0 then text = redis.call('HGET', S, 'cfg') or '' end\n"      \
    "    a[16], a[17], a[18], a[19] = shadow, sseq, cgen, text\n"               \
    "  end\n"                                                                    \
    "  return a\n"                                                               \
    "end\n"                                                                      \
    "-- A forced state in force: open or closed, not expired.\n"               \
    "local oactive = (ord == 1 or ord == 2) and (fu == 0 or now < fu)\n"      \
    "local ofo = oactive and ord == 1\n"

/* flush: ARGV 3 the host's last known generation (0: none), 4 calls,
 * 5 failures, 6 slow (deltas since its last flush), 7 the host's current
 * run of failures (its consecutive_failures), 8 the host's id and 9 the
 * call's sequence (breaker__fleet_next_seq(); both absent: a call that is
 * not deduplicated, the attach's, which has no deltas), 10 and 11 the
 * host's failing-source map (low and high 32 bits; absent: none). Deltas count only
 * in a CLOSED fleet, and only from a host that knew this generation (or
 * none): calls made before the fleet last closed belong to an ended period. The deltas
 * land in the bucket of Redis's clock now. With a CONSECUTIVE policy the
 * fleet keeps a run instead of a window: a flush of failures only extends
 * it, a flush with a success sets it to the host's run after its last
 * success (the order of calls across hosts within one interval is unknown:
 * an approximation, docs/fleet.md). A host's deltas count once: a call
 * whose sequence is not newer than the last one applied for its host (the
 * retry of a round after a cut connection, which Redis may have run) is
 * answered as usual but not counted; the sequence is stored (Q) only when
 * deltas are applied, and a host silent longer than the TTL is forgotten.
 * verdict 1: this flush tripped the fleet. */
const char breaker__redis_lua_flush[] = PRELUDE
    "if bad then return corrupt(true) end\n"
    "local hg, dc = tonumber(ARGV[3]), tonumber(ARGV[4])\n"
    "local df, ds = tonumber(ARGV[5]), tonumber(ARGV[6])\n"
    "local trail, thr = tonumber(ARGV[7] or '0'), c[13] or 0\n"
    "if df > dc or ds > dc then return redis.error_reply('ERR breaker: deltas with more failures or slow calls than calls') end\n"
    "local host, seq = ARGV[8], nil\n"
    "if host then\n"
    "  local sq = ARGV[9] or ''\n"
    "  if #host == 16 and string.match(host, '^%x+$') and string.match(sq, '^%d+$') and #sq <= 16 then seq = tonumber(sq) end\n"
    "  if seq == nil or seq > BIG then return redis.error_reply('ERR breaker: a host id of 16 hex digits and a sequence 0..' .. BIG_TEXT .. ' expected') end\n"
    "end\n"
    "-- ARGV 12: a server-directed wait (a host's 429): the fleet opens until\n"
    "-- then, at most open_max, once (not shortening a longer wait), unless forced.\n"
    "local dir = tonumber(ARGV[12] or '0')\n"
    "if not dir or dir < 0 or dir > DUR then return redis.error_reply('ERR breaker: a server-directed wait 0..' .. DUR .. ' us expected') end\n"
    "if dir > 0 and not oactive then\n"
    "  if dir > c[8] then dir = c[8] end\n"
    "  if st ~= 1 or untl < now + dir then\n"
    "    go(1, 'server_directed', k); untl = now + math.floor(dir)\n"
    "    redis.call('HSET', S, 'until', untl)\n"
    "  end\n"
    "end\n"
    "-- A forced state (an operator's order in force) counts nothing, trips nothing.\n"
    "if oactive or st ~= 0 or (hg ~= 0 and hg ~= gen) or dc <= 0 then return answer(0) end\n"
    "-- The hosts' sequences, checked: a field is a host id, a value 'seq time'.\n"
    "-- A host silent longer than the TTL is forgotten; a call whose sequence\n"
    "-- is not newer than its host's last was applied already (a retry).\n"
    "-- Never the whole hash (one field per live host: a fleet of any size):\n"
    "-- the host's own field; and when it has none (new to this name, or\n"
    "-- silent longer than the TTL) or its last was written in an earlier\n"
    "-- quarter of the TTL, the next 16 fields of an HSCAN (all of a small\n"
    "-- hash at once) whose cursor S keeps (qc): each host arriving, and each\n"
    "-- host once per quarter of the TTL, prunes a few that left.\n"
    "if host then\n"
    "  local last, last_t = nil, nil\n"
    "  local function entry(id, val)\n"
    "    local qs, qt = string.match(val, '^(%d+) (%d+)$')\n"
    "    if not (#id == 16 and string.match(id, '^%x+$')) then flag(Q, seen(id), val, 'a field of 16 hex digits')\n"
    "    elseif not qs or #qs > 16 or #qt > 16 or tonumber(qs) > BIG or tonumber(qt) > BIG then\n"
    "      flag(Q, id, val, 'seq time, two numbers 0..' .. BIG_TEXT)\n"
    "    elseif tonumber(qt) + ttl * 1000 <= now then redis.call('HDEL', Q, id)\n"
    "    elseif id == host then last = tonumber(qs); last_t = tonumber(qt) end\n"
    "  end\n"
    "  local own = redis.call('HGET', Q, host)\n"
    "  if own then entry(host, own) end\n"
    "  local quarter = ttl * 250\n"
    "  if (not last or math.floor(last_t / quarter) ~= math.floor(now / quarter)) and not bad then\n"
    "    local qc = h[14] or '0'\n"
    "    local sc = redis.call('HSCAN', Q, qc, 'COUNT', 16)\n"
    "    for i = 1, #sc[2], 2 do\n"
    "      if sc[2][i] ~= host then entry(sc[2][i], sc[2][i + 1]) end\n"
    "    end\n"
    "    if not bad and sc[1] ~= qc then redis.call('HSET', S, 'qc', sc[1]) end\n"
    "  end\n"
    "  if bad then return corrupt(true) end\n"
    "  if last and seq <= last then return answer(0) end\n"
    "end\n"
    "local function applied()\n"
    "  if host then redis.call('HSET', Q, host, string.format('%.0f %.0f', seq, now)) end\n"
    "end\n"
    "-- The host's failing-source map (ARGV 10, 11: its low and high 32 bits;\n"
    "-- absent: none): OR-ed into the window's bucket (a<bucket>, b<bucket>),\n"
    "-- or into the run's (ra, rb in W) with a CONSECUTIVE policy.\n"
    "local U32 = 4294967295\n"
    "local function u32(x) if x < 0 then x = x + 4294967296 end return x end\n"
    "local ma, mb = 0, 0\n"
    "if ARGV[10] then\n"
    "  local lo, hi = ARGV[10], ARGV[11] or ''\n"
    "  if string.match(lo, '^%d+$') and #lo <= 10 then ma = tonumber(lo) else ma = nil end\n"
    "  if string.match(hi, '^%d+$') and #hi <= 10 then mb = tonumber(hi) else mb = nil end\n"
    "  if ma == nil or mb == nil or ma > U32 or mb > U32 then return redis.error_reply('ERR breaker: a source map of two numbers 0..4294967295 expected') end\n"
    "end\n"
    "-- The failing-source rule, as the core's (window.c): N distinct bits for\n"
    "-- min_failing_sources N (0: 3, and only for failures that name a\n"
    "-- source; 1: off).\n"
    "local function bits(x) local n = 0; while x ~= 0 do x = u32(bit.band(x, x - 1)); n = n + 1 end; return n end\n"
    "local function diverse(a, b)\n"
    "  local nb, need = bits(a) + bits(b), c[14]\n"
    "  if need == 0 then need = 3 elseif need == 1 then need = 0 end\n"
    "  return nb >= need or (c[14] == 0 and nb == 0)\n"
    "end\n"
    "if thr > 0 then\n"
    "  local run = tonumber(redis.call('HGET', S, 'run') or '0')\n"
    "  local rm = redis.call('HMGET', W, 'ra', 'rb')\n"
    "  local ra, rb = 0, 0\n"
    "  for i = 1, 2 do\n"
    "    local v = rm[i]\n"
    "    if v then\n"
    "      if not (string.match(v, '^%d+$') and #v <= 10 and tonumber(v) <= U32) then flag(W, i == 1 and 'ra' or 'rb', v, '0..4294967295')\n"
    "      elseif i == 1 then ra = tonumber(v) else rb = tonumber(v) end\n"
    "    end\n"
    "  end\n"
    "  if bad then return corrupt(true) end\n"
    "  -- The run's map: the host's, OR-ed while the run only grows; the\n"
    "  -- host's alone when a success set the run to the host's.\n"
    "  if df >= dc then run = run + df; ra = u32(bit.bor(ra, ma)); rb = u32(bit.bor(rb, mb))\n"
    "  else run = trail; ra = ma; rb = mb end\n"
    "  applied()\n"
    "  redis.call('HSET', W, 'ra', ra, 'rb', rb)\n"
    "  if run >= thr and diverse(ra, rb) then\n"
    "    redis.call('HSET', S, 'ec', run, 'ef', run, 'es', 0); E[1], E[2], E[3] = run, run, 0\n"
    "    redis.call('HINCRBY', S, 'trips', 1)\n"
    "    go(1, 'consecutive_failures', 0)\n"
    "    return answer(1)\n"
    "  end\n"
    "  redis.call('HSET', S, 'run', run)\n"
    "  return answer(0)\n"
    "end\n"
    "local span = math.floor(c[4] / c[5])\n"
    "local bkt = math.floor(now / span)\n"
    "-- The window's map is the OR of its buckets', as the local rule reads one.\n"
    "local ba, bb = 0, 0\n"
    "-- The window, checked before anything is added to it: a field is\n"
    "-- c<bucket>, f<bucket> or s<bucket>, a count of digits, or a<bucket>,\n"
    "-- b<bucket>, half a source map, in a bucket no later than one window\n"
    "-- ahead (a clock that stepped back a little).\n"
    "local all = redis.call('HGETALL', W)\n"
    "local n, f, s = dc, df, ds\n"
    "local wa, wb = ma, mb\n"
    "for i = 1, #all, 2 do\n"
    "  local name, val = all[i], all[i + 1]\n"
    "  local kind, digits = string.match(name, '^([cfsab])(%d+)$')\n"
    "  local b, v = nil, nil\n"
    "  if kind and #digits <= 15 then b = tonumber(digits) end\n"
    "  if string.match(val, '^%d+$') and #val <= 16 then v = tonumber(val) end\n"
    "  if b == nil then flag(W, seen(name), val, 'a field c<bucket>, f<bucket>, s<bucket>, a<bucket> or b<bucket>')\n"
    "  elseif v == nil or v > BIG then flag(W, name, val, string.format('0..%.0f', BIG))\n"
    "  elseif (kind == 'a' or kind == 'b') and v > U32 then flag(W, name, val, '0..4294967295')\n"
    "  elseif b > bkt + c[5] then flag(W, name, val, string.format('a bucket up to %.0f', bkt + c[5]))\n"
    "  elseif b <= bkt - c[5] then redis.call('HDEL', W, name)\n"
    "  elseif kind == 'c' then n = n + v elseif kind == 'f' then f = f + v elseif kind == 's' then s = s + v\n"
    "  elseif kind == 'a' then wa = u32(bit.bor(wa, v)); if b == bkt then ba = v end\n"
    "  else wb = u32(bit.bor(wb, v)); if b == bkt then bb = v end end\n"
    "end\n"
    "if not bad and (f > n or s > n) then\n"
    "  flag(W, 'failures/slow', f .. '/' .. s, 'at most the calls (' .. n .. ')')\n"
    "end\n"
    "if bad then return corrupt(true) end\n"
    "applied()\n"
    "redis.call('HINCRBY', W, 'c' .. bkt, dc)\n"
    "if df > 0 then redis.call('HINCRBY', W, 'f' .. bkt, df) end\n"
    "if ds > 0 then redis.call('HINCRBY', W, 's' .. bkt, ds) end\n"
    "if ma ~= 0 then redis.call('HSET', W, 'a' .. bkt, u32(bit.bor(ba, ma))) end\n"
    "if mb ~= 0 then redis.call('HSET', W, 'b' .. bkt, u32(bit.bor(bb, mb))) end\n"
    "if n >= c[1] then\n"
    "  local why = nil\n"
    "  if f / n >= c[2] and diverse(wa, wb) then why = 'failure_rate'\n"
    "  elseif c[3] > 0 and s / n >= c[3] then why = 'slow_call_rate' end\n"
    "  if why then\n"
    "    redis.call('HSET', S, 'ec', n, 'ef', f, 'es', s); E[1], E[2], E[3] = n, f, s\n"
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
    PRELUDE "if bad then return corrupt(false) end\n"
            "if ofo then return answer(0) end\n"
            "if st == 0 then return answer(1) end\n"
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
    "if bad then return corrupt(true) end\n"
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
/* order: an operator's order for the whole fleet (docs/fleet.md,
 * "Fleet-wide orders"). ARGV 3 the kind (1 open, 2 closed, 3 reset), 4 its
 * time in µs (0: until another order; open: a timed open, reason
 * operator), 5 who, 6 why (at most BREAKER__FLEET_WHO_MAX and _WHY_MAX
 * bytes). Open: the fleet OPEN (a new generation; its wait at most the
 * limits' longest, the lease refused until the order's end); closed: the
 * fleet CLOSED with an empty window, nothing counted until its end; reset:
 * CLOSED with an empty window, k 0. Each is one transition and a new
 * order sequence (oseq), which every host applies once. verdict 4. */
const char breaker__redis_lua_order[] = PRELUDE
    "if bad then return corrupt(true) end\n"
    "local kind, dur = tonumber(ARGV[3]), tonumber(ARGV[4])\n"
    "local who, why = ARGV[5] or '', ARGV[6] or ''\n"
    "if not (kind == 1 or kind == 2 or kind == 3) then return redis.error_reply('ERR breaker: order kind 1..3 expected') end\n"
    "if not dur or dur < 0 or dur > DUR or dur ~= math.floor(dur) then return redis.error_reply('ERR breaker: order time 0..' .. DUR .. ' us expected') end\n"
    "if #who > " WHO_MAX " or #why > " WHY_MAX " then return redis.error_reply('ERR breaker: who at most " WHO_MAX " bytes, why at most " WHY_MAX "') end\n"
    "ord, fu, oseq = kind, 0, oseq + 1\n"
    "if dur > 0 and kind ~= 3 then fu = now + dur end\n"
    "if kind == 1 then\n"
    "  go(1, 'operator', k)\n"
    "  -- Never longer than the limits' longest wait (the prelude's bound):\n"
    "  -- the order's end (fu) holds the leases back beyond it.\n"
    "  if fu > 0 and fu < untl then untl = fu; redis.call('HSET', S, 'until', untl) end\n"
    "elseif kind == 2 then go(0, 'forced_closed', 0)\n"
    "else go(0, 'reset', 0) end\n"
    "redis.call('HSET', S, 'ok', ord, 'fu', fu, 'oseq', oseq, 'ow', who, 'oy', why)\n"
    "return answer(4)\n";
/* shadow: shadow mode for the whole fleet (docs/fleet.md, "Fleet-wide
 * shadow mode and limits"). ARGV 3 on (1) or off (0), 4 who, 5 why. One
 * write, no transition: sh, sseq (+1), sw, sy; every host applies it to its
 * local breaker once per sequence. The fleet's own state machine runs on
 * as before (trips, leases, closes). verdict 4. */
const char breaker__redis_lua_shadow[] = PRELUDE
    "if bad then return corrupt(true) end\n"
    "local on, who, why = tonumber(ARGV[3]), ARGV[4] or '', ARGV[5] or ''\n"
    "if not (on == 0 or on == 1) then return redis.error_reply('ERR breaker: shadow 0 or 1 expected') end\n"
    "if #who > " WHO_MAX " or #why > " WHY_MAX " then return redis.error_reply('ERR breaker: who at most " WHO_MAX " bytes, why at most " WHY_MAX "') end\n"
    "shadow, sseq = on, sseq + 1\n"
    "redis.call('HSET', S, 'sh', shadow, 'sseq', sseq, 'sw', who, 'sy', why)\n"
    "return answer(4)\n";

/* reconfig: new stored limits for the whole fleet (docs/fleet.md,
 * "Fleet-wide shadow mode and limits"). ARGV 3 the new limits text, 4 the
 * limits' generation (cg) the caller read, 5 who, 6 why. Refused: a moved
 * generation (CONFLICT, nothing written); limits out of the configuration's
 * ranges (ERR, naming the field); what cannot change live (REFUSED, naming
 * it: the window, its buckets, the trip policy, half_open_max_probes); the
 * limits in force already: nothing written. Else one write: cfg, cg (+1),
 * cw, cy; a running open wait, a half-open's
 * successes and its leases' deadlines are brought within the new limits
 * (the prelude checks them against the stored limits); a half-open whose
 * successes meet the new half_open_successes with no lease out closes (its
 * one transition: nothing else would close it). Every host reconfigures its
 * local breaker once per generation. verdict 4. */
const char breaker__redis_lua_reconfig[] = PRELUDE
    "if bad then return corrupt(true) end\n"
    "local want, who, why = ARGV[4] or '', ARGV[5] or '', ARGV[6] or ''\n"
    "if not (string.match(want, '^%d+$') and #want <= 16) then return redis.error_reply('ERR breaker: a configuration generation 0..' .. BIG_TEXT .. ' expected') end\n"
    "want = tonumber(want)\n"
    "if #who > " WHO_MAX " or #why > " WHY_MAX " then return redis.error_reply('ERR breaker: who at most " WHO_MAX " bytes, why at most " WHY_MAX "') end\n"
    "local nw = limits('the new limits', ARGV[3] or '')\n"
    "if bad then return redis.error_reply('ERR breaker: ' .. bad) end\n"
    "if want ~= cgen then\n"
    "  return redis.error_reply(string.format('CONFLICT the limits are at generation %.0f, not %.0f: changed since they were read', cgen, want))\n"
    "end\n"
    "-- The limits in force again: no change (no write; generation, who and why\n"
    "-- stay), so no host reconfigures for nothing.\n"
    "local same = true\n"
    "for i = 1, 14 do if nw[i] ~= c[i] then same = false end end\n"
    "if same then return answer(4) end\n"
    "local function fixed(what, was, now, because)\n"
    "  return redis.error_reply('REFUSED ' .. what .. ': ' .. was .. ' -> ' .. now .. ' cannot change live (' .. because .. '); delete the name\\'s state to start the fleet over')\n"
    "end\n"
    "local function us(v) return string.format('%.0fus', v) end\n"
    "local function policy(x) if (x or 0) > 0 then return 'consecutive' end return 'a window' end\n"
    "if policy(nw[13]) ~= policy(c[13]) then return fixed('trip', policy(c[13]), policy(nw[13]), 'it chooses what the fleet keeps, a window or a run') end\n"
    "if nw[4] ~= c[4] then return fixed('window', us(c[4]), us(nw[4]), 'it lays out the fleet window\\'s buckets') end\n"
    "if nw[5] ~= c[5] then return fixed('window_buckets', c[5], nw[5], 'it lays out the fleet window\\'s buckets') end\n"
    "if nw[10] ~= c[10] then return fixed('half_open_max_probes', c[10], nw[10], 'it sizes every host\\'s probe slots') end\n"
    "-- What the prelude checks against the limits, brought within the new ones.\n"
    "local most = math.floor(nw[8] + nw[8] * nw[9])\n"
    "if st == 1 and untl > now + most then untl = now + most; redis.call('HSET', S, 'until', untl) end\n"
    "if succ > nw[10] + nw[11] then succ = nw[10] + nw[11]; redis.call('HSET', S, 'succ', succ) end\n"
    "local late = redis.call('ZRANGEBYSCORE', L, '(' .. string.format('%.0f', now + nw[12]), '+inf')\n"
    "for _, tok in ipairs(late) do redis.call('ZADD', L, 'XX', now + nw[12], tok) end\n"
    "-- Successes in that meet the new count with no lease out: no release is\n"
    "-- left to close the fleet, and acquire refuses every lease (the successes\n"
    "-- are in), so it closes here, as that release would have.\n"
    "if st == 2 and succ >= nw[11] and redis.call('ZCARD', L) == 0 then go(0, 'probes_succeeded', 0) end\n"
    "cgen = cgen + 1\n"
    "redis.call('HSET', S, 'cfg', ARGV[3], 'cg', cgen, 'cw', who, 'cy', why)\n"
    "return answer(4)\n";
/* clang-format on */
