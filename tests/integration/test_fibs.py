"""fibs through the whole pipeline (SPEC 2.2, seed 003)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

from tests.conftest import drain, publish
from tests.events import game, player_updated
from tests.integration.helpers import board, card

NOW = datetime.now(UTC).replace(microsecond=0)


def fibs_game(winner: str, loser: str, n: int, minutes_ago: int, **extra) -> dict:
    return game(
        winner,
        loser,
        ladder="fibs",
        match_length=n,
        ended_at=NOW - timedelta(minutes=minutes_ago),
        **extra,
    )


def test_ratings_are_stored_unrounded_and_experience_is_the_match_length(runtime):
    """Seed 003: V = 4 sqrt(N), newcomers x 5, no rounding; experience = total match length."""
    publish(runtime, fibs_game("a", "b", 5, 10))
    drain(runtime)
    ratings = board(runtime, "fibs")
    assert math.isclose(1500 + 22.360679774997898, ratings["a"], rel_tol=0, abs_tol=1e-9)
    assert math.isclose(1500 - 22.360679774997898, ratings["b"], rel_tol=0, abs_tol=1e-9)
    assert ("5", "1") == (
        card(runtime, "fibs", "a")["experience"],
        card(runtime, "fibs", "a")["provisional"],
    )


def test_the_multiplier_uses_each_players_own_experience_before_the_match(runtime):
    """SPEC 2.2: max(1, 5 - experience/100) from the player's own experience before the match."""
    publish(runtime, *[fibs_game("vet", f"o{i}", 7, 300 - i) for i in range(3)])  # vet: 21
    drain(runtime)
    publish(runtime, fibs_game("vet", "new", 1, 1, event_id="m"))
    drain(runtime)
    from tests.integration.helpers import ledger

    vet, new = ledger(runtime, "fibs", "vet")[-1], ledger(runtime, "fibs", "new")[-1]
    assert math.isclose(5 - 21 / 100, vet["k"]) and math.isclose(5.0, new["k"])


def test_a_rating_stops_being_provisional_at_50_experience(runtime):
    """Seed 003: 'Unter 50 Erfahrung ist deine Wertung vorlaeufig.'"""
    publish(runtime, *[fibs_game("a", f"o{i}", 7, 500 - i) for i in range(7)])  # 49
    drain(runtime)
    assert "1" == card(runtime, "fibs", "a")["provisional"]
    publish(runtime, fibs_game("a", "o-last", 1, 1))  # 50
    drain(runtime)
    assert "0" == card(runtime, "fibs", "a")["provisional"]


def test_the_public_list_needs_email_display_name_and_20_experience(runtime):
    """Seed 003: 'Eine bestaetigte E-Mail und ein selbst gewaehlter Anzeigename. Mindestens 20
    Erfahrung.'"""
    publish(
        runtime,
        player_updated("fibs", "ok", email=True, name=True),
        player_updated("fibs", "no-name", email=True, name=False),
        player_updated("fibs", "no-mail", email=False, name=True),
        player_updated("fibs", "short", email=True, name=True),
    )
    for i, pid in enumerate(["ok", "no-name", "no-mail"]):
        publish(runtime, *[fibs_game(pid, f"x{i}-{j}", 5, 100 + j) for j in range(4)])  # 20
    publish(runtime, *[fibs_game("short", f"y{j}", 5, 100 + j) for j in range(3)])  # 15
    drain(runtime)
    assert {"ok"} == set(board(runtime, "fibs", "public"))
    assert {"ok", "no-name", "no-mail", "short"} <= set(board(runtime, "fibs"))
    publish(runtime, player_updated("fibs", "no-name", email=True, name=True))
    drain(runtime)
    assert {"ok", "no-name"} == set(board(runtime, "fibs", "public"))
    publish(runtime, player_updated("fibs", "ok", email=False, name=True))
    drain(runtime)
    assert {"no-name"} == set(board(runtime, "fibs", "public"))


def test_only_the_first_3_matches_of_a_pair_in_24_hours_change_ratings(runtime):
    """Seed 003: 'Nur die ersten 3 gewerteten Matches zwischen denselben zwei Spielern innerhalb
    von 24 Stunden veraendern ihre Wertung.'"""
    publish(runtime, *[fibs_game("a", "b", 1, 200 - 20 * i, event_id=f"m{i}") for i in range(6)])
    drain(runtime)
    from tests.integration.helpers import audit

    outcomes = [(r["event_id"], r["outcome"], r["reason"]) for r in audit(runtime, "fibs")]
    assert [
        ("m0", "rated", None),
        ("m1", "rated", None),
        ("m2", "rated", None),
        ("m3", "unrated", "pair_limit"),
        ("m4", "unrated", "pair_limit"),
        ("m5", "unrated", "pair_limit"),
    ] == sorted(outcomes)
    assert "3" == card(runtime, "fibs", "a")["experience"]


def test_games_against_the_ai_are_never_rated(runtime):
    """Seed 003: 'Zaehlen Partien gegen die KI? Nein.'"""
    publish(runtime, fibs_game("a", "ai-profi", 5, 5, loser_extra={"is_bot": True}))
    drain(runtime)
    assert {} == board(runtime, "fibs")
