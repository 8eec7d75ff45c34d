"""Ruleset parameters, one frozen value per ruleset, with the seeds' numbers as defaults.

Sources: seed 002 (Gammon42 ELO article, version 1.3.1), seed 003 (FIBS-formula page) and seed
004 (ProStriker Elo page); SPEC section 2. A ladder is scored with the parameter version in
force at a game's ``ended_at`` (SPEC 2), so every ruleset carries a ``version`` that the audit
row records; older Gammon42 versions are the same class with other numbers (divisor 400 before
1.2.0, 800 in 1.2.0 to 1.3.0, no heavy-volume K before 1.3.1).

Parameters come from a TOML file, so ``__post_init__`` validates them and turns TOML arrays
(lists) into tuples: a bad file must fail when it is loaded, not halfway through a game.

Each ruleset answers for itself what the ladder rules ask of it (``engine.ladder``, the
projection and the receipts name no ruleset): ``rate`` a game (each side with its own K), the
``k_window_hours`` its K counts ranked games over, the tournament ``prizes``, whether a player
is ``public_eligible`` and whether a rating is ``provisional``, the ``decimals`` a rating is
shown with and whether ratings move by ``whole_ratings`` only (a season's reset asks), whether
players see their ``experience``, and the ``stake`` (the game's fact its change scales with)
a game is described by and a calibration split by. What
no ruleset overrides is ``_Rules``'s answer. A new ruleset is one class here and its
formulas' module.
"""

import math
from dataclasses import dataclass
from typing import ClassVar, Final

from engine import fibs, gammon42, prostriker
from engine.player import Player
from engine.types import Game, PlayerState, RatingChange

__all__ = [
    "RULESET_KINDS",
    "FibsRules",
    "Gammon42Rules",
    "ProStrikerRules",
    "Ruleset",
]


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


@dataclass(frozen=True, slots=True)
class Gammon42Rules(_Rules):
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
class FibsRules(_Rules):
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
class ProStrikerRules(_Rules):
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


Ruleset = Gammon42Rules | FibsRules | ProStrikerRules

RULESET_KINDS: Final[dict[str, type[Ruleset]]] = {
    Gammon42Rules.kind: Gammon42Rules,
    FibsRules.kind: FibsRules,
    ProStrikerRules.kind: ProStrikerRules,
}
