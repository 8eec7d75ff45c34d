"""Verify's check of the receipts kept in Redis (``ladder:receipt:<event_id>``).

SPEC 5: replaying the stored events in their scoring order reproduces every stored number,
the receipts kept under ``ladder:receipt:<event_id>`` among them. A kept receipt says what its
event did in the ladder as it stands: after a void, the receipts it changed are rewritten to
what the re-rated ladder made of their events (``worker.ops.moderation``), a voided game's to
outcome ``voided`` with no players. So each event processed since ``since`` (the oldest a kept
copy can be) whose key is still there is compared with its receipt as the replay of the
moderated ladder makes it (``engine.replay.Lived.moderated``): outcome, reason, ruleset
version, and each player's id, ratings before and after, delta, K, expected score, games and
provisional flag. The rank (``rank_after``) is the board's, not the replay's, and is not
compared. The keys are read in chunks, one ``MGET`` each. Most kept copies are the replay's
receipt as the worker wrote it, ranks aside: those are told by comparing the texts, and only
the rest are decoded and compared field by field.
"""

from __future__ import annotations

import json
import multiprocessing
import signal
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from multiprocessing.connection import Connection
from typing import Any

from redis import Redis
from redis.cluster import RedisCluster

from engine import Decision, LedgerChange, Replay
from engine.ladder import Event, when
from schemas import receipt_bodies as receipts
from schemas.receipt import Receipt
from schemas.receipt_bodies import After, same_processing
from worker import keys
from worker.boards.receipts import encode, same_but_ranks

CHUNK = 1000  # receipts read in one MGET
FACTS = ("outcome", "reason", "ruleset_version")
NOT_COMPARED = ("rank_after",)

# (event id, player id or None, field, kept, derived): one difference found
Differ = Callable[[str, str | None, str, Any, Any], None]


class ComparisonLost(RuntimeError):
    """The process comparing the kept receipts beside the replay ended without an answer
    (killed, or out of memory): this verify compared them not at all."""


class KeptReceipts:
    """Collects what each event's receipt is made of as the moderated ladder makes it, and
    compares a chunk of them with their kept copies at a time (``finish`` compares the rest).

    From the first full chunk on (``CHUNK`` receipts or more to compare), the chunks are
    compared in a process of their own, forked then (``_Beside``): the MGETs, the receipts
    built and their comparison take about a quarter of a verify's time, and the replay
    keeps one core busy while the other is mostly idle. A shorter history is compared in this
    process, by the same ``check``; either way the differences reach ``differ`` (those
    found beside the replay when ``finish`` collects them)."""

    def __init__(self, redis: Redis | RedisCluster, since: datetime, differ: Differ) -> None:
        self.redis, self.since, self.differ, self.chunk = redis, since, differ, CHUNK
        self.made: list[Made] = []
        self.compared = 0  # kept receipts compared
        self.beside: _Beside | None = None

    def event(
        self,
        row: Any,
        event: Event,
        made: Decision | None,
        by: Replay,
        processed_at: datetime,
    ) -> None:
        """The stored event ``row`` (its event, the moderated decision and its replay)."""
        if processed_at < self.since:
            return
        if made is None:
            body = receipts.voided(row[0], event.ladder, event.type, row[3], processed_at)
            self.made.append((row[0], body))
        else:
            rules = by.rules_at(when(event, processed_at))
            after = receipts.players_after(made, by.players, rules)
            # plain tuples: built and pickled in half the time the named tuples take to pickle
            players = tuple((tuple(a.change), a.games, a.provisional) for a in after)
            self.made.append((row[0], (made[:_FACTS_OF_DECISION], players, processed_at)))
        if len(self.made) >= self.chunk:
            self._compare()

    def finish(self) -> None:
        """Compare what is left, and collect what was compared beside the replay."""
        self._compare()
        if self.beside is not None:
            compared, found = self.beside.close()
            self.beside = None
            self.compared += compared
            for mismatch in found:
                self.differ(*mismatch)

    def _compare(self) -> None:
        part, self.made = self.made, []
        if not part:
            return
        if self.beside is None and len(part) >= self.chunk:
            self.beside = _Beside(self.redis)
        if self.beside is not None:
            self.beside.send(part)
        else:
            self.compared += check(self.redis, part, self.differ)


# An event's receipt (a voided game's), or what ``body`` makes it of: the decision's first
# fields (``_FACTS_OF_DECISION``), each ledger change with the player's games and provisional
# flag right after it, and when the event was processed.
Made = tuple[str, Receipt | tuple[tuple[Any, ...], tuple[Any, ...], datetime]]
_FACTS_OF_DECISION = Decision._fields.index("mode")  # event_id ... ruleset_version


def check(redis: Redis | RedisCluster, part: Sequence[Made], differ: Differ) -> int:
    """Compare ``part`` with the copies kept in ``redis`` (one ``MGET``); returns how many
    copies there were."""
    copies = redis.mget([keys.receipt(event_id) for event_id, _ in part])
    compared = 0
    for (event_id, made), raw in zip(part, copies, strict=True):
        if raw is None:
            continue  # expired, or never written (the receipt is read from PostgreSQL)
        compared += 1
        body = made if isinstance(made, dict) else _body(*made)
        if same_but_ranks(raw, encode(body)):
            continue  # the same text, ranks aside: the same receipt
        try:
            kept = json.loads(raw)
        except ValueError:
            differ(event_id, None, "receipt", "not JSON", None)
            continue
        if same_processing(kept, body):
            compare(event_id, kept, body, differ)
    return compared


def _body(facts: tuple[Any, ...], players: tuple[Any, ...], processed_at: datetime) -> Receipt:
    after = [After(LedgerChange(*change), games, flag) for change, games, flag in players]
    return receipts.body(Decision(*facts), after, processed_at)


class _Beside:
    """``check`` in a forked process of its own: ``send`` hands it a chunk, ``close`` waits
    for the last and returns how many copies it compared and the differences it found. An
    error there (Redis gone, say) is raised here, at the next ``send`` or at ``close``."""

    def __init__(self, redis: Redis | RedisCluster) -> None:
        context = multiprocessing.get_context("fork")
        self.conn, theirs = context.Pipe()
        self.process = context.Process(
            target=_check_beside, args=(redis, theirs), name="ladder-verify-receipts", daemon=True
        )
        self.process.start()
        theirs.close()

    def send(self, part: list[Made]) -> None:
        if self.conn.poll():  # it answers before the end only to say it failed
            self._answer()
        try:
            self.conn.send(part)
        except OSError:
            self._answer()

    def close(self) -> tuple[int, list[tuple[Any, ...]]]:
        try:
            self.conn.send(None)
        except OSError:
            pass  # it ended early: its answer says why
        return self._answer()

    def _answer(self) -> tuple[int, list[tuple[Any, ...]]]:
        try:
            answer = self.conn.recv()
        except (EOFError, OSError):  # it died: killed, or out of memory
            answer = ComparisonLost(
                "the kept receipts' comparison ended without an answer (its process was "
                "killed, or ran out of memory); nothing is known of them: verify again"
            )
        finally:
            self.conn.close()
            self.process.join()
        if isinstance(answer, BaseException):
            raise answer
        return answer  # type: ignore[no-any-return]


def _check_beside(redis: Redis | RedisCluster, conn: Connection) -> None:
    """The forked process's part: ``check`` each chunk until ``None``, then answer. Its
    Redis client opens a connection of its own (redis-py starts its pool afresh after a
    fork); an interrupt is the parent's to handle."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    found: list[tuple[Any, ...]] = []
    compared = 0
    try:
        while (part := conn.recv()) is not None:
            compared += check(redis, part, lambda *mismatch: found.append(mismatch))
        answer: Any = (compared, found)
    except EOFError:
        return  # the parent stopped (its replay failed, or it was interrupted)
    except Exception as exc:  # noqa: BLE001 - raised again in the parent
        answer = exc
    try:
        conn.send(answer)
    except OSError:
        pass  # the parent is gone
    except Exception:  # noqa: BLE001 - an error that does not pickle: sent in words
        conn.send(RuntimeError(f"{type(answer).__name__}: {answer}"))


def compare(event_id: str, kept: dict[str, Any], made: Mapping[str, Any], differ: Differ) -> None:
    """A kept receipt against the one the replay makes (ranks aside)."""
    for name in FACTS:
        if kept.get(name) != made[name]:
            differ(event_id, None, f"receipt {name}", kept.get(name), made[name])
    kept_players = [_numbers(p) for p in kept.get("players") or []]
    made_players = [_numbers(p) for p in made["players"]]
    if kept_players == made_players:
        return
    for index in range(max(len(kept_players), len(made_players))):
        one = kept_players[index] if index < len(kept_players) else None
        other = made_players[index] if index < len(made_players) else None
        if one is None or other is None:
            player = (one or other or {}).get("player_id")
            differ(event_id, player, "receipt player", one, other)
            continue
        for name in sorted(set(one) | set(other)):
            if one.get(name) != other.get(name):
                field = f"receipt {name}"
                differ(event_id, other.get("player_id"), field, one.get(name), other.get(name))


def _numbers(entry: Any) -> dict[str, Any]:
    if not isinstance(entry, dict):
        return {"entry": entry}
    return {k: v for k, v in entry.items() if k not in NOT_COMPARED}
