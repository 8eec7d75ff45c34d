"""The window counts behind gammon42's weekly K (SPEC 2.1) and the 24-hour pair limit (2.4)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from engine.windows import Windows

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def at(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


def test_a_game_at_the_window_start_counts_and_one_at_the_game_itself_does_not() -> None:
    """SPEC 2.1: games "in the 7 days before this game's ended_at (this game not counted)"."""
    w = Windows()
    for hours in (0, 1, 168):  # exactly 7 days before, inside, and the game's own moment
        w.add_ranked("gammon42", "ann", at(hours))
    assert 2 == w.ranked_games("gammon42", "ann", at(168), 168)
    assert 2 == w.ranked_games("gammon42", "ann", at(168.5), 168)  # hour 0 left, 168 entered
    assert 1 == w.ranked_games("gammon42", "ann", at(169.5), 168)
    assert 0 == w.ranked_games("gammon42", "bob", at(168), 168)


def test_a_pair_is_the_same_pair_whichever_player_is_named_first() -> None:
    """SPEC 2.4 step 5: the pair limit counts the pair's rated games, winner or loser."""
    w = Windows()
    w.add_rated_pair("fibs", "ann", "bob", at(1))
    w.add_rated_pair("fibs", "bob", "ann", at(2))
    assert (2, 2) == (
        w.rated_pair_games("fibs", "ann", "bob", at(3), 24),
        w.rated_pair_games("fibs", "bob", "ann", at(3), 24),
    )
    assert 0 == w.rated_pair_games("gammon42", "ann", "bob", at(3), 24)


@given(
    st.lists(st.integers(min_value=0, max_value=400), max_size=60),
    st.integers(min_value=0, max_value=420),
    st.sampled_from([0, 1, 24, 168]),
)
def test_counts_equal_a_plain_count_whatever_order_the_games_arrive_in(
    minutes: list[int], before: int, hours: int
) -> None:
    """Out-of-order arrivals (a late game from another server) count like in-order ones."""
    w = Windows()
    for m in minutes:
        w.add_ranked("gammon42", "ann", at(m / 10))
    end = at(before / 10)
    expected = sum(1 for m in minutes if end - timedelta(hours=hours) <= at(m / 10) < end)
    assert expected == w.ranked_games("gammon42", "ann", end, hours)


@given(
    st.lists(st.tuples(st.sampled_from(["ann", "bob"]), st.integers(0, 400)), max_size=60),
    st.integers(min_value=0, max_value=420),
    st.sampled_from([1, 24, 168]),
)
def test_both_players_counts_at_once_equal_each_players_own(
    games: list[tuple[str, int]], before: int, hours: int
) -> None:
    """SPEC 2.1: each player's K comes from their own ranked games in the window; counting
    both sides of a game in one call gives each side's own count, and adding a game for both
    adds it to each."""
    one_by_one, both = Windows(), Windows()
    for pid, m in games:
        one_by_one.add_ranked("gammon42", pid, at(m / 10))
        one_by_one.add_ranked("gammon42", "cat", at(m / 10))
        both.add_ranked_both("gammon42", pid, "cat", at(m / 10))
    end = at(before / 10)
    for a, b in (("ann", "bob"), ("bob", "cat"), ("cat", "dan"), ("dan", "eve")):
        expected = tuple(one_by_one.ranked_games("gammon42", p, end, hours) for p in (a, b))
        assert expected == both.ranked_games_both("gammon42", a, b, end, hours)
        assert expected == one_by_one.ranked_games_both("gammon42", a, b, end, hours)


@given(
    st.lists(st.integers(min_value=0, max_value=400), max_size=40),
    st.lists(st.tuples(st.integers(0, 400), st.integers(0, 5)), max_size=5),
    st.integers(min_value=0, max_value=420),
    st.sampled_from([1, 24, 168]),
)
def test_many_games_at_one_moment_count_as_that_many_games(
    minutes: list[int], bunches: list[tuple[int, int]], before: int, hours: int
) -> None:
    """``add_ranked_many`` (a count of games the store read as a count) counts as ``n`` calls
    of ``add_ranked``, before, after or among the games already there."""
    many, one_by_one = Windows(), Windows()
    for m in minutes:
        many.add_ranked("gammon42", "ann", at(m / 10))
        one_by_one.add_ranked("gammon42", "ann", at(m / 10))
    for m, n in bunches:
        many.add_ranked_many("gammon42", "ann", at(m / 10), n)
        for _ in range(n):
            one_by_one.add_ranked("gammon42", "ann", at(m / 10))
    end = at(before / 10)
    expected = one_by_one.ranked_games("gammon42", "ann", end, hours)
    assert expected == many.ranked_games("gammon42", "ann", end, hours)
    assert expected == sum(
        1 for m, n in bunches for _ in range(n) if end - timedelta(hours=hours) <= at(m / 10) < end
    ) + sum(1 for m in minutes if end - timedelta(hours=hours) <= at(m / 10) < end)
