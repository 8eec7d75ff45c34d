"""Glicko-2 against Glickman's worked example ("Example of the Glicko-2 system", 2013) and the
PyPI package ``glicko2`` (an outside implementation of the same paper)."""

import math
import random
from collections.abc import Callable

import glicko2
import pytest

from engine.glicko2 import (
    CENTER,
    SCALE,
    expected,
    g,
    grown,
    new_volatility,
    rate_teams,
    update,
)

TAU = 0.5  # the paper's example, and the glicko2 package's fixed Player._tau

# The paper's example: a 1500 / 200 / 0.06 player against three opponents.
PLAYER = (1500.0, 200.0, 0.06)
PAPER_RESULTS = [(1400.0, 30.0, 1.0, 1.0), (1550.0, 100.0, 0.0, 1.0), (1700.0, 300.0, 0.0, 1.0)]


@pytest.mark.parametrize(
    ("opponent", "mu_j", "phi_j", "g_j", "e_j"),
    [
        ((1400.0, 30.0), -0.5756, 0.1727, 0.9955, 0.639),
        ((1550.0, 100.0), 0.2878, 0.5756, 0.9531, 0.432),
        ((1700.0, 300.0), 1.1513, 1.7269, 0.7242, 0.303),
    ],
)
def test_g_and_e_match_the_papers_table(
    opponent: tuple[float, float], mu_j: float, phi_j: float, g_j: float, e_j: float
) -> None:
    """Paper step 3 table: mu_j, phi_j, g(phi_j) and E(mu, mu_j, phi_j) for mu 0, phi 1.1513."""
    rating, deviation = opponent
    assert (mu_j, phi_j) == (round((rating - CENTER) / SCALE, 4), round(deviation / SCALE, 4))
    assert g_j == round(g(deviation / SCALE), 4)
    assert e_j == round(expected(PLAYER[0], rating, deviation), 3)


def test_v_and_delta_match_the_paper() -> None:
    """Paper steps 3-4: v = [sum g(phi_j)^2 E_j (1 - E_j)]^-1 = 1.7785, Delta = v sum g (s - E)
    = -0.4834, from the table's g and E as the paper rounds them."""

    def v_and_delta(rounded: bool) -> tuple[float, float]:
        terms = [(g(rd / SCALE), expected(PLAYER[0], r, rd), s) for r, rd, s, _ in PAPER_RESULTS]
        if rounded:  # the table's 4 decimals for g, 3 for E
            terms = [(round(g_j, 4), round(e_j, 3), s_j) for g_j, e_j, s_j in terms]
        v = 1.0 / sum(g_j * g_j * e_j * (1.0 - e_j) for g_j, e_j, _ in terms)
        return v, v * sum(g_j * (s_j - e_j) for g_j, e_j, s_j in terms)

    v, delta = v_and_delta(rounded=True)
    assert (1.7785, -0.4834) == (round(v, 4), round(delta, 4))
    # Unrounded they are 1.7790 and -0.4839: the paper's rounding shows in the 4th decimal.
    assert (1.7785, -0.4834) == pytest.approx(v_and_delta(rounded=False), abs=0.001)


def test_the_volatility_step_gives_the_papers_sigma() -> None:
    """Paper step 5 (Illinois algorithm, epsilon 0.000001) from v 1.7785, Delta -0.4834:
    sigma' = e^(A/2) = 0.05999."""
    sigma = new_volatility(200.0 / SCALE, 0.06, 1.7785, -0.4834, TAU)
    assert 0.05999 == pytest.approx(sigma, abs=0.00001)


def test_the_papers_example_ends_at_1464_06_151_52_0_05999() -> None:
    """Paper step 8: r' = 173.7178 mu' + 1500 = 1464.06, RD' = 173.7178 phi' = 151.52,
    sigma' = 0.05999."""
    rating, deviation, volatility = update(*PLAYER, PAPER_RESULTS, TAU)
    # The paper multiplies its rounded mu' = -0.2069 out: 1464.058. Unrounded, mu' is
    # -0.206925 and r' 1464.0507, so the rating is checked on mu' and to 0.01.
    assert -0.2069 == round((rating - CENTER) / SCALE, 4)
    assert 1464.06 == pytest.approx(rating, abs=0.01)
    assert (0.8722, 151.52) == (round(deviation / SCALE, 4), round(deviation, 2))
    assert 0.05999 == pytest.approx(volatility, abs=0.00001)


def test_a_player_without_games_keeps_rating_and_volatility_and_grows_one_period() -> None:
    """Paper: "only Step 6 applies ... phi' = phi* = sqrt(phi^2 + sigma^2)"."""
    after = update(*PLAYER, [], TAU)
    assert (1500.0, 0.06) == (after[0], after[2])
    assert math.sqrt(200.0**2 + (0.06 * SCALE) ** 2) == pytest.approx(after[1], rel=1e-12)


class _PaperF(glicko2.Player):
    """The package with one term mended: its step 5 f(x) has mu^2 where the paper has phi^2."""

    def _f(self, x: float, delta: float, v: float, a: float) -> float:
        ex = math.exp(x)
        phi2 = self._Player__rd**2
        return ex * (delta**2 - phi2 - v - ex) / (2 * (phi2 + v + ex) ** 2) - (x - a) / self._tau**2


def _random_period(
    rng: random.Random,
) -> tuple[tuple[float, float, float], list[tuple[float, float, float]]]:
    player = (rng.uniform(800, 2400), rng.uniform(30, 350), rng.uniform(0.03, 0.1))
    opponents = [
        (rng.uniform(800, 2400), rng.uniform(30, 350), rng.choice([0.0, 0.5, 1.0]))
        for _ in range(rng.randint(1, 10))
    ]
    return player, opponents


def _package(
    cls: type, player: tuple[float, float, float], opponents: list[tuple[float, float, float]]
) -> tuple[float, float, float]:
    p = cls(rating=player[0], rd=player[1], vol=player[2])
    p.update_player([o[0] for o in opponents], [o[1] for o in opponents], [o[2] for o in opponents])
    return p.rating, p.rd, p.vol


def test_300_random_periods_agree_with_the_glicko2_package_once_its_f_uses_phi() -> None:
    """Same steps, same Illinois loop: rating, RD and volatility agree to 1e-12 relative."""
    # glicko2 2.1.0 follows the paper's steps and Illinois loop (epsilon 0.000001, "<= 0")
    # except that its f(x) reads the rating mu where the paper has phi, so it is compared with
    # that one term mended (below: unmended, it agrees exactly wherever mu^2 = phi^2).
    rng = random.Random(2013)
    for _ in range(300):
        player, opponents = _random_period(rng)
        ours = update(*player, [(r, rd, s, 1.0) for r, rd, s in opponents], TAU)
        assert _package(_PaperF, player, opponents) == pytest.approx(ours, rel=1e-12)


def test_the_unmended_package_agrees_wherever_its_mu_squared_equals_phi_squared() -> None:
    """glicko2 2.1.0 as shipped equals the paper for r = 1500 +- RD, where mu^2 = phi^2."""
    rng = random.Random(1500)
    for _ in range(300):
        (_, rd, sigma), opponents = _random_period(rng)
        player = (CENTER + rng.choice([-rd, rd]), rd, sigma)
        ours = update(*player, [(r, d, s, 1.0) for r, d, s in opponents], TAU)
        assert _package(glicko2.Player, player, opponents) == pytest.approx(ours, rel=1e-12)


def test_two_copies_of_a_result_at_weight_half_are_one_result_at_weight_one() -> None:
    """A weight scales the result's terms of v^-1 and of the step 4 sum, nothing else."""
    half = (1550.0, 100.0, 0.0, 0.5)
    assert update(*PLAYER, [PAPER_RESULTS[1]], TAU) == update(*PLAYER, [half, half], TAU)


def test_a_result_at_weight_half_moves_the_rating_and_deviation_less() -> None:
    """Half a win gains less rating and narrows the deviation less than a whole one."""
    whole = update(*PLAYER, [(1500.0, 80.0, 1.0, 1.0)], TAU)
    half = update(*PLAYER, [(1500.0, 80.0, 1.0, 0.5)], TAU)
    assert PLAYER[0] < half[0] < whole[0]
    assert whole[1] < half[1] < PLAYER[1]


def test_two_teams_of_one_are_exactly_update_for_each_side() -> None:
    """A 1v1 rate_teams is update with one result each, expected being E before the game."""
    rng = random.Random(11)
    for _ in range(100):
        a = (rng.uniform(800, 2400), rng.uniform(30, 350), rng.uniform(0.03, 0.1))
        b = (rng.uniform(800, 2400), rng.uniform(30, 350), rng.uniform(0.03, 0.1))
        [[got_a], [got_b]] = rate_teams([[a], [b]], [1, 2], [[1.0], [1.0]], TAU)
        assert (*update(*a, [(b[0], b[1], 1.0, 1.0)], TAU), expected(a[0], b[0], b[1])) == got_a
        assert (*update(*b, [(a[0], a[1], 0.0, 1.0)], TAU), expected(b[0], a[0], a[1])) == got_b


def test_a_draw_moves_the_lower_rated_player_up_and_the_higher_rated_one_down() -> None:
    """Equal ranks score 0.5 each way."""
    [[low], [high]] = rate_teams(
        [[(1400.0, 100.0, 0.06)], [(1600.0, 100.0, 0.06)]], [1, 1], [[1.0], [1.0]], TAU
    )
    assert low[0] > 1400.0
    assert high[0] < 1600.0


def test_a_four_player_free_for_all_is_a_period_against_the_three_others() -> None:
    """Equal players ranked 1-4 score 1, 2/3, 1/3, 0 of their games, each expecting 0.5."""
    player = (1500.0, 120.0, 0.06)
    rated = rate_teams([[player]] * 4, [1, 2, 3, 4], [[1.0]] * 4, TAU)
    after = [team[0] for team in rated]
    assert [0.5] * 4 == [a[3] for a in after]
    assert after[0][0] > after[1][0] > CENTER > after[2][0] > after[3][0]
    assert after[1][0] - CENTER == pytest.approx(CENTER - after[2][0], rel=1e-9)
    second = [(1500.0, 120.0, s, 1.0) for s in (0.0, 1.0, 1.0)]
    assert update(*player, second, TAU) == after[1][:3]


def test_a_2v2_game_plays_each_player_against_the_other_teams_composite() -> None:
    """Composite opponent: mean rating 1500, deviation sqrt((100^2 + 60^2) / 2)."""
    team_a = [(1600.0, 80.0, 0.06), (1400.0, 120.0, 0.05)]
    team_b = [(1450.0, 100.0, 0.06), (1550.0, 60.0, 0.07)]
    [rated_a, rated_b] = rate_teams([team_a, team_b], [1, 2], [[1.0, 1.0], [1.0, 1.0]], TAU)
    composite_b = (1500.0, math.sqrt((100.0**2 + 60.0**2) / 2), 1.0, 1.0)
    composite_a = (1500.0, math.sqrt((80.0**2 + 120.0**2) / 2), 0.0, 1.0)
    assert [update(*p, [composite_b], TAU) for p in team_a] == [r[:3] for r in rated_a]
    assert [update(*p, [composite_a], TAU) for p in team_b] == [r[:3] for r in rated_b]
    assert all(after[0] > before[0] for before, after in zip(team_a, rated_a, strict=True))
    assert all(after[0] < before[0] for before, after in zip(team_b, rated_b, strict=True))


def test_team_weights_of_one_equal_the_unweighted_and_a_half_moves_less() -> None:
    """A player's weight applies to each result of their period."""
    teams = [[(1500.0, 150.0, 0.06), (1500.0, 150.0, 0.06)], [(1500.0, 150.0, 0.06)]]
    [[whole, half], _] = rate_teams(teams, [1, 2], [[1.0, 0.5], [1.0]], TAU)
    assert update(*teams[0][0], [(1500.0, 150.0, 1.0, 1.0)], TAU) == whole[:3]
    assert CENTER < half[0] < whole[0]


def test_1v1_expected_scores_are_in_0_1_and_sum_to_1_only_at_equal_deviations() -> None:
    """E_a + E_b = 1 + E(g(phi_b) d) - E(g(phi_a) d): above 1 when the stronger is less sure."""
    strong, weak = (1700.0, 300.0, 0.06), (1500.0, 50.0, 0.06)
    [[a], [b]] = rate_teams([[strong], [weak]], [1, 2], [[1.0], [1.0]], TAU)
    assert 0.5 < a[3] < 1.0 and 0.0 < b[3] < 0.5
    assert a[3] + b[3] > 1.0
    [[c], [d]] = rate_teams([[strong], [(1500.0, 300.0, 0.06)]], [1, 2], [[1.0], [1.0]], TAU)
    assert 1.0 == pytest.approx(c[3] + d[3], abs=1e-15)


def test_grown_over_zero_or_negative_periods_is_unchanged() -> None:
    """periods <= 0: the deviation as it was."""
    assert (200.0, 200.0) == (grown(200.0, 0.06, 0.0, 350.0), grown(200.0, 0.06, -2.0, 350.0))


def test_grown_increases_with_periods_and_stops_at_the_cap() -> None:
    """More periods, wider deviation, never above max_deviation (even before any growth)."""
    widths = [grown(60.0, 0.06, periods, 350.0) for periods in (0.5, 1, 10, 100)]
    assert widths == sorted(widths) and widths[0] > 60.0
    assert (350.0, 350.0) == (grown(300.0, 0.06, 10_000, 350.0), grown(400.0, 0.06, 0, 350.0))


def test_grown_is_step_6_over_the_periods() -> None:
    """RD' = sqrt(RD^2 + t (173.7178 sigma)^2); one period is the package's did_not_compete."""
    assert math.sqrt(200.0**2 + 4 * (0.06 * 173.7178) ** 2) == pytest.approx(
        grown(200.0, 0.06, 4, 350.0), rel=1e-12
    )
    idle = glicko2.Player(rating=1500, rd=200, vol=0.06)
    idle.did_not_compete()
    assert idle.rd == pytest.approx(grown(200.0, 0.06, 1, 350.0), rel=1e-12)


@pytest.mark.parametrize(
    ("field", "call"),
    [
        ("rating", lambda: update(math.nan, 200.0, 0.06, [], TAU)),
        ("deviation", lambda: update(1500.0, 0.0, 0.06, [], TAU)),
        ("volatility", lambda: update(1500.0, 200.0, -0.06, [], TAU)),
        ("tau", lambda: update(*PLAYER, [], 0.0)),
        ("opponent_rating", lambda: update(*PLAYER, [(math.inf, 30.0, 1.0, 1.0)], TAU)),
        ("opponent_deviation", lambda: update(*PLAYER, [(1400.0, -1.0, 1.0, 1.0)], TAU)),
        ("score", lambda: update(*PLAYER, [(1400.0, 30.0, 1.5, 1.0)], TAU)),
        ("weight", lambda: update(*PLAYER, [(1400.0, 30.0, 1.0, 0.0)], TAU)),
        ("weight", lambda: update(*PLAYER, [(1400.0, 30.0, 1.0, 1.1)], TAU)),
        ("deviation", lambda: grown(math.inf, 0.06, 1, 350.0)),
        ("periods", lambda: grown(200.0, 0.06, math.nan, 350.0)),
        ("max_deviation", lambda: grown(200.0, 0.06, 1, 0.0)),
        ("teams", lambda: rate_teams([[PLAYER]], [1], [[1.0]], TAU)),
        ("teams", lambda: rate_teams([[PLAYER], []], [1, 2], [[1.0], []], TAU)),
        ("ranks", lambda: rate_teams([[PLAYER], [PLAYER]], [1], [[1.0], [1.0]], TAU)),
        ("weights", lambda: rate_teams([[PLAYER], [PLAYER]], [1, 2], [[1.0]], TAU)),
        ("weights", lambda: rate_teams([[PLAYER], [PLAYER]], [1, 2], [[1.0], [1.0, 1.0]], TAU)),
        ("weight", lambda: rate_teams([[PLAYER], [PLAYER]], [1, 2], [[1.0], [0.0]], TAU)),
        (
            "deviation",
            lambda: rate_teams([[PLAYER], [(1500.0, 0.0, 0.06)]], [1, 2], [[1.0], [1.0]], TAU),
        ),
        ("tau", lambda: rate_teams([[PLAYER], [PLAYER]], [1, 2], [[1.0], [1.0]], -1.0)),
    ],
)
def test_bad_input_raises_value_error_naming_the_field(
    field: str, call: Callable[[], object]
) -> None:
    """Each invalid input is a ValueError whose message starts with the field's name."""
    with pytest.raises(ValueError, match=f"^{field}: "):
        call()
