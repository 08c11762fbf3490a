-- rl.lua: decides the rules of one or more requests for one zone; each
-- request atomically, one after the other (a batch: the worker sends the
-- requests of one event-loop turn in one call).
--
-- The build prepends one chunk per algorithm file (fixed_window.lua, ...),
-- each returning { check = f, commit = f, refund = f } and run only when
-- needed: algorithm(name) gives it (lua/embed.sh), then this driver.
--
-- KEYS      every rule's state key, request after request; keys of one
--           key value share a hash tag
-- ARGV[1]   number of requests m
-- ARGV[2]   time in microseconds, or "" to read Redis' TIME (a decision
--           never sends one but in tests; a refund sends its decision's)
-- then for each request: its number of rules n, then for each rule,
--           decimal: algorithm, limit N, window_us W, burst B, cost C,
--           delay D, dry run (1 or 0) (see src/core/script.hpp)
-- last      "refund" (m = 1) to give back what the decision made at time
--           ARGV[2] counted (when another zone rejected the request)
--
-- Reply (decide): for each request: allowed (1 or 0), then for each of
--          its rules: remaining, reset_us, retry_us, delay_us; then, once,
--          the time used, in us
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

local m = tonumber(ARGV[1])
local now
if ARGV[2] ~= '' then
    now = tonumber(ARGV[2])
else
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- The rules of the request whose count is at ARGV[at], keys from
-- KEYS[key]; nil and an error reply if an argument is bad.
local function parse(at, key)
    local n = tonumber(ARGV[at])
    if n == nil or n < 1 then
        return nil, redis.error_reply('ERR rl: bad rule count')
    end
    local rules = {}
    for i = 1, n do
        local a = at + 1 + 7 * (i - 1)
        local r = { alg = algorithm(ARGV[a]), key = KEYS[key + i - 1],
                    limit = tonumber(ARGV[a + 1]),
                    window = tonumber(ARGV[a + 2]),
                    burst = tonumber(ARGV[a + 3]),
                    cost = tonumber(ARGV[a + 4]),
                    delay = tonumber(ARGV[a + 5]), dry = ARGV[a + 6] == '1' }
        if r.alg == nil then
            return nil, redis.error_reply('ERR rl: unknown algorithm '
                                          .. tostring(ARGV[a]))
        end
        if r.key == nil or not (r.limit and r.window and r.burst and r.cost
                                and r.delay)
                or r.limit < 1 or r.window < 1 or r.burst < 0 or r.cost < 0
                or r.delay < 0 then
            return nil, redis.error_reply('ERR rl: bad arguments for rule '
                                          .. i)
        end
        rules[i] = r
    end
    return rules
end

-- Decides one request's rules, appending its figures to the reply.
local function decide(rules, reply)
    local states = {}
    local allowed = 1
    for i, r in ipairs(rules) do
        local s = r.alg.check(r.key, now, r.limit, r.window, r.burst, r.cost,
                              r.delay)
        states[i] = s
        if not s.ok and not r.dry then
            allowed = 0
        end
    end
    reply[#reply + 1] = allowed
    for i, r in ipairs(rules) do
        local s = states[i]
        if allowed == 1 and s.ok then
            if r.cost > 0 then
                r.alg.commit(r.key, s)
            end
            reply[#reply + 1] = math.max(s.left - r.cost, 0)
            reply[#reply + 1] = s.reset
            reply[#reply + 1] = s.retry
            if r.dry then
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
end

-- Every request is parsed before any is decided: a bad argument fails
-- the call, and nothing was written.
local batch = {}
local at, key = 3, 1
for j = 1, m do
    local rules, err = parse(at, key)
    if rules == nil then
        return err
    end
    batch[j] = rules
    at = at + 1 + 7 * #rules
    key = key + #rules
end

if ARGV[at] == 'refund' then
    for _, r in ipairs(batch[1]) do
        r.alg.refund(r.key, now, r.limit, r.window, r.burst, r.cost, r.delay)
    end
    return 1
end

local reply = {}
for j = 1, m do
    decide(batch[j], reply)
end
reply[#reply + 1] = now
return reply
