-- Writes a batch's receipts, after the leaderboard write of the same pipeline.
-- KEYS: 1 the stream ladder:receipts; then the keys the entries name by position: receipt
-- keys ladder:receipt:<event_id>, wait lists ladder:receipt-wait:<event_id> and, when the
-- boards live on this Redis, the ladders' rating boards.
-- ARGV: 1 a JSON object {maxlen, ttl, wait, entries}; each entry is
--   {m: mode, k: receipt key position (0: none), w: wait list position (0: none),
--    p: the receipt's JSON text cut at each player's rank_after,
--    r: per player, the rank as text, or [board position, player_id] to read it here,
--    h: (a duplicate) the original's receipt, cut the same way}
-- The receipt text is joined in Lua, never decoded: cjson would round its numbers to 14
-- digits. rank_after is the standard competition rank (1 + players with a higher score),
-- null for a player not on the rating board.
-- Modes: write (SET the key), dead_letter (SET NX: an applied event's receipt stays),
-- duplicate (the key keeps the original's; a missing one, when h is given, is healed with
-- the original's receipt, which is then the one sent). Every entry goes on the stream
-- (MAXLEN ~) and is pushed onto its wait list, which expires WAIT seconds later.
local spec = cjson.decode(ARGV[1])
local stream = KEYS[1]

local function rank(r)
  if type(r) == 'string' then return r end
  local board = KEYS[r[1]]
  local score = redis.call('ZSCORE', board, r[2])
  if not score then return 'null' end
  return tostring(redis.call('ZCOUNT', board, '(' .. score, '+inf') + 1)
end

local function render(parts, ranks)
  local out = {parts[1]}
  for i = 1, #ranks do
    out[#out + 1] = ranks[i]
    out[#out + 1] = parts[i + 1]
  end
  return table.concat(out)
end

for _, e in ipairs(spec.entries) do
  local ranks = {}
  for i, r in ipairs(e.r) do ranks[i] = rank(r) end
  local body = render(e.p, ranks)
  local key = nil
  if e.k > 0 then key = KEYS[e.k] end
  if key then
    if e.m == 'write' then
      redis.call('SET', key, body, 'EX', spec.ttl)
    elseif e.m == 'dead_letter' then
      redis.call('SET', key, body, 'EX', spec.ttl, 'NX')
    elseif e.h and redis.call('EXISTS', key) == 0 then
      body = render(e.h, ranks)
      redis.call('SET', key, body, 'EX', spec.ttl)
    end
  end
  redis.call('XADD', stream, 'MAXLEN', '~', spec.maxlen, '*', 'receipt', body)
  if e.w > 0 then
    redis.call('RPUSH', KEYS[e.w], body)
    redis.call('EXPIRE', KEYS[e.w], spec.wait)
  end
end
return #spec.entries
