-- acquire_permit.lua: one node's part of a permit attempt (DESIGN.md 7).
-- The semaphore's slots are the keys KEYS[1] .. ':permit:' .. i for
-- i = 0 .. limit-1, each a plain Redlock key (SET NX PX, our token as its
-- value). Every caller tries them in the same order, so nodes that agree
-- on who holds what give an attempt the same slot. A slot this token
-- already holds here is kept (a retry whose clean-up was lost).
-- KEYS[1] = resource; ARGV[1] = token, ARGV[2] = TTL in ms, ARGV[3] = limit.
-- Returns the slot taken (>= 0); when every slot is held, -1 - (the least
-- remaining ms of the holders, at least 1), or -1 when that is unknown.
local limit = tonumber(ARGV[3])
for i = 0, limit - 1 do
    if redis.call('GET', KEYS[1] .. ':permit:' .. i) == ARGV[1] then
        redis.call('PEXPIRE', KEYS[1] .. ':permit:' .. i, ARGV[2])
        return i
    end
end
for i = 0, limit - 1 do
    if redis.call('SET', KEYS[1] .. ':permit:' .. i, ARGV[1], 'NX', 'PX', ARGV[2]) then
        return i
    end
end
local least = -1
for i = 0, limit - 1 do
    local left = redis.pcall('PTTL', KEYS[1] .. ':permit:' .. i)
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
return -1 - least
