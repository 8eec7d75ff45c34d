"""`make demo` writes only into a Redis database of its own and explains its dead letters."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from redis import Redis

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def demo(redis_url: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            "make",
            "-s",
            "-C",
            str(ROOT),
            "demo",
            f"DEMO_REDIS_URL={redis_url}",
            f"DEMO_DATABASE_URL=sqlite:///{tmp_path / 'demo.sqlite3'}",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_make_demo_refuses_a_redis_database_holding_keys_it_did_not_write(redis_url, tmp_path):
    """Someone's data in the demo's database is left alone, and nothing is written there."""
    redis = Redis.from_url(redis_url)
    redis.set("someone:else", "theirs")
    result = demo(redis_url, tmp_path)
    assert 0 != result.returncode
    assert "holds keys the demo did not write" in result.stderr
    assert [b"someone:else"] == redis.keys("*")
    assert not (tmp_path / "demo.sqlite3").exists()


def test_make_demo_on_an_empty_database_runs_and_says_its_dead_letters_are_deliberate(
    redis_url, tmp_path
):
    """The three dead letters are bad samples on purpose; a second run is still welcome."""
    first = demo(redis_url, tmp_path)
    assert 0 == first.returncode, first.stderr
    assert "3 deliberately bad events" in first.stdout
    assert 0 == demo(redis_url, tmp_path).returncode
