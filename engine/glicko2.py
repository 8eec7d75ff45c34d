"""The Glicko-2 rating system: one rating period for one player, and team games built on it.

Source: Mark E. Glickman, "Example of the Glicko-2 system" (Boston University, 2013), steps 1-8.
Ratings are centred on 1500 whatever a ladder starts its players at, on the scale factor
173.7178:

    mu     = (r - 1500) / 173.7178,  phi = RD / 173.7178                     (step 2)
    g(phi) = 1 / sqrt(1 + 3 phi^2 / pi^2)
    E_j    = E(mu, mu_j, phi_j) = 1 / (1 + exp(-g(phi_j) (mu - mu_j)))
    v      = 1 / sum_j g(phi_j)^2 E_j (1 - E_j)                              (step 3)
    Delta  = v sum_j g(phi_j) (s_j - E_j)                                    (step 4)
    f(x)   = e^x (Delta^2 - phi^2 - v - e^x) / (2 (phi^2 + v + e^x)^2) - (x - ln sigma^2) / tau^2
    sigma' = e^(A / 2), A the root of f by the Illinois algorithm to epsilon (step 5)
    phi*   = sqrt(phi^2 + sigma'^2)                                          (step 6)
    phi'   = 1 / sqrt(1 / phi*^2 + 1 / v)                                    (step 7)
    mu'    = mu + phi'^2 sum_j g(phi_j) (s_j - E_j)
    r'     = 173.7178 mu' + 1500,  RD' = 173.7178 phi'                       (step 8)

A player without games keeps mu and sigma; only step 6 applies. Our one extension is a weight
w_j in (0, 1] per result, multiplying that result's terms in 1 / v and in the sums of steps 4
and 7: weights of 1 are exactly the paper. Team games use the composite-opponent method.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final

__all__ = [
    "CENTER",
    "SCALE",
    "expected",
    "g",
    "grown",
    "new_volatility",
    "rate_teams",
    "rate_win",
    "update",
]

SCALE: Final = 173.7178
CENTER: Final = 1500.0


def _check(*, positive: bool = False, **values: float) -> None:
    """Raise ``ValueError`` naming the first of ``values`` not finite (or, if asked, not > 0)."""
    for name, value in values.items():
        if not math.isfinite(value) or (positive and value <= 0):
            wanted = "a finite number > 0" if positive else "a finite number"
            raise ValueError(f"{name}: must be {wanted}, got {value!r}")


def g(phi: float) -> float:
    """g(phi) of the paper, on the Glicko-2 scale: how much an uncertain opponent counts."""
    return 1.0 / math.sqrt(1.0 + 3.0 * phi * phi / (math.pi * math.pi))


def expected(rating: float, opponent_rating: float, opponent_deviation: float) -> float:
    """E(mu, mu_j, phi_j) of the paper: the expected score against that opponent."""
    mu, mu_j = (rating - CENTER) / SCALE, (opponent_rating - CENTER) / SCALE
    exponent = -g(opponent_deviation / SCALE) * (mu - mu_j)
    # An absurd gap gives a certain result (0) rather than an OverflowError from exp.
    return 0.0 if exponent > 700.0 else 1.0 / (1.0 + math.exp(exponent))


def grown(deviation: float, volatility: float, periods: float, max_deviation: float) -> float:
    """The deviation after ``periods`` rating periods without a game (step 6 applied over
    ``periods``, fractional allowed): sqrt(phi^2 + periods * sigma^2) on the Glicko-2 scale,
    back on the rating scale, capped at ``max_deviation``. periods <= 0: unchanged (still
    capped)."""
    _check(positive=True, deviation=deviation, volatility=volatility, max_deviation=max_deviation)
    _check(periods=periods)
    if periods <= 0:
        return min(deviation, max_deviation)
    phi = deviation / SCALE
    return min(SCALE * math.sqrt(phi * phi + periods * volatility * volatility), max_deviation)


def new_volatility(
    phi: float, sigma: float, v: float, delta: float, tau: float, epsilon: float = 0.000001
) -> float:
    """Step 5: the new volatility sigma' by the paper's Illinois algorithm (Glicko-2 scale)."""
    a = math.log(sigma * sigma)
    # f's terms that do not depend on x, each computed as f's expression does (same order).
    near = phi * phi + v  # phi^2 + v
    gap = delta * delta - phi * phi - v  # delta^2 - phi^2 - v
    tau2 = tau * tau
    exp = math.exp

    def f(x: float) -> float:
        ex = exp(x)
        d = near + ex
        return ex * (gap - ex) / (2.0 * d * d) - (x - a) / tau2

    # 5.2: bracket the root between A and B.
    A = a
    if delta * delta > near:
        B = math.log(gap)
    else:
        k = 1
        while f(a - k * tau) < 0:
            k += 1
        B = a - k * tau
    f_a, f_b = f(A), f(B)  # 5.3
    while abs(B - A) > epsilon:  # 5.4
        C = A + (A - B) * f_a / (f_b - f_a)
        f_c = f(C)
        # "<= 0", not "< 0": with "<" an exact root f(C) == 0 would repeat C forever.
        if f_c * f_b <= 0:
            A, f_a = B, f_b
        else:
            f_a /= 2.0  # the Illinois halving that keeps regula falsi from stalling
        B, f_b = C, f_c
    return math.exp(A / 2.0)  # 5.5


def update(
    rating: float,
    deviation: float,
    volatility: float,
    results: Sequence[tuple[float, float, float, float]],
    tau: float,
    epsilon: float = 0.000001,
) -> tuple[float, float, float]:
    """Steps 1-8 for one player over one rating period. ``results``: (opponent rating,
    opponent deviation, score in [0, 1], weight in (0, 1]). Returns (rating, deviation,
    volatility) after. With no results: rating and volatility unchanged, deviation grown by
    one period (step 6 alone), as the paper says. A weight scales that result's terms in
    v^-1 and in the sum of step 4 (weight 1 for every result is exactly the paper)."""
    # Step 1: the player's rating, deviation and volatility, and the system constant tau.
    _check(rating=rating)
    _check(positive=True, deviation=deviation, volatility=volatility, tau=tau, epsilon=epsilon)
    for r_j, rd_j, s_j, w_j in results:
        _check(opponent_rating=r_j)
        _check(positive=True, opponent_deviation=rd_j)
        if not 0.0 <= s_j <= 1.0:
            raise ValueError(f"score: must be in [0, 1], got {s_j!r}")
        if not 0.0 < w_j <= 1.0:
            raise ValueError(f"weight: must be in (0, 1], got {w_j!r}")
    return _updated(rating, deviation, volatility, results, tau, epsilon)


def _updated(
    rating: float,
    deviation: float,
    volatility: float,
    results: Sequence[tuple[float, float, float, float]],
    tau: float,
    epsilon: float,
) -> tuple[float, float, float]:
    """Steps 2-8 of ``update``, its values checked."""
    mu, phi = (rating - CENTER) / SCALE, deviation / SCALE  # step 2
    inverse_v = 0.0
    improvement = 0.0  # sum_j w_j g(phi_j) (s_j - E_j), shared by steps 4 and 7
    for r_j, rd_j, s_j, w_j in results:
        g_j, e_j = g(rd_j / SCALE), expected(rating, r_j, rd_j)
        inverse_v += w_j * g_j * g_j * e_j * (1.0 - e_j)
        improvement += w_j * g_j * (s_j - e_j)
    return _steps_3_to_8(rating, mu, phi, volatility, inverse_v, improvement, tau, epsilon)


def _steps_3_to_8(
    rating: float,
    mu: float,
    phi: float,
    volatility: float,
    inverse_v: float,
    improvement: float,
    tau: float,
    epsilon: float,
) -> tuple[float, float, float]:
    """From v^-1 and the sum of step 4 to the rating, deviation and volatility after."""
    if inverse_v == 0.0:
        # No games, or only results certain to the last bit (ratings thousands of points
        # apart): nothing was learnt, so the paper's no-game rule applies.
        return rating, SCALE * math.sqrt(phi * phi + volatility * volatility), volatility
    v = 1.0 / inverse_v  # step 3
    delta = v * improvement  # step 4
    sigma = new_volatility(phi, volatility, v, delta, tau, epsilon)  # step 5
    phi_star = math.sqrt(phi * phi + sigma * sigma)  # step 6
    phi_new = 1.0 / math.sqrt(1.0 / (phi_star * phi_star) + inverse_v)  # step 7
    mu_new = mu + phi_new * phi_new * improvement
    return SCALE * mu_new + CENTER, SCALE * phi_new, sigma  # step 8


def rate_win(
    winner: tuple[float, float, float],
    loser: tuple[float, float, float],
    tau: float,
    epsilon: float = 0.000001,
) -> tuple[tuple[float, float, float, float], tuple[float, float, float, float]]:
    """A 1v1 win, ``rate_teams([[winner], [loser]], [1, 2], [[1.0], [1.0]], tau)`` with the
    same float operations (so to the bit: a test compares them), written out for two teams of
    one (a replay rates a million of them): each side's (rating, deviation, volatility,
    expected) after."""
    (r_w, d_w, v_w), (r_l, d_l, v_l) = winner, loser
    values = (r_w, d_w, v_w, r_l, d_l, v_l, tau, epsilon)
    if not (all(map(math.isfinite, values)) and min(d_w, v_w, d_l, v_l, tau, epsilon) > 0):
        (first,), (second,) = rate_teams([[winner], [loser]], [1, 2], [[1.0], [1.0]], tau, epsilon)
        return first, second
    # Each team as one opponent: the mean of one rating (itself, as fsum of one value over 1
    # is), the root mean square of one deviation.
    spread_w = math.sqrt(d_w * d_w)
    spread_l = math.sqrt(d_l * d_l)
    return (
        _against_one(r_w, d_w, v_w, r_l, spread_l, 1.0, tau, epsilon),
        _against_one(r_l, d_l, v_l, r_w, spread_w, 0.0, tau, epsilon),
    )


def _against_one(
    rating: float,
    deviation: float,
    volatility: float,
    r_j: float,
    rd_j: float,
    s_j: float,
    tau: float,
    epsilon: float,
) -> tuple[float, float, float, float]:
    """``_updated`` with one result of weight 1, and the expected score E against it: the
    same float operations (a weight of 1 and a sum from 0.0 change no bit)."""
    mu, phi = (rating - CENTER) / SCALE, deviation / SCALE  # step 2
    g_j, e_j = g(rd_j / SCALE), expected(rating, r_j, rd_j)
    inverse_v = g_j * g_j * e_j * (1.0 - e_j)
    improvement = g_j * (s_j - e_j)
    return (*_steps_3_to_8(rating, mu, phi, volatility, inverse_v, improvement, tau, epsilon), e_j)


def rate_teams(
    teams: Sequence[Sequence[tuple[float, float, float]]],
    ranks: Sequence[int],
    weights: Sequence[Sequence[float]],
    tau: float,
    epsilon: float = 0.000001,
) -> list[list[tuple[float, float, float, float]]]:
    """A game of two or more teams as one rating period per player (the composite-opponent
    method): each other team is one opponent with the mean rating of its players and the
    deviation sqrt(mean of their deviations squared); the score against it is 1 when this
    team's rank is better (lower number), 0.5 when equal, 0 when worse; the player's weight
    applies to every result. Each player gets (rating, deviation, volatility, expected) after,
    where expected is the mean of E over the other teams (the expected score before the game).
    Two teams of one player each is exactly ``update`` with one result for each side."""
    if len(teams) < 2:
        raise ValueError(f"teams: a game needs at least 2 teams, got {len(teams)}")
    for name, given in (("ranks", len(ranks)), ("weights", len(weights))):
        if given != len(teams):
            raise ValueError(f"{name}: one per team ({len(teams)} teams), got {given}")
    for i, (team, team_weights) in enumerate(zip(teams, weights, strict=True)):
        if not team:
            raise ValueError(f"teams: team {i} has no players")
        if len(team_weights) != len(team):
            raise ValueError(f"weights: {len(team_weights)} for team {i} of {len(team)} players")
        for r, rd, _ in team:  # before the composites fold a bad value into someone's opponent
            _check(rating=r)
            _check(positive=True, deviation=rd)
    # Each team as one opponent: the mean rating, the root mean square deviation.
    means = [math.fsum(r for r, _, _ in t) / len(t) for t in teams]
    spreads = [math.sqrt(math.fsum(d * d for _, d, _ in t) / len(t)) for t in teams]
    composites = list(zip(means, spreads, strict=True))
    rated: list[list[tuple[float, float, float, float]]] = []
    for i, (team, team_weights) in enumerate(zip(teams, weights, strict=True)):
        # This team's opponents: every other team, with the score against it.
        others = [(*composites[k], _score(ranks[i], ranks[k])) for k in range(len(teams)) if k != i]
        rated_team = []
        for (r, rd, sigma), w in zip(team, team_weights, strict=True):
            after = update(r, rd, sigma, [(*other, w) for other in others], tau, epsilon)
            e = math.fsum(expected(r, r_k, rd_k) for r_k, rd_k, _ in others) / len(others)
            rated_team.append((*after, e))
        rated.append(rated_team)
    return rated


def _score(rank: int, other_rank: int) -> float:
    """1 for a better (lower) rank, 0.5 for the same, 0 for a worse one."""
    return 1.0 if rank < other_rank else 0.5 if rank == other_rank else 0.0
