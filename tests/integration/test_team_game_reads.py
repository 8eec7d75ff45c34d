"""A player's draws and team games are their games wherever a player's games are read.

SPEC 7: "`game.finished` keeps `winner`/`loser` (a 1v1 win) and adds a draw and team /
free-for-all games (teams of player ids with finishing ranks, ties allowed, ...)". SPEC 6:
"Every reader of the past (verify, void, ban, adjust, backtest, calibrate, the console, cards,
history, erase, import) goes through it"; "Erase removes a player's real id from ... every
table"; "`ladder archive --before YYYY-MM` detaches old partitions and verify then starts from
the recorded checkpoint". SPEC 6 "One history": "A moderated ladder reads exactly as if voided
games had never been published".

The audit row names a game's players as its winner and loser, which a draw has not (its two
players read as a win and a loss) and a game of more players has not at all: the store keeps
each player of a draw or team game in ``game_players`` (``worker.store.game_players``), and
the games list, the history, ``ban --void-since``, the boundary of ``verify --since``, erase
and archive read it.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import delete, select
from starlette.testclient import TestClient

from tests.conftest import drain, publish
from tests.events import game, iso, link
from tests.integration.helpers import EVERYONE, ledger, outcome
from tests.integration.test_archive import _Clock
from tests.integration.test_moderation import ladder, ladder_json
from tests.integration.test_new_rulesets import LADDERS, clean, draw, teams
from tests.integration.test_privacy import everything_in_postgres, everything_in_redis
from worker.entrypoints.api.app import create_app
from worker.entrypoints.console import pages
from worker.ladders import default_config_path
from worker.ops.archiving import archive
from worker.ops.verify import verify
from worker.store import game_players, moderation
from worker.store.games import games
from worker.store.tables import game_players as seats

NOW = datetime.now(UTC).replace(microsecond=0)


@pytest.fixture
def rt(make_runtime: Any, tmp_path: Path) -> Any:
    """The shipped ladders with a glicko2 ladder (chess) and an openskill one (arena)."""
    path = tmp_path / "ladders.toml"
    path.write_text(default_config_path().read_text(encoding="utf-8") + LADDERS, encoding="utf-8")
    return make_runtime(ladder_config=path)


def seated(rt: Any, ladder: str | None = None) -> list[dict[str, Any]]:
    """The ``game_players`` rows, without their times, in key order."""
    query = select(seats).order_by(seats.c.ladder, seats.c.event_id, seats.c.player_id)
    if ladder is not None:
        query = query.where(seats.c.ladder == ladder)
    with rt.engine.connect() as conn:
        rows = [dict(row) for row in conn.execute(query).mappings()]
    return [{k: v for k, v in r.items() if k not in ("ended_at", "processed_at")} for r in rows]


def seat(event_id: str, player_id: str, rank: int, teams: int, drawn: bool = False) -> dict:
    return {
        "ladder": "arena",
        "event_id": event_id,
        "player_id": player_id,
        "rank": rank,
        "teams": teams,
        "draw": drawn,
    }


def season_of_arena(rt: Any) -> None:
    """On arena: a 1v1 win, a draw, a 2v2 and a four-player free-for-all with a tie, all of
    ann's, then a game ann is not in."""
    publish(
        rt,
        game("ann", "bob", ladder="arena", event_id="win", ended_at=NOW - timedelta(hours=5)),
        draw("arena", "cat", "ann", 4 / 24, event_id="drawn"),
        teams("arena", [(2, ["ann", "bob"]), (1, ["cat", "dan"])], 3 / 24, event_id="2v2"),
        teams(
            "arena",
            [(1, ["eve"]), (2, ["ann"]), (2, ["bob"]), (4, ["dan"])],
            2 / 24,
            event_id="ffa",
        ),
        teams("arena", [(1, ["cat"]), (2, ["dan"]), (3, ["eve"])], 1 / 24, event_id="others"),
    )
    drain(rt)


def test_each_player_of_a_draw_or_team_game_has_a_row_and_a_1v1_win_none(rt):
    """A row per player of a draw or team game, with its team's place (tied teams share one),
    the number of teams and whether all tied; a 1v1 win writes no row."""
    season_of_arena(rt)
    assert seated(rt) == [
        seat("2v2", "ann", 2, 2),
        seat("2v2", "bob", 2, 2),
        seat("2v2", "cat", 1, 2),
        seat("2v2", "dan", 1, 2),
        seat("drawn", "ann", 1, 2, drawn=True),
        seat("drawn", "cat", 1, 2, drawn=True),
        seat("ffa", "ann", 2, 4),
        seat("ffa", "bob", 2, 4),
        seat("ffa", "dan", 4, 4),
        seat("ffa", "eve", 1, 4),
        seat("others", "cat", 1, 3),
        seat("others", "dan", 2, 3),
        seat("others", "eve", 3, 3),
    ]


def test_an_anonymous_player_of_a_team_game_has_the_row_of_the_account_it_is_linked_to(rt):
    """The rows name the players as resolved, as their ledger rows do, rated or not (here a
    bot's game is unrated)."""
    with_bot = teams("arena", [(1, ["guest-1", "bob"]), (2, ["cat"])], 0.5, event_id="t-2")
    with_bot["teams"][1]["players"][0]["is_bot"] = True
    publish(
        rt,
        link("arena", "guest-1", "ann"),
        teams("arena", [(1, ["guest-1"]), (2, ["bob"]), (3, ["cat"])], 1, event_id="t-1"),
        with_bot,
    )
    drain(rt)
    assert ("unrated", "bot") == outcome(rt, "arena", "t-2")
    assert [(r["event_id"], r["player_id"]) for r in seated(rt, "arena")] == [
        ("t-1", "ann"),
        ("t-1", "bob"),
        ("t-1", "cat"),
        ("t-2", "ann"),
        ("t-2", "bob"),
        ("t-2", "cat"),
    ]


def test_the_migration_fill_makes_the_rows_the_worker_wrote(rt):
    """Migration 0012 fills the table for the draws and team games already in the log: the
    same rows, each id resolved through the links made before the game only."""
    publish(
        rt,
        teams("arena", [(1, ["guest-1"]), (2, ["bob"]), (3, ["cat"])], 2, event_id="before"),
        link("arena", "guest-1", "ann"),
        teams("arena", [(1, ["guest-1"]), (1, ["bob"])], 1, event_id="after"),
        draw("chess", "cat", "dan", 1, event_id="chess-draw"),
        game("ann", "bob", ladder="arena", event_id="win"),
    )
    drain(rt)
    written = seated(rt)
    assert {
        (r["event_id"], r["player_id"]) for r in written if r["player_id"] in ("ann", "guest-1")
    } == {
        ("before", "guest-1"),
        ("after", "ann"),
    }
    with rt.engine.begin() as conn:
        conn.execute(delete(seats))
        assert len(written) == game_players.fill(conn, chunk=2)
    assert seated(rt) == written


# What ann's games read as, newest first: (event, result, opponent, rank, teams).
ANNS_GAMES = [
    ("ffa", "rank 2 of 4", None, 2, 4),
    ("2v2", "rank 2 of 2", None, 2, 2),
    ("drawn", "draw", "cat", 1, 2),
    ("win", "win", "bob", None, None),
]


def test_the_games_list_shows_a_draw_a_2v2_and_a_free_for_all_among_the_1v1_games(rt):
    """A draw reads ``draw`` against its opponent, a team game ``rank N of M`` (its team's
    place of M teams) with no opponent, a 1v1 win as before; each with the player's change."""
    season_of_arena(rt)
    found = games(rt.engine, "arena", "ann")
    assert [(g.event_id, g.result, g.opponent, g.rank, g.teams) for g in found] == ANNS_GAMES
    changes = {row["event_id"]: row["delta"] for row in ledger(rt, "arena", "ann")}
    assert [g.delta for g in found] == [changes[g.event_id] for g in found]
    assert {g.outcome for g in found} == {"rated"}
    bobs = [(g.event_id, g.result, g.opponent) for g in games(rt.engine, "arena", "bob")]
    assert bobs == [
        ("ffa", "rank 2 of 4", None),
        ("2v2", "rank 2 of 2", None),
        ("win", "loss", "ann"),
    ]
    cats = [(g.event_id, g.result, g.opponent) for g in games(rt.engine, "arena", "cat")]
    assert cats == [
        ("others", "rank 1 of 3", None),
        ("2v2", "rank 1 of 2", None),
        ("drawn", "draw", "ann"),
    ]


def test_ladder_history_shows_them_with_the_same_results_and_no_opponent_for_a_team_game(
    rt, capsys
):
    """``ladder history --json`` and its table: every rated game of the player, each a game
    with its end, result and place."""
    season_of_arena(rt)
    rows = ladder_json(rt, capsys, "history", "arena", "ann")
    assert [
        (r["event_id"], r["result"], r["opponent"], r["rank"], r["teams"]) for r in rows
    ] == ANNS_GAMES
    assert all(r["kind"] == "game" and r["ended_at"] for r in rows)
    assert 0 == ladder(rt, "history", "arena", "ann")
    table = {line.split()[1]: line for line in capsys.readouterr().out.splitlines()[2:]}
    assert "rank 2 of 4" in table["ffa"] and " - " in table["ffa"]
    assert "draw" in table["drawn"] and "cat" in table["drawn"]


def test_the_http_history_answers_them_as_its_schema_says(rt):
    """The API checks every answer against its model: a draw's and a team game's results are
    in its vocabulary."""
    app = create_app(rt.config, rt.leaderboard_redis, rt.engine, access=EVERYONE)
    season_of_arena(rt)
    with TestClient(app, raise_server_exceptions=False) as client:
        answer = client.get("/ladders/arena/players/ann/history")
    assert 200 == answer.status_code, answer.text
    assert [
        (r["event_id"], r["result"], r["opponent"], r["rank"], r["teams"]) for r in answer.json()
    ] == ANNS_GAMES


def test_the_console_lists_a_team_game_with_its_place_and_no_opponent(rt):
    """The player page's games: a team game is no moderation row, its opponent cell says it
    was a team game."""
    season_of_arena(rt)
    stores = pages.Stores(rt.config, rt.leaderboard_redis, rt.databases)
    shown = pages.player(stores, "arena", "ann")
    listed = [(g["result"], g["opponent"], g["moderation"], g["detail"]) for g in shown["games"]]
    assert listed == [
        ("rank 2 of 4", "", False, "team game"),
        ("rank 2 of 2", "", False, "team game"),
        ("draw", "cat", False, ""),
        ("win", "bob", False, ""),
    ]


def test_a_ban_with_void_since_voids_the_players_draws_and_team_games_and_verify_agrees(rt):
    """``ban --void-since`` voids every game of the player that ended from then on, a draw and
    a free-for-all among them (a team game before stays rated), and the ladder is re-rated
    exactly: ``verify`` and ``reconcile`` find nothing; a void of such a game names all its
    players."""
    publish(
        rt,
        teams("arena", [(1, ["ann", "bob"]), (2, ["cat", "dan"])], 2, event_id="before"),
        teams("arena", [(1, ["ann"]), (2, ["bob"]), (3, ["cat"])], 0.5, event_id="ffa"),
        draw("arena", "dan", "ann", 0.4, event_id="drawn"),
        teams("arena", [(1, ["bob"]), (2, ["cat"]), (3, ["dan"])], 0.3, event_id="others"),
    )
    drain(rt)
    since = (NOW - timedelta(days=1)).isoformat()
    assert 0 == ladder(rt, "ban", "arena", "ann", "--reason", "cheating", "--void-since", since)
    assert {g.event_id: g.outcome for g in games(rt.engine, "arena", "ann")} == {
        "drawn": "voided",
        "ffa": "voided",
        "before": "rated",
    }
    assert {g.event_id: g.outcome for g in games(rt.engine, "arena", "bob")}["others"] == "rated"
    clean(rt, "arena")
    with rt.engine.connect() as conn:  # a void run again projects every player of the game
        named = moderation.players_of(conn, "arena", ["ffa"])
    assert ["ann", "bob", "cat"] == [p.player_id for p in named]


def test_verify_since_an_instant_between_team_games_starts_their_players_as_recorded(rt):
    """``verify --since``: the players of a free-for-all processed after the instant start
    from what the log recorded of them before it, as the worker scored them."""
    publish(
        rt,
        teams("arena", [(1, ["ann"]), (2, ["bob"]), (3, ["cat"]), (4, ["dan"])], 2),
        teams("chess", [(1, ["ann", "bob"]), (2, ["cat", "dan"])], 2),
        draw("chess", "eve", "ann", 2),
    )
    drain(rt)
    instant = datetime.now(UTC)
    publish(
        rt,
        teams("arena", [(1, ["dan"]), (2, ["cat"]), (2, ["bob"])], 1),
        teams("chess", [(1, ["cat", "dan"]), (2, ["ann", "bob"])], 1),
        draw("chess", "ann", "eve", 1),
    )
    drain(rt)
    for name in ("arena", "chess"):
        report = verify(rt.engine, rt.leaderboard_redis, rt.config.ladders[name], since=instant)
        assert ([], 1 if name == "arena" else 2) == (report.mismatches, report.events)


def test_erase_of_a_team_game_player_leaves_the_id_in_no_table_and_the_games_to_the_pseudonym(
    rt, capfd
):
    """SPEC 6 "Erase": the id of a player of a 2v2, a free-for-all and a draw is found in no
    table (``game_players`` with the others), no Redis key and no log line; the games are the
    pseudonym's, and the ladder still verifies."""
    erased = "zed-7"
    publish(
        rt,
        teams("arena", [(1, [erased, "bob"]), (2, ["cat", "dan"])], 3, event_id="2v2"),
        teams("arena", [(1, ["eve"]), (2, [erased]), (3, ["bob"])], 2, event_id="ffa"),
        draw("arena", "cat", erased, 1, event_id="drawn"),
    )
    drain(rt)
    assert erased in everything_in_postgres(rt)
    capfd.readouterr()
    assert 0 == ladder(rt, "player", "erase", "arena", erased, "--yes", "--by", "dpo")
    logs = capfd.readouterr()
    stores = {
        "postgres": everything_in_postgres(rt),
        "redis": everything_in_redis(rt),
        "logs": logs.out + logs.err,
    }
    assert {} == {where: blob.count(erased) for where, blob in stores.items() if erased in blob}
    (pseudonym,) = {r["player_id"] for r in seated(rt, "arena") if r["event_id"] == "ffa"} - {
        "eve",
        "bob",
    }
    assert [(g.event_id, g.result, g.opponent) for g in games(rt.engine, "arena", pseudonym)] == [
        ("drawn", "draw", "cat"),
        ("ffa", "rank 2 of 3", None),
        ("2v2", "rank 1 of 2", None),
    ]
    clean(rt, "arena")


def test_an_archive_takes_the_rows_of_its_months_team_games_and_verify_replays_clean(
    rt, monkeypatch, capsys
):
    """SPEC 6: ``ladder archive --before YYYY-MM`` detaches the months before it and verify
    starts from the checkpoint. The ``game_players`` rows of the archived games go with them;
    the player's games and history read the months left, and both ladders verify."""
    clock = _Clock(monkeypatch)

    def processed(day: datetime, *made: dict[str, Any]) -> None:
        clock.at(day)
        for event in made:
            event["ended_at"] = iso(day - timedelta(minutes=1))
        publish(rt, *made)
        drain(rt)

    oct_2v2 = teams("arena", [(1, ["ann", "bob"]), (2, ["cat", "dan"])], 0, event_id="oct-2v2")
    processed(datetime(2026, 10, 10, tzinfo=UTC), oct_2v2, draw("chess", "ann", "bob", 0))
    oct_ffa = teams("arena", [(2, ["ann"]), (1, ["bob"]), (3, ["cat"]), (4, ["eve"])], 0)
    processed(datetime(2026, 10, 20, tzinfo=UTC), oct_ffa)
    processed(
        datetime(2026, 11, 5, tzinfo=UTC),
        teams("arena", [(1, ["cat"]), (2, ["ann"]), (3, ["eve"])], 0, event_id="nov-ffa"),
        draw("chess", "bob", "ann", 0, event_id="nov-draw"),
    )
    clock.real()
    publish(rt, teams("arena", [(1, ["ann", "dan"]), (2, ["bob", "eve"])], 0.1, event_id="now"))
    drain(rt)

    archive(rt.engine, rt.config, date(2026, 11, 1))
    assert {r["event_id"] for r in seated(rt)} == {"nov-ffa", "nov-draw", "now"}
    assert ["now", "nov-ffa"] == [g.event_id for g in games(rt.engine, "arena", "ann")]
    rows = ladder_json(rt, capsys, "history", "arena", "ann")
    assert [("now", "rank 1 of 2"), ("nov-ffa", "rank 2 of 3")] == [
        (r["event_id"], r["result"]) for r in rows
    ]
    clean(rt, "arena")
    clean(rt, "chess")


def test_verify_finds_a_game_players_row_missing_wrong_or_of_no_team_game(rt):
    """SPEC 6: verify "reproduces every stored number"; the rows of ``game_players`` are what
    the games list, the history, ``ban --void-since`` and erase read a player's draws and
    team games from, so verify holds each to the lived decision of its game (the player as
    resolved, its team's place, the teams, whether a draw) and names a row of an event the
    log does not hold as a draw or team game. A ladder as stored has none of these."""
    publish(
        rt,
        teams("arena", [(1, ["ann", "bob"]), (2, ["cat", "dan"])], 3, event_id="t-1"),
        draw("arena", "ann", "cat", 2, event_id="d-1"),
        game("ann", "bob", ladder="arena", event_id="w-1", ended_at=NOW - timedelta(days=1)),
    )
    drain(rt)
    config = rt.config.ladders["arena"]
    assert [] == verify(rt.engine, None, config).mismatches
    with rt.engine.begin() as conn:
        conn.execute(delete(seats).where(seats.c.event_id == "t-1", seats.c.player_id == "dan"))
        conn.execute(
            seats.update()
            .where(seats.c.event_id == "d-1", seats.c.player_id == "cat")
            .values(rank=2)
        )
        row = conn.execute(select(seats).where(seats.c.event_id == "d-1")).mappings().first()
        assert row is not None
        conn.execute(seats.insert().values({**row, "event_id": "w-1", "player_id": "ann"}))
    found = {
        (m.event_id, m.player_id, m.field, m.stored is None, m.derived is None)
        for m in verify(rt.engine, None, config).mismatches
    }
    assert {
        ("t-1", "dan", "game_players row", True, False),  # missing
        ("d-1", "cat", "game_players row", False, True),  # the stored row, rank 2
        ("d-1", "cat", "game_players row", True, False),  # the row made, rank 1
        ("w-1", "ann", "game_players row", False, True),  # of a 1v1 win
    } == found
