"""What a batch needs from the store before the engine decides: every player it may touch
with their start rating, and what its games count in their windows (SPEC 2.1 K by weekly
volume, 2.4 pair limits), asked in one round trip and turned into the engine's ``Windows``.
"""

from __future__ import annotations

from datetime import datetime

from engine import PlayerKey, Policy, Windows
from engine.ladder import Event, GameFinished, IdentityLinked, named_ids, when
from worker.ladders import Config
from worker.store import statements as store


def named_players(events: list[Event]) -> dict[str, set[str]]:
    """Per ladder, the ids the batch's events name (as sent)."""
    named: dict[str, set[str]] = {}
    for event in events:
        named.setdefault(event.ladder, set()).update(named_ids(event))
    return named


def starts(
    config: Config, events: list[Event], links: dict[str, dict[str, str]], now: datetime
) -> dict[PlayerKey, float]:
    """Every player the batch may touch (each id named, and the account it is linked
    to) with the start rating of the first event that names them: the engine's rule."""
    found: dict[PlayerKey, float] = {}
    for event in events:
        start = config.ladders[event.ladder].rules_at(when(event, now)).start
        ladder_links = links[event.ladder]
        for pid in named_ids(event):
            found.setdefault((event.ladder, pid), start)
            found.setdefault((event.ladder, ladder_links.get(pid, pid)), start)
    return found


def window_asks(
    config: Config,
    policies: dict[str, Policy],
    events: list[Event],
    links: dict[str, dict[str, str]],
) -> list[store.WindowAsk]:
    """Per ladder, what the batch's games count in their windows: the ranked games of
    their players and the rated games of their pairs, under each game's rules. A player
    is asked as the links resolve them before the batch, and also as an account an
    anonymous id of the batch is linked to by the batch itself."""
    by_ladder: dict[str, list[GameFinished]] = {}
    linking: dict[str, dict[str, str]] = {}
    for event in events:
        if isinstance(event, GameFinished):
            policy = policies[event.ladder]
            if event.mode == "ranked" or not policy.fairplay.not_ranked:
                by_ladder.setdefault(event.ladder, []).append(event)
        elif isinstance(event, IdentityLinked):
            linking.setdefault(event.ladder, {})[event.anonymous_id] = event.account_id
    asks: list[store.WindowAsk] = []
    for ladder, games in by_ladder.items():
        ladder_config = config.ladders[ladder]
        resolved = links[ladder]
        later = linking.get(ladder, {})

        hours: set[int] = set()
        players: set[str] = set()
        pairs: set[tuple[str, str]] = set()
        for game in games:
            winners = _as_asked(game.winner.player_id, resolved, later)
            losers = _as_asked(game.loser.player_id, resolved, later)
            span = ladder_config.rules_at(game.ended_at).k_window_hours
            if span is not None:
                hours.add(span)
                players.update(winners)
                players.update(losers)
            pairs.update((min(w, lo), max(w, lo)) for w in winners for lo in losers if w != lo)
        asks.append(
            store.WindowAsk(
                ladder,
                first=min(g.ended_at for g in games),
                last=max(g.ended_at for g in games),
                ranked_ids=sorted(players),
                ranked_hours=(min(hours), max(hours)) if hours else None,
                pairs=sorted(pairs),
                pair_hours=policies[ladder].fairplay.pair_window_hours,
            )
        )
    return asks


def windows(found: store.WindowFacts) -> Windows:
    """The engine's windows from the counts the store answered."""
    out = Windows()
    for ladder, player_id, ended_at in found.ranked:
        out.add_ranked(ladder, player_id, ended_at)
    for ladder, player_id, at, n in found.ranked_counts:
        out.add_ranked_many(ladder, player_id, at, n)
    for ladder, winner_id, loser_id, ended_at in found.rated_pairs:
        out.add_rated_pair(ladder, winner_id, loser_id, ended_at)
    return out


def _as_asked(player_id: str, resolved: dict[str, str], later: dict[str, str]) -> tuple[str, ...]:
    """The ids a game's player may be scored as: as resolved before the batch, or as the
    account the batch itself links it to."""
    found = resolved.get(player_id, player_id)
    account = later.get(player_id)
    return (found,) if account is None or account == found else (found, account)
