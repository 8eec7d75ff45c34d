"""Import: players with ratings from another system, from a JSON lines or CSV file.

Each line names ``player_id`` and ``rating``, and optionally ``games``, ``experience``,
``last_game_at`` (RFC 3339 with an offset), ``email_verified`` and ``display_name_chosen``.
An imported player is created as if they had played: on the rating board (and the public and
active boards where they qualify), with one ledger row of kind ``import`` from the ruleset's
start rating to the imported one, which every replay (``ladder verify``, a void's re-rating, a
backtest) takes as the start of their history, with the games, experience, last game and flags
of ``imported_players`` (``engine.replay.Imported``, read by ``worker.store.imports.profiles``).

The file is read once to take its digest (the ledger rows' ``event_id`` is
``import:<first 16 hex digits of its SHA-256>``) and once to stage it, ``CHUNK`` lines at a
time, so memory holds a chunk, not the file. Refused, each with its line number:

- a line that is not a JSON object or a CSV row of the header's columns;
- an id the event contract would refuse (``schemas``: 1-128 visible characters, NFC, ...);
- a rating that is not a finite number, games or experience that are not whole numbers >= 0,
  a ``last_game_at`` that is not RFC 3339 with an offset or is in the future, a flag that is
  not true or false;
- a player named on an earlier line of the file, or one the ladder already has.

A line identical to what an earlier import wrote for that player is not refused: there is
nothing to do, so importing the same file twice changes nothing the second time. A file with
any refused line imports nothing unless ``skip_invalid``; ``dry_run`` reports and changes
nothing. All of it is one PostgreSQL transaction (``worker.store.imports``); the boards are
written after it commits, as a rebuild writes them.

Most files name only new players. So a thread stages each chunk and creates its players at once
(``Staging.create``) while the next chunk is parsed (``_Writer``; the lines are read by
``worker.ops.import_lines``), and what the boards will show of them is prepared meanwhile, from
the rows handed to PostgreSQL, into a temporary file (``worker.ops.import_boards.Prepared``);
when every line was created so, nothing is left to check, and after the commit the prepared rows
are only sent. From the first chunk holding a player who cannot be created as new (named twice,
already on the ladder, imported before) the rest is only staged, and the checks above run over
the whole file (the lines created are a prefix of it: a later line naming one of them is refused
as named again) before the rest is written and the boards are read back from PostgreSQL.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from redis import Redis
from redis.cluster import RedisCluster
from redis.exceptions import RedisError
from sqlalchemy.engine import Engine

from worker import gcpause
from worker.ladders import LadderConfig
from worker.ops.import_boards import Prepared, project, send_prepared
from worker.ops.import_lines import ImportRefused as ImportRefused
from worker.ops.import_lines import Parser, chunks, digest
from worker.ops.import_lines import file_format as file_format
from worker.ops.import_lines import sample_file as sample_file
from worker.ops.progress import Progress
from worker.store import imports, marks
from worker.store.imports import Line

LISTED = 1000  # refusals kept in the report (all are counted and passed to ``on_refusal``)


@dataclass
class ImportReport:
    ladder: str
    file: str
    event_id: str
    lines: int = 0
    imported: int = 0  # players created
    unchanged: int = 0  # lines an earlier import already wrote as they are
    refused: int = 0
    refusals: list[tuple[int, str]] = field(default_factory=list)  # the first LISTED
    dry_run: bool = False
    committed: bool = False
    # After the commit, the boards: False when writing them failed (Redis away); the
    # players are imported all the same (PostgreSQL is the record) and ``ladder rebuild``
    # writes them. ``boards_error`` says what failed.
    boards_written: bool = False
    boards_error: str | None = None
    seconds: float = 0.0

    @property
    def rate(self) -> float:
        return self.lines / self.seconds if self.seconds > 0 else 0.0

    def as_json(self) -> dict[str, Any]:
        return {
            "ladder": self.ladder,
            "file": self.file,
            "event_id": self.event_id,
            "lines": self.lines,
            "imported": self.imported,
            "unchanged": self.unchanged,
            "refused": self.refused,
            "refusals": [{"line": n, "reason": r} for n, r in self.refusals],
            "dry_run": self.dry_run,
            "committed": self.committed,
            "boards_written": self.boards_written,
            "boards_error": self.boards_error,
            "seconds": round(self.seconds, 3),
        }


def import_file(
    engine: Engine,
    redis: Redis | RedisCluster,
    ladder_config: LadderConfig,
    path: Path,
    *,
    fmt: str | None = None,
    dry_run: bool = False,
    skip_invalid: bool = False,
    progress: Progress | None = None,
    on_refusal: Callable[[int, str], None] | None = None,
    now: datetime | None = None,
) -> ImportReport:
    """Import ``path`` into the ladder (see the module docstring); the report says what.

    The cyclic garbage collector is paused throughout: nothing an import makes is cyclic, and
    on a million lines its full collections walked every live chunk again and again."""
    with gcpause.paused():
        return _import_file(
            engine,
            redis,
            ladder_config,
            path,
            fmt=fmt,
            dry_run=dry_run,
            skip_invalid=skip_invalid,
            progress=progress,
            on_refusal=on_refusal,
            now=now,
        )


def _import_file(
    engine: Engine,
    redis: Redis | RedisCluster,
    ladder_config: LadderConfig,
    path: Path,
    *,
    fmt: str | None,
    dry_run: bool,
    skip_invalid: bool,
    progress: Progress | None,
    on_refusal: Callable[[int, str], None] | None,
    now: datetime | None,
) -> ImportReport:
    started = datetime.now(UTC)
    moment = now or started
    kind = file_format(path, fmt)
    event_id, total = digest(path)
    report = ImportReport(ladder_config.name, str(path), event_id, dry_run=dry_run)
    if progress is not None and progress.total is None:
        progress.total = total - (kind == "csv")
    start = ladder_config.rules_at(moment).start
    rules = ladder_config.rules_at(moment)
    keeps = tuple(
        name
        for name, start in (
            ("deviation", rules.start_deviation),
            ("volatility", rules.start_volatility),
        )
        if start is not None
    )
    parse = Parser(moment, whole=rules.whole_ratings, keeps=keeps)
    with (
        Prepared(ladder_config, moment) as prepared,
        imports.Staging(engine, ladder_config.name) as staging,
    ):
        writer = _Writer(staging, event_id, start, moment, create=not dry_run)
        try:
            for lines, refused in chunks(path, kind, parse):
                writer.put(lines, refused)
                if writer.creating:  # else the prepared rows are never sent
                    prepared.add(lines)
                report.lines += len(lines)
                if progress is not None:
                    progress.advance(len(lines) + len(refused))
        finally:
            writer.close()
        if writer.creating and not parse.refused:  # every line a new player, created
            report.imported = report.lines
        else:
            counts = staging.check()
            report.lines = counts.lines + parse.refused
            report.unchanged = counts.same
            report.refused = counts.refused
            for number, reason in staging.refusals():
                if len(report.refusals) < LISTED:
                    report.refusals.append((number, reason))
                if on_refusal is not None:
                    on_refusal(number, reason)
            if dry_run or (report.refused and not skip_invalid):
                report.imported = counts.new if dry_run else 0
                report.seconds = (datetime.now(UTC) - started).total_seconds()
                return report  # leaving the block rolls the transaction back
            report.imported = counts.created + staging.write(report.event_id, start, moment)
        try:
            staging.commit(moment)
        except marks.ArchivedMeanwhile as exc:
            raise ImportRefused(
                f"{path}: ladder {ladder_config.name} was archived before "
                f"{exc.before:%Y-%m} while the import ran, after its instant "
                f"{moment.isoformat()}: nothing was imported; import the file again"
            ) from None
        report.committed = True
        # Every chunk created at once: the prepared rows are those of every imported player;
        # else the boards are read back from PostgreSQL.
        shown = prepared if writer.creating else None
        return _show(engine, redis, ladder_config, report, moment, started, progress, shown)


class _Writer:
    """Hands each parsed chunk to PostgreSQL in a thread of its own, one chunk behind the
    parser, so that PostgreSQL's work overlaps the parsing instead of following it: while
    ``creating``, ``Staging.create`` stages the chunk and creates its players at once (the
    usual file names only new players); from the first chunk it cannot create so (a player
    named twice, already on the ladder, imported before), ``Staging.load`` only stages the
    rest, for ``Staging.check`` and ``write`` to take the checked way. The lines refused while
    parsing are recorded either way."""

    def __init__(
        self,
        staging: imports.Staging,
        event_id: str,
        start: float,
        moment: datetime,
        *,
        create: bool,
    ) -> None:
        self._staging = staging
        self._create = (event_id, start, moment)
        self.creating = create
        self._chunks: queue.Queue[tuple[list[Line], list[tuple[int, str]]] | None] = queue.Queue(
            maxsize=1
        )
        self._failed: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="ladder-import-write")
        self._thread.start()

    def _run(self) -> None:
        try:
            while (chunk := self._chunks.get()) is not None:
                lines, refused = chunk
                self._staging.refuse(refused)
                if self.creating:
                    self.creating = self._staging.create(lines, *self._create)
                else:
                    self._staging.load(lines)
        except BaseException as exc:  # raised in the parsing thread, by put or close
            self._failed = exc

    def put(self, lines: list[Line], refused: list[tuple[int, str]]) -> None:
        """Hand a chunk over (waiting while the one before it is still queued)."""
        self._hand((lines, refused))
        self._raise()

    def close(self) -> None:
        """Stop the thread after the chunks handed over (always called before the transaction
        ends, so the connection is never used by two threads); raise its error, if any."""
        self._hand(None)
        self._thread.join()
        self._raise()

    def _hand(self, chunk: tuple[list[Line], list[tuple[int, str]]] | None) -> None:
        while self._thread.is_alive():
            try:
                self._chunks.put(chunk, timeout=0.1)
                return
            except queue.Full:
                continue

    def _raise(self) -> None:
        if self._failed is not None:
            raise self._failed


def _show(
    engine: Engine,
    redis: Redis | RedisCluster,
    ladder_config: LadderConfig,
    report: ImportReport,
    moment: datetime,
    started: datetime,
    progress: Progress | None,
    prepared: Prepared | None = None,
) -> ImportReport:
    """After the commit: the boards (``prepared``, else read back from PostgreSQL)."""
    if report.imported:
        try:
            if prepared is not None:
                send_prepared(redis, ladder_config, prepared)
            else:
                project(engine, redis, ladder_config, report.event_id, moment)
            report.boards_written = True
        except RedisError as exc:
            said = str(exc).strip().splitlines()
            report.boards_error = said[0] if said else type(exc).__name__
    else:
        report.boards_written = True  # nothing new to show
    report.seconds = (datetime.now(UTC) - started).total_seconds()
    if progress is not None:
        progress.finish(f"{report.imported} imported, {report.refused} refused")
    return report
