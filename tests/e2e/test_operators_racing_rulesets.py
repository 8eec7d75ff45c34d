"""Operator actions while real workers score a glicko2 or an openskill ladder: 1v1 wins, draws,
2v2 games and free-for-alls of three or four with ties.

Two ``ladder worker`` processes score a steady stream of every shape among six players. While
they do, an operator erases one player (whose id keeps playing: a new player of the same id),
voids a draw and a team game and bans another player with ``--void-since``. The rules tested:

- SPEC 6, "Erase": it "removes a player's real id from every readable place: all boards and
  hashes, receipt keys, wait lists and stream entries (deleted, never re-appended)";
  docs/moderation.md: "a game stored after the erase commits is a new player's, under the id".
- SPEC 5: "every event gets a receipt ... on the stream ``ladder:receipts``"; the audit log is
  the ladder and "moderation (void, ban, adjust, erase) is recorded in the same log":
  ``ladder verify`` reproduces every stored number, and reconcile finds no drift.
- docs/moderation.md, ban: "``--void-since TIME`` also voids every game of theirs that ended at
  or after TIME ... 1v1 games, draws and team or free-for-all games alike"; and a void "first
  waits for the batches they held at its commit to write their receipts".
- SPEC 7: "openskill ... boards rank by mu - k*sigma".
"""

from __future__ import annotations

import json
import random
import signal
import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from redis import Redis
from sqlalchemy import create_engine, or_, select

from tests.conftest import record_figure
from tests.e2e.invariants import check_stores, streamed_receipts
from tests.e2e.test_reliability import kill_group, publish, spawn
from tests.events import iso
from tests.ladders import ladder as table
from tests.ladders import with_shipped
from worker.ladders import load_config
from worker.store.tables import events, game_players, players

LADDERS = table("chess", "glicko2") + table("arena", "openskill")
PLAYERS = [f"r-p{i}" for i in range(6)]
ERASED, BANNED = "r-p3", "r-p1"
COUNT = 1200
PAUSE = 3  # seconds the slow worker holds each batch between its commit and Redis


def _side(player_id: str, weight: float | None = None) -> dict[str, Any]:
    return (
        {"player_id": player_id} if weight is None else {"player_id": player_id, "weight": weight}
    )


def _stream(ladder: str, count: int) -> list[dict[str, Any]]:
    """Games 50 minutes apart (so the pair limit rarely applies), the last ending a minute ago,
    in turn a 1v1 win, a draw, a 2v2 (now and then a team draw, or a player who played half of
    it) and a free-for-all of three (ranks 1, 1, 3) or four (1, 2, 2, 4), each among players
    drawn at random (seeded), so every id plays about half the games."""
    rng = random.Random(count)
    now = datetime.now(UTC)
    out = []
    for i in range(count):
        shape: dict[str, Any]
        if i % 4 == 0:
            winner, loser = rng.sample(PLAYERS, 2)
            shape = {"winner": _side(winner), "loser": _side(loser)}
        elif i % 4 == 1:
            shape = {"result": "draw", "players": [_side(p) for p in rng.sample(PLAYERS, 2)]}
        elif i % 4 == 2:
            a, b, c, d = rng.sample(PLAYERS, 4)
            second = 1 if i % 16 == 2 else 2
            half = 0.5 if i % 16 == 6 else None
            shape = {
                "teams": [
                    {"rank": 1, "players": [_side(a), _side(b, half)]},
                    {"rank": second, "players": [_side(c), _side(d)]},
                ]
            }
        else:
            ranks = [1, 1, 3] if i % 8 == 3 else [1, 2, 2, 4]
            seated = rng.sample(PLAYERS, len(ranks))
            shape = {
                "teams": [
                    {"rank": rank, "players": [_side(p)]}
                    for rank, p in zip(ranks, seated, strict=True)
                ]
            }
        out.append(
            {
                "type": "game.finished",
                "event_id": f"race-{i}",
                "ladder": ladder,
                "ended_at": iso(now - timedelta(minutes=1 + 50 * (count - 1 - i))),
                "mode": "ranked",
                **shape,
            }
        )
    return out


def _named(event: dict[str, Any]) -> set[str]:
    """The ids a published game names, whatever its shape."""
    sides = [event[k] for k in ("winner", "loser") if k in event] + event.get("players", [])
    sides += [p for team in event.get("teams", []) for p in team["players"]]
    return {side["player_id"] for side in sides}


def _scored(engine: Any, ladder: str) -> list[str]:
    with engine.connect() as conn:
        query = select(events.c.event_id).where(events.c.ladder == ladder).order_by(events.c.seq)
        return list(conn.execute(query).scalars())


def _games_of(conn: Any, ladder: str, pid: str) -> set[str]:
    """The player's games as stored: as winner or loser (a 1v1 win, a draw), or seated in a
    draw or team game (``game_players``)."""
    seated = select(game_players.c.event_id).where(
        game_players.c.ladder == ladder, game_players.c.player_id == pid
    )
    named = or_(events.c.winner_id == pid, events.c.loser_id == pid, events.c.event_id.in_(seated))
    query = select(events.c.event_id).where(events.c.ladder == ladder, named)
    return set(conn.execute(query).scalars())


@pytest.mark.long
@pytest.mark.parametrize("ladder", ["chess", "arena"])  # glicko2, openskill
def test_erase_void_and_ban_while_workers_score_draws_and_team_games_lose_no_receipt(
    cli, database_url, request, tmp_path: Path, ladder: str
):
    """erase, void and ban --void-since run while two workers score 1v1 wins, draws and team
    games of the same ids and the erased id keeps playing: verify and reconcile agree, each
    event has one receipt on the stream (none for the erased player's), no kept receipt names
    the erased id, the banned player's games since the time are void, and the id's new games
    are on the board under its id, at the score its ruleset ranks by."""
    config = with_shipped(tmp_path, LADDERS)
    cli.env["LADDER_CONFIG"] = str(config)
    stream = _stream(ladder, COUNT)
    by_id = {e["event_id"]: e for e in stream}
    redis = Redis.from_url(cli.env["REDIS_URL"], decode_responses=True)
    engine = create_engine(database_url)
    request.addfinalizer(engine.dispose)  # a failed assertion leaves no connection to the GC
    # One worker is slow to write what it committed (failpoint ``service.after_commit``, a
    # pause of 3 s each batch, as in a long GC pause or on a slow link to Redis): each action
    # below starts, when one comes within 15 s, while one of its batches is committed and not
    # yet written (the run's figure says which did), so the action's wait for the batches in
    # flight is what keeps that late write from undoing it.
    slow = {**cli.env, "LADDER_FAILPOINTS": f"service.after_commit=pause:{PAUSE}"}
    workers = [spawn(cli.env), spawn(slow)]
    fed, erasing, banning = threading.Event(), threading.Event(), threading.Event()
    met: dict[str, bool] = {}  # each action: whether it started beside a batch in flight

    def feed() -> None:
        for start in range(0, len(stream), 30):
            if start >= len(stream) - 300:
                # The erased id's later games come after the erase and the last 300 games
                # while the ban runs, however fast the workers went before.
                erasing.wait(timeout=120)
                banning.wait(timeout=120)
            publish(redis, stream[start : start + 30])
            time.sleep(0.5)
        fed.set()

    def held(action: str, count: int, naming: str | None = None) -> list[str]:
        """The events scored, once ``count`` are and, if one comes within 15 s, a batch (of a
        game naming ``naming``) is committed but not yet written to Redis: no receipt yet
        (``met``; on a fast run the workers may have written every batch fed so far)."""
        deadline = time.monotonic() + 90
        while len(scored := _scored(engine, ladder)) < count:
            assert time.monotonic() < deadline, f"the workers scored {len(scored)} of {count}"
            time.sleep(0.02)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            recent = [e for e in scored[-300:] if naming is None or naming in _named(by_id[e])]
            if recent and None in redis.mget([f"ladder:receipt:{e}" for e in recent]):
                met[action] = True
                return scored
            time.sleep(0.02)
            scored = _scored(engine, ladder)
        met[action] = False
        return scored

    feeder = threading.Thread(target=feed)
    feeder.start()
    try:
        held("erase", 250, ERASED)
        try:
            erased = cli.ladder_json("player", "erase", ladder, ERASED, "--yes")
        finally:
            erasing.set()
        scored = held("void", 500)
        # a draw and a team game scored a while ago
        draw = next(e for e in scored[350:] if "players" in by_id[e])
        team = next(e for e in scored[350:] if "teams" in by_id[e])
        cli.ladder("void", ladder, draw, team, "--reason", "while scoring")
        held("ban", 750, BANNED)
        since = stream[650]["ended_at"]
        banning.set()
        cli.ladder("ban", ladder, BANNED, "--void-since", since, "--reason", "while scoring")
        feeder.join(timeout=120)
        assert fed.is_set()
        deadline = time.monotonic() + 120
        while redis.llen("ladder:inbox") or len(_scored(engine, ladder)) < len(stream):
            assert time.monotonic() < deadline, "the workers did not drain the stream"
            time.sleep(0.2)
    finally:
        erasing.set()
        banning.set()
        feeder.join(timeout=5)
        for worker in workers:
            kill_group(worker, signal.SIGTERM)
    shown = ", ".join(
        f"{a} {'beside one' if m else 'after all were written'}" for a, m in met.items()
    )
    record_figure(f"{ladder}: operators racing {COUNT} games of every shape: {shown}")
    pseudonym = erased["pseudonym"]
    assert [] == cli.ladder_json("dlq", "list")
    verified = cli.ladder("verify", "--json", check=False)
    report = json.loads(verified.stdout)["ladders"][ladder]
    assert [] == report["mismatches"]
    assert len(stream) == report["kept_receipts"]  # every one, beside the replay
    assert 0 == verified.returncode
    assert 0 == cli.ladder("reconcile").returncode  # no drift, nothing repaired
    check_stores(
        database_url, cli.env["REDIS_URL"], {(ladder, e["event_id"]) for e in stream}, config
    )

    with engine.connect() as conn:
        gone, again = _games_of(conn, ladder, pseudonym), _games_of(conn, ladder, ERASED)
        reused = conn.execute(
            select(players.c.rating, players.c.deviation).where(
                players.c.ladder == ladder, players.c.player_id == ERASED
            )
        ).one()
    engine.dispose()
    assert gone and again, "the erase ran while the id was playing: games on both sides"
    assert {"teams", "players", "winner"} <= {k for e in gone for k in by_id[e]}, "every shape"
    assert {e for e in by_id if ERASED in _named(by_id[e])} == gone | again
    bodies = streamed_receipts(redis, ladder, by_id, gone)
    # no entry on the stream and no kept receipt of the erased player's games names the id
    quoted = json.dumps(ERASED)
    assert [] == [
        b["event_id"] for b in bodies if quoted in json.dumps(b) and b["event_id"] in gone
    ]
    keys = [f"ladder:receipt:{e}" for e in by_id]
    kept = {e: json.loads(text or "{}") for e, text in zip(by_id, redis.mget(keys), strict=True)}
    assert [] == [e for e in sorted(gone) if quoted in json.dumps(kept[e])]
    rated_again = 0
    for event_id in sorted(again):
        if kept[event_id]["players"]:  # a rated game (an unrated one names no player)
            assert ERASED in {p["player_id"] for p in kept[event_id]["players"]}, event_id
            rated_again += 1
    assert rated_again
    # the voided games, and the banned player's games since the time, read as void or unrated
    assert [("voided", [])] * 2 == [(kept[e]["outcome"], kept[e]["players"]) for e in (draw, team)]
    banned = [e["event_id"] for e in stream[650:] if BANNED in _named(e)]
    outcomes = Counter(kept[e]["outcome"] for e in banned)
    assert [] == [e for e in banned if kept[e]["players"]]
    assert {"voided", "unrated"} >= outcomes.keys() and outcomes["voided"], outcomes
    # the re-used id's new games are on the board, under its id, at what the ruleset ranks by
    board = f"ladder:{{{ladder}}}:rating"
    score, gone_score = redis.zscore(board, ERASED), redis.zscore(board, pseudonym)
    redis.close()
    card = cli.ladder_json("player", ladder, ERASED)
    assert (reused.rating, reused.deviation) == (card["rating"], card["deviation"])
    rules = load_config(config).ladders[ladder].current
    assert rules.board_score(card["rating"], card["deviation"]) == score
    if rules.kind == "openskill":  # mu - 3 sigma, not the rating
        assert score == pytest.approx(card["rating"] - 3 * card["deviation"], abs=1e-9)
        assert score < card["rating"]
    else:
        assert card["rating"] == score
    assert gone_score is None
