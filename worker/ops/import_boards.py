"""The boards of the players an import created: written to Redis after the import commits.

Either from the rows prepared while PostgreSQL created the players (``Prepared``, when every
line of the file was a new player), or read back from PostgreSQL (``project``); both send
``WRITE``'s ``created`` mode from two threads, as a rebuild does.
"""

from __future__ import annotations

import marshal
import tempfile
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from typing import IO, Any

from redis import Redis
from redis.cluster import RedisCluster
from sqlalchemy.engine import Engine

from worker.boards.projection import WRITE, BoardRows, boards, encode_rows, write_payload
from worker.ladders import LadderConfig
from worker.store import imports
from worker.store.imports import Line

SENDERS = 2  # threads writing the boards (as in a rebuild)
SCRIPT_CHUNK = 500  # players per board script call


class Prepared:
    """The boards' rows of the players an import creates at once, made while PostgreSQL
    writes those players and kept in a temporary file (memory holds a chunk), so that after
    the commit nothing is left but sending them: ``WRITE``'s payloads, ``SCRIPT_CHUNK``
    players each, with their ids, in ``marshal`` records."""

    def __init__(self, ladder_config: LadderConfig, moment: datetime) -> None:
        self.ladder = ladder_config.name
        self.moment = moment
        self._maker = BoardRows(ladder_config, moment)
        self._file: IO[bytes] | None = None

    def __enter__(self) -> Prepared:
        self._file = tempfile.TemporaryFile(prefix="ladder-import-")
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._file is not None
        self._file.close()

    def add(self, lines: list[Line]) -> None:
        assert self._file is not None
        rows = [self._maker.row(line.player_row(self.ladder, self.moment)) for line in lines]
        for i in range(0, len(rows), SCRIPT_CHUNK):
            marshal.dump(encode_rows(rows[i : i + SCRIPT_CHUNK]), self._file)

    def chunks(self) -> Iterator[tuple[list[str], str]]:
        """(player ids, payload) of every script call, in the order they were added."""
        assert self._file is not None
        self._file.flush()
        self._file.seek(0)
        while True:
            try:
                yield marshal.load(self._file)
            except EOFError:
                return


def project(
    engine: Engine,
    redis: Redis | RedisCluster,
    ladder_config: LadderConfig,
    event_id: str,
    at: datetime,
) -> int:
    """Write the players one import created onto the boards (newer versions only, so a game
    a worker scored for one of them meanwhile is never rolled back): ``WRITE``'s ``created``
    mode, which for a player with no hash yet makes two commands instead of seven.

    As in a rebuild, two threads send chunks to Redis while this one reads and prepares the
    next ones, so PostgreSQL, Python and Redis work at the same time."""
    ladder = ladder_config.name
    maker = BoardRows(ladder_config)
    sender = _calls_sender(redis, ladder)

    def send(rows: list[list[Any]]) -> None:
        sender([encode_rows(rows[i : i + SCRIPT_CHUNK]) for i in range(0, len(rows), SCRIPT_CHUNK)])

    written = 0
    pending: deque[Future[None]] = deque()
    with ThreadPoolExecutor(max_workers=SENDERS, thread_name_prefix="ladder-import") as pool:
        try:
            for part in imports.imported_rows(engine, ladder, event_id, at):
                pending.append(pool.submit(send, [maker.row(r) for r in part]))
                written += len(part)
                while len(pending) > 2 * SENDERS:
                    pending.popleft().result()
            while pending:
                pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()
    return written


def send_prepared(
    redis: Redis | RedisCluster, ladder_config: LadderConfig, prepared: Prepared
) -> int:
    """Send the boards' rows ``Prepared`` holds, as ``project`` sends the rows it reads (the
    same script and mode, the same threads)."""
    send = _calls_sender(redis, ladder_config.name)

    written = 0
    calls: list[tuple[list[str], str]] = []
    pending: deque[Future[None]] = deque()
    with ThreadPoolExecutor(max_workers=SENDERS, thread_name_prefix="ladder-import") as pool:
        try:
            for call in prepared.chunks():
                calls.append(call)
                written += len(call[0])
                if len(calls) * SCRIPT_CHUNK >= imports.FETCH:
                    pending.append(pool.submit(send, calls))
                    calls = []
                while len(pending) > 2 * SENDERS:
                    pending.popleft().result()
            if calls:
                pending.append(pool.submit(send, calls))
            while pending:
                pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()
    return written


def _calls_sender(
    redis: Redis | RedisCluster, ladder: str
) -> Callable[[list[tuple[list[str], str]]], None]:
    """Sends ``WRITE`` calls in ``created`` mode: one pipeline for them (a cluster pipeline
    refuses scripts: one by one there)."""
    script = redis.register_script(WRITE)
    live = boards(ladder)

    def send(calls: list[tuple[list[str], str]]) -> None:
        if isinstance(redis, RedisCluster):
            for ids, payload in calls:
                write_payload(redis, script, live, ladder, ids, payload, "created")
            return
        with redis.pipeline(transaction=False) as pipe:
            for ids, payload in calls:
                write_payload(pipe, script, live, ladder, ids, payload, "created")
            pipe.execute()

    return send
