-- acquire_wait.lua: the attempt of a caller that will wait: the same
-- SET NX PX as a plain attempt (the key every Redlock client shares), and
-- when the key is taken, how long its holder still has, so the waiter can
-- try again the moment it expires (a crashed holder announces nothing).
-- When readers hold the key (a hash, see acquire_shared.lua), the waiting
-- writer leaves the mark KEYS[1] .. ':redlock:writer' for ARGV[3] ms, so
-- that new readers wait behind it (writer preference); it goes when a
-- waiting writer gets the key.
-- KEYS[1] = resource; ARGV[1] = token, ARGV[2] = TTL in ms, ARGV[3] = the
-- mark's life in ms.
-- Returns 1 when set; else -1 - (the holder's remaining ms, at least 1), or
-- -1 when that is unknown (a key with no expiry, or PTTL denied by an ACL).
-- (The mark's commands are pcalls: an ACL that denies them only loses the
-- preference.)
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
    redis.pcall('DEL', KEYS[1] .. ':redlock:writer')
    return 1
end
local kind = redis.pcall('TYPE', KEYS[1])
if ARGV[3] and type(kind) == 'table' and kind['ok'] == 'hash' then
    redis.pcall('SET', KEYS[1] .. ':redlock:writer', ARGV[1], 'PX', ARGV[3])
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
