-- extend_multi.lua: reset the TTL of every key of a set, only if all of
-- them still hold our token. KEYS = the resources, ARGV[1] = token,
-- ARGV[2] = new TTL in milliseconds. Returns 1 when extended, else 0 (and
-- nothing is changed); -1 when a key is of another kind (a read-write
-- lock's readers, say), also changing nothing.
for i = 1, #KEYS do
    local mine = redis.pcall('GET', KEYS[i])
    if type(mine) == 'table' then
        return -1
    end
    if mine ~= ARGV[1] then
        return 0
    end
end
for i = 1, #KEYS do
    redis.call('PEXPIRE', KEYS[i], ARGV[2])
end
return 1
