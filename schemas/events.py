"""Event contracts (SPEC section 3) as frozen pydantic models.

Field names are a public contract shared with game servers; do not rename them.
Unknown extra fields are ignored so servers can add their own; an unknown ``type`` is not.
"""

from __future__ import annotations

import ipaddress
import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Annotated, Any, Final, Literal, TypeAlias

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationInfo,
    field_validator,
)
from pydantic_core import PydanticCustomError

# --- field types -----------------------------------------------------------------------

#: The doubling-cube values a game may end at (SPEC 2.1).
CUBE_VALUES: Final[tuple[int, ...]] = (1, 2, 4, 8, 16, 32, 64)
#: ``mode`` values servers may send; ``casual`` is the old name of ``boosted``.
MODE_INPUTS: Final[tuple[str, ...]] = ("ranked", "boosted", "casual", "tournament")

# RFC 3339 ``date-time``: full date, "T", full time, fraction optional, offset REQUIRED.
RFC3339_PATTERN: Final[str] = (
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?"
    r"([Zz]|[+-][0-9]{2}:[0-9]{2})$"
)
_RFC3339 = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]+))?"
    r"(?:([Zz])|([+-])([0-9]{2}):([0-9]{2}))"
)
_NAIVE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?")
# JSON Schema (ECMA 262) rendering of the identifier rule: not blank, no control characters.
IDENTIFIER_PATTERN: Final[str] = r"^(?=[\s\S]*\S)[^\u0000-\u001f\u007f-\u009f]+$"
LADDER_PATTERN: Final[str] = r"^[A-Za-z0-9_.-]+$"

# Unicode categories Cc (control characters: U+0000-U+001F, U+007F-U+009F) and Cs (lone
# surrogates), as one character class: a regex search instead of a lookup per character.
FORBIDDEN_CHARACTERS: Final = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def _check_identifier(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    if FORBIDDEN_CHARACTERS.search(value):
        raise ValueError("must not contain control characters")
    return value


def _check_ip(value: str) -> str:
    # Never echo the value: raw addresses must not reach logs or the dead-letter queue.
    try:
        ipaddress.ip_address(value)
    except ValueError:
        raise ValueError("must be an IPv4 or IPv6 address") from None
    return value


def _check_cube(value: int) -> int:
    if value not in CUBE_VALUES:
        raise ValueError("must be one of 1, 2, 4, 8, 16, 32, 64")
    return value


def parse_timestamp(value: object) -> datetime:
    """Parse an RFC 3339 timestamp with a mandatory offset; return it in UTC.

    Aware ``datetime`` objects are accepted too (for code that builds models directly);
    naive ones are rejected. Fractions finer than a microsecond are truncated.
    """
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError("must include a UTC offset")
        return _to_utc(value)
    if not isinstance(value, str):
        raise ValueError("must be an RFC 3339 date-time string")
    match = _RFC3339.fullmatch(value)
    if match is None:
        if _NAIVE.fullmatch(value):
            raise ValueError("must include a UTC offset (e.g. 'Z' or '+01:00')")
        raise ValueError("must be an RFC 3339 date-time such as '2026-11-29T18:04:05Z'")
    year, month, day, hour, minute, second, fraction, zulu, sign, off_h, off_m = match.groups()
    micro = int((fraction or "").ljust(6, "0")[:6])
    try:
        if zulu:
            tz: timezone = UTC
        else:
            if int(off_h) > 23 or int(off_m) > 59:
                raise ValueError("has an out-of-range UTC offset")
            offset = timedelta(hours=int(off_h), minutes=int(off_m))
            tz = timezone(-offset if sign == "-" else offset)
        parsed = datetime(
            int(year), int(month), int(day), int(hour), int(minute), int(second), micro, tz
        )
    except ValueError as exc:
        raise ValueError(f"is not a valid date-time ({exc})") from None
    return _to_utc(parsed)


def _to_utc(value: datetime) -> datetime:
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValueError("is out of the representable range") from None


def _casual_is_boosted(value: object) -> object:
    return "boosted" if value == "casual" else value


Identifier = Annotated[
    StrictStr,
    Field(min_length=1, max_length=128, json_schema_extra={"pattern": IDENTIFIER_PATTERN}),
    AfterValidator(_check_identifier),
]
LadderName = Annotated[StrictStr, Field(min_length=1, max_length=64, pattern=LADDER_PATTERN)]
IpAddress = Annotated[
    StrictStr,
    Field(
        min_length=1,
        max_length=128,
        json_schema_extra={"anyOf": [{"format": "ipv4"}, {"format": "ipv6"}]},
    ),
    AfterValidator(_check_ip),
]
Timestamp = Annotated[
    datetime,
    BeforeValidator(parse_timestamp),
    Field(json_schema_extra={"pattern": RFC3339_PATTERN}),
]
Mode = Annotated[
    Literal["ranked", "boosted", "tournament"],
    BeforeValidator(_casual_is_boosted),
    Field(json_schema_extra={"enum": list(MODE_INPUTS)}),
]
Cube = Annotated[
    StrictInt,
    Field(json_schema_extra={"enum": list(CUBE_VALUES)}),
    AfterValidator(_check_cube),
]
MatchLength = Annotated[StrictInt, Field(ge=1, le=64)]
Result = Literal["single", "gammon", "backgammon"]
EndReason = Literal["normal", "resign", "leave", "disconnect", "timeout"]


# --- models ------------------------------------------------------------------------------


class _Contract(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", hide_input_in_errors=True)


class PlayerRef(_Contract):
    """One side of a finished game."""

    player_id: Identifier = Field(description="Account id or device-generated anonymous id.")
    is_bot: StrictBool = Field(default=False, description="True for a bot or the AI.")
    network: Identifier | None = Field(
        default=None,
        description="Opaque network token chosen by the server (e.g. keyed hash of the /24).",
    )
    # exclude/repr=False: a dump or repr of the model never carries the raw address.
    ip: IpAddress | None = Field(
        default=None,
        exclude=True,
        repr=False,
        description="Raw IP address; the worker hashes it and never stores it.",
    )


class GameFinished(_Contract):
    """A game ended (SPEC 3 `game.finished`)."""

    type: Literal["game.finished"]
    event_id: Identifier = Field(description="Unique per event; duplicates have no effect.")
    ladder: LadderName
    ended_at: Timestamp = Field(description="RFC 3339 with offset; normalised to UTC.")
    mode: Mode = Field(description="`casual` is accepted as the old name of `boosted`.")
    winner: PlayerRef
    loser: PlayerRef
    cube: Cube = 1
    match_length: MatchLength = 1
    result: Result = "single"
    end_reason: EndReason = "normal"
    tournament_id: Identifier | None = None

    @field_validator("loser")
    @classmethod
    def _not_self_play(cls, loser: PlayerRef, info: ValidationInfo) -> PlayerRef:
        winner = info.data.get("winner")
        if isinstance(winner, PlayerRef) and winner.player_id == loser.player_id:
            raise PydanticCustomError("self_play", "winner and loser are the same player")
        return loser


class TournamentFinished(_Contract):
    """A tournament ended (SPEC 3 `tournament.finished`); public ones pay podium prizes."""

    type: Literal["tournament.finished"]
    event_id: Identifier
    ladder: LadderName
    tournament_id: Identifier
    public: StrictBool
    podium: list[Identifier] = Field(
        min_length=1,
        max_length=3,
        json_schema_extra={"uniqueItems": True},
        description="Player ids: first, second, third (1 to 3 distinct entries).",
    )
    ended_at: Timestamp | None = None

    @field_validator("podium")
    @classmethod
    def _distinct(cls, podium: list[str]) -> list[str]:
        if len(set(podium)) != len(podium):
            raise ValueError("entries must be distinct players")
        return podium


class IdentityLinked(_Contract):
    """An anonymous id was linked to an account (SPEC 3 `identity.linked`)."""

    type: Literal["identity.linked"]
    event_id: Identifier
    ladder: LadderName
    anonymous_id: Identifier
    account_id: Identifier
    ended_at: Timestamp | None = None

    @field_validator("account_id")
    @classmethod
    def _distinct(cls, account_id: str, info: ValidationInfo) -> str:
        if info.data.get("anonymous_id") == account_id:
            raise ValueError("must differ from anonymous_id")
        return account_id


class PlayerUpdated(_Contract):
    """A player's profile flags changed (SPEC 3 `player.updated`)."""

    type: Literal["player.updated"]
    event_id: Identifier
    ladder: LadderName
    player_id: Identifier
    email_verified: StrictBool
    display_name_chosen: StrictBool
    ended_at: Timestamp | None = None


Event: TypeAlias = Annotated[
    GameFinished | TournamentFinished | IdentityLinked | PlayerUpdated,
    Field(discriminator="type"),
]
AnyEventModel: TypeAlias = (
    type[GameFinished] | type[TournamentFinished] | type[IdentityLinked] | type[PlayerUpdated]
)

#: ``type`` value → model, in publication order.
EVENT_MODELS: Final[dict[str, AnyEventModel]] = {
    "game.finished": GameFinished,
    "tournament.finished": TournamentFinished,
    "identity.linked": IdentityLinked,
    "player.updated": PlayerUpdated,
}

#: One valid example per type; ``game.finished`` is the SPEC 3 example verbatim.
EXAMPLES: Final[dict[str, dict[str, Any]]] = {
    "game.finished": {
        "type": "game.finished",
        "event_id": "g-000123",
        "ladder": "gammon42",
        "ended_at": "2026-11-29T18:04:05Z",
        "mode": "ranked",
        "winner": {"player_id": "alice", "is_bot": False, "network": "net-7f3a"},
        "loser": {"player_id": "bob", "ip": "203.0.113.9"},
        "cube": 4,
        "match_length": 1,
        "result": "gammon",
        "end_reason": "resign",
    },
    "tournament.finished": {
        "type": "tournament.finished",
        "event_id": "t-000042",
        "ladder": "gammon42",
        "tournament_id": "spring-cup-2026",
        "public": True,
        "podium": ["alice", "bob", "carol"],
    },
    "identity.linked": {
        "type": "identity.linked",
        "event_id": "l-000007",
        "ladder": "prostriker",
        "anonymous_id": "anon-3f9c2d",
        "account_id": "acct-1001",
    },
    "player.updated": {
        "type": "player.updated",
        "event_id": "p-000009",
        "ladder": "fibs",
        "player_id": "alice",
        "email_verified": True,
        "display_name_chosen": True,
    },
}
