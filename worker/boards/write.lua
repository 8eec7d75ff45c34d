-- KEYS: 1 rating, 2 public, 3 boosted, 4 the set of the ids written that are not on the rating
-- board (build only: with the rating board it tells which hashes a rebuild wrote; repair
-- passes any key of the ladder and it is not touched), 5 active, 6 the active board's index of
-- last games, then one player hash per row.
-- ARGV: 1 a JSON array of rows [player_id, version, on_board, rating, public, boosted, fields,
-- active, last_game] (on_board/public 0 or 1; active 1, 0 or -1 for a ladder without an active
-- board; version, rating, boosted and last_game (Unix seconds) as strings so no digit is lost;
-- fields the hash's flat field/value list); 2 "newer", "repair" or "build".
-- newer (a worker's batch): a player is written only if their hash holds an older version, so
-- a slow worker's late write never rolls a leaderboard back.
-- repair: a hash holding the *same* version is rewritten too (that is how drift is repaired);
-- one holding a newer version is left alone.
-- build: the boards are temporary keys, filled from every row with one ZADD per board; each
-- hash is rewritten (players changed meanwhile are re-projected after the swap).
-- created (the players an import has just created; no id twice in one call): a row whose hash
-- does not exist (nothing was shown of this player yet) gets its hash with one HSET, and is put
-- on or taken off each board together with the other such rows of the call, one ZADD and one
-- ZREM per board after the loop; a row whose hash exists is taken as in newer.
local rows = cjson.decode(ARGV[1])
if ARGV[2] == 'build' then
  local boards, ids = {{}, {}, {}, {}, {}}, {}
  for k = 1, #rows do
    local row = rows[k]
    if row[3] ~= 1 then ids[#ids + 1] = row[1] end
    redis.call('DEL', KEYS[k + 6])
    redis.call('HSET', KEYS[k + 6], unpack(row[7]))
    if row[3] == 1 then
      table.insert(boards[1], row[4])
      table.insert(boards[1], row[1])
    end
    if row[5] == 1 then
      table.insert(boards[2], row[4])
      table.insert(boards[2], row[1])
    end
    if tonumber(row[6]) > 0 then
      table.insert(boards[3], row[6])
      table.insert(boards[3], row[1])
    end
    if row[8] == 1 then
      table.insert(boards[4], row[4])
      table.insert(boards[4], row[1])
      table.insert(boards[5], row[9])
      table.insert(boards[5], row[1])
    end
  end
  for b = 1, 3 do
    if #boards[b] > 0 then redis.call('ZADD', KEYS[b], unpack(boards[b])) end
  end
  if #boards[4] > 0 then
    redis.call('ZADD', KEYS[5], unpack(boards[4]))
    redis.call('ZADD', KEYS[6], unpack(boards[5]))
  end
  if #ids > 0 then redis.call('SADD', KEYS[4], unpack(ids)) end
  return #rows
end
local written = 0
local created = ARGV[2] == 'created'
-- created: per board (rating, public, boosted, active, its index of last games), the
-- score/id pairs to add and the ids to remove, of the rows whose hash did not exist
local add, drop = {{}, {}, {}, {}, {}}, {{}, {}, {}, {}, {}}
local function put(b, on, score, id)
  if on then
    local list = add[b]
    list[#list + 1] = score
    list[#list + 1] = id
  else
    drop[b][#drop[b] + 1] = id
  end
end
for k = 1, #rows do
  local row = rows[k]
  local id, hash = row[1], KEYS[k + 6]
  if created and redis.call('EXISTS', hash) == 0 then
    put(1, row[3] == 1, row[4], id)
    put(2, row[5] == 1, row[4], id)
    put(3, tonumber(row[6]) > 0, row[6], id)
    if row[8] ~= -1 then
      put(4, row[8] == 1, row[4], id)
      put(5, row[8] == 1, row[9], id)
    end
    redis.call('HSET', hash, unpack(row[7]))
    written = written + 1
  else
    local current = tonumber(redis.call('HGET', hash, 'version') or '-1')
    local version = tonumber(row[2])
    if current < version or (current == version and ARGV[2] == 'repair') then
      if row[3] == 1 then redis.call('ZADD', KEYS[1], row[4], id)
      else redis.call('ZREM', KEYS[1], id) end
      if row[5] == 1 then redis.call('ZADD', KEYS[2], row[4], id)
      else redis.call('ZREM', KEYS[2], id) end
      if tonumber(row[6]) > 0 then redis.call('ZADD', KEYS[3], row[6], id)
      else redis.call('ZREM', KEYS[3], id) end
      if row[8] == 1 then
        redis.call('ZADD', KEYS[5], row[4], id)
        redis.call('ZADD', KEYS[6], row[9], id)
      elseif row[8] == 0 then
        redis.call('ZREM', KEYS[5], id)
        redis.call('ZREM', KEYS[6], id)
      end
      redis.call('DEL', hash)
      redis.call('HSET', hash, unpack(row[7]))
      written = written + 1
    end
  end
end
if created then
  local boards = {KEYS[1], KEYS[2], KEYS[3], KEYS[5], KEYS[6]}
  for b = 1, 5 do
    if #add[b] > 0 then redis.call('ZADD', boards[b], unpack(add[b])) end
    if #drop[b] > 0 then redis.call('ZREM', boards[b], unpack(drop[b])) end
  end
end
return written
