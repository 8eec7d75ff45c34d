"""`make test` names each missing prerequisite in one line before running any test (#31)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import prerequisites


def test_every_missing_prerequisite_is_one_line_and_the_run_stops(monkeypatch, tmp_path, capsys):
    """#31: "make test checks them first, naming what is missing in one line each, instead of
    a collection error that runs no test"."""
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on it
    monkeypatch.delenv("LADDER_CHROMIUM", raising=False)
    monkeypatch.setattr(prerequisites, "NODE_EXAMPLE", tmp_path / "node")
    monkeypatch.setattr(prerequisites, "REDIGO", tmp_path / "redigo")
    monkeypatch.setattr(prerequisites, "SYSTEM_PG_CTL", str(tmp_path / "pg" / "*" / "pg_ctl"))
    assert 2 == prerequisites.main()
    lines = capsys.readouterr().err.splitlines()
    named = [line for line in lines if line.startswith("make test: missing ")]
    assert 8 == len(named), lines
    wanted = ["chromium", "faketime", "node (", "npm (", "node_modules", "go with", "PostgreSQL"]
    wanted += ["compose"]
    for what in wanted:
        assert any(what in line for line in named), (what, named)
    assert all(": " in line.removeprefix("make test: missing ") for line in named)  # how to


def test_nothing_is_said_when_everything_is_there(monkeypatch, tmp_path, capsys):
    for name in ("chromium", "faketime", "node", "npm", "go", "pg_ctl", "docker-compose"):
        tool = tmp_path / name
        tool.write_text("#!/bin/sh\nexit 0\n")
        tool.chmod(0o755)
    example = tmp_path / "example"
    (example / "node_modules" / "redis").mkdir(parents=True)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("LADDER_CHROMIUM", raising=False)
    monkeypatch.setattr(prerequisites, "NODE_EXAMPLE", example)
    monkeypatch.setattr(prerequisites, "REDIGO", example)
    assert [] == prerequisites.missing()
    assert 0 == prerequisites.main()
    assert "" == capsys.readouterr().err


def test_make_test_checks_the_prerequisites_before_pytest():
    """The Makefile's test target runs the check first, and passes the user's server URLs
    through (it sets no LADDER_TEST_* variable of its own)."""
    makefile = (Path(__file__).resolve().parents[2] / "Makefile").read_text()
    recipe = makefile.split("\ntest: install\n", 1)[1].split("\n\n", 1)[0]
    steps = [line.strip() for line in recipe.splitlines()]
    assert steps[0] == "$(BIN)/python -m tests.prerequisites"
    assert steps[1].startswith("$(BIN)/pytest")
    code = [line for line in makefile.splitlines() if not line.lstrip().startswith("#")]
    assert not [line for line in code if "LADDER_TEST_" in line]


@pytest.mark.parametrize("name", ["chromium"])
def test_the_chromium_check_is_the_console_s_own(name, monkeypatch, tmp_path):
    """LADDER_CHROMIUM counts, as it does for the console's PNGs."""
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("LADDER_CHROMIUM", "/opt/some/chromium")
    assert not any(name in line for line in prerequisites.missing())
