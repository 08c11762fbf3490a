-- sliding_window.lua: current window's count plus the previous window's,
-- weighted by how much of it still overlaps the sliding window.
--
-- Takes the rule's state key, limit N, window_us W, cost C
-- (burst, delay unused).
-- State (lua/meter.lua): w = current window index, c = count in window
--   w, p = count in window w - 1. A stored window later than now's (the
--   clock went back) is taken as the current one, at its start.
-- check(key, now_us, limit, window_us, burst, cost, delay)
--     -> ok, left, reset, retry, delay, the state's TTL in us, the
--        numbers of the state to write:
--   est    p * (W - elapsed) / W + c, in doubles (src/core/windows.cpp
--          computes it in the same order, so both round alike)
--   ok     est + C <= N
--   left   floor(N - est)
--   reset  us until the estimate is back to 0
--   retry  0 if ok, else until this request's cost would fit
--   delay  0
--   state  the request counted in window w; the key lives until window
--          w + 1 ends, when its count no longer weighs anything (its TTL,
--          false when the key is window w's already: it ends there).
-- refund(key, then_us, ...): uncount a request counted at then_us, in
--   the current or the previous window.
-- charge(key, now_us, ...) -> the state's TTL in us and numbers: C
--   counted at now whatever the limit (charge=, SPEC section 10: usage
--   may exceed the limit, a debt later requests wait out).

-- get(): lua/meter.lua

local M = {}

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
    local w = now / window
    w = w - w % 1                       -- floor (meter.lua)
    local elapsed = now - w * window
    local back = 0
    local hw, hc, hp = get(key, 24)
    if hw ~= nil and hw > w then
        back = hw * window - now
        w = hw
        elapsed = 0
    end
    local cur, prev = 0, 0
    if hw == w then
        cur = hc
        prev = hp
    elseif hw == w - 1 then
        prev = hc
    end
    local est = prev * (window - elapsed) / window + cur
    local left = limit - est
    left = left < 1 and 0 or left - left % 1
    local whole = 2 * window - elapsed + back
    local ok = est + cost <= limit
    local counted = cur                 -- window w's count after this
    if ok then
        counted = cur + cost
    end
    local reset = 0
    if counted > 0 then
        reset = whole
    elseif prev > 0 then
        reset = window - elapsed + back
    end
    if ok then
        -- a key of window w already ends with window w + 1
        return true, left, reset, 0, 0, hw ~= w and whole,
               w, counted, prev
    end
    return false, left, reset,
           retry_after(prev, cur, elapsed, window, limit, cost) + back, 0
end

function M.charge(key, now, limit, window, burst, cost, delay)
    return select(6, M.check(key, now, 2^53, window, burst, cost, delay))
end

function M.refund(key, now, limit, window, burst, cost, delay)
    local w = math.floor(now / window)
    local hw, hc, hp = get(key, 24)
    if hw == w then
        redis.call('SET', key, struct.pack('<ddd', hw, math.max(hc - cost, 0), hp),
                   'KEEPTTL')
    elseif hw == w + 1 then
        redis.call('SET', key, struct.pack('<ddd', hw, hc, math.max(hp - cost, 0)),
                   'KEEPTTL')
    end
end

return M
