"""Events decoded on the worker's hot path: frozen msgspec Structs, checked by the rules of
the models in :mod:`schemas.events`.

The pydantic models in :mod:`schemas.events` are the contract: the JSON Schema files are
generated from them, and :func:`schemas.parse_event` names what is wrong with a payload.
Building one of them costs several times what decoding the same payload into a Struct does,
so the worker decodes with :func:`decode_event`: msgspec turns the text into a Struct,
checking the types, the enumerations and the defaults, and each Struct checks the rules that
are not types (identifiers, the ladder name, the cube, self play, distinct podium and link,
the timestamp) with the same functions the models use. A payload the Structs refuse is handed
to :func:`schemas.parse_event`, so a refusal carries exactly the reason and detail it always
did; tests hold the two to agree (every payload accepted here is accepted there with the same
stored form).

Needs msgspec besides the standard library and pydantic.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any, Final, Literal, TypeAlias

import msgspec

from schemas.errors import InvalidEvent
from schemas.events import (
    CUBE_VALUES,
    EVENT_MODELS,
    _check_identifier,
    is_ip_address,
    parse_timestamp,
)
from schemas.parse import DEFAULT_MAX_BYTES, DEFAULT_MAX_FUTURE, parse_event

_LADDER: Final = re.compile(r"[A-Za-z0-9_.-]{1,64}")
# Every JSON string, escapes and all: what is left of valid JSON is its structure, where each
# colon follows a key.
_STRINGS: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
# With more objects and arrays than this (so possibly deeper), a payload is left to the
# models' decoder, whose depth limit decides.
_MAX_CONTAINERS: Final = 32


def _identifier(value: str) -> None:
    """The rule of ``schemas.events.Identifier``: 1-128 characters, no forbidden character,
    no invisible first or last one, NFC. Printable ASCII without a space at either end is
    all of that; anything else is checked by the models' own function."""
    if not 0 < len(value) <= 128:
        raise ValueError("identifier length")
    if value.isascii() and value.isprintable() and value[0] != " " and value[-1] != " ":
        return
    _check_identifier(value)


class Side(msgspec.Struct, frozen=True):
    """One side of a finished game (``schemas.events.PlayerRef``)."""

    player_id: str
    is_bot: bool = False
    network: str | None = None
    ip: str | None = None

    def __post_init__(self) -> None:
        _identifier(self.player_id)
        if self.network is not None:
            _identifier(self.network)
        if self.ip is not None and not is_ip_address(self.ip):
            raise ValueError("ip")

    def stored(self) -> dict[str, Any]:
        out: dict[str, Any] = {"player_id": self.player_id, "is_bot": self.is_bot}
        if self.network is not None:
            out["network"] = self.network
        return out


class _Wire(msgspec.Struct, frozen=True, tag_field="type"):
    event_id: str
    ladder: str

    def _check(self) -> None:
        _identifier(self.event_id)
        if _LADDER.fullmatch(self.ladder) is None:
            raise ValueError("ladder")


class GameFinished(_Wire, frozen=True, tag="game.finished"):
    ended_at: str
    mode: Literal["ranked", "boosted", "casual", "tournament"]
    winner: Side
    loser: Side
    cube: int = 1
    match_length: int = 1
    result: Literal["single", "gammon", "backgammon"] = "single"
    end_reason: Literal["normal", "resign", "leave", "disconnect", "timeout"] = "normal"
    tournament_id: str | None = None

    def __post_init__(self) -> None:
        self._check()
        if self.cube not in CUBE_VALUES or not 1 <= self.match_length <= 64:
            raise ValueError("cube or match_length")
        if self.tournament_id is not None:
            _identifier(self.tournament_id)
        if self.winner.player_id == self.loser.player_id:
            raise ValueError("self play")

    def stored(self, ended_at: str | None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": "game.finished",
            "event_id": self.event_id,
            "ladder": self.ladder,
            "ended_at": ended_at,
            "mode": "boosted" if self.mode == "casual" else self.mode,
            "winner": self.winner.stored(),
            "loser": self.loser.stored(),
            "cube": self.cube,
            "match_length": self.match_length,
            "result": self.result,
            "end_reason": self.end_reason,
        }
        if self.tournament_id is not None:
            out["tournament_id"] = self.tournament_id
        return out


class TournamentFinished(_Wire, frozen=True, tag="tournament.finished"):
    tournament_id: str
    public: bool
    podium: tuple[str, ...]
    ended_at: str | None = None

    def __post_init__(self) -> None:
        self._check()
        _identifier(self.tournament_id)
        if not 1 <= len(self.podium) <= 3 or len(set(self.podium)) != len(self.podium):
            raise ValueError("podium")
        for player_id in self.podium:
            _identifier(player_id)

    def stored(self, ended_at: str | None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": "tournament.finished",
            "event_id": self.event_id,
            "ladder": self.ladder,
            "tournament_id": self.tournament_id,
            "public": self.public,
            "podium": list(self.podium),
        }
        if ended_at is not None:
            out["ended_at"] = ended_at
        return out


class IdentityLinked(_Wire, frozen=True, tag="identity.linked"):
    anonymous_id: str
    account_id: str
    ended_at: str | None = None

    def __post_init__(self) -> None:
        self._check()
        _identifier(self.anonymous_id)
        _identifier(self.account_id)
        if self.anonymous_id == self.account_id:
            raise ValueError("link to itself")

    def stored(self, ended_at: str | None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": "identity.linked",
            "event_id": self.event_id,
            "ladder": self.ladder,
            "anonymous_id": self.anonymous_id,
            "account_id": self.account_id,
        }
        if ended_at is not None:
            out["ended_at"] = ended_at
        return out


class PlayerUpdated(_Wire, frozen=True, tag="player.updated"):
    player_id: str
    email_verified: bool
    display_name_chosen: bool
    ended_at: str | None = None

    def __post_init__(self) -> None:
        self._check()
        _identifier(self.player_id)

    def stored(self, ended_at: str | None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": "player.updated",
            "event_id": self.event_id,
            "ladder": self.ladder,
            "player_id": self.player_id,
            "email_verified": self.email_verified,
            "display_name_chosen": self.display_name_chosen,
        }
        if ended_at is not None:
            out["ended_at"] = ended_at
        return out


WireEvent: TypeAlias = GameFinished | TournamentFinished | IdentityLinked | PlayerUpdated
_TAGS = {GameFinished, TournamentFinished, IdentityLinked, PlayerUpdated}
assert {s.__struct_config__.tag for s in _TAGS} == set(EVENT_MODELS)


class Decoded(msgspec.Struct, frozen=True):
    """A valid event: the Struct, and its stored form (what ``model_dump(mode="json",
    exclude_none=True)`` of the model gives: ``casual`` as ``boosted``, defaults filled in,
    ``ended_at`` in UTC, never an ``ip``)."""

    event: WireEvent
    payload: dict[str, Any]


def decode_event(
    raw: str | bytes,
    *,
    now: datetime,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_future: timedelta = DEFAULT_MAX_FUTURE,
) -> Decoded:
    """What :func:`schemas.parse_event` accepts, decoded; raises :class:`InvalidEvent` with
    the reason and detail ``parse_event`` gives for everything else."""
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("decode_event: `now` must be timezone-aware")
    try:
        text = raw if isinstance(raw, str) else bytes(raw).decode("utf-8")
        if len(text) <= max_bytes and len(text.encode("utf-8")) <= max_bytes:
            obj = msgspec.json.decode(text)
            if type(obj) is dict and _plain(obj, text):
                event = _DECODER.decode(text)
                at = None if event.ended_at is None else parse_timestamp(event.ended_at)
                if at is None or at <= now + max_future:
                    return Decoded(event, event.stored(_utc_text(at)))
    except (msgspec.MsgspecError, ValueError, TypeError, RecursionError):
        pass
    return _explained(raw, now, max_bytes, max_future)


_DECODER: Final = msgspec.json.Decoder(WireEvent)


def _plain(obj: dict[str, Any], text: str) -> bool:
    """No key repeated in any object (the models' decoder refuses that) and no deep nesting
    (the models' decoder has its own depth limit): the text has as many keys, each a string
    before a colon, as the decoded objects hold entries."""
    if "\\" in text:  # a string may hold an escaped quote
        structure = _STRINGS.sub("", text)
    else:  # every quote opens or closes a string: strings are the odd pieces
        structure = "".join(text.split('"')[0::2])
    if structure.count("{") + structure.count("[") > _MAX_CONTAINERS:
        return False
    return structure.count(":") == _entries(obj)


def _entries(value: dict[str, Any] | list[Any]) -> int:
    count = len(value) if type(value) is dict else 0
    for item in value.values() if type(value) is dict else value:
        if type(item) is dict or type(item) is list:
            count += _entries(item)
    return count


def _utc_text(at: datetime | None) -> str | None:
    """A UTC datetime as the models write it in JSON (``Z``, microseconds when there are)."""
    return None if at is None else at.isoformat().replace("+00:00", "Z")


def _explained(raw: str | bytes, now: datetime, max_bytes: int, max_future: timedelta) -> Decoded:
    """The models' verdict on a payload the Structs did not take: their InvalidEvent, or, if
    they accept it, the same event as a Struct."""
    model = parse_event(raw, now=now, max_bytes=max_bytes, max_future=max_future)
    data = model.model_dump(mode="json")
    for side in ("winner", "loser"):
        ref = getattr(model, side, None)
        if ref is not None:
            data[side]["ip"] = ref.ip
    try:
        event: WireEvent = msgspec.convert(data, WireEvent)
    except msgspec.ValidationError as exc:  # the two disagree: refuse, never crash
        raise InvalidEvent(
            "invalid_field", f"payload: {exc}", event_id=model.event_id, ladder=model.ladder
        ) from None
    return Decoded(event, model.model_dump(mode="json", exclude_none=True))
