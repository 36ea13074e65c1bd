-- release.lua: delete the lock only if it still holds our token.
-- KEYS[1] = resource, ARGV[1] = token.
-- Returns 1 when our key was deleted, 0 when the key is absent or another's.
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('DEL', KEYS[1])
end
return 0
