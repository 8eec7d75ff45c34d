"""A worker's windows kept in memory (``worker.store.windowcache``) decide every game as the
log's windows would, whoever else writes the ladder meanwhile.

SPEC 2.1: "K = 32, or 16 for a player with >= 50 ranked games in the 7 days before this game's
end"; SPEC 2.4 step 5: "not rated once the pair already has N rated games (default 3) in the
24 hours before ``ended_at``". Six players play hundreds of ranked games over eight days, so
both windows decide games: two workers (each with its own memory) take turns in runs,
operators void games between batches, and some games arrive late. ``ladder verify`` then
replays the log with its own windows and must find every stored decision the same.
"""

from __future__ import annotations

import argparse
import random
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest

from tests.conftest import drain, publish
from tests.events import game
from tests.integration.helpers import audit, ledger, outcome
from tests.integration.test_archive import _Clock
from worker.entrypoints.cli import moderate, read
from worker.entrypoints.cli.main import dispatch
from worker.ops.archiving import archive
from worker.ops.verify import verify
from worker.service.batch import Service
from worker.store.copying import CopyInto
from worker.store.windowcache import WindowCache

PLAYERS = [f"p{i}" for i in range(6)]
START = datetime.now(UTC).replace(microsecond=0) - timedelta(days=9)


def _worker(rt: Any, window_cache: bool = True) -> Service:
    """Another worker's service on the same database and Redis: a memory of its own."""
    return Service(
        rt.intake,
        rt.databases,
        rt.projection,
        receipt_ttl=rt.service.receipt_ttl,
        window_cache=window_cache,
    )


def _void(rt: Any, event_id: str) -> None:
    parser = argparse.ArgumentParser(prog="ladder")
    commands = parser.add_subparsers(dest="command", required=True)
    read.register(commands)
    moderate.register(commands)
    args = ["void", "gammon42", event_id, "--reason", "cheating", "--by", "mod"]
    assert 0 == dispatch(rt, parser.parse_args(args))


def _history(rt: Any, seed: int, workers: list[Service]) -> dict[str, int]:
    """Games in batches, each batch drained by one of ``workers`` (mostly the one before),
    a void now and then, some games late; what happened, counted."""
    rng = random.Random(seed)
    at = START
    done = {"games": 0, "voids": 0, "turns": 0, "late": 0}
    worker = workers[0]
    scored: list[str] = []
    while at < START + timedelta(days=8):
        batch = []
        for _ in range(rng.randint(1, 25)):
            at += timedelta(minutes=rng.randint(1, 40))
            ended = at
            if rng.random() < 0.05:  # a game that ended up to two days before the last ones
                ended = at - timedelta(minutes=rng.randint(60, 2880))
                done["late"] += 1
            winner, loser = rng.sample(PLAYERS, 2)
            event_id = f"s{seed}-{done['games']}"
            batch.append(game(winner, loser, event_id=event_id, ended_at=ended))
            scored.append(event_id)
            done["games"] += 1
        if rng.random() < 0.3:
            other = rng.choice([w for w in workers if w is not worker])
            done["turns"] += other is not worker
            worker = other
        rt.__dict__["service"] = worker
        publish(rt, *batch)
        drain(rt)
        if rng.random() < 0.08:
            _void(rt, rng.choice(scored))
            done["voids"] += 1
    return done


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_two_workers_with_memories_and_voids_between_them_decide_as_the_log(runtime, seed):
    """Every decision verify replays from the log is the one the workers stored."""
    workers = [_worker(runtime), _worker(runtime)]
    done = _history(runtime, seed, workers)
    assert done["turns"] >= 5 and done["voids"] >= 2 and done["late"] >= 5, done
    rows = audit(runtime, "gammon42")
    reasons = {row["reason"] for row in rows}
    assert "pair_limit" in reasons  # the pair window decided games
    report = verify(runtime.engine, runtime.leaderboard_redis, runtime.config.ladders["gammon42"])
    assert [] == report.mismatches
    assert done["games"] == report.events


def test_a_worker_alone_reads_its_players_into_memory_once(runtime, monkeypatch):
    """One worker alone on a ladder: its first batch reads its players into memory, the next
    ones read none. A void (an operator action) makes the next batch read its players from
    the log again (its second chance), and the batches after it read none."""
    filled = _counting_fills(monkeypatch)
    at = START + timedelta(days=1)

    def play(n: int) -> list[int]:
        filled.clear()
        for i in range(n):
            sent = game(*(("p0", "p1") if i % 2 else ("p1", "p0")), ended_at=at)
            publish(runtime, sent)
            drain(runtime)
        return filled

    assert [2, 0, 0, 0, 0, 0, 0, 0, 0, 0] == play(5)
    _void(runtime, next(r["event_id"] for r in audit(runtime, "gammon42")))
    assert [0, 2, 0, 0, 0, 0, 0, 0] == play(4)  # an action since the mark: read again
    report = verify(runtime.engine, runtime.leaderboard_redis, runtime.config.ladders["gammon42"])
    assert [] == report.mismatches


def _counting_fills(monkeypatch: Any) -> list[int]:
    """The players each batch reads from the log into memory, per read (two chances a batch:
    with the claim, and after it where the memory may miss games)."""
    from worker.store import windowcache

    filled: list[int] = []
    fill = windowcache.CacheUse._fill

    def counting(self: Any, asked: Any) -> Any:
        filled.append(sum(len(ids) for ids in asked.values()))
        return fill(self, asked)

    monkeypatch.setattr(windowcache.CacheUse, "_fill", counting)
    return filled


def test_two_workers_taking_turns_read_the_others_games_not_their_players(runtime, monkeypatch):
    """Workers A and B take turns, a game of p0 and p1 each: each reads the two players from
    the log once, then only the game the other stored since (by its scoring number), and
    each decides as the log: SPEC 2.4 step 5, "not rated once the pair already has N rated
    games (default 3) in the 24 hours before ``ended_at``": the fourth game on is not rated,
    whichever worker scores it."""
    filled = _counting_fills(monkeypatch)
    workers = [_worker(runtime), _worker(runtime)]
    at = START + timedelta(days=1)
    for i in range(6):
        runtime.__dict__["service"] = workers[i % 2]
        sides = ("p0", "p1") if i % 2 else ("p1", "p0")
        publish(runtime, game(*sides, event_id=f"t{i}", ended_at=at + timedelta(minutes=i)))
        drain(runtime)
    assert [2, 0, 2, 0] + [0, 0] * 4 == filled  # two reads a batch: with the claim, after it
    stored = {row["event_id"]: row["reason"] for row in audit(runtime, "gammon42")}
    assert [None] * 3 + ["pair_limit"] * 3 == [stored[f"t{i}"] for i in range(6)]
    report = verify(runtime.engine, runtime.leaderboard_redis, runtime.config.ladders["gammon42"])
    assert [] == report.mismatches


def test_a_batch_numbered_before_the_mark_and_committed_after_it_is_read_from_the_log(
    runtime, monkeypatch
):
    """Worker B's game of p4 and p5 has its scoring number, not yet committed, when worker A
    stores a game of p0 and p1 after it and commits first: A's mark is past B's number, so
    its next claim reads no game after the mark, yet finds one more row stored than it read.
    It reads p4 and p5 from the log after all, finds B's game, the pair's third rated one in
    24 hours, and does not rate the fourth (SPEC 2.4 step 5)."""
    import json

    from worker.store import statements

    a, b = _worker(runtime), _worker(runtime)
    at = START + timedelta(days=1)
    runtime.__dict__["service"] = a
    for i, sides in enumerate([("p4", "p5"), ("p5", "p4"), ("p0", "p1")]):
        publish(runtime, game(*sides, ended_at=at + timedelta(minutes=i)))
        drain(runtime)
    filled = _counting_fills(monkeypatch)
    monkeypatch.setattr(statements, "COPY_ROWS", 1)  # B's rows by COPY: numbered before COMMIT
    copy = statements._copy
    raced: list[str] = []

    def racing(conn: Any, into: CopyInto, rows: list[dict[str, Any]]) -> None:
        copy(conn, into, rows)
        if into == statements._COPY_AUDIT and rows[0]["event_id"] == "b-late" and not raced:
            raced.append("a-between")
            sent = game("p1", "p0", event_id="a-between", ended_at=at + timedelta(minutes=4))
            a.process([json.dumps(sent)], lambda raw, error: pytest.fail(str(error)))

    monkeypatch.setattr(statements, "_copy", racing)
    runtime.__dict__["service"] = b
    publish(runtime, game("p4", "p5", event_id="b-late", ended_at=at + timedelta(minutes=3)))
    drain(runtime)
    assert raced
    runtime.__dict__["service"] = a
    publish(runtime, game("p5", "p4", event_id="a-after", ended_at=at + timedelta(minutes=5)))
    drain(runtime)
    # per batch, with the claim and after it: B's first; A's between; A's after, again
    assert [2, 0, 0, 0, 0, 2] == filled
    stored = {row["event_id"]: row["reason"] for row in audit(runtime, "gammon42")}
    assert (None, "pair_limit") == (stored["b-late"], stored["a-after"])
    report = verify(runtime.engine, runtime.leaderboard_redis, runtime.config.ladders["gammon42"])
    assert [] == report.mismatches


def test_a_batch_rolled_back_after_its_claim_read_the_others_game_counts_it_once(
    runtime, monkeypatch
):
    """Worker A holds one rated game of p2 and p3; worker B stores a second. A's next game of
    the pair reads B's with its claim, then its transaction fails before the commit (a
    conflict, tried again): the retry and the next batch count B's game once and A's own once
    it is stored. SPEC 2.4 step 5, "not rated once the pair already has N rated games
    (default 3) in the 24 hours before ``ended_at``": the third game is rated, the fourth not
    (B's game counted twice would refuse the third; missed, rate the fourth)."""
    from sqlalchemy.exc import IntegrityError

    from worker import failpoints

    a, b = _worker(runtime), _worker(runtime)
    at = START + timedelta(days=1)
    runtime.__dict__["service"] = a
    publish(runtime, game("p2", "p3", event_id="a1", ended_at=at))
    drain(runtime)
    runtime.__dict__["service"] = b
    publish(runtime, game("p3", "p2", event_id="b2", ended_at=at + timedelta(minutes=1)))
    drain(runtime)
    hit = failpoints.hit
    failed: list[str] = []

    def fail_once(name: str) -> None:
        if name == "service.before_commit" and not failed:
            failed.append(name)
            raise IntegrityError("COMMIT", None, Exception("a conflict, tried again"))
        hit(name)

    monkeypatch.setattr(failpoints, "hit", fail_once)
    runtime.__dict__["service"] = a
    publish(runtime, game("p2", "p3", event_id="a3", ended_at=at + timedelta(minutes=2)))
    drain(runtime)
    assert failed
    publish(runtime, game("p3", "p2", event_id="a4", ended_at=at + timedelta(minutes=3)))
    drain(runtime)
    stored = {row["event_id"]: row["reason"] for row in audit(runtime, "gammon42")}
    assert [None, None, None, "pair_limit"] == [stored[e] for e in ("a1", "b2", "a3", "a4")]
    report = verify(runtime.engine, runtime.leaderboard_redis, runtime.config.ladders["gammon42"])
    assert [] == report.mismatches


def test_the_memory_is_per_database_and_off_when_asked(runtime):
    """A service without the memory keeps none; with it, one per database engine."""
    off = _worker(runtime, window_cache=False)
    on = _worker(runtime)
    for worker in (off, on):
        runtime.__dict__["service"] = worker
        publish(runtime, game("p0", "p1", ended_at=START + timedelta(days=8)))
        drain(runtime)
    assert off._windows is None
    assert on._windows is not None
    assert [runtime.databases.default] == list(on._windows)
    assert isinstance(on._windows[runtime.databases.default], WindowCache)


def test_a_batch_committed_between_a_claim_and_its_commit_is_read_with_the_next_claim(
    runtime, monkeypatch
):
    """Worker B commits a game of p2 and p3 while worker A's batch (p0 and p1) is between its
    claim and its commit: A's commit counts two writes where it read one less, so A keeps its
    claim's mark, and its next claim reads B's game (and its own) after it: its next game
    between p2 and p3 is the pair's fourth rated one in 24 hours: not rated (SPEC 2.4
    step 5)."""
    import json

    from worker import failpoints

    a, b = _worker(runtime), _worker(runtime)
    at = START + timedelta(days=1)
    runtime.__dict__["service"] = a
    # A alone: two batches of p2 against p3, then one that reads p0 and p1 into memory
    for i in range(2):
        publish(runtime, game("p2", "p3", ended_at=at + timedelta(minutes=i)))
        drain(runtime)
    publish(runtime, game("p2", "p0", ended_at=at + timedelta(minutes=2)))
    publish(runtime, game("p3", "p1", ended_at=at + timedelta(minutes=3)))
    drain(runtime)
    assert a._windows is not None
    assert a._windows[runtime.databases.default].ladder("gammon42").warm
    hit = failpoints.hit
    raced: list[str] = []

    def race(name: str) -> None:
        if name == "service.before_commit" and not raced:
            raced.append(name)
            sent = game("p3", "p2", event_id="b1", ended_at=at + timedelta(minutes=5))
            b.process([json.dumps(sent)], lambda raw, error: pytest.fail(str(error)))
        hit(name)

    monkeypatch.setattr(failpoints, "hit", race)
    publish(runtime, game("p0", "p1", ended_at=at + timedelta(minutes=6)))
    drain(runtime)
    assert raced
    publish(runtime, game("p2", "p3", event_id="a4", ended_at=at + timedelta(minutes=7)))
    drain(runtime)
    stored = {row["event_id"]: row["reason"] for row in audit(runtime, "gammon42")}
    assert "pair_limit" == stored["a4"]
    report = verify(runtime.engine, runtime.leaderboard_redis, runtime.config.ladders["gammon42"])
    assert [] == report.mismatches


def _played(rt: Any, clock: _Clock, at: datetime, *games: tuple[str, str, str]) -> None:
    """One batch processed at ``at``: each (event id, winner, loser) a game that ended then."""
    clock.at(at)
    publish(rt, *(game(w, lo, event_id=e, ended_at=at) for e, w, lo in games))
    drain(rt)


def _october(rt: Any, clock: _Clock, side: str) -> None:
    """``side``'s players on the last days of October, in five batches (for a worker with
    memory alone on the ladder: cold, quiet, filled, warm, warm): {side}2 plays 50 ranked
    games on the 27th (two against each of 25 opponents) and one more at 23:30 on the 31st;
    {side}0 and {side}1 three rated games from 23:00."""
    a, b, c = (f"{side}{n}" for n in range(3))
    many = [(f"{side}-k{n}", c, f"{side}x{n // 2}") for n in range(50)]
    _played(rt, clock, datetime(2026, 10, 27, tzinfo=UTC), *many)
    eve = datetime(2026, 10, 31, 23, tzinfo=UTC)
    for n, (w, lo) in enumerate([(a, b), (b, a), (a, b)]):
        _played(rt, clock, eve + timedelta(minutes=10 * n), (f"{side}-p{n}", w, lo))
    _played(rt, clock, eve + timedelta(minutes=30), (f"{side}-k50", c, f"{side}x0"))


def _november(rt: Any, clock: _Clock, side: str) -> dict[str, Any]:
    """``side``'s batch half an hour into November: {side}1 beats {side}0 (the pair's fourth
    game in 24 hours) and {side}2 beats {side}3, a new opponent; its decisions."""
    a, b, c = (f"{side}{n}" for n in range(3))
    nov = datetime(2026, 11, 1, 0, 30, tzinfo=UTC)
    _played(rt, clock, nov, (f"{side}-pair", b, a), (f"{side}-k", c, f"{side}3"))
    return {
        "the pair's fourth game": outcome(rt, "gammon42", f"{side}-pair"),
        "its K": [row["k"] for row in ledger(rt, "gammon42", a)],
        "K of the player with 50 games": [row["k"] for row in ledger(rt, "gammon42", c)],
    }


def test_a_warm_worker_decides_after_an_archive_as_a_worker_without_memory(runtime, monkeypatch):
    """SPEC 2.1: "K = 32, or 16 for a player with >= 50 ranked games in the 7 days before this
    game's end"; SPEC 2.4 step 5: "not rated once the pair already has N rated games (default
    3) in the 24 hours before ``ended_at``". ``ladder archive --before 2026-11`` detaches
    October's games from the log while November's first games still have them in both
    windows: the windows count them from the checkpoint, so a worker that held them in memory
    across the archive and a worker without memory both decide those games as verify's replay
    from the checkpoint does (the pair's fourth game in 24 hours not rated, K 16 for the
    player with 51 games in the week)."""
    clock = _Clock(monkeypatch)
    warm, cold = _worker(runtime), _worker(runtime, window_cache=False)
    runtime.__dict__["service"] = cold
    _october(runtime, clock, "c")
    runtime.__dict__["service"] = warm
    _october(runtime, clock, "w")
    assert warm._windows is not None
    assert warm._windows[runtime.databases.default].ladder("gammon42").warm
    made = datetime(2026, 11, 1, 0, 10, tzinfo=UTC)
    (point,) = archive(runtime.engine, runtime.config, date(2026, 11, 1), now=made).checkpoints
    # October's games are still in November's windows (the checkpoint keeps them)
    assert (3, 51) == (len(point.rated_pairs["w0", "w1"]), len(point.ranked["w2"]))
    decided = _november(runtime, clock, "w")  # the first write after the archive
    assert {  # the ledger's rows of November (October's months are archived)
        "the pair's fourth game": ("unrated", "pair_limit"),
        "its K": [],
        "K of the player with 50 games": [16],
    } == decided
    runtime.__dict__["service"] = cold
    assert _november(runtime, clock, "c") == decided
    report = verify(runtime.engine, runtime.leaderboard_redis, runtime.config.ladders["gammon42"])
    assert [] == report.mismatches
    assert 4 == report.events  # November's only: the replay starts from the checkpoint


def test_a_game_that_ended_before_an_archive_and_arrives_after_it_counts_the_archived_games(
    runtime, monkeypatch
):
    """SPEC 2.1: "K = 32, or 16 for a player with >= 50 ranked games in the 7 days before this
    game's end"; SPEC 2.4 step 5: "not rated once the pair already has N rated games (default
    3) in the 24 hours before ``ended_at``". Games that ended on October's last evening and
    reach the worker after ``ladder archive --before 2026-11`` count October's archived games
    in their windows, as verify's replay from the checkpoint does; and so do the next games of
    the player with 51, while the worker reads its players into memory again and then takes
    them from it."""
    clock = _Clock(monkeypatch)
    _october(runtime, clock, "l")
    made = datetime(2026, 11, 1, 0, 10, tzinfo=UTC)
    archive(runtime.engine, runtime.config, date(2026, 11, 1), now=made)
    late = datetime(2026, 10, 31, 23, 40, tzinfo=UTC)  # after the pair's three and l2's 51st
    clock.at(datetime(2026, 11, 1, 0, 30, tzinfo=UTC))
    publish(
        runtime,
        game("l1", "l0", event_id="l-pair", ended_at=late),
        game("l2", "l3", event_id="l-k", ended_at=late + timedelta(minutes=1)),
    )
    drain(runtime)
    assert ("unrated", "pair_limit") == outcome(runtime, "gammon42", "l-pair")
    # the worker's memory: read again (the archive wrote the ladder), cold, filled, then taken
    for n in range(4, 8):
        at = made + timedelta(minutes=10 * n)
        _played(runtime, clock, at, (f"l-nov{n}", "l2", f"l{n}"))
    assert [16] * 5 == [row["k"] for row in ledger(runtime, "gammon42", "l2")]
    memory = runtime.service._windows[runtime.databases.default].ladder("gammon42")
    assert memory.warm and "l2" in memory.entries
    report = verify(runtime.engine, runtime.leaderboard_redis, runtime.config.ladders["gammon42"])
    assert [] == report.mismatches
    assert 6 == report.events  # the games processed after the archive
