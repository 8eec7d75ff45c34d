"""Draws and team games on glicko2 and openskill, from ``redis-cli RPUSH`` to the console in a
real browser (headless Chromium against ``ladder serve``).

Issue: "draws and team games flow from RPUSH to receipts, boards, verify and the console
(browser test) on both new rulesets". SPEC 7: "openskill ... boards rank by mu - k*sigma";
receipts "carry each player's uncertainty (deviation or sigma) and the expected score".
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.e2e.console_data import Dom, Node, serve
from tests.ladders import ladder as table
from tests.ladders import with_shipped
from worker.entrypoints.console.png import BrowserMissing, chromium, dump_dom, screenshot

BROWSER = os.environ.get("LADDER_CHROMIUM")

try:
    chromium(BROWSER)
except BrowserMissing as exc:  # pragma: no cover - .ci/run installs it
    pytest.fail(str(exc), pytrace=False)

LADDERS = table("chess", "glicko2") + table("arena", "openskill")
WHEN = (datetime.now(UTC) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")


def game(event_id: str, ladder: str, **shape: object) -> dict[str, object]:
    base = {"type": "game.finished", "event_id": event_id, "ladder": ladder, "mode": "ranked"}
    return {**base, "ended_at": WHEN, **shape}


def lineup(*teams: list[str]) -> list[dict[str, object]]:
    """Teams in finishing order, each its players."""
    return [
        {"rank": rank, "players": [{"player_id": p} for p in team]}
        for rank, team in enumerate(teams, start=1)
    ]


EVENTS = [
    game("c-1", "chess", winner={"player_id": "alice"}, loser={"player_id": "bob"}),
    game("c-2", "chess", result="draw", players=[{"player_id": "alice"}, {"player_id": "carol"}]),
    game("c-3", "chess", teams=lineup(["carol"], ["dave"], ["erin"], ["bob"])),
    game("a-1", "arena", teams=lineup(["p1", "p2"], ["p3", "p4"])),
    game("a-2", "arena", result="draw", players=[{"player_id": "p1"}, {"player_id": "p3"}]),
]


def page(url: str) -> Node:
    return Dom(dump_dom(url, browser=BROWSER)).root


@pytest.fixture
def played(cli, tmp_path: Path):
    """The shipped ladders with a glicko2 and an openskill one; the events published with
    redis-cli and drained by a burst worker; ``ladder serve`` on them."""
    cli.env["LADDER_CONFIG"] = str(with_shipped(tmp_path, LADDERS))
    cli.publish_with_redis_cli(EVENTS)
    cli.ladder("worker", "--burst")
    with serve(cli.env) as base:
        yield base


def test_draws_and_team_games_reach_receipts_boards_verify_and_the_console(cli, played, tmp_path):
    """Every game is rated with deviations in its receipt; verify agrees; the console's board
    ranks openskill by mu - 3 sigma and its player pages show the deviation and each game as a
    draw or a team's place."""
    for event in EVENTS:
        receipt = json.loads(cli.redis_cli("GET", f"ladder:receipt:{event['event_id']}"))
        assert "rated" == receipt["outcome"], event["event_id"]
        assert all(p["deviation"] > 0 and 0 < p["expected"] < 1 for p in receipt["players"])
    for ladder in ("chess", "arena"):
        verified = cli.ladder_json("verify", ladder)["ladders"][ladder]
        assert (len(EVENTS) > verified["events"] > 0, 0) == (True, verified["mismatch_count"])
    top = cli.ladder_json("top", "arena")
    board = page(f"{played}/ui/ladders/arena")
    shown = [r.find("td", "player")[0].find("a")[0].text() for r in board.find("tr", "entry")]
    assert [e["player_id"] for e in top] == shown
    for e in top:
        card = cli.ladder_json("player", "arena", e["player_id"])
        assert e["rating"] == pytest.approx(card["rating"] - 3 * card["deviation"], abs=1e-9)
    alice = page(f"{played}/ui/ladders/chess/players/alice")
    facts = alice.find("dl", "facts")[0].text()
    assert "Deviation" in facts and "Board score" not in facts
    results = [row.find("td", "result")[0].text() for row in alice.find("tr", "game")]
    assert ["draw", "win"] == results
    carol = page(f"{played}/ui/ladders/chess/players/carol")
    assert ["rank 1 of 4", "draw"] == [
        r.find("td", "result")[0].text() for r in carol.find("tr", "game")
    ]
    p2 = page(f"{played}/ui/ladders/arena/players/p2")
    assert "Board score" in p2.find("dl", "facts")[0].text()
    shots = tmp_path / "screenshots"
    shots.mkdir()
    for name, url in (
        ("arena.png", "/ui/ladders/arena"),
        ("carol.png", "/ui/ladders/chess/players/carol"),
    ):
        screenshot(f"{played}{url}", shots / name, 390, 844, browser=BROWSER)
        assert (shots / name).stat().st_size > 10_000
    print(f"console screenshots: {shots}")
