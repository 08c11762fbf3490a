-- sliding_window.lua: current window's count plus the previous window's,
-- weighted by how much of it still overlaps the sliding window.
--
-- KEYS: the rule's state key. ARGV: limit N, window_us W, cost C
-- (burst, delay unused).
-- State (hash): w = current window index, c = count in window w,
--   p = count in window w - 1. A stored window later than now's (the
--   clock went back) is taken as the current one, at its start.
-- check(key, now_us, limit, window_us, burst, cost, delay) -> state:
--   est    p * (W - elapsed) / W + c, in doubles (src/core/algorithm.cpp
--          computes it in the same order, so both round alike)
--   ok     est + C <= N
--   left   floor(N - est)
--   reset  us until the estimate is back to 0
--   retry  0 if ok, else until this request's cost would fit
--   delay  0
-- commit(key, state): count the request in window w; the key lives
--   until window w + 1 ends, when its count no longer weighs anything.
-- refund(key, then_us, ...): uncount a request counted at then_us, in
--   the current or the previous window.

local M = {}

local function estimate(prev, cur, elapsed, window)
    return prev * (window - elapsed) / window + cur
end

-- Time from now until prev * (window - t) / window + cur + cost <= limit,
-- looking into the next window too (where prev becomes cur).
local function retry_after(prev, cur, elapsed, window, limit, cost)
    if cost > limit then
        return 2 * window - elapsed
    end
    local room = limit - cur - cost
    if room >= 0 and prev > 0 then
        local t = window - room * window / prev
        return math.max(math.ceil(t) - elapsed, 1)
    end
    if room >= 0 then
        return 1
    end
    -- next window: cur weighs cur * (window - t) / window
    local t = window - (limit - cost) * window / cur
    return window - elapsed + math.max(math.ceil(t), 0)
end

function M.check(key, now, limit, window, burst, cost, delay)
    local w = math.floor(now / window)
    local elapsed = now - w * window
    local back = 0
    local h = redis.call('HMGET', key, 'w', 'c', 'p')
    local hw = tonumber(h[1])
    if hw ~= nil and hw > w then
        back = hw * window - now
        w = hw
        elapsed = 0
    end
    local cur, prev = 0, 0
    if hw == w then
        cur = tonumber(h[2]) or 0
        prev = tonumber(h[3]) or 0
    elseif hw == w - 1 then
        prev = tonumber(h[2]) or 0
    end
    local s = { w = w, prev = prev, ttl = 2 * window - elapsed + back,
                delay = 0 }
    local est = estimate(prev, cur, elapsed, window)
    s.ok = est + cost <= limit
    s.left = math.max(math.floor(limit - est), 0)
    if s.ok then
        s.cur = cur + cost
        s.retry = 0
    else
        s.cur = cur
        s.retry = retry_after(prev, cur, elapsed, window, limit, cost) + back
    end
    if s.cur > 0 then
        s.reset = 2 * window - elapsed + back
    elseif prev > 0 then
        s.reset = window - elapsed + back
    else
        s.reset = 0
    end
    return s
end

function M.commit(key, s)
    redis.call('HSET', key, 'w', string.format('%.0f', s.w),
               'c', string.format('%.0f', s.cur),
               'p', string.format('%.0f', s.prev))
    redis.call('PEXPIRE', key, math.ceil(s.ttl / 1000) + 1)
end

function M.refund(key, now, limit, window, burst, cost, delay)
    local w = math.floor(now / window)
    local h = redis.call('HMGET', key, 'w', 'c', 'p')
    local hw = tonumber(h[1])
    if hw == w then
        redis.call('HSET', key, 'c', math.max((tonumber(h[2]) or 0) - cost, 0))
    elseif hw == w + 1 then
        redis.call('HSET', key, 'p', math.max((tonumber(h[3]) or 0) - cost, 0))
    end
end

return M
