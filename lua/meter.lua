-- meter.lua: what the algorithms share; the build puts it before their
-- chunks.
--
-- State: every algorithm but sliding_log keeps one string per key, its
-- numbers packed as little-endian doubles (struct.pack '<d'), written
-- with one SET ... PX: no number is ever printed or parsed (string.format
-- and tonumber of a 16-digit time cost more than the commands around
-- them). Every number stored is an integer below 2^53, so the doubles
-- are exact. A value of another length (not written by this script) is
-- taken as no state.


-- A decision call reads each key once and writes it once (rl.lua
-- flush()): the requests of a batch on one key (a global limit, a busy
-- client) share one GET and one SET, which cost more than everything
-- else a decision does. STATE[key] is the key's value as the call has
-- left it so far (false: none); nil outside a decision call (a refund
-- reads and writes Redis directly).
local STATE

-- get(key, bytes) -> the numbers of key's state, if it has that size
local function get(key, bytes)
    local v
    if STATE then
        v = STATE[key]
        if v == nil then
            v = redis.call('GET', key)
            STATE[key] = v
        end
    else
        v = redis.call('GET', key)
    end
    if v and #v == bytes then
        return struct.unpack(bytes == 16 and '<dd' or '<ddd', v)
    end
end

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

-- TTL in ms of state fresh again in ttl_us: rounded up, plus 1 ms (see
-- rl.lua)
local function px(ttl_us)
    return math.ceil(ttl_us / 1000) + 1
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

-- level_figures(level, need, full, k, cost, n, w, burst, delay)
--   -> ok, left, reset, retry, delay_us
-- the figures of leaky_bucket and gcra (the same meter) for `level`
-- units queued at now (src/core/algorithm.cpp levelCheck). A cost above
-- the capacity k never fits.
local function level_figures(level, need, full, k, cost, n, w, burst, delay)
    local left = 0
    if level < full then
        left = math.floor((full - level) / w)
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
    return true, left, math.ceil(after / n), 0, wait
end
