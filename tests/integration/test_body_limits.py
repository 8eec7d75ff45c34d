"""Every route refuses a body over its limit (413) while it streams in, before it is read:
the login form's 4,096 bytes, 1,024 for the routes that take no body (SPEC 6, "Access").

The app is driven through ASGI directly, so the test sees exactly how many chunks of a body
the app asked for.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, MutableMapping
from typing import Any

import pytest

from worker.access import Access, Scope, parse_tokens
from worker.entrypoints.api.app import create_app
from worker.entrypoints.api.limits import LIMITS, MAX_FORM_BYTES, NO_BODY_BYTES

CHUNK = 1024
ACCESS = Access(parse_tokens(["co:console-0123456789abcdef:console"]), frozenset({Scope.BOARDS}))


class Body:
    """A chunked body of ``chunks`` chunks of 1 KiB, counting how many were asked for."""

    def __init__(self, chunks: int) -> None:
        self.chunks = chunks
        self.taken = 0

    def __iter__(self) -> Iterator[bytes]:
        for _ in range(self.chunks):
            self.taken += 1
            yield b"t" * CHUNK


def _call(
    app: Any, method: str, path: str, body: Body | None, headers: list[tuple[bytes, bytes]]
) -> tuple[int, dict[str, Any]]:
    chunks = iter(body) if body is not None else iter(())
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> dict[str, Any]:
        chunk = next(chunks, None)
        if chunk is None:
            return {"type": "http.request", "body": b"", "more_body": False}
        return {"type": "http.request", "body": chunk, "more_body": True}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"testserver"), (b"origin", b"http://testserver"), *headers],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }
    asyncio.run(app(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    content = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], json.loads(content) if start["status"] == 413 else {}


@pytest.fixture
def app(runtime: Any) -> Any:
    return create_app(
        runtime.config, runtime.leaderboard_redis, runtime.engine, runtime.redis, access=ACCESS
    )


CHUNKED = [(b"transfer-encoding", b"chunked")]


def test_each_route_states_its_limit():
    """The login form takes 4,096 bytes; every other route, which reads no body, 1,024."""
    assert {("POST", "/ui/login"): MAX_FORM_BYTES} == LIMITS
    assert 4096 == MAX_FORM_BYTES and 1024 == NO_BODY_BYTES


def test_a_chunked_login_body_over_its_limit_is_refused_before_it_is_read(app):
    """A 64 KiB chunked form is answered 413 after at most the limit and one chunk more."""
    body = Body(64)
    status, answer = _call(app, "POST", "/ui/login", body, CHUNKED)
    assert 413 == status
    assert {"error": "too_large", "detail": "the body is over 4096 bytes"} == answer
    assert body.taken <= MAX_FORM_BYTES // CHUNK + 1 < body.chunks


def test_a_body_sent_where_none_is_read_is_refused_over_a_small_limit(app):
    """GET /ladders with a 64 KiB body: 413 once 1,024 bytes are passed, the rest never read."""
    body = Body(64)
    status, answer = _call(app, "GET", "/ladders", body, CHUNKED)
    assert 413 == status and "over 1024 bytes" in answer["detail"]
    assert body.taken <= NO_BODY_BYTES // CHUNK + 1


def test_a_content_length_over_the_limit_is_refused_without_reading_a_byte(app):
    """Content-Length: 1 GB is answered 413 at once: not one chunk is asked for."""
    body = Body(64)
    status, _ = _call(app, "POST", "/ui/login", body, [(b"content-length", b"1000000000")])
    assert 413 == status and 0 == body.taken


def test_a_body_within_its_limit_still_reaches_the_route(app):
    """A login form of 3 KiB is read and answered by the route (401: no such token)."""
    status, _ = _call(app, "POST", "/ui/login", Body(3), CHUNKED)
    assert 401 == status
    assert 200 == _call(app, "GET", "/ladders", None, [])[0]
