-- SPDX-License-Identifier: MIT
-- order: an operator's order for the whole fleet (docs/fleet.md,
-- "Fleet-wide orders"). ARGV 3 the kind (1 open, 2 closed, 3 reset), 4 its
-- time in µs (0: until another order; open: a timed open, reason
-- operator), 5 who, 6 why (at most BREAKER__FLEET_WHO_MAX and _WHY_MAX
-- bytes). Open: the fleet OPEN (a new generation; its wait at most the
-- limits' longest, the lease refused until the order's end); closed: the
-- fleet CLOSED with an empty window, nothing counted until its end; reset:
-- CLOSED with an empty window, k 0. Each is one transition and a new
-- order sequence (oseq), which every host applies once. verdict 4.
-- (Run after prelude.lua, in one script.)
if bad then return corrupt(true) end
local kind, dur = tonumber(ARGV[3]), tonumber(ARGV[4])
local who, why = ARGV[5] or '', ARGV[6] or ''
if not (kind == 1 or kind == 2 or kind == 3) then return redis.error_reply('ERR breaker: order kind 1..3 expected') end
if not dur or dur < 0 or dur > DUR or dur ~= math.floor(dur) then return redis.error_reply('ERR breaker: order time 0..' .. DUR .. ' us expected') end
if #who > WHO_MAX or #why > WHY_MAX then return redis.error_reply('ERR breaker: who at most ' .. WHO_MAX .. ' bytes, why at most ' .. WHY_MAX) end
ord, fu, oseq = kind, 0, oseq + 1
if dur > 0 and kind ~= 3 then fu = now + dur end
if kind == 1 then
  go(1, 'operator', k)
  -- Never longer than the limits' longest wait (the prelude's bound):
  -- the order's end (fu) holds the leases back beyond it.
  if fu > 0 and fu < untl then untl = fu; redis.call('HSET', S, 'until', untl) end
elseif kind == 2 then go(0, 'forced_closed', 0)
else go(0, 'reset', 0) end
redis.call('HSET', S, 'ok', ord, 'fu', fu, 'oseq', oseq, 'ow', who, 'oy', why)
return answer(4)
