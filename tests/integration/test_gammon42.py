"""gammon42 through the whole pipeline (SPEC 2.1, seed 002)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.conftest import drain, publish
from tests.events import game, link, tournament
from tests.integration.helpers import board, ledger, outcome

NOW = datetime.now(UTC).replace(microsecond=0)


def bot_games(player: str, count: int, end: datetime, *, prefix: str) -> list[dict]:
    """Ranked games against bots: unrated, but they count as ranked games for K."""
    return [
        game(
            player,
            f"bot-{prefix}-{i}",
            ended_at=end - timedelta(hours=1 + i),
            loser_extra={"is_bot": True},
        )
        for i in range(count)
    ]


def test_sixty_games_against_ten_at_equal_ratings_gives_plus_8_and_minus_16(runtime):
    """Seed 002: '60 ranked games this week ... and your equally rated opponent has played 10,
    a win gives you +8 while they lose -16.'"""
    publish(
        runtime, *bot_games("heavy", 60, NOW, prefix="h"), *bot_games("light", 10, NOW, prefix="l")
    )
    publish(runtime, game("heavy", "light", event_id="decider", ended_at=NOW))
    drain(runtime)
    assert {"heavy": 1508.0, "light": 1484.0} == board(runtime, "gammon42")
    assert [16.0] == [row["k"] for row in ledger(runtime, "gammon42", "heavy")]
    assert [32.0] == [row["k"] for row in ledger(runtime, "gammon42", "light")]


def test_if_they_win_they_gain_16_and_you_lose_8(runtime):
    """Seed 002: 'If they win, they gain +16 and you lose -8.'"""
    publish(
        runtime, *bot_games("heavy", 60, NOW, prefix="h"), *bot_games("light", 10, NOW, prefix="l")
    )
    publish(runtime, game("light", "heavy", event_id="decider", ended_at=NOW))
    drain(runtime)
    assert {"heavy": 1492.0, "light": 1516.0} == board(runtime, "gammon42")


@pytest.mark.parametrize(("games", "k"), [(49, 32.0), (50, 16.0)])
def test_k_drops_to_16_at_50_ranked_games_in_the_7_days_before(runtime, games, k):
    """Seed 002: 'Fewer than 50 games: K is 32. 50 games or more: K is 16.'"""
    publish(runtime, *bot_games("p", games, NOW, prefix="p"))
    drain(runtime)  # a separate batch: the window is read back from PostgreSQL
    publish(runtime, game("p", "q", event_id="decider", ended_at=NOW))
    drain(runtime)
    assert [k] == [row["k"] for row in ledger(runtime, "gammon42", "p")]


def test_games_older_than_7_days_do_not_count_and_the_game_itself_is_not_counted(runtime):
    """Seed 002: 'always the 7 days before the game being scored, and that game itself is not
    counted.'"""
    old = bot_games("p", 50, NOW - timedelta(days=7, hours=1), prefix="old")
    publish(runtime, *old, *bot_games("p", 49, NOW, prefix="new"))
    publish(runtime, game("p", "q", event_id="decider", ended_at=NOW))
    drain(runtime)
    assert [32.0] == [row["k"] for row in ledger(runtime, "gammon42", "p")]


def test_each_game_of_one_batch_counts_its_own_7_days_at_both_edges(runtime):
    """SPEC 2.1: K 16 'for a player with >= 50 ranked games in the 7 days before this game's
    ended_at (this game not counted)'. Two games of one batch, 10 hours apart, see different
    windows: a stored game at the first one's window start is in the first's window only, a
    stored game that ended between the two (it arrived earlier) in the second's only, and 48
    stored games in both (one exactly at the second's window start)."""
    first = NOW - timedelta(hours=10)
    second = NOW
    week = timedelta(days=7)
    both = [second - week, *(second - week + timedelta(minutes=m) for m in range(1, 48))]
    stored = [
        game("p", f"bot-{i}", ended_at=at, loser_extra={"is_bot": True})
        for i, at in enumerate([*both, first - week, first + timedelta(hours=5)])
    ]
    publish(runtime, *stored)
    drain(runtime)
    publish(
        runtime,
        game("p", "q", event_id="one", ended_at=first),  # 48 + the one at its window start
        game("p", "r", event_id="two", ended_at=second),  # 48 + the later stored one + "one"
    )
    drain(runtime)  # one batch
    assert [32.0, 16.0] == [row["k"] for row in ledger(runtime, "gammon42", "p")]


def test_a_game_after_a_link_in_the_same_batch_counts_the_accounts_7_days(runtime):
    """SPEC 2.3: 'After linking, events naming the anonymous id are scored for the account';
    the account's ranked games count for its K (SPEC 2.1), also when the link and the game
    come in one batch."""
    publish(runtime, *bot_games("acct", 50, NOW, prefix="a"))
    drain(runtime)
    publish(
        runtime,
        link("gammon42", "anon", "acct"),
        game("anon", "q", event_id="after-link", ended_at=NOW),
    )
    drain(runtime)  # one batch
    assert [16.0] == [row["k"] for row in ledger(runtime, "gammon42", "acct")]


@pytest.mark.parametrize(
    ("cube", "change"), [(1, 16), (2, 19), (4, 21), (8, 24), (16, 27), (32, 29), (64, 32)]
)
def test_the_cube_table_at_k_32_holds_end_to_end(runtime, cube, change):
    """Seed 002 cube table: two players at 1500, K = 32."""
    publish(runtime, game("a", "b", cube=cube))
    drain(runtime)
    assert {"a": 1500.0 + change, "b": 1500.0 - change} == board(runtime, "gammon42")


@pytest.mark.parametrize("end_reason", ["resign", "leave", "disconnect", "timeout"])
def test_a_game_ended_early_is_an_ordinary_loss_at_the_cube_on_the_board(runtime, end_reason):
    """Seed 002: 'scored as a normal loss at the cube value on the board at that moment.'"""
    publish(runtime, game("a", "b", cube=2, end_reason=end_reason))
    drain(runtime)
    assert {"a": 1519.0, "b": 1481.0} == board(runtime, "gammon42")


@pytest.mark.parametrize("result", ["gammon", "backgammon"])
def test_gammons_and_backgammons_do_not_change_the_rating_change(runtime, result):
    """Seed 002: 'Gammons and backgammons don't change your rating at all.'"""
    publish(runtime, game("a", "b", result=result))
    drain(runtime)
    assert {"a": 1516.0, "b": 1484.0} == board(runtime, "gammon42")


@pytest.mark.parametrize("mode", ["boosted", "casual"])
def test_boosted_games_add_points_to_the_boosted_board_and_never_touch_the_rating(runtime, mode):
    """SPEC 2.1 decision: points = result value (1/2/3) x cube, to the winner; casual = boosted."""
    publish(
        runtime,
        game("a", "b", mode=mode, result="gammon", cube=4, event_id="g1"),
        game("a", "c", mode=mode, result="backgammon", cube=1, event_id="g2"),
        game("b", "a", mode=mode, event_id="g3"),
    )
    drain(runtime)
    assert {"a": 11.0, "b": 1.0} == board(runtime, "gammon42", "boosted")
    assert {} == board(runtime, "gammon42")
    assert ("unrated", "not_ranked") == outcome(runtime, "gammon42", "g1")


def test_tournament_games_are_recorded_but_never_rated(runtime):
    """Seed 002: 'the games inside a tournament don't change your ELO.'"""
    publish(runtime, game("a", "b", mode="tournament", tournament_id="cup", event_id="t1"))
    drain(runtime)
    assert {} == board(runtime, "gammon42")
    assert ("unrated", "not_ranked") == outcome(runtime, "gammon42", "t1")


def test_a_public_tournament_pays_its_podium_once(runtime):
    """Seed 002: 'Public tournaments award a flat ELO prize to the podium ... +50, +25 and +15.'"""
    publish(runtime, tournament("gammon42", "cup-1", ["a", "b", "c"], event_id="end-1"))
    publish(runtime, tournament("gammon42", "cup-1", ["c", "b", "a"], event_id="end-2"))
    drain(runtime)
    assert {"a": 1550.0, "b": 1525.0, "c": 1515.0} == board(runtime, "gammon42")
    assert ("refused", "tournament_already_settled") == outcome(runtime, "gammon42", "end-2")
    assert ["prize"] == [row["kind"] for row in ledger(runtime, "gammon42", "a")]


def test_a_private_tournament_pays_nothing(runtime):
    """SPEC 2.1: private tournaments award nothing."""
    publish(runtime, tournament("gammon42", "friends", ["a", "b", "c"], public=False, event_id="p"))
    drain(runtime)
    assert {} == board(runtime, "gammon42")
    assert ("applied", "private_tournament") == outcome(runtime, "gammon42", "p")


def test_a_game_before_and_after_the_divisor_switch_is_scored_differently(runtime):
    """Seed 002 history table: a 300-point favourite loses -27 at /400 (before 1.2.0), -23 at
    /800 (1.2.0 to 1.3.0) and -20 at /1200 (since 1.3.1); past games are never rescored."""
    eras = {
        "old": datetime(2026, 7, 1, tzinfo=UTC),
        "mid": datetime(2026, 9, 1, tzinfo=UTC),
        "new": datetime(2026, 10, 15, tzinfo=UTC),
    }
    for era in eras:  # six +50 prizes lift each favourite from 1500 to 1800
        publish(
            runtime,
            *(tournament("gammon42", f"{era}-{i}", [f"fav-{era}"]) for i in range(6)),
        )
    for era, when in eras.items():
        publish(runtime, game(f"dog-{era}", f"fav-{era}", ended_at=when, event_id=era))
    drain(runtime)
    losses = {era: ledger(runtime, "gammon42", f"fav-{era}")[-1] for era in eras}
    assert {"old": (1800.0, -27.0), "mid": (1800.0, -23.0), "new": (1800.0, -20.0)} == {
        era: (row["rating_before"], row["delta"]) for era, row in losses.items()
    }
    versions = dict(_audit_versions(runtime))
    assert ("1.0.5", "1.2.0", "1.3.1") == (versions["old"], versions["mid"], versions["new"])


def _audit_versions(runtime):
    from tests.integration.helpers import audit

    return [(row["event_id"], row["ruleset_version"]) for row in audit(runtime, "gammon42")]
