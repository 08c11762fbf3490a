-- meter.lua: what the algorithms share; the build puts it before their
-- chunks.
--
-- State: every algorithm but sliding_log keeps one string per key, its
-- numbers packed as little-endian doubles (struct.pack '<d'), written
-- with one SET ... PX: no number is ever printed or parsed (string.format
-- and tonumber of a 16-digit time cost more than the commands around
-- them). Every number stored is an integer below 2^53, so the doubles
-- are exact. A value of another length (not written by this script) is
-- taken as no state.


-- A decision call reads each key once and writes it once (rl.lua
-- flush()): the requests of a batch on one key (a global limit, a busy
-- client) share one GET and one SET, which cost more than everything
-- else a decision does. STATE[key] is the key's value as the call has
-- left it so far (false: none); once the call wrote the key a second
-- time, its numbers instead: a table { a, b [, c] }, updated in place
-- and packed by flush() alone. From the third request on one key, a
-- request packs and unpacks no state (a struct.pack and a struct.unpack
-- cost more than its algorithm); a call of distinct keys keeps strings.
-- The two are told apart by their length (#): a table's is 2 or 3, a
-- state's 16 or 24 (a foreign value shorter than 4 bytes is kept as
-- false, no state; a longer one is no state for get()).
-- nil outside a decision call (a refund reads and writes Redis
-- directly).
local STATE

-- get(key, bytes[, longer]) -> the numbers of key's state, if it has
-- that size (longer: or 24 bytes, a fixed window's with its credit)
local function get(key, bytes, longer)
    local v
    if STATE then
        v = STATE[key]
        if v == nil then
            v = redis.call('GET', key)
            if v and #v < 4 then
                v = false   -- a foreign value: no state (not a table)
            end
            STATE[key] = v
        elseif v and #v < 4 then
            return v[1], v[2], v[3]
        end
    else
        v = redis.call('GET', key)
    end
    if longer and v and #v == 16 then
        -- (struct.unpack gives the position after the numbers too: no
        -- third number for a 16-byte state)
        local a, b = struct.unpack('<dd', v)
        return a, b
    elseif longer and v and #v == 24 then
        local a, b, c = struct.unpack('<ddd', v)
        return a, b, c
    elseif v and #v == bytes then
        return struct.unpack(bytes == 16 and '<dd' or '<ddd', v)
    end
end

-- On the algorithms' admit paths and in the driver, x - x % 1
-- stands for math.floor(x) and a comparison for math.max: a call of a C
-- function costs a call of 8 requests about 1.5% of its instructions
-- (Lua's % is a - floor(a / b) * b, exact here: x - floor(x) is).

-- TTL in ms of state fresh again in ttl_us: rounded up, plus 1 ms (see
-- rl.lua)
local function px(ttl_us)
    return math.ceil(ttl_us / 1000) + 1
end
