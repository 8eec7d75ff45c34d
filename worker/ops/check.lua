-- KEYS: 1-3 the ladder's rating, public and boosted boards, then player hashes (one slot).
-- ARGV: 1 length of the hash key prefix (the rest of a hash's key is the player id).
-- Returns one string for all of them: per player its three scores ('' when not on a board)
-- and its hash's fields and values, joined by the unit separator (31), players joined by the
-- record separator (30). One reply for a whole chunk: parsing a reply element per player (or
-- per field) was most of the client's time for a large ladder.
local skip = tonumber(ARGV[1])
local out = {}
for i = 4, #KEYS do
  local id = string.sub(KEYS[i], skip + 1)
  local parts = {}
  for b = 1, 3 do
    parts[b] = redis.call('ZSCORE', KEYS[b], id) or ''
  end
  local card = redis.call('HGETALL', KEYS[i])
  for f = 1, #card do
    parts[3 + f] = card[f]
  end
  out[i - 3] = table.concat(parts, '\31')
end
return table.concat(out, '\30')
