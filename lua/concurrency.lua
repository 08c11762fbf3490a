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
-- check(key, now_us, limit, hold_us, burst, cost, delay, slot)
--     -> ok, left, reset, retry, delay, the key's TTL in us, what
--        commit needs:
--   live   slots not expired at now (score > now)
--   ok     live + C <= N
--   left   N - live
--   reset  0 (the driver's frees() gives RETRY when nothing is left
--          after the request)
--   retry  RETRY, 100 ms (src/core/algorithm.hpp kInflightRetryUs): a
--          slot frees as soon as any request of the key ends; the
--          module's deny cache keeps a rejection that long
--   delay  0
--   TTL    until the last slot expires, the request's included
-- commit(key, state, ttl_us): drops the expired slots, holds the
--   request's; the key lives ttl_us.
-- refund(key, then_us, ..., slot): the slot is released (the request
--   ended, or another zone rejected it).
-- renew(key, now_us, hold_us, slot): the slot, if still held, expires at
--   now + H (never sooner than it did), and the key lives at least as
--   long.
-- A slot is a member of one key only: a request holds one slot per rule.

local M = { slot = true }

local RETRY = 100000

local function fmt(x)
    return string.format('%.0f', x)
end

function M.check(key, now, limit, hold, burst, cost, delay, slot)
    local live = redis.call('ZCOUNT', key, '(' .. fmt(now), '+inf')
    local left = limit > live and limit - live or 0
    if live + cost > limit then
        return false, left, RETRY, RETRY, 0
    end
    local last = tonumber(redis.call('ZRANGE', key, -1, -1,
                                     'WITHSCORES')[2])
    local ends = now + hold
    if last ~= nil and last > ends then
        ends = last
    end
    return true, left, 0, 0, 0, ends - now,
           { now = now, ends = now + hold, slot = slot }
end

function M.commit(key, s, ttl)
    redis.call('ZREMRANGEBYSCORE', key, '-inf', fmt(s.now))
    redis.call('ZADD', key, fmt(s.ends), s.slot)
    redis.call('PEXPIRE', key, px(ttl))
end

function M.refund(key, now, limit, hold, burst, cost, delay, slot)
    redis.call('ZREM', key, slot)
end

function M.renew(key, now, hold, slot)
    local ends = now + hold
    if redis.call('ZADD', key, 'XX', 'GT', 'CH', fmt(ends), slot) == 1 and
       redis.call('PTTL', key) < px(hold) then
        redis.call('PEXPIRE', key, px(hold))
    end
end

return M
