"""A player's rows read the same in ``ladder history`` and on the console: scoring order (the
order the ladder took them in), the current rating on the newest row, and rows that add up
to the card, a voided game's change shown as not applied."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from tests.conftest import drain, publish
from tests.events import game
from tests.integration.helpers import board
from tests.integration.test_moderation import ladder, ladder_json
from worker.entrypoints.console import pages

T0 = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=10)


def late_game_after_two_voids(rt: Any) -> None:
    """p plays four games; two are voided one at a time; then a game that ended before all of
    them arrives (published late) and is scored last."""
    publish(
        rt,
        *(game("p", f"o{i}", event_id=f"g{i}", ended_at=T0 + timedelta(hours=i)) for i in (1, 2)),
        *(game(f"o{i}", "p", event_id=f"g{i}", ended_at=T0 + timedelta(hours=i)) for i in (3, 4)),
    )
    drain(rt)
    assert 0 == ladder(rt, "void", "gammon42", "g1", "--reason", "one")
    assert 0 == ladder(rt, "void", "gammon42", "g3", "--reason", "two")
    publish(rt, game("p", "late", event_id="g0", ended_at=T0 - timedelta(hours=1)))
    drain(rt)


def test_history_and_the_console_list_one_order_ending_at_the_card(runtime, capsys):
    """SPEC 6 "One history": both list p's rows newest first in scoring order (the late game
    on top, where it was scored), and its rating there is the card's."""
    late_game_after_two_voids(runtime)
    rating = board(runtime, "gammon42")["p"]
    rows = ladder_json(runtime, capsys, "history", "gammon42", "p")
    assert ["g0", "moderation:2", "moderation:1", "g4", "g3", "g2", "g1"] == [
        r["event_id"] for r in rows
    ]
    assert rating == rows[0]["running"]
    stores = pages.Stores(runtime.config, runtime.leaderboard_redis, runtime.databases)
    shown = pages.player(stores, "gammon42", "p")
    listed = [g["opponent"] or g["result"] for g in shown["games"]]
    assert ["late", "correction", "correction", "o4", "o3", "o2", "o1"] == listed
    assert f"{rating:.0f}" == shown["games"][0]["rating"] == dict(shown["facts"])["Rating"]


def test_the_rows_add_up_to_the_card_with_a_voided_game_not_applied(runtime, capsys):
    """Each row's rating is the older row's plus what it counts: a voided game counts 0 (its
    change shown struck, "not applied"), a void's correction what it changed besides taking
    the game back; the sum of what the rows count is the card's rating less the start."""
    late_game_after_two_voids(runtime)
    rows = ladder_json(runtime, capsys, "history", "gammon42", "p")
    for newer, older in zip(rows, rows[1:], strict=False):
        assert newer["running"] == older["running"] + newer["counted"], newer["event_id"]
    assert 1500 + sum(r["counted"] for r in rows) == rows[0]["running"]
    voided = {r["event_id"]: r for r in rows if r["voided"]}
    assert {"g1", "g3"} == set(voided) and all(r["counted"] == 0 for r in voided.values())
    assert all(r["delta"] != 0 for r in voided.values())  # the change it had, shown struck
    stores = pages.Stores(runtime.config, runtime.leaderboard_redis, runtime.databases)
    shown = {g["opponent"]: g for g in pages.player(stores, "gammon42", "p")["games"]}
    assert shown["o1"]["struck"] and shown["o1"]["change"] == f"+{voided['g1']['delta']:.0f}"
    capsys.readouterr()
    assert 0 == ladder(runtime, "history", "gammon42", "p")
    text = capsys.readouterr().out
    (line,) = [row for row in text.splitlines() if row.split()[1:2] == ["g1"]]
    assert f"voided: +{voided['g1']['delta']:.0f} not applied" in line
