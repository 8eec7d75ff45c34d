"""Reading an import file: its format, its digest, and each line parsed into a ``Line`` or the
reason it is refused (``worker.ops.importer`` imports what this reads).

A line is refused, with its number, when it is not a JSON object or a CSV row of the header's
columns, names a field the format does not have, an id the event contract would refuse
(``schemas``: 1-128 visible characters, NFC, ...), a rating that is not a finite number (or not a
whole one on a ladder whose ruleset keeps whole ratings: one rule with ``ladder adjust``), games
or experience that are not whole numbers >= 0, a ``last_game_at`` that is not RFC 3339 with an
offset or is in the future, or a flag that is not true or false.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from schemas.events import check_identifier, parse_timestamp
from worker.store.imports import Line

CHUNK = 20_000  # lines parsed and staged per COPY
FORMATS = ("jsonl", "csv")
FIELDS = (
    "player_id",
    "rating",
    "games",
    "experience",
    "last_game_at",
    "email_verified",
    "display_name_chosen",
    "deviation",
    "volatility",
)
FUTURE_SLACK = timedelta(minutes=5)  # as for a game's ended_at (SPEC 3)
MAX_COUNT = 2**31 - 1


class ImportRefused(ValueError):
    """The file cannot be read as an import file at all (no lines were looked at)."""


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


class Parser:
    """Turns one line's fields into a ``Line``, or a reason to refuse it."""

    def __init__(self, now: datetime, *, whole: bool, keeps: tuple[str, ...] = ()) -> None:
        """``whole``: the ladder's ruleset keeps whole ratings (a fraction is refused, as
        ``ladder adjust`` refuses it); ``keeps``: which of ``deviation`` and ``volatility``
        it keeps (a line may give those, each a finite number > 0)."""
        self.latest = now + FUTURE_SLACK
        self.whole = whole
        self.keeps = keeps
        self.refused = 0

    def line(self, number: int, values: dict[str, Any]) -> Line | str:
        unknown = sorted(k for k in values if k not in FIELDS)
        if unknown:
            return f"unknown field {unknown[0]!r}"
        pid = values.get("player_id")
        if pid is None or pid == "":
            return "player_id: missing"
        if not _plain_ascii(pid):  # the contract's own check (a plain ASCII id passes it)
            if not isinstance(pid, str):
                return "player_id: must be a string"
            try:
                check_identifier(pid)
            except ValueError as exc:
                return f"player_id: {exc}"
        rating = _number(values.get("rating"))
        if rating is None:
            return f"rating: not a finite number: {values.get('rating')!r}"
        if self.whole and rating != int(rating):
            return f"rating: the ladder keeps whole ratings: {values.get('rating')!r}"
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
        spread: list[float | None] = []
        for name in ("deviation", "volatility"):
            given = values.get(name)
            if given in (None, ""):
                spread.append(None)
                continue
            if name not in self.keeps:
                return f"{name}: the ladder's ruleset keeps none"
            value = _number(given)
            if value is None or value <= 0:
                return f"{name}: not a finite number > 0: {given!r}"
            spread.append(value)
        return Line(
            number, pid, rating, games, experience, last_game_at, flags[0], flags[1], *spread
        )


def chunks(
    path: Path, kind: str, parse: Parser
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
    """A file of ``count`` players importable on any ladder (the benchmark's and the tests'
    input): whole ratings, which every ruleset takes."""
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
                f'{{"player_id":"{prefix}{i}","rating":{1000 + i % 1000},'
                f'"games":{i % 300},"experience":{i % 500}}}\n'
            )
            if buffer.tell() > 1 << 20:
                handle.write(buffer.getvalue())
                buffer = io.StringIO()
        handle.write(buffer.getvalue())
    return path
