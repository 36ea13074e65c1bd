-- extend.lua: reset the lock's time-to-live only if it still holds our token.
-- KEYS[1] = resource, ARGV[1] = token, ARGV[2] = new TTL in milliseconds,
-- ARGV[3] = the lock-delay in ms (absent or 0: none; the marker
-- KEYS[1] .. ':redlock:delay' then outlives the new TTL by it, see
-- acquire_wait.lua).
-- Returns 1 when the TTL was reset (not added to), 0 when the key is absent
-- or another's, -1 when it is a key of another kind (a read-write lock's
-- readers, say): not ours either, but the caller may have named the wrong kind.
local mine = redis.pcall('GET', KEYS[1])
if type(mine) == 'table' then
    return -1
end
if mine ~= ARGV[1] then
    return 0
end
local delay = tonumber(ARGV[3]) or 0
if delay > 0 then
    redis.call('SET', KEYS[1] .. ':redlock:delay', ARGV[1], 'PX', tonumber(ARGV[2]) + delay)
end
return redis.call('PEXPIRE', KEYS[1], ARGV[2])
