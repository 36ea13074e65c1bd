-- acquire_shared.lua: one node's part of a reader's attempt (doc/design.md,
-- "Semaphores and read-write locks").
-- Readers are recorded in the resource's own key, a hash of reader token
-- -> expiry (ms, on the hash's own clock: see below), the key living as
-- long as its longest reader; so a writer's plain SET NX on the key fails while any reader
-- holds it, and a reader is refused while a writer's string is there.
-- Expired readers are pruned here. A waiting writer leaves the mark
-- KEYS[1] .. ':redlock:writer' (see acquire_wait.lua): new readers are
-- refused while it lasts (readers already in may extend).
-- KEYS[1] = resource; ARGV[1] = token, ARGV[2] = TTL in ms.
-- Returns 1 when admitted; when refused, -1 - (ms until the writer's key or
-- mark expires, at least 1), or -1 when that is unknown. A key of another
-- type is an error that names it.
-- (Its server time is most of a reader's cost over a mutex's: five calls,
-- the writer's string and mark read in one MGET, no function made per
-- call, the TTL passed on as it came when no reader outlives it.)
local key, token, ttl = KEYS[1], ARGV[1], tonumber(ARGV[2])
local mark = key .. ':redlock:writer'
-- A writer's string and a waiting writer's mark in one MGET (nil for a key
-- that is not a string: readers' hash, or none).
local strings = redis.call('MGET', key, mark)
local busy = strings[1] and key -- what refuses this reader, if anything
local all
if not busy then
    -- the readers with their expiries; a key neither a string nor a hash
    -- answers an error here (pcall: named below)
    all = redis.pcall('HGETALL', key)
    if all.err then
        return redis.error_reply('WRONGTYPE ' .. key .. ' holds a ' .. redis.call('TYPE', key)['ok'] .. ', not a lock')
    end
    if strings[2] then -- a writer waits: only a reader already in may stay
        busy = mark
        for i = 1, #all, 2 do
            if all[i] == token then
                busy = nil
                break
            end
        end
    end
end
if busy then
    local left = redis.pcall('PTTL', busy)
    if type(left) ~= 'number' or left == -1 then
        return -1
    end
    if left < 1 then
        left = 1
    end
    return -1 - left
end
-- This hash keeps its own clock: its field '@end' is the key's expiry on
-- that clock, so now is '@end' less the key's PTTL. Redis carries a PTTL
-- across a slot's migration and a replica's promotion, where the readers'
-- expiries, read against another server's clock, would be cut short. A new
-- hash, or one written without '@end', starts from this node's clock.
local stamp
for i = 1, #all, 2 do
    if all[i] == '@end' then
        stamp = tonumber(all[i + 1])
        break
    end
end
local now = stamp and redis.call('PTTL', key)
if now and now >= 0 then
    now = stamp - now
else
    local t = redis.call('TIME')
    local us = tonumber(t[2])
    now = tonumber(t[1]) * 1000 + (us - us % 1000) / 1000
end
local longest, gone = ttl, nil
for i = 1, #all, 2 do
    local left = tonumber(all[i + 1]) - now
    if all[i] == '@end' then -- (not a reader)
    elseif left <= 0 then
        gone = gone or {}
        gone[#gone + 1] = all[i]
    elseif left > longest then
        longest = left
    end
end
if gone then
    redis.call('HDEL', key, unpack(gone))
end
redis.call('HSET', key, token, string.format('%.0f', now + ttl), '@end', string.format('%.0f', now + longest))
redis.call('PEXPIRE', key, longest == ttl and ARGV[2] or string.format('%.0f', longest))
return 1
