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

Most files name only new players. So a thread stages each chunk and creates its players at
once (``Staging.create``) while the next chunk is parsed (``_Writer``), and what the boards will
show of them is prepared meanwhile, from the rows handed to PostgreSQL, into a temporary file
(``_Prepared``); when every line was created so, nothing is left to check, and after the commit
the prepared rows are only sent. From the first chunk holding a player who cannot be created
as new (named twice, already on the ladder, imported before) the rest is only staged, and the
checks above run over the whole file (the lines created are a prefix of it: a later line
naming one of them is refused as named again) before the rest is written and the boards are
read back from PostgreSQL.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import marshal
import math
import queue
import tempfile
import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

from pydantic import TypeAdapter, ValidationError
from redis import Redis
from redis.cluster import RedisCluster
from redis.exceptions import RedisError
from sqlalchemy.engine import Engine

from schemas.events import Identifier, parse_timestamp
from worker import gcpause
from worker.boards.projection import WRITE, Rows, boards, encode_rows, write_payload
from worker.ladders import LadderConfig
from worker.ops.progress import Progress
from worker.store import imports
from worker.store.imports import Line

CHUNK = 20_000  # lines parsed and staged per COPY
SENDERS = 2  # threads writing the boards (as in a rebuild)
SCRIPT_CHUNK = 500  # players per board script call
FORMATS = ("jsonl", "csv")
FIELDS = (
    "player_id",
    "rating",
    "games",
    "experience",
    "last_game_at",
    "email_verified",
    "display_name_chosen",
)
FUTURE_SLACK = timedelta(minutes=5)  # as for a game's ended_at (SPEC 3)
MAX_COUNT = 2**31 - 1
LISTED = 1000  # refusals kept in the report (all are counted and passed to ``on_refusal``)
_IDENTIFIER: TypeAdapter[str] = TypeAdapter(Identifier)


class ImportRefused(ValueError):
    """The file cannot be read as an import file at all (no lines were looked at)."""


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


def file_format(path: Path, given: str | None) -> str:
    """The format given, else the file's extension (.jsonl/.ndjson/.json or .csv)."""
    if given is not None:
        return given
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson", ".json"):
        return "jsonl"
    if suffix == ".csv":
        return "csv"
    raise ImportRefused(f"{path}: cannot tell the format from the extension: give --format")


def digest(path: Path) -> tuple[str, int]:
    """The ledger ``event_id`` of an import of this file (``import:`` and 16 hex digits), and
    how many lines the file has (the progress bar's total)."""
    sha = hashlib.sha256()
    lines = 0
    last = b"\n"
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            sha.update(block)
            lines += block.count(b"\n")
            last = block[-1:]
    return f"import:{sha.hexdigest()[:16]}", lines + (last != b"\n")


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
    parse = _Parser(moment)
    with (
        _Prepared(ladder_config, moment) as prepared,
        imports.Staging(engine, ladder_config.name) as staging,
    ):
        writer = _Writer(staging, event_id, start, moment, create=not dry_run)
        try:
            for lines, refused in _chunks(path, kind, parse):
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
        staging.commit()
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


class _Prepared:
    """The boards' rows of the players an import creates at once, made while PostgreSQL
    writes those players and kept in a temporary file (memory holds a chunk), so that after
    the commit nothing is left but sending them: ``WRITE``'s payloads, ``SCRIPT_CHUNK``
    players each, with their ids, in ``marshal`` records."""

    def __init__(self, ladder_config: LadderConfig, moment: datetime) -> None:
        self.ladder = ladder_config.name
        self.moment = moment
        self._maker = Rows(ladder_config, moment)
        self._file: IO[bytes] | None = None

    def __enter__(self) -> _Prepared:
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


def _show(
    engine: Engine,
    redis: Redis | RedisCluster,
    ladder_config: LadderConfig,
    report: ImportReport,
    moment: datetime,
    started: datetime,
    progress: Progress | None,
    prepared: _Prepared | None = None,
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
    maker = Rows(ladder_config)
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
    redis: Redis | RedisCluster, ladder_config: LadderConfig, prepared: _Prepared
) -> int:
    """Send the boards' rows ``_Prepared`` holds, as ``project`` sends the rows it reads (the
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


class _Parser:
    """Turns one line's fields into a ``Line``, or a reason to refuse it."""

    def __init__(self, now: datetime) -> None:
        self.latest = now + FUTURE_SLACK
        self.refused = 0

    def line(self, number: int, values: dict[str, Any]) -> Line | str:
        unknown = sorted(k for k in values if k not in FIELDS)
        if unknown:
            return f"unknown field {unknown[0]!r}"
        pid = values.get("player_id")
        if pid is None or pid == "":
            return "player_id: missing"
        if not _plain_ascii(pid):  # the contract's own check (a plain ASCII id passes it)
            try:
                _IDENTIFIER.validate_python(pid)
            except ValidationError as exc:
                message = exc.errors()[0]["msg"].removeprefix("Value error, ")
                return f"player_id: {message}"
        rating = _number(values.get("rating"))
        if rating is None:
            return f"rating: not a finite number: {values.get('rating')!r}"
        games = _count(values.get("games"))
        if games is None:
            return f"games: not a whole number >= 0: {values.get('games')!r}"
        experience = _count(values.get("experience"))
        if experience is None:
            return f"experience: not a whole number >= 0: {values.get('experience')!r}"
        last = values.get("last_game_at")
        last_game_at: datetime | None = None
        if last not in (None, ""):
            try:
                last_game_at = parse_timestamp(last)
            except ValueError as exc:
                return f"last_game_at: {exc}"
            if last_game_at > self.latest:
                return "last_game_at: in the future"
        flags = []
        for name in ("email_verified", "display_name_chosen"):
            flag = _flag(values.get(name))
            if flag is None:
                return f"{name}: not true or false: {values.get(name)!r}"
            flags.append(flag)
        return Line(number, pid, rating, games, experience, last_game_at, flags[0], flags[1])


def _chunks(
    path: Path, kind: str, parse: _Parser
) -> Iterator[tuple[list[Line], list[tuple[int, str]]]]:
    lines: list[Line] = []
    refused: list[tuple[int, str]] = []
    for number, values in _records(path, kind):
        made = values if isinstance(values, str) else parse.line(number, values)
        if isinstance(made, str):
            refused.append((number, made))
            parse.refused += 1
        else:
            lines.append(made)
        if len(lines) + len(refused) >= CHUNK:
            yield lines, refused
            lines, refused = [], []
    yield lines, refused


def _records(path: Path, kind: str) -> Iterator[tuple[int, dict[str, Any] | str]]:
    """(line number, fields or the reason the line cannot be read), blank lines skipped."""
    with path.open("r", encoding="utf-8", errors="surrogateescape", newline="") as handle:
        if kind == "jsonl":
            for number, text in enumerate(handle, start=1):
                if not text.strip():
                    continue
                try:
                    value = json.loads(text)
                except ValueError:
                    yield number, "not a JSON object"
                    continue
                yield number, value if isinstance(value, dict) else "not a JSON object"
            return
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None:
            return
        columns = [c.strip() for c in header]
        if "player_id" not in columns or "rating" not in columns:
            raise ImportRefused(f"{path}: line 1: the header must name player_id and rating")
        for row in reader:
            number = reader.line_num
            if not row or row == [""]:
                continue
            if len(row) != len(columns):
                yield number, f"{len(row)} fields, the header names {len(columns)}"
                continue
            yield number, dict(zip(columns, row, strict=True))


def _plain_ascii(value: Any) -> bool:
    """Printable ASCII, 1-128 characters, no space first or last: what ``Identifier``
    accepts of ASCII (no control characters, visible at both ends, NFC trivially), checked
    in C."""
    return (
        isinstance(value, str)
        and 0 < len(value) <= 128
        and value.isascii()
        and value.isprintable()
        and value[0] != " "
        and value[-1] != " "
    )


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _count(value: Any) -> int | None:
    if value is None or value == "":
        return 0
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 <= value <= MAX_COUNT else None


def _flag(value: Any) -> bool | None:
    if value is None or value == "":
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false", "1", "0"):
        return value.lower() in ("true", "1")
    return None


def sample_file(path: Path, count: int, *, fmt: str = "jsonl", prefix: str = "imp") -> Path:
    """A file of ``count`` importable players (the benchmark's and the tests' input)."""
    with path.open("w", encoding="utf-8", newline="") as handle:
        if fmt == "csv":
            out = csv.writer(handle, lineterminator="\n")
            out.writerow(["player_id", "rating", "games", "experience", "last_game_at"])
            for i in range(count):
                out.writerow([f"{prefix}{i}", 1000 + i % 1000, i % 300, i % 500, ""])
            return path
        buffer = io.StringIO()
        for i in range(count):
            buffer.write(
                f'{{"player_id":"{prefix}{i}","rating":{1000 + i % 1000 + 0.5},'
                f'"games":{i % 300},"experience":{i % 500}}}\n'
            )
            if buffer.tell() > 1 << 20:
                handle.write(buffer.getvalue())
                buffer = io.StringIO()
        handle.write(buffer.getvalue())
    return path
