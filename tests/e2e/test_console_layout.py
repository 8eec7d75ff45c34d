"""The console at a phone's width (390 px) and a desktop's (1280 px), measured in headless
Chromium: nothing reaches outside the viewport, the player's games keep their rating column,
the calibration legend is off the curve, chart text is sized sanely; screenshots of both.

Issue 36: "at 390 px the player's games table cuts off its rating column; the calibration
legend overlaps the curve; chart text is very large at 1280 px. Browser tests take
screenshots at 390 px and 1280 px and check that no element overflows the viewport."
"""

from __future__ import annotations

from urllib.parse import quote

from tests.e2e.console_data import SCRIPT_ID, events, serve
from tests.e2e.layout import measure, overlaps
from worker.entrypoints.console.png import screenshot

WIDTHS = (390, 1280)
PAGES = {
    "index": "/",
    "leaderboard": "/ui/ladders/gammon42",
    "player": "/ui/ladders/gammon42/players/alice",
    "player-markup-id": f"/ui/ladders/gammon42/players/{quote(SCRIPT_ID, safe='')}",
    "calibration": "/ui/ladders/gammon42/calibration",
}


def test_the_console_fits_a_phone_and_a_desktop(cli, tmp_path):
    """At 390 and 1280 px: no element outside the viewport (a wide table may scroll within its
    container, never the page), the games table's rating column shown, the calibration legend
    clear of the curve and its points, chart text between 9 and 20 px as rendered."""
    cli.publish_with_redis_cli(events())
    cli.ladder("worker", "--burst")
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with serve(cli.env) as base:
        for width in WIDTHS:
            for name, path in PAGES.items():
                screenshot(base + path, shots / f"{name}-{width}.png", width, 1400)
                seen = measure(base + path, width)
                where = f"{name} at {width} px"
                assert [] == seen["over"], f"{where}: outside the viewport"
                assert seen["page"] <= seen["viewport"], f"{where}: the page scrolls sideways"
                for size in seen["fonts"]:
                    assert 9 <= size <= 20, f"{where}: chart text rendered at {size:.1f} px"
                if name.startswith("player"):
                    shown = {text: display for text, display, _ in seen["headers"]}
                    assert "table-cell" == shown.get("Rating"), f"{where}: no rating column"
                for legend in seen["legends"]:
                    hit = [box for box in seen["plotted"] if overlaps(legend, box)]
                    assert [] == hit, f"{where}: the legend lies on the curve"
            assert seen["legends"] and seen["fonts"], "the calibration page has its chart"
    print(f"console screenshots: {shots}")
