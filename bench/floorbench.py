"""ladder against the floor (``bench.floor``) on the same events in the same run, and a burst
worker's start-up. Absolute rates on a shared machine move by 2x from day to day; the ratio
of two rates measured one after the other does not, so the goals are ratios.

Beside each drain, what it cost in CPU per event, by process (``bench.servercpu``): on a
machine whose cores the drains fill, the ratio of two rates is bounded by the ratio of the
CPU they spend on an event.

Two workloads: ``mixed`` (the ingest section's mix over three ladders) and ``hot`` (one
gammon42 ladder, 20,000 ranked games among 4,000 players, ending 30 s apart).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from bench import env, servercpu
from bench.events import Mix, generate_hot

# The hot ladder as a busy game has it: 60,000 games among 4,000 players ending 30 s apart,
# 30 games a player over 20 days, 10 in each 7-day K window (a smaller run keeps the density).
HOT_GAMES = 60_000
HOT_PLAYERS = 4_000
GOAL_ONE_WORKER = 0.7
GOAL_TWO_WORKERS = 1.2
GOAL_STARTUP_SECONDS = 0.5


def _plain_url(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


def floor_rate(target: env.Target, payloads: list[str]) -> dict[str, Any]:
    """The floor drains the same payloads from a freshly reset target."""
    target.reset()
    target.publish(payloads)
    before = servercpu.sample()
    done = subprocess.run(
        [sys.executable, "-m", "bench.floor", target.redis_url, _plain_url(target.database_url)],
        capture_output=True,
        text=True,
        check=True,
        cwd=env.ROOT,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result["cpu_us_per_event"] = servercpu.per_event(before, servercpu.sample(), len(payloads))
    return result


def hot_players(games: int) -> int:
    """The hot ladder's players for ``games`` games, at the density of the full one."""
    return max(2, games * HOT_PLAYERS // HOT_GAMES)


def workloads(mixed_events: int, hot_games: int) -> dict[str, Callable[[], tuple[list[str], Mix]]]:
    players = hot_players(hot_games)
    return {
        "mixed": lambda: env.generate_events(mixed_events, tag="floor-mixed"),
        "hot": lambda: generate_hot(hot_games, players=players, tag="floor-hot"),
    }


def against_floor(
    target: env.Target,
    log: Path,
    ingest: Callable[..., dict[str, Any]],
    *,
    mixed_events: int,
    hot_games: int = HOT_GAMES,
    workers: tuple[int, ...] = (1, 2),
    rounds: int = 1,
    only: tuple[str, ...] = ("mixed", "hot"),
) -> dict[str, Any]:
    """Per workload: the floor's rate and ladder's with each worker count, medians over
    ``rounds`` (each round runs the floor and ladder back to back), and ladder / floor."""
    out: dict[str, Any] = {}
    for name, make in workloads(mixed_events, hot_games).items():
        if name not in only:
            continue
        payloads, mix = make()
        floors: list[int] = []
        floor_cpu: list[dict[str, int] | None] = []
        ladders: dict[int, list[dict[str, Any]]] = {n: [] for n in workers}
        for n in range(rounds):
            print(f"bench: floor, {name}, {len(payloads):,} events, round {n + 1}", flush=True)
            drained = floor_rate(target, payloads)
            floors.append(drained["events_per_second"])
            floor_cpu.append(drained["cpu_us_per_event"])
            for count in workers:
                print(f"bench: ladder, {name}, {count} worker(s), round {n + 1}", flush=True)
                ladders[count].append(ingest(target, 0, count, None, log, (payloads, mix)))
        floor = statistics.median(floors)
        entry: dict[str, Any] = {"events": len(payloads), "floor_events_per_second": floor}
        entry["floor_rounds"] = floors
        entry["floor_cpu_us_per_event"] = _median_cpu(floor_cpu)
        for count, runs in ladders.items():
            rates = [r["events_per_second"] for r in runs]
            rate = statistics.median(rates)
            entry[f"{count}w"] = {
                "events_per_second": rate,
                "rounds": rates,
                "ratio_to_floor": round(rate / floor, 2) if floor else None,
                "worker_cpu_us_per_event": statistics.median(
                    r["worker_cpu_us_per_event"] for r in runs
                ),
                "cpu_us_per_event": _median_cpu([r.get("cpu_us_per_event") for r in runs]),
                "check_ok": all(r["check"]["ok"] for r in runs),
                "problems": [p for r in runs for p in r["check"].get("problems", [])],
            }
        out[name] = entry
    return out


def _median_cpu(rounds: list[dict[str, int] | None]) -> dict[str, int] | None:
    """Each process's median over the rounds (``bench.servercpu``), None where not read."""
    found = [r for r in rounds if r]
    if not found:
        return None
    return {k: round(statistics.median(r[k] for r in found)) for k in found[0]}


def startup(target: env.Target, log: Path, rounds: int = 3) -> dict[str, Any]:
    """Seconds from spawning ``ladder worker --burst`` to its first event scored (the first
    per-event log line), with one event waiting in the inbox. The project's modules are
    compiled to bytecode first, as an installed package and the image
    (``deploy/Dockerfile``) have them: a development checkout run with
    ``PYTHONDONTWRITEBYTECODE`` would otherwise compile them from source at every start."""
    import compileall

    for package in ("engine", "schemas", "worker"):
        compileall.compile_dir(env.ROOT / package, quiet=1)
    payloads, _ = generate_hot(1, players=2, tag="startup")
    seconds: list[float] = []
    for n in range(rounds):
        target.reset()
        target.publish(payloads)
        run_log = log.with_name(f"startup-{n}.log")
        spawned = time.time()
        with run_log.open("wb") as out:
            subprocess.run(
                [*env.LADDER.split(), "--log-level", "INFO", "worker", "--burst"],
                env=target.subprocess_env(),
                stdout=out,
                stderr=subprocess.STDOUT,
                check=True,
                timeout=120,
            )
        first = _first_event_logged(run_log)
        if first is not None:
            seconds.append(round(first.timestamp() - spawned, 3))
    return {"seconds": statistics.median(seconds) if seconds else None, "rounds": seconds}


def _first_event_logged(path: Path) -> datetime | None:
    with path.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            if '"event": "batch"' in line:
                try:
                    stamp = json.loads(line)["timestamp"]
                except (ValueError, KeyError):
                    continue
                return datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    return None


def goals(result: dict[str, Any]) -> list[tuple[str, str, bool | None]]:
    out: list[tuple[str, str, bool | None]] = []
    for name, entry in (result.get("floor") or {}).items():
        for count, goal in (("1w", GOAL_ONE_WORKER), ("2w", GOAL_TWO_WORKERS)):
            run = entry.get(count)
            if not run:
                continue
            ratio = run["ratio_to_floor"]
            workers = "1 worker" if count == "1w" else "2 workers"
            out.append(
                (
                    f"{name}: {workers} >= {goal}x the floor (exactly-once checked)",
                    "n/a" if ratio is None else f"{ratio:.2f}x",
                    None if ratio is None else ratio >= goal and run["check_ok"],
                )
            )
    seconds = (result.get("startup") or {}).get("seconds")
    out.append(
        (
            f"burst worker start-up to first event <= {GOAL_STARTUP_SECONDS} s",
            "n/a" if seconds is None else f"{seconds:.2f} s",
            None if seconds is None else seconds <= GOAL_STARTUP_SECONDS,
        )
    )
    return out


def print_lines(result: dict[str, Any]) -> None:
    for name, entry in (result.get("floor") or {}).items():
        parts = [f"floor {entry['floor_events_per_second']:,.0f} ev/s"]
        for count in ("1w", "2w"):
            run = entry.get(count)
            if run:
                parts.append(
                    f"{count} {run['events_per_second']:,.0f} ev/s = {run['ratio_to_floor']}x "
                    f"({run['worker_cpu_us_per_event']:,.0f} us cpu/ev, "
                    f"{'ok' if run['check_ok'] else 'CHECK FAILED'})"
                )
        print(f"against the floor, {name} ({entry['events']:,} events): " + "; ".join(parts))
        cpu = [("floor", entry.get("floor_cpu_us_per_event"))]
        cpu += [(count, (entry.get(count) or {}).get("cpu_us_per_event")) for count in ("1w", "2w")]
        if all(found for _, found in cpu):
            print(
                "  CPU us per event (PostgreSQL + Redis + the rest = the machine; each process's "
                "start-up included): "
                + "; ".join(
                    f"{label} {c['postgres']} + {c['redis']} + {c['rest']} = {c['machine']}"
                    for label, c in cpu
                    if c
                )
            )
    start = result.get("startup")
    if start:
        rounds = ", ".join(f"{s:.2f}" for s in start["rounds"])
        print(f"burst worker start-up to first event: {start['seconds']} s (rounds: {rounds})")
