"""Redis restarted under running workers: they wait, retry and resume; nothing is lost.

The queue's Redis here is a private redis-server with AOF (appendfsync always), as the README
asks of production: what it acknowledged survives the restart.
"""

from __future__ import annotations

import json
import random
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import cast

import pytest
from redis import Redis

from tests.conftest import record_figure
from tests.e2e.conftest import LADDER, Cli
from tests.e2e.invariants import check_stores
from tests.e2e.test_reliability import expected_ids, hot_events, kill_group, spawn

REDIS_SERVER = shutil.which("redis-server")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PrivateRedis:
    def __init__(self, directory: Path) -> None:
        self.port = free_port()
        self.directory = directory
        self.url = f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        subprocess.run(
            [
                cast(str, REDIS_SERVER),
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--daemonize",
                "yes",
                "--dir",
                str(self.directory),
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--save",
                "",
                "--logfile",
                str(self.directory / "redis.log"),
            ],
            check=True,
        )
        for _ in range(100):
            probe = Redis.from_url(self.url)
            try:
                if probe.ping():
                    return
            except Exception:
                time.sleep(0.05)
            finally:
                probe.close()
        raise RuntimeError("private redis-server did not start")

    def stop(self) -> None:
        client = Redis.from_url(self.url)
        try:
            client.shutdown()
        except Exception:
            pass  # the connection drops as the server goes away
        finally:
            client.close()


@pytest.fixture
def private_redis(tmp_path: Path):
    if REDIS_SERVER is None:
        pytest.fail("redis-server is required for this test")
    server = PrivateRedis(tmp_path)
    server.start()
    yield server
    server.stop()


def test_workers_ride_out_a_redis_restart_and_lose_nothing(database_url, private_redis, tmp_path):
    """Redis shut down for a few seconds mid-stream, restarted from its AOF: every event once."""
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("LADDER_")} | {
        "REDIS_URL": private_redis.url,
        "DATABASE_URL": database_url,
        "LADDER_JOB_TIMEOUT": "5",
    }
    cli = Cli(env)
    cli.ladder("migrate")
    events = hot_events(600, 6, random.Random(5))
    workers = [spawn(env) for _ in range(2)]
    outage = 0.0
    try:
        client = Redis.from_url(private_redis.url)
        for i in range(0, len(events), 50):
            if i == 300:
                private_redis.stop()
                down = time.monotonic()
                time.sleep(3)
                private_redis.start()
                outage = time.monotonic() - down
                client.close()
                client = Redis.from_url(private_redis.url)
            client.rpush("ladder:inbox", *(json.dumps(e) for e in events[i : i + 50]))
            time.sleep(0.1)
        deadline = time.monotonic() + 150
        while time.monotonic() < deadline:
            if all(w.poll() is None for w in workers) and _settled(client):
                break
            time.sleep(1)
        alive = sum(w.poll() is None for w in workers)
        left = _pending(client)
        client.close()
    finally:
        for w in workers:
            kill_group(w, signal.SIGTERM)
    assert 2 == alive, "a worker died instead of waiting for Redis"
    assert {} == {k: v for k, v in left.items() if v}, "the running workers left work behind"
    subprocess.run(
        [LADDER, "worker", "--burst"], env=env, check=True, capture_output=True, timeout=300
    )
    figures = check_stores(database_url, private_redis.url, expected_ids(events))
    assert [] == cli.ladder_json("dlq", "list")
    record_figure(f"redis restart: {figures}, outage {outage:.1f} s")


def _pending(client: Redis) -> dict[str, int]:
    return {
        "inbox": client.llen("ladder:inbox"),
        "queue": client.llen("rq:queue:ladder"),
        "started": client.zcard("rq:wip:ladder"),
        # an idle pump registers an empty batch before each blocking wait: count events only
        "staged": sum(
            int(client.llen(f"ladder:staging:{b.decode()}"))
            for b in cast(list[bytes], client.zrange("ladder:staging", 0, -1))
        ),
        "scheduled": client.zcard("rq:scheduled:ladder"),
        "failed": client.zcard("rq:failed:ladder"),
    }


def _settled(client: Redis) -> bool:
    return not any(_pending(client).values())
