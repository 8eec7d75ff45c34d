"""deploy/SECURITY.md's PostgreSQL roles, run as written.

The page's SQL blocks run with the role and schema names made this test's own: the block
before ``ladder migrate``, the migration as the owner, then the block after it. Every command
the page gives a role then runs as that role (the user in ``DATABASE_URL``, the role's own
``search_path``), so a table a command reads or writes that the page forgot to grant fails
here: the owner's migration and archive; the worker's burst worker (months made ahead by the
owner's migration, as the page says), the operator commands, import, the erasure; the reader's
``ladder serve`` history reads. A role is also shown refused what the page says it may not do.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from redis import Redis
from sqlalchemy.engine import make_url

from tests.e2e.conftest import Cli
from tests.e2e.private import LADDER, ladder_serve, wait_for
from tests.events import game
from tests.ladders import ladder, with_shipped
from worker import keys
from worker.sample import sample

ROOT = Path(__file__).resolve().parents[2]
ROLES = ("ladder_owner", "ladder_worker", "ladder_reader")


def blocks() -> list[str]:
    """The SQL blocks of the page's PostgreSQL section, in order."""
    page = (ROOT / "deploy" / "SECURITY.md").read_text(encoding="utf-8")
    section = page[page.index("\n## PostgreSQL") :]
    section = section[: section.index("\n## ", 1)]
    return re.findall(r"```sql\n(.*?)```", section, re.S)


class Roles:
    def __init__(self, base_url: str, tag: str) -> None:
        self.base = make_url(base_url)
        self.names = {role: f"{role}_{tag}" for role in ROLES}
        self.schema = f"ladder_{tag}"

    def mine(self, sql: str) -> str:
        for role, name in self.names.items():
            sql = re.sub(rf"\b{role}\b", name, sql)
        return re.sub(r"\bSCHEMA ladder\b|search_path = ladder\b", self._schema, sql)

    def _schema(self, found: re.Match[str]) -> str:
        return found.group(0).removesuffix("ladder") + self.schema

    def admin(self, sql: str) -> None:
        with psycopg.connect(self._plain(self.base), autocommit=True) as conn:
            conn.execute(sql)  # the page's text: several statements

    def url(self, role: str) -> str:
        return self.base.set(username=self.names[role], password="unused").render_as_string(
            hide_password=False
        )

    def plain(self, role: str) -> str:
        """The role's URL as psycopg takes it."""
        return self._plain(make_url(self.url(role)))

    @staticmethod
    def _plain(url: Any) -> str:
        return str(url.set(drivername="postgresql").render_as_string(hide_password=False))


@pytest.fixture
def roles(base_database_url: str) -> Iterator[Roles]:
    made = Roles(base_database_url, uuid.uuid4().hex[:10])
    try:
        yield made
    finally:
        drops = [f'DROP SCHEMA IF EXISTS "{made.schema}" CASCADE']
        for name in made.names.values():
            drops += [
                f"DO $$ BEGIN IF EXISTS (SELECT FROM pg_roles WHERE rolname = '{name}') THEN "
                f"EXECUTE 'DROP OWNED BY \"{name}\" CASCADE'; EXECUTE 'DROP ROLE \"{name}\"'; "
                "END IF; END $$"
            ]
        made.admin(";\n".join(drops))


@pytest.mark.long
def test_each_role_runs_what_the_page_gives_it_and_nothing_more(roles, redis_url, tmp_path):
    # The shipped ladders and one that switches to glicko2 half an hour ago (for ``rerate``).
    switch = datetime.now(UTC) - timedelta(minutes=30)
    switched = {"version": "g-1", "ruleset": "glicko2", "effective_from": switch}
    club = ladder("club", "gammon42", {"version": "1.3.1"}, switched)
    config = str(with_shipped(tmp_path, club))
    # The owner migrates two months ago too: the sample below is scored then.
    owner, worker, reader = _migrated(roles, redis_url, LADDER_CONFIG=config, back="-60d")

    inbox = Redis.from_url(redis_url)
    old = list(sample(42, now=datetime.now(UTC) - timedelta(days=60)))
    inbox.rpush(keys.INBOX, *(json.dumps(e) for e in old), '{"type": "game.finished", cut')
    worker.ladder("worker", "--burst", faked="-60d")
    archived = owner.ladder("archive", "--before", datetime.now(UTC).strftime("%Y-%m")).stdout
    assert "detached 4 tables: archived_events_" in archived  # two months, two tables each

    recent = [game("alice", "bob", event_id=f"r-{i}") for i in range(1, 5)]
    recent.append(game("carol", "alice", event_id="r-5"))
    recent.append({"event_id": "bad-1", "ladder": "gammon42", "type": "game"})  # a dead letter
    earlier = datetime.now(UTC) - timedelta(hours=1)  # scored by gammon42, then rerated
    recent += [game("dan", "erin", ladder="club", event_id="c-1", ended_at=earlier)]
    recent += [game("erin", "dan", ladder="club", event_id="c-2")]
    inbox.rpush(keys.INBOX, *(json.dumps(e) for e in recent))
    worker.ladder("worker", "--burst")
    worker.ladder("health", "--ready")
    verified = worker.ladder_json("verify")
    assert {"gammon42", "fibs", "prostriker"} <= set(verified["ladders"])
    assert all(not found["mismatches"] for found in verified["ladders"].values()), verified

    players = tmp_path / "players.jsonl"
    players.write_text('{"player_id": "imported-1", "rating": 1612}\n', encoding="utf-8")
    for command in (
        ["import", "gammon42", str(players)],
        ["export", "gammon42"],
        ["history", "gammon42", "alice"],
        ["event", "gammon42", "r-1"],
        ["player", "gammon42", "alice"],
        ["reconcile", "gammon42"],
        ["rebuild", "gammon42"],
        ["dlq", "list"],
        ["dlq", "replay", "--all"],
        ["dlq", "discard", "--all", "--yes"],
        ["void", "gammon42", "r-2", "--reason", "test"],
        ["adjust", "gammon42", "bob", "--delta", "5", "--reason", "test"],
        ["ban", "gammon42", "carol", "--reason", "test"],
        ["unban", "gammon42", "carol", "--reason", "test"],
        ["rerate", "club", "--reason", "test"],
        ["season", "close", "gammon42", "--name", "S1"],
        ["season", "list", "gammon42"],
        ["calibrate", "gammon42"],
        ["backtest", "gammon42", "--set", "divisor=1600"],
        ["player", "export", "gammon42", "bob"],
        ["player", "erase", "gammon42", "bob", "--yes", "--by", "test"],
        ["verify"],
    ):
        worker.ladder(*command)

    # Two more dead letters, the older moved to PostgreSQL (one kept in Redis), its receipt's
    # Redis copy gone (expired): the API builds it from the PostgreSQL archive.
    bad = [{"event_id": f"bad-{n}", "ladder": "gammon42", "type": "game"} for n in (2, 3)]
    for event in bad:
        inbox.rpush(keys.INBOX, json.dumps(event))
        Cli({**worker.env, "LADDER_DLQ_MAX": "1"}).ladder("worker", "--burst")
    inbox.delete(keys.receipt("bad-2"))
    with psycopg.connect(roles.plain("ladder_owner")) as conn:
        letters = conn.execute("SELECT event_id FROM dead_letters").fetchall()
    assert ("bad-2",) in letters  # (bad-1, replayed above and refused again, is there too)

    tokens = "ops:reader-token-0123456789:boards|history|export"
    said: list[str] = []
    answers = {}
    with ladder_serve({**reader.env, "LADDER_API_TOKENS": tokens}, log=said) as base:
        for path in (
            "/ladders/gammon42/top",
            "/ladders/gammon42/players/alice/history",
            "/ladders/gammon42/players/g-player-00/history",  # scored in an archived month
            "/ladders/gammon42/events/r-1",
            "/ladders/gammon42/events/r-2",  # voided
            "/ladders/gammon42/events/bad-1",  # replayed, refused again
            "/ladders/gammon42/events/bad-2",  # built from the dead letter in PostgreSQL
        ):
            asked = urllib.request.Request(
                base + path, headers={"Authorization": "Bearer reader-token-0123456789"}
            )
            try:
                with urllib.request.urlopen(asked, timeout=10) as answer:
                    answers[path] = json.loads(answer.read())
            except urllib.error.HTTPError as refused:
                refused.close()
                answers[path] = refused.code
    assert all(isinstance(a, dict | list) for a in answers.values()), (answers, said)
    assert "voided" == answers["/ladders/gammon42/events/r-2"]["outcome"]
    assert "dead_lettered" == answers["/ladders/gammon42/events/bad-1"]["outcome"]
    assert "dead_lettered" == answers["/ladders/gammon42/events/bad-2"]["outcome"]

    # What the page keeps from each role.
    forbidden = {
        "ladder_worker": ("DELETE FROM events", "DROP TABLE players", "CREATE TABLE t (i int)"),
        "ladder_reader": (
            "SELECT * FROM links",
            "SELECT * FROM imported_players",
            "UPDATE players SET rating = 0",
        ),
    }
    for role, statements in forbidden.items():
        with psycopg.connect(roles.plain(role)) as conn:
            for sql in statements:
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    conn.execute(sql)
                conn.rollback()


@pytest.mark.long
def test_a_grant_the_worker_lacks_holds_its_batch_until_it_is_given(roles, redis_url, tmp_path):
    """A store refusing the worker's role is no event's fault: the batch is held, as through
    an outage, with one warning naming the refusal; nothing is dead-lettered; once the grant
    is given the same batch is scored."""
    _, worker, _ = _migrated(roles, redis_url)
    roles.admin(roles.mine("SET search_path = ladder; REVOKE UPDATE ON players FROM ladder_worker"))
    Redis.from_url(redis_url).rpush(
        keys.INBOX, *(json.dumps(game("ann", "ben", event_id=f"h-{i}")) for i in range(3))
    )
    log = tmp_path / "worker.log"
    with log.open("w") as out:
        running = subprocess.Popen([LADDER, "worker"], env=worker.env, stdout=out, stderr=out)

    def tail() -> str:
        return log.read_text()[-3000:]

    try:
        wait_for(lambda: "permission denied for table players" in log.read_text(), 60, said=tail)
        assert [] == worker.ladder_json("dlq", "list")
        assert 0 == _stored(roles)
        roles.admin(
            roles.mine("SET search_path = ladder; GRANT UPDATE ON players TO ladder_worker")
        )
        wait_for(lambda: _stored(roles) == 3, 60, said=tail)
    finally:
        running.terminate()
        running.wait(timeout=60)
    said = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    assert 1 == sum(line["event"] == "store_unavailable" for line in said)
    assert not [line for line in said if line.get("outcome") == "dead_lettered"]
    assert [] == worker.ladder_json("dlq", "list")


@pytest.mark.long
def test_a_command_the_role_lacks_a_grant_for_fails_in_one_line(roles, redis_url, tmp_path):
    """An operator command refused a table says so in one line naming the table, whether
    SQLAlchemy or the command's own psycopg connection (``ladder import``'s COPY) met it."""
    _, worker, _ = _migrated(roles, redis_url)
    revoke = "REVOKE UPDATE ON ladder_imports, ladder_writes FROM ladder_worker"
    roles.admin(roles.mine(f"SET search_path = ladder; {revoke}"))
    players = tmp_path / "players.jsonl"
    players.write_text('{"player_id": "imported-1", "rating": 1612}\n', encoding="utf-8")
    for command, table in (
        (["import", "gammon42", str(players)], "ladder_imports"),
        (["season", "close", "gammon42", "--name", "S1"], "ladder_writes"),
    ):
        done = worker.ladder(*command, check=False)
        said = [line for line in done.stderr.splitlines() if not line.startswith("{")]
        assert 1 == done.returncode, done.stderr
        where = roles.url("ladder_worker").replace(":unused@", ":***@").replace("+psycopg", "")
        assert [f"ladder: the database at {where} failed: permission denied for table {table}"] == [
            line for line in said if line.startswith("ladder: ")
        ], done.stderr
        assert "Traceback" not in done.stderr


def _migrated(roles: Roles, redis_url: str, back: str | None = None, **env: str) -> list[Cli]:
    """The page's block before the migration, ``ladder migrate`` as the owner (``back``: under
    ``faketime`` that far back first, then now), the block after it; a command line for each
    role (owner, worker, reader), with ``env`` besides."""
    before, after = blocks()
    roles.admin(roles.mine(before))
    base = {k: v for k, v in os.environ.items() if not k.startswith("LADDER_")}
    base.update(REDIS_URL=redis_url, **env)
    owner, worker, reader = (Cli({**base, "DATABASE_URL": roles.url(role)}) for role in ROLES)
    if back is not None:
        owner.ladder("migrate", faked=back)
    owner.ladder("migrate")
    roles.admin(roles.mine(after))
    return [owner, worker, reader]


def _stored(roles: Roles) -> int:
    with psycopg.connect(roles.plain("ladder_owner")) as conn:
        found = conn.execute("SELECT count(*) FROM events").fetchone()
    return int(found[0]) if found else 0
