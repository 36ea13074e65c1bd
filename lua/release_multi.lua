-- release_multi.lua: delete every key of a set that still holds our token;
-- with ARGV[2] = '1' (a holder's release) announce each deleted key on the
-- channel 'redlock:released:' .. key.
-- KEYS = the resources, ARGV[1] = token. PUBLISH is a pcall (an ACL may deny it).
-- Returns 1 when every key was ours (all deleted), 0 when any was absent or
-- another's or of another kind (those are left alone; ours are still deleted).
-- On a Redis Cluster node the library passes ARGV[2] with an 'S' in front
-- ('S1', 'Sp') and the release is announced with SPUBLISH on the sharded
-- channel of the key's slot.
local how, pub = ARGV[2], 'PUBLISH'
if how and string.sub(how, 1, 1) == 'S' then
    how, pub = string.sub(how, 2), 'SPUBLISH'
end
local mine = 0
for i = 1, #KEYS do
    if redis.pcall('GET', KEYS[i]) == ARGV[1] then
        redis.call('DEL', KEYS[i])
        if how == '1' then
            redis.pcall(pub, 'redlock:released:' .. KEYS[i], '')
        end
        mine = mine + 1
    end
end
if mine == #KEYS then
    return 1
end
return 0
