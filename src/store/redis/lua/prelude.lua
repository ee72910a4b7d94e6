-- SPDX-License-Identifier: MIT
-- prelude.lua - the part every fleet script begins with: the keys, Redis's
-- clock, the checks of everything read from Redis, the state read, the one
-- transition and the answer. Each script is the constants (scripts.h, from
-- the configuration's ranges), this file, then its own file (flush.lua,
-- acquire.lua, release.lua, control.lua), embedded at build time as one
-- text: Redis runs it atomically, so one fleet generation has exactly one
-- transition however many hosts race. docs/fleet.md explains them.
--
-- KEYS (all in one hash slot: the {name} hash tag):
--   1 breaker:v2:{name}:s  hash: the fleet's state, its limits and its
--                          control record (below)
--   2 breaker:v2:{name}:w  hash: the fleet window, fields c<bucket>,
--                          f<bucket>, s<bucket> (calls, failures, slow),
--                          a<bucket>, b<bucket> (the failing-source map)
--   3 breaker:v2:{name}:l  zset: probe leases, member token, score deadline
--   4 breaker:v2:{name}:q  hash: the hosts' flush sequences, field host id
--                          (16 hex digits), value "seq time" (the sequence
--                          last applied, Redis's clock then)
-- ARGV common to all: 1 key TTL in ms, 2 the caller's limits as named
-- fields, "min_calls=20 failure_rate=0.5 ..." (durations in µs), read only
-- when the state is made: the stored limits win.
--
-- The state hash: the state machine (st gen k succ until born trips
-- transitions ec ef es run qc why; lf, the last window bucket the flush
-- script added a failure or slow call to, 0 or absent: none since the
-- window was last emptied, which credit.lua reads), the limits under the configuration's
-- own key names (LIMITS below; window, open, open_max and probe_timeout in
-- µs), and the control record, the operators' desired state that every host
-- converges to (control.lua): cv its version (1 as the state was made), cf forced (0
-- none, 1 open, 2 closed), cu the forced state's end (0: none), ch shadow
-- mode, cr the generation the last reset made, cw and cy who and why, ct
-- when.
--
-- Times are Redis's clock (TIME) in microseconds. Numbers stay below 2^53,
-- so Lua's doubles hold them exactly; none is concatenated into a string but
-- the bucket number (10 digits), since Lua 5.1 prints 14 significant digits.
--
-- Every script answers {state, gen, wait_us, k, successes, verdict, calls,
-- failures, slow, born, cv}: state 0 closed, 1 open, 2 half-open; wait_us
-- the time left in OPEN, or (a refused lease in HALF_OPEN) until the
-- earliest lease's deadline; calls/failures/slow the evidence of the last
-- trip; born the generation the state was created with, so that a host can
-- tell a fleet close from a state created from scratch; cv the control
-- record's version (1 as the state was made), so that a host reads the
-- record when it moved.
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
  if v and string.match(v, '^%d[%d%.eE%+%-]*$') then n = tonumber(v) end
  if n == nil or n ~= n or n < lo or n > hi or (lo_open and n == lo) then
    local range = '[' .. lo .. ', ' .. hi .. ']'
    if lo_open then range = '(' .. lo .. ', ' .. hi .. ']' end
    flag(key, f, v or '(missing)', range); return hi
  end
  return n
end
-- Printable text of at most `most` bytes (nil: none).
local function text(key, f, v, most)
  if v and (#v > most or v:find('%c')) then
    flag(key, f, v, 'printable text of at most ' .. most .. ' bytes')
  end
end
local function typed(key, want)
  local ty = redis.call('TYPE', key)['ok']
  if ty ~= 'none' and ty ~= want then flag(key, 'type', ty, want) end
  return ty
end
-- The limits, by the configuration's key names, as c[1] .. c[14] (times in
-- µs), each against its range (breaker_config_validate()); `v` maps a name
-- to its text. failure_threshold 0: a window policy (the fleet keeps a time
-- window); otherwise CONSECUTIVE's run.
local LIMITS = {'min_calls', 'failure_rate', 'slow_call_rate', 'window', 'window_buckets',
                'open', 'open_backoff', 'open_max', 'open_jitter', 'half_open_max_probes',
                'half_open_successes', 'probe_timeout', 'failure_threshold',
                'min_failing_sources'}
local function limits(key, v)
  local c = {}
  c[1] = int(key, 'min_calls', v.min_calls, 1, MAX_MIN_CALLS)
  c[2] = real(key, 'failure_rate', v.failure_rate, 0, 1, true)
  c[3] = real(key, 'slow_call_rate', v.slow_call_rate, 0, 1)
  c[4] = int(key, 'window', v.window, 1, DUR)
  c[5] = int(key, 'window_buckets', v.window_buckets, 1, MAX_BUCKETS)
  if not bad and c[4] / c[5] < 1000 then
    flag(key, 'window', v.window, 'at least 1000 us per bucket')
  end
  c[6] = int(key, 'open', v.open, 1, DUR)
  c[7] = real(key, 'open_backoff', v.open_backoff, 1, MAX_BACKOFF)
  c[8] = int(key, 'open_max', v.open_max, c[6], DUR)
  c[9] = real(key, 'open_jitter', v.open_jitter, 0, 1)
  c[10] = int(key, 'half_open_max_probes', v.half_open_max_probes, 1, MAX_PROBES)
  c[11] = int(key, 'half_open_successes', v.half_open_successes, 1, MAX_PROBES)
  c[12] = int(key, 'probe_timeout', v.probe_timeout, 1, DUR)
  c[13] = int(key, 'failure_threshold', v.failure_threshold, 0, MAX_THRESHOLD)
  c[14] = int(key, 'min_failing_sources', v.min_failing_sources, 0, MAX_SOURCES)
  return c
end
-- Named limits in a text "name=value ..." (a caller's): a table by name.
local function named(raw)
  local v = {}
  for name, value in string.gmatch(raw or '', '([%w_]+)=(%S+)') do v[name] = value end
  return v
end
-- The limits as HSET's arguments (name, value, ...), integers exactly.
local function limit_fields(c)
  local a = {}
  for i, name in ipairs(LIMITS) do
    a[#a + 1] = name
    if i == 2 or i == 3 or i == 7 or i == 9 then a[#a + 1] = string.format('%.17g', c[i])
    else a[#a + 1] = string.format('%.0f', c[i]) end
  end
  return a
end
-- The caller's limits, read only when the state is made (or rebuilt): a
-- client that sends limits out of range is broken, and told so.
local mine_cache = nil
local function mine()
  if not mine_cache then
    local before = bad
    bad = nil
    mine_cache = limits('ARGV[2]', named(ARGV[2]))
    if bad then return nil end
    bad = before
  end
  return mine_cache
end
local has_s = typed(S, 'hash') == 'hash'
typed(W, 'hash'); typed(L, 'zset'); typed(Q, 'hash')
local MACHINE = {'st', 'gen', 'k', 'succ', 'until', 'born', 'trips', 'transitions', 'ec', 'ef',
                 'es', 'run', 'qc', 'lf', 'cv', 'cf', 'cu', 'ch', 'cr', 'rt', 'cw', 'cy', 'ct'}
local present, c = false, nil
local h = {}
local lv = {}
-- The last trip's evidence and born, as the answer sends them.
local E = {0, 0, 0, 0}
if not bad and has_s then
  local fields = {}
  for _, f in ipairs(MACHINE) do fields[#fields + 1] = f end
  for _, f in ipairs(LIMITS) do fields[#fields + 1] = f end
  local all = redis.call('HMGET', S, unpack(fields))
  for i, f in ipairs(MACHINE) do h[f] = all[i] end
  for i, f in ipairs(LIMITS) do lv[f] = all[#MACHINE + i] end
  present = true
  c = limits(S, lv)
  E = {h.ec, h.ef, h.es, h.born}
end
local st, gen, k, succ, untl = 0, 0, 0, 0, 0
-- The control record (control.lua): its version, the forced state (0
-- none, 1 open, 2 closed) and its end (0: none), shadow mode, the reset's
-- generation and time.
local cv, cf, cu, ch, cr, rt = 0, 0, 0, 0, 0, 0
local gen_seen = 0
if present and not bad then
  st = int(S, 'st', h.st, 0, 2)
  gen = int(S, 'gen', h.gen, 1, BIG)
  if not bad then gen_seen = gen end
  k = int(S, 'k', h.k, 0, 4294967295)
  succ = int(S, 'succ', h.succ, 0, c[10] + c[11])
  local most = 0
  if st == 1 then most = math.floor(c[8] + c[8] * c[9]) end
  untl = int(S, 'until', h['until'], 0, BIG)
  cv = int(S, 'cv', h.cv, 1, BIG)
  cf = int(S, 'cf', h.cf, 0, 2, true)
  cu = int(S, 'cu', h.cu, 0, BIG, true)
  -- A forced open's end may hold the fleet open past the limits' longest
  -- wait (an operator's choice, at most 365 days from when it was given).
  if cf == 1 and cu > now and cu - now > most then most = cu - now end
  if cf == 1 and cu == 0 then most = BIG end
  if not bad and st == 1 and untl > now + most then
    flag(S, 'until', h['until'], string.format('at most %.0f (now + the longest wait)', now + most))
  end
  if not bad and cu > now + DUR then
    flag(S, 'cu', h.cu, string.format('at most %.0f (now + 365 days)', now + DUR))
  end
  int(S, 'born', h.born, 0, gen)
  int(S, 'trips', h.trips, 0, BIG)
  int(S, 'transitions', h.transitions, 0, BIG)
  local ec = int(S, 'ec', h.ec, 0, BIG)
  int(S, 'ef', h.ef, 0, ec)
  int(S, 'es', h.es, 0, ec)
  int(S, 'run', h.run, 0, BIG, true)
  int(S, 'qc', h.qc, 0, BIG, true)
  int(S, 'lf', h.lf, 0, BIG, true)
  ch = int(S, 'ch', h.ch, 0, 1, true)
  cr = int(S, 'cr', h.cr, 0, gen, true)
  rt = int(S, 'rt', h.rt, 0, BIG, true)
  int(S, 'ct', h.ct, 0, BIG, true)
  text(S, 'cw', h.cw, WHO_MAX)
  text(S, 'cy', h.cy, WHY_MAX)
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
-- A violation: the keys are rebuilt (a new, later generation; the caller's
-- limits), never followed, and the error names it. Only the flusher's
-- scripts rebuild (its round reports the error: degraded, on_degraded);
-- acquire answers the error and writes nothing.
local function corrupt(fix)
  if not fix then return redis.error_reply('CORRUPT ' .. bad) end
  local why = bad
  local m = mine()
  if not m then return redis.error_reply('ERR breaker: ' .. bad) end
  local g = now
  if gen_seen + 1 > g then g = gen_seen + 1 end
  redis.call('DEL', S, W, L, Q)
  redis.call('HSET', S, 'st', 0, 'gen', g, 'k', 0, 'succ', 0, 'until', 0, 'trips', 0,
             'transitions', 0, 'ec', 0, 'ef', 0, 'es', 0, 'born', g, 'why', 'rebuilt',
             'rebuilt', why, 'cv', 1, unpack(limit_fields(m)))
  redis.call('PEXPIRE', S, ttl)
  return redis.error_reply(string.format('CORRUPT %s; rebuilt at generation %.0f', why, g))
end
if not present and not bad then
  -- The first generation is Redis's clock: a Redis restarted empty
  -- never reuses a generation a host may still remember. The fleet
  -- starts over: a window (and a run's map) left by a deleted state
  -- is no evidence of this one.
  c = mine()
  if not c then return redis.error_reply('ERR breaker: ' .. bad) end
  redis.call('DEL', W)
  redis.call('HSET', S, 'st', 0, 'gen', now, 'k', 0, 'succ', 0, 'until', 0, 'trips', 0,
             'transitions', 0, 'ec', 0, 'ef', 0, 'es', 0, 'born', now, 'cv', 1,
             unpack(limit_fields(c)))
  gen = now
  cv = 1
  E = {0, 0, 0, now}
end
-- c: 1 min_calls, 2 failure_rate, 3 slow_rate, 4 window, 5 buckets,
-- 6 open, 7 backoff, 8 open_max, 9 jitter, 10 max_probes,
-- 11 successes, 12 probe_timeout, 13 failure_threshold (CONSECUTIVE; 0:
-- a window policy), 14 min_failing_sources
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
  if to == 0 then
    k = 0; redis.call('DEL', W); redis.call('HDEL', S, 'lf')
  else
    redis.call('HDEL', W, 'ra', 'rb')
  end
  redis.call('DEL', L)
  redis.call('HSET', S, 'st', st, 'gen', gen, 'k', k, 'succ', 0,
             'until', untl, 'why', why, 'run', 0)
  redis.call('HINCRBY', S, 'transitions', 1)
end
-- A forced state in force: open or closed, not expired.
local forced = cf ~= 0 and (cu == 0 or now < cu)
local forced_open = forced and cf == 1
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
  return {st, gen, wait, k, succ, verdict, tonumber(E[1]), tonumber(E[2]), tonumber(E[3]),
          tonumber(E[4]) or 0, cv}
end
