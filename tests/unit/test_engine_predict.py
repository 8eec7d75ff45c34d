"""engine.rating.predict: each team's expected score for a proposed game.

The issue: "Win probability from the same model. `GET /ladders/{ladder}/predict` (and `ladder
predict`) gives each side's expected score for a proposed game (1v1 or teams) under the
ladder's current ruleset, from the same function that rates; the existing preview stays
consistent with it."
"""

from __future__ import annotations

import itertools
import math

import pytest
from openskill.models import PlackettLuce

from engine import fibs, glicko2
from engine.rating import predict, preview, rate
from engine.rulesets import (
    FibsRules,
    Gammon42Rules,
    Glicko2Rules,
    OpenSkillRules,
    ProStrikerRules,
    Ruleset,
)
from engine.types import Game, PlayerState

GLICKO2 = Glicko2Rules()
OPENSKILL = OpenSkillRules()
SEEDS: list[Ruleset] = [Gammon42Rules(), FibsRules(), ProStrikerRules()]
TEAMS: list[Ruleset] = [GLICKO2, OPENSKILL]
EVERY = SEEDS + TEAMS


def strong(rules: Ruleset) -> PlayerState:
    """A seasoned player above the start rating (with a deviation where the ruleset keeps one)."""
    if isinstance(rules, OpenSkillRules):
        return PlayerState(29.5, 40, deviation=3.1)
    if isinstance(rules, Glicko2Rules):
        return PlayerState(1712.0, 40, deviation=61.0, volatility=0.059, idle_days=3.0)
    return PlayerState(rules.start + 180.0, 40, experience=420, recent_ranked_games=60)


def weak(rules: Ruleset) -> PlayerState:
    """A newer player below the start rating."""
    if isinstance(rules, OpenSkillRules):
        return PlayerState(22.25, 3, deviation=7.4)
    if isinstance(rules, Glicko2Rules):
        return PlayerState(1420.0, 3, deviation=240.0, volatility=0.06, idle_days=41.5)
    return PlayerState(rules.start - 95.0, 3, experience=9)


def new(rules: Ruleset) -> PlayerState:
    return PlayerState(rules.start)


@pytest.mark.parametrize("rules", EVERY, ids=lambda r: r.kind)
@pytest.mark.parametrize("game", [Game(), Game(cube=8, match_length=7)], ids=["plain", "stake"])
def test_a_1v1_prediction_is_exactly_the_previews_win_probability(rules, game):
    """The preview stays consistent with predict: its win probability is the first team's."""
    for a, b in itertools.permutations([strong(rules), weak(rules), new(rules)], 2):
        assert preview(rules, a, b, game).win_probability == predict(rules, [[a], [b]], game)[0]


@pytest.mark.parametrize("rules", EVERY, ids=lambda r: r.kind)
def test_a_1v1_prediction_is_what_rating_the_game_records_for_each_side(rules):
    """The first team's expected is the winner side's of ``rate``, the second the loser's."""
    a, b = strong(rules), weak(rules)
    change = rate(rules, a, b, Game())
    assert (change.winner.expected, change.loser.expected) == predict(rules, [[a], [b]])


@pytest.mark.parametrize("rules", EVERY, ids=lambda r: r.kind)
def test_the_expected_a_1v1_records_does_not_depend_on_who_wins(rules):
    """A's expected when A wins is A's expected when A loses, to the last bits: ``rate`` puts
    the winner first, and one side's chance may be taken as 1 - the other's."""
    a, b = strong(rules), weak(rules)
    if_a_wins, if_a_loses = rate(rules, a, b, Game()), rate(rules, b, a, Game())
    assert if_a_wins.winner.expected == pytest.approx(if_a_loses.loser.expected, abs=1e-15)
    assert if_a_wins.loser.expected == pytest.approx(if_a_loses.winner.expected, abs=1e-15)


@pytest.mark.parametrize("rules", TEAMS, ids=lambda r: r.kind)
def test_the_expected_of_a_team_game_does_not_depend_on_its_result(rules):
    """Every finishing order, ties included, gives each player the same expected score."""
    teams = [[strong(rules), weak(rules)], [new(rules)], [weak(rules), new(rules), strong(rules)]]
    weights = [[1.0] * len(team) for team in teams]
    seen = set()
    for ranks in itertools.product([1, 2, 3], repeat=3):
        done = rules.rate_match(teams, ranks, weights)
        seen.add(tuple(side.expected for team in done for side in team))
    assert 1 == len(seen)


@pytest.mark.parametrize("rules", TEAMS, ids=lambda r: r.kind)
def test_a_team_prediction_is_rate_match_at_distinct_ranks_in_the_order_given(rules):
    """Each team's expected is the mean of its players' from ``rate_match``, teams ranked 1, 2,
    3 as given."""
    teams = [[strong(rules), weak(rules)], [new(rules), new(rules)], [weak(rules)]]
    done = rules.rate_match(teams, (1, 2, 3), [[1.0] * len(t) for t in teams])
    means = tuple(math.fsum(s.expected for s in team) / len(team) for team in done)
    assert means == pytest.approx(predict(rules, teams), abs=1e-15)


def test_an_openskill_team_prediction_is_the_packages_chance_to_finish_first():
    """openskill: each team's expected is the package's predict_win, and they sum to 1."""
    teams = [[strong(OPENSKILL), weak(OPENSKILL)], [new(OPENSKILL), new(OPENSKILL)]]
    model = PlackettLuce()
    package = model.predict_win(
        [[model.rating(mu=p.rating, sigma=p.deviation or 25 / 3) for p in team] for team in teams]
    )
    found = predict(OPENSKILL, teams)
    assert package == pytest.approx(list(found), abs=1e-12)
    assert 1.0 == pytest.approx(sum(found))


def test_a_glicko2_free_for_all_is_each_players_mean_expected_against_every_other():
    """glicko2: in a free-for-all each player's expected is the mean of E against every other
    player, whose deviation has grown by their days without a game, as rating would grow it."""
    players = [strong(GLICKO2), weak(GLICKO2), new(GLICKO2), PlayerState(1555.0, deviation=90.0)]

    def at_game(p: PlayerState) -> float:
        return glicko2.grown(
            p.deviation or 350.0, p.volatility or 0.06, p.idle_days * 0.21436, 350.0
        )

    expected = [
        math.fsum(glicko2.expected(p.rating, o.rating, at_game(o)) for o in players if o is not p)
        / 3
        for p in players
    ]
    assert expected == pytest.approx(list(predict(GLICKO2, [[p] for p in players])), abs=1e-15)


def test_a_glicko2_opponent_long_idle_is_less_certain_so_the_favourite_expects_less():
    """The weaker player's deviation grows with their days away, which pulls E toward 1/2."""
    favourite, rival = strong(GLICKO2), PlayerState(1500.0, deviation=80.0, volatility=0.06)
    rested = predict(GLICKO2, [[favourite], [rival]])[0]
    away = predict(GLICKO2, [[favourite], [PlayerState(1500.0, 0, 0, 0, 80.0, 0.06, 400.0)]])[0]
    assert 0.5 < away < rested


def test_a_fibs_prediction_reads_the_match_length():
    """fibs: a longer match favours the favourite, exactly as the seed's formula says."""
    rules = FibsRules()
    a, b = PlayerState(1600.0), PlayerState(1500.0)
    one, eleven = (predict(rules, [[a], [b]], Game(match_length=n))[0] for n in (1, 11))
    assert (one, eleven) == (
        fibs.win_probability(1600.0, 1500.0, 1, 2000.0),
        fibs.win_probability(1600.0, 1500.0, 11, 2000.0),
    )
    assert 0.5 < one < eleven


@pytest.mark.parametrize("rules", EVERY, ids=lambda r: r.kind)
def test_two_equal_players_each_expect_one_half(rules):
    """Symmetry: equal states, 0.5 each, on every ruleset."""
    for player in (new(rules), strong(rules)):
        assert (0.5, 0.5) == predict(rules, [[player], [player]])


@pytest.mark.parametrize("rules", TEAMS, ids=lambda r: r.kind)
def test_two_equal_teams_each_expect_one_half(rules):
    """Symmetry in a 2v2: the same two players on each side, 0.5 each."""
    team = [strong(rules), weak(rules)]
    assert (0.5, 0.5) == pytest.approx(predict(rules, [team, list(team)]), abs=1e-15)


@pytest.mark.parametrize("rules", EVERY, ids=lambda r: r.kind)
def test_the_order_of_the_teams_matters_only_as_the_answers_follow_it(rules):
    """Given the other way round, the same expected scores come back the other way round."""
    a, b = strong(rules), weak(rules)
    forward, backward = predict(rules, [[a], [b]]), predict(rules, [[b], [a]])
    assert forward[0] > 0.5 > forward[1]
    assert forward == pytest.approx(backward[::-1], abs=1e-15)


@pytest.mark.parametrize("rules", TEAMS, ids=lambda r: r.kind)
def test_the_order_of_many_teams_matters_only_as_the_answers_follow_it(rules):
    """Any order of three teams gives each team the same expected score."""
    teams = [(strong(rules), weak(rules)), (new(rules),), (weak(rules), new(rules))]
    found = dict(zip(teams, predict(rules, teams), strict=True))
    for order in itertools.permutations(teams):
        again = predict(rules, order)
        assert [found[t] for t in order] == pytest.approx(list(again), abs=1e-15)


@pytest.mark.parametrize("rules", SEEDS, ids=lambda r: r.kind)
@pytest.mark.parametrize("sizes", [(2, 2), (1, 2), (1, 1, 1)], ids=["2v2", "1v2", "free-for-all"])
def test_a_team_game_on_a_seed_ruleset_is_refused(rules, sizes):
    """The seed rulesets rate 1v1 games only, and say so in the words of the dead letter of a
    team game sent to their ladder (``Ruleset.rates_only``, as ``unsupported_detail``)."""
    teams = [[new(rules)] * size for size in sizes]
    with pytest.raises(
        ValueError, match=f"^the {rules.kind} ruleset rates 1v1 wins only, not team games$"
    ):
        predict(rules, teams)


@pytest.mark.parametrize("rules", EVERY, ids=lambda r: r.kind)
@pytest.mark.parametrize(
    ("teams", "message"),
    [
        ([], "at least 2 teams, got 0"),
        ([["x"]], "at least 2 teams, got 1"),
        ([["x"], []], "team 2 has no players"),
    ],
)
def test_a_game_needs_two_teams_with_players(rules, teams, message):
    """Fewer than two teams, or a team of nobody, is no game."""
    given = [[new(rules) for _ in team] for team in teams]
    with pytest.raises(ValueError, match=message):
        predict(rules, given)
