"""Raw IP addresses are never written to PostgreSQL, Redis or a log line (SPEC 2.4 step 4)."""

from __future__ import annotations

import json
import zlib

from sqlalchemy import text

from tests.conftest import drain, publish
from tests.events import game
from tests.integration.helpers import board
from worker.store.tables import metadata

ADDRESSES = ["203.0.113.77", "203.0.113.78", "2001:db8:1234::7", "198.51.100.23"]


def everything_in_postgres(rt) -> str:
    with rt.engine.connect() as conn:
        dumps = [
            json.dumps([list(map(str, row)) for row in conn.execute(text(f"SELECT * FROM {name}"))])
            for name in metadata.tables
        ]
    return "\n".join(dumps)


def everything_in_redis(rt) -> str:
    out = []
    for key in rt.redis.scan_iter(count=1000):
        kind = rt.redis.type(key).decode()
        out.append(key.decode("utf-8", "replace"))
        if kind == "string":
            out.append(repr(rt.redis.get(key)))
        elif kind == "hash":
            fields = rt.redis.hgetall(key)
            out.append(repr(fields))
            if b"data" in fields:  # RQ stores job data zlib-compressed: look inside too
                out.append(repr(zlib.decompress(fields[b"data"])))
        elif kind == "list":
            out.append(repr(rt.redis.lrange(key, 0, -1)))
        elif kind == "zset":
            out.append(repr(rt.redis.zrange(key, 0, -1, withscores=True)))
        elif kind == "set":
            out.append(repr(rt.redis.smembers(key)))
    return "\n".join(out)


def test_raw_addresses_are_found_nowhere_after_processing(runtime, capfd):
    """A valid event, an invalid one and a broken payload carry raw IPs; none is stored or logged."""
    publish(
        runtime,
        game("a", "b", winner_extra={"ip": ADDRESSES[0]}, loser_extra={"ip": ADDRESSES[1]}),
        game("c", "d", winner_extra={"ip": ADDRESSES[2]}, cube=3),
        f'{{"type": "game.finished", "ip": "{ADDRESSES[3]}", broken',
    )
    drain(runtime)
    assert 2 == len(runtime.dead_letters.list())
    logs = capfd.readouterr()
    stores = {
        "postgres": everything_in_postgres(runtime),
        "redis": everything_in_redis(runtime),
        "logs": logs.out + logs.err,
    }
    found = {(where, ip) for where, blob in stores.items() for ip in ADDRESSES if ip in blob}
    assert set() == found
    assert "ip-" in stores["redis"]  # the dead letter kept the network token instead


def test_a_dead_letter_with_an_address_replays_as_the_original_would_have(runtime):
    """The stored payload carries the token the address hashes to, so the verdict is unchanged."""
    publish(
        runtime,
        game(
            "a",
            "b",
            ladder="nowhere",
            event_id="shared",
            winner_extra={"ip": "203.0.113.1"},
            loser_extra={"ip": "203.0.113.2"},
        ),
    )
    drain(runtime)
    (letter,) = runtime.dead_letters.list()
    payload = json.loads(letter.payload)
    assert payload["winner"]["network"] == payload["loser"]["network"]
    assert "ip" not in payload["winner"]


def test_a_dead_letter_with_an_invalid_address_is_refused_again_when_replayed(runtime):
    """SPEC 5: replay "scores exactly as the original would have": an invalid ``ip`` stays
    invalid (it was rated as ``ip-1|rated`` before), and its event id is not used up."""
    bad = [
        game("a", "b", event_id="bad-1", winner_extra={"ip": "not-an-ip"}),
        game("c", "d", event_id="bad-2", loser_extra={"ip": "198.51.100.1:5000"}),
        game("e", "f", event_id="bad-3", winner_extra={"ip": "198.51.100.1 "}),
    ]
    publish(runtime, *bad)
    drain(runtime)
    letters = runtime.dead_letters.list()
    assert ["invalid_field"] * 3 == [letter.reason for letter in letters]
    runtime.dead_letters.replay([letter.id for letter in letters])
    drain(runtime)
    again = runtime.dead_letters.list()
    assert (["invalid_field"] * 3, {}) == ([x.reason for x in again], board(runtime, "gammon42"))
    assert not any("198.51.100" in letter.payload for letter in again)


def test_a_game_that_ended_before_its_windows_can_exist_is_dead_lettered_alone(runtime):
    """An ended_at of 0001-01-01 (its 7-day window is no date) is invalid_timestamp at
    validation; it no longer sinks the batch it came in."""
    early = game("a", "b", event_id="early")
    early["ended_at"] = "0001-01-01T00:00:00Z"
    publish(runtime, early, game("c", "d", event_id="fine"))
    drain(runtime)
    assert [("early", "invalid_timestamp")] == [
        (x.event_id, x.reason) for x in runtime.dead_letters.list()
    ]
    assert {"c", "d"} == set(board(runtime, "gammon42"))
