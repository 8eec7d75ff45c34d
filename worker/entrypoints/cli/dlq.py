"""Dead-letter commands: ``dlq list``, ``show``, ``replay`` and ``discard``.

Every handler takes the runtime and the parsed arguments and returns the exit status:
0 done, 1 nothing matched (an id that names no dead letter), 2 refused (bad arguments, an
event id that names several dead letters, no confirmation).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from engine import Reason
from schemas import REASONS
from worker.entrypoints.cli.terminal import EXIT_FAILED, EXIT_USAGE, Refused, plural, safe
from worker.ops.progress import is_terminal
from worker.queue.deadletter import RETRIES_EXHAUSTED, AmbiguousReference, DeadLetter, Filter

if TYPE_CHECKING:
    from worker.bootstrap import Runtime

AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def register(subparsers: Any) -> None:
    dlq = subparsers.add_parser("dlq", help="the dead-letter queue").add_subparsers(
        dest="dlq_command", required=True, metavar="{list,show,replay,discard}"
    )

    def filters(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--reason", type=reason, metavar="REASON", help="only this reason, e.g. unknown_ladder"
        )
        p.add_argument("--ladder", help="only events of this ladder")
        p.add_argument("--older-than", type=age, metavar="AGE", help="e.g. 10m, 2h, 3d")
        p.add_argument("--newer-than", type=age, metavar="AGE", help="e.g. 10m, 2h, 3d")

    p = dlq.add_parser("list", help="list dead-lettered events")
    filters(p)
    p.add_argument("--json", action="store_true", help="a JSON array of objects")
    p.add_argument("--limit", type=int, default=100, help="most dead letters shown (100)")
    p.add_argument("--offset", type=int, default=0, help="matching dead letters to skip first")
    p.set_defaults(handler=cmd_dlq_list)

    p = dlq.add_parser("show", help="one dead letter: payload, reason, traceback")
    p.add_argument("id", help="a dead-letter id, or an event id that names one dead letter")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_dlq_show)

    p = dlq.add_parser("replay", help="requeue dead letters (by id, --all, or by filter)")
    p.add_argument("ids", nargs="*", metavar="ID")
    p.add_argument("--all", action="store_true", help="every dead letter")
    filters(p)
    p.set_defaults(handler=cmd_dlq_replay)

    p = dlq.add_parser("discard", help="delete dead letters for good (by id, --all, or filter)")
    p.add_argument("ids", nargs="*", metavar="ID")
    p.add_argument("--all", action="store_true", help="every dead letter")
    filters(p)
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p.set_defaults(handler=cmd_dlq_discard)


#: Every reason a dead letter can carry.
DEAD_LETTER_REASONS: tuple[str, ...] = (
    *REASONS,
    str(Reason.EVENT_ID_CONFLICT),
    str(Reason.PROCESSING_ERROR),
    RETRIES_EXHAUSTED,
    "failed",
)


def reason(text: str) -> str:
    """One of :data:`DEAD_LETTER_REASONS`."""
    if text not in DEAD_LETTER_REASONS:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a reason; the reasons are {', '.join(DEAD_LETTER_REASONS)}"
        )
    return text


def age(text: str) -> timedelta:
    """``10m``, ``2h``, ``3d``, ``1w`` or ``90s`` as a duration."""
    found = AGE.match(text)
    if not found:
        raise argparse.ArgumentTypeError(f"{text!r} is not an age like 90s, 10m, 2h, 3d or 1w")
    return timedelta(seconds=float(found.group(1)) * UNITS[found.group(2)])


def _filter(args: argparse.Namespace) -> Filter:
    return Filter(
        reason=args.reason,
        ladder=args.ladder,
        older_than=args.older_than,
        newer_than=args.newer_than,
    )


def _age_text(letter: DeadLetter, now: datetime) -> str:
    age = letter.age(now)
    if age is None:
        return "?"
    seconds = int(age.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


# -- dlq ------------------------------------------------------------------------------------


def cmd_dlq_list(rt: Runtime, args: argparse.Namespace) -> int:
    if args.limit < 1 or args.offset < 0:
        raise Refused("--limit must be at least 1 and --offset at least 0")
    now = datetime.now(UTC)
    where = _filter(args)
    letters = rt.dead_letters.page(
        None if where.empty else where, offset=args.offset, limit=args.limit, now=now
    )
    if args.json:
        print(json.dumps([letter.as_json(now) for letter in letters]))
        return 0
    print(f"{'id':<45} {'event_id':<24} {'ladder':<12} {'reason':<22} {'age':>5} {'tries':>5}")
    for d in letters:
        print(
            f"{d.id:<45} {safe(d.event_id):<24} {safe(d.ladder):<12} {safe(d.reason):<22} "
            f"{_age_text(d, now):>5} {d.attempts:>5}"
        )
    total = rt.dead_letters.count()
    more = f"; --offset {args.offset + len(letters)} for more" if len(letters) == args.limit else ""
    if len(letters) == total:
        print(f"({plural(total, 'dead letter')})", file=sys.stderr)
    else:
        print(f"({len(letters)} shown of {plural(total, 'dead letter')}{more})", file=sys.stderr)
    return 0


def _resolve(rt: Runtime, reference: str) -> str:
    """The dead-letter id ``reference`` names; refused with 1 (nothing matched) or 2 (it
    names several)."""
    try:
        found: str | None = rt.dead_letters.resolve(reference)
    except AmbiguousReference as exc:
        raise Refused(f"{exc}; name one by its dead-letter id", EXIT_USAGE) from None
    if found is None:
        raise Refused(f"no dead letter {safe(reference)!r}", EXIT_FAILED)
    return found


def cmd_dlq_show(rt: Runtime, args: argparse.Namespace) -> int:
    found = rt.dead_letters.get(_resolve(rt, args.id))
    if found is None:  # gone between the look-up and the read
        raise Refused(f"no dead letter {safe(args.id)!r}", EXIT_FAILED)
    letter, trace = found
    now = datetime.now(UTC)
    if args.json:
        print(json.dumps({**letter.as_json(now), "payload": letter.payload, "traceback": trace}))
        return 0
    for name, value in letter.as_json(now).items():
        print(f"{name + ':':<14}{safe(value)}")
    print("payload:")
    print(f"  {safe(letter.payload)}")
    print("traceback:")
    for line in (trace or "(none)").rstrip().splitlines():
        print(f"  {safe(line)}")
    return 0


def _select(rt: Runtime, args: argparse.Namespace, verb: str) -> list[str]:
    """The dead-letter ids named (by id, ``--all``, or filters); refused (2) if none are."""
    where = _filter(args)
    if args.ids and (args.all or not where.empty):
        raise Refused("name dead letters by id, or select them with --all or filters, not both")
    if args.ids:
        return [_resolve(rt, reference) for reference in args.ids]
    if args.all or not where.empty:
        return [d.id for d in rt.dead_letters.list(None if args.all else where)]
    raise Refused(f"{verb} what? give ids, --all, or a filter (--reason, --ladder, --older-than)")


def cmd_dlq_replay(rt: Runtime, args: argparse.Namespace) -> int:
    ids = _select(rt, args, "replay")
    replayed = rt.dead_letters.replay(ids)
    for job_id in replayed:
        print(job_id)
    print(f"ladder: replayed {len(replayed)} of {plural(len(ids), 'dead letter')}", file=sys.stderr)
    return 0 if len(replayed) == len(ids) else 1


def cmd_dlq_discard(rt: Runtime, args: argparse.Namespace) -> int:
    ids = _select(rt, args, "discard")
    if not args.yes:
        if not is_terminal(sys.stdin):
            raise Refused("discard deletes dead letters for good: confirm with --yes")
        try:
            answer = input(f"Delete {plural(len(ids), 'dead letter')} for good? [y/N] ")
        except EOFError:  # Ctrl-D at the prompt: no answer is no
            print(file=sys.stderr)
            answer = ""
        if answer.strip().lower() not in ("y", "yes"):
            raise Refused("nothing discarded")
    deleted = rt.dead_letters.discard(ids)
    for job_id in deleted:
        print(job_id)
    print(f"ladder: discarded {plural(len(deleted), 'dead letter')}", file=sys.stderr)
    return 0
