"""What a batch's instant must come after: each ladder's latest import and latest archive.

A batch takes its instant when its events are validated, before it holds its players (and,
under load, while the batch before it commits). Two operator commands place rows by time, and
either can commit in between:

- An import. A replay places its ledger rows (``engine.replay.in_order``) before every event
  processed after the instant the import was taken; a batch validated before that instant that
  holds its players only after the import committed scores them from the imported ratings,
  where a replay by its instant would score them as new and import them after. An import marks
  its ladder with its instant in its transaction (``IMPORTED``).
- An archive. Its checkpoint replays every row before its boundary, read before the months are
  detached; a batch validated before the boundary and stored after that read would land in an
  archived month without being in the checkpoint. An archive marks every ladder it knows with
  its boundary (``ARCHIVED``) holding the database's batch key exclusively
  (``worker.store.locks``), and commits, before it reads the log: the batches in flight then
  commit first, and every later one finds the mark. The months are the database's, so a batch
  reads the latest boundary of any ladder, and one of a ladder the archive did not know (only
  in a worker's configuration, no player yet) finds it too. An import is placed by its
  instant too: it reads the mark while it commits, holding its ladder's import key (which the
  archive takes before it marks), and one taken before the boundary is refused
  (``refuse_archived``).

A batch reads the marks once its players are locked, in the claim's round trip (``since``): a
mark at or after its instant sends it back to start again at a later one
(``worker.service.batch``). Read once the locks are granted, every mark that matters is there:
a player an import created is locked by a batch only after the import commits, and an archive
commits its marks under the batch key.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, Final

from worker.store.driver import Read

#: The import's: ``%(ladder)s`` was imported at ``%(at)s`` (the latest instant kept).
IMPORTED: Final = """
INSERT INTO ladder_imports (ladder, imported_at) VALUES (%(ladder)s, %(at)s)
ON CONFLICT (ladder) DO UPDATE
SET imported_at = GREATEST(ladder_imports.imported_at, EXCLUDED.imported_at)
"""
#: The archive's: every ladder of ``%(ladders)s`` (text[]) is archived ``%(before)s`` (the
#: latest boundary kept), each row taken in sorted order.
ARCHIVED: Final = """
INSERT INTO ladder_archives (ladder, before)
SELECT l, %(before)s FROM unnest(%(ladders)s::text[]) AS l ORDER BY l
ON CONFLICT (ladder) DO UPDATE SET before = GREATEST(ladder_archives.before, EXCLUDED.before)
"""
# The latest instant a batch at ``now`` must come after: an import at or after it, or the
# moment before a boundary after it (the batch then starts again on or after the boundary).
_SINCE: Final = """
SELECT max(at) FROM (
    SELECT imported_at AS at FROM ladder_imports
    WHERE ladder = ANY(%(ladders)s) AND imported_at >= %(now)s
    UNION ALL
    SELECT max(before) - interval '1 microsecond' FROM ladder_archives WHERE before > %(now)s
) AS marks
"""
# An archive's boundary is the database's, whatever ladders it named: the latest after ``at``.
_ARCHIVED_SINCE: Final = """
SELECT max(before) FROM ladder_archives WHERE before > %(at)s
"""


def since(ladders: Iterable[str], now: datetime) -> Read[datetime | None]:
    """The latest mark a batch of ``ladders`` at ``now`` must start again after: an import of
    one of them, or an archive's boundary (the database's); None if there is none (a
    primary-key probe per ladder for the imports, the archives' table is a row per ladder;
    ``max`` answers one row, NULL when none matched)."""

    def make(rows: Sequence[Any]) -> datetime | None:
        latest: datetime | None = rows[0][0]
        return latest

    return Read(_SINCE, {"ladders": sorted(set(ladders)), "now": now}, make)


def refuse_archived(driver: Any, at: datetime) -> None:
    """Raise ``ArchivedMeanwhile`` if an archive marked a boundary after ``at`` (read on the
    psycopg connection ``driver``): rows placed at ``at`` would land in an archived month."""
    (before,) = driver.execute(_ARCHIVED_SINCE, {"at": at}).fetchone()
    if before is not None:
        raise ArchivedMeanwhile(before)


class ArchivedMeanwhile(Exception):
    """An archive's boundary (``before``) is after an import's instant."""

    def __init__(self, before: datetime) -> None:
        super().__init__(before)
        self.before = before
