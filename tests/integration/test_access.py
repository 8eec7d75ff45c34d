"""Who may read what over HTTP (SPEC 6, "Access"), through the app itself.

"scopes boards, history, export, console; LADDER_PUBLIC_SCOPES (default boards) for anonymous
callers; 401 without a token, 403 without the scope." The real ``ladder serve`` is driven in
tests/e2e/test_access_serve.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI
from redis import Redis
from starlette.testclient import TestClient

from tests.conftest import drain, publish
from tests.events import game
from worker.access import Access, Scope, parse_tokens
from worker.entrypoints.api import auth
from worker.entrypoints.api.app import create_app, document

L = "gammon42"
EXPORT = "export-0123456789abcdef"
BOARDS = "boards-0123456789abcdef"
HISTORY = "history-0123456789abcdef"
CONSOLE = "console-0123456789abcdef"
TOKENS = parse_tokens(
    [f"ex:{EXPORT}:export", f"bo:{BOARDS}:boards", f"hi:{HISTORY}:history", f"co:{CONSOLE}:console"]
)

# Every route of the app and the scope it needs: a new route must be added here on purpose.
ROUTES: dict[str, Scope | None] = {
    "/ladders": Scope.BOARDS,
    "/ladders/{ladder}/top": Scope.BOARDS,
    "/ladders/{ladder}/leaderboard": Scope.BOARDS,
    "/ladders/{ladder}/players/{player_id}": Scope.BOARDS,
    "/ladders/{ladder}/players/{player_id}/rank": Scope.BOARDS,
    "/ladders/{ladder}/players/{player_id}/around": Scope.BOARDS,
    "/ladders/{ladder}/among": Scope.BOARDS,
    "/ladders/{ladder}/predict": Scope.BOARDS,
    "/ladders/{ladder}/players/{player_id}/history": Scope.HISTORY,
    "/ladders/{ladder}/preview": Scope.HISTORY,
    "/ladders/{ladder}/events/{event_id}": Scope.HISTORY,
    "/ladders/{ladder}/export": Scope.EXPORT,
    "/": Scope.CONSOLE,
    "/ui/ladders/{ladder}": Scope.CONSOLE,
    "/ui/ladders/{ladder}/players/{player_id}": Scope.CONSOLE,
    "/ui/ladders/{ladder}/calibration": Scope.CONSOLE,
    "/openapi.json": None,
    "/docs": None,
    "/ui/login": None,
    "/ui/logout": None,
}


def _app(runtime: Any, public: frozenset[Scope] = frozenset({Scope.BOARDS})) -> Any:
    access = Access(TOKENS, public)
    return create_app(
        runtime.config, runtime.leaderboard_redis, runtime.engine, runtime.redis, access=access
    )


@pytest.fixture
def client(runtime: Any) -> Iterator[TestClient]:
    publish(runtime, game("alice", "bob", event_id="g-1"))
    drain(runtime)
    with TestClient(_app(runtime), raise_server_exceptions=False, headers=SAME_SITE) as test_client:
        yield test_client


SAME_SITE = {"Origin": "http://testserver"}  # what a browser sends with a form of this site


def _login(client: TestClient, **headers: str) -> Any:
    return client.post(
        "/ui/login", data={"token": CONSOLE}, headers=headers, follow_redirects=False
    )


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _fastapi(app: Any) -> FastAPI:
    while not isinstance(app, FastAPI):
        app = app.app
    return app


def test_every_route_has_the_scope_it_was_given_on_purpose(runtime):
    """Map every route to its scope deliberately: the table above is the whole app."""
    app = _fastapi(_app(runtime))
    routes = {r.path: auth.scope_of(r) for r in auth.routes_of(app)}
    assert ROUTES == routes


def test_an_app_with_a_route_that_declares_no_scope_is_refused(runtime):
    """Fail closed: a route nobody gave a scope is not answered to everyone."""
    app = _fastapi(_app(runtime))
    app.get("/ladders/{ladder}/secrets")(lambda ladder: {})
    with pytest.raises(RuntimeError, match="/ladders/{ladder}/secrets declares no scope"):
        auth.check_every_route(app)


def test_the_export_needs_an_export_token(client):
    """Done when: anonymous export 401 (WWW-Authenticate: Bearer); boards token 403; export 200."""
    anonymous = client.get(f"/ladders/{L}/export")
    assert 401 == anonymous.status_code
    assert anonymous.headers["www-authenticate"].startswith("Bearer")
    assert "unauthorized" == anonymous.json()["error"]
    boards = client.get(f"/ladders/{L}/export", headers=_bearer(BOARDS))
    assert 403 == boards.status_code and "lacks the export scope" in boards.json()["detail"]
    allowed = client.get(f"/ladders/{L}/export", headers=_bearer(EXPORT))
    assert 200 == allowed.status_code and '"player_id": "alice"' in allowed.text


@pytest.mark.parametrize(
    "path",
    [
        f"/ladders/{L}/players/alice/history",
        f"/ladders/{L}/events/g-1",
        f"/ladders/{L}/preview?a=alice&b=bob",
    ],
)
def test_histories_receipts_and_previews_need_the_history_scope(client, path):
    """SPEC 6: history covers a player's games, event receipts and previews."""
    assert 401 == client.get(path).status_code
    assert 403 == client.get(path, headers=_bearer(EXPORT)).status_code
    answer = client.get(path, headers=_bearer(HISTORY))
    assert 200 == answer.status_code
    assert answer.headers["cache-control"].startswith("private")  # never in a shared cache


def test_boards_are_public_by_default_and_closed_with_an_empty_public_scope(runtime, client):
    """Done when: top anonymous 200 by default, 401 with LADDER_PUBLIC_SCOPES empty."""
    answer = client.get(f"/ladders/{L}/top")
    assert 200 == answer.status_code and answer.headers["cache-control"].startswith("public")
    with TestClient(_app(runtime, frozenset()), raise_server_exceptions=False) as closed:
        assert 401 == closed.get(f"/ladders/{L}/top").status_code
        assert 200 == closed.get(f"/ladders/{L}/top", headers=_bearer(BOARDS)).status_code
        assert 403 == closed.get(f"/ladders/{L}/top", headers=_bearer(EXPORT)).status_code


@pytest.mark.parametrize(
    "header",
    [f"Bearer {BOARDS}x", "Bearer ", f"Basic {BOARDS}", BOARDS, f"Bearer {BOARDS[:-1]}"],
)
def test_a_token_that_is_not_known_is_refused_even_where_anyone_may_read(client, header):
    """A wrong credential is a 401 (invalid_token), not silently read as anonymous."""
    answer = client.get(f"/ladders/{L}/top", headers={"Authorization": header})
    assert 401 == answer.status_code
    assert 'error="invalid_token"' in answer.headers["www-authenticate"]
    assert BOARDS not in answer.text


def test_a_refusal_comes_before_any_parameter_is_read(client):
    """An anonymous caller learns nothing from a protected route, not even a 400 or 404."""
    assert 401 == client.get("/ladders/nope/export?board=nope").status_code
    assert 404 == client.get("/ladders/nope/export", headers=_bearer(EXPORT)).status_code


def test_the_console_without_a_session_redirects_to_its_login_page(client):
    """Done when: the console without a session redirects to its login page."""
    for path in ("/", f"/ui/ladders/{L}", f"/ui/ladders/{L}/players/alice?x=1"):
        answer = client.get(path, follow_redirects=False)
        assert 303 == answer.status_code, path
        assert answer.headers["location"].startswith("/ui/login?next=/")
    assert "/ui/login?next=/ui/ladders/gammon42/players/alice%3Fx%3D1" == answer.headers["location"]
    form = client.get("/ui/login")
    assert 200 == form.status_code and 'type="password" name="token"' in form.text


def test_a_console_login_sets_a_strict_http_only_session_without_the_token(client):
    """SPEC 6: a token login form sets an HttpOnly, SameSite=Strict cookie; no token in a URL."""
    answer = client.post(
        "/ui/login",
        data={"token": CONSOLE, "next": f"/ui/ladders/{L}"},
        follow_redirects=False,
    )
    assert 303 == answer.status_code and f"/ui/ladders/{L}" == answer.headers["location"]
    cookie = answer.headers["set-cookie"]
    assert cookie.startswith(f"{auth.SESSION_COOKIE}=co.")
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
    assert CONSOLE not in cookie and CONSOLE not in answer.headers["location"]
    page = client.get(f"/ui/ladders/{L}")  # the client keeps the cookie
    assert 200 == page.status_code and "alice" in page.text
    assert "no-store" == page.headers["cache-control"]  # not shown again once signed out
    assert 401 == client.get(f"/ladders/{L}/export").status_code  # the JSON API ignores it
    client.post("/ui/logout", follow_redirects=False)
    assert 303 == client.get(f"/ui/ladders/{L}", follow_redirects=False).status_code


@pytest.mark.parametrize(
    ("token", "status", "shown"),
    [(EXPORT, 403, "lacks the console scope"), ("nope-0123456789abcdef", 401, "not known")],
)
def test_a_login_with_the_wrong_token_sets_no_session(client, token, status, shown):
    """Only a token with the console scope opens the console."""
    answer = client.post("/ui/login", data={"token": token}, follow_redirects=False)
    assert status == answer.status_code and shown in answer.text
    assert "set-cookie" not in answer.headers and token not in answer.text


def test_a_forged_session_cookie_opens_nothing(client):
    """The cookie's MAC is keyed with the token: a made-up one is sent to the login page."""
    client.cookies.set(auth.SESSION_COOKIE, "co.99999999999.0000")
    assert 303 == client.get("/", follow_redirects=False).status_code


def test_login_sends_the_browser_back_to_this_site_only(client):
    """next=//elsewhere is not followed off the site (no open redirect)."""
    for target in ("//evil.example/", "https://evil.example/", "/\\evil.example"):
        answer = client.post(
            "/ui/login", data={"token": CONSOLE, "next": target}, follow_redirects=False
        )
        assert "/" == answer.headers["location"], target


def test_a_console_token_also_opens_the_console_as_a_bearer(client):
    """A script may read a console page with Authorization: Bearer, as the API is read."""
    page = client.get("/", headers=_bearer(CONSOLE))
    assert 200 == page.status_code and page.headers["cache-control"].startswith("private")
    assert 403 == client.get("/", headers=_bearer(BOARDS)).status_code


def test_the_openapi_document_declares_the_bearer_scheme_per_operation(runtime):
    """Each operation says whether it needs a token and answers 401 (and 403 when it does)."""
    schema = document(_fastapi(_app(runtime)))
    assert {"type": "http", "scheme": "bearer"}.items() <= schema["components"]["securitySchemes"][
        "bearer"
    ].items()
    operations = {
        op["operationId"]: op for item in schema["paths"].values() for op in item.values()
    }
    assert [{}, {"bearer": []}] == operations["top"]["security"]
    assert [{"bearer": []}] == operations["export"]["security"]
    assert {"401", "403"} <= set(operations["export"]["responses"])
    assert "403" not in operations["top"]["responses"]
    assert all("security" in op for op in operations.values())


def test_a_session_saved_before_logout_is_refused_after_it_by_every_serve(runtime, client):
    """Logout ends the session itself, not only the browser's copy: a cookie kept from before
    is sent to the login page, by this app and by another one sharing the Redis."""
    saved = _login(client).cookies[auth.SESSION_COOKIE]
    assert 200 == client.get("/").status_code
    other = TestClient(_app(runtime), raise_server_exceptions=False)
    other.cookies.set(auth.SESSION_COOKIE, saved)
    assert 200 == other.get("/").status_code
    answer = client.post("/ui/logout", follow_redirects=False)
    assert 303 == answer.status_code and "/ui/login" == answer.headers["location"]
    client.cookies.set(auth.SESSION_COOKIE, saved)
    for reader in (client, other):
        page = reader.get(f"/ui/ladders/{L}", follow_redirects=False)
        assert 303 == page.status_code and page.headers["location"].startswith("/ui/login?")
    again = _login(client)  # a new login opens a new session
    assert 303 == again.status_code and 200 == client.get("/").status_code


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "https://evil.example"},
        {"Origin": "null"},
        {"Origin": "http://testserver.evil.example"},
        {"Origin": "https://testserver"},  # another scheme is another site
        {"Referer": "https://evil.example/form"},
        {},  # neither Origin nor Referer: nothing says the form came from here
    ],
)
def test_a_login_from_another_site_is_refused_and_sets_no_cookie(client, headers):
    """CSRF: a login form posted from another site (or from nowhere said) is 403, no cookie."""
    client.headers.pop("origin")
    answer = _login(client, **headers)
    assert 403 == answer.status_code and "set-cookie" not in answer.headers
    assert "not sent from this site" in answer.text


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://testserver"},
        {"Origin": "HTTP://TESTSERVER:80"},
        {"Referer": "http://testserver/ui/login?next=/"},
    ],
)
def test_a_login_from_this_site_works(client, headers):
    """The same origin, or no Origin but a Referer of this site, logs in."""
    client.headers.pop("origin")
    answer = _login(client, **headers)
    assert 303 == answer.status_code and auth.SESSION_COOKIE in answer.cookies


def test_a_logout_from_another_site_does_nothing(client):
    """CSRF: a logout posted from another site is 403, and the session goes on."""
    _login(client)
    answer = client.post(
        "/ui/logout", headers={"Origin": "https://evil.example"}, follow_redirects=False
    )
    assert 403 == answer.status_code and "set-cookie" not in answer.headers
    assert 200 == client.get("/").status_code


def test_a_session_is_answered_503_and_logout_kept_while_redis_is_away(runtime, client):
    """A session cannot be checked nor ended without Redis: 503 naming it, never a 500, and
    the browser keeps its cookie to sign out once Redis is back."""
    cookie = _login(client).cookies[auth.SESSION_COOKIE]
    down = Redis.from_url("redis://127.0.0.1:1/0", socket_connect_timeout=0.2)
    access = Access(TOKENS, frozenset({Scope.BOARDS}))
    app = create_app(runtime.config, down, runtime.engine, access=access)
    with TestClient(app, raise_server_exceptions=False, headers=SAME_SITE) as away:
        away.cookies.set(auth.SESSION_COOKIE, cookie)
        page = away.get(f"/ui/ladders/{L}")
        assert 503 == page.status_code and "redis" in page.text
        out = away.post("/ui/logout", follow_redirects=False)
        assert 503 == out.status_code and "set-cookie" not in out.headers
    assert 200 == client.get("/").status_code
