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
- rulesets: the hot ladder's games rated by gammon42, by glicko2 and by openskill, each
  drained by one burst worker, the three alternated round by round; glicko2's and openskill's
  rates as ratios to gammon42's, and the engine alone on the same games
  (``bench.rulesets``).
- worker peak RSS over every worker process started.

Prints a table with each goal and whether it is met, and writes JSON
(``bench/results/<started_at>.json`` unless ``--out``); after a results file is written there,
bench/README.md is written again from the newest run (``bench.page``). ``--quick`` is a small
smoke-sized run.
"""

# This module is the runner: each section lives in a module of its own (bench.ingest,
# bench.reads, bench.rebuild, bench.replay, bench.receipts and the others named above), the
# sizes of a full and a quick run in bench.plan, the table and the goals in bench.table.

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import arrival, env, flood, floorbench, history, moderation, page, rulesets
from bench import boards as boards_bench
from bench import receipts as receipts_bench
from bench.ingest import ingest, noop_rate
from bench.plan import FULL, QUICK, RESULTS_DIR, SECTIONS, Plan
from bench.reads import reads
from bench.rebuild import rebuild
from bench.receipts import goals as receipt_goals
from bench.replay import replay
from bench.table import goals, median_round, print_table
from bench.workers import Workers


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
    parser.add_argument("--out", type=Path, help="default: bench/results/<started_at>.json")
    parser.add_argument("--events", type=int, help="events per ingest run")
    parser.add_argument("--batch-sizes", help="comma-separated LADDER_BATCH_SIZE values, or ''")
    parser.add_argument("--latency-seconds", type=float)
    parser.add_argument(
        "--rounds", type=int, help="runs of ingest, latency and rebuild (median shown; full: 3)"
    )
    parser.add_argument("--latency-rate", type=int, help="offered events/s (default 1000)")
    parser.add_argument("--rebuild-players", type=int)
    parser.add_argument(
        "--history-events", type=int, help="section history's games (default 200,000)"
    )
    parser.add_argument(
        "--only",
        help="comma-separated sections: ingest,batch_sizes,latency,reads,rebuild,replay,floor,"
        "startup,boards,receipts,void,history,flood,growth,rulesets",
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
    if args.history_events:
        overrides["history_events"] = args.history_events
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
                    hot_games=plan.hot_games,
                    rounds=plan.rounds,
                ),
            )
        if "rulesets" in sections:
            _section(
                result,
                "rulesets",
                lambda: rulesets.run(
                    target, log, ingest, games=plan.ruleset_games, rounds=plan.rounds
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
        if "flood" in sections:
            _section(
                result,
                "flood",
                lambda: flood.run(target, plan.flood_invalid, plan.flood_valid, log),
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
    result["goals"] = (
        goals(result) + receipt_goals(result) + flood.goals(result) + rulesets.goals(result)
    )
    print_table(result)
    if args.out is None:
        args.out = RESULTS_DIR / f"{result['started_at'].replace(':', '')}.json"
    print(f"bench: {result['total_seconds']:.0f} s in all; results in {args.out}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, default=str) + "\n", encoding="utf-8")
    if args.out.resolve().parent == RESULTS_DIR.resolve():
        try:
            print(f"bench: {page.write().relative_to(env.ROOT)} written again with these goals")
        except page.PageError as exc:
            print(f"bench: bench/README.md not written again: {exc}", file=sys.stderr)
    return 0


def target_sync_commit() -> tuple[str]:
    import psycopg

    with psycopg.connect(env.ADMIN_DATABASE_URL) as conn:
        row = conn.execute("SHOW synchronous_commit").fetchone()
    return (str(row[0]) if row else "unknown",)


if __name__ == "__main__":
    sys.exit(main())
