-- KEYS: 1-N the ladder's boards (rating, public, boosted, and active where the ladder has
-- one), then player hashes (one slot).
-- ARGV: 1 length of the hash key prefix (the rest of a hash's key is the player id); 2 what
-- each player's Redis state should be, in the order of the hashes, joined by the record
-- separator (30): its N board scores ('' when not on that board) and the card's fields and
-- values, joined by the unit separator (31); 3 N. One argument for the chunk: packing an
-- argument per value was most of the client's time.
-- Returns one string: for each player that differs in any of these, its position (1-based),
-- its N scores ('' when not on a board) and its hash's fields and values, joined by the
-- unit separator, players joined by the record separator; '' when all agree. Comparing here,
-- the client parses only what differs. Then 1 if a differing hash holds the record
-- separator itself (the string does not split into players: read them another way), else 0.
local skip = tonumber(ARGV[1])
local expected = ARGV[2]
local out = {}
local odd = 0
local pos = 1

local function same(actual, wanted)
  if actual == wanted then
    return true
  end
  local a, w = tonumber(actual), tonumber(wanted)
  return a ~= nil and w ~= nil and a == w
end

local boards = tonumber(ARGV[3])

for i = boards + 1, #KEYS do
  local stop = string.find(expected, '\30', pos, true) or (#expected + 1)
  local record = string.sub(expected, pos, stop - 1)
  pos = stop + 1
  local wanted = {}
  local from = 1
  for s = 1, boards do
    local at = string.find(record, '\31', from, true)
    wanted[s] = string.sub(record, from, at - 1)
    from = at + 1
  end
  local id = string.sub(KEYS[i], skip + 1)
  local scores = {}
  local agree = true
  for s = 1, boards do
    scores[s] = redis.call('ZSCORE', KEYS[s], id) or ''
    if not same(scores[s], wanted[s]) then
      agree = false
    end
  end
  local card = table.concat(redis.call('HGETALL', KEYS[i]), '\31')
  if not agree or card ~= string.sub(record, from) then
    if string.find(card, '\30', 1, true) then
      odd = 1
    end
    scores[boards + 1] = card
    out[#out + 1] = (i - boards) .. '\31' .. table.concat(scores, '\31')
  end
end
return {table.concat(out, '\30'), odd}
