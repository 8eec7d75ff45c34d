-- Writes a batch's receipts, after the leaderboard write of the same pipeline.
-- KEYS: 1 the stream ladder:receipts; then the keys the receipts name by position: receipt
-- keys ladder:receipt:<event_id>, wait lists ladder:receipt-wait:<event_id> and, when the
-- boards live on this Redis, the ladders' rating boards.
-- ARGV: 1 ttl, 2 maxlen, 3 wait seconds, then one group per receipt:
--   "mode key wait board players healed" (positions in KEYS, 0: none; board 0: the ranks
--   are given), the receipt's JSON text with a \1 byte where each player's rank_after goes
--   (JSON text never holds a raw control byte), when healed the original's receipt cut the
--   same way, then per player its id (read the rank here) or its rank as text (given).
-- The text is filled in here, never decoded (cjson would round numbers to 14 digits).
-- rank_after is the standard competition rank (1 + players with a higher score), null for
-- a player not on the rating board.
-- Modes: write (SET the key), dead_letter (SET NX: an applied event's receipt stays),
-- duplicate (the key keeps the original's; a missing one, when healed, is set to the
-- original's own receipt, which is then the one sent). Every receipt goes on the stream
-- (MAXLEN ~) and onto its wait list, which expires WAIT seconds later.
local ttl, maxlen, wait = ARGV[1], ARGV[2], ARGV[3]
local stream = KEYS[1]
local i = 4
local count = 0

while i <= #ARGV do
  local mode, k, w, b, n, healed = string.match(ARGV[i], '^(%S+) (%d+) (%d+) (%d+) (%d+) (%d)$')
  k, w, b, n = tonumber(k), tonumber(w), tonumber(b), tonumber(n)
  local text = ARGV[i + 1]
  local heal = nil
  local at = i + 2
  if healed == '1' then
    heal = ARGV[at]
    at = at + 1
  end
  local ranks = {}
  for p = 1, n do
    local given = ARGV[at + p - 1]
    if b == 0 then
      ranks[p] = given
    else
      local score = redis.call('ZSCORE', KEYS[b], given)
      if score then
        ranks[p] = tostring(redis.call('ZCOUNT', KEYS[b], '(' .. score, '+inf') + 1)
      else
        ranks[p] = 'null'
      end
    end
  end
  local function fill(template)
    if n == 0 then return template end
    local p = 0
    return (string.gsub(template, '\1', function()
      p = p + 1
      return ranks[p]
    end))
  end
  local body = fill(text)
  if k > 0 then
    if mode == 'write' then
      redis.call('SET', KEYS[k], body, 'EX', ttl)
    elseif mode == 'dead_letter' then
      redis.call('SET', KEYS[k], body, 'EX', ttl, 'NX')
    elseif heal and redis.call('EXISTS', KEYS[k]) == 0 then
      body = fill(heal)
      redis.call('SET', KEYS[k], body, 'EX', ttl)
    end
  end
  redis.call('XADD', stream, 'MAXLEN', '~', maxlen, '*', 'receipt', body)
  if w > 0 then
    redis.call('RPUSH', KEYS[w], body)
    redis.call('EXPIRE', KEYS[w], wait)
  end
  count = count + 1
  i = at + n
end
return count
