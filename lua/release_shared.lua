-- release_shared.lua: a reader leaves: its entry goes from the resource's
-- hash; the last reader out deletes the key and, when asked to (ARGV[2] =
-- '1': a holder's release, not an attempt's clean-up), announces it on
-- 'redlock:released:' .. KEYS[1] (a writer may be waiting).
-- KEYS[1] = resource; ARGV[1] = token.
-- Returns 1 when this reader's entry was there, 0 when not.
local key, token = KEYS[1], ARGV[1]
if redis.call('TYPE', key)['ok'] ~= 'hash' or redis.call('HDEL', key, token) == 0 then
    return 0
end
if redis.call('HLEN', key) == 0 then
    redis.call('DEL', key)
    if ARGV[2] == '1' then
        redis.pcall('PUBLISH', 'redlock:released:' .. key, '')
    end
end
return 1
