-- status.lua: everything a node holds for a resource, read only (the
-- command-line tool's `status`). KEYS[1] = resource; ARGV[1] = how many
-- permit slots to look at (0 .. 64): the semaphore's limit is stored
-- nowhere, so the caller says how far to look.
-- Returns { value or false, PTTL, type, readers, live, mark, slots }:
--   value    the key's string (a writer's or a mutex holder's token), else false;
--   PTTL     the key's (-2 no key, -1 no expiry);
--   type     the key's type: 'none', 'string', 'hash' (readers, see
--            acquire_shared.lua) or another (not a lock);
--   readers  { token, ms left, ... }: the live readers of the hash, at most 64;
--   live     how many live readers the hash has (expired ones are not pruned here);
--   mark     the PTTL of KEYS[1] .. ':redlock:writer', a waiting writer's
--            mark (-2 none);
--   slots    { slot, value, PTTL, ... } for every slot key
--            KEYS[1] .. ':permit:' .. i (i < ARGV[1]) holding a string.
local key, nslots = KEYS[1], tonumber(ARGV[1]) or 0
if nslots > 64 then
    nslots = 64
end
local kind = redis.call('TYPE', key)['ok']
local value = false
if kind == 'string' then
    value = redis.call('GET', key)
end
local readers, live = {}, 0
if kind == 'hash' then
    local all, stamp = redis.call('HGETALL', key), nil
    for i = 1, #all, 2 do
        if all[i] == '@end' then
            stamp = tonumber(all[i + 1])
        end
    end
    -- (the hash's own clock, see acquire_shared.lua)
    local now = stamp and redis.call('PTTL', key)
    if now and now >= 0 then
        now = stamp - now
    else
        local t = redis.call('TIME')
        now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    end
    for i = 1, #all, 2 do
        local left = (tonumber(all[i + 1]) or 0) - now
        if left > 0 and all[i] ~= '@end' then
            live = live + 1
            if live <= 64 then
                readers[#readers + 1] = all[i]
                readers[#readers + 1] = left
            end
        end
    end
end
local slots = {}
for i = 0, nslots - 1 do
    local k = key .. ':permit:' .. i
    local v = redis.pcall('GET', k)
    if type(v) == 'string' then
        slots[#slots + 1] = i
        slots[#slots + 1] = v
        slots[#slots + 1] = redis.call('PTTL', k)
    end
end
return { value, redis.call('PTTL', key), kind, readers, live, redis.call('PTTL', key .. ':redlock:writer'), slots }
