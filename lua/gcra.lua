-- gcra.lua: generic cell rate algorithm (virtual scheduling): the
-- theoretical arrival time (TAT) of the next conforming request; burst
-- B requests of tolerance beyond the conforming one. The same meter as
-- leaky_bucket.lua, kept as one time instead of a level: the same
-- figures for the same requests.
--
-- KEYS: the rule's state key. ARGV: limit N, window_us W, burst B,
-- cost C, delay D (nodelay: D = B).
-- Units: g / N us, g = gcd(N, W): a request is w' = W / g units, a
--   microsecond n' = N / g; capacity K = B + 1 requests, K * w' units.
-- State (hash): t = TAT's whole microseconds, f = its fraction in units
--   (0 <= f < n'): TAT = t + f / n'. Numbers written with '%.0f'.
-- check(key, now_us, limit, window_us, burst, cost, delay) -> state:
--   level  (TAT - now) * n' units, 0 if TAT is past (a TAT further than
--          the capacity ahead, after the clock went back, rejects
--          without multiplying the long time)
--   ok     level + C * w' <= K * w'
--   left, reset, retry, delay: as leaky_bucket.lua
-- commit(key, state): TAT = max(TAT, now) + C * w' units; the key lives
--   until TAT.
-- refund(key, then_us, ...): TAT -= C * w' units, not below then_us; the
--   TTL shrinks by as much, the key goes once TAT is then_us.

-- units(), level_figures(): lua/meter.lua

local M = {}

function M.check(key, now, limit, window, burst, cost, delay)
    local w, n = units(limit, window)
    local k = burst + 1
    local full = k * w
    local need = cost * w
    local h = redis.call('HMGET', key, 't', 'f')
    local t = tonumber(h[1]) or 0
    local f = tonumber(h[2]) or 0
    local dt = t - now
    local s = { now = now, n = n, delay = 0, retry = 0, reset = 0, left = 0 }
    local level = 0
    if dt >= 0 then
        if dt > math.floor(full / n) then
            s.ok = false
            if cost > k then
                s.retry = math.ceil(need / n)
            else
                s.retry = dt + math.ceil((f + need - full) / n)
            end
            s.reset = s.retry
            return s
        end
        level = dt * n + f
        s.t = t
        s.f = f
    else
        s.t = now
        s.f = 0
    end
    s.need = need
    return level_figures(s, level, need, full, k, cost, n, w, burst, delay)
end

function M.commit(key, s)
    local sum = s.f + s.need
    local q = math.floor(sum / s.n)
    redis.call('HSET', key, 't', string.format('%.0f', s.t + q),
               'f', string.format('%.0f', sum - q * s.n))
    redis.call('PEXPIRE', key, math.ceil(s.reset / 1000) + 1)
end

function M.refund(key, now, limit, window, burst, cost, delay)
    local w, n = units(limit, window)
    local h = redis.call('HMGET', key, 't', 'f')
    local t = tonumber(h[1])
    local f = tonumber(h[2]) or 0
    if t == nil or t < now or (t == now and f == 0) then
        return
    end
    local sum = f - cost * w
    local q = math.floor(sum / n)
    if t + q < now or (t + q == now and sum - q * n == 0) then
        redis.call('DEL', key)
        return
    end
    redis.call('HSET', key, 't', string.format('%.0f', t + q),
               'f', string.format('%.0f', sum - q * n))
    local ttl = redis.call('PTTL', key)
    if ttl > 0 then
        local before = t + ((f > 0) and 1 or 0)
        local after = t + q + ((sum - q * n > 0) and 1 or 0)
        ttl = ttl - math.floor((before - after) / 1000)
        if ttl > 0 then
            redis.call('PEXPIRE', key, ttl)
        else
            redis.call('DEL', key)
        end
    end
end

return M
