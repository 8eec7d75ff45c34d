"""The receipt contract: what a game server reads back about one event it published.

Published as ``schemas/json/receipt.v1.json`` beside the event schemas. A receipt arrives on
the stream ``ladder:receipts`` (field ``receipt``), under ``ladder:receipt:<event_id>``, on
the wait list ``ladder:receipt-wait:<event_id>`` and from ``GET
/ladders/{ladder}/events/{event_id}``; the worker builds it (``schemas.receipt_bodies``).
"""

from __future__ import annotations

from typing import Any, Final, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

#: Every outcome a receipt can carry (the engine's ``Outcome`` values; a test pins them equal).
ReceiptOutcome = Literal[
    "rated", "unrated", "applied", "refused", "duplicate", "dead_lettered", "voided"
]
OUTCOMES: Final[tuple[str, ...]] = get_args(ReceiptOutcome)


class ReceiptPlayer(BaseModel):
    """One rating change the event made."""

    model_config = ConfigDict(extra="forbid")

    player_id: str = Field(description="The player whose rating moved (after links resolve).")
    rating_before: float
    rating_after: float
    delta: float = Field(description="rating_after - rating_before.")
    k: float | None = Field(description="K (gammon42, prostriker) or the fibs multiplier.")
    expected: float | None = Field(description="The player's expected score, for a game.")
    provisional: bool | None = Field(description="Provisional right after this event.")
    rank_after: int | None = Field(
        description="Competition rank (1, 2, 2, 4) on the ladder's rating board right after "
        "the batch; null when not on the board, or when read from PostgreSQL once the Redis "
        "copy expired. A duplicate's is the original's rank_after (from the original's "
        "receipt kept under ladder:receipt:<event_id>), null once that copy expired: never "
        "the rank of when it was repeated."
    )
    games: int | None = Field(description="The player's rated games right after this event.")


class Receipt(BaseModel):
    """What one event did: outcome, reason, and every rating it moved."""

    model_config = ConfigDict(extra="forbid")

    event_id: str | None = Field(description="As far as it could be read (dead letters).")
    ladder: str | None = Field(description="As far as it could be read (dead letters).")
    type: str | None
    outcome: ReceiptOutcome
    reason: str | None = Field(description="Why (unrated, refused, a variant, a dead letter).")
    ruleset_version: str | None
    processed_at: str = Field(description="When the batch was processed (RFC 3339).")
    players: list[ReceiptPlayer] = Field(description="Empty where nothing moved.")
    detail: str | None = Field(default=None, description="A dead letter's explanation.")
    original_outcome: ReceiptOutcome | None = Field(
        default=None, description="A duplicate's: the outcome of the event it repeats."
    )
    original_reason: str | None = Field(default=None, description="A duplicate's: its reason.")


DESCRIPTION = (
    "The receipt of one event: rated or not, applied, refused, duplicate (with the original's "
    "numbers) or dead-lettered (with reason and detail). Read it from the stream "
    "`ladder:receipts` (field `receipt`), `GET ladder:receipt:<event_id>`, "
    "`BLPOP ladder:receipt-wait:<event_id> <timeout>` or "
    "`GET /ladders/{ladder}/events/{event_id}`."
)

EXAMPLE: Final[dict[str, Any]] = {
    "event_id": "g-000123",
    "ladder": "gammon42",
    "type": "game.finished",
    "outcome": "rated",
    "reason": None,
    "ruleset_version": "1.3.1",
    "processed_at": "2026-11-29T18:04:05.120000+00:00",
    "players": [
        {
            "player_id": "alice",
            "rating_before": 1500.0,
            "rating_after": 1521.0,
            "delta": 21.0,
            "k": 32.0,
            "expected": 0.5,
            "provisional": False,
            "rank_after": 1,
            "games": 1,
        },
        {
            "player_id": "bob",
            "rating_before": 1500.0,
            "rating_after": 1479.0,
            "delta": -21.0,
            "k": 32.0,
            "expected": 0.5,
            "provisional": False,
            "rank_after": 2,
            "games": 1,
        },
    ],
}
