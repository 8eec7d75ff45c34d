"""Receipts: what one event did, as the game server that published it reads it.

A receipt is built from the engine's ``Decision`` right after ``apply`` (so ``games`` and
``provisional`` are the player's state after *that* event, not after the whole batch), and
written after the batch commits, in the same Redis pipeline as the leaderboard write
(``worker.boards.projection``), where ``rank_after`` is read from the rating board the batch
just wrote. Each builder returns the contract ``schemas.receipt.Receipt`` as a plain dict
(published as ``schemas/json/receipt.v1.json``): mypy holds the keys it writes to that one
declaration, and nothing is validated per event.

``players`` has one entry per ledger change (a game's two sides, a prize, a link adoption) and
is empty where nothing moved. A duplicate carries the original's numbers with outcome
``duplicate`` (``original_outcome`` / ``original_reason`` say what the original was) and the
original's ``rank_after``, which the receipts script copies from the original's kept receipt
(null once it expired); a dead
letter has outcome ``dead_lettered``, its ``reason`` and ``detail``; a game a void took back
has outcome ``voided`` and no players (``worker.ops.moderation`` rewrites the receipts a void
changes).

Nothing here does I/O: the store reads the originals, the projection writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, NamedTuple

from engine import Decision, LedgerChange, Outcome, Player, PlayerKey, Ruleset
from schemas.receipt import OUTCOMES, Receipt, ReceiptOutcome, ReceiptPlayer

WRITE = "write"  # a scored event: the receipt key is (re)written
DUPLICATE = "duplicate"  # the key keeps the original's; a missing one is healed from ``heal``
DEAD_LETTER = "dead_letter"  # the key is written only if no applied event's receipt is there

#: The engine's outcome as a receipt writes it (``Outcome`` refuses a value it does not have).
OUTCOME: Final[Mapping[Outcome, ReceiptOutcome]] = {Outcome(o): o for o in OUTCOMES}


@dataclass(frozen=True)
class ReceiptWrite:
    """One receipt on its way to Redis: its body, and how the key is treated.

    ``ranks`` lists the players whose ``rank_after`` the projection fills in (one per entry
    of ``body["players"]``, in order); ``heal`` is, for a duplicate whose original's receipt
    never reached Redis (a crash between commit and the Redis write), the original's own
    receipt, sent instead."""

    event_id: str | None
    ladder: str | None
    body: Receipt
    mode: str = WRITE
    heal: Receipt | None = None

    @property
    def ranks(self) -> list[str]:
        return [p["player_id"] for p in self.body["players"]]


class After(NamedTuple):
    """One ledger change of a decision, with the player's games and provisional flag right
    after it: what a scored receipt's player entry and the ledger row are both made of."""

    change: LedgerChange
    games: int
    provisional: bool


def players_after(
    decision: Decision, players: Mapping[PlayerKey, Player], rules: Ruleset
) -> tuple[After, ...]:
    """Each ledger change of ``decision``, with the player's games and provisional flag as
    they are right after it (``players`` is the state ``apply`` just changed)."""
    found = []
    for change in decision.changes:
        player = players[(decision.ladder, change.player_id)]
        found.append(After(change, player.rated_games, rules.provisional(player)))
    return tuple(found)


def body(decision: Decision, after: Sequence[After], processed_at: datetime | str) -> Receipt:
    """The receipt of an event the batch recorded (rated, unrated, applied or refused), or
    of a duplicate whose original cannot be read (its decision names no reason or ruleset).
    ``processed_at`` may be given as its ``isoformat`` text (a batch's, made once)."""
    players: list[ReceiptPlayer] = []
    for change, games, provisional in after:
        player: ReceiptPlayer = {
            "player_id": change.player_id,
            "rating_before": change.before,
            "rating_after": change.after,
            "delta": change.delta,
            "k": change.k,
            "expected": change.expected,
            "provisional": provisional,
            "rank_after": None,
            "games": games,
        }
        players.append(_uncertain(player, change.deviation, change.volatility))
    return {
        "event_id": decision.event_id,
        "ladder": decision.ladder,
        "type": decision.type,
        "outcome": OUTCOME[decision.outcome],
        "reason": None if decision.reason is None else str(decision.reason),
        "ruleset_version": decision.ruleset_version,
        "processed_at": processed_at if isinstance(processed_at, str) else processed_at.isoformat(),
        "players": players,
    }


def _uncertain(
    player: ReceiptPlayer, deviation: float | None, volatility: float | None
) -> ReceiptPlayer:
    """A receipt's player with the deviation and volatility right after the change, on a
    ladder whose ruleset keeps them (glicko2, openskill); other receipts have neither key."""
    if deviation is not None:
        player["deviation"] = deviation
    if volatility is not None:
        player["volatility"] = volatility
    return player


def scored(
    decision: Decision,
    players: Mapping[PlayerKey, Player],
    rules: Ruleset,
    processed_at: datetime,
) -> Receipt:
    """``body`` of the decision, the players read from ``players`` right after it."""
    return body(decision, players_after(decision, players, rules), processed_at)


def duplicate(original: Receipt) -> Receipt:
    """SPEC 2.4 step 1: no effect at all; the receipt repeats the original's numbers."""
    return {
        **original,
        "outcome": "duplicate",
        "reason": None,
        "players": [{**p, "rank_after": None} for p in original["players"]],
        "original_outcome": original["outcome"],
        "original_reason": original["reason"],
    }


def dead_lettered(
    event_id: str | None,
    ladder: str | None,
    event_type: str | None,
    reason: str,
    detail: str,
    processed_at: datetime,
) -> Receipt:
    """A dead letter's receipt: ``event_id``, ``ladder`` and ``type`` as far as they could be
    read from the event."""
    return {
        "event_id": event_id,
        "ladder": ladder,
        "type": event_type,
        "outcome": "dead_lettered",
        "reason": reason,
        "detail": detail,
        "ruleset_version": None,
        "processed_at": processed_at.isoformat(),
        "players": [],
    }


def voided(
    event_id: str, ladder: str, event_type: str, ruleset_version: str | None, processed_at: datetime
) -> Receipt:
    """The receipt of a game a void took back: as if it had never been played, nothing moved."""
    return {
        "event_id": event_id,
        "ladder": ladder,
        "type": event_type,
        "outcome": "voided",
        "reason": None,
        "ruleset_version": ruleset_version,
        "processed_at": processed_at.isoformat(),
        "players": [],
    }


def from_rows(event: Any, changes: Sequence[Any]) -> Receipt:
    """A receipt from the audit store: the ``events`` row and its ``rating_changes`` rows in
    ledger order, each row's columns read as attributes (``rank_after`` is not stored: it is
    the board's, read when written)."""
    processed_at = event.processed_at
    return {
        "event_id": event.event_id,
        "ladder": event.ladder,
        "type": event.type,
        "outcome": event.outcome,
        "reason": event.reason,
        "ruleset_version": event.ruleset_version,
        "processed_at": processed_at.isoformat()
        if isinstance(processed_at, datetime)
        else processed_at,
        "players": [
            _uncertain(
                {
                    "player_id": c.player_id,
                    "rating_before": c.rating_before,
                    "rating_after": c.rating_after,
                    "delta": c.delta,
                    "k": c.k,
                    "expected": c.expected,
                    "provisional": c.provisional,
                    "rank_after": None,
                    "games": c.games,
                },
                c.deviation,
                c.volatility,
            )
            for c in changes
        ],
    }


def moderated(stored: Receipt, outcome: ReceiptOutcome, reason: str | None) -> Receipt:
    """The receipt read from PostgreSQL with the outcome a void gave the event; a voided game
    moved nothing."""
    players = [] if outcome == "voided" else stored["players"]
    return {**stored, "outcome": outcome, "reason": reason, "players": players}


_SAME_PROCESSING = ("event_id", "ladder", "processed_at")


def same_processing(copy: Any, body: Mapping[str, Any]) -> bool:
    """Whether the decoded copy ``copy`` is the receipt of the same processing of the event as
    ``body``: not a duplicate's or a dead letter's, not another ladder's event of that id."""
    if not isinstance(copy, dict) or any(copy.get(k) != body[k] for k in _SAME_PROCESSING):
        return False
    return copy.get("outcome") not in (str(Outcome.DUPLICATE), str(Outcome.DEAD_LETTERED))


def with_ranks(stored: Receipt, copy: Mapping[str, Any] | None) -> Receipt:
    """The receipt read from PostgreSQL, with ``rank_after`` from the Redis copy while it is
    kept (ranks are the board's, not stored). A copy of another processing (a duplicate's,
    or an event of the same id on another ladder) lends nothing. A copy of the same processing
    with the same outcome whose numbers differ is one a void rewrote (``worker.ops.moderation``:
    the event as re-rated; the audit store keeps what it moved when scored, and the
    corrections): its players are the receipt's."""
    if copy is None or not same_processing(copy, stored):
        return stored
    theirs = copy.get("players")
    if not isinstance(theirs, list):
        return stored
    if (copy.get("outcome"), copy.get("reason")) == (stored["outcome"], stored["reason"]) and all(
        isinstance(p, dict) and _PLAYER_KEYS <= set(p) <= _PLAYER_FIELDS for p in theirs
    ):
        return {**stored, "players": [_ranked(p, p) for p in theirs]}
    if len(theirs) != len(stored["players"]):
        return stored
    players = []
    for mine, other in zip(stored["players"], theirs, strict=True):
        if not isinstance(other, dict) or other.get("player_id") != mine["player_id"]:
            return stored
        players.append(_ranked(mine, other))
    return {**stored, "players": players}


_PLAYER_FIELDS = frozenset(ReceiptPlayer.__annotations__)
_PLAYER_KEYS = ReceiptPlayer.__required_keys__  # every receipt's (deviation: some rulesets')


def _ranked(mine: ReceiptPlayer, other: Mapping[str, Any]) -> ReceiptPlayer:
    rank = other.get("rank_after")
    return {**mine, "rank_after": rank if isinstance(rank, int) else None}
