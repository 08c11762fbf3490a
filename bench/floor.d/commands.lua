-- bench/floor stand-in for lua/rl.lua: as none.lua, plus the commands a
-- call of one hot key runs (TIME, then one GET and one SET of its key),
-- but no algorithm.
local H = ARGV[1]
local parts = {}
local pos, size = 1, #H
redis.call('TIME')
redis.call('GET', KEYS[1])
local admitted = struct.pack('<dddddd', 1, 1000, 1000, 0, 0, 1000)
while pos <= size do
    local n = struct.unpack('<d', H, pos)
    pos = pos + 40 + 24 * (n - 1)
    parts[#parts + 1] = admitted
end
redis.call('SET', KEYS[1], admitted, 'PX', 60000)
return table.concat(parts)
