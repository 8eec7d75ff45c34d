"""Receipts over HTTP while the queue's Redis is away.

PostgreSQL is the record: an applied event's receipt is read from it, so it is answered
with Redis down (its ``rank_after`` comes from the Redis copy, a bonus, and is null then). A
dead letter's receipt lives in Redis (its copy, the dead-letter queue) unless archived in
PostgreSQL; with Redis down the answer is 503, "unavailable", never a 500 or a wrong 404.
"""

from __future__ import annotations

from typing import Any

from redis import Redis
from starlette.testclient import TestClient

from tests.conftest import drain, publish
from tests.events import game
from tests.integration.helpers import EVERYONE
from worker.entrypoints.api.app import create_app

AWAY = "redis://127.0.0.1:1/0"


def _client_without_redis(runtime: Any) -> TestClient:
    down = Redis.from_url(AWAY, socket_connect_timeout=0.2, socket_timeout=0.2)
    app = create_app(
        runtime.config, runtime.leaderboard_redis, runtime.engine, down, access=EVERYONE
    )
    return TestClient(app, raise_server_exceptions=False)


def test_an_applied_events_receipt_is_answered_from_postgresql_with_redis_away(runtime):
    """'read from PostgreSQL, so it works after the Redis copy expired': and while Redis
    cannot be reached at all, with rank_after null."""
    publish(runtime, game("alice", "bob", event_id="r-1"))
    drain(runtime)
    with _client_without_redis(runtime) as client:
        answer = client.get("/ladders/gammon42/events/r-1")
    assert 200 == answer.status_code
    shown = answer.json()
    assert ("r-1", "rated") == (shown["event_id"], shown["outcome"])
    assert [None, None] == [p["rank_after"] for p in shown["players"]]


def test_a_dead_letters_receipt_with_redis_away_is_503_not_500_nor_404(runtime):
    """A dead letter kept in Redis cannot be read while Redis is away: 'unavailable'."""
    publish(runtime, game("alice", "bob", event_id="bad-1", cube=3))
    drain(runtime)
    with _client_without_redis(runtime) as client:
        answer = client.get("/ladders/gammon42/events/bad-1")
        unknown = client.get("/ladders/gammon42/events/never-sent")
    assert (503, "no-store") == (answer.status_code, answer.headers["cache-control"])
    assert "redis" in answer.json()["detail"].lower()
    assert 503 == unknown.status_code  # it may be a dead letter in Redis: not a sure 404


def test_ladder_event_with_redis_away_shows_an_applied_receipt_and_one_line_for_the_rest(
    runtime, make_runtime, capsys
):
    """The command reads as the route does: the applied event's receipt from PostgreSQL;
    for anything else one line naming Redis, exit 1, no traceback."""
    import argparse
    import os
    import subprocess
    import sys
    from pathlib import Path

    from worker.entrypoints.cli import receipts as cli_receipts

    publish(runtime, game("alice", "bob", event_id="r-1"))
    drain(runtime)
    away = make_runtime(redis_url=AWAY)
    parser = argparse.ArgumentParser(prog="ladder")
    cli_receipts.register(parser.add_subparsers(dest="command", required=True))
    capsys.readouterr()
    assert 0 == cli_receipts.cmd_event(away, parser.parse_args(["event", "gammon42", "r-1"]))
    assert "r-1" in capsys.readouterr().out
    environ = {**os.environ, "REDIS_URL": AWAY, "DATABASE_URL": runtime.settings.database_url}
    run = subprocess.run(
        [str(Path(sys.executable).with_name("ladder")), "event", "gammon42", "never-sent"],
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert 1 == run.returncode and "Traceback" not in run.stderr
    (line,) = run.stderr.strip().splitlines()
    assert line.startswith("ladder: Redis at redis://127.0.0.1:1/0 failed")
