"""The per-game path of ``engine.ladder.apply`` reads the rating formulas and the fair-play
filters as plain values; it must give exactly what ``engine.rating.rate`` and
``engine.fairplay.verdict`` give, bit for bit (SPEC 5: "replaying the stored events in their
scoring order reproduces every stored number")."""

from __future__ import annotations

import itertools
import math
import random
from datetime import UTC, datetime

import pytest

from engine import FibsRules, Gammon42Rules, LadderState, Policy, ProStrikerRules, Ruleset, apply
from engine.fairplay import FairPlayConfig, FairPlayFacts, verdict, verdict_of
from engine.gammon42 import CUBE_VALUES
from engine.ladder import GameFinished, LedgerChange, Side
from engine.rating import rate
from engine.reasons import LedgerKind
from engine.types import Game, PlayerState

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
RULESETS: list[Ruleset] = [
    Gammon42Rules(),
    Gammon42Rules(version="1.2.0", divisor=800.0, heavy_volume=False),
    FibsRules(),
    FibsRules(count_current_match=True),
    ProStrikerRules(),
]


def test_verdict_of_plain_values_is_verdict_on_the_facts_for_every_combination() -> None:
    """SPEC 2.4: the filters in order, the first reason wins; every switch and fact varied."""
    configs = [
        FairPlayConfig(nr, bots, net, pair, pair_limit_games=3)
        for nr, bots, net, pair in itertools.product((True, False), repeat=4)
    ]
    networks = (None, "net-a", "net-b")
    for cfg in configs:
        for mode, wb, lb, wn, ln, pair in itertools.product(
            ("ranked", "boosted", "tournament"),
            (False, True),
            (False, True),
            networks,
            networks,
            (0, 2, 3, 7),
        ):
            facts = FairPlayFacts(mode, wb, lb, wn, ln, pair)
            assert verdict_of(cfg, mode, wb, lb, wn, ln, pair) == verdict(facts, cfg)


@pytest.mark.parametrize(("mode", "pair"), [("casual", 0), ("ranked", -1)])
def test_verdict_of_refuses_what_the_facts_refuse(mode: str, pair: int) -> None:
    """FairPlayFacts refuses an unknown mode and a negative count; so do plain values."""
    with pytest.raises(ValueError) as facts_error:
        FairPlayFacts(mode, False, False, None, None, pair)
    with pytest.raises(ValueError) as plain_error:
        verdict_of(FairPlayConfig(), mode, False, False, None, None, pair)
    assert str(plain_error.value) == str(facts_error.value)


def _ledger(
    rules: Ruleset, winner: PlayerState, loser: PlayerState, game: Game
) -> tuple[LedgerChange, LedgerChange]:
    """The ledger rows ``rate`` implies: before, after, after - before, K, expected."""
    change = rate(rules, winner, loser, game)
    return tuple(  # type: ignore[return-value]
        LedgerChange(pid, LedgerKind.GAME, s.before, s.after, s.after - s.before, s.k, s.expected)
        for pid, s in (("w", change.winner), ("l", change.loser))
    )


@pytest.mark.parametrize("rules", RULESETS, ids=lambda r: f"{r.kind}-{r.version}")
def test_a_rated_game_through_apply_is_exactly_rate(rules: Ruleset) -> None:
    """Seeds 002-004's formulas: apply's ledger rows equal ``rate``'s numbers, bit for bit,
    over random ratings (whole and unrounded), counts, cubes and match lengths."""
    rng = random.Random(7)
    policy = Policy(FairPlayConfig(pair_limit=False))
    for i in range(400):
        rating_w = rng.choice([rng.uniform(500, 2500), float(rng.randint(800, 2200)), 1e6])
        rating_l = rng.choice([rng.uniform(500, 2500), float(rng.randint(800, 2200)), -1e6])
        games_w, games_l = rng.randint(0, 400), rng.randint(0, 400)
        exp_w, exp_l = rng.randint(0, 900), rng.randint(0, 900)
        cube = rng.choice(sorted(CUBE_VALUES))
        length = rng.randint(1, 25) if isinstance(rules, FibsRules) else 1
        state = LadderState()
        for pid, rating, games, exp in (
            ("w", rating_w, games_w, exp_w),
            ("l", rating_l, games_l, exp_l),
        ):
            state.claim("l", pid, rating, NOW)
            player = state.players[("l", pid)]
            player.rated_games, player.experience = games, exp
        event = GameFinished(f"g{i}", "l", NOW, "ranked", Side("w"), Side("l"), cube, length)
        decision = apply(event, state, rules, policy, NOW)
        expected = _ledger(
            rules,
            PlayerState(rating_w, games_w, exp_w),
            PlayerState(rating_l, games_l, exp_l),
            Game(cube=cube, match_length=length),
        )
        assert decision.changes == expected
        for made, want in zip(decision.changes, expected, strict=True):
            assert math.copysign(1.0, made.delta) == math.copysign(1.0, want.delta)
        assert (
            decision.coefficient
            == rate(
                rules, PlayerState(rating_w), PlayerState(rating_l), Game(cube, length)
            ).coefficient
        )


@pytest.mark.parametrize(
    ("rating", "cube", "length", "message"),
    [
        (math.inf, 1, 1, "rating: must be a finite number"),
        (math.nan, 1, 1, "rating: must be a finite number"),
        (1500.0, 3, 1, "cube: must be one of"),
        (1500.0, True, 1, "cube: must be one of"),
        (1500.0, 1, 0, "match_length: must be >= 1"),
    ],
)
def test_what_rate_refuses_apply_still_refuses(
    rating: float, cube: int, length: int, message: str
) -> None:
    """A stored rating that is not finite, an invalid cube (seed 002's table: 1 to 64) or a
    match length below 1 raises the same error as before, not a number."""
    state = LadderState()
    state.claim("l", "w", rating, NOW)
    event = GameFinished("g", "l", NOW, "ranked", Side("w"), Side("l"), cube, length)
    with pytest.raises(ValueError, match=message):
        apply(event, state, Gammon42Rules(), Policy(), NOW)
