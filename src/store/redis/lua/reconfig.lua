-- SPDX-License-Identifier: MIT
-- reconfig: new stored limits for the whole fleet (docs/fleet.md,
-- "Fleet-wide shadow mode and limits"). ARGV 3 the new limits text, 4 the
-- limits' generation (cg) the caller read, 5 who, 6 why. Refused: a moved
-- generation (CONFLICT, nothing written); limits out of the configuration's
-- ranges (ERR, naming the field); what cannot change live (REFUSED, naming
-- it: the window, its buckets, the trip policy, half_open_max_probes); the
-- limits in force already: nothing written. Else one write: cfg, cg (+1),
-- cw, cy; a running open wait, a half-open's
-- successes and its leases' deadlines are brought within the new limits
-- (the prelude checks them against the stored limits); a half-open whose
-- successes meet the new half_open_successes with no lease out closes (its
-- one transition: nothing else would close it). Every host reconfigures its
-- local breaker once per generation. verdict 4.
-- (Run after prelude.lua, in one script.)
if bad then return corrupt(true) end
local want, who, why = ARGV[4] or '', ARGV[5] or '', ARGV[6] or ''
if not (string.match(want, '^%d+$') and #want <= 16) then return redis.error_reply('ERR breaker: a configuration generation 0..' .. BIG_TEXT .. ' expected') end
want = tonumber(want)
if #who > WHO_MAX or #why > WHY_MAX then return redis.error_reply('ERR breaker: who at most ' .. WHO_MAX .. ' bytes, why at most ' .. WHY_MAX) end
local nw = limits('the new limits', ARGV[3] or '')
if bad then return redis.error_reply('ERR breaker: ' .. bad) end
if want ~= cgen then
  return redis.error_reply(string.format('CONFLICT the limits are at generation %.0f, not %.0f: changed since they were read', cgen, want))
end
-- The limits in force again: no change (no write; generation, who and why
-- stay), so no host reconfigures for nothing.
local same = true
for i = 1, 14 do if nw[i] ~= c[i] then same = false end end
if same then return answer(4) end
local function fixed(what, was, now, because)
  return redis.error_reply('REFUSED ' .. what .. ': ' .. was .. ' -> ' .. now .. ' cannot change live (' .. because .. '); delete the name\'s state to start the fleet over')
end
local function us(v) return string.format('%.0fus', v) end
local function policy(x) if (x or 0) > 0 then return 'consecutive' end return 'a window' end
if policy(nw[13]) ~= policy(c[13]) then return fixed('trip', policy(c[13]), policy(nw[13]), 'it chooses what the fleet keeps, a window or a run') end
if nw[4] ~= c[4] then return fixed('window', us(c[4]), us(nw[4]), 'it lays out the fleet window\'s buckets') end
if nw[5] ~= c[5] then return fixed('window_buckets', c[5], nw[5], 'it lays out the fleet window\'s buckets') end
if nw[10] ~= c[10] then return fixed('half_open_max_probes', c[10], nw[10], 'it sizes every host\'s probe slots') end
-- What the prelude checks against the limits, brought within the new ones.
local most = math.floor(nw[8] + nw[8] * nw[9])
if st == 1 and untl > now + most then untl = now + most; redis.call('HSET', S, 'until', untl) end
if succ > nw[10] + nw[11] then succ = nw[10] + nw[11]; redis.call('HSET', S, 'succ', succ) end
local late = redis.call('ZRANGEBYSCORE', L, '(' .. string.format('%.0f', now + nw[12]), '+inf')
for _, tok in ipairs(late) do redis.call('ZADD', L, 'XX', now + nw[12], tok) end
-- Successes in that meet the new count with no lease out: no release is
-- left to close the fleet, and acquire refuses every lease (the successes
-- are in), so it closes here, as that release would have.
if st == 2 and succ >= nw[11] and redis.call('ZCARD', L) == 0 then go(0, 'probes_succeeded', 0) end
cgen = cgen + 1
redis.call('HSET', S, 'cfg', ARGV[3], 'cg', cgen, 'cw', who, 'cy', why)
return answer(4)
