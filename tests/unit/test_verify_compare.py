"""``ladder verify``'s comparison of one stored ledger row with the change the replay derives.

SPEC 5: replaying the stored events in their scoring order "reproduces every stored number";
a mismatch names the event, the player, the field and both values. The stored row is read in
the columns ``STORED_LEDGER`` names, the kind as text; the engine's ``LedgerChange`` holds the
same values, the kind as a ``LedgerKind``.
"""

from __future__ import annotations

from typing import Any

import pytest

from engine import LedgerChange, LedgerKind
from worker.ops.verifycompare import LEDGER_FIELDS, compare_change
from worker.ops.verifyreport import LadderReport
from worker.store.log import STORED_LEDGER, LedgerRow, ShownLedgerRow

MADE = LedgerChange("p1", LedgerKind.GAME, 1500.0, 1512.0, 12.0, 32.0, 0.5, 150.0, 0.06)
STORED = ("p1", "game", 1500.0, 1512.0, 12.0, 32.0, 0.5, 150.0, 0.06)


def found(kept: Any, made: LedgerChange | None) -> list[tuple[Any, ...]]:
    report = LadderReport("gammon42")
    compare_change("e1", kept, made, report)
    return [(m.event_id, m.player_id, m.field, m.stored, m.derived) for m in report.mismatches]


@pytest.mark.parametrize("kept", [STORED, list(STORED), LedgerRow(*STORED)])
def test_a_stored_row_holding_the_derived_change_is_no_mismatch(kept):
    assert [] == found(kept, MADE)


@pytest.mark.parametrize("index", range(len(STORED)))
def test_each_stored_column_that_differs_is_one_mismatch_naming_it(index):
    kept = list(STORED)
    kept[index] = "other" if index < 2 else -1.0
    derived = (MADE.player_id, "game", *MADE[2:])
    expected = ("e1", "p1", STORED_LEDGER[index], kept[index], derived[index])
    assert [expected] == found(tuple(kept), MADE)


def test_a_row_stored_without_a_derived_change_and_the_other_way_round():
    row = dict(zip(LEDGER_FIELDS, STORED, strict=True))
    assert [("e1", "p1", "ledger row", row, None)] == found(STORED, None)
    assert [("e1", "p1", "ledger row", None, row)] == found(None, MADE)


def test_a_row_read_with_what_its_receipt_showed_and_no_derived_change_is_one_mismatch():
    """A row read in ``RECEIPT_LEDGER``'s columns (verify's) names its stored columns only."""
    row = dict(zip(LEDGER_FIELDS, STORED, strict=True))
    assert [("e1", "p1", "ledger row", row, None)] == found(ShownLedgerRow(*STORED, 3, True), None)
