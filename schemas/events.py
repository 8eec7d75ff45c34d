"""Event contracts (SPEC section 3) as frozen pydantic models.

Field names are a public contract shared with game servers; do not rename them.
Unknown extra fields are ignored so servers can add their own; an unknown ``type`` is not.
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
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
# Ranges as the worker checks them: year 0001-9999, no leap second (Python's datetime has
# none), offsets up to 23:59.
RFC3339_PATTERN: Final[str] = (
    r"^(?!0000)[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])[Tt]"
    r"([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]+)?"
    r"([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$"
)
#: The earliest ``ended_at`` the worker can score: the 7-day window before it must still be a
#: date (the first representable instant is 0001-01-01T00:00:00Z).
EARLIEST_ENDED_AT: Final[datetime] = datetime.min.replace(tzinfo=UTC) + timedelta(days=7)
TIMESTAMP_RULE: Final[str] = (
    "In UTC no earlier than 0001-01-08T00:00:00Z (its 7-day window must be a date: "
    "0001-01-01T00:30:00+01:00 is refused) and no more than 5 minutes after the worker's clock."
)
_RFC3339 = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]+))?"
    r"(?:([Zz])|([+-])([0-9]{2}):([0-9]{2}))"
)
_NAIVE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?")
LADDER_PATTERN: Final[str] = r"^[A-Za-z0-9_.-]+$"

# Characters an identifier may not contain, because a person reading it could not tell two
# ids apart or would see the text around it change: control characters (Cc: U+0000-U+001F,
# U+007F-U+009F), lone surrogates (Cs), bidi controls (U+061C, U+200E-U+200F, U+202A-U+202E,
# U+2066-U+2069), line and paragraph separators (U+2028, U+2029) and the BOM (U+FEFF). One
# character class, written the same in Python and in the published JSON Schema pattern.
_FORBIDDEN_CLASS: Final[str] = (
    r"\u0000-\u001f\u007f-\u009f\ud800-\udfff\u061c\u200e\u200f\u202a-\u202e"
    r"\u2028\u2029\u2066-\u2069\ufeff"
)
# Characters that show nothing: whitespace and the zero-width ones. An id made only of these
# cannot be read (U+200B alone looks like an empty id).
_INVISIBLE_CLASS: Final[str] = (
    r"\u0009-\u000d\u0020\u0085\u00a0\u00ad\u1680\u180e\u2000-\u200d\u2028\u2029"
    r"\u202f\u205f\u2060\u3000\ufeff"
)
# JSON Schema (ECMA 262) rendering of the identifier rule: none of the forbidden characters,
# and neither the first nor the last one invisible ("p01 " would be a second player beside
# "p01"), which also makes at least one visible. NFC (below) cannot be said in a pattern:
# ``x-ladder-rule``.
IDENTIFIER_PATTERN: Final[str] = (
    f"^(?![{_INVISIBLE_CLASS}])(?![\\s\\S]*[{_INVISIBLE_CLASS}]$)[^{_FORBIDDEN_CLASS}]+$"
)
FORBIDDEN_CHARACTERS: Final = re.compile(f"[{_FORBIDDEN_CLASS}]")
_VISIBLE = re.compile(f"[^{_INVISIBLE_CLASS}]")
IDENTIFIER_RULE: Final[str] = (
    "Unicode NFC: an id that is not in normalisation form C is refused (café written with a "
    "combining accent would otherwise be a second player)."
)


def _check_identifier(value: str) -> str:
    if not _VISIBLE.search(value):
        raise ValueError("must not be blank or only invisible characters")
    if not (_VISIBLE.match(value[0]) and _VISIBLE.match(value[-1])):
        raise ValueError("must not begin or end with white space or an invisible character")
    if FORBIDDEN_CHARACTERS.search(value):
        raise ValueError(
            "must not contain control, bidi or separator characters, a BOM or lone surrogates"
        )
    if not unicodedata.is_normalized("NFC", value):
        raise ValueError("must be in Unicode normalisation form C (NFC)")
    return value


def is_ip_address(value: object) -> bool:
    """Whether ``value`` is what an ``ip`` field accepts: an IPv4 or IPv6 address as a string,
    exactly (no port, no spaces, no IPv6 zone id, which names an interface of the sender)."""
    if not isinstance(value, str) or not 0 < len(value) <= 128 or "%" in value:
        return False
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def _check_ip(value: str) -> str:
    # Never echo the value: raw addresses must not reach logs or the dead-letter queue.
    if not is_ip_address(value):
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
        utc = value.astimezone(UTC)
    except OverflowError:
        raise ValueError("is out of the representable range") from None
    if utc < EARLIEST_ENDED_AT:
        # The windows (7 days, 24 hours before ended_at) would leave the calendar.
        raise ValueError("must not be earlier than 0001-01-08T00:00:00Z")
    return utc


def _casual_is_boosted(value: object) -> object:
    return "boosted" if value == "casual" else value


Identifier = Annotated[
    StrictStr,
    Field(
        min_length=1,
        max_length=128,
        json_schema_extra={"pattern": IDENTIFIER_PATTERN, "x-ladder-rule": IDENTIFIER_RULE},
    ),
    AfterValidator(_check_identifier),
]
LadderName = Annotated[StrictStr, Field(min_length=1, max_length=64, pattern=LADDER_PATTERN)]
IpAddress = Annotated[
    StrictStr,
    Field(
        min_length=1,
        max_length=128,
        # An IPv6 zone id ("fe80::1%eth0") is not an ipv6 format, and the worker refuses it.
        json_schema_extra={"anyOf": [{"format": "ipv4"}, {"format": "ipv6"}]},
    ),
    AfterValidator(_check_ip),
]
Timestamp = Annotated[
    datetime,
    BeforeValidator(parse_timestamp),
    Field(json_schema_extra={"pattern": RFC3339_PATTERN, "x-ladder-rule": TIMESTAMP_RULE}),
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
