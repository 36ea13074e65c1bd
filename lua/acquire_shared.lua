-- acquire_shared.lua: one node's part of a reader's attempt (doc/design.md,
-- "Semaphores and read-write locks").
-- Readers are recorded in the resource's own key, a hash of reader token
-- -> expiry (this node's clock, ms), the key living as long as its longest
-- reader; so a writer's plain SET NX on the key fails while any reader
-- holds it, and a reader is refused while a writer's string is there.
-- Expired readers are pruned here. A waiting writer leaves the mark
-- KEYS[1] .. ':redlock:writer' (see acquire_wait.lua): new readers are
-- refused while it lasts (readers already in may extend).
-- KEYS[1] = resource; ARGV[1] = token, ARGV[2] = TTL in ms.
-- Returns 1 when admitted; when refused, -1 - (ms until the writer's key or
-- mark expires, at least 1), or -1 when that is unknown. A key of another
-- type is an error that names it.
local key, token, ttl = KEYS[1], ARGV[1], tonumber(ARGV[2])
local kind = redis.call('TYPE', key)['ok']
local function refused(k)
    local left = redis.pcall('PTTL', k)
    if type(left) ~= 'number' or left == -1 then
        return -1
    end
    if left < 1 then
        left = 1
    end
    return -1 - left
end
if kind == 'string' then
    return refused(key)
end
if kind ~= 'none' and kind ~= 'hash' then
    return redis.error_reply('WRONGTYPE ' .. key .. ' holds a ' .. kind .. ', not a lock')
end
local mark = key .. ':redlock:writer'
if redis.call('EXISTS', mark) == 1 and redis.call('HEXISTS', key, token) == 0 then
    return refused(mark)
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local longest = ttl
local all = redis.call('HGETALL', key)
for i = 1, #all, 2 do
    local left = tonumber(all[i + 1]) - now
    if left <= 0 then
        redis.call('HDEL', key, all[i])
    elseif left > longest then
        longest = left
    end
end
redis.call('HSET', key, token, string.format('%.0f', now + ttl))
redis.call('PEXPIRE', key, longest)
return 1
