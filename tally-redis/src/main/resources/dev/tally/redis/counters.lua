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
                                  key must exist, '!' if default + delta overflows
  incrf  delta  default           floating decimals
  put    value  ttl               ttl in milliseconds, '' for none
  del    -      -                 result "1" if the key was live, else "0"
  get    -      -                 result the value, or nil
  popi   -      -                 get and delete, refusing a floating counter
  pop    -      -                 get and delete an integer or floating counter

An increment keeps a live key's expiry and gives a key it creates none. Every operation is
applied to a working copy first; only when all have succeeded are the changed keys written, so
a failure writes nothing. Errors are "TALLY_<WHAT> <key index>" with WHAT one of OVERFLOW
(64-bit), NOT_FINITE (floating result), NOT_FOUND, NOT_INTEGER, NOT_A_COUNTER.
]]

-- 64-bit integers. Lua 5.1 numbers are doubles, exact only up to 2^53, so an integer is kept as
-- a sign and three base-10^7 limbs (lowest first): every limb sum or difference stays exact.
local BASE = 10000000
local MAX_POSITIVE = {4775807, 7203685, 92233} -- 9223372036854775807
local MAX_NEGATIVE = {4775808, 7203685, 92233} -- 9223372036854775808

local function compare(a, b)
  for i = 3, 1, -1 do
    if a[i] ~= b[i] then
      return a[i] < b[i] and -1 or 1
    end
  end
  return 0
end

local function in_range(n)
  return compare(n.limbs, n.negative and MAX_NEGATIVE or MAX_POSITIVE) <= 0
end

-- The integer written in s, or nil if s is not a signed 64-bit decimal.
local function int_parse(s)
  local sign, digits = string.match(s, '^(%-?)(%d+)$')
  if not digits then
    return nil
  end
  digits = string.gsub(digits, '^0+', '')
  if #digits > 19 then
    return nil
  end
  local limbs = {0, 0, 0}
  local i, n = #digits, 1
  while i >= 1 do
    limbs[n] = tonumber(string.sub(digits, math.max(1, i - 6), i))
    i, n = i - 7, n + 1
  end
  local v = {negative = sign == '-' and #digits > 0, limbs = limbs}
  if not in_range(v) then
    return nil
  end
  return v
end

-- a + b, or nil if the sum leaves the signed 64-bit range.
local function int_add(a, b)
  local x, y, negative = a.limbs, b.limbs, a.negative
  local sign = 1
  if a.negative ~= b.negative then
    sign = -1
    if compare(x, y) < 0 then
      x, y, negative = y, x, b.negative
    end
  end
  local limbs, carry = {}, 0
  for i = 1, 3 do
    local d = x[i] + sign * y[i] + carry
    carry = 0
    if d >= BASE then
      d, carry = d - BASE, 1
    elseif d < 0 then
      d, carry = d + BASE, -1
    end
    limbs[i] = d
  end
  local sum = {negative = negative and (limbs[1] + limbs[2] + limbs[3]) > 0, limbs = limbs}
  if not in_range(sum) then
    return nil
  end
  return sum
end

local function int_format(n)
  local l = n.limbs
  local s
  if l[3] > 0 then
    s = string.format('%d%07d%07d', l[3], l[2], l[1])
  elseif l[2] > 0 then
    s = string.format('%d%07d', l[2], l[1])
  else
    s = string.format('%d', l[1])
  end
  return (n.negative and '-' or '') .. s
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

-- Working copy: per key, its value (false when missing), how to write its expiry ('keep' the
-- live key's, 'none', or milliseconds) and whether it changed.
local keys = {}
for k = 1, #KEYS do
  keys[k] = {value = redis.call('GET', KEYS[k]), ttl = 'keep', dirty = false}
end

local results = {}
for op = 1, #ARGV / 4 do
  local code, k, a, b = ARGV[4 * op - 3], tonumber(ARGV[4 * op - 2]), ARGV[4 * op - 1], ARGV[4 * op]
  local key = keys[k]
  local result
  if code == 'incr' then
    if not key.value then
      if b == '' then
        return fail('NOT_FOUND', k)
      elseif b == '!' then
        return fail('OVERFLOW', k)
      end
      key.value, key.ttl = b, 'none'
    else
      local current = int_parse(key.value)
      if not current then
        return fail(tonumber(key.value) and 'NOT_INTEGER' or 'NOT_A_COUNTER', k)
      end
      local sum = int_add(current, int_parse(a))
      if not sum then
        return fail('OVERFLOW', k)
      end
      key.value = int_format(sum)
    end
    key.dirty = true
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
      return fail('NOT_FINITE', k)
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
  else
    return redis.error_reply('TALLY_UNKNOWN_OPERATION ' .. k)
  end
  results[op] = result
end

for k = 1, #KEYS do
  local key = keys[k]
  if key.dirty then
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
return results
