-- Writes a batch's receipts, after the leaderboard write of the same pipeline.
-- KEYS: 1 the stream ladder:receipts; then the keys the receipts name by position: receipt
-- keys ladder:receipt:<event_id>, wait lists ladder:receipt-wait:<event_id> and, when the
-- boards live on this Redis, the ladders' rating boards.
-- ARGV: 1 ttl, 2 maxlen, 3 wait seconds, 4 the receipts: fields each ended by a \2 byte
-- (one argument, not thousands: the client packs and Redis hands over one string). Per
-- receipt: "mode key wait board players healed" (positions in KEYS, 0: none; board 0: the
-- ranks are given), the receipt's JSON text with a \1 byte where each player's rank_after
-- goes, when healed the original's receipt cut the same way, for a duplicate its ladder and
-- processed_at (the original's), then per player its id (read the rank here) or its rank as
-- text (given). JSON text never holds a raw control byte, nor does an id (the client checks).
-- The text is filled in here, never decoded (cjson would round numbers to 14 digits).
-- rank_after is the standard competition rank (1 + players with a higher score), null for
-- a player not on the rating board.
-- Modes: write (SET the key), dead_letter (SET NX: an applied event's receipt stays),
-- duplicate (the key keeps the original's; a missing one, when healed, is set to the
-- original's own receipt, which is then the one sent). A duplicate's rank_after is the
-- original's, read from that kept copy when it is the same processing (ladder, processed_at,
-- as many players), else null: never the rank of now. Every receipt goes on the stream
-- (MAXLEN ~) and onto its wait list, which expires WAIT seconds later.
-- The ranks are read first, for the whole call: one ZMSCORE per board (in chunks) for the
-- players it names, one ZCOUNT per distinct score (the boards do not change in between).
local ttl, maxlen, wait, packed = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local stream = KEYS[1]
local CHUNK = 1000
local find, sub = string.find, string.sub
local receipts = {}
local asked = {} -- board position -> {ids in order, set of ids}

local at = 1
local function field()
  local stop = find(packed, '\2', at, true)
  local text = sub(packed, at, stop - 1)
  at = stop + 1
  return text
end

while at <= #packed do
  local mode, k, w, b, n, healed = string.match(field(), '^(%S+) (%d+) (%d+) (%d+) (%d+) (%d)$')
  local r = {mode = mode, k = tonumber(k), w = tonumber(w), b = tonumber(b), n = tonumber(n),
             text = field(), players = {}}
  if healed == '1' then r.heal = field() end
  if mode == 'duplicate' then r.ladder, r.processed_at = field(), field() end
  for p = 1, r.n do r.players[p] = field() end
  if r.b > 0 and r.n > 0 then
    local wanted = asked[r.b]
    if not wanted then
      wanted = {ids = {}, seen = {}}
      asked[r.b] = wanted
    end
    for _, id in ipairs(r.players) do
      if not wanted.seen[id] then
        wanted.seen[id] = true
        wanted.ids[#wanted.ids + 1] = id
      end
    end
  end
  receipts[#receipts + 1] = r
end

local ranks = {} -- board position -> {id -> rank text}
for b, wanted in pairs(asked) do
  local board, found, above = KEYS[b], {}, {}
  local ids = wanted.ids
  for from = 1, #ids, CHUNK do
    local last = math.min(from + CHUNK - 1, #ids)
    local scores = redis.call('ZMSCORE', board, unpack(ids, from, last))
    for j = from, last do
      local score = scores[j - from + 1]
      if score then
        local rank = above[score]
        if not rank then
          rank = tostring(redis.call('ZCOUNT', board, '(' .. score, '+inf') + 1)
          above[score] = rank
        end
        found[ids[j]] = rank
      else
        found[ids[j]] = 'null'
      end
    end
  end
  ranks[b] = found
end

-- The text with the n values of filled in its \1 bytes, in order.
local function fill(template, filled, n)
  if n == 0 then return template end
  local parts, from = {}, 1
  for p = 1, n do
    local slot = find(template, '\1', from, true)
    parts[2 * p - 1] = sub(template, from, slot - 1)
    parts[2 * p] = filled[p]
    from = slot + 1
  end
  parts[2 * n + 1] = sub(template, from)
  return table.concat(parts)
end

local count = 0
for _, r in ipairs(receipts) do
  local n = r.n
  local filled = {}
  for p = 1, n do
    local given = r.players[p]
    filled[p] = r.b == 0 and given or ranks[r.b][given]
  end
  local k, w = r.k, r.w
  local healing = r.heal and k > 0 and redis.call('EXISTS', KEYS[k]) == 0
  if r.mode == 'duplicate' and n > 0 and not healing then
    for p = 1, n do filled[p] = 'null' end
    local kept = k > 0 and redis.call('GET', KEYS[k])
    local ok, copy = false, nil
    if kept then ok, copy = pcall(cjson.decode, kept) end
    if ok and type(copy) == 'table' and copy.ladder == r.ladder
        and copy.processed_at == r.processed_at and type(copy.players) == 'table'
        and #copy.players == n then
      for p = 1, n do
        local rank = type(copy.players[p]) == 'table' and copy.players[p].rank_after
        if type(rank) == 'number' then filled[p] = string.format('%d', rank) end
      end
    end
  end
  local body = fill(r.text, filled, n)
  if k > 0 then
    if r.mode == 'write' then
      redis.call('SET', KEYS[k], body, 'EX', ttl)
    elseif r.mode == 'dead_letter' then
      redis.call('SET', KEYS[k], body, 'EX', ttl, 'NX')
    elseif healing then
      body = fill(r.heal, filled, n)
      redis.call('SET', KEYS[k], body, 'EX', ttl)
    end
  end
  redis.call('XADD', stream, 'MAXLEN', '~', maxlen, '*', 'receipt', body)
  if w > 0 then
    redis.call('RPUSH', KEYS[w], body)
    redis.call('EXPIRE', KEYS[w], wait)
  end
  count = count + 1
end
return count
