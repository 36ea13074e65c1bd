-- release.lua: delete the lock only if it still holds our token, and when
-- asked to (ARGV[2] = '1': a holder's release, not an attempt's clean-up)
-- announce it to waiters on the channel 'redlock:released:' .. KEYS[1]
-- (ARGV[2] = 'p': a permit's slot "<resource>:permit:<i>", announced on
-- the semaphore's channel 'redlock:released:<resource>'; ARGV[3] = the
-- semaphore's limit: where the slot is not ours on this node, a slot of
-- the semaphore that holds our token -- a stray of the attempt, set on a
-- node the attempt did not wait for -- is deleted instead).
-- KEYS[1] = resource, ARGV[1] = token. A lock-delay's marker
-- (KEYS[1] .. ':redlock:delay', acquire_wait.lua) goes with our key. PUBLISH is a pcall: a user whose ACL
-- does not allow it still releases (its waiters just are not woken).
-- Returns 1 when our key was deleted, 0 when the key is absent or another's,
-- -1 when it is a key of another kind (a read-write lock's readers, say).
-- On a Redis Cluster node the library passes ARGV[2] with an 'S' in front
-- ('S1', 'Sp') and the release is announced with SPUBLISH on the sharded
-- channel of the key's slot.
-- (A token holds one slot of a semaphore on a node at the most:
-- acquire_permit.lua keeps the one it has, and takes one alone only once
-- it deleted the others. So where the slot is ours there is no stray to
-- look for, and a release costs the server what a mutex's does.)
local how, pub = ARGV[2], 'PUBLISH'
if how and string.sub(how, 1, 1) == 'S' then
    how, pub = string.sub(how, 2), 'SPUBLISH'
end
local mine = redis.pcall('GET', KEYS[1])
if type(mine) == 'table' then
    return -1
end
local ours = mine == ARGV[1]
if ours then -- with the lock-delay's marker: a release is not an expiry
    redis.call('DEL', KEYS[1], KEYS[1] .. ':redlock:delay')
end
if how == '1' and ours then
    redis.pcall(pub, 'redlock:released:' .. KEYS[1], '')
elseif how == 'p' then -- a permit: its semaphore's waiters, or its stray
    local base = string.gsub(KEYS[1], ':permit:%d+$', '')
    if ours then
        redis.pcall(pub, 'redlock:released:' .. base, '')
        return 1
    end
    local keys = {}
    for i = 1, tonumber(ARGV[3]) or 0 do
        keys[i] = base .. ':permit:' .. (i - 1)
    end
    if #keys > 0 then
        local vals, gone = redis.call('MGET', unpack(keys)), {} -- (nil, not an error, for a key of another type)
        for i = 1, #keys do
            if vals[i] == ARGV[1] then
                gone[#gone + 1] = keys[i]
            end
        end
        if #gone > 0 then
            redis.call('DEL', unpack(gone))
        end
    end
end
return ours and 1 or 0
