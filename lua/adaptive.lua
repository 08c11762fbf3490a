-- adaptive.lua: concurrency=auto's law for a fleet (SPEC section 13),
-- sent with EVAL by each instance's worker 0 once an interval for each
-- auto rule and key value it has samples of (src/fleet/adaptive.cpp).
-- The law is src/core/adaptive.hpp's, step for step, in the same
-- doubles (tests/adaptive_lua_test.cpp holds the two alike).
--
-- KEYS[1]  the rule and key value's state: its state key .. ':a', a
--          hash beside its slots (one hash tag), fields:
--            n    N          b   the baseline, us    g  growing (0/1)
--            s    the streak of growth    w  intervals left without
--            growth after a step down
--            at   the interval's start, us (after a cut of N,
--                 later: the samples until then are dropped)
--            ch   when N last changed, ms of the epoch
--            p50, p90  the last interval's latency, us
--            inf  the fleet's in-flight at its end
--            c o l    the interval's samples, overloaded, limited
--            x<i>     its latency histogram's bucket i (a 16th of an
--                     octave: src/core/adaptive.hpp)
--            h    the history: (t s, N, p90 us, in-flight) as 4
--                 little-endian doubles a point, the last 600
-- KEYS[2]  the rule and key value's slots (lua/concurrency.lua)
-- ARGV     min, max, target us (0: none), pinned N (a live limit; 0:
--          none), since (the newest point the caller has, s), samples
--          (packed doubles: count, overloaded, limited, then pairs of
--          bucket and count), [now us: tests; else Redis' TIME]
--
-- The first call after an interval (1 s) has run closes it: the law
-- moves N once, from every instance's samples of it (a call is atomic:
-- two instances never both move N for one interval), then this call's
-- samples go into the next (if N was cut: the next starts once the
-- samples of the N before are in, which are dropped). No leader:
-- whoever comes first.
-- Reply: packed doubles: N, p50, p90, baseline, in-flight, changed (ms),
-- then the points newer than since (4 doubles each), oldest first.
-- The hash expires 10 minutes after the last call (N is kept that
-- long: a rule starts again where it was).

local INTERVAL = 1000000
-- the callers' cadence: each instance sends its samples every tick
local TICK = 250000
local KEEP_MS = 600000
local POINTS = 600
local TOLERANCE, FORGET, OVERLOAD, RESTART, SETTLE = 1.25, 0.05, 10, 1, 1
local QUEUED = 1 + (TOLERANCE - 1) / 2

local key, slots = KEYS[1], KEYS[2]
local min, max = tonumber(ARGV[1]), tonumber(ARGV[2])
local target, pinned = tonumber(ARGV[3]), tonumber(ARGV[4])
local since, samples = tonumber(ARGV[5]), ARGV[6]
local now = tonumber(ARGV[7] or '')
if not now then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
if max < min then
    max = min
end

local function fmt(x)
    return string.format('%.17g', x)
end

local function clamp(x)
    if x < min then
        return min
    end
    return x > max and max or x
end

local function bucketUs(i)
    return 2 ^ ((i + 0.5) / 16)
end

-- q's latency among the buckets (a list of { i, count }, ascending)
local function quantile(buckets, total, q)
    local need = math.max(1, math.ceil(q * total))
    local seen = 0
    for j = 1, #buckets do
        seen = seen + buckets[j][2]
        if seen >= need then
            return bucketUs(buckets[j][1])
        end
    end
    return bucketUs(buckets[#buckets][1])
end

-- the interval that ran: the law, its reading, a point of history
local function close(f)
    local n = clamp(tonumber(f.n) or min)
    local b = tonumber(f.b) or 0
    local growing = f.g ~= '0'
    local streak = tonumber(f.s) or 0
    local settle = tonumber(f.w) or 0
    local count = tonumber(f.c) or 0
    local over, limited = tonumber(f.o) or 0, tonumber(f.l) or 0
    local buckets, total, gone = {}, 0, {}
    for name, v in pairs(f) do
        if string.sub(name, 1, 1) == 'x' then
            local c = tonumber(v)
            buckets[#buckets + 1] = { tonumber(string.sub(name, 2)), c }
            total = total + c
            gone[#gone + 1] = name
        end
    end
    local p50, p90 = tonumber(f.p50) or 0, tonumber(f.p90) or 0
    local next = n
    if count > 0 and total > 0 then
        table.sort(buckets, function(x, y) return x[1] < y[1] end)
        p50, p90 = quantile(buckets, total, 0.5), quantile(buckets, total,
                                                          0.9)
        if b <= 0 then
            b = p90
        end
        local objective = target > 0 and target or b * TOLERANCE
        local overload = over * 100 > count * OVERLOAD
        if overload or p90 > objective then
            next = math.ceil(n / 2)
            if not overload then
                next = math.max(next, n - math.max(1, math.floor(
                                    n * (1 - objective / p90) / 2 + 0.5)))
            end
            growing, streak, settle = false, 0, SETTLE
        elseif settle > 0 then
            settle, streak = settle - 1, 0
        elseif limited > 0 then
            if p90 > b * QUEUED then
                growing, streak = false, 0
            end
            streak = streak + 1
            next = growing and 2 * n
                   or n + math.max(1, math.floor(math.sqrt(n) / 2))
                          * 2 ^ math.floor((streak - 1) / RESTART)
        else
            streak = 0
        end
        if p90 < b then
            b = p90
        elseif limited == 0 or n <= min then
            b = b + (p90 - b) * FORGET
        end
    end
    if pinned > 0 then
        next, growing, streak, settle = pinned, false, 0, 0
    end
    next = pinned > 0 and next or clamp(next)
    local inflight = redis.call('ZCOUNT', slots, '(' .. fmt(now), '+inf')
    local changed = tonumber(f.ch) or 0
    if next ~= n or changed == 0 then
        changed = math.floor(now / 1000)
    end
    -- N cut: the samples of requests admitted at the N before are
    -- dropped, those that come within two ticks (every instance hears
    -- the new N in the reply to its next) and a p90 (src/core/adaptive
    -- .hpp staleUs); the next interval starts after them
    local start = now
    if next < n then
        start = now + 2 * TICK + math.min(math.max(p90, 0), INTERVAL)
    end
    local h = (f.h or '') .. struct.pack('<dddd', math.floor(now / 1000000),
                                         next, p90, inflight)
    if #h > 32 * POINTS then
        h = string.sub(h, -32 * POINTS)
    end
    if #gone > 0 then
        redis.call('HDEL', key, 'c', 'o', 'l', unpack(gone))
    end
    redis.call('HSET', key, 'n', fmt(next), 'b', fmt(b),
               'g', growing and '1' or '0', 's', fmt(streak),
               'w', fmt(settle),
               'at', fmt(start), 'ch', fmt(changed), 'p50', fmt(p50),
               'p90', fmt(p90), 'inf', fmt(inflight), 'h', h)
    return { n = next, b = b, p50 = p50, p90 = p90, inf = inflight,
             ch = changed, h = h, at = start }
end

local f = {}
do
    local all = redis.call('HGETALL', key)
    for i = 1, #all, 2 do
        f[all[i]] = all[i + 1]
    end
end
local at = tonumber(f.at)
if not at then
    -- a rule and key value met for the first time (or forgotten): the
    -- interval starts now, at N = min (or the live limit's)
    local n = pinned > 0 and pinned or clamp(tonumber(f.n) or min)
    redis.call('HSET', key, 'n', fmt(n), 'at', fmt(now), 'g', '1',
               's', '0', 'ch', fmt(math.floor(now / 1000)))
    f = { n = fmt(n), ch = fmt(math.floor(now / 1000)), h = '', at = now }
elseif now - at >= INTERVAL then
    f = close(f)
else
    f = { n = f.n, b = f.b, p50 = f.p50, p90 = f.p90, inf = f.inf,
          ch = f.ch, h = f.h or '', at = at }
end

-- this call's samples, in the interval that runs (not while the one
-- after a cut of N has not started: they are of the N before)
local size = #samples
if size >= 24 and now >= f.at then
    local count, over, limited = struct.unpack('<ddd', samples)
    redis.call('HINCRBY', key, 'c', count)
    redis.call('HINCRBY', key, 'o', over)
    redis.call('HINCRBY', key, 'l', limited)
    local pos = 25
    while pos + 15 <= size do
        local i, c
        i, c, pos = struct.unpack('<dd', samples, pos)
        if i >= 0 and i < 432 and c > 0 then
            redis.call('HINCRBY', key, 'x' .. string.format('%d', i), c)
        end
    end
end
redis.call('PEXPIRE', key, KEEP_MS)

local out = { struct.pack('<dddddd', tonumber(f.n) or min,
                          tonumber(f.p50) or 0, tonumber(f.p90) or 0,
                          tonumber(f.b) or 0, tonumber(f.inf) or 0,
                          tonumber(f.ch) or 0) }
local h = f.h or ''
local from = #h + 1
while from > 32 do
    local t = struct.unpack('<d', h, from - 32)
    if t <= since then
        break
    end
    from = from - 32
end
if from <= #h then
    out[2] = string.sub(h, from)
end
return table.concat(out)
