"""The candidate of ``ladder backtest --ruleset`` (worker.ops.candidate), worked by hand.

docs/calibration.md: "a rating r becomes start' + (r - start) x unit' / unit and a delta d
becomes d x unit' / unit, where unit is divisor / ln 10 for gammon42, fibs and prostriker,
400 / ln 10 for glicko2, and beta x sqrt(pi) / 2 for openskill".
"""

import math
from datetime import UTC, datetime

import pytest

from engine import LedgerChange, LedgerKind, Player
from engine.rulesets import (
    FibsRules,
    Gammon42Rules,
    Glicko2Rules,
    OpenSkillRules,
    ProStrikerRules,
)
from worker.ops.candidate import BadParameter, Translation, parse_ruleset

AT = datetime(2026, 10, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("rules", "unit"),
    [
        (Gammon42Rules(), 1200 / math.log(10)),  # 521.15
        (FibsRules(), 2000 / math.log(10)),  # 868.59
        (ProStrikerRules(), 400 / math.log(10)),  # 173.72
        (Glicko2Rules(), 400 / math.log(10)),  # 173.72, glicko2's own scale
        (OpenSkillRules(), 25 / 6 * math.sqrt(math.pi) / 2),  # 3.6927
    ],
)
def test_odds_unit(rules, unit):
    """The rating difference whose expected score rises at 0.5 as 1 / (1 + e^-d) does."""
    assert rules.odds_unit == pytest.approx(unit, rel=1e-15)


@pytest.mark.parametrize("rules", [Gammon42Rules(), Glicko2Rules(), OpenSkillRules()])
def test_the_odds_unit_is_the_slope_at_even_odds(rules):
    """A difference of one unit / 1000 moves the expected score by 1/4000 (the logistic's)."""
    from engine import glicko2, openskill

    d = rules.odds_unit / 1000
    match rules:
        case Gammon42Rules():
            p = 1 / (1 + 10 ** (-d / rules.divisor))
        case Glicko2Rules():
            p = glicko2.expected(1500 + d, 1500, 1e-9)
        case OpenSkillRules():
            model = openskill.Model(beta=rules.beta)
            p = openskill.predict_win(model, [[(25 + d, 1e-9)], [(25, 1e-9)]])[0]
    assert (p - 0.5) * 1000 == pytest.approx(0.25, rel=1e-4)


@pytest.mark.parametrize(
    ("source", "target", "rating", "carried"),
    [
        (Gammon42Rules(), OpenSkillRules(), 1700.0, 25 + 200 * 3.692612 / 521.1534),  # 26.4171
        (Gammon42Rules(), Glicko2Rules(), 1400.0, 1500 - 100 * 173.7178 / 521.1534),  # 1466.67
        (OpenSkillRules(), Glicko2Rules(), 27.0, 1500 + 2 * 173.7178 / 3.692612),  # 1594.09
        (Gammon42Rules(), Gammon42Rules(divisor=800), 1560.0, 1540.0),  # 1500 + 60 x 2/3
    ],
)
def test_a_stored_rating_on_the_candidates_scale(source, target, rating, carried):
    """start' + (r - start) x unit' / unit."""
    assert Translation(lambda at: source, target).rating(rating, AT) == pytest.approx(
        carried, rel=1e-6
    )


def test_a_player_an_import_and_a_delta_carried_over():
    """A glicko2 player (1600, deviation 80) into openskill: mu 25 + 100 x u, sigma 80 x u,
    u = 3.6927 / 173.7178; a gammon42 player keeps no deviation: none (the start's stands)."""
    into = Translation(lambda at: Glicko2Rules(), OpenSkillRules())
    player = Player("chess", "ann", 1600.0, deviation=80.0, volatility=0.06)
    into.player(player, AT)
    u = OpenSkillRules().odds_unit / Glicko2Rules().odds_unit
    assert player.rating == pytest.approx(25 + 100 * u)
    assert player.deviation == pytest.approx(80 * u)
    assert player.volatility is None
    from_elo = Translation(lambda at: Gammon42Rules(), Glicko2Rules())
    elo = Player("gammon42", "bob", 1500.0)
    from_elo.player(elo, AT)
    assert (elo.rating, elo.deviation) == (1500.0, None)
    row = LedgerChange("cy", LedgerKind.IMPORT, 1500.0, 1760.0, 260.0)
    assert from_elo.change(row, AT).after == pytest.approx(1500 + 260 / 3)
    assert from_elo.ratio(AT) == pytest.approx(1 / 3)  # an adjustment's delta: x 1/3


@pytest.mark.parametrize(
    ("name", "pairs", "says"),
    [
        (
            "elo",
            [],
            "--ruleset elo: not a ruleset (valid: fibs, gammon42, glicko2, openskill, prostriker)",
        ),
        ("glicko2", ["divisor=800"], "--set divisor: not a parameter of the glicko2 ruleset"),
        ("glicko2", ["tau=x"], "--set tau='x': must be float"),
        ("openskill", ["beta=0"], "beta: must be > 0"),
        ("glicko2", ["tau"], "write KEY=VALUE"),
    ],
)
def test_a_ruleset_the_candidate_cannot_be(name, pairs, says):
    """One sentence naming what is wrong and what is valid."""
    with pytest.raises(BadParameter) as refused:
        parse_ruleset(name, pairs)
    assert says in str(refused.value)


def test_a_ruleset_from_its_defaults_with_the_set_values():
    """glicko2 with tau 0.3: every other parameter its default."""
    rules, overrides = parse_ruleset("glicko2", ["tau=0.3", "start_deviation=300"])
    assert overrides == {"tau": 0.3, "start_deviation": 300.0}
    assert rules == Glicko2Rules(tau=0.3, start_deviation=300.0)


def test_the_ladders_rules_until_the_candidate_takes_over():
    """Before the first game from --from the ladder's versions (a player made then starts at
    the ladder's start, and is carried over with the others); after, the candidate from --from."""
    own, candidate = Gammon42Rules(), OpenSkillRules()
    start = datetime(2026, 11, 1, tzinfo=UTC)
    switch = Translation(lambda at: own, candidate, start)
    assert switch.rules_at(start) is own  # not taken over yet
    switch.on = True
    assert (switch.rules_at(AT), switch.rules_at(start)) == (own, candidate)
    anytime = Translation(lambda at: own, candidate)
    anytime.on = True
    assert anytime.rules_at(AT) is candidate
