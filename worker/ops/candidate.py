"""The candidate of a backtest: which rules score each game, and how ratings cross scales.

``ladder backtest LADDER --set KEY=VALUE...`` keeps the ladder's ruleset and puts the values in
every version in force from ``--from`` (``parse_overrides``, ``candidate_rules``). ``--ruleset
NAME`` puts another ruleset in force from ``--from`` (or the first event): the named one
(``engine.rulesets.RULESET_KINDS``) built from its defaults with the ``--set`` values
(``parse_ruleset``); before it, the ladder's own versions.

A ruleset of another kind rates on another scale (gammon42 starts at 1500 and its divisor is
1200, openskill's mu starts at 25). A rating the candidate did not derive, a stored number, is
carried onto its scale by ``Translation``: the rating a player held when the candidate took
over, an import's rating, a season's reset and an adjustment's delta after that. The scales
are matched at even odds: a rating ``r`` is ``start' + (r - start) * unit' / unit``, where
``unit`` is the rating difference whose expected score has the same slope at 0.5 as the
logistic ``1 / (1 + e^-d)`` (``odds_unit``): ``divisor / ln 10`` for gammon42, fibs (a 1-point
match) and prostriker, ``400 / ln 10`` for glicko2 (its scale 173.7178), and ``beta * sqrt(pi)
/ 2`` for openskill (two established players: ``Phi(d / (sqrt 2 beta))``). A deviation is
carried the same way between glicko2 and openskill, and starts afresh (the candidate's start
deviation) from a ruleset that keeps none; a volatility starts afresh. A candidate of the
ladder's own kind takes every stored number as it is.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from engine import RULESET_KINDS, LedgerChange, Player, Ruleset
from worker.ladders import LadderConfig

FIXED = frozenset({"version"})  # a label, not a parameter


class BadParameter(ValueError):
    """A ``--set`` the ladder's ruleset cannot take, or a ``--ruleset`` that is none."""


def parameter_names(ladder_config: LadderConfig) -> list[str]:
    """The parameters ``--set`` takes for this ladder's ruleset."""
    return _names(ladder_config.versions[0].rules)


def _names(rules: Ruleset) -> list[str]:
    return sorted(f.name for f in dataclasses.fields(rules) if f.name not in FIXED)


def parse_overrides(ladder_config: LadderConfig, pairs: Sequence[str]) -> dict[str, Any]:
    """``KEY=VALUE`` strings as typed parameter values, checked against every version."""
    return _parse(
        ladder_config.ruleset,
        [v.rules for v in ladder_config.versions],
        pairs,
        "e.g. divisor=1600",
    )


def parse_ruleset(name: str, pairs: Sequence[str]) -> tuple[Ruleset, dict[str, Any]]:
    """The ruleset ``name`` from its defaults with the ``--set`` values, and those values."""
    kind = RULESET_KINDS.get(name.strip())
    if kind is None:
        raise BadParameter(
            f"--ruleset {name}: not a ruleset (valid: {', '.join(sorted(RULESET_KINDS))})"
        )
    base = kind()
    overrides = _parse(kind.kind, [base], pairs, f"e.g. {_names(base)[0]}=...")
    return dataclasses.replace(base, **overrides), overrides


def _parse(
    kind: str, versions: Sequence[Ruleset], pairs: Sequence[str], example: str
) -> dict[str, Any]:
    names = _names(versions[0])
    sample = versions[-1]
    overrides: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise BadParameter(f"--set {pair!r}: write KEY=VALUE, {example}")
        if key not in names:
            raise BadParameter(
                f"--set {key}: not a parameter of the {kind} ruleset (valid: {', '.join(names)})"
            )
        overrides[key] = _typed(key, text.strip(), getattr(sample, key))
    for version in versions:
        try:
            dataclasses.replace(version, **overrides)
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


def ruleset_from(
    ladder_config: LadderConfig, rules: Ruleset, start: datetime | None
) -> Callable[[datetime], Ruleset]:
    """``rules`` in force from ``start`` (None: always), the ladder's versions before."""
    if start is None:
        return lambda at: rules
    own = ladder_config.rules_at
    return lambda at: own(at) if at < start else rules


class Translation:
    """Stored numbers onto the candidate's scale (``odds_unit``), from the ladder's version
    in force at the moment of each (``source``) to the candidate ``target``.

    ``rules_at`` is the replay's: the ladder's versions until the candidate takes over
    (``on``, set by the caller at the first game from ``start``, once it has carried every
    player over), the candidate from then on for the moments from ``start``. So a player the
    history creates before that (an import, a ban of someone new) starts at the ladder's start
    and is carried over with the others."""

    def __init__(
        self,
        source: Callable[[datetime], Ruleset],
        target: Ruleset,
        start: datetime | None = None,
    ) -> None:
        self.source = source
        self.target = target
        self.start = start
        self.on = False
        self.unit = target.odds_unit
        self.keeps_deviation = target.keeps_deviation

    def rules_at(self, at: datetime) -> Ruleset:
        if self.on and (self.start is None or at >= self.start):
            return self.target
        return self.source(at)

    def ratio(self, at: datetime) -> float:
        return self.unit / self.source(at).odds_unit

    def rating(self, value: float, at: datetime) -> float:
        return self.target.start + (value - self.source(at).start) * self.ratio(at)

    def player(self, player: Player, at: datetime) -> None:
        """The player's rating (and deviation) on the candidate's scale, in place."""
        deviation = player.deviation
        player.rating = self.rating(player.rating, at)
        keeps = deviation is not None and self.keeps_deviation
        player.deviation = deviation * self.ratio(at) if keeps and deviation else None
        player.volatility = None

    def change(self, change: LedgerChange, at: datetime) -> LedgerChange:
        """A recorded row (an import, a season's reset) with its rating carried over."""
        return change._replace(after=self.rating(change.after, at))
