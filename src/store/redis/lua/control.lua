-- SPDX-License-Identifier: MIT
-- control: the fleet's control record, the operators' desired state that
-- every host converges to each round (docs/fleet.md, "Controls"). ARGV 3
-- the version the caller read ('' : any; else CONFLICT when it moved), 4
-- who, 5 why (at most WHO_MAX and WHY_MAX bytes of printable text), then
-- name, value pairs of what changes:
--   forced  open | closed   the fleet forced open (no lease is granted) or
--                           closed (nothing counted, nothing trips)
--   for     µs              with forced: its end (0 or absent: none); a
--                           timed open is OPEN until then, then probes
--   reset   1               the fleet CLOSED with an empty window, k 0 and
--                           no forced state: a new generation (cr), which
--                           each host attached before it applies once
--   shadow  0 | 1           shadow mode on every host
--   <limit> value           a limit by its configuration key (LIMITS;
--                           durations in µs); what cannot change live
--                           (window, window_buckets, the policy,
--                           half_open_max_probes) is REFUSED, naming it
-- No pair: a read. A change to what is in force already writes nothing
-- (the version, who and why stay). Otherwise one write: the record, its
-- version + 1, who, why and when, and the transition it asks for (one new
-- generation). A running open wait, a half-open's successes and its
-- leases' deadlines are brought within new limits, and a half-open whose
-- successes meet the new half_open_successes with no lease out closes.
-- verdict 4; the answer is followed by the record: forced in force (0 none,
-- 1 open, 2 closed), its time left (µs, 0: no end), shadow, the reset's
-- generation, who, why, the change's age (µs), the reset's age (µs; 0:
-- none), then the limits as text in LIMITS order.
-- (Run after prelude.lua, in one script.)
if bad then return corrupt(true) end
local want, who, why = ARGV[3] or '', ARGV[4] or '', ARGV[5] or ''
if want ~= '' and not (string.match(want, '^%d+$') and #want <= 16) then
  return redis.error_reply('ERR breaker: a control version 0..' .. BIG_TEXT .. ' expected')
end
if #who > WHO_MAX or #why > WHY_MAX or who:find('%c') or why:find('%c') then
  return redis.error_reply('ERR breaker: who: printable text of at most ' .. WHO_MAX ..
                           ' bytes, why: at most ' .. WHY_MAX)
end
-- The changes asked, checked as the stored ones are.
local ask, new_limits = {}, {}
local limit_asked = false
local is_limit = {}
for _, name in ipairs(LIMITS) do is_limit[name] = true end
for i = 6, #ARGV, 2 do
  local name, value = ARGV[i], ARGV[i + 1]
  if value == nil then return redis.error_reply('ERR breaker: ' .. seen(name) .. ': no value') end
  if is_limit[name] then
    new_limits[name] = value; limit_asked = true
  elseif name == 'forced' or name == 'for' or name == 'reset' or name == 'shadow' then
    ask[name] = value
  else
    return redis.error_reply('ERR breaker: ' .. seen(name) .. ': not a control (forced, for, ' ..
                             'reset, shadow or a limit: ' .. table.concat(LIMITS, ', ') .. ')')
  end
end
if ask.forced and ask.forced ~= 'open' and ask.forced ~= 'closed' then
  return redis.error_reply('ERR breaker: forced: open or closed (a reset ends a forced state)')
end
local dur = 0
if ask['for'] then
  if not ask.forced then return redis.error_reply('ERR breaker: for: goes with forced') end
  dur = int('ARGV', 'for', ask['for'], 0, DUR)
  if bad then return redis.error_reply('ERR breaker: ' .. bad) end
end
if ask.reset and ask.reset ~= '1' then return redis.error_reply('ERR breaker: reset: 1') end
if ask.shadow and ask.shadow ~= '0' and ask.shadow ~= '1' then
  return redis.error_reply('ERR breaker: shadow: 0 or 1')
end
local nw = c
if limit_asked then
  local v = {}
  for i, name in ipairs(LIMITS) do v[name] = new_limits[name] or lv[name] end
  nw = limits('the new limits', v)
  if bad then return redis.error_reply('ERR breaker: ' .. bad) end
end
if want ~= '' and tonumber(want) ~= cv then
  return redis.error_reply(string.format(
    'CONFLICT the control record is at version %.0f, not %.0f: changed since it was read', cv,
    tonumber(want)))
end
-- What is in force already is no change.
local same_limits = true
for i = 1, 14 do if nw[i] ~= c[i] then same_limits = false end end
local new_cf, new_cu = cf, cu
if ask.forced then
  new_cf = 1
  if ask.forced == 'closed' then new_cf = 2 end
  new_cu = 0
  if dur > 0 then new_cu = now + dur end
end
local changes = ask.reset or (ask.shadow and tonumber(ask.shadow) ~= ch) or not same_limits or
                (ask.forced and (new_cf ~= cf or not forced or (dur > 0) or cu ~= 0))
local function record(verdict)
  local a = answer(verdict)
  local in_force, left = cf, 0
  if cf ~= 0 and cu ~= 0 then
    if cu > now then left = cu - now else in_force = 0 end
  end
  local age = 0
  local ct = tonumber(redis.call('HGET', S, 'ct') or '0') or 0
  if ct > 0 and now > ct then age = now - ct end
  local cwy = redis.call('HMGET', S, 'cw', 'cy')
  a[12], a[13], a[14], a[15] = in_force, left, ch, cr
  a[16], a[17], a[18] = cwy[1] or '', cwy[2] or '', age
  a[19] = 0
  if rt > 0 and now > rt then a[19] = now - rt end
  local lf = limit_fields(c)
  for i = 1, 14 do a[19 + i] = lf[2 * i] end
  return a
end
if not changes then return record(4) end
-- What cannot change live.
local function fixed(what, was, now_, because)
  return redis.error_reply('REFUSED ' .. what .. ': ' .. was .. ' -> ' .. now_ ..
                           ' cannot change live (' .. because ..
                           '); delete the name\'s state to start the fleet over')
end
local function us(v) return string.format('%.0fus', v) end
local function policy(x) if (x or 0) > 0 then return 'consecutive' end return 'a window' end
if policy(nw[13]) ~= policy(c[13]) then
  return fixed('trip', policy(c[13]), policy(nw[13]), 'it chooses what the fleet keeps, a window or a run')
end
if nw[4] ~= c[4] then return fixed('window', us(c[4]), us(nw[4]), 'it lays out the fleet window\'s buckets') end
if nw[5] ~= c[5] then return fixed('window_buckets', c[5], nw[5], 'it lays out the fleet window\'s buckets') end
if nw[10] ~= c[10] then
  return fixed('half_open_max_probes', c[10], nw[10], 'it sizes every host\'s probe slots')
end
if not same_limits then
  c = nw
  redis.call('HSET', S, unpack(limit_fields(c)))
  -- What the prelude checks against the limits, brought within the new ones.
  local most = math.floor(c[8] + c[8] * c[9])
  if st == 1 and not (cf == 1 and cu > now) and untl > now + most then
    untl = now + most; redis.call('HSET', S, 'until', untl)
  end
  if succ > c[10] + c[11] then succ = c[10] + c[11]; redis.call('HSET', S, 'succ', succ) end
  local late = redis.call('ZRANGEBYSCORE', L, '(' .. string.format('%.0f', now + c[12]), '+inf')
  for _, tok in ipairs(late) do redis.call('ZADD', L, 'XX', now + c[12], tok) end
  -- Successes in that meet the new count with no lease out: no release is
  -- left to close the fleet, and acquire refuses every lease (the successes
  -- are in), so it closes here, as that release would have.
  if st == 2 and succ >= c[11] and redis.call('ZCARD', L) == 0 then
    go(0, 'probes_succeeded', 0)
  end
end
if ask.reset then
  cf, cu = 0, 0
  go(0, 'reset', 0)
  cr, rt = gen, now
  redis.call('HSET', S, 'cf', 0, 'cu', 0, 'cr', cr, 'rt', rt)
end
if ask.forced then
  cf, cu = new_cf, new_cu
  if cf == 1 then
    go(1, 'operator', k)
    -- A timed open ends when the operator said: the leases wait for it.
    if cu > 0 then untl = cu; redis.call('HSET', S, 'until', untl) end
  else
    go(0, 'forced_closed', 0)
  end
  redis.call('HSET', S, 'cf', cf, 'cu', cu)
end
if ask.shadow then ch = tonumber(ask.shadow); redis.call('HSET', S, 'ch', ch) end
cv = cv + 1
redis.call('HSET', S, 'cv', cv, 'cw', who, 'cy', why, 'ct', now)
return record(4)
