"""What receipts cost: ingest throughput and latency with receipts on and off.

The ``receipts`` section of ``python -m bench.run`` (``--only receipts``):

- ingest: the same mix drained by one burst worker with ``LADDER_RECEIPTS=true`` and
  ``=false``, the two alternating round by round (so a noisy neighbour hits both alike); the
  median of each and their ratio (the goal: receipts cost at most 10 % of throughput), and
  the worker's CPU per event with each (steadier than the rate on a shared machine);
- latency: the leaderboard's publish-to-visible percentiles at a fixed offered load, with
  receipts on and off, and, with receipts on, publish-to-receipt: a reader blocked on
  ``XREAD`` of ``ladder:receipts`` notes when each probe's receipt arrives (the goal: p99
  within the leaderboard's p99).
"""

from __future__ import annotations

import itertools
import random
import statistics
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any, cast

from bench import arrival, env
from bench import ingest as ingest_bench
from bench.events import probe_game
from bench.plan import LADDERS
from bench.table import median_round
from bench.workers import Workers, _ladder_worker

ON, OFF = "receipts on", "receipts off"


class Switched:
    """``target`` with ``LADDER_RECEIPTS`` set for the workers it starts."""

    def __init__(self, target: env.Target, on: bool) -> None:
        self._target = target
        self._on = on

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target, name)

    def subprocess_env(self, batch_size: int | None = None) -> dict[str, str]:
        environ = self._target.subprocess_env(batch_size)
        environ["LADDER_RECEIPTS"] = "true" if self._on else "false"
        return environ


def switched(target: env.Target, on: bool) -> env.Target:
    return cast(env.Target, Switched(target, on))


# The section's share of ``make bench``: at most this many events per drain and seconds per
# latency run (six drains and three latency runs), so the whole run stays under 10 minutes.
MOST_EVENTS = 10_000
MOST_LATENCY_SECONDS = 10.0


def run(target: env.Target, plan: Any, log: Path) -> dict[str, Any]:
    rounds = max(plan.rounds, 2)
    events = min(plan.events, MOST_EVENTS)
    seconds = min(plan.latency_seconds, MOST_LATENCY_SECONDS)
    drains: dict[str, list[dict[str, Any]]] = {ON: [], OFF: []}
    for n in range(rounds):
        order = (ON, OFF) if n % 2 == 0 else (OFF, ON)
        for name in order:
            print(f"bench: receipts, ingest {name}, round {n + 1} of {rounds}", flush=True)
            drains[name].append(
                ingest_bench.ingest(switched(target, name == ON), events, 1, None, log)
            )
    ingest = {name: median_round(runs, "events_per_second") for name, runs in drains.items()}
    ratio = ingest[ON]["events_per_second"] / max(ingest[OFF]["events_per_second"], 1)
    # Worker CPU per event is what receipts add to a worker's work; on a shared machine it
    # moves far less with the neighbours' load than the drain rate does.
    cpu = {
        name: statistics.median(r["worker_cpu_us_per_event"] for r in runs)
        for name, runs in drains.items()
    }
    latency: dict[str, Any] = {}
    for name in (OFF, ON):
        print(f"bench: receipts, latency {name}", flush=True)
        latency[name] = polled_latency(
            switched(target, name == ON),
            plan.latency_rate,
            seconds,
            plan.latency_workers,
            log,
        )
    print("bench: receipts, publish-to-receipt", flush=True)
    arrival = receipt_latency(target, plan.latency_rate, seconds, plan.latency_workers, log)
    return {
        "events": events,
        "rounds": rounds,
        "ingest": {
            name: {
                "events_per_second": r["events_per_second"],
                "rounds": r.get("rounds"),
                "worker_cpu_us_per_event": cpu[name],
                "cpu_rounds": [d["worker_cpu_us_per_event"] for d in drains[name]],
                "check": r["check"]["ok"],
            }
            for name, r in ingest.items()
        },
        "throughput_ratio": round(ratio, 3),
        "worker_cpu_ratio": round(cpu[ON] / max(cpu[OFF], 1), 3),
        "latency": {
            name: {k: r.get(k) for k in ("p50_ms", "p99_ms", "max_ms", "events", "visible")}
            for name, r in latency.items()
        },
        "receipt": arrival,
    }


def receipt_latency(
    target: env.Target, rate: int, seconds: float, workers: int, log: Path
) -> dict[str, Any]:
    """Publish probes at ``rate`` for ``seconds``; a reader blocked on the receipt stream
    notes each probe's arrival (``bench.arrival``, the mixed workload)."""
    found = arrival.measure(switched(target, True), rate, seconds, workers, log, "mixed")
    found["arrived"] = found["visible"]
    return found


def goals(result: dict[str, Any]) -> list[tuple[str, str, bool | None]]:
    found = result.get("receipts") or {}
    if not found:
        return []
    ratio = found.get("throughput_ratio")
    board = (found.get("latency") or {}).get(ON, {}).get("p99_ms")
    receipt = (found.get("receipt") or {}).get("p99_ms")
    within = None if board is None or receipt is None else receipt <= board
    return [
        (
            "receipts cost <= 10 % of ingest (on/off)",
            "n/a" if ratio is None else f"{ratio:.2f}x",
            None if ratio is None else ratio >= 0.9,
        ),
        (
            "receipt p99 <= leaderboard p99",
            f"{receipt} ms vs {board} ms",
            within,
        ),
    ]


WATCH_AT_MOST = 600  # outstanding probes polled per round
LATENCY_GRACE_SECONDS = 10.0  # how long after the last publish a probe may still appear


def polled_latency(
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
