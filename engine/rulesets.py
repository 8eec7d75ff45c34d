"""Ruleset parameters, one frozen value per ruleset, with the seeds' numbers as defaults.

Sources: seed 002 (Gammon42 ELO article, version 1.3.1), seed 003 (FIBS-formula page) and seed
004 (ProStriker Elo page); SPEC section 2. A ladder is scored with the parameter version in
force at a game's ``ended_at`` (SPEC 2), so every ruleset carries a ``version`` that the audit
row records; older Gammon42 versions are the same class with other numbers (divisor 400 before
1.2.0, 800 in 1.2.0 to 1.3.0, no heavy-volume K before 1.3.1).

Parameters come from a TOML file, so ``__post_init__`` validates them and turns TOML arrays
(lists) into tuples: a bad file must fail when it is loaded, not halfway through a game.
"""

import math
from dataclasses import dataclass
from typing import ClassVar, Final

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


def _require_version(version: str) -> None:
    _require(isinstance(version, str) and version.strip() != "", "version", "must be non-empty")


def _require_finite(value: float, field: str) -> None:
    _require(math.isfinite(value), field, f"must be a finite number, got {value!r}")


@dataclass(frozen=True, slots=True)
class Gammon42Rules:
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

    def __post_init__(self) -> None:
        _require_version(self.version)
        _require_finite(self.start, "start")
        _require_finite(self.divisor, "divisor")
        _require(self.divisor > 0, "divisor", f"must be > 0, got {self.divisor!r}")
        _require(self.k > 0, "k", f"must be > 0, got {self.k!r}")
        _require(self.heavy_k > 0, "heavy_k", f"must be > 0, got {self.heavy_k!r}")
        _require(self.heavy_games > 0, "heavy_games", f"must be > 0, got {self.heavy_games!r}")
        _require(
            self.heavy_window_hours > 0,
            "heavy_window_hours",
            f"must be > 0, got {self.heavy_window_hours!r}",
        )
        prizes = tuple(self.prizes)
        _require(all(p >= 0 for p in prizes), "prizes", f"must all be >= 0, got {prizes!r}")
        object.__setattr__(self, "prizes", prizes)


@dataclass(frozen=True, slots=True)
class FibsRules:
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

    def __post_init__(self) -> None:
        _require_version(self.version)
        _require_finite(self.start, "start")
        _require_finite(self.divisor, "divisor")
        _require(self.divisor > 0, "divisor", f"must be > 0, got {self.divisor!r}")
        _require_finite(self.value_factor, "value_factor")
        _require(self.value_factor > 0, "value_factor", f"must be > 0, got {self.value_factor!r}")
        _require(
            self.newcomer_limit >= 0,
            "newcomer_limit",
            f"must be >= 0, got {self.newcomer_limit!r}",
        )
        _require_finite(self.newcomer_max, "newcomer_max")
        # Below 1 the "bonus" would shrink a newcomer's changes, the opposite of seed 003.
        _require(self.newcomer_max >= 1, "newcomer_max", f"must be >= 1, got {self.newcomer_max!r}")
        _require_finite(self.newcomer_step, "newcomer_step")
        _require(
            self.newcomer_step > 0, "newcomer_step", f"must be > 0, got {self.newcomer_step!r}"
        )
        _require(
            self.provisional_below >= 0,
            "provisional_below",
            f"must be >= 0, got {self.provisional_below!r}",
        )
        _require(
            self.public_min_experience >= 0,
            "public_min_experience",
            f"must be >= 0, got {self.public_min_experience!r}",
        )


@dataclass(frozen=True, slots=True)
class ProStrikerRules:
    """Classic Elo with K tiers by rated games (seed 004, SPEC 2.3)."""

    version: str = "1"
    start: float = 1200.0
    divisor: float = 400.0
    # (rated games below, K), ascending; players past the last tier use k_established.
    k_tiers: tuple[tuple[int, int], ...] = ((30, 40), (200, 24))
    k_established: int = 16
    kind: ClassVar[str] = "prostriker"

    def __post_init__(self) -> None:
        _require_version(self.version)
        _require_finite(self.start, "start")
        _require_finite(self.divisor, "divisor")
        _require(self.divisor > 0, "divisor", f"must be > 0, got {self.divisor!r}")
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
        _require(
            self.k_established > 0,
            "k_established",
            f"must be > 0, got {self.k_established!r}",
        )
        object.__setattr__(self, "k_tiers", tiers)


Ruleset = Gammon42Rules | FibsRules | ProStrikerRules

RULESET_KINDS: Final[dict[str, type[Ruleset]]] = {
    Gammon42Rules.kind: Gammon42Rules,
    FibsRules.kind: FibsRules,
    ProStrikerRules.kind: ProStrikerRules,
}
