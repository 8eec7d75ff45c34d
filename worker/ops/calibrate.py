"""Calibrate: how well the stored expected scores forecast the stored results.

Reads the ladder's rated games from the audit store (each game's two ``rating_changes`` rows
of kind ``game``, with the expected score each side had before the game, joined to its audit
row for the version, match length and ``ended_at``), sees each game from its favourite's side
and reports, per ruleset version in the window (and for fibs per match length too), the
buckets, Brier score and log loss of ``engine.calibration``, with the spread of the current
ratings of the players active in the window (a rated game in it under that version).

The window is on ``ended_at``: ``since`` inclusive, ``until`` exclusive. Reading streams through
the same server-side cursor as ``ladder verify`` (``worker.store.log.read_rows``), so a large
ladder costs one pass and the memory of its active players.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Engine

from engine import LedgerKind, Outcome
from engine.calibration import Scores, Spread, Tally, spread
from worker.ladders import LadderConfig
from worker.store import moderation
from worker.store.log import LEDGER_WITH_EVENTS, read_rows
from worker.store.tables import events, players, rating_changes


@dataclass
class Metrics:
    """The running calibration of one set of games, and who played them."""

    by_match_length: bool = False
    tally: Tally = field(default_factory=Tally)
    lengths: dict[int, Tally] = field(default_factory=dict)
    active: set[str] = field(default_factory=set)

    def add(
        self,
        winner: str,
        loser: str,
        winner_expected: float,
        loser_expected: float,
        match_length: int,
    ) -> None:
        self.tally.add_game(winner_expected, loser_expected)
        if self.by_match_length:
            self.lengths.setdefault(match_length, Tally()).add_game(winner_expected, loser_expected)
        self.active.add(winner)
        self.active.add(loser)

    def add_teams(
        self, teams: Sequence[Sequence[str]], expected: Sequence[float], observed: Sequence[float]
    ) -> None:
        """A draw or a team game: each team's expected score and observed score
        (``Tally.add_teams``); not split by match length."""
        self.tally.add_teams(expected, observed)
        for team in teams:
            self.active.update(team)

    def scores(self) -> Scores:
        return self.tally.scores()

    def report(self, ratings: dict[str, float]) -> dict[str, Any]:
        """The metric object: scores, the spread of ``ratings`` of the active players and,
        for fibs, the scores per match length."""
        shown = self.scores().as_json()
        shown["spread"] = self.spread(ratings).as_json()
        if self.by_match_length:
            shown["match_lengths"] = {
                str(n): self.lengths[n].scores().as_json() for n in sorted(self.lengths)
            }
        return shown

    def spread(self, ratings: dict[str, float]) -> Spread:
        return spread(ratings[p] for p in self.active if p in ratings)


@dataclass
class Calibration:
    ladder: str
    since: datetime | None
    until: datetime | None
    versions: dict[str, dict[str, Any]]

    @property
    def games(self) -> int:
        return sum(int(v["games"]) for v in self.versions.values())

    def as_json(self) -> dict[str, Any]:
        return {
            "ladder": self.ladder,
            "since": None if self.since is None else self.since.isoformat(),
            "until": None if self.until is None else self.until.isoformat(),
            "versions": self.versions,
        }


def calibrate(
    engine: Engine,
    ladder_config: LadderConfig,
    since: datetime | None = None,
    until: datetime | None = None,
    version: str | None = None,
) -> Calibration:
    """The calibration of the ladder's stored rated games, per ruleset version."""
    ladder = ladder_config.name
    by_length = ladder_config.current.stake == "match_length"
    found: dict[str, Metrics] = {}
    for game in rated_games(engine, ladder, since, until, version):
        metrics = found.get(game.version)
        if metrics is None:
            metrics = found[game.version] = Metrics(by_match_length=by_length)
        metrics.add(
            game.winner, game.loser, game.winner_expected, game.loser_expected, game.match_length
        )
    ratings = current_ratings(engine, ladder)
    versions = {v: found[v].report(ratings) for v in _in_version_order(ladder_config, found)}
    return Calibration(ladder, since, until, versions)


@dataclass(frozen=True, slots=True)
class RatedGame:
    version: str
    match_length: int
    winner: str
    loser: str
    winner_expected: float
    loser_expected: float


def rated_games(
    engine: Engine,
    ladder: str,
    since: datetime | None = None,
    until: datetime | None = None,
    version: str | None = None,
) -> Iterator[RatedGame]:
    """The ladder's rated games in scoring order, each with both stored expected scores;
    a game a void took back or left unrated is not one (SPEC 6: a moderated ladder reads as
    if voided games had never been published)."""
    with engine.connect() as conn:
        effective = moderation.effective(conn, ladder)
    taken = {eid for eid, (now, _) in effective.items() if now[0] != Outcome.RATED.value}
    order = events.c.seq
    query = (
        select(
            order,
            events.c.ruleset_version,
            events.c.match_length,
            events.c.winner_id,
            rating_changes.c.player_id,
            rating_changes.c.expected,
            events.c.event_id,
        )
        .select_from(LEDGER_WITH_EVENTS)
        .where(
            rating_changes.c.ladder == ladder,
            rating_changes.c.kind == LedgerKind.GAME.value,
            events.c.outcome == Outcome.RATED.value,
        )
        .order_by(order, rating_changes.c.id)
    )
    if since is not None:
        query = query.where(events.c.ended_at >= since)
    if until is not None:
        query = query.where(events.c.ended_at < until)
    if version is not None:
        query = query.where(events.c.ruleset_version == version)
    rows = read_rows(engine, query)
    yield from _pairs(r for r in rows if r[6] not in taken)


def _pairs(rows: Iterable[Any]) -> Iterator[RatedGame]:
    """Two ledger rows per rated game (the winner's and the loser's), in any order."""
    held: Any = None
    for row in rows:
        if held is None or held[0] != row[0]:
            held = row
            continue
        first, second = held, row
        held = None
        winner, loser = (first, second) if first[4] == first[3] else (second, first)
        if winner[5] is None or loser[5] is None:
            continue  # a game row without a forecast: nothing to calibrate
        yield RatedGame(
            str(first[1]),
            int(first[2] or 1),
            str(winner[4]),
            str(loser[4]),
            float(winner[5]),
            float(loser[5]),
        )


def current_ratings(engine: Engine, ladder: str) -> dict[str, float]:
    """Every stored player's current rating on the ladder."""
    query = select(players.c.player_id, players.c.rating).where(players.c.ladder == ladder)
    return {str(pid): float(rating) for pid, rating in read_rows(engine, query)}


def _in_version_order(ladder_config: LadderConfig, found: dict[str, Metrics]) -> list[str]:
    """Versions as configured (oldest first), then any stored version no longer configured."""
    configured = [v.rules.version for v in ladder_config.versions]
    known = [v for v in configured if v in found]
    return known + sorted(v for v in found if v not in configured)
