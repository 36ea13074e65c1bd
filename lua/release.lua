-- release.lua: delete the lock only if it still holds our token, and when
-- asked to (ARGV[2] = '1': a holder's release, not an attempt's clean-up)
-- announce it to waiters on the channel 'redlock:released:' .. KEYS[1]
-- (ARGV[2] = 'p': a permit's slot "<resource>:permit:<i>", announced on
-- the semaphore's channel 'redlock:released:<resource>'; ARGV[3] = the
-- semaphore's limit: any other slot of it that holds our token on this
-- node -- a stray of the attempt, set on a node the attempt did not wait
-- for -- is deleted too).
-- KEYS[1] = resource, ARGV[1] = token. PUBLISH is a pcall: a user whose ACL
-- does not allow it still releases (its waiters just are not woken).
-- Returns 1 when our key was deleted, 0 when the key is absent or another's,
-- -1 when it is a key of another kind (a read-write lock's readers, say).
-- On a Redis Cluster node the library passes ARGV[2] with an 'S' in front
-- ('S1', 'Sp') and the release is announced with SPUBLISH on the sharded
-- channel of the key's slot.
-- (Each redis.call costs the server about as much as a command of its own:
-- a permit's release reads its slot and the strays in one MGET and deletes
-- them in one DEL, as few calls as a mutex's.)
local how, pub = ARGV[2], 'PUBLISH'
if how and string.sub(how, 1, 1) == 'S' then
    how, pub = string.sub(how, 2), 'SPUBLISH'
end
if how ~= 'p' then
    local mine = redis.pcall('GET', KEYS[1])
    if type(mine) == 'table' then
        return -1
    end
    if mine ~= ARGV[1] then
        return 0
    end
    redis.call('DEL', KEYS[1])
    if how == '1' then
        redis.pcall(pub, 'redlock:released:' .. KEYS[1], '')
    end
    return 1
end
-- A permit: its slot and the semaphore's others in one MGET (nil, not an
-- error, for a key of another type), KEYS[1] among them.
-- slot_keys(prefix, n): the keys prefix .. 0 .. prefix .. n-1, the digits
-- from a table (Lua's number formatting costs more than the rest of a key).
local function slot_keys(prefix, n)
    local d, keys = {[0] = '0', '1', '2', '3', '4', '5', '6', '7', '8', '9'}, {}
    for i = 0, n - 1 do
        if i < 10 then
            keys[i + 1] = prefix .. d[i]
        elseif i < 100 then
            keys[i + 1] = prefix .. d[(i - i % 10) / 10] .. d[i % 10]
        else
            keys[i + 1] = prefix .. i
        end
    end
    return keys
end
local base = string.gsub(KEYS[1], ':permit:%d+$', '')
local keys, me = slot_keys(base .. ':permit:', tonumber(ARGV[3]) or 0), nil
for i = 1, #keys do
    if keys[i] == KEYS[1] then
        me = i
    end
end
if not me then
    me = #keys + 1
    keys[me] = KEYS[1]
end
local vals = redis.call('MGET', unpack(keys))
local ours = vals[me] == ARGV[1]
if not ours and type(redis.pcall('GET', KEYS[1])) == 'table' then
    return -1
end
local gone = {}
for i = 1, #keys do
    if vals[i] == ARGV[1] then
        gone[#gone + 1] = keys[i]
    end
end
if #gone > 0 then
    redis.call('DEL', unpack(gone))
end
if ours then
    redis.pcall(pub, 'redlock:released:' .. base, '')
end
return ours and 1 or 0
