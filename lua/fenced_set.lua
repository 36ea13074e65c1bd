-- fenced_set.lua: write a value only for a holder whose fencing token is at
-- least the highest one this store has seen for the key, so a holder that
-- was paused past its lock's validity cannot overwrite a newer holder's
-- work. KEYS[1] = the data key, KEYS[2] = its highest-token key;
-- ARGV[1] = fencing token (decimal), ARGV[2] = the value.
-- Returns 1 when written, 0 when the token is stale.
local seen = tonumber(redis.call('GET', KEYS[2]) or '0')
local token = tonumber(ARGV[1])
if token < seen then
    return 0
end
redis.call('SET', KEYS[2], ARGV[1])
redis.call('SET', KEYS[1], ARGV[2])
return 1
