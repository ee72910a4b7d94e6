-- SPDX-License-Identifier: MIT
-- shadow: shadow mode for the whole fleet (docs/fleet.md, "Fleet-wide
-- shadow mode and limits"). ARGV 3 on (1) or off (0), 4 who, 5 why. One
-- write, no transition: sh, sseq (+1), sw, sy; every host applies it to its
-- local breaker once per sequence. The fleet's own state machine runs on
-- as before (trips, leases, closes). verdict 4.
-- (Run after prelude.lua, in one script.)
if bad then return corrupt(true) end
local on, who, why = tonumber(ARGV[3]), ARGV[4] or '', ARGV[5] or ''
if not (on == 0 or on == 1) then return redis.error_reply('ERR breaker: shadow 0 or 1 expected') end
if #who > WHO_MAX or #why > WHY_MAX then return redis.error_reply('ERR breaker: who at most ' .. WHO_MAX .. ' bytes, why at most ' .. WHY_MAX) end
shadow, sseq = on, sseq + 1
redis.call('HSET', S, 'sh', shadow, 'sseq', sseq, 'sw', who, 'sy', why)
return answer(4)
