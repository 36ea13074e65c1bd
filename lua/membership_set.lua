-- membership_set.lua: replaces this node's membership record at once (a
-- hash: phase, change, fingerprints, accepted configurations, both node
-- lists, when it was written) and announces the step, so that handles
-- read the record again without waiting for their next look
-- (doc/membership.md).
-- KEYS[1] = the record key; ARGV[1] = the channel, ARGV[2] = the message,
-- ARGV[3..] = field, value, field, value ...
-- Returns 1.
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], unpack(ARGV, 3))
redis.pcall('PUBLISH', ARGV[1], ARGV[2])
return 1
