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

Where the replay's receipt is the one the stored rows make (``receipts.from_rows``: the
event's audit row and ledger rows, each with the games and provisional flag its receipt
showed), the receipt is made from those rows: verify compares them with the replay first
(``_check_event``), so a kept copy equal to them is equal to the replay's. That is every event
a void did not re-rate and whose rows verify found as the replay made them. The replay makes
the others' receipts itself (``made_receipt``): a game a void took back or re-rated, an event
whose rows differ from the replay's, a row written before the receipt's columns were kept.
"""

from __future__ import annotations

import json
import multiprocessing
import signal
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from multiprocessing.connection import Connection
from typing import Any

from redis import Redis
from redis.cluster import RedisCluster
from sqlalchemy.engine import Engine

from engine import Decision, LedgerChange, Replay
from engine.ladder import Event, when
from schemas import receipt_bodies as receipts
from schemas.receipt import Receipt
from schemas.receipt_bodies import After, same_processing
from worker import keys
from worker.boards.receipts import encode, same_but_ranks
from worker.store.log import AuditRow
from worker.store.receipts import Head, receipt_log

CHUNK = 1000  # receipts read in one MGET
FACTS = ("outcome", "reason", "ruleset_version")
NOT_COMPARED = ("rank_after",)

# (event id, player id or None, field, kept, derived): one difference found
Differ = Callable[[str, str | None, str, Any, Any], None]


class ComparisonLost(RuntimeError):
    """The process comparing the kept receipts beside the replay ended without an answer
    (killed, or out of memory): this verify compared them not at all."""


class KeptReceipts:
    """Collects, event by event, what each receipt is made of: the stored rows, or the
    receipt the replay makes where they are not it (``event``); compares a chunk of them with
    their kept copies at a time (``finish`` compares the rest).

    From the first full chunk on (``CHUNK`` receipts or more to compare), the chunks are
    compared in a process of their own, forked then (``_Beside``), which reads the stored rows
    itself from where that chunk starts: the rows read, the MGETs, the receipts built and
    their comparison take about a third of a verify's time, and the replay keeps one core
    busy while the other is mostly idle. This process then hands it, a chunk at a time, only
    how far the replay got and the receipts the replay made. A shorter history is compared in
    this process at the end, by the same ``compare_rows``; either way the differences reach
    ``differ`` when ``finish`` collects them."""

    def __init__(
        self,
        redis: Redis | RedisCluster,
        since: datetime,
        differ: Differ,
        engine: Engine,
        ladder: str,
        begins: datetime | None = None,
    ) -> None:
        """``begins``: every event the replay reads was processed at or after it (None: not
        known), as ``stream_log`` takes it."""
        self.redis, self.since, self.differ, self.chunk = redis, since, differ, CHUNK
        self.engine, self.ladder, self.begins = engine, ladder, begins
        self.first: int | None = None  # the scoring number of the first event to compare
        self.made: dict[str, Body | None] = {}  # the replay's receipts; None: not compared
        self.counted = 0  # events to compare since the last chunk
        self.through = 0  # the scoring number of the last event the replay read
        self.compared = 0  # kept receipts compared
        self.beside: _Beside | None = None

    def event(self, row: AuditRow, made: Body | None) -> None:
        """The audit row ``row`` of an event the replay read: ``made`` is the receipt the
        replay makes of it (``made_receipt``), or None where its stored rows make that
        receipt (``receipts.from_rows``)."""
        self.through = row.seq
        if row.processed_at >= self.since:
            if made is not None:
                self.made[row.event_id] = made
            self._count(row)

    def skip(self, row: AuditRow) -> None:
        """An event the replay could not read (its payload is not an event): no receipt."""
        self.through = row.seq
        if row.processed_at >= self.since:
            self.made[row.event_id] = None
            self._count(row)

    def _count(self, row: AuditRow) -> None:
        if self.first is None:
            self.first = row.seq
        self.counted += 1
        if self.counted >= self.chunk:
            self._compare(last=False)

    def finish(self) -> None:
        """Compare what is left, and collect what was compared beside the replay."""
        self._compare(last=True)
        if self.beside is not None:
            compared, found = self.beside.close()
            self.beside = None
            self.compared += compared
            for mismatch in found:
                self.differ(*mismatch)

    def _compare(self, *, last: bool) -> None:
        """Hand the events counted since the last chunk on: to the process beside the replay,
        forked at the first full chunk; a shorter history's, at the end, compared here."""
        if not self.counted or self.first is None:
            return
        chunk: Chunk = (self.through, self.made)
        self.made, self.counted = {}, 0
        if self.beside is None and last:
            compared, found = compare_rows(self, self.first - 1, [chunk])
            self.compared += compared
            for mismatch in found:
                self.differ(*mismatch)
            return
        if self.beside is None:
            self.beside = _Beside(self, self.first - 1)
        self.beside.send(chunk)


# An event's receipt (a voided game's, or one of the stored rows), or what ``body`` makes it
# of: the decision's first fields (``_FACTS_OF_DECISION``), each ledger change with the
# player's games and provisional flag right after it, and when the event was processed.
Body = Receipt | tuple[tuple[Any, ...], tuple[Any, ...], datetime]
Made = tuple[str, Body]  # an event id and its receipt
_FACTS_OF_DECISION = Decision._fields.index("mode")  # event_id ... ruleset_version
# A chunk for the process beside the replay: the last scoring number the replay read, and
# the receipts it made (None: not compared).
Chunk = tuple[int, dict[str, Body | None]]


def made_receipt(
    row: AuditRow,
    event: Event,
    made: Decision | None,
    by: Replay,
    after: Sequence[After] | None = None,
) -> Body:
    """The receipt of the stored event ``row`` as the replay ``by`` makes it (``made``: its
    decision, None when voided), in the form ``check`` takes; ``after``: the decision's
    ``receipts.players_after`` when the caller has it already."""
    processed_at = row.processed_at
    if made is None:
        return receipts.voided(row.event_id, event.ladder, event.type, row.version, processed_at)
    if after is None:
        rules = by.rules_at(when(event, processed_at))
        after = receipts.players_after(made, by.players, rules)
    # plain tuples: built and pickled in half the time the named tuples take to pickle
    players = tuple((tuple(a.change), a.games, a.provisional) for a in after)
    return (made[:_FACTS_OF_DECISION], players, processed_at)


def receipts_of(
    since: datetime,
    logged: Iterable[tuple[Head, Sequence[Any]]],
    made: Mapping[str, Body | None],
) -> list[Made]:
    """The receipt of each event of ``logged`` processed since ``since``: the replay's
    (``made``) where it made one, else the one its stored rows make; none where ``made``
    holds None (an event the replay could not read)."""
    part: list[Made] = []
    for row, stored in logged:
        if row.processed_at < since:
            continue
        event_id = row.event_id
        receipt = made[event_id] if event_id in made else receipts.from_rows(row, stored)
        if receipt is not None:
            part.append((event_id, receipt))
    return part


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
    """``check`` in a forked process of its own, which reads the ladder's stored rows after
    ``after`` itself: ``send`` hands it a ``Chunk``, ``close`` waits for the last and returns
    how many copies it compared and the differences it found. An error there (Redis gone,
    say) is raised here, at the next ``send`` or at ``close``."""

    def __init__(self, kept: KeptReceipts, after: int) -> None:
        context = multiprocessing.get_context("fork")
        self.conn, theirs = context.Pipe()
        self.process = context.Process(
            target=_check_beside,
            args=(kept, after, theirs),
            name="ladder-verify-receipts",
            daemon=True,
        )
        self.process.start()
        theirs.close()

    def send(self, chunk: Chunk) -> None:
        if self.conn.poll():  # it answers before the end only to say it failed
            self._answer()
        try:
            self.conn.send(chunk)
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


def compare_rows(
    kept: KeptReceipts, after: int, chunks: Iterable[Chunk]
) -> tuple[int, list[tuple[Any, ...]]]:
    """The ladder's stored rows after ``after``, read as the replay reads them, ``check``-ed
    a chunk at a time as far as the replay got: how many kept copies were compared, and the
    differences found."""
    found: list[tuple[Any, ...]] = []
    compared = 0
    logged = receipt_log(kept.engine, kept.ladder, after, since=kept.begins)
    pending = next(logged, None)
    for through, made in chunks:
        rows = []
        while pending is not None and pending[0].seq <= through:
            rows.append(pending)
            pending = next(logged, None)
        part = receipts_of(kept.since, rows, made)
        compared += check(kept.redis, part, lambda *mismatch: found.append(mismatch))
    return compared, found


def _check_beside(kept: KeptReceipts, after: int, conn: Connection) -> None:
    """The forked process's part: ``compare_rows`` of each chunk the parent sends, until
    ``None``; then answer. Its Redis client opens a connection of its own (redis-py starts
    its pool afresh after a fork), its database engine too (the pooled connections are the
    verifying process's); an interrupt is the parent's to handle."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    kept.engine.dispose(close=False)
    try:
        answer: Any = compare_rows(kept, after, iter(conn.recv, None))
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
