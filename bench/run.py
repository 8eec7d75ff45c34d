"""ladder's benchmark suite: ``python -m bench.run`` (``make bench``).

Sections (each on a clean database and a flushed Redis db):

- ingest: a realistic mix of events (``bench.events``) published to the inbox, drained by
  1 and by 2 ``ladder worker --burst`` processes; events/s beside the same machine's RQ
  no-op job rate with the same worker class, and an exactly-once check of what was written.
- batch sizes: the 2-worker drain again for several ``LADDER_BATCH_SIZE`` values.
- latency: publish-to-visible p50/p99/max at a fixed offered load against two running
  workers, for the mix and for one hot ladder, each event seen when its receipt arrives on
  the receipt stream (``bench.arrival``).
- reads: the reader library against raw redis-py calls doing the same work.
- rebuild: seconds to rebuild a 1,000,000-player ladder from PostgreSQL, and Redis bytes per
  player (needs ``ladder rebuild``).
- floor: ladder's drain rate with 1 and 2 workers against ``bench.floor`` (the same I/O
  written plainly, no framework) on the same events, for the mix and for one hot ladder
  (``bench.floorbench``); the goals are the ratios.
- startup: a burst worker's process start to its first event scored.
- history: ``ladder verify``, ``backtest`` and ``void`` over one ladder's long history
  (``bench.history``: 200,000 games among 4,000 players).
- worker peak RSS over every worker process started.

Prints a table with each goal and whether it is met, and writes JSON
(``bench-results/latest.json`` unless ``--out``). ``--quick`` is a small smoke-sized run.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from bench import arrival, env, floorbench, history, moderation
from bench import boards as boards_bench
from bench.events import Mix, probe_game
from bench.receipts import goals as receipt_goals
from bench.workers import Workers, _ladder_worker

LADDERS = ("gammon42", "fibs", "prostriker")
SECTIONS = (
    "ingest,batch_sizes,latency,reads,rebuild,replay,floor,startup,boards,receipts,void,history,"
    "growth"
)
WATCH_AT_MOST = 600  # outstanding probes polled per round
LATENCY_GOAL_MS = 20  # publish-to-visible p99 at 1,000 events/s, each workload
LATENCY_GRACE_SECONDS = 10.0  # how long after the last publish a probe may still appear
RESULTS_DIR = env.ROOT / "bench-results"


@dataclass(frozen=True)
class Plan:
    events: int
    noop_jobs: int
    batch_sizes: tuple[int, ...]
    sweep_events: int
    latency_rate: int
    latency_seconds: float
    latency_workers: int
    read_players: int
    read_seconds: float
    rebuild_players: int
    history_events: int  # section history: one ladder's games, and its players
    history_players: int
    rounds: int  # ingest, latency and rebuild are run this many times; the median is shown


FULL = Plan(
    events=40_000,
    noop_jobs=2_000,
    batch_sizes=(50, 200, 500, 1000),
    sweep_events=10_000,
    latency_rate=1_000,
    latency_seconds=30.0,
    latency_workers=2,
    read_players=100_000,
    read_seconds=1.5,
    rebuild_players=1_000_000,
    history_events=200_000,
    history_players=4_000,
    rounds=3,
)
QUICK = Plan(
    events=3_000,
    noop_jobs=300,
    batch_sizes=(),
    sweep_events=0,
    latency_rate=200,
    latency_seconds=3.0,
    latency_workers=1,
    read_players=5_000,
    read_seconds=0.3,
    rebuild_players=20_000,
    history_events=3_000,
    history_players=300,
    rounds=1,
)


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
) -> dict[str, Any]:
    """Publish, then drain with burst workers; the rate is measured from the workers' own
    clocks (first batch's start in the audit rows to the last per-event log line), so
    process start-up (imports, connections: about a second) is left out. The wall time from
    spawning the workers to their exit is reported too."""
    environ = target.subprocess_env(batch_size)
    target.reset()
    payloads, mix = stream or env.generate_events(events, tag=f"w{workers}b{batch_size or 0}")
    publish_seconds = target.publish(payloads)
    run_log = log.with_name(f"ingest-{workers}-{batch_size or 0}.log")
    wall, cpu, rss = _timed(_ladder_worker(True), workers, environ, run_log)
    (first,) = target.sql("SELECT min(processed_at) FROM events")[0]
    last = _last_event_logged(run_log)
    drain = max((last - first).total_seconds(), 1e-6) if first and last else wall
    _append(run_log, log)
    check = verify(target, mix)
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
        "worker_peak_rss_mib": rss,
        "check": check,
    }


def _default_batch_size() -> int:
    from worker.settings import Settings

    return Settings().batch_size


def _last_event_logged(path: Path) -> datetime | None:
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


def _append(source: Path, log: Path) -> None:
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


def verify(target: env.Target, mix: Mix) -> dict[str, Any]:
    """Exactly-once: one audit row per unique valid event, one dead letter per invalid one,
    an unbroken ledger per player, nothing left queued, and Redis equal to PostgreSQL."""
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
    for ladder in LADDERS:
        stored = dict(
            target.sql(
                "SELECT player_id, rating FROM players WHERE ladder = %s AND listed "
                "AND linked_to IS NULL",
                ladder,
            )
        )
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


def latency(
    target: env.Target, rate: int, seconds: float, workers: int, log: Path, poll_ms: float = 1.0
) -> dict[str, Any]:
    """Publish probe games at a fixed rate; a watcher polls ZMSCORE for each probe winner.

    Each probe's winner is a new player, so it appears on the ladder's rating zset exactly
    when its event has been projected. The watcher polls every ``poll_ms`` with one
    pipelined ZMSCORE per ladder for all outstanding probes, so its cost is one round trip
    per poll however many events are in flight; the resolution is about one poll interval.
    """
    from redis.exceptions import RedisError

    from worker import keys

    poll = poll_ms / 1000
    target.reset()
    environ = target.subprocess_env()
    procs = Workers(_ladder_worker(False), workers, environ, log)
    workers_started = time.perf_counter()
    tag = f"lat{random.randrange(1 << 20):x}"
    opponents = {ladder: [f"{ladder[0]}-opp-{n}" for n in range(5_000)] for ladder in LADDERS}
    sent: deque[tuple[str, str, float]] = deque()
    seen: list[float] = []
    pending: dict[tuple[str, str], float] = {}
    done = threading.Event()
    publisher_done = threading.Event()
    rng = random.Random(7)
    lag_max = 0.0
    errors: list[str] = []

    def probe(i: int) -> tuple[str, str, str]:
        ladder = LADDERS[i % 3]
        payload, winner = probe_game(i, tag, ladder, rng.choice(opponents[ladder]))
        return ladder, winner, payload

    def publish(start: int, count: int, pace: float) -> None:
        nonlocal lag_max
        client = target.redis.__class__(connection_pool=target.redis.connection_pool)
        began = time.perf_counter()
        for n in range(count):
            due = began + n / pace
            delay = due - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            else:
                lag_max = max(lag_max, -delay)
            ladder, winner, payload = probe(start + n)
            at = time.perf_counter()
            client.rpush(keys.INBOX, payload)
            sent.append((ladder, winner, at))
        publisher_done.set()

    def watch() -> None:
        client = target.redis.__class__(connection_pool=target.redis.connection_pool)
        while not (done.is_set() and publisher_done.is_set() and not pending and not sent):
            while sent:
                ladder, winner, at = sent.popleft()
                pending[(ladder, winner)] = at
            try:
                if pending:
                    # Events become visible roughly in publish order: polling the oldest few
                    # hundred keeps the watcher's cost flat even when a backlog builds up.
                    by_ladder: dict[str, list[str]] = {}
                    for ladder, winner in itertools.islice(pending, WATCH_AT_MOST):
                        by_ladder.setdefault(ladder, []).append(winner)
                    pipe = client.pipeline(transaction=False)
                    order = list(by_ladder.items())
                    for ladder, winners in order:
                        pipe.zmscore(keys.rating(ladder), winners)
                    replies = pipe.execute()
                    now = time.perf_counter()
                    for (ladder, winners), scores in zip(order, replies, strict=True):
                        for winner, score in zip(winners, scores, strict=True):
                            if score is not None:
                                seen.append(now - pending.pop((ladder, winner)))
            except RedisError as exc:  # a slow or busy server: note it and poll again
                errors.append(f"{type(exc).__name__}: {exc}")
            if done.is_set() and publisher_done.is_set() and not sent:
                if time.perf_counter() > deadline:
                    break
            time.sleep(poll)

    # Warm-up: wait until the workers answer, then a short run that is not counted.
    deadline = time.perf_counter() + 60
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    publish(0, 1, 1.0)
    while not seen and time.perf_counter() < deadline:
        time.sleep(0.05)
    publisher_done.clear()
    publish(1, max(rate // 2, 10), rate)
    settle = time.perf_counter() + 30
    while (pending or sent) and time.perf_counter() < settle:
        time.sleep(0.05)
    if pending or sent:
        procs.stop()
        raise RuntimeError("workers did not project the warm-up events within 30 s")
    seen.clear()
    lag_max = 0.0
    publisher_done.clear()

    count = int(rate * seconds)
    started = time.perf_counter()
    own_cpu = time.process_time()
    publish(1_000_000, count, rate)
    offered = count / (time.perf_counter() - started)
    done.set()
    deadline = time.perf_counter() + LATENCY_GRACE_SECONDS
    watcher.join()
    ended = time.perf_counter()
    own_cpu = time.process_time() - own_cpu
    unseen = [ended - at for at in pending.values()] + [ended - at for _l, _w, at in sent]
    lost = len(unseen)
    codes = procs.stop()
    workers_alive = time.perf_counter() - workers_started
    # A probe never seen counts with the time it had waited so far (a lower bound), so the
    # percentiles are over every probe published, not only the lucky ones.
    samples = seen + unseen
    return {
        "offered_events_per_second": round(offered),
        "seconds": seconds,
        "workers": workers,
        "events": count,
        "visible": len(seen),
        "percentiles_are_lower_bounds": bool(lost),
        "not_visible_within_grace": lost,
        "grace_seconds": LATENCY_GRACE_SECONDS,
        **arrival.percentiles(samples),
        "poll_interval_ms": poll * 1000,
        # CPU use, in cores: the workers over their whole life (start-up and warm-up included),
        # this process (publisher and watcher) over the measured run.
        "worker_cpu_cores": round(procs.cpu_seconds / workers_alive, 2),
        "bench_cpu_cores": round(own_cpu / (ended - started), 2),
        "publisher_max_lag_ms": round(lag_max * 1000, 2),
        "worker_exit_codes": codes,
        "watcher_errors": errors[:5],
    }


# -- reads -----------------------------------------------------------------------------------


def _rate(call: Callable[[], Any], seconds: float) -> float:
    call()
    count = 0
    started = time.perf_counter()
    while True:
        for _ in range(50):
            call()
        count += 50
        elapsed = time.perf_counter() - started
        if elapsed >= seconds:
            return count / elapsed


def _competition_ranks(rows: list[tuple[Any, float]], first: int) -> list[tuple[str, int, float]]:
    out: list[tuple[str, int, float]] = []
    for i, (member, score) in enumerate(rows):
        rank = out[-1][1] if out and score == out[-1][2] else first + i
        out.append((member.decode(), rank, score))
    return out


def reads(target: env.Target, players: int, seconds: float) -> dict[str, Any]:
    from worker import keys
    from worker.boards import reader

    target.redis.flushdb()
    ladder = "gammon42"
    key = keys.rating(ladder)
    rng = random.Random(3)
    pipe = target.redis.pipeline(transaction=False)
    for start in range(0, players, 5_000):
        chunk = range(start, min(start + 5_000, players))
        # Whole-number ratings, as gammon42 and prostriker store them: ties are common.
        pipe.zadd(key, {f"r{n}": float(1500 + round(rng.gauss(0, 150))) for n in chunk})
        for n in chunk:
            pipe.hset(keys.player(ladder, f"r{n}"), mapping={"provisional": int(n % 7 == 0)})
        pipe.execute()
    r: Any = target.redis
    ids = [f"r{rng.randrange(players)}" for _ in range(1_000)]
    pick = iter(ids * 100_000).__next__

    def raw_top() -> Any:
        return _competition_ranks(r.zrevrange(key, 0, 99, withscores=True), 1)

    def raw_rank() -> Any:
        member = pick()
        score = r.zscore(key, member)
        return None if score is None else r.zcount(key, f"({score}", "+inf") + 1

    results: dict[str, Any] = {"players": players}
    ops: dict[str, tuple[Callable[[], Any] | None, Callable[[], Any], str]] = {}
    ops["top(100)"] = (lambda: reader.top(r, ladder, 100), raw_top, "")

    ops["rank(player)"] = (lambda: reader.rank(r, ladder, pick()), raw_rank, "")

    around_fn = reader.around
    rows = len(around_fn(r, ladder, ids[0]))
    half = max((rows - 1) // 2, 1)
    note = f"radius {half}, {rows} rows"

    def raw_around() -> Any:
        member = pick()
        position = r.zrevrank(key, member)
        if position is None:
            return []
        first = max(position - half, 0)
        rows = r.zrevrange(key, first, position + half, withscores=True)
        top_rank = r.zcount(key, f"({rows[0][1]}", "+inf") + 1 if rows else 1
        return _competition_ranks(rows, top_rank)

    ops["around(player)"] = (lambda: around_fn(r, ladder, pick()), raw_around, note)

    for name, (lib, raw, note) in ops.items():
        raw_ops = _rate(raw, seconds)
        entry: dict[str, Any] = {"raw_per_second": round(raw_ops), "note": note}
        if lib is None:
            entry.update(reader_per_second=None, ratio=None)
        else:
            try:
                lib_ops = _rate(lib, seconds)
                entry.update(reader_per_second=round(lib_ops), ratio=round(lib_ops / raw_ops, 3))
            except Exception as exc:
                entry.update(
                    reader_per_second=None, ratio=None, note=f"n/a: {type(exc).__name__}: {exc}"
                )
        results[name] = entry
    target.redis.flushdb()
    return results


# -- rebuild ---------------------------------------------------------------------------------


REBUILD_IN_PROCESS = """
import sys
from worker.ops import rebuild
from worker.bootstrap import Runtime
from worker.settings import Settings
rt = Runtime(Settings.from_env())
rebuild.rebuild(rt.engine, rt.leaderboard_redis, rt.config.ladders[sys.argv[1]])
rt.close()
"""


def _rebuild_command(environ: dict[str, str], ladder: str) -> list[str] | None:
    """``ladder rebuild LADDER`` when the CLI has it, else ``worker.ops.rebuild.rebuild``."""
    probe = subprocess.run(
        [*env.LADDER.split(), "rebuild", "--help"], env=environ, capture_output=True, text=True
    )
    if probe.returncode == 0:
        json_flag = ["--json"] if "--json" in probe.stdout else []
        return [*env.LADDER.split(), "--log-level", "WARNING", "rebuild", ladder, *json_flag]
    fallback = subprocess.run(
        [sys.executable, "-c", "from worker.ops.rebuild import rebuild"],
        env=environ,
        capture_output=True,
    )
    if fallback.returncode == 0:
        return [sys.executable, "-c", REBUILD_IN_PROCESS, ladder]
    return None


def rebuild(target: env.Target, players: int, log: Path) -> dict[str, Any]:
    from worker import keys

    environ = target.subprocess_env()
    ladder = "gammon42"
    command = _rebuild_command(environ, ladder)
    if command is None:
        return {"players": players, "seconds": None, "note": "worker.ops.rebuild is not available"}
    target.reset()
    seeded = time.perf_counter()
    target.sql(
        """INSERT INTO players (ladder, player_id, rating, rated_games, experience, listed,
                                boosted_points, email_verified, display_name_chosen,
                                linked_to, version, last_game_at, updated_at)
           SELECT %s, 'r' || g, 1500 + floor(random() * 800 - 400), 1 + g %% 120, 1 + g %% 120,
                  true, CASE WHEN g %% 10 = 0 THEN g %% 37 ELSE 0 END, g %% 3 = 0, g %% 4 <> 0,
                  NULL, 1 + g %% 120, now() - (g %% 1000) * interval '1 minute',
                  now() - (g %% 1000) * interval '1 minute'
           FROM generate_series(1, %s) AS g""",
        ladder,
        players,
    )
    target.sql("ANALYZE players")
    seed_seconds = time.perf_counter() - seeded
    used_before = int(cast(Any, target.redis).info("memory")["used_memory"])
    started = time.perf_counter()
    run = subprocess.run(
        command,
        env=environ,
        stdout=subprocess.PIPE,
        stderr=log.open("ab"),
        text=True,
    )
    command_seconds = time.perf_counter() - started
    if run.returncode != 0:
        return {"players": players, "seconds": None, "note": f"rebuild exited {run.returncode}"}
    # The rebuild's own time, as `ladder rebuild --json` reports it (interpreter start-up,
    # imports and connections left out, as in the ingest figures); else the command's.
    seconds = command_seconds
    try:
        seconds = float(json.loads(run.stdout.strip().splitlines()[-1])["seconds"])
    except (ValueError, KeyError, IndexError, TypeError):
        pass
    used_after = int(cast(Any, target.redis).info("memory")["used_memory"])
    r: Any = target.redis
    on_board = r.zcard(keys.rating(ladder))
    zsets = 0
    for board in (keys.rating(ladder), keys.public(ladder), keys.boosted(ladder)):
        zsets += int(r.memory_usage(board, samples=0) or 0)
    rng = random.Random(5)
    sample_ids = [f"r{rng.randrange(1, players + 1)}" for _ in range(1_000)]
    pipe = r.pipeline(transaction=False)
    for pid in sample_ids:
        pipe.memory_usage(keys.player(ladder, pid))
    hashes = [int(x or 0) for x in pipe.execute()]
    per_hash = statistics.fmean(hashes) if hashes else 0.0
    per_player = zsets / max(on_board, 1) + per_hash
    target.redis.flushdb()
    return {
        "players": players,
        "seed_seconds": round(seed_seconds, 2),
        "seconds": round(seconds, 2),
        "command_seconds": round(command_seconds, 2),
        "on_rating_board": on_board,
        "bytes_per_player_memory_usage": round(per_player),
        "bytes_per_player_used_memory_delta": round((used_after - used_before) / players),
        "zset_bytes_per_player": round(zsets / max(on_board, 1)),
        "hash_bytes_per_player": round(per_hash),
        "note": "ladder rebuild" if "rebuild" in command else "worker.ops.rebuild.rebuild()",
    }


def replay(target: env.Target, events: int, log: Path) -> dict[str, Any]:
    """Ingest ``events`` with two workers, then ``ladder verify --json`` over every ladder:
    its rate is the command's own reported seconds (interpreter start-up left out, as in the
    ingest figures), and the mismatches must be 0."""
    ingest(target, events, 2, None, log)
    shown, code, command_seconds = env.ladder_json(target, ["verify", "--json"], log)
    if shown is None or not {"ladders", "events", "seconds"} <= shown.keys():
        return {"events": 0, "seconds": None, "note": f"ladder verify exited {code}"}
    ladders, checked, seconds = shown["ladders"], shown["events"], shown["seconds"]
    replayed = max(entry["seconds"] for entry in ladders.values())
    return {
        "events": checked,
        "seconds": round(seconds, 3),
        "replay_seconds_longest_ladder": round(replayed, 3),
        "redis_seconds": round(sum(entry["redis_seconds"] for entry in ladders.values()), 3),
        "command_seconds": round(command_seconds, 2),
        "events_per_second": round(checked / seconds) if seconds else None,
        "mismatches": sum(entry["mismatch_count"] for entry in ladders.values()),
        "exit": code,
    }


# -- the table -------------------------------------------------------------------------------


def median_round(runs: list[dict[str, Any]], key: str) -> dict[str, Any]:
    """The run whose ``key`` is the median (the lower one of an even count), with every
    round's value beside it; an exactly-once check passes only if it passed in every round."""
    measured = [r for r in runs if r.get(key) is not None]
    if not measured:
        return runs[-1]
    ordered = sorted(measured, key=lambda r: r[key])
    chosen = dict(ordered[(len(ordered) - 1) // 2])
    chosen["rounds"] = [r.get(key) for r in runs]
    checks = [r["check"] for r in runs if "check" in r]
    if checks:
        problems = [p for c in checks for p in c.get("problems", [])]
        chosen["check"] = {**chosen["check"], "ok": all(c["ok"] for c in checks)}
        chosen["check"]["problems"] = problems
    return chosen


def _rounds(entry: dict[str, Any], suffix: str = "") -> str:
    values = entry.get("rounds") or []
    if len(values) < 2:
        return ""
    return "median of " + " / ".join(_fmt(v, suffix) for v in values)


def _fmt(value: Any, suffix: str = "") -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:,.2f}{suffix}"
    if isinstance(value, int):
        return f"{value:,}{suffix}"
    return f"{value}{suffix}"


def goals(result: dict[str, Any]) -> list[tuple[str, str, bool | None]]:
    out: list[tuple[str, str, bool | None]] = []
    ingest_runs = result.get("ingest", {})
    best = max((r["events_per_second"] for r in ingest_runs.values()), default=None)
    out.append(
        (
            "ingest >= 5,000 events/s (synchronous_commit on)",
            _fmt(best),
            None if best is None else best >= 5_000,
        )
    )
    ratios = [r.get("ratio_to_noop") for r in ingest_runs.values() if r.get("ratio_to_noop")]
    best_ratio = max(ratios, default=None)
    out.append(
        (
            "ingest > 10x RQ no-op job rate",
            _fmt(best_ratio, "x"),
            None if best_ratio is None else best_ratio > 10,
        )
    )
    checks = [r["check"]["ok"] for r in ingest_runs.values()]
    checks += [r["check"]["ok"] for r in result.get("batch_sizes", {}).values()]
    out.append(
        (
            "exactly-once check after every drain",
            "ok" if checks and all(checks) else "FAILED" if checks else "n/a",
            all(checks) if checks else None,
        )
    )
    for workload in arrival.WORKLOADS:
        lat = (result.get("latency") or {}).get(workload)
        if lat is None:
            continue
        p99 = lat.get("p99_ms")
        met = (
            None
            if p99 is None
            else p99 <= LATENCY_GOAL_MS and not lat.get("not_visible_within_grace")
        )
        out.append(
            (
                f"latency p99 <= {LATENCY_GOAL_MS} ms at the offered load, {workload}",
                _fmt(p99, " ms"),
                met,
            )
        )
    for name, entry in (result.get("reads") or {}).items():
        if isinstance(entry, dict):
            ratio = entry.get("ratio")
            out.append(
                (
                    f"reads {name} >= 0.8x raw redis-py",
                    _fmt(ratio, "x"),
                    None if ratio is None else ratio >= 0.8,
                )
            )
    rb = result.get("rebuild") or {}
    seconds = rb.get("seconds")
    players = rb.get("players", 0)
    scaled = None if seconds is None else seconds * 1_000_000 / max(players, 1)
    label = "rebuild 1,000,000 players <= 20 s"
    if players and players != 1_000_000:
        label += f" (scaled from {players:,})"
    out.append((label, _fmt(seconds, " s"), None if scaled is None else scaled <= 20))
    rp = result.get("replay") or {}
    rate = rp.get("events_per_second")
    met = None if rate is None else rate >= 20_000 and rp.get("mismatches") == 0
    out.append(("mix: ladder verify >= 20,000 events/s, 0 mismatches", _fmt(rate), met))
    out.extend(history.goals(result))
    out.extend(floorbench.goals(result))
    return out


def print_table(result: dict[str, Any]) -> None:
    line = "-" * 96
    print(line)
    print(
        f"ladder benchmark  {result['started_at']}  mode={result['mode']}  "
        f"cpus={result['machine']['cpus']}  python={result['machine']['python']}"
    )
    print(line)
    print(
        f"{'ingest':<12}{'events':>8}{'drain s':>9}{'events/s':>10}{'wall ev/s':>11}"
        f"{'cpu us/ev':>10}{'no-op jobs/s':>14}{'ratio':>8}  check"
    )
    for name, r in result.get("ingest", {}).items():
        print(
            f"  {name:<10}{r['events']:>8,}{r['drain_seconds']:>9.2f}"
            f"{r['events_per_second']:>10,}{r['wall_events_per_second']:>11,}"
            f"{r['worker_cpu_us_per_event']:>10,}{_fmt(r.get('noop_jobs_per_second')):>14}"
            f"{_fmt(r.get('ratio_to_noop'), 'x'):>8}  "
            f"{'ok' if r['check']['ok'] else 'FAILED: ' + '; '.join(r['check']['problems'])}"
        )
        if _rounds(r):
            print(f"    events/s: {_rounds(r)}")
    sweep = result.get("batch_sizes") or {}
    if sweep:
        print(
            f"{'LADDER_BATCH_SIZE, 2 workers':<30}{'events':>8}{'drain s':>9}{'events/s':>10}"
            f"{'wall ev/s':>11}{'cpu us/ev':>10}"
        )
        for name, r in sweep.items():
            print(
                f"  {name:<28}{r['events']:>8,}{r['drain_seconds']:>9.2f}"
                f"{r['events_per_second']:>10,}{r['wall_events_per_second']:>11,}"
                f"{r['worker_cpu_us_per_event']:>10,}  "
                f"{'ok' if r['check']['ok'] else 'FAILED'}"
            )
    for workload in arrival.WORKLOADS:
        lat = (result.get("latency") or {}).get(workload)
        if lat is None:
            continue
        print(
            f"latency, {workload}: {lat['events']:,} events at "
            f"{lat['offered_events_per_second']:,}/s for {lat['seconds']:.0f} s, "
            f"{lat['workers']} workers: p50 {_fmt(lat['p50_ms'])} ms, "
            f"p90 {_fmt(lat['p90_ms'])} ms, p99 {_fmt(lat['p99_ms'])} ms, "
            f"max {_fmt(lat['max_ms'])} ms, not visible {lat['not_visible_within_grace']} "
            f"({lat['grace_seconds']:.0f} s after)"
        )
        if _rounds(lat):
            print(f"         p99: {_rounds(lat, ' ms')}")
        print(
            f"         seen on the receipt stream; CPU in cores: workers "
            f"{lat['worker_cpu_cores']:.2f}, publisher and reader {lat['bench_cpu_cores']:.2f}"
        )
    rd = result.get("reads")
    if rd:
        print(
            f"{'reads (' + format(rd['players'], ',') + ' players)':<34}"
            f"{'reader/s':>10}{'raw/s':>10}{'ratio':>8}  note"
        )
        for name, e in rd.items():
            if isinstance(e, dict):
                print(
                    f"  {name:<32}{_fmt(e['reader_per_second']):>10}"
                    f"{_fmt(e['raw_per_second']):>10}{_fmt(e['ratio'], 'x'):>8}  {e['note']}"
                )
    rb = result.get("rebuild")
    if rb:
        if rb.get("seconds") is None:
            print(f"rebuild {rb['players']:,} players: n/a ({rb['note']})")
        else:
            print(
                f"rebuild {rb['players']:,} players: {rb['seconds']:.2f} s "
                f"({_fmt(rb.get('command_seconds'), ' s')} with the command's start-up); Redis "
                f"{rb['bytes_per_player_memory_usage']} B/player (MEMORY USAGE), "
                f"{rb['bytes_per_player_used_memory_delta']} B/player (used_memory delta)"
            )
            if _rounds(rb):
                print(f"    seconds: {_rounds(rb, ' s')}")
    rp = result.get("replay")
    if rp:
        print(
            f"ladder verify: {rp['events']:,} events in {_fmt(rp['seconds'], ' s')} "
            f"({_fmt(rp['events_per_second'])} events/s; "
            f"{_fmt(rp.get('command_seconds'), ' s')} with start-up; boards checked in "
            f"{_fmt(rp.get('redis_seconds'), ' s')} summed over ladders), "
            f"{rp.get('mismatches')} mismatches"
        )
    floorbench.print_lines(result)
    boards_bench.print_section(result)
    if result.get("void"):
        print(moderation.line(result["void"]))
    for shown in history.lines(result):
        print(shown)
    print(f"worker peak RSS: {_fmt(result.get('worker_peak_rss_mib'), ' MiB')}")
    for name, error in (result.get("errors") or {}).items():
        print(f"{name}: FAILED: {error}")
    print(line)
    print(f"{'goal':<58}{'measured':>16}  met")
    for label, measured, met in result["goals"]:
        print(f"  {label:<56}{measured:>16}  {'n/a' if met is None else 'yes' if met else 'NO'}")
    print(line)


# -- main ------------------------------------------------------------------------------------


def _section(result: dict[str, Any], name: str, run: Callable[[], Any]) -> None:
    """Run one section; a section that fails is reported, and the others still run."""
    try:
        result[name] = run()
    except Exception as exc:
        result.setdefault("errors", {})[name] = f"{type(exc).__name__}: {exc}"
        print(f"bench: {name} failed: {type(exc).__name__}: {exc}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a small run (about a minute)")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "latest.json")
    parser.add_argument("--events", type=int, help="events per ingest run")
    parser.add_argument("--batch-sizes", help="comma-separated LADDER_BATCH_SIZE values, or ''")
    parser.add_argument("--latency-seconds", type=float)
    parser.add_argument(
        "--rounds", type=int, help="runs of ingest, latency and rebuild (median shown; full: 3)"
    )
    parser.add_argument("--latency-rate", type=int, help="offered events/s (default 1000)")
    parser.add_argument("--rebuild-players", type=int)
    parser.add_argument(
        "--only",
        help="comma-separated sections: ingest,batch_sizes,latency,reads,rebuild,replay,floor,"
        "startup,boards,receipts,void,history,growth",
    )
    parser.add_argument("--workers", default="1,2", help="worker counts for the ingest runs")
    parser.add_argument("--no-noop", action="store_true", help="skip the RQ no-op job rate")
    parser.add_argument("--redis-url", default=env.REDIS_URL)
    parser.add_argument("--database", default=env.DATABASE)
    args = parser.parse_args(argv)

    plan = QUICK if args.quick else FULL
    overrides: dict[str, Any] = {}
    if args.events:
        overrides["events"] = args.events
    if args.batch_sizes is not None:
        overrides["batch_sizes"] = tuple(int(x) for x in args.batch_sizes.split(",") if x)
        overrides["sweep_events"] = overrides.get("events", plan.sweep_events or plan.events)
    if args.latency_seconds:
        overrides["latency_seconds"] = args.latency_seconds
    if args.rounds:
        overrides["rounds"] = args.rounds
    if args.latency_rate:
        overrides["latency_rate"] = args.latency_rate
    if args.rebuild_players:
        overrides["rebuild_players"] = args.rebuild_players
    plan = Plan(**{**plan.__dict__, **overrides})
    sections = set((args.only or SECTIONS).split(","))

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    target = env.Target(args.redis_url, args.database)
    (sync_commit,) = target_sync_commit()
    result: dict[str, Any] = {
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "mode": "quick" if args.quick else "full",
        "plan": plan.__dict__,
        "machine": {
            "cpus": os.cpu_count(),
            "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
            "python": platform.python_version(),
            "synchronous_commit": sync_commit,
        },
    }
    begun = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ladder-bench-") as tmp, target.lease():
        log = Path(tmp) / "workers.log"
        if "ingest" in sections:
            result["ingest"] = {}
            for workers in (int(x) for x in args.workers.split(",")):
                runs = []
                for n in range(plan.rounds):
                    print(
                        f"bench: ingest, {workers} worker(s), {plan.events:,} events, "
                        f"round {n + 1} of {plan.rounds}",
                        flush=True,
                    )
                    runs.append(ingest(target, plan.events, workers, None, log))
                run = median_round(runs, "events_per_second")
                result["ingest"][f"{workers} worker{'s' if workers > 1 else ''}"] = run
                if args.no_noop:
                    continue
                print(f"bench: no-op jobs, {workers} worker(s)", flush=True)
                noop = noop_rate(target, plan.noop_jobs, workers, log)
                run["noop"] = noop
                run["noop_jobs_per_second"] = noop["jobs_per_second"]
                run["ratio_to_noop"] = round(run["events_per_second"] / noop["jobs_per_second"], 2)
        if "batch_sizes" in sections and plan.batch_sizes:
            result["batch_sizes"] = {}
            for size in plan.batch_sizes:
                print(f"bench: LADDER_BATCH_SIZE={size}, 2 workers", flush=True)
                run = ingest(target, plan.sweep_events, 2, size, log)
                result["batch_sizes"][f"batch {size}"] = run
        if "latency" in sections:
            result["latency"] = {}
            for workload in arrival.WORKLOADS:
                print(
                    f"bench: latency, {workload}, at {plan.latency_rate}/s for "
                    f"{plan.latency_seconds:.0f} s",
                    flush=True,
                )

                def rounds(workload: str = workload) -> dict[str, Any]:
                    runs = [
                        arrival.measure(
                            target,
                            plan.latency_rate,
                            plan.latency_seconds,
                            plan.latency_workers,
                            log,
                            workload,
                        )
                        for _ in range(plan.rounds)
                    ]
                    return median_round(runs, "p99_ms")

                _section(result["latency"], workload, rounds)
        if "reads" in sections:
            print("bench: reads", flush=True)
            _section(result, "reads", lambda: reads(target, plan.read_players, plan.read_seconds))
        if "rebuild" in sections:
            print(f"bench: rebuild of {plan.rebuild_players:,} players", flush=True)
            _section(
                result,
                "rebuild",
                lambda: median_round(
                    [rebuild(target, plan.rebuild_players, log) for _ in range(plan.rounds)],
                    "seconds",
                ),
            )
        if "floor" in sections:
            _section(
                result,
                "floor",
                lambda: floorbench.against_floor(
                    target,
                    log,
                    ingest,
                    mixed_events=plan.events,
                    hot_games=min(floorbench.HOT_GAMES, plan.events),
                    rounds=plan.rounds,
                ),
            )
        if "startup" in sections:
            print("bench: burst worker start-up", flush=True)
            _section(result, "startup", lambda: floorbench.startup(target, log))
        if "replay" in sections:
            print(f"bench: ladder verify after {plan.events:,} events", flush=True)
            _section(result, "replay", lambda: replay(target, plan.events, log))
        if "boards" in sections:
            print("bench: among(50 ids) and import", flush=True)
            _section(result, "boards", lambda: boards_bench.run(target, args.quick))
        if "receipts" in sections:
            from bench import receipts as receipts_bench

            _section(result, "receipts", lambda: receipts_bench.run(target, plan, log))
        if "void" in sections:
            print(f"bench: ladder void after {plan.events:,} events", flush=True)
            _section(result, "void", lambda: moderation.void(target, plan.events, log, ingest))
        if "history" in sections:
            print(
                f"bench: verify, backtest and void of one ladder's {plan.history_events:,} games",
                flush=True,
            )
            _section(
                result,
                "history",
                lambda: history.run(target, plan.history_events, plan.history_players, log, ingest),
            )
        if "growth" in sections:
            from bench import growth

            _section(result, "growth", lambda: growth.run(target, log, quick=args.quick))
        target.redis.flushdb()
        target.drop()
        failed = [
            line
            for line in (log.read_text(errors="replace") if log.exists() else "").splitlines()
            if '"level": "error"' in line or "Traceback" in line
        ]
        result["worker_log_errors"] = failed[:20]
    result["machine"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    result["worker_peak_rss_mib"] = round(Workers.peak_rss_kib / 1024, 1)
    result["total_seconds"] = round(time.perf_counter() - begun, 1)
    result["goals"] = goals(result) + receipt_goals(result)
    print_table(result)
    print(f"bench: {result['total_seconds']:.0f} s in all; results in {args.out}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, default=str) + "\n", encoding="utf-8")
    return 0


def target_sync_commit() -> tuple[str]:
    import psycopg

    with psycopg.connect(env.ADMIN_DATABASE_URL) as conn:
        row = conn.execute("SHOW synchronous_commit").fetchone()
    return (str(row[0]) if row else "unknown",)


if __name__ == "__main__":
    sys.exit(main())
