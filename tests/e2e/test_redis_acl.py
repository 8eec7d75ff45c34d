"""A real ``redis-server`` run with the shipped ``deploy/redis/users.acl`` (SPEC 6, "Access").

Issue "Done when": as ``publisher``, ``RPUSH ladder:inbox`` works and ``ZADD`` on a board,
``DEL``, ``KEYS``, ``FLUSHDB`` are refused; as ``worker``, a whole batch, receipts included, is
scored (and the operator commands run); as ``reader``, the reader library and serve's board
endpoints work. The users and passwords travel in the URLs (``redis://worker:pw@host/0``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from redis import Redis
from redis.exceptions import AuthenticationError, NoPermissionError, ResponseError

from tests.e2e.conftest import LADDER
from tests.e2e.private import free_port, ladder_serve
from tests.e2e.test_examples import EXAMPLES, go_binary, node_command, start  # noqa: F401
from tests.events import game
from worker import keys, redis_acl
from worker.boards import reader

ACL_FILE = Path(__file__).resolve().parents[2] / "deploy" / "redis" / "users.acl"


PASSWORDS = {
    "LADDER_REDIS_PUBLISHER_PASSWORD": "pub-Qw3rty-Uiop-Asdf",
    "LADDER_REDIS_READER_PASSWORD": "read-Zxcv-Bnm1-2345",
    "LADDER_REDIS_WORKER_PASSWORD": "work-Lkjh-Gfds-6789",
}


class AclRedis:
    """``redis-server`` on a free port with the committed ACL file, nothing persisted."""

    def __init__(
        self, directory: Path, *extra: str, acl: Path = ACL_FILE, passwords: dict | None = None
    ) -> None:
        self.port = free_port()
        self.passwords = passwords or redis_acl.PLACEHOLDERS
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
            + ["--appendonly", "no", "--dir", str(directory), "--aclfile", str(acl)]
            + list(extra),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 20
        while True:
            try:
                self.client("worker").ping()
                return
            except Exception:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    self.stop()
                    raise
                time.sleep(0.1)

    def url(self, user: str) -> str:
        return f"redis://{user}:{self.passwords[user]}@127.0.0.1:{self.port}/0"

    def client(self, user: str) -> Redis:
        return Redis.from_url(self.url(user), socket_timeout=10)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


@pytest.fixture
def acl_redis(tmp_path: Path) -> Iterator[AclRedis]:
    server = AclRedis(tmp_path)
    yield server
    server.stop()


def _ladder(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([LADDER, *args], env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def env(database_url: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("LADDER_", "REDIS_"))}
    return {**base, "DATABASE_URL": database_url}


def test_the_committed_acl_file_is_the_one_ladder_writes_with_placeholder_passwords():
    """deploy/redis/users.acl is render(PLACEHOLDERS): one source for the rules."""
    assert redis_acl.render(redis_acl.PLACEHOLDERS) == ACL_FILE.read_text(encoding="utf-8")


def test_the_reader_may_keep_a_console_logout_and_write_nothing_else(acl_redis):
    """reader (ladder serve): SET and EXISTS on ladder:console-logout:*, no other write."""
    reader_client = acl_redis.client("reader")
    key = keys.console_logout("0" * 64)
    assert reader_client.set(key, 1, ex=60) and 1 == reader_client.exists(key)
    for other in (keys.INBOX, keys.rating("gammon42"), "ladder:console-logoutx"):
        with pytest.raises(NoPermissionError):
            reader_client.set(other, 1)
    with pytest.raises(NoPermissionError):
        reader_client.delete(key)


def test_the_publisher_may_only_publish_and_read_receipts(acl_redis):
    """publisher: RPUSH the inbox, read receipts; ZADD a board, DEL, KEYS, FLUSHDB refused."""
    worker = acl_redis.client("worker")
    worker.set(keys.receipt("g-1"), '{"event_id": "g-1"}')
    worker.rpush(keys.receipt_wait("g-1"), '{"event_id": "g-1"}')
    worker.xadd(keys.RECEIPTS, {"receipt": '{"event_id": "g-1"}'})
    publisher = acl_redis.client("publisher")
    assert 1 == publisher.rpush(keys.INBOX, json.dumps(game("a", "b")))
    assert b'{"event_id": "g-1"}' == publisher.get(keys.receipt("g-1"))
    assert publisher.blpop([keys.receipt_wait("g-1")], timeout=1) is not None
    assert publisher.xread({keys.RECEIPTS: "0-0"}, count=10)
    assert publisher.xrevrange(keys.RECEIPTS, count=1)
    publisher.xgroup_create(keys.RECEIPTS, "servers", id="0")
    ((_, entries),) = publisher.xreadgroup("servers", "s-1", {keys.RECEIPTS: ">"}, count=10)
    assert 1 == publisher.xack(keys.RECEIPTS, "servers", entries[0][0])
    refused = [
        lambda: publisher.zadd(keys.rating("gammon42"), {"x": 1}),
        lambda: publisher.delete(keys.INBOX),
        lambda: publisher.keys("*"),
        lambda: publisher.flushdb(),
        lambda: publisher.lpop(keys.INBOX),  # nor take events out of the inbox
        lambda: publisher.rpush(keys.receipt_wait("g-2"), "{}"),  # nor forge a receipt
        lambda: publisher.set(keys.receipt("g-2"), "{}"),
        lambda: publisher.hgetall(keys.player("gammon42", "a")),
        lambda: publisher.zrange(f"rq:failed:{keys.QUEUE_NAME}", 0, -1),  # nor read dead letters
    ]
    for call in refused:
        with pytest.raises(NoPermissionError):
            call()
    assert 1 == worker.llen(keys.INBOX)


def test_the_publisher_stays_on_database_0(acl_redis):
    """publisher: SELECT 0 (what some clients send for a /0 URL) and nothing else, so a
    publisher URL naming another database is refused at its first command."""
    publisher = acl_redis.client("publisher")
    assert publisher.execute_command("SELECT", 0)
    with pytest.raises(NoPermissionError):
        publisher.execute_command("SELECT", 1)
    elsewhere = Redis.from_url(acl_redis.url("publisher")[: -len("/0")] + "/1", socket_timeout=10)
    with pytest.raises(NoPermissionError):
        elsewhere.rpush(keys.INBOX, "{}")
    assert 0 == acl_redis.client("worker").llen(keys.INBOX)


OWN_SCRIPT = "return redis.call('ZCARD', KEYS[1])"  # a loop would answer everyone BUSY


def test_the_reader_runs_no_script_of_its_own(acl_redis):
    """reader: no EVAL, EVAL_RO, SCRIPT LOAD (a script of its own could loop and answer every
    other client BUSY) nor EVALSHA; EVALSHA_RO of a cached script is read-only, on its keys."""
    worker, board = acl_redis.client("worker"), acl_redis.client("reader")
    worker.zadd(keys.rating("gammon42"), {"alice": 1500})
    refused = [
        lambda: board.eval(OWN_SCRIPT, 1, keys.rating("gammon42")),
        lambda: board.execute_command("EVAL_RO", OWN_SCRIPT, 1, keys.rating("gammon42")),
        lambda: board.script_load(OWN_SCRIPT),
        lambda: board.script_flush(),
        lambda: board.execute_command("SCRIPT", "KILL"),
    ]
    for call in refused:
        with pytest.raises(NoPermissionError):
            call()
    writes = worker.script_load("return redis.call('ZADD', KEYS[1], 1, 'x')")
    with pytest.raises(NoPermissionError):
        board.evalsha(writes, 1, keys.rating("gammon42"))
    with pytest.raises(ResponseError, match="(?i)write commands are not allowed|can.t run"):
        board.evalsha_ro(writes, 1, keys.rating("gammon42"))
    counts = worker.script_load(OWN_SCRIPT)
    assert 1 == board.evalsha_ro(counts, 1, keys.rating("gammon42"))
    with pytest.raises(NoPermissionError):  # its keys: read access to the reader's keys only
        board.evalsha_ro(counts, 1, keys.INBOX)
    sneaks = worker.script_load("return redis.call('LLEN', ARGV[1])")
    with pytest.raises(ResponseError, match="can.t access"):  # nor keys it does not declare
        board.evalsha_ro(sneaks, 0, keys.INBOX)
    assert {b"alice": 1500.0} == dict(
        worker.zrange(keys.rating("gammon42"), 0, -1, withscores=True)
    )


def test_the_example_game_servers_publish_and_wait_as_the_publisher(acl_redis, env, request):
    """examples/python, node and go with a publisher URL (/0): their RPUSH and the BLPOP of
    their own wait list are all they need; the receipt comes from a worker."""
    assert 0 == _ladder({**env, "REDIS_URL": acl_redis.url("worker")}, "migrate").returncode
    commands = {
        "python": [sys.executable, str(EXAMPLES / "python" / "game_server.py")],
        "node": node_command(),
        "go": [request.getfixturevalue("go_binary")],
    }
    worker = acl_redis.client("worker")
    for language, command in commands.items():
        game_server = start(
            command,
            {
                **env,
                "REDIS_URL": acl_redis.url("publisher"),
                "RECEIPT_TIMEOUT": "60",
                "OUTBOX": str(request.getfixturevalue("tmp_path") / language),
                "WINNER": f"{language}-winner",
                "LOSER": f"{language}-loser",
            },
            f"acl-{language}",
        )
        deadline = time.monotonic() + 60
        while worker.llen(keys.INBOX) < 1:
            assert game_server.poll() is None, game_server.communicate()
            assert time.monotonic() < deadline, f"{language}: nothing published"
            time.sleep(0.05)
        burst = _ladder({**env, "REDIS_URL": acl_redis.url("worker")}, "worker", "--burst")
        assert 0 == burst.returncode, burst.stderr[-2000:]
        out, err = game_server.communicate(timeout=60)
        assert 0 == game_server.returncode, (language, err)
        assert ("rated", f"acl-{language}") == (
            json.loads(out)["outcome"],
            json.loads(out)["event_id"],
        )


def test_the_default_user_is_off(acl_redis):
    """A connection without a user name can do nothing."""
    anonymous = Redis(port=acl_redis.port, socket_timeout=10)
    with pytest.raises((AuthenticationError, ResponseError)):
        anonymous.rpush(keys.INBOX, "{}")


def test_a_worker_scores_a_whole_batch_with_receipts_and_the_other_users_read_it(
    acl_redis, env, tmp_path
):
    """worker: migrate, a burst worker with receipts, the operator commands; publisher: the
    publishing helper's --wait; reader: the reader library and serve's board endpoints."""
    as_worker = {**env, "REDIS_URL": acl_redis.url("worker")}
    as_publisher = {**env, "REDIS_URL": acl_redis.url("publisher")}
    as_reader = {**env, "REDIS_URL": acl_redis.url("reader")}
    assert 0 == _ladder(as_worker, "migrate").returncode
    events = [game("alice", "bob", event_id=f"g-{i}") for i in range(1, 6)]
    events.append({"event_id": "bad-1", "ladder": "gammon42", "type": "game"})  # a dead letter
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    publishing = subprocess.Popen(
        [LADDER, "publish", "--wait", "--json", "--timeout", "60", str(path)],
        env=as_publisher,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while acl_redis.client("worker").llen(keys.INBOX) < len(events):
        assert time.monotonic() < deadline and publishing.poll() is None
        time.sleep(0.1)
    burst = _ladder(as_worker, "worker", "--burst")
    assert 0 == burst.returncode, burst.stderr[-3000:]
    out, err = publishing.communicate(timeout=90)
    assert 1 == publishing.returncode, err  # 1: one receipt is a dead letter's
    receipts = {r["event_id"]: r for r in map(json.loads, out.splitlines())}
    assert {f"g-{i}" for i in range(1, 6)} | {"bad-1"} == set(receipts)
    assert "rated" == receipts["g-1"]["outcome"]
    assert "dead_lettered" == receipts["bad-1"]["outcome"]

    for command in (
        ["health", "--ready"],
        ["top", "gammon42"],
        ["event", "gammon42", "g-1"],
        ["dlq", "list", "--json"],
        ["reconcile", "gammon42"],
        ["rebuild", "gammon42"],
        ["verify"],
        ["season", "list", "gammon42"],
    ):
        done = _ladder(as_worker, *command)
        assert 0 == done.returncode, (command, done.stderr[-2000:])

    board = acl_redis.client("reader")
    _reads_work(board)
    with pytest.raises(NoPermissionError):
        board.zadd(keys.rating("gammon42"), {"x": 1})
    with pytest.raises(NoPermissionError):
        board.lrange(keys.INBOX, 0, -1)  # events waiting, raw addresses and all

    with ladder_serve({**as_reader, "LADDER_PUBLIC_SCOPES": "boards,history"}) as base:
        for path in (
            "/ladders/gammon42/top",
            "/ladders/gammon42/leaderboard",
            "/ladders/gammon42/players/alice",
            "/ladders/gammon42/players/alice/rank",
            "/ladders/gammon42/players/alice/around",
            "/ladders/gammon42/among?ids=alice,bob",
            "/ladders/gammon42/events/g-1",
            "/ladders/gammon42/events/bad-1",
        ):
            with urllib.request.urlopen(base + path, timeout=10) as answer:
                assert 200 == answer.status, path

        # The reader may not load the board script: after the cache is emptied (a Redis
        # restart), its reads are refused in one line (503 over HTTP) until a worker loads it.
        acl_redis.client("worker").script_flush()
        with pytest.raises(reader.BoardScriptMissing) as missing:
            reader.top(board, "gammon42", 10)
        assert 1 == len(str(missing.value).splitlines()) and "ladder worker" in str(missing.value)
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(base + "/ladders/gammon42/top", timeout=10)
        refused.value.close()
        assert 503 == refused.value.code
        assert 0 == _ladder(as_worker, "worker", "--burst").returncode
        _reads_work(board)
        with urllib.request.urlopen(base + "/ladders/gammon42/top", timeout=10) as answer:
            assert 200 == answer.status


def _reads_work(board: Redis) -> None:
    """The reader library's reads (top, page, rank, card, around, among) of the board."""
    (first, *_) = reader.top(board, "gammon42", 10)
    assert "alice" == first.player_id
    shown = reader.page(board, "gammon42", size=1)
    assert ["alice"] == [e.player_id for e in shown.entries] and shown.next_cursor
    after = reader.page(board, "gammon42", cursor=shown.next_cursor, size=1)
    assert ["bob"] == [e.player_id for e in after.entries]
    assert 2 == reader.rank(board, "gammon42", "bob").rank
    assert "alice" == reader.card(board, "gammon42", "alice").player_id
    assert [e.player_id for e in reader.around(board, "gammon42", "bob", 1)] == ["alice", "bob"]
    assert ["alice", "bob"] == [
        e.player_id for e in reader.among(board, "gammon42", ["bob", "alice"]).entries
    ]


def test_ladder_deploy_redis_acl_writes_a_file_redis_loads_with_no_password_in_it(env, tmp_path):
    """SPEC 6: `ladder deploy redis-acl` writes the real file from the passwords given in the
    environment (stored hashed); a missing one is refused in one line."""
    missing = _ladder(
        {**env, **PASSWORDS, "LADDER_REDIS_READER_PASSWORD": ""}, "deploy", "redis-acl"
    )
    assert 2 == missing.returncode and "" == missing.stdout
    assert ["ladder: LADDER_REDIS_READER_PASSWORD is not set (the reader user's password)"] == (
        missing.stderr.strip().splitlines()
    )
    path = tmp_path / "users.acl"
    written = _ladder({**env, **PASSWORDS}, "deploy", "redis-acl", "--output", str(path))
    assert 0 == written.returncode, written.stderr
    text = path.read_text(encoding="utf-8")
    assert 0o600 == path.stat().st_mode & 0o777
    assert not any(password in text for password in PASSWORDS.values())
    by_user = {u: PASSWORDS[n] for u, n in redis_acl.PASSWORD_ENV.items()}
    server = AclRedis(tmp_path, acl=path, passwords=by_user)
    try:
        assert 1 == server.client("publisher").rpush(keys.INBOX, "{}")
        with pytest.raises(NoPermissionError):
            server.client("publisher").zadd(keys.rating("gammon42"), {"x": 1})
        placeholder = f"redis://worker:worker-change-me@127.0.0.1:{server.port}/0"
        with pytest.raises((AuthenticationError, ResponseError)):
            Redis.from_url(placeholder).ping()
    finally:
        server.stop()
