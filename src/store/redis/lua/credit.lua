-- SPDX-License-Identifier: MIT
-- credit.lua - healthy names' successes, counted without the flush script
-- (docs/fleet.md, "Cost"): a script of its own, the constants and this file
-- (no prelude: it reads a few fields of each state, not the whole state and
-- its checks), for one name or for several at once.
-- KEYS: per name, two: its state hash S and its window W (prelude.lua,
--   "KEYS"). Several names only where one command may name the keys of
--   several hash slots (one Redis, not a Cluster).
-- ARGV: 1 the keys' TTL in ms; then per name, in the order of KEYS, three:
--   the generation the host knows, its calls (successes alone: no failure,
--   slow call or failing source), and the µs since the host's last flush of
--   the name (at least 1).
-- A name's calls are counted when its state is CLOSED in that generation,
-- no forced state is in force, the policy is a window (failure_threshold
-- 0) and the window holds no failure or slow call (lf, the last bucket the
-- flush script added one to, has left the window): successes alone can
-- then trip nothing, the rates being 0. They are added to the window's
-- bucket of now, and the buckets that left the window since the host's
-- last flush are deleted (at most 32: what a longer silence left, the flush
-- script prunes). The answer has one number per name: its control version
-- cv when counted, -1 when not (anything else, or anything read that is not
-- what the scripts write): the host sends them with the flush script, in
-- the same round, which checks the whole state and rebuilds what it cannot
-- trust.
-- Counted once without a sequence (the flush script's Q is neither read nor
-- written): the client never sends a credit twice (the transport does not
-- retry it on a new connection; a round that loses its reply loses its
-- successes, never counts them twice), and a copy run late counts in the
-- generation it names only. The keys' TTL is left to the flush script (a
-- host sends each name one at least every half TTL), but a window made here
-- (a close deleted it) gets it.
-- A plain integer of digits, 0..hi (nil: anything else).
local function num(v, hi)
  if type(v) ~= 'string' or #v > 16 or not string.match(v, '^%d+$') then return nil end
  local n = tonumber(v)
  if n > hi then return nil end
  return n
end
local ttl = num(ARGV[1], BIG)
local names = #KEYS / 2
if not ttl or ttl < 1 or names < 1 or names % 1 ~= 0 or #ARGV ~= 1 + 3 * names then
  return redis.error_reply('ERR breaker: credit: two keys per name, then a TTL in ms and ' ..
                           'three numbers per name expected')
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local out = {}
for i = 1, names do
  local S, W = KEYS[2 * i - 1], KEYS[2 * i]
  local hg, dc = num(ARGV[3 * i - 1], BIG), num(ARGV[3 * i], BIG)
  local since = num(ARGV[3 * i + 1], DUR)
  local counted = -1
  if hg and dc and dc > 0 and since and since > 0 then
    -- pcall: a key of another type is the flush script's to name and rebuild.
    local v = redis.pcall('HMGET', S, 'st', 'gen', 'cv', 'cf', 'cu', 'lf', 'window',
                          'window_buckets', 'failure_threshold')
    local st, gen, cv = num(v[1], 2), num(v[2], BIG), num(v[3], BIG)
    local cf, cu, lf = num(v[4] or '0', 2), num(v[5] or '0', BIG), num(v[6] or '0', BIG)
    local win, nb, thr = num(v[7], DUR), num(v[8], MAX_BUCKETS), num(v[9], MAX_THRESHOLD)
    if st == 0 and gen == hg and cv and cf and cu and lf and win and nb and nb > 0 and
       thr == 0 and win / nb >= 1000 then
      local span = math.floor(win / nb)
      local bkt = math.floor(now / span)
      local forced = cf ~= 0 and (cu == 0 or now < cu)
      if not forced and lf + nb <= bkt then
        local added = redis.pcall('HINCRBY', W, 'c' .. bkt, dc)
        if type(added) == 'number' then
          if added == dc then redis.call('PEXPIRE', W, ttl) end
          local gone = {}
          local from = math.floor((now - since) / span) - nb + 1
          if from < bkt - nb - 31 then from = bkt - nb - 31 end
          for b = from, bkt - nb do gone[#gone + 1] = 'c' .. b end
          if #gone > 0 then redis.call('HDEL', W, unpack(gone)) end
          counted = cv
        end
      end
    end
  end
  out[i] = counted
end
return out
