"""The servers a benchmark runs against, and how each run starts from a clean slate.

Every run gets a freshly created PostgreSQL database (migrated) and a flushed Redis
database. Redis db 13 by default: the test suite leases database numbers through
``ladder-tests:lease:<n>`` keys in db 0, so the benchmark takes the same lease for its
number while it runs and refuses to start if a test session holds it.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import psycopg
from redis import Redis

from bench.events import Mix, generate

REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/13")
ADMIN_DATABASE_URL = os.environ.get("BENCH_ADMIN_DATABASE_URL", "postgresql://root@127.0.0.1/test")
DATABASE = os.environ.get("BENCH_DATABASE", "ladder_bench")
NETWORK_KEY = "bench-network-key"
LEASE_SECONDS = 3600
ROOT = Path(__file__).resolve().parent.parent
# The worker command; BENCH_LADDER (a command line, e.g. "python my_ladder.py") benchmarks
# another build of the CLI with the same sections.
LADDER = os.environ.get("BENCH_LADDER") or str(Path(sys.executable).with_name("ladder"))


def generate_events(count: int, *, tag: str, seed: int = 1) -> tuple[list[str], Mix]:
    return generate(count, seed=seed, tag=tag, players=max(2_000, min(count // 2, 20_000)))


class Target:
    def __init__(
        self,
        redis_url: str = REDIS_URL,
        database: str = DATABASE,
        *,
        database_url: str | None = None,
    ) -> None:
        """``database_url`` points at an existing database instead (nothing is reset)."""
        self.redis_url = redis_url.rstrip("/")
        self.database = database
        self.redis = Redis.from_url(self.redis_url)
        db = self.redis.connection_pool.connection_kwargs.get("db", 0)
        if not db:
            raise SystemExit("bench: refusing to flush Redis db 0; pass a --redis-url with a db")
        self.db = int(db)
        base = ADMIN_DATABASE_URL.rsplit("/", 1)[0]
        self.owned = database_url is None
        self.database_url = database_url or f"{base}/{database}"

    # -- the Redis lease shared with the test suite --------------------------------------

    @contextmanager
    def lease(self) -> Iterator[None]:
        admin = Redis.from_url(self.redis_url.rsplit("/", 1)[0] + "/0")
        key = f"ladder-tests:lease:{self.db}"
        token = f"bench-{uuid.uuid4().hex}"
        if not admin.set(key, token, nx=True, ex=LEASE_SECONDS):
            holder = admin.get(key)
            raise SystemExit(
                f"bench: Redis db {self.db} is leased ({key} = {holder!r}); "
                "pass --redis-url with another db number"
            )
        try:
            yield
        finally:
            if admin.get(key) == token.encode():
                admin.delete(key)
            admin.close()

    # -- a clean slate --------------------------------------------------------------------

    def reset(self) -> None:
        """Drop and create the database, migrate it, flush the Redis db. A ``CHECKPOINT``
        first puts what earlier sections wrote on disk, so its flush is not timed in the
        next one (a section's own checkpoints still are)."""
        if not self.owned:
            raise RuntimeError("bench: this target's database is not the benchmark's own")
        with psycopg.connect(ADMIN_DATABASE_URL, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')
            try:
                conn.execute("CHECKPOINT")
            except psycopg.errors.InsufficientPrivilege:
                pass  # needs superuser or pg_checkpoint: the sections simply run without it
            conn.execute(f'CREATE DATABASE "{self.database}"')
        from worker.settings import normalise_database_url
        from worker.store.engines import make_engine
        from worker.store.migrate import upgrade

        engine = make_engine(normalise_database_url(self.database_url))
        try:
            upgrade(engine)
        finally:
            engine.dispose()
        self.redis.flushdb()

    def drop(self) -> None:
        if not self.owned:
            raise RuntimeError("bench: this target's database is not the benchmark's own")
        with psycopg.connect(ADMIN_DATABASE_URL, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')

    def sql(self, query: str, *params: Any) -> list[tuple[Any, ...]]:
        url = self.database_url.replace("postgresql+psycopg://", "postgresql://", 1)
        with psycopg.connect(url, autocommit=True) as conn:
            cur = conn.execute(query, params or None)
            return cur.fetchall() if cur.description else []

    # -- publishing -------------------------------------------------------------------------

    def publish(self, payloads: list[str], chunk: int = 1000) -> float:
        """RPUSH every payload onto the inbox in pipelines; returns the seconds it took."""
        import time

        from worker import keys

        started = time.perf_counter()
        pipe = self.redis.pipeline(transaction=False)
        for start in range(0, len(payloads), chunk):
            pipe.rpush(keys.INBOX, *payloads[start : start + chunk])
            pipe.execute()
        return time.perf_counter() - started

    def worker_env(self, batch_size: int | None = None) -> dict[str, str]:
        env = {
            "REDIS_URL": self.redis_url,
            "DATABASE_URL": self.database_url,
            "LADDER_NETWORK_KEY": NETWORK_KEY,
        }
        env.pop("LEADERBOARD_REDIS_URL", None)
        if batch_size:
            env["LADDER_BATCH_SIZE"] = str(batch_size)
        return env

    def subprocess_env(self, batch_size: int | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("LADDER_")}
        env.pop("LEADERBOARD_REDIS_URL", None)
        env.update(self.worker_env(batch_size))
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        return env


class Ran(NamedTuple):
    """A ``ladder`` command's run (``ladder_json``): the JSON of its last output line (None
    if there is none), its exit status, and the seconds and the CPU seconds the whole command
    took, interpreter start-up included (the CPU is what another load on the machine moves
    least)."""

    shown: dict[str, Any] | None
    code: int
    seconds: float
    cpu_seconds: float

    def cpu_us_per_event(self, events: int) -> float | None:
        """The whole command's CPU an event, in microseconds (None without events)."""
        return round(self.cpu_seconds * 1e6 / events, 1) if events else None


def cpu_text(step: dict[str, Any]) -> str:
    """A section's ``command_cpu_us_per_event`` as its line shows it, where it was measured."""
    cpu = step.get("command_cpu_us_per_event")
    return "" if cpu is None else f", {cpu} us of CPU an event with start-up"


def ladder_json(target: Target, argv: list[str], log: Path) -> Ran:
    """Run ``ladder ARGV`` (this interpreter's) against ``target`` with its stderr appended to
    ``log`` (``Ran``)."""
    import json
    import resource
    import subprocess
    import time

    def children_cpu() -> float:
        used = resource.getrusage(resource.RUSAGE_CHILDREN)
        return used.ru_utime + used.ru_stime

    cpu = children_cpu()
    started = time.perf_counter()
    with log.open("ab") as errors:
        run = subprocess.run(
            [str(Path(sys.executable).with_name("ladder")), *argv],
            env=target.subprocess_env(),
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
        )
    seconds, cpu = time.perf_counter() - started, children_cpu() - cpu
    try:
        shown = json.loads(run.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return Ran(None, run.returncode, seconds, cpu)
    return Ran(shown if isinstance(shown, dict) else None, run.returncode, seconds, cpu)
