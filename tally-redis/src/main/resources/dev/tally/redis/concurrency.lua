--[[
Tally concurrency limits: one step of tally-core's ConcurrencyMachine, atomically, on KEYS[1].
The rules are the machine's (its class comment): a step is decided at max(now, at); leases whose
expiry is at or before that instant are dropped first; an acquire is granted only if the weights
of the live leases plus its own stay within maxPermits, and takes fencing + 1 as its token; the
fencing counter is never reset (the hash never expires); an acquire whose nonce is a live lease's
returns that lease (a retry); renew and release of a lease not held answer 0 and change nothing.
The queue of waiters is the machine's too: a refused acquire with a ticket ttl keeps a ticket until now + that
ttl (refreshed in place once less than half the ttl is left), at most 64 tickets; tickets that lapsed are dropped first; an
acquire is granted only if the free permits cover its weight plus the weights of every ticket ahead
of it (all of them for a caller without one); a grant removes the caller's ticket; withdraw removes
it. A Tally predating tickets ignores the "q" field (it grants without regard to the queue).

KEYS[1]  the limit's hash (docs/redis.md):
           "v"            "c1": a concurrency limit of this format; any other hash is refused
                          (TALLY_BAD_STATE), never misread (a rate limiter's hash has "v" = "1")
           "f"            the fencing counter, the largest token granted
           "at"           "S N": the latest instant a step was decided at, seconds and nanoseconds
           "l:<token>"    one per live lease: "nonce weight S N", its nonce (hex, opaque here),
                          weight and expiry
           "q"            the waiters' tickets, oldest first, space-separated, each
                          "nonce,weight,S,N" (its expiry); absent when none waits
ARGV     op max token nonce weight ttlS ttlN clock qttlS qttlN
  op       acquire | renew | release | withdraw | peek
  max      maxPermits; weights and tokens stay below 2^53, exact in Lua's numbers
  token    the lease's token for renew and release, else ''
  nonce    the lease's nonce (hex)
  ttlS ttlN  the lease's ttl as seconds and nanoseconds
  clock    '' to decide at the server's TIME; else the caller's clock as "S N"
  qttlS qttlN  for an acquire that waits, its ticket's ttl as seconds and nanoseconds; 0 0 (or absent)
           for one that does not
Reply    {ok 1|0, token, expS, expN, inUse, fencing, earliestS, earliestN, nowS, nowN}; instants
         as seconds and nanoseconds (0 0 for none), since epoch nanoseconds exceed 2^53

Instants are kept as (seconds, nanoseconds) pairs, both exact in doubles, and compared and added
as pairs: no arithmetic on 61-bit nanoseconds.
]]

local GIGA = 1000000000
local MAX_TICKETS = 64

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
local qttlS, qttlN = tonumber(ARGV[9] or '0') or 0, tonumber(ARGV[10] or '0') or 0

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
local qtext = nil
for i = 1, #h, 2 do
  local f, val = h[i], h[i + 1]
  if f == 'v' then
    v = val
  elseif f == 'f' then
    fencing = tonumber(val)
  elseif f == 'at' then
    at = val
  elseif f == 'q' then
    qtext = val
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

local queue = {} -- {nonce, weight, s, n}, oldest first
local qchanged = false
if qtext then
  for entry in string.gmatch(qtext, '%S+') do
    local qn, qw, qs, qns = string.match(entry, '^([^,]+),(%d+),(%-?%d+),(%d+)$')
    if not qn then
      return redis.error_reply('TALLY_BAD_STATE the queue of ' .. key .. ' is malformed')
    end
    if before_or_at(tonumber(qs), tonumber(qns), nowS, nowN) then
      qchanged = true -- lapsed: its waiter stopped looking
    else
      queue[#queue + 1] = {qn, tonumber(qw), tonumber(qs), tonumber(qns)}
    end
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
  local mine, ahead = nil, 0
  for i, q in ipairs(queue) do
    if q[1] == nonce then
      mine = i
      break
    end
    ahead = ahead + q[2]
  end
  local room = max - inUse
  if found then
    ok, rtoken, expS, expN = 1, found, leases[found][3], leases[found][4]
  elseif room >= 0 and ahead <= room and weight <= room - ahead then
    if mine then
      table.remove(queue, mine)
      qchanged = true
    end
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
  elseif (qttlS > 0 or qttlN > 0) and weight <= max then
    local us, un = plus(nowS, nowN, qttlS, qttlN)
    local hs, hn = plus(nowS, nowN, math.floor(qttlS / 2), math.floor((qttlS % 2 * GIGA + qttlN) / 2))
    if mine then -- refreshed only once past half its life, as the machine does
      if before_or_at(queue[mine][3], queue[mine][4], hs, hn) and (queue[mine][3] ~= us or queue[mine][4] ~= un) then
        queue[mine][3], queue[mine][4] = us, un
        qchanged = true
      end
    elseif #queue < MAX_TICKETS then
      queue[#queue + 1] = {nonce, weight, us, un}
      qchanged = true
    end
  end
elseif op == 'withdraw' then
  for i, q in ipairs(queue) do
    if q[1] == nonce then
      table.remove(queue, i)
      qchanged = true
      ok = 1
      break
    end
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
elseif op == 'peek' then
  ok = 1 -- as the machine answers
else
  return redis.error_reply('TALLY_BAD_STATE unknown operation ' .. tostring(op))
end

if qchanged then
  if #queue > 0 then
    local entries = {}
    for i, q in ipairs(queue) do
      entries[i] = q[1] .. ',' .. string.format('%d', q[2]) .. ',' .. string.format('%d', q[3]) .. ','
          .. string.format('%d', q[4])
    end
    writes[#writes + 1] = 'q'
    writes[#writes + 1] = table.concat(entries, ' ')
  else
    dropped[#dropped + 1] = 'q'
  end
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
