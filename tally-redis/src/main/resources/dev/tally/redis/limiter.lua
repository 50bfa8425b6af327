-- requires: int64.lua
--[[
Tally rate limiters: runs a limiter's state machine once, atomically, on KEYS[1]. This is
tally-core's LimiterMachine with its algorithms (Gcra.java, FixedWindow.java, SlidingWindow.java,
CalendarQuota.java), line for line, over the same record; LimiterVectorsTest replays the kit's
limiter vectors, written by the Java machine, and requires identical decisions and records.

KEYS[1]  the limiter's hash (docs/redis.md):
           "1", "2", ...  one field per limit: the record's six words "tag p0 p1 s0 s1 s2" as
                          decimals, s0 an instant in epoch nanoseconds; the tag is the limit's
                          kind plus 256 times the limits' version (LimiterRecord), below 2^53
           "exp"          only under a caller's clock: the instant (on that clock) at which the
                          record is full and counts as absent
           "at"           the latest instant (epoch nanoseconds) a decision on this state was
                          taken at: every call is decided at max(now, at), so time never runs
                          back for any algorithm (LimiterRecord.decidedAt)
           "v"            the record format, LimiterRecord.VERSION (1); a hash of another
                          version is refused (TALLY_VERSION), never misread; reset clears it
KEYS[2]  only with an operation id: the id's record (docs/redis.md#operation-ids), a hash with
         "r", the record in OperationRecord's text form, and under a caller's clock "exp"
ARGV     op permits clock count, then four per limit the caller configured: tag p0 p1 zone (the tag
         with the caller's version, as stored; for a bucket with a warm-up, whose tag holds a cold
         factor, zone is the warm-up period in nanoseconds, the record's s1), then
         with an operation id four more: fingerprint pexpire now exp
  op       acquire | peek | refund | reset | reconfigure | topup | charge, or batch, or joint
  permits  a decimal; for a batch, "op permits op permits ...": concurrent calls with the same
           limits, decided one after the other at the same instant
           joint: several limiters, one per key of KEYS, acquired all or none (see the end)
  clock    '' to decide at the server's TIME; else the caller's clock, epoch nanoseconds
  zone     '' for none (a quota then follows UTC), or eight epoch seconds "d1 d2 d3 d4 m1 m2 m3 m4":
           consecutive starts of days, then of months, in the quota's zone around the caller's
           time, computed by the caller with java.time (Lua knows no time zones)
Reply    {allowed 1|0, remaining, limit, retryAfter, resetAfter, deciding limit (from 0)}, each an
         integer or a decimal string (the fast path answers integers, the general path strings);
         when the stored limits differed from the caller's (Decision.Mismatch), the deciding
         limit is followed by "u", "a" or "c" (upgraded, adopted, conflict) and the stored
         version: "0 a 2";
         a state of several limits follows with their count and each one's remaining, limit and
         resetAfter (Decision.limits()), so one limit's reply stays six values; for a batch, one
         such decision per operation, one after the other
         with an operation id, {record} instead: a live record means a repeat (nothing is
         decided or written), else the decision is taken and recorded (fingerprint "|Q" and the
         decision's values, comma-separated) with PEXPIRE pexpire (ms); now and exp are the caller's
         clock and the record's lapse on it, or '-' on the server's clock
Errors   TALLY_BAD_STATE <why>, TALLY_NO_QUOTA, TALLY_CLOCK_SKEW <the instant decided at, epoch ns>,
         TALLY_VERSION <the record format found>

Arithmetic. Lua numbers are doubles, exact for integers below 2^53, while instants (about 1.8e18
ns) need 61 bits and the sliding window multiplies counts by durations (up to 2^124). So:
  * every integer is a Lua number while its magnitude is below 2^53, otherwise a big, with
    int64.lua's exact arithmetic (prepended to this file by Script.load), which keeps two numbers
    on a fast path;
  * the machine runs in a frame where now is 0: instants are read as (stored - now) and written
    back as (now + value). Differences of instants are small for any realistic limit, so the
    arithmetic stays on the fast path; absolute nanoseconds are only ever split as seconds and
    nanoseconds (as TIME gives them) or handled as bigs.
]]

local GIGA = 1000000000

-- int64.lua's arithmetic, made (int64()) where a call first needs it: never on the fast path.
local add, negate, sub, mul, cmp, lt, le, eq, max, min, fdivmod, num, fmt, dec_less, MAX, MIN

-- ------------------------------------------------------------------ the clock

-- now = NOW_S * 10^9 + NOW_NS exactly, 0 <= NOW_NS < 10^9. A caller's clock that is not a plain
-- decimal of 10 to 19 digits is read further down, with the exact arithmetic.
local clock = ARGV[3]
local overridden = clock ~= ''
local NOW_S, NOW_NS
if not overridden then
  local t = redis.call('TIME')
  NOW_S, NOW_NS = tonumber(t[1]), tonumber(t[2]) * 1000
elseif string.find(clock, '^%d%d%d%d%d%d%d%d%d%d+$') and #clock <= 19 then
  NOW_S, NOW_NS = tonumber(string.sub(clock, 1, -10)), tonumber(string.sub(clock, -9))
end

-- ------------------------------------------------------------------ an operation id

-- A repeat of an id answers from its record and decides nothing; a first call takes the
-- general path below and records its decision at the end, in this same script.
local ONCE
if KEYS[2] and ARGV[1] ~= 'joint' then
  local o = 4 + 4 * tonumber(ARGV[4])
  ONCE = {fingerprint = ARGV[o + 1], pexpire = ARGV[o + 2], now = ARGV[o + 3], exp = ARGV[o + 4]}
  local held = redis.call('HMGET', KEYS[2], 'r', 'exp')
  add, negate, sub, mul, cmp, lt, le, eq, max, min, fdivmod, num, fmt, dec_less, MAX, MIN = int64()
  if held[1] and not (ONCE.now ~= '-' and held[2] and not dec_less(ONCE.now, held[2])) then
    return {held[1]}
  end
  ONCE.had_exp = held[2] and true
end

-- ------------------------------------------------------------------ the fast path

-- The common call, acquisitions or peeks (alone or a batch) on one token bucket, leaky bucket
-- or GCRA limit whose numbers are all below 2^52, is decided here before anything else is
-- defined (Redis runs this body, making every function below anew, on each call). It takes
-- exactly the steps of the general machine further down (LimiterMachine with Gcra.java) in plain
-- double arithmetic, which is exact below 2^53, in the frame where now is 0. Anything else falls
-- through, with the hash already read.
local FIELDS
do
  local op = ARGV[1]
  local tag = ARGV[5]
  local tagn = #tag <= 15 and string.find(tag, '^%d+$') and tonumber(tag) % 256 -- the kind, below the version
  local ops
  if not ONCE and NOW_S and NOW_S > 0 and ARGV[4] == '1' and (tagn == 1 or tagn == 2 or tagn == 3)
      and #ARGV[6] <= 15 and #ARGV[7] <= 15 then
    if op == 'batch' then
      ops = {}
      for o, p in string.gmatch(ARGV[2], '(%S+) (%S+)') do
        if (o ~= 'acquire' and o ~= 'peek') or #p > 15 then
          ops = nil
          break
        end
        ops[#ops + 1], ops[#ops + 2] = o, tonumber(p)
      end
    elseif (op == 'acquire' or op == 'peek') and #ARGV[2] <= 15 then
      ops = {op, tonumber(ARGV[2])}
    end
  end
  if ops then
    local fields = redis.call('HGETALL', KEYS[1])
    local line, exp, at, version
    local ok = true
    for i = 1, #fields, 2 do
      local f = fields[i]
      if f == '1' then
        line = fields[i + 1]
      elseif f == 'exp' and overridden then
        exp = fields[i + 1]
      elseif f == 'at' then
        at = fields[i + 1]
      elseif f == 'v' and fields[i + 1] == '1' then
        version = true
      else
        ok = false -- more limits, or an "exp" to remove: the general path
      end
    end
    -- An instant written as epoch nanoseconds, in the frame, if it is near now.
    local function rel(text)
      if #text < 10 or #text > 19 or not string.find(text, '^%d+$') then
        return nil
      end
      local ds = tonumber(string.sub(text, 1, -10)) - NOW_S
      if ds <= -4000000 or ds >= 4000000 then
        return nil
      end
      return ds * 1000000000 + (tonumber(string.sub(text, -9)) - NOW_NS)
    end
    if ok and at then
      local a = rel(at)
      ok = a ~= nil and a <= 0 -- decided later than now (or unreadable): the general path
    end
    local live = line ~= nil
    if ok and live and exp then
      local e = rel(exp)
      if not e then
        ok = false
      elseif e <= 0 then
        live = false -- past its logical expiry: absent
      end
    end
    local MINE_C, MINE_T = tonumber(ARGV[6]), tonumber(ARGV[7])
    local k, C, T, S0, S1, S2, read
    if ok and live then
      local t, p0, p1, s0, s1, s2 = string.match(line, '^(%d+) (%d+) (%d+) (%d+) (%d+) (%d+)$')
      -- Only the caller's own limits and version: any other (a mismatch to report, a version to
      -- raise) is the general path's.
      read = t == tag and #p0 <= 15 and #p1 <= 15 and #s1 <= 15 and #s2 <= 15 and tonumber(p0) == MINE_C
          and tonumber(p1) == MINE_T and rel(s0)
      if read then
        k, C, T, S0, S1, S2 = t, tonumber(p0), tonumber(p1), read, tonumber(s1), tonumber(s2)
      else
        ok = false
      end
    end
    if ok and MINE_T > 0 and MINE_C * MINE_T < 4503599627370496 and (not read or (T > 0 and C * T < 4503599627370496)) then
      local function dec(x)
        return x == 0 and '0' or string.format('%.0f', x)
      end
      local function epoch(v)
        local t = NOW_NS + v
        local q = math.floor(t / 1000000000) -- exact below 2^52 (int64.lua)
        return string.format('%.0f%09.0f', NOW_S + q, t - q * 1000000000)
      end
      local reply, fresh = {}, not read
      for j = 1, #ops, 2 do
        local o, permits = ops[j], ops[j + 1]
        if not S0 then
          k, C, T, S0, S1, S2 = tag, MINE_C, MINE_T, 0, 0, 0 -- LimiterMachine.fresh(): the caller's limit
          fresh = true
        end
        if S0 < 0 then
          S0 = 0 -- Gcra.normalize: full, and time spent full earns nothing
        end
        if o == 'peek' then
          permits = 1
        end
        local allowed, retry = true, 0
        if o == 'peek' or permits > 0 then
          if permits > C then
            retry = nil -- NEVER
          else
            local excess = S0 + permits * T - C * T -- Gcra.retryAfter
            retry = excess > 0 and excess or 0
          end
          allowed = retry == 0
          if allowed and o == 'acquire' then
            S0 = S0 + permits * T -- Gcra.consume
          end
        end
        local room = C * T - S0 -- Gcra.remaining
        -- Integers, not decimal strings: every value here is below 2^52, so Redis' conversion
        -- of a Lua number to an integer reply is exact, and it costs a fraction of a
        -- string.format (which made up most of a batch's run time).
        local n = #reply
        reply[n + 1] = allowed and 1 or 0
        reply[n + 2] = room <= 0 and 0 or math.floor(room / T)
        reply[n + 3] = C
        reply[n + 4] = retry or '9223372036854775807'
        reply[n + 5] = S0 -- Gcra.resetAfter, S0 >= 0
        reply[n + 6] = 0 -- the deciding limit: the only one
        if S0 == 0 then
          S0 = nil -- full again: no state
        end
      end
      if not S0 then
        if #fields > 0 then
          redis.call('DEL', KEYS[1])
        end
      else
        local changes = {}
        if fresh or S0 ~= read then
          local new = k .. ' ' .. dec(C) .. ' ' .. dec(T) .. ' ' .. epoch(S0) .. ' ' .. dec(S1) .. ' ' .. dec(S2)
          if new ~= line then
            changes[1], changes[2] = '1', new
          end
        end
        if #changes > 0 then
          local decided = epoch(0)
          if decided ~= at then
            changes[#changes + 1], changes[#changes + 2] = 'at', decided
          end
          if not version then
            changes[#changes + 1], changes[#changes + 2] = 'v', '1'
          end
        end
        if overridden then
          local e = epoch(S0)
          if e ~= exp then
            changes[#changes + 1], changes[#changes + 2] = 'exp', e
          end
        end
        if #changes > 0 then
          redis.call('HSET', KEYS[1], unpack(changes))
          local ms = math.floor(S0 / 1000000)
          if ms * 1000000 < S0 then
            ms = ms + 1
          end
          redis.call('PEXPIRE', KEYS[1], dec(overridden and ms + 86400000 or ms))
        end
      end
      return reply
    end
    FIELDS = fields
  end
end

-- ------------------------------------------------------------------ the general path

local function bad(why)
  return error({err = 'TALLY_BAD_STATE ' .. why})
end

-- ------------------------------------------------------------------ integers (int64.lua)

if not add then
  add, negate, sub, mul, cmp, lt, le, eq, max, min, fdivmod, num, fmt, dec_less, MAX, MIN = int64()
end

-- The integer written in s, refused unless it is an optional minus and digits.
local function parse(s)
  if not string.find(s, '^%-?%d+$') then
    bad('not an integer: ' .. s)
  end
  return num(s)
end

local NEVER = MAX -- Decision.NEVER

-- ------------------------------------------------------------------ the clock and the frame

if not NOW_S then
  NOW_S, NOW_NS = fdivmod(parse(clock), GIGA)
end
local now = 0 -- the machine's frame: every instant below is relative to NOW

-- NOW itself, exactly (a big), for the rare paths that need it whole.
local NOW
local function now_big()
  if not NOW then
    NOW = add(mul(NOW_S, GIGA), NOW_NS)
  end
  return NOW
end

-- An instant s seconds + ns nanoseconds after the epoch, in the frame.
local function frame(s, ns)
  local ds = s - NOW_S
  if ds > -9000000 and ds < 9000000 then
    return ds * GIGA + (ns - NOW_NS) -- below 2^53: exact
  end
  return add(mul(ds, GIGA), ns - NOW_NS)
end

-- A stored instant (epoch nanoseconds, a checked decimal) in the frame.
local function from_epoch(text)
  if #text >= 10 and #text <= 19 and string.byte(text, 1) ~= 45 then -- 45: '-'
    return frame(tonumber(string.sub(text, 1, -10)), tonumber(string.sub(text, -9)))
  end
  return sub(num(text), now_big())
end

-- An instant of the frame as epoch nanoseconds, decimal.
local function to_epoch(v)
  if type(v) == 'number' and v > -HALF and v < HALF then
    local t = NOW_NS + v
    local q = math.floor(t / GIGA) -- exact: |t| + GIGA < 2^53 (int64.lua)
    local ns = t - q * GIGA
    local s = NOW_S + q
    if s >= 1 then
      return string.format('%.0f%09.0f', s, ns)
    end
  end
  return fmt(add(now_big(), v))
end

-- ------------------------------------------------------------------ calendars

local MONTH = 2 -- Limit.Period.MONTH.ordinal() + 1; any other code is a day

-- CalendarQuota.periodEnd: the end of the period containing now. With the caller's boundaries
-- for the zone: the first one after now. Without a zone: UTC, computed here.
local function period_end(code, zone)
  if zone then
    local first = code == MONTH and 5 or 1
    if lt(now, frame(zone[first], 0)) then
      return error({err = 'TALLY_CLOCK_SKEW ' .. to_epoch(now)})
    end
    for i = first + 1, first + 3 do
      local b = frame(zone[i], 0)
      if lt(now, b) then
        return b
      end
    end
    return error({err = 'TALLY_CLOCK_SKEW ' .. to_epoch(now)}) -- the instant the caller's boundaries must cover
  end
  -- UTC, with Howard Hinnant's algorithms for civil dates
  local function days_from_civil(y, m, d)
    if m <= 2 then
      y = y - 1
    end
    local era = math.floor(y / 400)
    local yoe = y - era * 400
    local mp = m > 2 and m - 3 or m + 9
    local doy = math.floor((153 * mp + 2) / 5) + d - 1
    local doe = yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy
    return era * 146097 + doe - 719468
  end

  local function civil_from_days(z)
    z = z + 719468
    local era = math.floor(z / 146097)
    local doe = z - era * 146097
    local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
    local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
    local mp = math.floor((5 * doy + 2) / 153)
    local m = mp < 10 and mp + 3 or mp - 9
    local y = yoe + era * 400
    if m <= 2 then
      y = y + 1
    end
    return y, m
  end

  local day = math.floor(NOW_S / 86400)
  if code == MONTH then
    local y, m = civil_from_days(day)
    if m == 12 then
      y, m = y + 1, 1
    else
      m = m + 1
    end
    return frame(days_from_civil(y, m, 1) * 86400, 0)
  end
  return frame((day + 1) * 86400, 0)
end

-- ------------------------------------------------------------------ the algorithms

-- A limit is a table {tag, p0, p1, s0, s1, s2} (s0 in the frame) with its zone (or nil).
local P0, P1, S0, S1, S2 = 2, 3, 4, 5, 6

-- FixedWindow.windowStart(now, window): now - floorMod(now, window), in the frame.
local function window_start(window)
  if type(window) == 'number' and math.fmod(window, GIGA) == 0 then
    local _, s = fdivmod(NOW_S, window / GIGA)
    return negate(add(mul(s, GIGA), NOW_NS))
  end
  local _, r = fdivmod(now_big(), window)
  return negate(r)
end

-- Arith.floorMulDiv and Arith.ceilMulDiv: exact, saturating at Long.MAX_VALUE.
local function floor_mul_div(a, b, c)
  local q = fdivmod(mul(a, b), c)
  return min(q, MAX)
end

local function ceil_mul_div(a, b, c)
  local q, r = fdivmod(mul(a, b), c)
  if not eq(r, 0) then
    q = add(q, 1)
  end
  return min(q, MAX)
end

-- Each operation dispatches on the algorithm (Gcra.java for tags 1-3, WarmingGcra.java for those
-- with a cold factor, FixedWindow.java, SlidingWindow.java, CalendarQuota.java), one function per
-- operation rather than per algorithm and operation: Redis runs this file's body on every call,
-- and every function defined here is a closure made anew each time.
local GCRA, FIXED, SLIDING, QUOTA, WARM = 1, 2, 3, 4, 5
local KIND = {GCRA, GCRA, GCRA, FIXED, SLIDING, QUOTA} -- by tag: Limit.Kind ordinal + 1

local function kind(tag)
  local k = type(tag) == 'number' and tag >= 0 and tag < SAFE and KIND[tag % 256]
  if not k and type(tag) == 'number' and tag >= 0 and tag < SAFE then
    -- LimiterRecord: a bucket's cold factor, 2 to 15, in bits 4-7 of the tag
    local factor = math.floor((tag % 256) / 16)
    if factor >= 2 and KIND[tag % 16] == GCRA then
      k = WARM
    end
  end
  if not k then
    bad('unknown algorithm tag ' .. fmt(tag) .. '; it was written by a newer or foreign version')
  end
  return k
end

-- LimiterRecord: a tag word is the kind plus 256 times the limits' version, below 2^53 so that it
-- is always a Lua number; anything else is an unknown tag.
local function tag_of(s)
  local t = #s <= 16 and string.find(s, '^%d+$') and tonumber(s)
  if not t or t >= SAFE then
    bad('unknown algorithm tag ' .. s .. '; it was written by a newer or foreign version')
  end
  return t
end

local function version_of(tag)
  return math.floor(tag / 256)
end

-- LimiterMachine.stamp: the version v in every tag word of r.
local function stamp(r, v)
  for _, l in ipairs(r) do
    l[1] = l[1] % 256 + v * 256
  end
end

-- WarmingGcra.cost: what one unit costs at the instant `at` (in the frame); s2, the instant the
-- warm-up started, is kept as epoch nanoseconds.
local function warm_cost(l, at)
  local w = l[S1]
  local e = min(w, max(0, sub(at, sub(l[S2], now_big()))))
  local factor = math.floor((l[1] % 256) / 16)
  return add(l[P1], ceil_mul_div(mul(factor - 1, l[P1]), sub(w, e), w))
end

-- WarmingGcra.fits: n units fit at `at` (the burst tolerance (C - 1)T, plus the last unit's cost).
local function warm_fits(l, at, n)
  local c = warm_cost(l, at)
  return le(add(max(0, sub(l[S0], at)), mul(n, c)), add(mul(sub(l[P0], 1), l[P1]), c))
end

-- SlidingWindow.previousShare: the weighted share of the previous window still inside.
local function previous_share(l)
  local window = l[P1]
  local left = sub(window, sub(now, l[S0]))
  return ceil_mul_div(l[S2], left, window)
end

-- SlidingWindow.firstFit: the first offset e into a window at which prev*(W-e) <= room*W.
local function first_fit(prev, room, window)
  if eq(prev, 0) then
    return 0
  end
  local fits = floor_mul_div(room, window, prev)
  return le(window, fits) and 0 or sub(window, fits)
end

-- Algorithm.limit: the limit in force (a quota's with its top-ups, Arith.saturatedAdd).
local function limit_of(l)
  if kind(l[1]) == QUOTA then
    return min(add(l[P0], l[S2]), MAX)
  end
  return l[P0]
end

-- Algorithm.normalize: brings the state up to now.
local function normalize(l, zone)
  local k = kind(l[1])
  if k == GCRA then
    if lt(l[S0], now) then
      l[S0] = now -- full: time spent full earns nothing
    end
  elseif k == WARM then
    if lt(l[S1], sub(now, l[S0])) then -- cold: this call starts a warm-up
      l[S0], l[S2] = now, now_big()
    end
  elseif k == FIXED then
    local start = window_start(l[P1])
    if not eq(l[S0], start) then
      l[S0], l[S1] = start, 0
    end
  elseif k == SLIDING then
    local window = l[P1]
    local start = window_start(window)
    local stored = l[S0]
    if not eq(stored, start) then
      l[S2] = eq(stored, sub(start, window)) and l[S1] or 0
      l[S1] = 0
      l[S0] = start
    end
  elseif le(l[S0], now) then -- QUOTA
    l[S0], l[S1], l[S2] = period_end(l[P1], zone), 0, 0
  end
end

-- Algorithm.remaining: units available now.
local function remaining_of(l)
  local k = kind(l[1])
  if k == GCRA then
    local ahead = max(0, sub(l[S0], now))
    local room = sub(mul(l[P0], l[P1]), ahead)
    if le(room, 0) then
      return 0
    end
    return (fdivmod(room, l[P1]))
  elseif k == WARM then
    local c = warm_cost(l, now)
    local room = sub(add(mul(sub(l[P0], 1), l[P1]), c), max(0, sub(l[S0], now)))
    if le(room, 0) then
      return 0
    end
    return (fdivmod(room, c))
  elseif k == FIXED then
    return max(0, sub(l[P0], l[S1]))
  elseif k == SLIDING then
    return max(0, sub(sub(l[P0], l[S1]), previous_share(l)))
  end
  return max(0, sub(limit_of(l), l[S1]))
end

-- Algorithm.retryAfter: 0 if n units can be granted now, else when they could be, or NEVER.
local function retry_after_of(l, n)
  local k = kind(l[1])
  if k == GCRA then
    if lt(l[P0], n) then
      return NEVER
    end
    local excess = sub(sub(add(max(l[S0], now), mul(n, l[P1])), now), mul(l[P0], l[P1]))
    return max(0, excess)
  elseif k == WARM then
    if lt(l[P0], n) then
      return NEVER
    end
    if warm_fits(l, now, n) then
      return 0
    end
    -- it fits once full and warm: bisect for the first instant it does
    local lo, hi = now, max(l[S0], add(sub(l[S2], now_big()), l[S1]))
    while lt(1, sub(hi, lo)) do
      local mid = add(lo, (fdivmod(sub(hi, lo), 2)))
      if warm_fits(l, mid, n) then
        hi = mid
      else
        lo = mid
      end
    end
    return sub(hi, now)
  elseif k == FIXED then
    if lt(l[P0], n) then
      return NEVER
    end
    if le(n, sub(l[P0], l[S1])) then
      return 0
    end
    return sub(add(l[S0], l[P1]), now)
  elseif k == SLIDING then
    local limit, window = l[P0], l[P1]
    if lt(limit, n) then
      return NEVER
    end
    local elapsed = sub(now, l[S0])
    local room = sub(sub(limit, l[S1]), n)
    if le(0, room) then
      return max(0, sub(first_fit(l[S2], room, window), elapsed))
    end
    -- not in this window: in the next one, the current count becomes the previous
    local to_next = sub(window, elapsed)
    return add(to_next, first_fit(l[S1], sub(limit, n), window))
  end
  if le(n, sub(limit_of(l), l[S1])) then
    return 0
  end
  return le(n, l[P0]) and sub(l[S0], now) or NEVER
end

-- LimiterMachine.retryAfter: the longest wait of any limit, or NEVER if a limit that has room
-- now will have lost it by then (Algorithm.stillFits: a quota's top-ups end with its period).
local function combined_retry(r, n, permits)
  local wait = 0
  for i = 1, n do
    wait = max(wait, retry_after_of(r[i], permits))
  end
  if not eq(wait, 0) and not eq(wait, NEVER) then
    for i = 1, n do
      local l = r[i]
      if kind(l[1]) == QUOTA and eq(retry_after_of(l, permits), 0)
          and not (le(permits, l[P0]) or lt(wait, sub(l[S0], now))) then
        return NEVER
      end
    end
  end
  return wait
end

-- Algorithm.debtRoom: how many units a charge may still take, until the limit stands one full
-- limit below empty (the bound of each algorithm is argued in its Java class).
local function debt_room(l)
  local k = kind(l[1])
  if k == GCRA then
    -- Gcra.debtRoom: fullAt at most 2CT ahead, and never past Long.MAX_VALUE
    local room = sub(min(mul(mul(2, l[P0]), l[P1]), sub(MAX, now_big())), max(0, sub(l[S0], now)))
    if le(room, 0) then
      return 0
    end
    return (fdivmod(room, l[P1]))
  elseif k == WARM then
    -- WarmingGcra.debtRoom: fullAt at most (2C - 1)T + I ahead, in units of I
    local c = warm_cost(l, now)
    local room = sub(add(mul(sub(mul(2, l[P0]), 1), l[P1]), c), max(0, sub(l[S0], now)))
    if le(room, 0) then
      return 0
    end
    return (fdivmod(room, c))
  end
  -- windows and quotas: a count of twice the limit in force (Arith.saturatedAdd), a sliding
  -- window's estimate with the previous share
  local twice = min(add(limit_of(l), limit_of(l)), MAX)
  local used = l[S1]
  if k == SLIDING then
    used = min(add(used, previous_share(l)), MAX)
  end
  return max(0, sub(twice, used))
end

-- Algorithm.consume: grants n units (retry_after_of has returned 0).
local function consume(l, n)
  local k = kind(l[1])
  if k == GCRA then
    l[S0] = add(max(l[S0], now), mul(n, l[P1]))
  elseif k == WARM then
    l[S0] = add(max(l[S0], now), mul(n, warm_cost(l, now)))
  else
    l[S1] = add(l[S1], n)
  end
end

-- Algorithm.refund: gives back up to n units, never beyond the limit.
local function refund(l, n)
  local k = kind(l[1])
  if k == GCRA then
    local back = mul(min(n, mul(2, l[P0])), l[P1]) -- a debt too, up to a full bucket's worth
    l[S0] = max(now, sub(l[S0], back))
  elseif k == WARM then
    if lt(now, l[S0]) then -- a full bucket has nothing to take back, and stays as long full
      local back = mul(min(n, mul(2, l[P0])), warm_cost(l, now))
      l[S0] = max(now, sub(l[S0], back))
    end
  else
    l[S1] = max(0, sub(l[S1], n))
  end
end

-- Algorithm.resetAfter: until the state is that of a fresh limiter; 0 if it is already.
local function reset_after_of(l)
  local k = kind(l[1])
  if k == GCRA or k == WARM then
    return max(0, sub(l[S0], now))
  elseif k == FIXED then
    if le(l[S1], 0) then
      return 0
    end
    return sub(add(l[S0], l[P1]), now)
  elseif k == SLIDING then
    local stop = add(l[S0], l[P1])
    if lt(0, l[S1]) then
      return sub(add(stop, l[P1]), now) -- the current count still weighs through the next window
    end
    return lt(0, l[S2]) and sub(stop, now) or 0
  end
  if lt(0, l[S1]) or lt(0, l[S2]) then
    return sub(l[S0], now)
  end
  return 0
end

-- Algorithm.consumed: units consumed and not yet restored, for reconfiguration.
local function consumed_of(l)
  local k = kind(l[1])
  if k == GCRA then
    local ahead = max(0, sub(l[S0], now))
    local q, r = fdivmod(ahead, l[P1])
    return eq(r, 0) and q or add(q, 1)
  elseif k == WARM then
    local ahead = max(0, sub(l[S0], now))
    local q, r = fdivmod(ahead, warm_cost(l, now))
    return eq(r, 0) and q or add(q, 1)
  elseif k == SLIDING then
    return add(l[S1], previous_share(l))
  end
  return l[S1]
end

-- Algorithm.restore: the state of a freshly (re)configured limit with `consumed` units in use.
local function restore(l, consumed, zone)
  local k = kind(l[1])
  if k == GCRA then
    l[S0] = add(now, mul(min(consumed, l[P0]), l[P1]))
  elseif k == WARM then
    l[S0] = add(now, mul(min(consumed, l[P0]), l[P1]))
    l[S2] = sub(now_big(), l[S1]) -- a reconfigured bucket counts as warm
  elseif k == QUOTA then
    l[S0], l[S1], l[S2] = period_end(l[P1], zone), consumed, 0
  else
    l[S0] = window_start(l[P1])
    l[S1] = min(consumed, l[P0])
    if k == SLIDING then
      l[S2] = 0
    end
  end
end

-- Algorithm.keepAfter: until the state may be dropped; a warm-up's is kept until it is cold.
local function keep_after_of(l)
  if kind(l[1]) == WARM then
    return max(0, add(add(sub(l[S0], now), l[S1]), 1))
  end
  return reset_after_of(l)
end

-- Algorithm.family: a bucket with a warm-up carries its consumption over to a plain one, and back.
local function family(l)
  local k = kind(l[1])
  return k == WARM and GCRA or k
end

-- ------------------------------------------------------------------ the machine

local function run(KEY, A, dry)
  -- The caller's limits and their zones.
  local count = tonumber(A[4])
  local mine, zones = {}, {}
  for i = 1, count do
    local a = 4 + (i - 1) * 4
    mine[i] = {tag_of(A[a + 1]), num(A[a + 2]), num(A[a + 3]), 0, 0, 0}
    if kind(mine[i][1]) == WARM then
      mine[i][S1] = num(A[a + 4]) -- the warm-up period
    elseif A[a + 4] ~= '' then
      local z = {}
      for w in string.gmatch(A[a + 4], '%S+') do
        z[#z + 1] = tonumber(w)
      end
      zones[i] = z
    end
  end

  local fields = FIELDS or redis.call('HGETALL', KEY)
  local text = {}
  for i = 1, #fields, 2 do
    text[fields[i]] = fields[i + 1]
  end

  -- Another Tally's format is refused, not misread; a reset clears it.
  if A[1] ~= 'reset' and text.v and text.v ~= '1' then
    return error({err = 'TALLY_VERSION ' .. text.v})
  end

  -- LimiterRecord.decidedAt: never decide before the latest instant this state was decided at,
  -- for any algorithm. The frame moves to that instant; shift is how far, for the expiry Redis
  -- keeps on its clock.
  local shift = 0
  if A[1] ~= 'reset' and text.at then
    if not string.find(text.at, '^%d+$') then
      bad('at is not an instant: ' .. text.at)
    end
    local at = from_epoch(text.at)
    if lt(0, at) then
      shift = at
      NOW_S, NOW_NS = fdivmod(parse(text.at), GIGA)
      NOW = nil
    end
  end

  -- LimiterMachine.notBefore: never decide before a stored window's start, so that a clock that
  -- stepped back (or a caller whose clock is behind) cannot roll a window back to an empty count,
  -- even for a record written before "at" was kept.
  if A[1] ~= 'reset' then
    local i = 1
    while text[tostring(i)] do
      local s0 = string.match(text[tostring(i)], '^[45] %d+ %d+ (%d+) ')
      if s0 and lt(0, from_epoch(s0)) then
        shift = add(shift, from_epoch(s0))
        NOW_S, NOW_NS = fdivmod(parse(s0), GIGA)
        NOW = nil
      end
      i = i + 1
    end
  end

  -- The stored record, or nil: missing, no state (tag 0), or past its logical expiry. A reset
  -- does not read it, so that it clears even a record it could not read.
  local stored, as_read = nil, {}
  if A[1] ~= 'reset' and text.exp and not string.find(text.exp, '^%-?%d+$') then
    bad('exp is not an integer: ' .. text.exp)
  end
  if A[1] ~= 'reset' and text['1'] and not (text.exp and le(from_epoch(text.exp), now)) then
    stored = {}
    local i = 1
    while text[tostring(i)] do
      local line = text[tostring(i)]
      local tag, p0, p1, s0, s1, s2 =
          string.match(line, '^(%-?%d+) (%-?%d+) (%-?%d+) (%-?%d+) (%-?%d+) (%-?%d+)$')
      if not tag then
        local words = 0
        for _ in string.gmatch(line, '%S+') do
          words = words + 1
        end
        if words == 6 then
          bad('limit ' .. i .. ' holds something other than six integers: ' .. line)
        end
        bad('limit ' .. i .. ' has ' .. words .. ' words, not 6; it was not written by this version of Tally')
      end
      local l = {tag_of(tag), num(p0), num(p1), from_epoch(s0), num(s1), num(s2)}
      stored[i] = l
      as_read[i] = {l[1], l[2], l[3], l[4], l[5], l[6]}
      i = i + 1
    end
    if eq(stored[1][1], 0) then
      stored = nil
    else
      for _, l in ipairs(stored) do
        kind(l[1])
        if cmp(l[P0], 0) < 0 or cmp(l[P1], 0) <= 0 then
          bad('a limit has parameters ' .. fmt(l[P0]) .. ' and ' .. fmt(l[P1]))
        end
      end
    end
  end

  -- LimiterMachine.fresh(): the caller's limits, full.
  local function fresh()
    local r = {}
    for i = 1, count do
      local m = mine[i]
      r[i] = {m[1], m[P0], m[P1], negate(now_big()), m[S1], 0} -- s0 = 0: the epoch, in the frame
    end
    return r
  end

  local VERSION = version_of(mine[1][1])

  -- LimiterMachine.sameLimits: r holds the caller's limits (kinds and parameters, not versions).
  local function same_limits(r)
    if #r ~= count then
      return false
    end
    for i = 1, count do
      if r[i][1] % 256 ~= mine[i][1] % 256 or not eq(r[i][P0], mine[i][P0]) or not eq(r[i][P1], mine[i][P1]) then
        return false
      end
      if kind(mine[i][1]) == WARM and not eq(r[i][S1], mine[i][S1]) then
        return false
      end
    end
    return true
  end

  -- LimiterMachine.usedUpFor: how long a state of r's limits would be kept, every limit used up now.
  local function used_up_for(r, n)
    local longest = 0
    for i = 1, n do
      local l = r[i]
      local c = {l[1], l[2], l[3], l[4], l[5], l[6]}
      local all = remaining_of(c)
      if lt(0, all) then
        consume(c, all)
      end
      longest = max(longest, keep_after_of(c))
    end
    return longest
  end

  -- LimiterMachine.reconfigured: the caller's limits, carrying over what each same-kind stored
  -- limit had consumed.
  local function reconfigured(stored)
    local r = fresh()
    for i = 1, count do
      local old = stored[i]
      if old and family(old) == family(r[i]) then
        normalize(old, zones[i])
        restore(r[i], consumed_of(old), zones[i])
      end
    end
    return r
  end

  -- LimiterMachine.apply: one operation on the stored record (nil for none); returns the record
  -- to store (nil: the limiter is full again, so no state), the decision, and resetAfter.
  local function apply(stored, op, permits)
    if op == 'reset' then
      -- LimiterMachine.full(): the caller's limits, untouched
      local remaining, limit, deciding = MAX, 0, 0
      for i = 1, count do
        if i == 1 or lt(mine[i][P0], remaining) then -- the first limit always sets it
          remaining, limit, deciding = mine[i][P0], mine[i][P0], i - 1
        end
      end
      local decision = {'1', fmt(remaining), fmt(limit), '0', '0', tostring(deciding)}
      if count > 1 then
        decision[7] = tostring(count)
        for i = 1, count do
          local full = fmt(mine[i][P0])
          decision[#decision + 1], decision[#decision + 2], decision[#decision + 3] = full, full, '0'
        end
      end
      return nil, decision, 0
    end
    local r = stored or fresh()
    -- LimiterMachine: whose limits decide (a newer version's replace the stored ones)
    local mismatch, stored_version, own = nil, 0, true
    if stored then
      stored_version = version_of(stored[1][1])
      if op == 'reconfigure' then
        r = reconfigured(stored)
      elseif not same_limits(stored) then
        if VERSION > stored_version then
          r = reconfigured(stored)
          mismatch = 'u'
        else
          mismatch = VERSION < stored_version and 'a' or 'c'
          own = false
        end
      elseif VERSION > stored_version then
        stamp(r, VERSION)
      end
    end

    local n = #r
    for i = 1, n do
      normalize(r[i], zones[i])
    end

    local allowed, retry_after = true, 0
    if op == 'acquire' then
      if lt(0, permits) then
        retry_after = combined_retry(r, n, permits)
        allowed = eq(retry_after, 0)
        if allowed then
          for i = 1, n do
            consume(r[i], permits)
          end
        end
      end
    elseif op == 'peek' then
      retry_after = combined_retry(r, n, 1)
      allowed = eq(retry_after, 0)
    elseif op == 'refund' then
      for i = 1, n do
        refund(r[i], permits)
      end
    elseif op == 'charge' then
      -- each limit on its own, as far as its debt's bound (LimiterMachine's CHARGE); a warming
      -- bucket charged nothing stays as long full as it was
      if lt(0, permits) then
        for i = 1, n do
          local c = min(permits, debt_room(r[i]))
          if lt(0, c) then
            consume(r[i], c)
          end
        end
      end
    elseif op == 'topup' then
      local any = false
      for i = 1, n do
        if kind(r[i][1]) == QUOTA then
          r[i][S2] = min(add(r[i][S2], permits), MAX) -- CalendarQuota.topUp
          any = true
        end
      end
      if not any then
        return error({err = 'TALLY_NO_QUOTA'})
      end
    elseif op ~= 'reconfigure' then
      return error({err = 'TALLY_BAD_STATE unknown operation ' .. op})
    end

    local remaining, limit, reset_after, keep, deciding = MAX, 0, 0, 0, 0
    local each = {} -- each limit's own remaining, limit and reset, when there are several
    for i = 1, n do
      local rem, lim, reset = remaining_of(r[i]), limit_of(r[i]), reset_after_of(r[i])
      if i == 1 or lt(rem, remaining) then -- the first limit always sets it
        remaining, limit, deciding = rem, lim, i - 1
      end
      reset_after = max(reset_after, reset)
      keep = max(keep, keep_after_of(r[i]))
      if n > 1 then
        each[#each + 1], each[#each + 2], each[#each + 3] = fmt(rem), fmt(lim), fmt(reset)
      end
    end
    local decision = {allowed and '1' or '0', fmt(remaining), fmt(limit), fmt(retry_after), fmt(reset_after),
        mismatch and (deciding .. ' ' .. mismatch .. ' ' .. fmt(stored_version)) or tostring(deciding)}
    if n > 1 then
      decision[7] = tostring(n)
      for j = 1, #each do
        decision[7 + j] = each[j]
      end
    end
    if eq(keep, 0) then
      -- full, but not the caller's limits: kept for as long as a used-up state of them
      local kept = (not own or op == 'reconfigure') and used_up_for(r, n) or 0
      if eq(kept, 0) then
        return nil, decision, 0
      end
      return r, decision, kept
    end
    return r, decision, keep
  end

  -- One operation, or a batch of them ("batch", then "op permits op permits ..." in A[2]):
  -- the client sends concurrent calls on one limiter together, and they are decided one after
  -- the other at the same instant, exactly as if they had arrived together.
  local reply, reset_after = {}, 0
  local state = stored
  if A[1] == 'batch' then
    for op, permits in string.gmatch(A[2], '(%S+) (%S+)') do
      local decision
      state, decision, reset_after = apply(state, op, parse(permits))
      for j = 1, #decision do
        reply[#reply + 1] = decision[j]
      end
    end
  else
    state, reply, reset_after = apply(state, A[1], parse(A[2]))
  end

  -- Write what changed (now, or for a joint decision only once every key allowed: dry).
  local function write()
    -- Write what changed: nothing when the state is as stored (a denial, a peek), DEL when the
    -- limiter is full again (no state is the same as this state).
    if not state then
      if #fields > 0 then
        redis.call('DEL', KEY)
      end
      return
    end
    local n = #state
    local changes = {}
    for i = 1, n do
      local l, was = state[i], as_read[i]
      if not (was and eq(l[1], was[1]) and eq(l[2], was[2]) and eq(l[3], was[3]) and eq(l[4], was[4])
          and eq(l[5], was[5]) and eq(l[6], was[6])) then
        local line = fmt(l[1]) .. ' ' .. fmt(l[P0]) .. ' ' .. fmt(l[P1]) .. ' ' .. to_epoch(l[S0]) .. ' '
            .. fmt(l[S1]) .. ' ' .. fmt(l[S2])
        local field = tostring(i)
        if text[field] ~= line then
          changes[#changes + 1] = field
          changes[#changes + 1] = line
        end
      end
    end
    if #changes > 0 or text[tostring(n + 1)] then -- words changed, or limits dropped
      local decided = to_epoch(now)
      if text.at ~= decided then
        changes[#changes + 1] = 'at'
        changes[#changes + 1] = decided
      end
      if text.v ~= '1' then
        changes[#changes + 1] = 'v'
        changes[#changes + 1] = '1'
      end
    end
    local stale = {}
    for field in pairs(text) do
      local i = tonumber(field)
      if (i and i > n) or (field == 'exp' and not overridden) then
        stale[#stale + 1] = field
      end
    end
    if overridden then
      local exp = to_epoch(add(now, reset_after))
      if text.exp ~= exp then
        changes[#changes + 1] = 'exp'
        changes[#changes + 1] = exp
      end
    end
    if #stale > 0 then
      redis.call('HDEL', KEY, unpack(stale))
    end
    if #changes > 0 or #stale > 0 then
      if #changes > 0 then
        redis.call('HSET', KEY, unpack(changes))
      end
      -- keepNanos in whole milliseconds, rounded up; under a caller's clock a day more, since
      -- that clock may stand still while real time runs ("exp" decides, not Redis' expiry)
      local ms, rest = fdivmod(min(add(reset_after, shift), MAX), 1000000)
      if not eq(rest, 0) then
        ms = add(ms, 1)
      end
      if overridden then
        ms = add(ms, 86400000)
      end
      redis.call('PEXPIRE', KEY, fmt(ms))
    end
  end
  if dry then
    return reply, write
  end
  write()
  return reply
end

-- A joint decision (Store.limitAll): ARGV is "joint permits clock keys", then for each of KEYS
-- its count and four words per limit as above. Every key is decided at the same instant (each no
-- earlier than its own "at"), writing nothing; only if every one allows is each written. A key
-- that would allow, in a decision another refused, answers as an acquisition of 0 permits: its
-- state, unchanged. The reply is one decision per key, in order.
if ARGV[1] == 'joint' then
  local base_s, base_ns = NOW_S, NOW_NS
  local keys, o = tonumber(ARGV[4]), 5
  local args, replies, writes, frames, all = {}, {}, {}, {}, true
  for k = 1, keys do
    local count = tonumber(ARGV[o])
    local a = {'acquire', ARGV[2], ARGV[3], ARGV[o]}
    for j = 1, 4 * count do
      a[4 + j] = ARGV[o + j]
    end
    o = o + 1 + 4 * count
    NOW_S, NOW_NS, NOW = base_s, base_ns, nil
    args[k] = a
    replies[k], writes[k] = run(KEYS[k], a, true)
    frames[k] = {NOW_S, NOW_NS}
    all = all and replies[k][1] == '1'
  end
  local out = {}
  for k = 1, keys do
    local reply = replies[k]
    if all then
      NOW_S, NOW_NS, NOW = frames[k][1], frames[k][2], nil
      writes[k]()
    elseif reply[1] == '1' then
      NOW_S, NOW_NS, NOW = base_s, base_ns, nil
      args[k][2] = '0'
      reply = run(KEYS[k], args[k], true)
    end
    for j = 1, #reply do
      out[#out + 1] = reply[j]
    end
  end
  return out
end

local reply = run(KEYS[1], ARGV, false)
if not ONCE then
  return reply
end
local record = ONCE.fingerprint .. '|Q' .. table.concat(reply, ',')
if ONCE.exp ~= '-' then
  redis.call('HSET', KEYS[2], 'r', record, 'exp', ONCE.exp)
else
  redis.call('HSET', KEYS[2], 'r', record)
  if ONCE.had_exp then
    redis.call('HDEL', KEYS[2], 'exp')
  end
end
redis.call('PEXPIRE', KEYS[2], ONCE.pexpire)
-- The record, then the decision itself: the first call answers with its mismatch, which a
-- repeat (answered from the record alone) did not decide.
local out = {record}
for i = 1, #reply do
  out[i + 1] = reply[i]
end
return out
