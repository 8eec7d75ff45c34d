"""Several primaries against two real PostgreSQL servers: fibs routed to the second one
(``second_database_url``), every other ladder on the first (``database_url``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, func, select, text
from sqlalchemy.engine import Engine

from schemas import InvalidEvent
from tests.conftest import drain, publish
from tests.events import game
from tests.integration.helpers import board
from worker.bootstrap import Runtime
from worker.entrypoints.cli import main as cli
from worker.ladders import load_config
from worker.observability import health
from worker.store import migrate
from worker.store.tables import events, moderation_actions, players

T0 = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=10)


@pytest.fixture
def routed(make_runtime: Callable[..., Any], second_database_url: str) -> Runtime:
    """A migrated runtime whose fibs rows are on the second server."""
    rt: Runtime = make_runtime(database_routes={"fibs": second_database_url})
    for engine in rt.databases.all():
        migrate.upgrade(engine)
    return rt


def mixed(n: int) -> list[dict[str, Any]]:
    """Games of gammon42 and fibs, interleaved."""
    out = []
    for i in range(n):
        when = T0 + timedelta(minutes=i)
        out.append(game(f"g{i % 3}", f"g{(i + 1) % 3}", event_id=f"gm-{i}", ended_at=when))
        out.append(
            game(f"f{i % 3}", f"f{(i + 2) % 3}", ladder="fibs", event_id=f"fb-{i}", ended_at=when)
        )
    return out


def refuse(raw: str | bytes, error: InvalidEvent) -> None:
    raise AssertionError(f"dead-lettered: {error}")


def stored(engine: Engine) -> dict[str, set[str]]:
    """Each ladder's audited event ids on one server."""
    found: dict[str, set[str]] = {}
    with engine.connect() as conn:
        for ladder, event_id in conn.execute(select(events.c.ladder, events.c.event_id)):
            found.setdefault(ladder, set()).add(event_id)
    return found


def run(rt: Runtime, capsys: Any, *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    code = cli.dispatch(rt, cli.parser_for(argv).parse_args(list(argv)))
    return code, capsys.readouterr().out


def ladder(database_url: str, redis_url: str, routes: str, *argv: str) -> tuple[int, str]:
    """The ``ladder`` command in a process of its own (its logging set up as a command's):
    its exit code and standard error."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LADDER_")}
    env.update(DATABASE_URL=database_url, REDIS_URL=redis_url, LADDER_DATABASE_ROUTES=routes)
    done = subprocess.run(
        [sys.executable, "-m", "worker.entrypoints.cli.main", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.returncode, done.stderr


def test_a_mixed_batch_puts_each_ladders_rows_on_its_own_primary_only(routed):
    """One batch of both ladders: fibs's audit rows and players are on the second server
    only, gammon42's on the first only; the outcomes come back in the batch's order."""
    sent = mixed(6)
    outcomes = routed.service.process([json.dumps(e) for e in sent], on_invalid=refuse)
    assert [e["event_id"] for e in sent] == [o.event_id for o in outcomes]
    assert {"rated"} == {o.outcome for o in outcomes}
    first, second = routed.databases.all()
    assert {"gammon42": {f"gm-{i}" for i in range(6)}} == stored(first)
    assert {"fibs": {f"fb-{i}" for i in range(6)}} == stored(second)
    with second.connect() as conn:
        ladders = set(conn.scalars(select(players.c.ladder).distinct()))
    assert {"fibs"} == ladders
    assert {"f0", "f1", "f2"} == set(board(routed, "fibs"))
    assert {"g0", "g1", "g2"} == set(board(routed, "gammon42"))


def test_a_batch_tried_again_applies_nothing_twice_on_either_primary(routed):
    """The second attempt of a batch finds every event of both primaries a duplicate."""
    raws = [json.dumps(e) for e in mixed(4)]
    routed.service.process(raws, on_invalid=refuse)
    before = {name: board(routed, name) for name in ("gammon42", "fibs")}
    again = routed.service.process(raws, on_invalid=refuse)
    assert {"duplicate"} == {o.outcome for o in again}
    assert before == {name: board(routed, name) for name in ("gammon42", "fibs")}
    first, second = routed.databases.all()
    with first.connect() as a, second.connect() as b:
        assert (4, 4) == (
            a.scalar(select(func.count()).select_from(events)),
            b.scalar(select(func.count()).select_from(events)),
        )


def test_verify_rebuild_void_and_export_read_the_routed_ladders_primary(routed, capsys):
    """Each operation on fibs finds fibs's rows on the second server."""
    publish(routed, *mixed(5))
    drain(routed)
    code, out = run(routed, capsys, "verify", "--json")
    assert 0 == code
    shown = json.loads(out)["ladders"]
    assert (5, 5) == (shown["fibs"]["events"], shown["gammon42"]["events"])
    boards = board(routed, "fibs")
    routed.leaderboard_redis.delete("ladder:{fibs}:rating")
    assert 0 == run(routed, capsys, "rebuild", "fibs", "--json")[0]
    assert boards == board(routed, "fibs")
    code, out = run(routed, capsys, "void", "fibs", "fb-0", "--reason", "cheating", "--json")
    assert (0, ["fb-0"]) == (code, json.loads(out)["voided"])
    first, second = routed.databases.all()
    with first.connect() as a, second.connect() as b:
        count = select(func.count()).select_from(moderation_actions)
        assert (0, 1) == (a.scalar(count), b.scalar(count))
    assert 0 == run(routed, capsys, "verify", "fibs")[0]
    code, out = run(routed, capsys, "player", "export", "fibs", "f0")
    exported = json.loads(out)["postgresql"]
    assert 0 == code and {"fibs"} == {r["ladder"] for r in exported["events"]}
    assert exported["events"]


def test_migrate_creates_the_schema_on_every_primary(settings, second_database_url, capsys):
    """``ladder migrate`` migrates both servers, one line each, no password shown."""
    rt = Runtime(settings.replace(database_routes={"fibs": second_database_url}))
    try:
        assert [None, None] == [migrate.current(e) for e in rt.databases.all()]
        code, out = run(rt, capsys, "migrate")
        assert 0 == code
        assert [migrate.head()] * 2 == [migrate.current(e) for e in rt.databases.all()]
        lines = out.splitlines()
        assert 2 == len(lines) and all("created the schema" in line for line in lines)
        assert "second-primary" in lines[1] and "second-primary" not in lines[0]
        assert "already at revision" in run(rt, capsys, "migrate")[1]
    finally:
        rt.close()


def test_a_command_stops_on_an_unmigrated_routed_primary(
    database_url, second_database_url, redis_url
):
    """The first server migrated, the routed one not: the command says which, exit 2."""
    engine = create_engine(database_url)
    migrate.upgrade(engine)
    engine.dispose()
    routes = f"fibs={second_database_url}"
    code, said = ladder(database_url, redis_url, routes, "verify")
    assert 2 == code
    assert "is not migrated: run `ladder migrate`" in said
    assert "postgresql://postgres@/ladder?host=" in said  # the second server's socket


def test_the_readiness_check_asks_every_primary(routed):
    """/healthz's checks: one per server, the routed one named by its ladders."""
    checks = {c.name: c.ok for c in health.ready(routed.settings)}
    assert {"database": True, "database:fibs": True} == {
        k: v for k, v in checks.items() if k.startswith("database")
    }
    second = routed.databases.for_ladder("fibs")
    with second.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = 'old'"))
    checks = {c.name: c.ok for c in health.ready(routed.settings)}
    assert (True, False) == (checks["database"], checks["database:fibs"])


def test_an_unreachable_routed_primary_is_one_line_without_its_password(database_url, redis_url):
    """A routed server that refuses connections: one line, exit 1, the password not shown."""
    engine = create_engine(database_url)
    migrate.upgrade(engine)
    engine.dispose()
    routes = "fibs=postgresql://u:hunter2@127.0.0.1:1/x"
    code, said = ladder(database_url, redis_url, routes, "verify", "fibs")
    assert 1 == code
    assert said.startswith("ladder: a database failed: ") and 1 == said.count("\n")
    assert "hunter2" not in said and "127.0.0.1" in said


def test_a_ladders_database_key_routes_it_as_the_variable_does(
    settings, second_database_url, tmp_path
):
    """``database = "FIBS_DATABASE_URL"`` in the fibs table: fibs's rows on that server."""
    text_ = Path(load_config().path).read_text(encoding="utf-8")
    routed_toml = text_.replace(
        "[ladders.fibs]\n", '[ladders.fibs]\ndatabase = "FIBS_DATABASE_URL"\n'
    )
    assert routed_toml != text_
    path = tmp_path / "ladders.toml"
    path.write_text(routed_toml, encoding="utf-8")
    rt = Runtime(
        settings.replace(ladder_config=path), environ={"FIBS_DATABASE_URL": second_database_url}
    )
    try:
        for engine in rt.databases.all():
            migrate.upgrade(engine)
        sent = mixed(2)
        rt.service.process([json.dumps(e) for e in sent], on_invalid=refuse)
        first, second = rt.databases.all()
        assert ({"gammon42"}, {"fibs"}) == (set(stored(first)), set(stored(second)))
    finally:
        rt.close()
