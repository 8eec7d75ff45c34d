"""Redis adapter for receipts: the stream, the per-event key and the wait list.

All three live on the queue's Redis (``REDIS_URL``), beside the inbox a game server publishes
to. One script call (``RECEIPTS``, receipts.lua) writes a batch's receipts; the projection
puts it in the same pipeline as the batch's leaderboard write, after it, so ``rank_after`` is
read from the boards the batch just wrote. When the leaderboards live on another Redis
(``LEADERBOARD_REDIS_URL``, maybe a Cluster) the ranks are read from there first and the
script only writes.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, cast

from redis import Redis
from redis.client import Pipeline
from redis.cluster import RedisCluster

from schemas.receipt_bodies import DUPLICATE, ReceiptWrite, same_processing
from worker import keys
from worker.jsontext import compact
from worker.lua import lua_source, run

RECEIPTS = lua_source("worker.boards", "receipts.lua")
WAIT_SECONDS = 60  # a wait list outlives its receipt's push by this much
# Stands in for each player's rank_after while the receipt is JSON-encoded; it is then
# replaced by ``%s`` (the text's own ``%`` doubled first), where the script puts the rank.
# Random per process, with \x01 bytes (escaped in JSON text): no id can collide with it.
_SLOT = f"\x01rank-{uuid.uuid4().hex}\x01"
_SLOT_TEXT = compact(_SLOT)


def template(body: Mapping[str, Any]) -> str:
    """The receipt's JSON text as a Lua ``string.format`` template: ``%s`` where each player's
    ``rank_after`` goes, ``%%`` for each ``%`` of the text."""
    players = body["players"]
    for player in players:
        player["rank_after"] = _SLOT
    try:
        text = compact(body)
    finally:
        for player in players:
            player["rank_after"] = None
    return text.replace("%", "%%").replace(_SLOT_TEXT, "%s")


def pack(fields: list[str]) -> str:
    """The fields as the script reads them: each ended by a \\x02 byte. None holds one: JSON
    text escapes control characters and an id cannot have them (``schemas.events``); a
    field that did would be read as two, so it is refused here."""
    packed = "\x02".join(fields) + "\x02"
    if packed.count("\x02") != len(fields):
        raise ValueError("a receipt field holds a \\x02 byte")
    return packed


class ReceiptSink:
    """``settle_seconds``: how long an operator action that rewrites kept receipts waits for
    the workers' batches in flight to write theirs first (the job timeout)."""

    def __init__(
        self,
        redis: Redis,
        *,
        ttl: int,
        maxlen: int,
        wait_seconds: int = WAIT_SECONDS,
        settle_seconds: float = 60.0,
    ) -> None:
        self.redis = redis
        self.ttl = ttl
        self.maxlen = maxlen
        self.wait_seconds = wait_seconds
        self.settle_seconds = settle_seconds
        self._script = redis.register_script(RECEIPTS)

    def write(
        self,
        client: Redis | Pipeline,
        receipts: Sequence[ReceiptWrite],
        *,
        boards_here: bool,
        ranks: dict[tuple[str, str], str] | None = None,
    ) -> Any:
        """Queue (on a pipeline) or run the script for ``receipts``.

        ``boards_here``: the rating boards are on this Redis, and the script reads the ranks;
        otherwise ``ranks`` holds them (``null`` for a player not on the board)."""
        script_keys: list[str] = [keys.RECEIPTS]
        positions: dict[str, int] = {}  # a key's position in KEYS, each key named once
        boards: dict[str, int] = {}  # a ladder's rating board's position
        given = ranks or {}
        fields: list[str] = []
        add, more = fields.append, fields.extend
        for receipt in receipts:
            k = b = 0
            ladder = receipt.ladder
            if receipt.event_id is not None:
                key = keys.receipt(receipt.event_id)
                k = positions.get(key, 0)
                if not k:  # its wait list goes right after it: at k + 1
                    script_keys += (key, keys.receipt_wait(receipt.event_id))
                    k = positions[key] = len(script_keys) - 1
            players = receipt.ranks
            if players and boards_here and ladder is not None:
                b = boards.get(ladder, 0)
                if not b:
                    script_keys.append(keys.rating(ladder))
                    b = boards[ladder] = len(script_keys)
            heal = receipt.heal
            add(f"{receipt.mode} {k} {b} {len(players)} {0 if heal is None else 1}")
            add(template(receipt.body))
            if heal is not None:
                add(template(heal))
            if receipt.mode == DUPLICATE:  # its ranks are the original's, from the kept copy
                more((ladder or "", str(receipt.body["processed_at"])))
            if b:
                more(players)
            else:
                more([given.get((ladder or "", pid), "null") for pid in players])
        args = [self.ttl, self.maxlen, self.wait_seconds, pack(fields)]
        return run(self._script, client, script_keys, args)


def read_ranks(
    client: Redis | RedisCluster, wanted: Iterable[tuple[str, str]]
) -> dict[tuple[str, str], str]:
    """Competition ranks on the rating boards of another Redis: two pipelined rounds."""
    pairs = sorted(set(wanted))
    if not pairs:
        return {}
    pipe = client.pipeline(transaction=False)
    for ladder, pid in pairs:
        pipe.zscore(keys.rating(ladder), pid)
    scores = pipe.execute()
    on_board = [(p, s) for p, s in zip(pairs, scores, strict=True) if s is not None]
    pipe = client.pipeline(transaction=False)
    for (ladder, _), score in on_board:
        pipe.zcount(keys.rating(ladder), f"({score!r}", "+inf")
    higher = pipe.execute() if on_board else []
    ranks = dict.fromkeys(pairs, "null")
    for (pair, _), count in zip(on_board, higher, strict=True):
        ranks[pair] = str(int(count) + 1)
    return ranks


def stored(redis: Redis, event_id: str) -> dict[str, Any] | None:
    """The Redis copy of a receipt, while it is kept (``LADDER_RECEIPT_TTL``)."""
    raw = redis.get(keys.receipt(event_id))
    if raw is None:
        return None
    found = json.loads(raw)
    return found if isinstance(found, dict) else None


def _names(body: Any, ladder: str, player_id: str) -> bool:
    """Whether a receipt of ``ladder`` names the player (as a player of it)."""
    if not isinstance(body, dict) or body.get("ladder") != ladder:
        return False
    return any(
        isinstance(p, dict) and p.get("player_id") == player_id for p in body.get("players") or ()
    )


def rename_events(
    redis: Redis,
    ladder: str,
    player_id: str,
    event_ids: Iterable[str],
    rename: Callable[[Any], Any],
    chunk: int = 1000,
) -> int:
    """Rewrite the receipts of ``event_ids`` (events of ``ladder``) that name ``player_id``
    through ``rename`` (an erase): their kept keys (expiry kept) and wait lists; their entries
    on the stream are deleted (``XDEL``), never added again: a stream entry cannot change in
    place, and one appended anew would reach a consumer as a new receipt. Only these events'
    receipts are touched: a later game of a new player of the same id keeps its receipts. The
    stream is read up to its last entry when the call starts: the caller has waited for every
    write of these events (``worker.queue.inflight``). Returns how many receipts were
    rewritten or deleted."""
    ids = sorted(set(event_ids))
    done = 0
    for first in range(0, len(ids), chunk):
        part = ids[first : first + chunk]
        with redis.pipeline(transaction=False) as pipe:
            for event_id in part:
                pipe.get(keys.receipt(event_id))
                pipe.lrange(keys.receipt_wait(event_id), 0, -1)
                pipe.pttl(keys.receipt_wait(event_id))
            found = pipe.execute()
        with redis.pipeline(transaction=False) as pipe:
            for at, event_id in enumerate(part):
                text, items, ttl = found[3 * at : 3 * at + 3]
                body = _loads(text)
                if _names(body, ladder, player_id):
                    pipe.set(keys.receipt(event_id), compact(rename(body)), xx=True, keepttl=True)
                    done += 1
                bodies = [_loads(item) for item in items]
                if any(_names(b, ladder, player_id) for b in bodies):
                    wait = keys.receipt_wait(event_id)
                    pipe.delete(wait)
                    pipe.rpush(wait, *(compact(rename(b)) for b in bodies))
                    if ttl > 0:
                        pipe.pexpire(wait, ttl)
                    done += 1
            pipe.execute()
    return done + _delete_entries(redis, ladder, player_id, set(ids), chunk)


def _delete_entries(
    redis: Redis, ladder: str, player_id: str, event_ids: set[str], chunk: int
) -> int:
    """``XDEL`` the stream's entries, up to its last one now, of these events naming the
    player."""
    last = cast(list[tuple[bytes, Any]], redis.xrevrange(keys.RECEIPTS, count=1))
    if not last or not event_ids:
        return 0
    end = last[0][0].decode()
    gone: list[str] = []
    start = "-"
    while True:
        entries = cast(
            list[tuple[bytes, dict[bytes, bytes]]],
            redis.xrange(keys.RECEIPTS, min=start, max=end, count=chunk),
        )
        for entry_id, fields in entries:
            body = _loads(fields.get(b"receipt"))
            if _names(body, ladder, player_id) and body.get("event_id") in event_ids:
                gone.append(entry_id.decode())
        if len(entries) < chunk:
            break
        start = "(" + entries[-1][0].decode()
    for first in range(0, len(gone), chunk):
        redis.xdel(keys.RECEIPTS, *gone[first : first + chunk])
    return len(gone)


def encode(body: Mapping[str, Any]) -> str:
    """A receipt's JSON text, as the keys hold it."""
    return compact(body)


def refresh(redis: Redis, made: Sequence[tuple[str, str]], chunk: int = 1000) -> int:
    """Rewrite the kept copy of each receipt in ``made`` (event id, and its receipt as a void
    left it as JSON text) where ``ladder:receipt:<event_id>`` still holds that event's receipt with
    another outcome or other numbers; its expiry is kept, and a key gone (expired, or never
    written) is not written again: the receipt is then read from PostgreSQL. ``rank_after`` of
    a rewritten receipt is null (the rank right after a re-rated event is on no board). One
    ``MGET`` and at most one pipeline of writes per ``chunk`` receipts. A copy the same as
    the receipt but for its ranks (most of them) is told by comparing the texts: both come
    from the same encoder, the copy with each rank filled in. Returns how many were rewritten.
    """
    done = 0
    for first in range(0, len(made), chunk):
        part = made[first : first + chunk]
        copies = redis.mget([keys.receipt(event_id) for event_id, _ in part])
        stale = [
            (event_id, text)
            for (event_id, text), raw in zip(part, copies, strict=True)
            if raw is not None and _rewrites(raw, text)
        ]
        if not stale:
            continue
        with redis.pipeline(transaction=False) as pipe:
            for event_id, text in stale:
                pipe.set(keys.receipt(event_id), text, xx=True, keepttl=True)
            done += sum(1 for written in pipe.execute() if written)
    return done


def unsettled(redis: Redis, part: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """The receipts of ``part`` (event id, receipt as JSON text) that ``refresh`` may still
    have to write: those whose kept copy says otherwise, and those with no copy now (a
    worker may be about to write it). One ``MGET``. A void asks this as it replays, so that
    it holds only these until its commit, not every receipt it made."""
    copies = redis.mget([keys.receipt(event_id) for event_id, _ in part])
    return [
        (event_id, text)
        for (event_id, text), raw in zip(part, copies, strict=True)
        if raw is None or _rewrites(raw, text)
    ]


def _rewrites(raw: bytes | str, text: str) -> bool:
    """Whether the kept copy ``raw`` is to be rewritten to ``text``: the same processing of
    the event (``_stale``) with another outcome or other numbers. A copy the same as the
    receipt but for its ranks (most of them) is told by comparing the texts."""
    return not same_but_ranks(raw, text) and _stale(_loads(raw), json.loads(text))


_RANK = re.compile(rb'"rank_after":\d+')  # an id's quotes are escaped: never matched


def same_but_ranks(raw: bytes | str, text: str) -> bool:
    """Whether the kept copy ``raw`` is the receipt ``text`` (``encode``) but for its ranks:
    the copy is the same encoder's text with each ``rank_after`` filled in."""
    kept = raw if isinstance(raw, bytes) else raw.encode()
    return _RANK.sub(b'"rank_after":null', kept) == text.encode()


_FACTS = ("outcome", "reason", "ruleset_version", "type")


def _stale(copy: Any, body: dict[str, Any]) -> bool:
    """Whether ``copy`` is the receipt of the same processing of the event as ``body`` and
    says otherwise."""
    if not same_processing(copy, body):
        return False
    if any(copy.get(k) != body[k] for k in _FACTS):
        return True
    theirs = copy.get("players")
    if not isinstance(theirs, list) or len(theirs) != len(body["players"]):
        return True
    return any(
        not isinstance(other, dict) or dict(other, rank_after=None) != mine
        for other, mine in zip(theirs, body["players"], strict=True)
    )


def _loads(text: bytes | str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None
