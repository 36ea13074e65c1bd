-- acquire_wait.lua: the attempt of a caller that will wait: the same
-- SET NX PX as a plain attempt (the key every Redlock client shares), and
-- when the key is taken, how long its holder still has, so the waiter can
-- try again the moment it expires (a crashed holder announces nothing).
-- KEYS[1] = resource; ARGV[1] = token, ARGV[2] = TTL in ms.
-- Returns 1 when set; else -1 - (the holder's remaining ms, at least 1), or
-- -1 when that is unknown (a key with no expiry, or PTTL denied by an ACL).
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
    return 1
end
local left = redis.pcall('PTTL', KEYS[1]) -- an ACL may deny PTTL: then unknown
if type(left) ~= 'number' then
    return -1
end
if left == -1 then
    return -1
end
if left < 1 then -- expiring this very millisecond, or just gone (-2)
    left = 1
end
return -1 - left
