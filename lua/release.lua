-- release.lua: delete the lock only if it still holds our token, and when
-- asked to (ARGV[2] = '1': a holder's release, not an attempt's clean-up)
-- announce it to waiters on the channel 'redlock:released:' .. KEYS[1]
-- (ARGV[2] = 'p': a permit's slot "<resource>:permit:<i>", announced on
-- the semaphore's channel 'redlock:released:<resource>'; ARGV[3] = the
-- semaphore's limit: where the slot is not ours on this node, a slot of
-- the semaphore that holds our token -- a stray of the attempt, set on a
-- node the attempt did not wait for -- is deleted instead).
-- A holder's release also names the next in the resource's line (see
-- acquire_wait.lua): its head, the oldest live place that was not named
-- before without queueing again since (a handle that let its turn pass,
-- gone or given up, loses its place). On a plain node the release is
-- announced to that handle alone, on its channel 'redlock:next:<id>'
-- with KEYS[1] as the message; on the resource's channel, with the id
-- (or '' when none is named) as the message, when nobody heard that (or
-- on a cluster node, where a channel must be in the key's slot). ARGV[3]
-- (with ARGV[2] = '1') is the releasing handle's id, whose place goes
-- first.
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
-- The id at the head of line (its place marked named), '' when none;
-- me's place, and places expired or named before, are deleted on the way.
local function next_in_line(line, me)
    local all = redis.pcall('HGETALL', line)
    if type(all) ~= 'table' or #all == 0 then
        return ''
    end
    local t = redis.pcall('TIME')
    if type(t) ~= 'table' or not t[2] then
        return ''
    end
    local now_ms = t[1] * 1000 + math.floor(t[2] / 1000)
    local head, first, until_ms, gone = '', nil, nil, {}
    for i = 1, #all, 2 do
        local o, e, n = string.match(all[i + 1], '^(%d+) (%d+) (%d)$')
        o = tonumber(o)
        if all[i] == me or not o or tonumber(e) < now_ms or n == '1' then
            gone[#gone + 1] = all[i]
        elseif not first or o < first or (o == first and all[i] < head) then
            head, first, until_ms = all[i], o, e
        end
    end
    for i = 1, #gone, 100 do -- (unpack's results are bounded: a hundred at a time)
        redis.pcall('HDEL', line, unpack(gone, i, math.min(i + 99, #gone)))
    end
    if first then
        redis.pcall('HSET', line, head, string.format('%d %s 1', first, until_ms))
    end
    return head
end

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
    local head = next_in_line(KEYS[1] .. ':redlock:line', ARGV[3])
    -- the named handle alone hears it on its own channel (a plain node's); everyone when nobody does
    local heard = head ~= '' and pub == 'PUBLISH' and redis.pcall(pub, 'redlock:next:' .. head, KEYS[1])
    if type(heard) ~= 'number' or heard == 0 then
        redis.pcall(pub, 'redlock:released:' .. KEYS[1], head)
    end
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
