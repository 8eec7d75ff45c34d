"""The stored form of an event, and the one mapping from it to the engine's event types.

What the audit row keeps of an event (``events.payload``) is the validated event, normalised
(``casual`` is ``boosted``, defaults filled in), with each raw ``ip`` replaced by the network
token it hashes to (SPEC 2.4 step 4: the address is never stored; the token is a keyed hash,
and it is what the shared-network filter compared). The worker maps *that* payload to the
engine's event, live and in a replay alike, so a replay sees exactly what the live path saw
without the network key. The digest of the payload tells a duplicate (equal content) from an
``event_id`` conflict (other content under the same id).
"""

from __future__ import annotations

import functools
import hashlib
from datetime import datetime
from typing import Any, Final

import msgspec

from engine import network_token
from engine.ladder import (
    Event,
    GameFinished,
    IdentityLinked,
    PlayerUpdated,
    Side,
    TournamentFinished,
)
from schemas.events import Event as ContractEvent
from schemas.events import GameFinished as ContractGame

_CANONICAL = msgspec.json.Encoder(order="sorted")
#: What a ``game.finished`` field is when the payload leaves it out: the contract's defaults
#: (``cube``, ``match_length``, ``result``...), read from its Struct, never restated.
GAME_DEFAULTS: Final[dict[str, Any]] = {
    f.name: f.default
    for f in msgspec.structs.fields(ContractGame)
    if f.default is not msgspec.NODEFAULT
}


def stored_payload(event: ContractEvent, network_key: bytes) -> dict[str, Any]:
    """The normalised event as stored: an ``ip`` becomes its ``network`` token."""
    data = event.stored()  # never the ip
    if isinstance(event, ContractGame):
        for side, ref in (("winner", event.winner), ("loser", event.loser)):
            if ref.network is None and ref.ip is not None:
                token = network_token(ref.ip, network_key)  # None: loopback, link-local
                if token is not None:
                    data[side]["network"] = token
    return data


def digest(payload: dict[str, Any]) -> str:
    """SHA-256 of the payload's canonical JSON: keys sorted, no spaces, UTF-8 unescaped
    (byte for byte what ``json.dumps(sort_keys=True, separators=(",", ":"),
    ensure_ascii=False)`` writes for a stored payload, whose strings hold no control
    character): equal content, equal digest."""
    return hashlib.sha256(_CANONICAL.encode(payload)).hexdigest()


def engine_event(payload: dict[str, Any], digest: str | None = None) -> Event:
    """The engine's event for a stored payload (KeyError/ValueError if it is not one)."""
    kind = payload["type"]
    ended_at = _time(payload.get("ended_at"))
    if kind == "game.finished":
        assert ended_at is not None
        return GameFinished(
            event_id=payload["event_id"],
            ladder=payload["ladder"],
            ended_at=ended_at,
            mode=payload["mode"],
            winner=_side(payload["winner"]),
            loser=_side(payload["loser"]),
            cube=payload.get("cube", GAME_DEFAULTS["cube"]),
            match_length=payload.get("match_length", GAME_DEFAULTS["match_length"]),
            result=payload.get("result", GAME_DEFAULTS["result"]),
            digest=digest,
        )
    if kind == "tournament.finished":
        return TournamentFinished(
            event_id=payload["event_id"],
            ladder=payload["ladder"],
            tournament_id=payload["tournament_id"],
            public=payload["public"],
            podium=tuple(payload["podium"]),
            ended_at=ended_at,
            digest=digest,
        )
    if kind == "identity.linked":
        return IdentityLinked(
            event_id=payload["event_id"],
            ladder=payload["ladder"],
            anonymous_id=payload["anonymous_id"],
            account_id=payload["account_id"],
            ended_at=ended_at,
            digest=digest,
        )
    if kind == "player.updated":
        return PlayerUpdated(
            event_id=payload["event_id"],
            ladder=payload["ladder"],
            player_id=payload["player_id"],
            email_verified=payload["email_verified"],
            display_name_chosen=payload["display_name_chosen"],
            ended_at=ended_at,
            digest=digest,
        )
    raise ValueError(f"type: {kind!r} is not an event type")


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
