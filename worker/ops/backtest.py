"""Backtest: replay a ladder's stored log under candidate parameters, and compare.

The ladder's history (``worker.store.replays``) goes through the one replay,
``engine.replay.Replay``, as moderated: voided games skipped, bans, unbans, adjustments,
season resets and imports where they fall, exactly the ladder the store holds, with one
difference: from ``start`` on, every ruleset version in force has the ``--set`` values in
place of its own. A voided game is in neither side's calibration, and a stored game counts
as rated only while no void changed its outcome.
Imported players start with what their import gave them (``worker.store.imports.profiles``).
Each rated game's expected scores are the ones the candidate engine computed before that
game, so the candidate's calibration is what it would have been live.

Nothing is written: the replay holds its state in memory, and the reads are plain SELECTs (no
PostgreSQL row, no Redis key). With ``--set`` values equal to the stored ones the candidate is
the stored ladder, rating for rating (a replay reproduces every stored number).
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Engine

from engine import LedgerKind, Outcome, Ruleset, voided_by
from engine.ladder import GameFinished, on_rating_board, when
from worker import gcpause
from worker.ladders import LadderConfig
from worker.ops.calibrate import Metrics, current_ratings
from worker.store import moderation, replays
from worker.store.log import event_of

FIXED = frozenset({"version"})  # a label, not a parameter


class BadParameter(ValueError):
    """A ``--set`` the ladder's ruleset cannot take."""


def parameter_names(ladder_config: LadderConfig) -> list[str]:
    """The parameters ``--set`` takes for this ladder's ruleset."""
    rules = ladder_config.versions[0].rules
    return sorted(f.name for f in dataclasses.fields(rules) if f.name not in FIXED)


def parse_overrides(ladder_config: LadderConfig, pairs: Sequence[str]) -> dict[str, Any]:
    """``KEY=VALUE`` strings as typed parameter values, checked against every version."""
    names = parameter_names(ladder_config)
    sample = ladder_config.versions[-1].rules
    overrides: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise BadParameter(f"--set {pair!r}: write KEY=VALUE, e.g. divisor=1600")
        if key not in names:
            raise BadParameter(
                f"--set {key}: not a parameter of the {ladder_config.ruleset} ruleset "
                f"(valid: {', '.join(names)})"
            )
        overrides[key] = _typed(key, text.strip(), getattr(sample, key))
    for version in ladder_config.versions:
        try:
            dataclasses.replace(version.rules, **overrides)
        except (ValueError, TypeError) as exc:
            raise BadParameter(f"--set: {exc}") from None
    return overrides


def _typed(key: str, text: str, current: Any) -> Any:
    try:
        if isinstance(current, bool):
            if text.lower() in ("true", "1", "yes", "on"):
                return True
            if text.lower() in ("false", "0", "no", "off"):
                return False
            raise ValueError
        if isinstance(current, int):
            return int(text)
        if isinstance(current, float):
            return float(text)
        if isinstance(current, tuple):
            value = json.loads(text)
            if not isinstance(value, list):
                raise ValueError
            return tuple(tuple(v) if isinstance(v, list) else v for v in value)
    except ValueError:
        shown = type(current).__name__ if not isinstance(current, tuple) else "a JSON array"
        raise BadParameter(f"--set {key}={text!r}: must be {shown}") from None
    return text


def candidate_rules(
    ladder_config: LadderConfig, overrides: dict[str, Any], start: datetime | None
) -> Callable[[datetime], Ruleset]:
    """The ladder's ``rules_at`` with ``overrides`` in every version in force from ``start``."""
    made: dict[int, Ruleset] = {}

    def rules_at(at: datetime) -> Ruleset:
        base = ladder_config.rules_at(at)
        if start is not None and at < start:
            return base
        found = made.get(id(base))
        if found is None:
            found = made[id(base)] = dataclasses.replace(base, **overrides)
        return found

    return rules_at


@dataclass
class Backtest:
    ladder: str
    overrides: dict[str, Any]
    start: datetime | None
    events: int = 0
    seconds: float = 0.0
    stored: Metrics = field(default_factory=Metrics)
    candidate: Metrics = field(default_factory=Metrics)
    players: dict[str, tuple[float | None, float]] = field(default_factory=dict)
    stored_ratings: dict[str, float] = field(default_factory=dict)
    candidate_ratings: dict[str, float] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.events / self.seconds if self.seconds > 0 else 0.0

    def moves(self) -> list[tuple[str, float]]:
        """Each player's move (candidate - stored), the largest first."""
        found = [(pid, c - s) for pid, (s, c) in self.players.items() if s is not None]
        return sorted(found, key=lambda m: (-abs(m[1]), m[0]))

    def as_json(self) -> dict[str, Any]:
        return {
            "ladder": self.ladder,
            "set": self.overrides,
            "from": None if self.start is None else self.start.isoformat(),
            "events": self.events,
            "seconds": round(self.seconds, 3),
            "events_per_second": round(self.rate),
            "stored": self.stored.report(self.stored_ratings),
            "candidate": self.candidate.report(self.candidate_ratings),
            "players": {
                pid: {"stored": s, "candidate": c} for pid, (s, c) in sorted(self.players.items())
            },
        }


def backtest(
    engine: Engine,
    ladder_config: LadderConfig,
    overrides: dict[str, Any],
    start: datetime | None = None,
) -> Backtest:
    """Replay the ladder's moderated history with ``overrides`` from ``start`` (default: its
    first event): voided games skipped, bans, unbans and adjustments where they fall."""
    started = time.perf_counter()
    ladder = ladder_config.name
    by_length = ladder_config.current.stake == "match_length"
    result = Backtest(
        ladder, overrides, start, stored=Metrics(by_length), candidate=Metrics(by_length)
    )
    rules_at = candidate_rules(ladder_config, overrides, start)
    told = replays.load(engine, ladder)  # from the checkpoint when months were archived
    with engine.connect() as conn:
        effective = moderation.effective(conn, ladder) if told.actions else {}
    replay = told.replay(ladder_config.policy, rules_at, voided_by(told.actions))
    rated, stored_rated, game = Outcome.RATED, Outcome.RATED.value, LedgerKind.GAME.value
    with gcpause.paused():
        for logged in told.walk(replay, told.entries(engine)):
            row, ledger = logged.row, logged.ledger
            processed_at = row.processed_at
            result.events += 1
            try:
                event = event_of(row)
            except (KeyError, ValueError, TypeError):
                continue  # an undecodable payload: ``ladder verify`` names it
            decision = replay.event(event, processed_at)
            if decision is None or not isinstance(event, GameFinished):
                continue  # a voided game is not in the moderated history
            if start is not None and when(event, processed_at) < start:
                continue
            length = event.match_length
            if decision.outcome is rated and decision.winner_id and decision.loser_id:
                won, lost = decision.changes[0], decision.changes[1]
                if won.expected is not None and lost.expected is not None:
                    result.candidate.add(
                        won.player_id, lost.player_id, won.expected, lost.expected, length
                    )
            stored = row.outcome
            outcome = effective[row.event_id][0][0] if row.event_id in effective else stored
            games = [r for r in ledger if r.kind == game]
            if outcome == stored_rated and stored == stored_rated and len(games) == 2:
                won_row, lost_row = games
                if won_row.expected is not None and lost_row.expected is not None:
                    result.stored.add(
                        won_row.player_id,
                        lost_row.player_id,
                        won_row.expected,
                        lost_row.expected,
                        length,
                    )
    result.stored_ratings = current_ratings(engine, ladder)
    for (_, pid), player in replay.state.players.items():
        if on_rating_board(player):
            result.candidate_ratings[pid] = player.rating
            result.players[pid] = (result.stored_ratings.get(pid), player.rating)
    result.seconds = time.perf_counter() - started
    return result
