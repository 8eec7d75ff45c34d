"""``ladder backtest --ruleset``: a ladder's history replayed under another ruleset.

"Works across shapes: a 1v1 ladder can be backtested under glicko2 or openskill" (the
issue); docs/calibration.md: "a game of teams: each team's expected score against the score
it forecasts ... an import, a season's reset and an adjustment are carried onto the
candidate's scale at even odds".

The glicko2 ladder (chess) gets 1v1 games, draws, a 2v2 game and a free-for-all over three
months; its backtest under openskill must equal what the openskill ladder (arena), fed the
same events, stored: the candidate is the openskill ladder it would have been.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from engine import LedgerKind
from engine.calibration import Tally, mean_score
from engine.rulesets import Gammon42Rules, Glicko2Rules, OpenSkillRules
from tests.conftest import drain, publish
from tests.events import game
from tests.integration.helpers import ledger, stored_players
from tests.ladders import ladder, with_shipped
from worker.ops import importer
from worker.ops.backtest import backtest

LADDERS = ladder("chess", "glicko2") + ladder("arena", "openskill")


@pytest.fixture
def rt(make_runtime: Any, tmp_path: Path) -> Any:
    return make_runtime(ladder_config=with_shipped(tmp_path, LADDERS))


def months_back(now: datetime, count: int) -> datetime:
    year, month = now.year, now.month - count
    while month < 1:
        year, month = year - 1, month + 12
    return datetime(year, month, 1, tzinfo=UTC)


def history(ladder: str) -> list[dict[str, Any]]:
    """1v1 games, draws, a 2v2 game and a free-for-all with a tie, over three months."""
    start = months_back(datetime.now(UTC), 3) + timedelta(days=2)
    made: list[dict[str, Any]] = []

    def at(i: int) -> datetime:
        return start + timedelta(days=i * 4, hours=i)

    def played(i: int, **fields: Any) -> dict[str, Any]:
        event = game("x", "y", ladder=ladder, ended_at=at(i), event_id=f"{ladder}-{i}")
        del event["winner"], event["loser"]
        return {**event, **fields}

    names = ["a", "b", "c", "d", "e", "f"]
    for i in range(18):
        kind = i % 6
        if kind == 4:
            one, two = names[i % 6], names[(i + 3) % 6]
            made.append(played(i, result="draw", players=[{"player_id": one}, {"player_id": two}]))
        elif kind == 5 and i < 12:
            lineup = [(1, ["a", "b"]), (2, ["c", "d"])]
            made.append(played(i, teams=_teams(lineup)))
        elif kind == 5:
            lineup = [(1, ["a"]), (2, ["c"]), (2, ["e"]), (4, ["f"])]
            made.append(played(i, teams=_teams(lineup)))
        else:
            winner, loser = names[(i * 5) % 6], names[(i * 5 + 1 + i % 4) % 6]
            made.append(
                game(winner, loser, ladder=ladder, ended_at=at(i), event_id=f"{ladder}-{i}")
            )
    return made


def _teams(lineup: list[tuple[int, list[str]]]) -> list[dict[str, Any]]:
    return [{"rank": r, "players": [{"player_id": p} for p in ids]} for r, ids in lineup]


def by_hand(rt: Any, ladder: str) -> Tally:
    """The stored glicko2 calibration from the stored rows: each team's mean expected against
    its mean score against the other teams (glicko2's ``team_expected``)."""
    tally = Tally()
    for event in history(ladder):
        rows = {}
        for pid in set(_players(event)):
            for row in ledger(rt, ladder, pid):
                if row["event_id"] == event["event_id"] and row["kind"] == LedgerKind.GAME.value:
                    rows[pid] = row["expected"]
        teams = _lineup(event)
        expected = [sum(rows[p] for p in team) / len(team) for _, team in teams]
        ranks = [rank for rank, _ in teams]
        tally.add_teams(expected, [mean_score(ranks, i) for i in range(len(ranks))])
    return tally


def _lineup(event: dict[str, Any]) -> list[tuple[int, list[str]]]:
    if "winner" in event:
        return [(1, [event["winner"]["player_id"]]), (2, [event["loser"]["player_id"]])]
    if "players" in event:
        return [(1, [p["player_id"]]) for p in event["players"]]
    return [(t["rank"], [p["player_id"] for p in t["players"]]) for t in event["teams"]]


def _players(event: dict[str, Any]) -> list[str]:
    return [p for _, team in _lineup(event) for p in team]


def test_a_glicko2_ladder_with_draws_and_team_games_backtested_under_openskill(rt):
    """Every shape rated by both sides; the stored side as computed from the stored rows; the
    candidate exactly the openskill ladder fed the same events (its ratings, its calibration,
    its board month by month)."""
    publish(rt, *history("chess"), *history("arena"))
    drain(rt)
    chess, arena = rt.config.ladders["chess"], rt.config.ladders["arena"]
    found = backtest(rt.engine, chess, {}, None, OpenSkillRules()).as_json()
    assert found["ruleset"] == {"stored": "glicko2", "candidate": "openskill"}
    assert found["rated_by_one_side_only"] == {"stored": 0, "candidate": 0}
    # 17 games of two sides, one forecast each, and a free-for-all of four teams, four.
    assert found["stored"]["games"] == found["candidate"]["games"] == 17 + 4
    want = by_hand(rt, "chess").scores()
    assert found["stored"]["brier"] == pytest.approx(want.brier, rel=1e-12)
    assert found["stored"]["log_loss"] == pytest.approx(want.log_loss, rel=1e-12)
    assert found["stored"]["hit_rate"] == pytest.approx(want.hit_rate, rel=1e-12)
    # The openskill ladder's own backtest under its own ruleset: its stored figures.
    own = backtest(rt.engine, arena, {}, None, OpenSkillRules()).as_json()
    assert own["candidate"] == own["stored"]
    for key in ("games", "brier", "log_loss", "hit_rate", "buckets", "inflation"):
        assert found["candidate"][key] == own["stored"][key], key
    stored = stored_players(rt, "arena")
    assert {p: v["candidate"] for p, v in found["players"].items()} == {
        p: row["rating"] for p, row in stored.items()
    }
    months = [m["month"] for m in found["candidate"]["inflation"]["months"]]
    assert months == [m["month"] for m in found["stored"]["inflation"]["months"]]
    assert len(months) >= 3
    assert 20 < found["candidate"]["inflation"]["months"][-1]["mean"] < 30  # mu's scale


def test_a_glicko2_ladder_under_its_own_ruleset_is_its_stored_history(rt):
    """The identity: the ladder's own ruleset at its own parameters reproduces every stored
    figure, draws and team games included."""
    publish(rt, *history("chess"))
    drain(rt)
    found = backtest(rt.engine, rt.config.ladders["chess"], {}, None, Glicko2Rules()).as_json()
    assert found["candidate"] == found["stored"]
    assert all(v["candidate"] == v["stored"] for v in found["players"].values())


def test_an_import_is_carried_onto_the_candidates_scale(rt, tmp_path):
    """An imported gammon42 player at 1700 starts an openskill backtest at 25 + 200 x (the
    openskill odds unit / the gammon42 one): beta sqrt(pi) / 2 over 1200 / ln 10."""
    path = tmp_path / "players.jsonl"
    path.write_text('{"player_id": "ann", "rating": 1700, "games": 30}\n', encoding="utf-8")
    config = rt.config.ladders["gammon42"]
    report = importer.import_file(rt.engine, rt.leaderboard_redis, config, path)
    assert report.committed
    publish(rt, game("bob", "cy", ended_at=datetime.now(UTC) - timedelta(hours=1)))
    drain(rt)
    found = backtest(rt.engine, config, {}, None, OpenSkillRules()).as_json()
    unit = (25.0 / 6.0) * math.sqrt(math.pi) / 2
    assert unit == OpenSkillRules().odds_unit
    assert found["players"]["ann"]["candidate"] == pytest.approx(
        25.0 + 200.0 * unit / (1200.0 / math.log(10)), rel=1e-12
    )
    assert found["players"]["ann"]["stored"] == 1700.0
    same = backtest(rt.engine, config, {}, None, Gammon42Rules()).as_json()
    assert same["players"]["ann"]["candidate"] == 1700.0  # the ladder's own kind: as stored
