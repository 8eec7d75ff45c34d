"""A season's reset, the one rule the close and every replay of it apply
(``Ruleset.season_reset``, ``engine.replay.Season``).

Seed 004: "Season 0" is the first; closing one archives its standings and opens the next.
SPEC 7: on a ruleset that keeps a deviation the reset is soft, "deviation raised, not the
rating". The whole-number rulesets round a moved rating half away from zero (SPEC 2.1/2.3).
"""

from datetime import UTC, datetime

import pytest

from engine import (
    FibsRules,
    Gammon42Rules,
    LedgerKind,
    Player,
    Policy,
    ProStrikerRules,
    Replay,
    Season,
)
from engine.rulesets import Glicko2Rules, OpenSkillRules

AT = datetime(2026, 3, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("rules", "rating", "reset", "fraction", "after"),
    [
        (ProStrikerRules(), 1239.0, "toward_start", 0.5, 1220.0),  # 1219.5: half away from 0
        (ProStrikerRules(), 1161.0, "toward_start", 0.5, 1181.0),  # 1180.5 up, 1181
        (ProStrikerRules(), 1239.0, "start", 0.5, 1200.0),
        (ProStrikerRules(), 1239.0, "none", 0.5, 1239.0),
        (Gammon42Rules(), 1501.0, "toward_start", 0.5, 1501.0),  # 1500.5 -> 1501
        (Gammon42Rules(), 1499.0, "toward_start", 0.5, 1500.0),  # 1499.5 -> 1500 (away from 0)
        (Gammon42Rules(), 1600.0, "toward_start", 0.25, 1575.0),
        (FibsRules(), 1501.0, "toward_start", 0.5, 1500.5),  # fibs keeps ratings unrounded
    ],
)
def test_a_hard_reset_moves_the_rating(rules, rating, reset, fraction, after):
    assert (after, None) == rules.season_reset(rating, None, reset, fraction)


@pytest.mark.parametrize("rules", [Glicko2Rules(), OpenSkillRules()])
def test_a_soft_reset_raises_the_deviation_and_keeps_the_rating(rules):
    start = rules.start_deviation
    low = start / 4
    assert (1612.5, low + (start - low) * 0.5) == rules.season_reset(
        1612.5, low, "toward_start", 0.5
    )
    assert (1612.5, start) == rules.season_reset(1612.5, low, "start", 0.5)
    assert (1612.5, None) == rules.season_reset(1612.5, None, "start", 0.5)  # no game yet


def test_a_replay_resets_every_player_not_linked_in_player_order():
    replay = Replay(Policy(), lambda at: ProStrikerRules())
    players = replay.state.players
    for pid, rating in (("b", 1239.0), ("a", 1161.0), ("c", 1200.0), ("anon", 1300.0)):
        players[("L", pid)] = Player("L", pid, rating)
    players[("L", "anon")].linked_to = "a"
    players[("M", "x")] = Player("M", "x", 1300.0)  # another ladder's player
    rows = replay.season("L", Season("S0", AT, "toward_start", 0.5))
    assert [(r.player_id, r.kind, r.before, r.after, r.delta) for r in rows] == [
        ("a", LedgerKind.SEASON, 1161.0, 1181.0, 20.0),
        ("b", LedgerKind.SEASON, 1239.0, 1220.0, -19.0),
    ]  # c is at the start already; the linked anonymous id and ladder M are not reset
    assert (players[("L", "a")].version, players[("L", "a")].updated_at) == (1, AT)
    assert players[("L", "c")].version == 0
    assert players[("L", "anon")].rating == players[("M", "x")].rating == 1300.0
    assert Season("S0", AT).event_id == "season:S0"
    assert [] == replay.season("L", Season("S1", AT, "none"))
