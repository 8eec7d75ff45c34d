"""``ladder event LADDER EVENT_ID`` and ``ladder publish FILE --wait``: receipts on the CLI.

``event`` reads the receipt from PostgreSQL (so it works after the Redis copy expired; the
ranks come from that copy while it is kept). ``publish --wait`` prints each event's receipt as
it arrives, a table or (``--json``) one JSON object a line, and exits 1 if any event's receipt
did not arrive in time or the event was dead-lettered.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from worker.entrypoints.cli.terminal import EXIT_FAILED, Refused, configured_ladder, plural, safe

if TYPE_CHECKING:
    from worker.bootstrap import Runtime
    from worker.queue.publish import Published

COLUMNS = f"{'event_id':<24} {'ladder':<12} {'outcome':<14} {'reason':<26} players"


def register(sub: Any) -> None:
    p = sub.add_parser("event", help="an event's receipt: outcome, reason, rating changes")
    p.add_argument("ladder")
    p.add_argument("event_id")
    p.add_argument("--json", action="store_true", help="print the receipt as JSON")
    p.set_defaults(handler=cmd_event)


def cmd_event(rt: Runtime, args: argparse.Namespace) -> int:
    from redis.exceptions import RedisError

    from schemas.receipt_bodies import with_ranks
    from worker.boards.receipts import stored
    from worker.service.dead_letter_receipts import dead_letter_receipt
    from worker.store.receipts import stored_receipt

    configured_ladder(rt.config, args.ladder)
    found = stored_receipt(rt.databases.for_ladder(args.ladder), args.ladder, args.event_id)
    if found is not None:
        try:
            copy = stored(rt.redis, args.event_id)
        except RedisError:  # the ranks are a bonus: PostgreSQL has the receipt
            copy = None
        receipt = with_ranks(found, copy)
    else:  # never applied: a dead letter's receipt, if it is one
        # dead letters are on the default primary (``worker.store.routes``)
        letter = dead_letter_receipt(rt.redis, rt.engine, args.ladder, args.event_id)
        if letter is None:
            raise Refused(f"no event {args.event_id!r} on {args.ladder}", EXIT_FAILED)
        receipt = letter
    if args.json:
        print(json.dumps(receipt, ensure_ascii=False))
        return 0
    print(COLUMNS)
    print(row(receipt))
    print(f"processed_at {receipt['processed_at']}, ruleset {receipt['ruleset_version']}")
    return 0


def row(receipt: Mapping[str, Any]) -> str:
    moved = "; ".join(
        f"{safe(p['player_id'])} {p['rating_before']:g} -> {p['rating_after']:g} ({p['delta']:+g}"
        + (f", #{p['rank_after']}" if p.get("rank_after") is not None else "")
        + ")"
        for p in receipt.get("players", [])
    )
    return (
        f"{safe(receipt.get('event_id') or '?'):<24} {safe(receipt.get('ladder') or '?'):<12} "
        f"{receipt['outcome']:<14} {receipt.get('reason') or '-':<26} {moved or '-'}"
    )


def cmd_publish_wait(rt: Runtime, args: argparse.Namespace, events: Iterable[str]) -> int:
    """Publish ``events`` (the lines of ``args.file``), then print each receipt as it arrives."""
    from worker.queue.publish import publish

    if args.timeout <= 0:
        raise Refused("--timeout must be more than 0 seconds")
    try:
        lines = list(events)
    except ValueError as exc:
        raise Refused(f"{exc}; nothing published") from None
    if not args.json:
        print(COLUMNS, flush=True)

    def shown(item: Published) -> None:
        assert item.receipt is not None
        text = json.dumps(item.receipt, ensure_ascii=False) if args.json else row(item.receipt)
        print(text, flush=True)

    sent = publish(rt.redis, lines, wait=True, timeout=args.timeout, on_receipt=shown)
    print(f"ladder: published {plural(len(sent), 'event')}", file=sys.stderr)
    failed = 0
    for item in sent:
        if item.event_id is None:
            print("ladder: an event without a readable event_id: no receipt to wait for",
                  file=sys.stderr)  # fmt: skip
            failed += 1
        elif item.receipt is None:
            print(f"ladder: no receipt for {item.event_id!r} within {args.timeout:g} s",
                  file=sys.stderr)  # fmt: skip
            failed += 1
        elif item.receipt.get("outcome") == "dead_lettered":
            failed += 1
    return EXIT_FAILED if failed else 0
