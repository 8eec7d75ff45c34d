"""Receipts end to end: events published with redis-cli, a real ``ladder worker --burst``,
every receipt read from the stream, by GET, by BLPOP and over HTTP (``ladder serve``), and
each checked against the audit rows."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from sqlalchemy import create_engine, select

from tests.e2e.conftest import LADDER, Cli
from tests.e2e.private import ladder_serve
from tests.events import game, link, tournament
from worker.settings import normalise_database_url
from worker.store.tables import events, rating_changes

GAMES = [
    game("alice", "bob", event_id="e2e-1"),
    game("carol", "alice", event_id="e2e-2", cube=4),
    game("bob", "carol", event_id="e2e-3", mode="boosted"),
    game("dora", "erin", event_id="e2e-4", ladder="fibs", match_length=5),
    link("prostriker", "anon-7", "acct-7", event_id="e2e-5"),
    tournament("gammon42", "cup", ["alice", "bob", "carol"], event_id="e2e-6"),
]
BAD = game("x", "y", event_id="e2e-bad", cube=3)


def lines_json(output: str) -> list[dict[str, Any]]:
    """The JSON objects redis-cli printed (one a line; ids and field names in between)."""
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


def audit(cli: Cli) -> dict[str, dict[str, Any]]:
    """Each applied event's audit row, with its ledger rows in order, from PostgreSQL."""
    engine = create_engine(normalise_database_url(cli.env["DATABASE_URL"]))
    try:
        with engine.connect() as conn:
            rows = {r["event_id"]: dict(r) for r in conn.execute(select(events)).mappings()}
            query = select(rating_changes).order_by(rating_changes.c.id)
            for change in conn.execute(query).mappings():
                rows[change["event_id"]].setdefault("changes", []).append(dict(change))
    finally:
        engine.dispose()
    return rows


def check(receipt: dict[str, Any], row: dict[str, Any]) -> None:
    """A receipt says what the audit row and its ledger rows say."""
    assert (receipt["ladder"], receipt["type"]) == (row["ladder"], row["type"])
    assert (receipt["outcome"], receipt["reason"]) == (row["outcome"], row["reason"])
    assert receipt["ruleset_version"] == row["ruleset_version"]
    assert receipt["processed_at"] == row["processed_at"].isoformat()
    changes = row.get("changes", [])
    assert [p["player_id"] for p in receipt["players"]] == [c["player_id"] for c in changes]
    for player, change in zip(receipt["players"], changes, strict=True):
        for field in ("rating_before", "rating_after", "delta", "k", "expected", "games"):
            assert player[field] == change[field], field
        assert player["provisional"] == change["provisional"]


@pytest.fixture
def served(cli: Cli) -> Iterator[str]:
    # receipts are read with the history scope
    with ladder_serve({**cli.env, "LADDER_PUBLIC_SCOPES": "boards,history"}) as base:
        yield base


def http(base: str, path: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(base + path, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_every_receipt_from_stream_get_blpop_and_http_matches_the_audit(
    cli: Cli, served: str
) -> None:
    """stream, GET ladder:receipt:<id>, blocking wait and HTTP, each
    checked against the audit rows; a consumer group reads the stream (item 2)."""
    cli.redis_cli("XGROUP", "CREATE", "ladder:receipts", "servers", "$", "MKSTREAM")
    cli.publish_with_redis_cli([*GAMES, BAD])
    cli.ladder("worker", "--burst")
    rows = audit(cli)
    grouped = lines_json(
        cli.redis_cli(
            "XREADGROUP",
            "GROUP",
            "servers",
            "s1",
            "COUNT",
            "100",
            "STREAMS",
            "ladder:receipts",
            ">",
        )  # fmt: skip
    )
    streamed = lines_json(cli.redis_cli("XRANGE", "ladder:receipts", "-", "+"))
    assert grouped == streamed
    by_id = {r["event_id"]: r for r in streamed}
    assert sorted(by_id) == sorted([e["event_id"] for e in GAMES] + ["e2e-bad"])
    for event in GAMES:
        event_id = event["event_id"]
        row = rows[event_id]
        check(by_id[event_id], row)
        (kept,) = lines_json(cli.redis_cli("GET", f"ladder:receipt:{event_id}"))
        (waited,) = lines_json(cli.redis_cli("BLPOP", f"ladder:receipt-wait:{event_id}", "2"))
        assert kept == waited == by_id[event_id]
        status, over_http = http(served, f"/ladders/{row['ladder']}/events/{quote(event_id)}")
        assert 200 == status
        assert over_http == by_id[event_id]
    rated = by_id["e2e-1"]
    assert rated["outcome"] == "rated" and [p["delta"] for p in rated["players"]] == [16, -16]
    assert all(isinstance(p["rank_after"], int) for p in rated["players"])
    assert by_id["e2e-3"]["players"] == []
    assert [p["player_id"] for p in by_id["e2e-6"]["players"]] == ["alice", "bob", "carol"]
    assert 404 == http(served, "/ladders/gammon42/events/never-sent")[0]


def test_dead_letters_and_duplicates_have_receipts(cli: Cli, served: str) -> None:
    """dead_lettered with reason and detail; a duplicate with outcome
    duplicate and the original's numbers, its key still the original's."""
    cli.publish_with_redis_cli([GAMES[0], BAD, "{not json"])
    cli.ladder("worker", "--burst")
    cli.publish_with_redis_cli([GAMES[0]])
    cli.ladder("worker", "--burst")
    # dead letters are refused while the batch is validated: their receipts come first
    bad, garbage, original, duplicate = lines_json(
        cli.redis_cli("XRANGE", "ladder:receipts", "-", "+")
    )
    check(original, audit(cli)["e2e-1"])
    assert (bad["event_id"], bad["ladder"], bad["outcome"], bad["reason"]) == (
        "e2e-bad",
        "gammon42",
        "dead_lettered",
        "invalid_cube",
    )
    assert bad["detail"]
    (waited,) = lines_json(cli.redis_cli("BLPOP", "ladder:receipt-wait:e2e-bad", "2"))
    assert waited == bad
    listed = cli.ladder_json("dlq", "list")
    assert {"e2e-bad"} <= {letter["event_id"] for letter in listed}
    assert (garbage["event_id"], garbage["outcome"], garbage["reason"]) == (
        None,
        "dead_lettered",
        "invalid_json",
    )
    assert duplicate["outcome"] == "duplicate" and duplicate["original_outcome"] == "rated"
    assert duplicate["players"] == original["players"]
    (kept,) = lines_json(cli.redis_cli("GET", "ladder:receipt:e2e-1"))
    assert kept == original
    assert (200, bad) == http(served, "/ladders/gammon42/events/e2e-bad")  # over HTTP too
    cli.redis_cli("DEL", "ladder:receipt:e2e-bad")  # its copy expired: the DLQ still answers
    status, later = http(served, "/ladders/gammon42/events/e2e-bad")
    assert (200, "dead_lettered", "invalid_cube") == (status, later["outcome"], later["reason"])
    assert 404 == http(served, "/ladders/gammon42/events/never-sent")[0]


def test_ladder_event_prints_the_receipt_and_refuses_unknowns(cli: Cli) -> None:
    """`ladder event LADDER EVENT_ID [--json]`; unknown ladder exits 2, unknown event 1."""
    cli.publish_with_redis_cli([GAMES[0]])
    cli.ladder("worker", "--burst")
    shown = cli.ladder_json("event", "gammon42", "e2e-1")
    check(shown, audit(cli)["e2e-1"])
    table = cli.ladder("event", "gammon42", "e2e-1").stdout
    assert "rated" in table and "alice 1500 -> 1516 (+16, #1)" in table
    unknown = cli.ladder("event", "gammon42", "nope", check=False)
    assert (unknown.returncode, unknown.stderr) == (1, "ladder: no event 'nope' on gammon42\n")
    nowhere = cli.ladder("event", "nowhere", "e2e-1", check=False)
    assert nowhere.returncode == 2 and "no ladder named 'nowhere'" in nowhere.stderr


def test_publish_wait_prints_receipts_and_fails_on_a_dead_letter_or_timeout(
    cli: Cli, tmp_path: Any
) -> None:
    """`ladder publish FILE --wait [--timeout S] [--json]` prints each receipt
    as it arrives and exits non-zero if any timed out or was dead-lettered."""
    events_file = tmp_path / "events.jsonl"
    events_file.write_text(json.dumps(GAMES[0]) + "\n" + json.dumps(BAD) + "\n")
    waiting = subprocess.Popen(
        [LADDER, "publish", str(events_file), "--wait", "--timeout", "60", "--json"],
        env=cli.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while cli.redis_cli("LLEN", "ladder:inbox").strip() != "2":
        assert time.monotonic() < deadline, "publish --wait published nothing"
        time.sleep(0.05)
    cli.ladder("worker", "--burst")
    out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 1, err
    shown = {r["event_id"]: r for r in map(json.loads, out.splitlines())}
    check(shown["e2e-1"], audit(cli)["e2e-1"])
    assert shown["e2e-bad"]["outcome"] == "dead_lettered"
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps(game("fay", "gus", event_id="e2e-ok")) + "\n")
    late = cli.ladder("publish", str(good), "--wait", "--timeout", "0.5", check=False)
    assert late.returncode == 1 and "no receipt for 'e2e-ok' within 0.5 s" in late.stderr
    cli.redis_cli("DEL", "ladder:inbox")
    table = subprocess.Popen(
        [LADDER, "publish", "-", "--wait", "--timeout", "60"],
        env=cli.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert table.stdin is not None
    table.stdin.write(json.dumps(game("hal", "ivy", event_id="e2e-t")) + "\n")
    table.stdin.close()
    deadline = time.monotonic() + 30
    while cli.redis_cli("LLEN", "ladder:inbox").strip() == "0":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    cli.ladder("worker", "--burst")
    assert table.stdout is not None and table.stderr is not None
    with table.stdout, table.stderr:
        out, err = table.stdout.read(), table.stderr.read()
    assert table.wait(timeout=60) == 0, err
    header, row = out.splitlines()
    assert header.split()[:4] == ["event_id", "ladder", "outcome", "reason"]
    assert row.split()[:3] == ["e2e-t", "gammon42", "rated"]


def test_a_worker_killed_between_commit_and_redis_write_leaves_receipts_a_new_one_heals(
    cli: Cli,
) -> None:
    """a crash between commit and receipt is healed as the leaderboard is (the
    next worker runs the batch again); the receipt is the original's, never a duplicate's."""
    cli.publish_with_redis_cli(GAMES[:2])
    killed = subprocess.run(
        [LADDER, "worker", "--burst"],
        env={**cli.env, "LADDER_FAILPOINTS": "service.after_commit=1"},
        capture_output=True,
        timeout=300,
    )
    assert killed.returncode == -9  # SIGKILL right after the commit
    rows = audit(cli)
    assert sorted(rows) == ["e2e-1", "e2e-2"]
    assert lines_json(cli.redis_cli("XRANGE", "ladder:receipts", "-", "+")) == []
    cli.ladder("worker", "--burst", timeout=300)
    healed = {
        r["event_id"]: r for r in lines_json(cli.redis_cli("XRANGE", "ladder:receipts", "-", "+"))
    }
    assert sorted(healed) == ["e2e-1", "e2e-2"]
    for event_id, receipt in healed.items():
        assert receipt["outcome"] == "rated"
        check(receipt, rows[event_id])
        (kept,) = lines_json(cli.redis_cli("GET", f"ladder:receipt:{event_id}"))
        assert kept == receipt


def test_publish_wait_prints_what_each_receipt_says_for_a_line_sent_twice(
    cli: Cli, tmp_path: Any
) -> None:
    """Issue 36: `ladder publish --wait` prints what the receipt says (`duplicate` for a
    repeated line), not `rated`: the stream holds one receipt per line published."""
    line = json.dumps(game("jo", "kit", event_id="e2e-twice"))
    twice = tmp_path / "twice.jsonl"
    twice.write_text(f"{line}\n{line}\n")
    for extra in ((), ("--json",)):  # then both lines are duplicates of the first run's
        waiting = subprocess.Popen(
            [LADDER, "publish", str(twice), "--wait", "--timeout", "60", *extra],
            env=cli.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 30
        while cli.redis_cli("LLEN", "ladder:inbox").strip() != "2":
            assert time.monotonic() < deadline, "publish --wait published nothing"
            time.sleep(0.05)
        cli.ladder("worker", "--burst")
        out, err = waiting.communicate(timeout=60)
        assert waiting.returncode == 0, err
        on_stream = lines_json(cli.redis_cli("XRANGE", "ladder:receipts", "-", "+"))[-2:]
        if extra:
            assert on_stream == [json.loads(shown) for shown in out.splitlines()]
            assert ["duplicate", "duplicate"] == [r["outcome"] for r in on_stream]
        else:
            assert ["rated", "duplicate"] == [r["outcome"] for r in on_stream]
            assert ["rated", "duplicate"] == [row.split()[2] for row in out.splitlines()[1:]]
