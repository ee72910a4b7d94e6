-- SPDX-License-Identifier: MIT
-- release_probe: ARGV 3 the generation the lease was granted in (0: any,
-- for a request that got no answer and may have been granted), 4 its
-- token, 5 the result (0 success, 1 failure, 2 neither). verdict 3 stale
-- (expired, or the generation moved: nothing changes), 4 applied. The fleet
-- closes once half_open_successes probes succeeded and no lease is out.
-- (Run after prelude.lua, in one script.)
if bad then return corrupt(true) end
local lg, tok, res = tonumber(ARGV[3]), ARGV[4], tonumber(ARGV[5])
if st ~= 2 or (lg ~= gen and lg ~= 0) or not redis.call('ZSCORE', L, tok) then
  return answer(3)
end
redis.call('ZREM', L, tok)
if res == 1 then
  go(1, 'probe_failed', k + 1)
else
  if res == 0 then succ = succ + 1; redis.call('HSET', S, 'succ', succ) end
  if succ >= c[11] and redis.call('ZCARD', L) == 0 then go(0, 'probes_succeeded', 0) end
end
return answer(4)
