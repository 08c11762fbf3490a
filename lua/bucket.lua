-- bucket.lua: what token_bucket, leaky_bucket and gcra share (meters
-- that refill or drain by the microsecond); the build puts it before
-- their chunks, in the branch of lua/embed.sh's load() that loads them,
-- so a call of window algorithms does not make these closures.

-- since(t, now) -> the time a meter's state is written with: its stored
-- time t if later than now (a request decided after a later one counts
-- as of that later time, so no interval refills or drains twice), else
-- now; t is nil for no state
local function since(t, now)
    if t ~= nil and t > now then
        return t
    end
    return now
end

-- rewrite(key, v, shorter_us): a refund's new value v for key, whose
-- state is now fresh again shorter_us sooner: the TTL shrinks by as much
-- (whole ms), the key goes if nothing is left of it.
local function rewrite(key, v, shorter)
    local ttl = redis.call('PTTL', key)
    if ttl > 0 then
        ttl = ttl - math.floor(shorter / 1000)
        if ttl <= 0 then
            redis.call('DEL', key)
            return
        end
        redis.call('SET', key, v, 'PX', ttl)
    else
        redis.call('SET', key, v, 'KEEPTTL')
    end
end

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

-- read(key) -> t, x, u: a token_bucket's or leaky_bucket's state: its
-- time, its tokens or level, and the units they are in (w' when
-- written); u is nil for a state written before it was kept
local function read(key)
    local t, x, u = get(key, 24)
    if t == nil then
        t, x = get(key, 16)
    end
    return t, x, u
end

-- in_units(x, u, w, up) -> the stored figure x, in units u, in this
-- rule's units w: after N changed, whole requests, rounded down (tokens)
-- or up (a level, up = true): what is used is kept, in requests
-- (src/core/meters.cpp inUnits)
local function in_units(x, u, w, up)
    if u == nil or u <= 0 or u == w or x <= 0 then
        return x
    end
    local q = x / u
    q = q - q % 1
    if q * u > x then
        q = q - 1               -- the quotient rounded up to a whole one
    end
    if up and q * u < x then
        q = q + 1
    end
    return q * w
end

-- level_figures(level, need, full, k, cost, n, w, burst, delay)
--   -> ok, left, reset, retry, delay_us
-- the figures of leaky_bucket and gcra (the same meter) for `level`
-- units queued at now (src/core/meters.cpp levelCheck). A cost above
-- the capacity k never fits.
-- (on the admit path, floor(x) is x - x % 1 and ceil(x) is -(y - y % 1)
-- with y = -x: no C call, see lua/meter.lua)
local function level_figures(level, need, full, k, cost, n, w, burst, delay)
    local left = 0
    if level < full then
        left = (full - level) / w
        left = left - left % 1
    end
    if cost > k then
        local retry = math.ceil(need / n)
        return false, left, retry, retry, 0
    end
    local after = level + need
    if after > full then
        local retry = math.ceil((after - full) / n)
        return false, left, retry, retry, 0
    end
    local wait = 0
    if delay < burst then
        local excess = after - (delay + 1) * w
        if excess > 0 then
            wait = math.ceil(excess / n)
        end
    end
    local reset = -after / n
    return true, left, -(reset - reset % 1), 0, wait
end
