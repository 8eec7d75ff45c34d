"""What ``make test`` needs besides Python, checked before the suite runs.

Each missing tool is named in one line with the tests that need it and how to install it, and
the run stops (exit 2): the tests that need them assert they are there rather than skip, so
a machine without them would otherwise fail or error far into the run. PostgreSQL and Redis
are not among them: without LADDER_TEST_DATABASE_URL / LADDER_TEST_REDIS_URL the tests start
embedded ones (``tests/conftest.py``).
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NODE_EXAMPLE = ROOT / "examples" / "node"


def _chromium() -> bool:
    from worker.entrypoints.console.png import BrowserMissing, chromium

    try:
        chromium(os.environ.get("LADDER_CHROMIUM"))  # as ``ladder`` reads it (Settings)
    except BrowserMissing:
        return False
    return True


def _compose() -> bool:
    if shutil.which("docker"):
        try:
            probe = subprocess.run(
                ["docker", "compose", "version"], capture_output=True, timeout=30
            )
        except (OSError, subprocess.SubprocessError):
            probe = None
        if probe is not None and probe.returncode == 0:
            return True
    return shutil.which("docker-compose") is not None


# Debian's redigo, which examples/go/go.mod builds against, and Debian's PostgreSQL servers.
REDIGO = Path("/usr/share/gocode/src/github.com/gomodule/redigo")
SYSTEM_PG_CTL = "/usr/lib/postgresql/*/bin/pg_ctl"

CHECKS: tuple[tuple[str, Callable[[], bool], str], ...] = (
    (
        "chromium (the console's browser tests, tests/e2e/test_console.py)",
        _chromium,
        "apt-get install chromium, or set LADDER_CHROMIUM to a Chromium binary",
    ),
    (
        "faketime (the archive try of docs/operations.md, tests/e2e/test_archive_try.py)",
        lambda: shutil.which("faketime") is not None,
        "apt-get install faketime",
    ),
    (
        "node (the Node.js example, tests/e2e/test_examples.py)",
        lambda: shutil.which("node") is not None,
        "apt-get install nodejs",
    ),
    (
        "npm (the Node.js example's dependencies)",
        lambda: shutil.which("npm") is not None,
        "apt-get install npm",
    ),
    (
        "examples/node/node_modules (the Node.js example's dependencies)",
        lambda: (NODE_EXAMPLE / "node_modules" / "redis").is_dir(),
        "(cd examples/node && npm ci --no-audit --no-fund)",
    ),
    (
        "go with Debian's redigo (the Go example, tests/e2e/test_examples.py)",
        lambda: shutil.which("go") is not None and REDIGO.is_dir(),
        "apt-get install golang-go golang-github-gomodule-redigo-dev",
    ),
    (
        "PostgreSQL server binaries built with SSL (the TLS test, tests/e2e/test_tls.py)",
        lambda: bool(shutil.which("pg_ctl") or glob.glob(SYSTEM_PG_CTL)),
        "apt-get install postgresql",
    ),
    (
        "docker compose or docker-compose (the compose checks, tests/deploy/test_deploy_files.py)",
        _compose,
        "apt-get install docker-compose",
    ),
)


def missing() -> list[str]:
    """One line per missing prerequisite."""
    return [f"make test: missing {what}: {how}" for what, present, how in CHECKS if not present()]


def main() -> int:
    lines = missing()
    for line in lines:
        print(line, file=sys.stderr)
    if lines:
        print(
            "make test: install what is missing (.ci/run does, as root), or run a part of the "
            "suite without it: .venv/bin/pytest tests/unit tests/integration",
            file=sys.stderr,
        )
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
