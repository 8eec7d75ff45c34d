"""The rulesets section of the benchmark: its ladders, its workload and its goals (no timings
asserted)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench import rulesets


def test_the_config_rates_each_compared_ladder_by_the_ruleset_it_is_named_after(
    tmp_path: Path,
) -> None:
    path, scores = rulesets.write_config(tmp_path)
    assert path.parent == tmp_path
    assert set(scores) == set(rulesets.RULESETS)
    assert scores["gammon42"](1510.0, None) == 1510.0
    assert scores["glicko2"](1510.0, 80.0) == 1510.0
    assert scores["openskill"](25.0, 2.0) == 25.0 - 3.0 * 2.0  # mu - k sigma


def test_each_ladder_gets_the_same_games_but_for_the_ladder_s_name() -> None:
    per_ladder, mix = rulesets.workload(60)
    assert mix.total == mix.unique_valid == 60
    games = {name: [json.loads(p) for p in payloads] for name, payloads in per_ladder.items()}
    for name, events in games.items():
        assert {e["ladder"] for e in events} == {name}
        assert [{**e, "ladder": "gammon42"} for e in events] == games["gammon42"]


def a_result(glicko2: float, openskill: float, ok: bool = True) -> dict[str, Any]:
    def entry(ratio: float | None) -> dict[str, Any]:
        return {
            "events_per_second": 2_000,
            "rounds": [2_000],
            "worker_cpu_us_per_event": 200,
            "check_ok": ok,
            **({} if ratio is None else {"ratio_to_gammon42": ratio, "round_ratios": [ratio]}),
            "cpu_ratio_to_gammon42": ratio,
        }

    engine = {
        name: {"cpu_us_per_event": 10.0, "ratio_to_gammon42": 1.0} for name in rulesets.RULESETS
    }
    return {
        "rulesets": {
            "events": 20_000,
            "players": 1_333,
            "rounds": 1,
            "gammon42": entry(None),
            "glicko2": entry(glicko2),
            "openskill": entry(openskill),
            "engine": engine,
        }
    }


def test_the_goals_are_each_new_ruleset_at_0_8x_gammon42_and_checked() -> None:
    glicko2, openskill = rulesets.goals(a_result(0.8, 0.79))
    assert (glicko2[1:], openskill[1:]) == (("0.80x", True), ("0.79x", False))
    assert "glicko2" in glicko2[0] and "openskill" in openskill[0]
    assert [met for _, _, met in rulesets.goals(a_result(0.9, 0.9, ok=False))] == [False, False]
    assert rulesets.goals({}) == []


def test_the_lines_name_every_ruleset_and_the_engine_alone() -> None:
    shown = "\n".join(rulesets.lines(a_result(0.85, 0.9)))
    for name in rulesets.RULESETS:
        assert name in shown
    assert "0.85x gammon42" in shown and "the engine alone" in shown
    assert rulesets.lines({}) == []


def test_the_page_names_the_same_rulesets_in_the_same_order() -> None:
    from bench import page

    assert page.RULESETS == rulesets.RULESETS
