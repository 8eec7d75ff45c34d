"""Faults with real processes: a private PostgreSQL stopped under load and frozen under
``ladder serve``, poison events among valid ones, ``kill -9`` of workers, a Redis restarted
from its AOF with a dead worker's scheduler lock."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any, cast

import pytest
from redis import Redis
from rq import Queue, Worker
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from tests.conftest import record_figure
from tests.e2e.conftest import LADDER, Cli
from tests.e2e.invariants import check_stores
from tests.e2e.private import PrivatePostgres, free_port, wait_for
from tests.e2e.test_outage_redis import PrivateRedis
from tests.e2e.test_reliability import expected_ids, hot_events, kill_group, publish
from tests.events import game
from worker import keys

PROCESS_BATCH = "worker.queue.jobs.process_batch"


def _env(database_url: str, redis_url: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LADDER_")}
    return env | {
        "REDIS_URL": redis_url,
        "DATABASE_URL": database_url,
        "LADDER_METRICS_PORT": "0",
        **extra,
    }


def _spawn(env: dict[str, str], *args: str, log: Path | None = None) -> subprocess.Popen[bytes]:
    if log is None:
        return subprocess.Popen(
            [LADDER, "--log-level", "WARNING", "worker", *args],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    with open(log, "ab") as out:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(
            [LADDER, "--log-level", "WARNING", "worker", *args],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=out,
            start_new_session=True,
        )


def _audited(database_url: str) -> Callable[[], int]:
    engine = create_engine(database_url, poolclass=NullPool, connect_args={"connect_timeout": 3})

    def count() -> int:
        try:
            with engine.connect() as conn:
                return int(conn.execute(text("SELECT count(*) FROM events")).scalar_one())
        except Exception:
            return -1

    return count


def _session_processes(leader: int) -> list[int]:
    """Every live process of the session ``leader`` started (its RQ children included)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[3]) == leader:  # field 6 of stat: the session id
            found.append(int(entry.name))
    return found


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("0.0.0.0", port))
        except OSError:
            return False
        return True


@pytest.fixture
def private_postgres() -> Iterator[PrivatePostgres]:
    # not under pytest's tmp_path: its parents are closed to the postgres user
    directory = Path(tempfile.mkdtemp(prefix="ladder-pg-"))
    server = PrivatePostgres(directory)
    try:
        server.start()
        yield server
    finally:
        try:
            server.thaw()
        except (OSError, ValueError):
            pass
        server.stop()
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    server = PrivateRedis(tmp_path)
    server.start()
    yield server
    server.stop()


# -- PostgreSQL stopped under load ---------------------------------------------------------


def run_postgresql_outage(private_postgres, redis_url, tmp_path, *, outage_seconds: float):
    env = _env(private_postgres.url, redis_url, LADDER_BATCH_SIZE="50")
    Cli(env).ladder("migrate")
    events = hot_events(1200, 20, random.Random(12))
    log = tmp_path / "workers.log"
    workers = [_spawn(env, log=log) for _ in range(2)]
    redis = Redis.from_url(redis_url)
    audited = _audited(private_postgres.url)
    try:
        # Both workers running before the store goes: a worker still starting when it does
        # fails its start-up check and exits with one line (``ladder worker`` with no
        # database), which is not what this test is about.
        wait_for(lambda: Worker.count(connection=redis) == len(workers), 60)
        publish(redis, events[:400])
        wait_for(lambda: audited() >= 100, 60)
        private_postgres.stop()
        stopped = time.monotonic()
        for i in range(400, 1200, 100):  # published during the outage
            publish(redis, events[i : i + 100])
            time.sleep(min(1.0, outage_seconds / 10))
        time.sleep(max(0.0, outage_seconds - (time.monotonic() - stopped)))
        private_postgres.start()
        outage = time.monotonic() - stopped
        before = audited()
        resumed = wait_for(lambda: audited() > before, 60)
        drained = wait_for(lambda: audited() == len(events), 120, step=0.5)
        assert all(w.poll() is None for w in workers), "a worker died during the outage"
    finally:
        for w in workers:
            kill_group(w, signal.SIGTERM)
        redis.close()
    assert [] == Cli(env).ladder_json("dlq", "list")
    figures = check_stores(private_postgres.url, redis_url, expected_ids(events))
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    lost = [x for x in lines if x.get("event") == "store_unavailable"]
    tracebacks = log.read_text().count("Traceback")
    kinds = sorted({str(x.get("event")) for x in lines})
    assert 1 <= len(lost) <= 2, "one warning per worker when it loses PostgreSQL"
    assert resumed < 30, f"processing resumed {resumed:.1f} s after PostgreSQL returned"
    record_figure(
        f"postgresql stopped {outage:.0f} s under load: {figures}, 0 dead letters, "
        f"resumed {resumed:.1f} s after the restart, drained {drained:.1f} s later, "
        f"{len(lines)} log lines ({', '.join(kinds)}), {tracebacks} tracebacks"
    )


def test_postgresql_stopped_under_load_dead_letters_nothing(private_postgres, redis_url, tmp_path):
    """SPEC 5: "transient failures (PostgreSQL or Redis unreachable) never dead-letter an
    event: workers stop taking from the inbox and retry until the store returns"; and
    processing resumes within 30 s of the store's return. (20 s outage; the soak variant
    outlasts the old retry budget of 1+5+15+60+300 s.)"""
    run_postgresql_outage(private_postgres, redis_url, tmp_path, outage_seconds=20)


@pytest.mark.soak
def test_postgresql_stopped_longer_than_the_old_retry_budget_dead_letters_nothing(
    private_postgres, redis_url, tmp_path
):
    run_postgresql_outage(private_postgres, redis_url, tmp_path, outage_seconds=400)


# -- poison events -----------------------------------------------------------------------


def test_poison_events_are_dead_lettered_alone_and_valid_neighbours_applied_in_seconds(
    cli, database_url, redis_url
):
    """Promised: "A poison event is isolated, not retried with its neighbours": a year-0001 game and
    a 10 MB payload among 35 valid events; the valid ones are applied within seconds,
    whether the poison is refused at validation or split out of its batch."""
    valid = [game(f"p{i}", f"q{i}", event_id=f"ok-{i}") for i in range(35)]
    year_one = game("y1", "y2", event_id="year-0001")
    year_one["ended_at"] = "0001-01-01T00:00:00Z"
    huge = game("h1", "h2", event_id="huge", padding="x" * 10_000_000)
    batch = [*valid[:10], year_one, *valid[10:20], huge, *valid[20:]]
    redis = Redis.from_url(redis_url)
    publish(redis, batch)
    worker = _spawn({**cli.env, "LADDER_METRICS_PORT": "0"})
    audited = _audited(database_url)
    try:
        seconds = wait_for(lambda: audited() >= len(valid), 30)
    finally:
        kill_group(worker, signal.SIGTERM)
        redis.close()
    letters = {d["event_id"] for d in cli.ladder_json("dlq", "list")}
    assert {"year-0001", "huge"} == letters
    assert audited() == len(valid)
    record_figure(f"2 poison events among 35 valid: valid applied in {seconds:.1f} s")


# -- kill -9 and the scheduler -------------------------------------------------------------


def _schedule_retry(redis: Redis, event: dict[str, Any]) -> None:
    """A batch waiting for its retry back-off, due in a second."""
    Queue(keys.QUEUE_NAME, connection=redis).enqueue_in(
        timedelta(seconds=1), PROCESS_BATCH, [json.dumps(event)], result_ttl=0
    )


def _retry_runs(redis: Redis, env: dict[str, str], database_url: str, since: float) -> float:
    """Start a worker, schedule a retry; seconds from ``since`` until it was applied."""
    worker = _spawn(env)
    audited = _audited(database_url)
    try:
        _schedule_retry(redis, game("r1", "r2", event_id="retried"))
        wait_for(lambda: audited() == 1, 60)
        return time.monotonic() - since
    finally:
        kill_group(worker, signal.SIGTERM)
        redis.close()


def test_kill_9_leaves_no_process_a_free_metrics_port_and_retries_still_run(
    cli, database_url, redis_url
):
    """Promised: "A worker leaves no orphan and its scheduler never silently dies": after a
    kill -9 no process of the worker is left, its metrics port is free, and a scheduled retry
    runs within 60 s."""
    port = free_port()
    env = {**cli.env, "LADDER_METRICS_PORT": str(port)}
    redis = Redis.from_url(redis_url)
    first = _spawn(env)
    wait_for(lambda: redis.get(keys.SCHEDULER_LOCK) is not None, 20)
    os.kill(first.pid, signal.SIGKILL)
    first.wait(timeout=10)
    killed = time.monotonic()
    assert [] == _session_processes(first.pid), "the killed worker left a process behind"
    assert _port_free(port), "the killed worker's metrics port is still held"
    seconds = _retry_runs(redis, {**cli.env, "LADDER_METRICS_PORT": "0"}, database_url, killed)
    assert seconds < 60
    record_figure(f"kill -9 of the scheduling worker: a retry ran {seconds:.1f} s after it")


def test_a_redis_restart_with_a_dead_workers_scheduler_lock_still_runs_retries(
    database_url, private_redis
):
    """Promised: "A dead or lost scheduler is replaced by a live worker within 60 s,
    including after a Redis restart that restored a stale lock.\""""
    env = _env(database_url, private_redis.url)
    Cli(env).ladder("migrate")
    redis = Redis.from_url(private_redis.url)
    first = _spawn(env)
    wait_for(lambda: redis.get(keys.SCHEDULER_LOCK) is not None, 20)
    kill_group(first, signal.SIGKILL)
    private_redis.stop()  # the lock is in the AOF
    private_redis.start()
    redis.close()
    redis = Redis.from_url(private_redis.url)
    assert redis.get(keys.SCHEDULER_LOCK) is not None, "the restart did not restore the lock"
    seconds = _retry_runs(redis, env, database_url, time.monotonic())
    record_figure(f"redis restart with a stale scheduler lock: retry ran in {seconds:.1f} s")


@pytest.mark.parametrize(
    "point",
    [pytest.param("inbox.after_claim", marks=pytest.mark.soak), "service.after_commit"],
)
def test_a_worker_killed_mid_batch_has_its_work_applied_within_60_s(
    cli, database_url, redis_url, point
):
    """Promised: "Recovery within 60 s of a SIGKILL at any point ... whatever LADDER_JOB_TIMEOUT is:
    detect the dead worker from its heartbeat, not from the job's expiry.\""""
    env = {**cli.env, "LADDER_JOB_TIMEOUT": "600", "LADDER_METRICS_PORT": "0"}
    redis = Redis.from_url(redis_url)
    publish(redis, [game("k1", "k2", event_id="killed")])
    first = _spawn({**env, "LADDER_FAILPOINTS": f"{point}=1"})
    first.wait(timeout=30)  # the failpoint killed it
    killed = time.monotonic()
    second = _spawn(env)
    try:
        wait_for(lambda: redis.zscore(keys.rating("gammon42"), "k1") is not None, 60)
        seconds = time.monotonic() - killed
    finally:
        kill_group(second, signal.SIGTERM)
        redis.close()
    assert 1 == _audited(database_url)()
    record_figure(f"SIGKILL at {point} (job timeout 600 s): recovered in {seconds:.1f} s")


def _killed_at_first_follow_on_write(env: dict[str, str], redis: Redis, events: Any) -> None:
    """Publish ``events``; a burst worker is SIGKILLed as the Redis write of the first batch
    its job takes after its own begins (``jobs.before_redis_write``)."""
    publish(redis, events)
    first = _spawn({**env, "LADDER_FAILPOINTS": "jobs.before_redis_write=1"}, "--burst")
    assert -signal.SIGKILL == first.wait(timeout=60)


def test_a_worker_killed_while_a_follow_on_batch_is_written_to_redis_loses_nothing(
    cli, database_url, redis_url
):
    """A batch taken by a job after its own is committed in PostgreSQL, then written to Redis
    (a batch this small, on the job's own thread). SIGKILL before that write: the
    batch, still staged, is recovered as a job, which finds its events applied (duplicates)
    and writes their players and receipts; every event once, Redis equal to PostgreSQL."""
    env = {**cli.env, "LADDER_BATCH_SIZE": "1", "LADDER_JOB_TIMEOUT": "600"}
    events = [game(f"f{n}", f"g{n}", event_id=f"follow-{n}") for n in range(3)]
    redis = Redis.from_url(redis_url)
    try:
        _killed_at_first_follow_on_write(env, redis, events)
        assert 2 == _audited(database_url)()  # its own batch and the follow-on one, committed
        assert redis.get(keys.receipt("follow-1")) is None  # ... the second not in Redis
        killed = time.monotonic()
        cli.ladder("worker", "--burst", timeout=120)  # recovers the staged batch (30 s grace)
        seconds = time.monotonic() - killed
        assert all(redis.get(keys.receipt(e["event_id"])) for e in events)
    finally:
        redis.close()
    check_stores(database_url, redis_url, {("gammon42", e["event_id"]) for e in events})
    record_figure(f"SIGKILL before a follow-on batch's Redis write: recovered in {seconds:.1f} s")


def test_a_worker_killed_holding_a_batch_claimed_before_a_redis_write_loses_nothing(
    cli, database_url, redis_url
):
    """Under load a job claims its next batch before the Redis write of the one before
    starts. SIGKILL as that write begins: the written-to-be batch (committed) and the one
    claimed after it (staged, never settled) are both recovered as jobs; every event once,
    every receipt written, Redis equal to PostgreSQL."""
    env = {**cli.env, "LADDER_BATCH_SIZE": "100", "LADDER_JOB_TIMEOUT": "600"}
    events = [game(f"a{n}", f"b{n}", event_id=f"early-{n}") for n in range(300)]
    redis = Redis.from_url(redis_url)
    try:
        _killed_at_first_follow_on_write(env, redis, events)
        assert 200 == _audited(database_url)()  # the job's own batch and the follow-on one
        assert 0 == redis.llen(keys.INBOX)  # the third batch was claimed before the write
        staged = [b.decode() for b in cast(list[bytes], redis.zrange(keys.STAGING_INDEX, 0, -1))]
        assert [100, 100] == sorted(redis.llen(keys.staging(b)) for b in staged)
        killed = time.monotonic()
        cli.ladder("worker", "--burst", timeout=120)  # recovers both (30 s grace)
        seconds = time.monotonic() - killed
        assert all(redis.get(keys.receipt(e["event_id"])) for e in events)
        assert 0 == redis.zcard(keys.STAGING_INDEX)
    finally:
        redis.close()
    check_stores(database_url, redis_url, {("gammon42", e["event_id"]) for e in events})
    record_figure(
        f"SIGKILL holding a batch claimed before a Redis write: recovered in {seconds:.1f} s"
    )


def test_a_worker_killed_while_it_validates_the_next_batch_during_a_commit_loses_nothing(
    cli, database_url, redis_url
):
    """Under load a job sends a batch's COMMIT and validates the next batch before reading the
    answer. SIGKILL then: the batch is committed or not (the server may finish it after the
    worker is gone), the next one staged and never settled; both are recovered as jobs, and
    every event is applied once, every receipt written, Redis equal to PostgreSQL."""
    env = {**cli.env, "LADDER_BATCH_SIZE": "100", "LADDER_JOB_TIMEOUT": "600"}
    events = [game(f"v{n}", f"w{n}", event_id=f"ahead-{n}") for n in range(300)]
    redis = Redis.from_url(redis_url)
    try:
        publish(redis, events)
        first = _spawn({**env, "LADDER_FAILPOINTS": "jobs.validating_ahead=1"}, "--burst")
        assert -signal.SIGKILL == first.wait(timeout=60)
        assert 0 == redis.llen(keys.INBOX)  # the next batch was taken before the kill
        assert redis.zcard(keys.STAGING_INDEX) == 2  # the one committing and the next
        cli.ladder("worker", "--burst", timeout=120)  # recovers both (30 s grace)
        assert all(redis.get(keys.receipt(e["event_id"])) for e in events)
        assert 0 == redis.zcard(keys.STAGING_INDEX)
    finally:
        redis.close()
    check_stores(database_url, redis_url, {("gammon42", e["event_id"]) for e in events})


# -- ladder serve with PostgreSQL frozen ---------------------------------------------------


def _get(url: str) -> tuple[int, dict[str, Any], float]:
    started = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=15) as reply:
            status, body = reply.status, reply.read()
    except urllib.error.HTTPError as error:
        status, body = error.code, error.read()
    return status, json.loads(body), time.monotonic() - started


def test_serve_answers_503_within_5_s_while_postgresql_is_frozen(private_postgres, redis_url):
    """Promised: "PostgreSQL-backed endpoints answer 503 within 5 s when PostgreSQL is down or hung
    ..., and Redis-only endpoints keep answering while PostgreSQL is hung ... The 503 body
    names the store that is unavailable.\""""
    env = _env(private_postgres.url, redis_url)
    Cli(env).ladder("migrate")
    port = free_port()
    server = subprocess.Popen(
        [LADDER, "serve", "--host", "127.0.0.1", "--port", str(port)],
        env={**env, "LADDER_PUBLIC_SCOPES": "boards,history"},  # histories read PostgreSQL
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}/ladders/gammon42"
    try:
        wait_for(lambda: _up(base + "/top"), 30)
        assert 404 == _get(base + "/players/nobody/history")[0]  # PostgreSQL answers
        private_postgres.freeze()
        slow = [_get(base + "/players/nobody/history") for _ in range(3)]
        top = [_get(base + "/top") for _ in range(20)]
        private_postgres.thaw()
    finally:
        kill_group(server, signal.SIGTERM)
    assert [503] * 3 == [status for status, _, _ in slow]
    assert all(body["store"] == "postgresql" for _, body, _ in slow)
    assert max(seconds for _, _, seconds in slow) < 5.0
    assert [200] * 20 == [status for status, _, _ in top]
    assert max(seconds for _, _, seconds in top) < 1.0
    record_figure(
        f"serve, PostgreSQL frozen: 503 in {max(s for _, _, s in slow):.1f} s, "
        f"/top in {max(s for _, _, s in top) * 1000:.0f} ms"
    )


def _up(url: str) -> bool:
    try:
        return _get(url)[0] == 200
    except OSError:
        return False
