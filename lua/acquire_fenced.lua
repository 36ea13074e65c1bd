-- acquire_fenced.lua: SET NX PX, and on success read the resource's fencing
-- counter. KEYS[1] = resource, KEYS[2] = its counter key; ARGV[1] = token,
-- ARGV[2] = TTL in ms. Returns nil when the lock is taken, else the
-- counter as a decimal string, never lower than this node's clock in
-- microseconds (Redis TIME): a node that restarted without its data still
-- answers above every token issued before, unless its clock went back.
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
    return false
end
local t = redis.call('TIME')
local floor = tonumber(t[1]) * 1000000 + tonumber(t[2])
local c = tonumber(redis.call('GET', KEYS[2]) or '0')
if c < floor then
    c = floor
end
return string.format('%.0f', c)
