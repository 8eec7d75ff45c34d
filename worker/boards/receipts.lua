-- Writes a batch's receipts, after the leaderboard write of the same pipeline.
-- KEYS: 1 the stream ladder:receipts; then the keys the receipts name by position: receipt
-- keys ladder:receipt:<event_id>, wait lists ladder:receipt-wait:<event_id> and, when the
-- boards live on this Redis, the ladders' rating boards.
-- ARGV: 1 ttl, 2 maxlen, 3 wait seconds, 4 the receipts: fields each ended by a \2 byte
-- (one argument, not thousands: the client packs and Redis hands over one string). Per
-- receipt: "mode key board players healed" (positions in KEYS, 0: none, the key's wait list
-- right after it; board 0: the ranks are given), the receipt's JSON text as a string.format template with a %s where
-- each player's rank_after goes (and %% for a %), when healed the original's receipt made
-- the same way, for a duplicate its ladder and processed_at (the original's), then per
-- player its id (read the rank here) or its rank as text (given). JSON text never holds a
-- raw control byte, nor does an id (the client checks).
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
-- The receipts are kept in parallel arrays (no table per receipt).
local ttl, maxlen, wait, packed = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local stream = KEYS[1]
local CHUNK = 1000
local find, sub, match, format = string.find, string.sub, string.match, string.format
local call, tonumber, unpack = redis.call, tonumber, unpack
local modes, ks, bs, ns, texts, heals, ladders, ats, firsts = {}, {}, {}, {}, {}, {}, {}, {}, {}
local given = {} -- every receipt's player fields in order: receipt i's from firsts[i]
local asked = {} -- board position -> {ids in order, set of ids}

local at, count, used = 1, 0, 0
local size = #packed
while at <= size do
  local stop = find(packed, '\2', at, true)
  local mode, k, b, n, healed = match(sub(packed, at, stop - 1), '^(%S+) (%d+) (%d+) (%d+) (%d)$')
  at = stop + 1
  count = count + 1
  k, b, n = tonumber(k), tonumber(b), tonumber(n)
  modes[count], ks[count], bs[count], ns[count] = mode, k, b, n
  stop = find(packed, '\2', at, true)
  texts[count] = sub(packed, at, stop - 1)
  at = stop + 1
  if healed == '1' then
    stop = find(packed, '\2', at, true)
    heals[count] = sub(packed, at, stop - 1)
    at = stop + 1
  end
  if mode == 'duplicate' then
    stop = find(packed, '\2', at, true)
    ladders[count] = sub(packed, at, stop - 1)
    at = stop + 1
    stop = find(packed, '\2', at, true)
    ats[count] = sub(packed, at, stop - 1)
    at = stop + 1
  end
  firsts[count] = used + 1
  local wanted
  if b > 0 and n > 0 then
    wanted = asked[b]
    if not wanted then
      wanted = {ids = {}, seen = {}}
      asked[b] = wanted
    end
  end
  for _ = 1, n do
    stop = find(packed, '\2', at, true)
    local id = sub(packed, at, stop - 1)
    at = stop + 1
    used = used + 1
    given[used] = id
    if wanted and not wanted.seen[id] then
      wanted.seen[id] = true
      wanted.ids[#wanted.ids + 1] = id
    end
  end
end

local ranks = {} -- board position -> {id -> rank text}
for b, wanted in pairs(asked) do
  local board, found, above = KEYS[b], {}, {}
  local ids = wanted.ids
  for from = 1, #ids, CHUNK do
    local last = math.min(from + CHUNK - 1, #ids)
    local scores = call('ZMSCORE', board, unpack(ids, from, last))
    for j = from, last do
      local score = scores[j - from + 1]
      if score then
        local rank = above[score]
        if not rank then
          rank = tostring(call('ZCOUNT', board, '(' .. score, '+inf') + 1)
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

local filled = {}
for i = 1, count do
  local n, k, b, mode = ns[i], ks[i], bs[i], modes[i]
  local first = firsts[i]
  if b == 0 then
    for p = 1, n do filled[p] = given[first + p - 1] end
  else
    local found = ranks[b]
    for p = 1, n do filled[p] = found[given[first + p - 1]] end
  end
  local heal = heals[i]
  local healing = heal and k > 0 and call('EXISTS', KEYS[k]) == 0
  if mode == 'duplicate' and n > 0 and not healing then
    for p = 1, n do filled[p] = 'null' end
    local kept = k > 0 and call('GET', KEYS[k])
    local ok, copy = false, nil
    if kept then ok, copy = pcall(cjson.decode, kept) end
    if ok and type(copy) == 'table' and copy.ladder == ladders[i]
        and copy.processed_at == ats[i] and type(copy.players) == 'table'
        and #copy.players == n then
      for p = 1, n do
        local rank = type(copy.players[p]) == 'table' and copy.players[p].rank_after
        if type(rank) == 'number' then filled[p] = format('%d', rank) end
      end
    end
  end
  local body = format(texts[i], unpack(filled, 1, n))
  if k > 0 then
    if mode == 'write' then
      call('SET', KEYS[k], body, 'EX', ttl)
    elseif mode == 'dead_letter' then
      call('SET', KEYS[k], body, 'EX', ttl, 'NX')
    elseif healing then
      body = format(heal, unpack(filled, 1, n))
      call('SET', KEYS[k], body, 'EX', ttl)
    end
  end
  call('XADD', stream, 'MAXLEN', '~', maxlen, '*', 'receipt', body)
  if k > 0 then
    call('RPUSH', KEYS[k + 1], body)
    call('EXPIRE', KEYS[k + 1], wait)
  end
end
return count
