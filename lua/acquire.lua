-- acquire.lua: a plain attempt's SET NX PX as a script. Only its guarded
-- form is sent, to a node whose membership record must be checked in the
-- same step (doc/membership.md); elsewhere the attempt is the SET itself.
-- KEYS[1] = resource; ARGV[1] = token, ARGV[2] = TTL in ms.
-- Returns OK when set, nil when the key is taken.
return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
