"""Where a burst drain spends its time: ``python -m bench.profile [--events 20000]``.

Publishes a realistic mix (``bench.events``) into a fresh database and flushed Redis db,
then drains it in this process exactly as ``ladder worker --burst`` does
(``worker.entrypoints.worker.runner.run_burst``), with INFO logs written to a file as in
production. Two drains, two views, per event:

- stages (no profiler): the service's steps and the RQ/inbox machinery are wrapped with
  timers, so the numbers are real wall time (``time.perf_counter``) and the CPU time of the
  thread that ran each stage (``time.thread_time``: what another process's load on a shared
  machine moves least);
- layers (under cProfile, which slows Python code down, so read them as shares): exclusive
  time grouped by the code that spent it (pydantic, engine, SQLAlchemy, psycopg, redis-py,
  rq, structlog, ladder's own modules, the rest).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import env

# Timed stages: (label, module, attribute path). Nested stages are inclusive. A batch taken by
# a job after its own (``worker.entrypoints.worker.batches._follow_on``) has its Redis write
# (``Service.project``) run on the worker's Redis thread, beside the next batch: each stage is
# timed on the thread that ran it, and its CPU is that thread's (``time.thread_time``).
SETTLE = "job body: Service.settle (validation, PostgreSQL, dead letters)"
PROJECT = "Redis write: Service.project (boards and receipts, then the batch line)"
# the next batch's validation, while the commit travels: inside write_batch (and so inside the
# PostgreSQL work), counted once, in the validation above
AHEAD = "      of which the next batch validated meanwhile (batches._Ahead)"
TIMERS: list[tuple[str, str, str]] = [
    ("burst drain (run_burst)", "worker.entrypoints.worker.runner", "run_burst"),
    ("inbox pump (claim + enqueue)", "worker.queue.inbox", "Inbox.pump_once"),
    (SETTLE, "worker.service.batch", "Service.settle"),
    ("  validation and stored form (Intake.valid)", "worker.service.intake", "Intake.valid"),
    ("    of which Intake.parse", "worker.service.intake", "Intake.parse"),
    ("    of which the stored payload", "schemas.records", "stored_payload"),
    ("    of which its digest", "schemas.records", "digest"),
    (
        "  PostgreSQL work (_apply_with_retries)",
        "worker.service.batch",
        "Service._apply_with_retries",
    ),
    (
        "    before_claim (links, ids applied before: one round trip)",
        "worker.store.statements",
        "before_claim",
    ),
    ("    what the batch needs (engine.needs)", "engine.needs", "needs"),
    (
        "    claim_players (create + lock in key order; then links again, ids applied "
        "meanwhile, tournaments, windows, moderation marks: one round trip)",
        "worker.store.statements",
        "claim_players",
    ),
    (
        "    the windows from the counts (WindowFacts.windows)",
        "worker.store.windows",
        "WindowFacts.windows",
    ),
    ("    the engine's decisions (engine.ladder.apply)", "worker.service.batch", "apply"),
    (
        "    write_batch (audit + ledger: COPY in a large batch; players, COMMIT)",
        "worker.store.statements",
        "write_batch",
    ),
    (AHEAD, "worker.entrypoints.worker.batches", "_Ahead.__call__"),
    (PROJECT, "worker.service.batch", "Service.project"),
    ("  Redis pipeline (Projection.write)", "worker.boards.projection", "Projection.write"),
    ("claim of a follow-on batch (Inbox.claim)", "worker.queue.inbox", "Inbox.claim"),
    ("release of a written batch (Inbox.release)", "worker.queue.inbox", "Inbox.release"),
]
REDIS_THREAD = " [Redis thread]"  # a stage's share run on the Redis thread


def install_timers() -> dict[str, list[float]]:
    """Wrap each stage with an accumulator: {label: [wall seconds, calls, CPU seconds]}, the
    share run on the Redis thread under ``label + REDIS_THREAD``."""
    import functools
    import importlib
    import threading

    main = threading.main_thread()
    totals: dict[str, list[float]] = {}
    for label, module_name, path in TIMERS:
        module = importlib.import_module(module_name)
        owner: Any = module
        *parents, name = path.split(".")
        for parent in parents:
            owner = getattr(owner, parent)
        original = owner.__dict__[name] if parents else getattr(owner, name)
        func = original.__func__ if isinstance(original, staticmethod) else original
        here = totals.setdefault(label, [0.0, 0, 0.0])
        there = totals.setdefault(label + REDIS_THREAD, [0.0, 0, 0.0])

        def timed(
            *a: Any,
            _f: Any = func,
            _here: list[float] = here,
            _there: list[float] = there,
            **k: Any,
        ) -> Any:
            started, cpu = time.perf_counter(), time.thread_time()
            try:
                return _f(*a, **k)
            finally:
                slot = _here if threading.current_thread() is main else _there
                slot[0] += time.perf_counter() - started
                slot[1] += 1
                slot[2] += time.thread_time() - cpu

        wrapped = functools.wraps(func)(timed)
        setattr(
            owner, name, staticmethod(wrapped) if isinstance(original, staticmethod) else wrapped
        )
    return totals


def timer_breakdown(totals: dict[str, list[float]], events: int) -> dict[str, Any]:
    per = 1e6 / max(events, 1)
    out: dict[str, Any] = {"us_per_event": {}, "cpu_us_per_event": {}}
    for column, index in (("us_per_event", 0), ("cpu_us_per_event", 2)):
        stage = {label: totals[label][index] for label in totals}
        row = {
            label: round(seconds * per, 1)
            for label, seconds in stage.items()
            if not label.endswith(REDIS_THREAD) or totals[label][1]
        }
        settle = stage[SETTLE]
        parts = (
            stage["  validation and stored form (Intake.valid)"]
            + stage["  PostgreSQL work (_apply_with_retries)"]
            - stage[AHEAD]
        )
        row["  rest of settle (outcomes, dead letters)"] = round((settle - parts) * per, 1)
        drain = stage["burst drain (run_burst)"]
        pump = stage["inbox pump (claim + enqueue)"]
        row["rq worker loop and the rest of the main thread (claims, job status, registries)"] = (
            round((drain - settle - stage[PROJECT] - pump) * per, 1)
        )
        out[column] = row
    out["batches"] = int(totals[SETTLE][1] + totals[SETTLE + REDIS_THREAD][1])
    return out


# The project's own packages by their directories: a checkout's path may itself contain
# "/engine/" or "/worker/", as may the virtual environment inside it.
_ROOT = Path(__file__).resolve().parents[1]
_OWN = {name: f"{_ROOT / name}{os.sep}" for name in ("engine", "schemas", "worker")}

LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("pydantic / schemas (validation)", ("pydantic", _OWN["schemas"])),
    ("engine (rating, fair play)", (_OWN["engine"],)),
    ("SQLAlchemy", ("sqlalchemy",)),
    ("psycopg (driver + socket wait)", ("psycopg",)),
    ("redis-py (client + socket wait)", ("/redis/",)),
    ("rq", ("/rq/",)),
    ("structlog + logging", ("structlog", "/logging/")),
    ("json", ("/json/",)),
    ("ladder worker/*.py", (_OWN["worker"],)),
]


def _label(filename: str) -> str:
    for label, needles in LAYERS:
        if any(n in filename for n in needles):
            return label
    if filename.startswith("~") or filename.startswith("<"):
        return "builtins (socket I/O, select, C calls)"
    return "other (stdlib, uuid, datetime...)"


def breakdown(stats: pstats.Stats, events: int, wall: float) -> dict[str, Any]:
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    layers: dict[str, float] = {}
    builtin_detail: dict[str, float] = {}
    for (filename, _line, func), (_cc, _nc, tt, _ct, _callers) in raw.items():
        label = _label(filename)
        layers[label] = layers.get(label, 0.0) + tt
        if label.startswith("builtins"):
            builtin_detail[func] = builtin_detail.get(func, 0.0) + tt
    per = 1e6 / max(events, 1)
    top_builtins = sorted(builtin_detail.items(), key=lambda kv: -kv[1])[:6]
    return {
        "events": events,
        "wall_seconds": wall,
        "events_per_second_under_profiler": events / wall,
        "layers_us_per_event": {
            k: round(v * per, 1) for k, v in sorted(layers.items(), key=lambda kv: -kv[1])
        },
        "top_builtins_us_per_event": {k: round(v * per, 1) for k, v in top_builtins},
    }


def print_breakdown(result: dict[str, Any]) -> None:
    timed = result["timed"]
    print(
        f"burst drain, no profiler: {timed['events']} events in {timed['wall_seconds']:.1f} s "
        f"({timed['events_per_second']} events/s, {timed['batches']} batches)"
    )
    print("\nstages (inclusive, us per event, on the thread that ran each)     wall      CPU")
    for label, value in timed["us_per_event"].items():
        cpu = timed["cpu_us_per_event"][label]
        print(f"  {label:<60} {value:>8.1f} {cpu:>8.1f}")
    print()
    print(
        f"profiled burst drain: {result['events']} events in {result['wall_seconds']:.1f} s "
        f"({result['events_per_second_under_profiler']:.0f} events/s under cProfile)"
    )
    print("\nlayers (self time, microseconds per event; the main thread's: cProfile leaves the")
    print("Redis thread's writes of the batches a job takes after its own out)")
    for label, value in result["layers_us_per_event"].items():
        print(f"  {label:<50} {value:>8.1f}")
    print("  of which builtins:")
    for label, value in result["top_builtins_us_per_event"].items():
        print(f"    {label:<48} {value:>8.1f}")


def _drain(
    target: env.Target,
    count: int,
    tag: str,
    profiler: cProfile.Profile | None,
    workload: str = "mixed",
) -> tuple[float, int]:
    """Reset, publish ``count`` events, drain them in this process; (seconds, events)."""
    from bench.events import generate_hot
    from bench.floorbench import hot_players
    from worker.bootstrap import Runtime
    from worker.entrypoints.worker import runner
    from worker.settings import Settings

    target.reset()
    if workload == "hot":  # one gammon42 ladder, as bench.floorbench's hot workload
        payloads, _mix = generate_hot(count, players=hot_players(count), tag=tag)
    else:
        payloads, _mix = env.generate_events(count, tag=tag)
    target.publish(payloads)
    rt = Runtime(Settings.from_env())
    rt.config  # noqa: B018
    rt.engine.connect().close()
    gc.freeze()  # what start-up allocated, as the console script freezes it (cli.launch)
    started = time.perf_counter()
    if profiler is not None:
        profiler.enable()
    runner.run_burst(rt)
    if profiler is not None:
        profiler.disable()
    wall = time.perf_counter() - started
    rt.close()
    return wall, len(payloads)


def _lines(handle: Any) -> list[str]:
    handle.seek(0)
    return [line for line in handle.read().splitlines() if line]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--batch-size", type=int, default=None)
    parser.add_argument(
        "--workload",
        choices=("mixed", "hot"),
        default="mixed",
        help="mixed: the ingest mix of three ladders; hot: one gammon42 ladder as the floor "
        "section has it (30 games a player in 60,000, 10 in a K window)",
    )
    parser.add_argument("--redis-url", default=env.REDIS_URL)
    parser.add_argument("--database", default=env.DATABASE)
    parser.add_argument("--out", help="write the breakdown (JSON) here")
    parser.add_argument("--pstats", help="also save raw cProfile stats here")
    args = parser.parse_args(argv)

    target = env.Target(args.redis_url, args.database)
    if args.batch_size:
        os.environ["LADDER_BATCH_SIZE"] = str(args.batch_size)
    os.environ.update(target.worker_env())
    log_file = tempfile.TemporaryFile("w+")
    saved = sys.stderr
    with target.lease():
        from worker.observability import logs

        # The per-event JSON lines go to a file, as in production; one file for both drains
        # (structlog keeps the stream it first wrote to).
        sys.stderr = log_file
        try:
            logs.configure("INFO")
            totals = install_timers()
            wall, events = _drain(target, args.events, "timed", None, args.workload)
            timed = timer_breakdown(totals, events)
            for slot in totals.values():
                slot[:] = [0.0, 0, 0.0]
            profiler = cProfile.Profile()
            pwall, pevents = _drain(target, args.events, "prof", profiler, args.workload)
            target.redis.flushdb()
            target.drop()
        finally:
            sys.stderr = saved
    failures = [line for line in _lines(log_file) if '"level": "error"' in line]
    if failures:
        print(f"bench: {len(failures)} error lines in the worker log, e.g. {failures[0]}")
    stats = pstats.Stats(profiler)
    if args.pstats:
        stats.dump_stats(args.pstats)
    result = breakdown(stats, pevents, pwall)
    result["timed"] = {
        "events": events,
        "wall_seconds": round(wall, 2),
        "events_per_second": round(events / wall),
        "batches": timed["batches"],
        "us_per_event": timed["us_per_event"],
        "cpu_us_per_event": timed["cpu_us_per_event"],
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    print_breakdown(result)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
