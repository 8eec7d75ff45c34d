"""The hand-drawn SVG charts and the backtest's ``--set`` parsing (no I/O)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from engine import Gammon42Rules
from engine.calibration import Forecast, Tally
from worker.entrypoints.console.charts import Point, Series, calibration_svg, rating_svg
from worker.ladders import load_config
from worker.ops.backtest import BadParameter, candidate_rules, parameter_names, parse_overrides


def test_calibration_chart_has_a_point_per_filled_bucket_and_escapes_names():
    """'--plot draws observed against expected with the diagonal and the
    bucket counts'; series names are text, never markup."""
    buckets = Tally().extend([Forecast(0.52, 1), Forecast(0.71, 0), Forecast(0.73, 1)]).scores()
    svg = calibration_svg([Series("<b>v1</b>", buckets.as_json()["buckets"])], "t & <i>")
    assert svg.count('class="point"') == 2
    assert svg.count('class="count"') == 10
    assert 'class="diagonal"' in svg
    assert "<b>" not in svg and "<i>" not in svg
    assert "&lt;b&gt;v1&lt;/b&gt;" in svg and "t &amp; &lt;i&gt;" in svg


def test_rating_chart_has_one_point_per_game():
    """'a chart of their rating over time': one point per rated game."""
    points = [Point(float(i), 1500.0 + i * 7, f"game {i} <x>") for i in range(12)]
    svg = rating_svg(points, "alice")
    assert svg.count('class="point"') == 12
    assert "<x>" not in svg and "game 11 &lt;x&gt;" in svg
    assert rating_svg([], "nobody").count('class="point"') == 0
    assert "no rated games yet" in rating_svg([], "nobody")
    assert rating_svg(points[:1], "one").count('class="point"') == 1


@pytest.fixture(scope="module")
def ladders():
    return load_config().ladders


def test_set_takes_every_parameter_of_the_ruleset_typed(ladders):
    """'--set takes any parameter of the ladder's ruleset (divisor=1600,
    k=24, heavy_games=40, newcomer_max=4, ...)'."""
    gammon = ladders["gammon42"]
    assert parse_overrides(gammon, ["divisor=1600", "k=24", "heavy_games=40"]) == {
        "divisor": 1600.0,
        "k": 24,
        "heavy_games": 40,
    }
    assert parse_overrides(gammon, ["heavy_volume=false", "prizes=[60,30,10]"]) == {
        "heavy_volume": False,
        "prizes": (60, 30, 10),
    }
    assert parse_overrides(ladders["fibs"], ["newcomer_max=4"]) == {"newcomer_max": 4.0}
    tiers = parse_overrides(ladders["prostriker"], ["k_tiers=[[20,40],[100,24]]"])
    assert tiers == {"k_tiers": ((20, 40), (100, 24))}
    assert "version" not in parameter_names(gammon)
    assert "divisor" in parameter_names(gammon) and "heavy_k" in parameter_names(gammon)


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ("colour=blue", "valid: divisor, heavy_games, heavy_k, heavy_volume"),
        ("k=2.5", "k='2.5': must be int"),
        ("heavy_volume=maybe", "must be bool"),
        ("prizes=50", "must be a JSON array"),
        ("k=0", "k: must be > 0"),
        ("=3", "write KEY=VALUE"),
    ],
)
def test_set_refuses_what_the_ruleset_cannot_take(ladders, given, says):
    """Unknown names are refused with the list of valid ones; bad values name the field."""
    with pytest.raises(BadParameter) as refused:
        parse_overrides(ladders["gammon42"], [given])
    assert says in str(refused.value)


def test_candidate_rules_apply_from_the_start_time_on(ladders):
    """'a candidate ruleset version in force from --from': earlier games keep the stored
    version; every version from then on takes the --set values."""
    gammon = ladders["gammon42"]
    start = datetime(2026, 10, 15, tzinfo=UTC)
    made = candidate_rules(gammon, {"divisor": 1600.0}, start)

    def rules(at: datetime) -> Gammon42Rules:
        found = made(at)
        assert isinstance(found, Gammon42Rules)
        return found

    assert rules(datetime(2026, 9, 1, tzinfo=UTC)).divisor == 800  # 1.2.0, before --from
    assert rules(datetime(2026, 10, 10, tzinfo=UTC)).divisor == 1200  # 1.3.1, before --from
    later = rules(datetime(2026, 11, 1, tzinfo=UTC))
    assert (later.divisor, later.version) == (1600, "1.3.1")
    assert rules(datetime(2026, 11, 2, tzinfo=UTC)) is later  # made once per version
    everything = candidate_rules(gammon, {"k": 20}, None)
    earliest = everything(datetime(2020, 1, 1, tzinfo=UTC))
    assert isinstance(earliest, Gammon42Rules) and earliest.k == 20
