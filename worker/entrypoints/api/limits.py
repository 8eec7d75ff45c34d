"""How large a request body each route takes: a larger one is refused with 413 before it is
read (SPEC 6, "Access": an unauthenticated caller must not fill the server's memory).

``LIMITS`` states the routes that read a body (the console's login form); every other route
reads none and takes at most ``NO_BODY_BYTES``. ``BodyLimit`` answers 413 at once for a
``Content-Length`` over the limit, and otherwise takes the body in as it streams (chunked
bodies too), refusing as soon as the limit is passed: it never holds more than the limit and
one chunk, and the route is never called. A body within the limit is handed on unchanged.
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from worker.entrypoints.api.auth import LOGIN_PATH
from worker.entrypoints.api.caching import NO_STORE

MAX_FORM_BYTES = 4096  # the login form: a token and where to go back to
NO_BODY_BYTES = 1024  # a route that reads no body
LIMITS: dict[tuple[str, str], int] = {("POST", LOGIN_PATH): MAX_FORM_BYTES}
_CHECKED = "ladder.body_checked"  # set in the scope once a BodyLimit has taken the body in


def limit_of(scope: Scope) -> int:
    return LIMITS.get((scope.get("method", ""), scope.get("path", "")), NO_BODY_BYTES)


class BodyLimit:
    """Refuse a request body over its route's limit with 413, before the route reads it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get(_CHECKED):
            await self.app(scope, receive, send)
            return
        limit = limit_of(scope)
        declared = _content_length(scope)
        if declared is not None and declared > limit:
            await _too_large(send, limit)
            return
        chunks: list[bytes] = []
        size = 0
        first: Message = {"type": "http.request", "body": b"", "more_body": False}
        while True:
            message = await receive()
            if message["type"] != "http.request":
                first = message  # the client went away: the route hears so
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await _too_large(send, limit)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                first = {"type": "http.request", "body": b"".join(chunks), "more_body": False}
                break
        pending = [first]

        async def replay() -> Message:
            return pending.pop() if pending else await receive()

        await self.app({**scope, _CHECKED: True}, replay, send)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name.lower() == b"content-length":
            text = value.decode("latin-1").strip()
            return int(text) if text.isdigit() else None
    return None


async def _too_large(send: Send, limit: int) -> None:
    body = json.dumps({"error": "too_large", "detail": f"the body is over {limit} bytes"})
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", NO_STORE.encode()),
        (b"connection", b"close"),  # the rest of the body is never read
    ]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": body.encode()})
