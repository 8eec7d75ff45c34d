"""Schemathesis against a real ``ladder serve``: the generated OpenAPI document is the contract."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from tests.conftest import drain, publish
from tests.e2e.private import free_port
from tests.events import game
from worker.ops import seasons

BIN = Path(sys.executable).parent
CONFIG = Path(__file__).with_name("schemathesis.toml")


def _serve(runtime: Any) -> tuple[subprocess.Popen[bytes], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LADDER_")}
    env.update(
        {"REDIS_URL": runtime.settings.redis_url, "DATABASE_URL": runtime.settings.database_url}
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


def test_ladder_serve_passes_every_schemathesis_check(runtime, tmp_path):
    """`schemathesis run --checks all` against `ladder serve`, over drained games and a season:
    documented statuses and bodies only, schema-valid input accepted, invalid input refused,
    never a 500."""
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
        result = subprocess.run(
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
            ],
            capture_output=True,
            text=True,
            timeout=240,
            cwd=tmp_path,
        )
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    assert 0 == result.returncode, result.stdout[-6000:] + result.stderr[-2000:]
