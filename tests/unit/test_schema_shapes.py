"""The shapes of ``game.finished``: a 1v1 win, a 1v1 draw, a team or free-for-all game.

SPEC 7: "`game.finished` keeps `winner`/`loser` (a 1v1 win) and adds a draw and team /
free-for-all games (teams of player ids with finishing ranks, ties allowed, optional weight per
player for partial play); the exact field names are the developers' to choose, documented in
the JSON Schema files."

A draw is ``"result": "draw"`` with its two ``players``; a team game is ``teams``, each a
``rank`` (1 is first, equal ranks tie) and its ``players``, each with a ``weight`` (0 < weight
<= 1, default 1.0). A game is exactly one shape.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from schemas import EXAMPLES, GameFinished, InvalidEvent, PlayerRef, parse_event
from schemas.events import Instant, Team, TeamPlayer

NOW = datetime(2026, 11, 29, 18, 5, 0, tzinfo=UTC)
COMMON: dict[str, Any] = {
    "type": "game.finished",
    "event_id": "g-7",
    "ladder": "arena",
    "ended_at": "2026-11-29T18:04:05Z",
    "mode": "ranked",
}
WIN = {"winner": {"player_id": "alice"}, "loser": {"player_id": "bob"}}
DRAW = {"result": "draw", "players": [{"player_id": "alice"}, {"player_id": "bob"}]}
TEAMS = {
    "teams": [
        {"rank": 1, "players": [{"player_id": "alice"}, {"player_id": "bob", "weight": 0.5}]},
        {"rank": 2, "players": [{"player_id": "carol"}]},
    ]
}


def game(**fields: Any) -> str:
    """The JSON of a game with the common fields and ``fields``."""
    return json.dumps({**COMMON, **fields})


def teams(*ranked: tuple[int, list[str]]) -> list[dict[str, Any]]:
    """Teams of the given ranks and player ids."""
    return [{"rank": rank, "players": [{"player_id": i} for i in ids]} for rank, ids in ranked]


def parsed(raw: str) -> GameFinished:
    event = parse_event(raw, now=NOW)
    assert isinstance(event, GameFinished)
    return event


def refusal(raw: str) -> tuple[str, str]:
    """The reason and detail parsing ``raw`` refuses it with."""
    with pytest.raises(InvalidEvent) as info:
        parse_event(raw, now=NOW)
    return info.value.reason, info.value.detail


# --- each shape parses to its Struct ---------------------------------------------------------


def test_a_draw_parses_to_its_two_players_and_no_winner() -> None:
    """A draw's players are PlayerRefs in the order sent; winner, loser and teams are None."""
    event = parsed(game(**DRAW))
    expected = ("draw", [PlayerRef("alice"), PlayerRef("bob")], None, None, None)
    assert expected == (event.result, event.players, event.winner, event.loser, event.teams)


def test_a_team_game_parses_to_its_ranked_teams_with_weights() -> None:
    """Each team keeps its rank and players; an unsent weight is 1.0."""
    event = parsed(game(**TEAMS))
    expected = [
        Team(1, [TeamPlayer("alice", weight=1.0), TeamPlayer("bob", weight=0.5)]),
        Team(2, [TeamPlayer("carol", weight=1.0)]),
    ]
    assert expected == event.teams
    assert (None, None, None, "single") == (event.winner, event.loser, event.players, event.result)


def test_a_free_for_all_is_teams_of_one_and_equal_ranks_tie() -> None:
    """Four players, two of them tied second: ranks kept as sent."""
    event = parsed(game(teams=teams((1, ["a"]), (2, ["b"]), (2, ["c"]), (4, ["d"]))))
    assert event.teams is not None
    assert [(1, "a"), (2, "b"), (2, "c"), (4, "d")] == [
        (team.rank, team.players[0].player_id) for team in event.teams
    ]


def test_a_team_draw_is_every_team_at_the_same_rank() -> None:
    """Equal ranks tie: two teams both first is a drawn team game."""
    event = parsed(game(teams=teams((1, ["a", "b"]), (1, ["c", "d"]))))
    assert event.teams is not None
    assert [1, 1] == [team.rank for team in event.teams]


@pytest.mark.parametrize(("sent", "weight"), [(1, 1.0), (0.25, 0.25), (1e-9, 1e-9)])
def test_a_weight_is_read_as_a_float_in_its_range(sent: float, weight: float) -> None:
    """A JSON integer 1 is the weight 1.0; any number above 0 up to 1 is kept as sent."""
    weighed = {"rank": 1, "players": [{"player_id": "a", "weight": sent}]}
    event = parsed(game(teams=[weighed, *teams((2, ["b"]))]))
    assert event.teams is not None
    actual = event.teams[0].players[0].weight
    assert (weight, float) == (actual, type(actual))


def test_every_player_field_of_a_1v1_is_read_in_a_draw_and_a_team_game() -> None:
    """is_bot, network and ip are read for a draw's and a team's players too."""
    player = {"player_id": "a", "is_bot": True, "network": "net-1", "ip": "203.0.113.9"}
    draw = parsed(game(result="draw", players=[player, {"player_id": "b"}]))
    team = parsed(game(teams=[{"rank": 1, "players": [player]}, *teams((2, ["b"]))]))
    assert draw.players is not None and team.teams is not None
    expected = ("a", True, "net-1", "203.0.113.9")
    for ref in (draw.players[0], team.teams[0].players[0]):
        assert expected == (ref.player_id, ref.is_bot, ref.network, ref.ip)


def test_the_common_fields_keep_their_defaults_and_meaning_on_every_shape() -> None:
    """cube, match_length, end_reason, tournament_id and casual mode read alike in each shape."""
    common = {"mode": "casual", "cube": 2, "match_length": 3, "end_reason": "leave"}
    for shape in (WIN, DRAW, TEAMS):
        event = parsed(game(**shape, **common, tournament_id="cup-1"))
        expected = ("boosted", 2, 3, "leave", "cup-1")
        actual = (event.mode, event.cube, event.match_length, event.end_reason)
        assert expected == (*actual, event.tournament_id)
        bare = parsed(game(**shape))
        assert (1, 1, "normal", None) == (
            bare.cube,
            bare.match_length,
            bare.end_reason,
            bare.tournament_id,
        )


@pytest.mark.parametrize(("fields", "shape"), [(WIN, "win"), (DRAW, "draw"), (TEAMS, "teams")])
def test_a_game_names_its_shape(fields: dict[str, Any], shape: str) -> None:
    """GameFinished.shape is the GAME_SHAPES name of the fields it was sent with."""
    assert shape == parsed(game(**fields)).shape


def test_a_1v1_win_reads_as_it_always_did() -> None:
    """winner and loser, result gammon; the draw and team fields are None."""
    event = parsed(game(**WIN, result="gammon"))
    expected = (PlayerRef("alice"), PlayerRef("bob"), "gammon", None, None)
    assert expected == (event.winner, event.loser, event.result, event.players, event.teams)


@pytest.mark.parametrize(
    "key", ["game.finished/draw", "game.finished/teams", "game.finished/free-for-all"]
)
def test_the_published_examples_of_a_draw_and_team_games_parse(key: str) -> None:
    """EXAMPLES holds a draw, a team game and a free-for-all beside the SPEC 3 example."""
    event = parsed(json.dumps(EXAMPLES[key]))
    assert (key == "game.finished/draw") == (event.players is not None)


# --- refusals: one reason, one line ------------------------------------------------------------

P = [{"player_id": "alice"}, {"player_id": "bob"}]
ONE_SHAPE = "a game is a 1v1 win (winner, loser), a draw (players) or a team game (teams)"
REFUSALS = [
    # a shape not whole
    (game(), "missing_field", "winner: field required (a draw sends players, a team game teams)"),
    (game(winner=P[0]), "missing_field", "loser: field required"),
    (game(loser=P[1]), "missing_field", "winner: field required"),
    (game(players=P), "missing_field", 'result: field required (a draw sends "result": "draw")'),
    (game(result="draw"), "missing_field", "players: field required (a draw names its two players)"),
    (game(teams=[{"players": P}, *teams((2, ["c"]))]), "missing_field", "teams[0].rank: field required"),
    (game(teams=[{"rank": 1, "players": [{}]}, *teams((2, ["c"]))]), "missing_field", "teams[0].players[0].player_id: field required"),
    # two shapes
    (game(**WIN, **TEAMS), "invalid_field", f"teams: not with winner/loser: {ONE_SHAPE}"),
    (game(**WIN, players=P), "invalid_field", f"players: not with winner/loser: {ONE_SHAPE}"),
    (game(**DRAW, **TEAMS), "invalid_field", f"teams: not with players: {ONE_SHAPE}"),
    (game(winner=P[0], **TEAMS), "invalid_field", f"teams: not with winner/loser: {ONE_SHAPE}"),
    # a result the shape does not take
    (game(**WIN, result="draw"), "invalid_field", "result: a draw has no winner: send players"),
    (game(players=P, result="single"), "invalid_field", "result: must be 'draw' with players"),
    (game(players=P, result="gammon"), "invalid_field", "result: must be 'draw' with players"),
    (game(**TEAMS, result="draw"), "invalid_field", "result: a team game has no result (equal ranks tie): leave it out"),
    (game(**TEAMS, result="backgammon"), "invalid_field", "result: a team game has no result (equal ranks tie): leave it out"),
    # null is no shape
    (game(**WIN, teams=None), "invalid_field", "teams: expected `array`, got `null`"),
    (game(**TEAMS, winner=None, loser=None), "invalid_field", "winner: expected `object`, got `null`"),
    (game(**DRAW, loser=None), "invalid_field", "loser: expected `object`, got `null`"),
    (game(**WIN, players=None), "invalid_field", "players: expected `array`, got `null`"),
    # a player twice in one game
    (game(winner=P[0], loser=P[0]), "self_play", "loser: winner and loser are the same player"),
    (game(result="draw", players=[P[0], {**P[0], "is_bot": True}]), "self_play", "players[1]: player 'alice' is already in this game"),
    (game(teams=teams((1, ["alice", "bob"]), (2, ["carol", "alice"]))), "self_play", "teams[1].players[1]: player 'alice' is already in this game"),
    (game(teams=teams((1, ["alice", "bob"]), (2, ["carol", "dave"]), (3, ["bob"]))), "self_play", "teams[2].players[0]: player 'bob' is already in this game"),
    (game(teams=teams((1, ["a", "a"]), (2, ["b"]))), "self_play", "teams[0].players[1]: player 'a' is already in this game"),
    # out of the limits
    (game(result="draw", players=P[:1]), "invalid_field", "players: expected `array` of length >= 2"),
    (game(result="draw", players=[*P, {"player_id": "c"}]), "invalid_field", "players: expected `array` of length <= 2"),
    (game(teams=teams((1, ["a"]))), "invalid_field", "teams: expected `array` of length >= 2"),
    (game(teams=teams(*((r, [f"p{r}"]) for r in range(1, 66)))), "invalid_field", "teams: expected `array` of length <= 64"),
    (game(teams=teams((1, []), (2, ["b"]))), "invalid_field", "teams[0].players: expected `array` of length >= 1"),
    (game(teams=teams((1, [f"a{i}" for i in range(65)]), (2, ["b"]))), "invalid_field", "teams[0].players: expected `array` of length <= 64"),
    (game(teams=teams((1, [f"a{i}" for i in range(64)]), (2, [f"b{i}" for i in range(37)]))), "invalid_field", "teams: at most 100 players in all, not 101"),
    (game(teams=teams((0, ["a"]), (2, ["b"]))), "invalid_field", "teams[0].rank: expected `int` >= 1"),
    (game(teams=teams((1, ["a"]), (1001, ["b"]))), "invalid_field", "teams[1].rank: expected `int` <= 1000"),
    (game(teams=[{"rank": 1.0, "players": P[:1]}, *teams((2, ["b"]))]), "invalid_field", "teams[0].rank: expected `int`, got `float`"),
    (game(teams=[{"rank": 1, "players": [{"player_id": "a", "weight": 0}]}, *teams((2, ["b"]))]), "invalid_field", "teams[0].players[0].weight: expected `float` > 0.0"),
    (game(teams=[{"rank": 1, "players": [{"player_id": "a", "weight": 1.5}]}, *teams((2, ["b"]))]), "invalid_field", "teams[0].players[0].weight: expected `float` <= 1.0"),
    (game(teams=[{"rank": 1, "players": [{"player_id": "a", "weight": "1"}]}, *teams((2, ["b"]))]), "invalid_field", "teams[0].players[0].weight: expected `float`, got `str`"),
    (game(teams=[{"rank": 1, "players": [{"player_id": "a", "ip": "1.2.3"}]}, *teams((2, ["b"]))]), "invalid_field", "teams[0].players[0].ip: must be an IPv4 or IPv6 address"),
    (game(result="draw", players=[{"player_id": "a "}, P[1]]), "invalid_field", "players[0].player_id: must not begin or end with white space or an invisible character"),
]  # fmt: skip


@pytest.mark.parametrize(("raw", "reason", "detail"), REFUSALS)
def test_each_game_that_is_not_exactly_one_whole_shape_is_refused_with_its_reason(
    raw: str, reason: str, detail: str
) -> None:
    """A shape not whole is missing_field, a player twice self_play, the rest invalid_field."""
    assert (reason, detail) == refusal(raw)


@pytest.mark.parametrize(("raw", "reason", "detail"), REFUSALS)
def test_each_refusal_of_a_shape_is_one_line_and_never_echoes_an_address(
    raw: str, reason: str, detail: str
) -> None:
    """The detail is one line; no ip a player was sent with is in it."""
    sent = json.loads(raw)
    draw, teams_sent = sent.get("players") or [], sent.get("teams") or []
    everyone = [*draw, *(player for team in teams_sent for player in team["players"])]
    ips = {
        player.setdefault("ip", "198.51.100.77") for player in everyone if isinstance(player, dict)
    }
    actual = refusal(json.dumps(sent))[1]
    assert ([actual], set()) == (actual.splitlines(), {ip for ip in ips if ip in actual})


def test_a_game_built_in_python_checks_its_shape_as_parsing_does() -> None:
    """The Struct's own check: a draw needs result draw, a team game no player twice."""
    at = Instant(2026, 11, 29, tzinfo=UTC)
    with pytest.raises(ValueError, match="^result: must be 'draw' with players$"):
        GameFinished("g", "l", at, "ranked", players=[PlayerRef("a"), PlayerRef("b")])
    twice = [Team(1, [TeamPlayer("a")]), Team(2, [TeamPlayer("a")])]
    with pytest.raises(ValueError, match=r"^teams\[1\]\.players\[0\]: player 'a' is already"):
        GameFinished("g", "l", at, "ranked", teams=twice)


# --- the stored form -------------------------------------------------------------------------


def test_a_draw_is_stored_with_its_players_and_never_an_ip() -> None:
    """Common fields with their defaults, result draw, then players; no ip, no new 1v1 key."""
    raw = game(result="draw", players=[{"player_id": "alice", "ip": "203.0.113.9"}, {"player_id": "bob", "network": "n-b"}])  # fmt: skip
    expected = (
        '{"type": "game.finished", "event_id": "g-7", "ladder": "arena", "ended_at": '
        '"2026-11-29T18:04:05Z", "mode": "ranked", "cube": 1, "match_length": 1, "result": '
        '"draw", "end_reason": "normal", "players": [{"player_id": "alice", "is_bot": false}, '
        '{"player_id": "bob", "is_bot": false, "network": "n-b"}]}'
    )
    assert expected == json.dumps(parsed(raw).stored())


def test_a_team_game_is_stored_with_ranks_and_every_weight_and_never_an_ip() -> None:
    """Each team's rank and players; each player's weight, 1.0 when it was not sent."""
    expected = (
        '{"type": "game.finished", "event_id": "g-000125", "ladder": "arena", "ended_at": '
        '"2026-11-29T17:51:30Z", "mode": "ranked", "cube": 1, "match_length": 1, "result": '
        '"single", "end_reason": "normal", "teams": [{"rank": 1, "players": [{"player_id": '
        '"alice", "is_bot": false, "weight": 1.0}, {"player_id": "bob", "is_bot": false, '
        '"weight": 0.5}]}, {"rank": 2, "players": [{"player_id": "carol", "is_bot": false, '
        '"network": "net-7f3a", "weight": 1.0}, {"player_id": "dave", "is_bot": false, '
        '"weight": 1.0}]}]}'
    )
    event = parsed(json.dumps(EXAMPLES["game.finished/teams"]))
    assert event.teams is not None and "203.0.113.9" == event.teams[1].players[1].ip
    assert expected == json.dumps(event.stored())


def test_a_1v1_win_is_stored_with_no_key_of_the_other_shapes() -> None:
    """The SPEC 3 example's stored form: the keys it always had, in their order."""
    stored = parsed(json.dumps(EXAMPLES["game.finished"])).stored()
    expected = [
        "type", "event_id", "ladder", "ended_at", "mode", "winner", "loser", "cube",
        "match_length", "result", "end_reason",
    ]  # fmt: skip
    assert expected == list(stored)
    assert {"player_id": "bob", "is_bot": False} == stored["loser"]


def test_a_team_player_and_a_team_never_show_the_raw_address() -> None:
    """repr of a TeamPlayer, a Team and a game holding them leaves the ip out."""
    event = parsed(json.dumps(EXAMPLES["game.finished/teams"]))
    assert event.teams is not None
    for value in (event, event.teams[1], event.teams[1].players[1]):
        assert "203.0.113.9" not in repr(value)
    assert "TeamPlayer(player_id='dave', is_bot=False, network=None, weight=1.0)" == repr(
        event.teams[1].players[1]
    )
