-- release_permit.lua: the clean-up of a permit attempt: deletes every slot
-- of the semaphore this token holds on this node, except slot ARGV[3]
-- (the slot the attempt won, or -1: none). Says nothing (no PUBLISH).
-- KEYS[1] = resource; ARGV[1] = token, ARGV[2] = limit, ARGV[3] = slot kept.
-- Returns the number of slots deleted.
local n = 0
for i = 0, tonumber(ARGV[2]) - 1 do
    local k = KEYS[1] .. ':permit:' .. i
    if i ~= tonumber(ARGV[3]) and redis.call('GET', k) == ARGV[1] then
        redis.call('DEL', k)
        n = n + 1
    end
end
return n
