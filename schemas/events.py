"""Event contracts (SPEC section 3) as frozen msgspec Structs: the one definition of an event.

Decoding a payload into these Structs checks it: msgspec checks the JSON types, the
enumerations, the lengths and ranges (``Meta``) and fills in the defaults; each Struct's
``__post_init__`` checks the rules that are not types (identifiers, the ladder name, the ip,
self play, a distinct podium and link), and ``ended_at`` is read by :func:`parse_timestamp`.
:func:`schemas.parse_event` decodes with them and names what is wrong with a refused payload;
``python -m schemas.export`` writes the JSON Schema files from them, and each Struct's
``stored()`` (the form an audit row keeps) is written from its fields.

Field names are a public contract shared with game servers; do not rename them.
Unknown extra fields are ignored so servers can add their own; an unknown ``type`` is not.
"""

from __future__ import annotations

import functools
import ipaddress
import re
import unicodedata
from collections.abc import Callable, Collection
from datetime import UTC, datetime, timedelta, timezone
from types import NoneType, UnionType
from typing import (
    Annotated,
    Any,
    Final,
    Literal,
    NamedTuple,
    TypeAlias,
    Union,
    get_args,
    get_origin,
)

import msgspec
from msgspec.structs import force_setattr

# --- the rules -------------------------------------------------------------------------

_CUBES: TypeAlias = Literal[1, 2, 4, 8, 16, 32, 64]
_MODES: TypeAlias = Literal["ranked", "boosted", "casual", "tournament"]
_RESULTS: TypeAlias = Literal["single", "gammon", "backgammon", "draw"]
_END_REASONS: TypeAlias = Literal["normal", "resign", "leave", "disconnect", "timeout"]
#: The doubling-cube values a game may end at (SPEC 2.1).
CUBE_VALUES: Final[tuple[int, ...]] = get_args(_CUBES)
#: ``mode`` values servers may send; ``casual`` is the old name of ``boosted``.
MODE_INPUTS: Final[tuple[str, ...]] = get_args(_MODES)

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
_LADDER: Final = re.compile(r"[A-Za-z0-9_.-]+")


def _format_characters() -> str:
    """Every format character (Unicode category Cf) of the Basic Multilingual Plane as
    character-class ranges (``\\u200b-\\u200f``...), from the running Python's Unicode data:
    zero-width spaces and joiners, bidi controls, the soft hyphen, the BOM and the like."""
    found = [c for c in range(0x10000) if unicodedata.category(chr(c)) == "Cf"]
    ranges: list[tuple[int, int]] = []
    for code in found:
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1] = (ranges[-1][0], code)
        else:
            ranges.append((code, code))
    return "".join(f"\\u{a:04x}" if a == b else f"\\u{a:04x}-\\u{b:04x}" for a, b in ranges)


# Characters an identifier may not contain, because a person reading it could not tell two
# ids apart or would see the text around it change: control characters (Cc: U+0000-U+001F,
# U+007F-U+009F), lone surrogates (Cs), format characters (Cf: zero-width spaces and joiners,
# bidi controls, the soft hyphen, the BOM...; "h-al\u200bice" would be a second "h-alice"),
# line and paragraph separators (U+2028, U+2029). One character class, written the same in
# Python and in the published JSON Schema pattern. The format characters beyond the Basic
# Multilingual Plane are in it as the characters themselves (``ASTRAL_FORMAT_CHARACTERS``):
# one code point each to Python and to an ECMA 262 pattern with the ``u`` flag (ajv's
# default); read without it, each is a surrogate pair, which the class refuses already.
ASTRAL_FORMAT_CHARACTERS: Final[tuple[tuple[int, int], ...]] = (
    (0x110BD, 0x110BD), (0x110CD, 0x110CD), (0x13430, 0x13438), (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A), (0xE0001, 0xE0001), (0xE0020, 0xE007F),
)  # fmt: skip  # Python's unicodedata beyond U+FFFF (a test compares them); not scanned here
_FORBIDDEN_CLASS: Final[str] = (
    r"\u0000-\u001f\u007f-\u009f\ud800-\udfff\u2028\u2029"
    + _format_characters()
    + "".join(chr(a) if a == b else f"{chr(a)}-{chr(b)}" for a, b in ASTRAL_FORMAT_CHARACTERS)
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


def check_identifier(value: str) -> str:
    """``value`` if it is an identifier (1-128 characters, none forbidden, visible at both
    ends, NFC); else ValueError saying what is wrong. Printable ASCII without a space at either
    end is all of that, and is checked in C."""
    if not 0 < len(value) <= 128:
        raise ValueError("must be 1 to 128 characters long")
    if value.isascii() and value.isprintable() and value[0] != " " and value[-1] != " ":
        return value
    if not _VISIBLE.search(value):
        raise ValueError("must not be blank or only invisible characters")
    if not (_VISIBLE.match(value[0]) and _VISIBLE.match(value[-1])):
        raise ValueError("must not begin or end with white space or an invisible character")
    if FORBIDDEN_CHARACTERS.search(value) or any(unicodedata.category(c) == "Cf" for c in value):
        raise ValueError(
            "must not contain control, format (zero-width, bidi, BOM...) or separator "
            "characters or lone surrogates"
        )
    if not unicodedata.is_normalized("NFC", value):
        raise ValueError("must be in Unicode normalisation form C (NFC)")
    return value


# A dotted-quad IPv4 address exactly as ``ipaddress`` takes one (four decimal octets of 0-255,
# no leading zero): most addresses sent, checked without building an address object. The
# contracts import nothing of the engine, whose ``engine.network.IPV4`` reads the same
# addresses (tests/unit/test_fairplay.py holds both to ``ipaddress``).
_OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])"
_IPV4: Final = re.compile(rf"{_OCTET}\.{_OCTET}\.{_OCTET}\.{_OCTET}")


def is_ip_address(value: object) -> bool:
    """Whether ``value`` is what an ``ip`` field accepts: an IPv4 or IPv6 address as a string,
    exactly (no port, no spaces, no IPv6 zone id, which names an interface of the sender)."""
    if not isinstance(value, str) or not 0 < len(value) <= 128 or "%" in value:
        return False
    if _IPV4.fullmatch(value):  # the common case, without building an address
        return True
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


class Instant(datetime):
    """A moment in UTC, decoded from RFC 3339 text by :func:`parse_timestamp` (the type of
    ``ended_at``: msgspec hands the JSON value to :func:`decode_hook`)."""


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
        parsed = Instant(
            int(year), int(month), int(day), int(hour), int(minute), int(second), micro, tz
        )
    except ValueError as exc:
        raise ValueError(f"is not a valid date-time ({exc})") from None
    return _to_utc(parsed)


def _to_utc(value: datetime) -> datetime:
    try:
        utc = value if value.tzinfo is UTC else value.astimezone(UTC)
    except OverflowError:
        raise ValueError("is out of the representable range") from None
    if utc < EARLIEST_ENDED_AT:
        # The windows (7 days, 24 hours before ended_at) would leave the calendar.
        raise ValueError("must not be earlier than 0001-01-08T00:00:00Z")
    return utc


def decode_hook(kind: type, value: Any) -> Any:
    """msgspec's ``dec_hook``: an :class:`Instant` from its JSON value."""
    if kind is Instant:
        return parse_timestamp(value)  # an Instant, from JSON's text
    raise NotImplementedError(f"no decoding for {kind!r}")


def schema_hook(kind: type) -> dict[str, Any]:
    """msgspec's ``schema_hook``: what JSON Schema says of an :class:`Instant`."""
    if kind is Instant:
        return {
            "type": "string",
            "format": "date-time",
            "pattern": RFC3339_PATTERN,
            "x-ladder-rule": TIMESTAMP_RULE,
        }
    raise NotImplementedError(f"no schema for {kind!r}")


# --- field types ---------------------------------------------------------------------------

Identifier = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=128,
        extra_json_schema={"pattern": IDENTIFIER_PATTERN, "x-ladder-rule": IDENTIFIER_RULE},
    ),
]
LadderName = Annotated[
    str, msgspec.Meta(min_length=1, max_length=64, extra_json_schema={"pattern": LADDER_PATTERN})
]
# An IPv6 zone id ("fe80::1%eth0") is not an ipv6 format, and the worker refuses it.
IpAddress = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=128,
        extra_json_schema={"anyOf": [{"format": "ipv4"}, {"format": "ipv6"}]},
    ),
]


_STRING: Final = msgspec.Meta(extra_json_schema={"type": "string"})
Mode = Annotated[_MODES, _STRING]
Cube = Annotated[_CUBES, msgspec.Meta(extra_json_schema={"type": "integer"})]
MatchLength = Annotated[int, msgspec.Meta(ge=1, le=64)]
Result = Annotated[_RESULTS, _STRING]
EndReason = Annotated[_END_REASONS, _STRING]
Rank = Annotated[
    int,
    msgspec.Meta(
        ge=1,
        le=1000,
        description="Finishing place: 1 is first, lower is better; equal ranks tie.",
    ),
]
Weight = Annotated[
    float,
    msgspec.Meta(
        gt=0,
        le=1,
        description="The share of the game the player played (partial play): 0 < weight <= 1.",
    ),
]

#: The detail of a game whose winner is its loser (the reason ``self_play``).
SELF_PLAY: Final[str] = "winner and loser are the same player"
#: How the detail of a player sent twice in one game ends (the reason ``self_play``).
ALREADY_IN_GAME: Final[str] = "is already in this game"
#: The most players a team game may have, all teams together.
MAX_GAME_PLAYERS: Final[int] = 100


def _id(name: str, value: str) -> None:
    """Check an identifier; the ValueError names the field (``name: what``)."""
    if (
        0 < len(value) <= 128
        and value.isascii()
        and value.isprintable()
        and value[0] != " "
        and value[-1] != " "
    ):
        return
    try:
        check_identifier(value)
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None


# --- the stored form -----------------------------------------------------------------------

#: ``Meta.extra`` of a field that is never stored (the raw ``ip``).
NEVER_STORED: Final[dict[str, Any]] = {"stored": False}


class _Stored(msgspec.Struct, frozen=True):
    def stored(self) -> dict[str, Any]:
        """The Struct as it is stored: its fields in their order (an event's ``type`` first),
        a moment as UTC text, a nested Struct as its own stored form, a list copied (a list of
        Structs as a list of their stored forms); a field that is None left out, and a
        ``NEVER_STORED`` one never there. Written for each Struct from its fields by
        :func:`_stored_method` (below)."""
        raise NotImplementedError


def _stored_method(model: type[_Stored]) -> Callable[..., dict[str, Any]]:
    """``model.stored`` written out as straight-line code from the model's fields, as
    ``dataclasses`` writes an ``__init__``: it runs once per event on the worker's hot path,
    where a loop that read each field's rule on every call would be the slow step."""
    tag = model.__struct_config__.tag
    entries = [] if tag is None else [f"'type': {tag!r}"]
    statements = []
    for field in struct_fields(model):
        kind, metadata = bare_type(field.type)
        if any(isinstance(m, msgspec.Meta) and m.extra == NEVER_STORED for m in metadata):
            continue
        value = f"self.{field.name}"
        if kind is Instant:
            value = f"_utc_text({value})"
        elif isinstance(kind, type) and issubclass(kind, _Stored):
            value = f"{value}.stored()"
        elif get_origin(kind) is list:
            item = bare_type(get_args(kind)[0])[0]
            if isinstance(item, type) and issubclass(item, _Stored):
                value = f"[item.stored() for item in {value}]"
            else:
                value = f"list({value})"
        if field.default is None:
            statements.append(f"if self.{field.name} is not None: out[{field.name!r}] = {value}")
        elif statements:  # after a field that may be left out, the order needs a statement
            statements.append(f"out[{field.name!r}] = {value}")
        else:
            entries.append(f"{field.name!r}: {value}")
    lines = ["def stored(self):", f"out = {{{', '.join(entries)}}}", *statements, "return out"]
    namespace: dict[str, Any] = {"_utc_text": _utc_text}
    exec(compile("\n    ".join(lines), f"<{model.__name__}.stored>", "exec"), namespace)
    method: Callable[..., dict[str, Any]] = namespace["stored"]
    return method


def bare_type(kind: Any) -> tuple[Any, list[Any]]:
    """A field's type without ``Annotated`` and ``None``, and the metadata it is annotated
    with."""
    metadata: list[Any] = []
    while True:
        if get_origin(kind) is Annotated:
            kind, *more = get_args(kind)
            metadata += more
        elif get_origin(kind) in (Union, UnionType) and NoneType in get_args(kind):
            (kind,) = (arg for arg in get_args(kind) if arg is not NoneType)
        else:
            return kind, metadata


def _utc_text(at: datetime) -> str:
    """A UTC moment as it is stored (``Z``, microseconds when there are)."""
    return at.isoformat().replace("+00:00", "Z")


# --- the events ----------------------------------------------------------------------------


class PlayerRef(_Stored, frozen=True):
    """A player of a finished game: a side of a 1v1 win or one of a draw's two players."""

    player_id: Annotated[
        Identifier, msgspec.Meta(description="Account id or device-generated anonymous id.")
    ]
    is_bot: Annotated[bool, msgspec.Meta(description="True for a bot or the AI.")] = False
    network: Annotated[
        Identifier | None,
        msgspec.Meta(
            description="Opaque network token chosen by the server (e.g. keyed hash of the /24)."
        ),
    ] = None
    ip: Annotated[
        IpAddress | None,
        msgspec.Meta(
            description="Raw IP address; the worker hashes it and never stores it.",
            extra=NEVER_STORED,
        ),
    ] = None

    def __post_init__(self) -> None:
        _id("player_id", self.player_id)
        if self.network is not None:
            _id("network", self.network)
        # Never echo the value: raw addresses must not reach logs or the dead-letter queue.
        if self.ip is not None and not is_ip_address(self.ip):
            raise ValueError("ip: must be an IPv4 or IPv6 address")

    def __repr__(self) -> str:  # never the raw address
        shown = f"player_id={self.player_id!r}, is_bot={self.is_bot!r}, network={self.network!r}"
        return f"PlayerRef({shown})"


class TeamPlayer(PlayerRef, frozen=True):
    """A player of a team or free-for-all game, and the share of the game they played."""

    weight: Weight = 1.0

    def __repr__(self) -> str:  # never the raw address
        shown = (
            f"player_id={self.player_id!r}, is_bot={self.is_bot!r}, network={self.network!r}, "
            f"weight={self.weight!r}"
        )
        return f"TeamPlayer({shown})"


class Team(_Stored, frozen=True):
    """One team of a team game: its rank and players (a free-for-all player is a team of one)."""

    rank: Rank
    players: Annotated[
        list[TeamPlayer], msgspec.Meta(min_length=1, max_length=64, description="1 to 64 players.")
    ]


class Shape(NamedTuple):
    """One shape of a ``game.finished``: the fields it sends (no other shape's), the
    ``result`` values it takes, and the detail of any other ``result``."""

    name: str
    fields: tuple[str, ...]
    results: tuple[str, ...]
    other_result: str


#: A game is exactly one of these: a 1v1 win, a 1v1 draw, a team or free-for-all game.
GAME_SHAPES: Final[tuple[Shape, ...]] = (
    Shape(
        "win",
        ("winner", "loser"),
        ("single", "gammon", "backgammon"),
        "a draw has no winner: send players",
    ),
    Shape("draw", ("players",), ("draw",), "must be 'draw' with players"),
    Shape(
        "teams",
        ("teams",),
        ("single",),
        "a team game has no result (equal ranks tie): leave it out",
    ),
)
_WIN: Final = GAME_SHAPES[0]
#: The fields that say a game's shape. Each is an object or an array when sent: never null.
SHAPE_FIELDS: Final[tuple[str, ...]] = tuple(f for shape in GAME_SHAPES for f in shape.fields)
#: ``result`` when a game leaves it out.
DEFAULT_RESULT: Final = "single"
_SHAPES_SAID: Final = "a game is a 1v1 win (winner, loser), a draw (players) or a team game (teams)"


def shapes_sent(sent: Collection[str]) -> list[Shape]:
    """The shapes a game sends a field of, given the names of the fields it sent."""
    return [shape for shape in GAME_SHAPES if any(name in sent for name in shape.fields)]


def shape_missing(sent: Collection[str], result: object) -> str | None:
    """What a ``game.finished`` lacks for its shape, as a ``missing_field`` detail, given the
    names of the shape fields and ``result`` it ``sent`` and its ``result``; None when its
    shape is whole, or when it mixes shapes (refused as such)."""
    touched = shapes_sent(sent)
    if not touched:
        if result == "draw":
            return "players: field required (a draw names its two players)"
        return "winner: field required (a draw sends players, a team game teams)"
    if len(touched) > 1:
        return None
    (shape,) = touched
    for name in shape.fields:
        if name not in sent:
            return f"{name}: field required"
    if "result" not in sent and DEFAULT_RESULT not in shape.results:
        return 'result: field required (a draw sends "result": "draw")'
    return None


class _Event(_Stored, frozen=True, tag_field="type"):
    event_id: Annotated[
        Identifier, msgspec.Meta(description="Unique per event; duplicates have no effect.")
    ]
    ladder: LadderName

    def _check(self) -> None:
        _id("event_id", self.event_id)
        if _LADDER.fullmatch(self.ladder) is None:
            raise ValueError(f"ladder: must match the pattern {LADDER_PATTERN}")

    @property
    def type(self) -> str:
        """The event's ``type`` (its tag)."""
        tag: str = self.__struct_config__.tag  # type: ignore[assignment]
        return tag


class GameFinished(_Event, frozen=True, tag="game.finished"):
    """A game ended (SPEC 3 `game.finished`, SPEC 7 shapes), in one of three shapes
    (:data:`GAME_SHAPES`): a 1v1 win (``winner``, ``loser``), a 1v1 draw (``players``, with
    ``result`` ``draw``) or a team / free-for-all game (``teams``, each with its ``rank``).
    The fields of the other shapes are None. No player is in a game twice (``self_play``).

    A shape field sent as null is refused by :func:`schemas.parse_event` (it is no shape); a
    Struct built in Python cannot tell null from left out."""

    ended_at: Annotated[
        Instant, msgspec.Meta(description="RFC 3339 with offset; normalised to UTC.")
    ]
    mode: Annotated[
        Mode, msgspec.Meta(description="`casual` is accepted as the old name of `boosted`.")
    ]
    winner: PlayerRef | None = None
    loser: PlayerRef | None = None
    cube: Cube = 1
    match_length: MatchLength = 1
    result: Result = DEFAULT_RESULT
    end_reason: EndReason = "normal"
    tournament_id: Identifier | None = None
    players: (
        Annotated[
            list[PlayerRef],
            msgspec.Meta(
                min_length=2,
                max_length=2,
                description="A 1v1 draw's two players (with `result` `draw`).",
            ),
        ]
        | None
    ) = None
    teams: (
        Annotated[
            list[Team],
            msgspec.Meta(
                min_length=2,
                max_length=64,
                description="A team or free-for-all game's 2 to 64 teams, each with its rank.",
            ),
        ]
        | None
    ) = None

    def __post_init__(self) -> None:
        self._check()
        if self.tournament_id is not None:
            _id("tournament_id", self.tournament_id)
        if self.mode == "casual":
            force_setattr(self, "mode", "boosted")
        self._check_shape()

    def _check_shape(self) -> None:
        """One shape, whole, with a result it takes; no player twice (``self_play``)."""
        winner, loser = self.winner, self.loser
        if winner is not None and loser is not None and self.players is None and self.teams is None:
            shape = _WIN  # most games: told at once, on the worker's hot path
        else:
            shape = self._whole_shape()
        if self.result not in shape.results:
            raise ValueError(f"result: {shape.other_result}")
        if winner is not None and loser is not None:
            if winner.player_id == loser.player_id:
                raise ValueError(f"loser: {SELF_PLAY}")
            return
        placed = self._placed()
        if len(placed) > MAX_GAME_PLAYERS:
            raise ValueError(f"teams: at most {MAX_GAME_PLAYERS} players in all, not {len(placed)}")
        seen: set[str] = set()
        for path, ref in placed:
            if ref.player_id in seen:
                raise ValueError(f"{path}: player {ref.player_id!r} {ALREADY_IN_GAME}")
            seen.add(ref.player_id)

    def _whole_shape(self) -> Shape:
        """The game's shape; ValueError when it is not whole or is two."""
        sent = [name for name in SHAPE_FIELDS if getattr(self, name) is not None]
        missing = shape_missing([*sent, "result"], self.result)
        if missing is not None:
            raise ValueError(missing)
        first, *others = shapes_sent(sent)
        if others:
            raise ValueError(
                f"{others[0].fields[0]}: not with {'/'.join(first.fields)}: {_SHAPES_SAID}"
            )
        return first

    @property
    def shape(self) -> str:
        """The game's shape: ``win``, ``draw`` or ``teams`` (:data:`GAME_SHAPES`)."""
        if self.winner is not None:
            return _WIN.name
        return "draw" if self.players is not None else "teams"

    def _placed(self) -> list[tuple[str, PlayerRef]]:
        """Each player of a draw or a team game, with its path in the payload."""
        if self.players is not None:
            return [(f"players[{i}]", ref) for i, ref in enumerate(self.players)]
        return [
            (f"teams[{t}].players[{p}]", ref)
            for t, team in enumerate(self.teams or ())
            for p, ref in enumerate(team.players)
        ]


class TournamentFinished(_Event, frozen=True, tag="tournament.finished"):
    """A tournament ended (SPEC 3 `tournament.finished`); public ones pay podium prizes."""

    tournament_id: Identifier
    public: bool
    podium: Annotated[
        list[Identifier],
        msgspec.Meta(
            min_length=1,
            max_length=3,
            extra_json_schema={"uniqueItems": True},
            description="Player ids: first, second, third (1 to 3 distinct entries).",
        ),
    ]
    ended_at: Instant | None = None

    def __post_init__(self) -> None:
        self._check()
        _id("tournament_id", self.tournament_id)
        for i, player_id in enumerate(self.podium):
            _id(f"podium[{i}]", player_id)
        if len(set(self.podium)) != len(self.podium):
            raise ValueError("podium: entries must be distinct players")


class IdentityLinked(_Event, frozen=True, tag="identity.linked"):
    """An anonymous id was linked to an account (SPEC 3 `identity.linked`)."""

    anonymous_id: Identifier
    account_id: Identifier
    ended_at: Instant | None = None

    def __post_init__(self) -> None:
        self._check()
        _id("anonymous_id", self.anonymous_id)
        _id("account_id", self.account_id)
        if self.anonymous_id == self.account_id:
            raise ValueError("account_id: must differ from anonymous_id")


class PlayerUpdated(_Event, frozen=True, tag="player.updated"):
    """A player's profile flags changed (SPEC 3 `player.updated`)."""

    player_id: Identifier
    email_verified: bool
    display_name_chosen: bool
    ended_at: Instant | None = None

    def __post_init__(self) -> None:
        self._check()
        _id("player_id", self.player_id)


Event: TypeAlias = GameFinished | TournamentFinished | IdentityLinked | PlayerUpdated
AnyEventModel: TypeAlias = (
    type[GameFinished] | type[TournamentFinished] | type[IdentityLinked] | type[PlayerUpdated]
)


@functools.cache
def struct_fields(model: type[msgspec.Struct]) -> tuple[msgspec.structs.FieldInfo, ...]:
    """A Struct's fields, worked out once: ``msgspec.structs.fields`` evaluates the class's
    annotations on every call, and an invalid event is walked field by field."""
    return msgspec.structs.fields(model)


def enumeration(model: type[msgspec.Struct], name: str) -> tuple[Any, ...] | None:
    """The values a field of ``model`` is limited to, in the order its ``Literal`` lists
    them; None for a field that is not an enumeration."""
    for field in struct_fields(model):
        if field.name == name:
            kind, _ = bare_type(field.type)
            return get_args(kind) if get_origin(kind) is Literal else None
    return None


#: ``type`` value → Struct, in publication order.
EVENT_MODELS: Final[dict[str, AnyEventModel]] = {
    model.__struct_config__.tag: model for model in get_args(Event)
}
for _model in (PlayerRef, TeamPlayer, Team, *EVENT_MODELS.values()):
    _model.stored = _stored_method(_model)  # type: ignore[method-assign]

#: One valid example per type, keyed by the type; ``game.finished`` is the SPEC 3 example
#: verbatim. ``<type>/<what>`` keys are more examples of a type: a game's other shapes.
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
    "game.finished/draw": {
        "type": "game.finished",
        "event_id": "g-000124",
        "ladder": "chess-club",
        "ended_at": "2026-11-29T17:42:00Z",
        "mode": "ranked",
        "result": "draw",
        "players": [{"player_id": "alice", "network": "net-7f3a"}, {"player_id": "bob"}],
    },
    "game.finished/teams": {
        "type": "game.finished",
        "event_id": "g-000125",
        "ladder": "arena",
        "ended_at": "2026-11-29T17:51:30Z",
        "mode": "ranked",
        "teams": [
            {"rank": 1, "players": [{"player_id": "alice"}, {"player_id": "bob", "weight": 0.5}]},
            {
                "rank": 2,
                "players": [
                    {"player_id": "carol", "network": "net-7f3a"},
                    {"player_id": "dave", "ip": "203.0.113.9"},
                ],
            },
        ],
    },
    "game.finished/free-for-all": {
        "type": "game.finished",
        "event_id": "g-000126",
        "ladder": "arena",
        "ended_at": "2026-11-29T17:58:10Z",
        "mode": "ranked",
        "end_reason": "leave",
        "teams": [
            {"rank": 1, "players": [{"player_id": "erin"}]},
            {"rank": 2, "players": [{"player_id": "frank"}]},
            {"rank": 2, "players": [{"player_id": "grace", "is_bot": True}]},
            {"rank": 4, "players": [{"player_id": "heidi", "weight": 0.75}]},
        ],
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
