"""Outages and stops: PostgreSQL or Redis away mid-run, a worker stopped with SIGTERM.

The machine's PostgreSQL and Redis are shared with other test runs, so an outage is made by
pointing the worker at a small TCP proxy on a loopback port and cutting that proxy.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
import structlog.testing
from rq.job import Job
from rq.registry import ScheduledJobRegistry
from sqlalchemy.engine import make_url

from tests.conftest import drain, publish
from tests.events import game, player_updated
from tests.integration.helpers import audit, ledger
from worker import keys
from worker.entrypoints.worker import batches as jobs
from worker.ops import reconcile


class Proxy:
    """Forwards a loopback port to ``target`` (a host and port, or a Unix socket's path);
    ``cut`` drops every connection and refuses new ones until ``restore``."""

    def __init__(self, target: tuple[str, int] | str) -> None:
        self.target = target
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.up = True
        self.accepted_while_cut = 0
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            if not self.up:
                self.accepted_while_cut += 1
                client.close()
                continue
            try:
                upstream = _connect(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open += [client, upstream]
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(src, dst), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def cut(self) -> None:
        self.up = False
        with self._lock:
            for s in self._open:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()
            self._open.clear()

    def restore(self) -> None:
        self.up = True

    def close(self) -> None:
        self.cut()
        self.server.close()


def _connect(target: tuple[str, int] | str) -> socket.socket:
    if isinstance(target, str):
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        upstream.settimeout(5)
        upstream.connect(target)
    else:
        upstream = socket.create_connection(target, timeout=5)
    upstream.settimeout(None)
    return upstream


@pytest.fixture
def make_proxy() -> Iterator[Callable[[tuple[str, int] | str], Proxy]]:
    proxies: list[Proxy] = []

    def make(target: tuple[str, int] | str) -> Proxy:
        proxy = Proxy(target)
        proxies.append(proxy)
        return proxy

    yield make
    for proxy in proxies:
        proxy.close()


def _through(url: str, port: int) -> str:
    """``url`` with its host and port replaced by the proxy's."""
    if url.startswith("redis"):
        parts = urlsplit(url)
        return urlunsplit(parts._replace(netloc=f"127.0.0.1:{port}"))
    parsed = make_url(url).difference_update_query(["host", "port"])
    return parsed.set(host="127.0.0.1", port=port).render_as_string(hide_password=False)


def _target(url: str, default_port: int) -> tuple[str, int] | str:
    """Where ``url``'s server listens: a host and port, or the Unix socket a PostgreSQL URL
    names by its ``host`` parameter (the embedded PostgreSQL listens on a socket only)."""
    if url.startswith("redis"):
        parts = urlsplit(url)
        return parts.hostname or "127.0.0.1", parts.port or default_port
    parsed = make_url(url)
    directory = parsed.query.get("host")
    if isinstance(directory, str) and directory.startswith("/"):
        port = parsed.query.get("port") or parsed.port or default_port
        return f"{directory}/.s.PGSQL.{port}"
    return parsed.host or "127.0.0.1", parsed.port or default_port


def _after(
    condition: Callable[[], bool], action: Callable[[], None], timeout: float = 30.0
) -> threading.Thread:
    """In the background: once ``condition`` holds (or after ``timeout``), run ``action``."""

    def run() -> None:
        deadline = time.monotonic() + timeout
        while not condition() and time.monotonic() < deadline:
            time.sleep(0.05)
        action()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _clean(rt: Any, ladder: str) -> bool:
    return reconcile.check(rt.engine, rt.leaderboard_redis, rt.config.ladders[ladder]).clean


def test_postgresql_away_mid_run_the_batch_is_held_and_applied_once_after_it_returns(
    runtime, make_runtime, make_proxy
):
    """PostgreSQL cut: "A transient failure never dead-letters an event": the worker keeps
    the batch and tries it again until the store is back; then all are applied once."""
    proxy = make_proxy(_target(runtime.settings.database_url, 5432))
    changes = {"database_url": _through(runtime.settings.database_url, proxy.port)}
    rt = make_runtime(**changes)
    publish(rt, game("alice", "bob", event_id="g-1"))
    drain(rt)
    proxy.cut()
    publish(rt, game("alice", "carol", event_id="g-2"), game("bob", "dave", event_id="g-3"))
    restorer = _after(lambda: proxy.accepted_while_cut >= 3, proxy.restore)
    drain(rt)  # holds the batch through the outage, applies it after the restore
    restorer.join(timeout=5)
    assert proxy.accepted_while_cut >= 3, "the worker never noticed the outage"
    assert ["g-1", "g-2", "g-3"] == sorted(row["event_id"] for row in audit(rt))
    assert [] == rt.dead_letters.list()
    assert 0 == ScheduledJobRegistry(queue=rt.inbox.queue).count
    assert [1, 2, 2, 1] == [
        len(ledger(rt, "gammon42", p)) for p in ("carol", "alice", "bob", "dave")
    ]
    assert _clean(rt, "gammon42")


def test_postgresql_away_longer_than_every_retry_dead_letters_nothing(
    runtime, make_runtime, make_proxy, monkeypatch
):
    """An outage outlasting RQ's whole retry budget (five retries, no back-off in tests)
    dead-letters nothing, logs one warning when the store is lost and one when it is back."""
    proxy = make_proxy(_target(runtime.settings.database_url, 5432))
    changes = {"database_url": _through(runtime.settings.database_url, proxy.port)}
    rt = make_runtime(**changes)
    events = [player_updated("gammon42", p, True, True) for p in ("alice", "bob")]
    lines: list[Any] = []
    monkeypatch.setattr(jobs, "OUTAGE_BACKOFF_FIRST_SECONDS", 0.1)
    monkeypatch.setattr(jobs, "OUTAGE_BACKOFF_MAX_SECONDS", 0.5)
    try:
        proxy.cut()
        publish(rt, *events)
        restorer = _after(lambda: proxy.accepted_while_cut >= 8, proxy.restore, timeout=60)
        with structlog.testing.capture_logs() as lines:
            drain(rt)
        restorer.join(timeout=5)
        assert proxy.accepted_while_cut >= 8
        assert [] == rt.dead_letters.list()
        assert sorted(e["event_id"] for e in events) == sorted(r["event_id"] for r in audit(rt))
        lost = [line for line in lines if line["event"] == "store_unavailable"]
        back = [line for line in lines if line["event"] == "store_available"]
        assert [("postgresql", "warning")] == [(x["store"], x["log_level"]) for x in lost]
        assert ["postgresql"] == [x["store"] for x in back]
        assert back[0]["outage_seconds"] > 0
    finally:
        rt.close()


def test_leaderboard_redis_away_after_the_commit_is_held_and_projected(
    runtime, make_runtime, make_proxy
):
    """Redis (the leaderboards) cut after PostgreSQL committed: the held batch re-projects."""
    proxy = make_proxy(_target(runtime.settings.redis_url, 6379))
    changes = {"leaderboard_redis_url": _through(runtime.settings.redis_url, proxy.port)}
    rt = make_runtime(**changes)
    proxy.cut()
    publish(rt, game("alice", "bob", event_id="g-1"))
    restorer = _after(lambda: proxy.accepted_while_cut >= 2, proxy.restore)
    drain(rt)
    restorer.join(timeout=5)
    assert [("g-1", "rated")] == [(r["event_id"], r["outcome"]) for r in audit(rt)]
    assert {b"alice": 1516.0, b"bob": 1484.0} == dict(
        runtime.redis.zrange(keys.rating("gammon42"), 0, -1, withscores=True)
    )
    assert 1 == len(ledger(rt, "gammon42", "alice"))
    assert [] == rt.dead_letters.list()


# -- SIGTERM --------------------------------------------------------------------------------


def _pending(rt: Any) -> int:
    """Events published but not applied: inbox, staging lists and queued batch jobs."""
    waiting = int(rt.redis.llen(keys.INBOX))
    for batch in rt.redis.zrange(keys.STAGING_INDEX, 0, -1):
        waiting += int(rt.redis.llen(keys.staging(batch.decode())))
    queued = list(rt.inbox.queue.get_job_ids())
    # a dequeue interrupted by the stop leaves its batch in RQ's intermediate queue, from
    # where the next worker's maintenance enqueues it again
    queued += [i.decode() for i in rt.redis.lrange(rt.inbox.queue.intermediate_queue_key, 0, -1)]
    for job in Job.fetch_many(queued, connection=rt.redis):
        waiting += len(job.args[0]) if job is not None and job.args else 0
    return waiting


def test_sigterm_lets_the_batch_in_hand_finish_and_leaves_the_rest_queued(runtime):
    """``ladder worker`` stops on SIGTERM with status 0; nothing is lost or half-applied."""
    env = {
        **os.environ,
        "REDIS_URL": runtime.settings.redis_url,
        "DATABASE_URL": runtime.settings.database_url,
        "LADDER_BATCH_SIZE": "5",
    }
    ladder_bin = Path(sys.executable).with_name("ladder")
    worker = subprocess.Popen(
        [str(ladder_bin), "--log-level", "WARNING", "worker"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        total = 200
        publish(runtime, *(game(f"w{i}", f"l{i}", event_id=f"g-{i}") for i in range(total)))
        deadline = time.monotonic() + 60
        while not audit(runtime) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert audit(runtime), "the worker applied nothing"
        worker.send_signal(signal.SIGTERM)
        _, err = worker.communicate(timeout=60)
        assert 0 == worker.returncode, err
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()

    applied = len(audit(runtime))
    assert total == applied + _pending(runtime)
    assert _clean(runtime, "gammon42"), "an applied event is missing from the leaderboard"
    drain(runtime)
    rows = audit(runtime)
    assert total == len(rows) == len({r["event_id"] for r in rows})
    assert _clean(runtime, "gammon42")
