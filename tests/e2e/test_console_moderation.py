"""The console after moderation, in a real browser (headless Chromium against ``ladder serve``).

Issue 30, SPEC 6 "One history": "A moderated ladder reads exactly as if voided games had never
been published, adjustments applied." A banned cheater's page says banned, since when; their
voided games are marked and change nothing; the chart ends at the board's rating. A victim's
page lists the voided game and the correction, and its chart reaches the victim's rating.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

import pytest

from tests.e2e.console_data import Dom, Node, serve
from tests.events import game
from worker.entrypoints.console.png import BrowserMissing, chromium, dump_dom, screenshot

BROWSER = os.environ.get("LADDER_CHROMIUM")  # as ``ladder`` itself reads it (Settings)

try:
    chromium(BROWSER)
except BrowserMissing as exc:  # pragma: no cover - .ci/run installs it
    pytest.fail(str(exc), pytrace=False)

T0 = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=5)


def page(url: str) -> Node:
    return Dom(dump_dom(url, browser=BROWSER)).root


def facts(dom: Node) -> dict[str, str]:
    found = dom.find("dl", "facts")[0]
    labels, values = found.find("dt"), found.find("dd")
    return dict(zip([t.text() for t in labels], [d.text() for d in values], strict=True))


def test_a_banned_cheaters_page_and_a_victims_page_after_a_void(cli, tmp_path):
    """The cheater: a ``banned`` mark and "since" the ban; rating and rated games as the card;
    three games marked voided with no change; one point on the chart (the correction, at the
    card's rating). The victim: rating and rank as the board; the voided game marked, the
    correction listed; the chart's last point at the board's rating."""
    games = [
        game("cheat", f"vic{i}", event_id=f"x{i}", ended_at=T0 + timedelta(minutes=i))
        for i in (1, 2, 3)
    ]
    games.append(game("vic1", "vic2", event_id="fair", ended_at=T0 + timedelta(minutes=9)))
    cli.publish_with_redis_cli(games)
    cli.ladder("worker", "--burst")
    cli.ladder("ban", "gammon42", "cheat", "--reason", "bot", "--void-since", T0.isoformat())
    board = {e["player_id"]: e for e in cli.ladder_json("top", "gammon42", "--limit", "10")}
    card = cli.ladder_json("player", "gammon42", "cheat")
    assert card["banned"] and "cheat" not in board
    with serve(cli.env) as base:
        url = f"{base}/ui/ladders/gammon42/players/"
        cheat = page(url + "cheat")
        assert "banned" in [b.text() for b in cheat.find("span", "badge")]
        shown = facts(cheat)
        assert shown["Banned"] == f"since {card['banned_since'][:16].replace('T', ' ')}"
        assert (shown["Rating"], shown["Rated games"]) == (str(round(card["rating"])), "0")
        voided = cheat.find("tr", "voided")
        assert 3 == len(voided) and all("voided" in row.text() for row in voided)
        assert all(row.find("td", "up") == row.find("td", "down") == [] for row in voided)
        points = cheat.find("svg", "rating")[0].find("circle", "point")
        assert 1 == len(points)
        assert points[-1].find("title")[0].text().endswith(f"to {round(card['rating'])}")
        screenshot(url + "cheat", tmp_path / "cheater.png", 390, 844, browser=BROWSER)

        victim = page(url + quote("vic1"))
        shown = facts(victim)
        entry = board["vic1"]
        assert (shown["Rating"], shown["Rank"]) == (
            str(round(entry["rating"])),
            f"#{entry['rank']}",
        )
        assert "Banned" not in shown and not victim.find("span", "badge")
        assert ["cheat"] == [r.find("a")[0].text() for r in victim.find("tr", "voided")]
        assert ["correction"] == [
            r.find("td", "result")[0].text() for r in victim.find("tr", "moderation")
        ]
        points = victim.find("svg", "rating")[0].find("circle", "point")
        assert points[-1].find("title")[0].text().endswith(f"to {round(entry['rating'])}")
        screenshot(url + "vic1", tmp_path / "victim.png", 390, 844, browser=BROWSER)
    assert (tmp_path / "cheater.png").stat().st_size > 10_000
    print(f"console screenshots: {tmp_path}")
