-- KEYS: triples (temporary, live, trash). The live key becomes the temporary one's content,
-- or disappears when nothing was built; the old content is unlinked (freed in background).
for i = 1, #KEYS, 3 do
  if redis.call('EXISTS', KEYS[i + 1]) == 1 then
    redis.call('RENAME', KEYS[i + 1], KEYS[i + 2])
  end
  if redis.call('EXISTS', KEYS[i]) == 1 then
    redis.call('RENAME', KEYS[i], KEYS[i + 1])
    redis.call('PERSIST', KEYS[i + 1])
  end
  redis.call('UNLINK', KEYS[i + 2])
end
return #KEYS / 3
