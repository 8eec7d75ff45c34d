"""Receipts written by a worker: stream, key, wait list; duplicates, dead letters, healing."""

from __future__ import annotations

import json
import time
from typing import Any, cast

import pytest

from schemas.receipt import Receipt, ReceiptPlayer
from schemas.receipt_bodies import ReceiptWrite
from tests.conftest import drain, publish
from tests.events import game, link, tournament
from tests.integration.helpers import board, ledger
from worker import failpoints, keys
from worker.bootstrap import Runtime


def stream(rt: Any) -> list[dict[str, Any]]:
    return [json.loads(f[b"receipt"]) for _, f in rt.redis.xrange(keys.RECEIPTS)]


def key(rt: Any, event_id: str) -> dict[str, Any] | None:
    raw = rt.redis.get(keys.receipt(event_id))
    return None if raw is None else json.loads(raw)


def test_a_rated_game_has_a_receipt_on_the_stream_under_its_key_and_on_its_wait_list(
    runtime: Any,
) -> None:
    """one receipt per event, the same object by every way of reading it."""
    publish(runtime, game("alice", "bob", event_id="g-1"))
    drain(runtime)
    (found,) = stream(runtime)
    assert found == key(runtime, "g-1")
    waited = runtime.redis.blpop([keys.receipt_wait("g-1")], timeout=1)
    assert json.loads(waited[1]) == found
    assert found["outcome"] == "rated" and found["reason"] is None
    assert found["ladder"] == "gammon42" and found["type"] == "game.finished"
    winner, loser = found["players"]
    (change,) = ledger(runtime, "gammon42", "alice")
    assert winner["player_id"] == "alice"
    assert winner["rating_before"] == change["rating_before"]
    assert winner["rating_after"] == change["rating_after"]
    assert winner["delta"] == change["delta"] == 16
    assert winner["k"] == change["k"] and winner["expected"] == change["expected"]
    assert (winner["rank_after"], loser["rank_after"]) == (1, 2)
    assert (winner["games"], loser["games"]) == (1, 1)
    assert 0 < runtime.redis.ttl(keys.receipt("g-1")) <= 86400


def test_rank_after_is_the_competition_rank_after_the_batch(runtime: Any) -> None:
    """rank_after: standard competition ranking (SPEC 4: 1, 2, 2, 4) after the whole batch."""
    publish(
        runtime,
        game("a", "b", event_id="r-1"),
        game("c", "d", event_id="r-2"),
    )
    drain(runtime)
    first, second = stream(runtime)
    assert [p["rank_after"] for p in first["players"]] == [1, 3]
    assert [p["rank_after"] for p in second["players"]] == [1, 3]


def test_a_duplicate_repeats_the_original_numbers_and_keeps_its_key(runtime: Any) -> None:
    """a duplicate gets outcome duplicate with the original's numbers."""
    event = game("alice", "bob", event_id="d-1")
    publish(runtime, event)
    drain(runtime)
    publish(runtime, event)
    drain(runtime)
    original, again = stream(runtime)
    assert again["outcome"] == "duplicate" and again["original_outcome"] == "rated"
    assert again["players"] == original["players"]
    assert again["processed_at"] == original["processed_at"]
    assert key(runtime, "d-1") == original


def test_a_duplicate_carries_the_original_rank_after_not_the_rank_of_now(
    make_runtime: Any, redis_url: str
) -> None:
    """Issue 36: a duplicate's receipt carries the original's `rank_after` (read from the
    original's kept receipt), not the rank of when it was repeated; once that copy expired it
    is null, never a rank that was not the original's. With the boards on another Redis too."""
    for round_, boards_elsewhere in enumerate((False, True)):
        rt = make_runtime(leaderboard_redis_url=redis_url + "?" if boards_elsewhere else None)
        rt.redis.flushdb()  # each round on empty boards and an empty stream
        first = game(f"bob{round_}", f"alice{round_}", event_id=f"r-1-{boards_elsewhere}")
        publish(rt, first)
        drain(rt)
        publish(
            rt,
            game(f"carol{round_}", f"dan{round_}", event_id=f"r-2-{boards_elsewhere}"),
            game(f"carol{round_}", f"bob{round_}", event_id=f"r-3-{boards_elsewhere}"),
        )
        drain(rt)
        publish(rt, first)
        drain(rt)
        original, *_, again = stream(rt)
        assert [1, 2] == [p["rank_after"] for p in original["players"]]
        assert again["outcome"] == "duplicate"
        assert [p["rank_after"] for p in again["players"]] == [1, 2], boards_elsewhere
        board = keys.rating("gammon42")
        now = [
            1 + rt.redis.zcount(board, f"({rt.redis.zscore(board, p)}", "+inf")
            for p in (f"bob{round_}", f"alice{round_}")
        ]
        assert [2, 3] == now  # carol is first now
        rt.redis.delete(keys.receipt(f"r-1-{boards_elsewhere}"))  # expired, the original old
        lapsed = make_runtime(
            receipt_ttl=1, leaderboard_redis_url=redis_url + "?" if boards_elsewhere else None
        )
        time.sleep(1.1)
        publish(lapsed, first)
        drain(lapsed)
        late = stream(lapsed)[-1]
        assert (late["outcome"], [p["rank_after"] for p in late["players"]]) == (
            "duplicate",
            [None, None],
        )


def test_unrated_refused_and_applied_events_have_receipts_with_no_players(runtime: Any) -> None:
    """rated or not, applied or refused, every event gets a receipt."""
    publish(
        runtime,
        game("alice", "bob", event_id="u-1", mode="boosted"),
        link("prostriker", "anon-1", "acct-1", event_id="l-1"),
        link("prostriker", "anon-1", "acct-2", event_id="l-2"),
        tournament(
            "gammon42", "t-private", ["alice", "bob", "carol"], public=False, event_id="t-1"
        ),
    )
    drain(runtime)
    found = {r["event_id"]: r for r in stream(runtime)}
    assert (found["u-1"]["outcome"], found["u-1"]["reason"]) == ("unrated", "not_ranked")
    assert (found["l-2"]["outcome"], found["l-2"]["reason"]) == (
        "refused",
        "anonymous_already_linked",
    )
    assert found["l-1"]["outcome"] == "applied"
    assert found["t-1"]["reason"] == "private_tournament"
    assert all(r["players"] == [] for r in found.values())


def test_percent_signs_in_ids_and_texts_reach_the_receipts_as_sent(runtime: Any) -> None:
    """The script fills each rank in with ``string.format`` (``%s`` slots, the text's own
    ``%`` doubled): ids, event ids and a dead letter's text holding ``%``, ``%s`` or ``%d``
    read back byte for byte, each rank in its place, by every way of reading a receipt;
    a duplicate repeats them."""
    one = game("100%", "a%sb", event_id="g-%s-1")
    bad = game("100%", "c%d", event_id="bad-%s-%", cube=3)
    publish(runtime, one, game("c%d", "100%", event_id="g-%%-2"), bad)
    drain(runtime)
    publish(runtime, one)  # a duplicate, a batch later
    drain(runtime)
    refused, first, second, again = stream(runtime)  # a refused event's receipt comes first
    assert [p["player_id"] for p in first["players"]] == ["100%", "a%sb"]
    assert [p["player_id"] for p in second["players"]] == ["c%d", "100%"]
    assert (first["event_id"], second["event_id"]) == ("g-%s-1", "g-%%-2")
    ratings = board(runtime, "gammon42")  # the ranks after the batch, as the board has them
    for receipt in (first, second):
        for p in receipt["players"]:
            above = sum(r > ratings[p["player_id"]] for r in ratings.values())
            assert p["rank_after"] == 1 + above
    assert len({p["rank_after"] for p in first["players"] + second["players"]}) == 3
    assert key(runtime, "g-%s-1") == first and key(runtime, "g-%%-2") == second
    waited = runtime.redis.blpop([keys.receipt_wait("g-%%-2")], timeout=1)
    assert json.loads(waited[1]) == second
    assert (refused["event_id"], refused["reason"]) == ("bad-%s-%", "invalid_cube")
    assert key(runtime, "bad-%s-%") == refused
    assert again["outcome"] == "duplicate"
    assert again["players"] == first["players"] and again["event_id"] == "g-%s-1"


def test_a_dead_letter_has_a_receipt_with_reason_and_detail(runtime: Any) -> None:
    """a dead letter's receipt: dead_lettered, reason, detail, ids as read."""
    publish(runtime, game("alice", "bob", event_id="bad-1", cube=3), "{not json")
    drain(runtime)
    cube, garbage = stream(runtime)
    assert (cube["event_id"], cube["ladder"], cube["outcome"]) == (
        "bad-1",
        "gammon42",
        "dead_lettered",
    )
    assert cube["reason"] == "invalid_cube" and cube["detail"]
    assert key(runtime, "bad-1") == cube
    assert (garbage["event_id"], garbage["reason"]) == (None, "invalid_json")


def test_a_conflicting_id_is_dead_lettered_and_the_original_receipt_stays(runtime: Any) -> None:
    """SPEC 2.4 step 1: same id, other content: dead-lettered; the key keeps the original."""
    publish(runtime, game("alice", "bob", event_id="c-1"))
    drain(runtime)
    publish(runtime, game("bob", "alice", event_id="c-1"))
    drain(runtime)
    original, conflict = stream(runtime)
    assert (conflict["outcome"], conflict["reason"]) == ("dead_lettered", "event_id_conflict")
    assert key(runtime, "c-1") == original


def test_a_crash_between_commit_and_receipt_is_healed_with_the_original(
    runtime: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """healed as the leaderboard is; the receipt may arrive twice, never wrong."""
    event = game("alice", "bob", event_id="h-1")
    rt = runtime
    calls = {"n": 0}

    def crash(name: str) -> None:
        if name == "service.after_commit" and calls["n"] == 0:
            calls["n"] += 1
            raise RuntimeError("crash after commit")

    monkeypatch.setattr(failpoints, "hit", crash)
    with pytest.raises(RuntimeError):
        rt.service.process([json.dumps(event)], on_invalid=rt.dead_letter)
    assert stream(rt) == [] and key(rt, "h-1") is None
    rt.service.process([json.dumps(event)], on_invalid=rt.dead_letter)
    (healed,) = stream(rt)
    assert healed["outcome"] == "rated" and key(rt, "h-1") == healed
    (change,) = ledger(rt, "gammon42", "alice")
    assert healed["players"][0]["rating_after"] == change["rating_after"]


def test_receipts_off_writes_none(settings: Any) -> None:
    """LADDER_RECEIPTS=false turns the stream, the keys and the wait lists off."""
    from worker.store.migrate import upgrade

    rt = Runtime(settings.replace(receipts=False))
    upgrade(rt.engine)
    try:
        publish(rt, game("alice", "bob", event_id="off-1"), "{bad")
        drain(rt)
        assert rt.redis.exists(keys.RECEIPTS, keys.receipt("off-1")) == 0
        assert ledger(rt, "gammon42", "alice")[0]["games"] == 1
    finally:
        rt.close()


def test_ranks_of_many_players_some_off_the_board_some_named_twice(runtime: Any) -> None:
    """SPEC 4: rank_after is the standard competition rank (1 + players with a higher score),
    null for a player not on the rating board; a player named by two receipts of one call
    has the same rank in both. One call names more players (1,500) than the script asks the
    board for at once."""
    board = keys.rating("gammon42")
    runtime.redis.zadd(board, {f"p{n}": float(n // 2) for n in range(1500)})  # ties in pairs

    def receipt(event_id: str, *ids: str) -> ReceiptWrite:
        entries = [
            ReceiptPlayer(player_id=pid, rating_before=1500.0, rating_after=1500.0, delta=0.0,
                          k=None, expected=None, provisional=True, rank_after=None, games=0)
            for pid in ids
        ]  # fmt: skip
        body = cast(Receipt, {"event_id": event_id, "players": entries})  # what the ranks need
        return ReceiptWrite(event_id, "gammon42", body)

    made = [receipt(f"many-{n}", f"p{n}", f"p{1499 - n}") for n in range(750)]
    made.append(receipt("again", "p0", "gone", "p1499", "p1498"))
    sink = runtime.receipts
    assert sink is not None
    assert sink.write(runtime.redis, made, boards_here=True) == 751

    def rank(n: int) -> int:
        return 1500 - 2 * (n // 2 + 1) + 1

    written = {r["event_id"]: r for r in stream(runtime)}
    found = {e: [p["rank_after"] for p in r["players"]] for e, r in written.items()}
    assert found["many-0"] == [rank(0), rank(1499)] == [1499, 1]
    assert found["many-700"] == [rank(700), rank(799)]
    assert all(found[f"many-{n}"] == [rank(n), rank(1499 - n)] for n in range(750))
    assert found["again"] == [1499, None, 1, 1]
    assert key(runtime, "again") == written["again"]


def test_duplicates_sent_after_a_void_read_the_void_and_their_stored_numbers(
    runtime: Any,
) -> None:
    """SPEC 2.4 step 1 with a void (SPEC 5): the voided game sent again reads voided, with no
    players; a later game the void re-rated, sent again, repeats its original's stored numbers
    (its own ledger rows, read by the ledger's index by event) while its kept receipt keeps
    the void's re-rated copy; verify agrees afterwards."""
    from tests.integration.helpers import command
    from worker.ops.verify import verify

    first, later = game("alice", "bob", event_id="v-1"), game("alice", "carol", event_id="v-2")
    publish(runtime, first, later)
    drain(runtime)
    assert 0 == command(runtime, "void", "gammon42", "v-1", "--reason", "test")
    publish(runtime, first, later)
    drain(runtime)
    voided, regraded = stream(runtime)[-2:]
    assert ("duplicate", "voided", []) == (
        voided["outcome"],
        voided["original_outcome"],
        voided["players"],
    )
    assert regraded["outcome"] == "duplicate" and regraded["original_outcome"] == "rated"
    (alice_first, alice_later) = ledger(runtime, "gammon42", "alice")[:2]
    assert alice_first["event_id"] == "v-1" and alice_later["event_id"] == "v-2"
    assert regraded["players"][0]["rating_before"] == alice_later["rating_before"] == 1516.0
    kept = key(runtime, "v-2")
    assert kept is not None and kept["players"][0]["rating_before"] == 1500.0  # re-rated
    found = verify(runtime.engine, runtime.leaderboard_redis, runtime.config.ladders["gammon42"])
    assert [] == found.mismatches
