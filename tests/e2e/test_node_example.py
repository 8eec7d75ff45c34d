"""The Node.js example game server (examples/node) gets its receipt from a real worker.

Node.js is required: without it this test fails (it is how CI shows the example works)."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

from tests.e2e.conftest import Cli

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "node"


def node_modules() -> None:
    """`npm ci` from the committed lockfile, when CI has not installed it already."""
    if (EXAMPLE / "node_modules" / "redis").is_dir():
        return
    npm = shutil.which("npm")
    assert npm is not None, "npm is required for the Node.js example"
    subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=EXAMPLE, check=True, timeout=300)


def test_the_node_game_server_publishes_a_game_and_blpops_its_receipt(cli: Cli) -> None:
    """a non-Python game server (npm `redis`) publishes and waits for its receipt."""
    node = shutil.which("node")
    assert node is not None, "Node.js is required: the example must run in CI"
    node_modules()
    env = {**cli.env, "RECEIPT_TIMEOUT": "60", "WINNER": "nia", "LOSER": "ole"}
    server = subprocess.Popen(
        [node, "game-server.js", "node-g-1"],
        cwd=EXAMPLE,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while cli.redis_cli("LLEN", "ladder:inbox").strip() != "1":
        assert server.poll() is None, server.communicate()
        assert time.monotonic() < deadline, "the Node.js server published nothing"
        time.sleep(0.05)
    cli.ladder("worker", "--burst")
    out, err = server.communicate(timeout=60)
    assert server.returncode == 0, err
    receipt = json.loads(out)
    assert receipt == json.loads(cli.redis_cli("GET", "ladder:receipt:node-g-1"))
    assert (receipt["event_id"], receipt["outcome"]) == ("node-g-1", "rated")
    assert [p["player_id"] for p in receipt["players"]] == ["nia", "ole"]
    assert cli.ladder_json("event", "gammon42", "node-g-1") == receipt
    assert "nia 1500 -> " in err


def test_the_node_game_server_exits_1_when_no_receipt_comes(cli: Cli) -> None:
    """No worker running: the wait ends at RECEIPT_TIMEOUT with exit 1, not a hang."""
    node = shutil.which("node")
    assert node is not None, "Node.js is required: the example must run in CI"
    node_modules()
    done = subprocess.run(
        [node, "game-server.js", "node-late"],
        cwd=EXAMPLE,
        env={**cli.env, "RECEIPT_TIMEOUT": "0.5"},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 1
    assert "no receipt for node-late within 0.5 s" in done.stderr
