"""Ruleset parameters: the seeds' defaults and validation of a ladder file's values (SPEC 2)."""

from typing import Any

import pytest

from engine.rulesets import (
    RULESET_KINDS,
    FibsRules,
    Gammon42Rules,
    Glicko2Rules,
    OpenSkillRules,
    ProStrikerRules,
)


def test_kinds_map_to_their_ruleset_classes() -> None:
    """A ladder file names its ruleset by kind."""
    assert {
        "gammon42": Gammon42Rules,
        "fibs": FibsRules,
        "prostriker": ProStrikerRules,
        "glicko2": Glicko2Rules,
        "openskill": OpenSkillRules,
    } == RULESET_KINDS


@pytest.mark.parametrize(
    ("rules", "start", "divisor"),
    [
        (Gammon42Rules(), 1500.0, 1200.0),  # seed 002
        (FibsRules(), 1500.0, 2000.0),  # seed 003
        (ProStrikerRules(), 1200.0, 400.0),  # seed 004
    ],
)
def test_defaults_are_the_seeds_numbers(rules: Any, start: float, divisor: float) -> None:
    """Every ladder starts and divides as its seed says."""
    assert (start, divisor) == (rules.start, rules.divisor)


def test_gammon42_defaults_are_version_1_3_1() -> None:
    """Seed 002: K 32, K 16 from 50 ranked games in 7 days, prizes +50 / +25 / +15."""
    rules = Gammon42Rules()
    assert ("1.3.1", 32, 16, 50, 168, (50, 25, 15)) == (
        rules.version,
        rules.k,
        rules.heavy_k,
        rules.heavy_games,
        rules.heavy_window_hours,
        rules.prizes,
    )


def test_rulesets_are_immutable_and_hashable() -> None:
    """A ruleset is a value: it cannot change under a running worker and can key a cache."""
    rules = ProStrikerRules()
    with pytest.raises(AttributeError):
        rules.divisor = 800.0  # type: ignore[misc]
    assert hash(rules) == hash(ProStrikerRules())


def test_lists_from_a_toml_file_become_tuples() -> None:
    """TOML arrays arrive as lists; the ruleset stores tuples so it stays hashable."""
    rules = ProStrikerRules(k_tiers=[[10, 50], [100, 30]])  # type: ignore[arg-type]
    prizes = Gammon42Rules(prizes=[100, 50])  # type: ignore[arg-type]
    assert (((10, 50), (100, 30)), (100, 50)) == (rules.k_tiers, prizes.prizes)


@pytest.mark.parametrize(
    ("cls", "params", "field"),
    [
        (Gammon42Rules, {"divisor": 0.0}, "divisor"),
        (Gammon42Rules, {"divisor": float("nan")}, "divisor"),
        (Gammon42Rules, {"k": 0}, "k"),
        (Gammon42Rules, {"heavy_k": -16}, "heavy_k"),
        (Gammon42Rules, {"heavy_games": 0}, "heavy_games"),
        (Gammon42Rules, {"heavy_window_hours": 0}, "heavy_window_hours"),
        (Gammon42Rules, {"prizes": (50, -25)}, "prizes"),
        (Gammon42Rules, {"version": ""}, "version"),
        (FibsRules, {"divisor": -2000.0}, "divisor"),
        (FibsRules, {"value_factor": 0.0}, "value_factor"),
        (FibsRules, {"newcomer_max": 0.5}, "newcomer_max"),
        (FibsRules, {"newcomer_step": 0.0}, "newcomer_step"),
        (FibsRules, {"newcomer_limit": -1}, "newcomer_limit"),
        (FibsRules, {"start": float("inf")}, "start"),
        (ProStrikerRules, {"divisor": 0.0}, "divisor"),
        (ProStrikerRules, {"k_tiers": ((200, 24), (30, 40))}, "k_tiers"),
        (ProStrikerRules, {"k_tiers": ((30, 40), (30, 24))}, "k_tiers"),
        (ProStrikerRules, {"k_tiers": ((30, 0),)}, "k_tiers"),
        (ProStrikerRules, {"k_tiers": ((0, 40),)}, "k_tiers"),
        (ProStrikerRules, {"k_established": 0}, "k_established"),
    ],
)
def test_invalid_parameters_are_rejected_naming_the_field(
    cls: Any, params: dict[str, Any], field: str
) -> None:
    """A bad ladder file fails when it is loaded, and the error names the field."""
    with pytest.raises(ValueError, match=rf"^{field}:"):
        cls(**params)
