"""What a batch needs read before ``apply`` decides on its events: the engine's own answer.

A worker reads, for one batch, the links of the ids its events name and which of its event
ids were applied before (``named``); then it asks ``needs`` what else to read: every player
the batch may create, with the start rating of the first event that names them (the rule
``apply`` follows), the players a duplicate re-projects if they exist, the tournaments to
check for a prize already paid, and what the games count in their windows (SPEC 2.1 K by
weekly volume, 2.4 pair limits).

An event applied before creates nobody: its ids may have been erased since (SPEC 5, erase),
and a copy of it sent again, or a batch recovered after the erase, must not bring the id back
as an empty player.
"""

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import NamedTuple

from engine.fairplay import may_be_rated
from engine.ladder import (
    Event,
    GameFinished,
    IdentityLinked,
    MatchFinished,
    Policy,
    TournamentFinished,
    named_ids,
    players_again,
    players_of,
    unsupported,
    window_pair,
)
from engine.player import PlayerKey
from engine.rulesets import Ruleset

__all__ = ["Needs", "WindowAsk", "named", "needs"]


@dataclass(frozen=True)
class WindowAsk:
    """What one ladder's batch counts in its windows (``engine.Windows``), for its games that
    ended in [first, last]: the ranked games of ``ranked_ids`` in the ``ranked_hours``
    (shortest, longest; None: the rules count none) before each game, and the rated games
    between the two players of each of ``pairs`` in the ``pair_hours`` before it."""

    ladder: str
    first: datetime
    last: datetime
    ranked_ids: Sequence[str]
    ranked_hours: tuple[int, int] | None
    pairs: Sequence[tuple[str, str]]
    pair_hours: int

    @property
    def since(self) -> datetime:
        """The start of the earliest window the batch reads."""
        hours = self.pair_hours
        if self.ranked_hours is not None:
            hours = max(hours, self.ranked_hours[1])
        return self.first - timedelta(hours=hours)

    @property
    def core(self) -> tuple[datetime, datetime]:
        """[start, end) of the ranked games every window of the batch counts: those after the
        last game's shortest window opens and before the first game ended. Empty (start ==
        end) when the batch spans a window or more."""
        shortest = 0 if self.ranked_hours is None else self.ranked_hours[0]
        return min(self.last - timedelta(hours=shortest), self.first), self.first


class Needs(NamedTuple):
    """What a batch reads besides its links and the ids applied before."""

    starts: dict[PlayerKey, float]  # created if missing (at that rating), then locked
    existing: set[PlayerKey]  # read if they exist: the players a duplicate re-projects
    tournaments: set[tuple[str, str]]  # (ladder, tournament_id): settled before?
    windows: list[WindowAsk]


def named(events: Iterable[Event]) -> dict[str, set[str]]:
    """Per ladder, the ids the events name (as sent): whose links the batch reads."""
    found: dict[str, set[str]] = {}
    for event in events:
        found.setdefault(event.ladder, set()).update(named_ids(event))
    return found


def needs(
    events: Sequence[Event],
    rules_for: Callable[[Event], Ruleset],
    policies: Mapping[str, Policy],
    links: Mapping[str, Mapping[str, str]],
    seen: Collection[tuple[str, str]],
) -> Needs:
    """What ``events`` need besides ``links`` (per ladder, {anonymous: account}) and ``seen``
    (the (ladder, event_id) keys applied before); ``rules_for``: each event's ruleset version
    (the one ``apply`` is given)."""
    starts: dict[PlayerKey, float] = {}
    existing: set[PlayerKey] = set()
    tournaments: set[tuple[str, str]] = set()
    games: dict[str, list[tuple[tuple[str, str], datetime, Ruleset]]] = {}
    linking: dict[str, dict[str, str]] = {}
    for event in events:
        ladder = event.ladder
        ladder_links = links.get(ladder, {})
        if (ladder, event.event_id) in seen:  # a duplicate or a conflict: nobody is created
            existing.update(players_again(event, ladder_links))
            continue
        rules = rules_for(event)
        if unsupported(event, rules):  # dead-lettered: nobody is created
            continue
        for key in players_of(event, ladder_links):
            starts.setdefault(key, rules.start)
        match event:
            case GameFinished() | MatchFinished() if may_be_rated(
                event.mode, policies[ladder].fairplay
            ):
                pair = window_pair(event)
                if pair is not None:
                    games.setdefault(ladder, []).append((pair, event.ended_at, rules))
            case TournamentFinished():
                tournaments.add((ladder, event.tournament_id))
            case IdentityLinked():
                linking.setdefault(ladder, {})[event.anonymous_id] = event.account_id
            case _:
                pass
    asks = [
        _window_ask(ladder, played, links.get(ladder, {}), linking.get(ladder, {}), policies)
        for ladder, played in games.items()
    ]
    return Needs(starts, existing - starts.keys(), tournaments, asks)


def _window_ask(
    ladder: str,
    games: list[tuple[tuple[str, str], datetime, Ruleset]],
    resolved: Mapping[str, str],
    later: Mapping[str, str],
    policies: Mapping[str, Policy],
) -> WindowAsk:
    """One ladder's windows: the ranked games of its games' players and the rated games of
    their pairs. A player is asked as the links resolve them before the batch, and also as
    the account an anonymous id is linked to by the batch itself."""
    hours: set[int] = set()
    players: set[str] = set()
    pairs: set[tuple[str, str]] = set()
    for (winner, loser), _, rules in games:
        winners = _as_asked(winner, resolved, later)
        losers = _as_asked(loser, resolved, later)
        span = rules.k_window_hours
        if span is not None:
            hours.add(span)
            players.update(winners)
            players.update(losers)
        pairs.update((min(w, lo), max(w, lo)) for w in winners for lo in losers if w != lo)
    return WindowAsk(
        ladder,
        first=min(ended_at for _, ended_at, _ in games),
        last=max(ended_at for _, ended_at, _ in games),
        ranked_ids=sorted(players),
        ranked_hours=(min(hours), max(hours)) if hours else None,
        pairs=sorted(pairs),
        pair_hours=policies[ladder].fairplay.pair_window_hours,
    )


def _as_asked(
    player_id: str, resolved: Mapping[str, str], later: Mapping[str, str]
) -> tuple[str, ...]:
    """The ids a game's player may be scored as: as resolved before the batch, or as the
    account the batch itself links it to."""
    found = resolved.get(player_id, player_id)
    account = later.get(player_id)
    return (found,) if account is None or account == found else (found, account)
