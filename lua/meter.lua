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
