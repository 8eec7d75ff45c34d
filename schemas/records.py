"""The stored form of an event, and the one mapping from it to the engine's event types
(written from the engine types' fields: a field is read from the payload's key of its name).

What the audit row keeps of an event (``events.payload``) is the validated event, normalised
(``casual`` is ``boosted``, defaults filled in), with each raw ``ip`` replaced by the network
token it hashes to (SPEC 2.4 step 4: the address is never stored; the token is a keyed hash,
and it is what the shared-network filter compared). The worker maps *that* payload to the
engine's event, live and in a replay alike, so a replay sees exactly what the live path saw
without the network key. The digest of the payload tells a duplicate (equal content) from an
``event_id`` conflict (other content under the same id).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
from collections.abc import Callable
from datetime import datetime
from typing import Any, Final, get_args

import msgspec

from engine import network_token
from engine.ladder import Event, GameFinished, MatchFinished, Side, Team
from schemas.events import EVENT_MODELS, struct_fields
from schemas.events import Event as ContractEvent
from schemas.events import GameFinished as ContractGame

_CANONICAL = msgspec.json.Encoder(order="sorted")


def _defaults(model: type[msgspec.Struct]) -> dict[str, Any]:
    """What a field of ``model`` is when a payload leaves it out: the contract's defaults
    (``cube``, ``match_length``, ``result``...), read from its Struct, never restated."""
    return {f.name: f.default for f in struct_fields(model) if f.default is not msgspec.NODEFAULT}


GAME_DEFAULTS: Final = _defaults(ContractGame)


def stored_payload(event: ContractEvent, network_key: bytes) -> dict[str, Any]:
    """The normalised event as stored: an ``ip`` becomes its ``network`` token."""
    data = event.stored()  # never the ip
    if isinstance(event, ContractGame):
        for ref, stored in _sides(event, data):
            if ref.network is None and ref.ip is not None:
                token = network_token(ref.ip, network_key)  # None: loopback, link-local
                if token is not None:
                    stored["network"] = token
    return data


def _sides(event: ContractGame, data: dict[str, Any]) -> list[tuple[Any, dict[str, Any]]]:
    """Each player of a game as sent, beside its stored form in ``data``."""
    if event.teams is not None:
        return [
            (ref, data["teams"][t]["players"][p])
            for t, team in enumerate(event.teams)
            for p, ref in enumerate(team.players)
        ]
    if event.players is not None:
        return [(ref, data["players"][p]) for p, ref in enumerate(event.players)]
    assert event.winner is not None and event.loser is not None
    return [(event.winner, data["winner"]), (event.loser, data["loser"])]


def digest(payload: dict[str, Any]) -> str:
    """SHA-256 of the payload's canonical JSON: keys sorted, no spaces, UTF-8 unescaped
    (byte for byte what ``json.dumps(sort_keys=True, separators=(",", ":"),
    ensure_ascii=False)`` writes for a stored payload, whose strings hold no control
    character): equal content, equal digest."""
    return hashlib.sha256(_CANONICAL.encode(payload)).hexdigest()


def engine_event(payload: dict[str, Any], digest: str | None = None) -> Event:
    """The engine's event for a stored payload (KeyError, ValueError or TypeError if it is
    not one)."""
    kind = payload["type"]
    read = _READERS.get(kind) if isinstance(kind, str) else None
    if read is None:
        raise ValueError(f"type: {kind!r} is not an event type")
    return read(payload, digest)


def game_from_fields(
    event_id: str,
    ladder: str,
    ended_at: str,
    mode: str,
    winner: tuple[str, bool, str | None],
    loser: tuple[str, bool, str | None],
    cube: int,
    match_length: int,
    result: str,
) -> GameFinished:
    """The engine's game for a stored ``game.finished`` payload whose fields were read one by
    one (``worker.store.log`` reads them so on PostgreSQL, where each was checked to be of
    the JSON type the payload's own decoding gives, absent fields as their defaults): the
    same value ``engine_event`` makes of the whole payload."""
    return GameFinished(
        event_id=event_id,
        ladder=ladder,
        ended_at=datetime.fromisoformat(ended_at),
        mode=mode,
        winner=_known_side(*winner),
        loser=_known_side(*loser),
        cube=cube,
        match_length=match_length,
        result=result,
    )


def _side(ref: dict[str, Any]) -> Side:
    player_id, is_bot, network = ref["player_id"], ref.get("is_bot", False), ref.get("network")
    try:
        return _known_side(player_id, is_bot, network)
    except TypeError:  # not hashable: not a valid side, and Side says so as it always did
        return Side(player_id, is_bot, network)


@functools.lru_cache(maxsize=1 << 16, typed=True)
def _known_side(player_id: str, is_bot: bool, network: str | None) -> Side:
    """A side seen before is the same immutable value: a replay reads the same players'
    sides over and over, and building each anew was a visible share of its time."""
    return Side(player_id, is_bot, network)


def _time(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


#: How a stored field is read into an engine field of each type.
_READ_AS: Final[dict[Any, Callable[[Any], Any]]] = {
    datetime: datetime.fromisoformat,
    datetime | None: _time,
    Side: _side,
    tuple[str, ...]: tuple,
}


def _reader(kind: type[Event]) -> Callable[[dict[str, Any], str | None], Event]:
    """The mapping of a stored payload to the engine's ``kind``, written out as straight-line
    code from its fields (as ``schemas.events`` writes ``stored``): each read from the key of
    its name by its type (``_READ_AS``); one the payload may leave out takes the contract's
    default; ``digest`` is the digest given."""
    defaults = _defaults(EVENT_MODELS[kind.type])
    namespace: dict[str, Any] = {"kind": kind}
    values = []
    for field in dataclasses.fields(kind):
        name = field.name
        value = "digest" if name == "digest" else f"payload[{name!r}]"
        if name in defaults:
            namespace[f"default_{name}"] = defaults[name]
            value = f"payload.get({name!r}, default_{name})"
        if field.type in _READ_AS:
            namespace[f"read_{name}"] = _READ_AS[field.type]
            value = f"read_{name}({value})"
        values.append(value)
    source = f"def read(payload, digest):\n    return kind({', '.join(values)})"
    exec(compile(source, f"<engine_event {kind.type}>", "exec"), namespace)
    read: Callable[[dict[str, Any], str | None], Event] = namespace["read"]
    return read


def _match(payload: dict[str, Any], digest: str | None) -> MatchFinished:
    """The engine's draw or team game for a stored ``game.finished`` without a winner: a
    draw's two players are two teams of one with the same rank."""
    if "teams" in payload:
        teams = tuple(
            Team(
                team["rank"],
                tuple(_side(ref) for ref in team["players"]),
                tuple(float(ref.get("weight", 1.0)) for ref in team["players"]),
            )
            for team in payload["teams"]
        )
        shape = "teams"
    else:
        teams = tuple(Team(1, (_side(ref),), (1.0,)) for ref in payload["players"])
        shape = "draw"
    return MatchFinished(
        event_id=payload["event_id"],
        ladder=payload["ladder"],
        ended_at=datetime.fromisoformat(payload["ended_at"]),
        mode=payload["mode"],
        teams=teams,
        shape=shape,
        digest=digest,
    )


_read_win = _reader(GameFinished)


def _game(payload: dict[str, Any], digest: str | None) -> Event:
    """A stored ``game.finished``: a 1v1 win (``winner``/``loser``), else a draw or teams."""
    return _read_win(payload, digest) if "winner" in payload else _match(payload, digest)


_READERS: Final[dict[str, Callable[[dict[str, Any], str | None], Event]]] = {
    kind.type: _reader(kind)
    for kind in get_args(Event)
    if kind not in (GameFinished, MatchFinished)
} | {"game.finished": _game}
