-- rl.lua: decides every rule of one request for one zone, atomically.
--
-- The build prepends one chunk per algorithm file (fixed_window.lua, ...),
-- each returning { check = f, commit = f, refund = f } and run only when
-- needed: algorithm(name) gives it (lua/embed.sh), then this driver.
--
-- KEYS[i]   state key of rule i; keys of one key value share a hash tag
-- ARGV[1]   number of rules n
-- ARGV[2]   time in microseconds, or "" to read Redis' TIME (a decision
--           never sends one but in tests; a refund sends its decision's)
-- ARGV[3 + 7 * (i - 1) ...]  rule i, decimal: algorithm, limit N,
--           window_us W, burst B, cost C, delay D, dry run (1 or 0) (see
--           src/core/script.hpp)
-- ARGV[3 + 7 * n]  absent to decide; "refund" to give back what the
--           decision made at time ARGV[2] counted (when another zone
--           rejected the request)
--
-- Reply (decide): { allowed (1 or 0), then for each rule i:
--          remaining, reset_us, retry_us, delay_us; then the time used,
--          in us }
--   remaining  what the rule still admits after this request (counted
--              only if the request is admitted)
--   reset_us   until the rule is whole again (or frees capacity if full)
--   retry_us   0 if the rule admits this request, else until it would
--   delay_us   admitted and shaped by delay=: wait before serving, else 0
-- A request is admitted only if every rule that is not a dry run admits
-- it; then every rule that admits it counts it (a dry-run rule that would
-- reject it takes nothing, and never delays), otherwise none does (a
-- rejection writes nothing).
--
-- Every key written expires when its state decides as a fresh one
-- would (src/core/algorithm.hpp idleAtUs), in ms rounded up, plus 1 ms:
-- Redis expires keys on a millisecond clock, and before 7.2 a PEXPIRE of
-- 1 may even delete the key at once when a millisecond ticks meanwhile
-- (redis/redis#10300).
-- Numbers going into keys, members, fields or scores are written with
-- '%.0f': tostring keeps 14 digits, a time in us has 16.
-- Reply (refund): 1

local n = tonumber(ARGV[1])
local now
if ARGV[2] ~= '' then
    now = tonumber(ARGV[2])
else
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local rules = {}
for i = 1, n do
    local a = 3 + 7 * (i - 1)
    local r = { alg = algorithm(ARGV[a]), name = ARGV[a],
                limit = tonumber(ARGV[a + 1]), window = tonumber(ARGV[a + 2]),
                burst = tonumber(ARGV[a + 3]), cost = tonumber(ARGV[a + 4]),
                delay = tonumber(ARGV[a + 5]), dry = ARGV[a + 6] == '1' }
    if r.alg == nil then
        return redis.error_reply('ERR rl: unknown algorithm ' .. ARGV[a])
    end
    if not (r.limit and r.window and r.burst and r.cost and r.delay)
            or r.limit < 1 or r.window < 1 or r.burst < 0 or r.cost < 0
            or r.delay < 0 then
        return redis.error_reply('ERR rl: bad arguments for rule ' .. i)
    end
    rules[i] = r
end

if ARGV[3 + 7 * n] == 'refund' then
    for i = 1, n do
        local r = rules[i]
        r.alg.refund(KEYS[i], now, r.limit, r.window, r.burst, r.cost,
                     r.delay)
    end
    return 1
end

local states = {}
local allowed = 1
for i = 1, n do
    local r = rules[i]
    local s = r.alg.check(KEYS[i], now, r.limit, r.window, r.burst, r.cost,
                          r.delay)
    states[i] = s
    if not s.ok and not r.dry then
        allowed = 0
    end
end

local reply = { allowed }
for i = 1, n do
    local s = states[i]
    local cost = rules[i].cost
    if allowed == 1 and s.ok then
        if cost > 0 then
            rules[i].alg.commit(KEYS[i], s)
        end
        reply[#reply + 1] = math.max(s.left - cost, 0)
        reply[#reply + 1] = s.reset
        reply[#reply + 1] = s.retry
        if rules[i].dry then
            reply[#reply + 1] = 0
        else
            reply[#reply + 1] = s.delay
        end
    else
        reply[#reply + 1] = s.left
        reply[#reply + 1] = s.reset
        reply[#reply + 1] = s.retry
        reply[#reply + 1] = 0
    end
end
reply[#reply + 1] = now
return reply
