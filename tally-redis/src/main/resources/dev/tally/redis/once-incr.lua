--[[
Tally: the common idempotent call, an integer increment from a default of 0 under an operation
id, in as few steps as it can take. counters.lua does the same for every operation (and this
one when it is not the common case); this script exists because that one's generality costs
several times the INCRBY it wraps.

KEYS[1]  the id's record (docs/redis.md#operation-ids): a hash, "r" = OperationRecord's text,
         and under a caller's clock "exp" = its lapse on that clock
KEYS[2]  the counter
ARGV     delta, fingerprint (16 hex digits), pexpire (ms), now, exp ('-', '-' on the server's
         clock)
Reply    {record}: the first call's record for a repeat (nothing applied), else the record of
         this increment, written in this script
Errors   as counters.lua's: TALLY_OVERFLOW 2 <value> <delta>, TALLY_NOT_INTEGER 2,
         TALLY_NOT_A_COUNTER 2; a key of another type is Redis' WRONGTYPE. Nothing is written.
]]

local now = ARGV[4]
local held = redis.call('HMGET', KEYS[1], 'r', 'exp')
if held[1] then
  local live = true
  if now ~= '-' and held[2] then
    -- lapsed once the caller's clock reaches exp (both epoch-nanosecond decimals, no sign)
    local e = held[2]
    live = #now < #e or (#now == #e and now < e)
  end
  if live then
    return {held[1]}
  end
end

local value = redis.pcall('INCRBY', KEYS[2], ARGV[1])
if type(value) == 'table' then
  local why = value.err or ''
  if string.find(why, '^WRONGTYPE') then
    return value
  end
  local current = redis.call('GET', KEYS[2])
  if string.find(why, 'overflow') then
    return redis.error_reply('TALLY_OVERFLOW 2 ' .. tostring(current) .. ' ' .. ARGV[1])
  end
  return redis.error_reply((current and tonumber(current) and 'TALLY_NOT_INTEGER 2') or 'TALLY_NOT_A_COUNTER 2')
end

-- The integer reply is a Lua double: exact below 2^53; above, read the decimal back.
local text
if value > -9007199254740992 and value < 9007199254740992 then
  text = string.format('%.0f', value)
else
  text = redis.call('GET', KEYS[2])
end
local record = ARGV[2] .. '|L' .. text
if ARGV[5] ~= '-' then
  redis.call('HSET', KEYS[1], 'r', record, 'exp', ARGV[5])
else
  redis.call('HSET', KEYS[1], 'r', record)
  if held[2] then
    redis.call('HDEL', KEYS[1], 'exp')
  end
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {record}
