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

import statistics
from pathlib import Path
from typing import Any, cast

from bench import arrival, env

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
