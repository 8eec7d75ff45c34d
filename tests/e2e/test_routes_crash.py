"""A worker killed between the commits of a batch's two primaries loses and doubles nothing:
fibs is routed to a second PostgreSQL server, gammon42 stays on the first."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from redis import Redis
from sqlalchemy import create_engine, func, select

from tests.e2e.conftest import Cli
from tests.e2e.invariants import check_stores
from tests.e2e.test_reliability import expected_ids, publish, spawn
from tests.events import game
from worker.store.tables import events


def audited(url: str) -> int:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return int(conn.scalar(select(func.count()).select_from(events)) or 0)
    finally:
        engine.dispose()


def test_a_worker_killed_between_two_primaries_commits_loses_and_doubles_nothing(
    cli, database_url, second_database_url, redis_url
):
    """The first worker commits gammon42's part on the first server and dies before fibs's
    part (``service.between_primaries``); the next worker applies fibs's part once and finds
    gammon42's applied: each event exactly once on its own server, boards equal to it."""
    start = datetime.now(UTC) - timedelta(hours=2)
    sent: list[dict[str, Any]] = []
    for i in range(30):
        when = start + timedelta(minutes=i)
        sent.append(game(f"g{i % 4}", f"g{(i + 1) % 4}", event_id=f"gm-{i}", ended_at=when))
        sent.append(
            game(f"f{i % 4}", f"f{(i + 3) % 4}", ladder="fibs", event_id=f"fb-{i}", ended_at=when)
        )
    routed = Cli({**cli.env, "LADDER_DATABASE_ROUTES": f"fibs={second_database_url}"})
    said = routed.ladder("migrate").stdout.splitlines()  # the first is migrated already
    assert ["already at revision", "created the schema"] == [
        "created the schema" if "created" in line else "already at revision" for line in said
    ]
    redis = Redis.from_url(redis_url)
    try:
        publish(redis, sent)  # one batch: gammon42's part first (its first event is first)
    finally:
        redis.close()
    first = spawn({**routed.env, "LADDER_FAILPOINTS": "service.between_primaries=1"}, "--burst")
    assert -9 == first.wait(timeout=120)  # SIGKILL at the failpoint
    assert (30, 0) == (audited(database_url), audited(second_database_url))
    assert 0 == spawn(routed.env, "--burst").wait(timeout=300)
    gammon = [e for e in sent if e["ladder"] == "gammon42"]
    fibs = [e for e in sent if e["ladder"] == "fibs"]
    check_stores(database_url, redis_url, expected_ids(gammon))
    check_stores(second_database_url, redis_url, expected_ids(fibs))
    assert [] == routed.ladder_json("dlq", "list")
    verified = routed.ladder_json("verify")["ladders"]
    assert (30, 30) == (verified["gammon42"]["events"], verified["fibs"]["events"])
    assert {0} == {report["mismatch_count"] for report in verified.values()}
