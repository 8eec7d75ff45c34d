"""The ``ingest`` and ``batch_sizes`` sections: the mix published, then drained by burst workers;
the RQ no-op job rate beside it; and the exactly-once check after every drain.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, cast

from bench import env, servercpu
from bench.events import Mix
from bench.plan import LADDERS
from bench.workers import Workers, _ladder_worker

#: What a ladder's rating board ranks a player by, from the stored rating and deviation.
BoardScore = Callable[[float, float | None], float]


def _rating(rating: float, deviation: float | None) -> float:
    del deviation
    return rating


#: The shipped ladders: each board ranks by the rating.
BOARDS: Mapping[str, BoardScore] = {ladder: _rating for ladder in LADDERS}

# -- processes -------------------------------------------------------------------------------


def _noop_worker(target: env.Target) -> list[str]:
    return [sys.executable, "-m", "bench.noop", "work", target.redis_url]


def _timed(
    argv: list[str], count: int, environ: dict[str, str], log: Path
) -> tuple[float, float, float]:
    """Run ``count`` processes to completion: (wall seconds, their CPU seconds, the largest
    peak RSS among them in MiB)."""
    started = time.perf_counter()
    workers = Workers(argv, count, environ, log)
    codes = workers.wait()
    elapsed = time.perf_counter() - started
    if any(codes):
        raise RuntimeError(f"{argv} exited with {codes}; see {log}")
    return elapsed, workers.cpu_seconds, round(workers.own_peak_rss_kib / 1024, 1)


# -- ingest ----------------------------------------------------------------------------------


def ingest(
    target: env.Target,
    events: int,
    workers: int,
    batch_size: int | None,
    log: Path,
    stream: tuple[list[str], Mix] | None = None,
    *,
    config: Path | None = None,
    boards: Mapping[str, BoardScore] = BOARDS,
) -> dict[str, Any]:
    """Publish, then drain with burst workers; the rate is measured from the workers' own
    clocks (first batch's start in the audit rows to the last per-event log line), so
    process start-up (imports, connections: about a second) is left out. The wall time from
    spawning the workers to their exit is reported too. ``config``: the workers'
    ``LADDER_CONFIG``; ``boards``: the ladders whose rating boards the check compares with
    PostgreSQL, and what each ranks by."""
    environ = target.subprocess_env(batch_size)
    if config is not None:
        environ["LADDER_CONFIG"] = str(config)
    target.reset()
    payloads, mix = stream or env.generate_events(events, tag=f"w{workers}b{batch_size or 0}")
    publish_seconds = target.publish(payloads)
    run_log = log.with_name(f"ingest-{workers}-{batch_size or 0}.log")
    before = servercpu.sample()
    wall, cpu, rss = _timed(_ladder_worker(True), workers, environ, run_log)
    by_process = servercpu.per_event(before, servercpu.sample(), len(payloads))
    (first,) = target.sql("SELECT min(processed_at) FROM events")[0]
    last = last_event_logged(run_log)
    drain = max((last - first).total_seconds(), 1e-6) if first and last else wall
    append_log(run_log, log)
    check = verify(target, mix, boards)
    return {
        "events": len(payloads),
        "workers": workers,
        "batch_size": batch_size or _default_batch_size(),
        "publish_events_per_second": round(len(payloads) / publish_seconds),
        "wall_seconds": round(wall, 3),
        "wall_events_per_second": round(len(payloads) / wall),
        "drain_seconds": round(drain, 3),
        "events_per_second": round(len(payloads) / drain),
        "worker_cpu_us_per_event": round(cpu * 1e6 / len(payloads)),
        "cpu_us_per_event": by_process,  # by process, the workers' start-up included
        "worker_peak_rss_mib": rss,
        "check": check,
    }


def _default_batch_size() -> int:
    from worker.settings import Settings

    return Settings().batch_size


def last_event_logged(path: Path) -> datetime | None:
    last = None
    with path.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            if '"event": "batch"' not in line:
                continue
            try:
                stamp = json.loads(line)["timestamp"]
            except (ValueError, KeyError):
                continue
            moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
            last = moment if last is None or moment > last else last
    return last


def append_log(source: Path, log: Path) -> None:
    with log.open("ab") as out, source.open("rb") as data:
        for chunk in iter(lambda: data.read(1 << 20), b""):
            out.write(chunk)
    source.unlink()


def noop_rate(target: env.Target, jobs: int, workers: int, log: Path) -> dict[str, Any]:
    """The same worker class draining no-op jobs. Each worker process times its own
    ``work(burst=True)`` call, so start-up is left out here too."""
    from bench import noop

    environ = target.subprocess_env()
    target.redis.flushdb()
    noop.enqueue(target.redis, jobs)
    wall, cpu, _ = _timed(_noop_worker(target), workers, environ, log)
    spans = [json.loads(x) for x in target.redis.lrange(noop.TIMINGS, 0, -1)]
    first = min((s[0] for s in spans), default=0.0)
    last = max((s[1] for s in spans), default=wall)
    drain = max(last - first, 1e-6)
    target.redis.flushdb()
    return {
        "jobs": jobs,
        "workers": workers,
        "wall_seconds": round(wall, 3),
        "drain_seconds": round(drain, 3),
        "jobs_per_second": round(jobs / drain),
        "worker_cpu_us_per_job": round(cpu * 1e6 / jobs),
    }


def verify(
    target: env.Target, mix: Mix, boards: Mapping[str, BoardScore] = BOARDS
) -> dict[str, Any]:
    """Exactly-once: one audit row per unique valid event, one dead letter per invalid one,
    an unbroken ledger per player, nothing left queued, and Redis equal to PostgreSQL (each
    of ``boards``' rating boards ranking its players by what that ladder ranks by)."""
    from rq import Queue
    from rq.registry import FailedJobRegistry

    from worker import keys

    problems: list[str] = []
    (audit_rows,) = target.sql("SELECT count(*) FROM events")[0]
    if audit_rows != mix.unique_valid:
        problems.append(f"audit rows {audit_rows} != unique valid events {mix.unique_valid}")
    queue = Queue(keys.QUEUE_NAME, connection=target.redis)
    dead = FailedJobRegistry(queue=queue).count
    if dead != mix.invalid:
        problems.append(f"dead letters {dead} != invalid events {mix.invalid}")
    left = target.redis.llen(keys.INBOX) + queue.count + target.redis.zcard(keys.STAGING_INDEX)
    if left:
        problems.append(f"{left} events/jobs/staged batches left behind")
    (broken,) = target.sql(
        """SELECT count(*) FROM (
             SELECT rating_before, lag(rating_after) OVER (
               PARTITION BY ladder, player_id ORDER BY id) AS previous
             FROM rating_changes) c
           WHERE previous IS NOT NULL AND previous <> rating_before"""
    )[0]
    if broken:
        problems.append(f"{broken} ledger rows do not start from the previous rating")
    (drift,) = target.sql(
        """SELECT count(*) FROM players p JOIN (
             SELECT ladder, player_id, rating_after,
                    row_number() OVER (PARTITION BY ladder, player_id ORDER BY id DESC) AS n
             FROM rating_changes) c USING (ladder, player_id)
           WHERE c.n = 1 AND c.rating_after <> p.rating"""
    )[0]
    if drift:
        problems.append(f"{drift} players whose rating is not their last ledger entry")
    rated = 0
    for ladder, score in boards.items():
        stored = {
            player_id: score(rating, deviation)
            for player_id, rating, deviation in target.sql(
                "SELECT player_id, rating, deviation FROM players WHERE ladder = %s AND listed "
                "AND linked_to IS NULL",
                ladder,
            )
        }
        board = {
            m.decode(): s
            for m, s in cast(Any, target.redis).zrange(keys.rating(ladder), 0, -1, withscores=True)
        }
        rated += len(stored)
        if stored != board:
            diff = len(set(stored.items()) ^ set(board.items()))
            problems.append(f"{ladder}: Redis rating board differs from PostgreSQL ({diff})")
    (changes,) = target.sql("SELECT count(*) FROM rating_changes")[0]
    return {
        "ok": not problems,
        "problems": problems,
        "audit_rows": audit_rows,
        "dead_letters": dead,
        "rating_changes": changes,
        "rated_players": rated,
    }


# -- latency ---------------------------------------------------------------------------------
