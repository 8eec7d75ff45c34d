-- KEYS: player hashes of one ladder (one slot). Returns, per hash, its fields and values joined
-- by the unit separator ('' for a missing hash): one reply element per player instead of two
-- per field, which is most of the client's parsing time for a large ladder.
local out = {}
for i = 1, #KEYS do
  out[i] = table.concat(redis.call('HGETALL', KEYS[i]), '\31')
end
return out
