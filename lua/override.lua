-- override.lua: per-key overrides (ops tooling). While the string
-- PREFIX{VALUE} (rl.lua blocked()) reads "limit NAME=N [NAME=N ...]"
-- (its first word "limit", in any case; words apart by white space),
-- each rule named NAME decides that key value with limit N instead of
-- its own, over its own window; a token_bucket whose burst is N's
-- default (spec flag 2) takes N as its capacity too. A word is split at
-- its last '=', and NAME is compared whole: a rule whose name holds
-- white space is never named. An N that is not a whole number from 1 to
-- 1e9 (sliding_log and concurrency: 1e5), or that a bucket cannot
-- compute exactly over its window (src/core/algorithm.cpp
-- exactArithmetic() for a cost up to burst + 1: the bound nginx -t puts
-- on a rule of a variable cost), leaves the rule as it is; the first
-- word naming the rule counts.
--
-- Returns f(v, on) -> the spec (rl.lua SPECS) the string `on` gives
-- rule v: a new one, marked true at [8], or v itself. Each spec keeps
-- what it got from each string at [9] (a call reads each string once
-- per state key, and decides a hot key's requests one by one). Loaded
-- only by a call that meets an override.

local function parse(v, on)
    local text = v[7]
    local _, _, _, _, flags, len, at = struct.unpack('<dddddd', text)
    local alg, rule = string.sub(text, at, at + len - 1),
                      string.sub(text, at + len)
    local n
    for word in string.gmatch(on, '%S+') do
        local name, digits = string.match(word, '^(.+)=(%d*)$')
        if name == rule then
            n = tonumber(digits)
            break
        end
    end
    if not n or n < 1 or n == v[2] or n > 1e9 or
       ((alg == 'sliding_log' or alg == 'concurrency') and n > 1e5) then
        return nil
    end
    local burst = flags % 4 >= 2 and n or v[4]
    if alg == 'token_bucket' or alg == 'leaky_bucket' or alg == 'gcra' then
        local a, b = n, v[3]
        while b > 0 do
            a, b = b, math.fmod(a, b)
        end
        local w, u = v[3] / a, n / a
        local k = alg == 'token_bucket' and burst or burst + 1
        local sum = k + burst + 1
        if sum * w >= 2^53 - u or sum * w / u >= 2^52 then
            return nil
        end
    end
    -- (concurrency=auto's: at N, not the fleet's: its plain algorithm)
    return { v[14] or v[1], n, v[3], burst, v[5], v[6], text, true }
end

return function(v, on)
    local got = v[9]
    if got == nil then
        got = {}
        v[9] = got
    end
    local o = got[on]
    if o == nil then
        o = parse(v, on) or v
        got[on] = o
    end
    return o
end
