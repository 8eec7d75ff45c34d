"""The embedded servers (``worker.embedded``): with DATABASE_URL or REDIS_URL unset, the
command that needs one starts it under LADDER_DATA_DIR and the next command reuses it."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg
import pytest
from redis import Redis
from redis.exceptions import ConnectionError as RedisConnectionError

from tests.e2e.conftest import LADDER


def ladder(data_dir: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [LADDER, *args],
        env={**_bare_env(), "LADDER_DATA_DIR": str(data_dir), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


# The record of the data directory ``ladder dev env`` used lives in the user's home: these
# tests keep theirs apart from the real one.
HOME = tempfile.mkdtemp(prefix="ladder-home-")


def _bare_env() -> dict[str, str]:
    gone = ("REDIS_URL", "DATABASE_URL", "LEADERBOARD_REDIS_URL")
    kept = {k: v for k, v in os.environ.items() if not k.startswith("LADDER_") and k not in gone}
    return {**kept, "HOME": HOME}


def exported(stdout: str) -> dict[str, str]:
    """The variables of ``export NAME=value`` lines, as a shell would read them."""
    found: dict[str, str] = {}
    for line in stdout.splitlines():
        words = shlex.split(line)
        assert "export" == words[0], line
        name, _, value = words[1].partition("=")
        found[name] = value
    return found


def notices(stderr: str) -> dict[str, str]:
    """Which embedded server each notice line names, and whether it was started or running."""
    found = {}
    for line in stderr.splitlines():
        for variable in ("DATABASE_URL", "REDIS_URL"):
            if line.startswith(f"ladder: {variable} is not set: using the embedded "):
                assert variable not in found, stderr  # one line per server
                found[variable] = "started" if "(started;" in line else "running"
    return found


@pytest.fixture
def data_dir(tmp_path: Path):
    where = tmp_path / "data"
    yield where
    ladder(where, "dev", "stop")


def test_dev_env_starts_both_servers_once_and_the_next_processes_reuse_them(data_dir: Path):
    """#31: "started on first use by the command that needs it and reused by the next (a lock
    file; a second process connects to the running one), with one stderr line saying where";
    `ladder dev env` prints `export REDIS_URL=... DATABASE_URL=...` lines. Two processes
    started together on a fresh data directory get the same servers, started once."""
    env = {**_bare_env(), "LADDER_DATA_DIR": str(data_dir)}
    both = [
        subprocess.Popen(
            [LADDER, "dev", "env"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(2)
    ]
    results: list[tuple[int, str, str]] = []
    for process in both:
        out, err = process.communicate(timeout=120)
        results.append((process.returncode, out.decode(), err.decode()))
    assert [0, 0] == [code for code, _, _ in results], results
    assert results[0][1] == results[1][1]
    seen = [notices(err) for _, _, err in results]
    for variable in ("DATABASE_URL", "REDIS_URL"):
        assert ["running", "started"] == sorted(n[variable] for n in seen), results

    urls = exported(results[0][1])
    assert {"REDIS_URL", "DATABASE_URL"} == set(urls)
    again = ladder(data_dir, "dev", "env")
    assert urls == exported(again.stdout)
    assert {"DATABASE_URL": "running", "REDIS_URL": "running"} == notices(again.stderr)

    # Reachable from outside ladder at the printed URLs; never the system servers' ports.
    redis = Redis.from_url(urls["REDIS_URL"])
    assert redis.ping() and 6379 != redis.connection_pool.connection_kwargs["port"]
    redis.close()
    assert f"host={data_dir / 'postgres'}" in urls["DATABASE_URL"]  # a socket, no TCP port
    with psycopg.connect(urls["DATABASE_URL"]) as conn:
        assert ("ladder",) == conn.execute("SELECT current_database()").fetchone()


def test_dev_stop_stops_both_and_the_next_command_starts_them_at_the_same_urls(data_dir: Path):
    """#31: `ladder dev stop` stops both embedded servers; `ladder dev status` says whether
    each runs (exit 1 when one does not). A restarted Redis keeps its port, so the export
    lines a shell holds stay true."""
    assert 1 == ladder(data_dir, "dev", "status").returncode
    assert not data_dir.exists()  # status starts nothing
    first = exported(ladder(data_dir, "dev", "env").stdout)
    status = ladder(data_dir, "dev", "status")
    assert 0 == status.returncode
    assert f"PostgreSQL: running at {first['DATABASE_URL']}" in status.stdout
    assert f"Redis: running at {first['REDIS_URL']}" in status.stdout

    stopped = ladder(data_dir, "dev", "stop")
    assert 0 == stopped.returncode
    assert ["PostgreSQL: stopped", "Redis: stopped"] == [
        line.split(" (")[0] for line in stopped.stdout.splitlines()
    ]
    assert "not running" in ladder(data_dir, "dev", "status").stdout
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(first["DATABASE_URL"], connect_timeout=3).close()

    restarted = ladder(data_dir, "dev", "env")
    assert {"DATABASE_URL": "started", "REDIS_URL": "started"} == notices(restarted.stderr)
    assert first == exported(restarted.stdout)


def test_a_command_that_needs_no_server_starts_none(data_dir: Path):
    """ "started on first use by the command that needs it": `ladder config show` reads the
    configuration only."""
    assert 0 == ladder(data_dir, "config", "show").returncode
    assert not data_dir.exists()


def test_a_set_url_is_used_as_it_is_and_no_embedded_server_is_started(
    data_dir: Path, redis_url: str, database_url: str
):
    """With both URLs set, the embedded servers are not used: `dev env` prints the URLs given."""
    result = ladder(data_dir, "dev", "env", REDIS_URL=redis_url, DATABASE_URL=database_url)
    assert 0 == result.returncode, result.stderr
    assert {} == notices(result.stderr)
    assert redis_url == exported(result.stdout)["REDIS_URL"]
    assert not data_dir.exists()


def test_a_data_directory_an_interrupted_initdb_left_is_made_again(data_dir: Path):
    """An `initdb` killed half-way leaves a data directory with a bootstrap postmaster.pid
    and no data: the next command makes it again instead of failing on it for ever."""
    pgdata = data_dir / "postgres"
    pgdata.mkdir(parents=True)
    (pgdata / "PG_VERSION").write_text("18\n")
    (pgdata / "postmaster.pid").write_text(f"-717\n{pgdata}\n1796299612\n5432\n\n\n  2163045  35\n")
    result = ladder(data_dir, "dev", "env")
    assert 0 == result.returncode, result.stderr
    assert {"DATABASE_URL": "started", "REDIS_URL": "started"} == notices(result.stderr)
    with psycopg.connect(exported(result.stdout)["DATABASE_URL"]) as conn:
        assert ("ladder",) == conn.execute("SELECT current_database()").fetchone()


def test_dev_stop_stops_a_redis_whose_dump_cannot_be_written(data_dir: Path):
    """A Redis whose directory was deleted under it refuses SHUTDOWN SAVE (and SIGTERM):
    `ladder dev stop` stops it all the same, rather than leave it running."""
    urls = exported(ladder(data_dir, "dev", "env").stdout)
    state = (data_dir / "redis" / "redis.json").read_text()
    shutil.rmtree(data_dir / "redis")
    (data_dir / "redis").mkdir()
    (data_dir / "redis" / "redis.json").write_text(state)  # only what ladder reads
    assert 0 == ladder(data_dir, "dev", "stop").returncode
    with pytest.raises(RedisConnectionError):
        Redis.from_url(urls["REDIS_URL"], socket_connect_timeout=2).ping()


def test_dev_env_from_another_folder_finds_the_servers_it_started_or_says_they_are_new(
    tmp_path: Path,
):
    """A game-server developer in their own repository runs ``ladder dev env``: with
    LADDER_DATA_DIR unset and nothing running under that folder's ``.ladder/``, the servers
    ``make demo``'s ``ladder dev env`` started are used (one stderr line says so), not a second,
    empty pair; a LADDER_DATA_DIR of its own starts new ones, and stderr says loudly that they
    are new and empty and where the others run."""
    project, other = tmp_path / "project" / ".ladder", tmp_path / "other"
    game_server = tmp_path / "game-server"
    game_server.mkdir()
    env = {**_bare_env(), "HOME": str(tmp_path / "home")}

    def dev_env(**more: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [LADDER, "dev", "env"],
            env={**env, **more},
            cwd=game_server,
            capture_output=True,
            text=True,
            timeout=120,
        )

    try:
        demo = dev_env(LADDER_DATA_DIR=str(project))
        assert 0 == demo.returncode, demo.stderr
        found = dev_env()
        assert exported(demo.stdout) == exported(found.stdout)
        said = f"no embedded server runs under {game_server / '.ladder'}: using those under"
        assert f"{said} {project}" in found.stderr
        assert not (game_server / ".ladder").exists()
        fresh = dev_env(LADDER_DATA_DIR=str(other))
        assert exported(demo.stdout)["REDIS_URL"] != exported(fresh.stdout)["REDIS_URL"]
        loud = [line for line in fresh.stderr.splitlines() if "NEW and EMPTY" in line]
        assert 2 == len(loud), fresh.stderr  # PostgreSQL and Redis
        assert all(f"the servers under {project} run too" in line for line in loud)
    finally:
        for where in (project, other):
            subprocess.run(
                [LADDER, "dev", "stop"],
                env={**env, "LADDER_DATA_DIR": str(where)},
                capture_output=True,
                timeout=120,
            )


def test_the_shipped_acl_file_loads_into_the_embedded_server(tmp_path: Path):
    """The embedded server is of a current major version: ``deploy/redis/users.acl`` (Redis 7
    selectors) loads into it as into a production Redis, so the security setup can be tried
    on the embedded servers; each user is what the file says."""
    from redis.exceptions import NoPermissionError, RedisError

    from tests.e2e.test_redis_acl import ACL_FILE
    from worker import redis_acl
    from worker.embedded import _free_port, redis_server

    acl = tmp_path / "users.acl"
    shutil.copy(ACL_FILE, acl)
    port = _free_port(None)
    server = subprocess.Popen(
        [redis_server(), "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
        + ["--dir", str(tmp_path), "--aclfile", str(acl)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )

    def as_user(user: str) -> Redis:
        password = redis_acl.PLACEHOLDERS[user]
        return Redis.from_url(f"redis://{user}:{password}@127.0.0.1:{port}/0", socket_timeout=10)

    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                as_user("worker").ping()
                break
            except RedisConnectionError:
                assert server.poll() is None, server.communicate()[0]  # the file was refused
                assert time.monotonic() < deadline
                time.sleep(0.05)
        assert all(as_user(user).ping() for user in ("publisher", "reader", "worker"))
        anyone = Redis.from_url(f"redis://127.0.0.1:{port}/0")
        with pytest.raises(RedisError):  # the default user is off
            anyone.get("ladder:inbox")
        anyone.close()
        publisher = as_user("publisher")
        assert 1 == publisher.rpush("ladder:inbox", "{}")
        with pytest.raises(NoPermissionError):
            publisher.get("ladder:{gammon42}:player:alice")
    finally:
        server.terminate()
        server.communicate(timeout=20)
