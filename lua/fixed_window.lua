-- fixed_window.lua: one counter per window, windows aligned to the epoch.
--
-- KEYS: the rule's state key. ARGV: limit N, window_us W, cost C
-- (burst, delay unused).
-- State (hash): w = window index, c = count in it. A stored window
--   later than now's (the clock went back) is taken as the current one.
-- check(key, now_us, limit, window_us, burst, cost, delay) -> state:
--   ok     c + C <= N
--   left   N - c
--   reset  us until the window ends
--   retry  0 if ok, else until the window ends
--   delay  0
-- commit(key, state): c += C; the key expires with the window.
-- refund(key, then_us, ...): c -= C (not below 0) if the window of
--   then_us is still the stored one.

local M = {}

function M.check(key, now, limit, window, burst, cost, delay)
    local w = math.floor(now / window)
    local h = redis.call('HMGET', key, 'w', 'c')
    local hw = tonumber(h[1])
    local count = 0
    if hw ~= nil and hw >= w then
        w = hw
        count = tonumber(h[2]) or 0
    end
    local s = { w = w, reset = (w + 1) * window - now, delay = 0 }
    s.ok = count + cost <= limit
    s.count = count + cost
    if s.ok then
        s.retry = 0
    else
        s.retry = s.reset
    end
    s.left = math.max(limit - count, 0)
    return s
end

function M.commit(key, s)
    redis.call('HSET', key, 'w', string.format('%.0f', s.w),
               'c', string.format('%.0f', s.count))
    redis.call('PEXPIRE', key, math.ceil(s.reset / 1000) + 1)
end

function M.refund(key, now, limit, window, burst, cost, delay)
    local w = math.floor(now / window)
    local h = redis.call('HMGET', key, 'w', 'c')
    if tonumber(h[1]) == w then
        redis.call('HSET', key, 'c', math.max((tonumber(h[2]) or 0) - cost, 0))
    end
end

return M
