-- acquire_wait.lua: the attempt of a caller that will wait: the same
-- SET NX PX as a plain attempt (the key every Redlock client shares), and
-- when the key is taken, how long its holder still has, so the waiter can
-- try again the moment it expires (a crashed holder announces nothing).
-- KEYS[1] = resource; ARGV[1] = token, ARGV[2] = TTL in ms.
-- Returns 1 when set; else -1 - PTTL (-1 when the key has no expiry or just
-- went: PTTL -1 / -2 map to 0 / 1 ms, so a refusal is always <= -1).
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
    return 1
end
local left = redis.pcall('PTTL', KEYS[1]) -- an ACL may deny PTTL: then unknown
if type(left) ~= 'number' then
    return -1
end
if left < 0 then
    left = left == -2 and 1 or 0
end
return -1 - left
