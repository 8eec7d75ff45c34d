"""Operator actions while real workers score the same ladder and the same ids.

Two ``ladder worker`` processes score a steady stream of gammon42 games among five players.
While they do, an operator erases one player (whose id keeps playing: a new player of the same
id), voids two games and bans another player with ``--void-since``. Afterwards every event is
stored once, the log verifies, the boards have no drift, every event has exactly one receipt
on the stream but the erased player's (which are deleted: SPEC 6 "Erase": "stream entries
(deleted, never re-appended)"), and the re-used id's new games are on the boards under its id.
The same, with copies of games already sent published again throughout (a publisher that
delivers at least once): each copy gets a receipt of its own and never brings the id back.
"""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest
from redis import Redis
from sqlalchemy import create_engine, or_, select

from tests.e2e.invariants import check_stores, streamed_receipts
from tests.e2e.private import LADDER as LADDER_COMMAND
from tests.e2e.test_reliability import kill_group, publish, spawn
from tests.events import game, iso
from worker.store.tables import events, players

LADDER = "gammon42"
Stream = list[tuple[str, dict[str, str]]]  # XRANGE on a decoding client
PLAYERS = [f"x-p{i}" for i in range(5)]
ERASED, BANNED = "x-p3", "x-p1"


def _stream(count: int) -> list[dict[str, Any]]:
    """Games 50 minutes apart (so the pair limit rarely applies), the last ending a minute ago;
    every pair in turn, so each id plays often."""
    now = datetime.now(UTC)
    out = []
    for i in range(count):
        a, b = PLAYERS[i % 5], PLAYERS[(i + 1 + i // 5) % 5]
        if a == b:
            b = PLAYERS[(i + 2) % 5]
        winner, loser = (a, b) if i % 3 else (b, a)
        out.append(
            {
                "type": "game.finished",
                "event_id": f"race-{i}",
                "ladder": LADDER,
                "ended_at": iso(now - timedelta(minutes=1 + 50 * (count - 1 - i))),
                "mode": "ranked",
                "winner": {"player_id": winner},
                "loser": {"player_id": loser},
            }
        )
    return out


def _scored(engine: Any) -> list[str]:
    with engine.connect() as conn:
        query = select(events.c.event_id).where(events.c.ladder == LADDER).order_by(events.c.seq)
        return list(conn.execute(query).scalars())


def _wait_scored(engine: Any, count: int) -> list[str]:
    deadline = time.monotonic() + 90
    while len(found := _scored(engine)) < count:
        assert time.monotonic() < deadline, f"the workers scored {len(found)} of {count}"
        time.sleep(0.05)
    return found


@pytest.mark.long
def test_erase_void_and_ban_while_workers_score_the_same_ids_lose_no_receipt(
    cli, database_url, request
):
    """erase, void and ban --void-since run while two workers score the same ladder and the
    erased id keeps playing: verify and reconcile agree, each event has one receipt on the
    stream (none for the erased player's), and the id's new games are on the boards."""
    stream = _stream(2400)
    redis = Redis.from_url(cli.env["REDIS_URL"], decode_responses=True)
    engine = create_engine(database_url)
    request.addfinalizer(engine.dispose)  # a failed assertion leaves no connection to the GC
    workers = [spawn(cli.env), spawn(cli.env)]
    fed, erasing = threading.Event(), threading.Event()

    def feed() -> None:
        for start in range(0, len(stream), 30):
            if start >= len(stream) - 600:
                # The erased id's later games come after the erase began, however slowly the
                # workers go: the last 600 games wait for it.
                erasing.wait(timeout=120)
            publish(redis, stream[start : start + 30])
            time.sleep(0.1)
        fed.set()

    feeder = threading.Thread(target=feed)
    feeder.start()
    try:
        _wait_scored(engine, 500)
        try:
            erased = cli.ladder_json("player", "erase", LADDER, ERASED, "--yes")
        finally:
            erasing.set()
        scored = _wait_scored(engine, 1000)
        cli.ladder("void", LADDER, *scored[700:702], "--reason", "while scoring")
        _wait_scored(engine, 1500)
        since = stream[1300]["ended_at"]
        cli.ladder("ban", LADDER, BANNED, "--void-since", since, "--reason", "while scoring")
        feeder.join(timeout=120)
        assert fed.is_set()
        deadline = time.monotonic() + 120
        while redis.llen("ladder:inbox") or len(_scored(engine)) < len(stream):
            assert time.monotonic() < deadline, "the workers did not drain the stream"
            time.sleep(0.2)
    finally:
        feeder.join(timeout=5)
        for worker in workers:
            kill_group(worker, signal.SIGTERM)
    pseudonym = erased["pseudonym"]
    assert [] == cli.ladder_json("dlq", "list")
    verified = cli.ladder("verify", "--json", check=False)
    shown = json.loads(verified.stdout)["ladders"][LADDER]
    assert [] == shown["mismatches"]
    # every event's kept receipt compared, beside the replay (1,000 or more)
    assert len(stream) == shown["kept_receipts"]
    assert 0 == verified.returncode
    assert 0 == cli.ladder("reconcile").returncode  # no drift, nothing repaired
    check_stores(database_url, cli.env["REDIS_URL"], {(LADDER, e["event_id"]) for e in stream})

    def games_of(conn: Any, pid: str) -> set[str]:
        named = or_(events.c.winner_id == pid, events.c.loser_id == pid)
        return set(conn.execute(select(events.c.event_id).where(named)).scalars())

    with engine.connect() as conn:
        gone, again = games_of(conn, pseudonym), games_of(conn, ERASED)
        reused = conn.execute(
            select(players.c.rating).where(
                players.c.ladder == LADDER, players.c.player_id == ERASED
            )
        ).scalar_one()
    engine.dispose()
    assert gone and again, "the erase ran while the id was playing: games on both sides"
    streamed_receipts(redis, LADDER, (s["event_id"] for s in stream), gone)
    # the erased player's receipt keys name the pseudonym; the new games' keep the id
    for event_id in sorted(gone)[:50]:
        kept = json.loads(redis.get(f"ladder:receipt:{event_id}") or "{}")
        assert ERASED not in {p["player_id"] for p in kept.get("players", [])}, event_id
    rated_again = 0
    for event_id in sorted(again):
        kept = json.loads(redis.get(f"ladder:receipt:{event_id}") or "{}")
        if kept["players"]:  # a rated game (an unrated one names no player)
            assert ERASED in {p["player_id"] for p in kept["players"]}, event_id
            rated_again += 1
    assert rated_again
    # the re-used id's new games are on the boards, under its id
    assert reused == redis.zscore(f"ladder:{{{LADDER}}}:rating", ERASED)
    assert redis.zscore(f"ladder:{{{LADDER}}}:rating", pseudonym) is None
    redis.close()


@pytest.mark.long
def test_copies_sent_again_while_operators_act_get_a_receipt_each_and_never_the_erased_id(
    cli, database_url, request
):
    """SPEC 2.4 step 1: "duplicate event_id => no effect at all"; SPEC 5: "every event gets a
    receipt"; SPEC 6, erase: the real id leaves "receipt keys, wait lists and stream entries
    (deleted, never re-appended)". A publisher delivering at least once sends copies of games
    already sent, the erased player's among them, while an erase, a void and a ban run beside
    two workers: every copy is a duplicate with a receipt of its own, none dead-lettered; no
    stream entry or kept receipt of a game before the erase names the id; the stores agree."""
    stream = _stream(1200)
    redis = Redis.from_url(cli.env["REDIS_URL"], decode_responses=True)
    engine = create_engine(database_url)
    request.addfinalizer(engine.dispose)
    workers = [spawn(cli.env), spawn(cli.env)]
    sent_again: Counter[str] = Counter()  # by this thread
    fed_again: Counter[str] = Counter()  # by the feeder's
    fed, erasing = threading.Event(), threading.Event()

    def copies(upto: int) -> list[dict[str, Any]]:
        picked = [stream[i] for i in (upto - 7, upto - 31, upto - 61) if i >= 0]
        fed_again.update(e["event_id"] for e in picked)
        return picked

    def feed() -> None:
        for start in range(0, len(stream), 30):
            if start >= len(stream) - 300:
                erasing.wait(timeout=120)
            publish(redis, stream[start : start + 30] + copies(start))
            time.sleep(0.1)
        fed.set()

    feeder = threading.Thread(target=feed)
    feeder.start()
    try:
        scored = _wait_scored(engine, 300)
        # every game of the id sent so far, sent again as the erase starts
        done = set(scored)
        theirs = [e for e in stream if e["event_id"] in done and ERASED in _named(e)]
        sent_again.update(e["event_id"] for e in theirs)
        publish(redis, theirs)
        try:
            erased = cli.ladder_json("player", "erase", LADDER, ERASED, "--yes")
        finally:
            erasing.set()
        scored = _wait_scored(engine, 600)
        voided = scored[400:402]
        cli.ladder("void", LADDER, *voided, "--reason", "while scoring")
        publish(redis, [e for e in stream if e["event_id"] in voided])
        sent_again.update(voided)
        _wait_scored(engine, 800)
        cli.ladder("ban", LADDER, BANNED, "--void-since", stream[700]["ended_at"], "--reason", "x")
        feeder.join(timeout=120)
        assert fed.is_set()
    finally:
        feeder.join(timeout=5)
        for worker in workers:
            kill_group(worker, signal.SIGTERM)  # stops cleanly, the event in hand kept
    cli.ladder("worker", "--burst", timeout=120)  # what is left: every receipt written
    sent_again.update(fed_again)
    assert [] == cli.ladder_json("dlq", "list")  # a copy is a duplicate, never a conflict
    verified = cli.ladder("verify", "--json", check=False)
    assert [] == json.loads(verified.stdout)["ladders"][LADDER]["mismatches"]
    assert 0 == verified.returncode
    assert 0 == cli.ladder("reconcile").returncode
    check_stores(database_url, cli.env["REDIS_URL"], {(LADDER, e["event_id"]) for e in stream})
    pseudonym = erased["pseudonym"]
    with engine.connect() as conn:
        named = or_(events.c.winner_id == pseudonym, events.c.loser_id == pseudonym)
        gone = set(conn.execute(select(events.c.event_id).where(named)).scalars())
    bodies = [json.loads(f["receipt"]) for _, f in cast(Stream, redis.xrange("ladder:receipts"))]
    originals = Counter(b["event_id"] for b in bodies if b["outcome"] != "duplicate")
    copied = Counter(b["event_id"] for b in bodies if b["outcome"] == "duplicate")
    kept = [redis.get(f"ladder:receipt:{e}") or "" for e in sorted(gone)]
    redis.close()
    # each event's own receipt once, and one receipt for each copy sent again; an erased
    # game's entries before the erase are gone, and none names the id
    others = [e["event_id"] for e in stream if e["event_id"] not in gone]
    assert {e: 1 for e in others} == {e: n for e, n in originals.items() if e not in gone}
    assert {e: n for e, n in sent_again.items() if e not in gone} == {
        e: n for e, n in copied.items() if e not in gone
    }
    assert [] == [b["event_id"] for b in bodies if b["event_id"] in gone and ERASED in str(b)]
    assert all(kept) and [] == [text for text in kept if ERASED in text]
    assert copied.keys() & gone, "copies of the erased player's games were sent and scored"


def _named(event: dict[str, Any]) -> set[str]:
    return {event["winner"]["player_id"], event["loser"]["player_id"]}


@pytest.mark.long
def test_an_erase_beside_a_worker_killed_mid_write_waits_warns_and_stays_consistent(
    cli, database_url
):
    """A worker is SIGKILLed between committing a batch of the id's game and writing it to
    Redis (failpoint ``jobs.before_redis_write``); the erase that follows waits for what is in
    flight up to LADDER_JOB_TIMEOUT, says in one line that it is still held, and erases; the
    batch is recovered later and writes what PostgreSQL holds: no receipt or stream entry names
    the id, and verify, reconcile and the stores agree."""
    gone = "x-kill"
    games = [
        game(gone, "a", event_id="k-0"),
        game("b", gone, event_id="k-1"),
        game("c", "d", event_id="k-2"),
    ]
    redis = Redis.from_url(cli.env["REDIS_URL"], decode_responses=True)
    publish(redis, games)
    env = {**cli.env, "LADDER_BATCH_SIZE": "1"}
    first = spawn({**env, "LADDER_FAILPOINTS": "jobs.before_redis_write=1"}, "--burst")
    assert -signal.SIGKILL == first.wait(timeout=60)  # at the follow-on batch's write
    assert redis.get("ladder:receipt:k-1") is None  # committed, not written to Redis
    erased = subprocess.run(
        [LADDER_COMMAND, "player", "erase", LADDER, gone, "--yes", "--json"],
        env={**cli.env, "LADDER_JOB_TIMEOUT": "2"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert 0 == erased.returncode, erased.stderr
    (warning,) = erased.stderr.strip().splitlines()
    # the staged batch, and the killed worker's job still in RQ's started registry
    assert warning.startswith("ladder: warning: 2 batches in flight did not finish within 2 s")
    cli.ladder("worker", "--burst", timeout=120)  # recovers the staged batch (30 s grace)
    kept = [redis.get(f"ladder:receipt:{g['event_id']}") for g in games]
    streamed = [json.dumps(f) for _, f in cast(Stream, redis.xrange("ladder:receipts"))]
    # the recovered batch's game is a duplicate now: it brings no player, card or entry back
    named = [
        key
        for key in redis.scan_iter()
        if gone in key or (redis.type(key) == "zset" and redis.zscore(key, gone) is not None)
    ]
    redis.close()
    assert all(kept)  # every event's receipt, the recovered one's too
    assert [] == [text for text in [*kept, *streamed] if text and gone in text]
    assert [] == named
    engine = create_engine(database_url)
    with engine.connect() as conn:
        rows = conn.execute(select(players.c.player_id).where(players.c.player_id == gone)).all()
    engine.dispose()
    assert [] == rows
    verified = cli.ladder("verify", "--json", check=False)
    assert [] == json.loads(verified.stdout)["ladders"][LADDER]["mismatches"]
    assert 0 == cli.ladder("reconcile").returncode
    check_stores(database_url, cli.env["REDIS_URL"], {(LADDER, g["event_id"]) for g in games})


@pytest.mark.long
def test_a_void_beside_a_worker_still_writing_its_game_leaves_the_receipt_voided(cli, database_url):
    """SPEC 5, void: "the kept receipts the void changed are rewritten" (docs/moderation.md).
    A worker holds between committing the game's batch and writing it to Redis (failpoint
    ``service.after_commit``, paused); the void of that game commits meanwhile. The void waits
    for the batches in flight at its commit before it rewrites the kept receipts, so the
    worker's late write does not leave the voided game's receipt saying ``rated``."""
    redis = Redis.from_url(cli.env["REDIS_URL"], decode_responses=True)
    publish(redis, [game("w-a", "w-b", event_id="w-0")])
    worker = spawn({**cli.env, "LADDER_FAILPOINTS": "service.after_commit=pause:4"}, "--burst")
    engine = create_engine(database_url)
    try:
        _wait_scored(engine, 1)
        assert redis.get("ladder:receipt:w-0") is None  # committed, not written to Redis
        cli.ladder("void", LADDER, "w-0", "--reason", "while writing")
        assert 0 == worker.wait(timeout=60)
    finally:
        engine.dispose()
        if worker.poll() is None:
            kill_group(worker, signal.SIGTERM)
    kept = json.loads(redis.get("ladder:receipt:w-0") or "{}")
    redis.close()
    assert ("voided", []) == (kept.get("outcome"), kept.get("players"))
    verified = cli.ladder("verify", "--json", check=False)
    assert [] == json.loads(verified.stdout)["ladders"][LADDER]["mismatches"]
