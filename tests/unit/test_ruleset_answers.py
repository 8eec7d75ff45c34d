"""Each ruleset answers for itself what the ladder rules ask of it (SPEC 2: one ruleset per
ladder; issue 32: ``engine/ladder.py`` names no ruleset, and the engine has one
implementation of every rule, no ``exec``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from engine import FibsRules, Gammon42Rules, Player, PlayerState, ProStrikerRules, Ruleset
from engine.rating import display_rating, is_provisional

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "engine"
WORKER = ROOT / "worker"
RULESET_KINDS = {"gammon42", "fibs", "prostriker"}
RULESET_NAMES = {"Gammon42Rules", "FibsRules", "ProStrikerRules"}


@pytest.mark.parametrize(
    ("rules", "hours"),
    [
        (Gammon42Rules(), 168),  # seed 002 1.3.1: the 7 days before ended_at
        (Gammon42Rules(heavy_window_hours=24), 24),
        (Gammon42Rules(version="1.3.0", heavy_volume=False), None),  # before 1.3.1: one K
        (FibsRules(), None),
        (ProStrikerRules(), None),  # K tiers by rated games, not by a window
    ],
)
def test_the_k_window_is_the_rulesets_own(rules: Ruleset, hours: int | None) -> None:
    """SPEC 2.1: only Gammon42 1.3.1 counts ranked games in a window for its K."""
    assert hours == rules.k_window_hours


@pytest.mark.parametrize(
    ("rules", "prizes"),
    [
        (Gammon42Rules(), (50, 25, 15)),  # seed 002: +50 / +25 / +15
        (Gammon42Rules(prizes=(10,)), (10,)),
        (FibsRules(), ()),
        (ProStrikerRules(), ()),
    ],
)
def test_only_gammon42_pays_tournament_prizes(rules: Ruleset, prizes: tuple[int, ...]) -> None:
    """SPEC 2.1: a public tournament's podium earns the ladder's prizes; the others have none."""
    assert prizes == rules.prizes


def _player(experience: int, verified: bool, named: bool) -> Player:
    return Player(
        "l",
        "p",
        1500.0,
        experience=experience,
        email_verified=verified,
        display_name_chosen=named,
    )


@pytest.mark.parametrize(
    ("experience", "verified", "named", "fibs"),
    [
        (20, True, True, True),
        (19, True, True, False),
        (20, False, True, False),
        (20, True, False, False),
    ],
)
def test_public_eligibility_is_fibs_own_rule(
    experience: int, verified: bool, named: bool, fibs: bool
) -> None:
    """Seed 003 section 05: verified e-mail, chosen display name and experience >= 20; the
    other rulesets list every rated player publicly."""
    player = _player(experience, verified, named)
    assert (fibs, True, True) == (
        FibsRules().public_eligible(player),
        Gammon42Rules().public_eligible(player),
        ProStrikerRules().public_eligible(player),
    )


def test_the_provisional_flag_and_decimals_are_the_rulesets_own() -> None:
    """SPEC 2.2: FIBS flags ratings below 50 experience and shows one decimal; the others
    have no flag and show whole numbers."""
    newcomer = PlayerState(1500.0, experience=49)
    assert [True, False, False] == [
        is_provisional(r, newcomer) for r in (FibsRules(), Gammon42Rules(), ProStrikerRules())
    ]
    assert (1, 0, 0) == (FibsRules.decimals, Gammon42Rules.decimals, ProStrikerRules.decimals)
    assert ("1500.5", "1501") == (
        display_rating(FibsRules(), 1500.5),
        display_rating(Gammon42Rules(), 1500.5),
    )


def _modules() -> list[tuple[str, ast.Module]]:
    return [
        (path.name, ast.parse(path.read_text(encoding="utf-8")))
        for path in sorted(ENGINE.glob("*.py"))
    ]


def test_the_ladder_rules_name_no_ruleset() -> None:
    """engine/ladder.py and engine/rating.py ask the ruleset; they import none by name."""
    named = sorted(
        f"{name}: {node.id}"
        for name, tree in _modules()
        if name in ("ladder.py", "rating.py", "replay.py")
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and node.id in RULESET_NAMES
    ) + sorted(
        f"{name}: import {alias.name}"
        for name, tree in _modules()
        if name in ("ladder.py", "rating.py", "replay.py")
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if alias.name in RULESET_NAMES
    )
    assert [] == named


def test_the_engine_neither_dispatches_on_the_ruleset_nor_generates_code() -> None:
    """No ``isinstance(rules, ...)`` and no ``exec``/``eval``/``compile`` anywhere in engine/."""
    found = []
    for name, tree in _modules():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
                continue
            if node.func.id in ("exec", "eval", "compile"):
                found.append(f"{name}:{node.lineno} {node.func.id}")
            first = node.args[0] if node.args else None
            if node.func.id == "isinstance" and isinstance(first, ast.Name):
                if first.id == "rules":
                    found.append(f"{name}:{node.lineno} isinstance(rules, ...)")
    assert [] == found


@pytest.mark.parametrize(
    ("rules", "experience", "stake"),
    [
        (Gammon42Rules(), False, "cube"),  # seed 002: the cube coefficient
        (FibsRules(), True, "match_length"),  # seed 003: experience; V = 4 sqrt(N)
        (ProStrikerRules(), False, None),  # seed 004: plain Elo
    ],
)
def test_what_a_card_and_a_game_show_is_the_rulesets_own(
    rules: Ruleset, experience: bool, stake: str | None
) -> None:
    """A card shows experience where the ruleset keeps it; a game is described (and a
    calibration split) by the fact its change scales with."""
    assert (experience, stake) == (rules.experience, rules.stake)


def test_worker_names_no_ruleset_outside_the_configuration() -> None:
    """worker/ asks the ruleset (its ``kind``, ``stake``, ``whole_ratings``...), never
    compares a name with a ruleset's: no ``== "fibs"`` and the like. The sample events of the
    demo name the shipped ladders, which is configuration."""
    found = []
    for path in sorted(WORKER.rglob("*.py")):
        if path.name == "sample.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Compare):
                continue
            sides = [node.left, *node.comparators]
            named = [s.value for s in sides if isinstance(s, ast.Constant)]
            if RULESET_KINDS & {n for n in named if isinstance(n, str)}:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert [] == found
