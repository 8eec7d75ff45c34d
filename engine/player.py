"""A player's state on one ladder: what the ladder rules read and change, and what both
adapters (the PostgreSQL store and the Redis projection) hold.

The adapters store the fields by name: a stored row carries ``STORED_FIELDS`` (the ``players``
table's columns of those names, selected in that order) and ``stored_player`` pairs each value
with its name, so the order of the fields below is nobody's contract.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from operator import itemgetter
from typing import Any, Final

__all__ = ["STATE_FIELDS", "STORED_FIELDS", "Player", "PlayerKey", "idle_days", "stored_player"]

PlayerKey = tuple[str, str]  # (ladder, player_id)


@dataclass(slots=True)
class Player:
    """Rating (with its deviation and volatility where the ruleset keeps them), games,
    experience, boosted points, flags and link of one player id."""

    ladder: str
    player_id: str
    rating: float
    rated_games: int = 0
    experience: int = 0  # fibs: total length of rated matches
    listed: bool = False  # on the rating board (first rated game, prize or adoption)
    boosted_points: int = 0
    email_verified: bool = False  # fibs public-list inputs
    display_name_chosen: bool = False
    linked_to: str | None = None  # an anonymous id linked to this account id
    version: int = 0  # bumped on every change: the projection applies only newer versions
    last_game_at: datetime | None = None
    updated_at: datetime | None = None
    banned: bool = False  # off every board; their later games are unrated (moderation)
    deviation: float | None = None  # glicko2: rating deviation; openskill: sigma
    volatility: float | None = None  # glicko2
    dirty: bool = field(default=False, compare=False)

    @property
    def key(self) -> PlayerKey:
        return (self.ladder, self.player_id)

    def changed(self, at: datetime) -> None:
        self.version += 1
        self.updated_at = at
        self.dirty = True


# What is stored of a player besides its key (each a ``players`` column of that name).
STATE_FIELDS: Final[tuple[str, ...]] = tuple(
    f.name for f in fields(Player) if f.name not in ("ladder", "player_id", "dirty")
)
# What is stored of a player, key first: the names of a stored row's values, in its order.
STORED_FIELDS: Final[tuple[str, ...]] = ("ladder", "player_id", *STATE_FIELDS)


# For each of ``Player``'s leading fields (the stored ones: ``dirty`` is last), the position of
# the value of that name in a stored row. Passed positionally: much cheaper than keywords
# from a dict, and a batch loads a player per side of every game.
_IN_FIELD_ORDER = itemgetter(
    *(STORED_FIELDS.index(f.name) for f in fields(Player) if f.name in STORED_FIELDS)
)


def stored_player(values: Sequence[Any]) -> Player:
    """The player of a stored row: its values named by ``STORED_FIELDS``, in that order."""
    return Player(*_IN_FIELD_ORDER(values))


def idle_days(last_game_at: datetime | None, at: datetime) -> float:
    """Days from a player's last rated game to a game at ``at`` (0 before their first): what
    glicko2 grows the deviation by, for a game rated and for one predicted."""
    return 0.0 if last_game_at is None else (at - last_game_at).total_seconds() / 86400.0
