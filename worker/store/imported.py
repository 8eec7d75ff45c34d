"""A ladder's latest import, as the batches that score it read it.

A replay places an import's ledger rows by time (``engine.replay.in_order``): before every
event processed after the instant the import was taken. A batch takes its instant when its
events are validated, before it holds its players (and, under load, while the batch before it
commits), so an import can commit in between: the batch then finds its players imported and
scores them from the imported ratings, where a replay by its instant would score them as new
and import them after. So an import marks its ladder with its instant, in its transaction
(``MARK``), and a batch reads the marks of its ladders once its players are locked, in the
claim's round trip (``since``): a mark at or after the batch's instant sends the batch back
to start again at a later one (``worker.service.batch``). Read once the locks are granted,
the mark of every import whose players the batch could see is there: a player an import
created is locked by a batch only after the import commits.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, Final

from worker.store.driver import Read

#: The import's: ``%(ladder)s`` was imported at ``%(at)s`` (the latest instant kept).
MARK: Final = """
INSERT INTO ladder_imports (ladder, imported_at) VALUES (%(ladder)s, %(at)s)
ON CONFLICT (ladder) DO UPDATE
SET imported_at = GREATEST(ladder_imports.imported_at, EXCLUDED.imported_at)
"""
_SINCE: Final = """
SELECT max(imported_at) FROM ladder_imports
WHERE ladder = ANY(%(ladders)s) AND imported_at >= %(now)s
"""


def since(ladders: Iterable[str], now: datetime) -> Read[datetime | None]:
    """The latest import of ``ladders`` taken at or after ``now``; None if there is none
    (a primary-key probe per ladder; ``max`` answers one row, NULL when none matched)."""

    def make(rows: Sequence[Any]) -> datetime | None:
        latest: datetime | None = rows[0][0]
        return latest

    return Read(_SINCE, {"ladders": sorted(set(ladders)), "now": now}, make)
