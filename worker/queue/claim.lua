-- KEYS: 1 the inbox, 2 the staging list of a new batch, 3 the index of staged batches.
-- ARGV: 1 how many events to take at most, 2 the time of the claim (the index's score),
-- 3 the batch id, 4 the most bytes an event may have (LADDER_MAX_EVENT_BYTES), 5 the mark
-- an oversized event is replaced by. Moves up to ARGV[1] events from the inbox to the staging
-- list and indexes the batch, in one step, so an event is always in exactly one of the two;
-- returns them. An event over ARGV[4] bytes is refused unread: it moves as the mark followed
-- by its size, its SHA-1 and its first 1,024 bytes (``worker.queue.oversized``), so no worker
-- ever receives it whole.
local items = redis.call('LPOP', KEYS[1], ARGV[1])
if not items then return {} end
local most = tonumber(ARGV[4])
for k = 1, #items do
  local item = items[k]
  if #item > most then
    items[k] = ARGV[5] .. #item .. ' ' .. redis.sha1hex(item) .. ' ' .. string.sub(item, 1, 1024)
  end
end
redis.call('RPUSH', KEYS[2], unpack(items))
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[3])
return items
