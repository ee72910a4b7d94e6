-- SPDX-License-Identifier: MIT
-- flush_cheap.lua - the flush script's cheap path (docs/fleet.md, "Cost"),
-- run within the prelude once Redis's clock is read (now), before the
-- state is: a healthy name's successes counted with two or three Redis
-- calls instead of the whole prelude's read and checks of the state.
-- Taken by a flush that asks for it (ARGV 13: the µs since the host's last
-- flush of the name, at least 1) and carries calls alone (no failure, slow
-- call, failing source or server-directed wait: ARGV 5, 6, 10, 11 and 12
-- all '0'), when the state is CLOSED in the generation the host names, no
-- forced state is in force, the policy is a window (failure_threshold 0),
-- and the window holds no failure or slow call (lf, the last bucket the
-- full path added one to, has left the window: successes alone can then
-- trip nothing, the rates being 0). Then the calls are added to the
-- window's bucket of now, the buckets that left the window since the
-- host's last flush are deleted (at most 32: what a longer silence left,
-- the full path prunes), and the answer is {gen, cv}: "counted; the state
-- is as you knew it, control version cv". Anything else, and anything read
-- here that is not what the scripts write, goes on to the full flush below
-- (the rest of prelude.lua, flush.lua), which checks everything and
-- rebuilds what it cannot trust.
-- Such a call is counted once without the host's sequence (Q is not read
-- or written here): the client never sends it twice (the transport does
-- not retry it on a new connection; a round that loses its reply loses
-- its successes, never counts them twice), and a copy run late counts in
-- the generation it names only. Nor is the keys' TTL refreshed here but a
-- new window's: the host's full flushes do (one at least every half TTL).
do
  -- A plain integer of digits, 0..hi (nil: anything else).
  local function num(v, hi)
    if type(v) ~= 'string' or #v > 16 or not string.match(v, '^%d+$') then return nil end
    local n = tonumber(v)
    if n > hi then return nil end
    return n
  end
  local hg, dc, since = num(ARGV[3], BIG), num(ARGV[4], BIG), num(ARGV[13], DUR)
  if since and since > 0 and hg and dc and dc > 0 and ARGV[5] == '0' and ARGV[6] == '0' and
     ARGV[10] == '0' and ARGV[11] == '0' and ARGV[12] == '0' and num(ARGV[1], BIG) and
     ttl > 0 then
    -- pcall: a key of another type goes on to the full path, which names
    -- it and rebuilds.
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
          -- A new bucket field: the window may be new too (a close deleted
          -- it), and gets the TTL.
          if added == dc then redis.call('PEXPIRE', W, ttl) end
          local gone = {}
          local from = math.floor((now - since) / span) - nb + 1
          if from < bkt - nb - 31 then from = bkt - nb - 31 end
          for b = from, bkt - nb do gone[#gone + 1] = 'c' .. b end
          if #gone > 0 then redis.call('HDEL', W, unpack(gone)) end
          return {gen, cv}
        end
      end
    end
  end
end
