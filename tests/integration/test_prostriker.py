"""prostriker through the whole pipeline (SPEC 2.3, seed 004)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.conftest import drain, publish
from tests.events import game, link
from tests.integration.helpers import board, card, ledger, outcome, stored_players

NOW = datetime.now(UTC).replace(microsecond=0)


def ps_game(winner: str, loser: str, hours_ago: float, **extra) -> dict:
    return game(
        winner, loser, ladder="prostriker", ended_at=NOW - timedelta(hours=hours_ago), **extra
    )


def test_everyone_starts_at_1200_and_a_first_game_uses_k_40(runtime):
    """Seed 004: 'Alle starten bei 1200.' and 'Weniger als 30 [Partien]: K 40.'"""
    publish(runtime, ps_game("a", "b", 1))
    drain(runtime)
    assert {"a": 1220.0, "b": 1180.0} == board(runtime, "prostriker")
    assert [40.0] == [row["k"] for row in ledger(runtime, "prostriker", "a")]


def test_anonymous_ids_and_accounts_share_one_leaderboard(runtime):
    """Seed 004: 'Beide erscheinen in derselben Tabelle.'"""
    publish(runtime, ps_game("device-7f3a", "acct-ana", 1))
    drain(runtime)
    assert {"device-7f3a", "acct-ana"} == set(board(runtime, "prostriker"))


def test_a_new_account_takes_over_the_anonymous_rating_and_the_anonymous_entry_leaves(runtime):
    """SPEC 2.3 decision: an account with no rated games takes over the anonymous id's rating
    and counts; the anonymous entry leaves the leaderboard."""
    publish(runtime, ps_game("anon", "x", 5), ps_game("anon", "y", 4))
    drain(runtime)
    anon_rating = board(runtime, "prostriker")["anon"]
    publish(runtime, link("prostriker", "anon", "acct", event_id="link-1"))
    drain(runtime)
    ratings = board(runtime, "prostriker")
    assert "anon" not in ratings
    assert anon_rating == ratings["acct"]
    assert "2" == card(runtime, "prostriker", "acct")["games"]
    assert ("applied", "adopted") == outcome(runtime, "prostriker", "link-1")


def test_later_events_naming_the_anonymous_id_are_scored_for_the_account(runtime):
    """SPEC 2.3: after linking, events naming the anonymous id are scored for the account."""
    publish(runtime, ps_game("anon", "x", 5), link("prostriker", "anon", "acct"))
    publish(runtime, ps_game("anon", "y", 1, event_id="after"))
    drain(runtime)
    assert "anon" not in board(runtime, "prostriker")
    assert "2" == card(runtime, "prostriker", "acct")["games"]
    assert ["link", "game"] == [r["kind"] for r in ledger(runtime, "prostriker", "acct")]


def test_an_account_with_rated_games_keeps_its_own_rating_and_histories_are_never_added(runtime):
    """Seed 004: 'die beiden Wertungshistorien werden nie addiert.'"""
    publish(runtime, ps_game("anon", "x", 5), ps_game("acct", "y", 4), ps_game("acct", "z", 3))
    drain(runtime)
    before = board(runtime, "prostriker")
    publish(runtime, link("prostriker", "anon", "acct", event_id="link-1"))
    drain(runtime)
    after = board(runtime, "prostriker")
    assert before["acct"] == after["acct"] and "anon" not in after
    assert "2" == card(runtime, "prostriker", "acct")["games"]
    assert ("applied", "account_kept") == outcome(runtime, "prostriker", "link-1")
    assert 1 == len(ledger(runtime, "prostriker", "anon"))  # the history stays in the audit store


def test_a_second_link_of_either_side_is_refused_and_recorded_not_retried(runtime):
    """Seed 004: 'Einmal und nur mit einem Konto.' Refusals are audit rows, not dead letters."""
    publish(
        runtime,
        ps_game("anon-1", "x", 5),
        ps_game("anon-2", "y", 5),
        link("prostriker", "anon-1", "acct-1", event_id="first"),
        link("prostriker", "anon-1", "acct-2", event_id="anon-again"),
        link("prostriker", "anon-2", "acct-1", event_id="acct-again"),
    )
    drain(runtime)
    assert ("refused", "anonymous_already_linked") == outcome(runtime, "prostriker", "anon-again")
    assert ("refused", "account_already_linked") == outcome(runtime, "prostriker", "acct-again")
    assert [] == runtime.dead_letters.list()
    assert "anon-2" in board(runtime, "prostriker")
    assert stored_players(runtime, "prostriker")["anon-1"]["linked_to"] == "acct-1"


def test_bot_games_are_recorded_never_rated(runtime):
    """Seed 004: 'Partien gegen den Bot ... aufgezeichnet, aber nicht gewertet.'"""
    publish(runtime, ps_game("a", "bot", 1, loser_extra={"is_bot": True}, event_id="b"))
    drain(runtime)
    assert {} == board(runtime, "prostriker")
    assert ("unrated", "bot") == outcome(runtime, "prostriker", "b")
