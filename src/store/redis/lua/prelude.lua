-- SPDX-License-Identifier: MIT
-- prelude.lua - the part every fleet script begins with: the keys, Redis's
-- clock, the checks of everything read from Redis, the state read, the one
-- transition and the answer. Each script is the constants (scripts.h, from
-- the configuration's ranges), this file, then its own file (flush.lua,
-- acquire.lua, ...), embedded at build time as one text: Redis runs it
-- atomically, so one fleet generation has exactly one transition however
-- many hosts race. docs/fleet.md explains them.
--
-- KEYS (all in one hash slot: the {name} hash tag):
--   1 breaker:v1:{name}:s  hash: state and stored limits
--   2 breaker:v1:{name}:w  hash: the fleet window, fields c<bucket>,
--                          f<bucket>, s<bucket> (calls, failures, slow)
--   3 breaker:v1:{name}:l  zset: probe leases, member token, score deadline
--   4 breaker:v1:{name}:q  hash: the hosts' flush sequences, field host id
--                          (16 hex digits), value "seq time" (the sequence
--                          last applied, Redis's clock then)
-- ARGV common to all: 1 key TTL in ms, 2 the caller's limits as text (used
-- only by the first caller: the stored limits win).
--
-- Times are Redis's clock (TIME) in microseconds. Numbers stay below 2^53,
-- so Lua's doubles hold them exactly; none is concatenated into a string but
-- the bucket number (10 digits), since Lua 5.1 prints 14 significant digits.
--
-- Every script answers {state, gen, wait_us, k, successes, verdict, calls,
-- failures, slow, born}: state 0 closed, 1 open, 2 half-open; wait_us the time left
-- in OPEN, or (a refused lease in HALF_OPEN) until the earliest lease's
-- deadline; calls/failures/slow the evidence of the last trip; born the
-- generation the state was created with (0: a state from before 'born'),
-- so that a host can tell a fleet close from a state created from scratch.
local S, W, L, Q = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local ttl = tonumber(ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
-- Everything read from Redis is checked before it is used: the first
-- violation is named (key, field, value, what was expected) in `bad`.
local bad = nil
local function seen(v)
  v = string.gsub(string.sub(tostring(v), 1, 40), '[^%w%.%-%+ ()]', '?')
  return v
end
local function flag(key, f, v, want)
  if not bad then
    bad = key .. ': field ' .. f .. ' = ' .. seen(v) .. ', expected ' .. want
  end
end
-- A whole number of plain digits in lo..hi (nil: absent is allowed).
local function int(key, f, v, lo, hi, opt)
  if v == nil or v == false then
    if not opt then flag(key, f, '(missing)', string.format('%.0f..%.0f', lo, hi)) end
    return lo
  end
  local n = nil
  if string.match(v, '^%d+$') and #v <= 16 then n = tonumber(v) end
  if n == nil or n < lo or n > hi then
    flag(key, f, v, string.format('%.0f..%.0f', lo, hi)); return lo
  end
  return n
end
-- A finite plain number in lo..hi.
local function real(key, f, v, lo, hi, lo_open)
  local n = nil
  if string.match(v, '^%d[%d%.eE%+%-]*$') then n = tonumber(v) end
  if n == nil or n ~= n or n < lo or n > hi or (lo_open and n == lo) then
    local range = '[' .. lo .. ', ' .. hi .. ']'
    if lo_open then range = '(' .. lo .. ', ' .. hi .. ']' end
    flag(key, f, v, range); return hi
  end
  return n
end
local function typed(key, want)
  local ty = redis.call('TYPE', key)['ok']
  if ty ~= 'none' and ty ~= want then flag(key, 'type', ty, want) end
  return ty
end
-- The limits text (c[1] .. c[13]) against the configuration's ranges
-- (breaker_config_validate(); times in microseconds).
-- The usual text, 14 plain numbers, read by one match: the field by
-- field reading below runs only for any other text (and names what is
-- wrong with it).
local R = '(%d[%d%.eE%+%-]*)'
local LIMITS14 = '^(%d+) ' .. R .. ' ' .. R .. ' (%d+) (%d+) (%d+) ' .. R ..
  ' (%d+) ' .. R .. ' (%d+) (%d+) (%d+) (%d+) (%d+)$'
local INTS = {1, 4, 5, 6, 8, 10, 11, 12, 13, 14}
local function limits_fast(raw)
  local a = {string.match(raw, LIMITS14)}
  if #a ~= 14 then return nil end
  local c = {}
  for i = 1, 14 do c[i] = tonumber(a[i]); if c[i] == nil then return nil end end
  for _, i in ipairs(INTS) do if #a[i] > 16 then return nil end end
  if c[1] >= 1 and c[1] <= MAX_MIN_CALLS and c[2] > 0 and c[2] <= 1 and
     c[3] >= 0 and c[3] <= 1 and c[4] >= 1 and c[4] <= DUR and c[5] >= 1 and
     c[5] <= MAX_BUCKETS and c[4] / c[5] >= 1000 and c[6] >= 1 and c[6] <= DUR and
     c[7] >= 1 and c[7] <= MAX_BACKOFF and c[8] >= c[6] and c[8] <= DUR and
     c[9] >= 0 and c[9] <= 1 and c[10] >= 1 and c[10] <= MAX_PROBES and
     c[11] >= 1 and c[11] <= MAX_PROBES and c[12] >= 1 and c[12] <= DUR and
     c[13] >= 0 and c[13] <= MAX_THRESHOLD and c[14] >= 0 and c[14] <= MAX_SOURCES then
    return c
  end
  return nil
end
local function limits(key, raw)
  local fast = limits_fast(raw)
  if fast then return fast end
  local v = {}
  for x in string.gmatch(raw, '%S+') do v[#v + 1] = x end
  if #v < 12 then flag(key, 'cfg', raw, '12 or 13 limits'); return nil end
  local c = {}
  local f = 'cfg.'
  c[1] = int(key, f .. 'min_calls', v[1], 1, MAX_MIN_CALLS)
  c[2] = real(key, f .. 'failure_rate', v[2], 0, 1, true)
  c[3] = real(key, f .. 'slow_call_rate', v[3], 0, 1)
  c[4] = int(key, f .. 'window_us', v[4], 1, DUR)
  c[5] = int(key, f .. 'window_buckets', v[5], 1, MAX_BUCKETS)
  if not bad and c[4] / c[5] < 1000 then
    flag(key, f .. 'window_us', v[4], 'at least 1000 us per bucket')
  end
  c[6] = int(key, f .. 'open_us', v[6], 1, DUR)
  c[7] = real(key, f .. 'open_backoff', v[7], 1, MAX_BACKOFF)
  c[8] = int(key, f .. 'open_max_us', v[8], c[6], DUR)
  c[9] = real(key, f .. 'open_jitter', v[9], 0, 1)
  c[10] = int(key, f .. 'half_open_max_probes', v[10], 1, MAX_PROBES)
  c[11] = int(key, f .. 'half_open_successes', v[11], 1, MAX_PROBES)
  c[12] = int(key, f .. 'probe_timeout_us', v[12], 1, DUR)
  c[13] = int(key, f .. 'failure_threshold', v[13], 0, MAX_THRESHOLD, true)
  c[14] = 1
  if v[14] then c[14] = int(key, f .. 'min_failing_sources', v[14], 0, MAX_SOURCES) end
  return c
end
-- The caller's limits: a client that sends others is broken.
local mine = limits('ARGV[2]', ARGV[2])
if bad then return redis.error_reply('ERR breaker: ' .. bad) end
local has_s = typed(S, 'hash') == 'hash'
typed(W, 'hash'); typed(L, 'zset'); typed(Q, 'hash')
local raw, c = nil, nil
local h = {}
-- The last trip's evidence and born, as the answer sends them.
local E = {0, 0, 0, 0}
if not bad and has_s then
  h = redis.call('HMGET', S, 'cfg', 'st', 'gen', 'k', 'succ', 'until',
                 'born', 'trips', 'transitions', 'ec', 'ef', 'es', 'run', 'qc',
                 'ok', 'fu', 'oseq', 'ow', 'oy', 'sh', 'sseq', 'cg', 'sw', 'sy',
                 'cw', 'cy')
  raw = h[1] or '(missing)'
  -- The same text as the caller's (the usual case): checked once.
  if raw == ARGV[2] then c = mine else c = limits(S, raw) end
  E = {h[10], h[11], h[12], h[7]}
end
local st, gen, k, succ, untl = 0, 0, 0, 0, 0
-- The fleet's operator order (docs/fleet.md, "Fleet-wide orders"): ord
-- 0 none, 1 open, 2 closed, 3 reset; fu its expiry (0: none), oseq its
-- sequence, ow and oy who gave it and why.
local ord, fu, oseq = 0, 0, 0
-- The fleet's controls ("Fleet-wide shadow mode and limits"): sh 1 while
-- shadowed, sseq its sequence; cg the stored limits' generation (0: the
-- first attacher's, never changed); sw, sy, cw, cy who and why.
local shadow, sseq, cgen = 0, 0, 0
local gen_seen = 0
if raw and not bad then
  st = int(S, 'st', h[2], 0, 2)
  gen = int(S, 'gen', h[3], 1, BIG)
  if not bad then gen_seen = gen end
  k = int(S, 'k', h[4], 0, 4294967295)
  succ = int(S, 'succ', h[5], 0, c[10] + c[11])
  local most = 0
  if st == 1 then most = math.floor(c[8] + c[8] * c[9]) end
  untl = int(S, 'until', h[6], 0, BIG)
  if not bad and st == 1 and untl > now + most then
    flag(S, 'until', h[6], string.format('at most %.0f (now + the longest wait)', now + most))
  end
  int(S, 'born', h[7], 0, gen, true)
  int(S, 'trips', h[8], 0, BIG)
  int(S, 'transitions', h[9], 0, BIG)
  local ec = int(S, 'ec', h[10], 0, BIG)
  int(S, 'ef', h[11], 0, ec)
  int(S, 'es', h[12], 0, ec)
  int(S, 'run', h[13], 0, BIG, true)
  int(S, 'qc', h[14], 0, BIG, true)
  ord = int(S, 'ok', h[15], 0, 3, true)
  fu = int(S, 'fu', h[16], 0, BIG, true)
  oseq = int(S, 'oseq', h[17], 0, BIG, true)
  if not bad and h[18] and #h[18] > WHO_MAX then flag(S, 'ow', h[18], 'at most ' .. WHO_MAX .. ' bytes') end
  if not bad and h[19] and #h[19] > WHY_MAX then flag(S, 'oy', h[19], 'at most ' .. WHY_MAX .. ' bytes') end
  shadow = int(S, 'sh', h[20], 0, 1, true)
  sseq = int(S, 'sseq', h[21], 0, BIG, true)
  cgen = int(S, 'cg', h[22], 0, BIG, true)
  for i, f in ipairs({'sw', 'sy', 'cw', 'cy'}) do
    local most = WHY_MAX
    if i % 2 == 1 then most = WHO_MAX end
    if not bad and h[22 + i] and #h[22 + i] > most then flag(S, f, h[22 + i], 'at most ' .. most .. ' bytes') end
  end
  if not bad and h[18] and h[18]:find('%c') then flag(S, 'ow', h[18], 'printable text') end
  if not bad and h[19] and h[19]:find('%c') then flag(S, 'oy', h[19], 'printable text') end
  if not bad and st == 2 then
    -- A lease's deadline is at most one probe timeout away.
    local n = redis.call('ZCARD', L)
    if n > c[10] then flag(L, 'leases', n, '0..' .. c[10]) end
    local last = redis.call('ZRANGE', L, -1, -1, 'WITHSCORES')
    local first = redis.call('ZRANGE', L, 0, 0, 'WITHSCORES')
    if not bad and #last > 0 and not (tonumber(last[2]) <= now + c[12]) then
      flag(L, 'score of ' .. seen(last[1]), last[2], string.format('at most %.0f', now + c[12]))
    end
    if not bad and #first > 0 and not (tonumber(first[2]) >= 0) then
      flag(L, 'score of ' .. seen(first[1]), first[2], 'a deadline >= 0')
    end
  end
end
-- A violation: the keys are rebuilt (a new, later generation; the
-- caller's limits), never followed, and the error names it. Only the
-- flusher's scripts rebuild (its round reports the error: degraded,
-- on_degraded); acquire_probe answers the error and writes nothing.
local function corrupt(fix)
  if not fix then return redis.error_reply('CORRUPT ' .. bad) end
  local g = now
  if gen_seen + 1 > g then g = gen_seen + 1 end
  redis.call('DEL', S, W, L, Q)
  redis.call('HSET', S, 'cfg', ARGV[2], 'st', 0, 'gen', g, 'k', 0,
             'succ', 0, 'until', 0, 'trips', 0, 'transitions', 0,
             'ec', 0, 'ef', 0, 'es', 0, 'born', g, 'why', 'rebuilt',
             'rebuilt', bad)
  redis.call('PEXPIRE', S, ttl)
  return redis.error_reply(string.format('CORRUPT %s; rebuilt at generation %.0f', bad, g))
end
if not raw and not bad then
  -- The first generation is Redis's clock: a Redis restarted empty
  -- never reuses a generation a host may still remember. The fleet
  -- starts over: a window (and a run's map) left by a deleted state
  -- is no evidence of this one.
  redis.call('DEL', W)
  raw = ARGV[2]
  redis.call('HSET', S, 'cfg', raw, 'st', 0, 'gen', now, 'k', 0,
             'succ', 0, 'until', 0, 'trips', 0, 'transitions', 0,
             'ec', 0, 'ef', 0, 'es', 0, 'born', now)
  c = mine
  gen = now
  E = {0, 0, 0, now}
end
-- c: 1 min_calls, 2 failure_rate, 3 slow_rate, 4 window_us, 5 buckets,
-- 6 open_us, 7 backoff, 8 open_max_us, 9 jitter, 10 max_probes,
-- 11 successes, 12 probe_us, 13 failure_threshold (CONSECUTIVE; 0 or
-- absent: a window policy), 14 min_failing_sources (absent: 1, off)
-- The wait: min(open * backoff^k, max), plus jitter that is a pure
-- function of the generation, as in the core.
local function wait_for(kk, g)
  local w = c[6] * (c[7] ^ kk)
  if w > c[8] then w = c[8] end
  local u = ((g % 65536) * 40503 % 65536) / 65536
  return math.floor(w + w * c[9] * u)
end
-- The one transition: a new generation and the state's fields.
local function go(to, why, kk)
  gen = gen + 1; st = to; succ = 0; untl = 0
  if to == 1 then k = kk; untl = now + wait_for(k, gen) end
  if to == 0 then k = 0; redis.call('DEL', W) else redis.call('HDEL', W, 'ra', 'rb') end
  redis.call('DEL', L)
  redis.call('HSET', S, 'st', st, 'gen', gen, 'k', k, 'succ', 0,
             'until', untl, 'why', why, 'run', 0)
  redis.call('HINCRBY', S, 'transitions', 1)
end
-- A lease past its deadline is a hung probe: the fleet reopens.
if not bad and st == 2 then
  local due = redis.call('ZRANGEBYSCORE', L, '-inf', now, 'LIMIT', 0, 1)
  if #due > 0 then go(1, 'probe_timeout', k + 1) end
end
local function answer(verdict, wait)
  redis.call('PEXPIRE', S, ttl)
  redis.call('PEXPIRE', W, ttl)
  redis.call('PEXPIRE', L, ttl)
  redis.call('PEXPIRE', Q, ttl)
  if wait == nil then
    wait = 0
    if st == 1 and untl > now then wait = untl - now end
  end
  local a = {st, gen, wait, k, succ, verdict,
          tonumber(E[1]), tonumber(E[2]), tonumber(E[3]),
          tonumber(E[4]) or 0}
  -- An order given: its kind, time left (0: none or over), sequence,
  -- who and why, after the ten numbers.
  if oseq > 0 or sseq > 0 or cgen > 0 then
    local left = 0
    if fu > now then left = fu - now end
    local t = redis.call('HMGET', S, 'ow', 'oy')
    local o = ord
    if (ord == 1 or ord == 2) and fu > 0 and left == 0 then o = 0 end
    a[11], a[12], a[13], a[14], a[15] = o, left, oseq, t[1] or '', t[2] or ''
  end
  -- A shadow or limits change ever made: the shadow mode, its sequence,
  -- the limits' generation and (when it is not 0) the limits.
  if sseq > 0 or cgen > 0 then
    local text = ''
    if cgen > 0 then text = redis.call('HGET', S, 'cfg') or '' end
    a[16], a[17], a[18], a[19] = shadow, sseq, cgen, text
  end
  return a
end
-- A forced state in force: open or closed, not expired.
local oactive = (ord == 1 or ord == 2) and (fu == 0 or now < fu)
local ofo = oactive and ord == 1
