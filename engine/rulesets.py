"""Ruleset parameters, one frozen value per ruleset, with the seeds' numbers as defaults.

Sources: seed 002 (Gammon42 ELO article, version 1.3.1), seed 003 (FIBS-formula page) and seed
004 (ProStriker Elo page); SPEC section 2. Beyond the seeds (SPEC 7): Glicko-2 (Glickman's
paper) and the Weng-Lin Plackett-Luce model of the ``openskill`` package, which also rate
draws and team games (``shapes``) and keep a deviation per player. A ladder is scored with
the parameter version in force at a game's ``ended_at`` (SPEC 2), so every ruleset carries a
``version`` that the audit row records; older Gammon42 versions are the same class with other
numbers (divisor 400 before 1.2.0, 800 in 1.2.0 to 1.3.0, no heavy-volume K before 1.3.1).

Parameters come from a TOML file, so ``__post_init__`` validates them and turns TOML arrays
(lists) into tuples: a bad file must fail when it is loaded, not halfway through a game.

Each ruleset answers for itself what the ladder rules ask of it (``engine.ladder``, the
projection and the receipts name no ruleset): ``rate`` a game (each side with its own K), the
``k_window_hours`` its K counts ranked games over, the tournament ``prizes``, whether a player
is ``public_eligible`` and whether a rating is ``provisional``, the ``decimals`` a rating is
shown with and whether ratings move by ``whole_ratings`` only (a season's reset asks), whether
players see their ``experience``, and the ``stake`` (the game's fact its change scales with)
a game is described by and a calibration split by, the ``shapes`` of game it rates
(``rate_match`` for a draw or a team game), a ``newcomer``'s state and the ``board_score``
the boards rank by. What no ruleset overrides is ``_Rules``'s answer. A new ruleset is one
class here and its formulas' module.
"""

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import ClassVar, Final

from engine import fibs, gammon42, glicko2, openskill, prostriker
from engine.player import Player
from engine.rounding import round_half_away
from engine.types import Game, PlayerState, RatingChange, SideChange, moved

__all__ = [
    "RULESET_KINDS",
    "SHAPES",
    "FibsRules",
    "Gammon42Rules",
    "Glicko2Rules",
    "OpenSkillRules",
    "ProStrikerRules",
    "Ruleset",
]

#: The shapes of a finished game (SPEC 7): a 1v1 win, a 1v1 draw, a team or free-for-all game.
SHAPES: Final[tuple[str, ...]] = ("win", "draw", "teams")
# How a refusal names each shape (``Ruleset.rates_only``).
_SHAPE_NAMES: Final[dict[str, str]] = {"win": "1v1 wins", "draw": "draws", "teams": "team games"}

#: A game of teams as the rulesets rate it: each team's players' states before the game.
Teams = Sequence[Sequence[PlayerState]]


def _require(condition: bool, field: str, message: str) -> None:
    if not condition:
        raise ValueError(f"{field}: {message}")


def _check(
    rules: "Ruleset",
    *,
    finite: tuple[str, ...] = (),
    positive: tuple[str, ...] = (),
    at_least: tuple[tuple[str, float], ...] = (),
) -> None:
    """The version is non-empty, then each named field is finite, > 0, >= its bound."""
    version = rules.version
    _require(isinstance(version, str) and version.strip() != "", "version", "must be non-empty")
    for name in finite:
        value = getattr(rules, name)
        _require(math.isfinite(value), name, f"must be a finite number, got {value!r}")
    for name in positive:
        value = getattr(rules, name)
        _require(value > 0, name, f"must be > 0, got {value!r}")
    for name, bound in at_least:
        value = getattr(rules, name)
        _require(value >= bound, name, f"must be >= {bound!r}, got {value!r}")


class _Rules:
    """The answers a ruleset gives unless it says otherwise."""

    __slots__ = ()
    kind: ClassVar[str]
    start: float  # a new player's rating
    prizes: tuple[int, ...] = ()  # no tournament prizes
    decimals: ClassVar[int] = 0  # ratings are whole numbers, shown whole
    #: Whether a rating only ever moves by whole numbers (a change is rounded half away
    #: from zero), so anything that moves it, a season's reset too, rounds the same way.
    whole_ratings: ClassVar[bool] = True
    #: Whether the ruleset keeps an experience players see (a card shows it).
    experience: ClassVar[bool] = False
    #: The game's fact its change scales with, by which a game is described and a
    #: calibration split: "cube" (the doubling cube), "match_length", or None.
    stake: ClassVar[str | None] = None
    #: The shapes of game the ruleset rates (``SHAPES``); another is dead-lettered.
    shapes: ClassVar[frozenset[str]] = frozenset({"win"})
    #: What a team's ``expected`` in a game of teams forecasts, for calibration: "first",
    #: its chance to finish first (``engine.calibration.first_share``), or "score", its mean
    #: score against the other teams (``engine.calibration.mean_score``). For two teams, and
    #: so a 1v1 game, the two are the same.
    team_expected: ClassVar[str] = "first"
    #: A new player's deviation and volatility, where the ruleset keeps them.
    start_deviation: float | None = None
    start_volatility: float | None = None

    def rates_only(self, shape: str) -> str:
        """Why a game of ``shape`` (not in ``shapes``) is refused, in the same words wherever
        it is (a dead letter's detail, a prediction's error): what the ruleset rates, and
        what the game is."""
        rated = " and ".join(_SHAPE_NAMES[name] for name in SHAPES if name in self.shapes)
        return f"rates {rated} only, not {_SHAPE_NAMES.get(shape, shape)}"

    def newcomer(self, ladder: str, player_id: str, at: datetime | None = None) -> Player:
        """A player the ladder has not seen: at the start rating, with no deviation or
        volatility of their own yet (the ruleset's start values stand for them until their
        first rated game), as the store creates them."""
        return Player(ladder, player_id, self.start, updated_at=at)

    @property
    def keeps_deviation(self) -> bool:
        """Whether a player's rating carries a deviation of its own (glicko2's, openskill's
        sigma): a season's reset is soft, and cards, imports and exports carry it."""
        return self.start_deviation is not None

    def season_reset(
        self, rating: float, deviation: float | None, reset: str, fraction: float
    ) -> tuple[float, float | None]:
        """A player's rating and deviation after a season's close with policy ``reset``:
        ``none`` keeps both; ``start`` puts the rating back to the start rating;
        ``toward_start`` moves it ``fraction`` of the way there (rounded half away from zero
        where ratings are whole). A ruleset that keeps a deviation resets softly (SPEC 7):
        the deviation goes to (or ``fraction`` of the way toward) the start deviation and the
        rating stays; a player with no deviation of their own (no rated game yet) is at the
        start already."""
        if reset == "none":
            return rating, deviation
        start = self.start_deviation
        if start is not None:  # keeps_deviation
            if deviation is None:
                return rating, None
            return rating, start if reset == "start" else deviation + (start - deviation) * fraction
        if reset == "start":
            return self.start, deviation
        moved = rating + (self.start - rating) * fraction
        return (float(round_half_away(moved)) if self.whole_ratings else moved), deviation

    def board_score(self, rating: float, deviation: float | None) -> float:
        """What the boards rank a player by: the rating, unless the ruleset says otherwise."""
        del deviation
        return rating

    def rate_match(
        self, teams: Teams, ranks: Sequence[int], weights: Sequence[Sequence[float]]
    ) -> tuple[tuple[SideChange, ...], ...]:
        """Score a draw or a team game: only rulesets whose ``shapes`` have them."""
        del teams, ranks, weights
        raise ValueError(f"the {self.kind} ruleset rates 1v1 wins only")

    @property
    def k_window_hours(self) -> int | None:
        """The hours before a game's ``ended_at`` whose ranked games its K counts (None: K
        counts none)."""
        return None

    def public_eligible(self, player: Player) -> bool:
        """Whether a player on the rating board may be on the public list."""
        del player
        return True

    def provisional(self, player: PlayerState | Player) -> bool:
        """Whether the rating carries the provisional flag (a state, or the stored player)."""
        del player
        return False


class _EloRules(_Rules):
    """A ruleset whose expected score is Elo's logistic curve over ``divisor``."""

    __slots__ = ()
    divisor: float

    @property
    def odds_unit(self) -> float:
        """The rating difference whose expected score has, at even odds, the slope of the
        logistic ``1 / (1 + e^-d)`` (a quarter a unit): how far apart two players of this
        ruleset's scale are for the same odds. Elo-style: ``divisor / ln 10``."""
        return self.divisor / math.log(10)


@dataclass(frozen=True, slots=True)
class Gammon42Rules(_EloRules):
    """Gammon42 Elo with the doubling cube (seed 002, SPEC 2.1)."""

    version: str = "1.3.1"
    start: float = 1500.0
    divisor: float = 1200.0
    k: int = 32
    heavy_volume: bool = True  # K by weekly volume, introduced in 1.3.1
    heavy_k: int = 16
    heavy_games: int = 50  # >= this many ranked games in the window => heavy_k
    heavy_window_hours: int = 168  # 7 days before the game's ended_at, the game itself not counted
    prizes: tuple[int, ...] = (50, 25, 15)  # public tournament podium, first place first
    kind: ClassVar[str] = "gammon42"
    stake: ClassVar[str | None] = "cube"  # seed 002: the cube coefficient

    def __post_init__(self) -> None:
        _check(
            self,
            finite=("start", "divisor"),
            positive=("divisor", "k", "heavy_k", "heavy_games", "heavy_window_hours"),
        )
        prizes = tuple(self.prizes)
        _require(all(p >= 0 for p in prizes), "prizes", f"must all be >= 0, got {prizes!r}")
        object.__setattr__(self, "prizes", prizes)

    @property
    def k_window_hours(self) -> int | None:
        """SPEC 2.1: K by the ranked games of the 7 days before ``ended_at`` (from 1.3.1)."""
        return self.heavy_window_hours if self.heavy_volume else None

    def rate(self, winner: PlayerState, loser: PlayerState, game: Game) -> RatingChange:
        return gammon42.rate(self, winner, loser, game)


@dataclass(frozen=True, slots=True)
class FibsRules(_EloRules):
    """The FIBS match formula with the newcomer multiplier (seed 003, SPEC 2.2)."""

    version: str = "1"
    start: float = 1500.0
    divisor: float = 2000.0
    value_factor: float = 4.0  # V = 4 * sqrt(N)
    newcomer_limit: int = 400  # the multiplier applies until experience reaches 400
    newcomer_max: float = 5.0  # multiplier = max(1, 5 - experience / 100)
    newcomer_step: float = 100.0
    count_current_match: bool = False  # variant: add this match's length to experience first
    provisional_below: int = 50
    public_min_experience: int = 20
    kind: ClassVar[str] = "fibs"
    decimals: ClassVar[int] = 1  # stored unrounded, shown with one decimal (seed 003)
    whole_ratings: ClassVar[bool] = False
    experience: ClassVar[bool] = True  # seed 003: total length of rated matches
    stake: ClassVar[str | None] = "match_length"  # seed 003: V = 4 sqrt(N)

    def __post_init__(self) -> None:
        _check(
            self,
            finite=("start", "divisor", "value_factor", "newcomer_max", "newcomer_step"),
            positive=("divisor", "value_factor", "newcomer_step"),
            # Below 1 the "bonus" would shrink a newcomer's changes, the opposite of seed 003.
            at_least=(
                ("newcomer_max", 1),
                ("newcomer_limit", 0),
                ("provisional_below", 0),
                ("public_min_experience", 0),
            ),
        )

    def rate(self, winner: PlayerState, loser: PlayerState, game: Game) -> RatingChange:
        return fibs.rate(self, winner, loser, game)

    def public_eligible(self, player: Player) -> bool:
        """Seed 003 section 05: verified e-mail, chosen display name and experience >= 20."""
        return fibs.is_public_eligible(
            player.email_verified, player.display_name_chosen, player.experience, self
        )

    def provisional(self, player: PlayerState | Player) -> bool:
        """Seed 003 section 04: below 50 experience (SPEC 2.2)."""
        return fibs.is_provisional(player.experience, self)


@dataclass(frozen=True, slots=True)
class ProStrikerRules(_EloRules):
    """Classic Elo with K tiers by rated games (seed 004, SPEC 2.3)."""

    version: str = "1"
    start: float = 1200.0
    divisor: float = 400.0
    # (rated games below, K), ascending; players past the last tier use k_established.
    k_tiers: tuple[tuple[int, int], ...] = ((30, 40), (200, 24))
    k_established: int = 16
    kind: ClassVar[str] = "prostriker"

    def __post_init__(self) -> None:
        _check(self, finite=("start", "divisor"), positive=("divisor", "k_established"))
        tiers = tuple((int(games), int(k)) for games, k in self.k_tiers)
        for games, k in tiers:
            _require(games > 0, "k_tiers", f"game thresholds must be > 0, got {games!r}")
            _require(k > 0, "k_tiers", f"K values must be > 0, got {k!r}")
        thresholds = [games for games, _ in tiers]
        _require(
            all(a < b for a, b in zip(thresholds, thresholds[1:], strict=False)),
            "k_tiers",
            f"game thresholds must be strictly ascending, got {thresholds!r}",
        )
        object.__setattr__(self, "k_tiers", tiers)

    def rate(self, winner: PlayerState, loser: PlayerState, game: Game) -> RatingChange:
        return prostriker.rate(self, winner, loser, game)


@dataclass(frozen=True, slots=True)
class Glicko2Rules(_Rules):
    """Glicko-2 (Glickman, "Example of the Glicko-2 system"; SPEC 7) with each player's
    deviation grown by the time since their last rated game, as lichess does.

    Each game is one rating period for its players: against every other team as one opponent
    (``engine.glicko2.rate_teams``), after the deviation has grown by
    ``periods_per_day`` rating periods for each day the player did not play (at most
    ``max_deviation``). A rating is provisional while its deviation is above
    ``provisional_deviation``; the public list holds players whose deviation is below
    ``board_deviation``.
    """

    version: str = "1"
    start: float = 1500.0
    start_deviation: float = 350.0
    start_volatility: float = 0.06
    tau: float = 0.5  # the system constant: how fast volatility may change
    periods_per_day: float = 0.21436  # lichess: rating periods per day without a game
    max_deviation: float = 350.0
    provisional_deviation: float = 110.0  # lichess: provisional above 110
    board_deviation: float = 75.0  # lichess: ranked on its boards below 75
    kind: ClassVar[str] = "glicko2"
    whole_ratings: ClassVar[bool] = False  # stored unrounded, shown whole
    shapes: ClassVar[frozenset[str]] = frozenset(SHAPES)
    team_expected: ClassVar[str] = "score"  # the mean E over the other teams

    def __post_init__(self) -> None:
        _check(
            self,
            finite=("start", "start_deviation", "start_volatility", "tau", "periods_per_day"),
            positive=("start_deviation", "start_volatility", "tau", "max_deviation"),
            at_least=(("periods_per_day", 0), ("provisional_deviation", 0), ("board_deviation", 0)),
        )
        _require(
            self.start_deviation <= self.max_deviation,
            "start_deviation",
            f"must be <= max_deviation ({self.max_deviation!r}), got {self.start_deviation!r}",
        )

    def rate(self, winner: PlayerState, loser: PlayerState, game: Game) -> RatingChange:
        """A 1v1 win: ``rate_match`` of two teams of one, to the bit (``glicko2.rate_win``)."""
        del game  # neither the cube nor the match length counts here
        (r_w, d_w, v_w, e_w), (r_l, d_l, v_l, e_l) = glicko2.rate_win(
            self._grown(winner), self._grown(loser), self.tau
        )
        return RatingChange(
            moved(winner, r_w, e_w, d_w, v_w), moved(loser, r_l, e_l, d_l, v_l), 1.0
        )

    def rate_match(
        self, teams: Teams, ranks: Sequence[int], weights: Sequence[Sequence[float]]
    ) -> tuple[tuple[SideChange, ...], ...]:
        before = [[self._grown(p) for p in team] for team in teams]
        after = glicko2.rate_teams(before, ranks, weights, self.tau)
        return tuple(
            tuple(
                moved(p, rating, expected, deviation, volatility)
                for p, (rating, deviation, volatility, expected) in zip(team, done, strict=True)
            )
            for team, done in zip(teams, after, strict=True)
        )

    def _grown(self, p: PlayerState) -> tuple[float, float, float]:
        """A player's (rating, deviation, volatility) at the game: the deviation grown by the
        days without a game (a player who has none yet starts at the start values)."""
        deviation = self.start_deviation if p.deviation is None else p.deviation
        volatility = self.start_volatility if p.volatility is None else p.volatility
        periods = p.idle_days * self.periods_per_day
        return (
            p.rating,
            glicko2.grown(deviation, volatility, periods, self.max_deviation),
            volatility,
        )

    @property
    def odds_unit(self) -> float:
        """Glicko-2's own scale: 400 / ln 10 (173.7178), as Elo's at a divisor of 400."""
        return 400.0 / math.log(10)

    def provisional(self, player: PlayerState | Player) -> bool:
        """Provisional while the deviation is above ``provisional_deviation``."""
        deviation = self.start_deviation if player.deviation is None else player.deviation
        return deviation > self.provisional_deviation

    def public_eligible(self, player: Player) -> bool:
        """On the public list while the deviation is below ``board_deviation``."""
        deviation = self.start_deviation if player.deviation is None else player.deviation
        return deviation < self.board_deviation


@dataclass(frozen=True, slots=True)
class OpenSkillRules(_Rules):
    """Weng-Lin Plackett-Luce (the ``openskill`` package's model; SPEC 7): a player's
    rating is mu and their deviation sigma; the boards rank by mu - k * sigma."""

    version: str = "1"
    start: float = 25.0  # mu of a new player
    start_deviation: float = 25.0 / 3.0  # sigma of a new player
    beta: float = 25.0 / 6.0
    kappa: float = 0.0001
    tau: float = 25.0 / 300.0  # added to sigma before each game, so it never freezes
    k: float = 3.0  # the boards rank by mu - k * sigma
    kind: ClassVar[str] = "openskill"
    decimals: ClassVar[int] = 2
    whole_ratings: ClassVar[bool] = False
    shapes: ClassVar[frozenset[str]] = frozenset(SHAPES)

    def __post_init__(self) -> None:
        _check(
            self,
            finite=("start", "start_deviation", "beta", "kappa", "tau", "k"),
            positive=("start_deviation", "beta", "kappa"),
            at_least=(("tau", 0), ("k", 0)),
        )

    @property
    def model(self) -> openskill.Model:
        """The package's model of these constants, built once for each set of them."""
        return _model(self.start, self.start_deviation, self.beta, self.kappa, self.tau)

    def rate(self, winner: PlayerState, loser: PlayerState, game: Game) -> RatingChange:
        """A 1v1 win: ``rate_match`` of two teams of one, to the bit (``openskill.rate_win``)."""
        del game  # neither the cube nor the match length counts here
        sigma = self.start_deviation
        won, lost, chance = openskill.rate_win(
            self.beta,
            self.kappa,
            self.tau,
            (winner.rating, sigma if winner.deviation is None else winner.deviation),
            (loser.rating, sigma if loser.deviation is None else loser.deviation),
        )
        return RatingChange(
            moved(winner, won[0], chance, won[1]), moved(loser, lost[0], 1 - chance, lost[1]), 1.0
        )

    def rate_match(
        self, teams: Teams, ranks: Sequence[int], weights: Sequence[Sequence[float]]
    ) -> tuple[tuple[SideChange, ...], ...]:
        model = self.model
        sigma = self.start_deviation
        before = [
            [(p.rating, sigma if p.deviation is None else p.deviation) for p in t] for t in teams
        ]
        # Whole games are the package's unweighted call, which weights of 1 are not quite.
        whole = all(w == 1.0 for team in weights for w in team)
        after = openskill.rate(model, before, ranks, None if whole else weights)
        expected = openskill.predict_win(model, before)  # each team's chance to finish first
        return tuple(
            tuple(moved(p, mu, chance, s) for p, (mu, s) in zip(team, done, strict=True))
            for team, done, chance in zip(teams, after, expected, strict=True)
        )

    @property
    def odds_unit(self) -> float:
        """Phi(d / c) with c = sqrt(2) beta has the slope 1 / (c sqrt(2 pi)) at 0."""
        return self.beta * math.sqrt(math.pi) / 2

    def board_score(self, rating: float, deviation: float | None) -> float:
        """The conservative rating mu - k * sigma."""
        sigma = self.start_deviation if deviation is None else deviation
        return openskill.ordinal(rating, sigma, self.k)


_model = functools.lru_cache(maxsize=16)(openskill.Model)

Ruleset = Gammon42Rules | FibsRules | ProStrikerRules | Glicko2Rules | OpenSkillRules

RULESET_KINDS: Final[dict[str, type[Ruleset]]] = {
    rules.kind: rules
    for rules in (Gammon42Rules, FibsRules, ProStrikerRules, Glicko2Rules, OpenSkillRules)
}
