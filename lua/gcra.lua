-- gcra.lua: generic cell rate algorithm (virtual scheduling): the
-- theoretical arrival time (TAT) of the next conforming request; burst
-- B requests of tolerance beyond the conforming one. The same meter as
-- leaky_bucket.lua, kept as one time instead of a level: the same
-- figures for the same requests.
--
-- Takes the rule's state key, limit N, window_us W, burst B,
-- cost C, delay D (nodelay: D = B).
-- Units: g / N us, g = gcd(N, W): a request is w' = W / g units, a
--   microsecond n' = N / g; capacity K = B + 1 requests, K * w' units.
-- State (lua/meter.lua): t = TAT's whole microseconds, f = its fraction
--   in units (0 <= f < n'): TAT = t + f / n'.
-- check(key, now_us, limit, window_us, burst, cost, delay)
--     -> ok, left, reset, retry, delay, the state's TTL in us, the
--        numbers of the state to write:
--   level  (TAT - now) * n' units, 0 if TAT is past (a TAT further than
--          the capacity ahead, after the clock went back, rejects
--          without multiplying the long time)
--   ok     level + C * w' <= K * w'
--   left, reset, retry, delay: as leaky_bucket.lua
--   state  TAT = max(TAT, now) + C * w' units; the key lives until TAT.
-- refund(key, then_us, ...): TAT -= C * w' units, not below then_us; the
--   TTL shrinks by as much, the key goes once TAT is then_us.
-- charge(key, now_us, ...) -> the state's TTL in us and numbers:
--   TAT = max(TAT, now) + C * w' units whatever the tolerance (charge=,
--   SPEC section 10: a debt later requests wait out).

-- units(), level_figures(), rewrite(): lua/bucket.lua; get(): lua/meter.lua

local M = {}

function M.check(key, now, limit, window, burst, cost, delay)
    local w, n = units(limit, window)
    local k = burst + 1
    local full = k * w
    local need = cost * w
    local t, f = get(key, 16)
    local level = 0
    local dt = -1
    if t ~= nil then
        dt = t - now
    end
    if dt >= 0 then
        local most = full / n
        if dt > most - most % 1 then    -- floor (lua/meter.lua)
            local retry
            if cost > k then
                retry = math.ceil(need / n)
            else
                retry = dt + math.ceil((f + need - full) / n)
            end
            return false, 0, retry, retry, 0
        end
        level = dt * n + f
    else
        t, f = now, 0
    end
    local ok, left, reset, retry, wait =
        level_figures(level, need, full, k, cost, n, w, burst, delay)
    if ok then
        local sum = f + need
        local q = sum / n
        q = q - q % 1                   -- floor
        return true, left, reset, 0, wait, reset,
               t + q, sum - q * n
    end
    return false, left, reset, retry, 0
end

function M.charge(key, now, limit, window, burst, cost, delay)
    local w, n = units(limit, window)
    local t, f = get(key, 16)
    if t == nil or t < now then
        t, f = now, 0
    end
    local sum = f + cost * w
    local q = math.floor(sum / n)
    f = sum - q * n
    return t + q + (f > 0 and 1 or 0) - now, t + q, f
end

function M.refund(key, now, limit, window, burst, cost, delay)
    local w, n = units(limit, window)
    local t, f = get(key, 16)
    if t == nil or t < now or (t == now and f == 0) then
        return
    end
    local sum = f - cost * w
    local q = math.floor(sum / n)
    if t + q < now or (t + q == now and sum - q * n == 0) then
        redis.call('DEL', key)
        return
    end
    local before = t + ((f > 0) and 1 or 0)
    local after = t + q + ((sum - q * n > 0) and 1 or 0)
    rewrite(key, struct.pack('<dd', t + q, sum - q * n), before - after)
end

return M
