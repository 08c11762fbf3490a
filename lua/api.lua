-- api.lua: the operator API's reads and writes of a key value's block
-- and override (SPEC section 8), each one atomic call (EVAL; never run
-- on a request's path). Embedded on its own by lua/embed.sh.
--
-- KEYS[1]   the key value's string PREFIX{VALUE}: a manual block, or an
--           override when its first word is "limit" (lua/rl.lua
--           blocked(), lua/override.lua)
-- ARGV[1]   what to do, then its arguments:
--   read NAME               -> { kind, text, ttl_ms, n }: kind 0 none,
--                              1 a block (text: its reason), 2 an
--                              override (text: the string); ttl_ms the
--                              string's PTTL (-1: none); n the limit it
--                              (or the override a block keeps) gives
--                              rule NAME, 0 for none
--   block REASON TTL_MS     -> the old string, or false. TTL_MS 0: no
--                              expiry
--   unblock                 -> the old string, or false
--   override NAME N TTL_MS  -> the old string, or false. TTL_MS 0: the
--                              string keeps its expiry (none if new)
--   unoverride NAME         -> the old string, or false
--
-- A block takes the place of an override (one string holds one or the
-- other): the override goes on a line of its own after the reason,
-- "\n(override kept) limit NAME=N ...", with "\n(override ends) MS"
-- (Redis' clock, in ms) if it had an expiry, and comes back when the
-- block is lifted (unblock), if it has not ended meanwhile. An override
-- set or removed while a key value is blocked changes that line. A
-- reason holds no control character (the module checks it), so the
-- lines never mix.

local key = KEYS[1]
local op = ARGV[1]
local LIMIT = '^[Ll][Ii][Mm][Ii][Tt]%s'
local KEPT = '\n(override kept) '
local ENDS = '\n(override ends) '

local function now_ms()
    local t = redis.call('TIME')
    return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- a block's parts: its reason, the override it keeps (or nil) and when
-- that ends (Redis ms, or nil)
local function split(v)
    local at = string.find(v, KEPT, 1, true)
    if not at then
        return v, nil, nil
    end
    local reason, kept = string.sub(v, 1, at - 1),
                         string.sub(v, at + #KEPT)
    local ends
    local e = string.find(kept, ENDS, 1, true)
    if e then
        ends = tonumber(string.sub(kept, e + #ENDS))
        kept = string.sub(kept, 1, e - 1)
    end
    return reason, kept, ends
end

local function join(reason, kept, ends)
    if not kept then
        return reason
    end
    local v = reason .. KEPT .. kept
    if ends then
        v = v .. ENDS .. string.format('%d', ends)
    end
    return v
end

-- the limit an override string gives NAME, as lua/override.lua reads it
-- (a word split at its last '=', the first naming it counts), or 0
local function limit_of(text, name)
    if not text then
        return 0
    end
    for word in string.gmatch(text, '%S+') do
        local n, digits = string.match(word, '^(.+)=(%d*)$')
        if n == name then
            return tonumber(digits) or 0
        end
    end
    return 0
end

-- the override string with NAME's word replaced by NAME=N (n nil: left
-- out); nil when no word is left
local function with(text, name, n)
    local words = { 'limit' }
    local first = true
    for word in string.gmatch(text or '', '%S+') do
        if first then
            words[1] = word     -- "limit", as it was written
            first = false
        else
            local w = string.match(word, '^(.+)=%d*$')
            if w ~= name then
                words[#words + 1] = word
            end
        end
    end
    if n then
        words[#words + 1] = name .. '=' .. n
    end
    if #words == 1 then
        return nil
    end
    return table.concat(words, ' ')
end

-- SET with the expiry asked: ms > 0 that many ms, 0 none, -1 kept
local function set(v, ms)
    if ms > 0 then
        redis.call('SET', key, v, 'PX', ms)
    elseif ms == 0 then
        redis.call('SET', key, v)
    else
        redis.call('SET', key, v, 'KEEPTTL')
    end
end

local old = redis.call('GET', key)
local override = old and string.find(old, LIMIT) ~= nil

if op == 'read' then
    if not old then
        return { 0, '', -2, 0 }
    end
    local ttl = redis.call('PTTL', key)
    if override then
        return { 2, old, ttl, limit_of(old, ARGV[2]) }
    end
    local reason, kept = split(old)
    return { 1, reason, ttl, limit_of(kept, ARGV[2]) }

elseif op == 'block' then
    local kept, ends
    if override then
        kept = old
        local ttl = redis.call('PTTL', key)
        if ttl > 0 then
            ends = now_ms() + ttl
        end
    elseif old then
        local _
        _, kept, ends = split(old)
    end
    set(join(ARGV[2], kept, ends), tonumber(ARGV[3]))

elseif op == 'unblock' then
    if old and not override then
        local _, kept, ends = split(old)
        local left = ends and ends - now_ms()
        if kept and (not left or left > 0) then
            set(kept, left or 0)
        else
            redis.call('DEL', key)
        end
    end

elseif op == 'override' then
    local name, n, ms = ARGV[2], ARGV[3], tonumber(ARGV[4])
    if old and not override then
        local reason, kept, ends = split(old)
        if ms > 0 then
            ends = now_ms() + ms
        end
        set(join(reason, with(kept, name, n), ends), -1)
    else
        -- no TTL asked: an override that was there keeps its own
        set(with(old, name, n), (ms == 0 and old) and -1 or ms)
    end

elseif op == 'unoverride' then
    local name = ARGV[2]
    if old and not override then
        local reason, kept, ends = split(old)
        kept = with(kept, name, nil)
        set(join(reason, kept, kept and ends), -1)
    elseif old then
        local v = with(old, name, nil)
        if v then
            set(v, -1)
        else
            redis.call('DEL', key)
        end
    end

else
    return redis.error_reply('ERR rl: unknown operation')
end

return old or false
