"""A player's history after ``ladder archive``: the readers say where it begins.

The rows before the ladder's boundary have left the log; ``ladder history``, ``ladder player``
and the console's player page read the months left and show "history before YYYY-MM
archived on DATE" for a player whose history began before the boundary.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

from starlette.testclient import TestClient

from tests.conftest import drain, publish
from tests.events import game
from tests.integration.helpers import EVERYONE
from tests.integration.test_archive import _Clock, _lived
from tests.integration.test_moderation import ladder
from worker.entrypoints.api.app import create_app
from worker.ops.archiving import archive
from worker.store import history

MADE = datetime(2026, 12, 2, 9, tzinfo=UTC)
NOTE = "history before 2026-11 archived on 2026-12-02"


def test_history_readers_say_the_months_archived(runtime, monkeypatch, capsys):
    _lived(runtime, _Clock(monkeypatch))
    publish(runtime, game("newcomer", "other", ladder="gammon42"))
    drain(runtime)
    assert history.archived(runtime.engine, "gammon42", "p1") is None  # nothing archived yet
    archive(runtime.engine, runtime.config, date(2026, 11, 1), now=MADE)
    found = history.archived(runtime.engine, "gammon42", "p1")
    assert found is not None and NOTE == found.note()
    # A player whose history is all in the log is told nothing.
    assert history.archived(runtime.engine, "gammon42", "newcomer") is None

    capsys.readouterr()
    assert 0 == ladder(runtime, "history", "gammon42", "p1")
    shown = capsys.readouterr().out
    assert f"({NOTE})" in shown.splitlines()[-1]
    assert 0 == ladder(runtime, "history", "gammon42", "newcomer")
    assert "archived" not in capsys.readouterr().out
    assert 0 == ladder(runtime, "player", "gammon42", "p1")
    assert ["history", *NOTE.split()] == capsys.readouterr().out.splitlines()[-1].split()

    app = create_app(runtime.config, runtime.leaderboard_redis, runtime.engine, access=EVERYONE)
    with TestClient(app, raise_server_exceptions=False) as client:
        page = client.get("/ui/ladders/gammon42/players/p1")
        assert 200 == page.status_code
        assert NOTE.capitalize() in page.text
        other = client.get("/ui/ladders/gammon42/players/newcomer")
        assert 200 == other.status_code and "archived on" not in other.text
