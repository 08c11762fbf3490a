-- bench/floor: put before none.lua, the commands a call of one hot key
-- runs (TIME, then one GET and one SET of its key, a state's size), but
-- no algorithm.
redis.call('TIME')
redis.call('GET', KEYS[1])
redis.call('SET', KEYS[1], string.rep('s', 24), 'PX', 60000)
