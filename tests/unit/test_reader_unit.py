"""The reader library without I/O: previews from given ratings, boards, cursors, imports."""

from __future__ import annotations

import subprocess
import sys

import pytest

from engine import PlayerState
from worker.boards import reader
from worker.ladders import load_config
from worker.service import preview

CONFIG = load_config()


@pytest.mark.parametrize(
    ("ladder", "a", "b", "game", "expected"),
    [
        # seed 002: "Two players at 1500 ... the winner gets +16, the loser gets -16."
        ("gammon42", PlayerState(1500), PlayerState(1500), {}, ("50.0 %", "+16", "-16")),
        # seed 002: "If you have played 60 ranked games this week ... a win gives you +8"
        (
            "gammon42",
            PlayerState(1500, recent_ranked_games=60),
            PlayerState(1500),
            {},
            ("50.0 %", "+8", "-8"),
        ),
        # seed 003's calculator: A - B = -100, N = 5, experience 5 (multiplier 4.95)
        (
            "fibs",
            PlayerState(1400, experience=5),
            PlayerState(1500),
            {"match_length": 5},
            ("43.6 %", "+25.0", "-19.3"),
        ),
        # seed 004: established players (K 16), 1200 against 1400
        (
            "prostriker",
            PlayerState(1200, rated_games=200),
            PlayerState(1400, rated_games=200),
            {},
            ("24.0 %", "+12", "-4"),
        ),
        # seed 004, turned round: "Den 1200er zu schlagen bringt vier Punkte"
        (
            "prostriker",
            PlayerState(1400, rated_games=200),
            PlayerState(1200, rated_games=200),
            {},
            ("76.0 %", "+4", "-12"),
        ),
    ],
)
def test_preview_reproduces_the_seed_examples(ladder, a, b, game, expected):
    """Win chance, change if A wins and if A loses, as the seeds show them."""
    ladder_config = CONFIG.ladders[ladder]
    found = preview.preview(ladder_config, a, b, **game)
    shown = preview.format_preview(ladder_config, found)
    assert expected == (shown["win_probability"], shown["if_win"], shown["if_lose"])


def test_preview_of_bare_ratings_is_a_player_without_games():
    """A plain number is a rating with no games or experience (K 40 on prostriker)."""
    found = preview.preview(CONFIG.ladders["prostriker"], 1200, 1200)
    assert (0.5, 20.0, -20.0) == (found.win_probability, found.if_win, found.if_lose)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"cube": 3}, "cube"),
        ({"cube": True}, "cube"),
        ({"match_length": 0}, "match_length"),
    ],
)
def test_preview_refuses_a_game_that_cannot_happen(kwargs, message):
    """Cube 3 or a zero-point match is InvalidArgument on every ladder."""
    for ladder in ("gammon42", "fibs", "prostriker"):
        with pytest.raises(reader.InvalidArgument, match=message):
            preview.preview(CONFIG.ladders[ladder], 1500.0, 1500.0, **kwargs)


def test_preview_refuses_a_non_finite_rating_and_a_player_id_without_redis():
    """NaN is no rating; a stored player needs a Redis client."""
    with pytest.raises(reader.InvalidArgument):
        preview.preview(CONFIG.ladders["fibs"], float("nan"), 1500.0)
    with pytest.raises(reader.InvalidArgument):
        preview.preview(CONFIG.ladders["fibs"], "alice", 1500.0)


@pytest.mark.parametrize(
    ("board", "key"),
    [
        ("rating", "ladder:{fibs}:rating"),
        ("public", "ladder:{fibs}:public"),
        ("boosted", "ladder:{fibs}:boosted"),
        ("season:Season 0", "ladder:{fibs}:season:Season 0"),
    ],
)
def test_board_names_map_to_the_documented_keys(board, key):
    """Board names are the README's Redis keys."""
    assert key == reader.board_key("fibs", board)


@pytest.mark.parametrize("board", ["", "elo", "season:", "season: ", "season:a\x00", "Rating"])
def test_unknown_board_names_are_refused(board):
    """Anything else is InvalidArgument, never a made-up key."""
    with pytest.raises(reader.InvalidArgument):
        reader.board_key("fibs", board)


def test_only_ladders_with_a_public_or_boosted_board_offer_it():
    """fibs keeps a public board, gammon42 a boosted one (the shipped configuration)."""
    fibs, gammon42 = CONFIG.ladders["fibs"], CONFIG.ladders["gammon42"]
    assert (True, False) == (
        reader.board_available(fibs, "public"),
        reader.board_available(fibs, "boosted"),
    )
    assert (False, True) == (
        reader.board_available(gammon42, "public"),
        reader.board_available(gammon42, "boosted"),
    )


def test_a_cursor_round_trips_its_boundary_for_its_own_board_only():
    """decode(encode(x)) == x; another ladder or board is InvalidCursor."""
    cursor = reader.encode_cursor("fibs", "rating", reader.Entry("dev/é", 3, 1512.25), 7)
    assert ("dev/é", 1512.25, 7) == reader.decode_cursor(cursor, "fibs", "rating")
    with pytest.raises(reader.InvalidCursor):
        reader.decode_cursor(cursor, "fibs", "public")
    with pytest.raises(reader.InvalidCursor):
        reader.decode_cursor(cursor, "gammon42", "rating")


def test_a_cursor_with_an_impossible_position_is_refused():
    """Positions past any real board are not passed on to Redis."""
    cursor = reader.encode_cursor("fibs", "rating", reader.Entry("a", 1, 1.0), 10**15)
    with pytest.raises(reader.InvalidCursor):
        reader.decode_cursor(cursor, "fibs", "rating")


@pytest.mark.parametrize("cursor", ["", "!!!", "e30", "bnVsbA", "x" * 2000])
def test_a_made_up_cursor_is_refused(cursor):
    """Garbage, '{}' and 'null' are InvalidCursor, not a crash."""
    with pytest.raises(reader.InvalidCursor):
        reader.decode_cursor(cursor, "fibs", "rating")


def test_the_reader_imports_without_sqlalchemy_or_psycopg():
    """Services that only read boards need redis, not the audit-store stack."""
    code = (
        "import sys, worker.boards.reader; "
        "bad = [m for m in ('sqlalchemy', 'psycopg') if m in sys.modules]; "
        "print(','.join(bad))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert (0, "") == (result.returncode, result.stdout.strip())
