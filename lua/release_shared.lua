-- release_shared.lua: a reader leaves: its entry goes from the resource's
-- hash, and the hash goes with its last reader (only its clock, '@end',
-- left: see acquire_shared.lua); the last reader out announces, when
-- asked to (ARGV[2] = '1': a holder's release, not an attempt's
-- clean-up), on 'redlock:released:' .. KEYS[1] (a writer may be waiting).
-- KEYS[1] = resource; ARGV[1] = token.
-- Returns 1 when this reader's entry was there, 0 when not.
-- On a Redis Cluster node the library passes ARGV[2] with an 'S' in front
-- ('S1', 'Sp') and the release is announced with SPUBLISH on the sharded
-- channel of the key's slot.
local how, pub = ARGV[2], 'PUBLISH'
if how and string.sub(how, 1, 1) == 'S' then
    how, pub = string.sub(how, 2), 'SPUBLISH'
end
local key, token = KEYS[1], ARGV[1]
if redis.call('TYPE', key)['ok'] ~= 'hash' or redis.call('HDEL', key, token) == 0 then
    return 0
end
local left = redis.call('HLEN', key)
if left == 1 and redis.call('HEXISTS', key, '@end') == 1 then
    redis.call('DEL', key)
    left = 0
end
if how == '1' and left == 0 then
    redis.pcall(pub, 'redlock:released:' .. key, '')
end
return 1
