"""Predictions over a real Redis and PostgreSQL: ``GET /ladders/{ladder}/predict``, ``ladder
predict`` and the use case behind both, on a gammon42, a glicko2 and an openskill ladder.

The issue: "Win probability from the same model. `GET /ladders/{ladder}/predict` (and `ladder
predict`) gives each side's expected score for a proposed game (1v1 or teams) under the
ladder's current ruleset, from the same function that rates; the existing preview stays
consistent with it."
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from engine import Game, PlayerState
from engine.rating import predict as engine_predict
from engine.rating import preview as engine_preview
from tests.conftest import drain, publish
from tests.events import game, link
from tests.integration.helpers import EVERYONE
from tests.integration.helpers import command as ladder_command
from tests.integration.test_new_rulesets import LADDERS, NOW, played, receipt, teams
from worker.boards import states
from worker.entrypoints.api.app import create_app
from worker.entrypoints.cli import predict as predict_command
from worker.entrypoints.cli.main import dispatch
from worker.ladders import default_config_path
from worker.service import predict

GLICKO2_START = (1500.0, 350.0, 0.06)


@pytest.fixture
def rt(make_runtime: Any, tmp_path: Path) -> Any:
    """The shipped ladders with a glicko2 ladder (chess) and an openskill one (arena)."""
    path = tmp_path / "ladders.toml"
    path.write_text(default_config_path().read_text(encoding="utf-8") + LADDERS, encoding="utf-8")
    return make_runtime(ladder_config=path)


@pytest.fixture
def client(rt: Any) -> Iterator[TestClient]:
    app = create_app(rt.config, rt.leaderboard_redis, rt.engine, access=EVERYONE)
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client


def history(rt: Any) -> None:
    """Some games on each ladder, days apart, so ratings, deviations and idle days differ."""
    publish(
        rt,
        played("chess", "alice", "bob", 30),
        played("chess", "alice", "carol", 12),
        played("chess", "dan", "carol", 2),
        played("arena", "alice", "bob", 5),
        played("arena", "carol", "dan", 4),
        played("arena", "alice", "dan", 3),
        game("alice", "bob", ended_at=NOW - timedelta(days=2)),
        game("carol", "alice", ended_at=NOW - timedelta(days=1)),
    )
    drain(rt)


def expected_by_team(rt: Any, event_id: str, lineup: list[list[str]]) -> list[float]:
    """The expected scores a rated game's receipt records, as each team's mean."""
    found = {p["player_id"]: p["expected"] for p in receipt(rt, event_id)["players"]}
    return [math.fsum(found[pid] for pid in team) / len(team) for team in lineup]


def ask(client: TestClient, ladder: str, *lineup: str, **params: Any) -> Any:
    return client.get(f"/ladders/{ladder}/predict", params={"team": list(lineup), **params})


# -- the same function that rates ----------------------------------------------------------


@pytest.mark.parametrize("ladder", ["gammon42", "chess", "arena"])
def test_a_1v1_prediction_is_the_expected_score_the_game_then_records(rt, ladder):
    """Predicted for the moment a game ends, each side's expected is what its receipt records
    once the game is rated (glicko2: the deviations grown by the same idle days)."""
    history(rt)
    ended = NOW - timedelta(hours=6)
    found = predict.predict(
        rt.config.ladders[ladder], [["bob"], ["alice"]], rt.leaderboard_redis, at=ended
    )
    publish(rt, game("bob", "alice", ladder=ladder, ended_at=ended, event_id="next"))
    drain(rt)
    assert expected_by_team(rt, "next", [["bob"], ["alice"]]) == [t.expected for t in found.teams]


@pytest.mark.parametrize(
    ("ladder", "lineup"),
    [
        ("arena", [["alice", "dan"], ["bob", "carol"]]),  # a 2v2 on openskill
        ("chess", [["dan"], ["alice"], ["bob"], ["carol"]]),  # a free-for-all on glicko2
        ("chess", [["alice", "bob"], ["carol", "zed"]]),  # a 2v2 with a new player
    ],
)
def test_a_team_prediction_is_the_expected_score_the_game_then_records(rt, ladder, lineup):
    """A team game's expected per team is the mean of what its receipt records per player."""
    history(rt)
    ended = NOW - timedelta(hours=6)
    found = predict.predict(rt.config.ladders[ladder], lineup, rt.leaderboard_redis, at=ended)
    ranked = [(rank, ids) for rank, ids in enumerate(reversed(lineup), 1)]  # any result
    publish(rt, teams(ladder, ranked, 0.25, event_id="next"))
    drain(rt)
    recorded = expected_by_team(rt, "next", lineup)
    assert recorded == pytest.approx([t.expected for t in found.teams], abs=1e-15)


# -- GET /ladders/{ladder}/predict ----------------------------------------------------------


def test_a_1v1_on_gammon42_answers_each_sides_expected_score(rt, client):
    """team=alice&team=bob: the ladder, its ruleset and version, and each team with its
    players as the prediction took them."""
    history(rt)
    response = ask(client, "gammon42", "alice", "bob")
    assert 200 == response.status_code
    body = response.json()
    rules = rt.config.ladders["gammon42"].current
    alice, bob = (
        states.player_state(rt.leaderboard_redis, "gammon42", p) for p in ("alice", "bob")
    )
    assert {
        "ladder": "gammon42",
        "ruleset": "gammon42",
        "version": rules.version,
        "match_length": 1,
        "teams": [
            {
                "players": [
                    {
                        "player_id": "alice",
                        "rating": alice.rating,
                        "deviation": None,
                        "games": 2,
                        "new": False,
                        "rated_as": None,
                        "banned": False,
                    }
                ],
                "expected": engine_predict(rules, [[alice], [bob]])[0],
            },
            {
                "players": [
                    {
                        "player_id": "bob",
                        "rating": bob.rating,
                        "deviation": None,
                        "games": 1,
                        "new": False,
                        "rated_as": None,
                        "banned": False,
                    }
                ],
                "expected": engine_predict(rules, [[alice], [bob]])[1],
            },
        ],
        "rated": True,
    } == body


def test_a_preview_of_stored_players_agrees_with_the_prediction(rt, client):
    """The preview's win probability is the prediction's first team, on a glicko2 ladder too,
    where both now read the card's deviation grown by the days since the last game."""
    history(rt)
    for ladder in ("gammon42", "chess", "arena"):
        shown = client.get(f"/ladders/{ladder}/preview", params={"a": "carol", "b": "alice"}).json()
        found = ask(client, ladder, "carol", "alice").json()
        assert shown["win_probability"] == pytest.approx(found["teams"][0]["expected"], abs=1e-9)
    rules = rt.config.ladders["chess"].current
    carol, alice = (
        states.player_state(rt.leaderboard_redis, "chess", p) for p in ("carol", "alice")
    )
    bare = engine_preview(rules, PlayerState(carol.rating), PlayerState(alice.rating), Game())
    assert abs(bare.win_probability - shown["win_probability"]) > 1e-3  # not the start deviation


def test_a_2v2_on_openskill_gives_each_team_its_chance_to_finish_first(rt, client):
    """team=alice,carol&team=bob,dan: two teams of two, their chances summing to 1."""
    history(rt)
    body = ask(client, "arena", "alice,carol", "bob,dan").json()
    assert [["alice", "carol"], ["bob", "dan"]] == [
        [p["player_id"] for p in t["players"]] for t in body["teams"]
    ]
    assert 1.0 == pytest.approx(sum(t["expected"] for t in body["teams"]))
    assert body["teams"][0]["expected"] > 0.5  # alice and carol won all their games
    deviation = states.player_state(rt.leaderboard_redis, "arena", "alice").deviation
    assert deviation == body["teams"][0]["players"][0]["deviation"]


def test_a_free_for_all_on_glicko2_with_a_new_player(rt, client):
    """Four teams of one; an id the ladder has not seen is new, at the start rating and
    deviation; the answers follow the order given."""
    history(rt)
    body = ask(client, "chess", "alice", "zed", "carol", "dan").json()
    zed = body["teams"][1]["players"][0]
    assert (1500.0, 350.0, 0, True) == (zed["rating"], zed["deviation"], zed["games"], zed["new"])
    backwards = ask(client, "chess", "dan", "carol", "zed", "alice").json()
    forwards = [t["expected"] for t in body["teams"]]
    assert forwards == pytest.approx(
        [t["expected"] for t in reversed(backwards["teams"])], abs=1e-9
    )
    assert max(forwards) == forwards[0]  # alice won both her games


def test_an_id_linked_to_an_account_is_predicted_as_that_account(rt, client):
    """A game naming a linked id is rated on its account: the prediction takes the account's
    state; the id and its account together are one player, refused."""
    history(rt)
    publish(rt, game("anon-1", "bob"), link("gammon42", "anon-1", "carol"))
    drain(rt)
    body = ask(client, "gammon42", "anon-1", "bob").json()
    seat = body["teams"][0]["players"][0]
    carol = states.player_state(rt.leaderboard_redis, "gammon42", "carol")
    assert ("anon-1", "carol", carol.rating) == (
        seat["player_id"],
        seat["rated_as"],
        seat["rating"],
    )
    refused = ask(client, "gammon42", "anon-1", "carol")
    assert 400 == refused.status_code
    assert "'anon-1' and 'carol' are one player" in refused.json()["detail"]


def test_a_fibs_prediction_reads_the_match_length(rt, client):
    """match_length=11 favours the favourite more than a 1-point match."""
    publish(rt, game("alice", "bob", ladder="fibs"))
    drain(rt)
    one = ask(client, "fibs", "alice", "bob").json()["teams"][0]["expected"]
    eleven = ask(client, "fibs", "alice", "bob", match_length=11).json()
    assert 0.5 < one < eleven["teams"][0]["expected"] and 11 == eleven["match_length"]


@pytest.mark.parametrize(
    ("ladder", "lineup", "params", "detail"),
    [
        ("gammon42", ["alice"], {}, "team: "),
        ("gammon42", [f"p{i}" for i in range(65)], {}, "team: "),
        (
            "arena",
            [",".join(f"p{t}-{i}" for i in range(34)) for t in range(3)],
            {},
            "at most 100 players in all, got 102",
        ),
        ("gammon42", ["alice", "bob,alice"], {}, "team: 'alice' is named twice"),
        ("gammon42", ["alice,,bob", "carol"], {}, "team 1: an empty player id in 'alice,,bob'"),
        ("gammon42", ["alice", "bob,"], {}, "team 2: an empty player id in 'bob,'"),
        ("gammon42", ["alice", "bo\x07b"], {}, "team 2: 'bo\\x07b' is not a player id"),
        ("gammon42", ["alice", "b" * 129], {}, "is not a player id"),
        (
            "gammon42",
            ["alice,bob", "carol,dan"],
            {},
            "the gammon42 ruleset rates 1v1 wins only, not team games",
        ),
        (
            "fibs",
            ["alice", "bob", "carol"],
            {},
            "the fibs ruleset rates 1v1 wins only, not team games",
        ),
        ("gammon42", ["alice", "bob"], {"match_length": 0}, "match_length: "),
    ],
)
def test_what_cannot_be_a_game_is_a_400_naming_why(rt, client, ladder, lineup, params, detail):
    """Too few or too many teams or players, a bad or repeated id, or a team game on a
    ruleset that rates 1v1 games only: 400 with a one-line reason."""
    response = ask(client, ladder, *lineup, **params)
    assert (400, "bad_request") == (response.status_code, response.json()["error"])
    assert detail in response.json()["detail"] and "\n" not in response.json()["detail"]


def test_an_unknown_ladder_is_a_404(client):
    """As every read of a ladder."""
    response = ask(client, "nowhere", "alice", "bob")
    assert (404, "not_found") == (response.status_code, response.json()["error"])


def test_sixty_four_teams_and_a_hundred_players_are_answered(rt, client):
    """The limits themselves are allowed."""
    lineup = [f"p{i}" for i in range(62)] + [",".join(f"q{i}" for i in range(37)), "r"]
    assert 64 == len(lineup) and 100 == sum(len(t.split(",")) for t in lineup)
    body = ask(client, "chess", *lineup).json()
    assert 64 == len(body["teams"])


# -- ladder predict ---------------------------------------------------------------------------


def command(rt: Any, *argv: str) -> int:
    """Run ``ladder predict`` the way ``ladder`` does, against this runtime."""
    parser = argparse.ArgumentParser(prog="ladder")
    predict_command.register(parser.add_subparsers(dest="command", required=True))
    return dispatch(rt, parser.parse_args(list(argv)))


def test_ladder_predict_prints_each_teams_expected_score_in_percent(rt, capsys):
    """A table: the ladder and ruleset, then each team's expected score with one decimal."""
    history(rt)
    capsys.readouterr()  # the worker's log lines
    assert 0 == command(rt, "predict", "arena", "--team", "alice,dan", "--team", "bob,zed")
    lines = capsys.readouterr().out.splitlines()
    found = predict.predict(
        rt.config.ladders["arena"], [["alice", "dan"], ["bob", "zed"]], rt.leaderboard_redis
    )
    first, second = (f"{t.expected * 100:.1f} %" for t in found.teams)
    assert [
        "arena (openskill 1): expected score of each team",
        "team  expected  players",
        f"   1  {first:>8}  alice, dan",
        f"   2  {second:>8}  bob, zed (new)",
        "new: not on the ladder yet, at the ruleset's start",
    ] == lines


def test_ladder_predict_json_is_the_apis_answer(rt, client, capsys):
    """--json prints what the route answers."""
    history(rt)
    capsys.readouterr()  # the worker's log lines
    assert 0 == command(rt, "predict", "gammon42", "--team", "alice", "--team", "bob", "--json")
    printed = json.loads(capsys.readouterr().out)
    assert ask(client, "gammon42", "alice", "bob").json() == printed


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--team", "alice"], "ladder: team: give 2 to 64 teams, got 1\n"),
        ([], "ladder: team: give 2 to 64 teams, got 0\n"),
        (
            ["--team", "a,b", "--team", "c,d"],
            "ladder: the gammon42 ruleset rates 1v1 wins only, not team games\n",
        ),
        (["--team", "a", "--team", "b,a"], "ladder: team: 'a' is named twice\n"),
        (["--team", "a,", "--team", "b"], "ladder: team 1: an empty player id in 'a,'\n"),
    ],
)
def test_ladder_predict_mistakes_are_one_line_and_exit_2(rt, capsys, argv, said):
    """No traceback: one line naming the mistake."""
    assert 2 == command(rt, "predict", "gammon42", *argv)
    captured = capsys.readouterr()
    assert (said, "") == (captured.err, captured.out)


def test_ladder_predict_of_an_unknown_ladder_is_exit_2(rt, capsys):
    """As every read command."""
    assert 2 == command(rt, "predict", "nowhere", "--team", "a", "--team", "b")
    assert capsys.readouterr().err.startswith("ladder: no ladder named 'nowhere'")


def test_a_game_with_a_banned_player_is_predicted_unrated(rt, client, capsys):
    """SPEC 5: a banned player's games are "unrated for both" (moderation). The prediction
    still gives the model's expected scores, and says the game would not be rated: the
    banned seat, an id linked to a banned account too, and ``rated`` false; after the unban,
    rated again."""
    history(rt)
    publish(rt, played("arena", "anon-2", "bob", 1), link("arena", "anon-2", "dan"))
    drain(rt)
    before = ask(client, "arena", "alice", "anon-2").json()
    assert before["rated"] and not before["teams"][1]["players"][0]["banned"]
    assert 0 == ladder_command(rt, "ban", "arena", "dan", "--reason", "cheating")
    body = ask(client, "arena", "alice", "anon-2").json()
    seats = [team["players"][0] for team in body["teams"]]
    assert (False, [False, True]) == (body["rated"], [s["banned"] for s in seats])
    assert [t["expected"] for t in before["teams"]] == [t["expected"] for t in body["teams"]]
    capsys.readouterr()
    assert 0 == command(rt, "predict", "arena", "--team", "alice", "--team", "anon-2")
    lines = capsys.readouterr().out.splitlines()
    assert lines[-2].endswith("  anon-2 (as dan) (banned)")
    assert "banned: a game with a banned player is unrated for every player" == lines[-1]
    assert 0 == ladder_command(rt, "unban", "arena", "dan", "--reason", "appeal")
    assert ask(client, "arena", "alice", "anon-2").json()["rated"]
