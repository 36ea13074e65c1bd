-- extend.lua: reset the lock's time-to-live only if it still holds our token.
-- KEYS[1] = resource, ARGV[1] = token, ARGV[2] = new TTL in milliseconds.
-- Returns 1 when the TTL was reset (not added to), 0 when the key is absent or another's.
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
