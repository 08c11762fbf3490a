-- rl.lua: decides every rule of one request for one zone, atomically;
-- a call may carry several requests (a batch), decided one after the
-- other in their order.
--
-- The build prepends one chunk per algorithm file (fixed_window.lua, ...),
-- each returning { check = f, refund = f } (sliding_log: and commit = f)
-- and run only when needed: algorithm(name) gives it (lua/embed.sh),
-- then this driver.
--
-- KEYS      the state keys of the call, each once (keys of one key
--           value share a hash tag)
-- ARGV[1]   the requests, packed as little-endian doubles (struct.pack
--           '<d'; each an integer): for each request in order
--             n t k s c     its rule count n, its time t, and its first
--                           rule's k s c
--             k s c         each further rule of it
--   t       t <= 0: Redis' TIME plus t (the request arrived -t us before
--           its batch left nginx; 0: TIME itself); t > 0: that time in
--           us (tests; a refund sends its decision's)
--   k s c   the rule's key KEYS[k], its spec ARGV[s + 1], its cost c
-- ARGV[2..] the specs of the call's rules, each once: limit N,
--           window_us W, burst B, delay D, dry run 1 or 0, packed like
--           ARGV[1], then the algorithm's name (see src/core/script.hpp)
-- ARGV[#ARGV] "refund" for a refund: give back what each request's
--           decision, made at its time t, counted (another zone
--           rejected it)
--
-- Numbers go packed, and specs once per call, because each argument
-- costs Redis about as much as a short command, and parsing a decimal
-- number about as much again.
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
-- rejection writes nothing). A bad record is an error reply for the whole
-- call (the module never sends one).
--
-- Every key written expires when its state decides as a fresh one
-- would (src/core/algorithm.hpp idleAtUs), in ms rounded up, plus 1 ms:
-- Redis expires keys on a millisecond clock, and before 7.2 a PEXPIRE of
-- 1 may even delete the key at once when a millisecond ticks meanwhile
-- (redis/redis#10300). For a request of t < 0, that time is -t us nearer.
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

local last = #ARGV
local refunding = ARGV[last] == 'refund'
if refunding then
    last = last - 1
end

-- SPECS[s]: spec s read, { algorithm, limit, window, burst, delay, dry
-- }, once per call; or nil and why not
local SPECS = {}
local function spec(s)
    local text = s >= 1 and s < last and ARGV[s + 1]
    if not text or #text <= 40 then
        return nil, 'ERR rl: bad arguments: no spec ' .. s
    end
    local limit, window, burst, delay, dry, at =
        struct.unpack('<ddddd', text)
    local name = string.sub(text, at)
    local alg = algorithm(name)
    if alg == nil then
        return nil, 'ERR rl: unknown algorithm ' .. name
    end
    if limit < 1 or window < 1 or burst < 0 or delay < 0 then
        return nil, 'ERR rl: bad arguments in spec ' .. s
    end
    local v = { alg, limit, window, burst, delay, dry == 1 }
    SPECS[s] = v
    return v
end

local H = ARGV[1] or ''
local size = #H

-- the rule k s c at byte pos of H: its key, algorithm and numbers, and
-- where the next record starts; or nil and why not
local function rule(k, s, c, pos)
    local key = KEYS[k]
    local v, err = SPECS[s], nil
    if v == nil then
        v, err = spec(s)
    end
    if key == nil or v == nil or c < 0 then
        return nil, err or 'ERR rl: bad arguments: a rule of key ' .. k
    end
    return key, v[1], v[2], v[3], v[4], c, v[5], v[6], pos
end

-- the next rule at byte pos of H, as rule() gives it
local function next_rule(pos)
    local k, s, c
    k, s, c, pos = struct.unpack('<ddd', H, pos)
    return rule(k, s, c, pos)
end

-- the request at byte pos of H: its rule count, time, how much sooner
-- than Redis' clock that time is (0 for a given time), then its first
-- rule as rule() gives it; or nil and why not
local function request(pos)
    if pos + 39 > size then
        return nil, 'ERR rl: bad arguments: a request at byte ' .. pos
    end
    local n, t, k, s, c
    n, t, k, s, c, pos = struct.unpack('<ddddd', H, pos)
    if n < 1 or pos + 24 * (n - 1) > size + 1 then
        return nil, 'ERR rl: bad arguments: a request at byte ' .. pos
    end
    if t <= 0 then
        return n, redis_now() + t, -t, rule(k, s, c, pos)
    end
    return n, t, 0, rule(k, s, c, pos)
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

if refunding then
    -- every record first: a refund writes nothing unless all are good
    local pos = 1
    while pos <= size do
        local n, now, age, key, alg, limit, window, burst, cost, delay, dry,
              nxt = request(pos)
        if n == nil or key == nil then
            return redis.error_reply(n and alg or now)
        end
        pos = nxt
        for i = 2, n do
            key, alg, limit, window, burst, cost, delay, dry, pos =
                next_rule(pos)
            if key == nil then
                return redis.error_reply(alg)
            end
        end
    end
    pos = 1
    while pos <= size do
        local n, now, age, key, alg, limit, window, burst, cost, delay, dry,
              nxt = request(pos)
        pos = nxt
        alg.refund(key, now, limit, window, burst, cost, delay)
        for i = 2, n do
            key, alg, limit, window, burst, cost, delay, dry, pos =
                next_rule(pos)
            alg.refund(key, now, limit, window, burst, cost, delay)
        end
    end
    return 1
end

-- reply[r + 1 + 4 * (i - 1) ...]: rule i's figures, r where the request's
-- part starts; pending[5 * i - 4 ...]: what admitting the request writes
-- for rule i (false: it rejects), its TTL in us, its algorithm, its cost,
-- its key
local reply = {}
local pending = {}
STATE = {}
local pos, r = 1, 1
while pos <= size do
    local n, now, age, key, alg, limit, window, burst, cost, delay, dry, nxt =
        request(pos)
    if n == nil or key == nil then
        return redis.error_reply(n and alg or now)
    end
    pos = nxt
    if n == 1 then
        -- one rule (the usual request): decided and counted at once
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
            if i > 1 then
                key, alg, limit, window, burst, cost, delay, dry, pos =
                    next_rule(pos)
                if key == nil then
                    return redis.error_reply(alg)
                end
            end
            local ok, left, reset, retry, wait, v, ttl =
                alg.check(key, now, limit, window, burst, cost, delay)
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
            pending[5 * i - 4] = ok and v
            pending[5 * i - 3] = ttl
            pending[5 * i - 2] = alg
            pending[5 * i - 1] = cost
            pending[5 * i] = key
        end

        for i = 1, n do
            local j = r + 4 * i - 3
            if reply[r] == 0 then
                reply[j + 3] = 0        -- nothing counted, nothing delayed
            elseif pending[5 * i - 4] then
                local cost = pending[5 * i - 1]
                reply[j] = math.max(reply[j] - cost, 0)
                if cost > 0 then
                    write(pending[5 * i], pending[5 * i - 2],
                          pending[5 * i - 4], pending[5 * i - 3], age)
                end
            end
        end
    end
    reply[r + 4 * n + 1] = now
    r = r + 4 * n + 2
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
