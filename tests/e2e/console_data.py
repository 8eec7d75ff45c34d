"""A small, lifelike ladder for the console: its browser tests and its README screenshots.

Gammon42 players with hidden strengths play games whose winners follow a chosen curve of
the strength gap (so the calibration chart has something to say), with cubes, a few boosted
games and bot games (unrated, with their reason), a player whose id is markup, and a few
fibs matches of several lengths. ``serve(env)`` runs the real ``ladder serve``; ``Dom`` parses
a page into a small tree to query by tag and class.
"""

from __future__ import annotations

import random
import sys
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from tests.e2e.private import ladder_serve
from tests.events import game

LADDER = str(Path(sys.executable).with_name("ladder"))
SCRIPT_ID = "<script>alert(1)</script>"
NAMES = [
    "alice", "bob", "carol", "dmitri", "emma", "farid", "grace", "hiro", "ines", "jonas",
    "kasia", "liam", "mei", "noor", "oskar", "priya", "quinn", "rosa", "sven", "tariq",
]  # fmt: skip
START = datetime(2026, 10, 3, tzinfo=UTC)


def events(seed: int = 11, count: int = 420) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    people = [*NAMES, SCRIPT_ID]
    strength = {p: rng.gauss(0, 200) for p in people}
    strength["alice"], strength["bob"] = 260.0, -40.0
    made: list[dict[str, Any]] = []
    for i in range(count):
        a, b = rng.sample(people, 2)
        if i % 9 == 0:
            a, b = "alice", rng.choice([p for p in people if p != "alice"])
        p = 1 / (1 + 10 ** ((strength[b] - strength[a]) / 600))
        winner, loser = (a, b) if rng.random() < p else (b, a)
        at = START + timedelta(minutes=131 * i)
        extra: dict[str, Any] = {"cube": rng.choice([1, 1, 1, 2, 2, 4, 8])}
        if i % 37 == 5:
            extra["mode"] = "boosted"
        if i % 53 == 7:
            extra["loser_extra"] = {"is_bot": True}
        made.append(game(winner, loser, ended_at=at, event_id=f"c-{i}", **extra))
    for i in range(40):
        a, b = rng.sample(NAMES[:8], 2)
        at = START + timedelta(hours=7 * i)
        made.append(
            game(
                a,
                b,
                ladder="fibs",
                ended_at=at,
                event_id=f"cf-{i}",
                match_length=rng.choice([1, 3, 5, 7]),
            )
        )
    return made


def serve(env: dict[str, str]) -> AbstractContextManager[str]:
    """``ladder serve`` on a free port with ``env``, the boards and the console public; yields
    its base URL."""
    return ladder_serve({"LADDER_PUBLIC_SCOPES": "boards,console", **env}, "--host", "127.0.0.1")


class Node:
    def __init__(self, tag: str, attrs: dict[str, str], parent: Node | None) -> None:
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Node] = []
        self.parts: list[str] = []

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def text(self) -> str:
        return "".join(self.parts + [c.text() for c in self.children]).strip()

    def find(self, tag: str | None = None, cls: str | None = None) -> list[Node]:
        found = []
        for child in self.children:
            if (tag is None or child.tag == tag) and (cls is None or cls in child.classes):
                found.append(child)
            found.extend(child.find(tag, cls))
        return found


class Dom(HTMLParser):
    VOID = {"meta", "link", "input", "br", "img", "hr"}

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {}, None)
        self.here = self.root
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        node = Node(tag, {k: v or "" for k, v in attrs}, self.here)
        self.here.children.append(node)
        if tag not in self.VOID:
            self.here = node

    def handle_startendtag(self, tag, attrs):
        self.here.children.append(Node(tag, {k: v or "" for k, v in attrs}, self.here))

    def handle_endtag(self, tag):
        node: Node | None = self.here
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None and node.parent is not None:
            self.here = node.parent

    def handle_data(self, data):
        self.here.parts.append(data)
