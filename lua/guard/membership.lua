-- The membership guard, run ahead of a granting script on a node that may
-- hold a membership record (doc/membership.md); cmake/embed_lua.cmake
-- makes each guarded script of this prologue and the script's own text.
-- ARGV[1] is the handle's configuration fingerprint, taken off before the
-- script's own lines run, so they see the arguments they always see.
-- A record that does not list the fingerprint refuses the write:
--   MEMBERSHIP <phase> <change> <old_fp> <new_fp> [<accepted> ...]
-- A record that is no hash, lacks its phase or accepts field, or has a
-- phase of no known name refuses it as unreadable. A user whose ACL
-- denies the record key is not checked (the handle warns once).
local rl_fp = table.remove(ARGV, 1)
if redis.pcall('EXISTS', 'redlock:membership') == 1 then
    local rec = redis.pcall('HMGET', 'redlock:membership', 'phase', 'accepts', 'change', 'old_fp', 'new_fp')
    if rec.err then
        return redis.error_reply('MEMBERSHIP-UNREADABLE ' .. rec.err)
    end
    if not rec[1] or not rec[2] then
        return redis.error_reply('MEMBERSHIP-UNREADABLE the record lacks its phase or accepts field')
    end
    local p = rec[1]
    if p ~= 'begun' and p ~= 'joint' and p ~= 'advanced' and p ~= 'finished' and p ~= 'left' then
        return redis.error_reply('MEMBERSHIP-UNREADABLE field phase is not a phase')
    end
    if not string.find(' ' .. rec[2] .. ' ', ' ' .. rl_fp .. ' ', 1, true) then
        return redis.error_reply('MEMBERSHIP ' .. rec[1] .. ' ' .. (rec[3] or '-') .. ' ' .. (rec[4] or '-') ..
            ' ' .. (rec[5] or '-') .. ' ' .. rec[2])
    end
end
