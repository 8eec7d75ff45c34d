"""Data-protection requests: export everything stored about a player; erase a player.

``erase`` replaces the player's id on one ladder by a stable pseudonym (a keyed hash of the
ladder and the id under ``LADDER_NETWORK_KEY``: the same id always gets the same pseudonym,
and it cannot be turned back into the id without the key; an id that comes back as a new
player and is erased again gets ``<pseudonym>-2``, then ``-3``) in every place it is stored:
PostgreSQL rows and payloads, the Redis boards (rating, public, boosted, active and its
``active:since`` index, season archives), hashes, receipt keys and wait lists, and dead
letters (in Redis and in PostgreSQL). The entries of the receipt stream naming the id are
deleted, not rewritten: a stream entry cannot change in place, and one appended again would
reach a consumer group as a new receipt (SPEC 6 "Erase": "deleted, never re-appended").
The pseudonym is banned, so it stays off every board; every other player's numbers are
untouched, and since the stored payloads carry the pseudonym a replay (``ladder verify``)
derives the same ladder. The erase is an entry in the moderation
log naming only the pseudonym.

Workers may go on scoring the ladder meanwhile, and the id may go on playing: a game stored
after the erase's commit is a new player's. Its Redis part therefore touches only what the
erased player's events wrote: the receipts of those events (by event id, never by matching
the id's text), and the id's boards entries and hash while they hold the erased player's
version. It first waits for the Redis writes of the batches in flight at the commit
(``worker.queue.inflight``), so that no late write of an erased event follows it.
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import UTC, datetime
from typing import Any

from redis import Redis
from redis.cluster import RedisCluster
from redis.exceptions import RedisError

from schemas import InvalidEvent
from worker import keys
from worker.boards import receipts
from worker.boards.projection import as_row
from worker.ladders import LadderConfig
from worker.lua import lua_source, run
from worker.ops.moderation import ModerationError
from worker.ops.rebuild import reproject
from worker.ops.seasons import list_seasons
from worker.queue import inflight
from worker.store import erase as store
from worker.store import moderation as moderated

PREFIX = "erased-"
REASON = "data-protection request: erase"


def pseudonym(key: bytes, ladder: str, player_id: str) -> str:
    digest = hmac.new(key, f"{ladder}\x00{player_id}".encode(), hashlib.sha256).hexdigest()
    return PREFIX + digest[:24]


def _boards(rt: Any, ladder: str) -> dict[str, str]:
    found = {"rating": keys.rating(ladder), "public": keys.public(ladder)}
    found["boosted"] = keys.boosted(ladder)
    found["active"] = keys.active(ladder)
    found["active:since"] = keys.active_since(ladder)
    for season in list_seasons(rt.databases.for_ladder(ladder), ladder):
        if season["key"]:
            found[f"season:{season['name']}"] = season["key"]
    return found


def _letters(rt: Any, ladder: str, player_id: str) -> list[Any]:
    """The dead letters in Redis of this ladder (or of none) that mention the id."""
    in_redis = set(rt.dead_letters.registry.get_job_ids())
    found = []
    for letter in rt.dead_letters.list():
        if letter.id not in in_redis or letter.ladder not in (ladder, None):
            continue
        _, trace = rt.dead_letters.get(letter.id) or (letter, "")
        if any(
            store.in_text(t, player_id, "") != t for t in (letter.payload, letter.detail, trace)
        ):
            found.append((letter, trace))
    return found


def export(rt: Any, ladder: str, player_id: str) -> dict[str, Any]:
    """Everything stored about the player on the ladder, as plain JSON values."""
    engine = rt.databases.for_ladder(ladder)
    with engine.connect() as conn:
        rows = store.rows_naming(conn, ladder, player_id)
    if engine is not rt.databases.default:  # the dead letters are on the default primary
        with rt.databases.default.connect() as conn:
            rows["dead_letters"] = store.letters_naming(conn, ladder, player_id)
    if not any(r["player_id"] == player_id for r in rows["players"]):
        raise ModerationError(f"no player {player_id!r} on {ladder}")
    redis: Redis | RedisCluster = rt.leaderboard_redis
    raw = redis.hgetall(keys.player(ladder, player_id))
    card = {_text(k): _text(v) for k, v in raw.items()}
    scores = {name: redis.zscore(key, player_id) for name, key in _boards(rt, ladder).items()}
    letters = [
        {**letter.as_json(datetime.now(UTC)), "payload": letter.payload}
        for letter, _ in _letters(rt, ladder, player_id)
    ]
    return {
        "ladder": ladder,
        "player_id": player_id,
        "postgresql": rows,
        "redis": {"card": card, "boards": {k: v for k, v in scores.items() if v is not None}},
        "dead_letters": letters,
    }


class ErasedInStore(Exception):
    """PostgreSQL is erased (committed) but the Redis part failed: running the same erase
    again finishes it (the id is found again through its pseudonym)."""


def erase(rt: Any, ladder_config: LadderConfig, player_id: str, by: str) -> dict[str, Any]:
    """Erase the player (see the module docstring). The PostgreSQL part is one transaction;
    the Redis part follows it and can be run again: an erase of an id whose PostgreSQL part
    is already done (its pseudonym is banned and its erase logged) does the Redis part only
    and reports ``"resumed": true``.

    Workers may be scoring the same ladder and the same id meanwhile: a game committed after
    the erase is a new player's of the same id. So the Redis part waits for the writes of the
    batches in flight at the commit (``worker.queue.inflight``), then touches only what the
    erased player's events wrote: the receipts of those events, and the id's boards entries
    and hash while they are of the erased player's last version; the id is then projected
    again from PostgreSQL, which holds the new player, if there is one."""
    ladder = ladder_config.name
    base = pseudonym(rt.settings.network_key.get_secret_value(), ladder, player_id)
    new = base
    resumed = False
    engine = rt.databases.for_ladder(ladder)
    with engine.begin() as conn:
        moderated.lock_ladder(conn, ladder)
        if moderated.load_one(conn, ladder, player_id) is None:
            done = store.last_erase(conn, ladder, base)
            if done is None or (player := moderated.load_one(conn, ladder, done[1])) is None:
                raise ModerationError(f"no player {player_id!r} on {ladder}")
            (number, new), rows, resumed = done, 0, True
            erased = store.events_naming(conn, ladder, new)
        else:
            # The id came back after an earlier erase (a new player): a pseudonym of its own.
            count = 1
            while moderated.load_one(conn, ladder, new) is not None:
                count += 1
                new = f"{base}-{count}"
            rows, erased = store.rename(conn, ladder, player_id, new)
            now = datetime.now(UTC)
            player = moderated.load_one(conn, ladder, new)
            assert player is not None
            if not player.banned:  # a change only when it is one, as the replay has it
                player.banned = True
                player.changed(now)
                moderated.set_banned(conn, player)
            after = moderated.last_seq(conn, ladder)
            number = moderated.add_action(
                conn,
                moderated.NewAction(
                    ladder=ladder,
                    kind="erase",
                    reason=REASON,
                    by=by,
                    at=now,
                    after_seq=after,
                    target=new,
                    projected=True,  # the erase writes Redis itself
                ),
            )
    if engine is not rt.databases.default:  # its dead letters, on the default primary
        with rt.databases.default.begin() as conn:
            rows += store.rename_letters(conn, ladder, player_id, new)
    report = {
        "ladder": ladder,
        "pseudonym": new,
        "action": number,
        "rows": rows,
        "keys": 0,
        "resumed": resumed,
    }
    try:
        unsettled = inflight.wait(rt.redis, rt.inbox.queue, rt.settings.job_timeout)
        report["keys"] = _erase_in_redis(rt, ladder_config, player_id, player, erased)
    except RedisError as exc:
        said = str(exc).strip().splitlines()
        raise ErasedInStore(
            f"the player is erased in PostgreSQL (now {new}), but Redis failed "
            f"({said[0] if said else type(exc).__name__}): run the same erase again once "
            "Redis answers to remove it there"
        ) from exc
    if unsettled:
        many = len(unsettled)
        report["warning"] = (
            f"{many} {'batch' if many == 1 else 'batches'} in flight did not finish within "
            f"{rt.settings.job_timeout} s (a worker stopped?): when they are recovered "
            "they write what PostgreSQL holds; run `ladder reconcile` once they are"
        )
    return report


FORGET = lua_source("worker.ops", "forget.lua")


def _erase_in_redis(
    rt: Any, ladder_config: LadderConfig, player_id: str, player: Any, erased: list[str]
) -> int:
    """The erased player's boards entries, hash, receipts and dead letters, rewritten or
    removed; each step finds nothing left to do when it has been done before."""
    ladder, new = ladder_config.name, player.player_id
    redis: Redis | RedisCluster = rt.leaderboard_redis
    boards = _boards(rt, ladder)
    written = 0
    for name, key in boards.items():
        if name.startswith("season:"):  # an archived standing: the erased player's
            score = redis.zscore(key, player_id)
            if score is not None:
                with redis.pipeline() as pipe:
                    pipe.zadd(key, {new: score})
                    pipe.zrem(key, player_id)
                    written += int(pipe.execute()[1])
    live = [key for name, key in boards.items() if not name.startswith("season:")]
    script = redis.register_script(FORGET)
    written += int(
        run(script, redis, [keys.player(ladder, player_id), *live], [player_id, player.version])
    )
    # The pseudonym's state, and the id's again: a new player's, if one has played since.
    with rt.databases.for_ladder(ladder).connect() as conn:
        found = [moderated.load_one(conn, ladder, pid) for pid in (new, player_id)]
    rows = [as_row(p) for p in found if p is not None]
    written += reproject(redis, ladder_config, rows)
    written += receipts.rename_events(
        rt.redis, ladder, player_id, erased, lambda body: store.in_json(body, player_id, new)
    )
    for letter, trace in _letters(rt, ladder, player_id):
        rt.dead_letters.discard([letter.id])
        rt.dead_letters.add(
            store.in_text(letter.payload, player_id, new),
            InvalidEvent(
                letter.reason,
                store.in_text(letter.detail, player_id, new),
                event_id=letter.event_id,
                ladder=letter.ladder,
            ),
            traceback=store.in_text(trace, player_id, new),
            attempts=letter.attempts,
        )
        written += 1
    return written


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value
