"""``ladder archive --before YYYY-MM``: detach the audit log's months before a boundary,
recording each ladder's checkpoint (``worker.ops.archiving``); ``verify`` then replays from it.

Exit status: 0 archived (or nothing to archive), 2 refused (a bad month, a boundary after the
current month, a ladder that cannot be checkpointed); nothing is changed when refused. With
ladders on several PostgreSQL primaries (``LADDER_DATABASE_ROUTES``) each primary is archived
in turn, the default one first: a refusal on one leaves the primaries before it archived.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from worker.entrypoints.cli.terminal import Refused, plural

if TYPE_CHECKING:
    from datetime import date

    from worker.bootstrap import Runtime
    from worker.ops.archiving import Archived


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "archive",
        help="detach the audit log's months before YYYY-MM, keeping each ladder's checkpoint",
    )
    p.add_argument("--before", required=True, metavar="YYYY-MM", help="the first month kept")
    p.set_defaults(handler=cmd_archive)


def cmd_archive(rt: Runtime, args: argparse.Namespace) -> int:
    from worker.ops.archiving import ArchiveRefused, archive
    from worker.store.partitions import parse_month

    try:
        before = parse_month(args.before)
    except ValueError as exc:
        raise Refused(f"--before: {exc}") from None
    for engine in rt.databases.all():  # each primary's ladders, one primary after another
        try:
            done = archive(engine, rt.config, before)
        except ArchiveRefused as exc:
            raise Refused(str(exc)) from None
        _report(done, before)
    return 0


def _report(done: Archived, before: date) -> None:
    for point in done.checkpoints:
        print(
            f"ladder: {point.ladder}: checkpoint at {before:%Y-%m} after event {point.after_seq}: "
            f"{plural(len(point.players), 'player')}, "
            f"{plural(point.events, 'event')} archived in all"
        )
    if done.tables:
        print(f"ladder: detached {len(done.tables)} tables: {', '.join(done.tables)}")
        print("ladder: they stay in the database until dropped (dump them with pg_dump -t)")
    else:
        print(f"ladder: nothing before {before:%Y-%m} to archive")
