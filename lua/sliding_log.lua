-- sliding_log.lua: exact; the admission times of the last N admitted
-- requests, so never more than N are admitted in any W.
--
-- Takes the rule's state key, limit N, window_us W, cost C
-- (burst, delay unused).
-- State (sorted set): one member per admitted unit of cost, score = its
--   time in us, member = '%.0f' of that time, ':', and a 10-digit
--   sequence number among the members of that time (so the greatest
--   member of a time is its newest and a new one never collides, refunds
--   included). Entries with score <= now - W have expired; commit trims
--   them, so the set never holds more than N. The log's time is now, or
--   its newest entry if the clock went back (no time passes).
-- check(key, now_us, limit, window_us, burst, cost, delay)
--     -> ok, left, reset, retry, delay, TTL in us, what commit needs:
--   count  live entries (score > time - W)
--   ok     count + C <= N
--   left   N - count
--   reset  ok: until the newest entry expires (0 if none)
--          else: retry
--   retry  until the (count + C - N)-th oldest live entry expires;
--          C > N: W
--   delay  0
-- commit(key, state, ttl_us): trim, add C entries; the key lives until
--   the newest entry expires. (The other algorithms keep one string the
--   driver writes; this one a sorted set it writes itself.)
-- refund(key, then_us, ...): remove C entries of time then_us (the
--   newest such); the TTL shrinks if the newest entry went.

local M = {}

local function fmt(x)
    return string.format('%.0f', x)
end

function M.check(key, now, limit, window, burst, cost, delay)
    local s = { now = now, t = now, window = window, cost = cost,
                live = 0, total = 0, delay = 0, retry = 0, reset = 0 }
    local top = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
    local newest = tonumber(top[2])
    if newest ~= nil then
        if newest > now then
            s.t = newest
        end
        s.total = redis.call('ZCARD', key)
        if newest > s.t - window then
            s.live = redis.call('ZCOUNT', key, '(' .. fmt(s.t - window),
                                '+inf')
        end
        if newest == s.t then
            s.seq = tonumber(string.sub(top[1], -10))
        end
    end
    s.ok = s.live + cost <= limit
    s.left = math.max(limit - s.live, 0)
    if s.ok then
        if cost > 0 then
            s.reset = s.t + window - now
        elseif s.live > 0 then
            s.reset = newest + window - now
        end
    else
        if cost > limit then
            s.retry = window
        else
            local r = redis.call('ZRANGE', key, s.total + cost - limit - 1,
                                 s.total + cost - limit - 1, 'WITHSCORES')
            s.retry = tonumber(r[2]) + window - now
        end
        s.reset = s.retry
    end
    return s.ok, s.left, s.reset, s.retry, 0, s.reset, s
end

function M.commit(key, s, ttl)
    if s.total > s.live then
        redis.call('ZREMRANGEBYSCORE', key, '-inf', fmt(s.t - s.window))
    end
    local time = fmt(s.t)
    local seq = s.seq or 0
    local i = 1
    while i <= s.cost do
        local last = math.min(s.cost, i + 999)
        local args = {}
        for k = i, last do
            args[#args + 1] = time
            args[#args + 1] = time .. string.format(':%010d', seq + k)
        end
        redis.call('ZADD', key, unpack(args))
        i = last + 1
    end
    redis.call('PEXPIRE', key, px(ttl))
end

function M.refund(key, now, limit, window, burst, cost, delay)
    local time = fmt(now)
    local gone = redis.call('ZREVRANGEBYSCORE', key, time, time,
                            'LIMIT', 0, cost)
    if #gone == 0 then
        return
    end
    local before = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
    local i = 1
    while i <= #gone do
        local last = math.min(#gone, i + 999)
        redis.call('ZREM', key, unpack(gone, i, last))
        i = last + 1
    end
    local after = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
    if after[2] == nil then
        return
    end
    local shorter = tonumber(before[2]) - tonumber(after[2])
    local ttl = redis.call('PTTL', key)
    if shorter > 0 and ttl > 0 then
        ttl = ttl - math.floor(shorter / 1000)
        if ttl > 0 then
            redis.call('PEXPIRE', key, ttl)
        else
            redis.call('DEL', key)
        end
    end
end

return M
