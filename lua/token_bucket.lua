-- token_bucket.lua: a bucket of B tokens (default N), refilled at the
-- rate; a request takes C tokens.
--
-- KEYS: the rule's state key. ARGV: limit N, window_us W, burst B
-- (the capacity), cost C (delay unused).
-- Units: g / N us, g = gcd(N, W): a token is w' = W / g units, a
--   microsecond refills n' = N / g; capacity K = B tokens, K * w' units.
-- State (hash): t = last update (us), x = tokens (units) at t; no key:
--   full. Numbers written with '%.0f'.
-- check(key, now_us, limit, window_us, burst, cost, delay) -> state:
--   tokens min(K * w', x + (now - t) * n') (the clock going back
--          refills nothing)
--   ok     tokens >= C * w'
--   left   floor(tokens / w')
--   reset  ok: until full again, ceil((K * w' - tokens') / n')
--          else: retry
--   retry  ceil((C * w' - tokens) / n'); C > K: ceil(C * w' / n')
--   delay  0
-- commit(key, state): x = tokens - C * w', t = now; the key lives until
--   the bucket is full.
-- refund(key, then_us, ...): x += C * w' (up to K * w'); the TTL
--   shrinks by as much, the key goes once the bucket is full.

-- units(): lua/meter.lua

local M = {}

function M.check(key, now, limit, window, burst, cost, delay)
    local w, n = units(limit, window)
    local full = burst * w
    local need = cost * w
    local s = { now = now, delay = 0, retry = 0, reset = 0, left = 0 }
    local h = redis.call('HMGET', key, 't', 'x')
    local t = tonumber(h[1]) or 0
    local x = tonumber(h[2]) or 0
    local tokens = full
    if t ~= 0 and x < full then
        local elapsed = math.max(now - t, 0)
        if elapsed < math.ceil((full - x) / n) then
            tokens = x + elapsed * n
        end
    end
    if tokens > 0 then
        s.left = math.floor(tokens / w)
    end
    if cost > burst then
        s.ok = false
        s.retry = math.ceil(need / n)
        s.reset = s.retry
        return s
    end
    s.ok = tokens >= need
    if s.ok then
        s.x = tokens - need
        s.reset = math.ceil((full - s.x) / n)
    else
        s.retry = math.ceil((need - tokens) / n)
        s.reset = s.retry
    end
    return s
end

function M.commit(key, s)
    redis.call('HSET', key, 't', string.format('%.0f', s.now),
               'x', string.format('%.0f', s.x))
    redis.call('PEXPIRE', key, math.ceil(s.reset / 1000) + 1)
end

function M.refund(key, now, limit, window, burst, cost, delay)
    local w, n = units(limit, window)
    local full = burst * w
    local h = redis.call('HMGET', key, 't', 'x')
    local x = tonumber(h[2])
    if tonumber(h[1]) == nil or x == nil then
        return
    end
    local after = math.min(x + cost * w, full)
    if after >= full then
        redis.call('DEL', key)
        return
    end
    redis.call('HSET', key, 'x', string.format('%.0f', after))
    local ttl = redis.call('PTTL', key)
    if ttl > 0 then
        local shorter = math.ceil((full - x) / n) - math.ceil((full - after) / n)
        ttl = ttl - math.floor(shorter / 1000)
        if ttl > 0 then
            redis.call('PEXPIRE', key, ttl)
        else
            redis.call('DEL', key)
        end
    end
end

return M
