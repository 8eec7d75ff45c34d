-- Writes a batch's receipts, after the leaderboard write of the same pipeline.
-- KEYS: 1 the stream ladder:receipts; then the keys the entries name by position: receipt
-- keys ladder:receipt:<event_id>, wait lists ladder:receipt-wait:<event_id> and, when the
-- boards live on this Redis, the ladders' rating boards.
-- ARGV: 1 ttl, 2 maxlen, 3 wait seconds, then one group per receipt:
--   mode, receipt key position (0: none), wait list position (0: none), n (players),
--   healed (1: a second text follows the first), the receipt's JSON text cut at each
--   player's rank_after (n + 1 pieces; then n + 1 more when healed), and per player two
--   arguments: 0 and the rank as text, or the board's key position and the player id.
-- The pieces are joined here, never decoded (cjson would round numbers to 14 digits).
-- rank_after is the standard competition rank (1 + players with a higher score), null for
-- a player not on the rating board.
-- Modes: write (SET the key), dead_letter (SET NX: an applied event's receipt stays),
-- duplicate (the key keeps the original's; a missing one, when healed, is set to the second
-- text, the original's own receipt, which is then the one sent). Every receipt goes on the
-- stream (MAXLEN ~) and onto its wait list, which expires WAIT seconds later.
local ttl, maxlen, wait = ARGV[1], ARGV[2], ARGV[3]
local stream = KEYS[1]
local i = 4
local count = 0

local function rank(where, what)
  if where == '0' then return what end
  local board = KEYS[tonumber(where)]
  local score = redis.call('ZSCORE', board, what)
  if not score then return 'null' end
  return tostring(redis.call('ZCOUNT', board, '(' .. score, '+inf') + 1)
end

local function render(first, n, ranks)
  local out = {}
  for p = 0, n - 1 do
    out[#out + 1] = ARGV[first + p]
    out[#out + 1] = ranks[p + 1]
  end
  out[#out + 1] = ARGV[first + n]
  return table.concat(out)
end

while i <= #ARGV do
  local mode, k, w = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  local n, healed = tonumber(ARGV[i + 3]), ARGV[i + 4] == '1'
  local text_at = i + 5
  local heal_at = text_at + n + 1
  local ranks_at = healed and heal_at + n + 1 or heal_at
  local ranks = {}
  for p = 0, n - 1 do
    ranks[p + 1] = rank(ARGV[ranks_at + 2 * p], ARGV[ranks_at + 2 * p + 1])
  end
  local body = render(text_at, n, ranks)
  if k > 0 then
    local key = KEYS[k]
    if mode == 'write' then
      redis.call('SET', key, body, 'EX', ttl)
    elseif mode == 'dead_letter' then
      redis.call('SET', key, body, 'EX', ttl, 'NX')
    elseif healed and redis.call('EXISTS', key) == 0 then
      body = render(heal_at, n, ranks)
      redis.call('SET', key, body, 'EX', ttl)
    end
  end
  redis.call('XADD', stream, 'MAXLEN', '~', maxlen, '*', 'receipt', body)
  if w > 0 then
    redis.call('RPUSH', KEYS[w], body)
    redis.call('EXPIRE', KEYS[w], wait)
  end
  count = count + 1
  i = ranks_at + 2 * n
end
return count
