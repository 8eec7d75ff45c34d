-- KEYS: 1 the inbox, 2 the staging list of a new batch, 3 the index of staged batches, and
-- (optional) 4 the staging list of a settled batch to release first.
-- ARGV: 1 how many events to take at most, 2 the time of the claim (the index's score),
-- 3 the batch id, and (with KEYS[4]) 4 the settled batch's id. Releases the settled batch
-- (its staging list and its index entry, as ``Inbox.release``), then moves up to ARGV[1]
-- events from the inbox to the staging list and indexes the batch, in one step, so an event
-- is always in exactly one of the two; returns them.
if KEYS[4] then
  redis.call('DEL', KEYS[4])
  redis.call('ZREM', KEYS[3], ARGV[4])
end
local items = redis.call('LPOP', KEYS[1], ARGV[1])
if not items then return {} end
redis.call('RPUSH', KEYS[2], unpack(items))
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[3])
return items
