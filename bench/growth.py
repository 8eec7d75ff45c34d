"""The ``growth`` section: what a batch, a read and an export cost as the audit log grows.

The log is filled with synthetic history generated in SQL (``bench.history_fill``: games of
the hot ladder among 100,000 other players, over the 12 months that end 8 days ago, so
outside every window of the games measured) to each size in turn, 0, 1M and 10M events (50M
with ``--large``), and ``VACUUM ANALYZE``d. At each size:

- ingest: one hot ladder (``bench.events.generate_hot``, the floor section's hot workload,
  its own ids at each size) drained by 1 and by 2 burst workers; events/s from the first to
  the last batch's ``processed_at`` of those events (the last batch's own time left out);
- the duplicate check and the window reads of a batch of 200 hot games, each statement run
  alone on the filled log, median milliseconds over 20 runs;
- ``ladder export gammon42`` (the rating board, from Redis and PostgreSQL), seconds;
- ``ladder verify gammon42 --since T``, T one day before the last event processed (the hot
  games just ingested: the part after T, whatever the log's size), seconds.

Each figure is printed with its ratio to the empty log's. The ingest's empty log is a second
database kept empty beside the filled one (the control), drained in alternation with it at
each size (``ROUNDS`` rounds, the medians compared): a rate measured minutes apart on a shared
machine moves more than the growth it is to show. The other figures' ratios are to those
measured at size 0. Goal: ingest at 10M events >= 0.9x the empty log's, each worker count.
The ratios are plotted in ``bench/results/growth.png`` when matplotlib is installed.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench import env
from bench.events import generate_hot
from bench.history_fill import fill

SIZES = (0, 1_000_000, 10_000_000)
LARGE = 50_000_000
HOT_GAMES = 20_000
HOT_PLAYERS = 4_000
GOAL = 0.9  # ingest at 10M events, as a share of the empty log's
PROBE_RUNS = 20
ROUNDS = 2  # ingest rounds at each size, filled log and control alternated
PLOT = env.ROOT / "bench" / "results" / "growth.png"


def _worker(target: env.Target, count: int, log: Path) -> None:
    from bench.workers import Workers, _ladder_worker

    workers = Workers(_ladder_worker(True), count, target.subprocess_env(), log)
    codes = workers.wait()
    if any(codes):
        raise RuntimeError(f"bench: growth workers exited with {codes}; see {log}")


def ingest(target: env.Target, size: int, workers: int, games: int, log: Path) -> dict[str, Any]:
    """Drain ``games`` hot games with ``workers`` burst workers on the log as it is: events/s
    from the first batch's ``processed_at`` to the workers' last per-event log line (process
    start-up left out, as the ingest section measures)."""
    from bench.ingest import append_log, last_event_logged

    tag = f"growth-{size}-{workers}w-{uuid.uuid4().hex[:6]}"
    payloads, _ = generate_hot(games, players=HOT_PLAYERS, tag=tag)
    target.publish(payloads)
    run_log = log.with_name(f"growth-{size}-{workers}.log")
    started = time.perf_counter()
    _worker(target, workers, run_log)
    wall = time.perf_counter() - started
    first, count = target.sql(
        "SELECT min(processed_at), count(*) FROM events "
        "WHERE ladder = 'gammon42' AND event_id LIKE %s",
        tag + "-%",
    )[0]
    last = last_event_logged(run_log)
    append_log(run_log, log)
    seconds = max((last - first).total_seconds(), 1e-6) if first and last else wall
    return {
        "events": int(count),
        "published": len(payloads),
        "seconds": round(seconds, 3),
        "wall_seconds": round(wall, 3),
        "events_per_second": round(count / seconds),
    }


def ingest_against_control(
    target: env.Target, control: env.Target, size: int, workers: int, games: int, log: Path
) -> dict[str, Any]:
    """The hot ladder's drain on the filled log and on the control (an empty log), alternated
    ``ROUNDS`` times; each one's median rate, and their ratio."""
    rounds: dict[str, list[dict[str, Any]]] = {"filled": [], "control": []}
    for _ in range(ROUNDS):
        for name, where in (("control", control), ("filled", target)):
            forget_hot(where)  # each drain starts from the same hot ladder (the last one stays)
            rounds[name].append(ingest(where, size, workers, games, log))
    filled = statistics.median(r["events_per_second"] for r in rounds["filled"])
    empty = statistics.median(r["events_per_second"] for r in rounds["control"])
    return {
        "events_per_second": round(filled),
        "control_events_per_second": round(empty),
        "ratio_to_control": round(filled / empty, 2) if empty else None,
        "rounds": [r["events_per_second"] for r in rounds["filled"]],
        "control_rounds": [r["events_per_second"] for r in rounds["control"]],
        "events": rounds["filled"][-1]["events"],
    }


def forget_hot(target: env.Target) -> None:
    """Remove the hot games measured at a size (rows, players, boards), so every size starts
    from the same hot ladder: the next one's windows hold only its own games."""
    target.sql("DELETE FROM rating_changes WHERE event_id LIKE 'growth-%%'")
    target.sql("DELETE FROM events WHERE event_id LIKE 'growth-%%'")
    target.sql("DELETE FROM players WHERE ladder = 'gammon42' AND player_id LIKE 'h%%'")
    target.redis.flushdb()


def reads(target: env.Target, batch: int = 200) -> dict[str, Any]:
    """Median ms of the duplicate check and of the window reads of one batch of hot games."""
    from worker.store import statements, windows

    now = datetime.now(UTC)
    ids = [f"h{n}" for n in range(batch)]
    pairs = [(ids[n], ids[n + 1]) for n in range(0, batch - 1, 2)]
    ask = statements.WindowAsk(
        "gammon42", now - timedelta(minutes=30), now, ids, (24, 168), pairs, 24
    )
    keys = [("gammon42", f"growth-probe-{n}") for n in range(batch)]
    engine = _engine(target)  # the worker's session settings: each run planned, no JIT
    timings: dict[str, list[float]] = {"duplicate_check_ms": [], "window_reads_ms": []}
    try:
        with engine.connect() as conn:
            driver = conn.connection.driver_connection
            assert driver is not None
            for _ in range(PROBE_RUNS):
                existing = statements._existing_read(keys)
                started = time.perf_counter()
                driver.execute(existing.sql, existing.params).fetchall()
                timings["duplicate_check_ms"].append((time.perf_counter() - started) * 1000)
                facts = statements.WindowFacts([], [], [], [])
                started = time.perf_counter()
                for read in windows.reads([ask], facts, now):
                    driver.execute(read.sql, read.params).fetchall()
                timings["window_reads_ms"].append((time.perf_counter() - started) * 1000)
            conn.rollback()
    finally:
        engine.dispose()
    return {name: round(statistics.median(times), 3) for name, times in timings.items()}


def export(target: env.Target) -> dict[str, Any]:
    """Seconds for ``ladder export gammon42`` (the rating board, JSON lines)."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "worker.entrypoints.cli.main", "export", "gammon42"],
        env=target.subprocess_env(),
        capture_output=True,
        check=True,
        cwd=env.ROOT,
    )
    seconds = time.perf_counter() - started
    return {"export_seconds": round(seconds, 3), "export_lines": done.stdout.count(b"\n")}


def verify_since(target: env.Target) -> dict[str, Any]:
    """Seconds for ``ladder verify gammon42 --since T``, T a day before the last event
    processed, and the events it replayed and the mismatches it found (0 expected)."""
    (last,) = target.sql("SELECT max(processed_at) FROM events WHERE ladder = 'gammon42'")[0]
    since = (last - timedelta(days=1)).isoformat()
    command = ["verify", "gammon42", "--since", since, "--json"]
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "worker.entrypoints.cli.main", *command],
        env=target.subprocess_env(),
        capture_output=True,
        check=False,
        cwd=env.ROOT,
    )
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise RuntimeError(f"bench: verify --since failed: {done.stderr.decode()[-500:]}")
    report = json.loads(done.stdout)["ladders"]["gammon42"]
    return {
        "verify_since_seconds": round(seconds, 3),
        "verify_since_events": report["events"],
        "verify_since_mismatches": report["mismatch_count"],
    }


def run(
    target: env.Target,
    log: Path,
    *,
    large: bool = False,
    quick: bool = False,
    sizes: tuple[int, ...] | None = None,
    ledger: bool = True,
) -> dict[str, Any]:
    """Fill the log to each size in turn and measure there; ratios to the empty log."""
    large = large or os.environ.get("BENCH_LARGE") == "1"  # make soak sets it
    if sizes is None:
        sizes = (0, 20_000, 100_000) if quick else SIZES + ((LARGE,) if large else ())
    games = 1_000 if quick else HOT_GAMES
    target.reset()
    control = env.Target(target.redis_url, f"{target.database}_control")
    control.reset()
    target.redis.flushdb()
    filled = 0
    out: dict[str, Any] = {"sizes": {}, "history_ledger_rows": ledger}
    for size in sizes:
        if size > filled:
            print(f"bench: growth, filling the audit log to {size:,} events", flush=True)
            started = time.perf_counter()
            fill(
                _engine(target),
                "gammon42",
                "gammon42",
                size - filled,
                until=datetime.now(UTC) - timedelta(days=8),
                prefix=f"g{size}-",
                ledger=ledger,
            )
            fill_seconds = time.perf_counter() - started
            target.sql("VACUUM ANALYZE")
            filled = size
        else:
            fill_seconds = 0.0
        entry: dict[str, Any] = {"fill_seconds": round(fill_seconds, 1)}
        for count in (1, 2):
            print(f"bench: growth, {size:,} events, {count} worker(s)", flush=True)
            entry[f"{count}w"] = ingest_against_control(target, control, size, count, games, log)
        entry.update(reads(target))
        entry.update(export(target))
        entry.update(verify_since(target))
        entry["load_average"] = [round(x, 2) for x in os.getloadavg()]
        out["sizes"][str(size)] = entry
        print(f"bench: growth, {size:,} events: {json.dumps(entry)}", flush=True)
        forget_hot(target)
    control.drop()
    _ratios(out)
    plot(out)
    print_section({"growth": out})
    return out


def _engine(target: env.Target) -> Any:
    from worker.settings import normalise_database_url
    from worker.store.engines import make_engine

    return make_engine(normalise_database_url(target.database_url))


MEASURES = (
    ("1w", "ingest, 1 worker"),
    ("2w", "ingest, 2 workers"),
    ("duplicate_check_ms", "duplicate check"),
    ("window_reads_ms", "window reads"),
    ("export_seconds", "export"),
    ("verify_since_seconds", "verify --since"),
)


def _value(entry: dict[str, Any], key: str) -> float:
    found = entry[key]
    return float(found["events_per_second"] if isinstance(found, dict) else found)


def _ratios(out: dict[str, Any]) -> None:
    """Each size's figures as a ratio to the empty log's (a rate: higher is better; a time:
    lower is better, so its ratio is empty / now, and 1.0 or more is as good)."""
    base = out["sizes"]["0"]
    for entry in out["sizes"].values():
        ratios = {}
        for key, _ in MEASURES:
            if key in ("1w", "2w"):  # a rate, against the control drained beside it
                ratios[key] = entry[key]["ratio_to_control"]
                continue
            now, empty = _value(entry, key), _value(base, key)
            ratio = empty / now if now and empty else None
            ratios[key] = None if ratio is None else round(ratio, 2)
        entry["ratios"] = ratios
    biggest = str(max(int(s) for s in out["sizes"] if int(s) <= 10_000_000))  # the goal's size
    out["goal_size"] = int(biggest)
    out["goal_met"] = all((out["sizes"][biggest]["ratios"][k] or 0) >= GOAL for k in ("1w", "2w"))


def plot(out: dict[str, Any], path: Path = PLOT) -> Path | None:
    """The ratios against the log's size, as a PNG (None without matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    sizes = sorted(int(s) for s in out["sizes"])
    fig, ax = plt.subplots(figsize=(7, 4))
    for key, label in MEASURES:
        ys = [out["sizes"][str(s)]["ratios"][key] for s in sizes]
        ax.plot([max(s, 1) for s in sizes], ys, marker="o", label=label)
    ax.axhline(GOAL, color="grey", linestyle="--", linewidth=1, label=f"goal {GOAL}x (ingest)")
    ax.set_xscale("symlog", linthresh=1_000_000)
    ax.set_xlabel("events in the audit log")
    ax.set_ylabel("ratio to the empty log (1.0: as fast)")
    ax.set_title("ladder: cost as the audit log grows")
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def print_section(result: dict[str, Any]) -> None:
    growth = result.get("growth")
    if not isinstance(growth, dict) or "sizes" not in growth:
        return
    print("growth: each figure at each log size, and its ratio to the empty log's")
    header = f"  {'events':>12}" + "".join(f"  {label:>22}" for _, label in MEASURES)
    print(header)
    for size, entry in sorted(growth["sizes"].items(), key=lambda kv: int(kv[0])):
        cells = "".join(
            f"  {_value(entry, key):>14,.1f} ({entry['ratios'][key] or 0:.2f}x)"
            for key, _ in MEASURES
        )
        print(f"  {int(size):>12,}{cells}")
    met = "met" if growth.get("goal_met") else "NOT met"
    print(f"  goal: ingest at {growth['goal_size']:,} events >= {GOAL}x the empty log's: {met}")


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.growth [--large] [--quick] [--out FILE]``: this section alone."""
    import argparse

    parser = argparse.ArgumentParser(prog="bench.growth")
    parser.add_argument("--large", action="store_true", help="also 50M events")
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    parser.add_argument("--sizes", help="comma-separated log sizes instead (0 first)")
    parser.add_argument(
        "--audit-only",
        action="store_true",
        help="fill audit rows only, no ledger rows (a batch never reads old ledger months)",
    )
    parser.add_argument("--out", type=Path, default=env.ROOT / "bench-results" / "growth.json")
    parser.add_argument("--redis-url", default=env.REDIS_URL)
    args = parser.parse_args(argv)
    target = env.Target(args.redis_url, database="ladder_bench_growth")
    log = args.out.with_suffix(".log")
    log.parent.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }
    with target.lease():
        try:
            sizes = tuple(int(x) for x in args.sizes.split(",")) if args.sizes else None
            result["growth"] = run(
                target,
                log,
                large=args.large,
                quick=args.quick,
                sizes=sizes,
                ledger=not args.audit_only,
            )
        finally:
            target.redis.flushdb()
            target.drop()
    args.out.write_text(json.dumps(result, indent=2, default=str) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
