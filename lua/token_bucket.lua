-- token_bucket.lua: a bucket of B tokens (default N), refilled at the
-- rate; a request takes C tokens.
--
-- Takes the rule's state key, limit N, window_us W, burst B
-- (the capacity), cost C (delay unused).
-- Units: g / N us, g = gcd(N, W): a token is w' = W / g units, a
--   microsecond refills n' = N / g; capacity K = B tokens, K * w' units.
-- State (lua/meter.lua): t = last update (us), x = tokens (units) at t,
--   u = the units x is in (w' when written; read(): lua/bucket.lua);
--   no key: full.
-- check(key, now_us, limit, window_us, burst, cost, delay)
--     -> ok, left, reset, retry, delay, the state's TTL in us, the
--        numbers of the state to write:
--   tokens min(K * w', x + (now - t) * n') (the clock going back
--          refills nothing)
--   ok     tokens >= C * w'
--   left   floor(tokens / w')
--   reset  ok: until full again, ceil((K * w' - tokens') / n')
--          else: retry
--   retry  ceil((C * w' - tokens) / n'); C > K: ceil(C * w' / n')
--   delay  0
--   state  x = tokens - C * w', u = w', t = max(t, now) (a request decided after
--          a later one counts as of that later time: no interval refills
--          twice); the key lives until the bucket is full.
-- refund(key, then_us, ...): x += C * w' (up to K * w'); the TTL
--   shrinks by as much, the key goes once the bucket is full.
-- charge(key, now_us, ...) -> the state's TTL in us and numbers:
--   x -= C * w' at now whatever is left (charge=, SPEC section 10:
--   tokens below 0 are a debt refilled before the next request fits).

-- units(), read(), in_units(), since(), rewrite(): lua/bucket.lua

local M = {}

-- tokens_at(key, now, w, n, full) -> the tokens at now, the state's time
local function tokens_at(key, now, w, n, full)
    local t, x, u = read(key)
    if t ~= nil then
        x = in_units(x, u, w, false)
    end
    if t ~= nil and t ~= 0 and x < full then
        local elapsed = math.max(now - t, 0)
        if elapsed < math.ceil((full - x) / n) then
            return x + elapsed * n, t
        end
    end
    return full, t
end

function M.check(key, now, limit, window, burst, cost, delay)
    local w, n = units(limit, window)
    local full = burst * w
    local need = cost * w
    local tokens, t = tokens_at(key, now, w, n, full)
    local left = 0
    if tokens > 0 then
        left = math.floor(tokens / w)
    end
    if cost > burst then
        local retry = math.ceil(need / n)
        return false, left, retry, retry, 0
    end
    if tokens >= need then
        local reset = math.ceil((full - tokens + need) / n)
        local at = since(t, now)
        return true, left, reset, 0, 0, reset + at - now,
               at, tokens - need, w
    end
    local retry = math.ceil((need - tokens) / n)
    return false, left, retry, retry, 0
end

function M.charge(key, now, limit, window, burst, cost, delay)
    local w, n = units(limit, window)
    local full = burst * w
    local left, t = tokens_at(key, now, w, n, full)
    left = left - cost * w
    local at = since(t, now)
    return math.ceil((full - left) / n) + at - now, at, left, w
end

function M.refund(key, now, limit, window, burst, cost, delay)
    local w, n = units(limit, window)
    local full = burst * w
    local t, x, u = read(key)
    if t == nil then
        return
    end
    x = in_units(x, u, w, false)
    local after = math.min(x + cost * w, full)
    if after >= full then
        redis.call('DEL', key)
        return
    end
    rewrite(key, struct.pack('<ddd', t, after, w),
            math.ceil((full - x) / n) - math.ceil((full - after) / n))
end

return M
