"""Receipts read back: over HTTP (from PostgreSQL) and by the Python publishing helper."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from starlette.testclient import TestClient

from tests.conftest import drain, publish
from tests.events import game
from tests.integration.helpers import EVERYONE, ledger
from worker import keys
from worker.entrypoints.api.app import create_app
from worker.queue.publish import publish as publish_helper


@pytest.fixture
def client(runtime: Any) -> Iterator[TestClient]:
    app = create_app(
        runtime.config, runtime.leaderboard_redis, runtime.engine, runtime.redis, access=EVERYONE
    )
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client


def test_http_gives_the_receipt_from_postgresql_with_the_ranks_of_the_redis_copy(
    runtime: Any, client: TestClient
) -> None:
    """GET /ladders/{ladder}/events/{event_id} from PostgreSQL."""
    publish(runtime, game("alice", "bob", event_id="h/1"))
    drain(runtime)
    copy = json.loads(runtime.redis.get(keys.receipt("h/1")))
    response = client.get(f"/ladders/gammon42/events/{quote('h/1', safe='')}")
    assert 200 == response.status_code
    assert copy == response.json()
    runtime.redis.delete(keys.receipt("h/1"))  # expired: PostgreSQL still answers
    later = client.get(f"/ladders/gammon42/events/{quote('h/1', safe='')}").json()
    assert [p["rank_after"] for p in later["players"]] == [None, None]
    assert {**copy, "players": [{**p, "rank_after": None} for p in copy["players"]]} == later
    (change,) = ledger(runtime, "gammon42", "bob")
    assert later["players"][1]["rating_after"] == change["rating_after"]


def test_http_answers_404_for_an_unknown_event_or_ladder(client: TestClient) -> None:
    """404 for an unknown event."""
    assert 404 == client.get("/ladders/gammon42/events/nope").status_code
    assert 404 == client.get("/ladders/nowhere/events/nope").status_code
    assert 400 == client.get(f"/ladders/gammon42/events/{'x' * 129}").status_code


def test_the_receipt_route_is_in_the_openapi_document(client: TestClient) -> None:
    """The OpenAPI document is generated from the models: the receipt's included."""
    document = client.get("/openapi.json").json()
    operation = document["paths"]["/ladders/{ladder}/events/{event_id}"]["get"]
    assert operation["operationId"] == "eventReceipt"
    assert "Receipt" in document["components"]["schemas"]


def test_the_python_helper_waits_for_every_receipt(runtime: Any) -> None:
    """publish(..., wait=True) returns receipts, in the order published."""
    events = [game("alice", "bob", event_id="p-1"), game("carol", "dan", event_id="p-2", cube=3)]
    seen: list[str] = []
    result: list[Any] = []

    def wait() -> None:
        result.extend(
            publish_helper(
                runtime.redis,
                [*events, "{not json"],
                wait=True,
                timeout=20,
                on_receipt=lambda s: seen.append(str(s.event_id)),
            )
        )

    waiter = threading.Thread(target=wait)
    waiter.start()
    while runtime.redis.llen(keys.INBOX) < 3:
        time.sleep(0.01)
    drain(runtime)  # the worker runs here: it takes signals, which only the main thread may
    waiter.join(timeout=30)
    sent = result
    assert [s.event_id for s in sent] == ["p-1", "p-2", None]
    assert sent[0].receipt is not None and sent[0].receipt["outcome"] == "rated"
    assert sent[1].receipt is not None and sent[1].receipt["outcome"] == "dead_lettered"
    assert sent[2].receipt is None  # no event id to match a receipt to
    assert sorted(seen) == ["p-1", "p-2"]


def test_the_python_helper_gives_up_after_its_timeout(runtime: Any) -> None:
    """an event whose receipt does not come in time has receipt None."""
    (sent,) = publish_helper(runtime.redis, [game("a", "b", event_id="late")], wait=True,
                             timeout=0.2)  # fmt: skip
    assert (sent.event_id, sent.receipt) == ("late", None)
    assert runtime.redis.llen(keys.INBOX) == 1


def test_http_gives_a_dead_letters_receipt_from_its_copy_then_from_the_queue(
    runtime: Any, client: TestClient
) -> None:
    """ "a receipt for every event ... dead-lettered", over HTTP too: while the
    Redis copy is kept it is the answer; after it expired, the dead-letter queue still says
    what was refused and why."""
    publish(runtime, game("alice", "bob", event_id="bad-1", cube=3))
    drain(runtime)
    copy = json.loads(runtime.redis.get(keys.receipt("bad-1")))
    assert ("dead_lettered", "gammon42") == (copy["outcome"], copy["ladder"])
    answer = client.get("/ladders/gammon42/events/bad-1")
    assert (200, copy) == (answer.status_code, answer.json())
    runtime.redis.delete(keys.receipt("bad-1"))
    later = client.get("/ladders/gammon42/events/bad-1").json()
    wanted = ("bad-1", "gammon42", "game.finished", "dead_lettered", copy["reason"])
    assert wanted == tuple(later[k] for k in ("event_id", "ladder", "type", "outcome", "reason"))
    assert later["detail"] == copy["detail"] and later["players"] == []
    assert 404 == client.get("/ladders/fibs/events/bad-1").status_code  # not that ladder's


def test_ladder_event_shows_a_dead_letters_receipt_and_escapes_ids(
    runtime: Any, capsys: Any
) -> None:
    """``ladder event`` answers as HTTP does: a dead letter's receipt after its copy expired;
    an id with a terminal escape in it is printed escaped, never raw."""
    import argparse

    from worker.entrypoints.cli import receipts as cli_receipts
    from worker.entrypoints.cli.main import dispatch

    publish(runtime, game("alice", "bob", event_id="bad-\x1b[2J", cube=3))
    drain(runtime)
    runtime.redis.delete(keys.receipt("bad-\x1b[2J"))
    parser = argparse.ArgumentParser(prog="ladder")
    cli_receipts.register(parser.add_subparsers(dest="command", required=True))
    capsys.readouterr()
    assert 0 == dispatch(runtime, parser.parse_args(["event", "gammon42", "bad-\x1b[2J"]))
    out = capsys.readouterr().out
    assert "dead_lettered" in out and "\x1b" not in out
    assert 1 == dispatch(runtime, parser.parse_args(["event", "gammon42", "nope"]))
