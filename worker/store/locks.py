"""A ladder's advisory lock: what a moderation action holds its ladder by.

One key per ladder: a worker's batch holds the lock of each of its ladders shared from its
claim of the players to its commit (``statements.claim_players``); a moderation action takes
its ladder's exclusively (``moderation.lock_ladder``), so it waits for the batches in flight
there to commit and holds new ones at their claim. Row locks alone cannot say as much: a
lock statement takes the rows of its snapshot, and a player a batch created, committed
while the action waited for another of that batch's players, is not among them; the action
reads that player next, and a later game of theirs could be scored under the action and
corrected twice.

A batch takes, before its ladders', the database's batch key shared: an archive takes it
exclusively for a moment to mark its boundary (``worker.store.marks``), so it waits for every
batch in flight, of whatever ladder, even one its configuration does not name, and holds new
ones at their claim. Before that it takes, exclusively, each ladder's second key, an
import's: an import holds its ladder's shared only while it commits (``IMPORT_COMMIT``), so the
archive waits for the commits in flight, never for a whole import, and never holds a batch
meanwhile. Its last transaction takes every archived ladder's key exclusively, in the order a
batch takes its own (sorted), so it cannot deadlock with one either.

The key is the schema's and the ladder's: the ladders of two deployments in one database
(each in its own schema, as ``search_path`` chooses) do not hold each other. Shared locks
never wait for each other, and an action takes one ladder's alone.
"""

from __future__ import annotations

from typing import Final

_KEY: Final = "hashtextextended(current_schema() || ':ladder:' || {}, 0)"
_IMPORT_KEY: Final = "hashtextextended(current_schema() || ':import:' || {}, 0)"
_BATCHES_KEY: Final = "hashtextextended(current_schema() || ':batches', 0)"

#: A batch's: the database's batch key, then each ladder of ``%(ladders)s`` (text[], sorted),
#: shared, until its transaction ends (output expressions run in the ORDER BY's order).
SHARE_LADDERS: Final = f"""
SELECT pg_advisory_xact_lock_shared(k.key) FROM (
  SELECT 0 AS n, {_BATCHES_KEY} AS key
  UNION ALL
  SELECT u.n, {_KEY.format("u.l")} FROM unnest(%(ladders)s::text[]) WITH ORDINALITY AS u(l, n)
) AS k ORDER BY k.n
"""
#: An archive's marking: the database's batch key exclusively, until its transaction ends.
LOCK_BATCHES: Final = f"SELECT pg_advisory_xact_lock({_BATCHES_KEY})"
#: An action's: ``%(ladder)s`` exclusively, until its transaction ends.
LOCK_LADDER: Final = f"SELECT pg_advisory_xact_lock({_KEY.format('%(ladder)s')})"
#: An archive's: each ladder of ``%(ladders)s`` (text[], sorted as a batch sorts its own)
#: exclusively, until its transaction ends.
LOCK_LADDERS: Final = (
    f"SELECT pg_advisory_xact_lock({_KEY.format('l')}) FROM unnest(%(ladders)s::text[]) l"
)
#: An import's commit: ``%(ladder)s``'s import key shared, until its transaction ends.
IMPORT_COMMIT: Final = f"SELECT pg_advisory_xact_lock_shared({_IMPORT_KEY.format('%(ladder)s')})"
#: An archive's marking: each ladder of ``%(ladders)s`` (text[], sorted) import key exclusively.
LOCK_IMPORT_COMMITS: Final = (
    f"SELECT pg_advisory_xact_lock({_IMPORT_KEY.format('l')}) FROM unnest(%(ladders)s::text[]) l"
)
