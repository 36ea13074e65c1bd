-- acquire_permit.lua: one node's part of a permit attempt (doc/design.md,
-- "Semaphores and read-write locks").
-- The semaphore's slots are the keys KEYS[1] .. ':permit:' .. i for
-- i = 0 .. limit-1, each a plain Redlock key (SET NX PX, the holder's
-- token as its value).
-- KEYS[1] = resource; ARGV[1] = token, ARGV[2] = TTL in ms, ARGV[3] =
-- limit, ARGV[4] = only (default -1): -1 to take the first free slot
-- (every caller tries them in the same order, and a slot this token
-- already holds here is kept), or a slot to take that one alone (this
-- token's other slots here are deleted first); ARGV[5] = 'f' with fencing
-- tokens (default '-').
-- Returns {slot, left, free}: slot is the slot taken (or kept), -1 when
-- none; left, when none, the least remaining ms of the holders in the way
-- (-1 unknown); free, a string of limit characters, '1' where the slot is
-- free here or this token's, '0' where another holds it; with fencing and a
-- slot taken, a fourth element: the slot's fencing counter (its key plus
-- ':redlock:fence'), never below this node's clock in microseconds (as
-- the fenced mutex attempt, src/core/fence.c). Without fencing, a slot
-- taken with every slot free here (or this token's) is returned alone,
-- as an integer: free would be all '1'.
-- (Its server time is most of a permit's cost over a mutex's: the slot
-- keys are built once, without Lua's number formatting, read in one MGET
-- and reused; with no slot another's, the free string is one string.rep.)
local token, ttl, limit, only = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4] or -1)
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
local keys = slot_keys(KEYS[1] .. ':permit:', limit)
-- The values of every slot in one MGET (false where free): a GET per slot
-- made a permit of 64 slots twice a mutex's cost.
local vals = redis.call('MGET', unpack(keys))
-- granted(slot, free): the reply for a slot taken, its fencing counter too.
local function granted(slot, free)
    if ARGV[5] ~= 'f' then
        return {slot, 0, free}
    end
    local t = redis.call('TIME')
    local floor = tonumber(t[1]) * 1000000 + tonumber(t[2])
    local c = tonumber(redis.call('GET', keys[slot + 1] .. ':redlock:fence') or '0')
    if c < floor then
        c = floor
    end
    return {slot, 0, free, string.format('%.0f', c)}
end
-- least_left(from, to): the least remaining ms of slots from .. to, -1 unknown.
local function least_left(from, to)
    local least = -1
    for i = from + 1, to + 1 do
        local left = redis.pcall('PTTL', keys[i])
        if type(left) ~= 'number' or left == -1 then
            return -1
        end
        if left < 1 then
            left = 1
        end
        if least < 0 or left < least then
            least = left
        end
    end
    return least
end
if only >= 0 then
    for i = 1, limit do
        if i - 1 ~= only and vals[i] == token then
            redis.call('DEL', keys[i])
        end
    end
    local k = keys[only + 1]
    if redis.call('GET', k) == token then
        redis.call('PEXPIRE', k, ttl)
        return granted(only, '')
    end
    if redis.call('SET', k, token, 'NX', 'PX', ttl) then
        return granted(only, '')
    end
    return {-1, least_left(only, only), ''}
end
local taken, others = -1, false
for i = 1, limit do
    local v = vals[i]
    if v == token then
        if taken < 0 then
            redis.call('PEXPIRE', keys[i], ttl)
            taken = i - 1
        end
    elseif v then
        others = true
    end
end
if taken < 0 then
    for i = 1, limit do
        if (not vals[i]) and redis.call('SET', keys[i], token, 'NX', 'PX', ttl) then
            taken = i - 1
            break
        end
    end
end
if taken >= 0 and not others and ARGV[5] ~= 'f' then
    return taken
end
-- free: '1' where the slot is free here or ours, '0' where another holds it
local free
if others then
    free = {}
    for i = 1, limit do
        local v = vals[i]
        free[i] = (not v or v == token) and '1' or '0'
    end
    free = table.concat(free)
else
    free = string.rep('1', limit)
end
if taken >= 0 then
    return granted(taken, free)
end
return {-1, least_left(0, limit - 1), free}
