"""The console's pages through the app itself (no browser): paging, boards, errors.

"/ui/ladders/{ladder} the leaderboard with ranks, ratings (fibs with one
decimal), provisional marks, board switch (rating, public, boosted, seasons), paging, and a
search box for a player"; "Escape everything (player ids are user-chosen)". The browser tests
(tests/e2e/test_console.py) cover what Chromium shows; these cover the paths around it.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

import pytest
from starlette.testclient import TestClient

from tests.conftest import drain, publish
from tests.e2e.console_data import Dom
from tests.events import game
from tests.integration.helpers import EVERYONE
from worker.boards import reader
from worker.entrypoints.api.app import create_app
from worker.ops import seasons

START = datetime(2026, 11, 1, tzinfo=UTC)


@pytest.fixture
def client(runtime: Any) -> Iterator[TestClient]:
    app = create_app(runtime.config, runtime.leaderboard_redis, runtime.engine, access=EVERYONE)
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client


def rows(html: str) -> list[tuple[int, str]]:
    found = Dom(html).root.find("tr", "entry")
    return [(int(r.find("td", "rank")[0].text()), r.find("td", "player")[0].text()) for r in found]


def test_pages_of_25_forwards_and_back(runtime, client):
    """Paging follows the reader's cursors: page two starts at rank 26, and back again."""
    publish(
        runtime,
        *[game(f"w{i:02d}", f"l{i:02d}", ended_at=START + timedelta(minutes=i)) for i in range(30)],
    )
    drain(runtime)
    first = client.get("/ui/ladders/gammon42")
    assert first.status_code == 200 and first.headers["content-type"].startswith("text/html")
    one = rows(first.text)
    board = reader.page(runtime.leaderboard_redis, "gammon42", size=60).entries
    assert one == [(e.rank, e.player_id) for e in board[:25]]
    link = Dom(first.text).root.find("a")
    following = [a.attrs["href"] for a in link if a.attrs.get("rel") == "next"]
    second = client.get(following[0])
    assert rows(second.text) == [(e.rank, e.player_id) for e in board[25:50]]
    back = [
        a.attrs["href"] for a in Dom(second.text).root.find("a") if a.attrs.get("rel") == "prev"
    ]
    assert rows(client.get(back[0]).text) == one


def test_board_switch_lists_public_boosted_and_archived_seasons(runtime, client):
    """The tabs are the boards the ladder keeps, and a closed season's standings."""
    publish(
        runtime,
        game("ann", "ben", ended_at=START),
        game("ann", "cat", ended_at=START + timedelta(hours=1), mode="boosted", cube=4),
        game("dev/ice", "ben", ladder="fibs", ended_at=START, match_length=5),
    )
    drain(runtime)
    seasons.close(
        runtime.engine,
        runtime.redis,
        runtime.config.ladders["gammon42"],
        "s0",
        seasons.Policy("none"),
    )
    tabs = Dom(client.get("/ui/ladders/gammon42").text).root.find("nav", "tabs")[0].find("a")
    assert [t.text() for t in tabs] == ["rating", "boosted", "season:s0"]
    archived = client.get(tabs[2].attrs["href"])
    assert [p for _, p in rows(archived.text)] == ["ann", "ben"]
    boosted = Dom(client.get("/ui/ladders/gammon42?board=boosted").text).root
    assert [r.find("td", "rating")[0].text() for r in boosted.find("tr", "entry")] == ["4"]
    fibs = client.get("/ui/ladders/fibs")
    fibs_tabs = [t.text() for t in Dom(fibs.text).root.find("nav", "tabs")[0].find("a")]
    assert fibs_tabs == ["rating", "public"]
    ratings = [r.find("td", "rating")[0].text() for r in Dom(fibs.text).root.find("tr", "entry")]
    assert all(len(r.split(".")[1]) == 1 for r in ratings)  # SPEC 2.2: one decimal
    assert "provisional" in fibs.text  # experience 5 < 50
    device = client.get(f"/ui/ladders/fibs/players/{quote('dev/ice', safe='')}")
    assert device.status_code == 200
    heading = Dom(device.text).root.find("h1", "player-id")[0]
    assert "".join(heading.parts).strip() == "dev/ice"
    assert heading.find("span", "badge")[0].text() == "provisional"
    assert "5-point match" in device.text


@pytest.mark.parametrize(
    ("path", "status", "says"),
    [
        ("/ui/ladders/nope", 404, "no ladder named &#39;nope&#39;"),
        ("/ui/ladders/gammon42?board=public", 404, "has no public board"),
        ("/ui/ladders/gammon42?board=season:never", 404, "has no season:never board"),
        ("/ui/ladders/gammon42?cursor=junk", 400, "cursor: not a cursor"),
        ("/ui/ladders/gammon42/players/nobody", 404, "no player &#39;nobody&#39;"),
        ("/ui/ladders/gammon42/players/%3Cb%3Ex%3C%2Fb%3E", 404, "&#39;&lt;b&gt;x&lt;/b&gt;&#39;"),
        ("/ui/ladders/nope/calibration", 404, "no ladder named"),
    ],
)
def test_errors_are_pages(client, path, status, says):
    """A mistake is an HTML page with the status the JSON API would give, escaped."""
    answer = client.get(path)
    assert answer.status_code == status
    assert answer.headers["content-type"].startswith("text/html")
    assert says in answer.text
    assert "<b>x</b>" not in answer.text


def test_the_api_document_is_unchanged(client):
    """The console adds no path to /openapi.json, and the JSON routes still answer JSON."""
    from fastapi.routing import APIRoute

    from worker.entrypoints.api.app import ROUTERS

    paths = client.get("/openapi.json").json()["paths"]
    routes = [route for router in ROUTERS for route in router.routes]
    assert sorted(paths) == sorted({r.path for r in routes if isinstance(r, APIRoute)})
    assert "/ladders/{ladder}/top" in paths
    assert not [path for path in paths if path == "/" or path.startswith("/ui")]
    assert client.get("/ladders/nope/top").json()["error"] == "not_found"
