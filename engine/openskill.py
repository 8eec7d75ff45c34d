"""The Weng-Lin Plackett-Luce rating model: the maths of the ``openskill`` package, stdlib only.

Source: Weng & Lin 2011, "A Bayesian Approximation Method for Online Ranking" (JMLR 12:267-300),
Algorithm 4 (Plackett-Luce), as ``openskill`` 6.2.0 implements it (``PlackettLuce`` in
``openskill/models/weng_lin/plackett_luce.py``) with its defaults: the default gamma, margin 0,
limit_sigma and balance off, weight_bounds (1, 2). Our float operations are the package's, in
its order, so the two agree to the bit (given the same libm for exp, erf and sqrt).

Each player's sigma first widens by the dynamics factor: sigma^2 + tau^2. Then, for teams
i = 1..k with mu_i = sum of mu, sigma_i^2 = sum of sigma^2 over the team, and rank r(i):

    c       = sqrt(sum_i (sigma_i^2 + beta^2))
    S_q     = sum over {s: r(s) >= r(q)} of exp(mu_s / c),     A_q = |{s: r(s) = r(q)}|
    p_iq    = exp(mu_i / c) / S_q,                              gamma_i = sigma_i / c
    Omega_i = sigma_i^2 / c * sum over {q: r(q) <= r(i)} of ([q = i] - p_iq) / A_q
    Delta_i = gamma_i * sigma_i^2 / c^2 * sum over {q: r(q) <= r(i)} of p_iq (1 - p_iq) / A_q
    player: mu    += sigma^2 / sigma_i^2 * Omega_i                 (x w if Omega_i >= 0, else / w)
            sigma *= sqrt(max(1 - sigma^2 / sigma_i^2 * Delta_i, kappa))  (x w or / w likewise)

Lower ranks are better, equal ranks tie, and ranks are truncated to integers as the package
does (1.2 and 1.7 tie). Weights w (partial play) are rescaled within each team (``_scaled``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Final

__all__ = ["Model", "ordinal", "predict_draw", "predict_win", "rate", "rate_win"]

Rating = tuple[float, float]  # (mu, sigma)

_WEIGHT_BOUNDS: Final = (1.0, 2.0)  # the package's default weight_bounds
_SQRT2: Final = math.sqrt(2.0)
_NORMAL: Final = NormalDist()


@dataclass(frozen=True, slots=True)
class Model:
    """The model's constants (the package's defaults)."""

    mu: float = 25.0
    sigma: float = 25.0 / 3.0
    beta: float = 25.0 / 6.0
    kappa: float = 0.0001
    tau: float = 25.0 / 300.0

    def __post_init__(self) -> None:
        for name in ("mu", "sigma", "beta", "kappa", "tau"):
            value = getattr(self, name)
            if not math.isfinite(value):
                raise ValueError(f"{name}: must be finite, got {value!r}")
            if name in ("sigma", "beta", "kappa") and value <= 0:
                raise ValueError(f"{name}: must be > 0, got {value!r}")
        if self.tau < 0:
            raise ValueError(f"tau: must be >= 0, got {self.tau!r}")


def ordinal(mu: float, sigma: float, k: float) -> float:
    """The conservative rating mu - k * sigma (a board ranks by it)."""
    return mu - k * sigma


def _added(values: Iterable[float]) -> float:
    """Left to right, as the package's loops add (sum() compensates from Python 3.12 on)."""
    total = 0.0
    for value in values:
        total += value
    return total


def _phi(x: float) -> float:
    """The standard normal CDF, as ``NormalDist().cdf`` computes it (the package calls that)."""
    return 0.5 * (1.0 + math.erf(x / _SQRT2))


def _checked(teams: Sequence[Sequence[Rating]]) -> list[list[Rating]]:
    if len(teams) < 2:
        raise ValueError(f"teams: need at least 2 teams, got {len(teams)}")
    out = []
    for t, team in enumerate(teams):
        if not team:
            raise ValueError(f"teams[{t}]: a team needs at least one player")
        players = [(float(mu), float(sigma)) for mu, sigma in team]
        for p, (mu, sigma) in enumerate(players):
            if not math.isfinite(mu):
                raise ValueError(f"teams[{t}][{p}]: mu must be finite, got {mu!r}")
            if not (math.isfinite(sigma) and sigma > 0):
                raise ValueError(f"teams[{t}][{p}]: sigma must be finite and > 0, got {sigma!r}")
        out.append(players)
    return out


def _team(players: Sequence[Rating]) -> tuple[float, float]:
    """A team's (sum of mu, sum of sigma^2)."""
    # The package adds players up in descending ordinal (mu - 3 sigma) order, for its balance
    # option; the order moves the last bit, so we add in the same order (a stable sort).
    if len(players) > 1:
        players = sorted(players, key=lambda p: p[0] - 3.0 * p[1], reverse=True)
    mu = sigma_squared = 0.0
    for player_mu, sigma in players:
        mu += player_mu
        sigma_squared += sigma**2
    return mu, sigma_squared


def _scaled(weights: Sequence[float]) -> list[float]:
    """The package's ``_normalize``: a team's weights onto [1, 2]; a lone player's is 2."""
    bottom, top = _WEIGHT_BOUNDS
    if len(weights) == 1:
        return [top]
    low = min(weights)
    span = (max(weights) - low) or 0.0001  # all equal: the package's stand-in, every weight 1
    return [(w - low) / span * (top - bottom) + bottom for w in weights]


def _checked_weights(weights: Sequence[Sequence[float]], teams: list[list[Rating]]) -> None:
    if len(weights) != len(teams):
        raise ValueError(f"weights: expected {len(teams)} lists (one per team), got {len(weights)}")
    for t, (team_weights, team) in enumerate(zip(weights, teams, strict=True)):
        if len(team_weights) != len(team):
            raise ValueError(f"weights[{t}]: expected {len(team)} (one per player)")
        if not all(math.isfinite(w) and w >= 0 for w in team_weights):
            raise ValueError(f"weights[{t}]: must be finite and >= 0, got {list(team_weights)}")


def rate(
    model: Model,
    teams: Sequence[Sequence[Rating]],
    ranks: Sequence[float],
    weights: Sequence[Sequence[float]] | None = None,
) -> list[list[Rating]]:
    """PlackettLuce.rate(teams, ranks=ranks, weights=weights) of the package."""
    checked = _checked(teams)
    if len(ranks) != len(checked):
        raise ValueError(f"ranks: expected {len(checked)} (one per team), got {len(ranks)}")
    if not all(math.isfinite(r) for r in ranks):
        raise ValueError(f"ranks: must be finite, got {list(ranks)}")
    if weights is not None:
        _checked_weights(weights, checked)
    tau_squared = model.tau * model.tau
    widened = [[(mu, math.sqrt(s * s + tau_squared)) for mu, s in team] for team in checked]
    # The package sorts teams by rank (stably), rates them, and puts them back in order.
    order = sorted(range(len(checked)), key=lambda i: ranks[i])
    try:
        updated = _update(
            model,
            [widened[i] for i in order],
            [int(ranks[i]) for i in order],  # int(): the package's truncation
            None if weights is None else [_scaled(weights[i]) for i in order],
        )
    except (OverflowError, ZeroDivisionError):
        raise ValueError("teams: ratings too far apart for exp(mu / c) in floats") from None
    return [updated[order.index(i)] for i in range(len(order))]


def _update(
    model: Model, teams: list[list[Rating]], ranks: list[int], weights: list[list[float]] | None
) -> list[list[Rating]]:
    """Algorithm 4 over teams sorted by rank (the package's ``_compute``)."""
    stats = [_team(team) for team in teams]
    beta_squared = model.beta**2
    c = math.sqrt(_added(sigma_squared + beta_squared for _, sigma_squared in stats))
    strength = [math.exp(mu / c) for mu, _ in stats]
    pairs = list(zip(ranks, strength, strict=True))
    sum_q = [_added(e for rank_s, e in pairs if rank_s >= rank_q) for rank_q in ranks]
    a = [ranks.count(rank) for rank in ranks]
    out = []
    for i, (team, (_, sigma_squared)) in enumerate(zip(teams, stats, strict=True)):
        omega = delta = 0.0
        for q in range(len(teams)):
            if ranks[q] <= ranks[i]:
                p = strength[i] / sum_q[q]
                delta += p * (1 - p) / a[q]
                omega += (1 - p) / a[q] if q == i else -p / a[q]
        omega *= sigma_squared / c
        delta *= sigma_squared / c**2
        delta *= math.sqrt(sigma_squared) / c  # the default gamma
        rated = []
        for j, (mu, sigma) in enumerate(team):
            w = 1.0 if weights is None else weights[i][j]
            share = sigma**2 / sigma_squared
            # More weight moves a winner further and a loser less far.
            if omega >= 0:
                mu += share * omega * w
                sigma *= math.sqrt(max(1 - share * delta * w, model.kappa))
            else:
                mu += share * omega / w
                sigma *= math.sqrt(max(1 - share * delta / w, model.kappa))
            rated.append((mu, sigma))
        out.append(rated)
    # The package then means to give tied teams their average mu change, but it measures each
    # player's change against itself (it updates in place), so it adds 0: nothing to do here.
    return out


def _pair_scale(beta: float, a: tuple[float, float], b: tuple[float, float]) -> float:
    return math.sqrt(2 * beta**2 + a[1] + b[1])


def predict_win(model: Model, teams: Sequence[Sequence[Rating]]) -> list[float]:
    """PlackettLuce.predict_win: each team's probability of finishing first (they sum to 1)."""
    stats = [_team(team) for team in _checked(teams)]
    n = len(stats)
    if n == 2:
        a, b = stats
        p = _phi((a[0] - b[0]) / _pair_scale(model.beta, a, b))
        return [p, 1 - p]
    # Each team's mean chance of beating each other team, scaled to sum to 1.
    wins = []
    for i, a in enumerate(stats):
        others = stats[:i] + stats[i + 1 :]
        beats = (_phi((a[0] - b[0]) / _pair_scale(model.beta, a, b)) for b in others)
        wins.append(_added(beats) / (n - 1))
    total = _added(wins)
    return [w / total for w in wins]


def predict_draw(model: Model, teams: Sequence[Sequence[Rating]]) -> float:
    """PlackettLuce.predict_draw."""
    checked = _checked(teams)
    stats = [_team(team) for team in checked]
    players = sum(len(team) for team in checked)
    # A draw margin for a draw chance of 1 / players, then the mean over pairs of teams of
    # P(|difference| < margin).
    margin = math.sqrt(players) * model.beta * _NORMAL.inv_cdf((1 + 1 / players) / 2)
    draws = []
    for a, b in itertools.combinations(stats, 2):
        scale = _pair_scale(model.beta, a, b)
        draws.append(_phi((margin - a[0] + b[0]) / scale) - _phi((b[0] - a[0] - margin) / scale))
    return _added(draws) / len(draws)


def rate_win(
    beta: float, kappa: float, tau: float, winner: Rating, loser: Rating
) -> tuple[Rating, Rating, float]:
    """A 1v1 win, as ``rate(model, [[winner], [loser]], [1, 2])`` and the winner's
    ``predict_win(model, [[winner], [loser]])[0]`` compute it, with the same float operations
    in the same order (so to the bit: a test compares them), written out for two teams of one
    (a replay rates a million of them): (winner after, loser after, the winner's chance)."""
    mu_w, sigma_w = float(winner[0]), float(winner[1])
    mu_l, sigma_l = float(loser[0]), float(loser[1])
    fine = math.isfinite(mu_w) and math.isfinite(mu_l)
    if not (fine and math.isfinite(sigma_w + sigma_l) and sigma_w > 0 and sigma_l > 0):
        _checked([[winner], [loser]])  # raises the error ``rate`` gives
    try:
        beta_squared = beta**2
        # predict_win: the ratings before, each team of one as _team adds it up from 0.0.
        chance = _phi(
            (0.0 + mu_w - (0.0 + mu_l))
            / math.sqrt(2 * beta_squared + (0.0 + sigma_w**2) + (0.0 + sigma_l**2))
        )
        # rate: sigma widened by tau, then _update for ranks [1, 2].
        tau_squared = tau * tau
        sigma_w = math.sqrt(sigma_w * sigma_w + tau_squared)
        sigma_l = math.sqrt(sigma_l * sigma_l + tau_squared)
        squared_w, squared_l = 0.0 + sigma_w**2, 0.0 + sigma_l**2
        c = math.sqrt(0.0 + (squared_w + beta_squared) + (squared_l + beta_squared))
        strength_w, strength_l = math.exp((0.0 + mu_w) / c), math.exp((0.0 + mu_l) / c)
        both, alone = 0.0 + strength_w + strength_l, 0.0 + strength_l
        p = strength_w / both  # the winner: q = the winner only
        omega_w, delta_w = 0.0 + (1 - p), 0.0 + p * (1 - p)
        p = strength_l / both  # the loser: q = the winner, then the loser
        omega_l, delta_l = 0.0 + -p, 0.0 + p * (1 - p)
        p = strength_l / alone
        omega_l += 1 - p
        delta_l += p * (1 - p)
    except (OverflowError, ZeroDivisionError):
        raise ValueError("teams: ratings too far apart for exp(mu / c) in floats") from None
    return (
        _moved(mu_w, sigma_w, squared_w, omega_w, delta_w, c, kappa),
        _moved(mu_l, sigma_l, squared_l, omega_l, delta_l, c, kappa),
        chance,
    )


def _moved(
    mu: float, sigma: float, squared: float, omega: float, delta: float, c: float, kappa: float
) -> Rating:
    """One player of a team of one after ``_update``'s sums (its weight 1)."""
    omega *= squared / c
    delta *= squared / c**2
    delta *= math.sqrt(squared) / c
    share = sigma**2 / squared
    if omega >= 0:
        mu += share * omega * 1.0
        sigma *= math.sqrt(max(1 - share * delta * 1.0, kappa))
    else:
        mu += share * omega / 1.0
        sigma *= math.sqrt(max(1 - share * delta / 1.0, kappa))
    return mu, sigma
