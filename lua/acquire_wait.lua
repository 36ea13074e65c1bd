-- acquire_wait.lua: the attempt of a caller that will wait, or of any
-- single-resource attempt under a lock-delay: the same SET NX PX as a plain
-- attempt (the key every Redlock client shares), and when the key is
-- taken, how long its holder still has, so the waiter can try again the
-- moment it expires (a crashed holder announces nothing).
-- When readers hold the key (a hash, see acquire_shared.lua), the waiting
-- writer leaves the mark KEYS[1] .. ':redlock:writer' for ARGV[3] ms, so
-- that new readers wait behind it (writer preference); it goes when a
-- waiting writer gets the key.
-- With a lock-delay (ARGV[4] ms, doc/safety.md), the grant also sets the
-- marker KEYS[1] .. ':redlock:delay' to the token for the TTL plus the
-- delay; release.lua deletes it with the key. A free key whose marker is
-- still there was not released but expired: it is refused until the
-- marker goes.
-- A waiter that names its handle (ARGV[5]) also keeps a place in the
-- resource's line, the hash KEYS[1] .. ':redlock:line': field the handle's
-- id, value "<order> <expiry> <named>" (order: the server's microseconds when the
-- handle first queued, kept while its place lives; expiry: the server's
-- ms until which it does, ARGV[3] ms from each refusal; named: 1 once a
-- release named it, 0 again at its next refusal). release.lua names the
-- head, and the holder's release takes the holder's place out
-- (doc/design.md, "Waiting").
-- KEYS[1] = resource; ARGV[1] = token, ARGV[2] = TTL in ms, ARGV[3] = the
-- mark's life in ms (0: no mark, no place in the line), ARGV[4] = the
-- lock-delay in ms (absent or 0: none), ARGV[5] = the handle's id (absent:
-- no place in the line).
-- Returns 1 when set; else -1 - (the holder's remaining ms, at least 1), or
-- -1 when that is unknown (a key with no expiry, or PTTL denied by an ACL);
-- or, refused by the lock-delay, the status "DELAY <ms left> <ms since the
-- expiry>".
-- (The mark's commands are pcalls: an ACL that denies them only loses the
-- preference.)
local delay = tonumber(ARGV[4]) or 0
local marker = KEYS[1] .. ':redlock:delay'
if delay > 0 and redis.call('EXISTS', KEYS[1]) == 0 then
    local held = redis.call('PTTL', marker)
    if held > 0 then
        local ago = delay - held
        if ago < 0 then
            ago = 0
        end
        return redis.status_reply('DELAY ' .. held .. ' ' .. ago)
    end
end
local id = ARGV[5]
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
    redis.pcall('DEL', KEYS[1] .. ':redlock:writer')
    if delay > 0 then
        redis.call('SET', marker, ARGV[1], 'PX', tonumber(ARGV[2]) + delay)
    end
    return 1
end
local kind = redis.pcall('TYPE', KEYS[1])
local mark = tonumber(ARGV[3]) or 0
if mark > 0 and type(kind) == 'table' and kind['ok'] == 'hash' then
    redis.pcall('SET', KEYS[1] .. ':redlock:writer', ARGV[1], 'PX', ARGV[3])
end
local t = id and mark > 0 and redis.pcall('TIME')
if type(t) == 'table' and t[2] then -- keeps (or takes) the handle's place, alive for mark ms more
    local line, now_ms = KEYS[1] .. ':redlock:line', t[1] * 1000 + math.floor(t[2] / 1000)
    local order = t[1] * 1000000 + t[2]
    local cur = redis.pcall('HGET', line, id)
    if type(cur) == 'string' then
        local o, e = string.match(cur, '^(%d+) (%d+)')
        if o and tonumber(e) >= now_ms then
            order = tonumber(o)
        end
    end
    redis.pcall('HSET', line, id, string.format('%d %d 0', order, now_ms + mark))
    redis.pcall('PEXPIRE', line, mark) -- (the line outlives none of its places by more than a mark)
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
