"""``ladder verify [LADDER] [--since TIME] [--json]``: prove the stored ladder follows from
its events (``--since``: the part of its log processed since then).

Exit status: 0 everything agrees, 1 something differs (or, verifying every ladder, the
database holds rows of a ladder the configuration does not name, unless
``--skip-unconfigured``), 2 a bad argument (unknown ladder, a ``--since`` that is not a time or
is in the future).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from worker.entrypoints.cli.terminal import EXIT_FAILED, Refused, configured_ladder, plural
from worker.ops.progress import Progress

if TYPE_CHECKING:
    from worker.bootstrap import Runtime

SHOWN = 10  # mismatches printed per ladder (``--json`` lists up to ``verify.LISTED``)
SINCE_HELP = (
    "only the part of each ladder's log processed since TIME (2026-11-01 or "
    "2026-11-01T12:00:00Z; a date is its midnight UTC), in time proportional to that "
    "part: replayed from each player's state at TIME as the log recorded it (the "
    "last ledger row before it, the games, links, flags and bans recorded before it) "
    "and compared as a whole verify compares what follows. Not looked at: the rows "
    "before TIME (trusted as recorded, voids and adjustments included) and a "
    "player's version; a void since TIME of an earlier game starts the replay at "
    "that game. Before the ladder's first event or its archive checkpoint it is the "
    "whole verify."
)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "verify", help="replay the stored events and compare every stored number"
    )
    p.add_argument("ladder", nargs="?", help="one ladder (default: every configured ladder)")
    p.add_argument("--since", metavar="TIME", help=SINCE_HELP)
    p.add_argument(
        "--skip-unconfigured",
        action="store_true",
        help="pass even when the database holds rows of ladders the configuration does not "
        "name (they are named, and not verified)",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_verify)


def cmd_verify(rt: Runtime, args: argparse.Namespace) -> int:
    from worker.ops.keptreceipts import ComparisonLost
    from worker.ops.verify import replayed, unconfigured, verify_ladders
    from worker.store.boundary import Interleaved

    since = None if args.since is None else since_time(args.since, datetime.now(UTC))
    unnamed: list[str] = []  # ladders with rows the configuration does not name
    if args.ladder is not None:
        ladders = [configured_ladder(rt.config, args.ladder)]
    else:
        ladders = list(rt.config.ladders.values())
        unnamed = unconfigured(rt.databases.all(), rt.config.ladders)
    # the events each replay goes through (with --since, the part from its start only)
    counts = {c.name: replayed(rt.databases.for_ladder(c.name), c.name, since) for c in ladders}
    ladders.sort(key=lambda c: -counts[c.name])  # the longest first, when run side by side
    started = time.perf_counter()
    kept = None  # the receipts kept in Redis, when receipts are on
    if rt.receipts is not None:
        oldest = datetime.now(UTC) - timedelta(seconds=rt.receipts.ttl)
        kept = (rt.receipts.redis, oldest)
    reports = []
    by_name = {c.name: c for c in ladders}
    for engine, names in rt.databases.grouped(by_name):  # each primary's ladders together
        total = sum(counts[n] for n in names)
        progress = Progress(f"verify {', '.join(names)}", total, unit="events")
        group = [by_name[n] for n in names]
        try:
            reports += verify_ladders(
                engine, rt.leaderboard_redis, group, progress, receipts=kept, since=since
            )
        except Interleaved as exc:
            raise Refused(f"--since {args.since}: {exc}") from None
        except ComparisonLost as exc:
            raise Refused(str(exc), EXIT_FAILED) from None
    seconds = time.perf_counter() - started
    events = sum(r.events for r in reports)
    rate = events / seconds if seconds > 0 else 0.0
    if args.json:
        shown = {
            "ladders": {r.ladder: r.as_json() for r in reports},
            "events": events,
            "seconds": round(seconds, 3),
            "events_per_second": round(rate),
            "unconfigured": unnamed,
        }
        print(json.dumps(shown))
    else:
        for report in reports:
            start = "" if report.since is None else f" since {report.since.isoformat()}"
            compared = report.kept_receipts
            receipts = "" if compared is None else f", {plural(compared, 'kept receipt')} compared"
            print(
                f"ladder: {report.ladder}{start}: {plural(report.events, 'event')}, "
                f"{plural(report.ledger_rows, 'ledger row')}, {plural(report.players, 'player')}: "
                f"replayed in {report.seconds:.2f}s "
                f"({report.rate:,.0f} events/s), boards in {report.redis_seconds:.2f}s{receipts}: "
                f"{plural(report.mismatch_count, 'mismatch')}"
            )
            for m in report.mismatches[:SHOWN]:
                print(
                    f"  event {m.event_id or '-'} player {m.player_id or '-'} {m.field}: "
                    f"stored {m.stored!r}, derived {m.derived!r}"
                )
        total = sum(r.mismatch_count for r in reports)
        verdict = "everything agrees" if total == 0 else plural(total, "mismatch")
        if unnamed:
            verdict += f"; not verified: {plural(len(unnamed), 'ladder')} the configuration "
            verdict += f"does not name ({', '.join(unnamed)})"
        print(
            f"ladder: verified {plural(len(reports), 'ladder')}, {plural(events, 'event')} "
            f"in {seconds:.2f}s ({rate:,.0f} events/s): {verdict}"
        )
    if unnamed and not args.skip_unconfigured:
        print(
            f"ladder: the database holds rows of {', '.join(unnamed)}, which the configuration "
            "(LADDER_CONFIG) does not name: "
            "add them to the configuration to verify them, or give --skip-unconfigured",
            file=sys.stderr,
        )
        return 1
    return 0 if all(r.mismatch_count == 0 for r in reports) else 1


def since_time(text: str, now: datetime) -> datetime:
    """``--since``: a date (its midnight UTC) or an ISO time (UTC when it names no zone), not
    after ``now``; a ``Refused`` naming what is wrong otherwise."""
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        raise Refused(
            f"--since {text!r} is not a time; write 2026-11-01 or 2026-11-01T12:00:00Z"
        ) from None
    value = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    if value > now:
        raise Refused(f"--since {text} is in the future: nothing was processed since then")
    return value
