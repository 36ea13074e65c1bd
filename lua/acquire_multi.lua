-- acquire_multi.lua: take every key of a set, or none of them.
-- KEYS = the resources, ARGV[1] = token, ARGV[2] = TTL in milliseconds.
-- Returns 1 when all keys were free and are now set with the token, 0 when
-- any of them existed (then nothing is changed).
for i = 1, #KEYS do
    if redis.call('EXISTS', KEYS[i]) == 1 then
        return 0
    end
end
for i = 1, #KEYS do
    redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
end
return 1
