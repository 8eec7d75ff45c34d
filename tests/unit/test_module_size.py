"""No module in worker/ over 400 lines: a module that long holds more than one role."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

MOST_LINES = 400


def test_no_module_in_worker_is_over_400_lines() -> None:
    """A module of worker/ over 400 lines holds more than one role: split it by role."""
    long = {
        str(path.relative_to(ROOT)): lines
        for path in sorted((ROOT / "worker").rglob("*.py"))
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MOST_LINES
    }
    assert {} == long
