"""The rows of ``game_players`` and what a game reads as for one of its players
(``worker.store.game_players``), without PostgreSQL.

SPEC 7: team / free-for-all games have "teams of player ids with finishing ranks, ties
allowed"."""

from __future__ import annotations

from datetime import UTC, datetime

from worker.store.game_players import played, rows

AT = datetime(2026, 12, 1, tzinfo=UTC)


def places(players: list[tuple[str, int]], ranks: list[int]) -> list[tuple[str, int, int, bool]]:
    made = rows("l", "e", players, ranks, AT, AT)
    return [(r["player_id"], r["rank"], r["teams"], r["draw"]) for r in made]


def test_a_team_place_is_one_more_than_the_teams_ahead_of_it_and_ties_share_it() -> None:
    """Ranks 1, 1, 3 are places 1, 1, 3; ranks as sent need not be consecutive."""
    assert places([("a", 1), ("b", 1), ("c", 3)], [1, 1, 3]) == [
        ("a", 1, 3, False),
        ("b", 1, 3, False),
        ("c", 3, 3, False),
    ]
    assert places([("a", 20), ("b", 10)], [20, 10]) == [("a", 2, 2, False), ("b", 1, 2, False)]


def test_a_draw_is_every_team_at_one_rank() -> None:
    """A 1v1 draw, and a team game all tied."""
    assert places([("a", 1), ("b", 1)], [1, 1]) == [("a", 1, 2, True), ("b", 1, 2, True)]
    assert [d for *_, d in places([("a", 2), ("b", 2), ("c", 2)], [2, 2])] == [True] * 3


def test_an_id_named_twice_after_its_link_is_one_row() -> None:
    """An anonymous id beside its account (``self_play``) resolve to one player: one row."""
    assert places([("acct", 1), ("acct", 2)], [1, 2]) == [("acct", 1, 2, False)]


def test_a_game_reads_as_win_loss_draw_or_its_place() -> None:
    """A 1v1 win against the other player; a draw against the other of its two; a team game
    its place, against nobody when more than two played."""
    assert played("a", "a", "b", None, None, None) == ("b", "win")
    assert played("b", "a", "b", None, None, None) == ("a", "loss")
    assert played("b", "a", "b", 1, 2, True) == ("a", "draw")
    assert played("a", "a", "b", 2, 2, False) == ("b", "rank 2 of 2")
    assert played("c", None, None, 3, 4, False) == (None, "rank 3 of 4")
    assert played("c", None, None, 1, 3, True) == (None, "draw")
