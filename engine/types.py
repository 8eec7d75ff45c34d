"""Engine-side values: a player's state before a game, the game, and the rating change.

These are separate from the wire contracts in ``schemas/`` (SPEC 3) so that a contract change
is a mapping change in the worker, never a change to the maths here. Each is a named tuple:
immutable, typed, and the cheapest value the standard library builds (a frozen dataclass
takes several times as long), made for every rated game. What the engine is given (a
player's state, a game) checks its values as it is built, however it is built.
"""

import math
from collections.abc import Iterable
from typing import Any, NamedTuple

__all__ = [
    "Game",
    "PlayerState",
    "Preview",
    "RatingChange",
    "SideChange",
    "checked_make",
    "moved",
    "side_change",
]


def checked_make(cls: Any, iterable: Iterable[Any]) -> Any:
    """``_make`` of a named tuple whose ``__new__`` checks its values: built as the constructor
    builds it, so checked (``_replace`` comes here too)."""
    return cls(*iterable)


class _PlayerState(NamedTuple):
    rating: float
    rated_games: int = 0  # rated games so far on this ladder (prostriker K tiers)
    experience: int = 0  # fibs: total length of rated matches so far
    recent_ranked_games: int = 0  # gammon42: ranked games in the window before this game
    deviation: float | None = None  # glicko2: rating deviation; openskill: sigma
    volatility: float | None = None  # glicko2
    idle_days: float = 0.0  # glicko2: days since the player's last rated game


class PlayerState(_PlayerState):
    """One player's state on one ladder immediately before a game."""

    __slots__ = ()

    def __new__(
        cls,
        rating: float,
        rated_games: int = 0,
        experience: int = 0,
        recent_ranked_games: int = 0,
        deviation: float | None = None,
        volatility: float | None = None,
        idle_days: float = 0.0,
    ) -> "PlayerState":
        if not math.isfinite(rating):
            raise ValueError(f"rating: must be a finite number, got {rating!r}")
        if rated_games < 0 or experience < 0 or recent_ranked_games < 0:
            for field, value in (
                ("rated_games", rated_games),
                ("experience", experience),
                ("recent_ranked_games", recent_ranked_games),
            ):
                if value < 0:
                    raise ValueError(f"{field}: must be >= 0, got {value!r}")
        state = (
            rating,
            rated_games,
            experience,
            recent_ranked_games,
            deviation,
            volatility,
            idle_days,
        )
        return tuple.__new__(cls, state)

    _make = classmethod(checked_make)  # type: ignore[assignment]


class _Game(NamedTuple):
    cube: int = 1  # gammon42: the cube on the board at the end (validated by gammon42)
    match_length: int = 1  # fibs: N, the match length in points


class Game(_Game):
    """What a ruleset needs to know about one finished game or match."""

    __slots__ = ()

    def __new__(cls, cube: int = 1, match_length: int = 1) -> "Game":
        if match_length < 1:
            raise ValueError(f"match_length: must be >= 1, got {match_length!r}")
        return tuple.__new__(cls, (cube, match_length))

    _make = classmethod(checked_make)  # type: ignore[assignment]


class SideChange(NamedTuple):
    """One side's rating change."""

    before: float
    after: float
    delta: float  # int-valued float for gammon42/prostriker, unrounded for fibs
    k: float | None  # K (gammon42/prostriker), the fibs newcomer multiplier; None: no K
    expected: float  # this side's expected score / win probability
    deviation: float | None = None  # after the game: glicko2's deviation, openskill's sigma
    volatility: float | None = None  # after the game: glicko2's volatility


def side_change(player: PlayerState, delta: float, k: float, expected: float) -> SideChange:
    """One side's change: the player's rating moved by ``delta``."""
    return SideChange(player.rating, player.rating + delta, float(delta), float(k), expected)


def moved(
    player: PlayerState,
    after: float,
    expected: float,
    deviation: float | None = None,
    volatility: float | None = None,
) -> SideChange:
    """One side's change to ``after`` under a model without a K (glicko2, openskill)."""
    return SideChange(
        player.rating, after, after - player.rating, None, expected, deviation, volatility
    )


class RatingChange(NamedTuple):
    """Both sides' changes for one rated game."""

    winner: SideChange
    loser: SideChange
    coefficient: float  # gammon42 cube coefficient; 1.0 elsewhere


class Preview(NamedTuple):
    """What a game would do to player a's rating (SPEC 4 preview, seed 003 calculator)."""

    win_probability: float  # for player a
    if_win: float  # a's delta if a wins
    if_lose: float  # a's delta if a loses (negative)
