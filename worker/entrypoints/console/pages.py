"""The console's pages: what each one reads and the values its template shows.

Each page is built on a thread of the console's own pools (``add_routes``), so a hung store
answers 503 within seconds and never holds up the JSON API. The reads are the JSON API's own:
``worker.boards.reader`` for boards and cards, ``worker.store.history`` for rating changes,
``worker.store.games`` for the games (rated or not), ``worker.ops.calibrate`` for calibration.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote, urlencode

from engine import display_change, display_rating
from engine.reasons import Reason
from worker.boards import reader
from worker.entrypoints.console.charts import Point, Series, calibration_svg, rating_svg
from worker.ladders import Config, LadderConfig
from worker.ops import seasons
from worker.ops.calibrate import calibrate
from worker.service import cards
from worker.store import games, history
from worker.store.routes import Databases

PAGE_SIZE = 25
SEARCH_RADIUS = 10
CHART_GAMES = 500  # rated games drawn on a player's chart (the latest)
LISTED_GAMES = 50  # games listed under it

# Why a game did not count, as a player reads it (SPEC 2.4, in filter order).
REASON_WORDS: dict[str, str] = {
    Reason.NOT_RANKED.value: "not a ranked game (boosted or tournament)",
    Reason.BOT.value: "a bot or the AI played",
    Reason.SHARED_NETWORK.value: "the players share a network",
    Reason.PAIR_LIMIT.value: "this pair's rated games for the day were used up",
    Reason.SELF_PLAY.value: "an anonymous id against its own account",
}


class Missing(LookupError):
    """An unknown ladder or board (404)."""


@dataclass(frozen=True)
class Stores:
    config: Config
    redis: reader.Client
    databases: Databases  # each ladder's PostgreSQL (``worker.store.routes``)


def player_url(ladder: str, player: str) -> str:
    return f"/ui/ladders/{quote(ladder, safe='')}/players/{quote(player, safe='')}"


def ladder_url(ladder: str, **query: Any) -> str:
    shown = {k: v for k, v in query.items() if v not in (None, "")}
    tail = f"?{urlencode(shown)}" if shown else ""
    return f"/ui/ladders/{quote(ladder, safe='')}{tail}"


def _ladder(stores: Stores, name: str) -> LadderConfig:
    found = stores.config.ladder(name)
    if found is None:
        raise Missing(f"no ladder named {name!r}")
    return found


def _when(value: str | None) -> str:
    if not value:
        return "-"
    try:
        return datetime.fromisoformat(value).strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return value


def index(stores: Stores) -> dict[str, Any]:
    ladders = []
    for lc in stores.config.ladders.values():
        rules = lc.current
        top = reader.page(stores.redis, lc.name, size=3)
        ladders.append(
            {
                "name": lc.name,
                "url": ladder_url(lc.name),
                "calibration_url": ladder_url(lc.name) + "/calibration",
                "ruleset": rules.kind,
                "version": rules.version,
                "players": top.total,
                "top": [
                    {
                        "rank": e.rank,
                        "player_id": e.player_id,
                        "url": player_url(lc.name, e.player_id),
                        "rating": display_rating(rules, e.rating),
                    }
                    for e in top.entries
                ],
            }
        )
    return {"title": "Ladders", "ladders": ladders}


def boards(stores: Stores, lc: LadderConfig) -> list[str]:
    names = [b for b in reader.BOARDS if reader.board_available(lc, b)]
    for season in seasons.list_seasons(stores.databases.for_ladder(lc.name), lc.name):
        if not season["open"]:
            names.append(f"{reader.SEASON_PREFIX}{season['name']}")
    return names


def leaderboard(
    stores: Stores,
    name: str,
    board: str,
    cursor: str | None,
    direction: str,
    search: str | None,
) -> dict[str, Any]:
    lc = _ladder(stores, name)
    rules = lc.current
    known = boards(stores, lc)
    if board not in known:
        raise Missing(f"ladder {name!r} has no {board} board")
    notice = None
    found_player = None
    if search:
        try:
            entries = reader.around(stores.redis, name, search, SEARCH_RADIUS, board)
            found_player = search
            total = reader.page(stores.redis, name, size=1, board=board).total
            next_cursor = prev_cursor = None
        except reader.UnknownPlayer:
            notice = f"No player “{search}” on the {board} board (ids match exactly)."
            search = None
    if not search:
        page = reader.page(
            stores.redis,
            name,
            cursor=cursor,
            size=PAGE_SIZE,
            direction="prev" if direction == "prev" else "next",
            board=board,
        )
        entries, total = page.entries, page.total
        next_cursor, prev_cursor = page.next_cursor, page.prev_cursor
    points = board == "boosted"
    rows = [
        {
            "rank": e.rank,
            "player_id": e.player_id,
            "url": player_url(name, e.player_id),
            "rating": str(int(e.rating)) if points else display_rating(rules, e.rating),
            "provisional": e.provisional and not points,
            "mark": e.player_id == found_player,
        }
        for e in entries
    ]
    return {
        "title": f"{name} leaderboard",
        "ladder": name,
        "ruleset": rules.kind,
        "version": rules.version,
        "board": board,
        "score_name": "points" if points else "rating",
        "tabs": [
            {
                "name": b,
                "url": ladder_url(name, board=None if b == "rating" else b),
                "on": b == board,
            }
            for b in known
        ],
        "rows": rows,
        "total": total,
        "search": found_player or "",
        "notice": notice,
        "next_url": ladder_url(name, board=board if board != "rating" else None, cursor=next_cursor)
        if next_cursor
        else None,
        "prev_url": ladder_url(
            name, board=board if board != "rating" else None, cursor=prev_cursor, direction="prev"
        )
        if prev_cursor
        else None,
        "board_value": "" if board == "rating" else board,
        "calibration_url": ladder_url(name) + "/calibration",
    }


def player(stores: Stores, name: str, player_id: str) -> dict[str, Any]:
    """The player's page as moderated (SPEC 6 "One history"): the card's numbers, the chart of
    every change applied (a voided game's is not; a void's correction and an adjustment are),
    so it ends at the current rating, and the games in scoring order (as ``ladder history``
    lists them) beside the moderation rows that changed the rating, each with the rating after
    it as moderated: the rows add up to the card, and a voided game's change is shown struck,
    not applied."""
    lc = _ladder(stores, name)
    rules = lc.current
    card = cards.card(stores.redis, stores.databases.for_ladder(name), name, player_id)
    changes = history.history(stores.databases.for_ladder(name), name, player_id, CHART_GAMES)
    applied = [c for c in reversed(changes) if not c.voided]
    points = [
        Point(
            datetime.fromisoformat(c.ended_at or c.at).timestamp(),
            c.running,
            f"{_when(c.ended_at or c.at)}: "
            + (
                _CHANGE_WORDS.get(c.kind, c.kind)
                if not c.result
                else f"{c.result} against {c.opponent}"
                if c.opponent
                else c.result  # a team game of more than two players: "rank 2 of 4"
            )
            + f", {display_change(rules, c.counted)} to {display_rating(rules, c.running)}",
        )
        for c in applied
    ]
    chart = rating_svg(
        points,
        f"{player_id}: rating after each change",
        lambda r: display_rating(rules, r),
    )
    ledger = {c.event_id: c for c in changes if c.kind == "game"}
    listed: list[dict[str, Any]] = []
    for g in games.games(stores.databases.for_ladder(name), name, player_id, LISTED_GAMES):
        counted = g.delta is not None
        voided = g.outcome == VOIDED
        why = "voided" if voided else REASON_WORDS.get(g.reason or "", g.reason or "unrated")
        row = ledger.get(g.event_id)
        shown = row.delta if voided and row is not None else g.delta  # voided: the change it had
        listed.append(
            {
                "date": _when(g.ended_at)[:10],
                "time": _when(g.ended_at)[11:],
                "place": g.seq,
                "opponent": g.opponent or "",
                "opponent_url": player_url(name, g.opponent) if g.opponent else "",
                "moderation": False,
                "result": g.result,
                "mode": g.mode or "",
                "counted": counted,
                "voided": voided,
                "change": display_change(rules, shown) if shown is not None else "",
                "struck": voided and row is not None,  # shown struck: not applied
                "up": counted and (g.delta or 0.0) > 0,
                "down": counted and (g.delta or 0.0) < 0,
                "rating": display_rating(rules, row.running) if row else "",
                "why": "" if counted else why,
                "detail": _detail(lc, g),
            }
        )
    for c in changes:
        if c.kind not in MODERATION_KINDS:
            continue
        listed.append(
            {
                "date": _when(c.at)[:10],
                "time": _when(c.at)[11:],
                "place": c.after + 0.5,  # after the last event stored when it was done
                "opponent": "",
                "opponent_url": "",
                "moderation": True,
                "result": c.kind,
                "mode": "",
                "counted": True,
                "voided": False,
                "change": display_change(rules, c.counted),
                "struck": False,
                "up": c.counted > 0,
                "down": c.counted < 0,
                "rating": display_rating(rules, c.running),
                "why": "",
                "detail": c.note or "",
            }
        )
    listed.sort(key=lambda g: g["place"], reverse=True)
    facts = cards.facts(lc, card, _when)
    return {
        "title": f"{player_id} on {name}",
        "ladder": name,
        "ladder_url": ladder_url(name),
        "player_id": player_id,
        "provisional": card.provisional,
        "banned": card.banned,
        "facts": facts,
        "chart": chart,
        "points": len(points),
        "capped": len(changes) >= CHART_GAMES,
        "archived": _archived(stores, name, player_id),
        "games": listed[:LISTED_GAMES],
    }


VOIDED = "voided"
MODERATION_KINDS = ("correction", "adjustment")
_CHANGE_WORDS = {
    "prize": "tournament prize",
    "link": "linked account",
    "season": "season reset",
    "import": "imported",
    "correction": "correction",
    "adjustment": "adjustment",
}


def _archived(stores: Stores, name: str, player_id: str) -> str:
    """The note of the player's history archived before the ladder's boundary, or ""."""
    found = history.archived(stores.databases.for_ladder(name), name, player_id)
    return "" if found is None else found.note()


def _detail(lc: LadderConfig, g: games.Game) -> str:
    if g.opponent is None:
        return "team game"  # of more than two players: its result is its team's place
    if lc.current.stake == "match_length" and g.match_length:
        return f"{g.match_length}-point match"
    if lc.current.stake == "cube" and g.cube and g.cube > 1:
        return f"cube {g.cube}"
    return ""


def _closing(high: float) -> str:
    return "]" if high == 1.0 else ")"  # the last bucket, [0.95, 1.00], is closed


def calibration(stores: Stores, name: str) -> dict[str, Any]:
    lc = _ladder(stores, name)
    rules = lc.current
    found = calibrate(stores.databases.for_ladder(lc.name), lc)
    series = [Series(f"version {v}", m["buckets"]) for v, m in found.versions.items()]
    chart = calibration_svg(series, f"{name}: observed against expected")
    versions = []
    for version, m in found.versions.items():
        s = m["spread"]
        spread = None
        if s["players"]:
            spread = [
                ("Active players", str(s["players"])),
                ("p10", display_rating(rules, s["p10"])),
                ("p50", display_rating(rules, s["p50"])),
                ("p90", display_rating(rules, s["p90"])),
                ("Standard deviation", f"{s['stdev']:.1f}"),
                ("Central half (p75 - p25)", display_rating(rules, s["central_half"])),
            ]
        versions.append(
            {
                "version": version,
                "games": m["games"],
                "brier": f"{m['brier']:.4f}" if m["brier"] is not None else "-",
                "log_loss": f"{m['log_loss']:.4f}" if m["log_loss"] is not None else "-",
                "buckets": [
                    {
                        "range": f"[{b['low']:.2f}, {b['high']:.2f}{_closing(b['high'])}",
                        "games": b["games"],
                        "expected": f"{b['mean_expected']:.3f}" if b["games"] else "-",
                        "observed": f"{b['observed']:.3f}" if b["games"] else "-",
                        "gap": (
                            f"{(b['observed'] - b['mean_expected']) * 100:+.1f} pts"
                            if b["games"]
                            else ""
                        ),
                    }
                    for b in m["buckets"]
                ],
                "spread": spread,
                "lengths": [
                    {
                        "length": length,
                        "games": x["games"],
                        "brier": f"{x['brier']:.4f}",
                        "log_loss": f"{x['log_loss']:.4f}",
                    }
                    for length, x in m.get("match_lengths", {}).items()
                ],
            }
        )
    return {
        "title": f"{name} calibration",
        "ladder": name,
        "ladder_url": ladder_url(name),
        "games": found.games,
        "chart": chart,
        "versions": versions,
    }
