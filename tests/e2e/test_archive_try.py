"""docs/operations.md, "Trying it on a fresh install": the block runs as written and archives
the months its sample was scored in, and verify then agrees."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.long
def test_the_archive_try_runs_as_written(tmp_path: Path):
    """Every line runs (``set -e``); archive detaches the past months; verify agrees."""
    page = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    section = page[page.index("### Trying it on a fresh install") :]
    found = re.search(r"```sh\n(.*?)```", section, re.S)
    assert found is not None
    commands = found.group(1).replace("/tmp/ladder-archive-try", str(tmp_path / "data"))
    gone = ("REDIS_URL", "DATABASE_URL", "LEADERBOARD_REDIS_URL")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LADDER_") and k not in gone}
    env["HOME"] = str(tmp_path / "home")
    try:
        ran = subprocess.run(
            ["bash", "-ec", commands],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        subprocess.run(
            [str(ROOT / ".venv" / "bin" / "ladder"), "dev", "stop"],
            env={**env, "LADDER_DATA_DIR": str(tmp_path / "data")},
            capture_output=True,
            timeout=120,
        )
    assert 0 == ran.returncode, ran.stderr
    assert "ladder: detached 4 tables: archived_events_" in ran.stdout
    assert "3 ladders, 0 events in" in ran.stdout and "everything agrees" in ran.stdout
    assert "checkpoint at" in ran.stdout
