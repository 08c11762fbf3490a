-- concurrency.lua: how many requests of a key are in progress at once,
-- across every worker of every instance (concurrency=N, SPEC section 9).
--
-- Takes the rule's state key, limit N, window_us: the hold H, cost C (1),
-- and the request's slot: 8 bytes naming it (its worker and a counter),
-- which its record carries in place of the cost (lua/rl.lua).
-- State (sorted set): a member per slot held, the slot's 8 bytes,
--   scored by when it expires on Redis' clock (us): its request's time
--   plus H, renewed while the request runs (renew); released (ZREM)
--   when the request ends. A slot whose worker died is never renewed:
--   it expires within H. The key lives until its last slot expires.
--   A slot Redis lost while its request runs (a restart without
--   persistence, a failover to a replica without it, FLUSHALL,
--   eviction, expired while Redis was out of reach) is put back by its
--   next renewal: the module renews every hold/3, and at once when its
--   connection is made again. A renewal never follows its slot's
--   release (src/http/inflight.cpp): it would put back a slot no request
--   holds, for H.
-- check(key, now_us, limit, hold_us, burst, cost, delay, slot)
--     -> ok, left, reset, retry, delay, the TTL in us, what commit needs:
--   live   slots not expired at now (score > now)
--   ok     live + C <= N
--   left   N - live
--   reset  0 (the driver's check of one more gives RETRY when nothing
--          is left after the request)
--   retry  RETRY, 100 ms (src/core/algorithm.hpp kInflightRetryUs): a
--          slot frees as soon as any request of the key ends (the
--          module's deny cache never keeps such a rejection)
--   delay  0
--   TTL    H (the key's is set at the end of the call: until its last
--          slot expires)
-- commit(key, state, ttl_us): holds the request's slot.
-- refund(key, then_us, ..., slot): the slot is released (the request
--   ended, or another zone rejected it).
-- renew(key, now_us, hold_us, slot): the slot expires at now + H (never
--   sooner than it did; put back if the key no longer holds it), and the
--   key lives at least as long.
-- flush(): what the call did to each key, written at its end (the
--   driver calls it): per key, the expired slots removed and the new
--   ones added with one command each, its TTL set once; releases one
--   ZREM, renewals one ZADD. A call's requests on one key share its
--   count (one ZCOUNT at the earliest of their times: a slot that
--   expires between two of them counts as held for the later, never
--   fewer held than there are), as the meters share their GET and SET
--   (lua/meter.lua).
-- A slot is a member of one key only: a request holds one slot per rule.
--
-- Priorities (concurrency=auto, SPEC section 13): delay is the request's
-- level p (0 to 3; 0 for any other in-flight rule); it is admitted
-- while the slots live are below N x SHARES[p] percent, i.e. fewer than
-- ceil(N x share / 100) (src/core/adaptive.hpp capOf), and left is
-- counted from that.
-- auto(key, min, max) -> N: an auto rule's N, the fleet's, kept beside
--   its slots in the hash key .. ':a' (lua/adaptive.lua moves it), min
--   when there is none; read once per key and call.

local M = { slot = true }

local RETRY = 100000
local SHARES = { 90, 75, 50 }

local function fmt(x)
    return string.format('%.0f', x)
end

-- per key of the call: { n = slots live at `at`, at, k = slots held by
-- the call, add = { score, member, ... }, base = the time TTLs count
-- from, gone = { member ... }, renew = { score, member ... }, hold };
-- ORDER: the keys, first met first
local KEY, ORDER = {}, {}

local function entry(key)
    local e = KEY[key]
    if e == nil then
        e = { k = 0 }
        KEY[key] = e
        ORDER[#ORDER + 1] = key
    end
    return e
end

function M.check(key, now, limit, hold, burst, cost, delay, slot)
    local e = entry(key)
    if e.at == nil or now < e.at then
        e.n = redis.call('ZCOUNT', key, '(' .. fmt(now), '+inf')
        e.at = now
    end
    local live = e.n + e.k
    if delay > 0 then
        limit = math.floor((limit * SHARES[delay] + 99) / 100)
    end
    local left = limit > live and limit - live or 0
    if live + cost > limit then
        return false, left, RETRY, RETRY, 0
    end
    return true, left, 0, 0, 0, hold, { e, now + hold, slot }
end

function M.auto(key, min, max)
    local e = entry(key)
    local n = e.N
    if n == nil then
        n = tonumber(redis.call('HGET', key .. ':a', 'n')) or min
        if n < min then
            n = min
        elseif n > max then
            n = max
        end
        e.N = n
    end
    return n
end

-- ttl: the TTL the driver gives, H less the request's age: the key's
-- TTL counts from its end less ttl
function M.commit(key, s, ttl)
    local e, ends = s[1], s[2]
    e.add = e.add or {}
    e.add[#e.add + 1] = fmt(ends)
    e.add[#e.add + 1] = s[3]
    e.k = e.k + 1
    e.base = ends - ttl
end

function M.refund(key, now, limit, hold, burst, cost, delay, slot)
    local e = entry(key)
    e.gone = e.gone or {}
    e.gone[#e.gone + 1] = slot
end

function M.renew(key, now, hold, slot)
    local e = entry(key)
    e.renew = e.renew or {}
    e.renew[#e.renew + 1] = fmt(now + hold)
    e.renew[#e.renew + 1] = slot
    e.hold = hold
end

function M.flush()
    for i = 1, #ORDER do
        local key = ORDER[i]
        local e = KEY[key]
        if e.gone then
            redis.call('ZREM', key, unpack(e.gone))
        end
        if e.add then
            redis.call('ZREMRANGEBYSCORE', key, '-inf', fmt(e.at))
            redis.call('ZADD', key, unpack(e.add))
            local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2]
            redis.call('PEXPIRE', key, px(tonumber(last) - e.base))
        end
        -- GT: never sooner; without XX: a slot lost is added back (and
        -- a key lost made again: PTTL -1, given the hold)
        if e.renew and
           redis.call('ZADD', key, 'GT', 'CH', unpack(e.renew)) > 0 and
           redis.call('PTTL', key) < px(e.hold) then
            redis.call('PEXPIRE', key, px(e.hold))
        end
    end
end

return M
