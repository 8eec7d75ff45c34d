"""A small game server in Python with plain redis-py: publish one finished game with RPUSH,
then block (BLPOP, no polling) until the worker has scored it, and print the receipt.

    REDIS_URL=redis://127.0.0.1:6379/0 python game_server.py [event_id]
    SHAPE=draw LADDER=<a glicko2 or openskill ladder> python game_server.py [event_id]

The game is a 1v1 win (``SHAPE=win``, the default), a draw (``SHAPE=draw``: ``result`` draw
and its two ``players``) or a team game (``SHAPE=teams``: ``teams``, each with its rank; 1 is
first, equal ranks tie). A ladder whose ruleset rates 1v1 wins only (gammon42, fibs,
prostriker) dead-letters a draw or a team game as ``unsupported_shape``.

Safe to retry: the event is built once and kept in OUTBOX/<event_id>.json before it is sent;
every attempt, and every later run with the same event_id, sends those exact bytes. A repeat is
then a ``duplicate`` (no effect, the original's numbers), never an ``event_id_conflict`` (the
same id with another content, which is dead-lettered).

Environment: REDIS_URL (default redis://127.0.0.1:6379/0), PUBLISH_TIMEOUT seconds to keep
retrying while Redis is unreachable (default 10), RECEIPT_TIMEOUT seconds to wait for the
receipt (default 2), OUTBOX directory (default ./outbox), ENDED_AT (default: now, when the
event is first built), WINNER / LOSER player ids (a draw's two players; a team game's first
players of the first and second team), SHAPE (win, draw or teams), LADDER (default gammon42).
Exit status: 0 with the receipt as one JSON line on stdout (rated, duplicate, ...), 1 if no
receipt came in time or the event was dead-lettered, 2 if Redis stayed unreachable for
PUBLISH_TIMEOUT (the event stays in the outbox: run again to send it).
"""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from redis import Redis
from redis.exceptions import ConnectionError, TimeoutError


def win(first: str, second: str) -> dict[str, Any]:
    """A 1v1 win: ``first`` beat ``second``."""
    return {
        "winner": {"player_id": first},
        "loser": {"player_id": second},
        "cube": 2,
        "end_reason": "resign",
    }


def draw(first: str, second: str) -> dict[str, Any]:
    """A 1v1 draw between ``first`` and ``second``."""
    return {"result": "draw", "players": [{"player_id": first}, {"player_id": second}]}


def teams(first: str, second: str) -> dict[str, Any]:
    """A 2v2: ``first``'s team won; their team mate joined halfway (weight 0.5)."""
    return {
        "teams": [
            {
                "rank": 1,
                "players": [{"player_id": first}, {"player_id": f"{first}-2", "weight": 0.5}],
            },
            {"rank": 2, "players": [{"player_id": second}, {"player_id": f"{second}-2"}]},
        ]
    }


SHAPES = {"win": win, "draw": draw, "teams": teams}


def event_text(event_id: str) -> str:
    """The event's text, built once: the same bytes for every attempt and every run."""
    outbox = Path(os.environ.get("OUTBOX", "outbox"))
    path = outbox / f"{quote(event_id, safe='')}.json"
    if path.exists():
        return path.read_text(encoding="utf-8")
    shape = SHAPES[os.environ.get("SHAPE") or "win"]  # main() checked it
    text = json.dumps(
        {
            "type": "game.finished",
            "event_id": event_id,
            "ladder": os.environ.get("LADDER", "gammon42"),
            "ended_at": os.environ.get("ENDED_AT")
            or datetime.now(UTC).isoformat(timespec="milliseconds"),
            "mode": "ranked",
            **shape(os.environ.get("WINNER", "py-alice"), os.environ.get("LOSER", "py-bob")),
        },
        separators=(",", ":"),
    )
    outbox.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".tmp")
    partial.write_text(text, encoding="utf-8")
    partial.replace(path)  # whole or absent, never half written
    return text


def main(argv: list[str]) -> int:
    event_id = argv[1] if len(argv) > 1 else f"py-{os.getpid()}-{time.time_ns()}"
    url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    publish_timeout = float(os.environ.get("PUBLISH_TIMEOUT", "10"))
    receipt_timeout = float(os.environ.get("RECEIPT_TIMEOUT", "2"))
    if (os.environ.get("SHAPE") or "win") not in SHAPES:
        print("game-server: SHAPE must be win, draw or teams", file=sys.stderr)
        return 2
    text = event_text(event_id)
    deadline = time.monotonic() + publish_timeout
    delay = 0.1
    while True:
        redis = Redis.from_url(url, socket_connect_timeout=2, socket_timeout=receipt_timeout + 5)
        try:
            # 1. publish: the whole contract is one command (sent again after a failure: a
            #    repeat of the same bytes is a duplicate, harmless)
            redis.rpush("ladder:inbox", text)
            # 2. wait for the receipt: the worker pushes it onto this list as it scores the event
            popped = redis.blpop([f"ladder:receipt-wait:{event_id}"], timeout=receipt_timeout)
            break
        except (ConnectionError, TimeoutError) as exc:
            why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            if time.monotonic() + delay > deadline:
                print(
                    f"game-server: gave up publishing {event_id} after {publish_timeout:g} s: "
                    f"Redis at {url} unreachable ({why}); the event is kept in the outbox, "
                    "run again with the same event_id to send it",
                    file=sys.stderr,
                )
                return 2
            time.sleep(delay)
            delay = min(delay * 2, 2.0)
        finally:
            redis.close()
    if popped is None:
        shown = f"{receipt_timeout:g}"
        print(f"game-server: no receipt for {event_id} within {shown} s", file=sys.stderr)
        return 1
    receipt = json.loads(popped[1])
    print(json.dumps(receipt))
    for p in receipt["players"]:
        print(
            f"game-server: {p['player_id']} {p['rating_before']:g} -> {p['rating_after']:g} "
            f"({p['delta']:+g}), rank {p['rank_after']}",
            file=sys.stderr,
        )
    print(f"game-server: {event_id} {receipt['outcome']}", file=sys.stderr)
    return 1 if receipt["outcome"] == "dead_lettered" else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
