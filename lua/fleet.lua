-- fleet.lua: the fleet's keys in Redis (SPEC section 11), each call one
-- atomic EVAL (never on a request's path). Embedded on its own by
-- lua/embed.sh. Every key of a zone's fleet is PREFIX{fleet}:ZONE:...,
-- one hash tag (one Cluster slot), given as KEYS[1] .. KEYS[4]:
--   KEYS[1] ...:live    hash NAME -> a live limit
--   KEYS[2] ...:trial   hash NAME -> a trial
--   KEYS[3] ...:audit   stream: every write of the operator API
--   KEYS[4] ...:seen    sorted set: instance id by its last publication
--   (and ...:who, hash id -> identity; ...:i:ID, an instance's record:
--   named from KEYS[4], on its slot)
-- A setting is "N<TAB>UNTIL_MS<TAB>SINCE_MS<TAB>BY<TAB>REASON" (UNTIL_MS
-- 0: no end; Redis' clock); a reason holds no control character.
--
-- ARGV[1] what to do, then its arguments:
--   sync LAST AGE_MS
--       -> { now_ms, live, trial, entries, last }: the settings not ended
--          (flat name, value lists; those ended are deleted), the audit's
--          entries after LAST (XRANGE, 1000 at most; LAST "": the reader
--          has read none yet, those of the last AGE_MS on Redis' clock:
--          since it started, so none it has not read is skipped), and
--          the newest id read ("" while there was none)
--   set FIELD NAME N TTL_MS BY REASON AUDIT...
--   clear FIELD NAME AUDIT...
--       FIELD "live" or "trial": sets (TTL_MS 0: no end) or deletes
--       NAME's; -> { now_ms, old value or false }
--   audit AUDIT...                -> the entry's id
--       AUDIT: the audit entry's field value pairs (XADD, the stream kept
--       to about 10,000 entries and for 30 days idle)
--   publish ID IDENTITY RECORD TTL_MS KEEP_MS
--       -> now_ms: the record (expiring after TTL_MS), the instance seen
--          now, its identity; instances not seen for KEEP_MS forgotten
--          (PURGE_MAX a publication, the rest at the next)
--   fleet -> { now_ms, ids, seen_ms, identities, records (false: gone) }
--   read N                        -> the audit's last N entries, newest
--                                    first
-- A list of ids goes to a command BATCH at a time: unpack() takes about
-- 8,000 values, a fleet may have more ids (a purge of 9,000 failed every
-- publication, and the fleet's read answered an error).

local op = ARGV[1]
local base = string.sub(KEYS[4], 1, #KEYS[4] - 4)    -- (less "seen")
local KEEP_AUDIT = 10000
local IDLE_MS = 30 * 86400000
local BATCH = 1000
local PURGE_MAX = 10000

local function now_ms()
    local t = redis.call('TIME')
    return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function append(first)
    local fields = {}
    for i = first, #ARGV do
        fields[#fields + 1] = ARGV[i]
    end
    if #fields == 0 then
        return false
    end
    local id = redis.call('XADD', KEYS[3], 'MAXLEN', '~', KEEP_AUDIT, '*',
                          unpack(fields))
    redis.call('PEXPIRE', KEYS[3], IDLE_MS)
    return id
end

-- a setting's end (its second field), 0 for none
local function ends(v)
    local _, _, until_ms = string.find(v, '^[^\t]*\t(%d+)')
    return tonumber(until_ms or '0')
end

-- the hash's settings not ended, as a flat list; those ended deleted
local function settings(key, now)
    local all = redis.call('HGETALL', key)
    local out = {}
    for i = 1, #all, 2 do
        local u = ends(all[i + 1])
        if u ~= 0 and u <= now then
            redis.call('HDEL', key, all[i])
        else
            out[#out + 1] = all[i]
            out[#out + 1] = all[i + 1]
        end
    end
    return out
end

if op == 'sync' then
    local now = now_ms()
    local last = ARGV[2]
    local from = '(' .. last
    if last == '' then
        local age = tonumber(ARGV[3]) or 0
        from = string.format('%.0f', math.max(now - math.max(age, 0), 0))
    end
    local entries = redis.call('XRANGE', KEYS[3], from, '+', 'COUNT', 1000)
    if #entries > 0 then
        last = entries[#entries][1]
    end
    return { now, settings(KEYS[1], now), settings(KEYS[2], now), entries,
             last }
end

if op == 'set' or op == 'clear' then
    local key = ARGV[2] == 'live' and KEYS[1] or KEYS[2]
    local name = ARGV[3]
    local now = now_ms()
    local old = redis.call('HGET', key, name)
    if old and ends(old) ~= 0 and ends(old) <= now then
        old = false
    end
    if op == 'set' then
        local ttl = tonumber(ARGV[5])
        local v = table.concat({ ARGV[4], ttl > 0 and now + ttl or 0, now,
                                 ARGV[6], ARGV[7] }, '\t')
        redis.call('HSET', key, name, v)
        append(8)
    else
        redis.call('HDEL', key, name)
        append(4)
    end
    return { now, old }
end

if op == 'audit' then
    return append(2)
end

if op == 'publish' then
    local now = now_ms()
    local id, keep = ARGV[2], tonumber(ARGV[6])
    redis.call('SET', base .. 'i:' .. id, ARGV[4], 'PX', ARGV[5])
    redis.call('ZADD', KEYS[4], now, id)
    redis.call('HSET', base .. 'who', id, ARGV[3])
    local old = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now - keep,
                           'LIMIT', 0, PURGE_MAX)
    for i = 1, #old, BATCH do
        local j = math.min(i + BATCH - 1, #old)
        redis.call('ZREM', KEYS[4], unpack(old, i, j))
        redis.call('HDEL', base .. 'who', unpack(old, i, j))
    end
    redis.call('PEXPIRE', KEYS[4], keep)
    redis.call('PEXPIRE', base .. 'who', keep)
    return now
end

if op == 'fleet' then
    local now = now_ms()
    local seen = redis.call('ZRANGE', KEYS[4], 0, -1, 'WITHSCORES')
    local ids, at, who, records = {}, {}, {}, {}
    for i = 1, #seen, 2 do
        ids[#ids + 1] = seen[i]
        at[#at + 1] = seen[i + 1]
    end
    for i = 1, #ids, BATCH do
        local j = math.min(i + BATCH - 1, #ids)
        local names = {}
        for k = i, j do
            names[#names + 1] = base .. 'i:' .. ids[k]
        end
        local w = redis.call('HMGET', base .. 'who', unpack(ids, i, j))
        local r = redis.call('MGET', unpack(names))
        for k = 1, #names do
            who[i + k - 1] = w[k]
            records[i + k - 1] = r[k]
        end
    end
    return { now, ids, at, who, records }
end

if op == 'read' then
    return redis.call('XREVRANGE', KEYS[3], '+', '-', 'COUNT', ARGV[2])
end

return redis.error_reply('ERR fleet.lua: unknown op ' .. tostring(op))
