-- leaky_bucket.lua: a meter that fills by each request and drains at
-- the rate; burst B requests deep beyond the conforming one.
--
-- Takes the rule's state key, limit N, window_us W, burst B,
-- cost C, delay D (nodelay: D = B).
-- Units: g / N us, g = gcd(N, W): a request is w' = W / g units, a
--   microsecond n' = N / g; capacity K = B + 1 requests, K * w' units.
--   Every figure is an integer below 2^53 (exactArithmetic()).
-- State (lua/meter.lua): t = last update (us), x = level (units) at t,
--   u = the units x is in (w' when written; read(): lua/bucket.lua).
-- check(key, now_us, limit, window_us, burst, cost, delay)
--     -> ok, left, reset, retry, delay, the state's TTL in us, the
--        numbers of the state to write:
--   level  x - (now - t) * n', not below 0 (the clock going back
--          drains nothing)
--   ok     level + C * w' <= K * w'
--   left   floor((K * w' - level) / w')
--   reset  ok: until the meter is empty again, ceil(level' / n')
--          else: retry
--   retry  ceil((level + C * w' - K * w') / n'); C > K: ceil(C * w' / n')
--   delay  ok and D < B: ceil((level' - (D + 1) * w') / n') if positive
--   state  x = level + C * w', t = max(t, now) (as token_bucket.lua);
--          the key lives until the meter is empty.
-- refund(key, then_us, ...): x -= C * w' (not below 0); the TTL shrinks
--   by as much, the key goes once the meter is empty.
-- charge(key, now_us, ...) -> the state's TTL in us and numbers:
--   x += C * w' at now whatever the depth (charge=, SPEC section 10: a
--   debt later requests wait out).

-- units(), read(), in_units(), level_figures(), since(), rewrite():
-- lua/bucket.lua; get(): lua/meter.lua

local M = {}

-- level_at(key, now, w, n) -> the level at now, the state's time
local function level_at(key, now, w, n)
    local t, x, u = read(key)
    if t ~= nil then
        x = in_units(x, u, w, true)
    end
    if t ~= nil and x > 0 then
        local elapsed = math.max(now - t, 0)
        if elapsed < math.ceil(x / n) then
            return x - elapsed * n, t
        end
    end
    return 0, t
end

function M.check(key, now, limit, window, burst, cost, delay)
    local w, n = units(limit, window)
    local k = burst + 1
    local need = cost * w
    local level, t = level_at(key, now, w, n)
    local ok, left, reset, retry, wait =
        level_figures(level, need, k * w, k, cost, n, w, burst, delay)
    if ok then
        local at = since(t, now)
        return true, left, reset, 0, wait, reset + at - now,
               at, level + need, w
    end
    return false, left, reset, retry, 0
end

function M.charge(key, now, limit, window, burst, cost, delay)
    local w, n = units(limit, window)
    local level, t = level_at(key, now, w, n)
    level = level + cost * w
    local at = since(t, now)
    return math.ceil(level / n) + at - now, at, level, w
end

function M.refund(key, now, limit, window, burst, cost, delay)
    local w, n = units(limit, window)
    local t, x, u = read(key)
    if t == nil then
        return
    end
    x = in_units(x, u, w, true)
    if x <= 0 then
        return
    end
    local after = math.max(x - cost * w, 0)
    if after == 0 then
        redis.call('DEL', key)
        return
    end
    rewrite(key, struct.pack('<ddd', t, after, w),
            math.ceil(x / n) - math.ceil(after / n))
end

return M
