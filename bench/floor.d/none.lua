-- bench/floor stand-in for lua/rl.lua: answers every request of a call
-- "admitted" (figures as for one rule) and runs no Redis command. What
-- is left is the cost of a script call itself: the transport, EVALSHA,
-- reading the call's records and packing the reply.
local H = ARGV[1]
local parts = {}
local pos, size = 1, #H
local admitted = struct.pack('<dddddd', 1, 1000, 1000, 0, 0, 1000)
while pos <= size do
    local n = struct.unpack('<d', H, pos)
    pos = pos + 40 + 24 * (n - 1)
    parts[#parts + 1] = admitted
end
return table.concat(parts)
