"""Tokens on the API and the console (SPEC 6, "Access"): each route declares its scope.

A route, or its router, takes ``dependencies=[requires(Scope.X)]``; ``create_app`` refuses to build
an app with a route that declares none, except the ones in ``OPEN`` (the contract and the console's
login page, which hold no player data). ``/healthz`` and ``/metrics`` (``operations_app``) sit in
front of the app and answer anyone: a liveness bit, process figures and response counts.

- No ``Authorization`` header: the scope must be public (``LADDER_PUBLIC_SCOPES``), else 401
  with ``WWW-Authenticate: Bearer``; a console page redirects to its login form instead.
- ``Authorization: Bearer <token>``: an unknown token is 401 (``error="invalid_token"``) even
  on a public route, so a mistyped token is noticed; a known one without the scope is 403.
- The console also takes its session cookie (``console.login``); the JSON API never does, so
  a page on another site cannot make a browser send it there. A session ended by its logout is
  refused by every ``ladder serve`` sharing the Redis (``Sessions``).

An answer that needed a token is marked ``private`` for caches (``Private``): the short
``public`` lifetime of a read would let a shared cache hand it to anonymous callers. One that
needed a console session is ``no-store``: after a logout the browser must not show it again.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from typing import Any, Literal
from urllib.parse import quote

from fastapi import APIRouter, Depends, FastAPI, Request, Response
from fastapi.responses import JSONResponse, RedirectResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Send
from starlette.types import Scope as Scope_

from worker import keys
from worker.access import Access, ApiToken, Scope
from worker.boards.reader import Client
from worker.entrypoints.api.caching import NO_STORE

SESSION_COOKIE = "ladder_session"
LOGIN_PATH = "/ui/login"
LOGOUT_PATH = "/ui/logout"
OPEN = frozenset({"/openapi.json", "/docs", LOGIN_PATH, LOGOUT_PATH})
SCHEME = "bearer"
_PRIVATE = "ladder.private"  # a list in the request's scope: non-empty once a token was needed
_SESSION = "ladder.session"  # in that list: the token came in a console session's cookie


class Refusal(BaseModel):
    """The body of a 401 or 403."""

    error: Literal["unauthorized", "forbidden"]
    detail: str


class Unauthorized(Exception):
    """No token (on a route that is not public) or an unknown one: 401."""

    def __init__(self, detail: str, invalid: bool = False) -> None:
        super().__init__(detail)
        self.invalid = invalid


class Forbidden(Exception):
    """A known token without the route's scope: 403."""


class LoginRequired(Exception):
    """A console page without a session: see the login form, then come back here."""

    def __init__(self, back: str) -> None:
        super().__init__(back)
        self.back = back


def access_of(request: Request) -> Access:
    found: Access = request.app.state.access
    return found


class Sessions:
    """Console sessions ended by their logout: a mark in Redis for each, kept until the session
    would have expired, so that every ``ladder serve`` sharing this Redis refuses it (the cookie
    is otherwise stateless, ``Access.session``)."""

    def __init__(self, redis: Client) -> None:
        self.redis = redis

    def end(self, cookie: str) -> None:
        """End the session ``cookie`` (one ``Access.session_caller`` accepted: its expiry,
        ``<name>.<expires>.<mac>``, is then at most ``SESSION_SECONDS`` away)."""
        expires = cookie.rsplit(".", 2)[-2]
        left = int(expires) - int(time.time())
        if left > 0:
            self.redis.set(_ended(cookie), 1, ex=left)

    def ended(self, cookie: str) -> bool:
        return bool(self.redis.exists(_ended(cookie)))


def _ended(cookie: str) -> str:
    return keys.console_logout(hashlib.sha256(cookie.encode("utf-8", "surrogatepass")).hexdigest())


def sessions_of(request: Request) -> Sessions:
    found: Sessions = request.app.state.sessions
    return found


class Need:
    """The dependency that lets a request through to a route of ``scope``."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope

    async def __call__(self, request: Request) -> None:
        access = access_of(request)
        caller = await self._caller(request, access)
        if caller is None:
            if self.scope in access.public:
                return
            if self.scope is Scope.CONSOLE:
                raise LoginRequired(_back(request))
            raise Unauthorized(f"this needs a token with the {self.scope} scope")
        if self.scope not in caller.scopes and self.scope not in access.public:
            raise Forbidden(f"token {caller.name!r} lacks the {self.scope} scope")
        if self.scope not in access.public:
            marks = request.scope.get(_PRIVATE)
            if isinstance(marks, list):
                marks.append(caller.name)
                if request.headers.get("authorization") is None:
                    marks.append(_SESSION)

    async def _caller(self, request: Request, access: Access) -> ApiToken | None:
        header = request.headers.get("authorization")
        if header is not None:
            kind, _, value = header.partition(" ")
            if kind.lower() != SCHEME or not value.strip():
                raise Unauthorized("send the token as Authorization: Bearer <token>", True)
            found = access.caller(value.strip())
            if found is None:
                raise Unauthorized("the token is not known", True)
            return found
        cookie = request.cookies.get(SESSION_COOKIE)
        if self.scope is Scope.CONSOLE and cookie:
            found = access.session_caller(cookie)
            if found is not None and await run_in_threadpool(sessions_of(request).ended, cookie):
                return None  # logged out
            return found
        return None


def requires(scope: Scope) -> Any:
    """``dependencies=[requires(Scope.BOARDS)]``: the route answers only callers with ``scope``."""
    return Depends(Need(scope))


def scope_of(route: APIRoute) -> Scope | None:
    for dependency in route.dependencies:
        if isinstance(dependency.dependency, Need):
            return dependency.dependency.scope
    return None


def _back(request: Request) -> str:
    path = request.scope.get("raw_path") or request.url.path.encode()
    query = request.url.query
    back = path.decode("latin-1") + (f"?{query}" if query else "")
    return back if back.startswith("/") and not back.startswith("//") else "/"


async def _unauthorized(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, Unauthorized)
    challenge = 'Bearer realm="ladder"' + (', error="invalid_token"' if exc.invalid else "")
    body = {"error": "unauthorized", "detail": str(exc)}
    headers = {"WWW-Authenticate": challenge, "Cache-Control": NO_STORE}
    return JSONResponse(body, status_code=401, headers=headers)


async def _forbidden(request: Request, exc: Exception) -> Response:
    body = {"error": "forbidden", "detail": str(exc)}
    return JSONResponse(body, status_code=403, headers={"Cache-Control": NO_STORE})


async def _login(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, LoginRequired)
    target = f"{LOGIN_PATH}?next={quote(exc.back, safe='/')}"
    return RedirectResponse(target, status_code=303, headers={"Cache-Control": NO_STORE})


def install(app: FastAPI, access: Access, sessions: Sessions) -> None:
    """Give ``app`` the access it answers by, where logouts are kept, and the answers of its
    refusals."""
    app.state.access = access
    app.state.sessions = sessions
    app.add_exception_handler(Unauthorized, _unauthorized)
    app.add_exception_handler(Forbidden, _forbidden)
    app.add_exception_handler(LoginRequired, _login)


def routes_of(app: FastAPI) -> Iterator[APIRoute]:
    """Every route of ``app``, those of included routers too (FastAPI may keep an included
    router as one entry of ``app.routes``); anything else is refused, not skipped."""
    pending: list[Any] = list(app.routes)
    while pending:
        route = pending.pop(0)
        if isinstance(route, APIRoute):
            yield route
        elif isinstance(getattr(route, "original_router", None), APIRouter):
            pending.extend(route.original_router.routes)
        else:
            raise RuntimeError(f"cannot tell the scope of {route!r}")


def check_every_route(app: FastAPI) -> None:
    """Refuse an app with a route whose scope nobody declared (fail closed, not open)."""
    for route in routes_of(app):
        if route.path not in OPEN and scope_of(route) is None:
            raise RuntimeError(f"route {route.path} declares no scope (auth.requires)")


def declare(app: FastAPI, schema: dict[str, Any], access: Access) -> None:
    """Write each operation's security into ``schema``: a bearer token, or none for a public
    scope, and the 401 and 403 it may answer."""
    components = schema.setdefault("components", {})
    components.setdefault("securitySchemes", {})[SCHEME] = {
        "type": "http",
        "scheme": "bearer",
        "description": "An API token (LADDER_API_TOKENS) with the operation's scope.",
    }
    error = {"schema": {"$ref": "#/components/schemas/Refusal"}}
    components.setdefault("schemas", {})["Refusal"] = Refusal.model_json_schema(
        ref_template="#/components/schemas/{model}"
    )
    for route in routes_of(app):
        if not route.include_in_schema:
            continue
        scope = scope_of(route)
        if scope is None:
            continue
        for method in route.methods or ():
            operation = schema["paths"][route.path_format][method.lower()]
            public = scope in access.public
            operation["security"] = [{}, {SCHEME: []}] if public else [{SCHEME: []}]
            operation["x-scope"] = scope.value
            responses = operation.setdefault("responses", {})
            responses["401"] = {
                "description": "No token, or one that is not known"
                if not public
                else "A token that is not known",
                "headers": {"WWW-Authenticate": {"schema": {"type": "string"}}},
                "content": {"application/json": error},
            }
            if not public:
                responses["403"] = {
                    "description": f"A token without the {scope} scope",
                    "content": {"application/json": error},
                }


class Private:
    """Mark an answer that needed a token ``private`` for caches, and one that needed a console
    session ``no-store``: once signed out, the browser must not show it again from its cache."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope_, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        marks: list[str] = []
        scope[_PRIVATE] = marks

        async def marked(message: Message) -> None:
            if message["type"] == "http.response.start" and marks:
                headers = [
                    (k, _private(v, _SESSION in marks) if k.lower() == b"cache-control" else v)
                    for k, v in message.get("headers", [])
                ]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, marked)


def _private(value: bytes, session: bool) -> bytes:
    return b"no-store" if session else value.replace(b"public", b"private")
