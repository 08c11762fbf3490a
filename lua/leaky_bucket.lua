-- leaky_bucket.lua: a meter that fills by each request and drains at
-- the rate; burst B requests deep beyond the conforming one.
--
-- KEYS: the rule's state key. ARGV: limit N, window_us W, burst B,
-- cost C, delay D (nodelay: D = B).
-- Units: g / N us, g = gcd(N, W): a request is w' = W / g units, a
--   microsecond n' = N / g; capacity K = B + 1 requests, K * w' units.
--   Every figure is an integer below 2^53 (exactArithmetic()).
-- State (hash): t = last update (us), x = level (units) at t; numbers
--   written with '%.0f' (tostring would keep 14 digits only).
-- check(key, now_us, limit, window_us, burst, cost, delay) -> state:
--   level  x - (now - t) * n', not below 0 (the clock going back
--          drains nothing)
--   ok     level + C * w' <= K * w'
--   left   floor((K * w' - level) / w')
--   reset  ok: until the meter is empty again, ceil(level' / n')
--          else: retry
--   retry  ceil((level + C * w' - K * w') / n'); C > K: ceil(C * w' / n')
--   delay  ok and D < B: ceil((level' - (D + 1) * w') / n') if positive
-- commit(key, state): x = level + C * w', t = now; the key lives until
--   the meter is empty.
-- refund(key, then_us, ...): x -= C * w' (not below 0); the TTL shrinks
--   by as much, the key goes once the meter is empty.

-- units(), level_figures(): lua/meter.lua

local M = {}

function M.check(key, now, limit, window, burst, cost, delay)
    local w, n = units(limit, window)
    local k = burst + 1
    local full = k * w
    local need = cost * w
    local h = redis.call('HMGET', key, 't', 'x')
    local t = tonumber(h[1]) or 0
    local x = tonumber(h[2]) or 0
    local elapsed = math.max(now - t, 0)
    local level = 0
    if x > 0 and elapsed < math.ceil(x / n) then
        level = x - elapsed * n
    end
    local s = { now = now, delay = 0, retry = 0, reset = 0, left = 0 }
    s.x = level + need
    return level_figures(s, level, need, full, k, cost, n, w, burst, delay)
end

function M.commit(key, s)
    redis.call('HSET', key, 't', string.format('%.0f', s.now),
               'x', string.format('%.0f', s.x))
    redis.call('PEXPIRE', key, math.ceil(s.reset / 1000) + 1)
end

function M.refund(key, now, limit, window, burst, cost, delay)
    local w, n = units(limit, window)
    local h = redis.call('HMGET', key, 't', 'x')
    local x = tonumber(h[2])
    if x == nil or x <= 0 then
        return
    end
    local after = math.max(x - cost * w, 0)
    if after == 0 then
        redis.call('DEL', key)
        return
    end
    redis.call('HSET', key, 'x', string.format('%.0f', after))
    local ttl = redis.call('PTTL', key)
    if ttl > 0 then
        local shorter = math.ceil(x / n) - math.ceil(after / n)
        ttl = ttl - math.floor(shorter / 1000)
        if ttl > 0 then
            redis.call('PEXPIRE', key, ttl)
        else
            redis.call('DEL', key)
        end
    end
end

return M
