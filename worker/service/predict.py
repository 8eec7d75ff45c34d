"""A prediction: each team's expected score for a proposed game, under the ladder's ruleset in
force now (SPEC 7, ``ladder predict`` and ``GET /ladders/{ladder}/predict``).

The issue: "Win probability from the same model. `GET /ladders/{ladder}/predict` (and `ladder
predict`) gives each side's expected score for a proposed game (1v1 or teams) under the
ladder's current ruleset, from the same function that rates; the existing preview stays
consistent with it."

The engine decides (``engine.rating.predict``); this module turns the caller's teams of
player ids into engine states and refuses what cannot be a game. A player is read from their
card as rating a game now would see them (``worker.boards.states``: glicko2's deviation grown
by the days since their last game); an id the ladder has no card for is a new player at the
ruleset's start, as rating their first game would take them; an id linked to an account is
that account, whose rating a game naming the id moves. Teams are given as lists of ids, or
as the text ``alice,bob`` (``parse_team``): a 1v1 is two teams of one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from engine import Game, PlayerState, Ruleset
from engine.rating import predict as engine_predict
from schemas.errors import InvalidArgument
from schemas.ids import is_identifier
from worker.boards import states

if TYPE_CHECKING:
    from worker.ladders import LadderConfig

MIN_TEAMS = 2
MAX_TEAMS = 64
MAX_PLAYERS = 100  # in all the teams together


@dataclass(frozen=True)
class Seat:
    """One player of a predicted game, as the prediction took them."""

    player_id: str
    rating: float
    deviation: float | None  # as stored (the ruleset's start one for a player without one)
    games: int
    new: bool  # no card on this ladder: the ruleset's start state
    rated_as: str | None  # the account a linked id's games are rated on
    banned: bool  # the player (the account, for a linked id) is banned

    def as_json(self) -> dict[str, Any]:
        return {
            "player_id": self.player_id,
            "rating": self.rating,
            "deviation": self.deviation,
            "games": self.games,
            "new": self.new,
            "rated_as": self.rated_as,
            "banned": self.banned,
        }


@dataclass(frozen=True)
class Team:
    """One team of a predicted game and its expected score."""

    players: list[Seat]
    expected: float

    def as_json(self) -> dict[str, Any]:
        return {"players": [p.as_json() for p in self.players], "expected": self.expected}


@dataclass(frozen=True)
class Prediction:
    """Each team's expected score in one proposed game, in the order the teams were given."""

    ladder: str
    ruleset: str
    version: str
    match_length: int
    teams: list[Team]
    rated: bool  # False: a banned player is in it, so the game would be unrated for everyone

    def as_json(self) -> dict[str, Any]:
        return {
            "ladder": self.ladder,
            "ruleset": self.ruleset,
            "version": self.version,
            "match_length": self.match_length,
            "teams": [t.as_json() for t in self.teams],
            "rated": self.rated,
        }


def parse_team(text: str, number: int) -> list[str]:
    """The player ids of ``alice,bob`` (the ``number``-th team given, for the message)."""
    ids = text.split(",")
    if not text or any(pid == "" for pid in ids):
        raise InvalidArgument(f"team {number}: an empty player id in {text!r}")
    return ids


def predict(
    ladder_config: LadderConfig,
    teams: Sequence[Sequence[str]],
    redis: states.Client,
    *,
    match_length: int = 1,
    at: datetime | None = None,
) -> Prediction:
    """Each team's expected score in a game of ``teams`` (lists of player ids) at ``at``
    (default now); ``InvalidArgument`` for what cannot be a game on this ladder."""
    ids = _checked(teams)
    if isinstance(match_length, bool) or match_length < 1:
        raise InvalidArgument(f"match_length: must be >= 1, got {match_length!r}")
    rules = ladder_config.current
    flat = [pid for team in ids for pid in team]
    stored = states.read(redis, ladder_config.name, flat, at)
    accounts = {s.linked_to for s in stored.values() if s.linked_to and s.linked_to not in stored}
    stored |= states.read(redis, ladder_config.name, sorted(accounts), at)
    seats = [[_seat(rules, pid, stored) for pid in team] for team in ids]
    _one_player_once([seat for team in seats for seat in team])
    given = [[_state(rules, seat, stored) for seat in team] for team in seats]
    try:
        expected = engine_predict(rules, given, Game(match_length=match_length))
    except ValueError as exc:  # a team game on a ruleset that rates 1v1 games only
        raise InvalidArgument(str(exc)) from None
    return Prediction(
        ladder=ladder_config.name,
        ruleset=rules.kind,
        version=rules.version,
        match_length=match_length,
        teams=[Team(team, e) for team, e in zip(seats, expected, strict=True)],
        rated=not any(seat.banned for team in seats for seat in team),
    )


def format_expected(expected: float) -> str:
    """An expected score as players see it: '61.3 %'."""
    return f"{expected * 100:.1f} %"


def _checked(teams: Sequence[Sequence[str]]) -> list[list[str]]:
    """The teams as lists of ids, once within the limits: 2 to 64 teams, each of at least one
    valid id, at most 100 players in all, no id twice."""
    if not MIN_TEAMS <= len(teams) <= MAX_TEAMS:
        raise InvalidArgument(f"team: give {MIN_TEAMS} to {MAX_TEAMS} teams, got {len(teams)}")
    ids = [list(team) for team in teams]
    players = sum(len(team) for team in ids)
    if players > MAX_PLAYERS:
        raise InvalidArgument(f"team: at most {MAX_PLAYERS} players in all, got {players}")
    seen: set[str] = set()
    for number, team in enumerate(ids, 1):
        if not team:
            raise InvalidArgument(f"team {number}: no players")
        for pid in team:
            if not isinstance(pid, str) or not is_identifier(pid):
                raise InvalidArgument(f"team {number}: {pid!r} is not a player id")
            if pid in seen:
                raise InvalidArgument(f"team: {pid!r} is named twice")
            seen.add(pid)
    return ids


def _seat(rules: Ruleset, pid: str, stored: dict[str, states.Stored]) -> Seat:
    found = stored.get(pid)
    account = None if found is None else found.linked_to
    if account is not None:
        found = stored.get(account)
    if found is None:
        return Seat(pid, rules.start, rules.start_deviation, 0, account is None, account, False)
    state = found.state
    deviation = rules.start_deviation if state.deviation is None else state.deviation
    return Seat(pid, state.rating, deviation, state.rated_games, False, account, found.banned)


def _state(rules: Ruleset, seat: Seat, stored: dict[str, states.Stored]) -> PlayerState:
    found = stored.get(seat.rated_as or seat.player_id)
    return PlayerState(rules.start) if found is None else found.state


def _one_player_once(seats: list[Seat]) -> None:
    """An id and the account it is linked to are one player, who cannot play themself."""
    by_player: dict[str, str] = {}
    for seat in seats:
        player = seat.rated_as or seat.player_id
        other = by_player.setdefault(player, seat.player_id)
        if other != seat.player_id:
            raise InvalidArgument(
                f"team: {other!r} and {seat.player_id!r} are one player: the games of a "
                f"linked id are rated on its account, {player!r}"
            )
