"""Schemathesis against a real ``ladder serve``: the generated OpenAPI document is the contract.

It runs twice (SPEC 6, "Access"): anonymously, where the operations that need a token answer
the documented 401, and with a token of every scope, where every operation answers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import drain, publish
from tests.e2e.private import free_port
from tests.events import game
from worker.ops import seasons

BIN = Path(sys.executable).parent
CONFIG = Path(__file__).with_name("schemathesis.toml")
TOKEN = "contract-0123456789abcdef"


def _serve(runtime: Any) -> tuple[subprocess.Popen[bytes], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LADDER_")}
    env.update(
        {
            "REDIS_URL": runtime.settings.redis_url,
            "DATABASE_URL": runtime.settings.database_url,
            "LADDER_API_TOKENS": f"contract:{TOKEN}:boards|history|export|console",
        }
    )
    port = free_port()
    server = subprocess.Popen(
        [str(BIN / "ladder"), "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(base + "/healthz", timeout=2):
                return server, base
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                os.killpg(server.pid, signal.SIGTERM)
                raise
            time.sleep(0.2)


@pytest.mark.long
def test_ladder_serve_passes_every_schemathesis_check(runtime, tmp_path):
    """`schemathesis run --checks all` against `ladder serve`, over drained games and a season:
    documented statuses and bodies only, schema-valid input accepted, invalid input refused,
    never a 500; anonymously (the token-only operations answer 401) and with a token."""
    publish(
        runtime,
        game("alice", "bob", event_id="g-1"),
        game("alice", "carol", event_id="g-2"),
        game("alice", "bob", ladder="prostriker", event_id="p-1"),
        game("dev/ice", "bob", ladder="fibs", event_id="f-1"),
    )
    drain(runtime)
    ladder_config = runtime.config.ladders["gammon42"]
    seasons.close(runtime.engine, runtime.redis, ladder_config, "s0", seasons.Policy("start"))
    server, base = _serve(runtime)
    try:
        runs = {
            who: _schemathesis(base, tmp_path, *headers)
            for who, headers in (
                ("anonymous", ()),
                ("authorised", ("--header", f"Authorization: Bearer {TOKEN}")),
            )
        }
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    for who, result in runs.items():
        assert 0 == result.returncode, who + result.stdout[-6000:] + result.stderr[-2000:]
    # Anonymous: the history and export operations answered only their documented 401.
    assert "4 operations returned only 401/403" in runs["anonymous"].stdout
    assert "Authentication failed" not in runs["authorised"].stdout


def _schemathesis(base: str, cwd: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            str(BIN / "schemathesis"),
            "--config-file",
            str(CONFIG),
            "run",
            f"{base}/openapi.json",
            "--checks",
            "all",
            "--max-examples",
            "25",
            "--seed",
            "1",
            "--no-color",
            "--request-timeout",
            "10",
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=cwd,
    )
