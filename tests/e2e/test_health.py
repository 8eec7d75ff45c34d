"""``ladder health``: liveness checks Redis only; ``--ready`` checks every store."""

from __future__ import annotations

import json

from tests.e2e.conftest import Cli

UNREACHABLE_REDIS = "redis://127.0.0.1:1/0"
UNREACHABLE_DATABASE = "postgresql://someone@127.0.0.1:1/ladder"


def checks(cli: Cli, *args: str, **env: str) -> tuple[int, dict[str, bool]]:
    done = Cli({**cli.env, **env}).ladder("health", *args, "--json", "--timeout", "2", check=False)
    assert "Traceback" not in done.stderr
    return done.returncode, {c["name"]: c["ok"] for c in json.loads(done.stdout)}


def test_health_without_ready_checks_redis_only_and_says_so(cli: Cli) -> None:
    """Issue 36: `ladder health` without `--ready` checks Redis only: its help says so, and
    PostgreSQL away does not fail it."""
    shown = " ".join(cli.ladder("health", "--help").stdout.split())
    assert "Without --ready this checks Redis only" in shown
    listed = " ".join(cli.ladder("--help").stdout.split())
    assert "health liveness: Redis answers; --ready: every store" in listed
    assert (0, {"redis": True}) == checks(cli, DATABASE_URL=UNREACHABLE_DATABASE)
    assert (1, {"redis": False}) == checks(cli, REDIS_URL=UNREACHABLE_REDIS)


def test_health_ready_checks_every_store_the_process_uses(cli: Cli) -> None:
    """Issue 36: `--ready` checks every store the process uses: the queue Redis, the
    leaderboard Redis when it is another, PostgreSQL and its schema; each one away fails it."""
    assert (0, {"redis": True, "database": True}) == checks(cli, "--ready")
    assert (1, {"redis": True, "leaderboard_redis": False, "database": True}) == checks(
        cli, "--ready", LEADERBOARD_REDIS_URL=UNREACHABLE_REDIS
    )
    assert (1, {"redis": True, "database": False}) == checks(
        cli, "--ready", DATABASE_URL=UNREACHABLE_DATABASE
    )
    text = Cli({**cli.env, "DATABASE_URL": UNREACHABLE_DATABASE}).ladder(
        "health", "--ready", "--timeout", "2", check=False
    )
    assert 2 == len(text.stdout.splitlines()), "one line a check"
