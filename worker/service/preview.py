"""A rating preview: what one game between two players would do to A's rating (seed 003).

The use case behind ``ladder preview`` and the API's preview: the engine decides, this module
only turns the caller's sides into engine states and the result into what players see.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from engine import CUBE_VALUES, Game, PlayerState, display_rating
from engine import preview as engine_preview
from schemas.errors import InvalidArgument
from worker.boards import reader

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from worker.ladders import LadderConfig


@dataclass(frozen=True)
class Side:
    """One player of a preview: a stored player (``player_id`` set) or given numbers."""

    player_id: str | None
    state: PlayerState

    def as_json(self) -> dict[str, Any]:
        return {
            "player_id": self.player_id,
            "rating": self.state.rating,
            "games": self.state.rated_games,
            "experience": self.state.experience,
            "recent_ranked_games": self.state.recent_ranked_games,
        }


@dataclass(frozen=True)
class RatingPreview:
    """What one game between A and B would do to A's rating (seed 003's calculator)."""

    ladder: str
    ruleset: str
    version: str
    cube: int
    match_length: int
    a: Side
    b: Side
    win_probability: float
    if_win: float
    if_lose: float

    def as_json(self) -> dict[str, Any]:
        return {
            "ladder": self.ladder,
            "ruleset": self.ruleset,
            "version": self.version,
            "cube": self.cube,
            "match_length": self.match_length,
            "a": self.a.as_json(),
            "b": self.b.as_json(),
            "win_probability": self.win_probability,
            "if_win": self.if_win,
            "if_lose": self.if_lose,
        }


def rate(
    ladder_config: LadderConfig,
    a: str | float | PlayerState | Side,
    b: str | float | PlayerState | Side,
    stored: Callable[[str], PlayerState],
    *,
    cube: int = 1,
    match_length: int = 1,
) -> RatingPreview:
    """A's win probability and A's change if A wins and if A loses, under the current rules.

    A side given as a player id is read with ``stored``; a number is a player with no games
    or experience; a ``PlayerState`` or ``Side`` is used as given.
    """
    if isinstance(cube, bool) or cube not in CUBE_VALUES:
        raise InvalidArgument(f"cube: must be one of {sorted(CUBE_VALUES)}, got {cube!r}")
    if isinstance(match_length, bool) or match_length < 1:
        raise InvalidArgument(f"match_length: must be >= 1, got {match_length!r}")
    side_a = _side(a, stored)
    side_b = _side(b, stored)
    if side_a.player_id is not None and side_a.player_id == side_b.player_id:
        raise InvalidArgument("a player cannot play against themself")
    rules = ladder_config.current
    result = engine_preview(rules, side_a.state, side_b.state, Game(cube, match_length))
    return RatingPreview(
        ladder=ladder_config.name,
        ruleset=rules.kind,
        version=rules.version,
        cube=cube,
        match_length=match_length,
        a=side_a,
        b=side_b,
        win_probability=result.win_probability,
        if_win=result.if_win,
        if_lose=result.if_lose,
    )


def preview(
    ladder_config: LadderConfig,
    a: str | float | PlayerState | Side,
    b: str | float | PlayerState | Side,
    *,
    cube: int = 1,
    match_length: int = 1,
    redis: reader.Client | None = None,
) -> RatingPreview:
    """``rate``, a side given as a player id read from the player hash (needs ``redis``).

    Gammon42's weekly volume is not in Redis: a player id counts as having played no ranked
    games this week; pass a ``Side`` whose state has ``recent_ranked_games``
    (``worker.store.history.recent_ranked_games``) for the real K.
    """

    def stored(player: str) -> PlayerState:
        if redis is None:
            raise InvalidArgument("a stored player's preview needs a Redis client")
        return reader.player_state(redis, ladder_config.name, player)

    return rate(ladder_config, a, b, stored, cube=cube, match_length=match_length)


def given_side(
    ladder_config: LadderConfig,
    player: str | None,
    redis: reader.Client,
    database: Engine,
    *,
    rating: float | None = None,
    games: int | None = None,
    experience: int | None = None,
    recent: int | None = None,
) -> Side:
    """A side as a caller gives it: the stored player ``player`` (read from its player hash)
    or, with None, a new player at the ruleset's start; each number given replaces the one
    stored. A stored player's ranked games in the K window are counted from the log
    (``database``) unless ``recent`` is given."""
    rules = ladder_config.current
    if player is None:
        state = PlayerState(rules.start)
    else:
        state = reader.player_state(redis, ladder_config.name, player)
        hours = rules.k_window_hours
        if recent is None and hours is not None:
            from worker.store.history import recent_ranked_games

            now = datetime.now(UTC)
            recent = recent_ranked_games(database, ladder_config.name, player, now, hours)
    return Side(
        player,
        state._replace(
            rating=state.rating if rating is None else rating,
            rated_games=state.rated_games if games is None else games,
            experience=state.experience if experience is None else experience,
            recent_ranked_games=state.recent_ranked_games if recent is None else recent,
        ),
    )


def format_preview(ladder_config: LadderConfig, found: RatingPreview) -> dict[str, str]:
    """The preview as players see it: '43.6 %', '+25.0', '-19.3'."""
    rules = ladder_config.current

    def signed(delta: float) -> str:
        shown = display_rating(rules, delta)
        return shown if shown.startswith("-") else f"+{shown}"

    return {
        "win_probability": f"{found.win_probability * 100:.1f} %",
        "if_win": signed(found.if_win),
        "if_lose": signed(found.if_lose),
    }


def _side(value: str | float | PlayerState | Side, stored: Callable[[str], PlayerState]) -> Side:
    if isinstance(value, Side):
        return value
    if isinstance(value, PlayerState):
        return Side(None, value)
    if isinstance(value, str):
        return Side(value, stored(value))
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidArgument(f"rating: must be a finite number, got {value!r}")
    return Side(None, PlayerState(float(value)))
