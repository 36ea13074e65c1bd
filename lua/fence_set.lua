-- fence_set.lua: the second round of a fenced permit acquire: record the
-- fencing token on this node, only where the slot's key still holds our
-- token. (A mutex's second round is MULTI, GET, INCRBY, EXEC instead, see
-- src/core/fence.c; the two share the counter's format, and older clients
-- used this script for mutexes too.)
-- KEYS[1] = resource, KEYS[2] = its counter key; ARGV[1] = token,
-- ARGV[2] = fencing token (decimal). The counter only ever grows.
-- Returns 1 when recorded (or already at least as high), 0 when the lock
-- is no longer ours here.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
    return 0
end
local c = tonumber(redis.call('GET', KEYS[2]) or '0')
if c < tonumber(ARGV[2]) then
    redis.call('SET', KEYS[2], ARGV[2])
end
return 1
