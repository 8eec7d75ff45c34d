-- KEYS: 1 the active board, 2 its index of last games (score: Unix seconds of the player's last
-- rated game). ARGV: 1 the cut-off (Unix seconds: a last game before it is too old), 2 how many
-- players at most. Takes those players off both keys; returns how many it took.
local old = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[1], 'LIMIT', 0, ARGV[2])
if #old > 0 then
  redis.call('ZREM', KEYS[1], unpack(old))
  redis.call('ZREM', KEYS[2], unpack(old))
end
return #old
