"""Publish-to-visible latency measured on the receipt stream, for any workload.

Two ``ladder worker`` processes run; a publisher pushes events onto the inbox on a fixed
schedule (event *i* due at *t0 + i/rate*); a reader blocked on ``XREAD`` of
``ladder:receipts`` notes when each event's receipt arrives. A receipt is written by the
same Redis pipeline as the leaderboard, after the boards and the player's card
(``worker.boards.receipts``), so its arrival is an upper bound of the moment the event
became visible on the boards, for every kind of event: a game between two known players
changes no board's membership, so a watcher of the boards could not tell it apart. The
reader blocks instead of polling, so it costs Redis and the CPU nothing between receipts.

Workloads:

- ``mixed``: rated games on the three ladders, each won by a new player against one of 500
  players of that ladder (the ``latency`` section's probe mix);
- ``hot``: one gammon42 ladder, ranked games among 4,000 players ending 30 s apart
  (``bench.events.generate_hot``, as in the floor section), so each batch reads the 7-day
  window of players with many games.

Percentiles are over every event published in the measured run; one never seen within the
grace counts with the time it had waited (a lower bound).
"""

from __future__ import annotations

import json
import random
import statistics
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

from bench import env
from bench.events import generate_hot, probe_game

WORKLOADS = ("mixed", "hot")
GRACE_SECONDS = 10.0  # how long after the last publish a receipt may still arrive
WARM_UP_SECONDS = 0.5  # a short run at the offered rate, not counted


def events(workload: str, tag: str, count: int) -> Iterator[tuple[str, str]]:
    """``count`` (event id, payload) pairs of the workload, in publish order."""
    if workload == "hot":
        payloads, _ = generate_hot(count, tag=tag)
        for index, payload in enumerate(payloads):
            yield f"{tag}-{index}", payload
        return
    if workload != "mixed":
        raise ValueError(f"unknown workload {workload!r}; use one of {', '.join(WORKLOADS)}")
    ladders = ("gammon42", "fibs", "prostriker")
    for index in range(count):
        ladder = ladders[index % 3]
        payload, _ = probe_game(index, tag, ladder, f"{ladder[0]}-opp-{index % 500}")
        yield f"{tag}-probe-{index}", payload


def measure(
    target: env.Target,
    rate: int,
    seconds: float,
    workers: int,
    log: Path,
    workload: str = "mixed",
) -> dict[str, Any]:
    from bench.workers import Workers, _ladder_worker
    from worker import keys

    target.reset()
    procs = Workers(_ladder_worker(False), workers, target.subprocess_env(), log)
    workers_started = time.perf_counter()
    tag = f"{workload[0]}{random.randrange(1 << 20):x}"
    warm = max(int(rate * WARM_UP_SECONDS), 1)
    count = int(rate * seconds)
    stream = events(workload, tag, 1 + warm + count)
    sent: dict[str, float] = {}
    arrived: dict[str, float] = {}
    errors: list[str] = []
    stop = threading.Event()

    def read() -> None:
        from redis.exceptions import RedisError

        client = target.redis.__class__(connection_pool=target.redis.connection_pool)
        last = "0-0"
        while not stop.is_set():
            try:
                reply = cast(
                    list[tuple[bytes, list[tuple[bytes, dict[bytes, bytes]]]]],
                    client.xread({keys.RECEIPTS: last}, count=1000, block=100),
                )
            except RedisError as exc:  # a slow or busy server: note it and read again
                errors.append(f"{type(exc).__name__}: {exc}")
                continue
            now = time.perf_counter()
            for _, entries in reply:
                for entry_id, fields in entries:
                    last = entry_id.decode()
                    arrived.setdefault(json.loads(fields[b"receipt"])["event_id"], now)

    lag_max = 0.0

    def publish(how_many: int) -> list[str]:
        nonlocal lag_max
        client = target.redis.__class__(connection_pool=target.redis.connection_pool)
        ids = []
        began = time.perf_counter()
        for n in range(how_many):
            delay = began + n / rate - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            else:
                lag_max = max(lag_max, -delay)
            event_id, payload = next(stream)
            sent[event_id] = time.perf_counter()
            client.rpush(keys.INBOX, payload)
            ids.append(event_id)
        return ids

    def wait_for(ids: list[str], seconds: float) -> bool:
        deadline = time.perf_counter() + seconds
        while any(e not in arrived for e in ids):
            if time.perf_counter() > deadline:
                return False
            time.sleep(0.02)
        return True

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        # The workers are up once the first receipt comes; then a short run, not counted.
        if not wait_for(publish(1), 60) or not wait_for(publish(warm), 30):
            raise RuntimeError("the workers sent no receipts for the warm-up events")
        sent.clear()
        lag_max = 0.0
        started = time.perf_counter()
        own_cpu = time.process_time()
        ids = publish(count)
        offered = count / (time.perf_counter() - started)
        wait_for(ids, GRACE_SECONDS)
        ended = time.perf_counter()
        own_cpu = time.process_time() - own_cpu
    finally:
        stop.set()
        reader.join(timeout=5)
        codes = procs.stop()
    workers_alive = time.perf_counter() - workers_started
    samples = [arrived.get(e, ended) - at for e, at in sent.items()]
    lost = sum(1 for e in sent if e not in arrived)
    return {
        "workload": workload,
        "watched": "receipt stream (XREAD)",
        "offered_events_per_second": round(offered),
        "seconds": seconds,
        "workers": workers,
        "events": count,
        "visible": count - lost,
        "percentiles_are_lower_bounds": bool(lost),
        "not_visible_within_grace": lost,
        "grace_seconds": GRACE_SECONDS,
        **percentiles(samples),
        # CPU use, in cores: the workers over their whole life (start-up and warm-up included),
        # this process (publisher and reader) over the measured run.
        "worker_cpu_cores": round(procs.cpu_seconds / workers_alive, 2),
        "bench_cpu_cores": round(own_cpu / (ended - started), 2),
        "publisher_max_lag_ms": round(lag_max * 1000, 2),
        "worker_exit_codes": codes,
        "worker_peak_rss_mib": round(procs.own_peak_rss_kib / 1024, 1),
        "reader_errors": errors[:5],
    }


def percentiles(seconds: list[float]) -> dict[str, float | None]:
    """p50, p90, p99, max and mean of latencies (seconds), in milliseconds."""
    samples = sorted(seconds)

    def pct(p: float) -> float | None:
        if not samples:
            return None
        return round(samples[min(len(samples) - 1, int(p * len(samples)))] * 1000, 2)

    return {
        "p50_ms": pct(0.50),
        "p90_ms": pct(0.90),
        "p99_ms": pct(0.99),
        "max_ms": round(samples[-1] * 1000, 2) if samples else None,
        "mean_ms": round(statistics.fmean(samples) * 1000, 2) if samples else None,
    }
