-- KEYS: 1 the inbox, 2 the staging list of a new batch, 3 the index of staged batches.
-- ARGV: 1 how many events to take at most, 2 the time of the claim (the index's score),
-- 3 the batch id. Moves up to ARGV[1] events from the inbox to the staging list and indexes
-- the batch, in one step, so an event is always in exactly one of the two; returns them.
local items = redis.call('LPOP', KEYS[1], ARGV[1])
if not items then return {} end
redis.call('RPUSH', KEYS[2], unpack(items))
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[3])
return items
