"""Many workers, crashes at the worst moments: nothing lost, nothing doubled, Redis = PostgreSQL.

``make test`` runs the short variants; ``make soak`` the long ones (marked ``soak``).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from redis import Redis

from tests.conftest import record_figure
from tests.e2e.conftest import LADDER
from tests.e2e.invariants import check_stores
from tests.events import iso

NOW = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=1)
LADDERS = ("gammon42", "fibs", "prostriker")


def hot_events(count: int, players: int, rng: random.Random) -> list[dict[str, Any]]:
    """Games concentrated on a few players across the three ladders, an hour apart so that the
    pair limit rarely applies and nearly every game changes two ratings."""
    ids = [f"p{i}" for i in range(players)]
    out = []
    for i in range(count):
        a, b = rng.sample(ids, 2)
        out.append(
            {
                "type": "game.finished",
                "event_id": f"hot-{i}",
                "ladder": LADDERS[i % 3],
                "ended_at": iso(NOW - timedelta(hours=count + 1) + timedelta(hours=i)),
                "mode": "ranked",
                "winner": {"player_id": a},
                "loser": {"player_id": b},
                "match_length": 1 + i % 5,
            }
        )
    return out


def publish(redis: Redis, events: list[dict[str, Any]]) -> None:
    with redis.pipeline(transaction=False) as pipe:
        for event in events:
            pipe.rpush("ladder:inbox", json.dumps(event))
        pipe.execute()


def spawn(env: dict[str, str], *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [LADDER, "--log-level", "WARNING", "worker", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # a kill takes the worker's RQ scheduler child with it
    )


def wait_started(redis: Redis, timeout: float = 30.0) -> None:
    """Until a long-running worker has started up (its scheduler thread holds the lock)."""
    deadline = time.monotonic() + timeout
    while not redis.exists("ladder:scheduler"):
        assert time.monotonic() < deadline, "the worker never started"
        time.sleep(0.05)


def kill_group(proc: subprocess.Popen[bytes], sig: int = signal.SIGKILL) -> None:
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        # The worker did not stop: fail, but leave no worker to take the next test's events.
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        raise


def expected_ids(events: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(e["ladder"], e["event_id"]) for e in events}


def run_concurrent(cli, database_url, redis_url, *, workers: int, count: int, players: int):
    events = hot_events(count, players, random.Random(count))
    redis = Redis.from_url(redis_url)
    publish(redis, events)
    redis.close()
    env = {**cli.env, "LADDER_BATCH_SIZE": "25"}
    started = time.monotonic()
    procs = [spawn(env, "--burst") for _ in range(workers)]
    codes = [p.wait(timeout=600) for p in procs]
    elapsed = time.monotonic() - started
    assert [0] * workers == codes
    cli.ladder("worker", "--burst")  # nothing may be left behind
    figures = check_stores(database_url, redis_url, expected_ids(events))
    assert [] == cli.ladder_json("dlq", "list")
    record_figure(
        f"{workers} workers, {count} events on {players} players per ladder: "
        f"{figures} in {elapsed:.1f} s"
    )


def test_four_workers_on_a_few_hot_players_lose_no_update(cli, database_url, redis_url):
    """SPEC 5: two games of one player never both start from the same old rating."""
    run_concurrent(cli, database_url, redis_url, workers=4, count=3000, players=5)


@pytest.mark.soak
def test_four_workers_on_a_few_hot_players_lose_no_update_long(cli, database_url, redis_url):
    """The same, with many more events."""
    run_concurrent(cli, database_url, redis_url, workers=4, count=30000, players=8)


def run_crashes(cli, database_url, redis_url, *, count: int, kills: int, seconds: float):
    """Workers die by SIGKILL at random moments and at failpoints; replacements take over."""
    rng = random.Random(kills)
    events = hot_events(count, 6, rng)
    env = {
        **cli.env,
        "LADDER_BATCH_SIZE": "20",
        "LADDER_JOB_TIMEOUT": "5",
        "LADDER_FAILPOINTS": "inbox.after_claim=0.04,service.after_commit=0.04",
    }
    redis = Redis.from_url(redis_url)
    procs = [spawn(env) for _ in range(3)]
    killed = died = 0
    chunks = [events[i : i + 50] for i in range(0, len(events), 50)]
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline or chunks:
            if chunks:
                publish(redis, chunks.pop(0))
            time.sleep(rng.uniform(0.02, 0.2))
            if killed < kills and rng.random() < 0.3:
                victim = rng.randrange(len(procs))
                kill_group(procs[victim])
                killed += 1
            for i, proc in enumerate(procs):
                if proc.poll() is not None:  # killed by us or by a failpoint: replace it
                    died += 1
                    kill_group(proc)
                    procs[i] = spawn(env)
    finally:
        for proc in procs:
            kill_group(proc, signal.SIGTERM)
        redis.close()
    started = time.monotonic()
    cli.ladder("worker", "--burst", timeout=300)  # recovers what the dead left behind
    recovery = time.monotonic() - started
    figures = check_stores(database_url, redis_url, expected_ids(events))
    assert [] == cli.ladder_json("dlq", "list")
    record_figure(
        f"crash run: {figures}, {died} worker deaths ({killed} random SIGKILLs, the rest at "
        f"failpoints), final recovery {recovery:.1f} s"
    )
    assert recovery < 120


def test_workers_killed_at_any_moment_lose_and_double_nothing(cli, database_url, redis_url):
    """Killed between inbox and RQ, between commit and Redis, anywhere: every event once."""
    run_crashes(cli, database_url, redis_url, count=1500, kills=8, seconds=8)


@pytest.mark.soak
def test_workers_killed_at_any_moment_lose_and_double_nothing_long(cli, database_url, redis_url):
    """The same, for longer and with many more kills."""
    run_crashes(cli, database_url, redis_url, count=15000, kills=60, seconds=90)


def test_sigterm_during_a_batch_lets_it_commit_and_the_worker_exit(cli, database_url, redis_url):
    """SPEC 5: stops cleanly on SIGTERM without losing the event in hand (none half-applied)."""
    events = hot_events(5, 4, random.Random(3))
    env = {**cli.env, "LADDER_FAILPOINTS": "service.before_commit=pause:3"}
    worker = spawn(env)
    redis = Redis.from_url(redis_url)
    try:
        wait_started(redis)
        publish(redis, events)
        deadline = time.monotonic() + 30
        while redis.llen("ladder:inbox"):  # the batch is taken ...
            assert time.monotonic() < deadline, "the worker never took the batch"
            time.sleep(0.05)
        time.sleep(0.5)  # ... and held open before its commit
        os.killpg(worker.pid, signal.SIGTERM)
        code = worker.wait(timeout=30)
    finally:
        if worker.poll() is None:
            kill_group(worker)
    assert 0 == code
    check_stores(database_url, redis_url, expected_ids(events))  # applied, not returned
    assert (0, 0) == (redis.llen("rq:queue:ladder"), redis.zcard("rq:scheduled:ladder"))
    redis.close()


def test_a_burst_drain_finishes_while_long_running_workers_wait_on_the_inbox(cli, redis_url):
    """ladder worker --burst beside running workers: their idle pumps do not keep it waiting."""
    worker = spawn(cli.env)
    try:
        redis = Redis.from_url(redis_url)
        wait_started(redis)
        redis.close()
        time.sleep(0.5)  # its pump now waits on the inbox
        started = time.monotonic()
        cli.ladder("worker", "--burst", timeout=60)
        assert time.monotonic() - started < 30
    finally:
        kill_group(worker, signal.SIGTERM)


@pytest.mark.parametrize("delay", [0.0, 0.4, 0.8, 1.2, 1.6, 2.0, 3.0])
def test_sigterm_at_any_moment_of_start_up_stops_the_worker(cli, redis_url, delay):
    """SPEC 5: a worker stops cleanly on SIGTERM, also one that is still starting up (loading
    modules, connecting, recovering batches, starting RQ's loop): it exits, it never hangs."""
    worker = spawn(cli.env)
    try:
        time.sleep(delay)
        os.killpg(worker.pid, signal.SIGTERM)
        code = worker.wait(timeout=15)
    finally:
        if worker.poll() is None:
            kill_group(worker)
    # killed by the signal itself while the interpreter is still importing, else a clean exit
    assert code in (0, -signal.SIGTERM)
    redis = Redis.from_url(redis_url)
    assert 0 == redis.zcard("ladder:staging")  # no batch left claimed by the stopped worker
    redis.close()


def test_sigterm_after_start_up_before_rqs_loop_stops_the_worker(cli, redis_url):
    """SPEC 5: a SIGTERM that arrives after the worker's own start-up but before RQ's loop has
    installed its handlers is not forgotten: the loop is never entered and the worker exits 0."""
    worker = spawn({**cli.env, "LADDER_FAILPOINTS": "runner.before_loop=pause:3"})
    redis = Redis.from_url(redis_url)
    try:
        wait_started(redis)
        os.killpg(worker.pid, signal.SIGTERM)
        code = worker.wait(timeout=15)
    finally:
        if worker.poll() is None:
            kill_group(worker)
    assert 0 == code
    assert 0 == redis.exists("ladder:scheduler")  # it let go of the scheduler on the way out
    redis.close()


def test_sigterm_stops_a_burst_worker_after_the_batch_in_hand(cli, database_url, redis_url):
    """SPEC 5 for ``--burst`` too: on SIGTERM the batch in hand commits and the worker exits 0
    without taking the next one; what it left is drained later, nothing lost or doubled."""
    events = hot_events(40, 6, random.Random(5))
    redis = Redis.from_url(redis_url)
    publish(redis, events)
    env = {
        **cli.env,
        "LADDER_BATCH_SIZE": "4",
        "LADDER_FAILPOINTS": "service.before_commit=pause:2",
    }
    worker = spawn(env, "--burst")
    try:
        deadline = time.monotonic() + 30
        while redis.llen("ladder:inbox") == len(events):  # it has taken its first batches
            assert time.monotonic() < deadline, "the worker never started"
            time.sleep(0.05)
        time.sleep(0.5)  # inside the first batch's pause, before its commit
        os.killpg(worker.pid, signal.SIGTERM)
        code = worker.wait(timeout=15)  # ten batches of 2 s each would take longer
    finally:
        if worker.poll() is None:
            kill_group(worker)
    redis.close()
    assert 0 == code
    cli.ladder("worker", "--burst")
    check_stores(database_url, redis_url, expected_ids(events))
