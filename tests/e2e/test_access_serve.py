"""Tokens against the real ``ladder serve`` (SPEC 6, "Access"; issue "Done when").

Anonymous export 401, an export token 200, a boards token 403; top anonymous 200 by default
and 401 with LADDER_PUBLIC_SCOPES empty; the console without a session redirects to its login
page, whose login and logout come from this site only, a logout ending the session; and no
token appears in any log line of the run, debug level and access log included.
"""

from __future__ import annotations

import http.client
import json
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlencode, urlsplit

from tests.e2e.conftest import Cli
from tests.e2e.private import free_port, ladder_serve
from tests.events import game

EXPORT = "export-token-Zq8w3e5r7t9y1u2i"
BOARDS = "boards-token-Xa4s6d8f0g2h4j6k"
CONSOLE = "console-token-Pl9o8i7u6y5t4r3e"
WRONG = "wrong-token-Mn1b2v3c4x5z6a7s"
TOKENS = f"ex:{EXPORT}:export|history,bo:{BOARDS}:boards,co:{CONSOLE}:console"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def _get(base: str, path: str, token: str | None = None, **extra: str) -> tuple[int, dict, bytes]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(base + path, headers={**headers, **extra})
    try:
        with _OPENER.open(request, timeout=10) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def _post(base: str, path: str, form: dict[str, str], **headers: str) -> tuple[int, dict]:
    data = urlencode(form).encode()
    request = urllib.request.Request(base + path, data=data, headers=headers, method="POST")
    try:
        with _OPENER.open(request, timeout=10) as answer:
            return answer.status, dict(answer.headers)
    except urllib.error.HTTPError as exc:  # a 303 is not followed
        return exc.code, dict(exc.headers)


@contextmanager
def _serve(cli: Cli, *args: str, **env: str) -> Iterator[tuple[str, list[str]]]:
    """``ladder serve`` with ``env`` at debug level with its access log; yields its base URL and,
    once stopped, its log lines."""
    lines: list[str] = []
    with ladder_serve(
        {**cli.env, **env}, "--access-log", *args, options=("--log-level", "DEBUG"), log=lines
    ) as base:
        yield base, lines


def test_tokens_decide_what_a_real_ladder_serve_answers_and_none_is_ever_logged(cli):
    """Done when: export 401 anonymous, 200 with an export token, 403 with a boards token; top
    anonymous 200; the console redirects to its login page; no token in any log line."""
    cli.redis_cli("RPUSH", "ladder:inbox", json.dumps(game("alice", "bob", event_id="g-1")))
    cli.ladder("worker", "--burst")
    with _serve(cli, LADDER_API_TOKENS=TOKENS) as (base, lines):
        status, headers, _ = _get(base, "/ladders/gammon42/export")
        assert 401 == status and headers["www-authenticate"].startswith("Bearer")
        status, _, body = _get(base, "/ladders/gammon42/export", EXPORT)
        assert 200 == status and b'"alice"' in body
        assert 403 == _get(base, "/ladders/gammon42/export", BOARDS)[0]
        assert 200 == _get(base, "/ladders/gammon42/top")[0]
        assert 200 == _get(base, "/ladders/gammon42/events/g-1", EXPORT)[0]
        assert 401 == _get(base, "/ladders/gammon42/top", WRONG)[0]
        status, headers, _ = _get(base, "/ui/ladders/gammon42")
        assert 303 == status and headers["location"].startswith("/ui/login?next=")
        assert 403 == _post(base, "/ui/login", {"token": CONSOLE}, Origin="https://evil.example")[0]
        status, headers = _post(base, "/ui/login", {"token": CONSOLE, "next": "/"}, Origin=base)
        assert 303 == status
        cookie = headers["set-cookie"].split(";")[0]
        assert 200 == _get(base, "/ui/ladders/gammon42", Cookie=cookie)[0]
        assert 303 == _post(base, "/ui/logout", {}, Origin=base, Cookie=cookie)[0]
        status, headers, _ = _get(base, "/ui/ladders/gammon42", Cookie=cookie)  # kept from before
        assert 303 == status and headers["location"].startswith("/ui/login?next=")
    logged = "\n".join(lines)
    assert "GET /ladders/gammon42/export HTTP/1.1" in logged  # the access log was on
    for token in (EXPORT, BOARDS, CONSOLE, WRONG):
        assert token not in logged
        assert token[-12:] not in logged  # nor a recognisable piece of one


def test_an_empty_public_scope_closes_the_boards_too(cli):
    """Done when: GET top is 401 with LADDER_PUBLIC_SCOPES= empty."""
    with _serve(cli, LADDER_API_TOKENS=TOKENS, LADDER_PUBLIC_SCOPES="") as (base, _):
        assert 401 == _get(base, "/ladders/gammon42/top")[0]
        assert 200 == _get(base, "/ladders/gammon42/top", BOARDS)[0]


def test_serve_refuses_another_address_without_tokens_unless_insecure(cli):
    """SPEC 6: binds 127.0.0.1 unless tokens exist or --insecure; refused in one line, exit 2."""
    refused = cli.ladder("serve", "--host", "0.0.0.0", "--port", str(free_port()), check=False)
    assert 2 == refused.returncode
    (line,) = refused.stderr.strip().splitlines()
    assert line.startswith("ladder: refusing to serve on 0.0.0.0 with no LADDER_API_TOKENS")
    assert "Traceback" not in refused.stderr
    with _serve(cli, "--host", "0.0.0.0", "--insecure") as (base, _):
        assert 200 == _get(base, "/ladders")[0]


def test_every_line_serve_writes_is_json_and_no_query_string_is_logged(cli):
    """The access log and uvicorn's own lines are JSON objects like every other; a token sent
    in a query string is not written: the query string is redacted."""
    lines: list[str] = []
    with ladder_serve(cli.env, "--access-log", log=lines) as base:
        assert 200 == _get(base, "/healthz?access_token=secret123")[0]
        assert 404 == _get(base, "/nope?access_token=secret123&x=1")[0]
        assert 200 == _get(base, "/ladders?access_token=secret123")[0]
    assert lines and all(isinstance(json.loads(line), dict) for line in lines), lines
    logged = "\n".join(lines)
    assert "secret123" not in logged and "access_token" not in logged
    access = [json.loads(line) for line in lines if "HTTP/1.1" in line][-3:]  # after the probe
    assert all(a["logger"] == "uvicorn.access" for a in access)
    assert '- - "GET /nope?<redacted> HTTP/1.1" 404' == access[1]["event"]  # client masked


def test_a_real_serve_answers_a_huge_content_length_413_at_once(cli):
    """Content-Length: 1 GB on the login form is refused before a byte of it is sent."""
    with ladder_serve(cli.env) as base:
        connection = http.client.HTTPConnection(urlsplit(base).netloc, timeout=10)
        connection.putrequest("POST", "/ui/login")
        connection.putheader("Content-Type", "application/x-www-form-urlencoded")
        connection.putheader("Content-Length", str(10**9))
        connection.endheaders()
        answer = connection.getresponse()
        assert 413 == answer.status
        assert {"error": "too_large", "detail": "the body is over 4096 bytes"} == json.loads(
            answer.read()
        )
        connection.close()


def test_a_real_serve_answers_a_chunked_body_over_the_limit_before_it_ends(cli):
    """A chunked login body passing 4,096 bytes gets 413 while the client is still sending:
    the server does not wait for (nor keep) the rest."""
    with ladder_serve(cli.env) as base:
        where = urlsplit(base)
        with socket.create_connection((where.hostname, where.port), timeout=10) as sock:
            head = (
                f"POST /ui/login HTTP/1.1\r\nHost: {where.netloc}\r\n"
                "Content-Type: application/x-www-form-urlencoded\r\n"
                "Transfer-Encoding: chunked\r\n\r\n"
            )
            sock.sendall(head.encode())
            try:
                for _ in range(8):  # 8 KiB, and no last chunk: the body has not ended
                    sock.sendall(b"400\r\n" + b"t" * 1024 + b"\r\n")
            except (BrokenPipeError, ConnectionResetError):
                pass  # the server answered and closed while the body was still coming
            received = b""
            while chunk := sock.recv(65536):  # until the server closes the connection
                received += chunk
    answer = received.decode("latin-1")
    assert answer.startswith("HTTP/1.1 413 ")
    assert '{"error": "too_large", "detail": "the body is over 4096 bytes"}' in answer
