"""Operator actions on a ladder's history while real workers score the same ladder and ids.

Two ``ladder worker`` processes score a steady stream of gammon42 games while an operator
archives the months before this one (twice, and voids a game after the boundary), imports
players some of whom the workers are creating meanwhile, or re-rates the ladder under a new
ruleset. Afterwards every event is stored once with one receipt on ``ladder:receipts``
(SPEC 5: "every event gets a receipt ... on the stream ``ladder:receipts``"), ``ladder verify``
finds no mismatch (SPEC 5: "replaying the stored events in their scoring order reproduces every
stored number"), reconcile finds no drift and the boards equal PostgreSQL.

An archive detaches what was *processed* before its boundary, so the games of the archived
months are scored first in this process with the batch's clock set back (as
``tests/integration/test_archive.py`` does; a worker's clock cannot be set back here).
"""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from redis import Redis
from sqlalchemy import create_engine, select

from tests.conftest import drain, publish
from tests.e2e.invariants import check_stores, streamed_receipts
from tests.e2e.test_operators_racing_rulesets import _scored
from tests.e2e.test_reliability import kill_group, spawn
from tests.e2e.test_reliability import publish as push
from tests.events import game, iso
from tests.ladders import ladder as table
from tests.ladders import with_shipped
from worker.service import batch
from worker.store.tables import imported_players, rating_changes

LADDER = "gammon42"
PLAYERS = [f"h-p{i}" for i in range(6)]
NOW = datetime.now(UTC)
YOUNG = timedelta(hours=3)  # a month younger than this has too few hours after its boundary


def _boundary(now: datetime) -> datetime:
    """The archive's boundary: this month's first instant, or last month's when this month
    began less than ``YOUNG`` ago (the games after the boundary end before now)."""
    first = datetime(now.year, now.month, 1, tzinfo=UTC)
    return first if now - first >= YOUNG else (first - timedelta(days=1)).replace(day=1)


BOUNDARY = _boundary(NOW)


def _month_before(first: datetime) -> datetime:
    return (first - timedelta(days=1)).replace(day=1)


def _pair(i: int, players: list[str]) -> tuple[str, str]:
    """Every pair in turn, the winner changing sides now and then."""
    a, b = players[i % len(players)], players[(i + 1 + i // len(players)) % len(players)]
    if a == b:
        b = players[(i + 2) % len(players)]
    return (a, b) if i % 3 else (b, a)


def _game(i: int, ended_at: datetime, prefix: str, players: list[str] = PLAYERS) -> dict[str, Any]:
    winner, loser = _pair(i, players)
    return game(winner, loser, ladder=LADDER, ended_at=ended_at, event_id=f"{prefix}-{i}")


def _lived(
    rt: Any, monkeypatch: pytest.MonkeyPatch, last: datetime, count: int, prefix: str
) -> list[dict[str, Any]]:
    """``count`` games 15 minutes apart, the last ending at ``last``, scored in batches of 20
    with the batch's clock a minute after the batch's last game (``batch`` reads
    ``datetime.now``): processed in ``last``'s month, so an archive takes them."""
    made = [_game(i, last - timedelta(minutes=15 * (count - 1 - i)), prefix) for i in range(count)]
    clock: list[datetime] = []

    class Then(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> Any:
            return clock[-1]

    monkeypatch.setattr(batch, "datetime", Then)
    for start in range(0, count, 20):
        part = made[start : start + 20]
        clock.append(datetime.fromisoformat(part[-1]["ended_at"]) + timedelta(minutes=1))
        publish(rt, *part)
        drain(rt)
    monkeypatch.setattr(batch, "datetime", datetime)
    return made


def _after_boundary(count: int, prefix: str, late_from: int) -> list[dict[str, Any]]:
    """``count`` games that ended in this month's first days (at most the week after the
    boundary, so every game's 7-day window reaches into the month before it), in order; from
    ``late_from`` on every sixth is a late game, one that ended before the boundary."""
    span = min(timedelta(days=4), NOW - BOUNDARY - timedelta(minutes=10))
    step = span / count
    out = []
    for i in range(count):
        ended = BOUNDARY + step * (i + 1)
        if i >= late_from and i % 6 == 0:
            ended = BOUNDARY - timedelta(minutes=5 + i % 300)
        out.append(_game(i, ended, prefix))
    return out


def _race(
    cli: Any,
    engine: Any,
    stream: list[dict[str, Any]],
    operate: Callable[[Callable[[int], list[str]], Callable[[], None]], None],
    hold: int,
    ladder: str = LADDER,
) -> None:
    """Two workers score ``stream`` (10 games every 0.1 s) while ``operate`` acts; it gets a
    wait for ``n`` events scored and a release of the games from ``hold`` on, which wait for
    it (or for ``operate`` to end) however fast the workers went. Returns once every game is
    scored, the workers stopped."""
    redis = Redis.from_url(cli.env["REDIS_URL"], decode_responses=True)
    workers = [spawn(cli.env), spawn(cli.env)]
    fed, done = threading.Event(), threading.Event()

    def feed() -> None:
        for start in range(0, len(stream), 10):
            if start >= hold:
                done.wait(timeout=180)
            push(redis, stream[start : start + 10])
            time.sleep(0.1)
        fed.set()

    def wait(count: int) -> list[str]:
        deadline = time.monotonic() + 90
        while len(scored := _scored(engine, ladder)) < count:
            assert time.monotonic() < deadline, f"the workers scored {len(scored)} of {count}"
            time.sleep(0.05)
        return scored

    feeder = threading.Thread(target=feed)
    feeder.start()
    try:
        try:
            operate(wait, done.set)
        finally:
            done.set()
        feeder.join(timeout=120)
        assert fed.is_set()
        wait(len({e["event_id"] for e in stream}))
    finally:
        done.set()
        feeder.join(timeout=5)
        for worker in workers:
            kill_group(worker, signal.SIGTERM)
        redis.close()


def _agrees(
    cli: Any,
    database_url: str,
    stored: list[dict[str, Any]],
    received: list[dict[str, Any]],
    config: Path | None = None,
    ladder: str = LADDER,
) -> dict[str, Any]:
    """No dead letter; verify finds no mismatch, reconcile no drift; the log holds ``stored``
    once each, the boards equal PostgreSQL; each of ``received`` has one receipt on the
    stream. Returns verify's report of the ladder."""
    assert [] == cli.ladder_json("dlq", "list")
    verified = cli.ladder("verify", ladder, "--json", check=False)
    report = json.loads(verified.stdout)["ladders"][ladder]
    assert [] == report["mismatches"]
    assert 0 == verified.returncode, verified.stderr
    assert 0 == cli.ladder("reconcile", ladder).returncode
    ids = {(ladder, e["event_id"]) for e in stored}
    check_stores(database_url, cli.env["REDIS_URL"], ids, config)
    redis = Redis.from_url(cli.env["REDIS_URL"], decode_responses=True)
    streamed_receipts(redis, ladder, (e["event_id"] for e in received), set())
    redis.close()
    return dict(report)


def _beside(engine: Any, ladder: str, *args: str, cli: Any) -> tuple[str, int]:
    """``ladder ARGS``'s output, and how many events of ``ladder`` the workers scored while it
    ran (stored after it started: an archive takes the events of its months out of the log)."""
    before = set(_scored(engine, ladder))
    out = cli.ladder(*args).stdout
    return out, len(set(_scored(engine, ladder)) - before)


def _ks(engine: Any, event_ids: list[str]) -> dict[str, set[float]]:
    """The K of each rated game's ledger rows, by event id."""
    query = select(rating_changes.c.event_id, rating_changes.c.k).where(
        rating_changes.c.event_id.in_(event_ids), rating_changes.c.kind == "game"
    )
    found: dict[str, set[float]] = {}
    with engine.connect() as conn:
        for event_id, k in conn.execute(query):
            found.setdefault(event_id, set()).add(k)
    return found


@pytest.mark.long
def test_an_archive_mid_stream_beside_games_across_its_boundary_keeps_every_window(
    cli, database_url, make_runtime, monkeypatch, request
):
    """docs/operations.md, "Partitions and archives": "The workers' fair-play windows count the
    checkpoint's games as verify does (a game in the week after the boundary, or one that ended
    before it and arrives late, counts the archived games of its week and day)"; "The archive
    holds each archived ladder as a moderation action does". Last month's games scored then,
    this month's first days' games and late games of last month scored by two workers while
    ``ladder archive --before`` this month runs: verify agrees, each event once with one
    receipt, and a late game after the archive has the K of a player with 50 games that week
    (K 16: SPEC 2.1), which only the archived games give it."""
    lived = _lived(make_runtime(), monkeypatch, BOUNDARY - timedelta(minutes=10), 240, "old")
    stream = _after_boundary(900, "new", late_from=450)
    engine = create_engine(database_url)
    request.addfinalizer(engine.dispose)
    said: list[tuple[str, int]] = []

    def operate(wait: Callable[[int], list[str]], release: Callable[[], None]) -> None:
        wait(300)
        said.append(_beside(engine, LADDER, "archive", "--before", f"{BOUNDARY:%Y-%m}", cli=cli))

    _race(cli, engine, stream, operate, hold=750)
    ((out, meanwhile),) = said
    assert "ladder: detached 2 tables: archived_events_" in out, said
    assert meanwhile, "the workers scored while the archive ran"
    _agrees(cli, database_url, stream, lived + stream)
    late = [e["event_id"] for e in stream[750:] if e["ended_at"] < iso(BOUNDARY)]
    ks = _ks(engine, late)
    assert ks and all(k == {16.0} for k in ks.values()), ks


@pytest.mark.long
def test_two_archives_and_a_void_after_the_boundary_beside_running_workers_agree(
    cli, database_url, make_runtime, monkeypatch, request
):
    """docs/operations.md: an archive replays each ladder "up to the boundary (from its earlier
    checkpoint, if it has one)", and a ladder whose early months were archived "is replayed from
    its checkpoint"; ``ladder archive``'s exit status: "0 archived (or nothing to archive)".
    While two workers keep scoring, never restarted: archive the month before last, then last
    month (the second checkpoint starts from the first), void a game of this month's first day
    (its windows and those of the games it re-rates count archived games), archive last month
    again (nothing to do): verify agrees, each event once with one receipt."""
    rt = make_runtime()
    older = _lived(rt, monkeypatch, _month_before(BOUNDARY) - timedelta(minutes=10), 40, "older")
    lived = _lived(rt, monkeypatch, BOUNDARY - timedelta(minutes=10), 240, "old")
    stream = _after_boundary(900, "new", late_from=300)
    engine = create_engine(database_url)
    request.addfinalizer(engine.dispose)
    said: list[tuple[str, int]] = []
    voided: list[str] = []

    def operate(wait: Callable[[int], list[str]], release: Callable[[], None]) -> None:
        wait(150)
        earlier = f"{_month_before(BOUNDARY):%Y-%m}"
        said.append(_beside(engine, LADDER, "archive", "--before", earlier, cli=cli))
        wait(300)
        said.append(_beside(engine, LADDER, "archive", "--before", f"{BOUNDARY:%Y-%m}", cli=cli))
        voided.append(wait(450)[20])
        said.append(_beside(engine, LADDER, "void", LADDER, voided[0], "--reason", "x", cli=cli))
        said.append(_beside(engine, LADDER, "archive", "--before", f"{BOUNDARY:%Y-%m}", cli=cli))

    _race(cli, engine, stream, operate, hold=750)
    first, second, _, again = [out for out, _ in said]
    assert "ladder: detached 2 tables: archived_events_" in first, said
    assert "ladder: detached 2 tables: archived_events_" in second, said
    assert f"ladder: nothing before {BOUNDARY:%Y-%m} to archive" in again, said
    assert all(meanwhile for _, meanwhile in said), "the workers scored while each action ran"
    _agrees(cli, database_url, stream, older + lived + stream)
    redis = Redis.from_url(cli.env["REDIS_URL"], decode_responses=True)
    kept = json.loads(redis.get(f"ladder:receipt:{voided[0]}") or "{}")
    redis.close()
    assert ("voided", []) == (kept.get("outcome"), kept.get("players"))


@pytest.mark.long
def test_an_import_of_ids_the_workers_are_creating_refuses_or_imports_each_whole(
    cli, database_url, request, tmp_path: Path
):
    """docs/import-export.md: "Refused, line by line ...: a player the ladder already has";
    "The boards are written after the commit, without rolling back a game a worker scored for
    one of them meanwhile"; "importing the same file twice changes nothing the second time,
    even after those players have played"; verify "starts an imported player's history at
    their import row". Two workers score games of the ids an import names: four play before
    it (a worker created them), two while it runs, two after it: each named id is either
    refused (it existed: the first four always) or imported, its history starting at the
    import row;
    the same file again imports nothing; verify agrees, each event once with one receipt."""
    named = [f"h-i{i}" for i in range(8)]
    early, racing = named[:4], named[4:]
    now = datetime.now(UTC)
    stream = [_game(i, now - timedelta(minutes=1 + 30 * (899 - i)), "imp") for i in range(900)]
    for i, event in enumerate(stream):
        if i % 3 == 0 and (i < 300 or i >= 420):  # a third of the games name an import's id
            # the early ids from the start; two later ones from game 420 (in flight while the
            # import runs), the last two from game 600 (held until it is done)
            event["loser"]["player_id"] = (
                early[i // 3 % 4] if i < 300 else named[4 + i // 3 % (2 if i < 600 else 4)]
            )
    lines = [
        {"player_id": pid, "rating": 1600 + 25 * n, "games": 60} for n, pid in enumerate(named)
    ]
    lines.append({"player_id": PLAYERS[0], "rating": 1900})  # a player the ladder has
    path = tmp_path / "players.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    engine = create_engine(database_url)
    request.addfinalizer(engine.dispose)
    said: list[tuple[str, int]] = []
    imports = ("import", LADDER, str(path), "--skip-invalid", "--json")

    def operate(wait: Callable[[int], list[str]], release: Callable[[], None]) -> None:
        wait(400)
        said.append(_beside(engine, LADDER, *imports, cli=cli))
        release()
        wait(700)
        said.append(_beside(engine, LADDER, *imports, cli=cli))

    _race(cli, engine, stream, operate, hold=600)
    first, second = [json.loads(out) for out, _ in said]
    assert all(meanwhile for _, meanwhile in said), "the workers scored while each import ran"
    refused = {lines[r["line"] - 1]["player_id"] for r in first["refusals"]}
    assert {PLAYERS[0], *early} <= refused, first
    assert {"player already exists on the ladder"} == {r["reason"] for r in first["refusals"]}
    assert first["imported"] == len(lines) - len(refused) and first["boards_written"]
    assert (0, first["imported"]) == (second["imported"], second["unchanged"]), second
    with engine.connect() as conn:
        imported = set(conn.execute(select(imported_players.c.player_id)).scalars())
        order = rating_changes.c.id
        rows = conn.execute(select(rating_changes).order_by(order)).mappings().all()
    assert set(named) - refused == imported
    for pid in named:
        theirs = [r for r in rows if r["player_id"] == pid]
        kinds = [r["kind"] for r in theirs]
        assert kinds.count("import") == (pid in imported), (pid, kinds)
        if pid in imported:
            assert "import" == kinds[0], (pid, kinds)  # no game of theirs before the import
    assert set(racing[2:]) <= imported  # their first game came after the import
    _agrees(cli, database_url, stream, stream)


@pytest.mark.long
def test_a_rerate_while_workers_score_the_ladder_rerates_every_game_once(
    cli, database_url, request, tmp_path: Path
):
    """docs/moderation.md, "Rerate": "Workers keep scoring meanwhile; the replay runs before
    the ladder's lock, and only the events stored since run under it"; the ladder then "reads
    as if it had always run the new ruleset", and ``ladder verify`` "replays the history as it
    was lived up to it". A gammon42 ladder whose configuration switches to glicko2 midway
    through its games is re-rated while two workers score it, the games before and after the
    switch: verify agrees, each event once with one receipt, the boards equal PostgreSQL (at
    what glicko2 ranks by)."""
    now = datetime.now(UTC)
    switch = (now - timedelta(days=6)).replace(microsecond=0)
    switched = {"version": "g-1", "ruleset": "glicko2", "tau": 0.5, "effective_from": switch}
    config = with_shipped(tmp_path, table("club", "gammon42", {"version": "1.3.1"}, switched))
    cli.env["LADDER_CONFIG"] = str(config)
    stream = [
        {**_game(i, now - timedelta(minutes=1 + 20 * (899 - i)), "rr"), "ladder": "club"}
        for i in range(900)
    ]
    engine = create_engine(database_url)
    request.addfinalizer(engine.dispose)
    said: list[tuple[str, int]] = []

    def operate(wait: Callable[[int], list[str]], release: Callable[[], None]) -> None:
        wait(300)
        said.append(_beside(engine, "club", "rerate", "club", "--reason", "x", "--json", cli=cli))

    _race(cli, engine, stream, operate, hold=len(stream), ladder="club")
    ((out, meanwhile),) = said
    assert json.loads(out)["players"], out
    assert meanwhile, "the workers scored while the rerate ran"
    shown = _agrees(cli, database_url, stream, stream, config, ladder="club")
    assert len(stream) == shown["kept_receipts"]
    refused = cli.ladder("rerate", "club", "--reason", "again", check=False)
    assert 0 != refused.returncode and "already" in refused.stderr
