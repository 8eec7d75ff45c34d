"""The web console in a real browser: headless Chromium against ``ladder serve``.

"tests drive headless Chromium (Debian's chromium package) against ladder
serve: the leaderboard page shows the right players in rank order, the player page's chart has
one point per rated game, the calibration page shows the buckets, a player id with <script>
in it is shown as text. Take screenshots in the test run and look at them."

Chromium runs as ``chromium --headless --dump-dom`` (the DOM the browser built, after parsing,
with no JavaScript of ours since the pages have none) and ``--screenshot``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.e2e.console_data import SCRIPT_ID, Dom, Node, events, serve
from worker.entrypoints.console.png import BrowserMissing, chromium, dump_dom, screenshot

BROWSER = os.environ.get("LADDER_CHROMIUM")  # as ``ladder`` itself reads it (Settings)

try:
    chromium(BROWSER)
except BrowserMissing as exc:  # pragma: no cover - .ci/run installs it
    pytest.fail(str(exc), pytrace=False)

PHONE = (390, 844)


def page(url: str) -> Node:
    return Dom(dump_dom(url, browser=BROWSER)).root


@pytest.fixture
def console(cli):
    cli.publish_with_redis_cli(events())
    cli.ladder("worker", "--burst")
    with serve(cli.env) as base:
        yield base


@pytest.fixture
def shots(tmp_path):
    """Screenshots of this run, kept under the pytest tmp dir (and printed for a look)."""
    folder = tmp_path / "screenshots"
    folder.mkdir()
    yield folder
    print(f"console screenshots: {folder}")


def player_url(base: str, ladder: str, pid: str) -> str:
    return f"{base}/ui/ladders/{ladder}/players/{quote(pid, safe='')}"


def test_leaderboard_lists_the_board_in_rank_order(cli, console, shots):
    """The leaderboard page shows the players of the rating board, in rank order, with the
    ratings the reader gives (SPEC 4: standard competition ranking)."""
    board = cli.ladder_json("top", "gammon42", "--limit", "25")
    dom = page(f"{console}/ui/ladders/gammon42")
    rows = dom.find("tr", "entry")
    shown = [
        (int(r.find("td", "rank")[0].text()), r.find("td", "player")[0].find("a")[0].text(),
         r.find("td", "rating")[0].text())
        for r in rows
    ]  # fmt: skip
    assert shown == [(e["rank"], e["player_id"], str(round(e["rating"]))) for e in board]
    assert len(shown) == 21  # every gammon42 player fits on the first page
    assert [tab.text() for tab in dom.find("nav", "tabs")[0].find("a")] == ["rating", "boosted"]
    screenshot(f"{console}/ui/ladders/gammon42", shots / "leaderboard.png", *PHONE, browser=BROWSER)
    assert (shots / "leaderboard.png").stat().st_size > 10_000


def test_leaderboard_search_and_boards(cli, console):
    """The search box finds a player and marks them among their neighbours; the boosted tab
    shows points; an unknown ladder is a 404 page, not JSON."""
    dom = page(f"{console}/ui/ladders/gammon42?player=bob")
    marked = dom.find("tr", "mark")
    assert [m.find("td", "player")[0].text() for m in marked] == ["bob"]
    missing = page(f"{console}/ui/ladders/gammon42?player=nobody")
    assert "No player “nobody”" in missing.find("p", "notice")[0].text()
    boosted = page(f"{console}/ui/ladders/gammon42?board=boosted")
    points = cli.ladder_json("top", "gammon42", "--board", "boosted", "--limit", "25")
    assert [r.find("td", "rating")[0].text() for r in boosted.find("tr", "entry")] == [
        str(int(e["rating"])) for e in points
    ]
    fibs = page(f"{console}/ui/ladders/fibs")
    ratings = [r.find("td", "rating")[0].text() for r in fibs.find("tr", "entry")]
    assert ratings and all("." in r for r in ratings)  # SPEC 2.2: one decimal
    assert fibs.find("span", "badge")  # provisional below experience 50
    assert "Not found" in page(f"{console}/ui/ladders/nope").find("h1")[0].text()


def test_player_chart_has_one_point_per_rated_game(cli, console, shots):
    """The player page's chart has one point per rated game; unrated games are listed with
    their reason in words."""
    history = cli.ladder_json("history", "gammon42", "alice", "--limit", "200")
    rated = [c for c in history if c["kind"] == "game"]
    dom = page(player_url(console, "gammon42", "alice"))
    chart = dom.find("svg", "rating")
    assert len(chart) == 1
    points = chart[0].find("circle", "point")
    assert len(points) == len(rated) > 20
    latest = points[-1].find("title")[0].text()
    assert latest.endswith(f"to {round(rated[0]['rating_after'])}")
    unrated = dom.find("tr", "unrated")
    assert unrated and all("not rated:" in row.text() for row in unrated)
    assert any("not a ranked game" in row.text() or "bot" in row.text() for row in unrated)
    screenshot(
        player_url(console, "gammon42", "alice"), shots / "player.png", *PHONE, browser=BROWSER
    )
    assert (shots / "player.png").stat().st_size > 10_000


def test_calibration_page_shows_the_buckets(cli, console, shots):
    """The calibration page shows the buckets and figures that ``ladder calibrate`` prints."""
    found = cli.ladder_json("calibrate", "gammon42")["versions"]["1.3.1"]
    dom = page(f"{console}/ui/ladders/gammon42/calibration")
    rows = dom.find("tr", "bucket")
    assert [int(r.find("td")[1].text()) for r in rows] == [b["games"] for b in found["buckets"]]
    assert rows[0].find("td")[0].text() == "[0.50, 0.55)"
    assert rows[-1].find("td")[0].text() == "[0.95, 1.00]"
    figures = dom.find("div", "figures")[0].text()
    assert f"{found['brier']:.4f}" in figures and f"{found['log_loss']:.4f}" in figures
    svg = dom.find("svg", "calibration")[0]
    assert len(svg.find("circle", "point")) == sum(1 for b in found["buckets"] if b["games"])
    screenshot(
        f"{console}/ui/ladders/gammon42/calibration",
        shots / "calibration.png",
        *PHONE,
        browser=BROWSER,
    )
    screenshot(f"{console}/", shots / "ladders.png", *PHONE, browser=BROWSER)
    assert (shots / "calibration.png").stat().st_size > 10_000


def test_a_player_id_with_markup_is_shown_as_text(console, shots):
    """Player ids are chosen by players: one that is a <script> tag shows as its text, on the
    board and on its own page, and makes no element (the pages carry no script at all)."""
    board = page(f"{console}/ui/ladders/gammon42")
    assert SCRIPT_ID in [r.find("td", "player")[0].text() for r in board.find("tr", "entry")]
    assert board.find("script") == []
    own = page(player_url(console, "gammon42", SCRIPT_ID))
    assert own.find("h1", "player-id")[0].text() == SCRIPT_ID
    assert own.find("script") == []
    assert SCRIPT_ID in own.find("svg", "rating")[0].find("title")[0].text()
    screenshot(
        player_url(console, "gammon42", SCRIPT_ID), shots / "markup.png", *PHONE, browser=BROWSER
    )


def test_console_pages_stay_out_of_the_api_document(console):
    """The JSON API's OpenAPI document is unchanged: no console route in it."""
    import json
    import urllib.request

    with urllib.request.urlopen(f"{console}/openapi.json", timeout=10) as answer:
        paths = json.load(answer)["paths"]
    assert not [p for p in paths if p == "/" or p.startswith("/ui")]


def test_screenshots_can_be_copied_for_the_readme(console, shots):
    """``scripts/screenshots.py`` takes the same shots; here they are taken at phone width and
    at desktop width and are real images."""
    screenshot(f"{console}/ui/ladders/gammon42", shots / "wide.png", 1200, 900, browser=BROWSER)
    header = (shots / "wide.png").read_bytes()[:8]
    assert header == b"\x89PNG\r\n\x1a\n"
    assert shutil.which(chromium(BROWSER)) or Path(chromium(BROWSER)).exists()
