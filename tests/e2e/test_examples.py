"""The example game servers (examples/node, examples/python, examples/go) get their receipts
from a real worker, retry safely and give up in bounded time, and build a 1v1 win, a draw or a
team game (``SHAPE``) that the contract accepts.

Node.js and Go are required: without them these tests fail (it is how CI shows the examples
work). Issue 36: "The example must build the event once, retry the same bytes, and give up
with a clear message after a bounded time."
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from schemas import GameFinished, parse_event
from tests.e2e.conftest import Cli

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
LANGUAGES = ("node", "python", "go")
UNREACHABLE_REDIS = "redis://127.0.0.1:1/0"


def node_command() -> list[str]:
    node = shutil.which("node")
    assert node is not None, "Node.js is required: the example must run in CI"
    if not (EXAMPLES / "node" / "node_modules" / "redis").is_dir():
        npm = shutil.which("npm")
        assert npm is not None, "npm is required for the Node.js example"
        subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"], cwd=EXAMPLES / "node", check=True, timeout=300
        )
    return [node, str(EXAMPLES / "node" / "game-server.js")]


@pytest.fixture(scope="session")
def go_binary(tmp_path_factory: pytest.TempPathFactory) -> str:
    """examples/go built once, offline, against Debian's redigo (see its go.mod)."""
    go = shutil.which("go")
    assert go is not None, "Go is required: the example must run in CI (Debian: golang-go)"
    folder = tmp_path_factory.mktemp("go")
    binary = folder / "game-server"
    env = {
        **os.environ,
        "GOPROXY": "off",
        "GOFLAGS": "-mod=mod",
        "GOCACHE": str(folder / "cache"),
        "GOPATH": str(folder / "gopath"),
    }
    built = subprocess.run(
        [go, "build", "-o", str(binary), "."],
        cwd=EXAMPLES / "go",
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr
    return str(binary)


@pytest.fixture(params=LANGUAGES)
def server(request: pytest.FixtureRequest) -> list[str]:
    if request.param == "node":
        return node_command()
    if request.param == "python":
        return [sys.executable, str(EXAMPLES / "python" / "game_server.py")]
    return [request.getfixturevalue("go_binary")]


def start(command: list[str], env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*command, *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def published_and_scored(cli: Cli, game_server: subprocess.Popen[str]) -> tuple[dict, str]:
    """Wait for the event on the inbox, drain it with a burst worker, return the receipt."""
    deadline = time.monotonic() + 60
    while cli.redis_cli("LLEN", "ladder:inbox").strip() != "1":
        assert game_server.poll() is None, game_server.communicate()
        assert time.monotonic() < deadline, "the game server published nothing"
        time.sleep(0.05)
    cli.ladder("worker", "--burst")
    out, err = game_server.communicate(timeout=60)
    assert game_server.returncode == 0, err
    return json.loads(out), err


def test_the_game_server_publishes_once_and_a_second_run_is_a_duplicate(
    cli: Cli, server: list[str], tmp_path: Path
) -> None:
    """The receipt comes by BLPOP from a real worker; running it again with the same event id
    sends the same bytes, so the second receipt is `duplicate` with the original's numbers
    (the Node example built a new ended_at each run: event_id_conflict, exit 1)."""
    env = {
        **cli.env,
        "RECEIPT_TIMEOUT": "60",
        "WINNER": "nia",
        "LOSER": "ole",
        "OUTBOX": str(tmp_path / "outbox"),
    }
    first, err = published_and_scored(cli, start(server, env, "ex-g-1"))
    assert first == json.loads(cli.redis_cli("GET", "ladder:receipt:ex-g-1"))
    assert (first["event_id"], first["outcome"]) == ("ex-g-1", "rated")
    assert [p["player_id"] for p in first["players"]] == ["nia", "ole"]
    assert cli.ladder_json("event", "gammon42", "ex-g-1") == first
    assert "nia 1500 -> " in err
    time.sleep(1.1)  # a clock that moved on changes nothing: the event was built once
    again, err = published_and_scored(cli, start(server, env, "ex-g-1"))
    assert (again["outcome"], again["original_outcome"]) == ("duplicate", "rated")
    assert [p["rating_after"] for p in again["players"]] == [
        p["rating_after"] for p in first["players"]
    ]
    assert [] == cli.ladder_json("dlq", "list")
    assert "ex-g-1 duplicate" in err


def test_the_game_server_gives_up_in_bounded_time_when_redis_is_unreachable(
    cli: Cli, server: list[str], tmp_path: Path
) -> None:
    """Redis unreachable: it retries the same bytes, then gives up after PUBLISH_TIMEOUT with
    one clear line and exit 2, keeping the event; run again once Redis is back, it sends that
    same event (the Node example printed ECONNREFUSED forever)."""
    outbox = tmp_path / "outbox"
    env = {**cli.env, "REDIS_URL": UNREACHABLE_REDIS, "PUBLISH_TIMEOUT": "2", "OUTBOX": str(outbox)}
    started = time.monotonic()
    done = subprocess.run([*server, "ex-away"], env=env, capture_output=True, text=True, timeout=60)
    assert time.monotonic() - started < 30
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("game-server: gave up publishing ex-away after 2 s: Redis at ")
    assert "run again with the same event_id" in line
    (kept,) = outbox.iterdir()
    text = kept.read_text(encoding="utf-8")
    back = {**env, "REDIS_URL": cli.env["REDIS_URL"], "RECEIPT_TIMEOUT": "60"}
    receipt, _ = published_and_scored(cli, start(server, back, "ex-away"))
    assert receipt["outcome"] == "rated"
    stored = cli.ladder_json("event", "gammon42", "ex-away")
    assert stored["outcome"] == "rated"
    assert json.loads(text)["event_id"] == "ex-away"


def test_the_game_server_exits_1_when_no_receipt_comes(
    cli: Cli, server: list[str], tmp_path: Path
) -> None:
    """No worker running: the wait ends at RECEIPT_TIMEOUT with exit 1, not a hang."""
    env = {**cli.env, "RECEIPT_TIMEOUT": "0.5", "OUTBOX": str(tmp_path / "outbox")}
    done = subprocess.run([*server, "ex-late"], env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 1
    assert "no receipt for ex-late within 0.5 s" in done.stderr


@pytest.mark.parametrize("shape", ["draw", "teams"])
def test_the_game_server_builds_a_draw_and_a_team_game_the_contract_accepts(
    server: list[str], shape: str, tmp_path: Path
) -> None:
    """SHAPE=draw is the two players' draw, SHAPE=teams the winner's team ranked first with a
    team mate of weight 0.5: the event kept in the outbox (Redis unreachable, so not sent) is
    a valid game of that shape to the worker's own parser."""
    outbox = tmp_path / "outbox"
    env = {
        **os.environ,
        "REDIS_URL": UNREACHABLE_REDIS,
        "PUBLISH_TIMEOUT": "0.2",
        "OUTBOX": str(outbox),
        "SHAPE": shape,
        "WINNER": "nia",
        "LOSER": "ole",
    }
    done = subprocess.run(
        [*server, f"ex-{shape}"], env=env, capture_output=True, text=True, timeout=60
    )
    assert 2 == done.returncode, done.stderr
    (kept,) = outbox.iterdir()
    event = parse_event(kept.read_text(encoding="utf-8"), now=datetime.now(UTC))
    assert isinstance(event, GameFinished)
    assert (None, None) == (event.winner, event.loser)
    if shape == "draw":
        assert event.players is not None
        assert ("draw", ["nia", "ole"]) == (event.result, [p.player_id for p in event.players])
    else:
        assert event.teams is not None
        ranked = [
            (team.rank, [(p.player_id, p.weight) for p in team.players]) for team in event.teams
        ]
        assert [(1, [("nia", 1.0), ("nia-2", 0.5)]), (2, [("ole", 1.0), ("ole-2", 1.0)])] == ranked


def test_the_game_server_refuses_a_shape_it_does_not_know(
    server: list[str], tmp_path: Path
) -> None:
    """SHAPE=final: one line naming the shapes, exit 2, nothing built."""
    env = {**os.environ, "SHAPE": "final", "OUTBOX": str(tmp_path / "outbox")}
    done = subprocess.run([*server, "ex-x"], env=env, capture_output=True, text=True, timeout=60)
    assert (2, ["game-server: SHAPE must be win, draw or teams"]) == (
        done.returncode,
        done.stderr.splitlines(),
    )
    assert not (tmp_path / "outbox").exists()
