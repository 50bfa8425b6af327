--[[
Tally's integers for the Redis scripts: the one exact integer arithmetic limiter.lua and
counters.lua share. A script that needs it says so in a line "-- requires: int64.lua", and
Script.load (tally-redis) prepends this file to it, as Redis scripts cannot load modules; the
SHA Redis caches the script under is that of the whole text. A Lua error's line number is then
one of the whole text, which ScriptRunner turns back into a file and a line ("limiter.lua:812").

Lua numbers are doubles, exact for integers below 2^53, while instants (about 1.8e18 ns) need 61
bits, a counter 64, and the sliding window multiplies counts by durations (up to 2^124). So every
integer is a Lua number while its magnitude is below 2^53, otherwise a "big": a sign and
base-2^24 limbs, lowest first ({neg = false, m = {...}}). int64() returns, in this order:
  add, negate, sub, mul     exact, with a fast path when the operands and the result are numbers
  cmp, lt, le, eq, max, min  comparisons of either
  fdivmod(a, b)             floor(a / b) and the non-negative remainder, b > 0 (Math.floorDiv,
                            Math.floorMod)
  num(s)                    the integer written in s, once s is checked to be an optional minus
                            and digits (any number of them)
  fmt(v)                    the decimal, as Long.toString and BigInteger.toString write it
  dec_less(a, b)            a < b for integers written as canonical decimals, without reading
                            them, at any length
  MAX, MIN                  Long.MAX_VALUE and Long.MIN_VALUE
as a script takes them: local add, negate, sub, mul, cmp, lt, le, eq, max, min, fdivmod, num,
fmt, dec_less, MAX, MIN = int64(). SAFE (2^53) and HALF (2^52), the bounds of exact numbers, are
plain locals.

Floor division of two numbers is math.floor(a / b), with no correction after it: for integers
with |a| + b < 2^53, b > 0, the double quotient never rounds across an integer (its distance to
the next integer, at least 1/b, exceeds half a unit in the last place, at most (|a|/b + 1) 2^-53),
so the floor of it is Math.floorDiv's. limiter.lua relies on this too.

Nothing is made until it is needed: Redis runs a script's whole body, making every function in
it anew, on each call, so this file makes one closure, without upvalues, and a script calls it
only on a path that needs integers (the limiter's fast path never does); the limb arithmetic is
made on the first big.
]]

local SAFE = 9007199254740992    -- 2^53
local HALF = 4503599627370496    -- 2^52

-- The arithmetic above: its functions and constants, in that order.
local function int64()
  local B = 16777216               -- 2^24, the limb base
  local B2 = 281474976710656       -- 2^48

  -- ---------------------------------------------------------------- magnitudes (limb arrays)

  local trim, limbs, mcmp, madd, msub, mmul, mdouble, mdivmod, make, big, TEN7

  local function bigs()
    if make then
      return
    end
    function trim(m)
      local n = #m
      while n > 0 and m[n] == 0 do
        m[n] = nil
        n = n - 1
      end
      return m
    end

    -- The limbs of a non-negative integer-valued double (exact at any size: fmod and division by a
    -- power of two are exact).
    function limbs(x)
      local m, i = {}, 0
      while x > 0 do
        i = i + 1
        local l = math.fmod(x, B)
        m[i] = l
        x = (x - l) / B
      end
      return m
    end

    function mcmp(a, b)
      local na, nb = #a, #b
      if na ~= nb then
        return na < nb and -1 or 1
      end
      for i = na, 1, -1 do
        if a[i] ~= b[i] then
          return a[i] < b[i] and -1 or 1
        end
      end
      return 0
    end

    function madd(a, b)
      local r, carry = {}, 0
      for i = 1, math.max(#a, #b) do
        local s = (a[i] or 0) + (b[i] or 0) + carry
        if s >= B then
          r[i], carry = s - B, 1
        else
          r[i], carry = s, 0
        end
      end
      if carry > 0 then
        r[#r + 1] = carry
      end
      return r
    end

    function msub(a, b) -- a >= b
      local r, borrow = {}, 0
      for i = 1, #a do
        local s = a[i] - (b[i] or 0) - borrow
        if s < 0 then
          r[i], borrow = s + B, 1
        else
          r[i], borrow = s, 0
        end
      end
      return trim(r)
    end

    function mmul(a, b)
      local na, nb = #a, #b
      local r = {}
      for k = 1, na + nb do
        r[k] = 0
      end
      for i = 1, na do
        local ai, carry = a[i], 0
        if ai ~= 0 then
          for j = 1, nb do
            local s = r[i + j - 1] + ai * b[j] + carry -- < 2^24 + 2^48 + 2^25: exact
            local l = math.fmod(s, B)
            r[i + j - 1], carry = l, (s - l) / B
          end
          local k = i + nb
          while carry > 0 do
            local s = r[k] + carry
            local l = math.fmod(s, B)
            r[k], carry = l, (s - l) / B
            k = k + 1
          end
        end
      end
      return trim(r)
    end

    function mdouble(m)
      local v = 0
      for i = #m, 1, -1 do
        v = v * B + m[i]
      end
      return v
    end

    -- floor(a / b) and a mod b, b not zero. Each round subtracts an underestimate of the quotient
    -- taken from doubles (relative error far below the 1e-10 margin), so the remainder never goes
    -- negative and shrinks by about 2^-33 per round.
    function mdivmod(a, b)
      local q, r = {}, a
      local db = mdouble(b)
      while mcmp(r, b) >= 0 do
        local est = math.floor(mdouble(r) / db * 0.9999999999)
        if est < 1 then
          est = 1
        end
        local e = limbs(est)
        r = msub(r, mmul(e, b))
        q = madd(q, e)
      end
      return trim(q), r
    end

    -- A value from a sign and limbs: a Lua number when below 2^53 in magnitude, else a big.
    function make(negative, m)
      trim(m)
      local n = #m
      if n <= 2 or (n == 3 and m[3] < 32) then
        local v = (m[3] or 0) * B2 + (m[2] or 0) * B + (m[1] or 0)
        if negative and v ~= 0 then
          return -v
        end
        return v
      end
      return {neg = negative, m = m}
    end

    function big(x)
      if type(x) == 'table' then
        return x
      end
      if x < 0 then
        return {neg = true, m = limbs(-x)}
      end
      return {neg = false, m = limbs(x)}
    end

    TEN7 = limbs(10000000)
  end

  -- ---------------------------------------------------------------- signed integers

  local function add(a, b)
    if type(a) == 'number' and type(b) == 'number' then
      local s = a + b
      if s > -SAFE and s < SAFE then
        return s
      end
    end
    bigs()
    a, b = big(a), big(b)
    if a.neg == b.neg then
      return make(a.neg, madd(a.m, b.m))
    end
    if mcmp(a.m, b.m) >= 0 then
      return make(a.neg, msub(a.m, b.m))
    end
    return make(b.neg, msub(b.m, a.m))
  end

  local function negate(a)
    if type(a) == 'number' then
      return 0 - a
    end
    return {neg = not a.neg, m = a.m}
  end

  local function sub(a, b)
    if type(a) == 'number' and type(b) == 'number' then
      local d = a - b
      if d > -SAFE and d < SAFE then
        return d
      end
    end
    return add(a, negate(b))
  end

  local function mul(a, b)
    if type(a) == 'number' and type(b) == 'number' then
      local p = a * b
      if p > -SAFE and p < SAFE then
        return p
      end
    end
    bigs()
    a, b = big(a), big(b)
    return make(a.neg ~= b.neg, mmul(a.m, b.m))
  end

  -- A big is always at least 2^53 in magnitude, so against a number its sign decides.
  local function cmp(a, b)
    local na, nb = type(a) == 'number', type(b) == 'number'
    if na and nb then
      return a < b and -1 or (a > b and 1 or 0)
    elseif nb then
      return a.neg and -1 or 1
    elseif na then
      return b.neg and 1 or -1
    elseif a.neg ~= b.neg then
      return a.neg and -1 or 1
    end
    bigs()
    local c = mcmp(a.m, b.m)
    return a.neg and -c or c
  end

  -- The comparisons, with the common case (two numbers) first.
  local function lt(a, b)
    if type(a) == 'number' and type(b) == 'number' then
      return a < b
    end
    return cmp(a, b) < 0
  end

  local function le(a, b)
    if type(a) == 'number' and type(b) == 'number' then
      return a <= b
    end
    return cmp(a, b) <= 0
  end

  local function eq(a, b)
    if type(a) == 'number' and type(b) == 'number' then
      return a == b
    end
    return cmp(a, b) == 0
  end

  local function max(a, b)
    if type(a) == 'number' and type(b) == 'number' then
      return a >= b and a or b
    end
    return cmp(a, b) >= 0 and a or b
  end

  local function min(a, b)
    if type(a) == 'number' and type(b) == 'number' then
      return a <= b and a or b
    end
    return cmp(a, b) <= 0 and a or b
  end

  -- floor(a / b) and the non-negative remainder, for b > 0 (Math.floorDiv, Math.floorMod).
  local function fdivmod(a, b)
    if type(a) == 'number' and type(b) == 'number' and a > -HALF and a < HALF and b < HALF then
      local q = math.floor(a / b) -- exact: |a| + b < 2^53 (see the top)
      return q, a - q * b
    end
    bigs()
    local x, y = big(a), big(b)
    local q, r = mdivmod(x.m, y.m)
    if x.neg and #r > 0 then
      return make(true, madd(q, {1})), make(false, msub(y.m, r))
    end
    return make(x.neg, q), make(false, r)
  end


  -- The integer written in s, which has been checked to be an optional minus and digits.
  local function num(s)
    if #s <= 15 then
      return tonumber(s)
    end
    bigs()
    local negative = string.sub(s, 1, 1) == '-'
    local digits = negative and string.sub(s, 2) or s
    local m, pos, len = {}, 1, (#digits - 1) % 7 + 1
    while pos <= #digits do
      m = madd(mmul(m, TEN7), limbs(tonumber(string.sub(digits, pos, pos + len - 1))))
      pos, len = pos + len, 7
    end
    return make(negative, m)
  end

  local function fmt(v)
    if type(v) == 'number' then
      if v == 0 then
        return '0'
      end
      return string.format('%.0f', v)
    end
    bigs()
    local m, parts = v.m, {}
    while #m > 0 do
      local q, rem = {}, 0
      for i = 1, #m do
        q[i] = 0
      end
      for i = #m, 1, -1 do
        local cur = rem * B + m[i] -- < 10^7 * 2^24 + 2^24 < 2^48
        local d = math.floor(cur / 10000000) -- exact (see the top)
        q[i], rem = d, cur - d * 10000000
      end
      parts[#parts + 1] = rem
      m = trim(q)
    end
    local s = string.format('%.0f', parts[#parts])
    for i = #parts - 1, 1, -1 do
      s = s .. string.format('%07.0f', parts[i])
    end
    return (v.neg and '-' or '') .. s
  end

  local MAX = {neg = false, m = {16777215, 16777215, 32767}} -- 2^63 - 1
  local MIN = {neg = true, m = {0, 0, 32768}}                -- -2^63

  local function dec_less(a, b)
    local na, nb = string.sub(a, 1, 1) == '-', string.sub(b, 1, 1) == '-'
    if na ~= nb then
      return na
    end
    if na then
      a, b = string.sub(b, 2), string.sub(a, 2)
    end
    if #a ~= #b then
      return #a < #b
    end
    return a < b
  end

  return add, negate, sub, mul, cmp, lt, le, eq, max, min, fdivmod, num, fmt, dec_less, MAX, MIN
end
