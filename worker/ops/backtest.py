"""Backtest: replay a ladder's stored log under a candidate, and compare.

The ladder's history (``worker.store.replays``) goes through the one replay,
``engine.replay.Replay``, as moderated: voided games skipped, bans, unbans, adjustments,
season resets and imports where they fall, exactly the ladder the store holds, with one
difference: from ``start`` on, the candidate scores the games (``worker.ops.candidate``):
every ruleset version in force with the ``--set`` values in place of its own, or another
ruleset (``--ruleset``), its stored numbers carried onto the candidate's scale.
Imported players start with what their import gave them (``worker.store.imports.profiles``).

Both sides are measured on the same games, from ``start`` on: those both rated, with every
expected score known. The stored side's expected scores are the stored ledger's (a stored
game counts while no void changed its outcome, a voided game in neither side); the
candidate's are the ones its engine computed before each game, so its calibration is what it
would have been live. Each side's rating board is taken month by month
(``worker.ops.boardmonths``) for its inflation.

Nothing is written: the replay holds its state in memory, and the reads are plain SELECTs (no
PostgreSQL row, no Redis key). With ``--set`` values equal to the stored ones the candidate is
the stored ladder, rating for rating (a replay reproduces every stored number).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Engine

from engine import Action, Decision, LedgerKind, Outcome, Ruleset, Season, voided_by
from engine.calibration import first_share, inflation, mean_score
from engine.ladder import GameFinished, MatchFinished, on_rating_board, when
from worker import gcpause
from worker.ladders import LadderConfig
from worker.ops.boardmonths import BoardMonths, label
from worker.ops.calibrate import Metrics, current_ratings
from worker.ops.candidate import (
    FIXED,
    BadParameter,
    Translation,
    candidate_rules,
    parameter_names,
    parse_overrides,
    parse_ruleset,
    ruleset_from,
)
from worker.store import moderation, replays
from worker.store.log import Logged, Recorded, event_of

__all__ = [
    "FIXED",
    "BadParameter",
    "Backtest",
    "backtest",
    "candidate_rules",
    "parameter_names",
    "parse_overrides",
    "parse_ruleset",
]


@dataclass
class Backtest:
    ladder: str
    overrides: dict[str, Any]
    start: datetime | None
    ruleset: str | None = None  # the candidate's ruleset when --ruleset named one
    stored_ruleset: str = ""
    events: int = 0
    seconds: float = 0.0
    stored: Metrics = field(default_factory=Metrics)
    candidate: Metrics = field(default_factory=Metrics)
    players: dict[str, tuple[float | None, float]] = field(default_factory=dict)
    stored_ratings: dict[str, float] = field(default_factory=dict)
    candidate_ratings: dict[str, float] = field(default_factory=dict)
    months: BoardMonths | None = None
    one_side: dict[str, int] = field(default_factory=lambda: {"stored": 0, "candidate": 0})

    @property
    def rate(self) -> float:
        return self.events / self.seconds if self.seconds > 0 else 0.0

    @property
    def same_scale(self) -> bool:
        """Whether both sides rate on one scale (the candidate is of the ladder's kind)."""
        return self.ruleset is None or self.ruleset == self.stored_ruleset

    def moves(self) -> list[tuple[str, float]]:
        """Each player's move (candidate - stored), the largest first."""
        found = [(pid, c - s) for pid, (s, c) in self.players.items() if s is not None]
        return sorted(found, key=lambda m: (-abs(m[1]), m[0]))

    def _side(self, metrics: Metrics, ratings: dict[str, float], stored: bool) -> dict[str, Any]:
        shown = metrics.report(ratings)
        if self.months is not None:
            months = self.months.stored if stored else self.months.candidate
            shown["inflation"] = inflation(months).as_json()
        return shown

    def as_json(self) -> dict[str, Any]:
        return {
            "ladder": self.ladder,
            "set": self.overrides,
            "from": None if self.start is None else self.start.isoformat(),
            "ruleset": {
                "stored": self.stored_ruleset,
                "candidate": self.ruleset or self.stored_ruleset,
            },
            "events": self.events,
            "seconds": round(self.seconds, 3),
            "events_per_second": round(self.rate),
            "stored": self._side(self.stored, self.stored_ratings, True),
            "candidate": self._side(self.candidate, self.candidate_ratings, False),
            "rated_by_one_side_only": dict(self.one_side),
            "players": {
                pid: {"stored": s, "candidate": c} for pid, (s, c) in sorted(self.players.items())
            },
        }


def backtest(
    engine: Engine,
    ladder_config: LadderConfig,
    overrides: dict[str, Any],
    start: datetime | None = None,
    ruleset: Ruleset | None = None,
) -> Backtest:
    """Replay the ladder's moderated history with ``overrides`` from ``start`` (default: its
    first event), or under ``ruleset`` (built with the overrides) when given: voided games
    skipped, bans, unbans and adjustments where they fall."""
    started = time.perf_counter()
    ladder = ladder_config.name
    stored_rules = ladder_config.current
    rules_at: Callable[[datetime], Ruleset]
    translation: Translation | None = None
    if ruleset is None:
        rules_at = candidate_rules(ladder_config, overrides, start)
    else:
        rules_at = ruleset_from(ladder_config, ruleset, start)
        if ruleset.kind != ladder_config.ruleset:
            translation = Translation(ladder_config.rules_at, ruleset, start)
            rules_at = translation.rules_at
    candidate_kind = stored_rules if ruleset is None else ruleset
    result = Backtest(
        ladder,
        overrides,
        start,
        None if ruleset is None else ruleset.kind,
        ladder_config.ruleset,
        stored=Metrics(stored_rules.stake == "match_length"),
        candidate=Metrics(candidate_kind.stake == "match_length"),
    )
    told = replays.load(engine, ladder)  # from the checkpoint when months were archived
    with engine.connect() as conn:
        effective = moderation.effective(conn, ladder) if told.actions else {}
        action_rows = moderation.action_rows(conn, ladder) if told.actions else {}
    season_rows = told.season_rows
    replay = told.replay(ladder_config.policy, rules_at, voided_by(told.actions))
    players = replay.state.players
    months = result.months = BoardMonths(ladder, None if start is None else label(start))
    stored_now = months.ratings
    for (_, pid), player in players.items():  # a checkpoint's board, as stored
        if on_rating_board(player):
            stored_now[pid] = player.rating
    switched = False
    rated, stored_rated, game = Outcome.RATED, Outcome.RATED.value, LedgerKind.GAME.value
    stored_metrics, candidate_metrics, one_side = result.stored, result.candidate, result.one_side
    with gcpause.paused():
        for entry in told.entries(engine):
            if not isinstance(entry, Logged):
                if isinstance(entry, Season):
                    for row in season_rows.get(entry.event_id, ()):
                        stored_now[str(row[0])] = float(row[3])
                    replay.season(ladder, entry)
                elif isinstance(entry, Recorded):
                    change, at = entry.change, entry.at
                    stored_now[change.player_id] = change.after
                    if switched and translation is not None:
                        change = translation.change(change, at)
                    replay.recorded(ladder, change, at)
                else:
                    for row in action_rows.get(f"moderation:{entry.number}", ()):
                        stored_now[str(row[0])] = float(row[3])
                    replay.action(ladder, _scaled(entry, translation if switched else None))
                continue
            row, ledger = entry.row, entry.ledger
            processed_at = row.processed_at
            result.events += 1
            try:
                event = event_of(row)
            except (KeyError, ValueError, TypeError):
                continue  # an undecodable payload: ``ladder verify`` names it
            at = when(event, processed_at)
            if months.due(at):
                months.take(at, players)
            for change_row in ledger:
                stored_now[change_row.player_id] = change_row.rating_after
            if not switched and (start is None or at >= start):
                switched = True
                if translation is not None:
                    for player in players.values():
                        translation.player(player, at)
                    translation.on = True
            decision = replay.event(event, processed_at)
            if decision is None or (start is not None and at < start):
                continue  # a voided game is not in the moderated history
            if isinstance(event, GameFinished):
                won = lost = None  # the candidate's expected scores, when it rated the game
                if decision.outcome is rated:
                    won, lost = decision.changes[0].expected, decision.changes[1].expected
                outcome = effective[row.event_id][0][0] if row.event_id in effective else None
                games = [r for r in ledger if r.kind == game]
                if (
                    (outcome is None or outcome == stored_rated)
                    and row.outcome == stored_rated
                    and len(games) == 2
                    and games[0].expected is not None
                    and games[1].expected is not None
                ):
                    if won is None or lost is None:
                        one_side["stored"] += 1
                        continue
                    length = event.match_length
                    won_row, lost_row = games
                    stored_metrics.add(
                        won_row.player_id,
                        lost_row.player_id,
                        won_row.expected,
                        lost_row.expected,
                        length,
                    )
                    ids = decision.changes[0].player_id, decision.changes[1].player_id
                    candidate_metrics.add(*ids, won, lost, length)
                elif won is not None and lost is not None:
                    one_side["candidate"] += 1
            elif isinstance(event, MatchFinished):
                _match(
                    event,
                    decision,
                    row.outcome,
                    effective,
                    ledger,
                    (ladder_config.rules_at(at), rules_at(at)),
                    result,
                )
        months.finish(players)
    result.stored_ratings = current_ratings(engine, ladder)
    for (_, pid), player in players.items():
        if on_rating_board(player):
            result.candidate_ratings[pid] = player.rating
            result.players[pid] = (result.stored_ratings.get(pid), player.rating)
    result.seconds = time.perf_counter() - started
    return result


def _scaled(action: Action, translation: Translation | None) -> Action:
    """An adjustment's delta on the candidate's scale, once it is in force."""
    if translation is None or action.kind != "adjust":
        return action
    return dataclasses.replace(action, delta=action.delta * translation.ratio(action.at))


def _match(
    event: MatchFinished,
    decision: Decision,
    stored_outcome: str,
    effective: dict[str, Any],
    ledger: Sequence[Any],
    rules: tuple[Ruleset, Ruleset],
    result: Backtest,
) -> None:
    """A draw or a team game, on both sides: each team's expected score (the mean of its
    players'), against the observed score it forecasts (``Ruleset.team_expected``)."""
    sizes = [len(team.players) for team in event.teams]
    ranks = [team.rank for team in event.teams]
    rated = Outcome.RATED.value
    now = effective[event.event_id][0][0] if event.event_id in effective else stored_outcome
    games = [r for r in ledger if r.kind == LedgerKind.GAME.value]
    stored = None
    if stored_outcome == rated and now == rated and len(games) == sum(sizes):
        stored = _teams(games, sizes)
    candidate = None
    if decision.outcome is Outcome.RATED and len(decision.changes) == sum(sizes):
        candidate = _teams(decision.changes, sizes)
    if stored is None or candidate is None:
        if stored is not None or candidate is not None:
            result.one_side["stored" if stored is not None else "candidate"] += 1
        return
    for (ids, expected), side_rules, metrics in zip(
        (stored, candidate), rules, (result.stored, result.candidate), strict=True
    ):
        score = mean_score if side_rules.team_expected == "score" else first_share
        observed = [score(ranks, i) for i in range(len(ranks))]
        metrics.add_teams(ids, expected, observed)


def _teams(rows: Sequence[Any], sizes: Sequence[int]) -> tuple[list[list[str]], list[float]] | None:
    """The rows' player ids by team and each team's mean expected score (None: one unknown)."""
    ids: list[list[str]] = []
    expected: list[float] = []
    i = 0
    for size in sizes:
        team = rows[i : i + size]
        i += size
        values = [r.expected for r in team]
        if any(v is None for v in values):
            return None
        ids.append([r.player_id for r in team])
        expected.append(sum(values) / size)
    return ids, expected
