"""Receipts built from the engine's decision (schemas.receipt_bodies), without I/O."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import jsonschema
import pytest

from engine import FibsRules, Gammon42Rules, LadderState, Outcome, Policy, apply
from engine.ladder import GameFinished, Side
from schemas import export
from schemas import receipt_bodies as receipts
from schemas.receipt import OUTCOMES, Receipt, ReceiptPlayer
from worker.boards.receipts import pack, template

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
SCHEMA = json.loads((export.JSON_DIR / "receipt.v1.json").read_text(encoding="utf-8"))


def valid(receipt: Mapping[str, Any]) -> None:
    jsonschema.Draft202012Validator(SCHEMA).validate(receipt)


def game(event_id: str, winner: str = "alice", loser: str = "bob", **kw: Any) -> GameFinished:
    return GameFinished(event_id, kw.pop("ladder", "gammon42"), NOW, "ranked",
                        Side(winner), Side(loser), **kw)  # fmt: skip


def test_a_rated_game_lists_both_sides_with_games_and_provisional_after_it() -> None:
    """players carry before/after/delta/k/expected/provisional/games."""
    state = LadderState()
    decision = apply(game("g-1"), state, Gammon42Rules(), Policy(), NOW)
    body = receipts.scored(decision, state.players, Gammon42Rules(), NOW)
    assert (body["outcome"], body["reason"], body["type"]) == ("rated", None, "game.finished")
    assert body["processed_at"] == NOW.isoformat()
    alice, bob = body["players"]
    assert (alice["player_id"], alice["rating_before"], alice["rating_after"]) == (
        "alice",
        1500.0,
        1516.0,
    )
    assert (bob["delta"], bob["k"], bob["expected"]) == (-16.0, 32, 0.5)
    assert (alice["games"], alice["provisional"], alice["rank_after"]) == (1, False, None)
    valid(body)


def test_games_and_provisional_are_the_state_right_after_that_event() -> None:
    """fibs: provisional while experience < 50 (SPEC 2.2); each event sees its own state."""
    state, rules = LadderState(), FibsRules()
    first = receipts.scored(
        apply(game("f-1", ladder="fibs", match_length=49), state, rules, Policy(), NOW),
        state.players,
        rules,
        NOW,
    )
    second = receipts.scored(
        apply(game("f-2", ladder="fibs", match_length=1), state, rules, Policy(), NOW),
        state.players,
        rules,
        NOW,
    )
    assert [(p["games"], p["provisional"]) for p in first["players"]] == [(1, True)] * 2
    assert [(p["games"], p["provisional"]) for p in second["players"]] == [(2, False)] * 2


def test_an_unrated_game_has_no_players() -> None:
    """players is empty where nothing moved."""
    state = LadderState()
    event = GameFinished("u-1", "gammon42", NOW, "boosted", Side("a"), Side("b"))
    body = receipts.scored(
        apply(event, state, Gammon42Rules(), Policy(), NOW), {}, Gammon42Rules(), NOW
    )
    assert (body["outcome"], body["reason"], body["players"]) == ("unrated", "not_ranked", [])
    valid(body)


def test_a_duplicate_repeats_the_original_with_outcome_duplicate() -> None:
    """outcome duplicate and the original's numbers."""
    state = LadderState()
    original = receipts.scored(
        apply(game("d-1"), state, Gammon42Rules(), Policy(), NOW), state.players,
        Gammon42Rules(), NOW,
    )  # fmt: skip
    original["players"][0]["rank_after"] = 1
    again = receipts.duplicate(original)
    assert (again["outcome"], again["original_outcome"], again["reason"]) == (
        "duplicate",
        "rated",
        None,
    )
    assert [p["rating_after"] for p in again["players"]] == [1516.0, 1484.0]
    assert all(p["rank_after"] is None for p in again["players"])  # read again when written
    assert original["outcome"] == "rated"
    valid(again)


def test_a_dead_letter_has_reason_and_detail_and_the_ids_as_far_as_read() -> None:
    """dead_lettered with reason and detail; ladder and event_id as read."""
    body = receipts.dead_lettered(None, None, None, "invalid_json", "line 1: not JSON", NOW)
    assert (body["outcome"], body["reason"], body["detail"]) == (
        "dead_lettered",
        "invalid_json",
        "line 1: not JSON",
    )
    valid(body)


def test_the_schema_outcomes_are_the_engine_outcomes() -> None:
    """One vocabulary: the published receipt outcomes are engine.Outcome's values."""
    assert set(OUTCOMES) == {str(o) for o in Outcome}


def test_the_text_marks_each_player_rank_after_with_a_format_slot() -> None:
    """The script fills each rank in with Lua's ``string.format`` at a ``%s``; no number is
    decoded on the way. Every ``%`` of the text itself is doubled, so an id holding ``%s``
    or ``%`` (or the slot's \\x01 marker, which the encoder escapes) is never taken for a
    slot, and reads back as it was."""
    state = LadderState()
    body = receipts.scored(
        apply(game("c-1", "50%s", "y\x01rank%"), state, Gammon42Rules(), Policy(), NOW),
        state.players,
        Gammon42Rules(),
        NOW,
    )
    text = template(body)
    assert text.replace("%%", "").count("%s") == 2
    joined = json.loads(text % ("7", "7"))  # Python's % reads %s and %% as Lua's format does
    assert [p["rank_after"] for p in joined["players"]] == [7, 7]
    assert [p["player_id"] for p in joined["players"]] == ["50%s", "y\x01rank%"]
    assert all(p["rank_after"] is None for p in body["players"])  # the body is left as it was


def test_the_fields_go_to_the_script_as_one_text_each_ended_by_a_control_byte() -> None:
    """receipts.lua reads its fields from one argument, each ended by \\x02 (never in JSON
    text, nor in an id); a field that held one would be read as two, and is refused."""
    fields = ["write 2 4 2 0", '{"a":"\x01"}', "alice", "zoë"]
    assert pack(fields) == "write 2 4 2 0\x02" + '{"a":"\x01"}\x02alice\x02zoë\x02'
    assert pack(fields).split("\x02")[:-1] == fields
    with pytest.raises(ValueError, match="x02"):
        pack(["write 2 4 1 0", "{}", "al\x02ice"])


def test_the_text_keeps_every_number_and_name_as_the_body_has_them() -> None:
    """The receipt is the body's JSON: non-ASCII ids as UTF-8 text, each rating the same
    double (a receipt repeats the ledger's numbers, unrounded)."""
    state = LadderState()
    body = receipts.scored(
        apply(game("u-1", "zoë", "björn"), state, Gammon42Rules(), Policy(), NOW),
        state.players,
        Gammon42Rules(),
        NOW,
    )
    body["players"][0]["delta"] = 1e-7  # a form json and orjson write differently
    text = template(body)
    assert "zoë" in text and "björn" in text
    back = json.loads(text % ("null", "null"))
    assert back == json.loads(json.dumps(body))


def test_a_voided_game_moved_nothing_and_a_rewritten_copy_lends_its_numbers() -> None:
    """a void re-rates "as if the games had never been played" (SPEC 5: moderation is in the
    log): read from the audit store a voided game says voided with no players; the Redis copy a
    void rewrote (same processing, same outcome, other numbers) gives its players, a copy of
    another processing lends nothing."""
    state = LadderState()
    stored = receipts.scored(apply(game("g-1"), state, Gammon42Rules(), Policy(), NOW),
                             state.players, Gammon42Rules(), NOW)  # fmt: skip
    voided = receipts.moderated(stored, "voided", None)
    assert ("voided", None, []) == (voided["outcome"], voided["reason"], voided["players"])
    valid(voided)
    rerated = json.loads(json.dumps(stored))
    rerated["players"][0].update(rating_after=1520.0, delta=20.0, rank_after=3)
    assert rerated["players"] == receipts.with_ranks(stored, rerated)["players"]
    other = dict(rerated, processed_at="2026-12-01T13:00:00+00:00")
    assert stored == receipts.with_ranks(stored, other)


def test_the_ledger_rows_and_the_receipt_are_made_of_one_typed_value() -> None:
    """Issue 32: a receipt is built once from the decision as typed values (a ledger change
    with the player's games and provisional flag right after it); the ledger rows are made
    of the same values, never read back from the receipt's JSON fields."""
    from worker.service.rows import Rows

    state = LadderState()
    rules = FibsRules()
    decision = apply(game("g-1", ladder="fibs", match_length=5), state, rules, Policy(), NOW)
    after = receipts.players_after(decision, state.players, rules)
    assert [(a.change, a.games, a.provisional) for a in after] == [
        (change, 1, True) for change in decision.changes
    ]
    rows = Rows(NOW)
    rows.add(decision, game("g-1", ladder="fibs", match_length=5), {}, "fibs", after)
    body = receipts.body(decision, after, NOW)
    assert [
        (r["player_id"], r["rating_after"], r["games"], r["provisional"]) for r in rows.changes
    ] == [
        (p["player_id"], p["rating_after"], p["games"], p["provisional"]) for p in body["players"]
    ]
    assert body == receipts.scored(decision, state.players, rules, NOW)
    valid(body)


def test_a_receipt_from_the_audit_store_has_a_scored_ones_keys_in_declared_order() -> None:
    """body and from_rows write each key in the order schemas.receipt declares it, so a kept
    copy healed from the audit store compares as text with the receipt a replay makes."""
    state = LadderState()
    scored = receipts.scored(apply(game("o-1"), state, Gammon42Rules(), Policy(), NOW),
                             state.players, Gammon42Rules(), NOW)  # fmt: skip
    # rating_changes' columns have the same names (deviation and volatility NULL here)
    rows = [SimpleNamespace(deviation=None, volatility=None, **p) for p in scored["players"]]
    stored = receipts.from_rows(SimpleNamespace(**{**scored, "processed_at": NOW}), rows)
    assert [k for k in Receipt.__annotations__ if k in scored] == list(scored) == list(stored)
    declared = [k for k in ReceiptPlayer.__annotations__ if k in ReceiptPlayer.__required_keys__]
    assert [declared] * 2 == [list(p) for p in scored["players"]]
    assert [list(p) for p in scored["players"]] == [list(p) for p in stored["players"]]
    assert scored == stored
