"""``ladder verify [LADDER] [--json]``: prove the stored ladder follows from its events.

Exit status: 0 everything agrees, 1 something differs, 2 a bad argument (unknown ladder).
"""

from __future__ import annotations

import argparse
import json
import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from worker.entrypoints.cli.terminal import configured_ladder
from worker.ops.progress import Progress

if TYPE_CHECKING:
    from worker.bootstrap import Runtime

SHOWN = 10  # mismatches printed per ladder (``--json`` lists up to ``verify.LISTED``)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "verify", help="replay the stored events and compare every stored number"
    )
    p.add_argument("ladder", nargs="?", help="one ladder (default: every configured ladder)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_verify)


def cmd_verify(rt: Runtime, args: argparse.Namespace) -> int:
    from worker.ops.verify import verify_ladders
    from worker.store.log import count_events

    if args.ladder is not None:
        ladders = [configured_ladder(rt.config, args.ladder)]
    else:
        ladders = list(rt.config.ladders.values())
    counts = {c.name: count_events(rt.databases.for_ladder(c.name), c.name) for c in ladders}
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
        reports += verify_ladders(engine, rt.leaderboard_redis, group, progress, receipts=kept)
    seconds = time.perf_counter() - started
    events = sum(r.events for r in reports)
    rate = events / seconds if seconds > 0 else 0.0
    if args.json:
        shown = {
            "ladders": {r.ladder: r.as_json() for r in reports},
            "events": events,
            "seconds": round(seconds, 3),
            "events_per_second": round(rate),
        }
        print(json.dumps(shown))
    else:
        for report in reports:
            print(
                f"ladder: {report.ladder}: {report.events} events, {report.ledger_rows} ledger "
                f"rows, {report.players} players: replayed in {report.seconds:.2f}s "
                f"({report.rate:,.0f} events/s), boards in {report.redis_seconds:.2f}s: "
                f"{report.mismatch_count} mismatches"
            )
            for m in report.mismatches[:SHOWN]:
                print(
                    f"  event {m.event_id or '-'} player {m.player_id or '-'} {m.field}: "
                    f"stored {m.stored!r}, derived {m.derived!r}"
                )
        total = sum(r.mismatch_count for r in reports)
        verdict = "everything agrees" if total == 0 else f"{total} mismatches"
        print(
            f"ladder: verified {len(reports)} ladders, {events} events in {seconds:.2f}s "
            f"({rate:,.0f} events/s): {verdict}"
        )
    return 0 if all(r.mismatch_count == 0 for r in reports) else 1
