"""Board commands beyond the read basics: ``among`` (these ids as the board ranks them),
``export`` (a whole board, streamed) and ``import`` (players from another rating system).

``among`` and ``export`` refuse like the other read commands: an unknown ladder or board
exits 2, Redis unreachable 1. ``import`` exits 0 when the file was imported (or a dry run
found nothing to refuse), 1 when it refused lines and imported nothing, 2 when asked wrongly.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine import display_rating
from worker.boards import export, reader
from worker.entrypoints.cli.common import board_ladder, board_option, read_command
from worker.entrypoints.cli.terminal import EXIT_FAILED, Refused, configured_ladder, plural, safe
from worker.ops.progress import Progress

if TYPE_CHECKING:
    from worker.bootstrap import Runtime


def register(sub: Any) -> None:
    p = read_command(
        sub, "among", cmd_among, help="these players (friends) as a leaderboard ranks them"
    )
    p.add_argument("ids", nargs="+", metavar="ID", help=f"player ids (up to {reader.MAX_AMONG})")
    board_option(p)

    p = read_command(sub, "export", cmd_export, help="a whole leaderboard in rank order, streamed")
    board_option(p, with_json=False)
    p.add_argument("--format", choices=export_formats(), default="jsonl")

    p = sub.add_parser(
        "import",
        help="create players with ratings from another system (JSON lines or CSV)",
        description=(
            "Each line: player_id, rating, and optionally games, experience, last_game_at, "
            "email_verified, display_name_chosen. A file with any refused line imports nothing "
            "unless --skip-invalid. Importing the same file again changes nothing."
        ),
    )
    p.add_argument("ladder")
    p.add_argument("file", type=Path)
    p.add_argument("--format", choices=export_formats(), help="default: from the extension")
    p.add_argument("--dry-run", action="store_true", help="report what it would do; change nothing")
    p.add_argument("--skip-invalid", action="store_true", help="import the lines not refused")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_import)


def export_formats() -> list[str]:
    return ["jsonl", "csv"]


def cmd_among(rt: Runtime, args: argparse.Namespace) -> int:
    ladder_config = board_ladder(rt, args)
    found = reader.among(rt.leaderboard_redis, args.ladder, args.ids, args.board)
    if args.json:
        print(json.dumps(found.as_json()))
        return 0
    rules = ladder_config.current
    points = args.board == "boosted"
    print(
        f"{args.ladder} ({args.board}): {len(found.entries)} of them among "
        f"{plural(found.total, 'player')}"
    )
    print(f"{'rank':>6}  {'player':<24} {'points' if points else 'rating':>9}  better than")
    for e in found.entries:
        shown = str(int(e.rating)) if points else display_rating(rules, e.rating)
        flag = " P" if e.provisional else "  "
        print(f"{e.rank:>6}  {safe(e.player_id):<24} {shown:>9}{flag} {e.percentile:>5.1f} %")
    if any(e.provisional for e in found.entries):
        print("P: provisional rating")
    if found.missing:
        print("not on the board: " + ", ".join(safe(pid) for pid in found.missing))
    return 0


def cmd_export(rt: Runtime, args: argparse.Namespace) -> int:
    board_ladder(rt, args)
    rows = export.lines(rt.leaderboard_redis, args.ladder, args.board)
    chunks = export.jsonl(rows) if args.format == "jsonl" else export.csv_lines(rows, args.board)
    try:
        for chunk in chunks:
            sys.stdout.write(chunk)
        sys.stdout.flush()
    except BrokenPipeError:  # `ladder export ... | head`: the reader has what it wanted
        sys.stdout = open("/dev/null", "w")  # noqa: SIM115 - Python flushes stdout at exit
    return 0


def cmd_import(rt: Runtime, args: argparse.Namespace) -> int:
    from worker.ops import importer

    ladder_config = configured_ladder(rt.config, args.ladder)
    try:
        importer.file_format(args.file, args.format)
    except importer.ImportRefused as exc:
        raise Refused(str(exc)) from None
    label = f"{'dry run: ' if args.dry_run else ''}import {args.ladder}"
    progress = Progress(label, unit="lines")
    name = safe(args.file)

    def refused(line: int, reason: str) -> None:
        if not args.json:
            print(f"ladder: {name}, line {line}: {safe(reason)}", file=sys.stderr)

    try:
        report = importer.import_file(
            rt.databases.for_ladder(ladder_config.name),
            rt.leaderboard_redis,
            ladder_config,
            args.file,
            fmt=args.format,
            dry_run=args.dry_run,
            skip_invalid=args.skip_invalid,
            progress=progress,
            on_refusal=refused,
        )
    except importer.ImportRefused as exc:
        raise Refused(str(exc), EXIT_FAILED) from None
    if args.json:
        print(json.dumps(report.as_json()))
    elif args.dry_run:
        print(
            f"ladder: dry run of {name}: {plural(report.lines, 'line')}, "
            f"would import {report.imported}, "
            f"{report.unchanged} unchanged, {report.refused} refused; nothing changed"
        )
    elif not report.committed:
        print(
            f"ladder: {name}: {report.refused} of {plural(report.lines, 'line')} refused: nothing "
            "imported (fix them, or give --skip-invalid)",
            file=sys.stderr,
        )
    else:
        print(
            f"ladder: imported {name} into {report.ladder}: {plural(report.imported, 'player')}, "
            f"{report.unchanged} unchanged, {report.refused} refused, in {report.seconds:.1f}s "
            f"({report.rate:,.0f} lines/s)"
        )
    if report.committed and not report.boards_written:
        # Imported (PostgreSQL is the record), but not yet on the boards.
        print(
            f"ladder: {plural(report.imported, 'player')} imported, but writing them to the boards "
            f"failed ({safe(report.boards_error or '')}): run 'ladder rebuild {report.ladder}' "
            "once Redis answers",
            file=sys.stderr,
        )
        return EXIT_FAILED
    if report.committed:
        return 0
    return EXIT_FAILED if report.refused else 0
