-- KEYS: 1-3 the ladder's rating, public and boosted boards, then player hashes (one slot).
-- ARGV: 1 length of the hash key prefix (the rest of a hash's key is the player id); 2 what
-- each player's Redis state should be, in the order of the hashes, joined by the record
-- separator (30): the rating, public and boosted scores ('' when not on that board) and the
-- card's fields and values, joined by the unit separator (31). One argument for the chunk:
-- packing an argument per value was most of the client's time.
-- Returns one string: for each player that differs in any of these, its position (1-based),
-- its three scores ('' when not on a board) and its hash's fields and values, joined by the
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

for i = 4, #KEYS do
  local stop = string.find(expected, '\30', pos, true) or (#expected + 1)
  local record = string.sub(expected, pos, stop - 1)
  pos = stop + 1
  local a = string.find(record, '\31', 1, true)
  local b = string.find(record, '\31', a + 1, true)
  local c = string.find(record, '\31', b + 1, true)
  local wanted = {string.sub(record, 1, a - 1), string.sub(record, a + 1, b - 1),
    string.sub(record, b + 1, c - 1)}
  local id = string.sub(KEYS[i], skip + 1)
  local scores = {}
  local agree = true
  for s = 1, 3 do
    scores[s] = redis.call('ZSCORE', KEYS[s], id) or ''
    if not same(scores[s], wanted[s]) then
      agree = false
    end
  end
  local card = table.concat(redis.call('HGETALL', KEYS[i]), '\31')
  if not agree or card ~= string.sub(record, c + 1) then
    if string.find(card, '\30', 1, true) then
      odd = 1
    end
    out[#out + 1] = table.concat({i - 3, scores[1], scores[2], scores[3], card}, '\31')
  end
end
return {table.concat(out, '\30'), odd}
