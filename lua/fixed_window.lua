-- fixed_window.lua: one counter per window, windows aligned to the epoch;
-- or, for a calendar rule (rate=Nr/d with tz=, Nr/w, Nr/month...), one
-- counter per calendar period, the period given by its bounds.
--
-- Takes the rule's state key, limit N, window_us W, cost C (burst,
-- delay unused) and, for a calendar rule, its record's bounds: 24 bytes,
-- the start and end of the period holding the time nginx sent it at and
-- the end of the next one (src/core/calendar.hpp). The period of now is
-- the one of those whose end is the first after now: before the start,
-- the one ending at the start; past the next's end (Redis' clock more
-- than a period ahead of nginx's), periods of the next one's length
-- after it (src/core/algorithm.cpp periodEnd()).
-- State (lua/meter.lua): w = window index (a calendar rule: the period's
--   end, us), c = count in it, and k = the credit the operator API gave
--   it this window (none: no third number). Its usage is c - k. A stored
--   window later than now's (the clock went back) is taken as the
--   current one; a calendar rule's stored period, as long as it has not
--   ended (a key whose billing day changed keeps its period until then).
-- check(key, now_us, limit, window_us, burst, cost, delay, bounds)
--     -> ok, left, reset, retry, delay, the state's TTL in us, the
--        numbers of the state to write:
--   ok     c - k + C <= N
--   left   N - c + k
--   reset  us until the window ends
--   retry  0 if ok, else until the window ends
--   delay  0
--   state  c + C; the key expires with the window (its TTL, false: the
--          one it has, set by the window's first write, ends there).
-- refund(key, then_us, ...): c -= C (not below 0) if the window of
--   then_us is still the stored one.
-- charge(key, now_us, ...) -> the state's TTL in us and numbers: C
--   counted at now whatever the limit (charge=, SPEC section 10: usage
--   may exceed the limit, a debt later requests wait out).
-- credit(key, now_us, ...) -> the same: k += C in now's window (the state
--   made for it if it has none), so the key may use C more in it.

-- get(): lua/meter.lua

local M = {}

-- the end of the calendar period now falls in, from a record's bounds
local function period_end(now, bounds)
    local s, e, n = struct.unpack('<ddd', bounds)
    if now < s then
        return s
    elseif now < e then
        return e
    elseif now < n then
        return n
    end
    local len = n - e
    local k = (now - n) / len
    return n + (k - k % 1 + 1) * len
end

function M.check(key, now, limit, window, burst, cost, delay, bounds)
    local hw, count, credit = get(key, 16, true)
    local w, ttl, reset
    if bounds then
        if hw ~= nil and hw > now then
            w = hw
            ttl = false     -- the key already ends with its period
        else
            w, count, credit = period_end(now, bounds), 0, nil
        end
        reset = w - now
    else
        w = now / window
        w = w - w % 1                   -- floor (meter.lua)
        if hw ~= nil and hw >= w then
            w = hw
            ttl = false     -- the key already ends with window w
        else
            count, credit = 0, nil
        end
        reset = (w + 1) * window - now
    end
    local used = credit and count - credit or count
    local left = limit > used and limit - used or 0
    if used + cost <= limit then
        return true, left, reset, 0, 0, ttl ~= false and reset,
               w, count + cost, credit
    end
    return false, left, reset, reset, 0
end

function M.charge(key, now, limit, window, burst, cost, delay, bounds)
    return select(6, M.check(key, now, 2^53, window, burst, cost, delay,
                             bounds))
end

function M.credit(key, now, limit, window, burst, cost, delay, bounds)
    local ttl, w, count, credit = select(6, M.check(key, now, 2^53, window,
                                                    burst, 0, delay, bounds))
    return ttl, w, count, (credit or 0) + cost
end

function M.refund(key, now, limit, window, burst, cost, delay, bounds)
    local hw, count, credit = get(key, 16, true)
    local w
    if bounds then
        w = period_end(now, bounds)
    else
        w = now / window
        w = w - w % 1
    end
    if hw == w then
        count = math.max(count - cost, 0)
        redis.call('SET', key, credit and struct.pack('<ddd', hw, count, credit)
                                      or struct.pack('<dd', hw, count),
                   'KEEPTTL')
    end
end

return M
