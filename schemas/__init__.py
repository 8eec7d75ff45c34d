"""Event contracts for ladder: the event Structs, validation, reason codes and JSON Schema export.

The contracts (``events``, ``parse``, ``errors``, ``receipt``, ``export``, ``ids``, ``signing``)
import only the standard library, msgspec (the events) and pydantic (the receipt, with the
typing_extensions pydantic requires), so game servers can vendor them. Two modules map the
engine's values to and from them and import ``engine`` too: ``receipt_bodies`` (a receipt
built from the engine's decision) and ``records`` (the stored form of an event, and its engine
event).
"""

from schemas.errors import REASONS, InvalidEvent
from schemas.events import (
    CUBE_VALUES,
    EVENT_MODELS,
    EXAMPLES,
    Event,
    GameFinished,
    IdentityLinked,
    Instant,
    PlayerRef,
    PlayerUpdated,
    TournamentFinished,
)
from schemas.parse import DEFAULT_MAX_BYTES, DEFAULT_MAX_FUTURE, parse_event, redact

__all__ = [
    "CUBE_VALUES",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_FUTURE",
    "EVENT_MODELS",
    "EXAMPLES",
    "REASONS",
    "Event",
    "GameFinished",
    "Instant",
    "IdentityLinked",
    "InvalidEvent",
    "PlayerRef",
    "PlayerUpdated",
    "TournamentFinished",
    "parse_event",
    "redact",
]
