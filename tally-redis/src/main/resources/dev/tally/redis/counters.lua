-- requires: int64.lua
--[[
Tally counters: applies a list of operations to KEYS atomically, all or none, and returns one
result per operation.

One script serves transactions and every single operation Redis has no command for (an
increment with a non-zero default or that must not create, a floating increment, a pop that
refuses a floating counter), so the counter rules below live in one place.

Values are plain strings that redis-cli can GET and INCRBY (docs/redis.md):
  integer   "-?[0-9]+", signed 64-bit, as INCRBY reads and writes it
  floating  any other number; Tally always writes one with a '.' or an exponent ("2.5", "3.0",
            "1e-300"), so a floating counter holding a whole number stays floating

ARGV holds four strings per operation: a code, the 1-based index of its key in KEYS, then
  incr   delta  value-if-missing  a decimal (default + delta, added by the client), '' if the
                                  key must exist, '!' and the default if default + delta
                                  overflows
  incrb  delta  "dflt min max on"  a bounded increment (CounterMath.addWithin): dflt '-' if the
                                  key must exist; on 'r' refuses (TALLY_OUT_OF_BOUNDS), 's'
                                  sets the bound the sum lies beyond
  incrf  delta  default           floating decimals
  put    value  ttl               ttl in milliseconds, '' for none
  del    -      -                 result "1" if the key was live, else "0"
  get    -      -                 result the value, or nil
  popi   -      -                 get and delete, refusing a floating counter
  pop    -      -                 get and delete an integer or floating counter
  add    value  ttl               set only if missing; result "1" if it did, else "0"
  touch  ttl    -                 a live key's new expiry (milliseconds, '' for none); result "1"
                                  if the key was live, else "0"
  ttl    -      -                 result PTTL's answer: -2 missing, -1 no expiry, else milliseconds

Every operation reads its key with GET, so a key that is not a string (a rate limiter's hash)
fails the whole call with WRONGTYPE: no counter operation, a read or a delete, passes a
limiter's name.

Operation ids (docs/redis.md#operation-ids). When the first four strings are
  once   <index>  fingerprint  "shape pexpire now exp"
the key at that index is the id's record, a hash, not a counter: if it holds a live record ("r",
and under a caller's clock an "exp" later than now), the script applies nothing and returns
{record}. Otherwise it applies the operations as usual and, only if all succeed, writes the
record in OperationRecord's text form (tally-core), fingerprint "|" result, with PEXPIRE
pexpire (milliseconds), and returns {record}. The shape says how the results read as one:
  value  the first result as a number (L integer, D floating), or N for nil
  none   N
  bool   T if the first result is "1", else F
  list   every result as a number or N, in brackets, comma-separated
now and exp are epoch nanoseconds on the caller's clock, or '-' on the server's clock (then
Redis' own expiry of the record alone decides).

An increment keeps a live key's expiry and gives a key it creates none. Every operation is
applied to a working copy first; only when all have succeeded are the changed keys written, so
a failure writes nothing. Errors are "TALLY_<WHAT> <key index>" with WHAT one of OVERFLOW
(64-bit), NOT_FINITE (floating result), NOT_FOUND, NOT_INTEGER, NOT_A_COUNTER, OUT_OF_BOUNDS;
OVERFLOW and NOT_FINITE add the value and the delta, OUT_OF_BOUNDS the value, the delta, min and
max, for CounterMath's message.
]]

-- int64.lua's arithmetic, made on first use: an operation that reads no integer (a get, a put)
-- never needs it, nor does an increment whose numbers all lie below 2^53 (int_parse, int_add):
-- making int64's functions costs an ordinary increment half again its time.
local add, negate, sub, mul, cmp, lt, le, eq, max, min, fdivmod, num, fmt, dec_less, MAX, MIN
local function integers()
  if not add then
    add, negate, sub, mul, cmp, lt, le, eq, max, min, fdivmod, num, fmt, dec_less, MAX, MIN = int64()
  end
end

-- The integer written in s, or nil if s is not a signed 64-bit decimal. Leading zeros are read
-- past, so that no length of them makes the exact arithmetic slow.
local function int_parse(s)
  local sign, digits = string.match(s, '^(%-?)0*(%d+)$')
  if not digits or #digits > 19 then
    return nil
  elseif #digits <= 15 then
    return tonumber(sign .. digits) -- below 2^53: a plain number, as int64 keeps one
  end
  integers()
  local v = num(sign .. digits)
  if lt(v, MIN) or lt(MAX, v) then
    return nil
  end
  return v
end

-- a + b, or nil if the sum leaves the signed 64-bit range.
local function int_add(a, b)
  if type(a) == 'number' and type(b) == 'number' then
    local sum = a + b -- exact when it lies below 2^53, where int64 keeps plain numbers too
    if sum > -2^53 and sum < 2^53 then
      return sum
    end
  end
  integers()
  local sum = add(a, b)
  if lt(sum, MIN) or lt(MAX, sum) then
    return nil
  end
  return sum
end

-- The shortest of %.15g, %.16g, %.17g that reads back as x (%.17g always does), with ".0"
-- appended when that looks like an integer, so the counter stays floating.
local function float_format(x)
  local s
  for _, format in ipairs({'%.15g', '%.16g', '%.17g'}) do
    s = string.format(format, x)
    if tonumber(s) == x then
      break
    end
  end
  if not string.find(s, '[%.e]') then
    s = s .. '.0'
  end
  return s
end

-- Whether s is a counter: a 64-bit integer, or a finite decimal with a point or an exponent as
-- Tally and INCRBYFLOAT write them. A pop checks it before deleting anything.
local function is_counter(s)
  if int_parse(s) then
    return true
  end
  local x = tonumber(s)
  local mantissa = string.gsub(s, '[eE][%-+]?%d+$', '', 1)
  return x ~= nil and x == x and x ~= math.huge and x ~= -math.huge
      and (string.find(mantissa, '^%-?%d+%.?%d*$') or string.find(mantissa, '^%-?%.%d+$')) ~= nil
end

local function fail(what, k)
  return redis.error_reply('TALLY_' .. what .. ' ' .. k)
end

local once, first = nil, 1
if ARGV[1] == 'once' then
  local shape, pexpire, now, exp = string.match(ARGV[4], '^(%a+) (%d+) (%S+) (%S+)$')
  once = {k = tonumber(ARGV[2]), fingerprint = ARGV[3], shape = shape, pexpire = pexpire, now = now,
    exp = exp}
  local held = redis.call('HMGET', KEYS[once.k], 'r', 'exp')
  integers()
  -- Live unless a caller's clock has reached its "exp" (Redis' expiry is only a day later then).
  if held[1] and not (now ~= '-' and held[2] and not dec_less(now, held[2])) then
    return {held[1]} -- a repeat: the first call's record, nothing applied
  end
  once.had_exp = held[2] and true
  first = 2
end

-- Working copy: per key, its value (false when missing), how to write its expiry ('keep' the
-- live key's, 'none', or milliseconds) and whether it changed.
local keys = {}
for k = 1, #KEYS do
  if not (once and k == once.k) then
    keys[k] = {value = redis.call('GET', KEYS[k]), ttl = 'keep', dirty = false}
  end
end

local results, n = {}, 0
for op = first, #ARGV / 4 do
  local code, k, a, b = ARGV[4 * op - 3], tonumber(ARGV[4 * op - 2]), ARGV[4 * op - 1], ARGV[4 * op]
  local key = keys[k]
  local result
  if code == 'incr' then
    if not key.value then
      if b == '' then
        return fail('NOT_FOUND', k)
      elseif string.sub(b, 1, 1) == '!' then
        return fail('OVERFLOW', k .. ' ' .. string.sub(b, 2) .. ' ' .. a)
      end
      key.value, key.ttl = b, 'none'
    else
      local current = int_parse(key.value)
      if not current then
        return fail(tonumber(key.value) and 'NOT_INTEGER' or 'NOT_A_COUNTER', k)
      end
      local sum = int_add(current, int_parse(a))
      if not sum then
        return fail('OVERFLOW', k .. ' ' .. key.value .. ' ' .. a)
      end
      key.value = type(sum) ~= 'number' and fmt(sum) or sum == 0 and '0' or string.format('%.0f', sum)
    end
    key.dirty = true
    result = key.value
  elseif code == 'incrb' then
    integers() -- exact sums at any size: a bound is compared with what lies beyond 64 bits too
    local dflt, lo, hi, on = string.match(b, '^(%S+) (%S+) (%S+) ([rs])$')
    local current
    if key.value then
      current = int_parse(key.value)
      if not current then
        return fail(tonumber(key.value) and 'NOT_INTEGER' or 'NOT_A_COUNTER', k)
      end
    elseif dflt == '-' then
      return fail('NOT_FOUND', k)
    else
      current = int_parse(dflt)
    end
    -- Exact at any size: a sum beyond the 64-bit range is beyond a bound too.
    local sum = add(current, int_parse(a))
    local beyond
    if lt(num(hi), sum) then
      beyond = hi
    elseif lt(sum, num(lo)) then
      beyond = lo
    end
    if beyond and on == 'r' then
      return fail('OUT_OF_BOUNDS', k .. ' ' .. fmt(current) .. ' ' .. a .. ' ' .. lo .. ' ' .. hi)
    end
    if not key.value then
      key.ttl = 'none'
    end
    key.value, key.dirty = beyond or fmt(sum), true
    result = key.value
  elseif code == 'incrf' then
    local base
    if key.value then
      base = tonumber(key.value)
      if not base then
        return fail('NOT_A_COUNTER', k)
      end
    else
      base, key.ttl = tonumber(b), 'none'
    end
    local x = base + tonumber(a)
    if x ~= x or x == math.huge or x == -math.huge then
      return fail('NOT_FINITE', k .. ' ' .. (key.value or b) .. ' ' .. a)
    end
    key.value, key.dirty = float_format(x), true
    result = key.value
  elseif code == 'put' then
    key.value, key.dirty = a, true
    key.ttl = b == '' and 'none' or b
    result = a
  elseif code == 'del' then
    result = key.value and '1' or '0'
    if key.value then
      key.value, key.dirty = false, true
    end
  elseif code == 'get' then
    result = key.value
  elseif code == 'popi' then
    result = key.value
    if key.value then
      if not int_parse(key.value) then
        return fail(tonumber(key.value) and 'NOT_INTEGER' or 'NOT_A_COUNTER', k)
      end
      key.value, key.dirty = false, true
    end
  elseif code == 'pop' then
    result = key.value
    if key.value then
      if not is_counter(key.value) then
        return fail('NOT_A_COUNTER', k)
      end
      key.value, key.dirty = false, true
    end
  elseif code == 'add' then
    if key.value then
      result = '0'
    else
      key.value, key.dirty, result = a, true, '1'
      key.ttl = b == '' and 'none' or b
    end
  elseif code == 'ttl' then
    result = tostring(redis.call('PTTL', KEYS[k]))
  elseif code == 'touch' then
    if key.value then
      key.ttl, key.dirty, result = a == '' and 'none' or a, true, '1'
    else
      result = '0'
    end
  else
    return redis.error_reply('TALLY_UNKNOWN_OPERATION ' .. k)
  end
  n = n + 1
  results[n] = result
end

for k = 1, #KEYS do
  local key = keys[k]
  if key and key.dirty then
    if not key.value then
      redis.call('DEL', KEYS[k])
    elseif key.ttl == 'keep' then
      redis.call('SET', KEYS[k], key.value, 'KEEPTTL')
    elseif key.ttl == 'none' then
      redis.call('SET', KEYS[k], key.value)
    else
      redis.call('SET', KEYS[k], key.value, 'PX', key.ttl)
    end
  end
end
if not once then
  return results
end

-- The id's record: the results as OperationRecord.encode() writes them.
local function number(v)
  if not v then
    return 'N'
  end
  return (string.find(v, '^%-?%d+$') and 'L' or 'D') .. v
end
local result
if once.shape == 'value' then
  result = number(results[1])
elseif once.shape == 'none' then
  result = 'N'
elseif once.shape == 'bool' then
  result = results[1] == '1' and 'T' or 'F'
else
  local parts = {}
  for i = 1, n do
    parts[i] = number(results[i])
  end
  result = '[' .. table.concat(parts, ',') .. ']'
end
local record = once.fingerprint .. '|' .. result
if once.exp ~= '-' then
  redis.call('HSET', KEYS[once.k], 'r', record, 'exp', once.exp)
else
  redis.call('HSET', KEYS[once.k], 'r', record)
  if once.had_exp then
    redis.call('HDEL', KEYS[once.k], 'exp') -- left by a caller's clock on an expired record
  end
end
redis.call('PEXPIRE', KEYS[once.k], once.pexpire)
return {record}
