-- status.lua: what a node holds for a lock. KEYS[1] = resource.
-- Returns { value or false, PTTL } (PTTL: -2 no key, -1 no expiry).
return { redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1]) }
