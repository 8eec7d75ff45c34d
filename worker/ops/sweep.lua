-- KEYS: 1 the set of the ids a rebuild wrote that are not on the rating board, 2 the rating
-- board. ARGV: 1 SCAN cursor, 2 pattern of the ladder's player hashes, 3 SCAN count, 4 length
-- of the hash key prefix. Returns the next cursor and the ids of the hashes scanned that are
-- in neither (the rebuild did not write them, or a worker took them off the board since).
local reply = redis.call('SCAN', ARGV[1], 'MATCH', ARGV[2], 'COUNT', ARGV[3], 'TYPE', 'hash')
local stale = {}
local skip = tonumber(ARGV[4])
for _, key in ipairs(reply[2]) do
  local id = string.sub(key, skip + 1)
  if not redis.call('ZSCORE', KEYS[2], id) and redis.call('SISMEMBER', KEYS[1], id) == 0 then
    table.insert(stale, id)
  end
end
return {reply[1], stale}
