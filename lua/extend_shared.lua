-- extend_shared.lua: a reader's extend: its entry in the resource's hash
-- gets a new expiry, and the key lives as long as its longest reader.
-- KEYS[1] = resource; ARGV[1] = token, ARGV[2] = TTL in ms.
-- Returns 1 when extended, 0 when this reader is not (or no longer) here.
local key, token, ttl = KEYS[1], ARGV[1], tonumber(ARGV[2])
if redis.call('TYPE', key)['ok'] ~= 'hash' then
    return 0
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local mine = tonumber(redis.call('HGET', key, token) or '0')
if mine <= now then
    return 0
end
redis.call('HSET', key, token, string.format('%.0f', now + ttl))
local longest = ttl
local all = redis.call('HGETALL', key)
for i = 1, #all, 2 do
    local left = tonumber(all[i + 1]) - now
    if left > longest then
        longest = left
    end
end
redis.call('PEXPIRE', key, longest)
return 1
