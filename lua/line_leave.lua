-- line_leave.lua: a handle whose last waiter for the resource gave up
-- (its wait ran out, it was cancelled) leaves the resource's line (see
-- acquire_wait.lua), so that no release names it.
-- KEYS[1] = resource; ARGV[1] = the handle's id. Returns 1 when it had a
-- place, else 0.
return redis.call('HDEL', KEYS[1] .. ':redlock:line', ARGV[1])
