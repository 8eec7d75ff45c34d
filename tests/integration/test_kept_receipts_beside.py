"""``ladder verify``'s comparison of the receipts kept in Redis, beside its replay.

SPEC 5: "replaying the stored events in their scoring order reproduces every stored number
(``ladder verify``)", the receipts kept under ``ladder:receipt:<event_id>`` among them. From
``keptreceipts.CHUNK`` receipts on, they are compared in a forked process of their own while
the replay goes on (``keptreceipts._Beside``); a shorter history is compared in the verifying
process by the same ``check``. Here ``CHUNK`` is 2, so three games take the forked path.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from redis import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from sqlalchemy import event, update
from sqlalchemy.exc import OperationalError

from tests.conftest import drain, publish
from tests.e2e.test_outage_redis import REDIS_SERVER, PrivateRedis
from tests.events import game
from tests.integration.test_one_history import T0, _tamper, kept_mismatches, three_wins
from tests.integration.test_routes import run
from worker.entrypoints.cli import main as cli
from worker.ops import keptreceipts
from worker.ops.verify import verify
from worker.store import log
from worker.store.tables import rating_changes


def checked_in(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Callable[[], list[int]]:
    """Record the process each chunk is compared in; returns a reader of those pids."""
    seen = tmp_path / "pids"
    checking = keptreceipts.check

    def check(redis: Any, part: Any, differ: Any) -> int:
        with seen.open("a") as out:
            out.write(f"{os.getpid()}\n")
        return checking(redis, part, differ)

    monkeypatch.setattr(keptreceipts, "check", check)
    return lambda: [int(line) for line in seen.read_text().split()] if seen.exists() else []


def test_a_long_history_compares_its_kept_receipts_in_a_process_of_its_own(
    runtime, monkeypatch, tmp_path
):
    """Three receipts, chunks of two: both chunks (the full one and the rest) are compared
    in one forked process, and what it finds reaches the report as the verifying process
    would have found it: the event, the player and the field, from either chunk."""
    monkeypatch.setattr(keptreceipts, "CHUNK", 2)
    pids = checked_in(monkeypatch, tmp_path)
    three_wins(runtime)
    assert [] == kept_mismatches(runtime)
    beside = pids()
    assert 2 == len(beside) and len(set(beside)) == 1 and os.getpid() not in beside
    _tamper(runtime, "a1", 1, "rating_after", 1400.0)
    _tamper(runtime, "a3", 0, "k", 16.0)
    found = [(m.event_id, m.player_id, m.field) for m in kept_mismatches(runtime)]
    assert [("a1", "y", "receipt rating_after"), ("a3", "x", "receipt k")] == found
    assert [] == multiprocessing.active_children()


def test_a_short_history_compares_its_kept_receipts_in_the_verifying_process(
    runtime, monkeypatch, tmp_path
):
    """Fewer receipts than a chunk: no process is forked for them."""
    pids = checked_in(monkeypatch, tmp_path)
    three_wins(runtime)
    _tamper(runtime, "a2", 1, "rating_after", 1400.0)
    found = [(m.event_id, m.player_id, m.field) for m in kept_mismatches(runtime)]
    assert [("a2", "z", "receipt rating_after")] == found
    assert [os.getpid()] == pids()


def beside_fails(monkeypatch: pytest.MonkeyPatch, runtime: Any, fail: Callable[[], None]) -> None:
    """Three games in chunks of two; ``fail`` runs where the forked process would compare
    its first chunk (and only there)."""
    monkeypatch.setattr(keptreceipts, "CHUNK", 2)
    verifying = os.getpid()
    checking = keptreceipts.check

    def check(redis: Any, part: Any, differ: Any) -> int:
        if os.getpid() != verifying:
            fail()
        return checking(redis, part, differ)

    monkeypatch.setattr(keptreceipts, "check", check)
    three_wins(runtime)


def test_the_receipts_redis_stopping_mid_verify_fails_verify_in_one_line(
    runtime, monkeypatch, tmp_path
):
    """The Redis the kept receipts are read from shuts down (a redis-server of this test's
    own, sent ``SHUTDOWN``) as the forked process is about to read its first chunk: verify
    raises redis-py's error (a verify that could not compare is no verify), which ``ladder
    verify`` says in one line, exit status 1, and leaves no process behind."""
    if REDIS_SERVER is None:
        pytest.fail("redis-server is required for this test")
    server = PrivateRedis(tmp_path)
    server.start()
    try:
        monkeypatch.setattr(keptreceipts, "CHUNK", 2)
        three_wins(runtime)
        copies = Redis.from_url(server.url)
        for key in runtime.redis.scan_iter(match="ladder:receipt:*"):
            copies.set(key, runtime.redis.get(key) or b"")
        verifying = os.getpid()
        checking = keptreceipts.check

        def check(redis: Any, part: Any, differ: Any) -> int:
            if os.getpid() != verifying:
                server.stop()
            return checking(redis, part, differ)

        monkeypatch.setattr(keptreceipts, "check", check)
        cfg = runtime.config.ladders["gammon42"]
        since = datetime.now(UTC) - timedelta(days=1)
        with pytest.raises(RedisConnectionError, match="Connection refused") as raised:
            verify(runtime.engine, runtime.leaderboard_redis, cfg, receipts=(copies, since))
        assert [] == multiprocessing.active_children()
        code, line = cli._ordinary_failure(raised.value, runtime)  # what ``ladder verify`` says
        assert (1, "Redis at ") == (code, (line or "")[:9])
        assert (line or "").endswith("Connection refused.")
    finally:
        server.stop()


def test_the_receipts_process_killed_mid_verify_fails_verify_and_hangs_nothing(
    runtime, monkeypatch, capsys
):
    """SIGKILL of the process comparing beside the replay, at its first chunk: verify does not
    wait for an answer that will never come; it raises, saying the comparison ended without
    one, and no process is left. ``ladder verify`` says so in one line, exit status 1."""
    beside_fails(monkeypatch, runtime, lambda: os.kill(os.getpid(), signal.SIGKILL))
    with pytest.raises(keptreceipts.ComparisonLost, match="ended without an answer"):
        kept_mismatches(runtime)
    assert [] == multiprocessing.active_children()
    capsys.readouterr()
    assert 1 == cli.dispatch(runtime, cli.parser_for(["verify"]).parse_args(["verify"]))
    said = capsys.readouterr().err.strip().splitlines()
    assert said[-1].startswith("ladder: the kept receipts' comparison ended")  # after progress
    assert not any("Traceback" in line for line in said)


def test_an_error_beside_the_replay_that_does_not_pickle_is_raised_in_words(runtime, monkeypatch):
    """An error the forked process cannot send as it is (a class pickle cannot name) comes
    back as a RuntimeError naming it and its message."""

    class Unsendable(Exception):
        pass

    def unsendable() -> None:
        raise Unsendable("the copies could not be read")

    beside_fails(monkeypatch, runtime, unsendable)
    with pytest.raises(RuntimeError, match="^Unsendable: the copies could not be read$"):
        kept_mismatches(runtime)
    assert [] == multiprocessing.active_children()


def test_ladder_verify_of_every_ladder_compares_kept_receipts_beside_each_replay(
    runtime, monkeypatch, capsys
):
    """``ladder verify`` of every ladder replays the ladders in processes of their own; each
    of those forks its receipts' comparison in turn, and a kept receipt changed by hand is
    still one mismatch of its ladder (exit status 1)."""
    monkeypatch.setattr(keptreceipts, "CHUNK", 2)
    three_wins(runtime)
    code, out = run(runtime, capsys, "verify", "--json")
    assert 0 == code
    shown = json.loads(out)["ladders"]["gammon42"]
    assert (3, 3) == (shown["events"], shown["kept_receipts"])
    _tamper(runtime, "a2", 0, "delta", 99.0)
    code, out = run(runtime, capsys, "verify", "--json")
    shown = json.loads(out)["ladders"]["gammon42"]
    assert (1, 1) == (code, shown["mismatch_count"])
    assert ("a2", "x", "receipt delta") == tuple(
        shown["mismatches"][0][k] for k in ("event_id", "player_id", "field")
    )


def _ledger_row(rt: Any, event_id: str, player_id: str, **values: Any) -> None:
    """Change an event's ledger row in PostgreSQL (not its kept receipt)."""
    with rt.engine.begin() as conn:
        conn.execute(
            update(rating_changes)
            .where(rating_changes.c.event_id == event_id, rating_changes.c.player_id == player_id)
            .values(**values)
        )


@pytest.mark.parametrize("chunk", [2, keptreceipts.CHUNK], ids=["beside", "in-process"])
def test_a_ledger_rows_games_and_provisional_flag_are_the_replays(runtime, monkeypatch, chunk):
    """A ledger row keeps what its event's receipt showed of the player, the games and the
    provisional flag right after it (the receipt read from PostgreSQL once the kept copy
    expired): verify compares both with the replay's, and a row changed by hand is a
    mismatch naming the event, the player and the field. The kept copy, untouched, is still
    the replay's receipt: it is not compared with the changed row."""
    monkeypatch.setattr(keptreceipts, "CHUNK", chunk)
    three_wins(runtime)
    _ledger_row(runtime, "a2", "z", games=7, provisional=True)
    found = [
        (m.event_id, m.player_id, m.field, m.stored, m.derived) for m in kept_mismatches(runtime)
    ]
    assert [("a2", "z", "games", 7, 1), ("a2", "z", "provisional", True, False)] == found


@pytest.mark.parametrize("chunk", [2, keptreceipts.CHUNK], ids=["beside", "in-process"])
def test_a_kept_receipt_is_the_replays_where_its_ledger_rows_are_not(runtime, monkeypatch, chunk):
    """A ledger row changed by hand is one mismatch, of the ledger: the kept receipt, still
    what the replay makes, is compared with the replay's receipt, not with the changed row.
    A kept receipt changed the same way is a mismatch of its own."""
    monkeypatch.setattr(keptreceipts, "CHUNK", chunk)
    three_wins(runtime)
    _ledger_row(runtime, "a3", "w", rating_after=1400.0)
    found = [(m.event_id, m.player_id, m.field) for m in kept_mismatches(runtime)]
    assert [("a3", "w", "rating_after")] == found
    _tamper(runtime, "a3", 1, "rating_after", 1400.0)
    found = [(m.event_id, m.player_id, m.field) for m in kept_mismatches(runtime)]
    assert [("a3", "w", "rating_after"), ("a3", "w", "receipt rating_after")] == found


@pytest.mark.parametrize("chunk", [2, keptreceipts.CHUNK], ids=["beside", "in-process"])
def test_a_ledger_row_written_before_receipts_were_kept_is_compared_by_the_replays_receipt(
    runtime, monkeypatch, chunk
):
    """A row from before the ledger kept the receipt's games and provisional flag (both NULL)
    is not compared on them, and its event's kept receipt is compared with the replay's
    receipt: one changed by hand is found."""
    monkeypatch.setattr(keptreceipts, "CHUNK", chunk)
    three_wins(runtime)
    _ledger_row(runtime, "a1", "y", games=None, provisional=None)
    assert [] == kept_mismatches(runtime)
    _tamper(runtime, "a1", 1, "games", 5)
    found = [(m.event_id, m.player_id, m.field) for m in kept_mismatches(runtime)]
    assert [("a1", "y", "receipt games")] == found


def test_postgresql_ending_the_receipts_process_connection_fails_verify_in_one_line(
    runtime, monkeypatch
):
    """PostgreSQL ends the connections the forked process reads the stored rows on (an
    administrator's ``pg_terminate_backend``, a restart) while it still has rows to read:
    verify raises the driver's error (a verify that could not compare is no verify), which
    ``ladder verify`` says in one line, exit status 1; no process is left, and the
    verifying process's own connections are untouched: the next verify passes."""
    monkeypatch.setattr(keptreceipts, "CHUNK", 2)
    monkeypatch.setattr(log, "CHUNK", 1)  # the stored rows fetched one at a time
    verifying = os.getpid()
    named = f"ladder-test-receipts-{verifying}"

    def name_the_forked_process_connections(dialect, record, cargs, cparams):  # noqa: ANN001
        if os.getpid() != verifying:
            cparams["application_name"] = named

    checking = keptreceipts.check
    ended: list[int] = []  # backends ended, once

    def check(redis: Any, part: Any, differ: Any) -> int:
        if os.getpid() != verifying and not ended:  # its first chunk: ten games still to read
            url = runtime.engine.url.set(drivername="postgresql")
            with psycopg.connect(url.render_as_string(hide_password=False)) as admin:
                row = admin.execute(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                    " WHERE application_name = %s AND state = 'idle in transaction'",
                    (named,),
                ).fetchone()
            assert row is not None and 2 == row[0]  # the audit rows' and the ledger's readers
            ended.append(row[0])
        return checking(redis, part, differ)

    publish(
        runtime,
        *(
            game(f"p{i}", f"q{i}", event_id=f"g{i}", ended_at=T0 + timedelta(minutes=i))
            for i in range(12)
        ),
    )
    drain(runtime)
    monkeypatch.setattr(keptreceipts, "check", check)
    event.listen(runtime.engine, "do_connect", name_the_forked_process_connections)
    try:
        with pytest.raises(OperationalError, match="connection is lost") as raised:
            kept_mismatches(runtime)
        assert [] == multiprocessing.active_children()
    finally:
        event.remove(runtime.engine, "do_connect", name_the_forked_process_connections)
    code, line = cli._ordinary_failure(raised.value, runtime)  # what ``ladder verify`` says
    assert (1, "the database at ") == (code, (line or "")[:16])
    assert (line or "").endswith("failed: the connection is lost")
    monkeypatch.setattr(keptreceipts, "check", checking)
    assert [] == kept_mismatches(runtime)
