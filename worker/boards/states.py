"""A stored player's state before a game, read from their card (the player hash
``ladder:{L}:player:<id>``): what a preview and a prediction rate with.

The card holds what the rulesets read of a player: the rating, rated games, experience and,
on the glicko2 and openskill ladders, the deviation (and glicko2's volatility). The days
since the last rated game (``last_game_at``) become ``idle_days`` at the time of the game,
by ``engine.player.idle_days`` as rating does, so glicko2 grows the deviation for a game now
exactly as it would grow it rating one now. The ranked games of the K window (gammon42) are
not in Redis: they come from the audit store where they are wanted (``preview``).

Every card asked for is read in one round trip (a pipeline of HMGET; one ladder's keys share
its hash tag, so a Redis Cluster answers it from one node).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from redis import Redis
from redis.cluster import RedisCluster

from engine import PlayerState
from engine.player import idle_days
from schemas.errors import UnknownPlayer
from schemas.ids import is_identifier
from worker import keys

__all__ = ["CARD_FIELDS", "Stored", "player_state", "read"]

Client = Redis | RedisCluster  # the leaderboards may live on a Redis Cluster

#: The card's fields a state is made of, in the order HMGET answers them.
CARD_FIELDS = (
    "rating",
    "games",
    "experience",
    "deviation",
    "volatility",
    "last_game_at",
    "linked_to",
    "banned",
)


@dataclass(frozen=True)
class Stored:
    """A player with a card: their state at the game, and the account their id is linked to
    (a game naming a linked id is rated on that account)."""

    player_id: str
    state: PlayerState
    linked_to: str | None = None
    banned: bool = False  # a game with them is unrated for every player (SPEC 5)


def read(
    redis: Client, ladder: str, players: Iterable[str], at: datetime | None = None
) -> dict[str, Stored]:
    """The players of ``players`` that have a card, by id, each in their state for a game at
    ``at`` (default now). An id without a card, or that no player can have, is left out."""
    wanted = [pid for pid in dict.fromkeys(players) if is_identifier(pid)]
    if not wanted:
        return {}
    when = datetime.now(UTC) if at is None else at
    with redis.pipeline(transaction=False) as pipe:
        for pid in wanted:
            pipe.hmget(keys.player(ladder, pid), CARD_FIELDS)
        replies = pipe.execute()
    found = {}
    for pid, values in zip(wanted, replies, strict=True):
        if all(value is None for value in values):
            continue
        rating, games, experience, deviation, volatility, last, linked, banned = map(_text, values)
        state = PlayerState(
            float(rating or 0.0),
            int(games or 0),
            int(experience or 0),
            deviation=float(deviation) if deviation else None,
            volatility=float(volatility) if volatility else None,
            idle_days=idle_days(datetime.fromisoformat(last), when) if last else 0.0,
        )
        found[pid] = Stored(pid, state, linked or None, banned == "1")
    return found


def player_state(
    redis: Client, ladder: str, player: str, at: datetime | None = None
) -> PlayerState:
    """A stored player's state for a game at ``at`` (default now); ``UnknownPlayer`` if the
    ladder has no card for them."""
    found = read(redis, ladder, [player], at).get(player)
    if found is None:
        raise UnknownPlayer(f"no player {player!r} on {ladder}")
    return found.state


def _text(value: bytes | str | None) -> str | None:
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    return value
