--[[
Tally concurrency limits: one step of tally-core's ConcurrencyMachine, atomically, on KEYS[1].
The rules are the machine's (its class comment): a step is decided at max(now, at); leases whose
expiry is at or before that instant are dropped first; an acquire is granted only if the weights
of the live leases plus its own stay within maxPermits, and takes fencing + 1 as its token; the
fencing counter is never reset (the hash never expires); an acquire whose nonce is a live lease's
returns that lease (a retry); renew and release of a lease not held answer 0 and change nothing.

KEYS[1]  the limit's hash (docs/redis.md):
           "v"            "c1": a concurrency limit of this format; any other hash is refused
                          (TALLY_BAD_STATE), never misread (a rate limiter's hash has "v" = "1")
           "f"            the fencing counter, the largest token granted
           "at"           "S N": the latest instant a step was decided at, seconds and nanoseconds
           "l:<token>"    one per live lease: "nonce weight S N", its nonce (hex, opaque here),
                          weight and expiry
ARGV     op max token nonce weight ttlS ttlN clock
  op       acquire | renew | release | peek
  max      maxPermits; weights and tokens stay below 2^53, exact in Lua's numbers
  token    the lease's token for renew and release, else ''
  nonce    the lease's nonce (hex)
  ttlS ttlN  the lease's ttl as seconds and nanoseconds
  clock    '' to decide at the server's TIME; else the caller's clock as "S N"
Reply    {ok 1|0, token, expS, expN, inUse, fencing, earliestS, earliestN, nowS, nowN}; instants
         as seconds and nanoseconds (0 0 for none), since epoch nanoseconds exceed 2^53

Instants are kept as (seconds, nanoseconds) pairs, both exact in doubles, and compared and added
as pairs: no arithmetic on 61-bit nanoseconds.
]]

local GIGA = 1000000000

local function before_or_at(s1, n1, s2, n2) -- (s1, n1) <= (s2, n2)
  return s1 < s2 or (s1 == s2 and n1 <= n2)
end

local function plus(s, n, ds, dn)
  local ns = n + dn
  local carry = math.floor(ns / GIGA)
  return s + ds + carry, ns - carry * GIGA
end

local function pair(text)
  local s, n = string.match(text, '^(%-?%d+) (%d+)$')
  if not s then
    return redis.error_reply('TALLY_BAD_STATE an instant "' .. tostring(text) .. '" is malformed')
  end
  return tonumber(s), tonumber(n)
end

local key = KEYS[1]
local op, max, token, nonce, weight = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4], tonumber(ARGV[5])
local ttlS, ttlN = tonumber(ARGV[6]), tonumber(ARGV[7])

local nowS, nowN
if ARGV[8] == '' then
  local t = redis.call('TIME')
  nowS, nowN = tonumber(t[1]), tonumber(t[2]) * 1000
else
  nowS, nowN = pair(ARGV[8])
  if type(nowS) == 'table' then return nowS end
end

local h = redis.call('HGETALL', key)
local v, fencing, at = nil, 0, nil
local leases = {} -- token (number) -> {nonce, weight, s, n}
for i = 1, #h, 2 do
  local f, val = h[i], h[i + 1]
  if f == 'v' then
    v = val
  elseif f == 'f' then
    fencing = tonumber(val)
  elseif f == 'at' then
    at = val
  elseif string.sub(f, 1, 2) == 'l:' then
    local ln, lw, ls, lns = string.match(val, '^(%S+) (%d+) (%-?%d+) (%d+)$')
    if not ln then
      return redis.error_reply('TALLY_BAD_STATE lease ' .. f .. ' of ' .. key .. ' is malformed')
    end
    leases[tonumber(string.sub(f, 3))] = {ln, tonumber(lw), tonumber(ls), tonumber(lns)}
  end
end
if #h > 0 and v ~= 'c1' then
  return redis.error_reply('TALLY_BAD_STATE ' .. key .. ' holds no concurrency limit of this format'
      .. ' (another kind of value, or a newer format); use another name, or delete it')
end

-- time never runs back
if at then
  local as, an = pair(at)
  if type(as) == 'table' then return as end
  if before_or_at(nowS, nowN, as, an) then
    nowS, nowN = as, an
  end
end

local writes = {}
local dropped = {}
local inUse = 0
for t, l in pairs(leases) do
  if before_or_at(l[3], l[4], nowS, nowN) then
    dropped[#dropped + 1] = 'l:' .. string.format('%d', t)
    leases[t] = nil
  else
    inUse = inUse + l[2]
  end
end

local ok, rtoken, expS, expN = 0, 0, 0, 0
if op == 'acquire' then
  local found = nil
  for t, l in pairs(leases) do
    if l[1] == nonce then found = t end
  end
  if found then
    ok, rtoken, expS, expN = 1, found, leases[found][3], leases[found][4]
  elseif weight <= max - inUse then
    fencing = fencing + 1
    ok, rtoken = 1, fencing
    expS, expN = plus(nowS, nowN, ttlS, ttlN)
    leases[fencing] = {nonce, weight, expS, expN}
    inUse = inUse + weight
    writes[#writes + 1] = 'l:' .. string.format('%d', fencing)
    writes[#writes + 1] = nonce .. ' ' .. string.format('%d', weight) .. ' ' .. string.format('%d', expS) .. ' '
        .. string.format('%d', expN)
    writes[#writes + 1] = 'f'
    writes[#writes + 1] = string.format('%d', fencing)
  end
elseif op == 'renew' or op == 'release' then
  local t = tonumber(token)
  local l = t and leases[t]
  if l and l[1] == nonce then
    ok, rtoken = 1, t
    if op == 'renew' then
      expS, expN = plus(nowS, nowN, ttlS, ttlN)
      l[3], l[4] = expS, expN
      writes[#writes + 1] = 'l:' .. token
      writes[#writes + 1] = l[1] .. ' ' .. string.format('%d', l[2]) .. ' ' .. string.format('%d', expS) .. ' '
          .. string.format('%d', expN)
    else
      expS, expN = l[3], l[4]
      inUse = inUse - l[2]
      leases[t] = nil
      dropped[#dropped + 1] = 'l:' .. token
    end
  end
elseif op ~= 'peek' then
  return redis.error_reply('TALLY_BAD_STATE unknown operation ' .. tostring(op))
end

if #writes > 0 or #dropped > 0 then
  if #dropped > 0 then
    redis.call('HDEL', key, unpack(dropped))
  end
  writes[#writes + 1] = 'v'
  writes[#writes + 1] = 'c1'
  writes[#writes + 1] = 'at'
  writes[#writes + 1] = string.format('%d', nowS) .. ' ' .. string.format('%d', nowN)
  redis.call('HSET', key, unpack(writes))
end

local eS, eN = 0, 0
for _, l in pairs(leases) do
  if eS == 0 and eN == 0 or before_or_at(l[3], l[4], eS, eN) then
    eS, eN = l[3], l[4]
  end
end
return {ok, rtoken, expS, expN, inUse, fencing, eS, eN, nowS, nowN}
