-- SPDX-License-Identifier: MIT
-- flush: ARGV 3 the host's last known generation (0: none), 4 calls,
-- 5 failures, 6 slow (deltas since its last flush), 7 the host's current
-- run of failures (its consecutive_failures), 8 the host's id and 9 the
-- call's sequence (breaker__fleet_next_seq(); both absent: a call that is
-- not deduplicated, the attach's, which has no deltas), 10 and 11 the
-- host's failing-source map (low and high 32 bits; absent: none). Deltas count only
-- in a CLOSED fleet, and only from a host that knew this generation (or
-- none): calls made before the fleet last closed belong to an ended period. The deltas
-- land in the bucket of Redis's clock now. With a CONSECUTIVE policy the
-- fleet keeps a run instead of a window: a flush of failures only extends
-- it, a flush with a success sets it to the host's run after its last
-- success (the order of calls across hosts within one interval is unknown:
-- an approximation, docs/fleet.md). A host's deltas count once: a call
-- whose sequence is not newer than the last one applied for its host (the
-- retry of a round after a cut connection, which Redis may have run) is
-- answered as usual but not counted; the sequence is stored (Q) only when
-- deltas are applied, and a host silent longer than the TTL is forgotten.
-- 12 a server-directed wait (below).
-- verdict 1: this flush tripped the fleet.
-- (Run after prelude.lua, in one script.)
if bad then return corrupt(true) end
local hg, dc = tonumber(ARGV[3]), tonumber(ARGV[4])
local df, ds = tonumber(ARGV[5]), tonumber(ARGV[6])
local trail, thr = tonumber(ARGV[7] or '0'), c[13] or 0
if df > dc or ds > dc then return redis.error_reply('ERR breaker: deltas with more failures or slow calls than calls') end
local host, seq = ARGV[8], nil
if host then
  local sq = ARGV[9] or ''
  if #host == 16 and string.match(host, '^%x+$') and string.match(sq, '^%d+$') and #sq <= 16 then seq = tonumber(sq) end
  if seq == nil or seq > BIG then return redis.error_reply('ERR breaker: a host id of 16 hex digits and a sequence 0..' .. BIG_TEXT .. ' expected') end
end
-- ARGV 12: a server-directed wait (a host's 429): the fleet opens until
-- then, at most open_max, once (not shortening a longer wait), unless forced.
local dir = tonumber(ARGV[12] or '0')
if not dir or dir < 0 or dir > DUR then return redis.error_reply('ERR breaker: a server-directed wait 0..' .. DUR .. ' us expected') end
if dir > 0 and not forced then
  if dir > c[8] then dir = c[8] end
  if st ~= 1 or untl < now + dir then
    go(1, 'server_directed', k); untl = now + math.floor(dir)
    redis.call('HSET', S, 'until', untl)
  end
end
-- A forced state (an operator's order in force) counts nothing, trips nothing.
if forced or st ~= 0 or (hg ~= 0 and hg ~= gen) or dc <= 0 then return answer(0) end
-- The hosts' sequences, checked: a field is a host id, a value 'seq time'.
-- A host silent longer than the TTL is forgotten; a call whose sequence
-- is not newer than its host's last was applied already (a retry).
-- Never the whole hash (one field per live host: a fleet of any size):
-- the host's own field; and when it has none (new to this name, or
-- silent longer than the TTL) or its last was written in an earlier
-- quarter of the TTL, the next 16 fields of an HSCAN (all of a small
-- hash at once) whose cursor S keeps (qc): each host arriving, and each
-- host once per quarter of the TTL, prunes a few that left.
if host then
  local last, last_t = nil, nil
  local function entry(id, val)
    local qs, qt = string.match(val, '^(%d+) (%d+)$')
    if not (#id == 16 and string.match(id, '^%x+$')) then flag(Q, seen(id), val, 'a field of 16 hex digits')
    elseif not qs or #qs > 16 or #qt > 16 or tonumber(qs) > BIG or tonumber(qt) > BIG then
      flag(Q, id, val, 'seq time, two numbers 0..' .. BIG_TEXT)
    elseif tonumber(qt) + ttl * 1000 <= now then redis.call('HDEL', Q, id)
    elseif id == host then last = tonumber(qs); last_t = tonumber(qt) end
  end
  local own = redis.call('HGET', Q, host)
  if own then entry(host, own) end
  local quarter = ttl * 250
  if (not last or math.floor(last_t / quarter) ~= math.floor(now / quarter)) and not bad then
    local qc = h.qc or '0'
    local sc = redis.call('HSCAN', Q, qc, 'COUNT', 16)
    for i = 1, #sc[2], 2 do
      if sc[2][i] ~= host then entry(sc[2][i], sc[2][i + 1]) end
    end
    if not bad and sc[1] ~= qc then redis.call('HSET', S, 'qc', sc[1]) end
  end
  if bad then return corrupt(true) end
  if last and seq <= last then return answer(0) end
end
local function applied()
  if host then redis.call('HSET', Q, host, string.format('%.0f %.0f', seq, now)) end
end
-- The host's failing-source map (ARGV 10, 11: its low and high 32 bits;
-- absent: none): OR-ed into the window's bucket (a<bucket>, b<bucket>),
-- or into the run's (ra, rb in W) with a CONSECUTIVE policy.
local U32 = 4294967295
local function u32(x) if x < 0 then x = x + 4294967296 end return x end
local ma, mb = 0, 0
if ARGV[10] then
  local lo, hi = ARGV[10], ARGV[11] or ''
  if string.match(lo, '^%d+$') and #lo <= 10 then ma = tonumber(lo) else ma = nil end
  if string.match(hi, '^%d+$') and #hi <= 10 then mb = tonumber(hi) else mb = nil end
  if ma == nil or mb == nil or ma > U32 or mb > U32 then return redis.error_reply('ERR breaker: a source map of two numbers 0..4294967295 expected') end
end
-- The failing-source rule, as the core's (window.c): N distinct bits for
-- min_failing_sources N (0: 3, and only for failures that name a
-- source; 1: off).
local function bits(x) local n = 0; while x ~= 0 do x = u32(bit.band(x, x - 1)); n = n + 1 end; return n end
local function diverse(a, b)
  local nb, need = bits(a) + bits(b), c[14]
  if need == 0 then need = 3 elseif need == 1 then need = 0 end
  return nb >= need or (c[14] == 0 and nb == 0)
end
if thr > 0 then
  local run = tonumber(redis.call('HGET', S, 'run') or '0')
  local rm = redis.call('HMGET', W, 'ra', 'rb')
  local ra, rb = 0, 0
  for i = 1, 2 do
    local v = rm[i]
    if v then
      if not (string.match(v, '^%d+$') and #v <= 10 and tonumber(v) <= U32) then flag(W, i == 1 and 'ra' or 'rb', v, '0..4294967295')
      elseif i == 1 then ra = tonumber(v) else rb = tonumber(v) end
    end
  end
  if bad then return corrupt(true) end
  -- The run's map: the host's, OR-ed while the run only grows; the
  -- host's alone when a success set the run to the host's.
  if df >= dc then run = run + df; ra = u32(bit.bor(ra, ma)); rb = u32(bit.bor(rb, mb))
  else run = trail; ra = ma; rb = mb end
  applied()
  redis.call('HSET', W, 'ra', ra, 'rb', rb)
  if run >= thr and diverse(ra, rb) then
    redis.call('HSET', S, 'ec', run, 'ef', run, 'es', 0); E[1], E[2], E[3] = run, run, 0
    redis.call('HINCRBY', S, 'trips', 1)
    go(1, 'consecutive_failures', 0)
    return answer(1)
  end
  redis.call('HSET', S, 'run', run)
  return answer(0)
end
local span = math.floor(c[4] / c[5])
local bkt = math.floor(now / span)
-- The window's map is the OR of its buckets', as the local rule reads one.
local ba, bb = 0, 0
-- The window, checked before anything is added to it: a field is
-- c<bucket>, f<bucket> or s<bucket>, a count of digits, or a<bucket>,
-- b<bucket>, half a source map, in a bucket no later than one window
-- ahead (a clock that stepped back a little).
local all = redis.call('HGETALL', W)
local n, f, s = dc, df, ds
local wa, wb = ma, mb
for i = 1, #all, 2 do
  local name, val = all[i], all[i + 1]
  local kind, digits = string.match(name, '^([cfsab])(%d+)$')
  local b, v = nil, nil
  if kind and #digits <= 15 then b = tonumber(digits) end
  if string.match(val, '^%d+$') and #val <= 16 then v = tonumber(val) end
  if b == nil then flag(W, seen(name), val, 'a field c<bucket>, f<bucket>, s<bucket>, a<bucket> or b<bucket>')
  elseif v == nil or v > BIG then flag(W, name, val, string.format('0..%.0f', BIG))
  elseif (kind == 'a' or kind == 'b') and v > U32 then flag(W, name, val, '0..4294967295')
  elseif b > bkt + c[5] then flag(W, name, val, string.format('a bucket up to %.0f', bkt + c[5]))
  elseif b <= bkt - c[5] then redis.call('HDEL', W, name)
  elseif kind == 'c' then n = n + v elseif kind == 'f' then f = f + v elseif kind == 's' then s = s + v
  elseif kind == 'a' then wa = u32(bit.bor(wa, v)); if b == bkt then ba = v end
  else wb = u32(bit.bor(wb, v)); if b == bkt then bb = v end end
end
if not bad and (f > n or s > n) then
  flag(W, 'failures/slow', f .. '/' .. s, 'at most the calls (' .. n .. ')')
end
if bad then return corrupt(true) end
applied()
redis.call('HINCRBY', W, 'c' .. bkt, dc)
if df > 0 then redis.call('HINCRBY', W, 'f' .. bkt, df) end
if ds > 0 then redis.call('HINCRBY', W, 's' .. bkt, ds) end
-- The window holds a failure or a slow call until this bucket leaves it:
-- until then credit.lua leaves successes to this script.
if df > 0 or ds > 0 then redis.call('HSET', S, 'lf', bkt) end
if ma ~= 0 then redis.call('HSET', W, 'a' .. bkt, u32(bit.bor(ba, ma))) end
if mb ~= 0 then redis.call('HSET', W, 'b' .. bkt, u32(bit.bor(bb, mb))) end
if n >= c[1] then
  local why = nil
  if f / n >= c[2] and diverse(wa, wb) then why = 'failure_rate'
  elseif c[3] > 0 and s / n >= c[3] then why = 'slow_call_rate' end
  if why then
    redis.call('HSET', S, 'ec', n, 'ef', f, 'es', s); E[1], E[2], E[3] = n, f, s
    redis.call('HINCRBY', S, 'trips', 1)
    go(1, why, 0)
    return answer(1)
  end
end
return answer(0)
