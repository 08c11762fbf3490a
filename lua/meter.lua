-- meter.lua: what the meters (token_bucket.lua, leaky_bucket.lua,
-- gcra.lua) share; the build puts it before their chunks.
--
-- units(limit N, window_us W) -> w', n': the meters count in units of
-- g / N microseconds, g = gcd(N, W), so that one request is exactly
-- w' = W / g units and one microsecond n' = N / g units: whole numbers,
-- exact in Lua's doubles while they stay below 2^53 (the module checks
-- that at configuration, src/core/algorithm.hpp exactArithmetic).

local function units(limit, window)
    local a, b = limit, window
    while b > 0 do
        a, b = b, a % b
    end
    return window / a, limit / a
end

-- level_figures(s, level, need, full, k, cost, n, w, burst, delay) -> s:
-- the figures of leaky_bucket and gcra (the same meter) for `level`
-- units queued at now: left, ok, reset, retry, delay (src/core/
-- algorithm.cpp levelCheck). A cost above the capacity k never fits.
local function level_figures(s, level, need, full, k, cost, n, w, burst,
                             delay)
    if level < full then
        s.left = math.floor((full - level) / w)
    end
    if cost > k then
        s.ok = false
        s.retry = math.ceil(need / n)
        s.reset = s.retry
        return s
    end
    s.ok = level + need <= full
    if s.ok then
        local after = level + need
        s.reset = math.ceil(after / n)
        if delay < burst then
            local excess = after - (delay + 1) * w
            if excess > 0 then
                s.delay = math.ceil(excess / n)
            end
        end
    else
        s.retry = math.ceil((level + need - full) / n)
        s.reset = s.retry
    end
    return s
end
