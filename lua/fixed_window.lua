-- fixed_window.lua: one counter per window, windows aligned to the epoch.
--
-- Takes the rule's state key, limit N, window_us W, cost C
-- (burst, delay unused).
-- State (lua/meter.lua): w = window index, c = count in it. A stored
--   window later than now's (the clock went back) is taken as the
--   current one.
-- check(key, now_us, limit, window_us, burst, cost, delay)
--     -> ok, left, reset, retry, delay, the state's TTL in us, the
--        numbers of the state to write:
--   ok     c + C <= N
--   left   N - c
--   reset  us until the window ends
--   retry  0 if ok, else until the window ends
--   delay  0
--   state  c + C; the key expires with the window (its TTL, false: the
--          one it has, set by the window's first write, ends there).
-- refund(key, then_us, ...): c -= C (not below 0) if the window of
--   then_us is still the stored one.
-- charge(key, now_us, ...) -> the state's TTL in us and numbers: C
--   counted at now whatever the limit (charge=, SPEC section 10: usage
--   may exceed the limit, a debt later requests wait out).

-- get(): lua/meter.lua

local M = {}

function M.check(key, now, limit, window, burst, cost, delay)
    local w = now / window
    w = w - w % 1                       -- floor (meter.lua)
    local hw, count = get(key, 16)
    local ttl
    if hw ~= nil and hw >= w then
        w = hw
        ttl = false     -- the key already ends with window w
    else
        count = 0
    end
    local reset = (w + 1) * window - now
    local left = limit > count and limit - count or 0
    if count + cost <= limit then
        return true, left, reset, 0, 0, ttl ~= false and reset,
               w, count + cost
    end
    return false, left, reset, reset, 0
end

function M.charge(key, now, limit, window, burst, cost, delay)
    return select(6, M.check(key, now, 2^53, window, burst, cost, delay))
end

function M.refund(key, now, limit, window, burst, cost, delay)
    local hw, count = get(key, 16)
    if hw == math.floor(now / window) then
        redis.call('SET', key, struct.pack('<dd', hw, math.max(count - cost, 0)),
                   'KEEPTTL')
    end
end

return M
