"""Fair-play filters through the pipeline (SPEC 2.4): order, reasons, switches."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.conftest import drain, publish
from tests.events import game
from tests.integration.helpers import audit, board, outcome
from worker.ladders import default_config_path

NOW = datetime.now(UTC).replace(microsecond=0)


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({}, ("rated", None)),
        ({"loser_extra": {"is_bot": True}}, ("unrated", "bot")),
        ({"winner_extra": {"is_bot": True}}, ("unrated", "bot")),
        ({"mode": "boosted", "loser_extra": {"is_bot": True}}, ("unrated", "not_ranked")),
        (
            {"winner_extra": {"network": "net-1"}, "loser_extra": {"network": "net-1"}},
            ("unrated", "shared_network"),
        ),
        (
            {"winner_extra": {"network": "net-1"}, "loser_extra": {"network": "net-2"}},
            ("rated", None),
        ),
        (
            {"winner_extra": {"ip": "203.0.113.9"}, "loser_extra": {"ip": "203.0.113.200"}},
            ("unrated", "shared_network"),
        ),
        (
            {"winner_extra": {"ip": "203.0.113.9"}, "loser_extra": {"ip": "203.0.114.9"}},
            ("rated", None),
        ),
        (
            {"winner_extra": {"ip": "2001:db8:1:2::1"}, "loser_extra": {"ip": "2001:db8:1:2::ff"}},
            ("unrated", "shared_network"),
        ),
        (
            {
                "winner_extra": {"is_bot": True, "network": "n"},
                "loser_extra": {"network": "n"},
            },
            ("unrated", "bot"),
        ),
    ],
)
def test_the_first_matching_filter_decides_and_the_audit_row_says_which(runtime, extra, expected):
    """SPEC 2.4: applied in order (mode, bot, shared network, pair limit); first match decides."""
    publish(runtime, game("a", "b", event_id="e", **extra))
    drain(runtime)
    assert expected == outcome(runtime, "gammon42", "e")


def test_a_pair_playing_six_times_in_three_hours_is_rated_three_times(runtime):
    """SPEC 2.4 step 5: not rated once the pair already has 3 rated games in the 24 hours before."""
    games = [
        game(
            *(("a", "b") if i % 2 else ("b", "a")),
            event_id=f"g{i}",
            ended_at=NOW - timedelta(minutes=180 - 30 * i),
        )
        for i in range(6)
    ]
    publish(runtime, *games)
    drain(runtime)
    rated = sorted(r["event_id"] for r in audit(runtime) if r["outcome"] == "rated")
    limited = sorted(r["event_id"] for r in audit(runtime) if r["reason"] == "pair_limit")
    assert (["g0", "g1", "g2"], ["g3", "g4", "g5"]) == (rated, limited)


@pytest.mark.parametrize("ladder", ["gammon42", "fibs", "prostriker"])
def test_a_pairs_stored_games_count_towards_the_limit_whoever_won_them(runtime, ladder):
    """SPEC 2.4 step 5: not rated once the pair already has 3 rated games in the 24 hours
    before; the three were scored by earlier batches (read back from PostgreSQL), two won by
    one player and one by the other. A game of one of them against someone else is rated."""
    stored = [
        game(
            *(("a", "b") if i % 2 else ("b", "a")),
            ladder=ladder,
            event_id=f"s{i}",
            ended_at=NOW - timedelta(hours=23, minutes=50 - i),
        )
        for i in range(3)
    ]
    publish(runtime, *stored)
    drain(runtime)
    publish(
        runtime,
        game("a", "c", ladder=ladder, event_id="other", ended_at=NOW - timedelta(minutes=2)),
        game("b", "a", ladder=ladder, event_id="fourth", ended_at=NOW - timedelta(minutes=1)),
    )
    drain(runtime)  # one batch
    assert ("rated", None) == outcome(runtime, ladder, "other")
    assert ("unrated", "pair_limit") == outcome(runtime, ladder, "fourth")


def test_the_pair_limit_window_moves_with_ended_at(runtime):
    """A fourth game 24 hours after the first three is rated again."""
    start = NOW - timedelta(hours=30)
    publish(
        runtime,
        *[
            game("a", "b", event_id=f"g{i}", ended_at=start + timedelta(minutes=i))
            for i in range(3)
        ],
    )
    drain(runtime)
    publish(
        runtime, game("a", "b", event_id="late", ended_at=start + timedelta(hours=24, minutes=3))
    )
    drain(runtime)
    assert ("rated", None) == outcome(runtime, "gammon42", "late")


def test_unrated_games_do_not_use_up_the_pair_limit(runtime):
    """Only rated games count towards the limit: three bot-flagged games leave it untouched."""
    publish(
        runtime,
        *[game("a", "b", loser_extra={"is_bot": True}, event_id=f"bot{i}") for i in range(3)],
        game("a", "b", event_id="real"),
    )
    drain(runtime)
    assert ("rated", None) == outcome(runtime, "gammon42", "real")


@pytest.fixture
def lenient_runtime(make_runtime, tmp_path: Path):
    """A runtime whose gammon42 ladder has the bot and pair-limit filters switched off."""
    text = default_config_path().read_text(encoding="utf-8")
    head, tail = text.split("[ladders.fibs]", 1)
    head = head.replace("bots = true", "bots = false").replace(
        "pair_limit = true", "pair_limit = false"
    )
    path = tmp_path / "ladders.toml"
    path.write_text(head + "[ladders.fibs]" + tail, encoding="utf-8")
    return make_runtime(ladder_config=path)


def test_each_filter_can_be_switched_off_per_ladder(lenient_runtime):
    """SPEC 2.4: each filter can be switched off in its ladder's config."""
    rt = lenient_runtime
    publish(
        rt,
        game("a", "bot", loser_extra={"is_bot": True}, event_id="bot"),
        *[game("a", "b", event_id=f"g{i}") for i in range(5)],
        game("c", "bot", ladder="fibs", loser_extra={"is_bot": True}, event_id="fibs-bot"),
    )
    drain(rt)
    assert ("rated", None) == outcome(rt, "gammon42", "bot")
    assert 5 == sum(
        r["outcome"] == "rated" for r in audit(rt, "gammon42") if r["event_id"] != "bot"
    )
    assert ("unrated", "bot") == outcome(rt, "fibs", "fibs-bot")
    assert "bot" in board(rt, "gammon42")
