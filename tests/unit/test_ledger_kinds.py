"""The ledger's rows no event wrote are found by their own index (``tables.ACTION_ROWS``):
``verify --since`` names a player from them, and reads the events for every other row."""

from __future__ import annotations

import re

from engine.reasons import LedgerKind
from engine.replay import RECORDED_KINDS
from worker.store.tables import ACTION_ROWS

# What writes each kind's rows: an event's batch, or an action of its own.
WRITTEN_BY = {
    LedgerKind.GAME: "event",
    LedgerKind.PRIZE: "event",
    LedgerKind.LINK: "event",
    LedgerKind.SEASON: "season close",
    LedgerKind.IMPORT: "import",
    LedgerKind.ADJUSTMENT: "moderation",
    LedgerKind.CORRECTION: "moderation",
}


def test_the_index_of_the_rows_no_event_wrote_holds_every_such_kind() -> None:
    """Every kind is placed in the table above; the index's predicate names exactly the
    kinds no event writes, the recorded ones among them."""
    assert set(LedgerKind) == set(WRITTEN_BY)
    indexed = set(re.findall(r"'(\w+)'", ACTION_ROWS))
    assert {str(k) for k, by in WRITTEN_BY.items() if by != "event"} == indexed
    assert {str(k) for k in RECORDED_KINDS} <= indexed
