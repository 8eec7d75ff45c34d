"""How reconcile (and so verify) reads the boards and cards: a chunk per round trip, and the
same findings whatever the hashes hold (SPEC: "reconcile (report and repair drift)")."""

from __future__ import annotations

from typing import Any

from tests.conftest import drain, publish
from tests.events import game
from tests.integration.helpers import card
from worker import keys
from worker.ops import reconcile


def _check(rt: Any, ladder: str = "gammon42") -> reconcile.Report:
    return reconcile.check(rt.engine, rt.redis, rt.config.ladders[ladder])


def _played(rt: Any) -> None:
    publish(rt, game("alice", "bob"), game("carol", "dave"), game("alice", "carol"))
    drain(rt)


def test_a_card_with_its_fields_in_another_order_is_not_drift(runtime):
    """The card's fields are compared as a mapping: rewriting a hash in another field order
    changes nothing a reader sees."""
    _played(runtime)
    key = keys.player("gammon42", "alice")
    fields = card(runtime, "gammon42", "alice")
    runtime.redis.delete(key)
    runtime.redis.hset(key, mapping=dict(reversed(list(fields.items()))))
    assert _check(runtime).clean


def test_a_hash_value_holding_the_record_separator_is_reported_by_field(runtime):
    """A value no writer produces (with the separator the reply is split on) is still one
    ``wrong`` entry naming the player and the field, and the other players stay clean."""
    _played(runtime)
    runtime.redis.hset(keys.player("gammon42", "bob"), "games", "1\x1e2")
    report = _check(runtime)
    assert ([], []) == (report.missing, report.extra)
    assert [("bob", {"games": "1"}, {"games": "1\x1e2"})] == [
        (d.player, d.expected, d.actual) for d in report.wrong
    ]


def test_strays_are_found_on_every_board_and_among_the_hashes(runtime):
    """A member of a board or a player hash with no PostgreSQL row is ``extra``, each named
    by its key, also when the boards hold as many members as before (one swapped in)."""
    _played(runtime)
    redis = runtime.redis
    redis.zrem(keys.rating("gammon42"), "dave")  # missing: the board keeps its size ...
    redis.zadd(keys.rating("gammon42"), {"ghost": 1500})  # ... with a stray in its place
    redis.zadd(keys.boosted("gammon42"), {"spook": 3})
    redis.hset(keys.player("gammon42", "wraith"), "rating", "1500.0")
    redis.hset(keys.player("gammon42", "odd\x1fid"), "rating", "1500.0")
    report = _check(runtime)
    assert {(d.key, d.player) for d in report.missing} == {(keys.rating("gammon42"), "dave")}
    assert {(d.key, d.player) for d in report.extra} == {
        (keys.rating("gammon42"), "ghost"),
        (keys.boosted("gammon42"), "spook"),
        (keys.player("gammon42", "wraith"), "wraith"),
        (keys.player("gammon42", "odd\x1fid"), "odd\x1fid"),
    }
    assert report.players == 4
