-- KEYS: 1 the player's hash, then the ladder's live boards (rating, public, boosted, active,
-- active:since). ARGV: 1 the player id, 2 the version the erased player's state had last.
-- Takes the id off every board and deletes its hash when they are the erased player's: a
-- hash of that version or an older one, or none. A hash of a newer version was written since
-- by a new player of the same id (whose game came after the erase), and is left alone.
-- Returns 1 when the id was taken off, 0 when it was left.
local version = redis.call('HGET', KEYS[1], 'version')
if version and tonumber(version) > tonumber(ARGV[2]) then return 0 end
redis.call('DEL', KEYS[1])
for k = 2, #KEYS do redis.call('ZREM', KEYS[k], ARGV[1]) end
return 1
