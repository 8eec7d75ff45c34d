"""What ``ladder verify`` compares once it has derived it: a ledger row with the derived change
(``compare_change``), the stored players with the replay's (``check_players``)."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from sqlalchemy.engine import Engine

from engine import LedgerChange, Player
from schemas.receipt_bodies import After
from worker.ops.rebuild import stream_players
from worker.ops.verifyreport import LadderReport, Mismatch
from worker.store.log import CHUNK, STORED_LEDGER
from worker.store.statements import PLAYER_COLUMNS

LEDGER_FIELDS = (
    *("player_id", "kind", "before", "after", "delta", "k", "expected"),
    *("deviation", "volatility"),
)
_STORED = len(STORED_LEDGER)  # a row's stored columns; then games and provisional
_STATE = operator.attrgetter(*PLAYER_COLUMNS)  # a Player's stored columns, as one tuple


def compare_change(
    event_id: str | None,
    kept: Sequence[Any] | None,
    made: LedgerChange | None,
    report: LadderReport,
) -> None:
    if kept is None or made is None:
        player = made.player_id if made is not None else kept[0] if kept is not None else None
        report.differ(
            Mismatch(event_id, player, "ledger row", _ledger(kept), _derived_ledger(made))
        )
        return
    # a LedgerChange's fields are the stored columns in their order; its kind (a StrEnum)
    # equals the stored text (a row read with what its receipt showed has two columns more)
    kept = tuple(kept[:_STORED])
    if kept == made:
        return
    derived = (made.player_id, made.kind.value, *made[2:])
    for name, a, b in zip(STORED_LEDGER, kept, derived, strict=True):
        if a != b:
            report.differ(Mismatch(event_id, made.player_id, name, a, b))


def compare_shown(
    event_id: str, kept: Sequence[Sequence[Any]], after: Sequence[After], report: LadderReport
) -> bool:
    """The games and provisional flag each of an event's ledger rows (``RECEIPT_LEDGER``)
    says its receipt showed of the player, against the replay's right after the event
    (``receipts.players_after``, one per row): what a receipt read from PostgreSQL says. A
    row written before they were kept holds neither and is not compared. Returns whether
    every row shows them as the replay has them."""
    shown = True
    for row, made in zip(kept, after, strict=True):
        games, provisional = row[_STORED], row[_STORED + 1]
        if games is None and provisional is None:
            shown = False  # not kept then: nothing to compare
            continue
        player = made.change.player_id
        if games != made.games:
            report.differ(Mismatch(event_id, player, "games", games, made.games))
            shown = False
        if provisional != made.provisional:
            report.differ(Mismatch(event_id, player, "provisional", provisional, made.provisional))
            shown = False
    return shown


def check_players(
    engine: Engine,
    ladder: str,
    derived: dict[tuple[str, str], Player],
    report: LadderReport,
    *,
    since: bool = False,
) -> None:
    """Each stored player against the replay's; ``since``: only those the replay knows (it
    started at an instant), their version not (the log does not record it), their
    ``updated_at`` where the replay changed them."""
    seen: set[str] = set()
    for part in stream_players(engine, ladder, chunk=CHUNK):
        for row in part:
            pid = row[1]
            seen.add(pid)
            player = derived.get((ladder, pid))
            if player is None:
                if since or row[2 + PLAYER_COLUMNS.index("version")] == 0:
                    continue  # created for an event that was not applied; never changed
                report.differ(Mismatch(None, pid, "player", "stored", None))
                continue
            stored = tuple(row[2:])
            derived_state = _STATE(player)
            if since:
                changed = player.version > 0
                stored, derived_state = _since(stored, changed), _since(derived_state, changed)
            if stored == derived_state:
                continue
            for name, value, made in zip(PLAYER_COLUMNS, stored, derived_state, strict=True):
                if value != made:
                    report.differ(Mismatch(None, pid, name, value, made))
        report.players += len(part)
    for _, pid in derived:
        if pid not in seen:
            report.differ(Mismatch(None, pid, "player", None, "derived"))


_VERSION = PLAYER_COLUMNS.index("version")
_UPDATED = PLAYER_COLUMNS.index("updated_at")


def _since(state: tuple[Any, ...], changed: bool) -> tuple[Any, ...]:
    """A player's state as a verify since an instant compares it: without the version, and
    without ``updated_at`` when the replay did not change the player."""
    kept = list(state)
    kept[_VERSION] = None
    if not changed:
        kept[_UPDATED] = None
    return tuple(kept)


def _ledger(row: Sequence[Any] | None) -> dict[str, Any] | None:
    """A stored ledger row's stored columns by name (a row read with what its receipt showed,
    ``RECEIPT_LEDGER``, has two columns more: not the ledger's change, not compared here)."""
    return None if row is None else dict(zip(LEDGER_FIELDS, row[:_STORED], strict=True))


def _derived_ledger(change: LedgerChange | None) -> dict[str, Any] | None:
    if change is None:
        return None
    return {name: getattr(change, name) for name in LEDGER_FIELDS}
