"""Signing in to the console with a real browser: headless Chromium, driven over its DevTools
pipe, fills and posts the login form of a real ``ladder serve``, reads a page, signs out; a
page of another origin (``localhost`` against ``127.0.0.1``) posting the same forms is refused.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from tests.e2e.private import ladder_serve
from tests.events import game
from worker.entrypoints.console.png import BrowserMissing, base_flags, chromium

BROWSER = os.environ.get("LADDER_CHROMIUM")  # as ``ladder`` itself reads it (Settings)

try:
    chromium(BROWSER)
except BrowserMissing as exc:  # pragma: no cover - .ci/run installs it
    pytest.fail(str(exc), pytrace=False)

CONSOLE = "console-token-Hg5f4d3s2a1q0w9e"
SECONDS = 30
# DevTools' answer to a command whose page navigated away while it ran (a form's POST).
NAVIGATED = "Inspected target navigated or closed"


class Navigated(Exception):
    """A command's page navigated away while it ran."""


class Browser:
    """One headless Chromium tab, spoken to in the DevTools protocol over ``--remote-debugging-
    pipe`` (commands on its descriptor 3, answers on 4, each JSON ended by a NUL byte)."""

    def __init__(self, process: subprocess.Popen[bytes], commands: int, answers: int) -> None:
        self.process, self.commands, self.answers = process, commands, answers
        self.pending = b""
        self.last = 0
        self.session: str | None = None

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        self.last += 1
        message: dict[str, Any] = {"id": self.last, "method": method, "params": params}
        if self.session:
            message["sessionId"] = self.session
        os.write(self.commands, json.dumps(message).encode() + b"\0")
        while True:
            while b"\0" not in self.pending:
                chunk = os.read(self.answers, 65536)
                assert chunk, "chromium closed its pipe"
                self.pending += chunk
            line, self.pending = self.pending.split(b"\0", 1)
            answer = json.loads(line)
            if answer.get("id") == self.last:
                if answer.get("error", {}).get("message") == NAVIGATED:
                    raise Navigated(method)
                assert "error" not in answer, answer
                result: dict[str, Any] = answer["result"]
                return result

    def evaluate(self, expression: str) -> Any:
        found = self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        return found["result"].get("value")

    def wait_for(self, path: str) -> str:
        """Wait until the tab has loaded a new page at ``path``; its text."""
        deadline = time.monotonic() + SECONDS
        state = None
        while time.monotonic() < deadline:
            try:
                state = self.evaluate(
                    "[location.pathname, document.readyState, window.left === undefined,"
                    " document.body && document.body.innerText]"
                )
            except Navigated:  # the page went while it was asked: ask the next one
                time.sleep(0.1)
                continue
            if state[:3] == [path, "complete", True]:
                return str(state[3])
            time.sleep(0.1)
        raise AssertionError(f"the tab never reached {path}: {state}")

    def leave(self) -> None:
        """Mark the page the tab is on, so that ``wait_for`` waits for the next one."""
        self.evaluate("window.left = true")

    def go(self, url: str) -> None:
        self.leave()
        self.send("Page.navigate", url=url)

    def sign_in(self, token: str) -> None:
        """Fill and send the login form the tab shows."""
        self.leave()
        self.evaluate(
            f"document.querySelector('input[name=token]').value = {json.dumps(token)};"
            "document.querySelector('form').submit();"
        )

    def post(self, action: str, **fields: str) -> None:
        """Post a form to ``action`` from the page the tab is on, as a button would."""
        self.leave()
        inputs = "".join(
            f"i=document.createElement('input');i.name={json.dumps(k)};i.value={json.dumps(v)};"
            "f.appendChild(i);"
            for k, v in fields.items()
        )
        self.evaluate(
            "f=document.createElement('form');f.method='post';"
            f"f.action={json.dumps(action)};{inputs}document.body.appendChild(f);f.submit();"
        )


@contextmanager
def browser() -> Iterator[Browser]:
    their_commands, our_commands = os.pipe()  # (read end, write end)
    our_answers, their_answers = os.pipe()
    with tempfile.TemporaryDirectory(prefix="ladder-chromium-") as profile:
        command = [
            chromium(BROWSER),
            *base_flags(profile),
            "--remote-debugging-pipe",
            "about:blank",
        ]
        # Chromium reads commands on 3 and answers on 4 (bash: dash takes only one-digit fds).
        shell = f"exec {shlex.join(command)} 3<&{their_commands} 4>&{their_answers}"
        process = subprocess.Popen(
            ["bash", "-c", shell],
            pass_fds=(their_commands, their_answers),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # its renderer and helper processes in one group
        )
        os.close(their_commands)
        os.close(their_answers)
        tab = Browser(process, our_commands, our_answers)
        try:
            target = tab.send("Target.createTarget", url="about:blank")["targetId"]
            attached = tab.send("Target.attachToTarget", targetId=target, flatten=True)
            tab.session = attached["sessionId"]
            yield tab
        finally:
            process.terminate()
            process.wait(timeout=SECONDS)
            _end_group(process.pid)  # helpers still writing the profile would outlive it
            os.close(our_commands)
            os.close(our_answers)


def _end_group(group: int) -> None:
    """Kill what is left of the browser's process group and wait until none is left."""
    deadline = time.monotonic() + SECONDS
    while time.monotonic() < deadline:
        try:
            os.killpg(group, signal.SIGKILL)
        except ProcessLookupError:
            return
        time.sleep(0.05)


@pytest.fixture
def site(cli) -> Iterator[str]:
    cli.redis_cli("RPUSH", "ladder:inbox", json.dumps(game("alice", "bob", event_id="g-1")))
    cli.ladder("worker", "--burst")
    with ladder_serve({**cli.env, "LADDER_API_TOKENS": f"co:{CONSOLE}:console"}) as base:
        yield base


def test_a_browser_signs_in_reads_the_console_and_signs_out(site):
    """The login form in Chromium opens the console; signing out closes it again."""
    board = "/ui/ladders/gammon42"
    with browser() as tab:
        tab.go(site + board)
        assert "Sign in to the console" in tab.wait_for("/ui/login")
        tab.sign_in(CONSOLE)
        assert "alice" in tab.wait_for(board)
        tab.post("/ui/logout")
        tab.wait_for("/ui/login")
        tab.go(site + board)  # not shown from the browser's cache either
        assert "Sign in to the console" in tab.wait_for("/ui/login")


def test_a_page_of_another_origin_can_neither_sign_a_browser_in_nor_out(site):
    """A form on http://localhost:<port> posted to http://127.0.0.1:<port> is refused (403)."""
    board = "/ui/ladders/gammon42"
    elsewhere = site.replace("127.0.0.1", "localhost")
    with browser() as tab:
        tab.go(elsewhere + "/ui/login")
        tab.wait_for("/ui/login")
        tab.post(site + "/ui/login", token=CONSOLE, next=board)
        assert "not sent from this site" in tab.wait_for("/ui/login")
        tab.go(site + board)
        tab.wait_for("/ui/login")  # no session was made
        tab.sign_in(CONSOLE)
        tab.wait_for(board)
        tab.go(elsewhere + "/ui/login")
        tab.wait_for("/ui/login")
        tab.post(site + "/ui/logout")
        assert "not sent from this site" in tab.wait_for("/ui/logout")
        tab.go(site + board)
        assert "alice" in tab.wait_for(board)  # still signed in
