"""The receipt contract: what a game server reads back about one event it published.

Published as ``schemas/json/receipt.v1.json`` beside the event schemas. A receipt arrives on
the stream ``ladder:receipts`` (field ``receipt``), under ``ladder:receipt:<event_id>``, on
the wait list ``ladder:receipt-wait:<event_id>`` and from ``GET
/ladders/{ladder}/events/{event_id}``; the worker builds it (``schemas.receipt_bodies``).

Declared once, as ``TypedDict``s: the worker builds plain dicts of this shape (mypy checks
each builder's keys against it, with no validation per event), pydantic derives the JSON
Schema from it (``pydantic.TypeAdapter``), and FastAPI the response model.
"""

from typing import Annotated, Any, Final, Literal, NotRequired, get_args

from pydantic import ConfigDict, Field, with_config
from typing_extensions import TypedDict  # pydantic reads typing's only from Python 3.12

#: Every outcome a receipt can carry (the engine's ``Outcome`` values; a test pins them equal).
ReceiptOutcome = Literal[
    "rated", "unrated", "applied", "refused", "duplicate", "dead_lettered", "voided"
]
OUTCOMES: Final[tuple[ReceiptOutcome, ...]] = get_args(ReceiptOutcome)


def _absent_elsewhere(description: str) -> Any:
    """A key only some receipts have; the others leave it out, which a reader takes as null."""
    return Field(description=description, json_schema_extra={"default": None})


@with_config(ConfigDict(extra="forbid"))
class ReceiptPlayer(TypedDict):
    """One rating change the event made."""

    player_id: Annotated[
        str, Field(description="The player whose rating moved (after links resolve).")
    ]
    rating_before: float
    rating_after: float
    delta: Annotated[float, Field(description="rating_after - rating_before.")]
    k: Annotated[
        float | None, Field(description="K (gammon42, prostriker) or the fibs multiplier.")
    ]
    expected: Annotated[float | None, Field(description="The player's expected score, for a game.")]
    provisional: Annotated[bool | None, Field(description="Provisional right after this event.")]
    rank_after: Annotated[
        int | None,
        Field(
            description="Competition rank (1, 2, 2, 4) on the ladder's rating board right "
            "after the batch; null when not on the board, or when read from PostgreSQL once "
            "the Redis copy expired. A duplicate's is the original's rank_after (from the "
            "original's receipt kept under ladder:receipt:<event_id>), null once that copy "
            "expired: never the rank of when it was repeated."
        ),
    ]
    games: Annotated[
        int | None, Field(description="The player's rated games right after this event.")
    ]
    deviation: NotRequired[
        Annotated[
            float,
            _absent_elsewhere(
                "Right after this event, on a ladder whose ruleset keeps one: glicko2's "
                "rating deviation, openskill's sigma."
            ),
        ]
    ]
    volatility: NotRequired[
        Annotated[float, _absent_elsewhere("Right after this event, on a glicko2 ladder.")]
    ]


@with_config(ConfigDict(extra="forbid"))
class Receipt(TypedDict):
    """What one event did: outcome, reason, and every rating it moved."""

    event_id: Annotated[str | None, Field(description="As far as it could be read (dead letters).")]
    ladder: Annotated[str | None, Field(description="As far as it could be read (dead letters).")]
    type: str | None
    outcome: ReceiptOutcome
    reason: Annotated[
        str | None, Field(description="Why (unrated, refused, a variant, a dead letter).")
    ]
    ruleset_version: str | None
    processed_at: Annotated[str, Field(description="When the batch was processed (RFC 3339).")]
    players: Annotated[list[ReceiptPlayer], Field(description="Empty where nothing moved.")]
    detail: NotRequired[Annotated[str | None, _absent_elsewhere("A dead letter's explanation.")]]
    original_outcome: NotRequired[
        Annotated[
            ReceiptOutcome | None,
            _absent_elsewhere("A duplicate's: the outcome of the event it repeats."),
        ]
    ]
    original_reason: NotRequired[
        Annotated[str | None, _absent_elsewhere("A duplicate's: its reason.")]
    ]


DESCRIPTION = (
    "The receipt of one event: rated or not, applied, refused, duplicate (with the original's "
    "numbers) or dead-lettered (with reason and detail). Read it from the stream "
    "`ladder:receipts` (field `receipt`), `GET ladder:receipt:<event_id>`, "
    "`BLPOP ladder:receipt-wait:<event_id> <timeout>` or "
    "`GET /ladders/{ladder}/events/{event_id}`."
)

EXAMPLE: Final[Receipt] = {
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
