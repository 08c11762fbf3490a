-- rl.lua: decides every rule of one request for one zone, atomically;
-- a call may carry several requests (a batch), decided one after the
-- other in their order.
--
-- The build prepends one chunk per algorithm file (fixed_window.lua, ...),
-- each returning { check = f, refund = f } (sliding_log: and commit = f)
-- and run only when needed: algorithm(name) gives it (lua/embed.sh),
-- then this driver.
--
-- KEYS      the state keys of every rule of every request, in order;
--           keys of one key value share a hash tag
-- ARGV      one block per request, then "refund" or nothing:
--   n       number of rules of the request
--   now     its time: "" for Redis' TIME; "-A" for TIME minus A us (the
--           request arrived A us before its batch left nginx); else a
--           time in us (tests; a refund sends its decision's)
--   then for each rule i: its spec "ALG N W B D DRY" (algorithm, limit
--           N, window_us W, burst B, delay D, dry run 1 or 0, decimal)
--           and its cost C (see src/core/script.hpp)
--   "refund" last: give back what each request's decision, made at its
--           `now`, counted (another zone rejected it)
--
-- Reply (decide): one string of little-endian doubles: for each request:
--          allowed (1 or 0), then for each of its rules: remaining,
--          reset_us, retry_us, delay_us; then the time used, in us
--   remaining  what the rule still admits after this request (counted
--              only if the request is admitted)
--   reset_us   until the rule is whole again (or frees capacity if full)
--   retry_us   0 if the rule admits this request, else until it would
--   delay_us   admitted and shaped by delay=: wait before serving, else 0
-- A request is admitted only if every rule that is not a dry run admits
-- it; then every rule that admits it counts it (a dry-run rule that would
-- reject it takes nothing, and never delays), otherwise none does (a
-- rejection writes nothing). A bad block is an error reply for the whole
-- call (the module never sends one).
--
-- Every key written expires when its state decides as a fresh one
-- would (src/core/algorithm.hpp idleAtUs), in ms rounded up, plus 1 ms:
-- Redis expires keys on a millisecond clock, and before 7.2 a PEXPIRE of
-- 1 may even delete the key at once when a millisecond ticks meanwhile
-- (redis/redis#10300). For a request of "-A", that time is A us nearer.
-- Reply (refund): 1
--
-- Cost: this runs on every request, so it makes few tables (each costs
-- about as much as a command), prints and parses no number it can avoid,
-- and decides a rule with one GET and, if admitted, one SET ... PX; a
-- batch shares the call, TIME and this driver among its requests, and
-- its requests on one key share that GET and SET (meter.lua STATE).

local clock
local function redis_now()
    if clock == nil then
        local t = redis.call('TIME')
        clock = tonumber(t[1]) * 1000000 + tonumber(t[2])
    end
    return clock
end

-- A rule's spec "ALG LIMIT WINDOW BURST DELAY DRY" parsed once per call
-- (the requests of a batch mostly share their rules): { algorithm,
-- limit, window, burst, delay, dry }, or an error reply.
local SPECS = {}
local function spec(text, i)
    local s = SPECS[text]
    if s ~= nil then
        return s
    end
    local name, limit, window, burst, delay, dry = string.match(text,
        '^([%w_]+) (%d+) (%d+) (%d+) (%d+) ([01])$')
    local alg = algorithm(name)
    if alg == nil then
        return redis.error_reply('ERR rl: unknown algorithm '
                                 .. tostring(name or text))
    end
    limit, window = tonumber(limit), tonumber(window)
    if limit < 1 or window < 1 then
        return redis.error_reply('ERR rl: bad arguments for rule ' .. i)
    end
    s = { alg, limit, window, tonumber(burst), tonumber(delay), dry == '1' }
    SPECS[text] = s
    return s
end

local COSTS = {}

-- rule i of the block at ARGV[a]: its algorithm and numbers, or an
-- error reply
local function rule(a, i)
    local b = a + 2 * i
    local s = spec(ARGV[b] or '', i)
    if s.err then
        return s
    end
    local text = ARGV[b + 1] or ''
    local cost = COSTS[text]
    if cost == nil then
        cost = tonumber(text)
        if cost == nil or cost < 0 then
            return redis.error_reply('ERR rl: bad arguments for rule ' .. i)
        end
        COSTS[text] = cost
    end
    return s[1], s[2], s[3], s[4], cost, s[5], s[6]
end

-- the block at ARGV[a]: its rule count, time, and how much sooner than
-- Redis' clock that time is (0 for a given time), or nil
local function block(a)
    local n = COSTS[ARGV[a]] or tonumber(ARGV[a])
    local at = ARGV[a + 1]
    if n == nil or n < 1 or at == nil then
        return nil
    end
    if at == '' then
        return n, redis_now(), 0
    end
    local t = tonumber(at)
    if t == nil then
        return nil
    end
    if t < 0 then                       -- "-A": A us before Redis' TIME
        return n, redis_now() + t, -t
    end
    return n, t, 0
end

-- what a decision call writes at its end: WRITTEN[1..] the keys in the
-- order first written, TTL_MS[key] the TTL of the last write that set
-- one, in ms (false: none did, the key keeps its own)
local WRITTEN, TTL_MS = {}, {}

-- counts an admitted request in a rule: v as check() made it, with a
-- TTL of ttl us (false: the one the key has), the request being age us
-- older than Redis' clock
local function write(key, alg, v, ttl, age)
    if alg.commit then
        alg.commit(key, v, math.max(ttl - age, 1))
        return
    end
    STATE[key] = v
    if ttl then
        if TTL_MS[key] == nil then
            WRITTEN[#WRITTEN + 1] = key
        end
        TTL_MS[key] = px(math.max(ttl - age, 1))
    elseif TTL_MS[key] == nil then
        WRITTEN[#WRITTEN + 1] = key
        TTL_MS[key] = false
    end
end

-- one SET per key written, with the last TTL set: the key ends where
-- it would have, the SET coming some microseconds later (within the 1 ms
-- every TTL has to spare)
local function flush()
    for i = 1, #WRITTEN do
        local key = WRITTEN[i]
        local ms = TTL_MS[key]
        if ms then
            redis.call('SET', key, STATE[key], 'PX', ms)
        else
            -- the key ends when it should already (half the cost of
            -- setting a TTL)
            redis.call('SET', key, STATE[key], 'KEEPTTL')
        end
    end
end

local last = #ARGV
if ARGV[last] == 'refund' then
    last = last - 1
    -- every argument first: a refund writes nothing unless all are good
    local a = 1
    while a <= last do
        local n = block(a)
        if n == nil then
            return redis.error_reply('ERR rl: bad request block')
        end
        for i = 1, n do
            local alg = rule(a, i)
            if type(alg) ~= 'table' or alg.check == nil then
                return alg
            end
        end
        a = a + 2 + 2 * n
    end
    local k = 0
    a = 1
    while a <= last do
        local n, now = block(a)
        for i = 1, n do
            local alg, limit, window, burst, cost, delay = rule(a, i)
            alg.refund(KEYS[k + i], now, limit, window, burst, cost, delay)
        end
        a = a + 2 + 2 * n
        k = k + n
    end
    return 1
end

-- reply[r + 1 + 4 * (i - 1) ...]: rule i's figures, r where the request's
-- part starts; pending[4 * i - 3 ...]: what admitting the request writes
-- for rule i (false: it rejects), its TTL in us, its algorithm, its cost
local reply = {}
local pending = {}
STATE = {}
local a, k, r = 1, 0, 1
while a <= last do
    local n, now, age = block(a)
    if n == nil then
        return redis.error_reply('ERR rl: bad request block')
    end
    if n == 1 then
        -- one rule (the usual request): decided and counted at once
        local alg, limit, window, burst, cost, delay, dry = rule(a, 1)
        if type(alg) ~= 'table' or alg.check == nil then
            return alg
        end
        local key = KEYS[k + 1]
        local ok, left, reset, retry, wait, v, ttl =
            alg.check(key, now, limit, window, burst, cost, delay)
        reply[r + 2] = reset
        reply[r + 3] = retry
        reply[r + 4] = 0
        if ok then
            reply[r] = 1
            reply[r + 1] = math.max(left - cost, 0)
            if not dry then
                reply[r + 4] = wait
            end
            if cost > 0 then
                write(key, alg, v, ttl, age)
            end
        else
            reply[r] = dry and 1 or 0
            reply[r + 1] = left
        end
    else
        reply[r] = 1
        for i = 1, n do
            local alg, limit, window, burst, cost, delay, dry = rule(a, i)
            if type(alg) ~= 'table' or alg.check == nil then
                return alg
            end
            local ok, left, reset, retry, wait, v, ttl =
                alg.check(KEYS[k + i], now, limit, window, burst, cost,
                          delay)
            if not ok and not dry then
                reply[r] = 0
            end
            local j = r + 4 * i - 3
            reply[j] = left
            reply[j + 1] = reset
            reply[j + 2] = retry
            if dry then
                reply[j + 3] = 0
            else
                reply[j + 3] = wait
            end
            pending[4 * i - 3] = ok and v
            pending[4 * i - 2] = ttl
            pending[4 * i - 1] = alg
            pending[4 * i] = cost
        end

        for i = 1, n do
            local j = r + 4 * i - 3
            if reply[r] == 0 then
                reply[j + 3] = 0        -- nothing counted, nothing delayed
            elseif pending[4 * i - 3] then
                local cost = pending[4 * i]
                reply[j] = math.max(reply[j] - cost, 0)
                if cost > 0 then
                    write(KEYS[k + i], pending[4 * i - 1],
                          pending[4 * i - 3], pending[4 * i - 2], age)
                end
            end
        end
    end
    reply[r + 4 * n + 1] = now
    r = r + 4 * n + 2
    a = a + 2 + 2 * n
    k = k + n
end

flush()

-- one string of little-endian doubles: hiredis makes one object of it,
-- where an array of integers would be one per figure
local parts = {}
for i = 1, #reply, 512 do
    local j = math.min(i + 511, #reply)
    parts[#parts + 1] = struct.pack('<' .. string.rep('d', j - i + 1),
                                    unpack(reply, i, j))
end
return table.concat(parts)
