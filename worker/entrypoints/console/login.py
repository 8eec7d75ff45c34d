"""The console's token login (SPEC 6): ``GET /ui/login`` shows a form, ``POST /ui/login`` takes
a token with the ``console`` scope from the form's body and sets a session cookie (HttpOnly,
SameSite=Strict, Secure over HTTPS) holding no token (``Access.session``), then sends the
browser back where it came from; ``POST /ui/logout`` ends the session for every ``ladder
serve`` (``auth.Sessions``) and clears the cookie. No token ever sits in a URL.

Both posts must come from a page of this site (CSRF): their ``Origin`` header, or without
one their ``Referer``, must be this site's own origin (the request's scheme and ``Host``,
default ports aside); another origin, ``null``, or neither header is refused with 403 and
nothing done. Behind an HTTPS proxy, list it in ``LADDER_TRUSTED_PROXIES`` so the scheme is
``https``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

from fastapi import FastAPI, Request
from fastapi.responses import RedirectResponse, Response
from redis.exceptions import RedisError
from starlette.concurrency import run_in_threadpool

from worker.access import SESSION_SECONDS, Scope
from worker.entrypoints.api.auth import (
    LOGIN_PATH,
    LOGOUT_PATH,
    SESSION_COOKIE,
    access_of,
    sessions_of,
)
from worker.entrypoints.api.limits import MAX_FORM_BYTES

NO_STORE = {"Cache-Control": "no-store"}

Render = Callable[[str, dict[str, Any], int], Response]


def _local(path: str) -> str:
    """Only a path on this site: never an open redirect to another."""
    return path if path.startswith("/") and not path.startswith(("//", "/\\")) else "/"


def _origin(scheme: str, netloc: str) -> str:
    scheme, netloc = scheme.lower(), netloc.lower()
    default = {"http": ":80", "https": ":443"}.get(scheme, "")
    return f"{scheme}://{netloc.removesuffix(default) if default else netloc}"


def from_this_site(request: Request) -> bool:
    """The request's ``Origin`` (or, without one, its ``Referer``) is this site's origin."""
    host = request.headers.get("host", "")
    sent = request.headers.get("origin") or request.headers.get("referer") or ""
    parts = urlsplit(sent)
    if not host or not parts.scheme or not parts.netloc:
        return False  # neither header, or "null": nothing says where the form was
    return _origin(parts.scheme, parts.netloc) == _origin(request.url.scheme, host)


CROSS_SITE = "This form was not sent from this site: nothing was done."


def add_routes(app: FastAPI, html: Render) -> None:
    """The login and logout routes, rendering with the console's ``html``."""

    def form(back: str, detail: str = "", status: int = 200) -> Response:
        context = {"title": "Sign in", "back": _local(back), "detail": detail}
        return html("login.html", context, status)

    @app.get(LOGIN_PATH, include_in_schema=False)
    async def login_form(next: str = "/") -> Response:
        return form(next)

    def refused(status: int, heading: str, detail: str) -> Response:
        context = {"title": heading, "heading": heading, "detail": detail}
        return html("error.html", context, status)

    @app.post(LOGIN_PATH, include_in_schema=False)
    async def login(request: Request) -> Response:
        if not from_this_site(request):
            return refused(403, "Forbidden", CROSS_SITE)
        body = await request.body()
        fields = parse_qs(body[:MAX_FORM_BYTES].decode("utf-8", "replace"))
        token = (fields.get("token") or [""])[0].strip()
        back = _local((fields.get("next") or ["/"])[0])
        access = access_of(request)
        caller = access.caller(token) if token else None
        if caller is None:
            return form(back, "That token is not known.", 401)
        if Scope.CONSOLE not in caller.scopes:
            return form(back, f"Token {caller.name!r} lacks the console scope.", 403)
        answer = RedirectResponse(back, status_code=303, headers=NO_STORE)
        answer.set_cookie(
            SESSION_COOKIE,
            access.session(caller),
            max_age=SESSION_SECONDS,
            path="/",
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
        return answer

    @app.post(LOGOUT_PATH, include_in_schema=False)
    async def logout(request: Request) -> Response:
        if not from_this_site(request):
            return refused(403, "Forbidden", CROSS_SITE)
        cookie = request.cookies.get(SESSION_COOKIE, "")
        if cookie and access_of(request).session_caller(cookie) is not None:
            try:
                await run_in_threadpool(sessions_of(request).end, cookie)
            except RedisError:
                return refused(503, "Unavailable", "redis is unavailable: still signed in")
        answer = RedirectResponse(
            LOGIN_PATH, status_code=303, headers={"Cache-Control": "no-store"}
        )
        answer.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
        return answer
