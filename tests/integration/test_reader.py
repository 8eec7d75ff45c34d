"""The reader library against a real Redis (and PostgreSQL for history and previews).

Boards are seeded either by writing the zsets and player hashes with ``worker.keys`` or
through the real pipeline (publish + drain).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis import Redis

from tests.conftest import drain, publish
from tests.events import game
from worker import keys
from worker.boards import reader
from worker.entrypoints.cli import read as cli_read
from worker.service import preview
from worker.store.history import history, recent_ranked_games

L = "gammon42"


@pytest.fixture
def r(redis_url: str) -> Iterator[Redis]:
    client = Redis.from_url(redis_url)
    yield client
    client.close()


def seed(
    r: Redis, scores: dict[str, float], ladder: str = L, provisional: frozenset[str] = frozenset()
) -> None:
    """Write a rating board and one player hash per player, as the projection does."""
    pipe = r.pipeline()
    for player, score in scores.items():
        pipe.zadd(keys.rating(ladder), {player: score})
        pipe.hset(
            keys.player(ladder, player),
            mapping={
                "rating": repr(float(score)),
                "games": "3",
                "experience": "7",
                "provisional": "1" if player in provisional else "0",
                "updated_at": "2026-11-29T18:04:05+00:00",
            },
        )
    pipe.execute()


def rows(entries: list[reader.Entry]) -> list[tuple[int, str, float]]:
    return [(e.rank, e.player_id, e.rating) for e in entries]


def model(scores: dict[str, float]) -> list[tuple[int, str, float]]:
    """The documented order (score descending, then id ascending) with competition ranks."""
    ordered = sorted(scores.items(), key=lambda item: (-item[1], item[0].encode()))
    return [
        (1 + sum(1 for s in scores.values() if s > score), player, score)
        for player, score in ordered
    ]


TIES = {"amy": 1600.0, "dan": 1500.0, "bob": 1500.0, "cat": 1500.0, "eve": 1400.0}


def test_the_top_starts_at_rank_1_with_the_highest_rating(r):
    """The first entry is the best player at rank 1: nobody is missing above them."""
    seed(r, TIES)
    assert (1, "amy", 1600.0) == rows(reader.top(r, L, 1))[0]


def test_equal_ratings_share_a_rank_and_are_listed_by_player_id_ascending(r):
    """Standard competition ranking 1, 2, 2, 2, 5; ties by id ascending, not ZREVRANGE's order."""
    seed(r, TIES)
    expected = [
        (1, "amy", 1600.0),
        (2, "bob", 1500.0),
        (2, "cat", 1500.0),
        (2, "dan", 1500.0),
        (5, "eve", 1400.0),
    ]
    assert expected == rows(reader.top(r, L, 10))


def test_the_last_player_has_rank_one_more_than_the_players_above(r):
    """The last rank counts every strictly higher player."""
    seed(r, TIES)
    assert (5, "eve", 1400.0) == rows([reader.rank(r, L, "eve")])[0]


def test_a_tied_player_has_the_same_rank_in_top_page_rank_and_around(r):
    """One rank per player, whichever call reads it."""
    seed(r, TIES)
    in_top = {e.player_id: e.rank for e in reader.top(r, L, 10)}
    in_page = {e.player_id: e.rank for e in reader.page(r, L, offset=3, size=1).entries}
    assert 2 == in_top["dan"] == in_page["dan"] == reader.rank(r, L, "dan").rank
    assert [2, 2, 2] == [e.rank for e in reader.around(r, L, "cat", 1)]


def test_a_tie_group_cut_by_a_page_boundary_continues_in_id_order_on_the_next_page(r):
    """Pages of 2 over a tie of three: no player twice, none missing, ranks kept."""
    seed(r, TIES)
    first = reader.page(r, L, size=2)
    second = reader.page(r, L, cursor=first.next_cursor, size=2)
    third = reader.page(r, L, cursor=second.next_cursor, size=2)
    assert [(1, "amy", 1600.0), (2, "bob", 1500.0)] == rows(first.entries)
    assert [(2, "cat", 1500.0), (2, "dan", 1500.0)] == rows(second.entries)
    assert [(5, "eve", 1400.0)] == rows(third.entries)
    assert None is third.next_cursor


def test_an_offset_inside_a_tie_group_starts_at_that_position_of_the_id_order(r):
    """Offset 2 is the second player of the tie group, whatever ZREVRANGE would give."""
    seed(r, TIES)
    assert [(2, "cat", 1500.0), (2, "dan", 1500.0)] == rows(
        reader.page(r, L, offset=2, size=2).entries
    )


def test_paging_backwards_returns_exactly_the_page_before(r):
    """prev_cursor with direction prev gives the previous page: no overlap, no gap."""
    scores = {f"p{i:02}": 2000.0 - 10 * i for i in range(10)}
    seed(r, scores)
    pages = [reader.page(r, L, size=3)]
    while pages[-1].next_cursor:
        pages.append(reader.page(r, L, cursor=pages[-1].next_cursor, size=3))
    assert [3, 3, 3, 1] == [len(p.entries) for p in pages]
    back = reader.page(r, L, cursor=pages[-1].prev_cursor, size=3, direction="prev")
    assert rows(pages[-2].entries) == rows(back.entries)
    first = reader.page(r, L, cursor=pages[1].prev_cursor, size=3, direction="prev")
    assert rows(pages[0].entries) == rows(first.entries)
    assert None is first.prev_cursor


def test_paging_backwards_near_the_start_returns_the_short_first_page_with_rank_1(r):
    """Going back from position 2 with size 5 gives positions 0 and 1, #1 included."""
    seed(r, {f"p{i}": 100.0 - i for i in range(6)})
    page = reader.page(r, L, offset=2, size=1)
    back = reader.page(r, L, cursor=page.prev_cursor, size=5, direction="prev")
    assert [(1, "p0", 100.0), (2, "p1", 99.0)] == rows(back.entries)
    assert None is back.prev_cursor
    assert None is not back.next_cursor


def test_backwards_without_a_cursor_is_the_last_page(r):
    """direction prev with no cursor and no offset ends at the last player."""
    seed(r, TIES)
    last = reader.page(r, L, size=2, direction="prev")
    assert [(2, "dan", 1500.0), (5, "eve", 1400.0)] == rows(last.entries)
    assert None is last.next_cursor
    assert 5 == last.total


def test_backwards_across_a_tie_group_keeps_the_id_order(r):
    """Backwards from eve over the tie: the last two of the group, bob before them."""
    seed(r, TIES)
    eve = reader.page(r, L, offset=4, size=1)
    back = reader.page(r, L, cursor=eve.prev_cursor, size=2, direction="prev")
    assert [(2, "cat", 1500.0), (2, "dan", 1500.0)] == rows(back.entries)


def test_a_cursor_resumes_after_its_player_when_players_above_have_moved(r):
    """A cursor names its boundary player, so a newcomer above shifts nothing on the next page."""
    seed(r, {f"p{i}": 100.0 - i for i in range(6)})
    first = reader.page(r, L, size=3)
    seed(r, {"new": 500.0})
    second = reader.page(r, L, cursor=first.next_cursor, size=3)
    assert ["p3", "p4", "p5"] == [e.player_id for e in second.entries]
    assert [5, 6, 7] == [e.rank for e in second.entries]


def test_a_cursor_whose_player_has_left_resumes_at_the_position_they_held(r):
    """If the boundary player is gone, the next page starts at their old position + 1."""
    seed(r, {f"p{i}": 100.0 - i for i in range(6)})
    first = reader.page(r, L, size=3)
    r.zrem(keys.rating(L), "p2")
    second = reader.page(r, L, cursor=first.next_cursor, size=3)
    assert ["p4", "p5"] == [e.player_id for e in second.entries]


def test_a_cursor_from_another_board_or_a_made_up_one_is_refused(r):
    """Cursors are opaque and bound to their ladder and board."""
    seed(r, TIES)
    cursor = reader.page(r, L, size=2).next_cursor
    assert cursor is not None
    with pytest.raises(reader.InvalidCursor):
        reader.page(r, L, cursor=cursor, board="boosted")
    with pytest.raises(reader.InvalidCursor):
        reader.page(r, "fibs", cursor=cursor)
    with pytest.raises(reader.InvalidCursor):
        reader.page(r, L, cursor="not-a-cursor")


def test_around_the_first_player_starts_at_rank_1_with_the_player_first(r):
    """Nothing above #1: the window is the player and the radius below."""
    seed(r, TIES)
    assert [(1, "amy", 1600.0), (2, "bob", 1500.0), (2, "cat", 1500.0)] == rows(
        reader.around(r, L, "amy", 2)
    )


def test_around_the_last_player_ends_with_the_player(r):
    """Nothing below the last: the window is the radius above and the player."""
    seed(r, TIES)
    assert [(2, "cat", 1500.0), (2, "dan", 1500.0), (5, "eve", 1400.0)] == rows(
        reader.around(r, L, "eve", 2)
    )


def test_around_a_player_in_a_tie_group_centres_on_their_place_in_id_order(r):
    """cat is second of the tie: bob above, dan below, ranks shared."""
    seed(r, TIES)
    assert [(2, "bob", 1500.0), (2, "cat", 1500.0), (2, "dan", 1500.0)] == rows(
        reader.around(r, L, "cat", 1)
    )


def test_an_empty_ladder_has_an_empty_top_and_page_and_no_ranks(r):
    """No board yet: empty lists, no cursors, and unknown players."""
    assert [] == reader.top(r, L, 10)
    page = reader.page(r, L, size=5)
    assert ([], 0, None, None) == (page.entries, page.total, page.next_cursor, page.prev_cursor)
    assert [] == reader.page(r, L, size=5, direction="prev").entries
    with pytest.raises(reader.UnknownPlayer):
        reader.rank(r, L, "alice")


def test_an_unknown_player_is_reported_by_rank_around_and_card(r):
    """UnknownPlayer, never an empty answer that looks like a rank."""
    seed(r, TIES)
    for call in (
        lambda: reader.rank(r, L, "zed"),
        lambda: reader.around(r, L, "zed", 3),
        lambda: reader.card(r, L, "zed"),
        lambda: reader.rank(r, L, "amy", "public"),
        lambda: reader.rank(r, L, "a\x00b"),
    ):
        with pytest.raises(reader.UnknownPlayer):
            call()


def test_absurdly_large_limits_offsets_and_radii_read_the_whole_board_or_nothing(r):
    """Sizes far past the board are clamped, never sent to Redis as 1e+18."""
    seed(r, TIES)
    huge = 10**18
    assert 5 == len(reader.top(r, L, huge))
    assert 5 == len(reader.page(r, L, size=huge).entries)
    assert [] == reader.page(r, L, offset=huge, size=huge).entries
    assert 5 == len(reader.page(r, L, offset=huge, size=huge, direction="prev").entries)
    assert 5 == len(reader.around(r, L, "cat", huge))


def test_entries_carry_the_provisional_flag_from_the_player_hash(r):
    """SPEC 2.2: the provisional flag shows wherever a rating is read."""
    seed(r, {"new": 1500.0, "old": 1600.0}, ladder="fibs", provisional=frozenset({"new"}))
    assert [("old", False), ("new", True)] == [
        (e.player_id, e.provisional) for e in reader.top(r, "fibs", 5)
    ]
    assert reader.card(r, "fibs", "new").provisional


def test_boosted_and_season_boards_are_read_with_the_same_ranking(r):
    """Points boards and archived seasons rank like the rating board."""
    r.zadd(keys.boosted(L), {"amy": 3, "bob": 3, "cat": 1})
    r.zadd(keys.season(L, "Season 0"), {"amy": 1700, "bob": 1600})
    assert [(1, "amy", 3.0), (1, "bob", 3.0), (3, "cat", 1.0)] == rows(
        reader.top(r, L, 5, "boosted")
    )
    assert (2, "bob", 1600.0) == rows([reader.rank(r, L, "bob", "season:Season 0")])[0]
    with pytest.raises(reader.InvalidArgument):
        reader.top(r, L, 5, "season:")
    with pytest.raises(reader.InvalidArgument):
        reader.top(r, L, 5, "elo")


scores_strategy = st.dictionaries(
    st.text(alphabet="abcdeABé_-0", min_size=1, max_size=4),
    st.integers(min_value=-3, max_value=3).map(float),
    max_size=25,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(scores=scores_strategy, size=st.integers(min_value=1, max_value=6))
def test_every_read_agrees_with_a_sort_of_the_board(r, scores, size):
    """rank, top, pages (both ways) and around all match the sorted model, ties included."""
    r.delete(keys.rating(L))
    if scores:
        r.zadd(keys.rating(L), scores)
    expected = model(scores)
    assert expected == rows(reader.top(r, L, len(scores) + 1))
    for rank, player, score in expected:
        assert (rank, player, score) == rows([reader.rank(r, L, player)])[0]
    forward: list[reader.Entry] = []
    page = reader.page(r, L, size=size)
    forward += page.entries
    while page.next_cursor:
        page = reader.page(r, L, cursor=page.next_cursor, size=size)
        forward += page.entries
    assert expected == rows(forward)
    backward: list[reader.Entry] = []
    page = reader.page(r, L, size=size, direction="prev")
    backward = page.entries + backward
    while page.prev_cursor:
        page = reader.page(r, L, cursor=page.prev_cursor, size=size, direction="prev")
        backward = page.entries + backward
    assert expected == rows(backward)
    for index, (_, player, _) in enumerate(expected):
        low, high = max(0, index - 2), index + 3
        assert expected[low:high] == rows(reader.around(r, L, player, 2))


# Through the real pipeline: cards, history and previews of stored players.


def test_a_card_after_real_games_shows_rating_rank_games_and_last_game(runtime):
    """The card reads the player hash the worker wrote, with the rank on the rating board."""
    publish(runtime, game("alice", "bob"), game("alice", "carol"))
    drain(runtime)
    found = reader.card(runtime.leaderboard_redis, L, "alice")
    assert (1, 2, False) == (found.rank, found.games, found.provisional)
    assert found.rating > 1500
    assert found.last_game_at is not None


def test_history_lists_changes_newest_first_with_opponent_and_result(runtime):
    """rating_changes, newest first, each before equal to the previous after."""
    publish(runtime, game("alice", "bob", event_id="g-1"), game("carol", "alice", event_id="g-2"))
    drain(runtime)
    changes = history(runtime.engine, L, "alice", 10)
    assert [("g-2", "loss", "carol"), ("g-1", "win", "bob")] == [
        (c.event_id, c.result, c.opponent) for c in changes
    ]
    assert changes[1].rating_after == changes[0].rating_before
    assert [("g-1", -16.0)] == [(c.event_id, c.delta) for c in history(runtime.engine, L, "bob")]
    assert 1 == len(history(runtime.engine, L, "alice", 1))


def test_history_of_an_unknown_player_is_refused(runtime):
    """A player the audit store has never seen is UnknownPlayer, not an empty history."""
    with pytest.raises(reader.UnknownPlayer):
        history(runtime.engine, L, "nobody")
    with pytest.raises(reader.UnknownPlayer):
        history(runtime.engine, L, "a\x00b")


def test_preview_of_two_stored_players_at_1500_is_even_at_cube_1(runtime):
    """Seed 002: equal 1500s, cube 1: 50 %, +16 / -16 (after a game each, both at 1500)."""
    publish(runtime, game("alice", "bob"), game("bob", "alice"))
    drain(runtime)
    found = preview.preview(
        runtime.config.ladder(L), "alice", "bob", redis=runtime.leaderboard_redis
    )
    assert (0.5, 16.0, -16.0) == (found.win_probability, found.if_win, found.if_lose)
    assert ("alice", 2) == (found.a.player_id, found.a.state.rated_games)


def test_recent_ranked_games_counts_the_week_before(runtime):
    """Gammon42's K window, read from the audit store for previews."""
    from datetime import UTC, datetime, timedelta

    publish(runtime, game("alice", "bob"), game("alice", "carol"))
    drain(runtime)
    now = datetime.now(UTC)
    assert 2 == recent_ranked_games(runtime.engine, L, "alice", now, 168)
    assert 0 == recent_ranked_games(runtime.engine, L, "alice", now - timedelta(hours=1), 168)


# The command line.


def run(rt: Any, *argv: str, capsys: Any) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="ladder")
    cli_read.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    capsys.readouterr()  # drop what the worker logged while draining
    code = args.handler(rt, args)
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_top_json_prints_an_array_of_entries(runtime, capsys):
    """`ladder top L --json`: player_id, rank and rating for each entry."""
    seed(runtime.leaderboard_redis, TIES)
    code, out, _ = run(runtime, "top", L, "--limit", "2", "--json", capsys=capsys)
    assert 0 == code
    assert [
        {"player_id": "amy", "rank": 1, "rating": 1600.0, "provisional": False, "percentile": 80.0},
        {"player_id": "bob", "rank": 2, "rating": 1500.0, "provisional": False, "percentile": 20.0},
    ] == json.loads(out)


def test_cli_rank_json_prints_one_entry_and_around_an_array(runtime, capsys):
    """`ladder rank L P --json` is one entry; `around` is a list of them."""
    seed(runtime.leaderboard_redis, TIES)
    code, out, _ = run(runtime, "rank", L, "dan", "--json", capsys=capsys)
    dan = {
        "player_id": "dan",
        "rank": 2,
        "rating": 1500.0,
        "provisional": False,
        "percentile": 20.0,
    }
    assert (0, dan) == (
        code,
        json.loads(out),
    )
    code, out, _ = run(runtime, "around", L, "eve", "--radius", "1", "--json", capsys=capsys)
    assert ["dan", "eve"] == [e["player_id"] for e in json.loads(out)]


def test_cli_tables_mark_provisional_ratings(runtime, capsys):
    """Human output shows FIBS ratings with one decimal and a provisional marker."""
    seed(runtime.leaderboard_redis, {"new": 1512.25}, ladder="fibs", provisional=frozenset({"new"}))
    code, out, _ = run(runtime, "top", "fibs", capsys=capsys)
    assert 0 == code
    assert "1512.3 P" in out
    assert "P: provisional rating" in out
    _, out, _ = run(runtime, "player", "fibs", "new", capsys=capsys)
    assert "1512.3 (provisional)" in out


def test_cli_unknown_ladder_exits_2_and_unknown_player_exits_1(runtime, capsys):
    """A clear line on standard error and the documented exit codes."""
    code, out, err = run(runtime, "top", "chess", capsys=capsys)
    configured = "(configured: fibs, gammon42, prostriker)"
    assert (2, "", f"ladder: no ladder named 'chess' {configured}\n") == (code, out, err)
    code, _, err = run(runtime, "rank", L, "zed", "--json", capsys=capsys)
    assert 1 == code and "zed" in err
    code, _, err = run(runtime, "history", L, "zed", capsys=capsys)
    assert 1 == code and "zed" in err
    code, _, err = run(runtime, "top", L, "--board", "public", capsys=capsys)
    assert 2 == code and "no public board" in err


def test_cli_page_walks_forwards_and_backwards_with_the_printed_cursors(runtime, capsys):
    """`ladder page --json` prints entries and both cursors."""
    seed(runtime.leaderboard_redis, TIES)
    _, out, _ = run(runtime, "page", L, "--size", "2", "--offset", "2", "--json", capsys=capsys)
    page = json.loads(out)
    assert (["cat", "dan"], 5) == ([e["player_id"] for e in page["entries"]], page["total"])
    argv = ("page", L, "--size", "2", "--direction", "prev", "--cursor", page["prev_cursor"])
    _, out, _ = run(runtime, *argv, "--json", capsys=capsys)
    assert ["amy", "bob"] == [e["player_id"] for e in json.loads(out)["entries"]]


def test_cli_preview_with_given_ratings_prints_the_fibs_calculator_numbers(runtime, capsys):
    """Seed 003's calculator: A - B = -100, N = 5, experience 5: 43.6 %, +25.0, -19.3."""
    argv = ("preview", "fibs", "=1400", "=1500", "--match-length", "5", "--a-experience", "5")
    code, out, _ = run(runtime, *argv, capsys=capsys)
    assert 0 == code
    assert "43.6 %" in out and "+25.0" in out and "-19.3" in out
    _, out, _ = run(runtime, *argv, "--json", capsys=capsys)
    shown = json.loads(out)["display"]
    assert {"win_probability": "43.6 %", "if_win": "+25.0", "if_lose": "-19.3"} == shown


def test_cli_preview_of_stored_players_and_of_a_bad_cube(runtime, capsys):
    """Stored players are read from Redis; cube 3 is refused with exit 2."""
    publish(runtime, game("alice", "bob", ladder="prostriker"))
    drain(runtime)
    code, out, _ = run(runtime, "preview", "prostriker", "alice", "bob", "--json", capsys=capsys)
    found = json.loads(out)
    assert (0, "alice", 1, 1220.0) == (
        code,
        found["a"]["player_id"],
        found["a"]["games"],
        found["a"]["rating"],
    )
    code, _, err = run(runtime, "preview", L, "=1500", "=1500", "--cube", "3", capsys=capsys)
    assert 2 == code and "cube" in err
    code, _, err = run(runtime, "preview", L, "=1500", "nobody", capsys=capsys)
    assert 1 == code and "nobody" in err
