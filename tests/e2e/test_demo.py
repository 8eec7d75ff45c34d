"""`make demo` runs on embedded servers of its own and explains its dead letters.

SPEC 6 / #31: "with REDIS_URL, DATABASE_URL and the DEMO_* variables unset while the system
servers run on 6379/5432 untouched (the demo must not write to them) ... make demo succeeds
and ladder verify agrees"; running it twice changes nothing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import psycopg
import pytest
from redis import Redis

from tests.e2e.conftest import LADDER

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def demo(tmp_path: Path, env: dict[str, str], *variables: str) -> subprocess.CompletedProcess[str]:
    """``make demo`` with its data directory and output under ``tmp_path``; the calling
    environment holds no DEMO_* or LADDER_* variable, and ``env`` on top."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DEMO_", "LADDER_"))}
    return subprocess.run(
        [
            "make",
            "-s",
            "-C",
            str(ROOT),
            "demo",
            f"DEMO_DATA_DIR={tmp_path / 'data'}",
            f"DEMO_OUT={tmp_path / 'out'}",
            *variables,
        ],
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=600,
    )


def tables(database_url: str) -> list[str]:
    """The tables in the schema that ``database_url`` searches (a test's own schema)."""
    url = database_url.replace("postgresql+psycopg://", "postgresql://", 1)
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1"
        )
        return [row[0] for row in rows]


def databases(database_url: str) -> list[str]:
    url = database_url.replace("postgresql+psycopg://", "postgresql://", 1)
    with psycopg.connect(url) as conn:
        return [row[0] for row in conn.execute("SELECT datname FROM pg_database ORDER BY 1")]


def keyspace(redis_url: str) -> dict[str, Any]:
    """``INFO keyspace`` of the database ``redis_url`` names (absent: no key)."""
    client = Redis.from_url(redis_url)
    try:
        db = client.connection_pool.connection_kwargs.get("db", 0)
        return dict(client.info("keyspace").get(f"db{db}", {}))
    finally:
        client.close()


def test_make_demo_refuses_a_redis_database_holding_keys_it_did_not_write(
    redis_url, database_url, tmp_path
):
    """Someone's data in the demo's database is left alone, and nothing is written there."""
    redis = Redis.from_url(redis_url)
    redis.set("someone:else", "theirs")
    result = demo(tmp_path, {}, f"DEMO_REDIS_URL={redis_url}", f"DEMO_DATABASE_URL={database_url}")
    assert 0 != result.returncode
    assert "holds keys the demo did not write" in result.stderr
    assert [b"someone:else"] == redis.keys("*")
    assert [] == tables(database_url)
    assert not (tmp_path / "data").exists()  # no embedded server was started


@pytest.mark.long
def test_make_demo_on_embedded_servers_leaves_the_given_servers_alone_and_runs_twice(
    redis_url, database_url, tmp_path
):
    """The demo starts embedded servers under its data directory and runs all three ladders,
    its three deliberate dead letters and verify; REDIS_URL and DATABASE_URL of the shell
    (here the servers the tests use: a Redis database of this session and a fresh schema)
    are not written to, and the servers' database list is unchanged. (Key counts of other
    Redis databases are not compared: other test sessions may share the server.) A second
    run publishes nothing again and leaves the same ladders."""
    shell = {"REDIS_URL": redis_url, "DATABASE_URL": database_url}
    known = databases(database_url)
    try:
        first = demo(tmp_path, shell)
        assert 0 == first.returncode, first.stderr
        assert "using the embedded PostgreSQL at postgresql://postgres@/ladder?host=" in (
            first.stderr
        )
        assert "using the embedded Redis at redis://127.0.0.1:" in first.stderr
        assert "3 deliberately bad events" in first.stdout
        assert "(3 dead letters)" in first.stderr
        for ladder in ("gammon42", "fibs", "prostriker"):
            assert f"{ladder} (rating)" in first.stdout
        assert "everything agrees" in first.stdout
        assert "ladder dev stop" in first.stdout

        second = demo(tmp_path, shell)
        assert 0 == second.returncode, second.stderr
        assert "the sample events are published already" in second.stdout
        assert "(0 events processed" in second.stdout
        assert "(3 dead letters)" in second.stderr
        assert _boards(first.stdout) == _boards(second.stdout)

        # `ladder verify` agrees, run on its own against the embedded servers.
        verified = subprocess.run(
            [LADDER, "verify"],
            env={**_without(shell), "LADDER_DATA_DIR": str(tmp_path / "data")},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert 0 == verified.returncode, verified.stderr
        assert "everything agrees" in verified.stderr + verified.stdout
    finally:
        subprocess.run(
            [LADDER, "dev", "stop"],
            env={**_without(shell), "LADDER_DATA_DIR": str(tmp_path / "data")},
            capture_output=True,
            timeout=120,
        )
    assert {} == keyspace(redis_url)
    assert [] == tables(database_url)
    assert known == databases(database_url)


def _without(shell: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in shell and not k.startswith("LADDER_")}


def _boards(stdout: str) -> list[str]:
    """The board lines the demo printed (rank, player, value)."""
    return [line for line in stdout.splitlines() if line[:6].strip().isdigit()]
