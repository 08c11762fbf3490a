-- fixed_window.lua: one counter per window, windows aligned to the epoch.
--
-- State (hash at the rule's key): w = window index, c = count in it.
-- check(key, now_us, limit, window_us, burst, cost) -> state table
--   ok, left (what it admits before this request), reset (us to window
--   end), retry (us until admissible)
-- commit(key, state): count the request; TTL ends with the window.
-- refund(key, then_us, limit, window_us, burst, cost): uncount a request
--   counted at then_us, if its window is still the stored one.

local M = {}

function M.check(key, now, limit, window, burst, cost)
    local w = math.floor(now / window)
    local h = redis.call('HMGET', key, 'w', 'c')
    local count = 0
    if tonumber(h[1]) == w then
        count = tonumber(h[2]) or 0
    end
    local s = { w = w, reset = (w + 1) * window - now }
    s.ok = count + cost <= limit
    if s.ok then
        s.count = count + cost
        s.retry = 0
    else
        s.count = count
        s.retry = s.reset
    end
    s.left = math.max(limit - count, 0)
    return s
end

function M.commit(key, s)
    redis.call('HSET', key, 'w', s.w, 'c', s.count)
    redis.call('PEXPIRE', key, math.ceil(s.reset / 1000))
end

function M.refund(key, now, limit, window, burst, cost)
    local w = math.floor(now / window)
    local h = redis.call('HMGET', key, 'w', 'c')
    if tonumber(h[1]) == w then
        redis.call('HSET', key, 'c', math.max((tonumber(h[2]) or 0) - cost, 0))
    end
end

return M
