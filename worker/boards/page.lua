-- KEYS[1]: the board. ARGV[1]: the operation; ARGV[2]: the key prefix of the ladder's player
-- hashes, to add each entry's provisional flag (empty: no flags); then the operation's
-- arguments:
--   window START COUNT                    positions START .. START+COUNT-1
--   before END SIZE                       the SIZE positions before END (END -1: the end)
--   around MEMBER RADIUS                  RADIUS positions either side of MEMBER
--   card MEMBER                           {around MEMBER 0, HGETALL KEYS[2]}: a rank and a
--                                         player hash read together (same slot: hash tag)
--   after_at / before_at MEMBER SCORE POSITION SIZE
--                                         SIZE positions after / before a cursor: MEMBER's
--                                         current position if it still has SCORE, else POSITION
--   among MEMBER...                       each MEMBER on the board (in the order given; the
--                                         caller sorts), start the number of them found
-- Reply: one JSON array [total, start, rank, member, score, flag, lower, rank, member, ...] (a
-- JSON string is decoded in C; a long multi-bulk reply is parsed by redis-py in Python); start
-- is -1 when MEMBER is not on the board; flag is 1 for a provisional player; lower is the
-- number of players on the board with a strictly lower score (the percentile's numerator). Member comparisons
-- stay inside Redis commands because Lua's string comparison follows the server's locale, not
-- byte order. The player hashes share the board's hash tag, so on a Redis Cluster they are in
-- the board's slot.
local key = KEYS[1]
local op = ARGV[1]
local flags = ARGV[2]
local total = redis.call('ZCARD', key)

local function locate(member)
  local score = redis.call('ZSCORE', key, member)
  if not score then return nil end
  local higher = redis.call('ZCOUNT', key, '(' .. score, '+inf')
  local lower = redis.call('ZCOUNT', key, '-inf', '(' .. score)
  return higher + redis.call('ZRANK', key, member) - lower, score
end

local function emit(out, rank, member, score, lower)
  out[#out + 1] = rank
  out[#out + 1] = member
  out[#out + 1] = score
  local flag = 0
  if flags ~= '' and redis.call('HGET', flags .. member, 'provisional') == '1' then flag = 1 end
  out[#out + 1] = flag
  out[#out + 1] = lower
end

local function below(score)
  return redis.call('ZCOUNT', key, '-inf', '(' .. score)
end

local function window(start, count)
  local out = {total, start}
  if count <= 0 then return out end
  -- one row more than asked: whether the last tie group goes on past the window
  local rows = redis.call('ZREVRANGE', key, start, start + count, 'WITHSCORES')
  local n = math.min(#rows / 2, count)
  local k = 0
  while k < n do
    local score = rows[2 * k + 2]
    local j = k + 1
    while j < n and rows[2 * j + 2] == score do j = j + 1 end
    -- rows k..j-1 share a score. ZREVRANGE lists a tie group by id descending: a group wholly
    -- inside the window is listed reversed; one cut by an edge of the window is read again in
    -- id order, at the same positions of its group.
    local higher = start + k
    local cut = false
    if k == 0 and start > 0 then
      higher = redis.call('ZCOUNT', key, '(' .. score, '+inf')
      cut = higher < start
    end
    if j == n and #rows / 2 > n and rows[2 * n + 2] == score then cut = true end
    local lower = below(score)
    if cut then
      local members = redis.call(
        'ZRANGEBYSCORE', key, score, score, 'LIMIT', start + k - higher, j - k)
      for _, member in ipairs(members) do emit(out, higher + 1, member, score, lower) end
    else
      for i = j - 1, k, -1 do emit(out, higher + 1, rows[2 * i + 1], score, lower) end
    end
    k = j
  end
  return out
end

if op == 'window' then
  return cjson.encode(window(tonumber(ARGV[3]), tonumber(ARGV[4])))
elseif op == 'before' then
  local stop = tonumber(ARGV[3])
  if stop < 0 or stop > total then stop = total end
  local start = math.max(0, stop - tonumber(ARGV[4]))
  return cjson.encode(window(start, stop - start))
elseif op == 'among' then
  local out = {total, 0}
  for i = 3, #ARGV do
    local score = redis.call('ZSCORE', key, ARGV[i])
    if score then
      local higher = redis.call('ZCOUNT', key, '(' .. score, '+inf')
      emit(out, higher + 1, ARGV[i], score, below(score))
      out[2] = out[2] + 1
    end
  end
  return cjson.encode(out)
elseif op == 'around' or op == 'card' then
  local position = locate(ARGV[3])
  local found = {total, -1}
  if position then
    local radius = tonumber(ARGV[4])
    local start = math.max(0, position - radius)
    found = window(start, position + radius + 1 - start)
  end
  if op == 'card' then return {cjson.encode(found), redis.call('HGETALL', KEYS[2])} end
  return cjson.encode(found)
else
  local position, score = locate(ARGV[3])
  if not position or tonumber(score) ~= tonumber(ARGV[4]) then
    position = tonumber(ARGV[5])
  end
  local size = tonumber(ARGV[6])
  if op == 'after_at' then
    return cjson.encode(window(position + 1, size))
  end
  position = math.min(position, total)
  local start = math.max(0, position - size)
  return cjson.encode(window(start, position - start))
end
