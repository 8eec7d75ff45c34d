-- Project one player's state into the leaderboards, unless Redis already holds a newer one.
-- KEYS: 1 rating zset, 2 public zset, 3 boosted zset, 4 player hash
-- ARGV: 1 player_id, 2 version, 3 listed (0/1), 4 rating, 5 public (0/1),
--       6 boosted points, 7.. hash field/value pairs
local current = tonumber(redis.call('HGET', KEYS[4], 'version') or '-1')
if current >= tonumber(ARGV[2]) then
  return 0
end
if ARGV[3] == '1' then
  redis.call('ZADD', KEYS[1], ARGV[4], ARGV[1])
else
  redis.call('ZREM', KEYS[1], ARGV[1])
end
if ARGV[5] == '1' then
  redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
else
  redis.call('ZREM', KEYS[2], ARGV[1])
end
if tonumber(ARGV[6]) > 0 then
  redis.call('ZADD', KEYS[3], ARGV[6], ARGV[1])
else
  redis.call('ZREM', KEYS[3], ARGV[1])
end
redis.call('DEL', KEYS[4])
redis.call('HSET', KEYS[4], unpack(ARGV, 7))
return 1
