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

import json
import random
import statistics
import threading
import time
from pathlib import Path
from typing import Any, cast

from bench import env
from bench.events import probe_game

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
    from bench import run as bench

    rounds = max(plan.rounds, 2)
    events = min(plan.events, MOST_EVENTS)
    seconds = min(plan.latency_seconds, MOST_LATENCY_SECONDS)
    drains: dict[str, list[dict[str, Any]]] = {ON: [], OFF: []}
    for n in range(rounds):
        order = (ON, OFF) if n % 2 == 0 else (OFF, ON)
        for name in order:
            print(f"bench: receipts, ingest {name}, round {n + 1} of {rounds}", flush=True)
            drains[name].append(bench.ingest(switched(target, name == ON), events, 1, None, log))
    ingest = {name: bench.median_round(runs, "events_per_second") for name, runs in drains.items()}
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
        latency[name] = bench.latency(
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
    notes each probe's arrival. Percentiles of publish-to-receipt, over every probe (one
    never seen counts with the time it had waited: a lower bound)."""
    from bench import run as bench
    from worker import keys

    target.reset()
    procs = bench.Workers(bench._ladder_worker(False), workers, switched(target, True)
                          .subprocess_env(), log)  # fmt: skip
    tag = f"rc{random.randrange(1 << 20):x}"
    sent: dict[str, float] = {}
    arrived: dict[str, float] = {}
    stop = threading.Event()

    def read() -> None:
        client = target.redis.__class__(connection_pool=target.redis.connection_pool)
        last = "0-0"
        while not stop.is_set():
            reply = cast(
                list[tuple[bytes, list[tuple[bytes, dict[bytes, bytes]]]]],
                client.xread({keys.RECEIPTS: last}, count=1000, block=100),
            )
            now = time.perf_counter()
            for _, entries in reply:
                for entry_id, fields in entries:
                    last = entry_id.decode()
                    arrived.setdefault(json.loads(fields[b"receipt"])["event_id"], now)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        payload, _ = probe_game(0, tag, "gammon42", "rc-opponent")
        sent[f"{tag}-probe-0"] = time.perf_counter()
        target.redis.rpush(keys.INBOX, payload)
        deadline = time.perf_counter() + 60
        while f"{tag}-probe-0" not in arrived:  # the workers are up
            if time.perf_counter() > deadline:
                raise RuntimeError("no receipt within 60 s of the first probe")
            time.sleep(0.05)
        sent.clear()
        count = int(rate * seconds)
        began = time.perf_counter()
        ladders = ("gammon42", "fibs", "prostriker")
        for n in range(1, count + 1):
            delay = began + n / rate - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            ladder = ladders[n % 3]
            payload, _ = probe_game(n, tag, ladder, f"rc-{ladder}-{n % 500}")
            sent[f"{tag}-probe-{n}"] = time.perf_counter()
            target.redis.rpush(keys.INBOX, payload)
        grace = time.perf_counter() + 10
        while any(e not in arrived for e in sent) and time.perf_counter() < grace:
            time.sleep(0.05)
    finally:
        stop.set()
        reader.join(timeout=5)
        procs.stop()
    ended = time.perf_counter()
    samples = sorted(arrived.get(e, ended) - at for e, at in sent.items())

    def pct(p: float) -> float | None:
        if not samples:
            return None
        return round(samples[min(len(samples) - 1, int(p * len(samples)))] * 1000, 2)

    return {
        "offered_events_per_second": rate,
        "events": len(sent),
        "arrived": sum(1 for e in sent if e in arrived),
        "p50_ms": pct(0.50),
        "p99_ms": pct(0.99),
        "max_ms": round(samples[-1] * 1000, 2) if samples else None,
    }


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
