"""Shared fixtures: every test gets its own PostgreSQL schema and its own flushed Redis db.

``LADDER_TEST_DATABASE_URL`` (e.g. ``postgresql://root@127.0.0.1/test``) and
``LADDER_TEST_REDIS_URL`` (e.g. ``redis://127.0.0.1:6379``) name the servers. Either one
unset: the embedded server (``worker.embedded``) under ``.ladder-test/`` in the checkout
(``LADDER_TEST_DATA_DIR`` elsewhere) serves, started once by the first session that needs
it and left running for the next (``LADDER_DATA_DIR=.ladder-test ladder dev stop``).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from redis import Redis
from sqlalchemy import create_engine, text

from worker import embedded
from worker.settings import Settings, normalise_database_url

ROOT = Path(__file__).resolve().parents[1]
TEST_DATA_DIR = Path(os.environ.get("LADDER_TEST_DATA_DIR") or ROOT / ".ladder-test")
USED_EMBEDDED: list[embedded.Server] = []


@pytest.fixture(scope="session")
def base_database_url() -> str:
    """The PostgreSQL the tests make their schemas in."""
    given = os.environ.get("LADDER_TEST_DATABASE_URL")
    if given:
        return normalise_database_url(given)
    server = embedded.postgres(TEST_DATA_DIR)
    USED_EMBEDDED.append(server)
    return normalise_database_url(server.url)


@pytest.fixture(scope="session")
def base_redis_url() -> str:
    """The Redis whose numbered databases the test sessions lease (without a db number)."""
    given = os.environ.get("LADDER_TEST_REDIS_URL")
    if not given:
        server = embedded.redis(TEST_DATA_DIR)
        USED_EMBEDDED.append(server)
        given = server.url.removesuffix("/0")
    return given.rstrip("/")


LEASE_SECONDS = 3 * 3600


@pytest.fixture(scope="session")
def redis_db(base_redis_url: str) -> Iterator[int]:
    """A Redis database number leased for this test session alone (db 0 holds the leases).

    Concurrent test sessions on one machine (CI beside a developer's run, xdist workers)
    each lease a different number, so no session ever flushes another's data.
    """
    admin = Redis.from_url(f"{base_redis_url}/0")
    token = uuid.uuid4().hex
    for db in range(1, 16):
        if admin.set(f"ladder-tests:lease:{db}", token, nx=True, ex=LEASE_SECONDS):
            break
    else:
        pytest.exit("no free Redis database number (1-15) for this test session", returncode=3)
    yield db
    if admin.get(f"ladder-tests:lease:{db}") == token.encode():
        admin.delete(f"ladder-tests:lease:{db}")
    admin.close()


@pytest.fixture
def database_url(base_database_url: str) -> Iterator[str]:
    """A fresh, empty PostgreSQL schema, dropped afterwards."""
    yield from _schema_on(base_database_url)


def _schema_on(base_url: str) -> Iterator[str]:
    schema = f"t_{uuid.uuid4().hex[:16]}"
    admin = create_engine(base_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    sep = "&" if "?" in base_url else "?"
    yield f"{base_url}{sep}options={quote(f'-csearch_path={schema}')}"
    with admin.connect() as conn:
        conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
    admin.dispose()


@pytest.fixture(scope="session")
def second_base_database_url() -> Iterator[str]:
    """A second PostgreSQL server, for ladders routed to a primary of their own: an embedded
    one in a temporary directory of this session (its own data and socket), stopped at the
    end of the session."""
    where = Path(tempfile.mkdtemp(prefix="ladder-second-primary-"))
    where.chmod(0o755)  # run as root, PostgreSQL runs as its own user, who must reach it
    server = embedded.postgres(where)
    try:
        yield normalise_database_url(server.url)
    finally:
        embedded.stop(where)
        shutil.rmtree(where, ignore_errors=True)


@pytest.fixture
def second_database_url(second_base_database_url: str) -> Iterator[str]:
    """A fresh, empty schema on the second PostgreSQL server, dropped afterwards."""
    yield from _schema_on(second_base_database_url)


@pytest.fixture
def redis_url(base_redis_url: str, redis_db: int) -> Iterator[str]:
    """This session's Redis database, flushed before and after each test."""
    url = f"{base_redis_url}/{redis_db}"
    client = Redis.from_url(url)
    client.flushdb()
    yield url
    client.flushdb()
    client.close()


@pytest.fixture
def settings(database_url: str, redis_url: str) -> Settings:
    return Settings(redis_url=redis_url, database_url=database_url, job_retry_intervals=(0,) * 5)


@pytest.fixture
def make_runtime(settings: Settings) -> Iterator[Callable[..., Any]]:
    """The one way tests build a Runtime: ``make_runtime(**changes)`` is a migrated Runtime
    on this test's PostgreSQL schema and Redis db with those settings changed, closed when
    the test ends."""
    from worker.bootstrap import Runtime
    from worker.store.migrate import upgrade

    built: list[Any] = []

    def make(**changes: Any) -> Any:
        rt = Runtime(settings.replace(**changes) if changes else settings)
        built.append(rt)
        upgrade(rt.engine)
        return rt

    yield make
    for rt in reversed(built):
        rt.close()


@pytest.fixture
def runtime(make_runtime: Callable[..., Any]) -> Any:
    """A migrated Runtime wired to this test's PostgreSQL schema and Redis db."""
    return make_runtime()


def publish(rt: Any, *events: dict[str, Any] | str) -> None:
    """RPUSH events onto the inbox exactly as a game server would."""
    from worker import keys

    for event in events:
        rt.redis.rpush(keys.INBOX, event if isinstance(event, str) else json.dumps(event))


def drain(rt: Any) -> None:
    from worker.entrypoints.worker import runner

    runner.run_burst(rt)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked ``long`` run first, the longest first (``long(minutes=N)``, 1 if not
    given; else in their order), the rest after them as collected: run in parallel (``make
    test``'s ``-n``), each long one starts at once on a worker of its own instead of keeping
    the run waiting after everything else has finished (the property test of ten minutes
    started after ten long tests of half a minute on its worker made the run five minutes
    longer)."""

    def order(item: pytest.Item) -> tuple[bool, float]:
        long = item.get_closest_marker("long")
        return long is None, -float(long.kwargs.get("minutes", 1)) if long else 0.0

    items.sort(key=order)


FIGURES: list[str] = []  # printed at the end of the run
_TAKEN: list[str] = []  # this process's, until its test's report carries them


def record_figure(line: str) -> None:
    """Note what a reliability test survived; printed at the end of the run."""
    _TAKEN.append(line)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A test's figures travel in its report, so that they reach the process that prints the
    summary when the tests run in parallel worker processes."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.when == "call" and _TAKEN:
        report.user_properties.extend(("figure", line) for line in _TAKEN)
        _TAKEN.clear()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    FIGURES.extend(str(value) for name, value in report.user_properties if name == "figure")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for server in {s.name: s for s in USED_EMBEDDED}.values():
        terminalreporter.write_line(
            f"the tests used the embedded {server.name} at {server.url} (left running; "
            f"LADDER_DATA_DIR={TEST_DATA_DIR} ladder dev stop stops it)"
        )
    if FIGURES:
        terminalreporter.section("what the reliability tests survived")
        for line in FIGURES:
            terminalreporter.write_line(line)
