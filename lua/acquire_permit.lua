-- acquire_permit.lua: one node's part of a permit attempt (doc/design.md,
-- "Semaphores and read-write locks").
-- The semaphore's slots are the keys KEYS[1] .. ':permit:' .. i for
-- i = 0 .. limit-1, each a plain Redlock key (SET NX PX, the holder's
-- token as its value).
-- KEYS[1] = resource; ARGV[1] = token, ARGV[2] = TTL in ms, ARGV[3] =
-- limit, ARGV[4] = only: -1 to take the first free slot (every caller
-- tries them in the same order, and a slot this token already holds here
-- is kept), or a slot to take that one alone (this token's other slots
-- here are deleted first); ARGV[5] = 'f' with fencing tokens.
-- Returns {slot, left, free}: slot is the slot taken (or kept), -1 when
-- none; left, when none, the least remaining ms of the holders in the way
-- (-1 unknown); free, a string of limit characters, '1' where the slot is
-- free here or this token's, '0' where another holds it; with fencing and a
-- slot taken, a fourth element: the slot's fencing counter (its key plus
-- ':redlock:fence'), never below this node's clock in microseconds (as
-- the fenced mutex attempt, src/core/fence.c).
local token, ttl, limit, only = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local function key(i)
    return KEYS[1] .. ':permit:' .. i
end
-- The values of slots 0 .. limit-1 in one MGET (false where free):
-- a GET per slot made a permit of 64 slots twice a mutex's cost.
local function values()
    local keys = {}
    for i = 0, limit - 1 do
        keys[i + 1] = key(i)
    end
    return redis.call('MGET', unpack(keys))
end
local function granted(slot, free)
    if ARGV[5] ~= 'f' then
        return {slot, 0, free}
    end
    local t = redis.call('TIME')
    local floor = tonumber(t[1]) * 1000000 + tonumber(t[2])
    local c = tonumber(redis.call('GET', key(slot) .. ':redlock:fence') or '0')
    if c < floor then
        c = floor
    end
    return {slot, 0, free, string.format('%.0f', c)}
end
local function least_left(from, to)
    local least = -1
    for i = from, to do
        local left = redis.pcall('PTTL', key(i))
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
    local vals = values()
    for i = 0, limit - 1 do
        if i ~= only and vals[i + 1] == token then
            redis.call('DEL', key(i))
        end
    end
    local v = redis.call('GET', key(only))
    if v == token then
        redis.call('PEXPIRE', key(only), ttl)
        return granted(only, '')
    end
    if redis.call('SET', key(only), token, 'NX', 'PX', ttl) then
        return granted(only, '')
    end
    return {-1, least_left(only, only), ''}
end
local taken, free, vals = -1, {}, values()
for i = 0, limit - 1 do
    local v = vals[i + 1]
    if v == token and taken < 0 then
        redis.call('PEXPIRE', key(i), ttl)
        taken = i
    end
    free[i + 1] = (not v or v == token) and '1' or '0'
end
if taken < 0 then
    for i = 0, limit - 1 do
        if free[i + 1] == '1' and redis.call('SET', key(i), token, 'NX', 'PX', ttl) then
            taken = i
            break
        end
    end
end
if taken >= 0 then
    return granted(taken, table.concat(free))
end
return {-1, least_left(0, limit - 1), table.concat(free)}
