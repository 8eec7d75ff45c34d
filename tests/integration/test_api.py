"""The read-only HTTP API over a real Redis and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis import Redis
from starlette.testclient import TestClient
from structlog.testing import capture_logs

from tests.conftest import drain, publish
from tests.events import game
from tests.integration.helpers import EVERYONE
from tests.integration.test_reader import TIES, seed
from worker import keys
from worker.entrypoints.api.app import create_app
from worker.entrypoints.api.caching import CACHE_OK
from worker.ops import seasons

L = "gammon42"


@pytest.fixture
def client(runtime: Any) -> Iterator[TestClient]:
    app = create_app(runtime.config, runtime.leaderboard_redis, runtime.engine, access=EVERYONE)
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client


def test_top_returns_entries_with_a_cdn_cache_header(runtime, client):
    """GET /ladders/L/top: an array of entries, cacheable for a few seconds."""
    seed(runtime.leaderboard_redis, TIES)
    response = client.get(f"/ladders/{L}/top", params={"limit": 3})
    assert 200 == response.status_code
    assert CACHE_OK == response.headers["cache-control"]
    assert [(1, "amy"), (2, "bob"), (2, "cat")] == [
        (e["rank"], e["player_id"]) for e in response.json()
    ]


def test_the_leaderboard_pages_forwards_and_back_with_cursors(runtime, client):
    """next_cursor then prev_cursor with direction=prev returns to the first page."""
    seed(runtime.leaderboard_redis, TIES)
    first = client.get(f"/ladders/{L}/leaderboard", params={"size": 2}).json()
    second = client.get(
        f"/ladders/{L}/leaderboard", params={"size": 2, "cursor": first["next_cursor"]}
    ).json()
    back = client.get(
        f"/ladders/{L}/leaderboard",
        params={"size": 2, "cursor": second["prev_cursor"], "direction": "prev"},
    ).json()
    assert ["cat", "dan"] == [e["player_id"] for e in second["entries"]]
    assert first["entries"] == back["entries"]
    assert (5, None) == (back["total"], back["prev_cursor"])


def test_rank_around_and_card_of_a_player(runtime, client):
    """The player routes answer with the same ranks as the board."""
    seed(runtime.leaderboard_redis, TIES)
    eve = {"player_id": "eve", "rank": 5, "rating": 1400.0, "provisional": False, "percentile": 0.0}
    assert eve == (client.get(f"/ladders/{L}/players/eve/rank").json())
    around = client.get(f"/ladders/{L}/players/amy/around", params={"radius": 1}).json()
    assert [(1, "amy"), (2, "bob")] == [(e["rank"], e["player_id"]) for e in around]
    card = client.get(f"/ladders/{L}/players/cat").json()
    assert (2, 3, 1500.0) == (card["rank"], card["games"], card["rating"])


def test_a_player_id_with_a_slash_is_reached_percent_encoded(runtime, client):
    """'%2F' stays inside the id instead of splitting the path."""
    seed(runtime.leaderboard_redis, {"dev/ice%1": 1500.0, "x": 1600.0})
    response = client.get(f"/ladders/{L}/players/dev%2Fice%251/rank")
    assert (200, "dev/ice%1", 2) == (
        response.status_code,
        response.json()["player_id"],
        response.json()["rank"],
    )
    assert "dev/ice%1" == client.get(f"/ladders/{L}/players/dev%2Fice%251").json()["player_id"]


def test_history_after_real_games(runtime, client):
    """GET .../history lists the ledger newest first."""
    publish(runtime, game("alice", "bob", event_id="g-1"), game("carol", "alice", event_id="g-2"))
    drain(runtime)
    changes = client.get(f"/ladders/{L}/players/alice/history").json()
    assert [("g-2", "loss"), ("g-1", "win")] == [(c["event_id"], c["result"]) for c in changes]


def test_history_shows_a_season_reset_as_kind_season(runtime, client):
    """Seed 004: a season reset is a rating change (kind season); history answers it, typed."""
    publish(runtime, game("alice", "bob", event_id="g-1"))
    drain(runtime)
    ladder_config = runtime.config.ladders[L]
    seasons.close(runtime.engine, runtime.redis, ladder_config, "one", seasons.Policy("start"))
    response = client.get(f"/ladders/{L}/players/alice/history")
    assert 200 == response.status_code, response.text
    assert [("season:one", "season"), ("g-1", "game")] == [
        (c["event_id"], c["kind"]) for c in response.json()
    ]


@pytest.mark.parametrize(
    ("ladder", "params", "expected"),
    [
        # seed 002: equal 1500s at cube 1
        ("gammon42", {"a_rating": 1500, "b_rating": 1500}, ("50.0 %", "+16", "-16")),
        # seed 003's calculator: A - B = -100, N = 5, experience 5
        (
            "fibs",
            {"a_rating": 1400, "b_rating": 1500, "match_length": 5, "a_experience": 5},
            ("43.6 %", "+25.0", "-19.3"),
        ),
        # seed 004: 1200 vs 1400, both established (K 16)
        (
            "prostriker",
            {"a_rating": 1200, "b_rating": 1400, "a_games": 200, "b_games": 200},
            ("24.0 %", "+12", "-4"),
        ),
    ],
)
def test_preview_reproduces_the_seed_examples(client, ladder, params, expected):
    """The calculator of every ladder, from given ratings."""
    body = client.get(f"/ladders/{ladder}/preview", params=params).json()
    shown = body["display"]
    assert expected == (shown["win_probability"], shown["if_win"], shown["if_lose"])


def test_preview_of_stored_players(runtime, client):
    """a and b name stored players; their games come from the player hash."""
    publish(runtime, game("alice", "bob", ladder="prostriker"))
    drain(runtime)
    body = client.get("/ladders/prostriker/preview", params={"a": "alice", "b": "bob"}).json()
    assert (1220.0, 1, 1180.0) == (body["a"]["rating"], body["a"]["games"], body["b"]["rating"])


def test_preview_without_players_uses_the_start_rating_and_overrides_apply(runtime, client):
    """No a: a new player at the ladder's start; a_rating replaces a stored rating."""
    publish(runtime, game("alice", "bob", ladder="prostriker"))
    drain(runtime)
    params = {"a": "alice", "a_rating": 1300, "a_games": 250}
    body = client.get("/ladders/prostriker/preview", params=params).json()
    assert (None, 1200.0) == (body["b"]["player_id"], body["b"]["rating"])
    assert ("alice", 1300.0, 250) == (
        body["a"]["player_id"],
        body["a"]["rating"],
        body["a"]["games"],
    )


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/ladders/chess/top", {}),
        (f"/ladders/{L}/players/zed", {}),
        (f"/ladders/{L}/players/zed/rank", {}),
        (f"/ladders/{L}/players/zed/around", {}),
        (f"/ladders/{L}/players/zed/history", {}),
        (f"/ladders/{L}/top", {"board": "public"}),
        (f"/ladders/{L}/top", {"board": "season:never"}),
        (f"/ladders/{L}/preview", {"a": "zed", "b_rating": 1500}),
        ("/nowhere", {}),
    ],
)
def test_unknown_ladders_boards_and_players_are_404_json(runtime, client, path, params):
    """A clear JSON 404 naming what is missing."""
    seed(runtime.leaderboard_redis, TIES)
    response = client.get(path, params=params)
    assert (404, "not_found") == (response.status_code, response.json()["error"])


@pytest.mark.parametrize(
    ("path", "params"),
    [
        (f"/ladders/{L}/top", {"limit": 0}),
        (f"/ladders/{L}/top", {"limit": "ten"}),
        (f"/ladders/{L}/top", {"limit": 10**30}),
        (f"/ladders/{L}/top", {"board": "elo"}),
        (f"/ladders/{L}/leaderboard", {"cursor": "bogus"}),
        (f"/ladders/{L}/leaderboard", {"direction": "up"}),
        (f"/ladders/{L}/leaderboard", {"offset": -1}),
        (f"/ladders/{L}/players/amy/around", {"radius": 10**6}),
        (f"/ladders/{L}/preview", {"a_rating": "nan", "b_rating": 1500}),
        (f"/ladders/{L}/preview", {"a_rating": 1500, "b_rating": 1500, "cube": 3}),
        (f"/ladders/{L}/preview", {"a": "amy", "b": "amy"}),
    ],
)
def test_bad_parameters_are_400_json(runtime, client, path, params):
    """Parameters that can never work are refused with a reason."""
    seed(runtime.leaderboard_redis, TIES)
    response = client.get(path, params=params)
    assert (400, "bad_request") == (response.status_code, response.json()["error"])


def test_an_unreachable_redis_is_503_not_500(runtime):
    """Infrastructure trouble is 'unavailable', never a server error."""
    down = Redis.from_url("redis://127.0.0.1:1/0", socket_connect_timeout=0.2)
    app = create_app(runtime.config, down, runtime.engine, access=EVERYONE)
    with TestClient(app, raise_server_exceptions=False) as client, capture_logs() as said:
        response = client.get(f"/ladders/{L}/top")
    assert (503, "no-store") == (response.status_code, response.headers["cache-control"])
    # The operator's log says which store and why; the answer only which store.
    (line,) = [s for s in said if s["event"] == "store_unavailable"]
    assert ("redis", f"/ladders/{L}/top") == (line["store"], line["path"])
    assert line["error"].startswith("ConnectionError: ") and "\n" not in line["error"]


def test_the_openapi_document_lists_every_route(client):
    """/openapi.json is served and names each read."""
    document = client.get("/openapi.json").json()
    assert "3.1.0" == document["openapi"]
    assert {
        "/ladders",
        "/ladders/{ladder}/top",
        "/ladders/{ladder}/leaderboard",
        "/ladders/{ladder}/preview",
        "/ladders/{ladder}/predict",
        "/ladders/{ladder}/players/{player_id}",
        "/ladders/{ladder}/players/{player_id}/rank",
        "/ladders/{ladder}/players/{player_id}/around",
        "/ladders/{ladder}/players/{player_id}/history",
        "/ladders/{ladder}/among",
        "/ladders/{ladder}/export",
        "/ladders/{ladder}/events/{event_id}",
    } == set(document["paths"])


def test_the_openapi_document_is_generated_from_the_models(client):
    """The document states what the code does: history's kinds include season and the
    moderation rows, the page says cursor or offset, and bad parameters are 400 (no 422 is
    ever answered, so none is listed)."""
    document = client.get("/openapi.json").json()
    kinds = document["components"]["schemas"]["Change"]["properties"]["kind"]["enum"]
    kinds_now = {"game", "prize", "link", "season", "import", "adjustment", "correction"}
    assert kinds_now == set(kinds)
    page = document["paths"]["/ladders/{ladder}/leaderboard"]["get"]
    assert "Give a cursor or an offset, not both." in page["description"]
    statuses = {code for item in document["paths"].values() for code in item["get"]["responses"]}
    assert "422" not in statuses and "400" in statuses
    unavailable = document["components"]["schemas"]["Unavailable"]
    assert {"error", "detail", "store"} == set(unavailable["required"])


def test_the_document_states_that_cursor_and_offset_exclude_each_other(runtime, client):
    """Issue 34: "the OpenAPI document does not say that `cursor` and `offset` exclude each
    other, so a schema-valid request (`?cursor=0&offset=0`) is refused with 400". The page's
    cursor and offset are one exploded query object with at most one property, so a request
    with both is schema-invalid, and what the schema allows is answered 200."""
    seed(runtime.leaderboard_redis, TIES)
    document = client.get("/openapi.json").json()
    params = document["paths"]["/ladders/{ladder}/leaderboard"]["get"]["parameters"]
    assert not {"cursor", "offset"} & {p["name"] for p in params}
    (position,) = [p for p in params if p.get("explode")]
    assert ("query", "form") == (position["in"], position["style"])
    validator = jsonschema.Draft202012Validator(position["schema"])
    cursor = client.get(f"/ladders/{L}/leaderboard", params={"size": 2}).json()["next_cursor"]
    assert not validator.is_valid({"cursor": cursor, "offset": 0})
    assert not validator.is_valid({"cursor": "0", "offset": 0})
    for allowed in ({}, {"cursor": cursor}, {"offset": 0}, {"offset": 3}):
        assert validator.is_valid(allowed)
        response = client.get(f"/ladders/{L}/leaderboard", params={"size": 2, **allowed})
        assert 200 == response.status_code, (allowed, response.text)
    both = client.get(f"/ladders/{L}/leaderboard", params={"cursor": cursor, "offset": 0})
    assert 400 == both.status_code
    assert "give a cursor or an offset, not both" in both.json()["detail"]
    docs = client.get("/docs").text
    assert "cursor?, offset?" in docs


def test_a_parameter_of_the_wrong_type_is_one_line_naming_it(client):
    """A value the typed parameter refuses is a 400 naming the parameter, like any other."""
    response = client.get(f"/ladders/{L}/top", params={"limit": "ten"})
    assert (400, "no-store") == (response.status_code, response.headers["cache-control"])
    detail = response.json()["detail"]
    assert detail.startswith("limit: ") and "'ten'" in detail and "\n" not in detail


def test_the_docs_page_lists_every_operation_without_the_network(client):
    """/docs is one HTML page: every operation, a link to /openapi.json, nothing fetched."""
    response = client.get("/docs")
    assert 200 == response.status_code
    assert response.headers["content-type"].startswith("text/html")
    page = response.text
    for path in client.get("/openapi.json").json()["paths"]:
        assert f"GET {path}" in page
    assert "href='/openapi.json'" in page
    assert "<script" not in page and "http://" not in page and "https://" not in page


def test_ladders_lists_the_boards_each_ladder_keeps(client):
    """gammon42 keeps a boosted board, fibs a public one."""
    ladders = {lc["name"]: lc["boards"] for lc in client.get("/ladders").json()["ladders"]}
    assert ["rating", "boosted"] == ladders["gammon42"]
    assert ["rating", "public"] == ladders["fibs"]


text = st.text(max_size=12)
query_values = st.one_of(
    text,
    st.integers(min_value=-(10**20), max_value=10**20).map(str),
    st.sampled_from(["", "nan", "inf", "-1", "1e309", "season:", "season:x", "prev", "next"]),
)
player_ids = st.one_of(st.sampled_from(["amy", "eve", "zed", "a%2Fb", "%", "."]), text)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    route=st.sampled_from(
        [
            "/ladders/{ladder}/top",
            "/ladders/{ladder}/leaderboard",
            "/ladders/{ladder}/preview",
            "/ladders/{ladder}/players/{player}",
            "/ladders/{ladder}/players/{player}/rank",
            "/ladders/{ladder}/players/{player}/around",
            "/ladders/{ladder}/players/{player}/history",
        ]
    ),
    ladder=st.sampled_from([L, "fibs", "chess", "%20", "a.b"]),
    player=player_ids,
    params=st.dictionaries(
        st.sampled_from(
            [
                "limit",
                "size",
                "board",
                "cursor",
                "offset",
                "direction",
                "radius",
                "a",
                "b",
                "a_rating",
                "b_rating",
                "a_games",
                "b_experience",
                "a_recent",
                "cube",
                "match_length",
            ]
        ),
        query_values,
        max_size=5,
    ),
)
def test_no_request_gets_a_server_error(runtime, client, route, ladder, player, params):
    """Whatever the path and query, the answer is JSON and never a 500."""
    if not runtime.leaderboard_redis.exists(keys.rating(L)):
        seed(runtime.leaderboard_redis, TIES)
    path = route.format(ladder=ladder, player=quote(player, safe=""))
    response = client.get(path, params=params)
    assert response.status_code in (200, 400, 404, 405), response.text
    assert response.headers["content-type"].startswith("application/json")
