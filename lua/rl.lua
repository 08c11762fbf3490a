-- rl.lua: decides every rule of one request for one zone, atomically.
--
-- The build prepends one chunk per algorithm file (fixed_window.lua, ...),
-- each filling ALG[name] with { check = f, commit = f, refund = f }, then
-- this driver.
--
-- KEYS[i]   state key of rule i; keys of one key value share a hash tag
-- ARGV[1]   number of rules n
-- ARGV[2]   time in microseconds, or "" to read Redis' TIME (a decision
--           never sends one but in tests; a refund sends its decision's)
-- ARGV[3 + 5 * (i - 1) ...]  rule i: algorithm, limit, window_us, burst, cost
-- ARGV[3 + 5 * n]  absent to decide; "refund" to give back what the
--           decision made at time ARGV[2] counted (when another zone
--           rejected the request)
--
-- Reply (decide): { allowed (1 or 0), then for each rule i:
--          remaining, reset_ms, retry_ms; then the time used, in us }
--   remaining  what the rule still admits after this request (counted
--              only if the request is admitted)
--   reset_ms   until the rule is whole again (or frees capacity if full)
--   retry_ms   0 if the rule admits this request, else until it would
-- A request is admitted only if every rule admits it; then every rule
-- counts it, otherwise none does.
-- Reply (refund): 1

local n = tonumber(ARGV[1])
local now
if ARGV[2] ~= '' then
    now = tonumber(ARGV[2])
else
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end

if ARGV[3 + 5 * n] == 'refund' then
    for i = 1, n do
        local a = 3 + 5 * (i - 1)
        local alg = ALG[ARGV[a]]
        if alg ~= nil then
            alg.refund(KEYS[i], now, tonumber(ARGV[a + 1]),
                       tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]),
                       tonumber(ARGV[a + 4]))
        end
    end
    return 1
end

local states = {}
local allowed = 1
local reply = { 0 }

for i = 1, n do
    local a = 3 + 5 * (i - 1)
    local alg = ALG[ARGV[a]]
    if alg == nil then
        return redis.error_reply('ERR rl: unknown algorithm ' .. ARGV[a])
    end
    local s = alg.check(KEYS[i], now, tonumber(ARGV[a + 1]),
                        tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]),
                        tonumber(ARGV[a + 4]))
    states[i] = s
    if not s.ok then
        allowed = 0
    end
end

for i = 1, n do
    local s = states[i]
    if allowed == 1 then
        ALG[ARGV[3 + 5 * (i - 1)]].commit(KEYS[i], s)
    end
    local cost = tonumber(ARGV[3 + 5 * (i - 1) + 4])
    if allowed == 1 then
        reply[#reply + 1] = math.max(s.left - cost, 0)
    else
        reply[#reply + 1] = s.left
    end
    reply[#reply + 1] = math.ceil(s.reset / 1000)
    reply[#reply + 1] = math.ceil(s.retry / 1000)
end

reply[1] = allowed
reply[#reply + 1] = now
return reply
