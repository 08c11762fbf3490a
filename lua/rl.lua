-- rl.lua: decides every rule of one request for one zone, atomically;
-- a call may carry several requests (a batch), decided one after the
-- other in their order.
--
-- The build prepends one chunk per algorithm file (fixed_window.lua, ...),
-- each returning { check = f, refund = f } and, but for sliding_log,
-- charge = f (sliding_log: and commit = f; concurrency.lua, the
-- in-flight limit: commit = f, renew = f, slot = true, and no charge;
-- fixed_window.lua: credit = f)
-- and run only when needed: algorithm(name) gives it (lua/embed.sh),
-- then this driver.
--
-- KEYS      the state keys of the call, each once (keys of one key
--           value share a hash tag), then for each its block key (the
--           state key less its ':' and rule id, see blocked()): key k's
--           is KEYS[k + #KEYS / 2]
-- ARGV[1]   the requests, packed as little-endian doubles (struct.pack
--           '<d'; each an integer): for each request in order
--             n t k s c     its rule count n, its time t, and its first
--                           rule's k s c
--             k s c         each further rule of it
--   n       the rule count, plus 128 times the units the request asks
--           for its instance's lease (lease= zones; see "Leases" below)
--   t       t <= 0: Redis' TIME plus t (the request arrived -t us before
--           its batch left nginx; 0: TIME itself); t > 0: that time in
--           us (tests; a refund sends its decision's)
--   k s c   the rule's key KEYS[k] (k <= #KEYS / 2), its spec
--           ARGV[s + 1], its cost c; a concurrency rule's cost is 1, and its c is 8 bytes naming
--           the request's slot (not a number: the member its key holds);
--           8 zero bytes name none: a cost of 0 (a read, as the
--           operator API's). A calendar rule's (spec flag 4) is
--           followed by its period's bounds, 3 more doubles: the start
--           and end of the period holding the time nginx sent it at,
--           and the next period's end (src/core/calendar.hpp); its
--           algorithm (fixed_window) picks the period its time t falls
--           in (on Redis' clock) with them. A trial's (spec flag 8) by
--           one more double: its place, the index (1 to n) among the
--           request's records of the rule it stands in for (see
--           "Trials" below)
-- ARGV[2..] the specs of the call's rules, each once: limit N (0: a
--           live limit of 0, which rejects every request; see spec()),
--           window_us W, burst B, delay D, flags (1: a dry run; 2: B
--           is N's default, and follows an override of N; 4: a
--           calendar rule, its records carry bounds; 8: a trial, a
--           dry run too, its records carry a place; 16:
--           concurrency=auto, N is the fleet's, read beside its slots,
--           N its min and B its max), the length of the algorithm's
--           name, packed like ARGV[1], then the algorithm's name and
--           the rule's (see src/core/script.hpp); a concurrency rule's
--           D is its request's priority level (lua/concurrency.lua)
-- ARGV[#ARGV] "refund" for a refund: give back what each request's
--           decision, made at its time t, counted (another zone
--           rejected it), and release its slots (the request ended);
--           "renew": each record's slots expire a hold after its time
--           t (their requests still run; other rules are not read);
--           "charge": each rule counts c more units at its time t
--           (charge=: c < 0 gives -c back, as a refund at t);
--           "credit": each rule's usage goes down by c units at its
--           time t (the operator API's credit: a fixed window's count
--           below zero if need be, until its window or period ends;
--           the other algorithms give c back as a refund at t would)
--
-- Numbers go packed, and specs once per call, because each argument
-- costs Redis about as much as a short command, and parsing a decimal
-- number about as much again.
--
-- A call across slots (a Redis Cluster node's requests of several
-- slots in one call, src/redis/batch.hpp): no key declared, the arguments
-- above, KEYS' then ARGV's, and the map last:
--   EVALSHA sha 0 key_1..key_k blk_1..blk_k head specs [refund] map
-- Redis refuses a call whose declared keys are of several slots
-- (CROSSSLOT), whatever the script's flags; the module sends such
-- calls only to a server that took the script with the shebang
-- '#!lua flags=allow-cross-slot-keys' (Redis 7.0 and later, Valkey),
-- which lets one call touch keys of several slots of the node, one
-- command one slot. map: a byte per key of the call, 1 where a slot's
-- keys start, else 0 (a slot's keys are together: its length is the
-- call's key count). Each slot's keys and block keys are
-- read with one MGET at the call's start, before anything is written,
-- through redis.pcall: a slot this node does not serve whole (it
-- moved: Redis says "non local key"; it is migrating and a key is
-- missing here: ASK or TRYAGAIN in a command, the same error in a
-- script; the cluster is down) fails its MGET, and nothing of that
-- slot is read, decided or written: its requests are "not decided"
-- (below), and the module sends them again, each on its own slot,
-- where Redis' own MOVED, ASK or TRYAGAIN answers them. The other
-- slots' requests are decided as in any call. (A call's error reply
-- is still a call that wrote nothing before it failed, but for what
-- any call may meet midway: a key of another type, a bad record.)
--
-- Reply (decide): one string of little-endian doubles: Redis' TIME in
--          us (0 if no request needed it), then for each request, for
--          each of its rules: left, reset_us, verdict
--   left       what the rule admits before this request
--   reset_us   until the rule is whole again; when nothing is left
--              (rejected, or admitted with nothing left after it: left
--              <= cost), until it frees capacity: until this request,
--              or one more of cost 1, fits
--   verdict    > 0: the rule would reject the request, retry in as many
--              us; else minus the delay before serving it (delay=), 0
--              for none
--          then, only if a key value's override (lua/override.lua) decided
--          some rules, an auto rule was decided, or a lease was granted,
--          in the order decided: for an override (or an auto rule), its
--          rule's index among the call's rules (0: the first rule of the
--          first request) and the limit N it was decided with; for a
--          lease, minus (1 + the index of the last rule of its request)
--          and the units granted
-- A request is admitted only if every rule that is not a dry run admits
-- it; then every rule that admits it counts it (a dry-run rule that would
-- reject it takes nothing, and never delays), otherwise none does (a
-- rejection writes nothing). The module knows each rule's cost and dry
-- run, so it works out from the verdicts whether the request is admitted,
-- what each rule then leaves, and which delays apply
-- (src/core/reply.hpp): each figure packed costs Redis about 330
-- instructions. A bad record is an error reply for the whole call (the
-- module never sends one).
--
-- Trials (SPEC section 11): a trial's record decides the request as
-- its rule would at the trial's N, in that rule's place (its record
-- `place`), on a state of its own. It is a dry run (it never rejects,
-- never delays), and counts the request when that world admits it: it
-- admits it, and every rule that is not a dry run but the one at its
-- place does. So a request that its rule alone rejects is counted in
-- the trial (the rest of the request writes nothing, as any rejection),
-- and one that another rule rejects is not. Its figures are those of
-- a dry run's, whatever it counted.
--
-- Every key written expires when its state decides as a fresh one
-- would (src/core/algorithm.hpp idleAtUs), in ms rounded up, plus 1 ms:
-- Redis expires keys on a millisecond clock, and before 7.2 a PEXPIRE of
-- 1 may even delete the key at once when a millisecond ticks meanwhile
-- (redis/redis#10300). For a request of t < 0, that time is -t us nearer.
-- A request a call across slots did not decide (its slot's MGET
-- failed, above): each of its rules reads left -1, reset_us 0, verdict
-- 0 (no decided rule leaves less than 0), and no trailer record.
-- Reply (refund, renew, charge, credit): 1; in a call across slots
-- that did not do them all, one string of little-endian doubles: the
-- index (0: the call's first) of each request not done, in order
--
-- Leases (SPEC section 6): a request that asks for k units (n above) is
-- decided as any other; if it is admitted, it is granted g, the most up
-- to k that each of its rules admits after it (left - cost), counted in
-- every rule as g more requests of cost 1 at its time would be (one
-- check of cost + g, written in place of its own). The module sends the
-- ask on a record of its own, of cost 0, behind the request that found
-- the group hot, so the request's figures are what exact mode gives; a
-- refund of the record's rules at its time, of the units its instance
-- did not spend, gives them back. A request that asks goes the stacked
-- path, one rule or several: the one-rule path stays as it is.
--
-- Cost: this runs on every request, so it makes few tables (each costs
-- about as much as a command), prints and parses no number it can avoid,
-- and decides a rule with one GET and, if admitted, one SET ... PX; a
-- batch shares the call, TIME and this driver among its requests, and
-- its requests on one key share that GET and SET (meter.lua STATE).

-- Where the call's keys are: KEYS, or in a call across slots ARGV's
-- first (the other arguments after them, the map last): key k is
-- KA[k], argument i ARGV[AO + i], NK keys and as many block keys
local KA, AO, NK, MAP = KEYS, 0, #KEYS / 2, nil
local last = #ARGV
if NK == 0 and last > 1 then
    MAP = ARGV[last]
    NK = #MAP
    KA, AO, last = ARGV, 2 * NK, last - 1 - 2 * NK
    if last < 2 then
        return redis.error_reply('ERR rl: bad arguments: a map of ' .. NK
                                 .. ' keys')
    end
end
-- a refund, a renewal or a charge (the module's own calls, no request
-- waits for them): every record is read, then each is done (pass 2)
local mode = ARGV[AO + last]
local refunding = mode == 'refund' or mode == 'renew' or mode == 'charge'
                  or mode == 'credit'
if refunding then
    last = last - 1
end

-- Redis' TIME in us (every decision call of the module's needs it)
local clock
do
    local t = redis.call('TIME')
    clock = tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- SPECS[s]: spec s read, { algorithm, limit, window, burst, delay, dry,
-- the spec's text }, once per call; or an error reply. AUTO_N: the N
-- an auto rule's last check read (concurrency=auto)
local SPECS, AUTO_N = {}, nil
local function spec(s)
    local text = s >= 1 and s < last and ARGV[AO + s + 1]
    if not text or #text <= 48 then
        return redis.error_reply('ERR rl: bad arguments: no spec ' .. s)
    end
    local limit, window, burst, delay, flags, len, at =
        struct.unpack('<dddddd', text)
    local auto = flags >= 16
    flags = flags % 16
    local name = string.sub(text, at, at + len - 1)
    local alg = algorithm(name)
    if alg == nil then
        return redis.error_reply('ERR rl: unknown algorithm ' .. name)
    end
    if limit < 0 or window < 1 or burst < 0 or delay < 0 or
       (flags >= 8 and flags % 8 >= 4) then
        -- (a trial of a calendar rule: no record carries both)
        return redis.error_reply('ERR rl: bad arguments in spec ' .. s)
    end
    if limit == 0 then
        -- a live limit of 0 (SPEC section 11): every request rejected,
        -- nothing counted; retry the window, at most a minute (a
        -- concurrency rule's 100 ms); a slot taken before is still
        -- released and renewed (src/core/algorithm.cpp zeroRetryUs)
        local r = alg.slot and 100000 or math.min(window, 60000000)
        alg = { check = function() return false, 0, r, r, 0 end,
                refund = alg.slot and alg.refund or function() end,
                renew = alg.renew, slot = alg.slot }
    end
    if auto and alg.slot then
        -- concurrency=auto (SPEC section 13): N is the fleet's, read
        -- beside the slots (limit is its min, burst its max); the
        -- trailer says it (AUTO_N, below)
        local slots = alg
        alg = { check = function(key, now, limit, hold, b, cost, d, slot)
                    AUTO_N = slots.auto(key, limit, b)
                    return slots.check(key, now, AUTO_N, hold, b, cost, d,
                                       slot)
                end,
                commit = slots.commit, refund = slots.refund,
                renew = slots.renew, slot = true }
    end
    local v = { alg, limit, window, burst, delay, flags % 2 == 1, text }
    -- ([8] and [9]: an override's, lua/override.lua; [10]: a calendar
    -- rule's records carry bounds, or with [11] a trial's its place, set
    -- apart: the table of every other spec stays as small; [13]:
    -- concurrency=auto, [14] its algorithm at a given N, an override's)
    if flags >= 4 then
        v[10] = true
        if flags >= 8 then
            v[11] = true
        end
    end
    if auto then
        v[13], v[14] = true, algorithm(name)
    end
    SPECS[s] = v
    return v
end

-- Per-key overrides (ops tooling, lua/override.lua): a key value's
-- string PREFIX{VALUE} (see blocked()) whose first word is "limit" gives
-- the rules it names another limit for it. OVR[key]: that string, read
-- with the block of state key key; each rule of the key is decided with
-- the spec ovr(its spec, the string) gives (rules of one state key may
-- have several specs: rl_dry_run, or one name= in several places).
-- ovr: that function, loaded when a call meets an override (a function
-- made on every call costs about as much as a command, as does a
-- table: OVR is made then too). LIMIT: an override's first word.
local OVR, ovr
local LIMIT = '^[Ll][Ii][Mm][Ii][Tt]%s'

-- Manual blocks (ops tooling): a key value is blocked in every rule of
-- the zones of one prefix while the string PREFIX{VALUE} exists (any
-- value; its TTL, if any, ends the block): each of its rules rejects the
-- request, nothing left, retry in what the block has left, at most 60 s
-- (no TTL: 60 s), so a lifted block is read as lifted within a minute
-- (the module's deny cache keeps a rejection until its retry). It is a
-- state key less its ':' and 16 hex digits (src/core/state_key.hpp):
-- the same hash tag, one Cluster slot, and one string to make; the
-- module sends it after the call's state keys (NK below). A decision
-- call reads every state key and block key with one MGET at its start
-- (READ: key k's state READ[k], its block READ[k + NK]; one command for
-- the call's keys costs a call of 8 requests on 8 keys 6% fewer
-- instructions than a command per key, a call of one request 4% more,
-- bench/script-cost), and blocked() takes
-- a key's from there when a request first meets it (meter.lua get()
-- then finds the state in STATE). A blocked state key's STATE is {
-- retry in us }, a table of length 1 (a state's table has 2 or 3
-- numbers, its string 16 or 24 bytes), which get() never reads: the
-- key's rules reject at once. A refund reads no block: it gives back
-- what was counted. A value whose first word is "limit" is no block but
-- an override (see lua/override.lua), read here too.
local READ
local function blocked(key, alg, k)
    local bk = KA[k + NK]
    local on, v
    if READ then
        v, on = READ[k], READ[k + NK]
        -- (sliding_log keeps no STATE: a key of another type is no
        -- block, nor a state: MGET says nil)
        if alg.commit or (v and #v < 4) then
            v = false   -- a foreign value: no state
        end
    elseif alg.commit then
        on, v = redis.call('MGET', bk)[1], false
    else
        -- a charge call's (it reads no key it does not meet)
        local r = redis.call('MGET', key, bk)
        v, on = r[1], r[2]
        if v and #v < 4 then
            v = false
        end
    end
    if on and string.find(on, LIMIT) then
        OVR = OVR or {}
        OVR[key] = on
        ovr = ovr or algorithm('(override)')
    elseif on then
        local ms = redis.call('PTTL', bk)
        if ms ~= -2 then    -- (-2: ended in between)
            local retry = ms * 1000 + 1000  -- and the rest of its last ms
            if ms < 0 or retry > 60000000 then
                retry = 60000000
            end
            v = { retry }
        end
    end
    STATE[key] = v
    return v
end

local H = ARGV[AO + 1] or ''
local size = #H
-- a concurrency rule's record naming no slot (cost 0: a read)
local NOSLOT = '\0\0\0\0\0\0\0\0'

-- a bad record: an error reply for the whole call (each a constant and
-- a return where met: a function made on every call costs as much as a
-- command, see "Cost" above)
local BAD = 'ERR rl: bad arguments: '

-- what a decision call writes at its end: TTL_US[key] for each key
-- written, the TTL of the last write that set one, in us from Redis'
-- clock (false: none did, the key keeps its own)
local TTL_US = {}

-- counts an admitted request in a rule: the state check() returned (a,
-- b, c: its numbers; sliding_log: what its commit() takes), with a TTL
-- of ttl us (false: the one the key has), the request being age us
-- older than Redis' clock
local function write(key, alg, ttl, age, a, b, c)
    if alg.commit then
        alg.commit(key, a, math.max(ttl - age, 1))
        return
    end
    local had = TTL_US[key]
    if had == nil then
        STATE[key] = c and struct.pack('<ddd', a, b, c)
                     or struct.pack('<dd', a, b)
    else
        local t = STATE[key]
        if #t < 4 then
            t[1], t[2], t[3] = a, b, c
        else
            STATE[key] = { a, b, c }    -- its second write in this call
        end
    end
    if ttl then
        TTL_US[key] = ttl - age
    elseif had == nil then
        TTL_US[key] = false
    end
end

-- one SET per key written, with the last TTL set: the key ends where
-- it would have, the SET coming some microseconds later (within the 1 ms
-- every TTL has to spare). The order of the keys is TTL_US' (the SETs
-- of one script call are one step to every other client). The TTL goes
-- as text (a number costs Redis a printf of 17 digits), made again only
-- when it changes: new keys of one window and call share it. Its ms are
-- px()'s (meter.lua), inline: the call of px() and of math.ceil cost a
-- new key 500 instructions (bench/script-cost, 8 new keys: -1.1%).
local function flush()
    local ms0, text
    for key, ttl in pairs(TTL_US) do
        local v = STATE[key]
        if #v < 4 then
            v = v[3] and struct.pack('<ddd', v[1], v[2], v[3])
                or struct.pack('<dd', v[1], v[2])
        end
        if ttl then
            local ms = ttl > 1 and ttl / 1000 or 0.001
            local up = ms % 1
            ms = ms - up + (up > 0 and 2 or 1)  -- ceil, plus 1 ms
            if ms ~= ms0 then
                ms0, text = ms, string.format('%d', ms)
            end
            redis.call('SET', key, v, 'PX', text)
        else
            -- the key ends when it should already (half the cost of
            -- setting a TTL)
            redis.call('SET', key, v, 'KEEPTTL')
        end
    end
end

-- the reply, one string per rule, packed as it is decided, the clock
-- in the first (one string of little-endian doubles in the end: hiredis
-- makes one object of it, where an array of integers would be one per
-- figure; packing all the figures at the end cost a call of 8 requests
-- a tenth of its instructions, a string for the clock alone a call of
-- one request 3%)
local parts, np = {}, 0     -- (np: #parts, kept: # costs a search)
-- the overrides' records, after the parts (made with the first)
local trailer
-- a request of stacked rules, or a refund's: see below; fixes: its
-- rules left nothing, whose reset is known once it is counted; tw[1 ..
-- nt]: what counting it writes for each trial that admits it (its key,
-- algorithm, TTL in us, state, place)
local pending, fixes, tw
local nt = 0
-- a request that asks for a lease: per rule that admits it { key, spec,
-- cost }, while the request is read
local lease


STATE = not refunding and {} or nil
-- LOST[k]: key k's slot is not this node's whole (a call across
-- slots: its MGET failed): its requests are not decided, nor done
local LOST
if MAP then
    -- a call across slots: one MGET a slot, through redis.pcall, before
    -- anything is written (a decision's states, and a charge's, go in
    -- READ as they would from one MGET: a charge then reads no key
    -- again; a refund's or a renewal's only say which slots are here)
    READ = (STATE or mode == 'charge') and {} or nil
    local from = 1
    while from <= NK do
        -- the slot's keys: from, to the key before the next slot's
        local to = (string.find(MAP, '\1', from + 1, true) or NK + 1) - 1
        local r
        if to == from then
            r = redis.pcall('MGET', KA[from], KA[from + NK])
        else
            local t = { unpack(KA, from, to) }
            local n = to - from + 1
            for k = from, to do
                t[n + k - from + 1] = KA[k + NK]
            end
            r = redis.pcall('MGET', unpack(t))
        end
        if r.err then
            LOST = LOST or {}
            for k = from, to do
                LOST[k] = true
            end
        elseif READ then
            local n = to - from + 1
            for i = 1, n do
                READ[from + i - 1], READ[from + i - 1 + NK] = r[i], r[n + i]
            end
        end
        from = to + 1
    end
elseif STATE and NK >= 1 then
    READ = redis.call('MGET', unpack(KEYS))
end
-- a call across slots: the requests of its own calls not done (LOST)
local undone
-- a charge call that gives nothing back keeps STATE as a decision does,
-- and writes at the end (flush()): its records on one key share one
-- MGET (the state with the override) and one SET. A charge below 0 is a
-- refund, which writes at once: a call with one reads and writes Redis
-- record by record.
local giving

-- A refund reads every record before it writes anything (pass 1); a
-- decision writes at the end (flush()).
for pass = refunding and 1 or 2, 2 do
    if pass == 2 and mode == 'charge' and not giving then
        STATE = {}
    end
    local pos, req = 1, 0
    while pos <= size do
        req = req + 1
        -- the request: n t, then its first rule k s c
        if pos + 39 > size then
            return redis.error_reply(BAD .. 'a request at byte ' .. pos)
        end
        local n, now, k, s, cost, nxt = struct.unpack('<ddddd', H, pos)
        local ask = 0
        if n > 127 then
            ask = n % 128
            ask, n = (n - ask) / 128, ask
        end
        if n < 1 or nxt + 24 * (n - 1) > size + 1 then
            return redis.error_reply(BAD .. 'a request at byte ' .. pos)
        end
        -- (checked here and for further rules alike, inline: a function
        -- for the check costs a call of 8 requests 3% more)
        local key, v = k <= NK and KA[k], SPECS[s] or spec(s)
        if v.err then
            return v
        end
        -- a call across slots: a request of a slot not read (its rules
        -- are all of its slot, their keys of one hash tag)
        local lost = LOST and LOST[k]
        -- a concurrency rule's slot, or a calendar rule's bounds (its
        -- algorithm's last argument); a trial's place
        local slot, place
        if v[1].slot then
            slot = string.sub(H, nxt - 8, nxt - 1)
            cost = slot ~= NOSLOT and 1 or 0
        elseif v[10] then
            if v[11] then
                place = nxt + 7 <= size and struct.unpack('<d', H, nxt)
                nxt = nxt + 8
            else
                slot = string.sub(H, nxt, nxt + 23)
                nxt = nxt + 24
            end
            if nxt > size + 1 then
                return redis.error_reply(BAD .. 'a rule at byte ' .. pos + 16)
            end
        end
        if not key or (cost < 0 and mode ~= 'charge' and mode ~= 'credit')
        then
            return redis.error_reply(BAD .. 'a rule at byte ' .. pos + 16)
        end
        pos = nxt
        local age = 0
        if now <= 0 then
            -- t = -A: A us before Redis' TIME
            age = -now
            now = clock - age
        end

        if n == 1 and ask == 0 and not refunding and not lost then
            -- one rule (the usual request): decided and counted at once
            local alg = v[1]
            local ok, left, reset, retry, wait, ttl, a, b, c
            local blk = STATE[key]
            if blk == nil then
                -- blocked()'s path for a key with no block key, inline
                -- (its call cost a new key 1.1k instructions: bench/
                -- script-cost, 8 new keys -2.4%)
                if READ and READ[k + NK] == false and not alg.commit then
                    blk = READ[k]
                    if blk and #blk < 4 then
                        blk = false     -- a foreign value: no state
                    end
                    STATE[key] = blk
                else
                    blk = blocked(key, alg, k)
                end
            end
            local auto
            if blk and #blk == 1 then
                blk = blk[1]
                ok, left, reset, retry = false, 0, blk, blk
            else
                if ovr then
                    local o = OVR[key]
                    if o then
                        v = ovr(v, o)
                        alg = v[1]
                    end
                end
                ok, left, reset, retry, wait, ttl, a, b, c =
                    alg.check(key, now, v[2], v[3], v[4], cost, v[5], slot)
                auto = v[13] and AUTO_N
            end
            if ok then
                if cost > 0 then
                    local t = STATE[key]
                    if t and #t < 4 then
                        -- written twice already in this call (a hot
                        -- key): write()'s last branch, inline
                        t[1], t[2], t[3] = a, b, c
                        if ttl then
                            TTL_US[key] = ttl - age
                        end
                    elseif TTL_US[key] == nil and not alg.commit then
                        -- its first write in this call: write()'s first
                        -- branch, inline (-1.7% for 8 new keys)
                        STATE[key] = c and struct.pack('<ddd', a, b, c)
                                     or struct.pack('<dd', a, b)
                        TTL_US[key] = ttl and ttl - age or false
                    else
                        write(key, alg, ttl, age, a, b, c)
                    end
                end
                if left <= cost then
                    -- it left the rule nothing: the reset is until one
                    -- more request fits, checked on the state it wrote,
                    -- not until the rule is whole (kept if one fits now)
                    local fits, _, _, r =
                        alg.check(key, now, v[2], v[3], v[4], 1, v[5],
                                  slot)
                    if not fits then
                        reset = r
                    end
                end
                retry = -wait
            elseif retry < 1 then
                retry = 1
            end
            np = np + 1
            if np > 1 then
                parts[np] = struct.pack('<ddd', left, reset, retry)
            else
                parts[1] = struct.pack('<dddd', clock, left, reset, retry)
            end
            if ovr and v[8] then
                trailer = trailer or {}
                trailer[#trailer + 1] = struct.pack('<dd', np - 1, v[2])
            elseif auto then
                -- the fleet's N it was decided with (concurrency=auto)
                trailer = trailer or {}
                trailer[#trailer + 1] = struct.pack('<dd', np - 1, auto)
            end
        else
            -- stacked rules (or a refund): each checked as its record is
            -- read; admitted only if every rule that is not a dry run
            -- admits it, then counted in every rule that admits it.
            -- pending[j + 1 ...]: what counting it writes for each rule
            -- that admits it (its key, algorithm, TTL in us, state),
            -- nothing written before every rule is checked (a bad record
            -- after a check is an error reply for the whole call, and a
            -- decision call writes nothing before flush()). A refund
            -- (a renewal, a charge) reads every rule (both passes:
            -- pending[4 * i - 3 ...] rule i's key, spec, cost, slot),
            -- then, in pass 2, gives each back what the decision
            -- counted (renews its slot, charges it).
            pending = pending or {}
            -- refused: the rules that are not dry runs and reject it,
            -- the last of them `last_refused` (a trial's world is the
            -- request but for its place's verdict)
            local admitted, m, refused, last_refused = true, 0, 0, 0
            nt = 0
            for i = 1, n do
                if i > 1 then
                    -- a further rule: k s c
                    if pos + 23 > size then
                        return redis.error_reply(BAD .. 'a rule at byte '
                                                 .. pos)
                    end
                    k, s, cost, nxt = struct.unpack('<ddd', H, pos)
                    key, v = k <= NK and KA[k], SPECS[s] or spec(s)
                    if v.err then
                        return v
                    end
                    slot, place = nil, nil
                    if v[1].slot then
                        slot = string.sub(H, nxt - 8, nxt - 1)
                        cost = slot ~= NOSLOT and 1 or 0
                    elseif v[10] then
                        if v[11] then
                            place = nxt + 7 <= size and
                                    struct.unpack('<d', H, nxt)
                            nxt = nxt + 8
                        else
                            slot = string.sub(H, nxt, nxt + 23)
                            nxt = nxt + 24
                        end
                        if nxt > size + 1 then
                            return redis.error_reply(BAD .. 'a rule at byte '
                                                     .. pos)
                        end
                    end
                    if not key or (cost < 0 and mode ~= 'charge' and
                                   mode ~= 'credit') then
                        return redis.error_reply(BAD .. 'a rule at byte ' .. pos)
                    end
                    pos = nxt
                end
                if lost then
                    -- not read, not decided, nothing written: a
                    -- decision's parts say so (left -1); a refund's
                    -- index goes in the reply (below)
                    admitted = false
                    if not refunding then
                        np = np + 1
                        if np > 1 then
                            parts[np] = struct.pack('<ddd', -1, 0, 0)
                        else
                            parts[1] = struct.pack('<dddd', clock, -1, 0, 0)
                        end
                    end
                elseif refunding then
                    if pass == 2 and STATE then
                        -- a charge: the key's state and override, read
                        -- once per call (a block is no state for it)
                        local blk = STATE[key]
                        if blk == nil then
                            blk = blocked(key, v[1], k)
                        end
                        if blk and #blk == 1 then
                            STATE[key] = nil
                        elseif ovr and OVR[key] then
                            v = ovr(v, OVR[key])
                        end
                    elseif pass == 2 and mode ~= 'renew' and not v[1].slot then
                        -- what the decision read: the override, if any
                        -- (a slot's release needs none)
                        local on = redis.call('MGET', KA[k + NK])[1]
                        if on and string.find(on, LIMIT) then
                            ovr = ovr or algorithm('(override)')
                            v = ovr(v, on)
                        end
                    end
                    giving = giving or (mode == 'charge' and cost < 0)
                    pending[4 * i - 3], pending[4 * i - 2] = key, v
                    pending[4 * i - 1], pending[4 * i] = cost, slot
                else
                    local alg = v[1]
                    local ok, left, reset, retry, wait, ttl, a, b, c, auto
                    local blk = STATE[key]
                    if blk == nil then
                        blk = blocked(key, v[1], k)
                    end
                    if blk and #blk == 1 then
                        blk = blk[1]
                        ok, left, reset, retry = false, 0, blk, blk
                    else
                        if ovr then
                            local o = OVR[key]
                            if o then
                                v = ovr(v, o)
                                alg = v[1]
                            end
                        end
                        ok, left, reset, retry, wait, ttl, a, b, c =
                            alg.check(key, now, v[2], v[3], v[4], cost, v[5],
                                      slot)
                        auto = v[13] and AUTO_N
                    end
                    if ok then
                        retry = -wait
                        if left <= cost then
                            -- its reset once the request is counted
                            -- (below): the part, its rule, its figures
                            fixes = fixes or {}
                            fixes[#fixes + 1] = { np + 1, key, v, left,
                                                  reset, retry, slot }
                        end
                        if place then
                            -- a trial: counted when its world admits
                            -- the request (below), never in a lease
                            if cost > 0 then
                                tw = tw or {}
                                tw[nt + 1], tw[nt + 2], tw[nt + 3] =
                                    key, alg, ttl
                                tw[nt + 4], tw[nt + 5], tw[nt + 6] = a, b, c
                                tw[nt + 7] = place
                                nt = nt + 7
                            end
                        elseif ask > 0 then
                            -- a lease: the most every rule admits after
                            -- the request (below)
                            if left - cost < ask then
                                ask = left - cost
                            end
                            lease = lease or {}
                            lease[#lease + 1] = { key, v, cost, slot }
                        end
                        if cost > 0 and not place then
                            pending[m + 1], pending[m + 2], pending[m + 3] =
                                key, alg, ttl
                            pending[m + 4], pending[m + 5], pending[m + 6] =
                                a, b, c
                            m = m + 6
                        end
                    else
                        if retry < 1 then
                            retry = 1
                        end
                        if not v[6] then
                            admitted = false
                            refused, last_refused = refused + 1, i
                        end
                    end
                    np = np + 1
                    if np > 1 then
                        parts[np] = struct.pack('<ddd', left, reset, retry)
                    else
                        parts[1] = struct.pack('<dddd', clock, left, reset,
                                               retry)
                    end
                    if ovr and v[8] then
                        trailer = trailer or {}
                        trailer[#trailer + 1] =
                            struct.pack('<dd', np - 1, v[2])
                    elseif auto then
                        trailer = trailer or {}
                        trailer[#trailer + 1] =
                            struct.pack('<dd', np - 1, auto)
                    end
                end
            end
            if lost and refunding and pass == 2 then
                undone = undone or {}
                undone[#undone + 1] = struct.pack('<d', req - 1)
            end
            if refunding then
                for i = 1, (pass == 2 and not lost) and n or 0 do
                    key, v = pending[4 * i - 3], pending[4 * i - 2]
                    cost, slot = pending[4 * i - 1], pending[4 * i]
                    local alg = v[1]
                    if mode == 'renew' then
                        if alg.renew then
                            alg.renew(key, now, v[3], slot)
                        end
                    elseif mode == 'charge' and cost > 0 then
                        -- c units more in the rule at now (age us before
                        -- Redis' clock), whatever its limit: the state
                        -- its algorithm's charge() gives (sliding_log and
                        -- concurrency have none: the module never
                        -- charges them), kept in STATE; a call with a
                        -- charge below 0 keeps none and writes at once:
                        -- each record reads what the one before wrote
                        if alg.charge then
                            local ttl, a, b, x = alg.charge(key, now, v[2],
                                v[3], v[4], cost, v[5], slot)
                            if STATE then
                                write(key, alg, ttl, age, a, b, x)
                            else
                                local state = x
                                    and struct.pack('<ddd', a, b, x)
                                    or struct.pack('<dd', a, b)
                                if ttl then
                                    redis.call('SET', key, state, 'PX',
                                        px(ttl - age > 1 and ttl - age or 1))
                                else
                                    redis.call('SET', key, state, 'KEEPTTL')
                                end
                            end
                        end
                    elseif mode == 'credit' and alg.credit then
                        -- a fixed window's count c lower at now, below
                        -- zero if need be (its credit, kept apart from
                        -- what it counted: a refund never takes it), the
                        -- state made for now's window if it has none
                        local ttl, a, b, x = alg.credit(key, now, v[2],
                            v[3], v[4], cost, v[5], slot)
                        local state = x and struct.pack('<ddd', a, b, x)
                                      or struct.pack('<dd', a, b)
                        if ttl then
                            redis.call('SET', key, state, 'PX',
                                       px(ttl - age > 1 and ttl - age or 1))
                        else
                            redis.call('SET', key, state, 'KEEPTTL')
                        end
                    elseif mode == 'refund' or cost < 0 or
                           (mode == 'credit' and cost > 0 and
                            not alg.commit) then
                        -- (a charge below 0 gives back at its time; so
                        -- does a credit of the other algorithms: what
                        -- they keep cannot go below a fresh state's)
                        alg.refund(key, now, v[2], v[3], v[4],
                                   cost < 0 and -cost or cost, v[5], slot)
                    end
                end
                admitted = false
            end
            if lease then
                if admitted and ask >= 1 then
                    -- granted g: each rule checked again at cost + g on
                    -- the state before the request, and that state
                    -- written in place of the request's own; a check
                    -- that does not admit it (the figures are whole:
                    -- none should) grants nothing
                    local g = ask - ask % 1
                    local w = {}
                    for i = 1, #lease do
                        local r = lease[i]
                        local alg = r[2][1]
                        local ok, _, _, _, _, ttl, a, b, c =
                            alg.check(r[1], now, r[2][2], r[2][3], r[2][4],
                                      r[3] + g, r[2][5], r[4])
                        if not ok then
                            w = nil
                            break
                        end
                        local j = 6 * (i - 1)
                        w[j + 1], w[j + 2], w[j + 3] = r[1], alg, ttl
                        w[j + 4], w[j + 5], w[j + 6] = a, b, c
                    end
                    if w then
                        pending, m = w, 6 * #lease
                        trailer = trailer or {}
                        trailer[#trailer + 1] = struct.pack('<dd', -np,
                                                            g)
                    end
                end
                lease = nil
            end
            for j = 0, admitted and m - 1 or -1, 6 do
                key = pending[j + 1]
                local t = STATE[key]
                if t and #t < 4 then
                    -- a hot key's third write or later: as in the one-rule
                    -- path
                    t[1], t[2], t[3] = pending[j + 4], pending[j + 5],
                                       pending[j + 6]
                    local ttl = pending[j + 3]
                    if ttl then
                        TTL_US[key] = ttl - age
                    end
                else
                    write(key, pending[j + 2], pending[j + 3], age,
                          pending[j + 4], pending[j + 5], pending[j + 6])
                end
            end
            for j = 1, nt, 7 do
                -- a trial: counted when it admits the request (it is in
                -- tw) and every other rule but its place's does
                if admitted or (refused == 1 and last_refused == tw[j + 6])
                then
                    write(tw[j], tw[j + 1], tw[j + 2], age, tw[j + 3],
                          tw[j + 4], tw[j + 5])
                end
            end
            if fixes then
                for j = 1, admitted and #fixes or 0 do
                    -- as in the one-rule path: until one more fits
                    local f = fixes[j]
                    local v = f[3]
                    local fits, _, _, reset = v[1].check(f[2], now, v[2],
                        v[3], v[4], 1, v[5], f[7])
                    if fits then
                        reset = f[5]
                    end
                    if f[1] == 1 then
                        parts[1] = struct.pack('<dddd', clock, f[4], reset,
                                               f[6])
                    else
                        parts[f[1]] = struct.pack('<ddd', f[4], reset, f[6])
                    end
                end
                fixes = nil
            end
        end
    end
end
-- what the slots' chunk (lua/concurrency.lua) writes at the end
local slots = ALG['concurrency']
if refunding then
    if STATE then
        flush()     -- a charge call's
    end
    if slots then
        slots.flush()
    end
    if undone then
        return table.concat(undone)
    end
    return 1
end

flush()
if slots then
    slots.flush()
end
if trailer then
    return table.concat(parts) .. table.concat(trailer)
end
return table.concat(parts)
