-- KEYS: 1 a key of the ladder (in a cluster, the call runs on the node holding its slot).
-- ARGV: 1 SCAN cursor, 2 pattern of the ladder's player hashes, 3 SCAN count, 4 length of the
-- hash key prefix. Returns the next cursor, the player ids of the hashes scanned joined by the
-- unit separator (31): one reply element per page instead of one per hash, and apart, one
-- element each, any id that holds a separator itself.
local reply = redis.call('SCAN', ARGV[1], 'MATCH', ARGV[2], 'COUNT', ARGV[3], 'TYPE', 'hash')
local skip = tonumber(ARGV[4])
local ids = {}
local odd = {}
for _, key in ipairs(reply[2]) do
  local id = string.sub(key, skip + 1)
  if string.find(id, '[\30\31]') then
    table.insert(odd, id)
  else
    table.insert(ids, id)
  end
end
return {reply[1], table.concat(ids, '\31'), odd}
