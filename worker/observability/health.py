"""Health checks for probes: ``ladder health`` (alive) and ``ladder health --ready``.

- alive: the queue Redis answers a ping.
- ready: alive, the leaderboard Redis (when it is another server or a cluster) answers a
  ping, PostgreSQL answers a query, and its schema is at the newest migration.

Each check opens its own short-lived connection with a timeout, so a probe never hangs on a
server that accepts connections and then stays silent.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass

from redis import Redis
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from worker.boards.redis_clients import leaderboard_client
from worker.settings import Settings
from worker.store import migrate

DEFAULT_TIMEOUT = 5.0


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    duration_ms: float

    def as_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "ok": self.ok,
            "detail": self.detail,
            "duration_ms": round(self.duration_ms, 1),
        }


def alive(settings: Settings, timeout: float = DEFAULT_TIMEOUT) -> list[Check]:
    return [_run("redis", lambda: _ping_queue(settings.redis_url, timeout))]


def ready(settings: Settings, timeout: float = DEFAULT_TIMEOUT) -> list[Check]:
    checks = alive(settings, timeout)
    url = settings.leaderboard_redis_url
    if url and url != settings.redis_url:
        checks.append(_run("leaderboard_redis", lambda: _ping_leaderboards(url, timeout)))
    checks.append(_run("database", lambda: _schema(settings.database_url, timeout)))
    for other in settings.database_urls()[1:]:  # each other primary, named by its ladders
        ladders = ",".join(sorted(n for n, u in settings.database_routes.items() if u == other))
        checks.append(_run(f"database:{ladders}", functools.partial(_schema, other, timeout)))
    return checks


def _run(name: str, check: Callable[[], str]) -> Check:
    started = time.perf_counter()
    try:
        detail, ok = check(), True
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [""])[0]  # a probe's output: one line a check
        detail, ok = f"{type(exc).__name__}: {first}"[:300], False
    return Check(name, ok, detail, (time.perf_counter() - started) * 1000)


def _ping_queue(url: str, timeout: float) -> str:
    client = Redis.from_url(url, socket_connect_timeout=timeout, socket_timeout=timeout)
    try:
        client.ping()
    finally:
        client.close()
    return "pong"


def _ping_leaderboards(url: str, timeout: float) -> str:
    client = leaderboard_client(url, socket_connect_timeout=timeout, socket_timeout=timeout)
    try:
        client.ping()
    finally:
        client.close()
    return "pong"


def _schema(database_url: str, timeout: float) -> str:
    """The database answers and its schema revision is the newest one shipped."""
    connect_args: dict[str, object] = {}
    if database_url.startswith("postgresql"):
        connect_args["connect_timeout"] = max(1, int(timeout))
    engine = create_engine(database_url, connect_args=connect_args, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
            current = set(migrate.current_heads(conn))
    finally:
        engine.dispose()
    heads = set(migrate.heads())
    if current != heads:
        shown = ", ".join(sorted(current)) or "none"
        raise SchemaBehind(f"schema at {shown}, newest is {', '.join(sorted(heads))}")
    return f"schema at {', '.join(sorted(heads))}"


class SchemaBehind(RuntimeError):
    """The database has not been migrated to the newest revision (run ``ladder migrate``)."""


def probes(settings: Settings, timeout: float = 3.0) -> dict[str, Callable[[], object]]:
    """A quick check per store, each raising when its store does not answer within
    ``timeout``: what the batch job asks before it calls a failure the batch's own fault."""
    checks: dict[str, Callable[[], object]] = {
        "redis": lambda: _ping_queue(settings.redis_url, timeout)
    }
    url = settings.leaderboard_redis_url
    if url and url != settings.redis_url:
        checks["redis"] = lambda: (
            _ping_queue(settings.redis_url, timeout),
            _ping_leaderboards(url, timeout),
        )
    if settings.database_url.startswith("postgresql"):  # every primary
        checks["postgresql"] = lambda: [_select_one(u, timeout) for u in settings.database_urls()]
    return checks


def _select_one(database_url: str, timeout: float) -> str:
    engine = create_engine(
        database_url, connect_args={"connect_timeout": max(1, int(timeout))}, poolclass=NullPool
    )
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    finally:
        engine.dispose()
    return "ok"
