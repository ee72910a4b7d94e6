-- SPDX-License-Identifier: MIT
-- acquire_probe: ARGV 3 the lease token. verdict 0 refused, 1 the fleet is
-- closed (no lease needed), 2 granted (wait = the lease's time to its
-- deadline). The first request at or after the open wait's end turns the
-- fleet HALF_OPEN.
-- (Run after prelude.lua, in one script.)
if bad then return corrupt(false) end
if forced_open then return answer(0) end
if st == 0 then return answer(1) end
if st == 1 then
  if now < untl then return answer(0) end
  go(2, 'wait_elapsed', k)
end
if succ >= c[11] or redis.call('ZCARD', L) >= c[10] then
  local first = redis.call('ZRANGE', L, 0, 0, 'WITHSCORES')
  local wait = 0
  if #first > 0 then wait = tonumber(first[2]) - now end
  return answer(0, wait)
end
redis.call('ZADD', L, now + c[12], ARGV[3])
return answer(2, c[12])
