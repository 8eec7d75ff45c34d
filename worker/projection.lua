-- Project players' states into one ladder's leaderboards; a player whose hash already holds
-- the same or a newer version is left alone (a slow worker's late write never rolls back).
-- All keys carry the ladder's hash tag, so one call touches one Redis Cluster slot.
-- KEYS: 1 rating zset, 2 public zset, 3 boosted zset, 3+i player i's hash
-- ARGV, per player in KEYS order: player_id, version, listed (0/1), rating, public (0/1),
--       boosted points, n, then n hash field/value pairs
-- Returns how many players were written.
local written = 0
local a = 1
for i = 4, #KEYS do
  local id, version, listed, rating, public, boosted, n =
    ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5], tonumber(ARGV[a + 6])
  local first, last = a + 7, a + 6 + 2 * n
  a = last + 1
  local current = tonumber(redis.call('HGET', KEYS[i], 'version') or '-1')
  if current < tonumber(version) then
    if listed == '1' then
      redis.call('ZADD', KEYS[1], rating, id)
    else
      redis.call('ZREM', KEYS[1], id)
    end
    if public == '1' then
      redis.call('ZADD', KEYS[2], rating, id)
    else
      redis.call('ZREM', KEYS[2], id)
    end
    if tonumber(boosted) > 0 then
      redis.call('ZADD', KEYS[3], boosted, id)
    else
      redis.call('ZREM', KEYS[3], id)
    end
    redis.call('DEL', KEYS[i])
    redis.call('HSET', KEYS[i], unpack(ARGV, first, last))
    written = written + 1
  end
end
return written
