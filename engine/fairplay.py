"""Fair-play filters: why a recorded game does not change ratings.

Source: SPEC 2.4 (order and switches), seed 003 section 06 (only the first 3 rated matches of a
pair within 24 hours count), seed 004 ("Partien, die nicht zählen": bot games and players who
appear to share a network) and seed 002 (only ranked games move the rating).

Each filter is a small pure function returning the reason a game is not rated, or ``None``.
They run in SPEC order and the first reason wins, so the audit row stores exactly one reason
rather than a boolean. Step 1 of SPEC 2.4 (duplicate ``event_id``) is not here: it needs the
audit store and means "no effect at all", not "recorded but unrated".
"""

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Final, NamedTuple

from engine.types import checked_make

__all__ = [
    "FILTERS",
    "MODES",
    "FairPlayConfig",
    "FairPlayFacts",
    "Filter",
    "Reason",
    "bot",
    "may_be_rated",
    "not_ranked",
    "pair_limit",
    "shared_network",
    "verdict",
]


class Reason(StrEnum):
    """Why a game was recorded but not rated; the value is what the audit row stores."""

    NOT_RANKED = "not_ranked"
    BOT = "bot"
    SHARED_NETWORK = "shared_network"
    PAIR_LIMIT = "pair_limit"


# Engine modes; the wire alias "casual" is mapped to "boosted" before it gets here (SPEC 3).
MODES: Final[frozenset[str]] = frozenset({"ranked", "boosted", "tournament"})


@dataclass(frozen=True, slots=True)
class FairPlayConfig:
    """Which filters a ladder applies (each can be switched off, SPEC 2.4) and their limits."""

    not_ranked: bool = True
    bots: bool = True
    shared_network: bool = True
    pair_limit: bool = True
    pair_limit_games: int = 3  # seed 003: "only the first 3 rated matches"
    pair_window_hours: int = 24  # seed 003: "within 24 hours"

    def __post_init__(self) -> None:
        if self.pair_limit_games < 1:
            raise ValueError(f"pair_limit_games: must be >= 1, got {self.pair_limit_games!r}")
        if self.pair_window_hours < 1:
            raise ValueError(f"pair_window_hours: must be >= 1, got {self.pair_window_hours!r}")


class _FairPlayFacts(NamedTuple):
    mode: str  # "ranked" | "boosted" | "tournament"
    winner_is_bot: bool
    loser_is_bot: bool
    winner_network: str | None  # opaque network token (see engine.network), never a raw IP
    loser_network: str | None
    pair_rated_games: int  # rated games of this pair in the window before ended_at


class FairPlayFacts(_FairPlayFacts):
    """What the worker knows about one game when it decides whether to rate it (a named
    tuple, built for every game: ``engine.types``)."""

    __slots__ = ()

    def __new__(
        cls,
        mode: str,
        winner_is_bot: bool,
        loser_is_bot: bool,
        winner_network: str | None,
        loser_network: str | None,
        pair_rated_games: int,
    ) -> "FairPlayFacts":
        if mode not in MODES:
            raise ValueError(f"mode: must be one of {sorted(MODES)}, got {mode!r}")
        if pair_rated_games < 0:
            raise ValueError(f"pair_rated_games: must be >= 0, got {pair_rated_games!r}")
        facts = (mode, winner_is_bot, loser_is_bot, winner_network, loser_network, pair_rated_games)
        return tuple.__new__(cls, facts)

    _make = classmethod(checked_make)  # type: ignore[assignment]


Filter = Callable[[FairPlayFacts, FairPlayConfig], Reason | None]


def may_be_rated(mode: str, cfg: FairPlayConfig) -> bool:
    """Whether a game of ``mode`` passes the first filter: only ranked games change ratings,
    unless the ladder switched the filter off."""
    return mode == "ranked" or not cfg.not_ranked


def not_ranked(facts: FairPlayFacts, cfg: FairPlayConfig) -> Reason | None:
    """Only ranked games change ratings; boosted and tournament games are handled elsewhere."""
    return None if may_be_rated(facts.mode, cfg) else Reason.NOT_RANKED


def bot(facts: FairPlayFacts, cfg: FairPlayConfig) -> Reason | None:
    """A game with a bot (or against the AI) is recorded, never rated."""
    if cfg.bots and (facts.winner_is_bot or facts.loser_is_bot):
        return Reason.BOT
    return None


def shared_network(facts: FairPlayFacts, cfg: FairPlayConfig) -> Reason | None:
    """Players who appear to share a network could be one person on two devices."""
    # A missing token is "unknown", not "shared": both must be present to match.
    if (
        cfg.shared_network
        and facts.winner_network is not None
        and facts.loser_network is not None
        and facts.winner_network == facts.loser_network
    ):
        return Reason.SHARED_NETWORK
    return None


def pair_limit(facts: FairPlayFacts, cfg: FairPlayConfig) -> Reason | None:
    """Once a pair has its quota of rated games in the window, further games are not rated."""
    if cfg.pair_limit and facts.pair_rated_games >= cfg.pair_limit_games:
        return Reason.PAIR_LIMIT
    return None


FILTERS: Final[tuple[Filter, ...]] = (not_ranked, bot, shared_network, pair_limit)


def verdict(facts: FairPlayFacts, cfg: FairPlayConfig) -> Reason | None:
    """Return the first filter's reason not to rate this game, or ``None`` to rate it."""
    for check in FILTERS:
        reason = check(facts, cfg)
        if reason is not None:
            return reason
    return None
