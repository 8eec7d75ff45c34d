"""Reading leaderboards from Redis: top N, pages, ranks, neighbours and cards.

Ranks use standard competition ranking (1, 2, 2, 4): a player's rank is one more than the
number of players with a strictly higher score, in every call. Equal scores are listed by
player id ascending (byte order of the UTF-8 id); ZREVRANGE alone would list them by player
id descending, so every read goes through one Lua script that fixes the order inside each
tie group, including a group cut by a page boundary, and reads the board atomically.

The boards and their keys are named in ``worker.boards.names`` (re-exported here). This
module needs only ``redis`` and the pure engine; the audit-store reads (a player's
rating history) live in ``worker.store.history``.

Errors: ``UnknownPlayer`` (a ``LookupError``) for a player not on the board or without a
card; ``InvalidArgument`` (a ``ValueError``) for a bad board name, cursor, size or game;
its subclass ``InvalidCursor`` for a cursor that cannot be decoded; ``BoardScriptMissing`` (a
redis ``ConnectionError``: the board reads are unavailable) when the board script is not in
the Redis script cache and this client may not load it (the ``reader`` ACL user).

The script runs by its SHA1 and read-only (``EVALSHA_RO``, Redis 7), which is all the
``reader`` user may run: a worker loads it (``load_script``, at start and every minute), and a
client allowed to, the ``worker`` user or one without ACL, loads it itself on ``NOSCRIPT``. A
Redis 6.2 (the embedded one) has no ``EVALSHA_RO`` and runs it with ``EVALSHA``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
import weakref
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any, Literal

from redis import Redis
from redis.cluster import RedisCluster
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoPermissionError, NoScriptError, ResponseError

from schemas.errors import InvalidArgument as InvalidArgument
from schemas.errors import UnknownPlayer as UnknownPlayer
from schemas.ids import MAX_ID_LENGTH as MAX_ID_LENGTH
from schemas.ids import is_identifier
from worker import keys
from worker.boards.names import BOARDS as BOARDS
from worker.boards.names import RATING_BOARDS as RATING_BOARDS
from worker.boards.names import SEASON_PREFIX as SEASON_PREFIX
from worker.boards.names import board_available as board_available
from worker.boards.names import board_key as board_key
from worker.boards.states import player_state as player_state

if TYPE_CHECKING:
    pass

MAX_AMONG = 100  # ids per ``among`` call
MAX_CURSOR_LENGTH = 1024
# Positions and counts handed to the script stay below this: Lua 5.1 turns numbers into
# command arguments with 14 significant digits, so larger ones would reach Redis as 1e+15.
MAX_POSITION = 10**12
Direction = Literal["next", "prev"]
Client = Redis | RedisCluster  # the leaderboards may live on a Redis Cluster

# The board script (page.lua beside this module) reads windows of a board and their
# provisional flags in one call; its header states its keys, arguments and reply.
_SCRIPT = (resources.files("worker.boards") / "page.lua").read_text(encoding="utf-8")
SCRIPT_SHA = hashlib.sha1(_SCRIPT.encode("utf-8"), usedforsecurity=False).hexdigest()


class InvalidCursor(InvalidArgument):
    """A page cursor that was not produced by ``page`` for this ladder and board."""


class BoardScriptMissing(RedisConnectionError):
    """The board script is not loaded on this Redis and this client may not load it."""


@dataclass(frozen=True)
class Entry:
    """One line of a board; ``rating`` is the board's score (points on the boosted board)."""

    player_id: str
    rank: int
    rating: float
    provisional: bool = False
    percentile: float | None = None  # share of the board with a strictly lower score, in %

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Page:
    """A slice of a board and the cursors to the slices either side (None at either end)."""

    entries: list[Entry]
    total: int
    next_cursor: str | None
    prev_cursor: str | None

    def as_json(self) -> dict[str, Any]:
        return {
            "entries": [e.as_json() for e in self.entries],
            "total": self.total,
            "next_cursor": self.next_cursor,
            "prev_cursor": self.prev_cursor,
        }


@dataclass(frozen=True)
class Card:
    """A player's card: the player hash plus the rank on the rating board (None if unlisted)."""

    player_id: str
    rating: float
    rank: int | None
    games: int
    experience: int
    provisional: bool
    last_game_at: str | None
    updated_at: str | None
    boosted: int
    linked_to: str | None
    percentile: float | None = None  # on the rating board; None while unlisted
    banned: bool = False  # off every board, later games unrated (moderation)
    banned_since: str | None = None  # when the ban began (from the audit store, not Redis)
    deviation: float | None = None  # glicko2's deviation, openskill's sigma (after a game)
    volatility: float | None = None  # glicko2's

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Among:
    """The asked-for players found on a board, in board order, and the ids not on it."""

    entries: list[Entry]
    missing: list[str]
    total: int

    def as_json(self) -> dict[str, Any]:
        return {
            "entries": [e.as_json() for e in self.entries],
            "missing": self.missing,
            "total": self.total,
        }


def percentile(lower: int, total: int) -> float:
    """``lower`` of ``total`` players in percent with one decimal, rounded down so that
    "better than X %" is never more than the truth (999 of 1000 is 99.9, not 100.0)."""
    if total <= 0:
        return 0.0
    return (lower * 1000 // total) / 10


def top(redis: Client, ladder: str, limit: int = 10, board: str = "rating") -> list[Entry]:
    """The first ``limit`` entries of the board."""
    key = board_key(ladder, board)
    if limit <= 0:
        return []
    _, _, entries = _run(redis, ladder, board, key, "window", 0, min(limit, MAX_POSITION))
    return entries


def page(
    redis: Client,
    ladder: str,
    cursor: str | None = None,
    offset: int | None = None,
    size: int = 20,
    direction: Direction = "next",
    board: str = "rating",
) -> Page:
    """A page of ``size`` entries, forwards or backwards.

    With a cursor: the entries after it (``direction="next"``, use ``next_cursor``) or before
    it (``"prev"``, use ``prev_cursor``). A cursor remembers its boundary player, so a page
    resumes right after that player even when players above have moved; if the boundary
    player has moved or left, it resumes at the position the player held. Without a cursor:
    forwards from position ``offset`` (0-based, default 0), or backwards ending just before
    ``offset`` (default: the last page).
    """
    key = board_key(ladder, board)
    if size < 1:
        raise InvalidArgument(f"size: must be >= 1, got {size!r}")
    if direction not in ("next", "prev"):
        raise InvalidArgument(f"direction: must be next or prev, got {direction!r}")
    if offset is not None and offset < 0:
        raise InvalidArgument(f"offset: must be >= 0, got {offset!r}")
    size = min(size, MAX_POSITION)
    offset = None if offset is None else min(offset, MAX_POSITION)
    if cursor is not None:
        if offset is not None:
            raise InvalidArgument("give a cursor or an offset, not both")
        member, score, position = decode_cursor(cursor, ladder, board)
        op = "after_at" if direction == "next" else "before_at"
        total, start, entries = _run(redis, ladder, board, key, op, member, score, position, size)
    elif direction == "next":
        total, start, entries = _run(redis, ladder, board, key, "window", offset or 0, size)
    else:
        end = -1 if offset is None else offset
        total, start, entries = _run(redis, ladder, board, key, "before", end, size)
    if not entries:
        return Page([], total, None, None)
    last = start + len(entries) - 1
    first_cursor = encode_cursor(ladder, board, entries[0], start)
    last_cursor = encode_cursor(ladder, board, entries[-1], last)
    return Page(
        entries,
        total,
        next_cursor=last_cursor if last < total - 1 else None,
        prev_cursor=first_cursor if start > 0 else None,
    )


def rank(redis: Client, ladder: str, player: str, board: str = "rating") -> Entry:
    """The player's entry on the board; ``UnknownPlayer`` if they are not on it."""
    entries = around(redis, ladder, player, 0, board)
    return entries[0]


def around(
    redis: Client, ladder: str, player: str, radius: int = 5, board: str = "rating"
) -> list[Entry]:
    """The player's entry with up to ``radius`` entries above and below it.

    Near either end of the board the window is simply shorter, so the player is the first
    entry when they are first and the last when they are last.
    """
    key = board_key(ladder, board)
    if radius < 0:
        raise InvalidArgument(f"radius: must be >= 0, got {radius!r}")
    if not is_identifier(player):
        raise UnknownPlayer(f"no player {player!r} on the {board} board of {ladder}")
    radius = min(radius, MAX_POSITION)
    _, start, entries = _run(redis, ladder, board, key, "around", player, radius)
    if start < 0:
        raise UnknownPlayer(f"no player {player!r} on the {board} board of {ladder}")
    return entries


def among(redis: Client, ladder: str, ids: Iterable[str], board: str = "rating") -> Among:
    """These players as the board ranks them (global competition ranks), in board order.

    Ids not on the board (or that no player can have) are listed in ``missing``, in the order
    given; an id given twice counts once. One script call reads every score, rank and
    percentile together, so the answer is one moment of the board. Up to ``MAX_AMONG`` ids.
    """
    key = board_key(ladder, board)
    wanted = list(dict.fromkeys(ids))
    if len(wanted) > MAX_AMONG:
        raise InvalidArgument(f"ids: at most {MAX_AMONG}, got {len(wanted)}")
    valid = [pid for pid in wanted if is_identifier(pid)]
    total, _, entries = _run(redis, ladder, board, key, "among", *valid) if valid else (0, 0, [])
    # Board order: score descending, equal scores by player id ascending (code point order of
    # a str is the byte order of its UTF-8), as every other read lists them.
    entries.sort(key=lambda e: (-e.rating, e.player_id.encode("utf-8", "surrogateescape")))
    found = {e.player_id for e in entries}
    return Among(entries, [pid for pid in wanted if pid not in found], total)


def card(redis: Client, ladder: str, player: str) -> Card:
    """The player's card; ``UnknownPlayer`` if the ladder has no player hash for them."""
    if not is_identifier(player):
        raise UnknownPlayer(f"no player {player!r} on {ladder}")
    board = [keys.rating(ladder), keys.player(ladder, player)]
    reply, raw = _call(redis, board, ["card", "", player, 0])
    if not raw:
        raise UnknownPlayer(f"no player {player!r} on {ladder}")
    fields = {_decode(raw[i]): _decode(raw[i + 1]) for i in range(0, len(raw), 2)}
    _, start, entries = _parse(reply)
    return Card(
        player_id=player,
        rating=float(fields.get("rating") or 0.0),
        rank=entries[0].rank if start >= 0 and entries else None,
        games=int(fields.get("games") or 0),
        experience=int(fields.get("experience") or 0),
        provisional=fields.get("provisional") == "1",
        last_game_at=fields.get("last_game_at") or None,
        updated_at=fields.get("updated_at") or None,
        boosted=int(fields.get("boosted") or 0),
        linked_to=fields.get("linked_to") or None,
        percentile=entries[0].percentile if start >= 0 and entries else None,
        banned=fields.get("banned") == "1",
        deviation=_number(fields.get("deviation")),
        volatility=_number(fields.get("volatility")),
    )


def _number(text: str | None) -> float | None:
    return float(text) if text else None


def encode_cursor(ladder: str, board: str, entry: Entry, position: int) -> str:
    """An opaque cursor naming a boundary entry: its player, score and position."""
    payload = {"l": ladder, "b": board, "m": entry.player_id, "s": entry.rating, "p": position}
    raw = json.dumps(payload, separators=(",", ":")).encode("utf-8", "surrogateescape")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def decode_cursor(cursor: str, ladder: str, board: str) -> tuple[str, float, int]:
    """The boundary (player, score, position) of a cursor made by ``page`` for this board."""
    if not isinstance(cursor, str) or not cursor or len(cursor) > MAX_CURSOR_LENGTH:
        raise InvalidCursor("cursor: not a cursor returned by this board")
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        data = json.loads(raw.decode("utf-8", "surrogateescape"))
    except (binascii.Error, ValueError, UnicodeError):
        raise InvalidCursor("cursor: not a cursor returned by this board") from None
    if not isinstance(data, dict) or data.get("l") != ladder or data.get("b") != board:
        raise InvalidCursor("cursor: not a cursor returned by this board")
    member, score, position = data.get("m"), data.get("s"), data.get("p")
    if (
        not isinstance(member, str)
        or isinstance(score, bool)
        or not isinstance(score, int | float)
        or not math.isfinite(score)
        or isinstance(position, bool)
        or not isinstance(position, int)
        or not 0 <= position < MAX_POSITION
        or not is_identifier(member)
    ):
        raise InvalidCursor("cursor: not a cursor returned by this board")
    return member, float(score), position


def load_script(redis: Client) -> str:
    """Put the board script in the script cache (of every primary of a cluster)."""
    return str(redis.script_load(_SCRIPT))


# Clients of a Redis without EVALSHA_RO (6.2), which run the script with EVALSHA.
_WITHOUT_RO: weakref.WeakSet[Any] = weakref.WeakSet()


def _evalsha(redis: Client, names: list[str], args: list[Any]) -> Any:
    if redis not in _WITHOUT_RO:
        try:
            return redis.evalsha_ro(SCRIPT_SHA, len(names), *names, *args)
        except NoScriptError:
            raise
        except ResponseError as exc:
            if not str(exc).lower().startswith("unknown command"):
                raise
            _WITHOUT_RO.add(redis)
    return redis.evalsha(SCRIPT_SHA, len(names), *names, *args)


def _call(redis: Client, names: list[str], args: list[Any]) -> Any:
    """The board script, read-only by its SHA1; loaded first if missing and this client may."""
    try:
        return _evalsha(redis, names, args)
    except NoScriptError:
        pass
    try:
        load_script(redis)
    except NoPermissionError:
        raise BoardScriptMissing(
            "the board script is not loaded on this Redis and this user may not load it: "
            "a running `ladder worker` loads it within a minute"
        ) from None
    return _evalsha(redis, names, args)


def _run(
    redis: Client, ladder: str, board: str, key: str, op: str, *args: Any
) -> tuple[int, int, list[Entry]]:
    """One script call: the entries, and on a rating board their provisional flags too."""
    flags = keys.player_prefix(ladder) if board in RATING_BOARDS else ""
    return _parse(_call(redis, [key], [op, flags, *args]))


def _parse(reply: bytes | str) -> tuple[int, int, list[Entry]]:
    data = json.loads(_decode(reply))
    total, start = int(data[0]), int(data[1])
    entries = [
        Entry(
            data[i + 1],
            int(data[i]),
            float(data[i + 2]),
            data[i + 3] == 1,
            percentile(data[i + 4], total),
        )
        for i in range(2, len(data), 5)
    ]
    return total, start, entries


def _decode(value: bytes | str) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value
