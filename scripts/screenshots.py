"""Regenerate docs/screenshots/*.png: the console's pages, as headless Chromium draws them.

    REDIS_URL=redis://127.0.0.1:6379/9 .venv/bin/python scripts/screenshots.py

It publishes the console's test ladder (``tests/e2e/console_data.py``) into an empty Redis
database (refused if it holds any key; flushed afterwards) and an embedded PostgreSQL in a
temporary directory, stopped afterwards (or ``DATABASE_URL``), drains it with ``ladder worker
--burst``, runs ``ladder serve`` and takes each page at a phone's width (390 x 844 CSS pixels)
and the leaderboard on a desktop.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from redis import Redis  # noqa: E402

from tests.e2e.console_data import LADDER, events, serve  # noqa: E402
from worker.entrypoints.console.png import screenshot  # noqa: E402

OUT = ROOT / "docs" / "screenshots"
PHONE = (390, 844)
PAGES = {
    "ladders.png": ("/", PHONE),
    "leaderboard.png": ("/ui/ladders/gammon42", PHONE),
    "player.png": ("/ui/ladders/gammon42/players/alice", PHONE),
    "calibration.png": ("/ui/ladders/gammon42/calibration", PHONE),
    "leaderboard-desktop.png": ("/ui/ladders/gammon42?player=bob", (1200, 900)),
}


def main() -> int:
    redis_url = os.environ.get("REDIS_URL")
    if not redis_url:
        print("screenshots: set REDIS_URL to an empty Redis database", file=sys.stderr)
        return 2
    redis = Redis.from_url(redis_url)
    if redis.dbsize():
        print(f"screenshots: {redis_url} holds keys; give an empty database", file=sys.stderr)
        return 2
    try:
        with tempfile.TemporaryDirectory(prefix="ladder-shots-") as tmp:
            env = {k: v for k, v in os.environ.items() if not k.startswith("LADDER_")}
            env["REDIS_URL"] = redis_url
            env["LADDER_DATA_DIR"] = str(Path(tmp) / "data")  # DATABASE_URL unset: embedded
            feed = Path(tmp) / "events.jsonl"
            feed.write_text("".join(json.dumps(e) + "\n" for e in events()), encoding="utf-8")
            for args in (["migrate"], ["publish", str(feed)], ["worker", "--burst"]):
                subprocess.run([LADDER, *args], env=env, check=True, capture_output=True)
            OUT.mkdir(parents=True, exist_ok=True)
            with serve(env) as base:
                for name, (path, (width, height)) in PAGES.items():
                    screenshot(base + path, OUT / name, width, height)
                    print(f"screenshots: {OUT / name}")
            subprocess.run([LADDER, "dev", "stop"], env=env, check=True, capture_output=True)
    finally:
        redis.flushdb()
        redis.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
