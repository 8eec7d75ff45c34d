"""engine.openskill: the Weng-Lin Plackett-Luce model against the openskill package 6.2.0.

Published examples first (openskill.py's docs and test data, openskill.js's tests), then
agreement with the installed package on random games, then properties and input errors.
"""

import math
import random

import pytest
from openskill.models import PlackettLuce

from engine.openskill import Model, ordinal, predict_draw, predict_win, rate

DEFAULT = Model()
NO_TAU = Model(tau=0.0)  # openskill.js has no tau: its published numbers are the model without it
NEW = (25.0, 25.0 / 3.0)
# The player of openskill.py's test data: its generated model's mu and sigma.
J = (20.35125162611535, 8.33148112355601)
A1, B1, C1 = (29.182, 4.782), (27.174, 4.922), (16.672, 6.217)  # openskill.js's rate tests
W1, X1, Y1, Z1 = (15.0, 25 / 3.0), (20.0, 25 / 3.0), (25.0, 25 / 3.0), (30.0, 25 / 3.0)


def flat(teams):
    return [value for team in teams for player in team for value in player]


# (model, teams, ranks, weights, expected (mu, sigma) per player, team by team)
PUBLISHED = {
    # openskill.py 6.2.0 README "Limited Example" and docs/source/manual.rst "Rate": 2v2, first team wins.
    "readme 2v2": (
        DEFAULT,
        [[NEW, NEW], [NEW, NEW]],
        [1, 2],
        None,
        [
            [(26.964294621803063, 8.177962604389991)] * 2,
            [(23.035705378196937, 8.177962604389991)] * 2,
        ],
    ),
    # openskill.py 6.2.0 tests/models/data/plackettluce.json "normal" (test_rate: [[r()], [r(), r()]], no ranks).
    "data normal": (
        DEFAULT,
        [[J], [J, J]],
        [1, 2],
        None,
        [[(23.855123082692877, 8.22447878583752)], [(16.84738016953782, 8.179571171464575)] * 2],
    ),
    # ... "ranks": four teams, ranks [2, 1, 4, 3].
    "data ranks": (
        DEFAULT,
        [[J], [J, J], [J], [J, J]],
        [2, 1, 4, 3],
        None,
        [
            [(22.35555943890167, 8.265434830225024)],
            [(22.373451456616035, 8.258479912445537)] * 2,
            [(18.311159777900297, 8.219170401234347)],
            [(18.364835831043397, 8.112716571808326)] * 2,
        ],
    ),
    # ... "ties": ranks [1, 2, 1]; the tied teams' mu changes differ (no averaging).
    "data ties": (
        DEFAULT,
        [[J], [J, J], [J, J, J]],
        [1, 2, 1],
        None,
        [
            [(21.63766806988004, 8.310709773172306)],
            [(19.53956360838512, 8.268148437657915)] * 2,
            [(19.87652320008089, 8.237522411103104)] * 3,
        ],
    ),
    # ... "weights": ranks [2, 1, 4, 3], weights [[2, 0, 0], [1, 2], [0, 0, 1], [0, 1]].
    "data weights": (
        DEFAULT,
        [[J] * 3, [J] * 2, [J] * 3, [J] * 2],
        [2, 1, 4, 3],
        [[2, 0, 0], [1, 2], [0, 0, 1], [0, 1]],
        [
            [
                (21.649872897994697, 8.146110527078056),
                (21.000562262055023, 8.239527864992827),
                (21.000562262055023, 8.239527864992827),
            ],
            [(22.456685723244924, 8.309959046469814), (24.562119820374498, 8.28796214707792)],
            [
                (16.789694067795875, 8.195623892204544),
                (16.789694067795875, 8.195623892204544),
                (18.570472846955614, 8.264041781691587),
            ],
            [(21.158064451365576, 8.249053790497177), (21.964877276615802, 8.165369233562995)],
        ],
    ),
    # openskill.js src/__tests__/rate.test.ts "reverses rank": a default 1v1 (no tau).
    "js 1v1": (
        NO_TAU,
        [[NEW], [NEW]],
        [2, 1],
        None,
        [[(22.36476861652635, 8.065506316323548)], [(27.63523138347365, 8.065506316323548)]],
    ),
    # ... "rate accepts and runs a placket-luce model by default": a 4-player free-for-all.
    "js ffa": (
        NO_TAU,
        [[A1], [B1], [C1], [NEW]],
        [1, 2, 3, 4],
        None,
        [
            [(30.209971908310553, 4.764898977359521)],
            [(27.64460833689499, 4.882789305097372)],
            [(17.403586731283518, 6.100723440599442)],
            [(19.214790707434826, 7.8542613981643985)],
        ],
    ),
    # ... "... with tau": the same with tau 0.01.
    "js ffa tau": (
        Model(tau=0.01),
        [[A1], [B1], [C1], [NEW]],
        [1, 2, 3, 4],
        None,
        [
            [(30.20997558824299, 4.764909330988368)],
            [(27.64461002009721, 4.882799245921361)],
            [(17.403587237635527, 6.100731158882956)],
            [(19.21478808745494, 7.854267281042293)],
        ],
    ),
    # ... "... by default for teams": 2v2.
    "js 2v2": (
        NO_TAU,
        [[A1, B1], [C1, NEW]],
        [1, 2],
        None,
        [
            [(29.607218266047376, 4.754597315295896), (27.624480490655575, 4.89211428863373)],
            [(15.953288649990139, 6.125357588584119), (23.708690706816785, 8.111298027437888)],
        ],
    ),
    # ... "accepts a misordered rank ordering": ranks [2, 1, 4, 3].
    "js misordered": (
        NO_TAU,
        [[NEW]] * 4,
        [2, 1, 4, 3],
        None,
        [
            [(26.552824984374855, 8.179213704945203)],
            [(27.795084971874736, 8.263160757613477)],
            [(20.96265504062538, 8.083731307186588)],
            [(24.68943500312503, 8.083731307186588)],
        ],
    ),
    # ... "accepts a rate ordering": ranks [1, 3, 4, 2].
    "js rate ordering": (
        NO_TAU,
        [[W1], [X1], [Y1], [Z1]],
        [1, 3, 4, 2],
        None,
        [
            [(18.13094482387197, 8.283124738447958)],
            [(20.40517319790051, 8.107463101775272)],
            [(20.65608164139383, 8.082178279446465)],
            [(30.80780033683369, 8.154697408620104)],
        ],
    ),
    # ... "accepts teams in rating order": three teams of two, ranks [3, 1, 2].
    "js 3 teams of 2": (
        NO_TAU,
        [[A1, NEW], [B1, NEW], [C1, NEW]],
        [3, 1, 2],
        None,
        [
            [(27.857928218465247, 4.743791738484319), (20.979038689398703, 8.129445198549202)],
            [(27.99071775460834, 4.901007097140011), (27.341134074194173, 8.231039243636156)],
            [(17.60695098907354, 6.140737155130899), (26.679827236407125, 8.148750467726549)],
        ],
    ),
    # ... "allows ties": ranks [1, 2, 2].
    "js ties": (
        NO_TAU,
        [[(10.0, 8.0)], [(5.0, 10.0)], [(0.0, 12.0)]],
        [1, 2, 2],
        None,
        [
            [(11.942833056030613, 7.926463661123746)],
            [(2.938193791485662, 9.65347573412201)],
            [(-1.4023734358082325, 11.323360667700934)],
        ],
    ),
    # ... "four-way-tie with newbies".
    "js four-way tie": (NO_TAU, [[NEW]] * 4, [1, 1, 1, 1], None, [[(25.0, 8.263160757613477)]] * 4),
    # ... "fixes orders of ties": ranks [2, 4, 2, 1].
    "js tie order": (
        NO_TAU,
        [[W1], [X1], [Y1], [Z1]],
        [2, 4, 2, 1],
        None,
        [
            [(15.340046366255285, 8.21273604193863)],
            [(18.007807436399276, 8.188629384105589)],
            [(24.25804790911316, 8.166514496319483)],
            [(32.39409828823228, 8.247276990243211)],
        ],
    ),
    # ... "accepts a tau term": tau 0.3, a 1v1 at sigma 3.
    "js tau": (
        Model(tau=0.3),
        [[(25.0, 3.0)], [(25.0, 3.0)]],
        [1, 2],
        None,
        [[(25.624880438870754, 2.9879993738476953)], [(24.375119561129246, 2.9879993738476953)]],
    ),
}


@pytest.mark.parametrize(
    ("model", "teams", "ranks", "weights", "expected"),
    list(PUBLISHED.values()),
    ids=list(PUBLISHED),
)
def test_rate_gives_the_published_examples(model, teams, ranks, weights, expected) -> None:
    """Every published rate example of openskill.py 6.2.0 and openskill.js, to 1e-12."""
    assert flat(expected) == pytest.approx(
        flat(rate(model, teams, ranks, weights)), rel=1e-12, abs=1e-12
    )


def test_the_js_readme_2v2_matches_to_its_printed_digits() -> None:
    """openskill.js README: a1, a2 beat b1, b2 ⇒ 28.67/8.07, 33.83/5.06, 43.07/2.42, 23.15/6.14."""
    teams = [[NEW, (32.444, 5.123)], [(43.381, 2.421), (25.188, 6.211)]]
    shown = [
        [f"{mu:.2f}/{sigma:.2f}" for mu, sigma in team] for team in rate(NO_TAU, teams, [1, 2])
    ]
    assert [["28.67/8.07", "33.83/5.06"], ["43.07/2.42", "23.15/6.14"]] == shown


def test_predictions_give_the_published_examples() -> None:
    """openskill.py 6.2.0 docs/source/manual.rst and tests/models/weng_lin/test_plackett_luce.py."""
    # manual.rst "Predicting Winners": a new player against (33.564, 1.123).
    assert [0.2021226121041832, 0.7978773878958167] == pytest.approx(
        predict_win(DEFAULT, [[NEW], [(33.564, 1.123)]]), rel=1e-12
    )
    # manual.rst "Predicting Draws", the second example. (Its first, 0.0002807397636510 for 2v3
    # at (35, 1), is stale: 6.2.0 itself answers 1.1013377043678219e-07, and so do we.)
    assert 0.4868868769871696 == pytest.approx(
        predict_draw(DEFAULT, [[(35.0, 1.0)], [(35.0, 1.1)]]), rel=1e-12
    )
    # test_predict_draw, checked there to a relative 1e-4.
    a1, a2, b1, b2 = NEW, (32.444, 1.123), (35.881, 0.0001), (25.188, 0.00001)
    assert 0.1919967 == pytest.approx(predict_draw(DEFAULT, [[a1, a2], [b1, b2]]), rel=1e-4)
    assert 0.0603735 == pytest.approx(
        predict_draw(DEFAULT, [[a1, a2], [b1, b2], [a1], [a2], [b1]]), rel=1e-4
    )
    assert 0.5 == pytest.approx(predict_draw(DEFAULT, [[b1], [b1]]))


def test_ordinal_is_mu_minus_k_sigma_as_the_manual_shows() -> None:
    """manual.rst "Ranks": after the README 2v2, ordinals 2.4304068086330872 and -1.4981824349730388."""
    assert 2.4304068086330872 == pytest.approx(
        ordinal(26.964294621803063, 8.177962604389991, 3.0), rel=1e-12
    )
    assert -1.4981824349730388 == pytest.approx(
        ordinal(23.035705378196937, 8.177962604389991, 3.0), rel=1e-12
    )
    assert 10.0 == ordinal(25.0, 5.0, 3.0)
    assert 25.0 == ordinal(25.0, 5.0, 0.0)


# --- agreement with the installed package --------------------------------------------------


def package_rate(package, teams, ranks, weights):
    objects = [[package.rating(mu, sigma) for mu, sigma in team] for team in teams]
    rated = package.rate(objects, ranks=list(ranks), weights=weights)
    return [[(p.mu, p.sigma) for p in team] for team in rated]


def random_game(rng: random.Random):
    k = rng.randint(2, 8)
    teams = [
        [(rng.uniform(-20.0, 70.0), rng.uniform(0.001, 15.0)) for _ in range(rng.randint(1, 4))]
        for _ in range(k)
    ]
    # Repeated ranks are ties, some of several teams.
    ranks: list[float] = [rng.randint(1, k) for _ in range(k)]
    if rng.random() < 0.2:
        ranks = [rng.uniform(-3.0, 3.0) for _ in range(k)]  # fractional and negative
    weights = None
    if rng.random() < 0.5:
        weights = [
            [rng.choice([0.0, 0.5, 1.0, 2.0, rng.uniform(0.0, 5.0)]) for _ in team]
            for team in teams
        ]
    return teams, ranks, weights


MODELS = {
    "defaults": (Model(), PlackettLuce()),
    "no tau": (Model(tau=0.0), PlackettLuce(tau=0.0)),
    "other constants": (
        Model(beta=3.0, kappa=0.01, tau=0.5),
        PlackettLuce(beta=3.0, kappa=0.01, tau=0.5),
    ),
}


@pytest.mark.parametrize(("model", "package"), list(MODELS.values()), ids=list(MODELS))
def test_rate_agrees_with_the_package_on_random_games(model, package) -> None:
    """400 seeded games (2-8 teams of 1-4, ties, weights or none): every mu and sigma within 1e-9."""
    rng = random.Random(20240601)
    for _ in range(400):
        teams, ranks, weights = random_game(rng)
        expected = package_rate(package, teams, ranks, weights)
        assert flat(expected) == pytest.approx(
            flat(rate(model, teams, ranks, weights)), rel=0, abs=1e-9
        ), (teams, ranks, weights)


def test_predictions_agree_with_the_package_on_random_games() -> None:
    """predict_win and predict_draw on 400 seeded games: within 1e-9 of the package's."""
    package = PlackettLuce()
    rng = random.Random(7)
    for _ in range(400):
        teams, _, _ = random_game(rng)
        objects = [[package.rating(mu, sigma) for mu, sigma in team] for team in teams]
        assert package.predict_win(objects) == pytest.approx(
            predict_win(DEFAULT, teams), rel=0, abs=1e-9
        )
        assert package.predict_draw(objects) == pytest.approx(
            predict_draw(DEFAULT, teams), rel=0, abs=1e-9
        )


def test_fractional_ranks_are_truncated_like_the_package() -> None:
    """Ranks 0.2 and 0.7 both truncate to 0: a tie, the same as ranks [0, 0], as the package does."""
    teams = [[(30.0, 5.0)], [(25.0, 7.0)]]
    assert rate(DEFAULT, teams, [0, 0]) == rate(DEFAULT, teams, [0.2, 0.7])
    assert package_rate(PlackettLuce(), teams, [0.2, 0.7], None) == rate(DEFAULT, teams, [0.2, 0.7])


def test_tied_teams_keep_their_own_mu_changes_as_in_the_package() -> None:
    """The package's tie averaging adds 0: a stronger and a weaker player drawing move differently."""
    teams = [[(30.0, 5.0)], [(25.0, 25.0 / 3.0)]]
    (stronger,), (weaker,) = rate(DEFAULT, teams, [1, 1])
    assert package_rate(PlackettLuce(), teams, [1, 1], None) == [[stronger], [weaker]]
    assert stronger[0] < 30.0 and weaker[0] > 25.0
    assert 30.0 - stronger[0] != pytest.approx(weaker[0] - 25.0, rel=1e-3)


# --- weights, as the package scales them ---------------------------------------------------


def test_weights_count_only_relative_to_the_team() -> None:
    """Each team's weights are rescaled onto [1, 2]: multiplying a team's weights changes nothing."""
    teams = [[(28.0, 6.0), (22.0, 7.0)], [(25.0, 8.0), (24.0, 5.0)]]
    assert rate(DEFAULT, teams, [1, 2], [[1.0, 3.0], [2.0, 5.0]]) == rate(
        DEFAULT, teams, [1, 2], [[10.0, 30.0], [0.2, 0.5]]
    )


def test_equal_weights_in_a_team_are_no_weights() -> None:
    """All-equal weights scale to 1 each, the same as passing no weights."""
    teams = [[(28.0, 6.0), (22.0, 7.0)], [(25.0, 8.0), (24.0, 5.0)]]
    assert rate(DEFAULT, teams, [1, 2]) == rate(DEFAULT, teams, [1, 2], [[0.0, 0.0], [3.0, 3.0]])


def test_a_lone_players_weight_is_always_2() -> None:
    """A one-player team's weight scales to 2 whatever it was: weights [[0], [1]] are not no weights."""
    teams = [[NEW], [NEW]]
    weighted = rate(DEFAULT, teams, [1, 2], [[0.0], [1.0]])
    assert weighted == rate(DEFAULT, teams, [1, 2], [[5.0], [5.0]])
    assert weighted != rate(DEFAULT, teams, [1, 2])
    assert package_rate(PlackettLuce(), teams, [1, 2], [[0.0], [1.0]]) == weighted


def test_more_weight_moves_a_winner_further_and_a_loser_less_far() -> None:
    """Omega >= 0: the change is times w; Omega < 0: divided by w (w in [1, 2])."""
    (win_light, win_heavy), (lose_light, lose_heavy) = rate(
        DEFAULT, [[NEW, NEW], [NEW, NEW]], [1, 2], [[0.0, 1.0], [0.0, 1.0]]
    )
    assert win_heavy[0] - 25.0 == pytest.approx(2 * (win_light[0] - 25.0))
    assert 25.0 - lose_heavy[0] == pytest.approx((25.0 - lose_light[0]) / 2)


# --- properties ----------------------------------------------------------------------------


def test_a_1v1_win_raises_the_winner_and_lowers_the_loser() -> None:
    """Whatever the ratings, the winner's mu goes up and the loser's down."""
    rng = random.Random(3)
    for _ in range(200):
        winner = (rng.uniform(0.0, 50.0), rng.uniform(0.5, 10.0))
        loser = (rng.uniform(0.0, 50.0), rng.uniform(0.5, 10.0))
        (after_w,), (after_l,) = rate(DEFAULT, [[winner], [loser]], [1, 2])
        assert after_w[0] > winner[0] and after_l[0] < loser[0]


def test_a_new_players_sigma_shrinks_after_a_game_even_with_tau() -> None:
    """With the default tau, a 1v1 between new players takes both sigmas from 8.33 to 8.066."""
    (winner,), (loser,) = rate(DEFAULT, [[NEW], [NEW]], [1, 2])
    assert winner[1] == loser[1] < NEW[1]
    assert 8.06590141354368 == pytest.approx(winner[1], rel=1e-12)


def test_a_settled_sigma_grows_after_a_game_by_tau() -> None:
    """Default tau: sigma 0.05 becomes sqrt(0.05^2 + tau^2) ~ 0.097 less a sliver; without tau it shrinks."""
    settled = (25.0, 0.05)
    (winner,), (loser,) = rate(DEFAULT, [[settled], [settled]], [1, 2])
    assert winner[1] > 0.05 and loser[1] > 0.05
    assert math.hypot(0.05, DEFAULT.tau) == pytest.approx(winner[1], rel=1e-4)
    (winner,), (loser,) = rate(NO_TAU, [[settled], [settled]], [1, 2])
    assert winner[1] < 0.05 and loser[1] < 0.05


def test_a_draw_between_equals_moves_no_mu() -> None:
    """Equal ratings, equal ranks: mu stays 25 and sigma shrinks."""
    (a,), (b,) = rate(DEFAULT, [[NEW], [NEW]], [1, 1])
    assert (25.0, 25.0) == (a[0], b[0])
    assert a[1] == b[1] < NEW[1]


def test_rate_keeps_the_shape_and_order_of_the_teams() -> None:
    """Listing the teams in another order (ranks alongside) lists the same results in that order."""
    teams = [[A1, NEW], [B1], [C1, NEW, W1]]
    ranks = [2, 1, 3]
    forward = rate(DEFAULT, teams, ranks)
    backward = rate(DEFAULT, teams[::-1], ranks[::-1])
    assert [2, 1, 3] == [len(team) for team in forward]
    assert forward[::-1] == backward


def test_predict_win_sums_to_1_and_favours_the_stronger() -> None:
    """For 2 to 8 teams the chances sum to 1; equal teams get equal chances, stronger more."""
    rng = random.Random(11)
    for _ in range(200):
        teams, _, _ = random_game(rng)
        assert 1.0 == pytest.approx(sum(predict_win(DEFAULT, teams)), abs=1e-12)
    assert [0.5, 0.5] == predict_win(DEFAULT, [[NEW], [NEW]])
    assert [0.25] * 4 == pytest.approx(predict_win(DEFAULT, [[NEW]] * 4))
    strong, weak = predict_win(DEFAULT, [[(35.0, 2.0)], [(20.0, 2.0)]])
    assert strong > 0.9 > 0.1 > weak


def test_predict_draw_is_a_probability_highest_for_equals() -> None:
    """Between 0 and 1, and lower when the teams are further apart."""
    even = predict_draw(DEFAULT, [[NEW], [NEW]])
    uneven = predict_draw(DEFAULT, [[(40.0, 8.0)], [NEW]])
    assert 0.0 < uneven < even < 1.0


# --- input errors --------------------------------------------------------------------------

BAD_CALLS = {
    "one team": (lambda: rate(DEFAULT, [[NEW]], [1]), r"^teams: need at least 2 teams"),
    "empty team": (
        lambda: rate(DEFAULT, [[NEW], []], [1, 2]),
        r"^teams\[1\]: a team needs at least one player",
    ),
    "ranks short": (lambda: rate(DEFAULT, [[NEW], [NEW]], [1]), r"^ranks: expected 2"),
    "ranks nan": (lambda: rate(DEFAULT, [[NEW], [NEW]], [1, math.nan]), r"^ranks: must be finite"),
    "mu inf": (
        lambda: rate(DEFAULT, [[NEW], [(math.inf, 1.0)]], [1, 2]),
        r"^teams\[1\]\[0\]: mu must be finite",
    ),
    "sigma 0": (
        lambda: rate(DEFAULT, [[NEW, (25.0, 0.0)], [NEW]], [1, 2]),
        r"^teams\[0\]\[1\]: sigma must be finite and > 0",
    ),
    "sigma negative": (
        lambda: rate(DEFAULT, [[(25.0, -1.0)], [NEW]], [1, 2]),
        r"^teams\[0\]\[0\]: sigma",
    ),
    "sigma nan": (
        lambda: rate(DEFAULT, [[(25.0, math.nan)], [NEW]], [1, 2]),
        r"^teams\[0\]\[0\]: sigma",
    ),
    "weights per team": (
        lambda: rate(DEFAULT, [[NEW], [NEW]], [1, 2], [[1.0]]),
        r"^weights: expected 2",
    ),
    "weights per player": (
        lambda: rate(DEFAULT, [[NEW], [NEW]], [1, 2], [[1.0], [1.0, 2.0]]),
        r"^weights\[1\]: expected 1",
    ),
    "weight negative": (
        lambda: rate(DEFAULT, [[NEW, NEW], [NEW]], [1, 2], [[1.0, -0.5], [1.0]]),
        r"^weights\[0\]: must be finite and >= 0",
    ),
    "weight nan": (
        lambda: rate(DEFAULT, [[NEW], [NEW]], [1, 2], [[1.0], [math.nan]]),
        r"^weights\[1\]: must be finite",
    ),
    "too far apart": (
        lambda: rate(DEFAULT, [[(1e6, 1.0)], [(0.0, 1.0)]], [1, 2]),
        r"^teams: ratings too far apart",
    ),
    "predict_win one team": (
        lambda: predict_win(DEFAULT, [[NEW, NEW]]),
        r"^teams: need at least 2 teams",
    ),
    "predict_draw empty team": (
        lambda: predict_draw(DEFAULT, [[], [NEW]]),
        r"^teams\[0\]: a team needs",
    ),
    "predict_draw sigma 0": (
        lambda: predict_draw(DEFAULT, [[NEW], [(25.0, 0.0)]]),
        r"^teams\[1\]\[0\]: sigma",
    ),
    "model mu nan": (lambda: Model(mu=math.nan), r"^mu: must be finite"),
    "model sigma 0": (lambda: Model(sigma=0.0), r"^sigma: must be > 0"),
    "model beta negative": (lambda: Model(beta=-1.0), r"^beta: must be > 0"),
    "model kappa 0": (lambda: Model(kappa=0.0), r"^kappa: must be > 0"),
    "model tau negative": (lambda: Model(tau=-0.1), r"^tau: must be >= 0"),
    "model tau inf": (lambda: Model(tau=math.inf), r"^tau: must be finite"),
}


@pytest.mark.parametrize(("call", "message"), list(BAD_CALLS.values()), ids=list(BAD_CALLS))
def test_bad_input_raises_value_error_naming_the_field(call, message) -> None:
    """Each invalid input is a ValueError whose message starts with the field at fault."""
    with pytest.raises(ValueError, match=message):
        call()


def test_the_model_defaults_are_the_packages() -> None:
    """mu 25, sigma 25/3, beta 25/6, kappa 0.0001, tau 25/300, as PlackettLuce()."""
    package = PlackettLuce()
    assert (package.mu, package.sigma, package.beta, package.kappa, package.tau) == (
        DEFAULT.mu,
        DEFAULT.sigma,
        DEFAULT.beta,
        DEFAULT.kappa,
        DEFAULT.tau,
    )
