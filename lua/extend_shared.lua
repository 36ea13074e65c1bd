-- extend_shared.lua: a reader's extend: its entry in the resource's hash
-- gets a new expiry, and the key lives as long as its longest reader.
-- The expiries are on the hash's own clock, '@end' less the key's PTTL
-- (see acquire_shared.lua), this node's clock for a hash without '@end'.
-- KEYS[1] = resource; ARGV[1] = token, ARGV[2] = TTL in ms.
-- Returns 1 when extended, 0 when this reader is not (or no longer) here.
local key, token, ttl = KEYS[1], ARGV[1], tonumber(ARGV[2])
local all = redis.pcall('HGETALL', key)
if all.err then -- (not a hash: a writer's string, or another key)
    return 0
end
local stamp, mine
for i = 1, #all, 2 do
    if all[i] == '@end' then
        stamp = tonumber(all[i + 1])
    elseif all[i] == token then
        mine = tonumber(all[i + 1])
    end
end
if not mine then
    return 0
end
local now = stamp and redis.call('PTTL', key)
if now and now >= 0 then
    now = stamp - now
else
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
if mine <= now then
    return 0
end
local longest = ttl
for i = 1, #all, 2 do
    local left = tonumber(all[i + 1]) - now
    if all[i] ~= '@end' and all[i] ~= token and left > longest then
        longest = left
    end
end
redis.call('HSET', key, token, string.format('%.0f', now + ttl), '@end', string.format('%.0f', now + longest))
redis.call('PEXPIRE', key, string.format('%.0f', longest))
return 1
