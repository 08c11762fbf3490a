-- rl.lua: decides every rule of one request for one zone, atomically.
--
-- The build prepends one chunk per algorithm file (fixed_window.lua, ...),
-- each returning { check = f, refund = f } (sliding_log: and commit = f)
-- and run only when needed: algorithm(name) gives it (lua/embed.sh),
-- then this driver.
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
-- Reply (refund): 1
--
-- Cost: this runs on every request, so it makes few tables (each costs
-- about as much as a command), prints and parses no number it can avoid,
-- and decides a rule with one GET and, if admitted, one SET ... PX.

local n = tonumber(ARGV[1])
local now
if ARGV[2] ~= '' then
    now = tonumber(ARGV[2])
else
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local refund = ARGV[3 + 7 * n] == 'refund'

-- rule i's algorithm and numbers, or an error reply
local function rule(i)
    local a = 3 + 7 * (i - 1)
    local alg = algorithm(ARGV[a])
    if alg == nil then
        return redis.error_reply('ERR rl: unknown algorithm ' .. ARGV[a])
    end
    local limit, window = tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
    local burst, cost = tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4])
    local delay = tonumber(ARGV[a + 5])
    if not (limit and window and burst and cost and delay)
            or limit < 1 or window < 1 or burst < 0 or cost < 0
            or delay < 0 then
        return redis.error_reply('ERR rl: bad arguments for rule ' .. i)
    end
    return alg, limit, window, burst, cost, delay, ARGV[a + 6] == '1'
end

if refund then
    for i = 1, n do
        local alg = rule(i)
        if type(alg) ~= 'table' or alg.check == nil then
            return alg
        end
    end
    for i = 1, n do
        local alg, limit, window, burst, cost, delay = rule(i)
        alg.refund(KEYS[i], now, limit, window, burst, cost, delay)
    end
    return 1
end

-- reply[2 + 4 * (i - 1) ...]: rule i's figures; pending[4 * i - 3 ...]:
-- what admitting the request writes for rule i (false: it rejects), its
-- TTL in us, its algorithm, its cost
local reply = { 1 }
local pending = {}
for i = 1, n do
    local alg, limit, window, burst, cost, delay, dry = rule(i)
    if type(alg) ~= 'table' or alg.check == nil then
        return alg
    end
    local ok, left, reset, retry, wait, v, ttl =
        alg.check(KEYS[i], now, limit, window, burst, cost, delay)
    if not ok and not dry then
        reply[1] = 0
    end
    local j = 4 * i - 2
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
    local j = 4 * i - 2
    local v = pending[4 * i - 3]
    if reply[1] == 0 then
        reply[j + 3] = 0            -- nothing counted, nothing delayed
    elseif v then
        local cost = pending[4 * i]
        reply[j] = math.max(reply[j] - cost, 0)
        if cost > 0 then
            local alg = pending[4 * i - 1]
            if alg.commit then
                alg.commit(KEYS[i], v, pending[4 * i - 2])
            else
                redis.call('SET', KEYS[i], v, 'PX', px(pending[4 * i - 2]))
            end
        end
    end
end
reply[4 * n + 2] = now
return reply
